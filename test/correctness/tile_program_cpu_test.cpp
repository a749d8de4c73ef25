// Tile programs on the CPU: the tile_program schedule that makes a GPU
// tensor-core kernel also compiles for the CPU, where the program becomes
// vectorized loops. Its dot accumulates in k order in float32, as the
// reference interpreter does, so results agree with it to the bit; sizes
// are no multiple of the tiles.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "classifier_head.h"
#include "loom/loom.h"
#include "rolled_attention.h"
#include "test_util.h"

using namespace loom;
using loom_test::buffers_match;
using loom_test::random_buffer;

namespace {

const Target kCpu("host");

/** prod(i, j) += f(A(i, k)) * f(B(k, j)); C = epilogue(prod). */
struct Gemm {
    BufferParam A, B, bias;
    Var i{"i"}, j{"j"}, io{"io"}, jo{"jo"};
    RDom k;
    Func prod{"prod"}, C{"C"};
    Gemm(Type in, bool epilogue)
        : A(in, 2, "A"), B(in, 2, "B"), bias(Float(32), 1, "bias"), k(0, A.dim(1).extent(), "k") {
        prod(i, j) = 0.0f;
        prod(i, j) += cast<float>(A(i, k)) * cast<float>(B(k, j));
        C(i, j) = epilogue ? max(prod(i, j) * 0.25f + bias(j), 0.0f) : prod(i, j);
    }
};

template <typename T> void gemm_matches_interpreter(Type in, bool epilogue, bool tensorize) {
    Gemm g(in, epilogue);
    const int M = 45, N = 77, K = 58;
    g.A.set(random_buffer<T>({M, K}));
    g.B.set(random_buffer<T>({K, N}));
    g.bias.set(random_buffer<float>({N}));
    Schedule sch;
    sch[g.C].tile_program(g.i, g.j, g.io, g.jo, 32, 64, TileOptions().reduction_tile(16));
    sch[g.prod].compute_at(g.C, g.jo);
    if (tensorize) sch[g.prod].update().tensorize("mma.m16n8k16");
    RawBuffer expected = interpret(g.C, {M, N});
    RawBuffer actual = Pipeline(g.C).realize({M, N}, sch, kCpu);
    EXPECT_TRUE(buffers_match(actual, expected));
}

}  // namespace

TEST(TileProgramCpu, HalfGemmWithTheGpuSchedule) {
    gemm_matches_interpreter<float16_t>(Float(16), false, true);
}

TEST(TileProgramCpu, BFloat16GemmWithAnEpilogue) {
    gemm_matches_interpreter<bfloat16_t>(BFloat(16), true, true);
}

TEST(TileProgramCpu, Float32GemmNeedsNoInstruction) {
    gemm_matches_interpreter<float>(Float(32), true, false);
}

TEST(TileProgramCpu, PrintedProgramShowsTheDot) {
    Gemm g(Float(32), false);
    Schedule sch;
    sch[g.C].tile_program(g.i, g.j, g.io, g.jo, 32, 32);
    sch[g.prod].compute_at(g.C, g.jo);
    const std::string lowered = Pipeline(g.C).compile_to_lowered_stmt(sch, kCpu);
    // The CPU lowering leaves loops: the dot's columns in vectors.
    EXPECT_NE(lowered.find("tile.prod_0[ramp("), std::string::npos) << lowered;
    EXPECT_NE(lowered.find("parallel (tile_row"), std::string::npos) << lowered;
}

// Not only matrix products: a batch of small products (a grid dimension
// per matrix) and a 1x1 convolution written as a reduction over channels.
TEST(TileProgramCpu, BatchedProduct) {
    BufferParam A(Float(32), 3, "A"), B(Float(32), 3, "B");
    Var b("b"), i("i"), j("j"), io("io"), jo("jo");
    RDom k(0, A.dim(2).extent(), "k");
    Func prod("prod"), C("C");
    prod(b, i, j) = 0.0f;
    prod(b, i, j) += A(b, i, k) * B(b, k, j);
    C(b, i, j) = prod(b, i, j);
    const int batch = 5, M = 19, N = 23, K = 17;
    A.set(random_buffer<float>({batch, M, K}));
    B.set(random_buffer<float>({batch, K, N}));
    Schedule sch;
    sch[C].tile_program(i, j, io, jo, 16, 16, TileOptions().reduction_tile(8));
    sch[prod].compute_at(C, jo);
    RawBuffer expected = interpret(C, {batch, M, N});
    EXPECT_TRUE(buffers_match(Pipeline(C).realize({batch, M, N}, sch, kCpu), expected));
}

