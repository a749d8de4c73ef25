// Layouts of tile values (src/tile/Layout.h): the mma.sync fragments against
// the PTX ISA's tables written out independently, blocked layouts, the
// swizzled shared layout's bank conflicts, inverses and composition.
#include <gtest/gtest.h>

#include <set>

#include "tile/Layout.h"

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
            std::vector<int> rc = l.apply({i, lane});
            EXPECT_EQ(std::make_pair(rc[0], rc[1]), spec(lane, i))
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
        for (int i = 0; i < 4; i++) mismatches += wrong.apply({i, lane}) != right.apply({i, lane});
    }
    EXPECT_GT(mismatches, 0);
}

TEST(TileLayout, InverseAndComposition) {
    const LinearLayout a = mma_m16n8k16_a();
    const LinearLayout inv = a.invert();
    for (int r = 0; r < 16; r++) {
        for (int c = 0; c < 16; c++) {
            std::vector<int> idx = inv.apply({r, c});  // register, lane
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
