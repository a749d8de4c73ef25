// Emits CUDA C++ rather than PTX or NVVM IR: the source is readable (names
// come from the algorithm), NVRTC compiles it without a GPU, and the
// instructions a later tile backend needs (mma, wgmma, cp.async) fit in as
// inline PTX. Integer division and modulo keep Loom's semantics (rounding
// toward -inf, x / 0 == 0), through helpers in the source's prelude.
#include "codegen/CodeGen_CUDA.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "arith/Bounds.h"
#include "arith/InvariantAlignment.h"
#include "arith/Simplify.h"
#include "codegen/CudaSources.h"
#include "fusion/AssociativeUpdates.h"
#include "gpu/CrossThreadReductions.h"
#include "gpu/GPULoops.h"
#include "gpu/GpuBarriers.h"
#include "gpu/KernelFreeNames.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/Scope.h"
#include "ir/Substitute.h"
#include "ir/Util.h"
#include "loom/Error.h"
#include "loom/IROperator.h"
#include "tile/TileKernel.h"

namespace loom {
namespace internal {

namespace {

/** The shared memory one block may use on `target`'s GPU (opting in past
 * 48 KiB, as the runtime does at launch). Without a named capability, the
 * smallest of the GPUs Loom supports. */
int64_t max_shared_bytes(const Target &target) {
    switch (target.cuda_capability()) {
    case 80:
    case 87: return 163 * 1024;
    case 90: return 227 * 1024;
    default: return 99 * 1024;  // sm_86, sm_89
    }
}

/** Where the next piece of a kernel's shared memory starts after `bytes`
 * of it: each piece starts on 16 bytes, as its widest words need. */
int64_t next_shared_offset(int64_t bytes) { return (bytes + 15) / 16 * 16; }

}  // namespace

namespace {

/** C++ spelling of a scalar type. */
std::string c_type(Type t, const std::string &where) {
    if (t.is_vector()) {
        return "loom_vec<" + c_type(t.element_of(), where) + ", " + std::to_string(t.lanes) + ">";
    }
    if (t.is_bool()) return "bool";
    if (t.is_handle()) return "void *";
    if (t.code == Type::Float && t.bits == 16) return "__half";
    if (t.is_bfloat() && t.bits == 16) return "__nv_bfloat16";
    if (t.code == Type::Float && t.bits == 32) return "float";
    if (t.code == Type::Float && t.bits == 64) return "double";
    if (t.is_int()) {
        switch (t.bits) {
        case 8: return "signed char";
        case 16: return "short";
        case 32: return "int";
        case 64: return "long long";
        }
    }
    if (t.is_uint()) {
        switch (t.bits) {
        case 8: return "unsigned char";
        case 16: return "unsigned short";
        case 32: return "unsigned int";
        case 64: return "unsigned long long";
        }
    }
    user_error << "The type " << type_to_string(t) << " inside a GPU kernel (" << where
               << ") is not supported yet by the CUDA backend.";
    return "";
}

/** Whether a kernel uses float16 or bfloat16 (then the source includes
 * cuda_fp16.h and cuda_bf16.h). */
bool is_float16(Type t) { return t.is_float() && t.bits == 16; }

const char *kHalfHeaders = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";

/** The scalar expression for one lane of the vector expression e: e's
 * vector operands are replaced by the variables loom.lane.0, .1, ... (of
 * their element types), and collected in `operands`. */
class LaneOf : public IRMutator {
  public:
    std::vector<Expr> operands;
    static std::string lane_name(size_t k) { return "loom.lane." + std::to_string(k); }

    Expr mutate(const Expr &e) override {
        if (depth == 0) {
            depth++;
            Expr r = IRMutator::mutate(e);
            depth--;
            return r;
        }
        if (e.type().is_scalar()) return e;
        operands.push_back(e);
        return Variable::make(e.type().element_of(), lane_name(operands.size() - 1));
    }
    using IRMutator::mutate;

  private:
    int depth = 0;
    using IRMutator::visit;
    Expr visit(const Cast *op) override {
        return Cast::make(op->type.element_of(), mutate(op->value));
    }
    Expr visit(const Reinterpret *op) override {
        return Reinterpret::make(op->type.element_of(), mutate(op->value));
    }
    Expr visit(const Call *op) override {
        std::vector<Expr> args;
        for (const Expr &a : op->args) args.push_back(mutate(a));
        return Call::make(op->type.element_of(), op->name, args, op->call_type, op->func,
                          op->value_index, op->param, op->buffer);
    }
};

/** Prints one kernel. */
class KernelPrinter : public IRVisitor {
  public:
    KernelPrinter(CudaKernel &k, std::map<std::string, std::string> &c_names, const Target &target)
        : kernel(k), c_names(c_names), target(target) {}

    std::ostringstream out;
    int indent = 1;
    /** Whether the kernel has thread loops: then what is outside them runs
     * once per thread of a block, and storage there is shared by the block
     * (insert_gpu_barriers placed the barriers that order its accesses). */
    bool has_threads = false;
    /** Whether the kernel has vector code (then the source includes the
     * vector helpers). */
    bool uses_vectors = false;
    /** Whether it combines values across the block's threads (or groups
     * of them: then the source includes the reduction helpers). */
    bool uses_block_reduce = false;
    /** Whether a reduction takes loom_reduce_parity (then the kernel
     * declares it). */
    bool uses_reduce_parity = false;
    /** The shared memory the kernel's reductions across groups of threads
     * use in turn (the most any one needs). */
    int64_t group_scratch_bytes = 0;
    /** Each of the two halves that its reductions across the whole block,
     * or across groups of whole warps, alternate between
     * (loom_block_reduce), after the other groups' room. */
    int64_t block_scratch_half_bytes = 0;
    /** Where the whole block's reductions' room starts in the scratch. */
    int64_t block_scratch_offset() const {
        return group_scratch_bytes ? next_shared_offset(group_scratch_bytes) : 0;
    }
    /** The reductions' shared memory, after the Funcs' shared storage. */
    int64_t reduce_scratch_bytes() const {
        return block_scratch_half_bytes ? block_scratch_offset() + 2 * block_scratch_half_bytes
                                        : group_scratch_bytes;
    }
    /** Every byte of the kernel's shared memory is dynamic, passed at
     * launch: the runtime's opt-in past 48 KiB then sees the whole. (The
     * reduction helpers once kept static __shared__ arrays, which counted
     * against the 48 KiB without appearing in the launch's size.) */
    int64_t constant_shared_bytes() const {
        return reduce_scratch_bytes() ? reduce_scratch_offset() + reduce_scratch_bytes()
                                      : kernel.shared_bytes;
    }
    int64_t reduce_scratch_offset() const { return next_shared_offset(kernel.shared_bytes); }
    /** KernelFinder::start_alignment. */
    const std::map<std::string, int> *buffer_start_alignment = nullptr;

    std::string name_of(const std::string &n) const {
        auto it = c_names.find(n);
        internal_assert(it != c_names.end()) << "CUDA codegen: no C name for " << n;
        return it->second;
    }

    std::string print(const Expr &e) {
        std::ostringstream saved;
        std::swap(saved, expr_out);
        e.accept(this);
        std::swap(saved, expr_out);
        return saved.str();
    }
    void print(const Stmt &s) { s.accept(this); }

  private:
    CudaKernel &kernel;
    std::map<std::string, std::string> &c_names;  // lowered name -> C name
    const Target &target;
    std::ostringstream expr_out;
    std::vector<const For *> thread_loops;  // around the statement printed, outermost first
    // The block's thread dimensions (x 1, y 2, z 4) that the thread loops
    // around the statement printed fix: its own loops' and those above its
    // nest's outermost one, which run on the threads at 0 alone.
    int axes_covered = 0;

