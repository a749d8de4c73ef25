// FlashAttention as a tile program, built by hand as the translation of
// a rolled attention chain is to build it: per block a tile of queries
// (Q read once into mma A fragments), one pass over the keys in tiles
// (K and V through shared memory by cp.async), S = Q K^T on tensor cores,
// the running row maximum and sum reduced inside the accumulator's layout,
// P = exp(S - m) cast to f16 in registers and used, through a register
// renaming, as the A operand of P V; O and l repaired once per tile. Run
// on the stand-in in both thread orders against float64 and the
// interpreter (global and causal, f16 and bf16, head dims 64 and 128,
// ragged lengths, fully masked rows), and compiled by NVRTC, whose SASS
// multiplies on tensor cores in the key loop without spilling and with
// one exponential per score.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codegen/NVRTC.h"
#include "loom/loom.h"
#include "sass.h"
#include "tile/Layout.h"
#include "tile/TileIR.h"
#include "tile_programs.h"
#include "tile_runner.h"

namespace {

using namespace loom;
using namespace loom::internal;
using namespace loom::internal::tile;
using namespace loom_test;

struct AttentionTiling {
    Type in = Float(16);
    int queries = 64, keys = 64, head_dim = 64, warps = 4;
    bool causal = false;
};

/** Out[bh, i, :] = softmax(scale Q[bh, i, :] K[bh, :, :]^T (+ mask)) V[bh],
 * a block per `queries` rows of one head (grid qt, bh); a row with no key
 * left by the mask gives 0. Causal: key j sees query i when j <= i + Lk -
 * Lq (the queries are the last Lq positions). */
TileProgram attention_program(const AttentionTiling &t) {
    TileProgram p;
    p.name = "attention";
    p.num_warps = t.warps;
    p.grid = {"qt", "bh"};
    const int BM = t.queries, BK = t.keys, D = t.head_dim, W = t.warps;
    const Type f32 = Float(32);
    auto var = [](const char *n) { return Variable::make(Int(32), n); };
    const Expr Lq = var("Lq"), Lk = var("Lk"), qt = var("qt"), bh = var("bh"), kt = var("kt");
    const Expr scale = Variable::make(f32, "scale");
    const Expr _0 = Variable::make(f32, "_0"), _1 = Variable::make(f32, "_1"),
               _2 = Variable::make(f32, "_2");
    const Expr inf = make_const(f32, std::numeric_limits<double>::infinity());
    const LinearLayout o_acc = mma_accumulator_layout(BM, D, W, 1),
                       s_acc = mma_accumulator_layout(BM, BK, W, 1), rows = slice_layout(s_acc, 1);
    auto reg = [&](Type e, std::vector<int> shape, const LinearLayout &l, const char *name) {
        return tile_type(e, std::move(shape), l, name);
    };
    auto add = [](std::vector<TileStmt> *body, TileOp o) {
        body->push_back(op_stmt(std::move(o)));
    };
    auto map = [&](std::vector<TileStmt> *body, const std::string &r, TileType type,
                   std::vector<std::string> ops, Expr fn) {
        TileOp o = make_op(TileOpKind::Map, r, std::move(type), std::move(ops));
        o.fn = std::move(fn);
        add(body, o);
    };
    auto copy = [&](std::vector<TileStmt> *body, const std::string &r, const std::string &buffer,
                    int rows_, int cols_, const LinearLayout &l, Expr seq, Expr first,
                    std::vector<int> axes) {
        TileOp o = make_op(TileOpKind::AsyncCopy, r,
                           tile_type(t.in, {rows_, cols_}, l, "swizzled", MemorySpace::Shared));
        o.buffer = buffer;
        o.origin = {bh, first, 0};
        o.bounds = {bh + 1, seq, D};
        o.axes = std::move(axes);
        add(body, o);
    };
    std::vector<TileStmt> *body = &p.body;
    // Q, once: into shared memory, then into A fragments.
    copy(body, "q_s", "Q", BM, D, swizzled_shared_layout(BM, D, 2), Lq, qt * BM, {-1, 0, 1});
    add(body, make_op(TileOpKind::AsyncCommit));
    TileOp wait = make_op(TileOpKind::AsyncWait);
    add(body, wait);
    add(body, make_op(TileOpKind::Barrier));
    add(body, make_op(TileOpKind::ConvertLayout, "q",
                      reg(t.in, {BM, D}, mma_a_layout(BM, D, W, 1), "mma_a"), {"q_s"}));
    // The running state: O, the row maximum m and sum l.
    add(body, make_op(TileOpKind::Zeros, "o", reg(f32, {BM, D}, o_acc, "mma_accumulator")));
    add(body, make_op(TileOpKind::Zeros, "l", reg(f32, {BM}, rows, "slice")));
    map(body, "m", reg(f32, {BM}, rows, "slice"), {"l"}, -inf);
    auto loop = std::make_shared<TileLoop>();
    loop->var = "kt";
    loop->min = 0;
    loop->extent = (Lk + (BK - 1)) / BK;
    body->push_back({nullptr, loop});
    body = &loop->body;
    // K as the B operand of S = Q K^T (D x BK, each key's row contiguous:
    // the transposed swizzle), V as the B operand of P V (BK x D).
    copy(body, "k_s", "K", D, BK, swizzled_shared_layout_transposed(D, BK, 2), Lk, kt * BK,
         {-1, 1, 0});
    copy(body, "v_s", "V", BK, D, swizzled_shared_layout(BK, D, 2), Lk, kt * BK, {-1, 0, 1});
    add(body, make_op(TileOpKind::AsyncCommit));
    add(body, wait);
    add(body, make_op(TileOpKind::Barrier));
    add(body, make_op(TileOpKind::ConvertLayout, "kb",
                      reg(t.in, {D, BK}, mma_b_layout(D, BK, W, 1), "mma_b"), {"k_s"}));
    add(body, make_op(TileOpKind::Zeros, "s0", reg(f32, {BM, BK}, s_acc, "mma_accumulator")));
    add(body, make_op(TileOpKind::Dot, "s", reg(f32, {BM, BK}, s_acc, "mma_accumulator"),
                      {"q", "kb", "s0"}));
    body->back().op->instruction = "mma.m16n8k16";
    // The mask: keys past Lk, and for causal ones past the query's
    // position.
    const Expr key = kt * BK + tile_coordinate(1), query = qt * BM + tile_coordinate(0);
    Expr allowed = key < Lk;
    if (t.causal) allowed = allowed && key <= query + (Lk - Lq);
    map(body, "sm", reg(f32, {BM, BK}, s_acc, "mma_accumulator"), {"s"},
        select(allowed, _0 * scale, -inf));
    TileOp mt = make_op(TileOpKind::Reduce, "mt", reg(f32, {BM}, rows, "slice"), {"sm"});
    mt.axis = 1;
    mt.reduction = "max";
    mt.bounds = {Lk - kt * BK};
    add(body, mt);
    map(body, "mn", reg(f32, {BM}, rows, "slice"), {"m", "mt"}, max(_0, _1));
    TileOp mb =
        make_op(TileOpKind::Broadcast, "mb", reg(f32, {BM, BK}, s_acc, "mma_accumulator"), {"mn"});
    mb.axis = 1;
    add(body, mb);
    // Nothing seen yet in a row (its maximum still -inf): no probability.
    map(body, "pr", reg(f32, {BM, BK}, s_acc, "mma_accumulator"), {"sm", "mb"},
        select(_1 == -inf, 0.0f, exp(_0 - _1)));
    TileOp ps = make_op(TileOpKind::Reduce, "ps", reg(f32, {BM}, rows, "slice"), {"pr"});
    ps.axis = 1;
    ps.reduction = "sum";
    add(body, ps);
    // The repair of l and O for the maximum's move.
    map(body, "alpha", reg(f32, {BM}, rows, "slice"), {"m", "mn"},
        select(_0 == _1, 1.0f, exp(_0 - _1)));
    map(body, "l", reg(f32, {BM}, rows, "slice"), {"l", "alpha", "ps"}, _0 * _1 + _2);
    TileOp ab = make_op(TileOpKind::Broadcast, "ab", reg(f32, {BM, D}, o_acc, "mma_accumulator"),
                        {"alpha"});
    ab.axis = 1;
    add(body, ab);
    map(body, "o", reg(f32, {BM, D}, o_acc, "mma_accumulator"), {"o", "ab"}, _0 * _1);
    // P in the input's type, in place as the A operand of P V.
    map(body, "ph", reg(t.in, {BM, BK}, s_acc, "mma_accumulator"), {"pr"}, cast(t.in, _0));
    add(body, make_op(TileOpKind::ConvertLayout, "pa",
                      reg(t.in, {BM, BK}, mma_a_layout(BM, BK, W, 1), "mma_a"), {"ph"}));
    add(body, make_op(TileOpKind::ConvertLayout, "vb",
                      reg(t.in, {BK, D}, mma_b_layout(BK, D, W, 1), "mma_b"), {"v_s"}));
    add(body, make_op(TileOpKind::Dot, "o", reg(f32, {BM, D}, o_acc, "mma_accumulator"),
                      {"pa", "vb", "o"}));
    body->back().op->instruction = "mma.m16n8k16";
    map(body, "m", reg(f32, {BM}, rows, "slice"), {"mn"}, _0);
    // The next step's copies overwrite the tiles.
    add(body, make_op(TileOpKind::Barrier));
    body = &p.body;
    TileOp lb =
        make_op(TileOpKind::Broadcast, "lb", reg(f32, {BM, D}, o_acc, "mma_accumulator"), {"l"});
    lb.axis = 1;
    add(body, lb);
    map(body, "out", reg(t.in, {BM, D}, o_acc, "mma_accumulator"), {"o", "lb"},
        cast(t.in, select(_1 > 0.0f, _0 / _1, 0.0f)));
    TileOp store = make_op(TileOpKind::Store, "", TileType(), {"out"});
    store.buffer = "Out";
    store.origin = {bh, qt * BM, 0};
    store.bounds = {bh + 1, Lq, D};
    store.axes = {-1, 0, 1};
    add(body, store);
    return p;
}

struct AttentionCase {
    AttentionTiling tiling;
    int heads, Lq, Lk;
};

std::string name_of(const AttentionCase &c) {
    const AttentionTiling &t = c.tiling;
    return std::string(t.in == BFloat(16) ? "bf16" : "f16") + (t.causal ? "_causal" : "_global") +
           "_d" + std::to_string(t.head_dim) + "_" + std::to_string(t.queries) + "x" +
           std::to_string(t.keys) + "_w" + std::to_string(t.warps) + "_q" + std::to_string(c.Lq) +
           "_k" + std::to_string(c.Lk);
}

class TileAttentionOnCpu : public ::testing::TestWithParam<AttentionCase>,
                           public TileProgramRunner {
  protected:
    void SetUp() override { start_session(); }
    void TearDown() override { end_session(); }
};

/** Out in float64 from the same (rounded) inputs. */
std::vector<double> reference(const AttentionCase &c, const HostTileBuffer &q,
                              const HostTileBuffer &k, const HostTileBuffer &v, float scale) {
    const int D = c.tiling.head_dim;
    std::vector<double> out(size_t(c.heads) * c.Lq * D, 0);
    for (int h = 0; h < c.heads; h++) {
        for (int i = 0; i < c.Lq; i++) {
            std::vector<double> s(c.Lk, -INFINITY);
            double mx = -INFINITY;
            for (int j = 0; j < c.Lk; j++) {
                if (c.tiling.causal && j > i + c.Lk - c.Lq) continue;
                double dot = 0;
                for (int d = 0; d < D; d++) {
                    dot += double(q.get((int64_t(h) * c.Lq + i) * D + d)) *
                           double(k.get((int64_t(h) * c.Lk + j) * D + d));
                }
                s[j] = dot * scale;
                mx = std::max(mx, s[j]);
            }
            if (mx == -INFINITY) continue;  // no key: 0
            double l = 0;
            for (int j = 0; j < c.Lk; j++) l += std::exp(s[j] - mx);
            for (int d = 0; d < D; d++) {
                double o = 0;
                for (int j = 0; j < c.Lk; j++) {
                    o += std::exp(s[j] - mx) * double(v.get((int64_t(h) * c.Lk + j) * D + d));
                }
                out[(size_t(h) * c.Lq + i) * D + d] = o / l;
            }
        }
    }
    return out;
}

}  // namespace

