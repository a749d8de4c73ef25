// The simplifier's driver: entry points, variables and lets, calls, vector
// nodes, and the constant-bounds/alignment analysis (info_of) that the rules
// consult. Arithmetic rules live in Simplify_Arith.cpp, min/max, comparisons,
// booleans and select in Simplify_Cmp.cpp, statements and learned facts in
// Simplify_Stmt.cpp.
#include "arith/Simplify.h"

#include <cmath>

#include "arith/Simplify_Internal.h"
#include "ir/Substitute.h"

namespace loom {
namespace internal {

// ---------------------------------------------------------------------------
// Small helpers

bool const_int(const Expr &e, int64_t *v) {
    if (const int64_t *i = as_const_int(e)) {
        *v = *i;
        return true;
    }
    if (const uint64_t *u = as_const_uint(e)) {
        if (e.type().is_bool()) return false;
        *v = static_cast<int64_t>(*u);
        return true;
    }
    return false;
}

int64_t wrap_to_type(int64_t v, Type t) {
    if (t.bits >= 64) return v;
    int shift = 64 - t.bits;
    if (t.is_uint())
        return static_cast<int64_t>(static_cast<uint64_t>(v) & ((uint64_t(1) << t.bits) - 1));
    return static_cast<int64_t>(static_cast<uint64_t>(v) << shift) >> shift;
}

Expr make_bool(bool v, int lanes) { return v ? const_true(lanes) : const_false(lanes); }

bool is_no_op(const Stmt &s) {
    if (!s.defined()) return true;
    const Evaluate *e = s.as<Evaluate>();
    return e && is_const(e->value);
}

namespace {

int64_t gcd64(int64_t a, int64_t b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

ModulusRemainder normalize(int64_t m, int64_t r) {
    if (m < 0) m = -m;
    if (m == 0) return ModulusRemainder(0, r);
    return ModulusRemainder(m, mod_imp(r, m));
}

ModulusRemainder align_add(ModulusRemainder a, ModulusRemainder b, bool negate_b) {
    int64_t m = gcd64(a.modulus, b.modulus);
    int64_t r;
    if (negate_b ? __builtin_sub_overflow(a.remainder, b.remainder, &r)
                 : __builtin_add_overflow(a.remainder, b.remainder, &r)) {
        return ModulusRemainder();
    }
    return normalize(m, r);
}

ModulusRemainder align_mul(ModulusRemainder a, ModulusRemainder b) {
    int64_t p0, p1, p2, r;
    if (__builtin_mul_overflow(a.modulus, b.modulus, &p0) ||
        __builtin_mul_overflow(a.modulus, b.remainder, &p1) ||
        __builtin_mul_overflow(b.modulus, a.remainder, &p2) ||
        __builtin_mul_overflow(a.remainder, b.remainder, &r)) {
        return ModulusRemainder();
    }
    return normalize(gcd64(gcd64(p0, p1), p2), r);
}

// The weakest fact true of both.
ModulusRemainder align_union(ModulusRemainder a, ModulusRemainder b) {
    int64_t d;
    if (__builtin_sub_overflow(a.remainder, b.remainder, &d)) return ModulusRemainder();
    int64_t m = gcd64(gcd64(a.modulus, b.modulus), d);
    return normalize(m, a.remainder);
}

ExprInfo type_info(Type t) {
    ExprInfo i;
    if (t.is_bool()) {
        i.min_defined = i.max_defined = true;
        i.min = 0;
        i.max = 1;
    } else if (t.is_int()) {
        i.min_defined = i.max_defined = true;
        i.min = t.min_int();
        i.max = t.max_int();
    } else if (t.is_uint()) {
        i.min_defined = true;
        i.min = 0;
        if (t.bits < 64) {
            i.max_defined = true;
            i.max = t.max_int();
        }
    }
    return i;
}

bool fits(const ExprInfo &i, Type t) {
    ExprInfo ti = type_info(t);
    if (ti.min_defined && (!i.min_defined || i.min < ti.min)) return false;
    if (ti.max_defined && (!i.max_defined || i.max > ti.max)) return false;
    if (!ti.max_defined && t.is_uint() && !i.max_defined) return true;
    return true;
}

// Bounds computed with unbounded integers, fitted to the type: types that
// are assumed not to overflow are clamped to their range; wrapping types
// keep the bounds only if the range fits.
ExprInfo finish(ExprInfo i, Type t) {
    if (!t.is_int_or_uint()) return ExprInfo();
    if (t.is_bool()) {
        ExprInfo b = type_info(t);
        b.intersect(i);
        return b;
    }
    if (no_overflow_int(t)) {
        i.intersect(type_info(t));
        return i;
    }
    if (!fits(i, t)) {
        ExprInfo r = type_info(t);
        // Wrapping preserves residues modulo powers of two that divide 2^bits.
        int64_t m = i.alignment.modulus;
        if (m > 0 && (m & (m - 1)) == 0 && (t.bits >= 63 || m <= (int64_t(1) << t.bits))) {
            r.alignment = i.alignment;
        }
        return r;
    }
    return i;
}

}  // namespace

void ExprInfo::intersect(const ExprInfo &o) {
    if (o.min_defined && (!min_defined || o.min > min)) {
        min = o.min;
        min_defined = true;
    }
    if (o.max_defined && (!max_defined || o.max < max)) {
        max = o.max;
        max_defined = true;
    }
    // Keep the stronger alignment fact when one refines the other.
    if (alignment.modulus == 1 ||
        (o.alignment.modulus != 1 && o.alignment.modulus != 0 && alignment.modulus != 0 &&
         o.alignment.modulus % alignment.modulus == 0)) {
        alignment = o.alignment;
    } else if (o.alignment.modulus == 0) {
        alignment = o.alignment;
    }
}

// ---------------------------------------------------------------------------
// info_of: constant bounds and alignment of a (simplified) integer expression.

ExprInfo Simplify::info_of(const Expr &e) {
    if (!e.type().is_int_or_uint()) return ExprInfo();
    switch (e.node_type()) {
    case IRNodeType::IntImm:
    case IRNodeType::UIntImm:
    case IRNodeType::Variable: return compute_info_of(e);
    default: break;
    }
    // With no variable facts in scope, the info of a node is a property of
    // the node alone, and nodes are immutable: such results are shared by
    // every simplifier of this thread (interval arithmetic runs thousands of
    // small ones over the same subexpressions).
    thread_local InfoCache scope_free;
    const bool free_of_scope = vars.empty();
    InfoCache &cache = free_of_scope ? scope_free : info_cache;
    if ((!free_of_scope && cache.generation != vars.generation()) ||
        cache.entries.size() > 100000) {
        cache.entries.clear();
        cache.generation = vars.generation();
    }
    auto it = cache.entries.find(e.get());
    if (it != cache.entries.end()) return it->second.second;
    ExprInfo r = compute_info_of(e);
    cache.entries.emplace(e.get(), std::make_pair(e, r));
    return r;
}

bool Simplify::info_through_quotients(const Expr &e, ExprInfo *out) {
    Type t = e.type();
    if (!no_overflow_int(t) || !t.is_scalar()) return false;
    LinearForm f(t);
    f.add(e, 1);
    LinearForm g(t);
    g.add_const(f.constant);
    // The range of the remainders taken out: -m * (x mod c) for each quotient.
    int64_t lo = 0, hi = 0;
    bool rewrote = false;
    for (const LinearForm::Term &term : f.terms) {
        const Div *q = term.e.as<Div>();
        const int64_t *c = q ? as_const_int(q->b) : nullptr;
        if (!c || *c <= 0 || *c > INT32_MAX || term.coeff % *c != 0) {
            g.add_term(term.e, term.coeff);
            continue;
        }
        int64_t m = term.coeff / *c, span;
        if (__builtin_mul_overflow(m, *c - 1, &span)) return false;
        (m > 0 ? lo : hi) -= span;
        g.add(q->a, m);
        rewrote = true;
    }
    if (!rewrote) return false;
    ExprInfo sum = info_of_linear(g);
    if (!sum.bounded() || __builtin_add_overflow(sum.min, lo, &sum.min) ||
        __builtin_add_overflow(sum.max, hi, &sum.max))
        return false;
    *out = sum;
    return true;
}

ExprInfo Simplify::info_of_linear(const LinearForm &f) {
    // Each end separately: a sum bounded above need not be bounded below.
    ExprInfo sum;
    sum.set_point(f.constant);
    sum.alignment = ModulusRemainder();
    for (const LinearForm::Term &term : f.terms) {
        if (term.coeff == 0) continue;  // cancelled
        ExprInfo i = info_of(term.e);
        const bool pos = term.coeff > 0;
        const bool has_low = pos ? i.min_defined : i.max_defined;
        const bool has_high = pos ? i.max_defined : i.min_defined;
        int64_t low, high;
        sum.min_defined = sum.min_defined && has_low &&
                          !__builtin_mul_overflow(pos ? i.min : i.max, term.coeff, &low) &&
                          !__builtin_add_overflow(sum.min, low, &sum.min);
        sum.max_defined = sum.max_defined && has_high &&
                          !__builtin_mul_overflow(pos ? i.max : i.min, term.coeff, &high) &&
                          !__builtin_add_overflow(sum.max, high, &sum.max);
        if (!sum.min_defined && !sum.max_defined) break;
    }
    return sum;
}

ExprInfo Simplify::compute_info_of(const Expr &e) {
    Type t = e.type();
    if (!t.is_int_or_uint()) return ExprInfo();
    ExprInfo r;
    switch (e.node_type()) {
    case IRNodeType::IntImm: r.set_point(e.as<IntImm>()->value); return r;
    case IRNodeType::UIntImm: {
        uint64_t v = e.as<UIntImm>()->value;
        if (v <= static_cast<uint64_t>(INT64_MAX)) r.set_point(static_cast<int64_t>(v));
        else r = type_info(t);
        return r;
    }
    case IRNodeType::Broadcast: return info_of(e.as<Broadcast>()->value);
    case IRNodeType::Ramp: {
        const Ramp *op = e.as<Ramp>();
        ExprInfo b = info_of(op->base), s = info_of(op->stride);
        ExprInfo last;
        int64_t n = op->lanes - 1, p;
        if (s.min_defined && b.min_defined && !__builtin_mul_overflow(s.min, n, &p) &&
            !__builtin_add_overflow(b.min, p, &last.min))
            last.min_defined = true;
        if (s.max_defined && b.max_defined && !__builtin_mul_overflow(s.max, n, &p) &&
            !__builtin_add_overflow(b.max, p, &last.max))
            last.max_defined = true;
        // Over all lanes: from the lowest of base and last to the highest.
        r.min_defined = b.min_defined && last.min_defined;
        r.min = std::min(b.min, last.min);
        r.max_defined = b.max_defined && last.max_defined;
        r.max = std::max(b.max, last.max);
        if (s.alignment.modulus == 0) {
            r.alignment =
                normalize(gcd64(b.alignment.modulus, s.alignment.remainder), b.alignment.remainder);
        }
        return finish(r, t);
    }
    case IRNodeType::Variable: {
        const Variable *op = e.as<Variable>();
        if (const VarInfo *vi = vars.find(op->name)) {
            if (vi->replacement.defined()) return info_of(vi->replacement);
            r = vi->info;
        }
        r.intersect(type_info(t));
        return r;
    }
    case IRNodeType::Add:
    case IRNodeType::Sub: {
        bool sub = e.node_type() == IRNodeType::Sub;
        Expr ea = sub ? e.as<Sub>()->a : e.as<Add>()->a;
        Expr eb = sub ? e.as<Sub>()->b : e.as<Add>()->b;
        ExprInfo a = info_of(ea), b = info_of(eb);
        if (sub) {
            r.min_defined =
                a.min_defined && b.max_defined && !__builtin_sub_overflow(a.min, b.max, &r.min);
            r.max_defined =
                a.max_defined && b.min_defined && !__builtin_sub_overflow(a.max, b.min, &r.max);
        } else {
            r.min_defined =
                a.min_defined && b.min_defined && !__builtin_add_overflow(a.min, b.min, &r.min);
            r.max_defined =
                a.max_defined && b.max_defined && !__builtin_add_overflow(a.max, b.max, &r.max);
        }
        r.alignment = align_add(a.alignment, b.alignment, sub);
        return finish(r, t);
    }
    case IRNodeType::Mul: {
        const Mul *op = e.as<Mul>();
        ExprInfo a = info_of(op->a), b = info_of(op->b);
        if (a.bounded() && b.bounded()) {
            int64_t p[4];
            bool ok = !__builtin_mul_overflow(a.min, b.min, &p[0]) &&
                      !__builtin_mul_overflow(a.min, b.max, &p[1]) &&
                      !__builtin_mul_overflow(a.max, b.min, &p[2]) &&
                      !__builtin_mul_overflow(a.max, b.max, &p[3]);
            if (ok) {
                r.min_defined = r.max_defined = true;
                r.min = std::min(std::min(p[0], p[1]), std::min(p[2], p[3]));
                r.max = std::max(std::max(p[0], p[1]), std::max(p[2], p[3]));
            }
        } else if (b.is_single_point() || a.is_single_point()) {
            // One side unbounded, the other a constant.
            if (a.is_single_point()) std::swap(a, b);
            int64_t k = b.min;
            if (k == 0) {
                r.set_point(0);
            } else {
                int64_t lo = 0, hi = 0;
                bool lo_ok = a.min_defined && !__builtin_mul_overflow(a.min, k, &lo);
                bool hi_ok = a.max_defined && !__builtin_mul_overflow(a.max, k, &hi);
                if (k > 0) {
                    r.min_defined = lo_ok, r.min = lo;
                    r.max_defined = hi_ok, r.max = hi;
                } else {
                    r.min_defined = hi_ok, r.min = hi;
                    r.max_defined = lo_ok, r.max = lo;
                }
            }
        } else if (a.min_defined && a.min >= 0 && b.min_defined && b.min >= 0) {
            r.min_defined = !__builtin_mul_overflow(a.min, b.min, &r.min);
        }
        r.alignment = align_mul(a.alignment, b.alignment);
        return finish(r, t);
    }
    case IRNodeType::Div: {
        const Div *op = e.as<Div>();
        ExprInfo a = info_of(op->a), b = info_of(op->b);
        if (b.is_single_point() && b.min != 0) {
            int64_t c = b.min;
            if (c > 0) {
                r.min_defined = a.min_defined, r.min = div_imp(a.min, c);
                r.max_defined = a.max_defined, r.max = div_imp(a.max, c);
            } else {
                r.min_defined = a.max_defined, r.min = div_imp(a.max, c);
                r.max_defined = a.min_defined, r.max = div_imp(a.min, c);
            }
            int64_t m = a.alignment.modulus;
            if (m == 0) r.alignment = ModulusRemainder(0, div_imp(a.alignment.remainder, c));
            else if (c > 0 && m % c == 0)
                r.alignment = normalize(m / c, div_imp(a.alignment.remainder, c));
        } else if (b.min_defined && b.min > 0 && a.bounded()) {
            // A positive divisor: |a / b| <= |a|, same sign as a.
            r.min_defined = r.max_defined = true;
            r.min = std::min<int64_t>(a.min, 0);
            r.max = std::max<int64_t>(a.max, 0);
        } else if (a.bounded() && a.min > INT64_MIN) {
            int64_t m = std::max(-a.min, a.max);
            r.min_defined = r.max_defined = true;
            r.min = -m;
            r.max = m;
        }
        return finish(r, t);
    }
    case IRNodeType::Mod: {
        const Mod *op = e.as<Mod>();
        ExprInfo a = info_of(op->a), b = info_of(op->b);
        if (b.is_single_point() && b.min != 0) {
            int64_t c = b.min;
            r.min_defined = r.max_defined = true;
            if (c > 0) {
                r.min = 0;
                r.max = c - 1;
                if (a.bounded() && div_imp(a.min, c) == div_imp(a.max, c)) {
                    r.min = mod_imp(a.min, c);
                    r.max = mod_imp(a.max, c);
                }
            } else {
                r.min = c + 1;
                r.max = 0;
            }
            int64_t m = a.alignment.modulus;
            if (m == 0) r.alignment = ModulusRemainder(0, mod_imp(a.alignment.remainder, c));
            else if (c > 0) r.alignment = normalize(gcd64(m, c), a.alignment.remainder);
        } else if (b.min_defined && b.min > 0) {
            r.min_defined = true;
            r.min = 0;
            if (b.max_defined) {
                r.max_defined = true;
                r.max = b.max - 1;
            }
            if (a.min_defined && a.min >= 0 && a.max_defined && (!r.max_defined || a.max < r.max)) {
                r.max_defined = true;
                r.max = a.max;
            }
        } else if (b.bounded() && b.min > INT64_MIN + 1) {
            r.min_defined = r.max_defined = true;
            r.min = std::min<int64_t>(0, b.min + 1);
            r.max = std::max<int64_t>(0, b.max - 1);
        }
        return finish(r, t);
    }
    case IRNodeType::Min:
    case IRNodeType::Max: {
        bool is_min = e.node_type() == IRNodeType::Min;
        ExprInfo a = info_of(is_min ? e.as<Min>()->a : e.as<Max>()->a);
        ExprInfo b = info_of(is_min ? e.as<Min>()->b : e.as<Max>()->b);
        if (is_min) {
            r.min_defined = a.min_defined && b.min_defined;
            r.min = std::min(a.min, b.min);
            r.max_defined = a.max_defined || b.max_defined;
            r.max = a.max_defined && b.max_defined ? std::min(a.max, b.max)
                                                   : (a.max_defined ? a.max : b.max);
        } else {
            r.max_defined = a.max_defined && b.max_defined;
            r.max = std::max(a.max, b.max);
            r.min_defined = a.min_defined || b.min_defined;
            r.min = a.min_defined && b.min_defined ? std::max(a.min, b.min)
                                                   : (a.min_defined ? a.min : b.min);
        }
        r.alignment = align_union(a.alignment, b.alignment);
        return finish(r, t);
    }
    case IRNodeType::Select: {
        const Select *op = e.as<Select>();
        ExprInfo a = info_of(op->true_value), b = info_of(op->false_value);
        r.min_defined = a.min_defined && b.min_defined;
        r.min = std::min(a.min, b.min);
        r.max_defined = a.max_defined && b.max_defined;
        r.max = std::max(a.max, b.max);
        r.alignment = align_union(a.alignment, b.alignment);
        return finish(r, t);
    }
    case IRNodeType::Cast: {
        const Cast *op = e.as<Cast>();
        Type from = op->value.type();
        if (from.is_int_or_uint()) {
            ExprInfo a = info_of(op->value);
            if (fits(a, t)) return a;
        }
        return type_info(t);
    }
    case IRNodeType::Call: {
        const Call *op = e.as<Call>();
        if (op->is_intrinsic(Call::likely) && op->args.size() == 1) return info_of(op->args[0]);
        if (op->is_intrinsic(Call::abs) && op->args.size() == 1) {
            ExprInfo a = info_of(op->args[0]);
            r.min_defined = true;
            r.min = 0;
            if (a.bounded() && a.min > INT64_MIN) {
                r.max_defined = true;
                r.max = std::max(-a.min, a.max);
                if (a.min >= 0) r.min = a.min;
                else if (a.max <= 0) r.min = -a.max;
            }
            return finish(r, t);
        }
        if (op->is_intrinsic(Call::bitwise_and) && op->args.size() == 2) {
            ExprInfo b = info_of(op->args[1]);
            if (b.is_single_point() && b.min >= 0) {
                r.min_defined = r.max_defined = true;
                r.min = 0;
                r.max = b.min;
                return finish(r, t);
            }
        }
        return type_info(t);
    }
    case IRNodeType::Let: {
        const Let *op = e.as<Let>();
        VarInfo vi;
        vi.info = info_of(op->value);
        ScopedBinding<VarInfo> bind(vars, op->name, vi);
        return info_of(op->body);
    }
    default: return type_info(t);
    }
}

// ---------------------------------------------------------------------------
// Construction and the expression driver.

Simplify::Simplify(bool rdl, const Scope<Interval> &bounds,
                   const Scope<ModulusRemainder> &alignment)
    : remove_dead_lets(rdl) {
    bounds.for_each([&](const std::string &name, const Interval &i) {
        VarInfo vi;
        int64_t v;
        if (i.min.defined() && const_int(i.min, &v) && i.min.type().is_int()) {
            vi.info.min_defined = true;
            vi.info.min = v;
        }
        if (i.max.defined() && const_int(i.max, &v) && i.max.type().is_int()) {
            vi.info.max_defined = true;
            vi.info.max = v;
        }
        if (const ModulusRemainder *mr = alignment.find(name))
            vi.info.alignment = normalize(mr->modulus, mr->remainder);
        vars.push(name, vi);
        // An end that is not known is the variable itself (x <= x), not
        // "unbounded": a proof can then cancel it against itself.
        Interval r = i;
        Type vt = i.min.defined() ? i.min.type() : i.max.defined() ? i.max.type() : Int(32);
        if (vt.is_int() && vt.is_scalar()) {
            if (!r.min.defined()) r.min = Variable::make(vt, name);
            if (!r.max.defined()) r.max = Variable::make(vt, name);
        }
        sym_bounds.push(name, r);
        sym_count++;
    });
    alignment.for_each([&](const std::string &name, const ModulusRemainder &mr) {
        if (bounds.contains(name)) return;
        VarInfo vi;
        vi.info.alignment = normalize(mr.modulus, mr.remainder);
        vars.push(name, vi);
    });
}

Expr Simplify::mutate(const Expr &e) {
    if (!e.defined()) return e;
    for (const IRNode *t : trusted) {
        if (t == e.get()) return e;
    }
    // A hard stop on recursion depth: rules that rebuild and re-simplify can
    // never loop forever; past the limit we simply stop rewriting.
    if (depth > 400) return e;
    depth++;
    Expr r = IRMutator::mutate(e);
    depth--;
    return r;
}

Stmt Simplify::mutate(const Stmt &s) {
    if (!s.defined()) return s;
    return IRMutator::mutate(s);
}

Expr Simplify::visit(const IntImm *op) { return op; }
Expr Simplify::visit(const UIntImm *op) { return op; }
Expr Simplify::visit(const FloatImm *op) { return op; }

Expr Simplify::visit(const Variable *op) {
    if (const VarInfo *vi = vars.find(op->name)) {
        if (vi->replacement.defined()) return vi->replacement;
    }
    if (op->type.is_bool()) return check_facts(op);
    return op;
}

Expr Simplify::visit(const Reinterpret *op) {
    Expr v = mutate(op->value);
    if (v.type() == op->type) return v;
    if (v.same_as(op->value)) return op;
    return Reinterpret::make(op->type, v);
}

Expr Simplify::visit(const Cast *op) { return rewrite_cast(op->type, mutate(op->value)); }

Expr Simplify::visit(const Load *op) {
    Expr index = mutate(op->index), pred = mutate(op->predicate);
    if (index.same_as(op->index) && pred.same_as(op->predicate)) return op;
    return Load::make(op->type, op->name, index, pred, op->param, op->alignment);
}

Expr Simplify::visit(const Ramp *op) {
    Expr base = mutate(op->base), stride = mutate(op->stride);
    if (is_const_zero(stride)) return Broadcast::make(base, op->lanes);
    if (base.same_as(op->base) && stride.same_as(op->stride)) return op;
    return Ramp::make(base, stride, op->lanes);
}

Expr Simplify::visit(const Broadcast *op) {
    Expr v = mutate(op->value);
    if (v.same_as(op->value)) return op;
    return Broadcast::make(v, op->lanes);
}

Expr Simplify::visit(const VectorReduce *op) {
    Expr v = mutate(op->value);
    int out_lanes = op->type.lanes;
    int factor = v.type().lanes / out_lanes;
    if (factor == 1) return v;
    if (const Broadcast *b = v.as<Broadcast>()) {
        Expr s;
        switch (op->op) {
        case VectorReduce::Min:
        case VectorReduce::Max:
        case VectorReduce::And:
        case VectorReduce::Or: s = b->value; break;
        case VectorReduce::Add:
            if (b->value.type().is_int_or_uint())
                s = rewrite_mul(b->value, make_const(b->value.type(), factor));
            break;
        default: break;
        }
        if (s.defined()) return out_lanes == 1 ? s : Broadcast::make(s, out_lanes);
    }
    if (v.same_as(op->value)) return op;
    return VectorReduce::make(op->op, v, out_lanes);
}

static bool should_substitute_product(const Expr &v) {
    if (v.as<Variable>()) return true;
    const Mul *m = v.as<Mul>();
    return m && m->a.as<Variable>() && is_const(m->b) && m->type.is_int_or_uint() &&
           m->type.is_scalar();
}

bool should_substitute(const Expr &v) {
    if (is_const(v) || v.as<Variable>() || v.as<StringImm>()) return true;
    // x + c, as Halide does: it lets differences of lets such as
    // (m + 7) - m fold to constants, e.g. the extent of a tile's loop.
    // And x * c (plus c'), as Halide also does: the start of a tile,
    // ro * 8, then meets its uses, where (ro * 8 + 3) / 8 - ro folds to 0.
    if (const Add *a = v.as<Add>()) return is_const(a->b) && should_substitute_product(a->a);
    if (should_substitute_product(v)) return true;
    if (const Broadcast *b = v.as<Broadcast>()) return should_substitute(b->value);
    if (const Ramp *r = v.as<Ramp>()) return should_substitute(r->base) && is_const(r->stride);
    return false;
}

Expr Simplify::visit(const Let *op) {
    Expr value = mutate(op->value);
    // See the LetStmt case: a let may rebind a name in terms of itself.
    if (const Variable *v = value.as<Variable>(); v && v->name == op->name) {
        return mutate(op->body);
    }
    VarInfo vi;
    if (should_substitute(value) && !expr_uses_var(value, op->name)) {
        vi.replacement = value;
        ScopedBinding<VarInfo> bind(vars, op->name, vi);
        return mutate(op->body);
    }
    vi.info = info_of(value);
    Expr body;
    {
        ScopedBinding<VarInfo> bind(vars, op->name, vi);
        // Shadow any outer symbolic range; a known value is a point range.
        Interval point = sym_point(op->name, value);
        ScopedBinding<Interval> sbind(sym_bounds, op->name, point);
        body = mutate(op->body);
    }
    if (remove_dead_lets && !expr_uses_var(body, op->name)) return body;
    if (value.same_as(op->value) && body.same_as(op->body)) return op;
    return Let::make(op->name, value, body);
}

Expr Simplify::visit(const Call *op) {
    bool changed = false;
    std::vector<Expr> args = mutate_exprs(op->args, &changed);
    Type t = op->type;
    if (op->is_intrinsic(Call::likely) && args.size() == 1) {
        // A decided hint is no longer a hint.
        if (is_const(args[0])) return args[0];
    } else if (op->is_intrinsic(Call::abs) && args.size() == 1) {
        const Expr &a = args[0];
        if (t.is_uint()) return a;
        if (const int64_t *i = as_const_int(a)) {
            return make_const(t,
                              *i < 0 ? static_cast<int64_t>(0ULL - static_cast<uint64_t>(*i)) : *i);
        }
        if (const double *f = as_const_float(a)) return make_const(t, std::fabs(*f));
        if (t.is_int()) {
            ExprInfo i = info_of(a);
            if (i.min_defined && i.min >= 0) return a;
        }
    } else if (t.is_int_or_uint() && !t.is_bool() && op->call_type == Call::PureIntrinsic &&
               (op->name == Call::bitwise_and || op->name == Call::bitwise_or ||
                op->name == Call::bitwise_xor || op->name == Call::shift_left ||
                op->name == Call::shift_right) &&
               args.size() == 2) {
        int64_t a, b;
        if (const_int(args[0], &a) && const_int(args[1], &b) && t.is_scalar()) {
            uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
            if (op->name == Call::bitwise_and) return make_const(t, static_cast<int64_t>(ua & ub));
            if (op->name == Call::bitwise_or) return make_const(t, static_cast<int64_t>(ua | ub));
            if (op->name == Call::bitwise_xor) return make_const(t, static_cast<int64_t>(ua ^ ub));
            if (b >= 0 && b < t.bits) {
                if (op->name == Call::shift_left)
                    return make_const(t, static_cast<int64_t>(ua << b));
                // Arithmetic shift for signed types, logical for unsigned.
                if (t.is_int()) return make_const(t, a >> b);
                return make_const(t, static_cast<int64_t>(ua >> b));
            }
        }
    } else if (op->is_intrinsic(Call::bitwise_not) && args.size() == 1 && t.is_int_or_uint() &&
               t.is_scalar()) {
        int64_t a;
        if (const_int(args[0], &a))
            return make_const(t, static_cast<int64_t>(~static_cast<uint64_t>(a)));
    }
    if (!changed) return op;
    return Call::make(t, op->name, args, op->call_type, op->func, op->value_index, op->param,
                      op->buffer);
}

// ---------------------------------------------------------------------------
// Entry points

Expr simplify(const Expr &e, bool remove_dead_lets, const Scope<Interval> &bounds,
              const Scope<ModulusRemainder> &alignment) {
    if (!e.defined()) return e;
    Simplify s(remove_dead_lets, bounds, alignment);
    return s.mutate(e);
}

Stmt simplify(const Stmt &st, bool remove_dead_lets, const Scope<Interval> &bounds,
              const Scope<ModulusRemainder> &alignment) {
    if (!st.defined()) return st;
    Simplify s(remove_dead_lets, bounds, alignment);
    Stmt r = s.mutate(st);
    if (!r.defined()) r = Evaluate::make(0);
    return r;
}

Expr simplify_shallow(const Expr &e) {
    if (!e.defined()) return e;
    Simplify s(true, Scope<Interval>(), Scope<ModulusRemainder>());
    // The operands of the root, which the rules take as simplified. (Roots
    // of other kinds are simplified in full.)
    std::vector<const IRNode *> &t = s.trusted;
    auto binary = [&](const auto *op) {
        if (op) t.insert(t.end(), {op->a.get(), op->b.get()});
    };
    binary(e.as<Add>()), binary(e.as<Sub>()), binary(e.as<Mul>()), binary(e.as<Div>());
    binary(e.as<Mod>()), binary(e.as<Min>()), binary(e.as<Max>()), binary(e.as<EQ>());
    binary(e.as<NE>()), binary(e.as<LT>()), binary(e.as<LE>()), binary(e.as<GT>());
    binary(e.as<GE>()), binary(e.as<And>()), binary(e.as<Or>());
    if (const Select *op = e.as<Select>())
        t.insert(t.end(), {op->condition.get(), op->true_value.get(), op->false_value.get()});
    if (const Cast *op = e.as<Cast>()) t.push_back(op->value.get());
    return s.mutate(e);
}

ModulusRemainder modulus_remainder(const Expr &e, const Scope<ModulusRemainder> &facts) {
    internal_assert(e.defined() && e.type().is_int_or_uint())
        << "modulus_remainder of a non-integer";
    Simplify s(true, Scope<Interval>(), facts);
    return s.info_of(s.mutate(e)).alignment;
}

bool can_prove(const Expr &e, const Scope<Interval> &bounds) {
    internal_assert(e.type().is_bool()) << "can_prove of a non-bool expression";
    return is_const_one(simplify(e, true, bounds));
}

}  // namespace internal
}  // namespace loom
