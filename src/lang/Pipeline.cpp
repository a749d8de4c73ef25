// Pipeline: compiling, caching and calling JIT-compiled pipelines.
#include "loom/Pipeline.h"

#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>

#include "codegen/CodeGen_CUDA.h"
#include "codegen/JITModule.h"
#include "codegen/NVRTC.h"
#include "gpu/OffloadGPULoops.h"
#include "ir/IRPrinter.h"
#include "lang/ScheduleContents.h"
#include "loom/Param.h"
#include "loom/runtime/loom_runtime.h"
#include "lower/Lower.h"

namespace loom {

using namespace internal;

namespace internal {

struct CompiledPipelineContents {
    std::vector<Argument> arguments;
    std::vector<ParameterPtr> params;
    std::shared_ptr<JITModule> module;
    std::string lowered_stmt;
    double compile_seconds = 0;
    std::vector<std::string> compile_log;
    double fusion_seconds = 0;
    /** Compiled for a GPU: the buffers passed get GPU memory shared by
     * their views (share_gpu_memory_of_views). */
    bool gpu = false;
};

RawBuffer realize_with_default_schedule(const Func &f, const std::vector<int> &sizes) {
    return Pipeline(f).realize(sizes);
}

namespace {

std::vector<FunctionPtr> functions_of(const std::vector<Func> &funcs) {
    std::vector<FunctionPtr> r;
    for (const Func &f : funcs) {
        user_assert(f.defined()) << "The output Func " << f.name()
                                 << " has no definition. Define it before compiling the pipeline.";
        r.push_back(f.function());
    }
    return r;
}

std::mutex cache_mutex;
std::map<std::string, std::shared_ptr<CompiledPipelineContents>> &cache() {
    static std::map<std::string, std::shared_ptr<CompiledPipelineContents>> c;
    return c;
}

std::string argument_signature(const std::vector<Argument> &args) {
    std::ostringstream s;
    for (const Argument &a : args) {
        s << a.name << ":" << a.kind << ":" << type_to_string(a.type) << ":" << a.dimensions << ";";
    }
    return s.str();
}

// Converts a scalar argument to the parameter's type, refusing conversions
// that would lose the value.
uint64_t convert_scalar(const ScalarArg &v, Type to, const std::string &name) {
    double d;
    Type from = v.type;
    if (from == to) return v.bits;
    if (from.is_float()) {
        if (from.bits == 64) std::memcpy(&d, &v.bits, 8);
        else {
            float f;
            std::memcpy(&f, &v.bits, 4);
            d = f;
        }
    } else if (from.is_int()) {
        int64_t i = 0;
        std::memcpy(&i, &v.bits, from.bytes());
        if (from.bits < 64) i = (i << (64 - from.bits)) >> (64 - from.bits);
        d = static_cast<double>(i);
    } else {
        uint64_t u = 0;
        std::memcpy(&u, &v.bits, from.bytes());
        d = static_cast<double>(u);
    }
    if (!to.can_represent(d)) {
        runtime_error_report << "The scalar argument " << name << " has type " << type_to_string(to)
                             << ", which cannot hold the value " << d << " that was passed.";
    }
    uint64_t bits = 0;
    if (to.is_float() && to.bits == 64) std::memcpy(&bits, &d, 8);
    else if (to.is_float() && to.bits == 32) {
        float f = static_cast<float>(d);
        std::memcpy(&bits, &f, 4);
    } else if (to.is_float() && to.is_bfloat()) {
        bits = bfloat16_t(static_cast<float>(d)).bits;
    } else if (to.is_float()) {
        bits = float16_t(static_cast<float>(d)).bits;
    } else if (to.is_int()) {
        int64_t i = static_cast<int64_t>(d);
        std::memcpy(&bits, &i, 8);
    } else {
        bits = static_cast<uint64_t>(d);
    }
    return bits;
}

void check_buffer(const RawBuffer &b, const Argument &a) {
    const char *role = a.kind == Argument::OutputBuffer ? "Output" : "Input";
    if (!b.defined()) {
        runtime_error_report << role << " buffer " << a.name
                             << " was not given. Pass a Buffer for it (or bind it with set()).";
    }
    if (b.type() != a.type) {
        runtime_error_report << role << " buffer " << a.name << " has element type "
                             << type_to_string(b.type()) << ", but the pipeline expects "
                             << type_to_string(a.type) << ".";
    }
    if (b.dimensions() != a.dimensions) {
        runtime_error_report << role << " buffer " << a.name << " has " << b.dimensions()
                             << " dimensions, but the pipeline expects " << a.dimensions << ".";
    }
    // The descriptor as it is: raw_buffer() would settle the buffer's views,
    // which the call does once the checks pass.
    const loom_buffer_t *raw = &b.contents->raw;
    if (raw->host == nullptr && raw->device == 0 && b.number_of_elements() > 0) {
        runtime_error_report << role << " buffer " << a.name << " has a null data pointer.";
    }
}

/** The CUDA C++ of the GPU loops of the pipeline computing `outputs`, with
 * what NVRTC must be told to compile it (compile_to_cuda). */
CudaModule cuda_module_of(const std::vector<Func> &outputs, const Schedule &schedule,
                          const Target &target) {
    user_assert(target.has_feature(Target::CUDA))
        << "compile_to_cuda needs a target with a GPU, e.g. Target(\"host-cuda-sm_90\"); "
        << target.to_string() << " has none.";
    LoweringResult lowered = lower(functions_of(outputs), *schedule.contents(), target,
                                   "loom_" + outputs.front().name());
    return codegen_cuda(lowered.func, target);
}

}  // namespace
}  // namespace internal

const std::vector<Argument> &CompiledPipeline::arguments() const { return contents->arguments; }
const std::string &CompiledPipeline::lowered_stmt() const { return contents->lowered_stmt; }
const std::string &CompiledPipeline::llvm_ir() const { return contents->module->llvm_ir(); }
const std::string &CompiledPipeline::assembly() const { return contents->module->assembly(); }
double CompiledPipeline::compile_seconds() const { return contents->compile_seconds; }
std::vector<std::string> CompiledPipeline::compile_log() const { return contents->compile_log; }
double CompiledPipeline::fusion_seconds() const { return contents->fusion_seconds; }
bool CompiledPipeline::uses_gpu() const { return contents->gpu; }

void CompiledPipeline::call(const std::vector<ArgValue> &args) const {
    const std::vector<Argument> &formal = contents->arguments;
    if (args.size() != formal.size()) {
        std::ostringstream names;
        for (const Argument &a : formal) names << (&a == &formal[0] ? "" : ", ") << a.name;
        runtime_error_report << "The pipeline takes " << formal.size() << " arguments ("
                             << names.str() << "), but " << args.size() << " were passed.";
    }
    std::vector<void *> ptrs(args.size());
    std::vector<uint64_t> scalars(args.size());
    for (size_t i = 0; i < args.size(); i++) {
        const Argument &a = formal[i];
        if (a.kind == Argument::InputScalar) {
            if (args[i].is_buffer) {
                runtime_error_report << "Argument " << i << " (" << a.name
                                     << ") is a scalar, but a buffer was passed.";
            }
            scalars[i] = convert_scalar(args[i].scalar, a.type, a.name);
            ptrs[i] = &scalars[i];
        } else {
            if (!args[i].is_buffer) {
                runtime_error_report << "Argument " << i << " (" << a.name
                                     << ") is a buffer, but a scalar was passed.";
            }
            check_buffer(args[i].buffer, a);
            if (contents->gpu) share_gpu_memory_of_views(args[i].buffer);
            ptrs[i] = args[i].buffer.raw_buffer();
        }
    }
    int32_t result = contents->module->entry()(ptrs.data());
    if (result != 0) throw RuntimeError(loom_last_error_message());
}

void CompiledPipeline::realize(const std::vector<RawBuffer> &outputs) const {
    std::vector<ArgValue> args;
    size_t next_output = 0;
    for (size_t i = 0; i < contents->arguments.size(); i++) {
        const Argument &a = contents->arguments[i];
        const ParameterPtr *p = i < contents->params.size() ? &contents->params[i] : nullptr;
        if (a.kind == Argument::OutputBuffer) {
            if (next_output >= outputs.size()) {
                runtime_error_report
                    << "Output buffer " << a.name << " was not given: the pipeline has "
                    << "more outputs than the " << outputs.size() << " buffers passed.";
            }
            args.emplace_back(outputs[next_output++]);
        } else if (a.kind == Argument::InputBuffer) {
            if (!(*p)->buffer.defined()) {
                runtime_error_report << "Input buffer " << a.name
                                     << " has no value: bind one with set() or pass it to call().";
            }
            args.emplace_back((*p)->buffer);
        } else {
            if (!(*p)->scalar_set) {
                runtime_error_report
                    << "Param " << a.name
                    << " has no value: give it one with set() or pass it to call().";
            }
            ArgValue v(0);
            v.scalar.type = a.type;
            v.scalar.bits = (*p)->scalar_bits;
            args.push_back(v);
        }
    }
    if (next_output != outputs.size()) {
        runtime_error_report << outputs.size()
                             << " output buffers were passed, but the pipeline has " << next_output
                             << " outputs.";
    }
    call(args);
}

Pipeline::Pipeline(const Func &output) : outputs_{output} {}
Pipeline::Pipeline(const std::vector<Func> &outputs) : outputs_(outputs) {}

CompiledPipeline Pipeline::compile(const Schedule &schedule, const Target &target) const {
    auto start = std::chrono::steady_clock::now();
    std::string name = "loom_" + outputs_.front().name();
    for (char &c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    LoweringResult lowered = lower(functions_of(outputs_), *schedule.contents(), target, name);
    std::ostringstream text;
    text << lowered.func.body;
    std::string key =
        target.to_string() + "\n" + argument_signature(lowered.arguments) + "\n" + text.str();
    {
        std::lock_guard<std::mutex> lock(cache_mutex);
        auto it = cache().find(key);
        if (it != cache().end()) {
            CompiledPipeline c;
            // The cached code is shared; the parameters are this pipeline's own.
            c.contents = std::make_shared<CompiledPipelineContents>(*it->second);
            c.contents->params = lowered.params;
            return c;
        }
    }
    auto contents = std::make_shared<CompiledPipelineContents>();
    contents->arguments = lowered.arguments;
    contents->params = lowered.params;
    std::string notes;
    for (const std::string &note : lowered.notes) notes += "// " + note + "\n";
    contents->lowered_stmt = notes + text.str();
    contents->compile_log = lowered.notes;
    contents->fusion_seconds = lowered.fusion_seconds;
    contents->module = JITModule::compile(lowered.func, target);
    contents->gpu = target.has_feature(Target::CUDA);
    contents->compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    {
        std::lock_guard<std::mutex> lock(cache_mutex);
        cache()[key] = contents;
    }
    CompiledPipeline c;
    c.contents = contents;
    return c;
}

RawBuffer Pipeline::realize(const std::vector<int> &sizes, const Schedule &schedule,
                            const Target &target) const {
    user_assert(outputs_.size() == 1 && outputs_[0].outputs() == 1)
        << "realize(sizes) returns one buffer; this pipeline has several outputs. Pass output "
           "buffers to realize() instead.";
    const Func &f = outputs_[0];
    user_assert(static_cast<int>(sizes.size()) == f.dimensions())
        << "Func " << f.name() << " has " << f.dimensions()
        << " dimensions, but realize() was given " << sizes.size() << " sizes.";
    RawBuffer out(f.type(), sizes, f.name());
    realize(std::vector<RawBuffer>{out}, schedule, target);
    return out;
}

void Pipeline::realize(const std::vector<RawBuffer> &outputs, const Schedule &schedule,
                       const Target &target) const {
    compile(schedule, target).realize(outputs);
}

std::string Pipeline::compile_to_lowered_stmt(const Schedule &schedule,
                                              const Target &target) const {
    LoweringResult lowered = lower(functions_of(outputs_), *schedule.contents(), target,
                                   "loom_" + outputs_.front().name());
    std::ostringstream s;
    s << "// Lowered " << lowered.func.name << "(";
    for (size_t i = 0; i < lowered.func.args.size(); i++) {
        const LoweredArgument &a = lowered.func.args[i];
        s << (i ? ", " : "") << (a.is_buffer ? "buffer " : "") << type_to_string(a.type) << " "
          << a.name;
        if (a.is_buffer) s << "[" << a.dimensions << "d]";
    }
    s << ") for " << target.to_string() << "\n";
    for (const std::string &note : lowered.notes) s << "// " << note << "\n";
    s << lowered.func.body;
    return s.str();
}

void Pipeline::compile_to_lowered_stmt(const std::string &filename, const Schedule &schedule,
                                       const Target &target) const {
    std::ofstream f(filename);
    user_assert(f.good()) << "Cannot open " << filename << " for writing.";
    f << compile_to_lowered_stmt(schedule, target);
}

std::string Pipeline::compile_to_cuda(const Schedule &schedule, const Target &target) const {
    return cuda_module_of(outputs_, schedule, target).source;
}

void Pipeline::compile_to_cuda(const std::string &basename, const Schedule &schedule,
                               const Target &target) const {
    std::string arch = cuda_arch_for(target, "compile_to_cuda(\"" + basename + "\", ...)");
    const CudaModule module = cuda_module_of(outputs_, schedule, target);
    const std::string &source = module.source;
    CudaBinary binary =
        compile_cuda(source, "loom_" + outputs_.front().name(), arch, module.nvrtc_options);
    auto write = [&](const std::string &suffix, const char *data, size_t size) {
        std::ofstream f(basename + suffix, std::ios::binary);
        user_assert(f.good()) << "Cannot open " << basename << suffix << " for writing.";
        f.write(data, static_cast<std::streamsize>(size));
    };
    write(".cu", source.data(), source.size());
    write(".ptx", binary.ptx.data(), binary.ptx.size());
    write(".cubin", binary.cubin.data(), binary.cubin.size());
}

std::string Pipeline::print_loop_nest(const Schedule &schedule) const {
    // The loop nest does not depend on the target; one with a GPU admits GPU
    // loops too.
    LoweringResult lowered =
        lower(functions_of(outputs_), *schedule.contents(),
              Target::host().with_feature(Target::CUDA), "loom_" + outputs_.front().name());
    return loop_nest_summary(lowered.func.body);
}

}  // namespace loom
