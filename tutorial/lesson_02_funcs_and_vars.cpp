// Lesson 2: Funcs that read inputs and other Funcs.
//
// Real pipelines read input buffers and chain Funcs together. Inputs are
// declared with BufferParam (element type and rank fixed, sizes known only
// when the pipeline runs) and Param<T> for scalars.
#include <cmath>
#include <cstdio>

#include <loom/loom.h>

using namespace loom;

int main() {
    // A 2-D float input and a scalar parameter.
    BufferParam input(Float(32), 2, "input");
    Param<float> gain("gain");

    Var y("y"), x("x");

    // A Func can call an input, and other Funcs, at any integer coordinates.
    // Here `brighter` scales the input, and `blur` averages three horizontal
    // neighbours of `brighter`.
    Func brighter("brighter"), blur("blur");
    brighter(y, x) = input(y, x) * gain;
    blur(y, x) = (brighter(y, x) + brighter(y, x + 1) + brighter(y, x + 2)) / 3.0f;

    // Bind values to the inputs. blur reads input at x .. x + 2, so for an
    // output 6 wide the input must be 8 wide: Loom checks this before it
    // touches memory and reports an error naming the buffer if not.
    Buffer<float> in({4, 8});
    in.fill([](const std::vector<int> &c) { return static_cast<float>(c[0] + c[1] * c[1]); });
    input.set(in);
    gain.set(2.0f);

    Buffer<float> out(blur.realize({4, 6}));
    for (int j = 0; j < 4; j++) {
        for (int i = 0; i < 6; i++) {
            float expected = 2.0f * (in(j, i) + in(j, i + 1) + in(j, i + 2)) / 3.0f;
            if (std::abs(out(j, i) - expected) > 1e-5f) {
                std::printf("blur(%d, %d) = %f, expected %f\n", j, i, out(j, i), expected);
                return 1;
            }
        }
    }

    // Funcs may produce several values at once: a Tuple.
    Func minmax("minmax");
    minmax(y, x) = Tuple(min(input(y, x), 10.0f), max(input(y, x), 10.0f));
    Buffer<float> lo({4, 8}), hi({4, 8});
    Pipeline(minmax).realize(std::vector<RawBuffer>{lo, hi});
    if (lo(3, 7) != std::min(in(3, 7), 10.0f) || hi(0, 0) != std::max(in(0, 0), 10.0f)) {
        std::printf("Tuple outputs are wrong\n");
        return 1;
    }

    std::printf("Lesson 2 passed.\n");
    return 0;
}
