// A matrix product on tensor cores, written as the plain algorithm:
//
//   acc(i, j) = sum over k of float(A(i, k)) * float(B(k, j))
//   C(i, j)   = epilogue(acc(i, j))
//
// A and B are float16 or bfloat16, B row-major ([K, N]) or column-major
// (given as its transpose, [N, K]); C is float32, float16 or bfloat16; the
// epilogue is nothing, bias + GELU, or bias + a residual. The schedule is
// schedules/gemm.h's template: one tile program per block tile, the
// accumulator in registers, the epilogue fused before the store.
#pragma once

#include <loom/loom.h>

#include <utility>

#include "../../schedules/gemm.h"

namespace gemm {

enum class Epilogue { None, BiasGelu, BiasResidual };

/** GELU's tanh form, as PyTorch's gelu(approximate="tanh"). */
inline loom::Expr gelu(const loom::Expr &x) {
    return 0.5f * x * (1.0f + loom::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

struct TensorCoreGemm {
    loom::Type in, out;
    bool b_column_major;
    Epilogue epilogue;
    loom::BufferParam A, B, bias, residual;
    loom::Var i{"i"}, j{"j"};
    loom::RDom k;
    loom::Func acc{"acc"}, C{"C"};

    explicit TensorCoreGemm(loom::Type in = loom::Float(16), loom::Type out = loom::Float(32),
                            bool b_column_major = false, Epilogue epilogue = Epilogue::None)
        : TensorCoreGemm(out, b_column_major, epilogue, loom::BufferParam(in, 2, "A"),
                         loom::BufferParam(in, 2, "B"),
                         loom::BufferParam(loom::Float(32), 1, "bias"),
                         loom::BufferParam(out, 2, "residual")) {}

    /** The same over given inputs (a generator's): A and B of the input
     * type, bias float32 [N], residual of the output type [M, N]. */
    TensorCoreGemm(loom::Type out, bool b_column_major, Epilogue epilogue, loom::BufferParam a,
                   loom::BufferParam b, loom::BufferParam bias_in, loom::BufferParam residual_in)
        : in(a.type()),
          out(out),
          b_column_major(b_column_major),
          epilogue(epilogue),
          A(std::move(a)),
          B(std::move(b)),
          bias(std::move(bias_in)),
          residual(std::move(residual_in)),
          k(0, A.dim(1).extent(), "k") {
        using namespace loom;
        acc(i, j) = 0.0f;
        Expr b_at = b_column_major ? B(j, k) : B(k, j);
        acc(i, j) += cast<float>(A(i, k)) * cast<float>(b_at);
        Expr v = acc(i, j);
        if (epilogue == Epilogue::BiasGelu) v = gelu(v + bias(j));
        if (epilogue == Epilogue::BiasResidual) v = v + bias(j) + cast<float>(residual(i, j));
        C(i, j) = out == Float(32) ? v : cast(out, v);
    }

    void schedule_gpu(loom::Schedule &sch, const loom::schedules::GemmTileOptions &o =
                                               loom::schedules::GemmTileOptions()) const {
        loom::schedules::gemm_tensor_cores(sch, C, acc, i, j, o);
    }
};

}  // namespace gemm
