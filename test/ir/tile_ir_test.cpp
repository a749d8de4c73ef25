// The tile IR (src/tile/TileIR.h): a GEMM's block program, staged through
// shared memory with async copies, verified and printed with its layouts;
// the verifier's refusals; the interpreter on N-D accesses and slots; the
// CUDA translation's parameters, math functions, run-time alignment checks
// of async copies and refusals (the kernels run in
// test/cuda_runtime/tile_gemm_on_cpu_test.cpp).
#include <gtest/gtest.h>

#include "loom/Error.h"
#include "loom/IROperator.h"
#include "tile/TileCodeGen_CUDA.h"
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
                           {{"A", Float(16), a.data(), {K, 1}},
                            {"B", Float(16), b.data(), {N, 1}},
                            {"C", Float(16), c.data(), {N, 1}}},
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
    for (const TileOp &o : {load, mx, bc, sub, store}) p.body.push_back(loom_test::op_stmt(o));
    std::vector<float> x(4 * 8), y(4 * 8);
    for (int i = 0; i < 32; i++) x[i] = float((i * 7) % 11) - 20.0f;  // all negative
    interpret_tile_program(p,
                           {{"X", Float(32), x.data(), {8, 1}}, {"Y", Float(32), y.data(), {8, 1}}},
                           {{"cols", 7}}, {});
    for (int r = 0; r < 4; r++) {
        float m = 0;  // the masked column reads as 0, the largest
        for (int c = 0; c < 7; c++) m = std::max(m, x[r * 8 + c]);
        for (int c = 0; c < 8; c++) {
            EXPECT_EQ(y[r * 8 + c], (c < 7 ? x[r * 8 + c] : 0.0f) - m) << r << ", " << c;
        }
    }
}

namespace {

float half_value(uint16_t h) { return float(float16_t::from_bits(h)); }

/** Small random halves, a linear congruential stream. */
struct Halves {
    uint32_t seed;
    uint16_t next() {
        seed = seed * 1664525u + 1013904223u;
        return float16_t((int(seed >> 9) % 2001 - 1000) / 500.0f).bits;
    }
};

}  // namespace

TEST(TileIR, MultistageProgramVerifiesAndPrintsItsSlots) {
    loom_test::GemmTiling g;
    g.b_transposed = true;
    const TileProgram p = loom_test::gemm_program(g);
    verify(p);
    const std::string text = to_string(p);
    for (const char *line :
         {"tile_program gemm_block(num_warps=4) grid(bm, bn):\n",
          "  for pro in [0, 0 + 2):\n"
          "    %a_s = async_copy A[(bm * 64), (pro * 32)] slot pro masked past (M, K) : "
          "float16[64x32] shared x3 slots #swizzled\n",
          "    %b_s = async_copy B[(bn * 64), (pro * 32)] axes(1, 0) slot pro masked past (N, K) : "
          "float16[32x64] shared x3 slots #swizzled\n",
          "    async_wait 1\n    barrier\n",
          "    %a = convert_layout %a_s slot (kt % 3) : float16[64x32] #mma_a\n",
          "    %a_s = async_copy A[(bm * 64), ((kt + 2) * 32)] slot ((kt + 2) % 3)"}) {
        EXPECT_NE(text.find(line), std::string::npos) << line << "\nnot in\n" << text;
    }
}

TEST(TileInterpreter, MultistageGemmWithTransposedBAndEpilogue) {
    // C = float16(alpha * A B^T + bias + R), B given as N x K, at sizes no
    // multiple of the 64 x 64 x 32 block tile.
    loom_test::GemmTiling g;
    g.out = Float(16);
    g.b_transposed = g.bias = g.residual = true;
    const Expr alpha = Variable::make(Float(32), "epilogue.alpha");
    g.epilogue =
        cast(Float(16), alpha * Variable::make(Float(32), "_0") + Variable::make(Float(32), "_1") +
                            cast(Float(32), Variable::make(Float(16), "_2")));
    const int M = 70, N = 67, K = 45;
    Halves rng{99};
    std::vector<uint16_t> a(M * K), b(N * K), r(M * N), c(M * N, 0x7e00);
    std::vector<float> bias(N);
    for (auto &x : a) x = rng.next();
    for (auto &x : b) x = rng.next();
    for (auto &x : r) x = rng.next();
    for (int j = 0; j < N; j++) bias[j] = 0.25f * j;
    interpret_tile_program(loom_test::gemm_program(g),
                           {{"A", Float(16), a.data(), {K, 1}},
                            {"B", Float(16), b.data(), {K, 1}},
                            {"C", Float(16), c.data(), {N, 1}},
                            {"bias", Float(32), bias.data(), {1}},
                            {"R", Float(16), r.data(), {N, 1}}},
                           {{"M", M}, {"N", N}, {"K", K}, {"epilogue.alpha", 0.5f}},
                           {(M + 63) / 64, (N + 63) / 64});
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double want = 0, scale = 0;
            for (int k = 0; k < K; k++) {
                const double t = double(half_value(a[i * K + k])) * half_value(b[j * K + k]);
                want += t;
                scale += std::abs(t);
            }
            want = 0.5 * want + bias[j] + half_value(r[i * N + j]);
            EXPECT_LE(std::abs(half_value(c[i * N + j]) - want),
                      1e-5 * scale + 1e-3 * std::abs(want) + 1e-6)
                << "C(" << i << ", " << j << ")";
        }
    }
    // A conversion that reads the slot after its step's: the next tile, or
    // one never written (NaN).
    g.plant_wrong_slot = true;
    std::vector<uint16_t> wrong(M * N, 0);
    interpret_tile_program(loom_test::gemm_program(g),
                           {{"A", Float(16), a.data(), {K, 1}},
                            {"B", Float(16), b.data(), {K, 1}},
                            {"C", Float(16), wrong.data(), {N, 1}},
                            {"bias", Float(32), bias.data(), {1}},
                            {"R", Float(16), r.data(), {N, 1}}},
                           {{"M", M}, {"N", N}, {"K", K}, {"epilogue.alpha", 0.5f}},
                           {(M + 63) / 64, (N + 63) / 64});
    EXPECT_NE(wrong, c);
}

