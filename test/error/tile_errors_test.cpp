// Tile programs the compiler refuses: each tile_program or tensorize
// directive it cannot honour, and each part of a definition that is not a
// tile operation, is a CompileError naming the Func and the reason.
#include <gtest/gtest.h>

#include "classifier_head.h"
#include "loom/loom.h"
#include "test_util.h"

using namespace loom;
using loom_test::throws_with;

namespace {

const Target kSm80("host-cuda-sm_80");

/** A matrix product whose factors the tests choose. */
struct Product {
    BufferParam A, B;
    Var i{"i"}, j{"j"}, io{"io"}, jo{"jo"};
    RDom k;
    Func prod{"prod"}, C{"C"};
    explicit Product(Type in = Float(16))
        : A(in, 2, "A"), B(in, 2, "B"), k(0, A.dim(1).extent(), "k") {}
    void define(const Expr &update) {
        prod(i, j) = 0.0f;
        prod(i, j) += update;
        C(i, j) = prod(i, j);
    }
    Schedule schedule(const std::string &instruction = "mma.m16n8k16", int rows = 32, int cols = 32,
                      TileOptions options = TileOptions()) {
        Schedule sch;
        sch[C].tile_program(i, j, io, jo, rows, cols, options);
        sch[prod].compute_at(C, jo);
        if (!instruction.empty()) sch[prod].update().tensorize(instruction);
        return sch;
    }
    void lower(const Schedule &sch, const Target &t = kSm80) {
        Pipeline(C).compile_to_lowered_stmt(sch, t);
    }
};

}  // namespace

TEST(TileErrors, DirectivesCheckTheirArguments) {
    Product p;
    p.define(cast<float>(p.A(p.i, p.k)) * cast<float>(p.B(p.k, p.j)));
    Schedule sch;
    EXPECT_TRUE(
        throws_with<CompileError>([&] { sch[p.C].tile_program(p.i, p.j, p.io, p.jo, 48, 32); },
                                  {"Func C", "48 x 32", "powers of two"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { sch[p.C].tile_program(p.i, p.j, p.io, p.jo, 32, 32, TileOptions().warps(3, 1)); },
        {"3 x 1 warps", "power of two"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] {
            sch[p.C].tile_program(p.i, p.j, p.io, p.jo, 32, 32, TileOptions().pipeline_stages(0));
        },
        {"0 pipeline stages"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { sch[p.prod].update().tile_program(p.i, p.j, p.io, p.jo, 32, 32); },
        {"Func prod", "pure definition"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { sch[p.prod].update().tensorize("wmma.m16n16k16"); },
                                          {"Func prod", "no tensor instruction", "mma.m16n8k16"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { sch[p.prod].tensorize("mma.m16n8k16"); },
                                          {"Func prod", "update()"}));
}

// group_rows() groups the rows by how the other operand reads them; one
// that does not read them leaves nothing to group by.
TEST(TileErrors, GroupedRowsNeedAnOperandReadingThem) {
    Product p;
    p.define(cast<float>(p.A(p.i, p.k)) * cast<float>(p.B(p.k, p.j)));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { p.lower(p.schedule("mma.m16n8k16", 32, 32, TileOptions().group_rows())); },
        {"Func C", "groups its rows", "reads i", "Drop group_rows()"}));
}

TEST(TileErrors, TensorizeChecksTypes) {
    Product p(Float(32));
    p.define(p.A(p.i, p.k) * p.B(p.k, p.j));
    EXPECT_TRUE(
        throws_with<CompileError>([&] { p.lower(p.schedule()); },
                                  {"update of Func prod", "cannot be tensorized with mma.m16n8k16",
                                   "float32", "float16 or bfloat16"}));
}

TEST(TileErrors, TensorizeChecksMixedTypes) {
    Product p;
    BufferParam B2(BFloat(16), 2, "B2");
    p.define(cast<float>(p.A(p.i, p.k)) * cast<float>(B2(p.k, p.j)));
    EXPECT_TRUE(throws_with<CompileError>([&] { p.lower(p.schedule()); },
                                          {"cannot be tensorized", "bfloat16", "float16"}));
}

TEST(TileErrors, TensorizeNeedsAProduct) {
    Product p;
    p.define(cast<float>(p.A(p.i, p.k)) + cast<float>(p.B(p.k, p.j)));
    EXPECT_TRUE(throws_with<CompileError>([&] { p.lower(p.schedule()); },
                                          {"Func prod", "not an accumulation of a product"}));
}

TEST(TileErrors, ContractionsNeedTensorize) {
    Product p;
    p.define(cast<float>(p.A(p.i, p.k)) * cast<float>(p.B(p.k, p.j)));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { p.lower(p.schedule("")); },
        {"update of Func prod", "tensor cores", "tensorize(\"mma.m16n8k16\")"}));
}

TEST(TileErrors, IndicesAreAVarPlusAConstant) {
    Product p;
    p.define(cast<float>(p.A(p.i * 2, p.k)) * cast<float>(p.B(p.k, p.j)));
    EXPECT_TRUE(throws_with<CompileError>([&] { p.lower(p.schedule()); },
                                          {"Func prod", "A", "a Var plus a constant"}));
}

TEST(TileErrors, OperandsAreLoads) {
    Product p;
    p.define(cast<float>(p.A(p.i, p.k) * p.A(p.i, p.k)) * cast<float>(p.B(p.k, p.j)));
    EXPECT_TRUE(throws_with<CompileError>([&] { p.lower(p.schedule()); },
                                          {"Func prod", "which is computed", "input buffers"}));
}

TEST(TileErrors, OperandsDependOnOneAxis) {
    Product p;
    p.define(cast<float>(p.A(p.i, p.j)) * cast<float>(p.B(p.k, p.j)));
    EXPECT_TRUE(throws_with<CompileError>([&] { p.lower(p.schedule()); },
                                          {"Func prod", "depends on both i and j"}));
}

