// Layouts of tile values: which thread and register hold which element of a
// tile, and where in shared memory each element lives.
//
// A layout is linear in the sense of Triton's linear layouts: it maps the
// bits of hardware indices (a register, a lane, a warp; or an offset in
// memory) to the bits of tile coordinates (row, column), and the
// coordinates of an index are the XOR of the images of its set bits. The
// layouts tile programs need on power-of-two tiles are all of this form:
// blocked layouts (a thread's vector of contiguous elements, lanes and
// warps tiling the rest), the fragments of mma.sync (accumulator, A and B
// operands), what ldmatrix loads, and shared-memory layouts swizzled by
// XOR so that ldmatrix and vector stores hit distinct banks. One
// representation gives every question one answer: whether a layout covers
// its tile once (bijective), where another layout keeps an element
// (compose with an inverse), which lanes a conversion must exchange.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom {
namespace internal {
namespace tile {

class LinearLayout {
  public:
    /** One input dimension (e.g. "register", "lane", "warp", "offset"):
     * bases[b] holds the output coordinates that bit b of the index maps
     * to, one per output dimension. Its size is 2^bases.size(). */
    struct InDim {
        std::string name;
        std::vector<std::vector<int>> bases;
    };
    /** One output dimension (e.g. "row", "col") of a power-of-two size. */
    struct OutDim {
        std::string name;
        int size;
    };

    LinearLayout() = default;
    /** Checks that the bases fit the output sizes (an InternalError if
     * not: layouts are made by the compiler). */
    LinearLayout(std::vector<InDim> ins, std::vector<OutDim> outs);

    const std::vector<InDim> &ins() const { return ins_; }
    const std::vector<OutDim> &outs() const { return outs_; }
    int in_size(const std::string &name) const;
    int out_size(const std::string &name) const;
    /** The product of the input sizes / the output sizes. */
    int64_t total_in_size() const;
    int64_t total_out_size() const;

    /** The coordinates (one per output dimension, in order) of the element
     * at these input indices (one per input dimension, in order). */
    std::vector<int> apply(const std::vector<int> &in) const;
    /** The same by name; input dimensions not named are 0. */
    std::map<std::string, int> apply_named(const std::map<std::string, int> &in) const;

    /** Whether every element of the tile is at exactly one index. */
    bool is_bijective() const;
    /** Whether every element is at one index at least (some elements may
     * be held more than once, as a broadcast is). */
    bool is_surjective() const;
    /** The inverse of a bijective layout: tile coordinates to indices. */
    LinearLayout invert() const;
    /** This layout after `first`: first's outputs feed this layout's
     * inputs, matched by name and size. */
    LinearLayout compose_after(const LinearLayout &first) const;

    bool operator==(const LinearLayout &o) const;
    bool operator!=(const LinearLayout &o) const { return !(*this == o); }

    /** "register: [0,1] [0,2]; lane: [0,4] ... -> row 16, col 8". */
    std::string to_string() const;

