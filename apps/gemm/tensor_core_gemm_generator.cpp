// The tensor-core GEMM of tensor_core_gemm.h as generators, one per
// epilogue (each has its own arguments):
//
//     gemm_tc(A, B, C)                           C = A B
//     gemm_tc_bias_gelu(A, B, bias, C)           C = gelu(A B + bias)
//     gemm_tc_bias_residual(A, B, bias, R, C)    C = A B + bias + R
//
// GeneratorParams: in (float16 or bfloat16), out (float32, float16 or
// bfloat16), b_column_major (B given as its transpose, [N, K]), and the
// template's tile sizes (rows, cols, warps_m, warps_n, k_tile, stages).
//
//     loom_add_library(gemm_tc GENERATOR gemm_tc_generator GENERATOR_NAME gemm_tc
//                      TARGET host-cuda-sm_80 PARAMS in=bfloat16 out=bfloat16)
#include <memory>

#include <loom/loom.h>

#include "tensor_core_gemm.h"

namespace {

using namespace loom;

class TensorCoreGemmBase : public Generator {
  public:
    GeneratorParam<Type> in{"in", Float(16)};
    GeneratorParam<Type> out{"out", Float(32)};
    GeneratorParam<bool> b_column_major{"b_column_major", false};
    GeneratorParam<int> rows{"rows", 128, 16, 256};
    GeneratorParam<int> cols{"cols", 128, 8, 256};
    GeneratorParam<int> warps_m{"warps_m", 2, 1, 8};
    GeneratorParam<int> warps_n{"warps_n", 2, 1, 8};
    GeneratorParam<int> k_tile{"k_tile", 32, 16, 128};
    GeneratorParam<int> stages{"stages", 3, 1, 8};

    Input<Buffer<>> A{"A", in, 2};
    Input<Buffer<>> B{"B", in, 2};

  protected:
    std::unique_ptr<gemm::TensorCoreGemm> algo;

    void make(gemm::Epilogue e, const BufferParam &bias, const BufferParam &residual) {
        user_assert(in.value() == Float(16) || in.value() == BFloat(16))
            << "gemm_tc: in must be float16 or bfloat16 (the tensor cores' inputs), not "
            << type_to_string(in.value());
        user_assert(out.value() == Float(32) || out.value() == Float(16) ||
                    out.value() == BFloat(16))
            << "gemm_tc: out must be float32, float16 or bfloat16, not "
            << type_to_string(out.value());
        algo = std::make_unique<gemm::TensorCoreGemm>(out, b_column_major, e, A.param(), B.param(),
                                                      bias, residual);
    }
    void schedule_template() {
        schedules::GemmTileOptions o;
        o.rows = rows;
        o.cols = cols;
        o.warps_m = warps_m;
        o.warps_n = warps_n;
        o.k_tile = k_tile;
        o.stages = stages;
        algo->schedule_gpu(sched, o);
    }
};

class TensorCoreGemm : public TensorCoreGemmBase {
  public:
    // Named like the Func it is bound to: a Func's name names its argument.
    Output<Buffer<>> C{"C", out, 2};
    void generate() override {
        make(gemm::Epilogue::None, BufferParam(Float(32), 1, "bias"),
             BufferParam(out, 2, "residual"));
        C = algo->C;
    }
    void schedule() override { schedule_template(); }
};

class TensorCoreGemmBiasGelu : public TensorCoreGemmBase {
  public:
    Input<Buffer<float>> bias{"bias", 1};
    Output<Buffer<>> C{"C", out, 2};
    void generate() override {
        make(gemm::Epilogue::BiasGelu, bias.param(), BufferParam(out, 2, "residual"));
        C = algo->C;
    }
    void schedule() override { schedule_template(); }
};

class TensorCoreGemmBiasResidual : public TensorCoreGemmBase {
  public:
    Input<Buffer<float>> bias{"bias", 1};
    Input<Buffer<>> residual{"residual", out, 2};
    Output<Buffer<>> C{"C", out, 2};
    void generate() override {
        make(gemm::Epilogue::BiasResidual, bias.param(), residual.param());
        C = algo->C;
    }
    void schedule() override { schedule_template(); }
};

}  // namespace

LOOM_REGISTER_GENERATOR(TensorCoreGemm, gemm_tc)
LOOM_REGISTER_GENERATOR(TensorCoreGemmBiasGelu, gemm_tc_bias_gelu)
LOOM_REGISTER_GENERATOR(TensorCoreGemmBiasResidual, gemm_tc_bias_residual)
