// Layouts of tile values (src/tile/Layout.h): the mma.sync fragments against
// the PTX ISA's tables written out independently, for one warp and for a
// block of warps with several fragments each, blocked layouts, the swizzled
// shared layouts' bank conflicts, inverses and composition.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tile/Layout.h"
#include "tile/LayoutConversion.h"

using namespace loom::internal::tile;

namespace {

/** The PTX ISA's m16n8k16 fragment tables, element by element. */
std::pair<int, int> spec_accumulator(int lane, int i) {
    const int g = lane / 4, t = lane % 4;
    return {g + 8 * (i / 2), 2 * t + i % 2};
}
std::pair<int, int> spec_a(int lane, int i) {
    const int g = lane / 4, t = lane % 4;
    return {g + 8 * (i / 2 % 2), 2 * t + i % 2 + 8 * (i / 4)};
}
std::pair<int, int> spec_b(int lane, int i) {
    const int g = lane / 4, t = lane % 4;
    return {2 * t + i % 2 + 8 * (i / 2), g};
}

void expect_matches_spec(const LinearLayout &l, int registers,
                         std::pair<int, int> (*spec)(int, int)) {
    ASSERT_EQ(l.in_size("register"), registers);
    ASSERT_EQ(l.in_size("lane"), 32);
    for (int lane = 0; lane < 32; lane++) {
        for (int i = 0; i < registers; i++) {
            std::map<std::string, int> rc = l.apply_named({{"register", i}, {"lane", lane}});
            EXPECT_EQ(std::make_pair(rc["row"], rc["col"]), spec(lane, i))
                << "lane " << lane << ", register " << i << " in " << l.to_string();
        }
    }
    EXPECT_TRUE(l.is_bijective()) << l.to_string();
}

}  // namespace

TEST(TileLayout, MmaFragmentsMatchThePtxIsa) {
    expect_matches_spec(mma_m16n8k16_accumulator(), 4, spec_accumulator);
    expect_matches_spec(mma_m16n8k16_a(), 8, spec_a);
    expect_matches_spec(mma_m16n8k16_b(), 4, spec_b);
}

TEST(TileLayout, APlantedFragmentMistakeIsCaught) {
    // The accumulator with the two halves of the rows swapped between
    // registers 0-1 and 2-3 and the column pairs' order reversed: a layout
    // one can easily write by mistake. The comparison with the table must
    // see it.
    LinearLayout wrong(
        {{"register", {{8, 0}, {0, 1}}}, {"lane", {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}}}},
        {{"row", 16}, {"col", 8}});
    EXPECT_TRUE(wrong.is_bijective());
    int mismatches = 0;
    const LinearLayout right = mma_m16n8k16_accumulator();
    for (int lane = 0; lane < 32; lane++) {
        for (int i = 0; i < 4; i++) {
            mismatches += wrong.apply({i, lane}) != right.apply({i, lane, 0});
        }
    }
    EXPECT_GT(mismatches, 0);
}

TEST(TileLayout, InverseAndComposition) {
    const LinearLayout a = mma_m16n8k16_a();
    const LinearLayout inv = a.invert();
    for (int r = 0; r < 16; r++) {
        for (int c = 0; c < 16; c++) {
            std::vector<int> idx = inv.apply({r, c});  // register, lane, warp
            EXPECT_EQ(a.apply(idx), (std::vector<int>{r, c}));
        }
    }
    // Identity: a layout after its inverse.
    const LinearLayout id = a.compose_after(inv);
    for (int r = 0; r < 16; r++) {
        for (int c = 0; c < 16; c++) EXPECT_EQ(id.apply({r, c}), (std::vector<int>{r, c}));
    }
    // Where the blocked layout's element (register, lane) lives in the
    // accumulator: every one of them somewhere, once.
    const LinearLayout blocked = blocked_layout(16, 8, 2, 1);
    ASSERT_TRUE(blocked.is_bijective());
    const LinearLayout to_acc = mma_m16n8k16_accumulator().invert().compose_after(blocked);
    EXPECT_TRUE(to_acc.is_bijective());
}