    bool at_block_level() const { return has_threads && thread_loops.empty(); }
    // The block's shared memory, by IR name (it starts on 16 bytes).
    std::set<std::string> shared_allocations;
    // The per-thread arrays in scope (`T name[N]`), by IR name.
    std::set<std::string> local_arrays;
    // Dense accesses (by buffer and index node) that a test before an
    // enclosing loop found aligned, in the copy of the loop printed for that
    // case; and all those such a test covers, in either copy.
    std::set<std::pair<std::string, const Ramp *>> assumed_aligned, alignment_tested;
    // The kernel's lets and loops around the statement printed, outermost
    // first, and the Func whose shared storage is sized at launch.
    std::vector<std::pair<std::string, Expr>> kernel_lets;
    std::vector<std::string> kernel_loops;
    std::string dynamic_shared_func;

    /** e in the host's variables at the launch (the kernel's own lets
     * substituted), or undefined when it depends on the block or thread
     * (a loop of the kernel). */
    Expr value_at_launch(Expr e) const {
        e = substitute_enclosing_lets(kernel_lets, e);
        for (const std::string &loop : kernel_loops) {
            if (expr_uses_var(e, loop)) return Expr();
        }
        return simplify(e);
    }
    /** A Func in shared memory whose size is known at launch: it follows
     * the kernel's constant-size shared storage (loom_dynamic_shared_offset,
     * the rounded size of that, is defined before the kernel's body). */
    void dynamic_shared_allocation(const Allocate *op) {
        Local n(*this, op->name);
        pad();
        out << "{\n";
        indent++;
        pad();
        shared_allocations.insert(op->name);
        out << type(op->type) << " *const " << n.name() << " = reinterpret_cast<" << type(op->type)
            << " *>(loom_shared_memory + loom_dynamic_shared_offset);  // sized at launch\n";
        print(op->body);
        indent--;
        pad();
        out << "}\n";
    }
    /** The scratch arguments of a reduction across groups of threads
     * through a T per thread, `bytes` of shared memory of its own (the
     * halves and the parity unused). */
    void group_reduce_scratch(int64_t bytes, const std::string &what) {
        uses_block_reduce = true;
        uses_reduce_parity = true;
        group_scratch_bytes = std::max(group_scratch_bytes, bytes);
        check_shared_memory(what);
        expr_out << "loom_shared_memory + loom_reduce_scratch_offset, 0, loom_reduce_parity";
    }
    /** The scratch arguments of a reduction that alternates between two
     * halves of its room (loom_block_reduce, and loom_group_reduce's groups
     * of whole warps), each of `half_bytes` (0: no shared memory). */
    void alternating_halves_scratch(int64_t half_bytes, const std::string &what) {
        uses_block_reduce = true;
        if (half_bytes == 0) {
            expr_out << "nullptr, 0";
        } else {
            block_scratch_half_bytes = std::max(block_scratch_half_bytes, half_bytes);
            check_shared_memory(what);
            expr_out << "loom_shared_memory + loom_reduce_scratch_offset + "
                        "loom_block_reduce_offset, loom_block_reduce_half_bytes";
        }
        expr_out << ", loom_reduce_parity";
        uses_reduce_parity = true;
    }
    void check_shared_memory(const std::string &what) const {
        const int64_t total = constant_shared_bytes();
        const int64_t limit = max_shared_bytes(target);
        user_assert(total <= limit)
            << "Kernel " << kernel.name << " needs " << total
            << " bytes of shared memory per block with " << what << "; "
            << (target.cuda_capability() ? target.cuda_arch() : std::string("the smallest GPU"))
            << " allows " << limit << " (" << limit / 1024 << " KiB). Use smaller tiles"
            << (target.cuda_capability() ? "." : ", or name a capability with more, e.g. sm_90.");
    }
    void barrier() {
        pad();
        out << "__syncthreads();\n";
    }

    void pad() { out << std::string(indent * 4, ' '); }
    std::string where() const { return kernel.name; }
    std::string type(Type t) {
        uses_vectors |= t.is_vector();
        return c_type(t, where());
    }

    // ---- expressions
    using IRVisitor::visit;
    void visit(const IntImm *op) override {
        // The least value has no literal of its type: -2147483648 negates
        // 2147483648, a long, and makes what it meets a long too.
        const bool least = (op->type.bits == 64 && op->value == INT64_MIN) ||
                           (op->type.bits == 32 && op->value == INT32_MIN);
        const char *suffix = op->type.bits == 64 ? "LL" : "";
        if (least) expr_out << "(" << op->value + 1 << suffix << " - 1" << suffix << ")";
        else if (op->type.bits == 64 || op->type.bits == 32) expr_out << op->value << suffix;
        else expr_out << "(" << type(op->type) << ")(" << op->value << ")";
    }
    void visit(const UIntImm *op) override {
        if (op->type.is_bool()) expr_out << (op->value ? "true" : "false");
        else if (op->type.bits == 64) expr_out << op->value << "ULL";
        else expr_out << "(" << type(op->type) << ")(" << op->value << "U)";
    }
    void visit(const FloatImm *op) override {
        if (is_float16(op->type)) {
            // Converted from the float32 constant (exact for every value of
            // the 16-bit type).
            expr_out << "((" << type(op->type) << ")("
                     << print(FloatImm::make(Float(32), op->value)) << "))";
            return;
        }
        const bool f32 = op->type.bits == 32;
        user_assert(op->type.code == Type::Float && (f32 || op->type.bits == 64))
            << "The type " << type_to_string(op->type) << " inside a GPU kernel (" << where()
            << ") is not supported yet by the CUDA backend.";
        double v = op->value;
        if (std::isnan(v)) {
            expr_out << (f32 ? "__int_as_float(0x7fc00000)"
                             : "__longlong_as_double(0x7ff8000000000000LL)");
        } else if (std::isinf(v)) {
            if (f32)
                expr_out << (v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)");
            else
                expr_out << (v > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                                   : "__longlong_as_double(0xfff0000000000000LL)");
        } else {
            char buf[64];
            // Hexadecimal: exact, and no locale or rounding surprises.
            std::snprintf(buf, sizeof buf, "%a",
                          f32 ? static_cast<double>(static_cast<float>(v)) : v);
            expr_out << buf << (f32 ? "f" : "");
        }
    }
    void visit(const StringImm *) override {
        user_error << "A string inside a GPU kernel (" << where() << ") is not supported.";
    }
    void visit(const Cast *op) override {
        if (lanewise(Expr(op))) return;
        // 16-bit floats convert to and from everything through float.
        if (is_float16(op->type) || is_float16(op->value.type())) {
            expr_out << "((" << type(op->type) << ")((float)(" << print(op->value) << ")))";
            return;
        }
        expr_out << "((" << type(op->type) << ")(" << print(op->value) << "))";
    }
    void visit(const Reinterpret *op) override {
        if (lanewise(Expr(op))) return;
        Type from = op->value.type(), to = op->type;
        std::string v = print(op->value);
        if (is_float16(from)) {
            expr_out << "((" << type(to) << ")"
                     << (from.is_bfloat() ? "__bfloat16_as_ushort(" : "__half_as_ushort(") << v
                     << "))";
            return;
        }
        if (is_float16(to)) {
            expr_out << (to.is_bfloat() ? "__ushort_as_bfloat16(" : "__ushort_as_half(")
                     << "(unsigned short)(" << v << "))";
            return;
        }
        if (from.is_float() && to.bits == 32)
            expr_out << "((" << type(to) << ")__float_as_int(" << v << "))";
        else if (to.is_float() && from.bits == 32) expr_out << "__int_as_float((int)(" << v << "))";
        else if (from.is_float() && to.bits == 64)
            expr_out << "((" << type(to) << ")__double_as_longlong(" << v << "))";
        else if (to.is_float() && from.bits == 64)
            expr_out << "__longlong_as_double((long long)(" << v << "))";
        else expr_out << "((" << type(to) << ")(" << v << "))";
    }
    void visit(const Variable *op) override { expr_out << name_of(op->name); }

