// Where in a GPU kernel a pass that rewrites loops is. Inside a kernel, the
// code between the block loops and the thread loops is the block's own: it
// runs once per thread, but the storage it makes is the block's, shared by
// its threads (lower_block_level_code). A pass that would give each lane
// or each iteration storage of its own (a per-lane array, a vector of
// partials) may do so only in a thread's own code, or outside kernels.
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

class GpuLoopLevel {
  public:
    /** Inside a kernel's block loops, outside its thread loops. */
    bool block_level() const { return block_loops > 0 && thread_loops == 0; }

    /** Counts loop `op` (if it is a GPU loop) while `visit_body` runs. */
    template <typename F> auto inside(const For *op, F &&visit_body) {
        const int block = op->for_type == ForType::GPUBlock;
        const int thread = op->for_type == ForType::GPUThread;
        block_loops += block;
        thread_loops += thread;
        struct Leave {
            GpuLoopLevel &level;
            int block, thread;
            ~Leave() {
                level.block_loops -= block;
                level.thread_loops -= thread;
            }
        } leave{*this, block, thread};
        return visit_body();
    }

  private:
    int block_loops = 0, thread_loops = 0;
};

}  // namespace internal
}  // namespace loom