TEST(TileLayout, BlockedLayouts) {
    // 64 x 64 floats, vectors of 4, 4 warps: a warp covers 2 rows of 64
    // per register group; each lane's vector is contiguous.
    const LinearLayout l = blocked_layout(64, 64, 4, 4);
    EXPECT_TRUE(l.is_bijective()) << l.to_string();
    EXPECT_EQ(l.total_in_size(), 64 * 64);
    for (int lane = 0; lane < 32; lane++) {
        std::map<std::string, int> first = l.apply_named({{"lane", lane}});
        for (int v = 1; v < 4; v++) {
            std::map<std::string, int> e = l.apply_named({{"lane", lane}, {"register", v}});
            EXPECT_EQ(e["row"], first["row"]);
            EXPECT_EQ(e["col"], first["col"] + v);
        }
        // Consecutive lanes: consecutive vectors along the row (coalesced).
        if (lane % 16 != 15) {
            EXPECT_EQ(l.apply_named({{"lane", lane + 1}})["col"], first["col"] + 4);
        }
    }
    // A tile smaller than the threads: held more than once, still covered.
    const LinearLayout small = blocked_layout(4, 8, 4, 2);
    EXPECT_FALSE(small.is_bijective());
    EXPECT_TRUE(small.is_surjective());
}

TEST(TileLayout, SwizzledSharedIsConflictFreeForLdmatrix) {
    for (int cols : {64, 32, 16, 8}) {  // halves per row: 128, 64, 32, 16 bytes
        const LinearLayout l = swizzled_shared_layout(32, cols, 2);
        ASSERT_TRUE(l.is_bijective()) << l.to_string();
        const LinearLayout where = l.invert();  // (row, col) -> offset
        const int chunks = cols / 8;
        // ldmatrix: 8 lanes each give the address of 16 bytes, rows r..r+7
        // at one logical chunk. Distinct 16-byte bank groups (of the 8 a
        // 128-byte line has) mean no bank conflict.
        for (int r0 = 0; r0 < 32; r0 += 8) {
            for (int c = 0; c < chunks; c++) {
                std::set<int> groups;
                for (int r = r0; r < r0 + 8; r++) {
                    const int offset = where.apply({r, c * 8})[0];
                    EXPECT_EQ(offset % 8, 0) << "a chunk split by the swizzle";
                    groups.insert(offset * 2 / 16 % 8);
                }
                EXPECT_EQ(int(groups.size()), 8)
                    << cols << " halves per row, rows " << r0 << "+, chunk " << c;
            }
        }
    }
}

namespace {

/** The element (row, col) that warp w's lane holds in register r of a
 * block layout, by the PTX ISA's tables and the block's arrangement:
 * warp w = wn + warps_n * wm owns the block at (wm * rows / warps_m, wn *
 * cols / warps_n) (the accumulator), rows wm (A) or columns wn (B), its
 * fragments numbered as Layout.h says. */
struct Block {
    int rows, cols, warps_m, warps_n;
    std::pair<int, int> accumulator(int w, int lane, int r) const {
        const int wm = w / warps_n, wn = w % warps_n, nf = cols / warps_n / 8;
        const int c = r % 4, ni = r / 4 % nf, mi = r / 4 / nf;
        const auto [row, col] = spec_accumulator(lane, c);
        return {wm * rows / warps_m + 16 * mi + row, wn * cols / warps_n + 8 * ni + col};
    }
    std::pair<int, int> a(int w, int lane, int r) const {  // rows x cols = rows x k
        const int wm = w / warps_n, kf = cols / 16;
        const int i = r % 8, ki = r / 8 % kf, mi = r / 8 / kf;
        const auto [row, col] = spec_a(lane, i);
        return {wm * rows / warps_m + 16 * mi + row, 16 * ki + col};
    }
    std::pair<int, int> b(int w, int lane, int r) const {  // rows x cols = k x cols
        const int wn = w % warps_n, nf = cols / warps_n / 8;
        const int i = r % 4, ni = r / 4 % nf, ki = r / 4 / nf;
        const auto [row, col] = spec_b(lane, i);
        return {16 * ki + row, wn * cols / warps_n + 8 * ni + col};
    }
};

/** How many (register, lane, warp) hold each element. */
std::map<std::pair<int, int>, int> holders(const LinearLayout &l) {
    std::map<std::pair<int, int>, int> n;
    for (int w = 0; w < l.in_size("warp"); w++) {
        for (int lane = 0; lane < 32; lane++) {
            for (int r = 0; r < l.in_size("register"); r++) {
                std::vector<int> rc = l.apply({r, lane, w});
                n[{rc[0], rc[1]}]++;
            }
        }
    }
    return n;
}

void expect_block_matches_spec(const LinearLayout &l, const Block &block,
                               std::pair<int, int> (Block::*spec)(int, int, int) const) {
    ASSERT_EQ(l.in_size("warp"), block.warps_m * block.warps_n) << l.to_string();
    for (int w = 0; w < l.in_size("warp"); w++) {
        for (int lane = 0; lane < 32; lane++) {
            for (int r = 0; r < l.in_size("register"); r++) {
                std::vector<int> rc = l.apply({r, lane, w});
                ASSERT_EQ(std::make_pair(rc[0], rc[1]), (block.*spec)(w, lane, r))
                    << "warp " << w << ", lane " << lane << ", register " << r << " in "
                    << l.to_string();
            }
        }
    }
}

}  // namespace