TEST(TileInterpreter, OneDimensionalTilesAndBroadcastAccesses) {
    // y(i) = 2 x(i) + z(3, i): a 1-D load, a row of a 2-D buffer read as a
    // 1-D tile (axes {-1, 0}), a 1-D store, masked past 5 elements.
    TileProgram p;
    p.name = "axpy";
    p.num_warps = 1;
    const TileType row{Float(32), {8}};
    TileOp x{TileOpKind::Load, "x", row};
    x.buffer = "X";
    x.origin = {Expr(0)};
    x.bounds = {Expr(5)};
    TileOp z{TileOpKind::Load, "z", row};
    z.buffer = "Z";
    z.origin = {Expr(3), Expr(0)};
    z.bounds = {Expr(4), Expr(5)};
    z.axes = {-1, 0};
    TileOp f{TileOpKind::Map, "y", row, {"x", "z"}};
    f.fn = 2.0f * Variable::make(Float(32), "_0") + Variable::make(Float(32), "_1");
    TileOp store{TileOpKind::Store, "", {}, {"y"}};
    store.buffer = "Y";
    store.origin = {Expr(0)};
    store.bounds = {Expr(5)};
    for (const TileOp &o : {x, z, f, store}) p.body.push_back(loom_test::op_stmt(o));
    std::vector<float> xs = {1, 2, 3, 4, 5, 6, 7, 8}, zs(4 * 6), ys(8, -1);
    for (int i = 0; i < 24; i++) zs[i] = float(i);
    interpret_tile_program(p,
                           {{"X", Float(32), xs.data(), {1}},
                            {"Z", Float(32), zs.data(), {6, 1}},
                            {"Y", Float(32), ys.data(), {1}}},
                           {}, {});
    for (int i = 0; i < 8; i++) {
        EXPECT_EQ(ys[i], i < 5 ? 2 * xs[i] + zs[3 * 6 + i] : -1.0f) << i;
    }
}

TEST(TileCodeGen, ParametersAreBuffersStridesThenScalarsByName) {
    loom_test::GemmTiling g;
    g.out = Float(16);
    g.bias = g.residual = true;
    g.epilogue = cast(
        Float(16), Variable::make(Float(32), "epilogue.alpha") * Variable::make(Float(32), "_0") +
                       Variable::make(Float(32), "_1") +
                       cast(Float(32), Variable::make(Float(16), "_2")));
    const TileKernelSource k =
        tile_program_to_cuda(loom_test::gemm_program(g), {{"A", Float(16)},
                                                          {"B", Float(16)},
                                                          {"C", Float(16), 2, true},
                                                          {"bias", Float(32), 1},
                                                          {"R", Float(16)}});
    EXPECT_EQ(k.threads, 128);
    EXPECT_EQ(k.shared_bytes, 3 * (64 * 32 + 32 * 64) * 2);
    std::vector<std::string> names, c_names, types;
    for (const TileKernelParam &p : k.params) {
        names.push_back(p.name);
        c_names.push_back(p.c_name);
        types.push_back(type_to_string(p.type) + (p.is_buffer ? "*" : "") + (p.written ? "!" : ""));
    }
    EXPECT_EQ(names, (std::vector<std::string>{"A", "B", "C", "bias", "R", "A.stride.0",
                                               "B.stride.0", "C.stride.0", "R.stride.0", "K", "M",
                                               "N", "epilogue.alpha"}));
    EXPECT_EQ(c_names, (std::vector<std::string>{"A", "B", "C", "bias", "R", "A_stride_0",
                                                 "B_stride_0", "C_stride_0", "R_stride_0", "K", "M",
                                                 "N", "epilogue_alpha"}));
    EXPECT_EQ(types, (std::vector<std::string>{"float16*", "float16*", "float16*!", "float32*",
                                               "float16*", "int32", "int32", "int32", "int32",
                                               "int32", "int32", "int32", "float32"}));
    EXPECT_EQ(k.source.find("epilogue.alpha"), std::string::npos) << k.source;
    EXPECT_NE(k.source.find("const float epilogue_alpha"), std::string::npos) << k.source;
    EXPECT_NE(k.source.find("#pragma unroll"), std::string::npos);
}