    /** Prints the vector expression e (an arithmetic, logical, Select,
     * Cast, Reinterpret or Call node) as its scalar form mapped over the
     * lanes of its vector operands. Returns false for a scalar e. */
    bool lanewise(const Expr &e) {
        if (e.type().is_scalar()) return false;
        uses_vectors = true;
        LaneOf lane;
        Expr scalar = lane.mutate(e);
        std::vector<std::string> args;
        for (const Expr &o : lane.operands) args.push_back(print(o));
        expr_out << "loom_map([&](";
        std::vector<std::unique_ptr<Local>> params;
        for (size_t k = 0; k < lane.operands.size(); k++) {
            params.push_back(std::make_unique<Local>(*this, LaneOf::lane_name(k)));
            expr_out << (k ? ", " : "") << type(lane.operands[k].type().element_of()) << " "
                     << params.back()->name();
        }
        expr_out << ") { return " << print(scalar) << "; }";
        for (const std::string &a : args) expr_out << ", " << a;
        expr_out << ")";
        return true;
    }
    /** The lambda combining two values of type t with a VectorReduce's
     * operator, as printed by the scalar rules. */
    std::string reduce_lambda(VectorReduce::Op o, Type t) {
        Expr a = Variable::make(t, "loom.reduce.a"), b = Variable::make(t, "loom.reduce.b");
        Expr combined = combine(o, a, b);
        Local pa(*this, "loom.reduce.a"), pb(*this, "loom.reduce.b");
        return "[&](" + type(t) + " " + pa.name() + ", " + type(t) + " " + pb.name() +
               ") { return " + print(combined) + "; }";
    }
    /** The kernel's buffer parameter `name` (in global memory), or null for
     * storage of its own. */
    const CudaKernel::Param *kernel_buffer(const std::string &name) const {
        for (const CudaKernel::Param &p : kernel.params) {
            if (p.is_buffer && p.name == name) return &p;
        }
        return nullptr;
    }
    bool is_kernel_buffer(const std::string &name) const { return kernel_buffer(name); }
    bool is_read_only_kernel_buffer(const std::string &name) const {
        const CudaKernel::Param *p = kernel_buffer(name);
        return p && !p->written;
    }
    /** Whether a dense access of `lanes` elements of t to buffer `name`, whose
     * first index is congruent as `index`, moves words at addresses proven
     * to be multiples of the word: the buffer's start is aligned to one
     * (its shared memory is to 16 bytes), and so is the index's offset. */
    bool proven_aligned(const std::string &name, Type t, int lanes,
                        const ModulusRemainder &index) const {
        const int64_t word = word_bytes(t, lanes);
        if (word <= t.bytes()) return false;  // moved lane by lane anyway
        int64_t start = 0;
        if (is_kernel_buffer(name)) {
            auto it = buffer_start_alignment->find(name);
            if (it != buffer_start_alignment->end()) start = it->second;
        } else if (shared_allocations.count(name)) {
            start = 16;
        }
        if (start % word != 0) return false;
        // Every offset index * bytes, index = modulus * n + remainder, is a
        // multiple of the word (reduced first: a modulus may be huge).
        auto offset_is_multiple = [&](int64_t v) { return (v % word) * t.bytes() % word == 0; };
        return offset_is_multiple(index.modulus) && offset_is_multiple(index.remainder);
    }
    /** The word (bytes) that a dense access of `lanes` elements of t to
     * `name` tests its address for at run time, or 0 when it moves words
     * untested (proven_aligned) or moves lanes (a per-thread array, or a
     * vector with no word wider than an element). */
    int tested_word(const std::string &name, Type t, int lanes,
                    const ModulusRemainder &index) const {
        if (local_arrays.count(name) || proven_aligned(name, t, lanes, index)) return 0;
        if (!is_kernel_buffer(name) && !shared_allocations.count(name)) return 0;
        const int word = word_bytes(t, lanes);
        return word > t.bytes() ? word : 0;
    }
    /** The widest word (16, 8 or 4 bytes, or 0) that divides a vector of
     * `lanes` t's, as loom_word in the prelude. */
    static int word_bytes(Type t, int lanes) {
        const int64_t bytes = int64_t(t.bytes()) * lanes;
        return bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : bytes % 4 == 0 ? 4 : 0;
    }
    /** Whether the dense access with index r moves aligned words untested:
     * proven so, or inside the copy of a loop whose test before it holds. */
    bool moves_aligned(const Ramp *r, const std::string &name, Type t, int lanes,
                       const ModulusRemainder &index) const {
        return assumed_aligned.count({name, r}) || proven_aligned(name, t, lanes, index);
    }
    /** A dense vector index: Ramp(base, 1) with a scalar base. */
    static const Ramp *dense_ramp(const Expr &index) {
        const Ramp *r = index.as<Ramp>();
        return r && r->base.type().is_scalar() && is_const_one(r->stride) ? r : nullptr;
    }

