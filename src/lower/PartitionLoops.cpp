// PartitionLoops: the guarded tail of a split loop (if (likely(xo*8 + xi < n))
// ...) costs a comparison per iteration and, worse, turns a vectorized inner
// loop into masked stores everywhere. This pass splits a loop whose body tests
// likely() conditions into three loops:
//
//   prologue:     [min, steady_min)        the original body
//   steady state: [steady_min, steady_end) the conditions replaced by true
//   epilogue:     [steady_end, min+extent) the original body
//
// The steady range is found by solving each condition for the loop variable:
// a condition a*x + b <op> c, linear in the loop variable x and in the
// variables of inner loops (which range over their bounds), holds for every
// inner iteration when x lies in an interval that we compute exactly. A
// condition we cannot solve stays where it is, so the result is always
// correct; at worst the loop is left as it was.
#include "lower/PartitionLoops.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "arith/Bounds.h"
#include "arith/Simplify.h"
#include "gpu/CrossThreadReductions.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Scope.h"
#include "ir/Substitute.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

// A loop inside the loop being partitioned: its variable ranges over
// [min, max], with the lets of the body substituted in.
struct InnerLoop {
    std::string name;
    Expr min, max;
};

// One place where a likely() call appears in the loop body.
struct Occurrence {
    std::map<std::string, Expr> lets;  // let values in scope there, substituted
    std::vector<InnerLoop> loops;      // inner loops around it
};

// The lets in scope at a point of a loop body, each value with the lets
// around it substituted in; a loop variable shadows a let of its name.
class LetStack {
  public:
    void push(const std::string &name, const Expr &value) {
        lets[name].push_back(value.defined() ? subst(value) : Expr());
    }
    void pop(const std::string &name) { lets[name].pop_back(); }
    std::map<std::string, Expr> map() const {
        std::map<std::string, Expr> m;
        for (const auto &kv : lets) {
            if (!kv.second.empty() && kv.second.back().defined()) m[kv.first] = kv.second.back();
        }
        return m;
    }
    Expr subst(const Expr &e) const {
        std::map<std::string, Expr> m = map();
        return m.empty() ? e : substitute(m, e);
    }

  private:
    std::map<std::string, std::vector<Expr>> lets;
};

// Finds the likely() calls of a loop body and what surrounds each.
class CollectLikely : public IRVisitor {
  public:
    std::map<const Call *, std::vector<Occurrence>> found;
    std::vector<const Call *> order;  // first-seen order, for determinism

    using IRVisitor::visit;

  private:
    LetStack lets;
    std::vector<InnerLoop> loops;

    Expr subst(const Expr &e) const { return lets.subst(e); }

    template <typename LetT> void visit_let(const LetT *op) {
        op->value.accept(this);
        lets.push(op->name, op->value);
        op->body.accept(this);
        lets.pop(op->name);
    }

  public:
    void visit(const Let *op) override { visit_let(op); }
    void visit(const LetStmt *op) override { visit_let(op); }

    void visit(const For *op) override {
        op->min.accept(this);
        op->extent.accept(this);
        Expr mn = subst(op->min);
        Expr mx = subst(op->min + op->extent - 1);
        loops.push_back({op->name, mn, mx});
        // A loop variable shadows a let of the same name.
        lets.push(op->name, Expr());
        op->body.accept(this);
        lets.pop(op->name);
        loops.pop_back();
    }

    void visit(const Call *op) override {
        if (op->is_intrinsic(Call::likely) && op->args.size() == 1 &&
            op->args[0].type().is_bool() && op->args[0].type().is_scalar()) {
            if (!found.count(op)) order.push_back(op);
            found[op].push_back({lets.map(), loops});
        }
        IRVisitor::visit(op);
    }
};

// Whether e mentions any variable named in `names`.
bool uses_any(const Expr &e, const std::set<std::string> &names) {
    struct Check : IRVisitor {
        const std::set<std::string> &names;
        bool found = false;
        explicit Check(const std::set<std::string> &n) : names(n) {}
        using IRVisitor::visit;
        void visit(const Variable *op) override {
            if (names.count(op->name)) found = true;
        }
    } check(names);
    e.accept(&check);
    return check.found;
}

// Whether e reads memory or has side effects: its value could change while
// the loop runs, so it cannot be evaluated once before it.
bool reads_memory_or_has_effects(const Expr &e) { return !is_pure(e); }

