// Statement rules and learned facts: loop bounds hold inside loops, if
// conditions hold inside their branches; constant branches fold, empty
// loops and no-op statements disappear.
#include "arith/Simplify_Internal.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"

namespace loom {
namespace internal {

namespace {

Stmt no_op() { return Evaluate::make(0); }

Expr strip_likely(const Expr &e) {
    if (const Call *c = e.as<Call>()) {
        if (c->is_intrinsic(Call::likely) && c->args.size() == 1) return strip_likely(c->args[0]);
    }
    return e;
}

}  // namespace

// ---------------------------------------------------------------------------
// Facts

bool as_integer_comparison(const Expr &cond, bool truth, Expr *a, Expr *b, bool *strict,
                           bool *is_eq) {
    *is_eq = false;
    if (const LT *op = cond.as<LT>()) *a = op->a, *b = op->b, *strict = true;
    else if (const LE *op = cond.as<LE>()) *a = op->a, *b = op->b, *strict = false;
    else if (const GT *op = cond.as<GT>()) *a = op->b, *b = op->a, *strict = true;
    else if (const GE *op = cond.as<GE>()) *a = op->b, *b = op->a, *strict = false;
    else if (const EQ *op = cond.as<EQ>(); op && truth) {
        *a = op->a, *b = op->b, *is_eq = true, *strict = false;
    } else if (const NE *op = cond.as<NE>(); op && !truth) {
        *a = op->a, *b = op->b, *is_eq = true, *strict = false;
    } else {
        return false;
    }
    Type t = a->type();
    if (!no_overflow_int(t) || !t.is_scalar()) return false;
    if (!*is_eq && !truth) {
        // !(a < b) == b <= a; !(a <= b) == b < a.
        std::swap(*a, *b);
        *strict = !*strict;
    }
    return true;
}

void Simplify::learn(const Expr &cond_in, bool truth, std::vector<Undo> &undo) {
    Expr cond = strip_likely(cond_in);
    if (is_const(cond)) return;
    if (const Not *n = cond.as<Not>()) {
        learn(n->a, !truth, undo);
        return;
    }
    if (truth) {
        if (const And *a = cond.as<And>()) {
            learn(a->a, true, undo);
            learn(a->b, true, undo);
            return;
        }
    } else {
        if (const Or *o = cond.as<Or>()) {
            learn(o->a, false, undo);
            learn(o->b, false, undo);
            return;
        }
    }
    if (!cond.type().is_scalar()) return;
    (truth ? true_facts : false_facts).push_back(cond);
    undo.push_back({truth ? Undo::TrueFact : Undo::FalseFact, ""});

    // Comparisons with a variable on one side narrow that variable's range.
    Expr a, b;
    bool strict, is_eq;
    if (!as_integer_comparison(cond, truth, &a, &b, &strict, &is_eq)) return;
    Type t = a.type();
    auto narrow = [&](const std::string &name, const Expr &lo, const Expr &hi) {
        Interval cur;
        if (const Interval *i = sym_bounds.find(name)) cur = *i;
        if (lo.defined()) cur.min = cur.min.defined() ? rewrite_max(cur.min, lo) : lo;
        if (hi.defined()) cur.max = cur.max.defined() ? rewrite_min(cur.max, hi) : hi;
        sym_bounds.push(name, cur);
        undo.push_back({Undo::SymBound, name});
        VarInfo vi;
        if (const VarInfo *old = vars.find(name)) vi = *old;
        if (vi.replacement.defined()) {
            // The variable is being substituted; nothing more to learn.
        } else {
            ExprInfo ni;
            if (lo.defined()) {
                ExprInfo li = info_of(lo);
                ni.min_defined = li.min_defined;
                ni.min = li.min;
            }
            if (hi.defined()) {
                ExprInfo hi_i = info_of(hi);
                ni.max_defined = hi_i.max_defined;
                ni.max = hi_i.max;
            }
            vi.info.intersect(ni);
        }
        vars.push(name, vi);
        undo.push_back({Undo::Info, name});
    };
    Expr one = make_one(t);
    if (const Variable *v = a.as<Variable>()) {
        if (is_eq && is_const(b)) {
            // x == c: substitute c for x.
            VarInfo vi;
            vi.replacement = b;
            vars.push(v->name, vi);
            undo.push_back({Undo::Info, v->name});
        } else {
            Expr hi = strict ? rewrite_sub(b, one) : b;
            narrow(v->name, is_eq ? b : Expr(), hi);
        }
    }
    if (const Variable *v = b.as<Variable>()) {
        if (is_eq && is_const(a)) {
            VarInfo vi;
            vi.replacement = a;
            vars.push(v->name, vi);
            undo.push_back({Undo::Info, v->name});
        } else {
            Expr lo = strict ? rewrite_add(a, one) : a;
            narrow(v->name, lo, is_eq ? a : Expr());
        }
    }
}

void Simplify::unlearn(std::vector<Undo> &undo) {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
        switch (it->kind) {
        case Undo::TrueFact: true_facts.pop_back(); break;
        case Undo::FalseFact: false_facts.pop_back(); break;
        case Undo::Info: vars.pop(it->name); break;
        case Undo::SymBound: sym_bounds.pop(it->name); break;
        }
    }
    undo.clear();
}

// ---------------------------------------------------------------------------
// Statements

// Whether e is an integer expression of variables and constants only: no
// loads, no calls, so that two occurrences of it have the same value wherever
// the variables do.
static bool is_pure_index_expr(const Expr &e) {
    if (!e.type().is_int() || !e.type().is_scalar()) return false;
    struct Check : IRVisitor {
        bool ok = true;
        void visit(const Load *) override { ok = false; }
        void visit(const Call *) override { ok = false; }
        void visit(const Let *) override { ok = false; }
    } c;
    e.accept(&c);
    return c.ok;
}

Stmt Simplify::visit(const LetStmt *op) {
    Expr value = mutate(op->value);
    // A value already bound by an enclosing let, or one plus a constant,
    // becomes that let's variable (plus the constant).
    bool numbered = false;
    if (!should_substitute(value) && is_pure_index_expr(value)) {
        const Add *add = value.as<Add>();
        auto it = let_values.find(value);
        if (it != let_values.end()) {
            value = Variable::make(value.type(), it->second);
        } else if (add && is_const(add->b) && (it = let_values.find(add->a)) != let_values.end()) {
            value = Add::make(Variable::make(value.type(), it->second), add->b);
        } else {
            numbered = true;
        }
    }
    // A let may rebind a name in terms of its enclosing binding (the
    // vectorizer's per-lane copies do: let x = x + 1), or the rewrite above
    // may have turned its value into that binding itself.
    if (const Variable *v = value.as<Variable>(); v && v->name == op->name) {
        return mutate(op->body);  // let x = x: the enclosing x, unchanged
    }
    const bool self_referent = expr_uses_var(value, op->name);
    VarInfo vi;
    if (should_substitute(value) && !self_referent) {
        vi.replacement = value;
        ScopedBinding<VarInfo> bind(vars, op->name, vi);
        return mutate(op->body);
    }
    // A let that shadows an enclosing variable of the same name changes
    // what the recorded values mean inside it: forget them there.
    std::map<Expr, std::string, ExprDeepCompare> saved;
    bool shadows = vars.contains(op->name) || sym_bounds.contains(op->name);
    if (shadows) saved.swap(let_values);
    if (numbered && !shadows) let_values.emplace(value, op->name);
    vi.info = info_of(value);
    Stmt body;
    {
        ScopedBinding<VarInfo> bind(vars, op->name, vi);
        Interval point = sym_point(op->name, value);
        ScopedBinding<Interval> sbind(sym_bounds, op->name, point);
        body = mutate(op->body);
    }
    if (shadows) {
        let_values.swap(saved);
    } else if (numbered) {
        let_values.erase(value);
    }
    if (is_no_op(body) && !has_side_effects(value)) return no_op();
    if (remove_dead_lets && !stmt_uses_var(body, op->name) && !has_side_effects(value)) return body;
    if (value.same_as(op->value) && body.same_as(op->body)) return op;
    return LetStmt::make(op->name, value, body);
}

Stmt Simplify::visit(const AssertStmt *op) {
    Expr c = mutate(op->condition);
    if (is_const_one(c)) return no_op();
    Expr m = mutate(op->message);
    if (c.same_as(op->condition) && m.same_as(op->message)) return op;
    return AssertStmt::make(c, m);
}

Stmt Simplify::visit(const ProducerConsumer *op) {
    Stmt body = mutate(op->body);
    if (is_no_op(body)) return no_op();
    if (body.same_as(op->body)) return op;
    return ProducerConsumer::make(op->name, op->is_producer, body);
}

Stmt Simplify::visit(const For *op) {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    int64_t e;
    if (const_int(ext, &e) && e <= 0) return no_op();
    ExprInfo ei = info_of(ext);
    if (ei.max_defined && ei.max <= 0) return no_op();
    const bool gpu = op->for_type == ForType::GPUBlock || op->for_type == ForType::GPUThread;
    if (const_int(ext, &e) && e == 1 && !gpu) {
        // A single iteration: the loop variable is just the min. (Not for a
        // GPU loop: a block's other loops may have more threads, and only
        // the first of them may run a thread loop of one.)
        return mutate(LetStmt::make(op->name, mn, op->body));
    }
    Stmt body;
    {
        Expr last = rewrite_add(mn, rewrite_sub(ext, make_one(ext.type())));
        VarInfo vi;
        ExprInfo imin = info_of(mn), imax = info_of(last);
        vi.info.min_defined = imin.min_defined;
        vi.info.min = imin.min;
        vi.info.max_defined = imax.max_defined;
        vi.info.max = imax.max;
        ScopedBinding<VarInfo> bind(vars, op->name, vi);
        ScopedBinding<Interval> sbind(sym_bounds, op->name, Interval(mn, last));
        body = mutate(op->body);
    }
    if (is_no_op(body)) return no_op();
    if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return op;
    return For::make(op->name, mn, ext, op->for_type, body, op->attributes);
}

Stmt Simplify::visit(const Store *op) {
    Expr pred = mutate(op->predicate);
    if (is_const_zero(pred)) return no_op();
    Expr value = mutate(op->value), index = mutate(op->index);
    if (value.same_as(op->value) && index.same_as(op->index) && pred.same_as(op->predicate))
        return op;
    return Store::make(op->name, value, index, pred, op->param, op->alignment);
}

Stmt Simplify::visit(const Provide *op) {
    bool changed = false;
    std::vector<Expr> values = mutate_exprs(op->values, &changed);
    std::vector<Expr> args = mutate_exprs(op->args, &changed);
    if (!changed) return op;
    return Provide::make(op->name, values, args);
}

Stmt Simplify::visit(const Allocate *op) {
    bool changed = false;
    std::vector<Expr> extents = mutate_exprs(op->extents, &changed);
    Expr c = mutate(op->condition);
    Stmt body = mutate(op->body);
    if (is_no_op(body)) return no_op();
    if (!changed && c.same_as(op->condition) && body.same_as(op->body)) return op;
    return Allocate::make(op->name, op->type, op->memory_type, extents, c, body, op->replicated);
}

Stmt Simplify::visit(const Realize *op) {
    bool changed = false;
    Region bounds(op->bounds.size());
    for (size_t i = 0; i < bounds.size(); i++) {
        bounds[i].min = mutate(op->bounds[i].min);
        bounds[i].extent = mutate(op->bounds[i].extent);
        changed |= !bounds[i].min.same_as(op->bounds[i].min) ||
                   !bounds[i].extent.same_as(op->bounds[i].extent);
    }
    Expr c = mutate(op->condition);
    Stmt body = mutate(op->body);
    if (is_no_op(body)) return no_op();
    if (!changed && c.same_as(op->condition) && body.same_as(op->body)) return op;
    return Realize::make(op->name, op->types, op->memory_type, bounds, c, body, op->replicated);
}

Stmt Simplify::visit(const Block *op) {
    Stmt first = mutate(op->first), rest = mutate(op->rest);
    bool f_noop = is_no_op(first), r_noop = is_no_op(rest);
    if (f_noop && r_noop) return no_op();
    if (f_noop) return rest;
    if (r_noop) return first;
    if (first.same_as(op->first) && rest.same_as(op->rest)) return op;
    return Block::make(first, rest);
}

Stmt Simplify::visit(const IfThenElse *op) {
    Expr c = mutate(op->condition);
    Expr bare = strip_likely(c);
    if (is_const_one(bare)) return mutate(op->then_case);
    if (is_const_zero(bare)) return op->else_case.defined() ? mutate(op->else_case) : no_op();
    std::vector<Undo> undo;
    learn(c, true, undo);
    Stmt then_case = mutate(op->then_case);
    unlearn(undo);
    Stmt else_case;
    if (op->else_case.defined()) {
        learn(c, false, undo);
        else_case = mutate(op->else_case);
        unlearn(undo);
        if (is_no_op(else_case)) else_case = Stmt();
    }
    bool t_noop = is_no_op(then_case);
    if (t_noop && !else_case.defined()) return no_op();
    if (t_noop) return IfThenElse::make(rewrite_not(c), else_case);
    if (else_case.defined() && equal(then_case, else_case)) return then_case;
    if (c.same_as(op->condition) && then_case.same_as(op->then_case) &&
        else_case.same_as(op->else_case))
        return op;
    return IfThenElse::make(c, then_case, else_case);
}

Stmt Simplify::visit(const Evaluate *op) {
    Expr v = mutate(op->value);
    // A value computed for no effect.
    if (!has_side_effects(v)) return is_const(op->value) ? Stmt(op) : no_op();
    if (v.same_as(op->value)) return op;
    return Evaluate::make(v);
}

}  // namespace internal
}  // namespace loom