TEST(TileLayout, BlockMmaLayoutsMatchThePtxIsaFragmentByFragment) {
    // 2 x 2 warps, each with 2 x 2 accumulator fragments, 2 k fragments.
    const Block c{64, 32, 2, 2}, a{64, 32, 2, 2}, b{32, 32, 2, 2};
    const LinearLayout acc = mma_accumulator_layout(64, 32, 2, 2);
    const LinearLayout la = mma_a_layout(64, 32, 2, 2), lb = mma_b_layout(32, 32, 2, 2);
    EXPECT_EQ(acc.in_size("register"), 4 * 2 * 2);
    EXPECT_EQ(la.in_size("register"), 8 * 2 * 2);
    EXPECT_EQ(lb.in_size("register"), 4 * 2 * 2);
    expect_block_matches_spec(acc, c, &Block::accumulator);
    expect_block_matches_spec(la, a, &Block::a);
    expect_block_matches_spec(lb, b, &Block::b);
    // Other arrangements: 4 x 1 and 1 x 4 warps, a 128 x 128 x 32 block.
    for (auto [wm, wn] : {std::pair{4, 1}, std::pair{1, 4}, std::pair{2, 2}}) {
        SCOPED_TRACE(std::to_string(wm) + " x " + std::to_string(wn) + " warps");
        expect_block_matches_spec(mma_accumulator_layout(128, 128, wm, wn), {128, 128, wm, wn},
                                  &Block::accumulator);
        expect_block_matches_spec(mma_a_layout(128, 32, wm, wn), {128, 32, wm, wn}, &Block::a);
        expect_block_matches_spec(mma_b_layout(32, 128, wm, wn), {32, 128, wm, wn}, &Block::b);
    }
}

TEST(TileLayout, BlockAccumulatorIsBijectiveAndOperandsAreReplicatedAcrossTheOtherWarps) {
    const LinearLayout acc = mma_accumulator_layout(64, 32, 2, 2);
    EXPECT_TRUE(acc.is_bijective()) << acc.to_string();
    const LinearLayout a = mma_a_layout(64, 32, 2, 2), b = mma_b_layout(32, 32, 2, 2);
    for (const LinearLayout *l : {&a, &b}) {
        EXPECT_TRUE(l->is_surjective()) << l->to_string();
        EXPECT_FALSE(l->is_bijective()) << l->to_string();
    }
    // Exactly: each element of A is held by the warps_n warps of its row
    // of warps, at the same register and lane in each; B likewise by the
    // warps_m warps of its column.
    for (const auto &[element, n] : holders(a)) EXPECT_EQ(n, 2) << "A" << element.first;
    for (const auto &[element, n] : holders(b)) EXPECT_EQ(n, 2) << "B" << element.first;
    EXPECT_EQ(holders(a).size(), 64u * 32u);
    EXPECT_EQ(holders(b).size(), 32u * 32u);
    for (int lane = 0; lane < 32; lane++) {
        for (int r = 0; r < a.in_size("register"); r++) {
            for (int wm = 0; wm < 2; wm++) {
                EXPECT_EQ(a.apply({r, lane, 2 * wm}), a.apply({r, lane, 2 * wm + 1}));
                EXPECT_EQ(b.apply({r % b.in_size("register"), lane, wm}),
                          b.apply({r % b.in_size("register"), lane, wm + 2}));
            }
            // The other warp axis moves A's element by a warp's rows.
            EXPECT_EQ(a.apply({r, lane, 2})[0], a.apply({r, lane, 0})[0] + 32);
        }
    }
    // One warp, one fragment: the single-fragment layouts.
    EXPECT_EQ(mma_accumulator_layout(16, 8, 1, 1), mma_m16n8k16_accumulator());
    EXPECT_EQ(mma_a_layout(16, 16, 1, 1), mma_m16n8k16_a());
    EXPECT_EQ(mma_b_layout(16, 8, 1, 1), mma_m16n8k16_b());
    EXPECT_NE(mma_accumulator_layout(32, 16, 2, 1), mma_accumulator_layout(32, 16, 1, 2));
}