Expr fold_add(const Expr &a, const Expr &b) {
    if (!a.defined() || is_const_zero(a)) return b;
    if (!b.defined() || is_const_zero(b)) return a;
    return Add::make(a, b);
}

// e == sum(coef[v] * v) + rest, for v in a set of variables.
struct LinearForm {
    std::map<std::string, int64_t> coef;
    Expr rest;
};

bool linear_form(const Expr &e, const std::set<std::string> &vars, LinearForm &out) {
    if (!uses_any(e, vars)) {
        out.coef.clear();
        out.rest = e;
        return true;
    }
    if (const Variable *v = e.as<Variable>()) {
        out.coef.clear();
        out.coef[v->name] = 1;
        out.rest = make_zero(e.type());
        return true;
    }
    if (const Add *op = e.as<Add>()) {
        LinearForm a, b;
        if (!linear_form(op->a, vars, a) || !linear_form(op->b, vars, b)) return false;
        out = a;
        for (const auto &kv : b.coef) out.coef[kv.first] += kv.second;
        out.rest = fold_add(a.rest, b.rest);
        return true;
    }
    if (const Sub *op = e.as<Sub>()) {
        LinearForm a, b;
        if (!linear_form(op->a, vars, a) || !linear_form(op->b, vars, b)) return false;
        out = a;
        for (const auto &kv : b.coef) out.coef[kv.first] -= kv.second;
        out.rest = is_const_zero(b.rest) ? a.rest : Sub::make(a.rest, b.rest);
        return true;
    }
    if (const Mul *op = e.as<Mul>()) {
        const int64_t *c = as_const_int(op->b);
        Expr other = op->a;
        if (!c) {
            c = as_const_int(op->a);
            other = op->b;
        }
        if (!c) return false;
        LinearForm a;
        if (!linear_form(other, vars, a)) return false;
        out.coef.clear();
        for (const auto &kv : a.coef) out.coef[kv.first] = kv.second * *c;
        out.rest = is_const_zero(a.rest) ? a.rest : Mul::make(a.rest, make_const(e.type(), *c));
        return true;
    }
    return false;
}

// An interval of the loop variable; an undefined end is unbounded.
struct Solution {
    Expr lo, hi;
};

Expr max_of(const Expr &a, const Expr &b) {
    if (!a.defined()) return b;
    if (!b.defined()) return a;
    // Simplified as it grows: each occurrence of a condition (an unrolled
    // loop repeats one hundreds of times) adds the same bound again.
    return simplify(Max::make(a, b));
}
Expr min_of(const Expr &a, const Expr &b) {
    if (!a.defined()) return b;
    if (!b.defined()) return a;
    return simplify(Min::make(a, b));
}

// Brings a comparison to the form d <= k; false if c is not one.
bool as_upper_bound(const Expr &c, Expr *d, int64_t *k) {
    *k = 0;
    if (const LT *op = c.as<LT>()) {
        *d = Sub::make(op->a, op->b);
        *k = -1;
    } else if (const LE *op = c.as<LE>()) {
        *d = Sub::make(op->a, op->b);
    } else if (const GT *op = c.as<GT>()) {
        *d = Sub::make(op->b, op->a);
        *k = -1;
    } else if (const GE *op = c.as<GE>()) {
        *d = Sub::make(op->b, op->a);
    } else if (const Not *op = c.as<Not>()) {
        if (const LT *n = op->a.as<LT>()) return as_upper_bound(GE::make(n->a, n->b), d, k);
        if (const LE *n = op->a.as<LE>()) return as_upper_bound(GT::make(n->a, n->b), d, k);
        if (const GT *n = op->a.as<GT>()) return as_upper_bound(LE::make(n->a, n->b), d, k);
        if (const GE *n = op->a.as<GE>()) return as_upper_bound(LT::make(n->a, n->b), d, k);
        return false;
    } else {
        return false;
    }
    return true;
}

