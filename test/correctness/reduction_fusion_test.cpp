// rolling_update and split_k on chains of reductions, against the reference
// interpreter (which evaluates the plain, unfused algorithm) with fresh
// random inputs and sizes that are not multiples of any split factor.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_util.h"

using namespace loom;
using namespace loom_test;

namespace {

/** Softmax-weighted average of rows of v: the attention chain over given
 * scores x. */
struct WeightedAverage {
    BufferParam x{Float(32), 2, "x"}, v{Float(32), 2, "v"};
    Var i{"i"}, j{"j"}, d{"d"};
    RDom r;
    Func m{"m"}, p{"p"}, l{"l"}, o{"o"}, out{"out"};
    WeightedAverage() : r(0, x.dim(1).extent(), "r") {
        m(i) = maximum(x(i, r));
        p(i, j) = exp(x(i, j) - m(i));
        l(i) = sum(p(i, r));
        o(i, d) = sum(p(i, r) * v(r, d));
        out(i, d) = o(i, d) / l(i);
    }
    void set_inputs(int rows, int n, int dims, double scale = 4) {
        x.set(random_buffer<float>({rows, n}, -scale, scale));
        v.set(random_buffer<float>({n, dims}));
    }
    void check(const Schedule &sch, int rows, int dims, double tol = 2e-6) {
        Buffer<float> expected(interpret(out, {rows, dims}));
        Buffer<float> actual({rows, dims});
        Pipeline(out).compile(sch).realize({actual});
        EXPECT_TRUE(buffers_match(actual, expected, tol, tol));
    }
};

TEST(RollingUpdate, WeightedAverageOneStepPerPoint) {
    WeightedAverage a;
    a.set_inputs(5, 37, 6);
    Schedule sch;
    sch.rolling_update(a.o, a.r);
    sch[a.o].compute_root();
    a.check(sch, 5, 6);
}

TEST(RollingUpdate, WeightedAverageTiled) {
    for (int tile : {1, 4, 8, 64}) {
        WeightedAverage a;
        a.set_inputs(7, 53, 5);
        Schedule sch;
        RVar ro("ro"), ri("ri");
        sch.rolling_update(a.o, a.r).split(a.r, ro, ri, tile).vectorize(a.d, 4);
        sch[a.o].compute_root();
        SCOPED_TRACE("tile " + std::to_string(tile));
        a.check(sch, 7, 5);
    }
}

TEST(SplitK, WeightedAverage) {
    for (int k : {1, 2, 7, 16}) {
        WeightedAverage a;
        a.set_inputs(3, 45, 4);
        Schedule sch;
        Var c("c");
        sch.split_k(a.o, a.r, k, c).compute_root().parallel(c);
        sch[a.o].compute_root();
        SCOPED_TRACE("chunks " + std::to_string(k));
        a.check(sch, 3, 4);
    }
}

}  // namespace
