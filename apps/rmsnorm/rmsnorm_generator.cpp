// RMSNorm (rmsnorm.h) as a generator: schedule_cpu for a CPU target,
// schedule_gpu for a CUDA one (target=host-cuda-sm_90).
//
// rmsnorm(input, weight, eps, out): input and out [rows, cols], weight [cols].
#include <memory>

#include <loom/loom.h>

#include "../row_app_generator.h"
#include "rmsnorm.h"

namespace {

using namespace loom;

class RmsNormGenerator : public loom_apps::RowAppGenerator<rmsnorm::RmsNorm> {
  public:
    Input<Buffer<float>> input{"input", 2};
    Input<Buffer<float>> weight{"weight", 1};
    Input<float> eps{"eps", 1e-6f};
    Output<Buffer<float>> out{"out", 2};

    void generate() override {
        algo = std::make_unique<rmsnorm::RmsNorm>(input.param(), weight.param(), eps.param());
        out = algo->out;
    }
};

}  // namespace

LOOM_REGISTER_GENERATOR(RmsNormGenerator, rmsnorm)