// The values of `var` (of type t) for which the comparison c holds at every
// point of the inner loops, or false if c is not a comparison we can solve.
bool solve_comparison(const Expr &c, const std::string &var, Type t, const Occurrence &occ,
                      Solution &sol) {
    Expr d;
    int64_t k = 0;
    if (!as_upper_bound(c, &d, &k)) return false;
    if (d.type() != t || !t.is_int() || !t.is_scalar()) return false;

    std::set<std::string> vars{var};
    for (const InnerLoop &l : occ.loops) vars.insert(l.name);
    LinearForm f;
    if (!linear_form(d, vars, f)) return false;
    int64_t a = f.coef.count(var) ? f.coef[var] : 0;
    if (a == 0) return false;

    // The largest value d - a*var takes over the inner loops. Their bounds
    // must not depend on the loop variable or on each other.
    Expr B = f.rest;
    for (const InnerLoop &l : occ.loops) {
        auto c_it = f.coef.find(l.name);
        if (c_it == f.coef.end() || c_it->second == 0) continue;
        Expr bound = c_it->second > 0 ? l.max : l.min;
        if (bound.type() != t) return false;
        B = fold_add(B, Mul::make(bound, make_const(t, c_it->second)));
    }
    if (uses_any(B, vars) || reads_memory_or_has_effects(B)) return false;

    // a*var + B <= k.
    Expr rhs = Sub::make(make_const(t, k), B);  // a*var <= rhs
    if (a > 0) {
        sol.hi = a == 1 ? rhs : Div::make(rhs, make_const(t, a));  // floor division
        sol.lo = Expr();
    } else {
        // var >= ceil(-rhs / -a) = floor((-rhs + (-a) - 1) / -a)
        Expr num = Add::make(Sub::make(make_zero(t), rhs), make_const(t, -a - 1));
        sol.lo = Div::make(num, make_const(t, -a));
        sol.hi = Expr();
    }
    return true;
}

// What the comparison c, holding at every point of the inner loops, says
// about each variable v of the enclosing scope (not the loop's, not an inner
// loop's) that it mentions with coefficient +-1: a lower or an upper bound in
// terms of the loop variable. In the steady state of the guard of a
// GuardWithIf split, x.min + xo * 256 + xi <= x.max for all xi in [0, 255]
// gives x.max >= x.min + xo * 256 + 255, which lets the simplifier drop the
// clamps min(.., x.max) from the bounds of everything computed per tile.
std::vector<std::pair<std::string, Interval>> bounds_on_outer_variables(const Expr &c,
                                                                        const std::string &loop_var,
                                                                        const Occurrence &occ) {
    std::vector<std::pair<std::string, Interval>> found;
    Expr d;
    int64_t k = 0;
    if (!as_upper_bound(c, &d, &k) || !d.type().is_int() || !d.type().is_scalar()) return found;
    Type t = d.type();
    std::set<std::string> inner;
    for (const InnerLoop &l : occ.loops) inner.insert(l.name);
    struct Vars : IRVisitor {
        std::vector<std::string> names;
        using IRVisitor::visit;
        void visit(const Variable *op) override {
            if (std::find(names.begin(), names.end(), op->name) == names.end())
                names.push_back(op->name);
        }
    } vars;
    // Only the variables of the side without the loop variable: the limit
    // the guard compares against (x.max in x <= x.max), which is what the
    // clamps in bounds are made of. Bounds on both sides would refer to each
    // other, which interval arithmetic cannot use.
    Expr cmp = c;
    if (const Not *n = c.as<Not>()) cmp = n->a;
    Expr lhs, rhs;
    if (const LT *op = cmp.as<LT>()) lhs = op->a, rhs = op->b;
    else if (const LE *op = cmp.as<LE>()) lhs = op->a, rhs = op->b;
    else if (const GT *op = cmp.as<GT>()) lhs = op->a, rhs = op->b;
    else if (const GE *op = cmp.as<GE>()) lhs = op->a, rhs = op->b;
    else return found;
    if (expr_uses_var(lhs, loop_var) == expr_uses_var(rhs, loop_var)) return found;
    (expr_uses_var(lhs, loop_var) ? rhs : lhs).accept(&vars);
    for (const std::string &name : vars.names) {
        if (name == loop_var || inner.count(name)) continue;
        LinearForm f;
        if (!linear_form(d, {name}, f)) continue;
        int64_t a = f.coef.count(name) ? f.coef[name] : 0;
        if (a != 1 && a != -1) continue;
        // d = a * v + rest; the largest value of rest over the inner loops.
        LinearForm g;
        if (!linear_form(f.rest, inner, g)) continue;
        Expr worst = g.rest;
        bool ok = true;
        for (const InnerLoop &l : occ.loops) {
            auto it = g.coef.find(l.name);
            if (it == g.coef.end() || it->second == 0) continue;
            Expr bound = it->second > 0 ? l.max : l.min;
            if (!bound.defined() || bound.type() != t) ok = false;
            if (ok) worst = fold_add(worst, Mul::make(bound, make_const(t, it->second)));
        }
        if (!ok || uses_any(worst, inner) || reads_memory_or_has_effects(worst) ||
            expr_uses_var(worst, name))
            continue;
        // a * v + worst <= k.
        if (a == -1) {
            found.emplace_back(name,
                               Interval(simplify(Sub::make(worst, make_const(t, k))), Expr()));
        } else {
            found.emplace_back(name,
                               Interval(Expr(), simplify(Sub::make(make_const(t, k), worst))));
        }
    }
    return found;
}

