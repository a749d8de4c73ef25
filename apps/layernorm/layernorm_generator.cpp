// The LayerNorm of layernorm.h as a generator: the algorithm comes from
// layernorm::LayerNorm, the Inputs (eps included, a scalar argument) and the
// Output bind to it, and the schedule's block and vector sizes are
// GeneratorParams. A CUDA target (target=host-cuda-sm_90) gets
// schedule_gpu, any other schedule_cpu.
//
//     loom_add_generator(layernorm_generator SOURCES layernorm_generator.cpp)
//     loom_add_library(layernorm_cpu GENERATOR layernorm_generator PARAMS vector=8)
//     loom_add_library(layernorm_one_pass GENERATOR layernorm_generator PARAMS one_pass=true)
//
// layernorm_cpu(input, gamma, beta, eps, out): input and out are
// [rows, cols], gamma and beta [cols].
#include <memory>

#include <loom/loom.h>

#include "../row_app_generator.h"
#include "layernorm.h"

namespace {

using namespace loom;

class LayerNormGenerator : public loom_apps::RowAppGenerator<layernorm::LayerNorm> {
  public:
    Input<Buffer<float>> input{"input", 2};
    Input<Buffer<float>> gamma{"gamma", 1};
    Input<Buffer<float>> beta{"beta", 1};
    Input<float> eps{"eps", 1e-5f};
    // Named like the Func it is bound to: a Func's name names its argument.
    Output<Buffer<float>> out{"out", 2};
    /** The row statistics in one pass over the row (schedule_cpu_one_pass,
     * schedule_gpu_one_pass): the variance about the running mean, fused
     * with the sum. */
    GeneratorParam<bool> one_pass{"one_pass", false};

    void generate() override {
        algo = std::make_unique<layernorm::LayerNorm>(input.param(), gamma.param(), beta.param(),
                                                      eps.param());
        out = algo->out;
    }

    void schedule() override {
        if (!bool(one_pass)) {
            RowAppGenerator::schedule();
            return;
        }
        user_assert(!bool(rows_in_registers) && rows_per_block == 1)
            << "Generator param one_pass=true has its own schedule, one row a block: leave out "
               "rows_in_registers and rows_per_block.";
        if (aligned_rows) algo->promise_aligned_rows();
        if (columns > 0) algo->fix_row_length(columns);
        const int v = loom_apps::vector_for(get_target(), vector);
        if (get_target().has_feature(Target::CUDA)) {
            algo->schedule_gpu_one_pass(sched, threads > 0 ? int(threads) : 256, v, stage_rows);
            if (blocks_per_sm > 0) sched[algo->out].gpu_blocks_per_sm(blocks_per_sm);
        } else {
            algo->schedule_cpu_one_pass(sched, rows_per_task, v);
        }
    }
};

}  // namespace

LOOM_REGISTER_GENERATOR(LayerNormGenerator, layernorm)
