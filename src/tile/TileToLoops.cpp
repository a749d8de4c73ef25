// Tile programs as loops for the CPU (see the header).
#include "tile/TileToLoops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {
namespace tile {

namespace {

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }

/** The loop-IR name of a tile value's storage. */
std::string storage(const std::string &value) { return "tile." + value; }

class Lowering {
  public:
    explicit Lowering(const TileKernelContents &k) : k(k) {
        collect(k.program.body);
        find_inlined(k.program.body);
        if (k.program.live_rows.defined()) find_live_rows();
    }

    Stmt tile_body() {
        Stmt s = stmts(k.program.body);
        for (const auto &[name, t] : types) {
            if (inlined.count(name)) continue;
            s = Allocate::make(storage(name), t.elem, MemoryType::Stack, {Expr(int(t.elements()))},
                               const_true(), s);
        }
        return s;
    }

  private:
    const TileKernelContents &k;
    std::map<std::string, TileType> types;
    int loops = 0;
    /** Grouped rows: the 2-D values whose first axis is the program's rows,
     * of which only the first `live` are computed. Undefined live: all. */
    std::set<std::string> on_rows;
    Expr live;
    /** Broadcasts, and maps read once (or cheap ones twice), computed where
     * maps and reductions read them instead of stored as tiles: a tile
     * pass and its storage fewer each. */
    std::map<std::string, const TileOp *> inlined;

    static bool cheap(const Expr &fn) {
        int nodes = 0;
        bool calls = false;
        struct Count : IRVisitor {
            int *nodes;
            bool *calls;
            using IRVisitor::visit;
            void visit(const Call *op) override {
                *calls = true;
                IRVisitor::visit(op);
            }
            void visit(const Mul *op) override {
                (*nodes)++;
                IRVisitor::visit(op);
            }
            void visit(const Add *op) override {
                (*nodes)++;
                IRVisitor::visit(op);
            }
            void visit(const Sub *op) override {
                (*nodes)++;
                IRVisitor::visit(op);
            }
        } count;
        count.nodes = &nodes;
        count.calls = &calls;
        fn.accept(&count);
        return !calls && nodes <= 2;
    }

    void find_inlined(const std::vector<TileStmt> &program) {
        std::map<std::string, int> defs, uses;
        for_each_op(program, [&](const TileOp &o) {
            if (!o.result.empty()) defs[o.result]++;
            for (const std::string &v : o.operands) uses[v]++;
        });
        for_each_list(program, [&](const std::vector<TileStmt> &list) {
            for (size_t i = 0; i < list.size(); i++) {
                if (list[i].loop) continue;
                const TileOp &o = *list[i].op;
                if ((o.kind != TileOpKind::Map && o.kind != TileOpKind::Broadcast) ||
                    defs[o.result] != 1) {
                    continue;
                }
                const int n = uses[o.result];
                if (n == 0 || (o.kind == TileOpKind::Map && n > (cheap(o.fn) ? 2 : 1))) continue;
                // Read by maps and reductions later in this list, no loop
                // between, its operands (none inlined themselves) unchanged
                // until the last of them.
                bool ok = true;
                int seen = 0;
                for (const std::string &v : o.operands) ok &= !inlined.count(v);
                for (size_t j = i + 1; ok && seen < n && j < list.size(); j++) {
                    ok = !list[j].loop;
                    if (!ok) break;
                    const TileOp &next = *list[j].op;
                    for (const std::string &v : o.operands) ok &= next.result != v;
                    const int reads =
                        int(std::count(next.operands.begin(), next.operands.end(), o.result));
                    if (reads > 0) {
                        ok &= next.kind == TileOpKind::Map || next.kind == TileOpKind::Reduce;
                        seen += reads;
                    }
                }
                if (ok && seen == n) inlined[o.result] = &o;
            }
        });
    }

    /** Whether load o's first tile axis follows the program's rows (its
     * origin there is the row tile's). */
    static bool loads_rows(const TileOp &o) {
        const std::vector<int> axes = access_axes(o, o.type.shape.size());
        for (size_t d = 0; d < axes.size(); d++) {
            if (axes[d] == 0 && expr_uses_var(o.origin[d], "tile_row")) return true;
        }
        return false;
    }

