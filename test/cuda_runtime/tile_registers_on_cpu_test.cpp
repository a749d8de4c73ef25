// Tile ops that move values between threads, translated to CUDA and run on
// the stand-in driver in both thread orders against the interpreter:
// reductions along either axis (in the thread, across lanes by shuffles,
// across warps through shared memory), masked at ragged edges; broadcasts
// of their results back over the tile; and layout conversions by each of
// their three plans (renaming registers, shuffles, shared memory), for
// f32 and packed f16 tiles, in blocked and mma layouts for 1 to 8 warps.
// A row softmax is the program: what attention computes on each score tile.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codegen/NVRTC.h"
#include "driver_api.h"
#include "fake_cuda.h"
#include "ir/Util.h"
#include "loom/loom.h"
#include "sass.h"
#include "tile/AssignLayouts.h"
#include "tile/LayoutConversion.h"
#include "tile/TensorInstructions.h"
#include "tile/TileCodeGen_CUDA.h"
#include "tile/TileInterpreter.h"
#include "tile_programs.h"
#include "tile_runner.h"

namespace {

using namespace loom_test;

Expr ivar(const char *n) { return Variable::make(Int(32), n); }

class TileRegistersOnCpu : public ::testing::Test, public TileProgramRunner {
  protected:
    void SetUp() override { start_session(); }
    void TearDown() override { end_session(); }
};

/** A row softmax of an M x N matrix with N no wider than the tile (one
 * column tile), by tiles of rows x cols: the rows' maxima and sums (each a
 * reduction along the columns, masked past N, broadcast back), stored
 * with the softmax; and the column sums of each row tile (a reduction
 * down the rows, masked past M) subtracted from X (a broadcast down the
 * rows), stored. */
TileProgram softmax_program(int rows, int cols, Type in) {
    TileProgram p;
    p.name = "softmax";
    p.grid = {"tr"};
    const Type f32 = Float(32);
    const Expr M = ivar("M"), N = ivar("N"), tr = ivar("tr");
    auto reg = [&](std::vector<int> shape) {
        TileType t;
        t.elem = f32;
        t.shape = std::move(shape);
        return t;
    };
    auto map = [&](const std::string &r, std::vector<std::string> ops, Expr fn,
                   std::vector<int> shape) {
        TileOp o = make_op(TileOpKind::Map, r, reg(std::move(shape)), std::move(ops));
        o.fn = std::move(fn);
        p.body.push_back(op_stmt(o));
    };
    const Expr _0 = Variable::make(f32, "_0"), _1 = Variable::make(f32, "_1");
    TileOp load = make_op(TileOpKind::Load, "xin", reg({rows, cols}));
    load.type.elem = in;
    load.buffer = "X";
    load.origin = {tr * rows, 0};
    load.bounds = {M, N};
    p.body.push_back(op_stmt(load));
    map("x", {"xin"}, cast(f32, Variable::make(in, "_0")), {rows, cols});
    TileOp mx = make_op(TileOpKind::Reduce, "m", reg({rows}), {"x"});
    mx.axis = 1;
    mx.reduction = "max";
    mx.bounds = {N};
    p.body.push_back(op_stmt(mx));
    TileOp mb = make_op(TileOpKind::Broadcast, "mb", reg({rows, cols}), {"m"});
    mb.axis = 1;
    p.body.push_back(op_stmt(mb));
    map("e", {"x", "mb"}, exp(_0 - _1), {rows, cols});
    TileOp sum = make_op(TileOpKind::Reduce, "s", reg({rows}), {"e"});
    sum.axis = 1;
    sum.reduction = "sum";
    sum.bounds = {N};
    p.body.push_back(op_stmt(sum));
    TileOp sb = make_op(TileOpKind::Broadcast, "sb", reg({rows, cols}), {"s"});
    sb.axis = 1;
    p.body.push_back(op_stmt(sb));
    map("y", {"e", "sb"}, _0 / _1, {rows, cols});
    TileOp cs = make_op(TileOpKind::Reduce, "cs", reg({cols}), {"x"});
    cs.axis = 0;
    cs.reduction = "sum";
    cs.bounds = {M - tr * rows};
    p.body.push_back(op_stmt(cs));
    TileOp csb = make_op(TileOpKind::Broadcast, "csb", reg({rows, cols}), {"cs"});
    csb.axis = 0;
    p.body.push_back(op_stmt(csb));
    map("z", {"x", "csb"}, _0 - _1, {rows, cols});
    TileOp mn = make_op(TileOpKind::Reduce, "mn", reg({rows}), {"x"});
    mn.axis = 1;
    mn.reduction = "min";
    mn.bounds = {N};
    p.body.push_back(op_stmt(mn));
    auto store = [&](const std::string &v, const std::string &buffer, std::vector<Expr> origin,
                     std::vector<Expr> bounds, std::vector<int> axes) {
        TileOp s = make_op(TileOpKind::Store, "", TileType(), {v});
        s.buffer = buffer;
        s.origin = std::move(origin);
        s.bounds = std::move(bounds);
        s.axes = std::move(axes);
        p.body.push_back(op_stmt(s));
    };
    store("y", "Y", {tr * rows, 0}, {M, N}, {});
    store("z", "Z", {tr * rows, 0}, {M, N}, {});
    store("m", "RowMax", {tr * rows}, {M}, {});
    store("s", "RowSum", {tr * rows}, {M}, {});
    store("mn", "RowMin", {tr * rows}, {M}, {});
    store("cs", "ColSum", {tr, 0}, {tr + 1, N}, {-1, 0});
    return p;
}

struct SoftmaxCase {
    int rows, cols, warps_m, warps_n;
    bool mma;  // the mma accumulator's layouts, else blocked ones
    Type in;
};

std::string name_of(const SoftmaxCase &c) {
    return std::to_string(c.rows) + "x" + std::to_string(c.cols) + "_" + std::to_string(c.warps_m) +
           "x" + std::to_string(c.warps_n) + (c.mma ? "_mma" : "_blocked") +
           (c.in == Float(16) ? "_f16" : "_f32");
}

class TileSoftmaxOnCpu : public TileRegistersOnCpu,
                         public ::testing::WithParamInterface<SoftmaxCase> {};

}  // namespace

