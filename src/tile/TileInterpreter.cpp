// The host interpreter of tile programs (see the header).
#include "tile/TileInterpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/IRPrinter.h"
#include "lang/Interpreter.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {
namespace tile {

namespace {

/** A tile's values, row-major, each already rounded to `elem`. */
struct HostTile {
    Type elem;
    std::vector<int> shape;
    std::vector<double> v;
};

/** x rounded to an element of type t, as the interpreter stores it. */
double round_to(Type t, double x) {
    if (t == Float(32)) return double(float(x));
    uint8_t bits[8];
    store_element(t, bits, x);
    return load_element(t, bits);
}

uint8_t *element_address(const TileHostBuffer &b, int64_t index) {
    return static_cast<uint8_t *>(b.data) + index * b.elem.bytes();
}

class Instance {
  public:
    Instance(const std::vector<TileHostBuffer> &buffers, std::map<std::string, Expr> env)
        : buffers(buffers), env(std::move(env)) {}

    void run(const std::vector<TileStmt> &body) {
        for (const TileStmt &s : body) {
            if (s.loop) {
                const int64_t lo = integer(s.loop->min), n = integer(s.loop->extent);
                for (int64_t i = lo; i < lo + n; i++) {
                    env[s.loop->var] = Expr(int32_t(i));
                    run(s.loop->body);
                }
                env.erase(s.loop->var);
            } else {
                op(*s.op);
            }
        }
    }

  private:
    const std::vector<TileHostBuffer> &buffers;
    std::map<std::string, Expr> env;
    /** Each value's tiles, one per slot (registers: one). */
    std::map<std::string, std::vector<HostTile>> tiles;

    int64_t integer(const Expr &e) {
        const int64_t *i = as_const_int(evaluate_expr(e, env));
        internal_assert(i) << "tile interpreter: " << e << " is not an integer";
        return *i;
    }

    const TileHostBuffer &buffer(const std::string &name) {
        for (const TileHostBuffer &b : buffers) {
            if (b.name == name) return b;
        }
        internal_error << "tile interpreter: no buffer " << name;
        return buffers[0];
    }

    HostTile &tile(const std::string &name, int64_t slot = 0) {
        auto it = tiles.find(name);
        internal_assert(it != tiles.end()) << "tile interpreter: no value " << name;
        internal_assert(slot >= 0 && slot < int64_t(it->second.size()))
            << "tile interpreter: slot " << slot << " of " << name << ", which has "
            << it->second.size();
        return it->second[slot];
    }

    int64_t slot_of(const TileOp &o) { return o.slot.defined() ? integer(o.slot) : 0; }

    static HostTile blank(const TileType &t, double fill = 0) {
        return {t.elem, t.shape, std::vector<double>(t.elements(), fill)};
    }

    /** Calls f(element index in the tile, offset in the buffer) for each
     * element of a tile of `shape` that o's masks let through. */
    template <typename F>
    void for_each_access(const TileOp &o, const std::vector<int> &shape, F f) {
        const TileHostBuffer &b = buffer(o.buffer);
        const std::vector<int> axes = access_axes(o, shape.size());
        internal_assert(b.strides.size() == axes.size())
            << "tile interpreter: buffer " << b.name << " has " << b.strides.size()
            << " dimensions, its access " << axes.size();
        std::vector<int64_t> origin, bounds;
        for (size_t d = 0; d < axes.size(); d++) {
            origin.push_back(integer(o.origin[d]));
            bounds.push_back(integer(o.bounds[d]));
        }
        int64_t n = 1;
        for (int e : shape) n *= e;
        std::vector<int> index(shape.size(), 0);
        for (int64_t e = 0; e < n; e++) {
            for (int64_t rest = e, a = int64_t(shape.size()) - 1; a >= 0; a--) {
                index[a] = int(rest % shape[a]);
                rest /= shape[a];
            }
            bool inside = true;
            int64_t offset = 0;
            for (size_t d = 0; d < axes.size(); d++) {
                const int64_t coordinate = origin[d] + (axes[d] < 0 ? 0 : index[axes[d]]);
                inside = inside && coordinate < bounds[d];
                offset += coordinate * b.strides[d];
            }
            if (inside) f(e, offset);
        }
    }

