// The node types of the loop IR. Every node is immutable; build one with its
// static make(), which checks the node's typing invariants.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/Expr.h"

namespace loom {
namespace internal {

struct FunctionContents;
struct ParameterContents;
struct ReductionDomainContents;
struct BufferContents;
namespace tile {
struct TileKernelContents;
}

using FunctionPtr = std::shared_ptr<FunctionContents>;
using ParameterPtr = std::shared_ptr<ParameterContents>;
using ReductionDomainPtr = std::shared_ptr<const ReductionDomainContents>;
using BufferPtr = std::shared_ptr<BufferContents>;

template <typename T> struct ExprNode : BaseExprNode {
    ExprNode() : BaseExprNode(T::_node_type) {}
    void accept(IRVisitor *v) const override;
};

template <typename T> struct StmtNode : BaseStmtNode {
    StmtNode() : BaseStmtNode(T::_node_type) {}
    void accept(IRVisitor *v) const override;
};

/** A half-open range [min, min + extent). */
struct Range {
    Expr min, extent;
    Range() = default;
    Range(Expr mn, Expr ext) : min(std::move(mn)), extent(std::move(ext)) {}
};
using Region = std::vector<Range>;

/** Values congruent to `remainder` modulo `modulus` (modulus 1: no fact;
 * modulus 0: exactly `remainder`). */
struct ModulusRemainder {
    int64_t modulus = 1, remainder = 0;
    ModulusRemainder() = default;
    ModulusRemainder(int64_t m, int64_t r) : modulus(m), remainder(r) {}
};

struct IntImm : ExprNode<IntImm> {
    int64_t value;
    static Expr make(Type t, int64_t value);
    static constexpr IRNodeType _node_type = IRNodeType::IntImm;
};

struct UIntImm : ExprNode<UIntImm> {
    uint64_t value;
    static Expr make(Type t, uint64_t value);
    static constexpr IRNodeType _node_type = IRNodeType::UIntImm;
};

struct FloatImm : ExprNode<FloatImm> {
    double value;
    static Expr make(Type t, double value);
    static constexpr IRNodeType _node_type = IRNodeType::FloatImm;
};

struct StringImm : ExprNode<StringImm> {
    std::string value;
    static Expr make(const std::string &value);
    static constexpr IRNodeType _node_type = IRNodeType::StringImm;
};

/** Value conversion (saturating for float->int is NOT implied: C semantics). */
struct Cast : ExprNode<Cast> {
    Expr value;
    static Expr make(Type t, Expr value);
    static constexpr IRNodeType _node_type = IRNodeType::Cast;
};

/** Bit-preserving conversion between types of equal total width. */
struct Reinterpret : ExprNode<Reinterpret> {
    Expr value;
    static Expr make(Type t, Expr value);
    static constexpr IRNodeType _node_type = IRNodeType::Reinterpret;
};

/** A named value: a loop variable, a Let, a scalar Param, or a reduction
 * variable. `param` is set for scalar parameters, `rdom` for reduction vars. */
struct Variable : ExprNode<Variable> {
    std::string name;
    ParameterPtr param;
    ReductionDomainPtr rdom;
    static Expr make(Type t, const std::string &name, ParameterPtr param = nullptr,
                     ReductionDomainPtr rdom = nullptr);
    static constexpr IRNodeType _node_type = IRNodeType::Variable;
};

template <typename T> struct BinaryOpNode : ExprNode<T> {
    Expr a, b;
    static Expr make(Expr a, Expr b);
};

// Integer Div and Mod round toward negative infinity (floor semantics); a zero
// divisor gives zero. Float Div is IEEE division; float Mod is a - b*floor(a/b).
struct Add : BinaryOpNode<Add> {
    static constexpr IRNodeType _node_type = IRNodeType::Add;
};
struct Sub : BinaryOpNode<Sub> {
    static constexpr IRNodeType _node_type = IRNodeType::Sub;
};
struct Mul : BinaryOpNode<Mul> {
    static constexpr IRNodeType _node_type = IRNodeType::Mul;
};
struct Div : BinaryOpNode<Div> {
    static constexpr IRNodeType _node_type = IRNodeType::Div;
};
struct Mod : BinaryOpNode<Mod> {
    static constexpr IRNodeType _node_type = IRNodeType::Mod;
};
struct Min : BinaryOpNode<Min> {
    static constexpr IRNodeType _node_type = IRNodeType::Min;
};
struct Max : BinaryOpNode<Max> {
    static constexpr IRNodeType _node_type = IRNodeType::Max;
};

template <typename T> struct CmpOpNode : ExprNode<T> {
    Expr a, b;
    static Expr make(Expr a, Expr b);
};
struct EQ : CmpOpNode<EQ> {
    static constexpr IRNodeType _node_type = IRNodeType::EQ;
};
struct NE : CmpOpNode<NE> {
    static constexpr IRNodeType _node_type = IRNodeType::NE;
};
struct LT : CmpOpNode<LT> {
    static constexpr IRNodeType _node_type = IRNodeType::LT;
};
struct LE : CmpOpNode<LE> {
    static constexpr IRNodeType _node_type = IRNodeType::LE;
};
struct GT : CmpOpNode<GT> {
    static constexpr IRNodeType _node_type = IRNodeType::GT;
};
struct GE : CmpOpNode<GE> {
    static constexpr IRNodeType _node_type = IRNodeType::GE;
};

struct And : ExprNode<And> {
    Expr a, b;
    static Expr make(Expr a, Expr b);
    static constexpr IRNodeType _node_type = IRNodeType::And;
};
struct Or : ExprNode<Or> {
    Expr a, b;
    static Expr make(Expr a, Expr b);
    static constexpr IRNodeType _node_type = IRNodeType::Or;
};
struct Not : ExprNode<Not> {
    Expr a;
    static Expr make(Expr a);
    static constexpr IRNodeType _node_type = IRNodeType::Not;
};

struct Select : ExprNode<Select> {
    Expr condition, true_value, false_value;
    static Expr make(Expr condition, Expr true_value, Expr false_value);
    static constexpr IRNodeType _node_type = IRNodeType::Select;
};

/** A load from a flat allocation or input buffer `name` at element `index`.
 * `predicate` (a bool of the same lanes) masks lanes that must not be read;
 * masked lanes produce an unspecified value. `param` is set for inputs.
 * `alignment` is a proven fact about the first lane's index (in elements
 * from the buffer's start), set by align_vector_accesses for backends that
 * move whole aligned words; a mutation that keeps the index's value keeps
 * it true. */
struct Load : ExprNode<Load> {
    std::string name;
    Expr index, predicate;
    ParameterPtr param;
    ModulusRemainder alignment;
    static Expr make(Type t, const std::string &name, Expr index, Expr predicate,
                     ParameterPtr param = nullptr, ModulusRemainder alignment = {});
    static constexpr IRNodeType _node_type = IRNodeType::Load;
};

/** The vector base, base + stride, ..., base + (lanes - 1) * stride. */
struct Ramp : ExprNode<Ramp> {
    Expr base, stride;
    int lanes;
    static Expr make(Expr base, Expr stride, int lanes);
    static constexpr IRNodeType _node_type = IRNodeType::Ramp;
};

struct Broadcast : ExprNode<Broadcast> {
    Expr value;
    int lanes;
    static Expr make(Expr value, int lanes);
    static constexpr IRNodeType _node_type = IRNodeType::Broadcast;
};

struct Let : ExprNode<Let> {
    std::string name;
    Expr value, body;
    static Expr make(const std::string &name, Expr value, Expr body);
    static constexpr IRNodeType _node_type = IRNodeType::Let;
};

/** A call. Image calls read an input buffer (multi-dimensional, before storage
 * flattening); Func calls read another Func (before lowering); Extern calls are
 * math library functions; Intrinsic calls are Loom-defined operations named in
 * Call::Intrinsics. */
struct Call : ExprNode<Call> {
    enum CallType { Image, Func, Extern, PureIntrinsic, Intrinsic };
    std::string name;
    std::vector<Expr> args;
    CallType call_type;
    FunctionPtr func;     // Func calls
    int value_index = 0;  // which Tuple element of a Func
    ParameterPtr param;   // Image calls to a BufferParam
    BufferPtr buffer;     // Image calls to a concrete Buffer

