// Pipeline: the Funcs to compute, compiled with a Schedule for a Target.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/Buffer.h"
#include "loom/Func.h"
#include "loom/Schedule.h"
#include "loom/Target.h"

namespace loom {

/** One argument of a compiled pipeline, in call order: the inputs (buffers
 * and scalars, in the order they were created), then the outputs. */
struct Argument {
    enum Kind { InputBuffer, InputScalar, OutputBuffer };
    std::string name;
    Kind kind;
    Type type;
    int dimensions = 0;
};

/** A scalar argument value for CompiledPipeline::call. */
struct ScalarArg {
    Type type;
    uint64_t bits = 0;
    template <typename T> ScalarArg(T v) : type(type_of<T>()) {
        static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, float16_t> ||
                          std::is_same_v<T, bfloat16_t>,
                      "ScalarArg holds a number");
        std::memcpy(&bits, &v, sizeof(T));
    }
};

/** A buffer or a scalar, for CompiledPipeline::call. */
struct ArgValue {
    ArgValue(const RawBuffer &b) : buffer(b), is_buffer(true) {}
    template <typename T> ArgValue(const Buffer<T> &b) : buffer(b), is_buffer(true) {}
    template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>> ArgValue(T v)
        : scalar(v), is_buffer(false) {}
    RawBuffer buffer;
    ScalarArg scalar{0};
    bool is_buffer;
};

namespace internal {
struct CompiledPipelineContents;
}

/** Machine code for a pipeline, schedule and target. */
class CompiledPipeline {
  public:
    /** The arguments call() takes, in order. */
    const std::vector<Argument> &arguments() const;
    /** Runs the pipeline with every argument given explicitly, in the order
     * of arguments(). Argument mistakes throw RuntimeError before any
     * memory is touched. */
    void call(const std::vector<ArgValue> &args) const;
    template <typename... Args> void operator()(Args &&...args) const {
        call(std::vector<ArgValue>{ArgValue(args)...});
    }
    /** Runs with the inputs bound to the BufferParams and Params
     * (BufferParam::set, Param::set), writing into `outputs`. */
    void realize(const std::vector<RawBuffer> &outputs) const;

    /** The lowered loop IR, the optimized LLVM IR and the assembly. */
    const std::string &lowered_stmt() const;
    const std::string &llvm_ir() const;
    const std::string &assembly() const;
    /** Seconds spent lowering and in LLVM, for this compilation. */
    double compile_seconds() const;
    /** What rolling_update and split_k did: the chains found, each derived
     * repair and how it was accepted (proved symbolically or checked
     * numerically). Empty without those directives. */
    std::vector<std::string> compile_log() const;
    /** Seconds of compile_seconds() spent deriving repairs and rewriting
     * reduction chains. */
    double fusion_seconds() const;
    /** Whether it was compiled for a GPU (a target with cuda, and GPU
     * loops): its buffers may be device memory. */
    bool uses_gpu() const;

    std::shared_ptr<internal::CompiledPipelineContents> contents;
};

class Pipeline {
  public:
    Pipeline(const Func &output);
    Pipeline(const std::vector<Func> &outputs);

    const std::vector<Func> &outputs() const { return outputs_; }

    /** Compiles (or fetches from the cache) machine code for this pipeline
     * with this schedule for this target. */
    CompiledPipeline compile(const Schedule &schedule = Schedule(),
                             const Target &target = Target::host()) const;

    /** Computes the (single) output over [0, sizes) with inputs bound to the
     * Params, and returns it. */
    RawBuffer realize(const std::vector<int> &sizes, const Schedule &schedule = Schedule(),
                      const Target &target = Target::host()) const;
    /** realize({h, w}): a braced list always means sizes. */
    RawBuffer realize(std::initializer_list<int> sizes, const Schedule &schedule = Schedule(),
                      const Target &target = Target::host()) const {
        return realize(std::vector<int>(sizes), schedule, target);
    }
    /** Computes every output into the given buffers. */
    void realize(const std::vector<RawBuffer> &outputs, const Schedule &schedule = Schedule(),
                 const Target &target = Target::host()) const;

    /** The lowered loop IR as text. */
    std::string compile_to_lowered_stmt(const Schedule &schedule = Schedule(),
                                        const Target &target = Target::host()) const;
    void compile_to_lowered_stmt(const std::string &filename, const Schedule &schedule,
                                 const Target &target = Target::host()) const;
    /** The CUDA C++ of the pipeline's GPU kernels (its loops scheduled with
     * gpu_blocks and gpu_threads), for a target with the cuda feature. */
    std::string compile_to_cuda(const Schedule &schedule, const Target &target) const;
    /** Writes `basename`.cu, and that source compiled by NVRTC for the
     * target's GPU capability (e.g. host-cuda-sm_90a): `basename`.ptx and
     * `basename`.cubin. */
    void compile_to_cuda(const std::string &basename, const Schedule &schedule,
                         const Target &target) const;
    /** The loop nest only: loops, allocations and stores, without the bounds
     * arithmetic. */
    std::string print_loop_nest(const Schedule &schedule = Schedule()) const;

    // ---- Ahead-of-time compilation. `fn_name` is the C symbol of the
    // generated function (see the C ABI in loom/runtime/loom_runtime.h); the
    // function takes the arguments of CompiledPipeline::arguments() in order,
    // buffers as loom_buffer_t* and scalars by value, and returns 0 or a
    // negative loom error code.

    /** An object file (.o) with the pipeline function. */
    void compile_to_object(const std::string &filename, const std::string &fn_name,
                           const Schedule &schedule, const Target &target = Target::host()) const;
    /** A C header (.h) declaring the pipeline function. */
    void compile_to_header(const std::string &filename, const std::string &fn_name,
                           const Schedule &schedule, const Target &target = Target::host()) const;
    /** A static library `<basename>.a` holding the pipeline and the small
     * runtime it needs (no LLVM), and its header `<basename>.h`. */
    void compile_to_static_library(const std::string &basename, const std::string &fn_name,
                                   const Schedule &schedule,
                                   const Target &target = Target::host()) const;
    void compile_to_assembly(const std::string &filename, const std::string &fn_name,
                             const Schedule &schedule, const Target &target = Target::host()) const;
    void compile_to_llvm_ir(const std::string &filename, const std::string &fn_name,
                            const Schedule &schedule, const Target &target = Target::host()) const;

  private:
    std::vector<Func> outputs_;
};

}  // namespace loom
