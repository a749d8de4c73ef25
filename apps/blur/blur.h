// Two-stage 3x3 box blur, separable: a horizontal pass then a vertical pass,
// float32. The algorithm only; the schedule is a separate function so that the
// same definition serves the JIT tests, the generator and the benchmark.
#pragma once

#include <loom/loom.h>

#include "blur_reference.h"

namespace blur {

struct Blur {
    // input is [rows + 2, cols + 2]; the output is [rows, cols].
    loom::BufferParam input;
    loom::Var y{"y"}, x{"x"};
    loom::Func blur_x{"blur_x"}, blur_y{"blur_y"};

    explicit Blur(loom::BufferParam in = loom::BufferParam(loom::Float(32), 2, "input"))
        : input(std::move(in)) {
        blur_x(y, x) = (input(y, x) + input(y, x + 1) + input(y, x + 2)) / 3.0f;
        blur_y(y, x) = (blur_x(y, x) + blur_x(y + 1, x) + blur_x(y + 2, x)) / 3.0f;
    }

    /** The classic CPU schedule: tiles of rows x cols of the output in
     * parallel over row strips; blur_x is computed per tile (rows + 2 rows of
     * it), so both passes run out of L1/L2 and blur_x never reaches memory. */
    void schedule_cpu(loom::Schedule &sch, int rows = 32, int cols = 256, int vector = 16) const {
        using namespace loom;
        Var yo("yo"), xo("xo"), yi("yi"), xi("xi");
        sch[blur_y].tile(y, x, yo, xo, yi, xi, rows, cols).parallel(yo).vectorize(xi, vector);
        sch[blur_x].compute_at(blur_y, xo).vectorize(x, vector);
    }
    loom::Schedule cpu_schedule() const {
        loom::Schedule sch;
        schedule_cpu(sch);
        return sch;
    }
};

}  // namespace blur
