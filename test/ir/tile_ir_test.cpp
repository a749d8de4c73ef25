// The tile IR (src/tile/TileIR.h): a GEMM's block program, staged through
// shared memory with async copies, verified and printed with its layouts;
// the verifier's refusals.
#include <gtest/gtest.h>

#include "loom/Error.h"
#include "loom/IROperator.h"
#include "tile/TileIR.h"
#include "tile/TileInterpreter.h"
#include "tile_programs.h"

using namespace loom;
using namespace loom::internal;
using namespace loom::internal::tile;

namespace {

TileProgram gemm_program() {
    return loom_test::gemm_program(Float(16), cast(Float(16), Variable::make(Float(32), "_0")));
}

}  // namespace

TEST(TileIR, GemmProgramVerifiesAndPrintsItsLayouts) {
    TileProgram p = gemm_program();
    verify(p);
    const std::string text = to_string(p);
    EXPECT_EQ(text,
              "tile_program gemm(num_warps=1) grid(bm, bn):\n"
              "  %acc = zeros : float32[16x8] #mma_accumulator\n"
              "  for k in [0, 0 + ((K + 15) / 16)):\n"
              "    %a_s = async_copy A[(bm * 16), (k * 16)] masked past (M, K) : "
              "float16[16x16] shared #swizzled\n"
              "    %b_s = async_copy B[(k * 16), (bn * 8)] masked past (K, N) : "
              "float16[16x8] shared #swizzled\n"
              "    async_commit\n"
              "    async_wait 0\n"
              "    barrier\n"
              "    %a = convert_layout %a_s : float16[16x16] #mma_a\n"
              "    %b = convert_layout %b_s : float16[16x8] #mma_b\n"
              "    %acc = dot %a, %b, %acc : float32[16x8] #mma_accumulator\n"
              "    barrier\n"
              "  %c = map(float16(_0)) %acc : float16[16x8] #mma_accumulator\n"
              "  store C[(bm * 16), (bn * 8)] %c masked past (M, N)\n");
}

TEST(TileIR, VerifierRefusesMismatches) {
    {
        TileProgram p = gemm_program();
        // B's tile is 16 x 8; a dot that reads it as 8 x 8 does not fit A.
        TileLoop &loop = *p.body[1].loop;
        for (int i : {1, 6}) {  // B's copy and its conversion
            loop.body[i].op->type.shape = {8, 8};
            loop.body[i].op->type.layout = nullptr;
        }
        try {
            verify(p);
            ADD_FAILURE() << "a dot of 16x16 by 8x8 was accepted";
        } catch (const InternalError &e) {
            EXPECT_NE(std::string(e.what()).find("dot acc: dot of 16x16 by 8x8 into 16x8"),
                      std::string::npos)
                << e.what();
        }
    }
    {
        TileProgram p = gemm_program();
        p.body[2].op->operands = {"accumulator"};
        try {
            verify(p);
            ADD_FAILURE() << "an undefined operand was accepted";
        } catch (const InternalError &e) {
            EXPECT_NE(std::string(e.what()).find(
                          "tile value accumulator is used by map c before it is defined"),
                      std::string::npos)
                << e.what();
        }
    }
    {
        TileProgram p = gemm_program();
        // A layout of 16 x 16 elements on a 16 x 8 tile.
        p.body[0].op->type.layout = std::make_shared<const LinearLayout>(mma_m16n8k16_a());
        EXPECT_THROW(verify(p), InternalError);
    }
}

TEST(TileInterpreter, GemmProgramMatchesFloat64AtRaggedSizes) {
    const TileProgram p = gemm_program();  // f16 in, f16 out through the cast epilogue
    const int M = 23, N = 19, K = 37;
    std::vector<uint16_t> a(M * K), b(K * N), c(M * N, 0x7e00);  // c: NaNs where unwritten
    uint32_t seed = 12345;
    auto next = [&] {
        seed = seed * 1664525u + 1013904223u;
        return (int(seed >> 9) % 2001 - 1000) / 500.0f;
    };
    for (auto &x : a) x = float16_t(next()).bits;
    for (auto &x : b) x = float16_t(next()).bits;
    interpret_tile_program(p,
                           {{"A", Float(16), a.data(), K},
                            {"B", Float(16), b.data(), N},
                            {"C", Float(16), c.data(), N}},
                           {{"M", M}, {"N", N}, {"K", K}}, {(M + 15) / 16, (N + 7) / 8});
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double want = 0, scale = 0;
            for (int k = 0; k < K; k++) {
                const double t = double(float(float16_t::from_bits(a[i * K + k]))) *
                                 double(float(float16_t::from_bits(b[k * N + j])));
                want += t;
                scale += std::abs(t);
            }
            const double got = float(float16_t::from_bits(c[i * N + j]));
            EXPECT_LE(std::abs(got - want), 2e-3 * scale + 1e-6) << "C(" << i << ", " << j << ")";
        }
    }
}

TEST(TileInterpreter, ReduceAndBroadcastAlongRows) {
    // out = x - max over each row of x, for a 4 x 8 tile read at a ragged
    // edge (the last column masked: it reads as 0).
    TileProgram p;
    p.name = "center";
    TileType f32{Float(32), {4, 8}};
    TileType row{Float(32), {4}};
    auto v = [](const char *n) { return Variable::make(Int(32), n); };
    TileOp load{TileOpKind::Load, "x", f32};
    load.buffer = "X";
    load.origin = {Expr(0), Expr(0)};
    load.bounds = {Expr(4), v("cols")};
    TileOp mx{TileOpKind::Reduce, "m", row, {"x"}};
    mx.axis = 1;
    mx.reduction = "max";
    TileOp bc{TileOpKind::Broadcast, "mb", f32, {"m"}};
    bc.axis = 1;
    TileOp sub{TileOpKind::Map, "y", f32, {"x", "mb"}};
    sub.fn = Variable::make(Float(32), "_0") - Variable::make(Float(32), "_1");
    TileOp store{TileOpKind::Store, "", {}, {"y"}};
    store.buffer = "Y";
    store.origin = {Expr(0), Expr(0)};
    store.bounds = {Expr(4), Expr(8)};
    for (const TileOp &o : {load, mx, bc, sub, store}) p.body.push_back(loom_test::tile_op(o));
    std::vector<float> x(4 * 8), y(4 * 8);
    for (int i = 0; i < 32; i++) x[i] = float((i * 7) % 11) - 20.0f;  // all negative
    interpret_tile_program(p, {{"X", Float(32), x.data(), 8}, {"Y", Float(32), y.data(), 8}},
                           {{"cols", 7}}, {});
    for (int r = 0; r < 4; r++) {
        float m = 0;  // the masked column reads as 0, the largest
        for (int c = 0; c < 7; c++) m = std::max(m, x[r * 8 + c]);
        for (int c = 0; c < 8; c++) {
            EXPECT_EQ(y[r * 8 + c], (c < 7 ? x[r * 8 + c] : 0.0f) - m) << r << ", " << c;
        }
    }
}