TEST(TileErrors, TilesMustFitTheInstruction) {
    Product p;
    p.define(cast<float>(p.A(p.i, p.k)) * cast<float>(p.B(p.k, p.j)));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { p.lower(p.schedule("mma.m16n8k16", 16, 32, TileOptions().warps(2, 1))); },
        {"Func C", "mma.m16n8k16", "16 x 8 x 16", "rows (16 / 2 warps) is not a multiple of 16"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { p.lower(p.schedule("mma.m16n8k16", 32, 32, TileOptions().reduction_tile(8))); },
        {"reduction tile (8 / 1 warps) is not a multiple of 16"}));
}

TEST(TileErrors, ProducersAreComputedAtTheTileLoop) {
    Product p;
    p.define(cast<float>(p.A(p.i, p.k)) * cast<float>(p.B(p.k, p.j)));
    Schedule sch;
    sch[p.C].tile_program(p.i, p.j, p.io, p.jo, 32, 32);
    sch[p.prod].compute_at(p.C, p.io).update().tensorize("mma.m16n8k16");
    EXPECT_TRUE(throws_with<CompileError>([&] { p.lower(sch); },
                                          {"Func prod", "loop io", "compute_at(C, jo)"}));
}

TEST(TileErrors, ProgramsStoreToOutputs) {
    Product p;
    p.define(cast<float>(p.A(p.i, p.k)) * cast<float>(p.B(p.k, p.j)));
    Func D("D");
    D(p.i, p.j) = p.C(p.i, p.j) + 1.0f;
    Schedule sch = p.schedule();
    sch[p.C].compute_at(D, p.i);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(D).compile_to_lowered_stmt(sch, kSm80); },
        {"Func C", "not an output of the pipeline", "Funcs computed at root (compute_root())"}));
    // At root on the GPU, read by the CPU: the GPU's intermediates stay there.
    sch[p.C].compute_root();
    EXPECT_TRUE(throws_with<CompileError>([&] { Pipeline(D).compile(sch, kSm80); },
                                          {"Func C", "computed on the GPU", "reads it"}));
}

TEST(TileErrors, ProgramsComputeOneValue) {
    Product p;
    Func t("t");
    t(p.i, p.j) = Tuple(cast<float>(p.A(p.i, p.j)), cast<float>(p.B(p.i, p.j)));
    Schedule sch;
    sch[t].tile_program(p.i, p.j, p.io, p.jo, 32, 32);
    EXPECT_TRUE(throws_with<CompileError>([&] { Pipeline(t).compile_to_lowered_stmt(sch, kSm80); },
                                          {"Func t", "Tuple"}));
}

// Reductions along a row or column of a tile program: the forms refused,
// and a reduction wider than its tile refused when the program runs.
TEST(TileErrors, RowReductionsAreSumsMaximaOrMinimaWithinOneTile) {
    {
        BufferParam X(Float(32), 2, "X");
        Var i("i"), j("j"), io("io"), jo("jo");
        RDom c(0, 61, "c");
        Func g("g"), out("out");
        g(i) = 1.0f;
        g(i) = g(i) * X(i, c);  // a product: not a tile reduction
        out(i, j) = X(i, j) / g(i);
        Schedule sch;
        sch[out].tile_program(i, j, io, jo, 16, 64);
        sch[g].compute_at(out, jo);
        EXPECT_TRUE(throws_with<CompileError>(
            [&] { Pipeline(out).compile_to_lowered_stmt(sch, Target("host")); },
            {"update of Func g", "reduces by g(...) + e, max(g(...), e) or min"}));
        // A Func of neither tile coordinate.
        Func s("s"), out2("out2");
        RDom all({{0, 8}, {0, 8}}, "all");
        s() = 0.0f;
        s() += X(all.x, all.y);
        out2(i, j) = X(i, j) - s();
        Schedule sch2;
        sch2[out2].tile_program(i, j, io, jo, 16, 64);
        sch2[s].compute_at(out2, jo);
        EXPECT_TRUE(throws_with<CompileError>(
            [&] { Pipeline(out2).compile_to_lowered_stmt(sch2, Target("host")); },
            {"Func s", "depends on neither of its tile coordinates", "outside the program"}));
    }
    {
        // Classes as a Param: 100 of them do not fit tiles of 64 columns.
        Param<int> classes("classes");
        loom_test::ClassifierHead h(Float(32), classes);
        const int M = 20, K = 8;
        h.X.set(loom_test::random_buffer<float>({M, K}));
        h.W.set(loom_test::random_buffer<float>({K, 100}));
        classes.set(100);
        Schedule sch = h.schedule(16, 64, 1, 2, false);
        EXPECT_TRUE(throws_with<RuntimeError>(
            [&] {
                Pipeline(h.prob).realize({M, 100}, sch, Target("host"));
            },
            {"update of Func rmax", "of extent 100", "tiles hold 64 columns",
             "reduces within one tile"}));
        // 100 classes in tiles of 128: one tile, fine.
        classes.set(100);
        Schedule wide = h.schedule(16, 128, 1, 2, false);
        EXPECT_NO_THROW(Pipeline(h.prob).realize({M, 100}, wide, Target("host")));
        // The product's columns start at 3 but the reductions at 0: the
        // program's tile of logits is not the one the reductions read.
        EXPECT_TRUE(throws_with<RuntimeError>(
            [&] {
                RawBuffer out(Float(32), {M, 97});
                out.set_min({0, 3});
                Pipeline(h.prob).realize({out}, wide, Target("host"));
            },
            {"reads Funcs of the program at c", "program's columns"}));
    }
}