    void binary(const Expr &a, const char *o, const Expr &b, Type t) {
        internal_assert(t.is_scalar()) << "CUDA codegen: vector operands reach binary()";
        std::string s = "(" + print(a) + " " + o + " " + print(b) + ")";
        // C promotes narrow integers to int: wrap back to the type.
        if (t.is_int_or_uint() && !t.is_bool() && t.bits < 32) s = "((" + type(t) + ")" + s + ")";
        expr_out << s;
    }
    void visit(const Add *op) override {
        if (lanewise(Expr(op))) return;
        binary(op->a, "+", op->b, op->type);
    }
    void visit(const Sub *op) override {
        if (lanewise(Expr(op))) return;
        binary(op->a, "-", op->b, op->type);
    }
    void visit(const Mul *op) override {
        if (lanewise(Expr(op))) return;
        binary(op->a, "*", op->b, op->type);
    }
    void visit(const Div *op) override {
        if (lanewise(Expr(op))) return;
        if (op->type.is_float()) return binary(op->a, "/", op->b, op->type);
        expr_out << "loom_div<" << type(op->type) << ">(" << print(op->a) << ", " << print(op->b)
                 << ")";
    }
    void visit(const Mod *op) override {
        if (lanewise(Expr(op))) return;
        if (is_float16(op->type)) {
            expr_out << "((" << type(op->type) << ")loom_fmod((float)(" << print(op->a)
                     << "), (float)(" << print(op->b) << ")))";
            return;
        }
        if (op->type.is_float()) {
            expr_out << "loom_fmod(" << print(op->a) << ", " << print(op->b) << ")";
            return;
        }
        expr_out << "loom_mod<" << type(op->type) << ">(" << print(op->a) << ", " << print(op->b)
                 << ")";
    }
    void min_max(const Expr &a, const Expr &b, Type t, bool is_min) {
        if (is_float16(t)) {
            expr_out << "((" << type(t) << ")" << (is_min ? "fminf" : "fmaxf") << "((float)("
                     << print(a) << "), (float)(" << print(b) << ")))";
            return;
        }
        if (t.is_float()) {
            // fmin/fmax ignore a NaN operand, as the CPU backend does.
            expr_out << (is_min ? "fmin" : "fmax") << (t.bits == 32 ? "f" : "") << "(" << print(a)
                     << ", " << print(b) << ")";
            return;
        }
        expr_out << (is_min ? "loom_min<" : "loom_max<") << type(t) << ">(" << print(a) << ", "
                 << print(b) << ")";
    }
    void visit(const Min *op) override {
        if (lanewise(Expr(op))) return;
        min_max(op->a, op->b, op->type, true);
    }
    void visit(const Max *op) override {
        if (lanewise(Expr(op))) return;
        min_max(op->a, op->b, op->type, false);
    }
    void visit(const EQ *op) override {
        if (lanewise(Expr(op))) return;
        binary(op->a, "==", op->b, op->type);
    }
    void visit(const NE *op) override {
        if (lanewise(Expr(op))) return;
        binary(op->a, "!=", op->b, op->type);
    }
    void visit(const LT *op) override {
        if (lanewise(Expr(op))) return;
        binary(op->a, "<", op->b, op->type);
    }
    void visit(const LE *op) override {
        if (lanewise(Expr(op))) return;
        binary(op->a, "<=", op->b, op->type);
    }
    void visit(const GT *op) override {
        if (lanewise(Expr(op))) return;
        binary(op->a, ">", op->b, op->type);
    }
    void visit(const GE *op) override {
        if (lanewise(Expr(op))) return;
        binary(op->a, ">=", op->b, op->type);
    }
    void visit(const And *op) override {
        if (lanewise(Expr(op))) return;
        binary(op->a, "&&", op->b, op->type);
    }
    void visit(const Or *op) override {
        if (lanewise(Expr(op))) return;
        binary(op->a, "||", op->b, op->type);
    }
    void visit(const Not *op) override {
        if (lanewise(Expr(op))) return;
        expr_out << "(!" << print(op->a) << ")";
    }
    void visit(const Select *op) override {
        if (lanewise(Expr(op))) return;
        expr_out << "(" << print(op->condition) << " ? " << print(op->true_value) << " : "
                 << print(op->false_value) << ")";
    }
    void visit(const Load *op) override {
        const std::string elem = type(op->type.element_of()), buf = name_of(op->name);
        const bool masked = !is_const_one(op->predicate);
        if (op->type.is_scalar()) {
            std::string load = buf + "[" + print(op->index) + "]";
            if (is_read_only_kernel_buffer(op->name)) load = "loom_load_readonly(&" + load + ")";
            if (masked) load = "(" + print(op->predicate) + " ? " + load + " : " + elem + "())";
            expr_out << load;
            return;
        }
        uses_vectors = true;
        const std::string lanes = std::to_string(op->type.lanes);
        if (const Ramp *r = dense_ramp(op->index); r && !masked) {
            const bool aligned =
                moves_aligned(r, op->name, op->type.element_of(), op->type.lanes, op->alignment);
            expr_out << (local_arrays.count(op->name) ? "loom_load_lanes<"
                         : is_read_only_kernel_buffer(op->name)
                             ? (aligned ? "loom_load_aligned_readonly<"
                                        : "loom_load_dense_readonly<")
                             : (aligned ? "loom_load_aligned<" : "loom_load_dense<"))
                     << elem << ", " << lanes << ">(" << buf << ", " << print(r->base) << ")";
            return;
        }
        expr_out << (is_read_only_kernel_buffer(op->name) ? "loom_gather_readonly("
                                                          : "loom_gather(")
                 << buf << ", " << print(op->index);
        if (masked) expr_out << ", " << print(op->predicate);
        expr_out << ")";
    }
    void visit(const Ramp *op) override {
        uses_vectors = true;
        expr_out << "loom_ramp<" << op->lanes << ">(" << print(op->base) << ", "
                 << print(op->stride) << ")";
    }
    void visit(const Broadcast *op) override {
        uses_vectors = true;
        expr_out << "loom_broadcast<" << op->lanes << ">(" << print(op->value) << ")";
    }
    void visit(const VectorReduce *op) override {
        uses_vectors = true;
        Type in = op->value.type();
        std::string f = reduce_lambda(op->op, in.element_of());
        if (op->type.is_scalar()) {
            expr_out << "loom_vreduce_all(" << f << ", " << print(op->value) << ")";
        } else {
            expr_out << "loom_vreduce<" << op->type.lanes << ">(" << f << ", " << print(op->value)
                     << ")";
        }
    }
    void visit(const Let *op) override {
        // An expression with locals: an immediately invoked lambda, which
        // declares a chain of lets one after another.
        std::vector<std::unique_ptr<Local>> locals;
        std::string declarations;
        Expr e = op;
        while (const Let *let = e.as<Let>()) {
            std::string value = print(let->value);
            locals.push_back(std::make_unique<Local>(*this, let->name));
            declarations += "const " + type(let->value.type()) + " " + locals.back()->name() +
                            " = " + value + "; ";
            e = let->body;
        }
        std::string body = print(e);
        expr_out << "([&]() { " << declarations << "return " << body << "; }())";
        while (!locals.empty()) locals.pop_back();  // innermost first: each restores its outer name
    }
    void visit(const Call *op) override {
        if (lanewise(Expr(op))) return;
        if (op->is_intrinsic(gpu_intrinsic::first_thread)) {
            expr_out << "(threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)";
            return;
        }
        const int64_t threads = kernel.block[0] * kernel.block[1] * kernel.block[2];
        if (op->is_intrinsic(gpu_intrinsic::group_reduce)) {
            auto reduce = static_cast<VectorReduce::Op>(*as_const_int(op->args[1]));
            const int64_t *reduced = as_const_int(op->args[2]);
            internal_assert(reduced) << "a group reduction's dimensions are constants";
            expr_out << "loom_group_reduce<" << kernel.block[0] << ", " << kernel.block[1] << ", "
                     << kernel.block[2] << ", " << *reduced << ">(" << print(op->args[0]) << ", "
                     << reduce_lambda(reduce, op->type) << ", ";
            // The paths of loom_group_reduce: segments of a warp shuffle
            // alone; groups of a power of two of whole warps take the whole
            // block's alternating halves; others a T per thread.
            const int64_t row = kernel.block[0], per_group = row / 32;
            const std::string what = "a reduction across groups of its threads";
            if (*reduced == 1 && row <= 32 && 32 % row == 0) {
                alternating_halves_scratch(0, what);
            } else if (*reduced == 1 && row % 32 == 0 && (per_group & (per_group - 1)) == 0) {
                alternating_halves_scratch((threads / 32) * op->type.bytes(), what);
            } else {
                group_reduce_scratch(threads * op->type.bytes(), what);
            }
            expr_out << ")";
            return;
        }
        if (op->is_intrinsic(gpu_intrinsic::block_reduce)) {
            auto reduce = static_cast<VectorReduce::Op>(*as_const_int(op->args[1]));
            // The block's shape as constants (see loom_block_reduce): a
            // power of two of whole warps passes the warps' totals through
            // shared memory, a warp per T (none for one warp); any other
            // shape needs one more T, for the result.
            const int64_t warps = (threads + 31) / 32;
            const bool whole_warps = threads % 32 == 0 && (warps & (warps - 1)) == 0;
            const int64_t half_bytes = whole_warps ? (warps == 1 ? 0 : warps * op->type.bytes())
                                                   : (warps + 1) * op->type.bytes();
            expr_out << "loom_block_reduce<" << kernel.block[0] << ", " << kernel.block[1] << ", "
                     << kernel.block[2] << ">(" << print(op->args[0]) << ", "
                     << reduce_lambda(reduce, op->type) << ", ";
            alternating_halves_scratch(half_bytes, "a reduction across its threads");
            expr_out << ")";
            return;
        }
        if (op->is_intrinsic(Call::likely) || op->is_intrinsic(Call::promise_clamped)) {
            expr_out << print(op->args[0]);
            return;
        }
        if (op->is_intrinsic(Call::abs)) {
            Type t = op->args[0].type();
            if (t.is_float() && t.bits == 16) {
                // __half and __nv_bfloat16 have no fabs of their own: through
                // float, as min and max go (fabs on one would pick a float
                // overload and leave a float the next operator cannot mix).
                expr_out << "((" << type(t) << ")fabsf((float)(" << print(op->args[0]) << ")))";
            } else if (t.is_float()) {
                expr_out << (t.bits == 32 ? "fabsf(" : "fabs(") << print(op->args[0]) << ")";
            } else {
                expr_out << "((" << type(op->type) << ")(" << print(op->args[0]) << " < 0 ? -"
                         << print(op->args[0]) << " : " << print(op->args[0]) << "))";
            }
            return;
        }
        static const std::map<std::string, const char *> bit_ops = {
            {Call::bitwise_and, "&"}, {Call::bitwise_or, "|"}, {Call::bitwise_xor, "^"}};
        const int64_t *signed_amount = op->args.size() == 2 ? as_const_int(op->args[1]) : nullptr;
        const uint64_t *unsigned_amount =
            op->args.size() == 2 ? as_const_uint(op->args[1]) : nullptr;
        if ((signed_amount && *signed_amount >= 0 && *signed_amount < op->type.bits) ||
            (unsigned_amount && *unsigned_amount < static_cast<uint64_t>(op->type.bits))) {
            // C++17 leaves a negative value shifted left undefined too.
            if (op->is_intrinsic(Call::shift_left) && op->type.is_uint())
                return binary(op->args[0], "<<", op->args[1], op->type);
            if (op->is_intrinsic(Call::shift_right))
                return binary(op->args[0], ">>", op->args[1], op->type);
        }
        if ((op->is_intrinsic(Call::shift_left) || op->is_intrinsic(Call::shift_right)) &&
            op->call_type != Call::Extern) {
            // C leaves shifts by negative amounts or the width undefined;
            // Loom's are total (loom_shift in the prelude).
            expr_out << "loom_shift<" << type(op->type) << ">(" << print(op->args[0]) << ", "
                     << print(op->args[1]) << ", "
                     << (op->is_intrinsic(Call::shift_left) ? "true" : "false") << ")";
            return;
        }
        auto b = bit_ops.find(op->name);
        if (b != bit_ops.end() && op->call_type != Call::Extern) {
            return binary(op->args[0], b->second, op->args[1], op->type);
        }
        if (op->is_intrinsic(Call::bitwise_not)) {
            expr_out << "((" << type(op->type) << ")(~" << print(op->args[0]) << "))";
            return;
        }
        if (op->is_intrinsic(Call::div_round_up)) {
            std::string a = print(op->args[0]), d = print(op->args[1]);
            expr_out << "loom_div<" << type(op->type) << ">(" << a << " + " << d << " - 1, " << d
                     << ")";
            return;
        }
        if (op->call_type == Call::PureIntrinsic) {
            size_t u = op->name.rfind('_');
            std::string fn = op->name.substr(0, u), sfx = op->name.substr(u + 1);
            static const std::set<std::string> math = {"exp",   "log", "sqrt",  "rsqrt",
                                                       "sin",   "cos", "floor", "ceil",
                                                       "round", "pow", "tanh",  "erf"};
            if (math.count(fn) && (sfx == "f32" || sfx == "f64")) {
                std::string c = fn == "round" ? "rint" : fn;
                expr_out << c << (sfx == "f32" ? "f" : "") << "(";
                for (size_t i = 0; i < op->args.size(); i++) {
                    expr_out << (i ? ", " : "") << print(op->args[i]);
                }
                expr_out << ")";
                return;
            }
        }
        user_error << "The call " << Expr(op) << " inside a GPU kernel (" << where()
                   << ") is not supported yet by the CUDA backend.";
    }