// Grouped rows: row i multiplies matrix B(i / g), so the rows of one group
// share their second operand (grouped-query attention's query heads and
// their key head). group_rows() gives each program one group's rows: groups
// of 3 (one tile of 8, 5 rows idle), 20 (three tiles, the last of 4 rows)
// and 1, from a run-time Param; rows and columns no multiple of the tiles.
TEST(TileProgramCpu, GroupedRowsShareTheOtherOperand) {
    BufferParam A(Float(32), 2, "A"), B(Float(32), 3, "B");
    Param<int> g("g");
    Var i("i"), j("j"), io("io"), jo("jo");
    RDom k(0, A.dim(1).extent(), "k");
    Func prod("prod"), C("C");
    prod(i, j) = 0.0f;
    // max(g, 1), as grouped-query attention writes it, tells bounds
    // inference that the divisor is positive.
    const Expr group = max(g, 1);
    prod(i, j) += A(i, k) * B(i / group, k, j);
    C(i, j) = prod(i, j);
    Schedule sch;
    sch[C].tile_program(i, j, io, jo, 8, 16, TileOptions().reduction_tile(8).group_rows());
    sch[prod].compute_at(C, jo);
    const std::string lowered = Pipeline(C).compile_to_lowered_stmt(sch, kCpu);
    EXPECT_NE(lowered.find("let row_group = max(g, 1)"), std::string::npos) << lowered;
    // Only the group's rows are computed: the dot's last rows one at a time.
    EXPECT_NE(lowered.find("for (tile.rr"), std::string::npos) << lowered;
    const int M = 45, N = 23, K = 17;
    for (int group : {3, 20, 1}) {
        SCOPED_TRACE("groups of " + std::to_string(group));
        g.set(group);
        A.set(random_buffer<float>({M, K}));
        B.set(random_buffer<float>({(M + group - 1) / group, K, N}));
        RawBuffer expected = interpret(C, {M, N});
        EXPECT_TRUE(buffers_match(Pipeline(C).realize({M, N}, sch, kCpu), expected));
    }
}

TEST(TileProgramCpu, PointwiseConvolution) {
    // out(n, co, p) = sum over ci of w(co, ci) * in(n, ci, p): per image a
    // product of the weights by the pixels' channels.
    BufferParam in(Float(32), 3, "in"), w(Float(32), 2, "w");
    Var n("n"), co("co"), p("p"), cot("cot"), pt("pt");
    RDom ci(0, in.dim(1).extent(), "ci");
    Func conv("conv");
    conv(n, co, p) = 0.0f;
    conv(n, co, p) += w(co, ci) * in(n, ci, p);
    const int images = 2, cin = 24, cout = 20, pixels = 70;
    in.set(random_buffer<float>({images, cin, pixels}));
    w.set(random_buffer<float>({cout, cin}));
    Schedule sch;
    sch[conv].tile_program(co, p, cot, pt, 16, 32, TileOptions().reduction_tile(8));
    RawBuffer expected = interpret(conv, {images, cout, pixels});
    EXPECT_TRUE(buffers_match(Pipeline(conv).realize({images, cout, pixels}, sch, kCpu), expected));
}

TEST(TileProgramCpu, GemmWithARowSoftmaxMatchesTheInterpreter) {
    // The dot and the reductions sum in the interpreter's order; exp is
    // the CPU's own, within an ulp or two of the interpreter's.
    const int M = 45, classes = 61, K = 40;
    for (bool half : {false, true}) {
        loom_test::ClassifierHead h(half ? Float(16) : Float(32), classes);
        if (half) {
            h.X.set(random_buffer<float16_t>({M, K}));
            h.W.set(random_buffer<float16_t>({K, classes}));
        } else {
            h.X.set(random_buffer<float>({M, K}));
            h.W.set(random_buffer<float>({K, classes}));
        }
        Schedule sch = h.schedule(16, 64, 1, 2, half);
        const std::string lowered = Pipeline(h.prob).compile_to_lowered_stmt(sch, kCpu);
        RawBuffer expected = interpret(h.prob, {M, classes});
        EXPECT_TRUE(
            buffers_match(Pipeline(h.prob).realize({M, classes}, sch, kCpu), expected, 1e-5, 1e-12))
            << lowered;
    }
}