TEST(TileCodeGen, RefusesWhatItCannotTranslateByName) {
    auto expect_refused = [](const TileProgram &p, const std::vector<TileBuffer> &buffers,
                             const std::string &message) {
        try {
            tile_program_to_cuda(p, buffers);
            ADD_FAILURE() << "translated, though: " << message;
        } catch (const InternalError &e) {
            EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
        }
    };
    const std::vector<TileBuffer> buffers = {
        {"A", Float(16)}, {"B", Float(16)}, {"C", Float(32), 2, true}};
    {
        // The accumulator laid out for 4 x 1 warps, the operands for 2 x 2.
        loom_test::GemmTiling g;
        TileProgram p = loom_test::gemm_program(g);
        p.body[0].op->type.layout =
            std::make_shared<const LinearLayout>(mma_accumulator_layout(64, 64, 4, 1));
        for (TileStmt &s : p.body[2].loop->body) {
            if (s.op->kind == TileOpKind::Dot) s.op->type.layout = p.body[0].op->type.layout;
        }
        p.body[p.body.size() - 2].op->type.layout = p.body[0].op->type.layout;  // the map's
        expect_refused(p, buffers, "dot acc needs f16 or bf16 operands in mma_a_layout");
    }
    {
        // A map whose operand is in another layout than its result.
        loom_test::GemmTiling g;
        TileProgram p = loom_test::gemm_program(g);
        TileOp &map = *p.body[p.body.size() - 2].op;
        map.type.layout = std::make_shared<const LinearLayout>(blocked_layout(64, 64, 4, 4));
        expect_refused(p, buffers, "map c reads acc in another layout");
    }
}

TEST(TileCodeGen, MapsPrintMathIntrinsicsAsCudasFunctions) {
    loom_test::GemmTiling g;
    const Expr x = Variable::make(Float(32), "_0");
    const Expr xd = cast(Float(64), x);
    g.epilogue = select(x > 0.0f && !(x == 1.0f), tanh(x) + erf(x) + round(x) + abs(x),
                        pow(x, 2.0f) + rsqrt(abs(x) + 1.0f)) +
                 cast(Float(32), exp(xd) + round(xd) + abs(cast(Int(32), x)));
    const std::string s =
        tile_program_to_cuda(loom_test::gemm_program(g),
                             {{"A", Float(16)}, {"B", Float(16)}, {"C", Float(32), 2, true}})
            .source;
    for (const char *fn : {"tanhf(", "erff(", "rintf(", "fabsf(", "powf(", "rsqrtf(", "exp(",
                           "rint(", "&&", "(!", " ? "}) {
        EXPECT_NE(s.find(fn), std::string::npos) << fn << " in\n" << s;
    }
}

TEST(TileCodeGen, AsyncCopiesCheckAlignmentAtRunTime) {
    // Rows along the chunks: 16-byte cp.async when the start, the stride
    // and the origin allow, else 4-byte, else element by element; a
    // transposed source into a row-major slot: element by element only.
    loom_test::GemmTiling g;
    g.b_transposed = true;
    const std::string s =
        tile_program_to_cuda(loom_test::gemm_program(g),
                             {{"A", Float(16)}, {"B", Float(16)}, {"C", Float(32), 2, true}})
            .source;
    EXPECT_NE(s.find("if (((reinterpret_cast<unsigned long long>(A) & 15u) | "
                     "(unsigned(A_stride_0) & 7u) | (unsigned(((kt + 2) * 32)) & 7u)) == 0)"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("} else if (((reinterpret_cast<unsigned long long>(A) & 3u) | "
                     "(unsigned(A_stride_0) & 1u) | (unsigned(((kt + 2) * 32)) & 1u)) == 0)"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("loom_cp_async_16("), std::string::npos);
    EXPECT_NE(s.find("loom_cp_async_4("), std::string::npos);
    EXPECT_EQ(s.find("reinterpret_cast<unsigned long long>(B)"), std::string::npos) << s;
}

TEST(TileCodeGen, RefusesACallItDoesNotKnow) {
    loom_test::GemmTiling g;
    g.epilogue = Call::make(Float(32), "mystery_f32", {Variable::make(Float(32), "_0")},
                            Call::PureIntrinsic);
    try {
        tile_program_to_cuda(loom_test::gemm_program(g),
                             {{"A", Float(16)}, {"B", Float(16)}, {"C", Float(32), 2, true}});
        ADD_FAILURE() << "translated a call to mystery_f32";
    } catch (const CompileError &e) {
        // As a loop kernel refuses it: naming the call and the kernel.
        const std::string what = e.what();
        EXPECT_NE(what.find("The call mystery_f32(_0) inside a GPU kernel (gemm_block)"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("not supported yet"), std::string::npos) << what;
    }
}
