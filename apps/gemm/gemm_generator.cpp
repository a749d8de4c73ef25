// The GEMM of gemm.h as a generator: the algorithm comes from gemm::Gemm, the
// Inputs and Outputs bind to it, and the schedule's tile, strip and vector
// sizes are GeneratorParams.
//
//     loom_add_generator(gemm_generator SOURCES gemm_generator.cpp)
//     loom_add_library(gemm_cpu GENERATOR gemm_generator PARAMS tile_cols=64)
//
// gemm_cpu(A, B, C): A is [M, K], B [K, N], C [M, N]. The schedule shifts its
// last tiles inwards, so M >= tile_rows and N >= tile_cols (checked at run
// time).
#include <memory>

#include <loom/loom.h>

#include "gemm.h"

namespace {

using namespace loom;

class GemmGenerator : public Generator {
  public:
    GeneratorParam<int> tile_rows{"tile_rows", 32, 1, 1024};
    GeneratorParam<int> tile_cols{"tile_cols", 32, 1, 1024};
    GeneratorParam<int> micro_rows{"micro_rows", 8, 1, 64};
    GeneratorParam<int> vector{"vector", 16, 1, 64};

    Input<Buffer<float>> A{"A", 2};
    Input<Buffer<float>> B{"B", 2};
    // Named like the Func it is bound to: a Func's name names its argument.
    Output<Buffer<float>> C{"C", 2};

    std::unique_ptr<gemm::Gemm> algo;

    void generate() override {
        algo = std::make_unique<gemm::Gemm>(A.param(), B.param());
        C = algo->C;
    }
    void schedule() override {
        algo->schedule_cpu(sched, tile_rows, tile_cols, micro_rows, vector);
    }
};

}  // namespace

LOOM_REGISTER_GENERATOR(GemmGenerator, gemm)
