// Tile programs the tests build by hand (as the loop-to-tile translation is
// to build them): a warp's block of a GEMM, and a block of warps' GEMM tile
// with a multistage pipeline of asynchronous copies and an epilogue.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/IROperator.h"
#include "tile/TileIR.h"

namespace loom_test {

using namespace loom;
using namespace loom::internal;
using namespace loom::internal::tile;

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
    p.body.push_back(op_stmt(zeros));
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
    loop->body = {op_stmt(copy_a), op_stmt(copy_b),  op_stmt(commit),
                  op_stmt(wait),   op_stmt(barrier), op_stmt(a),
                  op_stmt(b),      op_stmt(dot),     op_stmt(barrier)};
    p.body.push_back({nullptr, loop});
    std::string result = "acc";
    if (epilogue.defined()) {
        TileOp map{
            TileOpKind::Map,
            "c",
            tile_type(epilogue.type(), {16, 8}, mma_m16n8k16_accumulator(), "mma_accumulator"),
            {"acc"}};
        map.fn = epilogue;
        p.body.push_back(op_stmt(map));
        result = "c";
    }
    TileOp store{TileOpKind::Store, "", {}, {result}};
    store.buffer = "C";
    store.origin = {bm * 16, bn * 8};
    store.bounds = {M, N};
    p.body.push_back(op_stmt(store));
    return p;
}

/** A block's GEMM tile, as gemm_program(GemmTiling) builds it. */
struct GemmTiling {
    Type in = Float(16);  // A and B: f16 or bf16
    Type out = Float(32);
    int bm = 64, bn = 64, bk = 32;  // the block's tile of C, and of K per step
    int warps_m = 2, warps_n = 2;
    int stages = 3;  // slots of the shared ring; stages - 1 tiles in flight
    /** B given as an N x K buffer (read with axes {1, 0}); staged in shared
     * memory row-major (copied element by element) or, when
     * b_shared_transposed, column by column (16-byte chunks along k, read
     * by ldmatrix without .trans). */
    bool b_transposed = false, b_shared_transposed = false;
    /** A given as a K x M buffer (axes {1, 0}), staged column by column
     * (chunks along m, read by ldmatrix .trans). */
    bool a_transposed = false;
    /** The epilogue loads a bias row bias(j) (a 1-D buffer broadcast down
     * the tile: axes {1}) and a residual R(i, j) of C's type. */
    bool bias = false, residual = false;
    /** C = epilogue(_0 = the f32 accumulator, then _1 = bias, then the
     * residual, if any); undefined: the accumulator cast to `out`. */
    Expr epilogue;
    /** Planted mistakes: no async_wait before the barrier; the conversions
     * read the slot after the one the step's tile is in. */
    bool plant_missing_wait = false, plant_wrong_slot = false;
};

/** C (M x N) = A (M x K) B (K x N) for a block of warps_m x warps_n warps
 * computing a bm x bn tile of C, K in steps of bk through a ring of
 * `stages` slots in swizzled shared memory: a prologue copies the first
 * stages - 1 tiles (one commit group each); each step waits until its
 * tile has landed (async_wait stages - 2), meets at a barrier (which also
 * tells everyone the slot read a step ago is free), reads its slot into
 * mma fragments, multiplies, then copies the tile stages - 1 steps ahead
 * into the freed slot and commits; past K the copies are all masked
 * (zeros) but still committed, so the count of groups stays right. Then
 * the epilogue's map, stored masked at C's edges. Scalars M, N, K (and
 * what the epilogue reads). */
