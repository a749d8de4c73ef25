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
    /** GPU: threads per block. */
    loom::GeneratorParam<int> threads{"threads", 256, 32, 1024};
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

  protected:
    std::unique_ptr<App> algo;

    void schedule() override {
        const int v = vector_for(get_target(), vector);
        if (aligned_rows) algo->promise_aligned_rows();
        if (!get_target().has_feature(loom::Target::CUDA)) {
            algo->schedule_cpu(sched, rows_per_task, v);
        } else if constexpr (std::is_invocable_v<decltype(&App::schedule_gpu), const App &,
                                                 loom::Schedule &, int, int, bool>) {
            algo->schedule_gpu(sched, threads, v, stage_rows);
        } else {
            algo->schedule_gpu(sched, threads, v);  // no rows to stage
        }
    }
};

}  // namespace loom_apps
