// A schedule template for matrix products written as the plain algorithm
//
//   acc(i, j) = 0;  acc(i, j) += float(A(i, k)) * float(B(k, j))
//   out(i, j) = any elementwise function of acc(i, j) and of inputs at (i, j)
//
// on tensor cores: out becomes a block-level tile program (docs/tile.md),
// one block per rows x cols tile, acc its accumulator, tensorized; the
// epilogue (out's definition) runs on the accumulator's registers before
// the store. out may also be the reduction itself (no epilogue).
#pragma once

#include <loom/loom.h>

#include <string>

namespace loom {
namespace schedules {

struct GemmTileOptions {
    int rows = 128, cols = 128;  // the block tile of out
    int warps_m = 2, warps_n = 2;
    int k_tile = 32;
    int stages = 3;
    std::string instruction = "mma.m16n8k16";
};

/** Schedules out (and acc, its accumulator, which may be out itself) as a
 * tensor-core tile program over out's Vars i (rows) and j (columns). */
inline void gemm_tensor_cores(Schedule &sch, const Func &out, const Func &acc, const Var &i,
                              const Var &j, const GemmTileOptions &o = GemmTileOptions()) {
    const Var io(i.name() + "_tiles"), jo(j.name() + "_tiles");
    sch[out].tile_program(i, j, io, jo, o.rows, o.cols,
                          TileOptions()
                              .warps(o.warps_m, o.warps_n)
                              .reduction_tile(o.k_tile)
                              .pipeline_stages(o.stages));
    if (acc.name() != out.name()) sch[acc].compute_at(out, jo);
    sch[acc].update().tensorize(o.instruction);
}

}  // namespace schedules
}  // namespace loom
