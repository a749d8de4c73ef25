#include "gpu/OffloadGPULoops.h"

#include "ir/IRVisitor.h"
#include "loom/Error.h"
#include "loom/runtime/loom_runtime.h"

namespace loom {
namespace internal {

namespace {

class HostAccesses : public IRVisitor {
  public:
    std::map<std::string, BufferAccess> found;
    bool has_kernels = false;

    using IRVisitor::visit;
    void visit(const For *op) override {
        if (op->for_type == ForType::GPUBlock) {
            // A kernel: its accesses are the GPU's. Its bounds are the host's.
            has_kernels = true;
            op->min.accept(this);
            op->extent.accept(this);
            return;
        }
        IRVisitor::visit(op);
    }
    void visit(const TileKernel *op) override {
        has_kernels = true;
        IRVisitor::visit(op);  // its grid and scalars are the host's
    }
    void visit(const Load *op) override {
        found[op->name].read = true;
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        found[op->name].written = true;
        IRVisitor::visit(op);
    }
};

}  // namespace

std::map<std::string, BufferAccess> host_accesses(const Stmt &s) {
    HostAccesses v;
    if (s.defined()) s.accept(&v);
    return v.found;
}

std::string cuda_arch_for(const Target &target, const std::string &what) {
    if (target.cuda_capability() != 0) return target.cuda_arch();
    int32_t capability = 0;
    user_assert(loom_cuda_device_capability(0, &capability) == 0)
        << what << " compiles for the GPU of this machine (the target " << target.to_string()
        << " names no capability), but " << loom_last_error_message()
        << " Name the capability to compile without a GPU, e.g. Target(\"host-cuda-sm_90a\").";
    user_assert(capability >= 80) << what << ": the GPU of this machine has capability sm_"
                                  << capability << "; Loom generates code for sm_80 and newer.";
    return "sm_" + std::to_string(capability);
}

std::shared_ptr<const GpuOffload> offload_gpu_loops(const LoweredFunc &f, const Target &t) {
    HostAccesses host;
    if (f.body.defined()) f.body.accept(&host);
    if (!host.has_kernels) return nullptr;

    auto plan = std::make_shared<GpuOffload>();
    plan->module = codegen_cuda(f, t);

    std::set<std::string> arguments;
    for (const LoweredArgument &a : f.args) {
        if (a.is_buffer) arguments.insert(a.name);
    }
    for (const CudaKernel &k : plan->module.kernels) {
        for (const CudaKernel::Param &p : k.params) {
            if (!p.is_buffer) continue;
            if (!arguments.count(p.name)) plan->device_allocations.insert(p.name);
            auto it = host.found.find(p.name);
            if (it == host.found.end()) continue;
            const BufferAccess &h = it->second;
            const bool input = arguments.count(p.name) && !p.written && !h.written;
            if (input) continue;  // read on both sides
            const std::string what =
                arguments.count(p.name) ? "the output buffer " + p.name : "Func " + p.name;
            user_assert(!(h.written && p.written))
                << "Func " << p.name << " is computed partly on the CPU and partly on the GPU "
                << "(kernel " << k.name << "). Schedule every stage of it on the GPU "
                << "(gpu_blocks and gpu_threads on each), or none.";
            // Data moves between the CPU and the GPU at a pipeline's
            // boundaries only, so the last way out is a second pipeline.
            const char *split = arguments.count(p.name)
                                    ? ""
                                    : " Or compute it in a pipeline of its own, realized into a "
                                      "Buffer that this one reads through a BufferParam: Buffers "
                                      "move between the CPU and the GPU between pipelines.";
            user_assert(!p.written)
                << what << " is computed on the GPU (kernel " << k.name
                << "), but code that runs on the CPU reads it in the same pipeline. Schedule its "
                   "consumers on the GPU too, or compute it on the CPU."
                << split;
            user_error << what << " is computed on the CPU, but the GPU kernel " << k.name
                       << " reads it. Compute it on the GPU too (a gpu_blocks kernel of its own, "
                          "or compute_at inside the kernel's loops), or inline it."
                       << split;
        }
    }
    const std::string arch = cuda_arch_for(t, "Compiling " + f.name);
    plan->binary = compile_cuda(plan->module.source, f.name, arch, plan->module.nvrtc_options);
    return plan;
}

}  // namespace internal
}  // namespace loom
