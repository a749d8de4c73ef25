// Emits CUDA C++ rather than PTX or NVVM IR: the source is readable (names
// come from the algorithm), NVRTC compiles it without a GPU, and the
// instructions a later tile backend needs (mma, wgmma, cp.async) fit in as
// inline PTX. Expressions and plain statements print through CodeGen_GPU_C
// (the dialect's printer, shared with the tile kernels); this file prints
// what is a kernel's own: GPU loops, memories, barriers, checks and the
// reductions across threads.
#include "codegen/CodeGen_CUDA.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>

#include "arith/Bounds.h"
#include "arith/InvariantAlignment.h"
#include "arith/Simplify.h"
#include "codegen/CodeGen_GPU_C.h"
#include "codegen/CudaSources.h"
#include "gpu/CrossThreadReductions.h"
#include "gpu/GPULoops.h"
#include "gpu/GpuBarriers.h"
#include "gpu/KernelFreeNames.h"
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

/** Prints one kernel: CodeGen_GPU_C's expressions and plain statements,
 * and the kernel's own: its GPU loops, memories, barriers and checks. */
class KernelPrinter : public CodeGen_GPU_C {
  public:
    KernelPrinter(CudaKernel &k, GpuDialect dialect, const Target &target)
        : CodeGen_GPU_C(dialect, k.name), kernel(k), target(target) {}

    /** Whether the kernel has thread loops: then what is outside them runs
     * once per thread of a block, and storage there is shared by the block
     * (insert_gpu_barriers placed the barriers that order its accesses). */
    bool has_threads = false;
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

  private:
    CudaKernel &kernel;
    const Target &target;
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
        out << dialect.barrier << ";\n";
    }

    // ---- expressions
    using CodeGen_GPU_C::visit;
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
    void visit(const Call *op) override {
        // (A vector one is printed lane by lane.)
        if (op->type.is_vector()) return CodeGen_GPU_C::visit(op);
        if (op->is_intrinsic(gpu_intrinsic::first_thread)) {
            expr_out << "(threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)";
            return;
        }
        const int64_t threads = kernel.block[0] * kernel.block[1] * kernel.block[2];
        const int64_t warp = dialect.warp_size;
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
            const int64_t row = kernel.block[0], per_group = row / warp;
            const std::string what = "a reduction across groups of its threads";
            if (*reduced == 1 && row <= warp && warp % row == 0) {
                alternating_halves_scratch(0, what);
            } else if (*reduced == 1 && row % warp == 0 && (per_group & (per_group - 1)) == 0) {
                alternating_halves_scratch((threads / warp) * op->type.bytes(), what);
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
            const int64_t warps = (threads + warp - 1) / warp;
            const bool whole_warps = threads % warp == 0 && (warps & (warps - 1)) == 0;
            const int64_t half_bytes = whole_warps ? (warps == 1 ? 0 : warps * op->type.bytes())
                                                   : (warps + 1) * op->type.bytes();
            expr_out << "loom_block_reduce<" << kernel.block[0] << ", " << kernel.block[1] << ", "
                     << kernel.block[2] << ">(" << print(op->args[0]) << ", "
                     << reduce_lambda(reduce, op->type) << ", ";
            alternating_halves_scratch(half_bytes, "a reduction across its threads");
            expr_out << ")";
            return;
        }
        CodeGen_GPU_C::visit(op);
    }

    // ---- statements
    void visit(const LetStmt *op) override {
        kernel_lets.emplace_back(op->name, op->value);
        CodeGen_GPU_C::visit(op);
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
        out << "if (!" << print(op->condition) << ") " << dialect.trap << ";"
            << (text.empty() ? "" : "  // " + text) << "\n";
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
    void visit(const Evaluate *op) override {
        if (const Call *c = op->value.as<Call>(); c && c->is_intrinsic(gpu_intrinsic::barrier)) {
            return barrier();
        }
        CodeGen_GPU_C::visit(op);
    }

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
    /** The dialect the kernels are printed in. */
    GpuDialect dialect = GpuDialect::CUDA;

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
        KernelPrinter printer(k, dialect, target);
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
        // (set_gpu_launch_bounds checked that the blocks per SM fit one.)
        source << "extern \"C\" __global__ void "
               << gpu_dialect_info(dialect).launch_bounds(threads, op->attributes.gpu_blocks_per_sm)
               << " " << k.name << "(";
        for (size_t i = 0; i < k.params.size(); i++) {
            const CudaKernel::Param &p = k.params[i];
            source << (i ? ",\n    " : "");
            if (p.is_buffer) {
                source << (p.written ? "" : "const ") << printer.type(p.type) << " *__restrict__ "
                       << p.c_name;
            } else {
                source << "const " << printer.type(p.type) << " " << p.c_name;
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
    const GpuDialectInfo &dialect = gpu_dialect_info(finder.dialect);
    bool half = finder.uses_tiles || kernels.find(dialect.float16) != std::string::npos ||
                kernels.find(dialect.bfloat16) != std::string::npos;
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
    s << (half ? dialect.float16_headers : "") << cuda_source("prelude")
      << (finder.uses_vectors ? cuda_source("vectors") : "")
      << (finder.uses_block_reduce ? cuda_source("block_reduce") : "");
    if (finder.uses_tiles) s << tile::tile_kernel_sources();
    s << kernels;
    m.source = s.str();
    return m;
}

}  // namespace internal
}  // namespace loom