void split_conjuncts(const Expr &e, std::vector<Expr> &out) {
    if (const And *op = e.as<And>()) {
        split_conjuncts(op->a, out);
        split_conjuncts(op->b, out);
    } else if (const Call *c = e.as<Call>();
               c && c->is_intrinsic(Call::likely) && c->args.size() == 1) {
        split_conjuncts(c->args[0], out);
    } else {
        out.push_back(e);
    }
}

// Replaces chosen likely() calls by what remains of them in the steady state,
// and folds the branches that became constant.
class ReplaceLikely : public IRMutator {
  public:
    std::map<const Call *, Expr> replacements;

  protected:
    using IRMutator::visit;
    Expr visit(const Call *op) override {
        auto it = replacements.find(op);
        if (it != replacements.end()) return it->second;
        return IRMutator::visit(op);
    }
    Expr visit(const Select *op) override {
        Expr e = IRMutator::visit(op);
        if (const Select *s = e.as<Select>()) {
            if (s->condition.type().is_scalar() && is_const(s->condition)) {
                return is_const_zero(s->condition) ? s->false_value : s->true_value;
            }
        }
        return e;
    }
    Stmt visit(const IfThenElse *op) override {
        Stmt s = IRMutator::visit(op);
        if (const IfThenElse *i = s.as<IfThenElse>()) {
            if (is_const(i->condition)) {
                if (!is_const_zero(i->condition)) return i->then_case;
                if (i->else_case.defined()) return i->else_case;
                return Evaluate::make(make_zero(Int(32)));
            }
        }
        return s;
    }
};

// Replaces by false each likely() whose condition includes one of the given
// conditions (compared with the lets of the body substituted, as
// CollectLikely sees them), and folds the branches that become constant.
class FalsifyConditions : public ReplaceLikely {
  public:
    std::vector<Expr> false_conditions;

  protected:
    using IRMutator::visit;
    LetStack lets;
    Stmt visit(const LetStmt *op) override {
        Expr v = mutate(op->value);
        lets.push(op->name, op->value);
        Stmt body = mutate(op->body);
        lets.pop(op->name);
        if (v.same_as(op->value) && body.same_as(op->body)) return op;
        return LetStmt::make(op->name, v, body);
    }
    Expr visit(const Let *op) override {
        Expr v = mutate(op->value);
        lets.push(op->name, op->value);
        Expr body = mutate(op->body);
        lets.pop(op->name);
        if (v.same_as(op->value) && body.same_as(op->body)) return op;
        return Let::make(op->name, v, body);
    }
    Stmt visit(const For *op) override {
        lets.push(op->name, Expr());  // the loop variable shadows a let
        Stmt s = ReplaceLikely::visit(op);
        lets.pop(op->name);
        return s;
    }
    Expr visit(const Call *op) override {
        if (op->is_intrinsic(Call::likely) && op->args.size() == 1) {
            std::vector<Expr> conjuncts;
            split_conjuncts(op->args[0], conjuncts);
            for (const Expr &c : conjuncts) {
                Expr seen = substitute_in_all_lets(lets.subst(c));
                for (const Expr &f : false_conditions) {
                    if (equal(seen, f)) return const_false();
                }
            }
        }
        return ReplaceLikely::visit(op);
    }
};

