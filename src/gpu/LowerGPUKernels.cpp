// The block's own code of every GPU kernel, made explicit before code
// generation, so that the CUDA backend only prints: stores outside the
// thread loops by one thread and reductions across the block's threads
// (lower_block_level_code), each allocation's memory fixed on the IR (the
// block's per-thread partials become MemoryType::Register; the rest of its
// storage is shared), and the barriers that order the threads' accesses to
// shared storage and to buffers the kernel both reads and writes.
#include "gpu/LowerGPUKernels.h"

#include "gpu/CrossThreadReductions.h"
#include "gpu/GPULoops.h"
#include "gpu/GpuBarriers.h"
#include "gpu/KernelFreeNames.h"
#include "ir/IRMutator.h"
#include "loom/Error.h"

namespace loom {
namespace internal {

namespace {

/** Refuses memory types a kernel cannot give an allocation, and marks the
 * block's per-thread storage Register. */
class FixKernelMemory : public IRMutator {
  public:
    FixKernelMemory(const std::string &kernel, const std::set<std::string> &per_thread,
                    bool has_threads)
        : kernel_name(kernel), per_thread(per_thread), has_threads(has_threads) {}

  protected:
    using IRMutator::visit;
    Stmt visit(const For *op) override {
        if (op->for_type != ForType::GPUThread) return IRMutator::visit(op);
        thread_loops++;
        Stmt s = IRMutator::visit(op);
        thread_loops--;
        return s;
    }
    Stmt visit(const Allocate *op) override {
        const bool block_level = has_threads && thread_loops == 0;
        const bool shared = block_level && !per_thread.count(op->name);
        const char *asked = op->memory_type == MemoryType::Shared     ? "Shared"
                            : op->memory_type == MemoryType::Register ? "Register"
                            : op->memory_type == MemoryType::Stack    ? "Stack"
                            : op->memory_type == MemoryType::Heap     ? "Heap"
                            : op->memory_type == MemoryType::Global   ? "Global"
                                                                      : nullptr;
        // (Global storage inside a kernel was moved out of it, to the host,
        // by hoist_kernel_allocations: what remains here was asked for.)
        user_assert(op->memory_type != MemoryType::Global && op->memory_type != MemoryType::Heap)
            << "Func " << op->name << " is stored in MemoryType::" << asked
            << " inside the GPU kernel " << kernel_name
            << "; the CPU's heap is not a GPU's. Use Global for device memory, or Shared or "
               "Register.";
        user_assert(!block_level || per_thread.count(op->name) ||
                    op->memory_type == MemoryType::Auto || op->memory_type == MemoryType::Shared)
            << "Func " << op->name << " is stored in MemoryType::" << asked << ", but kernel "
            << kernel_name
            << " computes it at a block loop, outside the thread loops, where the block's "
               "threads share it: that is MemoryType::Shared. Compute it inside the thread loops "
               "for per-thread storage.";
        user_assert(shared || op->memory_type == MemoryType::Auto ||
                    op->memory_type == MemoryType::Register || op->memory_type == MemoryType::Stack)
            << "Func " << op->name << " is stored in MemoryType::" << asked << ", but kernel "
            << kernel_name
            << " computes it inside the thread loops, once per thread. Compute it at a block "
               "loop (compute_at(consumer, xo), with gpu_threads on its loops) to share it in "
               "the block's shared memory.";
        Stmt s = IRMutator::visit(op);
        if (!per_thread.count(op->name) || op->memory_type == MemoryType::Register) return s;
        const Allocate *a = s.as<Allocate>();
        return Allocate::make(a->name, a->type, MemoryType::Register, a->extents, a->condition,
                              a->body);
    }

  private:
    const std::string kernel_name;
    const std::set<std::string> &per_thread;
    const bool has_threads;
    int thread_loops = 0;
};

class LowerKernels : public IRMutator {
  public:
    explicit LowerKernels(const std::string &prefix) : prefix(prefix) {}

  protected:
    using IRMutator::visit;
    Stmt visit(const For *op) override {
        if (op->for_type != ForType::GPUBlock) return IRMutator::visit(op);
        const std::string name = next_kernel_name(prefix, op->name, &kernel_names);
        BlockLevelKernel lowered = lower_block_level_code(Stmt(op), name);
        KernelFreeNames free;
        lowered.body.accept(&free);
        std::set<std::string> read_and_written;
        for (const auto &b : free.buffers) {
            if (b.second.read && b.second.written) read_and_written.insert(b.first);
        }
        Stmt body = insert_gpu_barriers(lowered.body, lowered.per_thread, read_and_written);
        const bool has_threads = gpu_loop_chain_depth(body, ForType::GPUThread) > 0;
        return FixKernelMemory(name, lowered.per_thread, has_threads).mutate(body);
    }

  private:
    const std::string prefix;
    std::set<std::string> kernel_names;
};

}  // namespace

Stmt lower_gpu_kernels(const Stmt &s, const std::string &pipeline_name) {
    return LowerKernels(pipeline_name).mutate(s);
}

}  // namespace internal
}  // namespace loom
