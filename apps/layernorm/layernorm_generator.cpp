// The LayerNorm of layernorm.h as a generator: the algorithm comes from
// layernorm::LayerNorm, the Inputs (eps included, a scalar argument) and the
// Output bind to it, and the schedule's block and vector sizes are
// GeneratorParams. A CUDA target (target=host-cuda-sm_90) gets
// schedule_gpu, any other schedule_cpu.
//
//     loom_add_generator(layernorm_generator SOURCES layernorm_generator.cpp)
//     loom_add_library(layernorm_cpu GENERATOR layernorm_generator PARAMS vector=8)
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

    void generate() override {
        algo = std::make_unique<layernorm::LayerNorm>(input.param(), gamma.param(), beta.param(),
                                                      eps.param());
        out = algo->out;
    }
};

}  // namespace

LOOM_REGISTER_GENERATOR(LayerNormGenerator, layernorm)
