// Rules for min/max, comparisons, boolean operators and select. Integer
// comparisons are decided through the difference a - b, whose constant bounds
// come from info_of and, failing that, from the symbolic ranges in scope.
#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "arith/Bounds.h"
#include "arith/Simplify_Internal.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"

namespace loom {
namespace internal {

namespace {

bool is_int_type(Type t) { return t.is_int_or_uint() && !t.is_bool(); }

// Three-way comparison of two integer constants of type t.
bool const_cmp(const Expr &a, const Expr &b, int *result) {
    Type t = a.type();
    int64_t x, y;
    if (!const_int(a, &x) || !const_int(b, &y)) return false;
    if (t.is_uint()) {
        uint64_t ux = static_cast<uint64_t>(wrap_to_type(x, t)),
                 uy = static_cast<uint64_t>(wrap_to_type(y, t));
        *result = ux < uy ? -1 : (ux > uy ? 1 : 0);
    } else {
        *result = x < y ? -1 : (x > y ? 1 : 0);
    }
    return true;
}

// The constant part of a canonical sum e == rest + c.
bool split_const(const Expr &e, Expr *rest, int64_t *c) {
    if (const Add *add = e.as<Add>()) {
        if (const_int(add->b, c)) {
            *rest = add->a;
            return true;
        }
    }
    return false;
}

thread_local int sym_depth = 0;

class FindVars : public IRVisitor {
  public:
    explicit FindVars(const Scope<Interval> &s) : scope(s) {}
    bool found = false;

  private:
    const Scope<Interval> &scope;
    void visit(const Variable *op) override {
        if (scope.contains(op->name)) found = true;
    }
};

// Node count of e, counting no further than `limit`.
class CountNodes : public IRVisitor {
  public:
    explicit CountNodes(int l) : limit(l) {}
    int count = 0;
    int limit;
    void visit(const Add *op) override { step(op->a, op->b); }
    void visit(const Sub *op) override { step(op->a, op->b); }
    void visit(const Mul *op) override { step(op->a, op->b); }
    void visit(const Div *op) override { step(op->a, op->b); }
    void visit(const Mod *op) override { step(op->a, op->b); }
    void visit(const Min *op) override { step(op->a, op->b); }
    void visit(const Max *op) override { step(op->a, op->b); }
    void visit(const Select *op) override {
        if (++count > limit) return;
        op->condition.accept(this);
        step(op->true_value, op->false_value);
    }
    void visit(const Let *op) override { step(op->value, op->body); }
    void visit(const Variable *) override { count++; }
    void visit(const IntImm *) override { count++; }