// Finds, for a loop body, every statement whose effect outlives an
// iteration (a store to memory not allocated inside the body, a call with
// side effects) and the likely() conditions that guard it, with the lets of
// the body substituted in.
class CollectEffectGuards : public IRVisitor {
  public:
    explicit CollectEffectGuards(const std::string &loop_var) : loop_var(loop_var) {}

    // The guard conjuncts of each effect, and whether some effect is not
    // under any likely() condition at all.
    std::vector<std::vector<Expr>> effect_guards;
    bool unguarded = false;
    // Each likely() call of the body, with its conjuncts as seen where it
    // occurs (lets substituted); a call seen twice keeps both.
    std::map<const Call *, std::vector<std::vector<Expr>>> likely_conjuncts;
    // Variables bound inside the body (inner loops, lets): a guard that
    // mentions one cannot be solved for the loop variable alone.
    std::set<std::string> inner_names;

    using IRVisitor::visit;

  private:
    std::string loop_var;
    std::vector<std::string> allocations;
    LetStack lets;
    std::vector<Expr> guards;

    Expr subst(const Expr &e) const { return lets.subst(e); }
    bool internal(const std::string &buffer) const {
        return std::find(allocations.begin(), allocations.end(), buffer) != allocations.end();
    }
    void effect() {
        if (guards.empty()) unguarded = true;
        effect_guards.push_back(guards);
    }
    template <typename LetT> void visit_let(const LetT *op) {
        op->value.accept(this);
        inner_names.insert(op->name);
        lets.push(op->name, op->value);
        op->body.accept(this);
        lets.pop(op->name);
    }

  public:
    void visit(const Let *op) override { visit_let(op); }
    void visit(const LetStmt *op) override { visit_let(op); }
    void visit(const For *op) override {
        op->min.accept(this);
        op->extent.accept(this);
        inner_names.insert(op->name);
        lets.push(op->name, Expr());  // shadows a let of the same name
        op->body.accept(this);
        lets.pop(op->name);
    }
    void visit(const Allocate *op) override {
        for (const Expr &e : op->extents) e.accept(this);
        allocations.push_back(op->name);
        op->body.accept(this);
        allocations.pop_back();
    }
    void visit(const Store *op) override {
        IRVisitor::visit(op);
        if (!internal(op->name)) effect();
    }
    void visit(const Evaluate *op) override {
        IRVisitor::visit(op);
        if (!is_pure(op->value)) effect();
    }
    void visit(const IfThenElse *op) override {
        op->condition.accept(this);
        std::vector<Expr> added;
        if (const Call *c = op->condition.as<Call>(); c && c->is_intrinsic(Call::likely)) {
            split_conjuncts(subst(c->args[0]), added);
        }
        guards.insert(guards.end(), added.begin(), added.end());
        op->then_case.accept(this);
        guards.resize(guards.size() - added.size());
        if (op->else_case.defined()) op->else_case.accept(this);
    }
    void visit(const Call *op) override {
        if (op->is_intrinsic(Call::likely) && op->args.size() == 1) {
            std::vector<Expr> conj;
            split_conjuncts(subst(op->args[0]), conj);
            likely_conjuncts[op].push_back(conj);
        }
        IRVisitor::visit(op);
    }
};

// Trims loops to the iterations that do something. A loop whose every
// effect outside its iteration is guarded by a condition on the loop
// variable alone, such as likely(ro * 8 + ri <= r.max) around the only
// store of a GuardWithIf split (its producers computed inside the
// iteration write memory allocated there), does nothing where the condition
// fails: it runs over the range where the condition holds, and the condition
// becomes true. Partitioning would instead keep a copy of the whole body for
// the tail, computing producers whose values nobody stores. Inner loops are
// trimmed first, so their conditions no longer ask outer loops to partition.
class TrimGuardedLoops : public IRMutator {
  protected:
    using IRMutator::visit;