TEST_P(TileSoftmaxOnCpu, ReductionsAndBroadcastsMatchTheInterpreter) {
    const SoftmaxCase c = GetParam();
    TileProgram p = softmax_program(c.rows, c.cols, c.in);
    const TensorInstruction *mma = &tensor_instructions()[0];
    assign_layouts(p, {c.warps_m, c.warps_n}, c.mma ? mma : nullptr);
    const std::string printed = to_string(p);
    // The reductions' results live in the slices of the tile's layout,
    // which the broadcasts read in place: no conversion.
    EXPECT_NE(printed.find("slice("), std::string::npos) << printed;
    EXPECT_EQ(printed.find("convert_layout"), std::string::npos) << printed;
    const int M = 2 * c.rows + c.rows / 2 + 1, N = c.cols - 3;
    std::mt19937 rng(c.rows * 131 + c.cols);
    const int tiles = (M + c.rows - 1) / c.rows;
    std::vector<HostTileBuffer> buffers = {{"X", c.in, {M, N}, false, &rng},
                                           {"Y", Float(32), {M, N}, true, &rng},
                                           {"Z", Float(32), {M, N}, true, &rng},
                                           {"RowMax", Float(32), {M}, true, &rng},
                                           {"RowSum", Float(32), {M}, true, &rng},
                                           {"RowMin", Float(32), {M}, true, &rng},
                                           {"ColSum", Float(32), {tiles, N}, true, &rng}};
    expect_matches_interpreter(p, buffers, {{{"M", M}, {"N", N}}, {}}, {tiles}, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(All, TileSoftmaxOnCpu,
                         ::testing::Values(SoftmaxCase{16, 8, 1, 1, true, Float(32)},
                                           SoftmaxCase{64, 64, 4, 1, true, Float(32)},
                                           SoftmaxCase{64, 64, 2, 2, true, Float(16)},
                                           SoftmaxCase{32, 128, 1, 4, true, Float(32)},
                                           SoftmaxCase{128, 32, 8, 1, true, Float(32)},
                                           SoftmaxCase{64, 64, 4, 1, false, Float(32)},
                                           SoftmaxCase{16, 128, 2, 1, false, Float(16)},
                                           SoftmaxCase{128, 16, 4, 1, false, Float(32)}),
                         [](const ::testing::TestParamInfo<SoftmaxCase> &i) {
                             return name_of(i.param);
                         });

namespace {

struct ConversionCase {
    std::string name;
    LinearLayout from, to;
    int warps;
    ConversionPlan::Kind kind;
};

/** X loaded in `from`, converted to `to`, then 2 x + 1 stored from there:
 * the map reads the converted registers, so a wrong move shows. */
TileProgram conversion_program(const ConversionCase &c, int rows, int cols, Type elem) {
    TileProgram p;
    p.name = "convert";
    p.num_warps = c.warps;
    p.grid = {"tr"};
    const Expr M = ivar("M"), N = ivar("N"), tr = ivar("tr");
    TileOp load = make_op(TileOpKind::Load, "x", tile_type(elem, {rows, cols}, c.from, "from"));
    load.buffer = "X";
    load.origin = {tr * rows, 0};
    load.bounds = {M, N};
    TileOp convert =
        make_op(TileOpKind::ConvertLayout, "xc", tile_type(elem, {rows, cols}, c.to, "to"), {"x"});
    TileOp map = make_op(TileOpKind::Map, "y", tile_type(elem, {rows, cols}, c.to, "to"), {"xc"});
    const Expr x = Variable::make(elem, "_0");
    map.fn = cast(elem, cast(Float(32), x) * 2.0f + 1.0f);
    TileOp store = make_op(TileOpKind::Store, "", TileType(), {"y"});
    store.buffer = "Y";
    store.origin = {tr * rows, 0};
    store.bounds = {M, N};
    for (const TileOp &o : {load, convert, map, store}) p.body.push_back(op_stmt(o));
    return p;
}

const LinearLayout &acc16x8() {
    static const LinearLayout l = mma_m16n8k16_accumulator();
    return l;
}

}  // namespace

TEST_F(TileRegistersOnCpu, ConversionsMoveEveryElementByEachPlan) {
    const LinearLayout gathered({{"register", {{0, 1}, {8, 0}, {1, 0}}},
                                 {"lane", {{0, 2}, {0, 4}, {0, 0}, {2, 0}, {4, 0}}},
                                 {"warp", {}}},
                                {{"row", 16}, {"col", 8}});
    const std::vector<ConversionCase> cases = {
        {"accumulator to A, 4 warps", mma_accumulator_layout(64, 32, 4, 1),
         mma_a_layout(64, 32, 4, 1), 4, ConversionPlan::Registers},
        {"gathered lanes", acc16x8(), gathered, 1, ConversionPlan::Shuffles},
        {"accumulator to A across warps", mma_accumulator_layout(64, 32, 2, 2),
         mma_a_layout(64, 32, 2, 2), 4, ConversionPlan::SharedMemory},
        {"blocked to accumulator", blocked_layout(64, 32, 4, 4),
         mma_accumulator_layout(64, 32, 2, 2), 4, ConversionPlan::SharedMemory},
        {"accumulator to blocked", mma_accumulator_layout(64, 32, 4, 1),
         blocked_layout(64, 32, 4, 4), 4, ConversionPlan::SharedMemory},
    };
    for (const ConversionCase &c : cases) {
        for (Type elem : {Float(32), Float(16)}) {
            SCOPED_TRACE(c.name + (elem == Float(16) ? ", f16" : ", f32"));
            EXPECT_EQ(plan_conversion(c.from, c.to).kind, c.kind);
            const int rows = c.from.out_size("row"), cols = c.from.out_size("col");
            const TileProgram p = conversion_program(c, rows, cols, elem);
            const int M = 2 * rows + 3, N = cols - 1;
            std::mt19937 rng(rows + cols);
            std::vector<HostTileBuffer> buffers = {{"X", elem, {M, N}, false, &rng},
                                                   {"Y", elem, {M, N}, true, &rng}};
            expect_matches_interpreter(p, buffers, {{{"M", M}, {"N", N}}, {}},
                                       {(M + rows - 1) / rows}, 0);
            // Renaming moves no data: no shuffle, no shared memory.
            const std::string source =
                tile_program_to_cuda(p, {{"X", elem}, {"Y", elem, 2, true}}).source;
            const bool moves = source.find("__shfl") != std::string::npos ||
                               source.find("loom_scratch") != std::string::npos;
            EXPECT_EQ(moves, c.kind != ConversionPlan::Registers) << source;
        }
    }
}

TEST_F(TileRegistersOnCpu, LayoutAssignmentConvertsWhereProducerAndConsumerDisagree) {
    // A square tile's row maxima broadcast down the columns: the slice of
    // the rows is not the slice of the columns, so a conversion goes
    // between them, and is printed.
    // Built afresh for each assignment: a program's ops are shared by its
    // copies.
    auto program = [] {
        TileProgram p;
        p.name = "transpose_max";
        p.grid = {"tr"};
        const Expr M = ivar("M"), tr = ivar("tr");
        TileType t;
        t.elem = Float(32);
        t.shape = {32, 32};
        TileOp load = make_op(TileOpKind::Load, "x", t);
        load.buffer = "X";
        load.origin = {tr * 32, 0};
        load.bounds = {M, 32};
        TileType row = t;
        row.shape = {32};
        TileOp mx = make_op(TileOpKind::Reduce, "m", row, {"x"});
        mx.axis = 1;
        mx.reduction = "max";
        TileOp b = make_op(TileOpKind::Broadcast, "mb", t, {"m"});
        b.axis = 0;  // m(j) at (i, j)
        TileOp map = make_op(TileOpKind::Map, "y", t, {"x", "mb"});
        map.fn = Variable::make(Float(32), "_0") - Variable::make(Float(32), "_1");
        TileOp store = make_op(TileOpKind::Store, "", TileType(), {"y"});
        store.buffer = "Y";
        store.origin = {tr * 32, 0};
        store.bounds = {M, 32};
        for (const TileOp &o : {load, mx, b, map, store}) p.body.push_back(op_stmt(o));
        return p;
    };
    for (bool mma : {true, false}) {
        TileProgram q = program();
        assign_layouts(q, {2, 2}, mma ? &tensor_instructions()[0] : nullptr);
        const std::string printed = to_string(q);
        EXPECT_NE(printed.find("convert_layout %m"), std::string::npos) << printed;
        const int M = 77;
        std::mt19937 rng(7);
        std::vector<HostTileBuffer> buffers = {{"X", Float(32), {M, 32}, false, &rng},
                                               {"Y", Float(32), {M, 32}, true, &rng}};
        expect_matches_interpreter(q, buffers, {{{"M", M}}, {}}, {(M + 31) / 32}, 0);
    }
}

TEST(TileRegistersThroughNvrtc, ReductionsShuffleInRegistersWithoutLocalMemory) {
    std::string why;
    if (!internal::nvrtc_available(&why)) GTEST_SKIP() << why;
    // The softmax in the accumulator's layout of 4 x 1 warps (each row in
    // one warp: quads shuffle) and of 2 x 2 (rows across two warps: also
    // shared memory), as a tile of attention's scores would be.
    for (auto [wm, wn] : {std::pair{4, 1}, std::pair{2, 2}}) {
        SCOPED_TRACE(std::to_string(wm) + " x " + std::to_string(wn) + " warps");
        TileProgram p = softmax_program(64, 64, Float(16));
        assign_layouts(p, {wm, wn}, &tensor_instructions()[0]);
        std::vector<TileBuffer> buffers = {{"X", Float(16)},
                                           {"Y", Float(32), 2, true},
                                           {"Z", Float(32), 2, true},
                                           {"RowMax", Float(32), 1, true},
                                           {"RowSum", Float(32), 1, true},
                                           {"RowMin", Float(32), 1, true},
                                           {"ColSum", Float(32), 2, true}};
        const TileKernelSource k = tile_program_to_cuda(p, buffers);
        for (const char *arch : {"sm_80", "sm_90a"}) {
            internal::CudaBinary bin = internal::compile_cuda(
                tile_module_source({k.source}), "softmax", arch, {"--ptxas-options=-v"});
            EXPECT_NE(
                bin.log.find("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
                std::string::npos)
                << arch << ": " << bin.log;
            const std::string nvdisasm = find_nvdisasm();
            if (nvdisasm.empty()) continue;
            const std::string sass = sass_of(bin.cubin, nvdisasm);
            EXPECT_NE(sass.find("SHFL.BFLY"), std::string::npos) << arch;
            EXPECT_EQ(sass.find("LDL"), std::string::npos) << arch << ": local memory";
            EXPECT_EQ(sass.find("STL"), std::string::npos) << arch << ": local memory";
            // Only the row sums across warps and the column sums down the
            // warps of a column go through shared memory.
            EXPECT_NE(sass.find("STS"), std::string::npos) << arch;
        }
    }
}
