// Tile programs the tests build by hand (as the loop-to-tile translation is
// to build them): a warp's block of a GEMM.
#pragma once

#include <memory>
#include <string>

#include "loom/IROperator.h"
#include "tile/TileIR.h"

namespace loom_test {

using namespace loom;
using namespace loom::internal;
using namespace loom::internal::tile;

inline TileStmt tile_op(TileOp o) { return {std::make_shared<TileOp>(std::move(o)), nullptr}; }

inline TileType tile_type(Type t, std::vector<int> shape, LinearLayout layout,
                          const std::string &name, MemorySpace space = MemorySpace::Registers) {
    TileType ty;
    ty.elem = t;
    ty.shape = std::move(shape);
    ty.space = space;
    ty.layout = std::make_shared<const LinearLayout>(std::move(layout));
    ty.layout_name = name;
    return ty;
}

/** One warp's 16 x 8 block of C = A B over K in tiles of 16 (A M x K, B
 * K x N, row-major, of `in` = f16 or bf16): A and B copied asynchronously
 * into swizzled shared memory, read into mma fragments, multiplied into an
 * f32 accumulator, then `epilogue` (a map of _0, the accumulator's
 * element, to C's type; undefined: C is the f32 accumulator itself)
 * stored, masked at the matrix's edges. */
inline TileProgram gemm_program(Type in = Float(16), Expr epilogue = Expr()) {
    TileProgram p;
    p.name = "gemm";
    p.num_warps = 1;
    p.grid = {"bm", "bn"};
    const Type f32 = Float(32);
    auto var = [](const char *n) { return Variable::make(Int(32), n); };
    Expr M = var("M"), N = var("N"), K = var("K"), bm = var("bm"), bn = var("bn"), k = var("k");
    TileOp zeros{TileOpKind::Zeros, "acc",
                 tile_type(f32, {16, 8}, mma_m16n8k16_accumulator(), "mma_accumulator")};
    p.body.push_back(tile_op(zeros));
    auto loop = std::make_shared<TileLoop>();
    loop->var = "k";
    loop->min = 0;
    loop->extent = (K + 15) / 16;
    TileOp copy_a{TileOpKind::AsyncCopy, "a_s",
                  tile_type(in, {16, 16}, swizzled_shared_layout(16, 16, 2), "swizzled",
                            MemorySpace::Shared)};
    copy_a.buffer = "A";
    copy_a.origin = {bm * 16, k * 16};
    copy_a.bounds = {M, K};
    TileOp copy_b{
        TileOpKind::AsyncCopy, "b_s",
        tile_type(in, {16, 8}, swizzled_shared_layout(16, 8, 2), "swizzled", MemorySpace::Shared)};
    copy_b.buffer = "B";
    copy_b.origin = {k * 16, bn * 8};
    copy_b.bounds = {K, N};
    TileOp commit{TileOpKind::AsyncCommit};
    TileOp wait{TileOpKind::AsyncWait};
    TileOp barrier{TileOpKind::Barrier};
    TileOp a{TileOpKind::ConvertLayout,
             "a",
             tile_type(in, {16, 16}, mma_m16n8k16_a(), "mma_a"),
             {"a_s"}};
    TileOp b{
        TileOpKind::ConvertLayout, "b", tile_type(in, {16, 8}, mma_m16n8k16_b(), "mma_b"), {"b_s"}};
    TileOp dot{TileOpKind::Dot, "acc", zeros.type, {"a", "b", "acc"}};
    // The barrier after the dot: the next step's copies overwrite the tiles.
    loop->body = {tile_op(copy_a), tile_op(copy_b),  tile_op(commit),
                  tile_op(wait),   tile_op(barrier), tile_op(a),
                  tile_op(b),      tile_op(dot),     tile_op(barrier)};
    p.body.push_back({nullptr, loop});
    std::string result = "acc";
    if (epilogue.defined()) {
        TileOp map{
            TileOpKind::Map,
            "c",
            tile_type(epilogue.type(), {16, 8}, mma_m16n8k16_accumulator(), "mma_accumulator"),
            {"acc"}};
        map.fn = epilogue;
        p.body.push_back(tile_op(map));
        result = "c";
    }
    TileOp store{TileOpKind::Store, "", {}, {result}};
    store.buffer = "C";
    store.origin = {bm * 16, bn * 8};
    store.bounds = {M, N};
    p.body.push_back(tile_op(store));
    return p;
}

}  // namespace loom_test