    Stmt visit(const For *op) override {
        Stmt s = IRMutator::visit(op);
        const For *loop = s.as<For>();
        if (!loop || (loop->for_type != ForType::Serial && loop->for_type != ForType::Parallel))
            return s;
        Type t = loop->min.type();
        if (!t.is_int() || !t.is_scalar()) return s;
        CollectEffectGuards collect(loop->name);
        loop->body.accept(&collect);
        if (collect.unguarded || collect.effect_guards.empty()) return s;

        // The conditions on the loop variable alone that guard every effect.
        Solution range;
        std::vector<Expr> solved;
        for (const Expr &c : collect.effect_guards[0]) {
            if (!expr_uses_var(c, loop->name) || uses_any(c, collect.inner_names)) continue;
            bool everywhere = true;
            for (const std::vector<Expr> &g : collect.effect_guards) {
                bool found = false;
                for (const Expr &h : g) found = found || equal(h, c);
                everywhere = everywhere && found;
            }
            Solution sol;
            if (!everywhere || !solve_comparison(c, loop->name, t, Occurrence(), sol)) continue;
            range.lo = max_of(range.lo, sol.lo);
            range.hi = min_of(range.hi, sol.hi);
            solved.push_back(c);
        }
        if (solved.empty()) return s;

        // Within the range the solved conditions hold: drop them from every
        // likely() they appear in (where each occurrence agrees).
        ReplaceLikely drop;
        for (const auto &kv : collect.likely_conjuncts) {
            size_t unsolved = 0;
            bool consistent = true;
            for (size_t j = 0; j < kv.second[0].size(); j++) {
                auto is_solved = [&](const Expr &e) {
                    for (const Expr &c : solved) {
                        if (equal(c, e)) return true;
                    }
                    return false;
                };
                bool first = is_solved(kv.second[0][j]);
                for (const std::vector<Expr> &occ : kv.second) {
                    consistent = consistent && occ.size() == kv.second[0].size() &&
                                 is_solved(occ[j]) == first;
                }
                if (!first) unsolved++;
            }
            if (!consistent || unsolved == kv.second[0].size()) continue;
            // Rebuild from the original (unsubstituted) conjuncts.
            std::vector<Expr> original;
            split_conjuncts(kv.first->args[0], original);
            if (original.size() != kv.second[0].size()) continue;
            Expr residual;
            for (size_t j = 0; j < original.size(); j++) {
                bool solved_here = false;
                for (const Expr &c : solved) solved_here = solved_here || equal(c, kv.second[0][j]);
                if (solved_here) continue;
                residual = residual.defined() ? And::make(residual, original[j]) : original[j];
            }
            drop.replacements[kv.first] =
                residual.defined()
                    ? Call::make(residual.type(), Call::likely, {residual}, Call::PureIntrinsic)
                    : const_true();
        }
        Stmt body = drop.mutate(loop->body);

        Expr end = fold_add(loop->min, loop->extent);  // one past the last iteration
        Expr new_min = loop->min, new_end = end;
        if (range.lo.defined()) new_min = Max::make(loop->min, range.lo);
        if (range.hi.defined()) new_end = Min::make(end, Add::make(range.hi, make_one(t)));
        Expr extent = simplify(Max::make(Sub::make(new_end, new_min), make_zero(t)));
        return For::make(loop->name, simplify(new_min), extent, loop->for_type, body,
                         loop->attributes);
    }
};

class PartitionLoops : public IRMutator {
  protected:
    using IRMutator::visit;

    // Outer loops first: partitioning an outer loop removes the condition
    // from its steady state entirely, and the inner loops of that steady
    // state are then partitioned on what remains.
    //
    // A loop of a GPU block's own code around thread loops that reduce
    // across the threads (a reduction's serial loop over a row, shared by
    // the block's threads) is left whole: each partition would have its own
    // combine of the threads' partials, with its barriers. Its thread loops'
    // serial loops are still partitioned. Other such loops (FlashAttention's
    // loop over key tiles, each staged by all the threads between barriers)
    // are partitioned: every thread of the block runs the same partition,
    // so each barrier is still reached by all of them, and the steady state
    // runs full tiles without the guards of the last one.
    Stmt visit(const For *op) override {
        if ((op->for_type == ForType::Serial || op->for_type == ForType::Parallel) &&
            (!has_thread_loop(op->body) || !reduces_across_threads(op, registers))) {
            Stmt p = partition(op);
            if (p.defined()) return p;
        }
        return IRMutator::visit(op);
    }
    Stmt visit(const Allocate *op) override {
        if (op->memory_type != MemoryType::Register || op->replicated) {
            return IRMutator::visit(op);
        }
        registers.insert(op->name);
        Stmt s = IRMutator::visit(op);
        registers.erase(op->name);
        return s;
    }

    /** The Register storage around the loop visited that each thread
     * owns (not the replicated storage, which reductions across the
     * threads update). */
    std::set<std::string> registers;