    static Expr make(Type t, const std::string &name, const std::vector<Expr> &args,
                     CallType call_type, FunctionPtr func = nullptr, int value_index = 0,
                     ParameterPtr param = nullptr, BufferPtr buffer = nullptr);

    bool is_intrinsic(const char *n) const {
        return (call_type == Intrinsic || call_type == PureIntrinsic) && name == n;
    }
    bool is_pure() const { return call_type != Intrinsic; }
    static constexpr IRNodeType _node_type = IRNodeType::Call;

    // Names of intrinsics understood by every backend.
    static constexpr const char *abs = "abs";
    static constexpr const char *bitwise_and = "bitwise_and";
    static constexpr const char *bitwise_or = "bitwise_or";
    static constexpr const char *bitwise_xor = "bitwise_xor";
    static constexpr const char *bitwise_not = "bitwise_not";
    static constexpr const char *shift_left = "shift_left";
    static constexpr const char *shift_right = "shift_right";
    static constexpr const char *likely = "likely";          // a hint for loop partitioning
    static constexpr const char *error = "error";            // args: message pieces; aborts
    static constexpr const char *buffer_get = "buffer_get";  // args: name, field, dim
    static constexpr const char *div_round_up = "div_round_up";
    static constexpr const char *undef = "undef";
    // promise_clamped(value, lo, hi): equals value, which the compiler
    // guarantees lies in [lo, hi]. Bounds analysis uses the range; it is
    // removed (replaced by value) before code generation.
    static constexpr const char *promise_clamped = "promise_clamped";
};

/** A horizontal reduction of a vector down to `lanes` lanes. */
struct VectorReduce : ExprNode<VectorReduce> {
    enum Op { Add, Mul, Min, Max, And, Or };
    Expr value;
    Op op;
    static Expr make(Op op, Expr value, int lanes);
    static constexpr IRNodeType _node_type = IRNodeType::VectorReduce;
};

struct LetStmt : StmtNode<LetStmt> {
    std::string name;
    Expr value;
    Stmt body;
    static Stmt make(const std::string &name, Expr value, Stmt body);
    static constexpr IRNodeType _node_type = IRNodeType::LetStmt;
};

/** Checks `condition` at run time; when false the pipeline stops and returns
 * an error whose text is built from `message` (a Call to Call::error). */
struct AssertStmt : StmtNode<AssertStmt> {
    Expr condition, message;
    static Stmt make(Expr condition, Expr message);
    static constexpr IRNodeType _node_type = IRNodeType::AssertStmt;
};

/** Marks where Func `name` is produced (is_producer) and then consumed. */
struct ProducerConsumer : StmtNode<ProducerConsumer> {
    std::string name;
    bool is_producer;
    Stmt body;
    static Stmt make(const std::string &name, bool is_producer, Stmt body);
    static Stmt make_produce(const std::string &name, Stmt body) { return make(name, true, body); }
    static Stmt make_consume(const std::string &name, Stmt body) { return make(name, false, body); }
    static constexpr IRNodeType _node_type = IRNodeType::ProducerConsumer;
};

/** How a loop runs. GPUBlock and GPUThread loops are the block and thread
 * indices of a CUDA kernel (blockIdx, threadIdx), innermost first as x, y,
 * z. */
enum class ForType { Serial, Parallel, Vectorized, Unrolled, GPUBlock, GPUThread };
const char *for_type_name(ForType t);

/** What lowering has decided about a loop beyond its bounds and kind, for
 * the passes after it and for code generation to read off the loop rather
 * than look up by name. Each fact is a field whose default says nothing;
 * a pass that rebuilds a loop keeps its attributes. */
struct LoopAttributes {
    /** On a GPU kernel's outermost gpu_blocks loop: how many of its blocks
     * one SM must be able to hold at once (the second argument of CUDA's
     * __launch_bounds__, Stage::gpu_blocks_per_sm); 0: none asked. */
    int gpu_blocks_per_sm = 0;