    /** The values over the rows, from the loads of them through the ops
     * that keep rows apart (maps, a reduction along a row, a dot's rows).
     * An op that mixes rows (a reduction down a column, a dot over them)
     * would read the idle ones: then every row is computed. */
    void find_live_rows() {
        bool changed = true, mixed = false;
        auto scan = [&](const TileOp &o) {
            auto rows = [&](size_t i) {
                return i < o.operands.size() && on_rows.count(o.operands[i]) > 0;
            };
            bool r = false;
            switch (o.kind) {
            case TileOpKind::Load: r = o.type.shape.size() == 2 && loads_rows(o); break;
            case TileOpKind::Map:
            case TileOpKind::ConvertLayout:
                for (size_t i = 0; i < o.operands.size(); i++) r |= rows(i);
                break;
            case TileOpKind::Reduce:
                if (rows(0)) mixed |= o.axis != 1;
                r = false;  // 1-D results are computed whole
                break;
            case TileOpKind::Dot:
                mixed |= rows(1);
                r = rows(0) || rows(2);
                break;
            default: break;
            }
            if (r && o.type.shape.size() == 2 && on_rows.insert(o.result).second) {
                changed = true;
            }
        };
        while (changed) {
            changed = false;
            for_each_op(k.program.body, scan);
        }
        if (mixed) {
            on_rows.clear();
            return;
        }
        live = k.program.live_rows;
    }

    /** The rows of value v's tile computed: the live ones if v is over the
     * program's rows. */
    Expr rows_computed(const std::string &v) const {
        const TileType &t = types.at(v);
        if (live.defined() && on_rows.count(v)) return live;
        return rows_of(t);
    }

    void collect(const std::vector<TileStmt> &body) {
        for (const TileStmt &s : body) {
            if (s.loop) {
                collect(s.loop->body);
            } else if (!s.op->result.empty()) {
                internal_assert(s.op->type.space == MemorySpace::Registers)
                    << "tile program on the CPU: " << s.op->result << " is staged in shared memory";
                types[s.op->result] = s.op->type;
            }
        }
    }

    const TileBuffer &buffer(const std::string &name) const {
        for (const TileBuffer &b : k.buffers) {
            if (b.name == name) return b;
        }
        internal_error << "tile program on the CPU: no buffer " << name;
        return k.buffers[0];
    }

    Stmt stmts(const std::vector<TileStmt> &body) {
        std::vector<Stmt> out;
        for (const TileStmt &s : body) {
            if (s.loop) {
                out.push_back(For::make(s.loop->var, s.loop->min, s.loop->extent, ForType::Serial,
                                        stmts(s.loop->body)));
            } else {
                out.push_back(op(*s.op));
            }
        }
        return Block::make(out);
    }

    /** A 1-D tile is one row here: its element c is at (0, c). */
    static int rows_of(const TileType &t) { return t.shape.size() == 2 ? t.shape[0] : 1; }
    static int cols_of(const TileType &t) { return t.shape.back(); }

    /** The element of value `v` at tile coordinates (r, c). */
    Expr element(const std::string &v, const Expr &r, const Expr &c) {
        const TileType &t = types.at(v);
        auto in = inlined.find(v);
        if (in == inlined.end()) return Load::make(t.elem, storage(v), r * cols_of(t) + c, Expr());
        const TileOp &o = *in->second;
        if (o.kind == TileOpKind::Broadcast) return element(o.operands[0], 0, o.axis == 1 ? r : c);
        return substitute(map_arguments(o, r, c), o.fn);
    }

    /** The variables of map o's function at element (r, c). */
    std::map<std::string, Expr> map_arguments(const TileOp &o, const Expr &r, const Expr &c) {
        std::map<std::string, Expr> args;
        for (size_t i = 0; i < o.operands.size(); i++) {
            args["_" + std::to_string(i)] = element(o.operands[i], r, c);
        }
        args["_i0"] = o.type.shape.size() == 2 ? r : c;
        args["_i1"] = c;
        return args;
    }
    Stmt set(const std::string &v, const Expr &r, const Expr &c, const Expr &x) {
        return Store::make(storage(v), x, r * cols_of(types.at(v)) + c, Expr());
    }

    /** The loop variable (r or c) that tile axis `axis` of a tile of rank
     * `rank` runs along. */
    static const Expr &along(int axis, size_t rank, const Expr &r, const Expr &c) {
        return rank == 1 || axis == 1 ? c : r;
    }

