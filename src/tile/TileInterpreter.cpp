// The host interpreter of tile programs (see the header).
#include "tile/TileInterpreter.h"

#include <algorithm>
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
    std::map<std::string, HostTile> tiles;

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

    HostTile &tile(const std::string &name) {
        auto it = tiles.find(name);
        internal_assert(it != tiles.end()) << "tile interpreter: no value " << name;
        return it->second;
    }

    void op(const TileOp &o) {
        const TileType &t = o.type;
        switch (o.kind) {
        case TileOpKind::Zeros:
            tiles[o.result] = {t.elem, t.shape, std::vector<double>(t.elements())};
            break;
        case TileOpKind::Load:
        case TileOpKind::AsyncCopy: {
            const TileHostBuffer &b = buffer(o.buffer);
            const int64_t r0 = integer(o.origin[0]), c0 = integer(o.origin[1]);
            const int64_t rows = integer(o.bounds[0]), cols = integer(o.bounds[1]);
            HostTile h{t.elem, t.shape, std::vector<double>(t.elements())};
            for (int r = 0; r < t.shape[0]; r++) {
                for (int c = 0; c < t.shape[1]; c++) {
                    if (r0 + r < rows && c0 + c < cols) {
                        h.v[r * t.shape[1] + c] = round_to(
                            t.elem,
                            load_element(b.elem, element_address(b, (r0 + r) * b.stride + c0 + c)));
                    }
                }
            }
            tiles[o.result] = h;
            break;
        }
        case TileOpKind::AsyncCommit:
        case TileOpKind::AsyncWait:
        case TileOpKind::Barrier: break;  // no threads here: nothing is in flight
        case TileOpKind::ConvertLayout: tiles[o.result] = tile(o.operands[0]); break;
        case TileOpKind::Dot: {
            const HostTile a = tile(o.operands[0]), b = tile(o.operands[1]),
                           c = tile(o.operands[2]);
            const int M = a.shape[0], K = a.shape[1], N = b.shape[1];
            HostTile d{t.elem, t.shape, std::vector<double>(t.elements())};
            for (int i = 0; i < M; i++) {
                for (int j = 0; j < N; j++) {
                    double acc = c.v[i * N + j];
                    for (int k = 0; k < K; k++) {
                        acc = round_to(t.elem, acc + a.v[i * K + k] * b.v[k * N + j]);
                    }
                    d.v[i * N + j] = acc;
                }
            }
            tiles[o.result] = d;
            break;
        }
        case TileOpKind::Map: {
            HostTile h{t.elem, t.shape, std::vector<double>(t.elements())};
            for (int64_t i = 0; i < t.elements(); i++) {
                std::map<std::string, Expr> args;
                for (size_t k = 0; k < o.operands.size(); k++) {
                    const HostTile &in = tile(o.operands[k]);
                    args["_" + std::to_string(k)] = internal::make_const(in.elem, in.v[i]);
                }
                Expr v = evaluate_expr(o.fn, args);
                const double *f = as_const_float(v);
                internal_assert(f) << "tile interpreter: map " << o.result << " gave " << v;
                h.v[i] = round_to(t.elem, *f);
            }
            tiles[o.result] = h;
            break;
        }
        case TileOpKind::Reduce: {
            const HostTile &in = tile(o.operands[0]);
            const int R = in.shape[0], C = in.shape[1];
            HostTile h{t.elem, t.shape, std::vector<double>(t.elements())};
            for (int i = 0; i < t.shape[0]; i++) {
                double acc = 0;
                const int n = o.axis == 1 ? C : R;
                for (int k = 0; k < n; k++) {
                    const double x = o.axis == 1 ? in.v[i * C + k] : in.v[k * C + i];
                    if (k == 0) acc = x;
                    else if (o.reduction == "sum") acc = round_to(t.elem, acc + x);
                    else if (o.reduction == "max") acc = std::max(acc, x);
                    else acc = std::min(acc, x);
                }
                h.v[i] = acc;
            }
            tiles[o.result] = h;
            break;
        }
        case TileOpKind::Broadcast: {
            const HostTile &in = tile(o.operands[0]);
            HostTile h{t.elem, t.shape, std::vector<double>(t.elements())};
            for (int r = 0; r < t.shape[0]; r++) {
                for (int c = 0; c < t.shape[1]; c++) {
                    h.v[r * t.shape[1] + c] = round_to(t.elem, in.v[o.axis == 1 ? r : c]);
                }
            }
            tiles[o.result] = h;
            break;
        }
        case TileOpKind::Store: {
            const HostTile &v = tile(o.operands[0]);
            const TileHostBuffer &b = buffer(o.buffer);
            const int64_t r0 = integer(o.origin[0]), c0 = integer(o.origin[1]);
            const int64_t rows = integer(o.bounds[0]), cols = integer(o.bounds[1]);
            for (int r = 0; r < v.shape[0]; r++) {
                for (int c = 0; c < v.shape[1]; c++) {
                    if (r0 + r < rows && c0 + c < cols) {
                        store_element(b.elem, element_address(b, (r0 + r) * b.stride + c0 + c),
                                      v.v[r * v.shape[1] + c]);
                    }
                }
            }
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
                            const std::map<std::string, int> &scalars,
                            const std::vector<int> &grid) {
    verify(p);
    internal_assert(grid.size() == p.grid.size())
        << "tile interpreter: one extent per grid variable";
    std::map<std::string, Expr> env;
    for (const auto &[name, v] : scalars) env[name] = Expr(int32_t(v));
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
