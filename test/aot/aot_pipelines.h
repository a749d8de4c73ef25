// The pipelines of the AOT tests, shared by the program that compiles them to
// static libraries at build time (aot_emit.cpp) and by the in-process tests
// of the compile_to_* methods (test/correctness/aot_files_test.cpp).
#pragma once

#include "loom/loom.h"

namespace loom_test {

/** A brightened two-stage blur: blurred = blur_y(blur_x(in)) * scale, tiled,
 * parallel and vectorized, so the AOT code uses the thread pool. */
struct AotBlur {
    loom::BufferParam in{loom::Float(32), 2, "in"};
    loom::Param<float> scale{"scale"};
    loom::Var y{"y"}, x{"x"}, yo{"yo"}, xo{"xo"}, yi{"yi"}, xi{"xi"};
    loom::Func blur_x{"blur_x"}, blurred{"blurred"};
    loom::Schedule schedule;
    AotBlur() {
        blur_x(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f;
        blurred(y, x) = (blur_x(y, x) + blur_x(y + 1, x) + blur_x(y + 2, x)) / 3.0f * scale;
        schedule[blurred].tile(y, x, yo, xo, yi, xi, 8, 16).parallel(yo).vectorize(xi, 8);
        schedule[blur_x].compute_at(blurred, xo).vectorize(x, 8);
    }
    loom::Pipeline pipeline() const { return loom::Pipeline(blurred); }
};

/** A float16 input, a float16 scalar and two outputs (a Tuple): the float32
 * double of q, and q + bias rounded to float16. */
struct AotHalf {
    loom::BufferParam q{loom::Float(16), 2, "q"};
    loom::Param<loom::float16_t> bias{"bias"};
    loom::Var y{"y"}, x{"x"};
    loom::Func f{"f"};
    loom::Schedule schedule;
    AotHalf() {
        loom::Expr v = loom::cast<float>(q(y, x));
        f(y, x) = loom::Tuple(v * 2.0f,
                              loom::cast<loom::float16_t>(v + loom::cast<float>(loom::Expr(bias))));
        schedule[f].vectorize(x, 8);
    }
    loom::Pipeline pipeline() const { return loom::Pipeline(f); }
};

/** A reduction over the inner dimension, with an int32 scalar:
 * row_sum(y) = sum_r a(y, r) + offset. */
struct AotReduce {
    loom::BufferParam a{loom::Float(32), 2, "a"};
    loom::Param<int32_t> offset{"offset"};
    loom::Var y{"y"};
    loom::RDom r{0, a.dim(1).extent(), "r"};
    loom::Func row_sum{"row_sum"};
    loom::Schedule schedule;
    AotReduce() { row_sum(y) = loom::sum(a(y, r)) + loom::cast<float>(loom::Expr(offset)); }
    loom::Pipeline pipeline() const { return loom::Pipeline(row_sum); }
};

/** out = in * gain + 1 on the GPU (8 x 32 thread blocks): its static
 * library embeds the kernel's cubin and PTX and launches it through the
 * driver, loaded at run time. */
struct AotGpuScale {
    loom::BufferParam in{loom::Float(32), 2, "in"};
    loom::Param<float> gain{"gain"};
    loom::Var y{"y"}, x{"x"}, yo{"yo"}, xo{"xo"}, yi{"yi"}, xi{"xi"};
    loom::Func out{"out"};
    loom::Schedule schedule;
    AotGpuScale() {
        out(y, x) = in(y, x) * gain + 1.0f;
        schedule[out].gpu_tile(y, x, yo, xo, yi, xi, 8, 32);
    }
    loom::Pipeline pipeline() const { return loom::Pipeline(out); }
};

}  // namespace loom_test
