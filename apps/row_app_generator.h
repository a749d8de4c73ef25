// What the generators of the apps with both a CPU and a GPU schedule
// (softmax, LayerNorm, RMSNorm, the elementwise chain) share: their
// schedule's GeneratorParams, and the choice of schedule by target. A CUDA
// target (target=host-cuda-sm_90) gets the app's schedule_gpu, any other
// its schedule_cpu. A generator derives from RowAppGenerator<App>, declares
// its Inputs and Outputs, and makes `algo` in generate().
#pragma once

#include <memory>
#include <type_traits>

#include <loom/loom.h>

#include "gpu_rows.h"

namespace loom_apps {

template <typename App> class RowAppGenerator : public loom::Generator {
  public:
    /** CPU: rows per parallel task. */
    loom::GeneratorParam<int> rows_per_task{"rows_per_task", 8, 1, 4096};
    /** GPU: threads per block (per row with rows_per_block); 0: the app's
     * choice. The row apps take row_app_gpu_threads(stage_rows) (512
     * staged, 1024 not), row_app_threads with rows_per_block, or with
     * rows_in_registers row_app_register_threads(columns) (512 for 16384
     * columns); the elementwise chain takes 256. */
    loom::GeneratorParam<int> threads{"threads", 0, 0, 1024};
    /** Vector width; 0: the target's natural one (vector_for). */
    loom::GeneratorParam<int> vector{"vector", 0, 0, 64};
    /** GPU, the row apps: copy each row into shared memory first, so that
     * it is read from device memory once (rows up to 58,112 floats on
     * sm_90); false for longer rows (softmax then takes its online
     * schedule, the max and the sum in one pass: two reads of the row). */
    loom::GeneratorParam<bool> stage_rows{"stage_rows", true};
    /** Promise aligned rows (loom_apps::promise_aligned_rows): the library
     * then refuses rows that are not a multiple of 4 floats long (or padded
     * to one) and in exchange moves every whole vector untested on the GPU. */
    loom::GeneratorParam<bool> aligned_rows{"aligned_rows", false};
    /** The row apps: a row length fixed at compile time (fix_row_length;
     * the library refuses rows of any other), 0 for any. */
    loom::GeneratorParam<int> columns{"columns", 0, 0, 1 << 24};
    /** GPU, the row apps: keep each row in its threads' registers instead
     * of shared memory (schedule_gpu_in_registers, each thread reducing its
     * own vectors first): read from device memory once with no shared
     * memory for it. Needs `columns`; columns / threads floats per thread
     * (16 for 16384 and 1024 threads). */
    loom::GeneratorParam<bool> rows_in_registers{"rows_in_registers", false};
    /** GPU, the row apps: rows a block, `threads` threads each (0: the
     * block's default threads shared among them), each row reduced by its
     * own threads: for short rows, whose single block would be mostly idle.
     * 1: a block per row. */
    loom::GeneratorParam<int> rows_per_block{"rows_per_block", 1, 1, 1024};
    /** GPU: blocks per SM the kernels ask for (Stage::gpu_blocks_per_sm,
     * __launch_bounds__'s second argument); 0: not asked. */
    loom::GeneratorParam<int> blocks_per_sm{"blocks_per_sm", 0, 0, 32};

  protected:
    std::unique_ptr<App> algo;

    void schedule() override {
        const int v = vector_for(get_target(), vector);
        user_assert(threads == 0 || threads >= 32)
            << "Generator param threads=" << int(threads)
            << ": a block needs at least one warp's 32 threads. Give 32 to 1024, or 0 for the "
               "app's choice.";
        if (aligned_rows) algo->promise_aligned_rows();
        constexpr bool row_app = std::is_invocable_v<decltype(&App::schedule_gpu), const App &,
                                                     loom::Schedule &, int, int, bool, int>;
        if (rows_per_block > 1) {
            user_assert(row_app) << "Generator param rows_per_block=" << int(rows_per_block)
                                 << ": this app has no rows to group. Leave it out.";
            user_assert(get_target().has_feature(loom::Target::CUDA) && !bool(rows_in_registers))
                << "Generator param rows_per_block=" << int(rows_per_block)
                << " is for a CUDA target (target=host-cuda-sm_90) with the rows staged or "
                   "read from device memory, not rows_in_registers=true.";
            const int per_row = row_app_threads(threads, stage_rows, rows_per_block);
            user_assert(per_row * rows_per_block <= 1024)
                << "Generator params rows_per_block=" << int(rows_per_block)
                << " and threads=" << per_row << " (a row's threads) make a block of "
                << per_row * rows_per_block
                << " threads; a block has at most 1024. Take fewer of either.";
        }
        if (columns > 0) {
            if constexpr (row_app) {
                algo->fix_row_length(columns);
            } else {
                user_error << "Generator param columns=" << int(columns)
                           << ": this app has no rows to fix the length of. Leave it out.";
            }
        }
        if (rows_in_registers) {
            user_assert(get_target().has_feature(loom::Target::CUDA))
                << "Generator param rows_in_registers=true is for a CUDA target "
                   "(target=host-cuda-sm_90); this one is "
                << get_target().to_string() << ".";
            user_assert(columns > 0)
                << "Generator param rows_in_registers=true needs the row length fixed: a "
                   "thread's registers are counted when the kernel compiles. Add columns=N.";
            if constexpr (row_app) {
                const int t = threads > 0 ? int(threads) : row_app_register_threads(columns);
                algo->schedule_gpu_in_registers(sched, t, v, true, blocks_per_sm);
                return;
            } else {
                user_error << "Generator param rows_in_registers=true: this app has no rows to "
                              "keep. Leave it out.";
            }
        }
        if (!get_target().has_feature(loom::Target::CUDA)) {
            algo->schedule_cpu(sched, rows_per_task, v);
        } else if constexpr (row_app) {
            algo->schedule_gpu(sched, threads, v, stage_rows,
                               rows_per_block);  // threads 0: the app's choice
        } else {
            algo->schedule_gpu(sched, threads > 0 ? int(threads) : elementwise_gpu_threads,
                               v);  // no rows to stage
        }
        if (blocks_per_sm > 0) {
            user_assert(get_target().has_feature(loom::Target::CUDA))
                << "Generator param blocks_per_sm=" << int(blocks_per_sm)
                << " is for a CUDA target (target=host-cuda-sm_90).";
            sched[algo->out].gpu_blocks_per_sm(blocks_per_sm);
        }
    }
};

}  // namespace loom_apps
