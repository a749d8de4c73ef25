// The two-stage blur of blur.h as a generator: the algorithm comes from
// blur::Blur, the Inputs and Outputs bind to it, and the schedule's tile and
// vector sizes are GeneratorParams.
//
//     loom_add_generator(blur_generator SOURCES blur_generator.cpp)
//     loom_add_library(blur_cpu GENERATOR blur_generator PARAMS tile_cols=128)
//
// blur_cpu(input, blur_y): input is [rows + 2, cols + 2], blur_y [rows, cols].
#include <memory>

#include <loom/loom.h>

#include "blur.h"

namespace {

using namespace loom;

class BlurGenerator : public Generator {
  public:
    GeneratorParam<int> tile_rows{"tile_rows", 32, 1, 1024};
    GeneratorParam<int> tile_cols{"tile_cols", 256, 8, 4096};
    GeneratorParam<int> vector{"vector", 16, 1, 64};

    Input<Buffer<float>> input{"input", 2};
    // Named like the Func it is bound to: a Func's name names its argument.
    Output<Buffer<float>> blur_y{"blur_y", 2};

    std::unique_ptr<blur::Blur> algo;

    void generate() override {
        algo = std::make_unique<blur::Blur>(input.param());
        blur_y = algo->blur_y;
    }
    void schedule() override { algo->schedule_cpu(sched, tile_rows, tile_cols, vector); }
};

}  // namespace

LOOM_REGISTER_GENERATOR(BlurGenerator, blur)
