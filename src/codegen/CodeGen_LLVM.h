// LLVM IR generation for lowered loop IR, and the LLVM plumbing around it
// (target machines, the optimization pipeline, assembly output).
//
// This header is visible to tests and other passes, which must not see LLVM's
// headers (LLVM lives, hidden, inside libloom only), so LLVM types appear
// here only as forward declarations.
//
// Semantics the generated code implements, beyond what IR.h states:
//  - Integer Div/Mod round toward negative infinity; a zero divisor gives 0,
//    and INT_MIN / -1 wraps to INT_MIN (with remainder 0), never trapping.
//  - Float min/max are C's fmin/fmax (llvm.minnum/maxnum): a NaN operand is
//    ignored, so min(NaN, x) == x; only min(NaN, NaN) is NaN. This matches
//    the reference interpreter. Comparisons are ordered (false on NaN) except
//    !=, which is true on NaN, as in C.
//  - Float-to-int casts truncate toward zero; out-of-range values give an
//    unspecified (but not poisonous) result. Float casts to bool test != 0.
//  - Conversions to float16/bfloat16 from anything but float32 go through
//    float32 (double rounding from float64 and wide ints, like
//    loom::float16_t(double)). bfloat16 arithmetic is done in float32 and
//    rounded back to nearest even after every operation; bfloat16 values are
//    i16 in LLVM. float16 arithmetic uses LLVM's half (also rounded after
//    every operation).
//  - exp, log and tanh of float32 are inline polynomials that vectorize
//    (relative error <= 1.5e-7 for normal results); sin, cos, pow, erf and
//    every float64 function call libm per lane; sqrt, floor, ceil, round
//    (ties to even) use LLVM intrinsics. rsqrt is 1 / sqrt(x), exactly rounded twice, not an
//    estimate.
//  - Loads and stores of different buffer or allocation names are assumed not
//    to alias (scoped noalias metadata, like C's restrict): a pipeline must
//    not be called with one buffer as both an input and an output.
//  - Shifts are total: a negative amount shifts the other way; an amount of
//    the bit width or more gives 0 (or the sign bits, for >> of a signed
//    value). A constant in-range amount is a single shift instruction.
//  - Float Mod rounds each step (a / b, b * q, a - b * q) to the type.
//  - Allocate: stack (entry-block alloca) when its size is a constant of at
//    most 16 KiB or its memory type is Stack, otherwise loom_malloc, freed at
//    the end of the Allocate's body and on every error return inside it. Heap
//    sizes are checked for int64 overflow. Free nodes are no-ops.
//  - A Parallel For becomes a closure function `int32_t(int32_t i, uint8_t *)`
//    run by loom_do_par_for; its bounds are converted to int32.
//  - An Extern call is a plain C call, which LLVM keeps whatever it does;
//    the host intrinsics below check the results of runtime calls. GPU loops
//    and TileKernel nodes must have been offloaded (OffloadGPULoops.h): host
//    code calls the runtime for its GPU work like any other C function.
//  - A HostGlobal is the Handle variable of its name (its address).
//  - Besides LoweredFunc.h's names of a buffer argument `b`, `b.flags`
//    (UInt(64)) is its descriptor's flags (loom_buffer_flags_t) on entry.
//  - A buffer argument that the code stores to and that has GPU memory when
//    the function returns is marked host-dirty (loom_runtime.h), so that
//    what the CPU wrote is copied to the GPU before a kernel reads it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/Target.h"
#include "lower/LoweredFunc.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
}  // namespace llvm

namespace loom {
namespace internal {

/** Intrinsics (Call::Intrinsic) with which passes write calls of the
 * runtime into host code:
 *  - return_on_error(code): evaluates code, the Int(32) result of an
 *    extern call; if it is not 0, the function returns it at once, after
 *    freeing what is live as a failed check does (the callee reported the
 *    message). Its own value is 0.
 *  - on_error(call), as the value of a LetStmt (which binds nothing):
 *    every error return from within the LetStmt's body evaluates `call`
 *    first (innermost first, after freeing heap allocations); the body ends
 *    with its own cleanup for the normal path. */
struct HostIntrinsic {
    static constexpr const char *return_on_error = "return_on_error";
    static constexpr const char *on_error = "on_error";
};

/** A global of the host module that host code names: constant bytes (a GPU
 * module's code), or, for `is_state`, a pointer-sized slot, initially null,
 * where the runtime keeps its state for the module. A state global is
 * visible to the JIT (which finds it by name), private to portable code. */
struct HostGlobal {
    std::string name;
    std::string bytes;
    bool null_terminated = false;  // a C string: ends with a 0 byte
    int alignment = 0;             // 0: the natural one
    bool is_state = false;
};

/** Initializes LLVM's X86 target (once per process; thread-safe). */
void initialize_llvm();

/** The LLVM CPU name and feature string for a target. When t has exactly
 * the host's ISA features they describe the host CPU itself (its name and
 * every feature it has), which is best for the JIT. `portable` code (AOT
 * objects, which may run on any machine with t's features) gets a generic
 * CPU (x86-64-v2/v3/v4) and only t's own features. */
std::string llvm_cpu_name(const Target &t, bool portable = false);
std::string llvm_feature_string(const Target &t, bool portable = false);
/** The CPU whose scheduling model portable code for t is tuned for: the host
 * CPU when t is the host's ISA (tuning does not change which instructions
 * may be used), otherwise llvm_cpu_name(t, true). */
std::string llvm_tune_cpu_name(const Target &t);

/** A TargetMachine for t (position-independent code, small code model, -O3). */
std::unique_ptr<llvm::TargetMachine> make_target_machine(const Target &t, bool portable = false);

/** Whether this machine can run code compiled for t; if not, *why says what
 * is missing. */
bool host_supports_target(const Target &t, std::string *why);

/** Generates an LLVM module that defines `int32_t f.name(void **args)` (and the
 * closures of its parallel loops), for target t, in context ctx, after
 * offloading its GPU loops (offload_gpu_loops). `portable` as for
 * llvm_cpu_name. */
std::unique_ptr<llvm::Module> codegen_llvm(const LoweredFunc &f, const Target &t,
                                           llvm::LLVMContext &ctx, bool portable = false);

/** Runs LLVM's -O3 module pipeline (with loop and SLP vectorization) on m. */
void optimize_module(llvm::Module &m, llvm::TargetMachine &tm, const Target &t);

/** The module as LLVM IR text / target assembly text (m is not changed). */
std::string module_to_llvm_ir(const llvm::Module &m);
std::string module_to_assembly(const llvm::Module &m, llvm::TargetMachine &tm);

/** The module as an ELF relocatable object file, for AOT compilation. */
std::string module_to_object(const llvm::Module &m, llvm::TargetMachine &tm);

}  // namespace internal
}  // namespace loom
