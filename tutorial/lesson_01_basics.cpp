// Lesson 1: the basics.
//
// A Loom program has two parts. The *algorithm* says what is computed, as
// Funcs defined over integer Vars. The *schedule* says how: loop order,
// tiling, vector and parallel loops, where intermediate results live. This
// lesson only writes an algorithm and runs it with the default schedule.
#include <cstdio>

#include <loom/loom.h>

using namespace loom;

int main() {
    // A Var is a dimension of a Func's domain: an abstract integer index.
    Var y("y"), x("x");

    // A Func maps coordinates to values. This one defines, for every (y, x),
    // the value y * 10 + x. Nothing is computed yet: this only records the
    // definition. Index order is NumPy's: the LAST Var is the innermost one,
    // contiguous in memory and the innermost loop by default.
    Func gradient("gradient");
    gradient(y, x) = y * 10 + x;

    // realize() compiles the Func for this machine (through LLVM) and
    // evaluates it over [0, 3) x [0, 4), returning a Buffer.
    Buffer<int32_t> result(gradient.realize({3, 4}));

    // Check every value against what the definition says.
    for (int j = 0; j < 3; j++) {
        for (int i = 0; i < 4; i++) {
            if (result(j, i) != j * 10 + i) {
                std::printf("gradient(%d, %d) = %d, expected %d\n", j, i, result(j, i), j * 10 + i);
                return 1;
            }
        }
    }

    // Exprs carry types. Integer literals are int32, float literals float32
    // (when mixed with float32 values). Mixing an int with a float converts
    // the int; integer division rounds toward negative infinity.
    Func halves("halves");
    halves(x) = cast<float>(x) / 2.0f + (x - 5) / 2;  // (x - 5) / 2 is floor division
    Buffer<float> h(halves.realize({4}));
    // x = 0: 0/2 + floor(-5/2) = 0 + (-3) = -3.
    if (h(0) != -3.0f) {
        std::printf("halves(0) = %f, expected -3\n", h(0));
        return 1;
    }

    std::printf("Lesson 1 passed.\n");
    return 0;
}