TEST(TileLayout, BlockedLayoutsForSeveralWarps) {
    // 128 x 128 halves, vectors of 8, 4 warps: coalesced rows of 16
    // lanes, each warp its own rows, every element once.
    for (auto [rows, cols, vector, warps] :
         {std::tuple{128, 128, 8, 4}, std::tuple{64, 32, 4, 4}, std::tuple{16, 8, 2, 8}}) {
        const LinearLayout l = blocked_layout(rows, cols, vector, warps);
        SCOPED_TRACE(l.to_string());
        EXPECT_TRUE(l.is_surjective());
        EXPECT_EQ(l.is_bijective(), rows * cols >= 32 * warps * std::min(vector, cols));
        std::map<int, std::set<int>> rows_of_warp;
        for (int w = 0; w < warps; w++) {
            for (int lane = 0; lane < 32; lane++) {
                for (int r = 0; r < l.in_size("register"); r++) {
                    rows_of_warp[w].insert(l.apply({r, lane, w})[0]);
                }
            }
        }
        if (rows >= 32 * warps * vector / cols) {
            for (int w = 1; w < warps; w++) {
                for (int row : rows_of_warp[w]) EXPECT_EQ(rows_of_warp[0].count(row), 0u);
            }
        }
    }
}

TEST(TileLayout, TransposedSwizzleKeepsColumnsInChunksWithoutConflicts) {
    for (int rows : {64, 32, 16}) {  // k of a column: 128, 64, 32 bytes
        const LinearLayout l = swizzled_shared_layout_transposed(rows, 64, 2);
        ASSERT_TRUE(l.is_bijective()) << l.to_string();
        const LinearLayout where = l.invert();
        for (int c = 0; c < 64; c++) {
            for (int r = 0; r < rows; r++) {
                // Chunks of 8 elements down a column, whole.
                EXPECT_EQ(where.apply({r, c})[0], where.apply({r / 8 * 8, c})[0] + r % 8);
            }
        }
        // ldmatrix without .trans: 8 columns at one chunk of rows.
        for (int c0 = 0; c0 < 64; c0 += 8) {
            for (int r = 0; r < rows; r += 8) {
                std::set<int> groups;
                for (int c = c0; c < c0 + 8; c++)
                    groups.insert(where.apply({r, c})[0] * 2 / 16 % 8);
                EXPECT_EQ(groups.size(), 8u) << rows << " rows, columns " << c0 << "+, row " << r;
            }
        }
    }
}

namespace {

/** Checks a plan element by element: each thread's destination register
 * i holds, where the plan says to find it, the element the destination
 * layout puts there. */
void expect_plan_moves_every_element(const LinearLayout &from, const LinearLayout &to,
                                     const ConversionPlan &plan) {
    const int warps = to.in_size("warp");
    for (int w = 0; w < warps; w++) {
        for (int lane = 0; lane < 32; lane++) {
            for (int i = 0; i < to.in_size("register"); i++) {
                const std::vector<int> want = to.apply({i, lane, w});
                int src_lane = lane;
                if (plan.kind == ConversionPlan::Shuffles) {
                    src_lane = plan.lane_constant[i];
                    for (int b = 0; b < 5; b++) {
                        if ((lane >> b) & 1) src_lane ^= plan.lane_bases[b];
                    }
                }
                ASSERT_EQ(from.apply({plan.source_register[i], src_lane, w}), want)
                    << "register " << i << ", lane " << lane << ", warp " << w;
            }
        }
    }
}

}  // namespace

TEST(TileLayout, SlicesDropTheAxisAndLeaveItsLanesHoldingTheSameResult) {
    const LinearLayout acc = mma_accumulator_layout(64, 32, 2, 2);
    const LinearLayout rows = slice_layout(acc, 1), cols = slice_layout(acc, 0);
    // 32 rows per warp row: 2 fragments of 16, 2 rows (g, g + 8) each.
    EXPECT_EQ(rows.in_size("register"), 4);
    EXPECT_EQ(cols.in_size("register"), 4);  // 2 fragments of 8, pairs
    ASSERT_EQ(rows.outs().size(), 1u);
    EXPECT_EQ(rows.outs()[0].name, "row");
    EXPECT_EQ(cols.outs()[0].name, "col");
    // Every thread of the block holds, at register j of the slice, the
    // row of its register j's elements in the accumulator.
    const std::vector<int> kept = sliced_register_bits(acc, 1);
    for (int w = 0; w < 4; w++) {
        for (int lane = 0; lane < 32; lane++) {
            for (int i = 0; i < acc.in_size("register"); i++) {
                int j = 0;
                for (size_t b = 0; b < kept.size(); b++) j |= ((i >> kept[b]) & 1) << b;
                EXPECT_EQ(rows.apply({j, lane, w})[0], acc.apply({i, lane, w})[0]);
            }
        }
    }
    // A quad's lanes and the warps of a warp row hold each row.
    EXPECT_TRUE(rows.is_surjective());
    EXPECT_EQ(rows.apply({1, 3, 1}), rows.apply({1, 0, 0}));
    EXPECT_EQ(blocked_layout_1d(64, 4).in_size("register"), 1);
    EXPECT_TRUE(blocked_layout_1d(256, 4).is_bijective());
    EXPECT_EQ(blocked_layout_1d(16, 2).in_size("register"), 1);
}

