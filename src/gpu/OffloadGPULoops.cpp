#include "gpu/OffloadGPULoops.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/CodeGen_CUDA.h"
#include "codegen/NVRTC.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Util.h"
#include "loom/Error.h"
#include "loom/IROperator.h"
#include "loom/runtime/loom_runtime.h"
#include "lower/BufferPromises.h"
#include "tile/TileKernel.h"

namespace loom {
namespace internal {

namespace {

struct BufferAccess {
    bool read = false, written = false;
};

// The loads and stores outside GPU kernels (the CPU's), by buffer or
// allocation name, and whether there are kernels at all.
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

/** Refuses a kernel's buffer that the CPU code also uses, unless it is an
 * input that neither side writes. */
void check_host_use(const CudaKernel &k, const CudaKernel::Param &p, bool is_argument,
                    const BufferAccess &h) {
    const bool input = is_argument && !p.written && !h.written;
    if (input) return;  // read on both sides
    const std::string what = is_argument ? "the output buffer " + p.name : "Func " + p.name;
    user_assert(!(h.written && p.written))
        << "Func " << p.name << " is computed partly on the CPU and partly on the GPU "
        << "(kernel " << k.name << "). Schedule every stage of it on the GPU "
        << "(gpu_blocks and gpu_threads on each), or none.";
    // Data moves between the CPU and the GPU at a pipeline's boundaries
    // only, so the last way out is a second pipeline.
    const char *split = is_argument ? ""
                                    : " Or compute it in a pipeline of its own, realized into a "
                                      "Buffer that this one reads through a BufferParam: Buffers "
                                      "move between the CPU and the GPU between pipelines.";
    user_assert(!p.written)
        << what << " is computed on the GPU (kernel " << k.name
        << "), but code that runs on the CPU reads it in the same pipeline. Schedule its "
           "consumers on the GPU too, or compute it on the CPU."
        << split;
    user_error << what << " is computed on the CPU, but the GPU kernel " << k.name
               << " reads it. Compute it on the GPU too (a gpu_blocks kernel of its own, or "
                  "compute_at inside the kernel's loops), or inline it."
               << split;
}

Expr device_call(const char *fn, const std::vector<Expr> &args) {
    return Call::make(Int(32), fn, args, Call::Extern);
}

/** Calls the runtime; the pipeline returns the error it reports. */
Stmt checked(const Expr &call) {
    return Evaluate::make(
        Call::make(Int(32), HostIntrinsic::return_on_error, {call}, Call::Intrinsic));
}

Expr address_of(const std::string &name) { return Variable::make(Handle(), name); }

Stmt store_slot(const std::string &slot, const Expr &value, int index = 0) {
    return Store::make(slot, value, make_const(Int(32), index), const_true());
}

/** What every launch passes for the kernels' module: the runtime's state
 * for it, and its code. */
struct ModuleGlobals {
    Expr state, binary, binary_size, assembly, source;
};

// Replaces each kernel with its launch, and each allocation that only
// kernels touch with GPU memory. Kernels are matched to their loops by
// position: codegen_cuda made them in this traversal order.
class InjectDeviceCalls : public IRMutator {
  public:
    InjectDeviceCalls(const CudaModule &module, const ModuleGlobals &globals,
                      const std::map<std::string, LoweredArgument> &buffer_arguments,
                      const std::set<std::string> &device_allocations)
        : module(module),
          globals(globals),
          buffer_arguments(buffer_arguments),
          device_allocations(device_allocations) {}

    size_t launched = 0;

  private:
    const CudaModule &module;
    const ModuleGlobals &globals;
    const std::map<std::string, LoweredArgument> &buffer_arguments;
    const std::set<std::string> &device_allocations;

    using IRMutator::visit;

    Stmt visit(const For *op) override {
        if (op->for_type == ForType::GPUBlock) return launch(op->name);
        return IRMutator::visit(op);
    }