    // Names a value the partitioned loops use several times, unless it is
    // cheap to repeat.
    static Expr bind(const std::string &name, const Expr &e,
                     std::vector<std::pair<std::string, Expr>> &lets) {
        Expr v = simplify(e);
        if (is_const(v) || v.as<Variable>()) return v;
        lets.emplace_back(name, v);
        return Variable::make(v.type(), name);
    }

    // The steady state simplified with what its conditions say about the
    // enclosing variables: the clamps that guarded the tail fold away.
    // The steady state simplified with what its conditions say about the
    // enclosing variables, and with the loop variable's lower bound: the
    // clamps that guarded the tail fold away. (Only the lower end of the loop
    // variable: its upper end, in the symbolic ranges, would be substituted
    // into the enclosing variables' bounds, which are in terms of it, and
    // lose the correlation between them.)
    static Stmt simplify_steady(const Stmt &body, const std::string &loop_var, const Expr &loop_min,
                                const std::map<std::string, Interval> &known) {
        if (known.empty()) return body;
        Scope<Interval> facts;
        facts.push(loop_var, Interval(loop_min, Expr()));
        for (const auto &kv : known) facts.push(kv.first, kv.second);
        return simplify(body, true, facts);
    }

    static Expr extent_between(const Expr &a, const Expr &b) {
        if (is_const_zero(a)) return b;
        return simplify(Sub::make(b, a));
    }

