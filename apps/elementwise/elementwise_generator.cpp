// The elementwise chain of elementwise.h as a generator: schedule_cpu for a
// CPU target, schedule_gpu for a CUDA one (target=host-cuda-sm_90).
//
// silu_chain(input, out): both [rows, cols].
#include <memory>

#include <loom/loom.h>

#include "../row_app_generator.h"
#include "elementwise.h"

namespace {

using namespace loom;

class SiluChainGenerator : public loom_apps::RowAppGenerator<elementwise::SiluChain> {
  public:
    Input<Buffer<float>> input{"input", 2};
    Output<Buffer<float>> out{"out", 2};

    void generate() override {
        algo = std::make_unique<elementwise::SiluChain>(input.param());
        out = algo->out;
    }
};

}  // namespace

LOOM_REGISTER_GENERATOR(SiluChainGenerator, silu_chain)