    Stmt visit(const TileKernel *op) override { return launch(op->contents->program.name); }

    /** The buffers' GPU memory (copied there if the host's is newer), the
     * arguments, and the launch with its grid and block shape. Each argument
     * is passed as the address of a slot holding its value. */
    Stmt launch(const std::string &loop_name) {
        internal_assert(launched < module.kernels.size())
            << "GPU loop " << loop_name << " without a kernel";
        const CudaKernel &k = module.kernels[launched++];
        internal_assert(k.loop_name == loop_name)
            << "kernel " << k.name << " is for loop " << k.loop_name << ", not " << loop_name;

        const std::string args = k.name + ".args";
        // The buffers the kernel reads get their GPU copies first: a buffer
        // passed both as an input and as an output (an in-place update) is
        // one descriptor, and preparing it as an output first would mark the
        // host's data stale before it was copied.
        std::vector<size_t> order;
        for (size_t i = 0; i < k.params.size(); i++) {
            if (k.params[i].read) order.push_back(i);
        }
        for (size_t i = 0; i < k.params.size(); i++) {
            if (!k.params[i].read) order.push_back(i);
        }
        std::vector<Stmt> steps;
        std::vector<std::pair<std::string, Type>> slots;
        for (size_t i : order) {
            const CudaKernel::Param &p = k.params[i];
            // A buffer's argument is its GPU address.
            const std::string slot = k.name + "." + p.name + (p.is_buffer ? ".device" : ".value");
            slots.emplace_back(slot, p.is_buffer ? UInt(64) : p.type);
            auto argument = buffer_arguments.find(p.name);
            if (p.is_buffer && argument != buffer_arguments.end()) {
                steps.push_back(checked(device_call(
                    "loom_device_buffer_for_kernel",
                    {address_of(p.name + ".buffer"), make_const(Int(32), p.read ? 1 : 0),
                     make_const(Int(32), p.written ? 1 : 0), StringImm::make(p.name),
                     address_of(slot)})));
                const LoweredArgument &a = argument->second;
                if (a.host_alignment > 1) {
                    const std::string name = p.name + ".device_address";
                    Expr address = Variable::make(Int(64), name);
                    Expr device = Reinterpret::make(
                        Int(64), Load::make(UInt(64), slot, make_const(Int(32), 0), const_true()));
                    steps.push_back(LetStmt::make(
                        name, device,
                        AssertStmt::make(
                            address % make_const(Int(64), a.host_alignment) == make_zero(Int(64)),
                            host_alignment_message(a.name, a.is_output, a.host_alignment,
                                                   "on the GPU", address))));
                }
            } else if (p.is_buffer) {
                // GPU memory of this pipeline's (see visit(Allocate)).
                steps.push_back(store_slot(slot, Reinterpret::make(UInt(64), address_of(p.name))));
            } else {
                steps.push_back(
                    store_slot(slot, p.value.defined() ? p.value : Variable::make(p.type, p.name)));
            }
            steps.push_back(store_slot(args, address_of(slot), static_cast<int>(i)));
        }

        std::vector<Expr> call = {globals.state,    globals.binary, globals.binary_size,
                                  globals.assembly, globals.source, StringImm::make(k.name)};
        for (int d = 0; d < 3; d++) {
            call.push_back(k.grid[d].type() == Int(32) ? k.grid[d]
                                                       : Cast::make(Int(32), k.grid[d]));
        }
        for (int d = 0; d < 3; d++) call.push_back(make_const(Int(32), k.block[d]));
        Expr shared = Expr(k.shared_bytes);
        if (k.dynamic_shared_bytes.defined()) {
            // Sized at launch; past 2^31 bytes no GPU has it anyway.
            shared = min(k.dynamic_shared_bytes + k.shared_bytes, Expr(int64_t(INT32_MAX)));
        }
        call.push_back(Cast::make(Int(32), cast(Int(64), shared)));
        call.push_back(address_of(args));
        steps.push_back(checked(device_call("loom_device_launch", call)));

        Stmt s = Block::make(steps);
        for (auto it = slots.rbegin(); it != slots.rend(); ++it) {
            s = Allocate::make(it->first, it->second, MemoryType::Stack, {make_const(Int(32), 1)},
                               const_true(), s);
        }
        const int n = static_cast<int>(std::max<size_t>(k.params.size(), 1));
        return Allocate::make(args, Handle(), MemoryType::Stack, {make_const(Int(32), n)},
                              const_true(), s);
    }

