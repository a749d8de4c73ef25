// vectorize on the RVar of updates that keep a point (argmax, argmin and
// their relatives, VectorizePointReductions), in random forms under random
// schedules, compared element for element with the reference interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"

using namespace loom;
using loom_test::buffers_match;
using loom_test::random_buffer;
using loom_test::rng;

namespace {

int below(int n) { return static_cast<int>(rng()() % static_cast<unsigned>(n)); }

/** A random update that keeps a point of each row `y` over `r`: a key kept
 * at its extreme (a select, or max/min) and 1 to 3 payloads taken under
 * the same test, in a random order of the Tuple's elements. */
struct RandomPointUpdate {
    BufferParam in, other{Float(32), 2, "other"};
    Var y{"y"};
    RDom r;
    Func f{"f"};
    std::string text;
    int key_element = 0, elements = 0;

    RandomPointUpdate()
        : in(below(2) ? Float(32) : Int(32), 2, "in"), r(0, in.dim(1).extent(), "r") {
        const bool is_max = below(2), strict = below(2), extreme_form = below(3) == 0;
        const int payloads = 1 + below(3);
        elements = payloads + 1;
        key_element = below(elements);
        const Type t = in.type();
        Expr v = in(y, r);
        // The payloads: the point's index, a value read there, an
        // expression of both.
        std::vector<Expr> carried = {Expr(r), other(y, r), Expr(r) * 2 + y};
        Expr start = is_max ? type_min(t) : type_max(t);
        std::vector<Expr> pure;
        for (int e = 0, p = 0; e < elements; e++) {
            if (e == key_element) {
                pure.push_back(start);
            } else {
                pure.push_back(cast(carried[p++].type(), 0));
            }
        }
        f(y) = Tuple(pure);
        Expr old = f(y)[key_element];
        Expr takes = is_max ? (strict ? v > old : v >= old) : (strict ? v < old : v <= old);
        std::vector<Expr> values;
        for (int e = 0, p = 0; e < elements; e++) {
            if (e == key_element) {
                values.push_back(extreme_form ? (is_max ? max(old, v) : min(old, v))
                                              : select(takes, v, old));
            } else {
                values.push_back(select(takes, carried[p++], f(y)[e]));
            }
        }
        f(y) = Tuple(values);
        text = type_to_string(t) + (is_max ? " max" : " min") + (strict ? " strict" : "") +
               (extreme_form ? ", max/min key" : ", select key") + ", key element " +
               std::to_string(key_element) + " of " + std::to_string(elements);
    }
};

}  // namespace

TEST(VectorizePointReductions, RandomUpdatesAndSchedules) {
    for (int trial = 0; trial < 40; trial++) {
        RandomPointUpdate u;
        const int lanes = 2 << below(4);  // 2 to 16
        const int rows = 1 + below(20), cols = 1 + below(70);
        Schedule s;
        RVar ro("ro"), ri("ri");
        Var yo("yo"), yi("yi");
        Stage update = s[u.f].update();
        std::string how;
        switch (below(3)) {
        case 0:
            update.parallel(u.y);
            how = "rows in parallel";
            break;
        case 1:
            update.split(u.y, yo, yi, 1 + below(6)).parallel(yo);
            how = "blocks of rows in parallel";
            break;
        default: how = "serial rows"; break;
        }
        if (below(2)) {
            update.vectorize(u.r, lanes);
            how += ", vectorize(r, " + std::to_string(lanes) + ")";
        } else {
            // The vectorized part inside a split of its own.
            update.split(u.r, ro, ri, lanes * (1 + below(3))).vectorize(ri, lanes);
            how += ", split r, vectorize the inner part by " + std::to_string(lanes);
        }
        const std::string what =
            u.text + "; " + how + "; " + std::to_string(rows) + " x " + std::to_string(cols);
        SCOPED_TRACE(what);
        // Few distinct values, so rows tie often; some NaNs, never taken.
        if (u.in.type().is_float()) {
            Buffer<float> x = random_buffer<float>({rows, cols}, -3, 3);
            for (int i = 0; i < rows; i++) {
                for (int j = 0; j < cols; j++) {
                    x(i, j) = below(9) == 0 ? NAN : std::floor(x(i, j));
                }
            }
            u.in.set(x);
        } else {
            u.in.set(random_buffer<int32_t>({rows, cols}, -3, 3));
        }
        u.other.set(random_buffer<float>({rows, cols}));
        std::vector<RawBuffer> expected = interpret_tuple(u.f, {rows});
        std::vector<RawBuffer> actual;
        for (const RawBuffer &e : expected) actual.push_back(RawBuffer(e.type(), e.shape()));
        CompiledPipeline compiled = Pipeline(u.f).compile(s);
        EXPECT_NE(compiled.lowered_stmt().find("lane_key"), std::string::npos);
        compiled.realize(actual);
        for (size_t k = 0; k < actual.size(); k++) {
            EXPECT_TRUE(buffers_match(actual[k], expected[k])) << "element " << k;
        }
    }
}
