// The tile IR: block-level programs whose values are whole tiles (1-D or
// 2-D, with an element type, a memory space and a layout), one program
// instance per GPU block. Operations: load and store (global memory, with
// the tile's origin and the bounds past which elements are masked, for
// ragged edges), elementwise map, broadcast, reduce along an axis, dot
// (C + A B), layout conversion, and the asynchronous copies into shared
// memory with their commit groups and waits, and barriers. A loop (the
// K loop of a GEMM, the key loop of attention) holds a list of operations;
// values are single-assignment, and a loop's carried values are named by
// the value they update (`%acc = dot %a, %b, %acc`).
//
// Values are named; the verifier checks that each operand is defined
// before it is used and that shapes agree, and the printer writes the
// program as text with each value's type and layout, so that a test or a
// user reads the layouts the compiler chose (docs/tile.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/Expr.h"
#include "tile/Layout.h"

namespace loom {
namespace internal {
namespace tile {

enum class MemorySpace { Registers, Shared };

/** A tile value's type. The layout is null until the compiler assigns it;
 * layout_name says which kind it is ("blocked", "mma_accumulator",
 * "mma_a", "mma_b", "swizzled"), for printing. */
struct TileType {
    Type elem;
    std::vector<int> shape;
    MemorySpace space = MemorySpace::Registers;
    std::shared_ptr<const LinearLayout> layout;
    std::string layout_name;
    /** Shared tiles only: how many copies of the tile the value holds (a
     * ring of buffers for multistage pipelining; copies and conversions
     * name the slot they write or read). */
    int slots = 1;
    int64_t elements() const;
};

enum class TileOpKind {
    Zeros,          // a tile of zeros (an accumulator's start)
    Load,           // from a global buffer
    Store,          // to a global buffer
    Map,            // an elementwise function of same-shaped tiles
    Broadcast,      // a 1-D tile repeated along `axis` of a 2-D one
    Reduce,         // along `axis`
    Dot,            // operands a, b, c: c + a b
    ConvertLayout,  // the same values in `type`'s layout or space
    AsyncCopy,      // global -> shared, 16 bytes per thread and step
    AsyncCommit,    // closes the group of async copies issued so far
    AsyncWait,      // waits until at most `pending` groups are in flight
    Barrier,        // the block's threads meet
};

struct TileOp {
    TileOpKind kind;
    std::string result;  // empty for ops that make no value
    TileType type;       // the result's type
    std::vector<std::string> operands;
    /** Load, Store, AsyncCopy: the global buffer, the coordinates (one per
     * buffer dimension, from the buffer's first element) of the tile's
     * element (0, 0), and the coordinates at or past which elements are
     * masked (not read: zero; not written). `axes` says which tile axis
     * each buffer dimension follows (-1: none, the coordinate stays at the
     * origin's); empty means buffer dimension d is tile axis d. So a
     * transposed operand, a row of bias broadcast down a tile, or one
     * matrix of a batch are each one access. */
    std::string buffer;
    std::vector<Expr> origin, bounds;
    std::vector<int> axes;
    /** AsyncCopy: the slot of its shared value it writes; ConvertLayout
     * from a shared value: the slot it reads. Undefined: slot 0. */
    Expr slot;
    /** Map: a scalar Expr of the Variables _0, _1, ... (the operands'
     * elements) and _i0, _i1 (Int(32): the element's coordinates in the
     * tile, for masks and positions), of the result's element type. */
    Expr fn;
    /** Reduce: when `bounds` holds one Expr, only the elements of the
     * reduced axis before that index take part (a ragged edge); where none
     * does, the result is the reduction's identity (0, -inf or +inf). */
    int axis = -1;          // Broadcast, Reduce
    std::string reduction;  // Reduce: "sum", "max" or "min"
    int pending = 0;        // AsyncWait
    /** Dot: the tensor instruction that computes it (tensorize's), by its
     * registry name; empty until tensorized. */
    std::string instruction;
};

struct TileLoop;

/** An operation or a loop. */
struct TileStmt {
    std::shared_ptr<TileOp> op;
    std::shared_ptr<TileLoop> loop;
};

/** for var in [min, min + extent): body. Values defined in the body are
 * visible after the loop (their last iteration's value). */
struct TileLoop {
    std::string var;
    Expr min, extent;
    std::vector<TileStmt> body;
    /** At most a few steps per program (the key tiles at a mask's edge):
     * code generation need not version it for speed. */
    bool few_steps = false;
};

struct TileProgram {
    std::string name;
    int num_warps = 4;
    /** Grouped rows: how many of the tile's rows hold the program's group
     * (the rest idle, masked in its loads and stores), a program Expr;
     * undefined: all of them. The CPU computes only those rows. */
    Expr live_rows;
    /** The program instance's coordinates: one GPU block each. */
    std::vector<std::string> grid;
    std::vector<TileStmt> body;
};

/** f(op) for each op of `body` and of its loops' bodies, in order. (The
 * ops are shared: f may change them.) */
template <typename F> void for_each_op(const std::vector<TileStmt> &body, const F &f) {
    for (const TileStmt &s : body) {
        if (s.loop) {
            for_each_op(s.loop->body, f);
        } else {
            f(*s.op);
        }
    }
}

/** f(list) for `body` and each loop's body within it: for passes that look
 * along the list an op is in. */
template <typename F> void for_each_list(const std::vector<TileStmt> &body, const F &f) {
    f(body);
    for (const TileStmt &s : body) {
        if (s.loop) for_each_list(s.loop->body, f);
    }
}

/** An op of this kind, result, type and operands (the rest defaulted). */
TileOp make_op(TileOpKind kind, const std::string &result = "", TileType type = TileType(),
               std::vector<std::string> operands = {});

/** An op as a statement of a body. */
TileStmt op_stmt(TileOp o);

/** The Int(32) Variable a map's function reads for its element's
 * coordinate along tile axis `axis` ("_i0", "_i1"). */
Expr tile_coordinate(int axis);
/** Whether `name` is one (its axis in *axis). */
bool is_tile_coordinate(const std::string &name, int *axis = nullptr);

/** The tile axis each buffer dimension of an access follows: o.axes, or
 * the identity when it is empty. */
std::vector<int> access_axes(const TileOp &o, size_t tile_rank);

/** Checks that every operand is defined before use and that the shapes
 * and types of each operation agree; an InternalError naming the value
 * and the mismatch otherwise (tile programs are made by the compiler). */
void verify(const TileProgram &p);

/** The program as text. */
std::string to_string(const TileProgram &p);

}  // namespace tile
}  // namespace internal
}  // namespace loom