    bool operator==(const LoopAttributes &o) const {
        return gpu_blocks_per_sm == o.gpu_blocks_per_sm;
    }
    bool operator!=(const LoopAttributes &o) const { return !(*this == o); }
    bool empty() const { return *this == LoopAttributes(); }
};

struct For : StmtNode<For> {
    std::string name;
    Expr min, extent;
    ForType for_type;
    Stmt body;
    LoopAttributes attributes;
    static Stmt make(const std::string &name, Expr min, Expr extent, ForType for_type, Stmt body,
                     const LoopAttributes &attributes = LoopAttributes());
    static constexpr IRNodeType _node_type = IRNodeType::For;
};

/** Writes `value` to flat allocation or output buffer `name` at `index`.
 * `alignment` is as a Load's. */
struct Store : StmtNode<Store> {
    std::string name;
    Expr value, index, predicate;
    ParameterPtr param;
    ModulusRemainder alignment;
    static Stmt make(const std::string &name, Expr value, Expr index, Expr predicate,
                     ParameterPtr param = nullptr, ModulusRemainder alignment = {});
    static constexpr IRNodeType _node_type = IRNodeType::Store;
};

/** A multi-dimensional write of a (Tuple) value to a Func, before storage
 * flattening. */
struct Provide : StmtNode<Provide> {
    std::string name;
    std::vector<Expr> values;
    std::vector<Expr> args;
    static Stmt make(const std::string &name, const std::vector<Expr> &values,
                     const std::vector<Expr> &args);
    static constexpr IRNodeType _node_type = IRNodeType::Provide;
};

/** Where an allocation lives. Auto: the backend chooses (on the CPU, the
 * stack for sizes with a constant bound up to 16 KiB, with room for the
 * bound, as for a tile that is smaller at the edge of the data; else the
 * heap; in a GPU kernel, registers inside the thread loops, shared memory
 * outside them). Stack and Heap are the CPU's; Register, Shared and Global
 * are a GPU kernel's: per-thread, per-block, and device memory. */
enum class MemoryType { Auto, Stack, Heap, Register, Shared, Global };

/** A flat allocation of prod(extents) elements of `type` live within `body`.
 * `replicated`: Register storage at the block level of a GPU kernel (outside
 * its thread loops) of which every thread keeps a whole copy, computing the
 * same values, rather than the part it owns
 * (privatize_thread_owned_storage): each thread makes the block's stores to
 * it, and folds a reduction's total into its copy. */
struct Allocate : StmtNode<Allocate> {
    std::string name;
    Type type;
    MemoryType memory_type;
    std::vector<Expr> extents;
    Expr condition;
    Stmt body;
    bool replicated = false;
    static Stmt make(const std::string &name, Type type, MemoryType memory_type,
                     const std::vector<Expr> &extents, Expr condition, Stmt body,
                     bool replicated = false);
    static constexpr IRNodeType _node_type = IRNodeType::Allocate;
};

struct Free : StmtNode<Free> {
    std::string name;
    static Stmt make(const std::string &name);
    static constexpr IRNodeType _node_type = IRNodeType::Free;
};

/** Storage for a Func over `bounds` (one Range per dimension), before storage
 * flattening; one buffer per Tuple element. `memory_type` and `replicated`
 * become each buffer's Allocate's. */
struct Realize : StmtNode<Realize> {
    std::string name;
    std::vector<Type> types;
    MemoryType memory_type;
    Region bounds;
    Expr condition;
    Stmt body;
    bool replicated = false;
    static Stmt make(const std::string &name, const std::vector<Type> &types,
                     MemoryType memory_type, const Region &bounds, Expr condition, Stmt body,
                     bool replicated = false);
    static constexpr IRNodeType _node_type = IRNodeType::Realize;
};

struct Block : StmtNode<Block> {
    Stmt first, rest;
    static Stmt make(Stmt first, Stmt rest);
    /** Chains the defined statements; returns an undefined Stmt if none. */
    static Stmt make(const std::vector<Stmt> &stmts);
    static constexpr IRNodeType _node_type = IRNodeType::Block;
};

struct IfThenElse : StmtNode<IfThenElse> {
    Expr condition;
    Stmt then_case, else_case;
    static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
    static constexpr IRNodeType _node_type = IRNodeType::IfThenElse;
};

struct Evaluate : StmtNode<Evaluate> {
    Expr value;
    static Stmt make(Expr value);
    static constexpr IRNodeType _node_type = IRNodeType::Evaluate;
};

/** A block-level tile program (src/tile/), run once per point of its grid,
 * one GPU block each: what a stage scheduled with tile_program becomes.
 * The program itself is opaque here; what it reads from the enclosing
 * scope is in the node, so that passes see it: the extents of its grid,
 * and the values of its scalar parameters, by the program's names. */
struct TileKernel : StmtNode<TileKernel> {
    std::shared_ptr<const tile::TileKernelContents> contents;
    std::vector<Expr> grid;
    std::vector<std::string> scalar_names;
    std::vector<Expr> scalar_values;
    static Stmt make(std::shared_ptr<const tile::TileKernelContents> contents,
                     std::vector<Expr> grid, std::vector<std::string> scalar_names,
                     std::vector<Expr> scalar_values);
    static constexpr IRNodeType _node_type = IRNodeType::TileKernel;
};

}  // namespace internal
}  // namespace loom
