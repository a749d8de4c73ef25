// An elementwise chain over a float32 matrix, a few flops per element, the
// kind of epilogue PyTorch fuses with torch.compile:
// out(r, c) = clamp(silu(in(r, c)) * 1.5 + 0.25, -3, 3), silu(x) = x * sigmoid(x).
// The algorithm only; schedule_cpu and schedule_gpu are its schedules.
#pragma once

#include <loom/loom.h>

#include "../gpu_rows.h"
#include "elementwise_reference.h"

namespace elementwise {

struct SiluChain {
    loom::BufferParam input;  // [rows, cols]
    loom::Var r{"r"}, c{"c"};
    loom::Func out{"out"};

    explicit SiluChain(loom::BufferParam in = loom::BufferParam(loom::Float(32), 2, "input"))
        : input(std::move(in)) {
        using namespace loom;
        Expr x = input(r, c);
        out(r, c) = clamp(x / (1.0f + exp(-x)) * 1.5f + 0.25f, -3.0f, 3.0f);
    }

    /** Blocks of rows in parallel, vectorized along the rows. */
    void schedule_cpu(loom::Schedule &sch, int rows_per_task = 8, int vector = 16) const {
        using namespace loom;
        Var ro("ro"), ri("ri");
        sch[out].split(r, ro, ri, rows_per_task).parallel(ro).vectorize(c, vector);
    }
    /** Each thread writes `vector` consecutive floats of a row (16-byte
     * loads and stores for 4), `threads` to a block; blocks tile the rows. */
    void schedule_gpu(loom::Schedule &sch, int threads = loom_apps::elementwise_gpu_threads,
                      int vector = 4) const {
        loom_apps::schedule_elementwise_on_gpu(sch, out, r, c, threads, vector);
    }
    /** The promises of loom_apps::promise_aligned_rows: the GPU
     * schedule's vectors then move as aligned words, untested. */
    void promise_aligned_rows() const { loom_apps::promise_aligned_rows(input, out, {}); }
};

}  // namespace elementwise