    Stmt partition(const For *op) {
        Type t = op->min.type();
        if (!t.is_int()) return Stmt();
        CollectLikely collect;
        op->body.accept(&collect);
        if (collect.order.empty()) return Stmt();

        Solution steady;  // the intersection of every solved condition's range
        ReplaceLikely steady_body;
        bool any = false;
        // The solved conditions that bound the steady range from above (or
        // below): a condition of the loop variable alone whose bound is the
        // tightest one is false past the steady range, so the epilogue (or
        // prologue) drops what it guards.
        struct Bounding {
            Expr condition;  // as seen at one occurrence, lets substituted
            Expr bound;      // the condition holds up to (from) here
            bool on_loop_variable_alone;
        };
        std::vector<Bounding> upper, lower;
        // What the steady state knows of enclosing variables (see
        // bounds_on_outer_variables), for simplifying it.
        std::map<std::string, Interval> known;
        for (const Call *call : collect.order) {
            std::vector<Expr> conjuncts;
            split_conjuncts(call->args[0], conjuncts);
            std::vector<bool> solved(conjuncts.size(), false);
            std::vector<Solution> sols(conjuncts.size());
            for (size_t j = 0; j < conjuncts.size(); j++) {
                bool ok = true;
                Solution sj;
                std::vector<Bounding> his, los;
                std::vector<std::pair<std::string, Interval>> facts;
                for (const Occurrence &occ : collect.found[call]) {
                    Expr c = occ.lets.empty() ? conjuncts[j] : substitute(occ.lets, conjuncts[j]);
                    c = substitute_in_all_lets(c);
                    Solution so;
                    if (!expr_uses_var(c, op->name) || !solve_comparison(c, op->name, t, occ, so)) {
                        ok = false;
                        break;
                    }
                    sj.lo = max_of(sj.lo, so.lo);
                    sj.hi = min_of(sj.hi, so.hi);
                    bool alone = true;
                    for (const InnerLoop &l : occ.loops) alone = alone && !expr_uses_var(c, l.name);
                    for (const auto &vr : bounds_on_outer_variables(c, op->name, occ))
                        facts.push_back(vr);
                    if (so.hi.defined()) his.push_back({c, simplify(so.hi), alone});
                    if (so.lo.defined()) los.push_back({c, simplify(so.lo), alone});
                }
                if (ok) {
                    // Only a conjunct solved at every occurrence holds in the
                    // steady state: only then are its facts true there.
                    solved[j] = true;
                    sols[j] = sj;
                    upper.insert(upper.end(), his.begin(), his.end());
                    lower.insert(lower.end(), los.begin(), los.end());
                    for (const auto &vr : facts) {
                        Interval &k = known[vr.first];
                        k.min = max_of(k.min, vr.second.min);
                        k.max = min_of(k.max, vr.second.max);
                    }
                }
            }
            Expr residual;
            bool changed = false;
            for (size_t j = 0; j < conjuncts.size(); j++) {
                if (solved[j]) {
                    steady.lo = max_of(steady.lo, sols[j].lo);
                    steady.hi = min_of(steady.hi, sols[j].hi);
                    changed = true;
                } else {
                    residual =
                        residual.defined() ? And::make(residual, conjuncts[j]) : conjuncts[j];
                }
            }
            if (!changed) continue;
            any = true;
            steady_body.replacements[call] =
                residual.defined()
                    ? Call::make(residual.type(), Call::likely, {residual}, Call::PureIntrinsic)
                    : const_true();
        }
        if (!any) return Stmt();

        // A bound that provably covers the whole loop needs no prologue or
        // epilogue.
        Expr loop_max = Sub::make(fold_add(op->min, op->extent), make_one(t));
        if (steady.lo.defined() && can_prove(LE::make(steady.lo, op->min))) steady.lo = Expr();
        if (steady.hi.defined() && can_prove(GE::make(steady.hi, loop_max))) steady.hi = Expr();
        if (!steady.lo.defined() && !steady.hi.defined()) {
            // The conditions hold everywhere: the whole loop is the steady state.
            Stmt body =
                mutate(simplify_steady(steady_body.mutate(op->body), op->name, op->min, known));
            return For::make(op->name, op->min, op->extent, op->for_type, body, op->attributes);
        }

        std::vector<std::pair<std::string, Expr>> lets;
        const std::string &n = op->name;
        Expr loop_min = bind(n + ".loop_min", op->min, lets);
        Expr loop_end = bind(n + ".loop_end", fold_add(loop_min, op->extent), lets);
        Expr steady_min = loop_min, steady_end = loop_end;
        if (steady.lo.defined()) {
            steady_min =
                bind(n + ".steady_min", Max::make(Min::make(steady.lo, loop_end), loop_min), lets);
        }
        if (steady.hi.defined()) {
            Expr end = Add::make(steady.hi, make_one(t));
            steady_end =
                bind(n + ".steady_end", Max::make(Min::make(end, loop_end), steady_min), lets);
        }

        // Only the steady state's inner loops are partitioned further, on the
        // conditions that remain (as Halide does). The prologue and epilogue
        // keep the original body: for the tail of a split they run one
        // iteration at most, and partitioning their inner loops too would
        // copy every inner loop nest once more per level, which multiplies
        // the size of the module (and LLVM's compile time) without making the
        // steady state any faster. Their guards stay as branches, or masks
        // once vectorized, except those known false there:
        //
        // Past the steady range, a condition of the loop variable alone with
        // the tightest bound fails: its guards are false there (the tail of a
        // split by 2 with an unrolled inner loop keeps only the first half).
        auto outside = [&](const std::vector<Bounding> &bs, bool is_upper) {
            FalsifyConditions r;
            for (const Bounding &b : bs) {
                if (!b.on_loop_variable_alone) continue;
                bool tightest = true;
                for (const Bounding &other : bs) {
                    if (!tightest) break;
                    if (equal(other.bound, b.bound)) continue;
                    tightest = can_prove(is_upper ? LE::make(b.bound, other.bound)
                                                  : GE::make(b.bound, other.bound));
                }
                if (tightest) r.false_conditions.push_back(b.condition);
            }
            return r.false_conditions.empty() ? op->body : r.mutate(op->body);
        };
        std::vector<Stmt> loops;
        if (steady.lo.defined()) {
            loops.push_back(For::make(n, loop_min, extent_between(loop_min, steady_min),
                                      op->for_type, outside(lower, false), op->attributes));
        }
        loops.push_back(
            For::make(n, steady_min, extent_between(steady_min, steady_end), op->for_type,
                      mutate(simplify_steady(steady_body.mutate(op->body), n, steady_min, known)),
                      op->attributes));
        if (steady.hi.defined()) {
            loops.push_back(For::make(n, steady_end, extent_between(steady_end, loop_end),
                                      op->for_type, outside(upper, true), op->attributes));
        }
        Stmt result = Block::make(loops);
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
            result = LetStmt::make(it->first, it->second, result);
        }
        return result;
    }
};

}  // namespace

Stmt partition_loops(const Stmt &s) {
    return PartitionLoops().mutate(TrimGuardedLoops().mutate(s));
}

}  // namespace internal
}  // namespace loom