TEST(TileProgramCpu, CoordinatesAsValuesMaskAndPosition) {
    // A causal mask and a position bias on a product: the tile's
    // coordinates as values, each tile at its own origin.
    BufferParam A(Float(32), 2, "A"), B(Float(32), 2, "B");
    Var i("i"), j("j"), io("io"), jo("jo");
    RDom k(0, A.dim(1).extent(), "k");
    Func prod("prod"), C("C");
    prod(i, j) = 0.0f;
    prod(i, j) += A(i, k) * B(k, j);
    C(i, j) = select(j <= i, prod(i, j) + cast<float>(i - j) * 0.25f, -1.0f);
    const int M = 53, N = 47, K = 21;
    A.set(random_buffer<float>({M, K}));
    B.set(random_buffer<float>({K, N}));
    Schedule sch;
    sch[C].tile_program(i, j, io, jo, 16, 32, TileOptions().reduction_tile(8));
    sch[prod].compute_at(C, jo);
    RawBuffer expected = interpret(C, {M, N});
    EXPECT_TRUE(buffers_match(Pipeline(C).realize({M, N}, sch, kCpu), expected));
}

// Attention written as the plain chain (the scores' product, the rows'
// maximum and sum, the weighted sum of the values), one tile program:
// rolling_update makes the program roll the chain over tiles of keys,
// with the repairs the compiler derives.
TEST(TileProgramCpu, RolledAttentionChainMatchesTheInterpreter) {
    for (bool causal : {false, true}) {
        SCOPED_TRACE(causal ? "causal" : "global");
        loom_test::RolledAttention a(Float(32), 0.3f, causal);
        const int Lq = 37, Lk = 53, D = 32;
        a.Q.set(random_buffer<float>({Lq, D}));
        a.K.set(random_buffer<float>({Lk, D}));
        a.V.set(random_buffer<float>({Lk, D}));
        Schedule sch = a.schedule(16, 32, 16, TileOptions().reduction_tile(8), false);
        RawBuffer expected = interpret(a.out, {Lq, D});
        EXPECT_TRUE(
            buffers_match(Pipeline(a.out).realize({Lq, D}, sch, kCpu), expected, 1e-5, 1e-6));
    }
}

// On the CPU a tile program may compute a Func stored at root, not only an
// output: the product C is an intermediate the output D reads at a shifted
// point, and the program reads a root Func too (A doubled, stored first).
TEST(TileProgramCpu, ProgramsComputeAndReadFuncsAtRoot) {
    BufferParam A(Float(32), 2, "A"), B(Float(32), 2, "B");
    Var i("i"), j("j"), io("io"), jo("jo");
    RDom k(0, A.dim(1).extent(), "k");
    Func twice("twice"), prod("prod"), C("C"), D("D");
    twice(i, j) = A(i, j) * 2.0f;
    prod(i, j) = 0.0f;
    prod(i, j) += twice(i, k) * B(k, j);
    C(i, j) = prod(i, j) + 1.0f;
    D(i, j) = C(i, j) - C(i + 1, j);
    const int M = 41, N = 37, K = 19;
    A.set(random_buffer<float>({M + 1, K}));
    B.set(random_buffer<float>({K, N}));
    Schedule sch;
    sch[twice].compute_root();
    sch[C].compute_root().tile_program(i, j, io, jo, 16, 32, TileOptions().reduction_tile(8));
    sch[prod].compute_at(C, jo);
    RawBuffer expected = interpret(D, {M, N});
    const std::string stmt = Pipeline(D).compile_to_lowered_stmt(sch, kCpu);
    EXPECT_NE(stmt.find("tile_row"), std::string::npos) << "C is not a tile program";
    EXPECT_TRUE(buffers_match(Pipeline(D).realize({M, N}, sch, kCpu), expected));
}
