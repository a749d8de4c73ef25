// Planning layout conversions (see the header).
#include "tile/LayoutConversion.h"

#include <cstdint>

#include "loom/Error.h"

namespace loom {
namespace internal {
namespace tile {

namespace {

/** A basis as one bit vector over the concatenated output bits. */
uint64_t flat(const LinearLayout &l, const std::vector<int> &base) {
    uint64_t mask = 0;
    int shift = 0;
    for (size_t o = 0; o < l.outs().size(); o++) {
        mask |= uint64_t(base[o]) << shift;
        shift += log2_exact(l.outs()[o].size);
    }
    return mask;
}

std::vector<uint64_t> flat_bases(const LinearLayout &l, const std::string &in) {
    std::vector<uint64_t> v;
    for (const LinearLayout::InDim &d : l.ins()) {
        if (d.name != in) continue;
        for (const std::vector<int> &base : d.bases) v.push_back(flat(l, base));
    }
    return v;
}

/** Solves x = XOR of some of `vectors` over GF(2): a bit mask of which
 * (by index), or -1 if x is not in their span. */
int64_t solve(const std::vector<uint64_t> &vectors, uint64_t x) {
    // Gauss-Jordan: each kept vector has a pivot bit no other one has.
    struct Row {
        uint64_t v, combination, pivot;
    };
    std::vector<Row> rows;
    for (size_t i = 0; i < vectors.size(); i++) {
        Row r{vectors[i], uint64_t(1) << i, 0};
        for (const Row &k : rows) {
            if (r.v & k.pivot) {
                r.v ^= k.v;
                r.combination ^= k.combination;
            }
        }
        if (!r.v) continue;
        r.pivot = r.v & -r.v;
        for (Row &k : rows) {
            if (k.v & r.pivot) {
                k.v ^= r.v;
                k.combination ^= r.combination;
            }
        }
        rows.push_back(r);
    }
    uint64_t combination = 0;
    for (const Row &k : rows) {
        if (x & k.pivot) {
            x ^= k.v;
            combination ^= k.combination;
        }
    }
    return x ? -1 : int64_t(combination);
}

/** The index whose bits select the given bases: bit b of the result for
 * each set bit of `combination` in [offset, offset + count). */
int part(int64_t combination, int offset, int count) {
    return int((combination >> offset) & ((int64_t(1) << count) - 1));
}

}  // namespace

std::string to_string(ConversionPlan::Kind k) {
    switch (k) {
    case ConversionPlan::Registers: return "registers";
    case ConversionPlan::Shuffles: return "shuffles";
    default: return "shared memory";
    }
}

ConversionPlan plan_conversion(const LinearLayout &from, const LinearLayout &to) {
    internal_assert(from.outs().size() == to.outs().size())
        << "converting between layouts of different tiles";
    for (size_t o = 0; o < from.outs().size(); o++) {
        // Names may differ: a tile's rows sliced off a 2-D one and its
        // columns sliced off another are the same 1-D tile.
        internal_assert(from.outs()[o].size == to.outs()[o].size)
            << "converting between layouts of different tiles: " << from.to_string() << " and "
            << to.to_string();
    }
    const std::vector<uint64_t> from_reg = flat_bases(from, "register"),
                                from_lane = flat_bases(from, "lane"),
                                from_warp = flat_bases(from, "warp"),
                                to_reg = flat_bases(to, "register"),
                                to_lane = flat_bases(to, "lane"), to_warp = flat_bases(to, "warp");
    ConversionPlan plan;
    const int to_registers = 1 << to_reg.size();
    // Warps must hold the same elements for either of the register plans.
    if (from_warp != to_warp || from_lane.size() != to_lane.size()) return plan;
    // Registers: the lanes agree too, and each destination register's
    // elements are in the span of the source's registers.
    if (from_lane == to_lane) {
        std::vector<int64_t> bits;
        for (uint64_t v : to_reg) bits.push_back(solve(from_reg, v));
        bool ok = true;
        for (int64_t b : bits) ok &= b >= 0;
        if (ok) {
            plan.kind = ConversionPlan::Registers;
            for (int i = 0; i < to_registers; i++) {
                int source = 0;
                for (size_t b = 0; b < bits.size(); b++) {
                    if ((i >> b) & 1) source ^= int(bits[b]);
                }
                plan.source_register.push_back(source);
            }
            return plan;
        }
    }
    // Shuffles: a destination lane bit moves the source lane only (else
    // the register read would depend on the lane).
    std::vector<uint64_t> reg_and_lane = from_reg;
    reg_and_lane.insert(reg_and_lane.end(), from_lane.begin(), from_lane.end());
    const int nr = int(from_reg.size()), nl = int(from_lane.size());
    std::vector<int> lane_bases;
    for (uint64_t v : to_lane) {
        const int64_t c = solve(from_lane, v);
        if (c < 0) return plan;
        lane_bases.push_back(int(c));
    }
    std::vector<int64_t> reg_bits;
    for (uint64_t v : to_reg) {
        const int64_t c = solve(reg_and_lane, v);
        if (c < 0) return plan;
        reg_bits.push_back(c);
    }
    plan.kind = ConversionPlan::Shuffles;
    plan.lane_bases = lane_bases;
    for (int i = 0; i < to_registers; i++) {
        int64_t c = 0;
        for (size_t b = 0; b < reg_bits.size(); b++) {
            if ((i >> b) & 1) c ^= reg_bits[b];
        }
        plan.source_register.push_back(part(c, 0, nr));
        plan.lane_constant.push_back(part(c, nr, nl));
    }
    return plan;
}

}  // namespace tile
}  // namespace internal
}  // namespace loom
