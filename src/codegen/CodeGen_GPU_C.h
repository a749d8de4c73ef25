// One printer of Loom's loop IR as the C++ of a GPU kernel, for every GPU
// dialect (CUDA's; HIP's to come) and every kernel printer: CodeGen_CUDA's
// kernels and the tile layer's scalar expressions print through it, so
// that an Expr means the same in both (Loom's integer division, NaN-aware
// min and max, 16-bit floats through float). What differs between the
// dialects is data, GpuDialectInfo: type names, intrinsics, the trap, the
// barrier, the warp size and how a kernel states its launch bounds.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/IRVisitor.h"
#include "loom/IR.h"

namespace loom {
namespace internal {

enum class GpuDialect { CUDA, HIP };

/** The spellings of a GPU C++ dialect, where they differ. */
struct GpuDialectInfo {
    /** Its name in messages: "not supported yet by the CUDA backend". */
    const char *name;
    /** float16 and bfloat16, the headers that declare them, and the
     * intrinsics that reinterpret them as 16 bits and back. */
    const char *float16, *bfloat16, *float16_headers;
    const char *float16_as_bits, *bits_as_float16, *bfloat16_as_bits, *bits_as_bfloat16;
    /** Stops the kernel (a failed check), and the block's barrier. */
    const char *trap, *barrier;
    /** Threads that run in lockstep and shuffle among themselves. */
    int warp_size;
    /** What precedes a kernel's name: its launch bounds, its threads per
     * block and the blocks an SM must hold at once (0: none asked). */
    std::string (*launch_bounds)(int threads, int blocks_per_sm);
};

const GpuDialectInfo &gpu_dialect_info(GpuDialect dialect);

/** Prints expressions, and the statements with no GPU meaning of their own
 * (lets, ifs, blocks, evaluations), in a dialect; the kernel printers
 * derive from it for loads, stores, loops and allocations. Names the IR
 * defines inside what is printed get C names of their own while they live
 * (Local); other names are looked up in c_names, then in `free_names`. */
class CodeGen_GPU_C : public IRVisitor {
  public:
    /** `where` names the kernel in errors. */
    CodeGen_GPU_C(GpuDialect dialect, const std::string &where);

    /** The statements printed, at `indent` levels of 4 spaces. */
    std::ostringstream out;
    int indent = 1;
    /** Whether what was printed has vector code (then the source includes
     * the vector helpers, vectors.cuh). */
    bool uses_vectors = false;
    /** C names of the names printed that are not defined in it, when
     * c_names has none (a kernel printer binds its parameters in c_names
     * instead). */
    std::function<std::string(const std::string &)> free_names;

    std::string print(const Expr &e);
    void print(const Stmt &s) { s.accept(this); }
    /** The C++ spelling of t: a scalar, or a loom_vec of its lanes. */
    std::string type(Type t);
    /** A C name for a name used by the whole kernel (a parameter). */
    std::string declare_local(const std::string &n);

  protected:
    const GpuDialectInfo &dialect;
    const std::string where_;
    std::ostringstream expr_out;
    std::map<std::string, std::string> c_names;  // lowered name -> C name

    std::string where() const { return where_; }
    std::string name_of(const std::string &n) const;
    void pad() { out << std::string(indent * 4, ' '); }

    /** The C name of `n` while this lives. The IR may define a name again
     * inside its own scope (let x = x * 4 inside the loop x); C++ would
     * read the same spelling as the new variable itself. `flat`: declared
     * in the enclosing C++ block rather than in a block of its own, so the
     * C name stays taken until that block closes (close_block), not only
     * until the IR's scope of `n` ends. */
    class Local {
      public:
        Local(CodeGen_GPU_C &p, const std::string &n, bool flat = false);
        ~Local();
        Local(const Local &) = delete;
        Local &operator=(const Local &) = delete;
        const std::string &name() const { return c; }

      private:
        CodeGen_GPU_C &p;
        std::string n, c, previous;
        bool flat, shadows = false;
    };
    void open_block() { c_block_names.emplace_back(); }
    void close_block();

    /** Prints the vector expression e (an arithmetic, logical, Select,
     * Cast, Reinterpret or Call node) as its scalar form mapped over the
     * lanes of its vector operands. Returns false for a scalar e. */
    bool lanewise(const Expr &e);
    /** The lambda combining two values of type t with a VectorReduce's
     * operator, as printed by the scalar rules. */
    std::string reduce_lambda(VectorReduce::Op o, Type t);
    void binary(const Expr &a, const char *o, const Expr &b, Type t);
    void min_max(const Expr &a, const Expr &b, Type t, bool is_min);

    using IRVisitor::visit;
    void visit(const IntImm *op) override;
    void visit(const UIntImm *op) override;
    void visit(const FloatImm *op) override;
    void visit(const StringImm *) override;
    void visit(const Cast *op) override;
    void visit(const Reinterpret *op) override;
    void visit(const Variable *op) override;
    void visit(const Add *op) override;
    void visit(const Sub *op) override;
    void visit(const Mul *op) override;
    void visit(const Div *op) override;
    void visit(const Mod *op) override;
    void visit(const Min *op) override;
    void visit(const Max *op) override;
    void visit(const EQ *op) override;
    void visit(const NE *op) override;
    void visit(const LT *op) override;
    void visit(const LE *op) override;
    void visit(const GT *op) override;
    void visit(const GE *op) override;
    void visit(const And *op) override;
    void visit(const Or *op) override;
    void visit(const Not *op) override;
    void visit(const Select *op) override;
    void visit(const Load *op) override;
    void visit(const Ramp *op) override;
    void visit(const Broadcast *op) override;
    void visit(const VectorReduce *op) override;
    void visit(const Let *op) override;
    void visit(const Call *op) override;

    void visit(const LetStmt *op) override;
    void visit(const ProducerConsumer *op) override;
    void visit(const Block *op) override;
    void visit(const IfThenElse *op) override;
    void visit(const Evaluate *op) override;
    void visit(const Free *) override {}
    void visit(const Provide *) override;
    void visit(const Realize *) override;

  private:
    /** Per open C++ block, the C names declared flat in it. */
    std::vector<std::vector<std::string>> c_block_names{{}};
    std::set<std::string> used;
    std::string unique_c_name(const std::string &n);
};

/** The C of a scalar expression in `dialect`, its free variables named by
 * `free_names` (a tile kernel's expressions: indices and maps'
 * arithmetic). `where` names the kernel in errors. */
std::string gpu_c_expr(const Expr &e, GpuDialect dialect,
                       const std::function<std::string(const std::string &)> &free_names,
                       const std::string &where);

}  // namespace internal
}  // namespace loom