inline TileProgram gemm_program(const GemmTiling &g) {
    TileProgram p;
    p.name = "gemm_block";
    p.num_warps = g.warps_m * g.warps_n;
    p.grid = {"bm", "bn"};
    const Type f32 = Float(32);
    auto var = [](const char *n) { return Variable::make(Int(32), n); };
    Expr M = var("M"), N = var("N"), K = var("K"), bm = var("bm"), bn = var("bn");
    Expr kt = var("kt"), pro = var("pro");
    const int S = g.stages;
    const TileType acc_type =
        tile_type(f32, {g.bm, g.bn}, mma_accumulator_layout(g.bm, g.bn, g.warps_m, g.warps_n),
                  "mma_accumulator");
    p.body.push_back(op_stmt({TileOpKind::Zeros, "acc", acc_type}));

    TileType a_shared =
        g.a_transposed
            ? tile_type(g.in, {g.bm, g.bk}, swizzled_shared_layout_transposed(g.bm, g.bk, 2),
                        "swizzled_transposed", MemorySpace::Shared)
            : tile_type(g.in, {g.bm, g.bk}, swizzled_shared_layout(g.bm, g.bk, 2), "swizzled",
                        MemorySpace::Shared);
    a_shared.slots = S;
    TileType b_shared =
        g.b_shared_transposed
            ? tile_type(g.in, {g.bk, g.bn}, swizzled_shared_layout_transposed(g.bk, g.bn, 2),
                        "swizzled_transposed", MemorySpace::Shared)
            : tile_type(g.in, {g.bk, g.bn}, swizzled_shared_layout(g.bk, g.bn, 2), "swizzled",
                        MemorySpace::Shared);
    b_shared.slots = S;
    // Step `step`'s tiles into `slot`.
    auto copies = [&](Expr step, Expr slot) {
        TileOp a{TileOpKind::AsyncCopy, "a_s", a_shared};
        a.buffer = "A";
        if (g.a_transposed) {
            a.origin = {step * g.bk, bm * g.bm};
            a.bounds = {K, M};
            a.axes = {1, 0};
        } else {
            a.origin = {bm * g.bm, step * g.bk};
            a.bounds = {M, K};
        }
        a.slot = slot;
        TileOp b{TileOpKind::AsyncCopy, "b_s", b_shared};
        b.buffer = "B";
        if (g.b_transposed) {
            b.origin = {bn * g.bn, step * g.bk};
            b.bounds = {N, K};
            b.axes = {1, 0};
        } else {
            b.origin = {step * g.bk, bn * g.bn};
            b.bounds = {K, N};
        }
        b.slot = slot;
        return std::vector<TileStmt>{op_stmt(a), op_stmt(b), op_stmt({TileOpKind::AsyncCommit})};
    };
    auto prologue = std::make_shared<TileLoop>();
    prologue->var = "pro";
    prologue->min = 0;
    prologue->extent = S - 1;
    prologue->body = copies(pro, pro);
    p.body.push_back({nullptr, prologue});

    auto loop = std::make_shared<TileLoop>();
    loop->var = "kt";
    loop->min = 0;
    loop->extent = (K + (g.bk - 1)) / g.bk;
    TileOp wait{TileOpKind::AsyncWait};
    wait.pending = S - 2;
    if (!g.plant_missing_wait) loop->body.push_back(op_stmt(wait));
    loop->body.push_back(op_stmt({TileOpKind::Barrier}));
    Expr read_slot = g.plant_wrong_slot ? (kt + 1) % S : kt % S;
    TileOp a{TileOpKind::ConvertLayout,
             "a",
             tile_type(g.in, {g.bm, g.bk}, mma_a_layout(g.bm, g.bk, g.warps_m, g.warps_n), "mma_a"),
             {"a_s"}};
    a.slot = read_slot;
    TileOp b{TileOpKind::ConvertLayout,
             "b",
             tile_type(g.in, {g.bk, g.bn}, mma_b_layout(g.bk, g.bn, g.warps_m, g.warps_n), "mma_b"),
             {"b_s"}};
    b.slot = read_slot;
    loop->body.push_back(op_stmt(a));
    loop->body.push_back(op_stmt(b));
    loop->body.push_back(op_stmt({TileOpKind::Dot, "acc", acc_type, {"a", "b", "acc"}}));
    for (TileStmt &s : copies(kt + (S - 1), (kt + (S - 1)) % S)) loop->body.push_back(s);
    p.body.push_back({nullptr, loop});

    std::vector<std::string> operands = {"acc"};
    if (g.bias) {
        TileOp load{TileOpKind::Load, "bias_row",
                    tile_type(f32, {g.bm, g.bn}, *acc_type.layout, "mma_accumulator")};
        load.buffer = "bias";
        load.origin = {bn * g.bn};
        load.bounds = {N};
        load.axes = {1};
        p.body.push_back(op_stmt(load));
        operands.push_back("bias_row");
    }
    if (g.residual) {
        TileOp load{TileOpKind::Load, "res",
                    tile_type(g.out, {g.bm, g.bn}, *acc_type.layout, "mma_accumulator")};
        load.buffer = "R";
        load.origin = {bm * g.bm, bn * g.bn};
        load.bounds = {M, N};
        p.body.push_back(op_stmt(load));
        operands.push_back("res");
    }
    TileOp map{TileOpKind::Map, "c",
               tile_type(g.out, {g.bm, g.bn}, *acc_type.layout, "mma_accumulator"), operands};
    map.fn = g.epilogue.defined() ? g.epilogue : cast(g.out, Variable::make(f32, "_0"));
    p.body.push_back(op_stmt(map));
    TileOp store{TileOpKind::Store, "", {}, {"c"}};
    store.buffer = "C";
    store.origin = {bm * g.bm, bn * g.bn};
    store.bounds = {M, N};
    p.body.push_back(op_stmt(store));
    return p;
}

}  // namespace loom_test
