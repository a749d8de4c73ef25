// Arithmetic rules: +, -, * on integers go through a linear normal form
// (collect like terms, constants last, left-leaning sums); / and % by
// constants pull out multiples of the divisor (floor semantics); casts fold.
#include <cmath>

#include "arith/Simplify_Internal.h"

namespace loom {
namespace internal {

namespace {

int64_t wmul(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t wadd(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

bool is_int_type(Type t) { return t.is_int_or_uint() && !t.is_bool(); }

// Constant folding of float binary operators, in double, rounded to the type
// by FloatImm::make (exact for + - * / of narrower floats).
bool fold_float(const Expr &a, const Expr &b, char op, Expr *out) {
    const double *fa = as_const_float(a), *fb = as_const_float(b);
    if (!fa || !fb) return false;
    double r;
    switch (op) {
    case '+': r = *fa + *fb; break;
    case '-': r = *fa - *fb; break;
    case '*': r = *fa * *fb; break;
    case '/': r = *fa / *fb; break;
    case '%': r = *fa - *fb * std::floor(*fa / *fb); break;
    default: return false;
    }
    *out = make_const(a.type(), r);
    return true;
}

}  // namespace

// ---------------------------------------------------------------------------
// Linear forms

int64_t LinearForm::wrap(int64_t v) const {
    int bits = type.bits;
    if (bits >= 64) return v;
    int shift = 64 - bits;
    return static_cast<int64_t>(static_cast<uint64_t>(v) << shift) >> shift;
}

void LinearForm::add_const(int64_t v) { constant = wrap(wadd(constant, v)); }

void LinearForm::add_term(const Expr &e, int64_t k) {
    k = wrap(k);
    if (k == 0) return;
    for (Term &t : terms) {
        if (equal(t.e, e)) {
            t.coeff = wrap(wadd(t.coeff, k));
            return;
        }
    }
    terms.push_back({e, k});
}

void LinearForm::add(const Expr &e, int64_t k) {
    if (wrap(k) == 0) return;
    int64_t v;
    if (const_int(e, &v)) {
        add_const(wmul(k, v));
        return;
    }
    if (const Add *op = e.as<Add>()) {
        add(op->a, k);
        add(op->b, k);
        return;
    }
    if (const Sub *op = e.as<Sub>()) {
        add(op->a, k);
        add(op->b, wmul(k, -1));
        return;
    }
    if (const Mul *op = e.as<Mul>()) {
        if (const_int(op->b, &v)) {
            add(op->a, wmul(k, v));
            return;
        }
        if (const_int(op->a, &v)) {
            add(op->b, wmul(k, v));
            return;
        }
    }
    add_term(e, k);
}

void LinearForm::add_form(const LinearForm &o, int64_t k) {
    for (const Term &t : o.terms) add_term(t.e, wmul(t.coeff, k));
    add_const(wmul(o.constant, k));
}

LinearForm LinearForm::rest_modulo(int64_t c) const {
    LinearForm rest(type);
    for (const Term &t : terms) {
        if (t.coeff % c != 0) rest.add_term(t.e, t.coeff);
    }
    rest.add_const(mod_imp(constant, c));
    return rest;
}

namespace {

// Builds sum(terms) + c in canonical order: positive terms first, in order of
// appearance, then the negative ones subtracted, then the constant added.
Expr build_sum(const std::vector<LinearForm::Term> &terms, int64_t c, Type t) {
    Expr pos;
    std::vector<Expr> neg;
    auto scaled = [&](const Expr &e, int64_t k) -> Expr {
        if (k == 1) return e;
        return Mul::make(e, make_const(t, k));
    };
    for (const auto &term : terms) {
        if (term.coeff == 0) continue;
        if (term.coeff > 0 || term.coeff == INT64_MIN) {
            Expr s = scaled(term.e, term.coeff);
            pos = pos.defined() ? Add::make(pos, s) : s;
        } else {
            neg.push_back(scaled(term.e, -term.coeff));
        }
    }
    Expr r;
    bool unsigned_type = t.is_uint();
    if (!pos.defined()) {
        if (neg.empty()) return make_const(t, c);
        r = make_const(t, c);
        for (const Expr &n : neg) r = Sub::make(r, n);
        return r;
    }
    r = pos;
    for (const Expr &n : neg) r = Sub::make(r, n);
    if (c != 0) {
        // Signed: x - 3 is written x + (-3). Unsigned keeps the subtraction,
        // which reads better than adding a huge constant.
        if (unsigned_type && c < 0 && c != INT64_MIN) r = Sub::make(r, make_const(t, -c));
        else r = Add::make(r, make_const(t, c));
    }
    return r;
}

/** Whether a - b is a constant, from the sums' terms alone: cheaper than
 * simplifying the difference, for rules that only ask. */
bool constant_difference(const Expr &a, const Expr &b, Type t, int64_t *c) {
    LinearForm lf(t);
    lf.add(a, 1);
    lf.add(b, -1);
    for (const LinearForm::Term &term : lf.terms) {
        if (term.coeff != 0) return false;
    }
    *c = lf.constant;
    return true;
}

bool is_extremum(const Expr &e) { return e.as<Min>() || e.as<Max>(); }

}  // namespace

Expr Simplify::rebuild_scalar(LinearForm lf) {
    Type t = lf.type;
    // x/c*c + x%c == x, for any nonzero c (floor semantics).
    bool changed = true;
    int guard = 0;
    while (changed && guard++ < 16) {
        changed = false;
        for (size_t i = 0; i < lf.terms.size() && !changed; i++) {
            const Mod *m = lf.terms[i].e.as<Mod>();
            int64_t c;
            if (!m || !const_int(m->b, &c) || c == 0) continue;
            int64_t k = lf.terms[i].coeff;
            for (size_t j = 0; j < lf.terms.size(); j++) {
                const Div *d = lf.terms[j].e.as<Div>();
                int64_t c2;
                if (!d || !const_int(d->b, &c2) || c2 != c) continue;
                if (lf.terms[j].coeff != lf.wrap(wmul(k, c)) || !equal(d->a, m->a)) continue;
                Expr e = m->a;
                size_t hi = std::max(i, j), lo = std::min(i, j);
                lf.terms.erase(lf.terms.begin() + hi);
                lf.terms.erase(lf.terms.begin() + lo);
                lf.add(e, k);
                changed = true;
                break;
            }
        }
        // x - x/c*c == x % c, when x is a single term.
        for (size_t j = 0; j < lf.terms.size() && !changed; j++) {
            const Div *d = lf.terms[j].e.as<Div>();
            int64_t c;
            if (!d || !const_int(d->b, &c) || c == 0) continue;
            for (size_t i = 0; i < lf.terms.size(); i++) {
                if (i == j) continue;
                int64_t k = lf.terms[i].coeff;
                if (lf.terms[j].coeff != lf.wrap(wmul(-k, c)) || !equal(lf.terms[i].e, d->a))
                    continue;
                Expr mod = rewrite_mod(d->a, d->b);
                size_t hi = std::max(i, j), lo = std::min(i, j);
                lf.terms.erase(lf.terms.begin() + hi);
                lf.terms.erase(lf.terms.begin() + lo);
                lf.add(mod, k);
                changed = true;
                break;
            }
        }
        // A min or max less another with a shared operand, or less one of
        // its own operands: see difference_of_paired_extrema and
        // extremum_less_an_operand.
        // The operand may be a multiple of a term: min(x * 4, y) - x * 4
        // is the terms min(x * 4, y) and x with coefficient -4.
        for (size_t i = 0; i < lf.terms.size() && !changed; i++) {
            if (lf.terms[i].coeff == 0 || !is_extremum(lf.terms[i].e)) continue;
            for (size_t j = 0; j < lf.terms.size() && !changed; j++) {
                const int64_t k = lf.terms[i].coeff, kj = lf.terms[j].coeff;
                if (i == j || kj == 0 || kj % k != 0) continue;
                const int64_t multiple = -kj / k;
                const Expr operand = multiple == 1
                                         ? lf.terms[j].e
                                         : rewrite_mul(lf.terms[j].e, make_const(t, multiple));
                Expr rest;
                if (!((multiple == 1 &&
                       difference_of_paired_extrema(lf.terms[i].e, operand, t, &rest)) ||
                      extremum_less_an_operand(lf.terms[i].e, operand, t, &rest)))
                    continue;
                lf.terms.erase(lf.terms.begin() + std::max(i, j));
                lf.terms.erase(lf.terms.begin() + std::min(i, j));
                lf.add(rest, k);
                changed = true;
            }
        }
    }
    return build_sum(lf.terms, lf.constant, t);
}

bool Simplify::difference_of_paired_extrema(const Expr &a, const Expr &b, Type t, Expr *out) {
    // Only where overflow is undefined anyway: the result subtracts
    // operands that the difference itself never subtracts.
    if (!t.is_int() || t.bits < 32) return false;
    const bool is_min = a.as<Min>() != nullptr;
    Expr a0, a1, b0, b1;
    if (const Min *p = a.as<Min>(), *q = b.as<Min>(); p && q) {
        a0 = p->a, a1 = p->b, b0 = q->a, b1 = q->b;
    } else if (const Max *p = a.as<Max>(), *q = b.as<Max>(); p && q) {
        a0 = p->a, a1 = p->b, b0 = q->a, b1 = q->b;
    } else {
        return false;
    }
    // Find the shared operand x: a = ext(x, y), b = ext(x, z).
    Expr x, y, z;
    if (equal(a0, b0)) x = a0, y = a1, z = b1;
    else if (equal(a0, b1)) x = a0, y = a1, z = b0;
    else if (equal(a1, b0)) x = a1, y = a0, z = b1;
    else if (equal(a1, b1)) x = a1, y = a0, z = b0;
    else return false;
    int64_t c;
    if (!constant_difference(y, z, t, &c)) return false;
    const Expr zero = make_zero(t), cc = make_const(t, c);
    // With y == z + c, the difference is c where x is past both, 0 where x
    // is before both, and follows x in between: a clamp to [c, 0] or [0, c].
    if (is_min) {
        *out = c <= 0 ? rewrite_max(rewrite_min(rewrite_sub(y, x), zero), cc)
                      : rewrite_min(rewrite_max(rewrite_sub(x, z), zero), cc);
    } else {
        *out = c <= 0 ? rewrite_max(rewrite_min(rewrite_sub(x, z), zero), cc)
                      : rewrite_min(rewrite_max(rewrite_sub(y, x), zero), cc);
    }
    return true;
}

bool Simplify::extremum_less_an_operand(const Expr &a, const Expr &b, Type t, Expr *out) {
    if (!t.is_int() || t.bits < 32) return false;
    const Min *mn = a.as<Min>();
    const Max *mx = a.as<Max>();
    if (!mn && !mx) return false;
    const Expr &p = mn ? mn->a : mx->a, &q = mn ? mn->b : mx->b;
    for (int side = 0; side < 2; side++) {
        const Expr &shared = side ? q : p, &other = side ? p : q;
        int64_t c;
        if (!constant_difference(shared, b, t, &c)) continue;
        // ext(other, b + c) - b == ext(other - b, c).
        Expr rest = rewrite_sub(other, b), cc = make_const(t, c);
        *out = mn ? rewrite_min(rest, cc) : rewrite_max(rest, cc);
        return true;
    }
    return false;
}

Expr Simplify::rebuild(LinearForm lf) {
    Type t = lf.type;
    if (t.is_scalar()) return rebuild_scalar(std::move(lf));
    // Vectors: gather broadcasts and ramps into one ramp (or broadcast) of
    // scalar sums; other vector terms stay as they are.
    LinearForm base(t.element_of()), stride(t.element_of());
    std::vector<LinearForm::Term> others;
    bool has_ramp = false, has_bcast = false;
    for (const auto &term : lf.terms) {
        if (const Broadcast *b = term.e.as<Broadcast>()) {
            base.add(b->value, term.coeff);
            has_bcast = true;
        } else if (const Ramp *r = term.e.as<Ramp>()) {
            base.add(r->base, term.coeff);
            stride.add(r->stride, term.coeff);
            has_ramp = true;
        } else {
            others.push_back(term);
        }
    }
    if (!has_ramp && !has_bcast) return build_sum(others, lf.constant, t);
    base.add_const(lf.constant);
    Expr s_base = rebuild_scalar(base);
    Expr special;
    if (has_ramp) {
        Expr s_stride = rebuild_scalar(stride);
        special = is_const_zero(s_stride) ? Broadcast::make(s_base, t.lanes)
                                          : Ramp::make(s_base, s_stride, t.lanes);
    } else {
        if (others.empty() || !is_const(s_base)) special = Broadcast::make(s_base, t.lanes);
    }
    if (others.empty() && special.defined()) return special;
    if (!special.defined()) return build_sum(others, base.constant, t);
    others.push_back({special, 1});
    return build_sum(others, 0, t);
}

// ---------------------------------------------------------------------------
// + - *

Expr Simplify::visit(const Add *op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    return rewrite_add(a, b);
}

Expr Simplify::visit(const Sub *op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    return rewrite_sub(a, b);
}

Expr Simplify::visit(const Mul *op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    return rewrite_mul(a, b);
}

Expr Simplify::rewrite_add(const Expr &a, const Expr &b) {
    Type t = a.type();
    if (is_int_type(t)) {
        LinearForm lf(t);
        lf.add(a, 1);
        lf.add(b, 1);
        return rebuild(std::move(lf));
    }
    Expr r;
    if (t.is_float()) {
        if (fold_float(a, b, '+', &r)) return r;
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(rewrite_add(ba->value, bb->value), ba->lanes);
        // IEEE addition commutes exactly: constants go on the right.
        if (is_const(a) && !is_const(b)) return Add::make(b, a);
        // x + -0.0 == x exactly (x + 0.0 is not: it turns -0.0 into 0.0).
        if (const double *f = as_const_float(b)) {
            if (*f == 0 && std::signbit(*f)) return a;
        }
    }
    return Add::make(a, b);
}

Expr Simplify::rewrite_sub(const Expr &a, const Expr &b) {
    Type t = a.type();
    if (is_int_type(t)) {
        LinearForm lf(t);
        lf.add(a, 1);
        lf.add(b, -1);
        return rebuild(std::move(lf));
    }
    Expr r;
    if (t.is_float()) {
        if (fold_float(a, b, '-', &r)) return r;
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(rewrite_sub(ba->value, bb->value), ba->lanes);
        // x - 0.0 == x exactly.
        if (const double *f = as_const_float(b)) {
            if (*f == 0 && !std::signbit(*f)) return a;
        }
    }
    return Sub::make(a, b);
}

Expr Simplify::rewrite_mul(const Expr &a, const Expr &b) {
    Type t = a.type();
    if (is_int_type(t)) {
        int64_t k;
        if (const_int(b, &k)) {
            LinearForm lf(t);
            lf.add(a, k);
            return rebuild(std::move(lf));
        }
        if (const_int(a, &k)) {
            LinearForm lf(t);
            lf.add(b, k);
            return rebuild(std::move(lf));
        }
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(rewrite_mul(ba->value, bb->value), ba->lanes);
        const Ramp *ra = a.as<Ramp>(), *rb = b.as<Ramp>();
        if (ra && bb)
            return Ramp::make(rewrite_mul(ra->base, bb->value), rewrite_mul(ra->stride, bb->value),
                              ra->lanes);
        if (rb && ba)
            return Ramp::make(rewrite_mul(rb->base, ba->value), rewrite_mul(rb->stride, ba->value),
                              rb->lanes);
        // A canonical order for products of two variables, so x*y - y*x cancels.
        const Variable *va = a.as<Variable>(), *vb = b.as<Variable>();
        if (va && vb && vb->name < va->name) return Mul::make(b, a);
        return Mul::make(a, b);
    }
    Expr r;
    if (t.is_float()) {
        if (fold_float(a, b, '*', &r)) return r;
        if (is_const_one(b)) return a;
        if (is_const_one(a)) return b;
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(rewrite_mul(ba->value, bb->value), ba->lanes);
        if (is_const(a) && !is_const(b)) return Mul::make(b, a);
    }
    return Mul::make(a, b);
}

// ---------------------------------------------------------------------------
// / and %

Expr Simplify::visit(const Div *op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    return rewrite_div(a, b);
}

Expr Simplify::visit(const Mod *op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    return rewrite_mod(a, b);
}

Expr Simplify::rewrite_div(const Expr &a, const Expr &b) {
    Type t = a.type();
    Expr r;
    if (t.is_float()) {
        if (fold_float(a, b, '/', &r)) return r;
        if (is_const_one(b)) return a;
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(rewrite_div(ba->value, bb->value), ba->lanes);
        return Div::make(a, b);
    }
    if (!is_int_type(t)) return Div::make(a, b);
    int64_t c, va;
    bool b_const = const_int(b, &c);
    if (b_const && const_int(a, &va)) {
        if (c == 0) return make_zero(t);
        if (t.is_uint()) {
            uint64_t ua = static_cast<uint64_t>(wrap_to_type(va, t)),
                     ub = static_cast<uint64_t>(wrap_to_type(c, t));
            return make_const(t, ua / ub);
        }
        return make_const(t, div_imp(va, c));
    }
    if (b_const) {
        if (c == 0) return make_zero(t);
        if (c == 1) return a;
    }
    if (is_const_zero(a)) return a;
    const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
    if (ba && bb) return Broadcast::make(rewrite_div(ba->value, bb->value), ba->lanes);
    // Unsigned divisors that do not fit in int64 are left alone.
    if (!b_const || (t.is_uint() && c < 0) || (t.is_uint() && t.bits == 64)) return Div::make(a, b);

    // The numerator's range lies within one multiple of c: a constant.
    ExprInfo ia = info_of(a);
    if (ia.bounded()) {
        int64_t q0 = div_imp(ia.min, c), q1 = div_imp(ia.max, c);
        if (q0 == q1) return make_const(t, q0);
    }
    // (x / c1) / c2 == x / (c1 * c2) for positive divisors.
    if (const Div *d = a.as<Div>()) {
        int64_t c1, p;
        if (const_int(d->b, &c1) && c1 > 0 && c > 0 && !__builtin_mul_overflow(c1, c, &p) &&
            t.can_represent(p)) {
            return rewrite_div(d->a, make_const(t, p));
        }
    }
    if (!no_overflow_int(t)) return Div::make(a, b);

    if (const Ramp *ramp = a.as<Ramp>()) {
        int64_t s;
        if (const_int(ramp->stride, &s)) {
            Expr cs = make_const(t.element_of(), c);
            // ramp(b, c*k) / c == ramp(b / c, k).
            if (s % c == 0)
                return Ramp::make(rewrite_div(ramp->base, cs), make_const(t.element_of(), s / c),
                                  ramp->lanes);
            // All lanes in one multiple of c: a broadcast.
            ExprInfo ib = info_of(ramp->base);
            int64_t m = ib.alignment.modulus;
            if (c > 0 && s > 0 && m > 0 && m % c == 0) {
                int64_t r0 = mod_imp(ib.alignment.remainder, c), last;
                if (!__builtin_mul_overflow(s, ramp->lanes - 1, &last) && r0 + last < c) {
                    return Broadcast::make(rewrite_div(ramp->base, cs), ramp->lanes);
                }
            }
            // The same by the base's range past its multiples of c: the
            // terms of the base whose factor c divides leave a rest that,
            // with the ramp's span, stays in [0, c) (a thread's vector
            // 4 * t + [0, 4) of a period of 4 * threads, t < threads).
            int64_t span;
            if (c > 0 && s > 0 && !__builtin_mul_overflow(s, ramp->lanes - 1, &span)) {
                LinearForm base(t.element_of());
                base.add(ramp->base, 1);
                ExprInfo ir = info_of_linear(base.rest_modulo(c));
                if (ir.bounded() && ir.min >= 0 && ir.max < c - span) {
                    return Broadcast::make(rewrite_div(ramp->base, cs), ramp->lanes);
                }
            }
        }
        return Div::make(a, b);
    }

    // min(x, y) / c == min(x / c, y / c) for c > 0, as floor division by
    // a positive constant is monotonic (max likewise). Taken where one side's
    // division cancels, e.g. a tile's clamped first key: min(t*T, n - 1) / T
    // == min(t, (n - 1) / T), which then matches its last key's tile.
    // An added constant goes into both sides: (min(x, y) + k) / c.
    if (c > 0) {
        Expr inner = a;
        int64_t k = 0;
        if (const Add *add = a.as<Add>(); add && const_int(add->b, &k)) inner = add->a;
        const Min *mn = inner.as<Min>();
        const Max *mx = inner.as<Max>();
        if (mn || mx) {
            Expr x = mn ? mn->a : mx->a, y = mn ? mn->b : mx->b;
            if (k != 0) {
                x = rewrite_add(x, make_const(t, k));
                y = rewrite_add(y, make_const(t, k));
            }
            x = rewrite_div(x, b);
            y = rewrite_div(y, b);
            if (!x.as<Div>() || !y.as<Div>()) return mn ? rewrite_min(x, y) : rewrite_max(x, y);
        }
    }

    // (x*c*k + y) / c == x*k + y / c (exact in unbounded integers).
    LinearForm lf(t), q(t), rem(t);
    lf.add(a, 1);
    for (const auto &term : lf.terms) {
        if (term.coeff % c == 0) q.add_term(term.e, term.coeff / c);
        else rem.add_term(term.e, term.coeff);
    }
    int64_t r0 = mod_imp(lf.constant, c);
    q.add_const((lf.constant - r0) / c);
    rem.add_const(r0);
    if (!q.terms.empty() || q.constant != 0) {
        Expr qe = rebuild(q);
        Expr re = rewrite_div(rebuild(rem), b);
        return rewrite_add(qe, re);
    }
    return Div::make(a, b);
}

Expr Simplify::rewrite_mod(const Expr &a, const Expr &b) {
    Type t = a.type();
    Expr r;
    if (t.is_float()) {
        if (fold_float(a, b, '%', &r)) return r;
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(rewrite_mod(ba->value, bb->value), ba->lanes);
        return Mod::make(a, b);
    }
    if (!is_int_type(t)) return Mod::make(a, b);
    int64_t c, va;
    bool b_const = const_int(b, &c);
    if (b_const && const_int(a, &va)) {
        if (c == 0) return make_zero(t);
        if (t.is_uint()) {
            uint64_t ua = static_cast<uint64_t>(wrap_to_type(va, t)),
                     ub = static_cast<uint64_t>(wrap_to_type(c, t));
            return make_const(t, ua % ub);
        }
        return make_const(t, mod_imp(va, c));
    }
    if (b_const && (c == 0 || c == 1 || (t.is_int() && c == -1))) return make_zero(t);
    if (is_const_zero(a)) return a;
    const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
    if (ba && bb) return Broadcast::make(rewrite_mod(ba->value, bb->value), ba->lanes);
    if (!b_const || (t.is_uint() && c < 0) || (t.is_uint() && t.bits == 64)) return Mod::make(a, b);

    ExprInfo ia = info_of(a);
    // Within one multiple of c: a - q*c.
    if (ia.bounded()) {
        int64_t q0 = div_imp(ia.min, c), q1 = div_imp(ia.max, c);
        if (q0 == q1) {
            if (q0 == 0) return a;
            return rewrite_sub(a, make_const(t, wmul(q0, c)));
        }
    }
    // Known residue.
    {
        int64_t m = ia.alignment.modulus;
        if (m == 0 && ia.alignment.remainder != 0) {
            // exact constant handled by folding
        } else if (m > 0 && c > 0 && m % c == 0) {
            return make_const(t, mod_imp(ia.alignment.remainder, c));
        }
    }
    // (x % c1) % c2 == x % c2 when c2 divides c1 (positive).
    if (const Mod *m = a.as<Mod>()) {
        int64_t c1;
        if (const_int(m->b, &c1) && c1 > 0 && c > 0 && c1 % c == 0) return rewrite_mod(m->a, b);
    }
    if (!no_overflow_int(t)) return Mod::make(a, b);

    if (const Ramp *ramp = a.as<Ramp>()) {
        int64_t s;
        if (const_int(ramp->stride, &s)) {
            Expr cs = make_const(t.element_of(), c);
            if (s % c == 0) return Broadcast::make(rewrite_mod(ramp->base, cs), ramp->lanes);
            ExprInfo ib = info_of(ramp->base);
            int64_t m = ib.alignment.modulus;
            if (c > 0 && s > 0 && m > 0 && m % c == 0) {
                int64_t r0 = mod_imp(ib.alignment.remainder, c), last;
                if (!__builtin_mul_overflow(s, ramp->lanes - 1, &last) && r0 + last < c) {
                    return Ramp::make(rewrite_mod(ramp->base, cs), ramp->stride, ramp->lanes);
                }
            }
        }
        return Mod::make(a, b);
    }

    // (x*c*k + y) % c == y % c.
    LinearForm lf(t), rem(t);
    lf.add(a, 1);
    bool dropped = false;
    for (const auto &term : lf.terms) {
        if (term.coeff % c == 0) dropped = true;
        else rem.add_term(term.e, term.coeff);
    }
    int64_t r0 = mod_imp(lf.constant, c);
    if (r0 != lf.constant) dropped = true;
    rem.add_const(r0);
    if (dropped) return rewrite_mod(rebuild(rem), b);
    return Mod::make(a, b);
}

// ---------------------------------------------------------------------------
// Casts

Expr Simplify::rewrite_cast(Type t, const Expr &v) {
    Type from = v.type();
    if (from == t) return v;
    if (const Broadcast *b = v.as<Broadcast>()) {
        return Broadcast::make(rewrite_cast(t.element_of(), b->value), b->lanes);
    }
    Type te = t.element_of();
    if (from.is_scalar()) {
        // Constants.
        if (const int64_t *i = as_const_int(v)) {
            if (te.is_bool()) return make_bool(*i != 0, 1);
            if (te.is_float()) return make_const(te, static_cast<double>(*i));
            return make_const(te, *i);
        }
        if (const uint64_t *u = as_const_uint(v)) {
            if (te.is_bool()) return make_bool(*u != 0, 1);
            if (te.is_float()) return make_const(te, static_cast<double>(*u));
            return make_const(te, *u);
        }
        if (const double *f = as_const_float(v)) {
            if (te.is_float()) return make_const(te, *f);
            if (te.is_bool()) return make_bool(*f != 0, 1);
            // C semantics: truncation; out of range is undefined, so leave it.
            double tr = std::trunc(*f);
            if (std::isfinite(tr) && te.can_represent(tr)) {
                if (te.is_uint()) return make_const(te, static_cast<uint64_t>(tr));
                return make_const(te, static_cast<int64_t>(tr));
            }
        }
    }
    if (const Cast *c = v.as<Cast>()) {
        // cast(t, cast(m, x)) == cast(t, x) when m holds every value of x
        // (integer types only: float conversions round).
        Type inner = c->value.type();
        if (inner.is_int_or_uint() && from.is_int_or_uint() && t.is_int_or_uint() &&
            !inner.is_bool() && !from.is_bool() && from.can_represent(inner)) {
            return rewrite_cast(t, c->value);
        }
    }
    if (const Ramp *r = v.as<Ramp>()) {
        // Widening a ramp of a type that does not overflow.
        if (no_overflow_int(from) && te.is_int() && te.bits >= from.bits) {
            return Ramp::make(rewrite_cast(te, r->base), rewrite_cast(te, r->stride), r->lanes);
        }
    }
    return Cast::make(t, v);
}

Expr rest_modulo(const Expr &e, int64_t c) {
    LinearForm form(e.type());
    form.add(e, 1);
    const LinearForm rest = form.rest_modulo(c);
    return build_sum(rest.terms, rest.constant, e.type());
}

}  // namespace internal
}  // namespace loom