    /** for r in [0, rows), c in [0, cols): body(r, c), the columns
     * innermost and vectorized when the extent is constant. */
    template <typename F> Stmt over_tile(Expr rows, Expr cols, int vector, F body) {
        const std::string id = std::to_string(loops++);
        const Expr r = int_var("tile.r" + id), c = int_var("tile.c" + id);
        Stmt inner;
        const int64_t *n = as_const_int(cols);
        if (n && vector > 1 && *n % vector == 0) {
            const Expr ci = int_var("tile.ci" + id);
            inner =
                For::make("tile.ci" + id, 0, vector, ForType::Vectorized, body(r, c * vector + ci));
            inner = For::make("tile.c" + id, 0, int(*n / vector), ForType::Serial, inner);
        } else {
            inner = For::make("tile.c" + id, 0, cols, ForType::Serial, body(r, c));
        }
        return For::make("tile.r" + id, 0, rows, ForType::Serial, inner);
    }

    static int vector_of(Type t, int cols) { return std::min(cols, 64 / std::max(1, t.bytes())); }

    /** The flat index into buffer b of the tile element (r, c) of access o. */
    Expr index(const TileOp &o, size_t rank, const TileBuffer &b, const Expr &r, const Expr &c) {
        const std::vector<int> axes = access_axes(o, rank);
        Expr idx = 0;
        for (size_t d = 0; d < axes.size(); d++) {
            Expr coord = o.origin[d];
            if (axes[d] >= 0) coord = coord + along(axes[d], rank, r, c);
            idx = idx + coord * int_var(b.name + ".stride." + std::to_string(d));
        }
        return idx;
    }

    /** The extent along loop r (rows) or c (columns) of a tile of rank
     * `rank` that lies inside o's bounds. */
    Expr valid(const TileOp &o, size_t rank, bool columns, int size) {
        const std::vector<int> axes = access_axes(o, rank);
        Expr e = size;
        for (size_t d = 0; d < axes.size(); d++) {
            const bool on_columns = rank == 1 || axes[d] == 1;
            if (axes[d] >= 0 && on_columns == columns) {
                e = min(e, max(o.bounds[d] - o.origin[d], 0));
            }
        }
        return e;
    }

