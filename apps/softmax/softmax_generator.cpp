// The row softmax of softmax.h as a generator: the algorithm comes from
// softmax::Softmax, the Inputs and Outputs bind to it, and the schedule's
// block and vector sizes are GeneratorParams. A CUDA target
// (target=host-cuda-sm_90) gets schedule_gpu, any other schedule_cpu.
//
//     loom_add_generator(softmax_generator SOURCES softmax_generator.cpp)
//     loom_add_library(softmax_cpu GENERATOR softmax_generator PARAMS rows_per_task=4)
//
// softmax_cpu(input, out): both [rows, cols], softmax along cols.
#include <memory>

#include <loom/loom.h>

#include "../row_app_generator.h"
#include "softmax.h"

namespace {

using namespace loom;

class SoftmaxGenerator : public loom_apps::RowAppGenerator<softmax::Softmax> {
  public:
    Input<Buffer<float>> input{"input", 2};
    // Named like the Func it is bound to: a Func's name names its argument.
    Output<Buffer<float>> out{"out", 2};

    void generate() override {
        algo = std::make_unique<softmax::Softmax>(input.param());
        out = algo->out;
    }
};

}  // namespace

LOOM_REGISTER_GENERATOR(SoftmaxGenerator, softmax)
