// Pipelines shared by the GPU tests (CUDA code generation and GPU schedule
// errors).
#pragma once

#include <loom/loom.h>

namespace loom_test {

/** A 3 x 3 box blur in two stages, over a 2-D input. */
struct Blur {
    loom::BufferParam in{loom::Float(32), 2, "in"};
    loom::Var x{"x"}, y{"y"}, xo{"xo"}, yo{"yo"}, xi{"xi"}, yi{"yi"};
    loom::Func blur_x{"blur_x"}, blur_y{"blur_y"};
    Blur() {
        blur_x(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f;
        blur_y(y, x) = (blur_x(y, x) + blur_x(y + 1, x) + blur_x(y + 2, x)) / 3.0f;
    }
    /** blur_y's CUDA C++ for sm_90. */
    std::string cuda(const loom::Schedule &sch) const {
        return loom::Pipeline(blur_y).compile_to_cuda(sch, loom::Target("host-cuda-sm_90"));
    }
};

}  // namespace loom_test