TEST_P(TileAttentionOnCpu, MatchesFloat64AndTheInterpreterInBothThreadOrders) {
    const AttentionCase c = GetParam();
    const AttentionTiling &t = c.tiling;
    const TileProgram p = attention_program(t);
    std::mt19937 rng(c.Lq * 7 + c.Lk);
    const int D = t.head_dim;
    std::vector<HostTileBuffer> buffers = {{"Q", t.in, {c.heads, c.Lq, D}, false, &rng, -2, 2},
                                           {"K", t.in, {c.heads, c.Lk, D}, false, &rng, -2, 2},
                                           {"V", t.in, {c.heads, c.Lk, D}, false, &rng, -1, 1},
                                           {"Out", t.in, {c.heads, c.Lq, D}, true, &rng}};
    const float scale = 1.0f / std::sqrt(float(D));
    const TileScalars scalars{{{"Lq", c.Lq}, {"Lk", c.Lk}}, {{"scale", scale}}};
    const std::vector<int> grid = {(c.Lq + t.queries - 1) / t.queries, c.heads};
    // Against the interpreter: the stand-in's exp and sums' order differ;
    // each rounds once to the input's type at the end.
    const double step = t.in == BFloat(16) ? 1.0 / 128 : 1.0 / 1024;
    expect_matches_interpreter(p, buffers, scalars, grid, 2 * step);
    // Against float64: P rounded to the input's type before P V adds a
    // relative error of a step per term, at most, on weights that sum to 1.
    const std::vector<double> want = reference(c, buffers[0], buffers[1], buffers[2], scale);
    for (bool reversed : {false, true}) {
        const ThreadOrder order(reversed);
        const std::vector<HostTileBuffer> got = run(p, buffers, scalars, grid);
        ASSERT_FALSE(got.empty());
        int bad = 0;
        for (size_t n = 0; n < want.size() && bad < 5; n++) {
            const double have = got[3].get(int64_t(n));
            if (!(std::fabs(have - want[n]) <= 3 * step)) {
                ADD_FAILURE() << "Out[" << n << "] = " << have << ", float64 " << want[n]
                              << (reversed ? " (threads highest first)" : "");
                bad++;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    All, TileAttentionOnCpu,
    ::testing::Values(AttentionCase{{Float(16), 64, 64, 64, 4, false}, 2, 77, 150},
                      AttentionCase{{Float(16), 64, 64, 64, 4, true}, 2, 100, 100},
                      AttentionCase{{BFloat(16), 64, 64, 64, 4, true}, 1, 37, 90},
                      AttentionCase{{Float(16), 64, 32, 128, 4, false}, 1, 50, 70},
                      AttentionCase{{BFloat(16), 32, 64, 128, 2, true}, 1, 45, 45},
                      // More queries than keys under a causal mask: the
                      // first rows see no key and give 0.
                      AttentionCase{{Float(16), 16, 16, 64, 1, true}, 1, 40, 21}),
    [](const ::testing::TestParamInfo<AttentionCase> &i) { return name_of(i.param); });

// The key loop in machine code, head dims 64 and 128, f16 and bf16: the
// two products on tensor cores (HMMA), K and V through cp.async (LDGSTS)
// and ldmatrix (LDSM), the row reductions by shuffles, no local memory
// (ptxas: no spills), and one exponential (MUFU.EX2) per score the thread
// holds plus one per row for the repair: P is not recomputed.
TEST(TileAttentionThroughNvrtc, KeyLoopMultipliesOnTensorCoresWithOneExpPerScore) {
    std::string why;
    if (!internal::nvrtc_available(&why)) GTEST_SKIP() << why;
    const std::string nvdisasm = find_nvdisasm();
    for (const AttentionTiling &t : {AttentionTiling{Float(16), 64, 64, 64, 4, true},
                                     AttentionTiling{BFloat(16), 64, 64, 64, 4, false},
                                     AttentionTiling{Float(16), 64, 64, 128, 4, false},
                                     AttentionTiling{BFloat(16), 128, 64, 128, 8, true}}) {
        const std::string name = std::string(t.in == BFloat(16) ? "bf16" : "f16") + "_d" +
                                 std::to_string(t.head_dim) + "_" + std::to_string(t.queries) +
                                 (t.causal ? "_causal" : "_global");
        SCOPED_TRACE(name);
        const TileProgram p = attention_program(t);
        const std::string source = tile_module_source(
            {tile_program_to_cuda(
                 p, {{"Q", t.in, 3}, {"K", t.in, 3}, {"V", t.in, 3}, {"Out", t.in, 3, true}})
                 .source});
        for (const char *arch : {"sm_80", "sm_90a"}) {
            SCOPED_TRACE(arch);
            const internal::CudaBinary bin =
                internal::compile_cuda(source, "attention", arch, {"--ptxas-options=-v"});
            EXPECT_NE(
                bin.log.find("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
                std::string::npos)
                << bin.log;
            if (nvdisasm.empty()) continue;
            const std::string sass = sass_of(bin.cubin, nvdisasm);
            EXPECT_EQ(sass.find("LDL"), std::string::npos) << "local memory";
            // The key loop: the longest loop with tensor-core instructions.
            std::vector<std::string> key_loop;
            for (const std::vector<std::string> &loop : sass_loops(sass)) {
                const bool mma = std::any_of(loop.begin(), loop.end(), [](const std::string &op) {
                    return op.compare(0, 4, "HMMA") == 0;
                });
                if (mma && loop.size() > key_loop.size()) key_loop = loop;
            }
            std::map<std::string, int> ops;
            for (const std::string &op : key_loop) {
                ops[op.substr(0, op.find('.'))]++;
                if (op.compare(0, 8, "MUFU.EX2") == 0) ops["EX2"]++;
                if (op.compare(0, 9, "SHFL.BFLY") == 0) ops["BFLY"]++;
            }
            const int threads = 32 * t.warps, scores = t.queries * t.keys / threads,
                      rows = t.queries / t.warps / 8;  // rows per thread: g and g + 8 per 16
            // Per key tile each warp multiplies its rows by the keys (head
            // dim / 16 k steps) and P by V (keys / 16 k steps).
            const int hmma = (t.queries / t.warps / 16) *
                             ((t.keys / 8) * (t.head_dim / 16) + (t.head_dim / 8) * (t.keys / 16));
            std::printf(
                "[key loop] %s %s: %zu instructions, %d HMMA, %d LDSM, %d LDGSTS, %d "
                "MUFU.EX2, %d SHFL.BFLY\n",
                name.c_str(), arch, key_loop.size(), ops["HMMA"], ops["LDSM"], ops["LDGSTS"],
                ops["EX2"], ops["BFLY"]);
            EXPECT_EQ(ops["HMMA"], hmma);
            EXPECT_GT(ops["LDSM"], 0);
            EXPECT_GT(ops["LDGSTS"], 0);
            EXPECT_EQ(ops["EX2"], scores + rows);
            // The maximum's and the sum's quads: two shuffles per row each.
            EXPECT_EQ(ops["BFLY"], 2 * 2 * rows);
        }
    }
}
