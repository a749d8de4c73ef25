// Linear layouts over GF(2), and the layouts of tile programs built on them.
#include "tile/Layout.h"

#include <algorithm>
#include <sstream>

#include "loom/Error.h"

namespace loom {
namespace internal {
namespace tile {

int log2_exact(int64_t n) {
    internal_assert(n > 0 && (n & (n - 1)) == 0) << n << " is not a power of two";
    int b = 0;
    while ((int64_t(1) << b) < n) b++;
    return b;
}

LinearLayout::LinearLayout(std::vector<InDim> ins, std::vector<OutDim> outs)
    : ins_(std::move(ins)), outs_(std::move(outs)) {
    internal_assert(out_bits() <= 64) << "a layout of more than 2^64 elements";
    for (const InDim &in : ins_) {
        for (const std::vector<int> &base : in.bases) {
            internal_assert(base.size() == outs_.size())
                << "a basis of " << in.name << " has " << base.size() << " coordinates for "
                << outs_.size() << " output dimensions";
            for (size_t o = 0; o < outs_.size(); o++) {
                internal_assert(base[o] >= 0 && base[o] < outs_[o].size)
                    << "a basis of " << in.name << " leaves " << outs_[o].name;
            }
        }
    }
}

int LinearLayout::in_size(const std::string &name) const {
    for (const InDim &in : ins_) {
        if (in.name == name) return 1 << in.bases.size();
    }
    return 1;
}

int LinearLayout::out_size(const std::string &name) const {
    for (const OutDim &o : outs_) {
        if (o.name == name) return o.size;
    }
    return 1;
}

int64_t LinearLayout::total_in_size() const {
    int64_t n = 1;
    for (const InDim &in : ins_) n <<= in.bases.size();
    return n;
}

int64_t LinearLayout::total_out_size() const {
    int64_t n = 1;
    for (const OutDim &o : outs_) n *= o.size;
    return n;
}

int LinearLayout::out_bits() const {
    int b = 0;
    for (const OutDim &o : outs_) b += log2_exact(o.size);
    return b;
}

std::vector<uint64_t> LinearLayout::columns() const {
    std::vector<uint64_t> cols;
    for (const InDim &in : ins_) {
        for (const std::vector<int> &base : in.bases) {
            uint64_t mask = 0;
            int shift = 0;
            for (size_t o = 0; o < outs_.size(); o++) {
                mask |= uint64_t(base[o]) << shift;
                shift += log2_exact(outs_[o].size);
            }
            cols.push_back(mask);
        }
    }
    return cols;
}

namespace {

/** The rank over GF(2) of a set of bit vectors. */
int rank_of(std::vector<uint64_t> v) {
    int rank = 0;
    for (int bit = 63; bit >= 0; bit--) {
        auto pivot =
            std::find_if(v.begin() + rank, v.end(), [&](uint64_t x) { return (x >> bit) & 1; });
        if (pivot == v.end()) continue;
        std::swap(v[rank], *pivot);
        for (size_t i = 0; i < v.size(); i++) {
            if (int(i) != rank && ((v[i] >> bit) & 1)) v[i] ^= v[rank];
        }
        rank++;
    }
    return rank;
}

}  // namespace

std::vector<int> LinearLayout::apply(const std::vector<int> &in) const {
    internal_assert(in.size() == ins_.size()) << "a layout applied to the wrong number of indices";
    const std::vector<uint64_t> cols = columns();
    uint64_t mask = 0;
    size_t c = 0;
    for (size_t d = 0; d < ins_.size(); d++) {
        internal_assert(in[d] >= 0 && in[d] < (1 << ins_[d].bases.size()))
            << "index " << in[d] << " of " << ins_[d].name << " is out of range";
        for (size_t b = 0; b < ins_[d].bases.size(); b++, c++) {
            if ((in[d] >> b) & 1) mask ^= cols[c];
        }
    }
    std::vector<int> out;
    for (const OutDim &o : outs_) {
        out.push_back(int(mask & uint64_t(o.size - 1)));
        mask >>= log2_exact(o.size);
    }
    return out;
}

std::map<std::string, int> LinearLayout::apply_named(const std::map<std::string, int> &in) const {
    std::vector<int> v;
    for (const InDim &d : ins_) {
        auto it = in.find(d.name);
        v.push_back(it == in.end() ? 0 : it->second);
    }
    for (const auto &[name, _] : in) {
        internal_assert(
            std::any_of(ins_.begin(), ins_.end(), [&](const InDim &d) { return d.name == name; }))
            << "the layout has no input " << name;
    }
    std::vector<int> r = apply(v);
    std::map<std::string, int> out;
    for (size_t o = 0; o < outs_.size(); o++) out[outs_[o].name] = r[o];
    return out;
}

bool LinearLayout::is_surjective() const { return rank_of(columns()) == out_bits(); }

bool LinearLayout::is_bijective() const {
    return int(columns().size()) == out_bits() && is_surjective();
}

LinearLayout LinearLayout::invert() const {
    internal_assert(is_bijective()) << "only a bijective layout has an inverse: " << to_string();
    const int n = out_bits();
    // Gauss-Jordan on [M | I], M's column j being input bit j's image.
    std::vector<uint64_t> rows(n, 0), inv(n, 0);  // rows[i]: bit j = M[i][j]
    const std::vector<uint64_t> cols = columns();
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < n; i++) rows[i] |= ((cols[j] >> i) & 1) << j;
    }
    for (int i = 0; i < n; i++) inv[i] = uint64_t(1) << i;
    for (int c = 0; c < n; c++) {
        int p = c;
        while (!((rows[p] >> c) & 1)) p++;
        std::swap(rows[c], rows[p]);
        std::swap(inv[c], inv[p]);
        for (int i = 0; i < n; i++) {
            if (i != c && ((rows[i] >> c) & 1)) {
                rows[i] ^= rows[c];
                inv[i] ^= inv[c];
            }
        }
    }
    // inv is M^-1 by rows: input bit i of the original = XOR over output
    // bits j with inv[i] bit j. The inverse's basis for output bit j is the
    // original input bits i whose inv[i] has bit j.
    std::vector<InDim> new_ins;
    int j = 0;
    for (const OutDim &o : outs_) {
        InDim d{o.name, {}};
        for (int b = 0; b < log2_exact(o.size); b++, j++) {
            std::vector<int> base;
            int i = 0;
            for (const InDim &orig : ins_) {
                int v = 0;
                for (size_t k = 0; k < orig.bases.size(); k++, i++) {
                    if ((inv[i] >> j) & 1) v |= 1 << k;
                }
                base.push_back(v);
            }
            d.bases.push_back(base);
        }
        new_ins.push_back(d);
    }
    std::vector<OutDim> new_outs;
    for (const InDim &orig : ins_) new_outs.push_back({orig.name, 1 << orig.bases.size()});
    return LinearLayout(new_ins, new_outs);
}

LinearLayout LinearLayout::compose_after(const LinearLayout &first) const {
    internal_assert(first.outs_.size() == ins_.size()) << "composing layouts of different shapes";
    for (const InDim &d : ins_) {
        internal_assert(first.out_size(d.name) == (1 << d.bases.size()))
            << "composing layouts that disagree about " << d.name;
    }
    std::vector<InDim> new_ins;
    for (const InDim &d : first.ins_) {
        InDim nd{d.name, {}};
        for (size_t b = 0; b < d.bases.size(); b++) {
            std::map<std::string, int> in;
            in[d.name] = 1 << b;
            std::map<std::string, int> mid = first.apply_named(in);
            std::map<std::string, int> out = apply_named(mid);
            std::vector<int> base;
            for (const OutDim &o : outs_) base.push_back(out[o.name]);
            nd.bases.push_back(base);
        }
        new_ins.push_back(nd);
    }
    return LinearLayout(new_ins, outs_);
}

bool LinearLayout::operator==(const LinearLayout &o) const {
    if (ins_.size() != o.ins_.size() || outs_.size() != o.outs_.size()) return false;
    for (size_t d = 0; d < ins_.size(); d++) {
        if (ins_[d].name != o.ins_[d].name || ins_[d].bases != o.ins_[d].bases) return false;
    }
    for (size_t d = 0; d < outs_.size(); d++) {
        if (outs_[d].name != o.outs_[d].name || outs_[d].size != o.outs_[d].size) return false;
    }
    return true;
}

std::string LinearLayout::to_string() const {
    std::ostringstream s;
    for (size_t d = 0; d < ins_.size(); d++) {
        s << (d ? "; " : "") << ins_[d].name << ":";
        for (const std::vector<int> &base : ins_[d].bases) {
            s << " [";
            for (size_t o = 0; o < base.size(); o++) s << (o ? "," : "") << base[o];
            s << "]";
        }
    }
    s << " ->";
    for (const OutDim &o : outs_) s << " " << o.name << " " << o.size;
    return s.str();
}

namespace {

/** (row, col) bases: the unit coordinate of one bit. */
std::vector<int> row_bit(int b) { return {1 << b, 0}; }
std::vector<int> col_bit(int b) { return {0, 1 << b}; }

}  // namespace

LinearLayout blocked_layout(int rows, int cols, int vector, int warps) {
    const int row_bits = log2_exact(rows), col_bits = log2_exact(cols);
    const int vector_bits = std::min(log2_exact(vector), col_bits);
    // The tile's coordinate bits in the order hardware indices take them:
    // along the row first, then down the rows.
    std::vector<std::vector<int>> coordinate_bits;
    for (int b = 0; b < col_bits; b++) coordinate_bits.push_back(col_bit(b));
    for (int b = 0; b < row_bits; b++) coordinate_bits.push_back(row_bit(b));
    size_t next = 0;
    // A hardware bit past the tile's holds the same elements again.
    auto take = [&] {
        return next < coordinate_bits.size() ? coordinate_bits[next++] : std::vector<int>{0, 0};
    };
    LinearLayout::InDim reg{"register", {}}, lane{"lane", {}}, warp{"warp", {}};
    for (int b = 0; b < vector_bits; b++) reg.bases.push_back(take());
    for (int b = 0; b < 5; b++) lane.bases.push_back(take());
    for (int b = 0; b < log2_exact(warps); b++) warp.bases.push_back(take());
    while (next < coordinate_bits.size()) reg.bases.push_back(take());
    return LinearLayout({reg, lane, warp}, {{"row", rows}, {"col", cols}});
}

namespace {

/** The lane bits of every m16n8k16 fragment, g = lane / 4 and t = lane %
 * 4 along the fragment's rows (A, the accumulator) or columns (B). */
LinearLayout::InDim fragment_lanes(bool g_along_rows) {
    if (g_along_rows) return {"lane", {col_bit(1), col_bit(2), row_bit(0), row_bit(1), row_bit(2)}};
    return {"lane", {row_bit(1), row_bit(2), col_bit(0), col_bit(1), col_bit(2)}};
}

/** Warp bits: the low log2(warps_n) of them take the columns above
 * `col_from` (none: the operand is the same for them), the high
 * log2(warps_m) the rows above `row_from`. */
LinearLayout::InDim block_warps(int warps_m, int warps_n, int row_from, int col_from) {
    LinearLayout::InDim warp{"warp", {}};
    for (int b = 0; b < log2_exact(warps_n); b++) {
        warp.bases.push_back(col_from < 0 ? std::vector<int>{0, 0} : col_bit(col_from + b));
    }
    for (int b = 0; b < log2_exact(warps_m); b++) {
        warp.bases.push_back(row_from < 0 ? std::vector<int>{0, 0} : row_bit(row_from + b));
    }
    return warp;
}

void check_block(const char *what, int rows, int cols, int warps_m, int warps_n, int frag_rows,
                 int frag_cols) {
    internal_assert(warps_m > 0 && warps_n > 0 && rows % (warps_m * frag_rows) == 0 &&
                    cols % (warps_n * frag_cols) == 0)
        << what << ": a " << rows << " x " << cols << " tile is not whole " << frag_rows << " x "
        << frag_cols << " fragments for " << warps_m << " x " << warps_n << " warps";
    for (int n : {rows, cols, warps_m, warps_n}) log2_exact(n);
}

}  // namespace

LinearLayout mma_accumulator_layout(int rows, int cols, int warps_m, int warps_n) {
    check_block("mma_accumulator_layout", rows, cols, warps_m, warps_n, 16, 8);
    const int warp_rows = log2_exact(rows / warps_m), warp_cols = log2_exact(cols / warps_n);
    LinearLayout::InDim reg{"register", {col_bit(0), row_bit(3)}};
    for (int b = 3; b < warp_cols; b++) reg.bases.push_back(col_bit(b));  // ni
    for (int b = 4; b < warp_rows; b++) reg.bases.push_back(row_bit(b));  // mi
    return LinearLayout(
        {reg, fragment_lanes(true), block_warps(warps_m, warps_n, warp_rows, warp_cols)},
        {{"row", rows}, {"col", cols}});
}

LinearLayout mma_a_layout(int rows, int k, int warps_m, int warps_n) {
    check_block("mma_a_layout", rows, k, warps_m, 1, 16, 16);
    const int warp_rows = log2_exact(rows / warps_m);
    LinearLayout::InDim reg{"register", {col_bit(0), row_bit(3), col_bit(3)}};
    for (int b = 4; b < log2_exact(k); b++) reg.bases.push_back(col_bit(b));  // ki
    for (int b = 4; b < warp_rows; b++) reg.bases.push_back(row_bit(b));      // mi
    return LinearLayout({reg, fragment_lanes(true), block_warps(warps_m, warps_n, warp_rows, -1)},
                        {{"row", rows}, {"col", k}});
}

LinearLayout mma_b_layout(int k, int cols, int warps_m, int warps_n) {
    check_block("mma_b_layout", k, cols, 1, warps_n, 16, 8);
    const int warp_cols = log2_exact(cols / warps_n);
    LinearLayout::InDim reg{"register", {row_bit(0), row_bit(3)}};
    for (int b = 3; b < warp_cols; b++) reg.bases.push_back(col_bit(b));      // ni
    for (int b = 4; b < log2_exact(k); b++) reg.bases.push_back(row_bit(b));  // ki
    return LinearLayout({reg, fragment_lanes(false), block_warps(warps_m, warps_n, -1, warp_cols)},
                        {{"row", k}, {"col", cols}});
}

LinearLayout mma_m16n8k16_accumulator() { return mma_accumulator_layout(16, 8, 1, 1); }
LinearLayout mma_m16n8k16_a() { return mma_a_layout(16, 16, 1, 1); }
LinearLayout mma_m16n8k16_b() { return mma_b_layout(16, 8, 1, 1); }

LinearLayout blocked_layout_1d(int n, int warps) {
    const int bits = log2_exact(n);
    int next = 0;
    auto take = [&] { return std::vector<int>{next < bits ? 1 << next++ : 0}; };
    LinearLayout::InDim reg{"register", {}}, lane{"lane", {}}, warp{"warp", {}};
    for (int b = 0; b < 5; b++) lane.bases.push_back(take());
    for (int b = 0; b < log2_exact(warps); b++) warp.bases.push_back(take());
    while (next < bits) reg.bases.push_back(take());
    return LinearLayout({reg, lane, warp}, {{"row", n}});
}

namespace {

/** Whether a basis steps along output `axis` (and along no other). */
bool steps_along(const std::vector<int> &base, int axis) {
    bool along = false, other = false;
    for (size_t o = 0; o < base.size(); o++) (int(o) == axis ? along : other) |= base[o] != 0;
    internal_assert(!(along && other))
        << "slicing a layout whose basis steps along several dimensions at once";
    return along;
}

}  // namespace

std::vector<int> sliced_register_bits(const LinearLayout &l, int axis) {
    std::vector<int> kept;
    for (const LinearLayout::InDim &d : l.ins()) {
        if (d.name != "register") continue;
        for (size_t b = 0; b < d.bases.size(); b++) {
            if (!steps_along(d.bases[b], axis)) kept.push_back(int(b));
        }
    }
    return kept;
}

LinearLayout slice_layout(const LinearLayout &l, int axis) {
    internal_assert(axis >= 0 && axis < int(l.outs().size()) && l.outs().size() > 1)
        << "slicing dimension " << axis << " off a layout of " << l.outs().size();
    std::vector<LinearLayout::OutDim> outs;
    for (size_t o = 0; o < l.outs().size(); o++) {
        if (int(o) != axis) outs.push_back(l.outs()[o]);
    }
    std::vector<LinearLayout::InDim> ins;
    for (const LinearLayout::InDim &d : l.ins()) {
        LinearLayout::InDim nd{d.name, {}};
        for (const std::vector<int> &base : d.bases) {
            if (d.name == "register" && steps_along(base, axis)) continue;
            std::vector<int> projected;
            for (size_t o = 0; o < base.size(); o++) {
                if (int(o) != axis) projected.push_back(steps_along(base, axis) ? 0 : base[o]);
            }
            nd.bases.push_back(projected);
        }
        ins.push_back(nd);
    }
    return LinearLayout(ins, outs);
}

LinearLayout swizzled_shared_layout(int rows, int cols, int elem_bytes) {
    internal_assert(16 % elem_bytes == 0) << "elements of " << elem_bytes << " bytes";
    const int per_chunk = 16 / elem_bytes;
    internal_assert(cols % per_chunk == 0)
        << "rows of " << cols << " elements are not whole 16-byte chunks";
    const int chunk_bits = log2_exact(per_chunk), chunks_bits = log2_exact(cols / per_chunk);
    // Rows narrower than a 128-byte line share one: 2^phase_shift rows per
    // line, which the swizzle then tells apart by the rows above them.
    const int phase_shift = std::max(0, 3 - chunks_bits);
    const int swizzle_bits = std::min(chunks_bits, 3);
    LinearLayout::InDim offset{"offset", {}};
    // Within a chunk: the columns themselves.
    for (int b = 0; b < chunk_bits; b++) offset.bases.push_back(col_bit(b));
    // Stored chunk p of row r holds logical chunk p ^ ((r >> phase_shift)
    // % 2^swizzle_bits).
    for (int b = 0; b < chunks_bits; b++) offset.bases.push_back(col_bit(chunk_bits + b));
    for (int b = 0; b < log2_exact(rows); b++) {
        std::vector<int> base = row_bit(b);
        const int k = b - phase_shift;
        if (k >= 0 && k < swizzle_bits) base[1] = 1 << (chunk_bits + k);
        offset.bases.push_back(base);
    }
    return LinearLayout({offset}, {{"row", rows}, {"col", cols}});
}

LinearLayout swizzled_shared_layout_transposed(int rows, int cols, int elem_bytes) {
    const LinearLayout l = swizzled_shared_layout(cols, rows, elem_bytes);
    LinearLayout::InDim offset{"offset", {}};
    for (const std::vector<int> &base : l.ins()[0].bases)
        offset.bases.push_back({base[1], base[0]});
    return LinearLayout({offset}, {{"row", rows}, {"col", cols}});
}

}  // namespace tile
}  // namespace internal
}  // namespace loom