    // ---- statements
    void visit(const LetStmt *op) override {
        // Declared in the enclosing block, so that a chain of lets reads as
        // a sequence of declarations rather than a staircase of blocks.
        std::string value = print(op->value);
        Local n(*this, op->name, true);
        pad();
        out << "const " << type(op->value.type()) << " " << n.name() << " = " << value << ";\n";
        kernel_lets.emplace_back(op->name, op->value);
        print(op->body);
        kernel_lets.pop_back();
    }
    void visit(const AssertStmt *op) override {
        // A failed check inside a kernel stops it; the error the host gets
        // for it lists the kernel's checks (CudaKernel::checks).
        std::string text;
        const Call *message = op->message.as<Call>();
        if (message && message->is_intrinsic(Call::error)) {
            for (const Expr &piece : message->args) {
                const StringImm *s = piece.as<StringImm>();
                const int64_t *i = as_const_int(piece);
                text += s ? s->value : i ? std::to_string(*i) : std::string("...");
            }
        }
        std::replace(text.begin(), text.end(), '\n', ' ');
        if (!text.empty() &&
            std::find(kernel.checks.begin(), kernel.checks.end(), text) == kernel.checks.end()) {
            kernel.checks.push_back(text);
        }
        pad();
        out << "if (!" << print(op->condition) << ") __trap();"
            << (text.empty() ? "" : "  // " + text) << "\n";
    }
    void visit(const ProducerConsumer *op) override {
        pad();
        out << "// " << (op->is_producer ? "produce " : "consume ") << op->name << "\n";
        print(op->body);
    }
    void visit(const For *op) override {
        // (A GPU loop's extent is the launch's, in the host's variables.)
        const std::string mn = print(op->min),
                          ext = is_gpu_loop(op->for_type) ? "" : print(op->extent);
        Local local(*this, op->name);
        kernel_loops.push_back(op->name);
        struct Pop {
            std::vector<std::string> &loops;
            ~Pop() { loops.pop_back(); }
        } pop{kernel_loops};
        const std::string &n = local.name();
        if (op->for_type == ForType::GPUBlock || op->for_type == ForType::GPUThread) {
            const bool block = op->for_type == ForType::GPUBlock;
            int dim = gpu_loop_chain_depth(op->body, op->for_type);
            const char *axis[] = {"x", "y", "z"};
            pad();
            out << "{\n";
            indent++;
            open_block();
            // Loops of one block may have fewer threads than it has.
            std::string guard;
            if (!block && thread_extent(op) < kernel.block[dim]) {
                guard = "threadIdx." + std::string(axis[dim]) + " < " +
                        std::to_string(thread_extent(op));
            }
            // A nest of fewer thread loops than the block has dimensions
            // runs on the threads at 0 of the others: the loops above its
            // outermost one have a single iteration, not one per thread.
            const int axes_before = axes_covered;
            if (!block && thread_loops.empty()) {
                for (int a = dim + 1; a < 3; a++) {
                    if (kernel.block[a] > 1) {
                        guard += std::string(guard.empty() ? "" : " && ") + "threadIdx." + axis[a] +
                                 " == 0";
                    }
                    axes_covered |= 1 << a;
                }
            }
            if (!block) axes_covered |= 1 << dim;
            if (!guard.empty()) {
                pad();
                out << "if (" << guard << ") {\n";
                indent++;
            }
            // (A loop may be there only to say which threads run its body:
            // one that folds a group's total, say, without its coordinate.)
            if (stmt_uses_var(op->body, op->name)) {
                pad();
                out << "const int " << n << " = " << mn << " + (int)"
                    << (block ? "blockIdx." : "threadIdx.") << axis[dim] << ";\n";
            }
            if (!block) thread_loops.push_back(op);
            print(op->body);
            if (!block) thread_loops.pop_back();
            axes_covered = axes_before;
            if (!guard.empty()) {
                indent--;
                pad();
                out << "}\n";
            }
            close_block();
            indent--;
            pad();
            out << "}\n";
            return;
        }
        user_assert(op->for_type == ForType::Serial || op->for_type == ForType::Unrolled)
            << "The " << for_type_name(op->for_type) << " loop " << op->name
            << " inside a GPU kernel is not supported: make it serial.";
        auto print_loop = [&]() {
            pad();
            out << "for (int " << n << " = " << mn << ", " << n << "_end = " << n << " + " << ext
                << "; " << n << " < " << n << "_end; " << n << "++) {\n";
            indent++;
            open_block();
            print(op->body);
            close_block();
            indent--;
            pad();
            out << "}\n";
        };
        // Accesses whose address the loop moves in whole words: tested once
        // here (InvariantAlignment.h), then a copy of the loop moves them
        // untested; the loop as it was runs when the test fails.
        std::vector<std::pair<std::string, const Ramp *>> versioned;
        std::string test;
        std::set<std::string> tests;
        for (const InvariantAlignment &a : invariant_alignments(
                 op, [&](const std::string &name, Type t, int lanes, const ModulusRemainder &m) {
                     return tested_word(name, t, lanes, m);
                 })) {
            const std::pair<std::string, const Ramp *> access(a.buffer, a.index);
            if (alignment_tested.count(access)) continue;  // by an outer loop's test
            versioned.push_back(access);
            std::string one = "loom_is_aligned<" + std::to_string(a.word) + ">(" +
                              name_of(a.buffer) + ", " + print(a.invariant_index) + ")";
            if (tests.insert(one).second) test += (test.empty() ? "" : " && ") + one;
        }
        if (versioned.empty()) {
            print_loop();
            return;
        }
        uses_vectors = true;
        pad();
        out << "if (" << test << ") {\n";
        indent++;
        for (const auto &access : versioned) {
            assumed_aligned.insert(access);
            alignment_tested.insert(access);
        }
        print_loop();
        for (const auto &access : versioned) assumed_aligned.erase(access);
        indent--;
        pad();
        out << "} else {\n";
        indent++;
        print_loop();
        indent--;
        pad();
        out << "}\n";
        for (const auto &access : versioned) alignment_tested.erase(access);
    }
    void visit(const Store *op) override {
        // The lets CSE leaves at the root of an unmasked store's index or
        // value are declared before it, rather than in a lambda inside it.
        if (is_const_one(op->predicate)) {
            for (const bool in_index : {true, false}) {
                if (const Let *let = (in_index ? op->index : op->value).as<Let>()) {
                    Stmt inner = Store::make(op->name, in_index ? op->value : let->body,
                                             in_index ? let->body : op->index, op->predicate,
                                             op->param, op->alignment);
                    print(LetStmt::make(let->name, let->value, inner));
                    return;
                }
            }
        }
        check_every_thread_stores_its_own(op);
        const Type t = op->value.type();
        const std::string buf = name_of(op->name), value = print(op->value);
        const bool masked = !is_const_one(op->predicate);
        uses_vectors |= t.is_vector();
        pad();
        if (t.is_scalar()) {
            if (masked) out << "if (" << print(op->predicate) << ") ";
            out << buf << "[" << print(op->index) << "] = " << value << ";\n";
        } else if (const Ramp *r = dense_ramp(op->index); r && !masked) {
            const bool aligned = moves_aligned(r, op->name, t.element_of(), t.lanes, op->alignment);
            out << (local_arrays.count(op->name) ? "loom_store_lanes<"
                    : is_kernel_buffer(op->name)
                        ? (aligned ? "loom_store_aligned_global<" : "loom_store_dense_global<")
                        : (aligned ? "loom_store_aligned<" : "loom_store_dense<"))
                << type(t.element_of()) << ", " << t.lanes << ">(" << buf << ", " << print(r->base)
                << ", " << value << ");\n";
        } else {
            out << "loom_scatter(" << buf << ", " << print(op->index) << ", " << value;
            if (masked) out << ", " << print(op->predicate);
            out << ");\n";
        }
    }
    /** A store inside some of a nest's thread loops but outside one of its
     * inner ones runs on every thread of that loop's dimension: the same
     * store, made by all of them at once. Per-thread arrays are each
     * thread's own. In shared and device memory, only a pure definition
     * computed within the nest's thread loops alone may be stored so: every
     * thread then writes the value each point has (as insert_gpu_barriers
     * assumes); with a serial loop between, one thread could write the next
     * iteration's value while another still reads this one's. */
    void check_every_thread_stores_its_own(const Store *op) const {
        if (thread_loops.empty() || local_arrays.count(op->name)) return;
        auto nest = std::find(kernel_loops.begin(), kernel_loops.end(), thread_loops.front()->name);
        bool pure_within_threads = nest != kernel_loops.end();
        bool own_loop = false;
        for (auto l = nest; pure_within_threads && l != kernel_loops.end(); ++l) {
            const bool own = is_pure_definition_loop(*l, op->name);
            const bool thread = std::any_of(thread_loops.begin(), thread_loops.end(),
                                            [&](const For *t) { return t->name == *l; });
            pure_within_threads = own || thread;
            own_loop = own_loop || own;
        }
        if (pure_within_threads && own_loop) return;
        // A Tuple's element buffer (f.0) is named for the user by its Func.
        const std::string func_loop = innermost_loop_of_buffer(kernel_loops, op->name);
        const std::string func = func_loop.empty() ? op->name : func_of_loop(func_loop);
        for (int a = 0; a < 3; a++) {
            if (kernel.block[a] <= 1 || (axes_covered >> a) & 1) continue;
            const char *axis[] = {"x", "y", "z"};
            const For *inner = thread_loop_on_axis(thread_loops.front()->body, a);
            const For *around = thread_loops.back();
            const int around_axis = gpu_loop_chain_depth(around->body, ForType::GPUThread);
            const std::string inner_name =
                inner ? inner->name : std::string("on threadIdx.") + axis[a];
            user_error << "Kernel " << kernel.name << " stores to " << op->name
                       << " inside the gpu_threads loop " << around->name << " (threadIdx."
                       << axis[around_axis] << ") but outside the gpu_threads loop " << inner_name
                       << " (threadIdx." << axis[a]
                       << ") nested in the same loops, so every thread on threadIdx." << axis[a]
                       << " would make that store, racing with the others (only a pure "
                          "definition computed there may be stored so). Compute "
                       << func
                       << " inside all of those gpu_threads loops, or at the block loop with "
                          "gpu_threads loops of its own (compute_at(consumer, xo).gpu_threads(x, "
                          "y)); or make "
                       << inner_name << " serial (or unroll or vectorize it).";
        }
    }
    /** The thread loop in s (a nest's outermost loop's body) that runs on
     * the given axis, if any. */
    static const For *thread_loop_on_axis(const Stmt &s, int axis) {
        struct Find : IRVisitor {
            int axis;
            const For *found = nullptr;
            using IRVisitor::visit;
            void visit(const For *op) override {
                if (found) return;
                if (op->for_type == ForType::GPUThread &&
                    gpu_loop_chain_depth(op->body, ForType::GPUThread) == axis) {
                    found = op;
                    return;
                }
                IRVisitor::visit(op);
            }
        } find;
        find.axis = axis;
        s.accept(&find);
        return find.found;
    }