TEST(TileLayout, ConversionPlansTakeTheCheapestWayThatExists) {
    // Attention's P: the accumulator of one warp row's m16n8 fragments is
    // the A operand of the next mma, register for register.
    for (auto [rows, cols, wm] :
         {std::tuple{16, 16, 1}, std::tuple{64, 64, 4}, std::tuple{128, 32, 8}}) {
        const LinearLayout acc = mma_accumulator_layout(rows, cols, wm, 1),
                           a = mma_a_layout(rows, cols, wm, 1);
        const ConversionPlan plan = plan_conversion(acc, a);
        EXPECT_EQ(plan.kind, ConversionPlan::Registers) << rows << " x " << cols;
        expect_plan_moves_every_element(acc, a, plan);
    }
    // With warps along the columns, A is replicated where the accumulator
    // is not: through shared memory.
    EXPECT_EQ(
        plan_conversion(mma_accumulator_layout(64, 64, 2, 2), mma_a_layout(64, 64, 2, 2)).kind,
        ConversionPlan::SharedMemory);
    // A register bit and a lane bit exchanged: which register a lane
    // reads would depend on the lane, so shared memory.
    const LinearLayout acc = mma_m16n8k16_accumulator();
    const LinearLayout swapped({{"register", {{1, 0}, {8, 0}}},
                                {"lane", {{0, 2}, {0, 4}, {0, 1}, {2, 0}, {4, 0}}},
                                {"warp", {}}},
                               {{"row", 16}, {"col", 8}});
    EXPECT_EQ(plan_conversion(acc, swapped).kind, ConversionPlan::SharedMemory);
    // A lane bit's elements gathered into registers of every lane that
    // differs in it (each pair of lanes holds both rows): one shuffle per
    // register, from a lane that depends on the register.
    const LinearLayout gathered({{"register", {{0, 1}, {8, 0}, {1, 0}}},
                                 {"lane", {{0, 2}, {0, 4}, {0, 0}, {2, 0}, {4, 0}}},
                                 {"warp", {}}},
                                {{"row", 16}, {"col", 8}});
    ConversionPlan plan = plan_conversion(acc, gathered);
    EXPECT_EQ(plan.kind, ConversionPlan::Shuffles);
    EXPECT_EQ(plan.lane_constant[4], 4);
    expect_plan_moves_every_element(acc, gathered, plan);
    // Lanes permuted among themselves.
    const LinearLayout permuted({{"register", {{0, 1}, {8, 0}}},
                                 {"lane", {{1, 0}, {2, 0}, {4, 0}, {0, 2}, {0, 4}}},
                                 {"warp", {}}},
                                {{"row", 16}, {"col", 8}});
    plan = plan_conversion(acc, permuted);
    EXPECT_EQ(plan.kind, ConversionPlan::Shuffles);
    expect_plan_moves_every_element(acc, permuted, plan);
    // A blocked tile into the accumulator: registers depend on the lane.
    EXPECT_EQ(plan_conversion(blocked_layout(16, 8, 4, 1), acc).kind, ConversionPlan::SharedMemory);
    // The same layout: registers, each its own.
    plan = plan_conversion(acc, acc);
    EXPECT_EQ(plan.kind, ConversionPlan::Registers);
    EXPECT_EQ(plan.source_register, (std::vector<int>{0, 1, 2, 3}));
    // Slices of the accumulator into a row-replicated broadcast of them.
    const LinearLayout rows = slice_layout(mma_accumulator_layout(64, 32, 4, 1), 1);
    plan = plan_conversion(rows, rows);
    EXPECT_EQ(plan.kind, ConversionPlan::Registers);
    expect_plan_moves_every_element(rows, rows, plan);
}
