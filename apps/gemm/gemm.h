// Dense float32 matrix product C = A * B, with the reduction over k written as
// an update definition. The algorithm only; see schedule_cpu for the schedule.
#pragma once

#include <loom/loom.h>

#include "gemm_reference.h"

namespace gemm {

struct Gemm {
    // A is [M, K], B is [K, N], C is [M, N]; the last index is contiguous.
    loom::BufferParam A, B;
    loom::Var i{"i"}, j{"j"};
    loom::RDom k;
    loom::Func prod{"prod"}, C{"C"};

    explicit Gemm(loom::BufferParam a = loom::BufferParam(loom::Float(32), 2, "A"),
                  loom::BufferParam b = loom::BufferParam(loom::Float(32), 2, "B"))
        : A(std::move(a)), B(std::move(b)), k(0, A.dim(1).extent(), "k") {
        prod(i, j) = 0.0f;
        prod(i, j) += A(i, k) * B(k, j);
        C(i, j) = prod(i, j);
    }

    /** A register-blocked CPU schedule. C is cut into tile_rows x tile_cols
     * tiles, distributed over the threads; each tile is cut into strips of
     * micro_rows rows, and the accumulator `prod` of one strip
     * (micro_rows x tile_cols floats) is computed at that strip, small enough
     * to live in vector registers: with 16-lane vectors, 8 x 32 gives 16 zmm
     * accumulators, plus 2 loads of B and a broadcast of A per k.
     *
     * C's splits shift the last tile inwards (recomputing a few points)
     * instead of guarding it, so that every strip of prod has the same
     * constant size, which is what lets its loops unroll into registers. The
     * cost: M >= tile_rows and N >= tile_cols (checked at run time). */
    void schedule_cpu(loom::Schedule &sch, int tile_rows = 32, int tile_cols = 32,
                      int micro_rows = 8, int vector = 16) const {
        using namespace loom;
        Var io("io"), jo("jo"), ii("ii"), ji("ji"), t("t"), iio("iio"), iii("iii"), jio("jio"),
            jii("jii");
        sch[C]
            .tile(i, j, io, jo, ii, ji, tile_rows, tile_cols, TailStrategy::ShiftInwards)
            .fuse(io, jo, t)
            .parallel(t)
            .split(ii, iio, iii, micro_rows, TailStrategy::ShiftInwards)
            .split(ji, jio, jii, vector, TailStrategy::ShiftInwards)
            .vectorize(jii)
            .unroll(jio)
            .unroll(iii);
        Var pjo("pjo"), pji("pji");
        sch[prod].compute_at(C, iio).split(j, pjo, pji, vector).vectorize(pji).unroll(i);
        RVar ko("ko"), ki("ki");
        sch[prod]
            .update(0)
            .reorder(k, i, j)
            .split(j, pjo, pji, vector)
            .vectorize(pji)
            .unroll(pjo)
            .unroll(i)
            .split(k, ko, ki, 2)
            .unroll(ki);
    }
    loom::Schedule cpu_schedule() const {
        loom::Schedule sch;
        schedule_cpu(sch);
        return sch;
    }
};

}  // namespace gemm