    void visit(const Allocate *op) override {
        // lower_gpu_kernels made the block's per-thread storage Register.
        const bool shared = at_block_level() && op->memory_type != MemoryType::Register;
        int64_t size = 1;
        Expr dynamic_size;  // a shared allocation's size known only at launch
        for (const Expr &e : op->extents) {
            Expr c = simplify(e);
            if (const int64_t *v = as_const_int(c)) {
                size *= *v;
                continue;
            }
            // A size that varies (a ragged last tile) but has a constant
            // bound: room for the most it can hold.
            int64_t most = 0;
            if (constant_upper_bound_under_lets(c, kernel_lets, Scope<Interval>(), &most)) {
                size *= std::max<int64_t>(most, 0);
                continue;
            }
            Expr at_launch = shared ? value_at_launch(c) : Expr();
            user_assert(at_launch.defined())
                << "Func " << op->name << " is allocated inside the GPU kernel " << kernel.name
                << " with a size known only at run time (" << e << ")"
                << (shared ? ", which differs between blocks" : " per thread")
                << ". Compute it where its size is constant (e.g. inside the thread loops, "
                   "over a constant tile), at a block loop over a region every block has the "
                   "same size of, or at root; or give it a constant size with bound() or "
                   "bound_extent().";
            dynamic_size = dynamic_size.defined() ? dynamic_size * at_launch : at_launch;
        }
        if (dynamic_size.defined()) {
            user_assert(!kernel.dynamic_shared_bytes.defined())
                << "Kernel " << kernel.name << " stores both " << dynamic_shared_func << " and "
                << op->name
                << " in shared memory with sizes known only at launch; one such Func per kernel "
                   "is supported. Give the others a constant size (bound(), bound_extent()).";
            dynamic_shared_func = op->name;
            kernel.dynamic_shared_bytes =
                simplify(max(cast(Int(64), dynamic_size), 0) * (size * op->type.bytes()));
            dynamic_shared_allocation(op);
            return;
        }
        const int64_t bytes = size * op->type.bytes();
        int64_t offset = 0;
        if (shared) {
            // Computed at the block level: one copy per block, written by
            // the block's threads (the Func's loops are gpu_threads loops).
            // It lives in the kernel's dynamic shared memory, sized at
            // launch, which may pass 48 KiB.
            offset = next_shared_offset(kernel.shared_bytes);
            kernel.shared_bytes = offset + bytes;
            check_shared_memory(op->name);
        } else {
            user_assert(bytes <= 16 * 1024)
                << "Func " << op->name << " needs " << bytes << " bytes per GPU thread in kernel "
                << kernel.name << "; at most 16 KiB of per-thread storage is supported.";
        }
        Local n(*this, op->name);
        pad();
        out << "{\n";
        indent++;
        pad();
        if (shared) {
            shared_allocations.insert(op->name);
            out << type(op->type) << " *const " << n.name() << " = reinterpret_cast<"
                << type(op->type) << " *>(loom_shared_memory + " << offset << ");  // ["
                << std::max<int64_t>(size, 1) << "]\n";
        } else {
            out << type(op->type) << " " << n.name() << "[" << std::max<int64_t>(size, 1) << "];\n";
            local_arrays.insert(op->name);
        }
        open_block();
        print(op->body);
        close_block();
        local_arrays.erase(op->name);
        indent--;
        pad();
        out << "}\n";
    }
    void visit(const Free *) override {}
    void visit(const Block *op) override {
        print(op->first);
        print(op->rest);
    }
    void visit(const IfThenElse *op) override {
        pad();
        out << "if (" << print(op->condition) << ") {\n";
        indent++;
        open_block();
        print(op->then_case);
        close_block();
        indent--;
        if (op->else_case.defined()) {
            pad();
            out << "} else {\n";
            indent++;
            open_block();
            print(op->else_case);
            close_block();
            indent--;
        }
        pad();
        out << "}\n";
    }
    void visit(const Evaluate *op) override {
        if (const Call *c = op->value.as<Call>(); c && c->is_intrinsic(gpu_intrinsic::barrier)) {
            return barrier();
        }
        pad();
        out << "(void)" << print(op->value) << ";\n";
    }
    void visit(const Provide *) override { internal_error << "Provide in CUDA codegen"; }
    void visit(const Realize *) override { internal_error << "Realize in CUDA codegen"; }