    void op(const TileOp &o) {
        const TileType &t = o.type;
        switch (o.kind) {
        case TileOpKind::Zeros: tiles[o.result] = {blank(t)}; break;
        case TileOpKind::Load: {
            const TileHostBuffer &b = buffer(o.buffer);
            HostTile h = blank(t);
            for_each_access(o, t.shape, [&](int64_t e, int64_t offset) {
                h.v[e] = round_to(t.elem, load_element(b.elem, element_address(b, offset)));
            });
            tiles[o.result] = {h};
            break;
        }
        case TileOpKind::AsyncCopy: {
            const TileHostBuffer &b = buffer(o.buffer);
            std::vector<HostTile> &slots = tiles[o.result];
            // A slot no copy wrote holds NaNs: reading it is the program's bug.
            if (int(slots.size()) != t.slots) slots.assign(t.slots, blank(t, NAN));
            const int64_t slot = slot_of(o);
            internal_assert(slot >= 0 && slot < t.slots)
                << "tile interpreter: async_copy " << o.result << " into slot " << slot << " of "
                << t.slots;
            HostTile h = blank(t);
            for_each_access(o, t.shape, [&](int64_t e, int64_t offset) {
                h.v[e] = round_to(t.elem, load_element(b.elem, element_address(b, offset)));
            });
            slots[slot] = h;
            break;
        }
        case TileOpKind::AsyncCommit:
        case TileOpKind::AsyncWait:
        case TileOpKind::Barrier: break;  // no threads here: nothing is in flight
        case TileOpKind::ConvertLayout: tiles[o.result] = {tile(o.operands[0], slot_of(o))}; break;
        case TileOpKind::Dot: {
            const HostTile a = tile(o.operands[0]), b = tile(o.operands[1]),
                           c = tile(o.operands[2]);
            const int M = a.shape[0], K = a.shape[1], N = b.shape[1];
            HostTile d = blank(t);
            for (int i = 0; i < M; i++) {
                for (int j = 0; j < N; j++) {
                    double acc = c.v[i * N + j];
                    for (int k = 0; k < K; k++) {
                        acc = round_to(t.elem, acc + a.v[i * K + k] * b.v[k * N + j]);
                    }
                    d.v[i * N + j] = acc;
                }
            }
            tiles[o.result] = {d};
            break;
        }
        case TileOpKind::Map: {
            HostTile h = blank(t);
            // The function may read the program's scalars besides _0, _1, ...
            std::map<std::string, Expr> args = env;
            for (int64_t i = 0; i < t.elements(); i++) {
                for (size_t k = 0; k < o.operands.size(); k++) {
                    const HostTile &in = tile(o.operands[k]);
                    args["_" + std::to_string(k)] = internal::make_const(in.elem, in.v[i]);
                }
                const int64_t cols = t.shape.back();
                args["_i0"] = Expr(int(t.shape.size() == 2 ? i / cols : i));
                args["_i1"] = Expr(int(i % cols));
                // Math intrinsics, selects, comparisons and casts are
                // evaluate_expr's, with the host's math library.
                Expr v = evaluate_expr(o.fn, args);
                const double *f = as_const_float(v);
                const int64_t *i64 = as_const_int(v);
                const uint64_t *u64 = as_const_uint(v);
                internal_assert(f || i64 || u64)
                    << "tile interpreter: map " << o.result << " gave " << v;
                h.v[i] = round_to(t.elem, f ? *f : i64 ? double(*i64) : double(*u64));
            }
            tiles[o.result] = {h};
            break;
        }
        case TileOpKind::Reduce: {
            const HostTile &in = tile(o.operands[0]);
            const int R = in.shape[0], C = in.shape[1];
            HostTile h = blank(t);
            int n = o.axis == 1 ? C : R;
            if (!o.bounds.empty()) n = std::max(0, std::min<int>(n, int(integer(o.bounds[0]))));
            for (int i = 0; i < t.shape[0]; i++) {
                double acc = o.reduction == "sum"   ? 0.0
                             : o.reduction == "max" ? -INFINITY
                                                    : INFINITY;
                for (int k = 0; k < n; k++) {
                    const double x = o.axis == 1 ? in.v[i * C + k] : in.v[k * C + i];
                    // From the identity, as every translation combines.
                    if (o.reduction == "sum") acc = round_to(t.elem, acc + x);
                    else if (o.reduction == "max") acc = acc > x ? acc : x;
                    else acc = acc < x ? acc : x;
                }
                h.v[i] = acc;
            }
            tiles[o.result] = {h};
            break;
        }
        case TileOpKind::Broadcast: {
            const HostTile &in = tile(o.operands[0]);
            HostTile h = blank(t);
            for (int r = 0; r < t.shape[0]; r++) {
                for (int c = 0; c < t.shape[1]; c++) {
                    h.v[r * t.shape[1] + c] = round_to(t.elem, in.v[o.axis == 1 ? r : c]);
                }
            }
            tiles[o.result] = {h};
            break;
        }
        case TileOpKind::Store: {
            const HostTile &v = tile(o.operands[0]);
            const TileHostBuffer &b = buffer(o.buffer);
            for_each_access(o, v.shape, [&](int64_t e, int64_t offset) {
                store_element(b.elem, element_address(b, offset), v.v[e]);
            });
            break;
        }
        default:
            internal_error << "tile interpreter: the op of " << o.result
                           << " is not interpreted yet";
        }
    }
};

}  // namespace

void interpret_tile_program(const TileProgram &p, const std::vector<TileHostBuffer> &buffers,
                            const std::map<std::string, Expr> &scalars,
                            const std::vector<int> &grid) {
    verify(p);
    internal_assert(grid.size() == p.grid.size())
        << "tile interpreter: one extent per grid variable";
    std::map<std::string, Expr> env = scalars;
    std::vector<int> at(grid.size(), 0);
    for (int e : grid) {
        if (e <= 0) return;
    }
    while (true) {
        for (size_t i = 0; i < grid.size(); i++) env[p.grid[i]] = Expr(int32_t(at[i]));
        Instance(buffers, env).run(p.body);
        size_t d = 0;
        while (d < at.size() && ++at[d] == grid[d]) at[d++] = 0;
        if (d == at.size()) return;
    }
}

}  // namespace tile
}  // namespace internal
}  // namespace loom
