// Single-step loops and loop-invariant loads of tile programs (see the
// header).
#include "tile/LoopInvariants.h"

#include <memory>

#include "arith/Simplify.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {
namespace tile {

std::vector<TileStmt> substitute_in_body(const std::vector<TileStmt> &body, const std::string &var,
                                         const Expr &value) {
    std::vector<TileStmt> out;
    for (const TileStmt &s : body) {
        if (s.loop) {
            auto l = std::make_shared<TileLoop>(*s.loop);
            l->min = simplify(substitute(var, value, l->min));
            l->extent = simplify(substitute(var, value, l->extent));
            l->body = substitute_in_body(l->body, var, value);
            out.push_back({nullptr, l});
            continue;
        }
        TileOp o = *s.op;
        for (Expr &e : o.origin) e = simplify(substitute(var, value, e));
        for (Expr &e : o.bounds) e = simplify(substitute(var, value, e));
        if (o.slot.defined()) o.slot = simplify(substitute(var, value, o.slot));
        if (o.fn.defined()) o.fn = substitute(var, value, o.fn);
        out.push_back(op_stmt(o));
    }
    return out;
}

namespace {

/** body with each loop, innermost first, copied and replaced by what
 * rewrite(loop, out) appends to out. */
template <typename F> void rewrite_loops(std::vector<TileStmt> &body, F rewrite) {
    std::vector<TileStmt> out;
    for (const TileStmt &s : body) {
        if (!s.loop) {
            out.push_back(s);
            continue;
        }
        auto l = std::make_shared<TileLoop>(*s.loop);
        rewrite_loops(l->body, rewrite);
        rewrite(l, &out);
    }
    body = out;
}

bool uses_var(const TileOp &o, const std::string &var) {
    for (const Expr &e : o.origin) {
        if (expr_uses_var(e, var)) return true;
    }
    for (const Expr &e : o.bounds) {
        if (expr_uses_var(e, var)) return true;
    }
    return false;
}

/** Whether any op in body (nested loops too) satisfies pred. */
template <typename P> bool any_op(const std::vector<TileStmt> &body, P pred) {
    for (const TileStmt &s : body) {
        if (s.loop ? any_op(s.loop->body, pred) : pred(*s.op)) return true;
    }
    return false;
}

bool reads(const TileOp &o, const std::string &value) {
    for (const std::string &x : o.operands) {
        if (x == value) return true;
    }
    return false;
}

/** Moves loop l's hoistable loads to out, then appends l. */
void hoist(const std::shared_ptr<TileLoop> &l, std::vector<TileStmt> *out) {
    std::vector<TileStmt> kept;
    for (size_t n = 0; n < l->body.size(); n++) {
        const TileStmt &t = l->body[n];
        bool move = t.op && t.op->kind == TileOpKind::Load &&
                    is_loop_invariant_load(*t.op, l->var, l->body);
        if (move) {
            const std::string &v = t.op->result;
            // Defined by this load alone, and not read before it.
            const std::vector<TileStmt> before(l->body.begin(), l->body.begin() + n);
            move = !any_op(l->body, [&](const TileOp &o) {
                return &o != t.op.get() && o.result == v;
            }) && !any_op(before, [&](const TileOp &o) { return reads(o, v); });
        }
        (move ? *out : kept).push_back(t);
    }
    l->body = kept;
    out->push_back({nullptr, l});
}

}  // namespace

void unroll_single_step_loops(TileProgram &p) {
    rewrite_loops(p.body, [](const std::shared_ptr<TileLoop> &l, std::vector<TileStmt> *out) {
        if (!is_const_one(simplify(l->extent))) {
            out->push_back({nullptr, l});
            return;
        }
        for (const TileStmt &t : substitute_in_body(l->body, l->var, l->min)) out->push_back(t);
    });
}

bool is_loop_invariant_load(const TileOp &o, const std::string &var,
                            const std::vector<TileStmt> &body) {
    if (o.kind != TileOpKind::Load || uses_var(o, var)) return false;
    return !any_op(
        body, [&](const TileOp &x) { return x.kind == TileOpKind::Store && x.buffer == o.buffer; });
}

void hoist_invariant_loads(TileProgram &p) { rewrite_loops(p.body, hoist); }

}  // namespace tile
}  // namespace internal
}  // namespace loom
