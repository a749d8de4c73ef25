// Lesson 4: scheduling loops.
//
// The algorithm fixes WHAT each point is; a Schedule decides the loops that
// compute it. Schedules never change results (up to floating-point
// reassociation you ask for explicitly), so you can try many on one
// algorithm. Loops are always listed outermost first.
#include <cstdio>
#include <string>

#include <loom/loom.h>

using namespace loom;

static bool check(const Buffer<int32_t> &b) {
    for (int y = 0; y < b.extent(0); y++) {
        for (int x = 0; x < b.extent(1); x++) {
            if (b(y, x) != y * 100 + x) return false;
        }
    }
    return true;
}

int main() {
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = y * 100 + x;
    Pipeline pipe(f);

    // The default: a loop over y around a loop over x.
    std::printf("default:\n%s", pipe.print_loop_nest().c_str());

    // reorder: make x the outer loop.
    Schedule by_column;
    by_column[f].reorder(x, y);
    std::printf("reorder(x, y):\n%s", pipe.print_loop_nest(by_column).c_str());

    // split: one loop becomes two. x = xo * 4 + xi. When 4 does not divide
    // the extent, the default tail strategy guards the last iteration.
    Var xo("xo"), xi("xi");
    Schedule split;
    split[f].split(x, xo, xi, 4);
    std::printf("split(x, xo, xi, 4):\n%s", pipe.print_loop_nest(split).c_str());

    // fuse: two adjacent loops become one.
    Var yx("yx");
    Schedule fused;
    fused[f].fuse(y, x, yx);
    std::printf("fuse(y, x, yx):\n%s", pipe.print_loop_nest(fused).c_str());

    // tile: split both and order the loops yo, xo, yi, xi.
    Var yo("yo"), yi("yi");
    Schedule tiled;
    tiled[f].tile(y, x, yo, xo, yi, xi, 2, 3);
    std::printf("tile(y, x, ..., 2, 3):\n%s", pipe.print_loop_nest(tiled).c_str());

    // unroll: the loop body is repeated, the loop disappears.
    Schedule unrolled;
    unrolled[f].split(x, xo, xi, 2).unroll(xi);
    std::printf("unroll:\n%s", pipe.print_loop_nest(unrolled).c_str());

    // Every schedule computes the same values, including on sizes that the
    // split factors do not divide.
    for (const Schedule &s : {Schedule(), by_column, split, fused, tiled, unrolled}) {
        Buffer<int32_t> out(pipe.realize({5, 7}, s));
        if (!check(out)) {
            std::printf("a schedule changed the result\n");
            return 1;
        }
    }
    std::printf("Lesson 4 passed.\n");
    return 0;
}