    Stmt op(const TileOp &o) {
        if (inlined.count(o.result)) return Evaluate::make(0);  // computed where it is read
        const TileType &t = o.type;
        switch (o.kind) {
        case TileOpKind::Zeros:
            return over_tile(rows_of(t), cols_of(t), vector_of(t.elem, cols_of(t)),
                             [&](const Expr &r, const Expr &c) {
                                 return set(o.result, r, c, make_zero(t.elem));
                             });
        case TileOpKind::Load: {
            // A whole tile is copied in vectors along its columns; a tile
            // at the edge zeroes what lies outside and copies the rest.
            const TileBuffer &b = buffer(o.buffer);
            const size_t rank = t.shape.size();
            const Expr rows = valid(o, rank, false, rows_of(t)),
                       cols = valid(o, rank, true, cols_of(t));
            auto copy = [&](const Expr &r, const Expr &c) {
                return set(o.result, r, c,
                           Load::make(b.elem, b.name, index(o, rank, b, r, c), Expr()));
            };
            Stmt whole = over_tile(rows_of(t), cols_of(t), vector_of(t.elem, cols_of(t)), copy);
            // Rows short but whole (the last rows of the keys, a group's
            // rows) still in vectors.
            Stmt part =
                IfThenElse::make(cols == cols_of(t),
                                 over_tile(rows, cols_of(t), vector_of(t.elem, cols_of(t)), copy),
                                 over_tile(rows, cols, 1, copy));
            Stmt edge = Block::make(op(make_op(TileOpKind::Zeros, o.result, o.type)), part);
            return IfThenElse::make(rows == rows_of(t) && cols == cols_of(t), whole, edge);
        }
        case TileOpKind::Store: {
            const TileBuffer &b = buffer(o.buffer);
            const TileType &v = types.at(o.operands[0]);
            const size_t rank = v.shape.size();
            const Expr rows = valid(o, rank, false, rows_of(v)),
                       cols = valid(o, rank, true, cols_of(v));
            auto copy = [&](const Expr &r, const Expr &c) {
                return Store::make(b.name, element(o.operands[0], r, c), index(o, rank, b, r, c),
                                   Expr());
            };
            Stmt whole = over_tile(rows_of(v), cols_of(v), vector_of(v.elem, cols_of(v)), copy);
            return IfThenElse::make(rows == rows_of(v) && cols == cols_of(v), whole,
                                    over_tile(rows, cols, 1, copy));
        }
        case TileOpKind::Map:
            return over_tile(rows_computed(o.result), cols_of(t), vector_of(t.elem, cols_of(t)),
                             [&](const Expr &r, const Expr &c) {
                                 return set(o.result, r, c,
                                            substitute(map_arguments(o, r, c), o.fn));
                             });
        case TileOpKind::ConvertLayout:
            // Layouts are the GPU's: on the CPU a conversion is a copy.
            return over_tile(rows_computed(o.result), cols_of(t), vector_of(t.elem, cols_of(t)),
                             [&](const Expr &r, const Expr &c) {
                                 return set(o.result, r, c, element(o.operands[0], r, c));
                             });
        case TileOpKind::Broadcast:
            return over_tile(rows_of(t), cols_of(t), vector_of(t.elem, cols_of(t)),
                             [&](const Expr &r, const Expr &c) {
                                 return set(o.result, r, c,
                                            element(o.operands[0], 0, o.axis == 1 ? r : c));
                             });
        case TileOpKind::Reduce: {
            // Along the axis from the identity. Vectorized: along the kept
            // axis where it is contiguous (a column's sums), else along the
            // reduced axis into a vector of partials folded once per row
            // (vectorize_loops and hoist_vector_reductions), which changes
            // the order of a sum's additions as a vectorized RVar does.
            const TileType &in = types.at(o.operands[0]);
            const int n = in.shape[o.axis];
            const std::string id = std::to_string(loops++);
            const Expr i = int_var("tile.i" + id), k = int_var("tile.k" + id);
            const Expr ident = o.reduction == "sum"   ? make_zero(t.elem)
                               : o.reduction == "max" ? type_min(t.elem)
                                                      : type_max(t.elem);
            auto combine = [&](const Expr &acc, const Expr &x) {
                return o.reduction == "sum"   ? acc + x
                       : o.reduction == "max" ? max(acc, x)
                                              : min(acc, x);
            };
            const Expr count = o.bounds.empty() ? Expr(n) : clamp(o.bounds[0], 0, n);
            const int vector = vector_of(t.elem, n);
            // A row's reduction: only the rows computed.
            const Expr reduced_rows =
                o.axis == 1 ? rows_computed(o.operands[0]) : Expr(int(t.shape[0]));
            if (o.axis == 1 && n % vector == 0 && vector > 1) {
                const Expr kc = int_var("tile.kc" + id), kv = int_var("tile.kv" + id);
                const Expr kk = kc * vector + kv;
                Expr x = element(o.operands[0], i, kk);
                if (!o.bounds.empty()) x = select(kk < count, x, ident);
                Stmt body = For::make("tile.kv" + id, 0, vector, ForType::Vectorized,
                                      set(o.result, 0, i, combine(element(o.result, 0, i), x)));
                body = For::make("tile.kc" + id, 0, n / vector, ForType::Serial, body);
                body = Block::make(set(o.result, 0, i, ident), body);
                return For::make("tile.i" + id, 0, reduced_rows, ForType::Serial, body);
            }
            if (o.axis == 0 && in.shape.size() == 2) {
                // Each column in order along the rows, the columns in vectors.
                const int cols = in.shape[1];
                Stmt init = over_tile(
                    1, cols, vector_of(t.elem, cols),
                    [&](const Expr &, const Expr &c) { return set(o.result, 0, c, ident); });
                Stmt step =
                    over_tile(1, cols, vector_of(t.elem, cols), [&](const Expr &, const Expr &c) {
                        return set(o.result, 0, c,
                                   combine(element(o.result, 0, c), element(o.operands[0], k, c)));
                    });
                return Block::make(init, For::make("tile.k" + id, 0, count, ForType::Serial, step));
            }
            const Expr x =
                o.axis == 1 ? element(o.operands[0], i, k) : element(o.operands[0], k, i);
            Stmt body = For::make("tile.k" + id, 0, count, ForType::Serial,
                                  set(o.result, 0, i, combine(element(o.result, 0, i), x)));
            body = Block::make(set(o.result, 0, i, ident), body);
            return For::make("tile.i" + id, 0, reduced_rows, ForType::Serial, body);
        }
        case TileOpKind::Dot: {
            // acc(r, c) += a(r, kk) * b(kk, c), register-blocked: a block
            // of rows by all the columns' vectors, unrolled, k outside it,
            // so that the block's accumulators (at most 16 vectors) stay in
            // registers over k and each b vector serves the block's rows.
            const TileType &a = types.at(o.operands[0]);
            const int M = t.shape[0], N = t.shape[1], K = a.shape[1];
            const std::string id = std::to_string(loops++);
            const Expr rb = int_var("tile.rb" + id), ri = int_var("tile.ri" + id),
                       kk = int_var("tile.k" + id), c = int_var("tile.c" + id),
                       ci = int_var("tile.ci" + id);
            const int vector = vector_of(t.elem, N);
            const bool vectors = N % vector == 0 && vector > 1;
            const int chunks = vectors ? N / vector : N;
            int rows = 1;
            while (rows * 2 <= M && M % (rows * 2) == 0 && rows * 2 * chunks <= 16) rows *= 2;
            internal_assert(o.result == o.operands[2])
                << "tile program on the CPU: dot " << o.result << " accumulates in place";
            // Unrolled only where the block fits the registers.
            const ForType unrolled = rows * chunks <= 16 ? ForType::Unrolled : ForType::Serial;
            // The k loop over a block of `n` rows from row `first` + ri.
            auto k_loop = [&](const Expr &first, int n) {
                const Expr r = first + ri;
                auto update = [&](const Expr &col) {
                    Expr product = cast(t.elem, element(o.operands[0], r, kk)) *
                                   cast(t.elem, element(o.operands[1], kk, col));
                    return Store::make(storage(o.result), element(o.result, r, col) + product,
                                       r * N + col, Expr());
                };
                Stmt cols;
                if (vectors) {
                    cols = For::make("tile.ci" + id, 0, vector, ForType::Vectorized,
                                     update(c * vector + ci));
                    cols = For::make("tile.c" + id, 0, chunks, unrolled, cols);
                } else {
                    cols = For::make("tile.c" + id, 0, N, ForType::Serial, update(c));
                }
                Stmt block = For::make("tile.ri" + id, 0, n, unrolled, cols);
                return For::make("tile.k" + id, 0, K, ForType::Serial, block);
            };
            const Expr computed = rows_computed(o.result);
            if (is_const(computed)) {
                return For::make("tile.rb" + id, 0, M / rows, ForType::Serial,
                                 k_loop(rb * rows, rows));
            }
            // The live rows only: whole blocks, then the rest a row at a time.
            Stmt blocks = For::make("tile.rb" + id, 0, computed / rows, ForType::Serial,
                                    k_loop(rb * rows, rows));
            if (rows == 1) return blocks;
            const Expr rest = int_var("tile.rr" + id);
            return Block::make(blocks,
                               For::make("tile.rr" + id, computed / rows * rows, computed % rows,
                                         ForType::Serial, k_loop(rest, 1)));
        }
        default:
            internal_error << "tile program on the CPU: the op of " << o.result
                           << " has no CPU lowering (GPU-only staging?)";
            return Stmt();
        }
    }
};

}  // namespace