  private:
    std::vector<InDim> ins_;
    std::vector<OutDim> outs_;
    /** The layout as a matrix over GF(2): one column (a bit mask of the
     * concatenated output bits) per bit of the concatenated input bits. */
    std::vector<uint64_t> columns() const;
    int out_bits() const;
};

/** log2 of a power of two (an InternalError otherwise). */
int log2_exact(int64_t n);

// ---- The layouts of tile programs. "row" and "col" are the outputs.

/** A blocked layout of a rows x cols tile for `warps` warps of 32 lanes:
 * each thread holds `vector` contiguous elements of a row, consecutive
 * lanes hold consecutive vectors along the row (coalesced accesses), then
 * further rows; warps take further rows; what is left repeats in more
 * registers. */
LinearLayout blocked_layout(int rows, int cols, int vector, int warps);

/** The fragments of mma.sync.aligned.m16n8k16 for one warp (PTX ISA,
 * "Matrix Fragments for mma.m16n8k16"): with g = lane / 4 and t = lane % 4,
 *  - the f32 accumulator (16 x 8, 4 registers): c_i at (g + 8 * (i / 2),
 *    2 t + i % 2);
 *  - the f16/bf16 A operand (16 x 16, 8 halves): a_i at (g + 8 * (i / 2 %
 *    2), 2 t + i % 2 + 8 * (i / 4));
 *  - the f16/bf16 B operand (16 x 8, k x n, 4 halves): b_i at (2 t + i % 2
 *    + 8 * (i / 2), g).
 * These are the one-warp, one-fragment cases of the block layouts below
 * (whose warp input then has no bits). */
LinearLayout mma_m16n8k16_accumulator();
LinearLayout mma_m16n8k16_a();
LinearLayout mma_m16n8k16_b();

/** A block's tiles for mma.sync m16n8k16 computed by warps_m x warps_n
 * warps (inputs register, lane, warp; all sizes powers of two). Warp
 * w = wn + warps_n * wm owns the (rows / warps_m) x (cols / warps_n) block
 * of the accumulator at (wm * rows / warps_m, wn * cols / warps_n), as
 * 16 x 8 fragments: register 4 * (ni + NF * mi) + c holds c_c of fragment
 * (mi, ni), NF = cols / warps_n / 8. */
LinearLayout mma_accumulator_layout(int rows, int cols, int warps_m, int warps_n);
/** The A operand (rows x k) of that product: warp wm's rows, all of k,
 * the same in each of the warps_n warps (their warp bits map to nothing:
 * a broadcast); register 8 * (ki + k / 16 * mi) + a holds a_a of
 * fragment (mi, ki). Registers count halves: word j packs 2j and 2j + 1,
 * as mma.sync takes them. */
LinearLayout mma_a_layout(int rows, int k, int warps_m, int warps_n);
/** The B operand (k x cols): warp wn's columns, all of k, the same in each
 * of the warps_m warps; register 4 * (ni + NF * ki) + b holds b_b of
 * fragment (ki, ni). */
LinearLayout mma_b_layout(int k, int cols, int warps_m, int warps_n);

/** A 1-D tile of n elements for `warps` warps: consecutive lanes hold
 * consecutive elements, then warps, then further registers; a hardware
 * bit past the tile's holds the same elements again. Output "row". */
LinearLayout blocked_layout_1d(int n, int warps);

/** The layout of l's tile with output dimension `axis` removed: where a
 * reduction along `axis` leaves its results, and what a broadcast along
 * `axis` reads. Register bits that step along `axis` are dropped (their
 * elements are combined in the thread); lane and warp bits that step
 * along it map to nothing (those threads hold the same result). Each basis
 * of l must step along one output dimension at most (true of the blocked
 * and mma layouts; an InternalError otherwise). */
LinearLayout slice_layout(const LinearLayout &l, int axis);

/** The register bits of l that slice_layout(l, axis) keeps, in order:
 * register r of the slice is register sum of bit b of r << kept[b] of l. */
std::vector<int> sliced_register_bits(const LinearLayout &l, int axis);

/** A row-major rows x cols tile of elem_bytes-sized elements in shared
 * memory, swizzled (as CUTLASS's and Triton's are) so that the 8 rows one
 * ldmatrix reads at the same 16-byte column fall in distinct 16-byte bank
 * groups of a 128-byte line: chunk c of row r is stored at chunk
 * c ^ ((r / per_line) % chunks), where per_line rows share a line when a
 * row is narrower than 128 bytes, and chunks is the row's chunk count (at
 * most 8). Input "offset" (elements), outputs "row" and "col"; the inverse
 * maps an element to its offset. */
LinearLayout swizzled_shared_layout(int rows, int cols, int elem_bytes);
/** The same with the roles of rows and columns exchanged: each column's
 * elements contiguous (16-byte chunks along the column), swizzled by the
 * column. The shared layout of an operand whose global rows run down the
 * tile's columns (a transposed B), so that it is still copied in 16-byte
 * chunks and read by ldmatrix without .trans. */
LinearLayout swizzled_shared_layout_transposed(int rows, int cols, int elem_bytes);

}  // namespace tile
}  // namespace internal
}  // namespace loom
