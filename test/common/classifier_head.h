// A classifier head written as the plain algorithm: logits = X W, then a
// softmax along each row. Scheduled as one tile program, the rows' maxima
// and sums are reductions along the tile's columns, broadcast back over
// the tile (on a GPU: shuffles within the accumulator's layout).
#pragma once

#include <cmath>

#include "loom/loom.h"

namespace loom_test {

struct ClassifierHead {
    loom::BufferParam X, W;
    loom::Var i{"i"}, j{"j"}, io{"io"}, jo{"jo"};
    loom::RDom k, c;
    loom::Func logits{"logits"}, rmax{"rmax"}, e{"e"}, rsum{"rsum"}, prob{"prob"};

    /** `classes` is the width of W, a constant or a Param. */
    ClassifierHead(loom::Type in, loom::Expr classes)
        : X(in, 2, "X"), W(in, 2, "W"), k(0, X.dim(1).extent(), "k"), c(0, classes, "c") {
        using namespace loom;
        logits(i, j) = 0.0f;
        logits(i, j) += cast<float>(X(i, k)) * cast<float>(W(k, j));
        rmax(i) = Expr(-INFINITY);
        rmax(i) = max(rmax(i), logits(i, c));
        e(i, j) = exp(logits(i, j) - rmax(i));
        rsum(i) = 0.0f;
        rsum(i) += e(i, c);
        prob(i, j) = e(i, j) / rsum(i);
    }

    loom::Schedule schedule(int rows, int cols, int warps_m, int warps_n, bool tensorize) {
        loom::Schedule sch;
        sch[prob].tile_program(i, j, io, jo, rows, cols,
                               loom::TileOptions().warps(warps_m, warps_n).reduction_tile(16));
        for (loom::Func f : {logits, rmax, e, rsum}) sch[f].compute_at(prob, jo);
        if (tensorize) sch[logits].update().tensorize("mma.m16n8k16");
        return sch;
    }
};

}  // namespace loom_test