Stmt tile_program_to_loops(const TileKernelContents &k, const std::vector<Expr> &grid,
                           const std::vector<std::string> &scalar_names,
                           const std::vector<Expr> &scalar_values) {
    const TileProgram &p = k.program;
    internal_assert(grid.size() == p.grid.size()) << "tile program " << p.name << ": grid";
    Stmt s = Lowering(k).tile_body();
    // tile_col innermost; the tiles of rows, and of the batch (heads)
    // with them, in one parallel loop: one fork per call, and the
    // threads share out every head's tiles.
    s = For::make(p.grid[0], 0, grid[0], ForType::Serial, s);
    if (p.grid.size() == 2) {
        s = For::make(p.grid[1], 0, grid[1], ForType::Parallel, s);
    } else {
        internal_assert(p.grid.size() == 3) << "tile program " << p.name << ": grid";
        const std::string task = p.name + ".task";
        const Expr t = int_var(task);
        s = LetStmt::make(p.grid[1], t % grid[1], LetStmt::make(p.grid[2], t / grid[1], s));
        s = For::make(task, 0, grid[1] * grid[2], ForType::Parallel, s);
    }
    for (size_t i = scalar_names.size(); i-- > 0;) {
        const Variable *same = scalar_values[i].as<Variable>();
        if (same && same->name == scalar_names[i]) continue;
        s = LetStmt::make(scalar_names[i], scalar_values[i], s);
    }
    return s;
}

}  // namespace tile
}  // namespace internal
}  // namespace loom