  public:
    static int thread_extent(const For *op) {
        Expr e = simplify(op->extent);
        const int64_t *v = as_const_int(e);
        user_assert(v && *v > 0)
            << "Func " << func_of_loop(op->name) << "'s gpu_threads loop " << op->name
            << " has the extent " << op->extent
            << ", which is not a positive constant: a block has a fixed number of threads. "
               "Split the loop by a constant first (gpu_tile(x, xo, xi, 128)), or give the Func a "
               "constant extent there (bound(), bound_extent()).";
        return static_cast<int>(*v);
    }

    /** A C name for a kernel parameter, for the whole kernel. */
    std::string declare_local(const std::string &n) {
        auto it = c_names.find(n);
        if (it != c_names.end()) return it->second;
        std::string c = unique_c_name(n);
        c_names[n] = c;
        return c;
    }
    /** Binds a name defined inside the kernel (a loop, let, allocation or
     * lambda parameter) to a fresh C name while it lives. The IR may define
     * a name again inside its own scope (let x = x * 4 inside the loop x);
     * C++ would read the same spelling as the new variable itself. */
    /** The C name of `n` while this lives. `flat`: declared in the
     * enclosing C++ block rather than in a block of its own, so the C name
     * stays taken until that block closes (close_block), not only until
     * the IR's scope of `n` ends. */
    class Local {
      public:
        Local(KernelPrinter &p, const std::string &n, bool flat = false) : p(p), n(n), flat(flat) {
            auto it = p.c_names.find(n);
            shadows = it != p.c_names.end();
            if (shadows) previous = it->second;
            c = p.unique_c_name(n);
            p.c_names[n] = c;
        }
        ~Local() {
            // Free for later, disjoint scopes.
            if (flat) p.c_block_names.back().push_back(c);
            else p.used.erase(c);
            if (shadows) p.c_names[n] = previous;
            else p.c_names.erase(n);
        }
        Local(const Local &) = delete;
        Local &operator=(const Local &) = delete;
        const std::string &name() const { return c; }

      private:
        KernelPrinter &p;
        std::string n, c, previous;
        bool flat, shadows = false;
    };
    /** Per open C++ block, the C names declared flat in it. */
    std::vector<std::vector<std::string>> c_block_names{{}};
    void open_block() { c_block_names.emplace_back(); }
    void close_block() {
        for (const std::string &c : c_block_names.back()) used.erase(c);
        c_block_names.pop_back();
    }
    std::string unique_c_name(const std::string &n) {
        std::string c = c_identifier(n);
        if (c.empty() || std::isdigit(static_cast<unsigned char>(c[0]))) c = "_" + c;
        c += "_";  // never a CUDA keyword or builtin (min, int, threadIdx)
        std::string base = c;
        for (int k = 1; used.count(c); k++) c = base + std::to_string(k);
        used.insert(c);
        return c;
    }
    std::set<std::string> used;
};

/** Finds the kernels (outermost block loops), prints each, and leaves the
 * rest of the statement to the host. */
class KernelFinder : public IRVisitor {
  public:
    KernelFinder(const std::string &prefix, const Target &target)
        : prefix(prefix), target(target) {}
    /** What the start of each buffer a kernel may take is known to be
     * aligned to, in bytes, by name (absent: nothing known). */
    std::map<std::string, int> start_alignment;
    CudaModule module;
    std::ostringstream source;
    bool uses_vectors = false, uses_block_reduce = false;

    bool uses_tiles = false;

    using IRVisitor::visit;
    void visit(const For *op) override {
        if (op->for_type != ForType::GPUBlock) return IRVisitor::visit(op);
        emit_kernel(op);
    }

    /** A tile program's kernel: printed by the tile layer, launched as
     * any other. */
    void visit(const TileKernel *op) override {
        const tile::TileProgram &program = op->contents->program;
        const tile::TileKernelSource printed =
            tile::tile_program_to_cuda(program, op->contents->buffers);
        CudaKernel k;
        k.name = program.name;
        k.loop_name = program.name;
        internal_assert(op->grid.size() <= 3) << "tile kernel " << k.name << ": grid of 4 dims";
        for (int d = 0; d < 3; d++) {
            k.grid[d] = d < int(op->grid.size()) ? op->grid[d] : Expr(1);
        }
        k.block[0] = printed.threads;
        k.shared_bytes = printed.shared_bytes;
        const int64_t limit = max_shared_bytes(target);
        user_assert(k.shared_bytes <= limit)
            << "Kernel " << k.name << " (a tile program) needs " << k.shared_bytes
            << " bytes of shared memory per block for its staged operand tiles; "
            << (target.cuda_capability() ? target.cuda_arch() : std::string("the smallest GPU"))
            << " allows " << limit << " (" << limit / 1024
            << " KiB). Use smaller tiles, a smaller reduction tile or fewer pipeline stages.";
        for (const tile::TileKernelParam &p : printed.params) {
            CudaKernel::Param q;
            q.name = p.name;
            q.c_name = p.c_name;
            q.type = p.type;
            q.is_buffer = p.is_buffer;
            q.written = p.written;
            q.read = p.is_buffer && !p.written;
            if (!p.is_buffer) {
                for (size_t i = 0; i < op->scalar_names.size(); i++) {
                    if (op->scalar_names[i] == p.name) q.value = op->scalar_values[i];
                }
                internal_assert(q.value.defined())
                    << "tile kernel " << k.name << ": no value for its scalar " << p.name;
                if (q.value.type() != p.type) q.value = cast(p.type, q.value);
            }
            k.params.push_back(q);
        }
        module.kernels.push_back(k);
        source << printed.source;
        uses_tiles = true;
    }

  private:
    std::string prefix;
    Target target;
    std::set<std::string> kernel_names;

    /** Threads per block in each dimension (gpu_block_shape); a thread
     * loop without a constant extent is refused, by name. */
    static void block_shape(const Stmt &s, int block[3]) {
        if (const For *bad = gpu_block_shape(s, block)) KernelPrinter::thread_extent(bad);
    }