  private:
    void step(const Expr &a, const Expr &b) {
        if (++count > limit) return;
        a.accept(this);
        if (count > limit) return;
        b.accept(this);
    }
};

bool small_enough(const Expr &e, int limit = 40) {
    CountNodes c(limit);
    e.accept(&c);
    return c.count <= limit;
}

bool uses_scope(const Expr &e, const Scope<Interval> &s) {
    FindVars f(s);
    e.accept(&f);
    return f.found;
}

}  // namespace

// ---------------------------------------------------------------------------
// Symbolic proofs through interval analysis

Interval Simplify::sym_point(const std::string &name, const Expr &value) const {
    if (!value.type().is_int() || !value.type().is_scalar()) return Interval();
    // A large value (the nested bounds of a split loop, say) would be
    // substituted into every interval computed under it, which makes the
    // proofs slow and almost never decides them: keep the name opaque.
    // A value that refers to an enclosing binding of the same name (let x =
    // x + 1) would be read as referring to itself.
    if (!small_enough(value, 24) || expr_uses_var(value, name))
        return Interval::single_point(Variable::make(value.type(), name));
    return Interval::single_point(value);
}

Simplify::SymKey Simplify::sym_key(const Expr &e) const {
    // The answer of sym_prove depends on e and on what is known of the
    // variables it reaches: those of e and, as it iterates, those in their
    // ranges. A range is identified by its nodes, which the key keeps alive.
    SymKey key;
    key.e = e;
    std::set<std::string> seen;
    std::vector<Expr> frontier{e};
    for (int level = 0; level < 4 && !frontier.empty(); level++) {
        std::vector<Expr> next;
        for (const Expr &x : frontier) {
            for (const std::string &name : free_variables(x)) {
                if (!seen.insert(name).second) continue;
                key.names.push_back(name);
                const Interval *i = sym_bounds.find(name);
                const VarInfo *vi = vars.find(name);
                for (const Expr &n :
                     {i ? i->min : Expr(), i ? i->max : Expr(), vi ? vi->replacement : Expr()}) {
                    key.nodes.push_back(n.get());
                    if (n.defined()) key.keep_alive.push_back(n);
                }
                if (vi) {
                    const ExprInfo &f = vi->info;
                    key.numbers.insert(key.numbers.end(),
                                       {f.min_defined, f.max_defined, f.min, f.max,
                                        f.alignment.modulus, f.alignment.remainder});
                } else {
                    key.numbers.push_back(-1);
                }
                if (i && i->min.defined()) next.push_back(i->min);
                if (i && i->max.defined() && !i->max.same_as(i->min)) next.push_back(i->max);
            }
        }
        frontier.swap(next);
    }
    return key;
}

bool Simplify::SymKeyLess::operator()(const SymKey &a, const SymKey &b) const {
    if (std::tie(a.names, a.nodes, a.numbers) != std::tie(b.names, b.nodes, b.numbers))
        return std::tie(a.names, a.nodes, a.numbers) < std::tie(b.names, b.nodes, b.numbers);
    return ExprDeepCompare()(a.e, b.e);
}

bool Simplify::can_use_sym() const { return sym_depth == 0 && !sym_bounds.empty(); }

bool Simplify::sym_prove_nonpositive(const Expr &e, bool strict) {
    return sym_prove(e, strict ? SymProof::Negative : SymProof::NonPositive);
}

bool Simplify::sym_prove_nonnegative(const Expr &e, bool strict) {
    return sym_prove(e, strict ? SymProof::Positive : SymProof::NonNegative);
}

bool Simplify::sym_prove(const Expr &e, SymProof goal) {
    // Interval analysis of big expressions is costly and rarely decisive, and
    // it bounds scalars: vector code is simplified lane-wise by the rules.
    if (!can_use_sym() || !e.type().is_int() || !e.type().is_scalar() || !small_enough(e) ||
        !uses_scope(e, sym_bounds))
        return false;
    // The nested bounds of a split loop repeat the same comparisons many
    // times over, in scopes that differ only in bindings e does not use.
    SymKey key = sym_key(e);
    auto cached = sym_cache.find(key);
    if (cached != sym_cache.end() && cached->second.answer[static_cast<int>(goal)] >= 0)
        return cached->second.answer[static_cast<int>(goal)] == 1;
    const bool upper = goal == SymProof::NonPositive || goal == SymProof::Negative;
    const bool strict = goal == SymProof::Negative || goal == SymProof::Positive;
    sym_depth++;
    bool result = false;
    Expr cur = e;
    for (int iter = 0; iter < 3; iter++) {
        Interval i = bounds_of_expr_in_scope(cur, sym_bounds);
        const Expr &end = upper ? i.max : i.min;
        if (!end.defined()) break;
        ExprInfo info = info_of(end);
        // Only here, on the bound of a difference: a bound such as
        // ((n + 7) / 8 - 1) * 8 - n + 1 cancels through x / c * c == x - x % c.
        // (As a rule of the simplifier at large it would drop clamps such
        // as min(a + (b - a + 3) / 4 * 4, b + 3), which are redundant but
        // keep bounds inference's interval arithmetic tight.)
        if (ExprInfo q; info_through_quotients(end, &q)) info.intersect(q);
        if (upper && info.max_defined && (strict ? info.max < 0 : info.max <= 0)) {
            result = true;
            break;
        }
        if (!upper && info.min_defined && (strict ? info.min > 0 : info.min >= 0)) {
            result = true;
            break;
        }
        if (is_const(end) || !small_enough(end) || !uses_scope(end, sym_bounds)) break;
        cur = end;
    }
    sym_depth--;
    if (sym_cache.size() > 10000) sym_cache.clear();
    sym_cache[key].answer[static_cast<int>(goal)] = result;
    return result;
}

ExprInfo Simplify::info_from_linear_facts(const Expr &d) {
    ExprInfo r;
    Type t = d.type();
    if (!no_overflow_int(t) || !t.is_scalar()) return r;
    auto use = [&](const Expr &fact, bool truth) {
        // The fact as a < b, a <= b or a == b: a bound on a - b.
        Expr a, b;
        bool strict, is_eq;
        if (!as_integer_comparison(fact, truth, &a, &b, &strict, &is_eq) || a.type() != t) return;
        const int64_t hi = strict ? -1 : 0;
        // d = ±(a - b) + rest: d is within the fact's bound of a - b
        // (mirrored for the sum), shifted by the range of the rest.
        for (int sign : {1, -1}) {
            LinearForm rest(t);
            rest.add(d, 1);
            rest.add(a, -sign);
            rest.add(b, sign);
            ExprInfo c = info_of_linear(rest);
            ExprInfo i;
            if (sign > 0) {
                i.min_defined = is_eq && c.min_defined, i.min = c.min;
                i.max_defined = c.max_defined && !__builtin_add_overflow(hi, c.max, &i.max);
            } else {
                i.min_defined = c.min_defined && !__builtin_sub_overflow(c.min, hi, &i.min);
                i.max_defined = is_eq && c.max_defined, i.max = c.max;
            }
            r.intersect(i);
        }
    };
    for (const Expr &f : true_facts) use(f, true);
    for (const Expr &f : false_facts) use(f, false);
    return r;
}

void Simplify::compare(const Expr &a, const Expr &b, bool *lt, bool *le, bool *gt, bool *ge) {
    *lt = *le = *gt = *ge = false;
    Type t = a.type();
    if (!is_int_type(t)) return;
    ExprInfo ia = info_of(a), ib = info_of(b);
    if (ia.max_defined && ib.min_defined) {
        *lt = ia.max < ib.min;
        *le = ia.max <= ib.min;
    }
    if (ia.min_defined && ib.max_defined) {
        *gt = ia.min > ib.max;
        *ge = ia.min >= ib.max;
    }
    if (!no_overflow_int(t) || *lt || *gt) return;
    // (Floor) division by the same positive constant is monotone: a <= b
    // implies a / c <= b / c (the bounds of split loops compare such
    // quotients, e.g. (n + 1) / 2 against n / 2).
    if (const Div *da = a.as<Div>(), *db = b.as<Div>(); da && db && equal(da->b, db->b)) {
        const int64_t *c = as_const_int(da->b);
        if (c && *c > 0) {
            bool l2, le2, g2, ge2;
            compare(da->a, db->a, &l2, &le2, &g2, &ge2);
            *le |= le2;
            *ge |= ge2;
            if (*le && *ge) return;
        }
    }
    Expr d = rewrite_sub(a, b);
    ExprInfo id = info_of(d);
    // d = p / c - q / c + k, with p - q a constant D: floor division keeps
    // the difference within [floor(D / c), ceil(D / c)], so d is bounded
    // (e.g. n / 2 - (n + 1) / 2 <= 0, which split tails need).
    {
        LinearForm f(t);
        f.add(d, 1);
        const Div *pos = nullptr, *neg = nullptr;
        if (f.terms.size() == 2) {
            for (const LinearForm::Term &term : f.terms) {
                const Div *q = term.e.as<Div>();
                if (q && term.coeff == 1) pos = q;
                if (q && term.coeff == -1) neg = q;
            }
        }
        const int64_t *c = pos && neg && equal(pos->b, neg->b) ? as_const_int(pos->b) : nullptr;
        if (c && *c > 0) {
            const Expr difference = rewrite_sub(pos->a, neg->a);
            const int64_t *D = as_const_int(difference);
            if (D && *D > INT32_MIN && *D < INT32_MAX) {
                int64_t lo = div_imp(*D, *c), hi = div_imp(*D + *c - 1, *c);
                lo += f.constant;
                hi += f.constant;
                if (!id.max_defined || hi < id.max) id.max = hi, id.max_defined = true;
                if (!id.min_defined || lo > id.min) id.min = lo, id.min_defined = true;
            }
        }
    }
    id.intersect(info_from_linear_facts(d));
    if (id.max_defined) {
        *lt |= id.max < 0;
        *le |= id.max <= 0;
    }
    if (id.min_defined) {
        *gt |= id.min > 0;
        *ge |= id.min >= 0;
    }
    if (*lt || *gt || (*le && *ge)) return;
    if (!*le && sym_prove_nonpositive(d, false)) {
        *le = true;
        *lt = sym_prove_nonpositive(d, true);
    }
    if (!*ge && !*le && sym_prove_nonnegative(d, false)) {
        *ge = true;
        *gt = sym_prove_nonnegative(d, true);
    }
}

Expr Simplify::check_facts(const Expr &e) {
    if (!e.type().is_bool()) return e;
    for (const Expr &f : true_facts) {
        if (equal(f, e)) return make_bool(true, e.type().lanes);
    }
    for (const Expr &f : false_facts) {
        if (equal(f, e)) return make_bool(false, e.type().lanes);
    }
    return e;
}

// ---------------------------------------------------------------------------
// min / max

Expr Simplify::visit(const Min *op) { return rewrite_min(mutate(op->a), mutate(op->b)); }
Expr Simplify::visit(const Max *op) { return rewrite_max(mutate(op->a), mutate(op->b)); }

#define LOOM_MINMAX_BODY(IS_MIN, SAME, OTHER, rewrite_same)                                  \
    Type t = a.type();                                                                       \
    if (equal(a, b)) return a;                                                               \
    if (t.is_float()) {                                                                      \
        const double *fa = as_const_float(a), *fb = as_const_float(b);                       \
        if (fa && fb && !std::isnan(*fa) && !std::isnan(*fb)) {                              \
            return IS_MIN ? (*fa <= *fb ? a : b) : (*fa >= *fb ? a : b);                     \
        }                                                                                    \
    }                                                                                        \
    {                                                                                        \
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();                    \
        if (ba && bb) return Broadcast::make(rewrite_same(ba->value, bb->value), ba->lanes); \
    }                                                                                        \
    if (is_const(a) && !is_const(b)) return rewrite_same(b, a);                              \
    if (!is_int_type(t)) return SAME::make(a, b);                                            \
    {                                                                                        \
        int c;                                                                               \
        if (const_cmp(a, b, &c)) return IS_MIN ? (c <= 0 ? a : b) : (c >= 0 ? a : b);        \
    }                                                                                        \
    bool lt, le, gt, ge;                                                                     \
    compare(a, b, &lt, &le, &gt, &ge);                                                       \
    if (le) return IS_MIN ? a : b;                                                           \
    if (ge) return IS_MIN ? b : a;                                                           \
    /* Absorption: min(x, min(x, y)) == min(x, y); min(x, max(x, y)) == x. */                \
    if (const SAME *s = b.as<SAME>()) {                                                      \
        if (equal(s->a, a) || equal(s->b, a)) return b;                                      \
    }                                                                                        \
    if (const SAME *s = a.as<SAME>()) {                                                      \
        if (equal(s->a, b) || equal(s->b, b)) return a;                                      \
        /* min(min(x, c1), c2) == min(x, min(c1, c2)) */                                     \
        if (is_const(s->b) && is_const(b)) return rewrite_same(s->a, rewrite_same(s->b, b)); \
    }                                                                                        \
    if (const OTHER *o = b.as<OTHER>()) {                                                    \
        if (equal(o->a, a) || equal(o->b, a)) return a;                                      \
    }                                                                                        \
    /* min(min(x, y), z) == min(y, z) where z <= x: the bounds of a region that */           \
    /* joins a loop's footprint with what its consumers read nest this way. */               \
    for (int side = 0; side < 2; side++) {                                                   \
        const Expr &nested = side ? b : a, &other = side ? a : b;                            \
        const SAME *s = nested.as<SAME>();                                                   \
        if (!s || other.as<SAME>()) continue;                                                \
        for (int k = 0; k < 2; k++) {                                                        \
            const Expr &dropped = k ? s->b : s->a, &kept = k ? s->a : s->b;                  \
            compare(dropped, other, &lt, &le, &gt, &ge);                                     \
            if (IS_MIN ? ge : le) return rewrite_same(kept, other);                          \
        }                                                                                    \
    }                                                                                        \
    if (const OTHER *o = a.as<OTHER>()) {                                                    \
        if (equal(o->a, b) || equal(o->b, b)) return b;                                      \
    }                                                                                        \
    if (no_overflow_int(t) && t.is_scalar()) {                                               \
        /* min(x + c0, y + c1) == min(x, y + (c1 - c0)) + c0; min(x + c0, c1) likewise. */   \
        Expr ra, rb;                                                                         \
        int64_t c0, c1;                                                                      \
        if (split_const(a, &ra, &c0)) {                                                      \
            bool b_split = split_const(b, &rb, &c1);                                         \
            bool b_const = !b_split && const_int(b, &c1);                                    \
            if (b_split || b_const) {                                                        \
                Expr k = make_const(t, c0);                                                  \
                return rewrite_add(rewrite_same(ra, rewrite_sub(b, k)), k);                  \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    return SAME::make(a, b);

Expr Simplify::rewrite_min(const Expr &a, const Expr &b){
    LOOM_MINMAX_BODY(true, Min, Max, rewrite_min)} Expr Simplify::rewrite_max(const Expr &a,
                                                                              const Expr &b) {
    LOOM_MINMAX_BODY(false, Max, Min, rewrite_max)
}
#undef LOOM_MINMAX_BODY

// ---------------------------------------------------------------------------
// Comparisons. GT and GE become LT and LE with the operands swapped.

Expr Simplify::visit(const LT *op) { return rewrite_lt(mutate(op->a), mutate(op->b), true); }
Expr Simplify::visit(const LE *op) { return rewrite_lt(mutate(op->a), mutate(op->b), false); }
Expr Simplify::visit(const GT *op) { return rewrite_lt(mutate(op->b), mutate(op->a), true); }
Expr Simplify::visit(const GE *op) { return rewrite_lt(mutate(op->b), mutate(op->a), false); }
Expr Simplify::visit(const EQ *op) { return rewrite_eq(mutate(op->a), mutate(op->b), true); }
Expr Simplify::visit(const NE *op) { return rewrite_eq(mutate(op->a), mutate(op->b), false); }

Expr Simplify::rewrite_lt(const Expr &a, const Expr &b, bool strict) {
    Type t = a.type();
    int lanes = t.lanes;
    auto make = [&](const Expr &x, const Expr &y) -> Expr {
        return check_facts(strict ? LT::make(x, y) : LE::make(x, y));
    };
    {
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) {
            Expr s = rewrite_lt(ba->value, bb->value, strict);
            return is_const(s) ? make_bool(is_const_one(s), lanes) : Broadcast::make(s, lanes);
        }
    }
    if (t.is_float()) {
        const double *fa = as_const_float(a), *fb = as_const_float(b);
        if (fa && fb) return make_bool(strict ? *fa < *fb : *fa <= *fb, lanes);
        return make(a, b);
    }
    if (!t.is_int_or_uint()) return make(a, b);
    if (t.is_bool()) {
        // Compare bools as integers 0 and 1.
        if (is_const(a) && is_const(b)) {
            bool x = is_const_one(a), y = is_const_one(b);
            return make_bool(strict ? x < y : x <= y, lanes);
        }
        return make(a, b);
    }
    int c;
    if (const_cmp(a, b, &c)) return make_bool(strict ? c < 0 : c <= 0, lanes);
    if (equal(a, b)) return make_bool(!strict, lanes);
    bool lt, le, gt, ge;
    compare(a, b, &lt, &le, &gt, &ge);
    if (strict) {
        if (lt) return make_bool(true, lanes);
        if (ge) return make_bool(false, lanes);
    } else {
        if (le) return make_bool(true, lanes);
        if (gt) return make_bool(false, lanes);
    }
    if (no_overflow_int(t) && t.is_scalar()) {
        // Canonical form: move every term to the side where its coefficient
        // is positive, the constant to the right: x + 3 < y + 5 -> x < y + 2.
        LinearForm d(t), lhs(t), rhs(t);
        d.add(a, 1);
        d.add(b, -1);
        for (const auto &term : d.terms) {
            if (term.coeff > 0) lhs.add_term(term.e, term.coeff);
            else rhs.add_term(term.e, -term.coeff);
        }
        // Nothing symbolic on the left: keep the constant there (3 < x
        // rather than 0 < x + -3).
        if (lhs.terms.empty()) lhs.add_const(d.constant);
        else rhs.add_const(-d.constant);
        Expr l = rebuild(lhs), r = rebuild(rhs);
        return make(l, r);
    }
    return make(a, b);
}

Expr Simplify::rewrite_eq(const Expr &a, const Expr &b, bool eq) {
    Type t = a.type();
    int lanes = t.lanes;
    auto make = [&](const Expr &x, const Expr &y) -> Expr {
        return check_facts(eq ? EQ::make(x, y) : NE::make(x, y));
    };
    {
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) {
            Expr s = rewrite_eq(ba->value, bb->value, eq);
            return is_const(s) ? make_bool(is_const_one(s), lanes) : Broadcast::make(s, lanes);
        }
    }
    if (t.is_float()) {
        const double *fa = as_const_float(a), *fb = as_const_float(b);
        if (fa && fb) return make_bool(eq ? *fa == *fb : *fa != *fb, lanes);
        return make(a, b);
    }
    if (t.is_bool()) {
        if (is_const(a) && is_const(b))
            return make_bool((is_const_one(a) == is_const_one(b)) == eq, lanes);
        if (equal(a, b)) return make_bool(eq, lanes);
        // b == true -> b; b == false -> !b.
        if (is_const(b) && b.type() == t) return (is_const_one(b) == eq) ? a : rewrite_not(a);
        if (is_const(a) && a.type() == t) return (is_const_one(a) == eq) ? b : rewrite_not(b);
        return make(a, b);
    }
    if (!t.is_int_or_uint()) {
        if (equal(a, b)) return make_bool(eq, lanes);
        return make(a, b);
    }
    int c;
    if (const_cmp(a, b, &c)) return make_bool((c == 0) == eq, lanes);
    if (equal(a, b)) return make_bool(eq, lanes);
    // a == b iff a - b == 0, modulo 2^bits too.
    Expr d = rewrite_sub(a, b);
    int64_t dv;
    if (const_int(d, &dv)) return make_bool((wrap_to_type(dv, t) == 0) == eq, lanes);
    ExprInfo id = info_of(d);
    if ((id.min_defined && id.min > 0) || (id.max_defined && id.max < 0))
        return make_bool(!eq, lanes);
    if (id.alignment.modulus > 1 && id.alignment.remainder != 0) return make_bool(!eq, lanes);
    bool lt, le, gt, ge;
    compare(a, b, &lt, &le, &gt, &ge);
    if (lt || gt) return make_bool(!eq, lanes);
    if (le && ge) return make_bool(eq, lanes);
    if (t.is_scalar()) {
        LinearForm df(t), lhs(t), rhs(t);
        df.add(d, 1);
        bool any_pos = false;
        for (const auto &term : df.terms) any_pos |= term.coeff > 0;
        // Put the positive terms on the left; if there are none, flip the
        // whole equation so that a variable stays on the left.
        int64_t sign = any_pos ? 1 : -1;
        for (const auto &term : df.terms) {
            int64_t k = df.wrap(term.coeff * sign);
            if (k > 0) lhs.add_term(term.e, k);
            else rhs.add_term(term.e, -k);
        }
        rhs.add_const(-df.constant * sign);
        return make(rebuild(lhs), rebuild(rhs));
    }
    return make(a, b);
}

// ---------------------------------------------------------------------------
// Boolean operators

namespace {

// x < c or x <= c (as x < c + 1), and c < x or c <= x (as c - 1 < x), for
// combining bounds on the same expression.
struct Bound {
    Expr x;
    int64_t c;
    bool upper;  // x < c (upper) or c < x (lower)
};

bool as_bound(const Expr &e, Bound *bnd) {
    Expr a, b;
    bool strict;
    if (const LT *lt = e.as<LT>()) a = lt->a, b = lt->b, strict = true;
    else if (const LE *le = e.as<LE>()) a = le->a, b = le->b, strict = false;
    else return false;
    if (!no_overflow_int(a.type()) || !a.type().is_scalar()) return false;
    int64_t c;
    if (const_int(b, &c) && !is_const(a)) {
        if (!strict && __builtin_add_overflow(c, 1, &c)) return false;
        *bnd = {a, c, true};
        return true;
    }
    if (const_int(a, &c) && !is_const(b)) {
        if (!strict && __builtin_sub_overflow(c, 1, &c)) return false;
        *bnd = {b, c, false};
        return true;
    }
    return false;
}

Expr from_bound(const Bound &b) {
    Type t = b.x.type();
    return b.upper ? LT::make(b.x, make_const(t, b.c)) : LT::make(make_const(t, b.c), b.x);
}

bool is_negation(const Expr &a, const Expr &b) {
    if (const Not *n = a.as<Not>()) {
        if (equal(n->a, b)) return true;
    }
    if (const Not *n = b.as<Not>()) {
        if (equal(n->a, a)) return true;
    }
    return false;
}

}  // namespace

Expr Simplify::visit(const And *op) {
    Expr a = mutate(op->a);
    Expr b;
    if (a.type().is_scalar() && !is_const(a) && !reads_memory(op->b)) {
        // b only matters where a holds.
        std::vector<Undo> undo;
        learn(a, true, undo);
        b = mutate(op->b);
        unlearn(undo);
    } else {
        b = mutate(op->b);
    }
    return rewrite_and(a, b);
}

Expr Simplify::visit(const Or *op) {
    Expr a = mutate(op->a);
    Expr b;
    if (a.type().is_scalar() && !is_const(a) && !reads_memory(op->b)) {
        // b only matters where a fails.
        std::vector<Undo> undo;
        learn(a, false, undo);
        b = mutate(op->b);
        unlearn(undo);
    } else {
        b = mutate(op->b);
    }
    return rewrite_or(a, b);
}

Expr Simplify::visit(const Not *op) { return rewrite_not(mutate(op->a)); }

Expr Simplify::rewrite_and(const Expr &a, const Expr &b) {
    int lanes = a.type().lanes;
    if (is_const_one(a)) return b;
    if (is_const_one(b)) return a;
    if (is_const_zero(a)) return a;
    if (is_const_zero(b)) return b;
    if (equal(a, b)) return a;
    if (is_negation(a, b)) return make_bool(false, lanes);
    // Absorption: (a || x) && a == a.
    if (const Or *x = a.as<Or>(); x && (equal(x->a, b) || equal(x->b, b))) return b;
    if (const Or *x = b.as<Or>(); x && (equal(x->a, a) || equal(x->b, a))) return a;
    {
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(rewrite_and(ba->value, bb->value), lanes);
    }
    Bound x, y;
    if (as_bound(a, &x) && as_bound(b, &y) && x.upper == y.upper && equal(x.x, y.x)) {
        x.c = x.upper ? std::min(x.c, y.c) : std::max(x.c, y.c);
        return from_bound(x);
    }
    // x < c0 && c1 < x with an empty range.
    if (as_bound(a, &x) && as_bound(b, &y) && x.upper != y.upper && equal(x.x, y.x)) {
        const Bound &up = x.upper ? x : y, &lo = x.upper ? y : x;
        if (lo.c + 1 >= up.c) return make_bool(false, lanes);
    }
    return check_facts(And::make(a, b));
}

Expr Simplify::rewrite_or(const Expr &a, const Expr &b) {
    int lanes = a.type().lanes;
    if (is_const_zero(a)) return b;
    if (is_const_zero(b)) return a;
    if (is_const_one(a)) return a;
    if (is_const_one(b)) return b;
    if (equal(a, b)) return a;
    if (is_negation(a, b)) return make_bool(true, lanes);
    // Absorption: (a && x) || a == a.
    if (const And *x = a.as<And>(); x && (equal(x->a, b) || equal(x->b, b))) return b;
    if (const And *x = b.as<And>(); x && (equal(x->a, a) || equal(x->b, a))) return a;
    {
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(rewrite_or(ba->value, bb->value), lanes);
    }
    Bound x, y;
    if (as_bound(a, &x) && as_bound(b, &y) && x.upper == y.upper && equal(x.x, y.x)) {
        x.c = x.upper ? std::max(x.c, y.c) : std::min(x.c, y.c);
        return from_bound(x);
    }
    // x < c0 || c1 < x covering everything.
    if (as_bound(a, &x) && as_bound(b, &y) && x.upper != y.upper && equal(x.x, y.x)) {
        const Bound &up = x.upper ? x : y, &lo = x.upper ? y : x;
        if (lo.c < up.c) return make_bool(true, lanes);
    }
    return check_facts(Or::make(a, b));
}

Expr Simplify::rewrite_not(const Expr &a) {
    int lanes = a.type().lanes;
    if (is_const(a)) return make_bool(!is_const_one(a), lanes);
    if (const Not *n = a.as<Not>()) return n->a;
    if (const Broadcast *b = a.as<Broadcast>())
        return Broadcast::make(rewrite_not(b->value), lanes);
    if (const EQ *e = a.as<EQ>()) return rewrite_eq(e->a, e->b, false);
    if (const NE *e = a.as<NE>()) return rewrite_eq(e->a, e->b, true);
    // !(a < b) == b <= a holds for integers, not for floats (NaN).
    if (const LT *l = a.as<LT>()) {
        if (l->a.type().is_int_or_uint()) return rewrite_lt(l->b, l->a, false);
    }
    if (const LE *l = a.as<LE>()) {
        if (l->a.type().is_int_or_uint()) return rewrite_lt(l->b, l->a, true);
    }
    if (const And *x = a.as<And>()) return rewrite_or(rewrite_not(x->a), rewrite_not(x->b));
    if (const Or *x = a.as<Or>()) return rewrite_and(rewrite_not(x->a), rewrite_not(x->b));
    return check_facts(Not::make(a));
}

// ---------------------------------------------------------------------------
// Select

Expr Simplify::visit(const Select *op) {
    Expr c = mutate(op->condition);
    if (is_const_one(c)) return mutate(op->true_value);
    if (is_const_zero(c)) return mutate(op->false_value);
    Expr t, f;
    // Each value only matters where the condition picks it, but is
    // evaluated whatever the condition (LLVM's select, the loads CSE lifts
    // out of the branches): its loads' indices must be valid where the
    // condition fails too. So the condition's facts are not used in a value
    // that reads memory, where they would drop the very clamp that keeps it
    // in bounds: select(k < n, in(clamp(k, 0, n - 1)), 0) is the usual
    // constant boundary condition. (&& and || likewise.)
    auto mutate_where = [&](const Expr &value, bool truth) {
        if (!c.type().is_scalar() || reads_memory(value)) return mutate(value);
        std::vector<Undo> undo;
        learn(c, truth, undo);
        Expr result = mutate(value);
        unlearn(undo);
        return result;
    };
    t = mutate_where(op->true_value, true);
    f = mutate_where(op->false_value, false);
    return rewrite_select(c, t, f);
}

Expr Simplify::rewrite_select(const Expr &c, const Expr &t, const Expr &f) {
    if (is_const_one(c)) return t;
    if (is_const_zero(c)) return f;
    if (equal(t, f)) return t;
    if (const Broadcast *b = c.as<Broadcast>()) return rewrite_select(b->value, t, f);
    if (const Not *n = c.as<Not>()) return rewrite_select(n->a, f, t);
    Type ty = t.type();
    if (ty.is_bool() && is_const(t) && is_const(f)) {
        // select(c, true, false) == c; select(c, false, true) == !c.
        Expr r = is_const_one(t) ? c : rewrite_not(c);
        if (r.type().lanes != ty.lanes) r = Broadcast::make(r, ty.lanes);
        return r;
    }
    if (const Select *s = t.as<Select>()) {
        if (equal(s->condition, c)) return rewrite_select(c, s->true_value, f);
    }
    if (const Select *s = f.as<Select>()) {
        if (equal(s->condition, c)) return rewrite_select(c, t, s->false_value);
    }
    const Broadcast *bt = t.as<Broadcast>(), *bf = f.as<Broadcast>();
    if (bt && bf && c.type().is_scalar())
        return Broadcast::make(rewrite_select(c, bt->value, bf->value), bt->lanes);
    return Select::make(c, t, f);
}

}  // namespace internal
}  // namespace loom