    /** GPU memory for a Func that only kernels touch, released at the end
     * of its scope and on every error return inside it. */
    Stmt visit(const Allocate *op) override {
        // An allocation in GPU shared memory or registers outside any kernel
        // is refused by code generation, which says why.
        if (!device_allocations.count(op->name) || op->memory_type == MemoryType::Shared ||
            op->memory_type == MemoryType::Register) {
            return IRMutator::visit(op);
        }
        Stmt body = mutate(op->body);
        Type t = op->type;
        Expr size =
            make_const(Int(64), static_cast<int64_t>(t.is_bool() ? 1 : t.bytes()) * t.lanes);
        for (const Expr &e : op->extents) {
            size = Mul::make(size, e.type() == Int(64) ? e : Cast::make(Int(64), e));
        }
        const std::string slot = op->name + ".device";
        Expr device = Reinterpret::make(UInt(64), address_of(op->name));
        Expr release = device_call("loom_device_deallocate", {device});
        body = LetStmt::make(
            op->name + ".release",
            Call::make(Int(32), HostIntrinsic::on_error, {release}, Call::Intrinsic), body);
        body = Block::make(body, Evaluate::make(release));
        body = LetStmt::make(
            op->name,
            Reinterpret::make(Handle(),
                              Load::make(UInt(64), slot, make_const(Int(32), 0), const_true())),
            body);
        body =
            Block::make(checked(device_call("loom_device_allocate",
                                            {size, StringImm::make(op->name), address_of(slot)})),
                        body);
        return Allocate::make(slot, UInt(64), MemoryType::Stack, {make_const(Int(32), 1)},
                              const_true(), body);
    }
};

}  // namespace

std::string device_module_state_name(const std::string &function) {
    return function + "_device_module_state";
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

OffloadedFunc offload_gpu_loops(const LoweredFunc &f, const Target &t, bool portable) {
    HostAccesses host;
    if (f.body.defined()) f.body.accept(&host);

    OffloadedFunc result;
    result.func = f;
    std::map<std::string, LoweredArgument> buffer_arguments;
    for (const LoweredArgument &a : f.args) {
        if (a.is_buffer) buffer_arguments[a.name] = a;
    }

    // Buffers the CPU reads must hold the GPU's data if that is newer: a
    // previous pipeline may have left it there, whether or not this one has
    // kernels.
    std::vector<Stmt> body;
    for (const LoweredArgument &a : f.args) {
        auto use = host.found.find(a.name);
        if (!a.is_buffer || use == host.found.end() || !use->second.read) continue;
        Expr flags = Variable::make(UInt(64), a.name + ".flags");
        Expr device_dirty =
            NE::make(Call::make(UInt(64), Call::bitwise_and,
                                {flags, make_const(UInt(64), uint64_t(loom_buffer_device_dirty))},
                                Call::PureIntrinsic),
                     make_zero(UInt(64)));
        body.push_back(IfThenElse::make(
            device_dirty,
            checked(device_call("loom_device_buffer_for_host",
                                {address_of(a.name + ".buffer"), StringImm::make(a.name)}))));
    }
    if (!host.has_kernels) {
        body.push_back(f.body);
        result.func.body = Block::make(body);
        return result;
    }

    const CudaModule module = codegen_cuda(f, t);
    std::set<std::string> device_allocations;
    for (const CudaKernel &k : module.kernels) {
        for (const CudaKernel::Param &p : k.params) {
            if (!p.is_buffer) continue;
            const bool is_argument = buffer_arguments.count(p.name) > 0;
            if (!is_argument) device_allocations.insert(p.name);
            auto it = host.found.find(p.name);
            if (it != host.found.end()) check_host_use(k, p, is_argument, it->second);
        }
    }
    const std::string arch = cuda_arch_for(t, "Compiling " + f.name);
    const CudaBinary binary = compile_cuda(module.source, f.name, arch, module.nvrtc_options);

    // The module's code: the cubin, and the PTX for a driver that refuses
    // it. JIT code also carries the CUDA C++ source, for a driver that
    // compiles it itself (the tests' stand-in, which runs kernels on the
    // CPU); AOT libraries ship the cubin and PTX only, unless the target
    // asks for the source too (cuda_source).
    ModuleGlobals globals;
    HostGlobal state;
    state.name = device_module_state_name(f.name);
    state.is_state = true;
    HostGlobal cubin;
    cubin.name = f.name + ".cubin";
    cubin.bytes.assign(binary.cubin.begin(), binary.cubin.end());
    cubin.alignment = 16;
    HostGlobal ptx;
    ptx.name = f.name + ".ptx";
    ptx.bytes = binary.ptx;
    ptx.null_terminated = true;
    result.globals = {state, cubin, ptx};
    globals.state = address_of(state.name);
    globals.binary = address_of(cubin.name);
    globals.binary_size = make_const(UInt(64), uint64_t(binary.cubin.size()));
    globals.assembly = address_of(ptx.name);
    globals.source = Reinterpret::make(Handle(), make_zero(UInt(64)));
    if (!portable || t.has_feature(Target::CUDASource)) {
        HostGlobal source;
        source.name = f.name + ".cuda_source";
        source.bytes = module.source;
        source.null_terminated = true;
        result.globals.push_back(source);
        globals.source = address_of(source.name);
    }

    InjectDeviceCalls inject(module, globals, buffer_arguments, device_allocations);
    if (f.body.defined()) body.push_back(inject.mutate(f.body));
    internal_assert(inject.launched == module.kernels.size())
        << "launched " << inject.launched << " of " << module.kernels.size() << " kernels of "
        << f.name;

    // A pipeline returns after its kernels have finished; the error of one
    // that faulted lists them, with the checks inside them that may have
    // stopped it.
    std::vector<std::string> names;
    for (const CudaKernel &k : module.kernels) {
        names.push_back(k.name +
                        (k.checks.empty() ? "" : " [its checks: " + join(k.checks, " Or: ") + "]"));
    }
    body.push_back(checked(device_call(
        "loom_device_finish", {StringImm::make(f.name), StringImm::make(join(names, ", "))})));
    Stmt s = Block::make(body);

    // A buffer that only kernels touch may have GPU memory alone, where one
    // the CPU code uses may not: the argument checks' view of it
    // (LoweredFunc.h), which otherwise is the CPU's.
    for (const LoweredArgument &a : f.args) {
        if (!a.is_buffer || host.found.count(a.name)) continue;
        Expr host_pointer = Variable::make(Int(64), a.name + ".host_pointer");
        Expr device_pointer = Variable::make(Int(64), a.name + ".device_pointer");
        // Its alignment promise is checked on the GPU address, at launch.
        s = LetStmt::make(a.name + ".host_address", make_zero(Int(64)), s);
        s = LetStmt::make(a.name + ".gpu_memory_alone", const_false(), s);
        s = LetStmt::make(a.name + ".host_is_null",
                          And::make(EQ::make(host_pointer, make_zero(Int(64))),
                                    EQ::make(device_pointer, make_zero(Int(64)))),
                          s);
    }
    result.func.body = s;
    return result;
}

}  // namespace internal
}  // namespace loom