    void emit_kernel(const For *op) {
        CudaKernel k;
        k.name = next_kernel_name(prefix, op->name, &kernel_names);
        k.loop_name = op->name;

        Stmt body(op);
        const bool has_threads = gpu_loop_chain_depth(body, ForType::GPUThread) > 0;
        if (has_threads) block_shape(body, k.block);
        int threads = k.block[0] * k.block[1] * k.block[2];
        user_assert(threads <= 1024)
            << "Kernel " << k.name << " has " << k.block[0] << " x " << k.block[1] << " x "
            << k.block[2] << " = " << threads
            << " threads per block; CUDA allows at most 1024. A block is as large as its "
               "largest stage in each dimension, and its stages' thread loops are, x first: "
            << describe_thread_loops(body)
            << ". Use smaller gpu_threads tiles, or name each stage's thread loops in the same "
               "order (gpu_threads names the loop on threadIdx.x first).";

        // Grid: the extents of the block loops, innermost first (x).
        for (int d = 0; d < 3; d++) k.grid[d] = 1;
        const For *loop = op;
        int dims = gpu_loop_chain_depth(body, ForType::GPUBlock);
        for (int d = dims - 1; d >= 0 && loop; d--) {
            k.grid[d] = loop->extent;
            // The next block loop down the chain.
            struct Next : IRVisitor {
                const For *found = nullptr;
                using IRVisitor::visit;
                void visit(const For *f) override {
                    if (found) return;
                    if (f->for_type == ForType::GPUBlock) found = f;
                    else IRVisitor::visit(f);
                }
            } next;
            loop->body.accept(&next);
            loop = next.found;
        }

        // Parameters: buffers first (pointers), then scalars, by name.
        KernelFreeNames free;
        body.accept(&free);
        std::map<std::string, std::string> c_names;
        KernelPrinter printer(k, c_names, target);
        printer.has_threads = has_threads;
        printer.buffer_start_alignment = &start_alignment;
        for (const auto &b : free.buffers) {
            CudaKernel::Param p;
            p.name = b.first;
            p.type = b.second.type;
            p.is_buffer = true;
            p.read = b.second.read;
            p.written = b.second.written;
            p.c_name = printer.declare_local(p.name);
            k.params.push_back(p);
            free.scalars.erase(b.first);
        }
        for (const auto &s : free.scalars) {
            CudaKernel::Param p;
            p.name = s.first;
            p.type = s.second;
            p.c_name = printer.declare_local(p.name);
            k.params.push_back(p);
        }

        printer.print(body);
        // The reductions' room follows the Funcs' storage (k is the
        // printer's kernel: its offset first, then the size that ends it).
        const int64_t reduce_scratch_offset = printer.reduce_scratch_offset();
        k.shared_bytes = printer.constant_shared_bytes();
        uses_vectors |= printer.uses_vectors;
        uses_block_reduce |= printer.uses_block_reduce;
        source << "\n// Kernel " << k.name << ": grid (" << k.grid[0] << ", " << k.grid[1] << ", "
               << k.grid[2] << "), block (" << k.block[0] << ", " << k.block[1] << ", "
               << k.block[2] << ")";
        if (k.shared_bytes) source << ", " << k.shared_bytes << " bytes of shared memory";
        if (k.dynamic_shared_bytes.defined()) {
            source << (k.shared_bytes ? " and " : ", ") << k.dynamic_shared_bytes
                   << " more, at launch";
        }
        source << "\n";
        source << "extern \"C\" __global__ void __launch_bounds__(" << threads;
        // (set_gpu_launch_bounds checked that they fit an SM.)
        if (op->attributes.gpu_blocks_per_sm > 0)
            source << ", " << op->attributes.gpu_blocks_per_sm;
        source << ") " << k.name << "(";
        for (size_t i = 0; i < k.params.size(); i++) {
            const CudaKernel::Param &p = k.params[i];
            source << (i ? ",\n    " : "");
            if (p.is_buffer) {
                source << (p.written ? "" : "const ") << c_type(p.type, k.name) << " *__restrict__ "
                       << p.c_name;
            } else {
                source << "const " << c_type(p.type, k.name) << " " << p.c_name;
            }
        }
        source << ") {\n";
        if (k.shared_bytes > 0 || k.dynamic_shared_bytes.defined()) {
            source << "    extern __shared__ __align__(16) unsigned char loom_shared_memory[];\n";
        }
        if (printer.reduce_scratch_bytes()) {
            source << "    constexpr int loom_reduce_scratch_offset = " << reduce_scratch_offset
                   << ";  // " << printer.reduce_scratch_bytes() << " bytes for reductions\n";
        }
        if (printer.block_scratch_half_bytes) {
            source << "    constexpr int loom_block_reduce_offset = "
                   << printer.block_scratch_offset()
                   << ", loom_block_reduce_half_bytes = " << printer.block_scratch_half_bytes
                   << ";\n";
        }
        if (printer.uses_reduce_parity) {
            // Which half of their room the block's next reduction uses.
            source << "    int loom_reduce_parity = 0;\n";
        }
        if (k.dynamic_shared_bytes.defined()) {
            // After the constant-size storage, 16-byte aligned.
            k.shared_bytes = next_shared_offset(k.shared_bytes);
            source << "    constexpr int loom_dynamic_shared_offset = " << k.shared_bytes << ";\n";
        }
        source << printer.out.str() << "}\n";
        module.kernels.push_back(k);
    }
};

}  // namespace

CudaModule codegen_cuda(const LoweredFunc &f, const Target &target) {
    check_gpu_loops(f.body, target);
    KernelFinder finder(f.name, target);
    for (const LoweredArgument &a : f.args) {
        if (a.is_buffer && a.host_alignment > 1) finder.start_alignment[a.name] = a.host_alignment;
    }
    // Storage allocated outside the kernels that a kernel uses is GPU memory
    // from cuMemAlloc (OffloadGPULoops.h). It starts on 256 bytes (the
    // tests' stand-in driver, on 16): all that a word of 16 bytes needs.
    struct HostAllocations : IRVisitor {
        std::map<std::string, int> *alignment;
        using IRVisitor::visit;
        void visit(const For *op) override {
            if (op->for_type != ForType::GPUBlock) IRVisitor::visit(op);
        }
        void visit(const Allocate *op) override {
            (*alignment)[op->name] = 16;
            IRVisitor::visit(op);
        }
    } allocations;
    allocations.alignment = &finder.start_alignment;
    f.body.accept(&allocations);
    f.body.accept(&finder);
    CudaModule m = finder.module;
    std::ostringstream s;
    std::string kernels = finder.source.str();
    // (Every name from the algorithm ends with "_" or a digit, so these
    // type names appear only where a 16-bit float is used.)
    bool half = finder.uses_tiles || kernels.find("__half") != std::string::npos ||
                kernels.find("__nv_bfloat16") != std::string::npos;
    if (target.has_feature(Target::FastMath)) {
        // Approximate math, as the CPU's fast_math relaxes float semantics
        // too: exp, log, sin and cos become the hardware's approximations
        // (exp is ex2.approx of a product, 2 instructions where the
        // accurate one takes 8), division and square roots are no longer
        // correctly rounded, and denormals flush to zero. nvcc's and
        // NVRTC's own switch for it, so that the source compiles the same
        // anywhere.
        m.nvrtc_options.push_back("--use_fast_math");
        s << "// Target feature fast_math: compile with --use_fast_math (approximate exp, log,\n"
             "// sin, cos, division and square root; denormals flushed to zero).\n";
    }
    s << (half ? kHalfHeaders : "") << cuda_source("prelude")
      << (finder.uses_vectors ? cuda_source("vectors") : "")
      << (finder.uses_block_reduce ? cuda_source("block_reduce") : "");
    if (finder.uses_tiles) s << tile::tile_kernel_sources();
    s << kernels;
    m.source = s.str();
    return m;
}

}  // namespace internal
}  // namespace loom
