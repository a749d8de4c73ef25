#include <gtest/gtest.h>

#include <map>
#include <random>

#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "arith/Simplify.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

using namespace loom;
using namespace loom::internal;

namespace {

Expr var(const char *n, Type t = Int(32)) { return Variable::make(t, n); }

// Builds likely(e) directly (older internal::likely() read e.type() after
// moving e).
Expr make_likely(const Expr &e) { return make_intrinsic(e.type(), Call::likely, {e}); }

#define EXPECT_SIMPLIFY(in, expected)                                                  \
    do {                                                                               \
        Expr s_ = simplify(in);                                                        \
        Expr e_ = (expected);                                                          \
        EXPECT_TRUE(equal(s_, e_))                                                     \
            << "simplify(" << (in) << ")\n  got      " << s_ << "\n  expected " << e_; \
    } while (0)

// ---------------------------------------------------------------------------
// A tiny evaluator of integer expressions, lane by lane, with the IR's
// semantics: floor division, division by zero gives zero, wrapping to the type.

using Lanes = std::vector<int64_t>;

int64_t wrap(int64_t v, Type t) {
    if (t.is_bool()) return v & 1;
    if (t.bits >= 64) return v;
    int shift = 64 - t.bits;
    if (t.is_uint())
        return static_cast<int64_t>(static_cast<uint64_t>(v) & ((uint64_t(1) << t.bits) - 1));
    return static_cast<int64_t>(static_cast<uint64_t>(v) << shift) >> shift;
}

struct Eval {
    std::map<std::string, int64_t> env;
    std::map<std::string, Lanes> lets;

    Lanes splat(int64_t v, int lanes) { return Lanes(lanes, v); }

    Lanes eval(const Expr &e) {
        Type t = e.type();
        int n = t.lanes;
        if (const IntImm *i = e.as<IntImm>()) return splat(i->value, 1);
        if (const UIntImm *u = e.as<UIntImm>()) return splat(static_cast<int64_t>(u->value), 1);
        if (const Variable *v = e.as<Variable>()) {
            auto lt = lets.find(v->name);
            if (lt != lets.end()) return lt->second;
            auto it = env.find(v->name);
            EXPECT_TRUE(it != env.end()) << "unbound " << v->name;
            return splat(wrap(it->second, t), 1);
        }
        if (const Broadcast *b = e.as<Broadcast>()) return splat(eval(b->value)[0], n);
        if (const Ramp *r = e.as<Ramp>()) {
            int64_t b = eval(r->base)[0], s = eval(r->stride)[0];
            Lanes out(n);
            for (int i = 0; i < n; i++) out[i] = wrap(b + s * i, t);
            return out;
        }
        if (const Cast *c = e.as<Cast>()) {
            Lanes v = eval(c->value);
            for (auto &x : v) x = t.is_bool() ? (x != 0) : wrap(x, t);
            return v;
        }
        if (const Let *l = e.as<Let>()) {
            Lanes v = eval(l->value);
            auto saved = lets;
            lets[l->name] = v;
            Lanes r = eval(l->body);
            lets = saved;
            return r;
        }
        if (const Select *s = e.as<Select>()) {
            Lanes c = eval(s->condition), a = eval(s->true_value), b = eval(s->false_value);
            Lanes out(n);
            for (int i = 0; i < n; i++) out[i] = c[c.size() == 1 ? 0 : i] ? a[i] : b[i];
            return out;
        }
        if (const Not *no = e.as<Not>()) {
            Lanes a = eval(no->a);
            for (auto &x : a) x = !x;
            return a;
        }
        if (const Call *c = e.as<Call>()) {
            if (c->is_intrinsic(Call::likely)) return eval(c->args[0]);
            ADD_FAILURE() << "cannot evaluate " << e;
            return splat(0, n);
        }
        Expr ea, eb;
        char op = 0;
#define BIN(T, ch)                \
    if (const T *x = e.as<T>()) { \
        ea = x->a;                \
        eb = x->b;                \
        op = ch;                  \
    }                             \
    do {                          \
    } while (0)
        BIN(Add, '+');
        BIN(Sub, '-');
        BIN(Mul, '*');
        BIN(Div, '/');
        BIN(Mod, '%');
        BIN(Min, 'm');
        BIN(Max, 'M');
        BIN(EQ, '=');
        BIN(NE, '!');
        BIN(LT, '<');
        BIN(LE, 'l');
        BIN(GT, '>');
        BIN(GE, 'g');
        BIN(And, '&');
        BIN(Or, '|');
#undef BIN
        if (!op) {
            ADD_FAILURE() << "cannot evaluate " << e;
            return splat(0, n);
        }
        Lanes a = eval(ea), b = eval(eb);
        Type ot = ea.type();
        bool u = ot.is_uint();
        Lanes out(n);
        for (int i = 0; i < n; i++) {
            int64_t x = a[a.size() == 1 ? 0 : i], y = b[b.size() == 1 ? 0 : i];
            uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
            int64_t r = 0;
            switch (op) {
            case '+': r = x + y; break;
            case '-': r = x - y; break;
            case '*': r = x * y; break;
            case '/': r = u ? (uy ? static_cast<int64_t>(ux / uy) : 0) : div_imp(x, y); break;
            case '%': r = u ? (uy ? static_cast<int64_t>(ux % uy) : 0) : mod_imp(x, y); break;
            case 'm': r = u ? static_cast<int64_t>(std::min(ux, uy)) : std::min(x, y); break;
            case 'M': r = u ? static_cast<int64_t>(std::max(ux, uy)) : std::max(x, y); break;
            case '=': r = x == y; break;
            case '!': r = x != y; break;
            case '<': r = u ? ux < uy : x < y; break;
            case 'l': r = u ? ux <= uy : x <= y; break;
            case '>': r = u ? ux > uy : x > y; break;
            case 'g': r = u ? ux >= uy : x >= y; break;
            case '&': r = x && y; break;
            case '|': r = x || y; break;
            }
            out[i] = wrap(r, t);
        }
        return out;
    }
};

// Random integer expressions over x, y, z of type t.
struct Gen {
    std::mt19937 rng;
    Type t;
    explicit Gen(uint32_t seed, Type ty) : rng(seed), t(ty) {}

    int rnd(int n) { return static_cast<int>(rng() % n); }

    Expr leaf() {
        switch (rnd(4)) {
        case 0: return Variable::make(t, "x");
        case 1: return Variable::make(t, "y");
        case 2: return Variable::make(t, "z");
        default: return make_const(t, t.is_uint() ? rnd(12) : rnd(21) - 10);
        }
    }

    // Mostly positive constant divisors, sometimes negative or zero.
    Expr divisor() {
        int r = rnd(10);
        if (r < 7 || t.is_uint()) return make_const(t, rnd(9) + 1);
        if (r < 9) return make_const(t, -(rnd(8) + 1));
        return make_zero(t);
    }

    Expr cond(int depth) {
        Expr a = expr(depth - 1), b = expr(depth - 1);
        switch (rnd(8)) {
        case 0: return a < b;
        case 1: return a <= b;
        case 2: return a == b;
        case 3: return a != b;
        case 4: return a > b;
        case 5: return (a < b) && (expr(depth - 1) < b);
        case 6: return (a < b) || (a == expr(depth - 1));
        default: return !(a >= b);
        }
    }

    Expr expr(int depth) {
        if (depth <= 0) return leaf();
        Expr a = expr(depth - 1), b = expr(depth - 1);
        switch (rnd(12)) {
        case 0:
        case 1: return Add::make(a, b);
        case 2: return Sub::make(a, b);
        case 3: return Mul::make(a, rnd(2) ? b : make_const(t, rnd(7) - 3));
        case 4: return Div::make(a, rnd(3) ? divisor() : b);
        case 5: return Mod::make(a, rnd(3) ? divisor() : b);
        case 6: return Min::make(a, b);
        case 7: return Max::make(a, b);
        case 8: return Select::make(cond(depth - 1), a, b);
        case 9:
            return Let::make(
                "w", a, Add::make(Variable::make(t, "w"), Mul::make(Variable::make(t, "w"), b)));
        default: return leaf();
        }
    }
};

void check_random(Type t, uint32_t seed, int count, int depth) {
    Gen g(seed, t);
    Eval ev;
    for (int i = 0; i < count; i++) {
        Expr e = g.expr(depth);
        Expr s = simplify(e);
        for (int trial = 0; trial < 8; trial++) {
            int range = t.is_uint() ? 16 : 21;
            int off = t.is_uint() ? 0 : 10;
            ev.env = {
                {"x", g.rnd(range) - off}, {"y", g.rnd(range) - off}, {"z", g.rnd(range) - off}};
            Lanes a = ev.eval(e), b = ev.eval(s);
            ASSERT_EQ(a, b) << "expr " << e << "\nsimplified " << s << "\nat x=" << ev.env["x"]
                            << " y=" << ev.env["y"] << " z=" << ev.env["z"];
        }
    }
}

// ---------------------------------------------------------------------------

TEST(Simplify, ConstantFolding) {
    EXPECT_SIMPLIFY(Expr(3) + 4, Expr(7));
    EXPECT_SIMPLIFY(Expr(-7) / 2, Expr(-4));
    EXPECT_SIMPLIFY(Expr(-7) % 2, Expr(1));
    EXPECT_SIMPLIFY(Expr(7) % -2, Expr(-1));
    EXPECT_SIMPLIFY(Expr(7) / 0, Expr(0));
    EXPECT_SIMPLIFY(Expr(7) % 0, Expr(0));
    EXPECT_SIMPLIFY(make_const(UInt(8), 250) + make_const(UInt(8), 10), make_const(UInt(8), 4));
    EXPECT_SIMPLIFY(make_const(Int(8), 127) + make_const(Int(8), 1), make_const(Int(8), -128));
    EXPECT_SIMPLIFY(make_const(UInt(32), 7) / make_const(UInt(32), 2), make_const(UInt(32), 3));
    EXPECT_SIMPLIFY(Expr(1.5f) * 2.0f, Expr(3.0f));
    EXPECT_SIMPLIFY(min(Expr(3), 5), Expr(3));
    EXPECT_SIMPLIFY(max(Expr(3), 5), Expr(5));
    EXPECT_SIMPLIFY(Expr(3) < 5, const_true());
    EXPECT_SIMPLIFY(Expr(3) == 5, const_false());
    EXPECT_SIMPLIFY(make_const(UInt(32), 1) < make_const(UInt(32), uint64_t(0xffffffffu)),
                    const_true());
    EXPECT_SIMPLIFY(Cast::make(Int(8), Expr(300)), make_const(Int(8), 44));
    EXPECT_SIMPLIFY(Cast::make(UInt(8), Expr(-1)), make_const(UInt(8), 255));
    EXPECT_SIMPLIFY(Cast::make(Int(32), Expr(2.7f)), Expr(2));
    EXPECT_SIMPLIFY(Cast::make(Int(32), Expr(-2.7f)), Expr(-2));
    EXPECT_SIMPLIFY(Cast::make(Float(32), Expr(3)), Expr(3.0f));
    EXPECT_SIMPLIFY(Cast::make(Float(16), Expr(0.1)), make_const(Float(16), 0.1));
    EXPECT_SIMPLIFY(Expr(3) & Expr(6), Expr(2));
    EXPECT_SIMPLIFY(Expr(-8) >> Expr(1), Expr(-4));
    EXPECT_SIMPLIFY(abs(Expr(-4)), Expr(4));
}

TEST(Simplify, CanonicalSums) {
    Expr x = var("x"), y = var("y"), z = var("z");
    EXPECT_SIMPLIFY(3 + x, x + 3);
    EXPECT_SIMPLIFY(x - 3, x + (-3));
    EXPECT_SIMPLIFY(x * 4 + x * 2, x * 6);
    EXPECT_SIMPLIFY((x + 3) - x, Expr(3));
    EXPECT_SIMPLIFY((x + y) - (x + z), y - z);
    EXPECT_SIMPLIFY(x + (y + z), (x + y) + z);
    EXPECT_SIMPLIFY((x + 3) * 2, x * 2 + 6);
    EXPECT_SIMPLIFY(x * 1, x);
    EXPECT_SIMPLIFY(x * 0, Expr(0));
    EXPECT_SIMPLIFY(x + 0, x);
    EXPECT_SIMPLIFY(x - x, Expr(0));
    EXPECT_SIMPLIFY((x + y) - (y + x), Expr(0));
    EXPECT_SIMPLIFY(3 - x, 3 - x);
    EXPECT_SIMPLIFY((x * 2) * 3, x * 6);
    EXPECT_SIMPLIFY((x / 4) * 4 + x % 4, x);
    EXPECT_SIMPLIFY(x - (x / 4) * 4, x % 4);
    Expr u = var("u", UInt(8));
    EXPECT_SIMPLIFY(u + make_const(UInt(8), 3) - u, make_const(UInt(8), 3));
}

TEST(Simplify, FloatsAreNotReassociated) {
    Expr f = var("f", Float(32)), g = var("g", Float(32));
    EXPECT_SIMPLIFY(f * 1.0f, f);
    EXPECT_SIMPLIFY(f + 0.0f, f + 0.0f);  // not exact for -0.0
    EXPECT_SIMPLIFY(f * 0.0f, f * 0.0f);  // not exact for inf/nan
    EXPECT_SIMPLIFY((f + g) - g, (f + g) - g);
    EXPECT_SIMPLIFY(2.0f + f, f + 2.0f);
    EXPECT_SIMPLIFY(f - 0.0f, f);
}

TEST(Simplify, DivMod) {
    Expr x = var("x"), y = var("y");
    EXPECT_SIMPLIFY((x * 8 + 3) / 8, x);
    EXPECT_SIMPLIFY((x * 8 + y) / 8, x + y / 8);
    EXPECT_SIMPLIFY((x * 8 + y) % 8, y % 8);
    EXPECT_SIMPLIFY((x * 8 + 3) % 8, Expr(3));
    EXPECT_SIMPLIFY((x + 9) / 4, (x + 1) / 4 + 2);
    EXPECT_SIMPLIFY((x / 2) / 3, x / 6);
    EXPECT_SIMPLIFY((x % 8) % 4, x % 4);
    EXPECT_SIMPLIFY(x / 1, x);
    EXPECT_SIMPLIFY(x % 1, Expr(0));
    EXPECT_SIMPLIFY(x / 0, Expr(0));
    EXPECT_SIMPLIFY((x * 4) % 2, Expr(0));
    // Floor semantics: (x*8 - 1)/8 == x - 1, not x.
    EXPECT_SIMPLIFY((x * 8 - 1) / 8, x + (-1));
    EXPECT_SIMPLIFY((x * 8 - 1) % 8, Expr(7));
    // Division by a positive constant goes into a min or max where one side
    // cancels: the tiles of a tile's clamped first and last keys match.
    Expr n = var("n");
    EXPECT_SIMPLIFY(min(x * 8, n + (-1)) / 8, min(x, (n + 7) / 8 + (-1)));
    EXPECT_SIMPLIFY((min(x * 8, n + (-8)) + 7) / 8, min(x, (n + 7) / 8 + (-1)));
    EXPECT_SIMPLIFY(max(x * 4 + 1, y) / 4, max(x, y / 4));
    EXPECT_SIMPLIFY(min(x, y) / 8, min(x, y) / 8);  // nothing cancels: left alone
    // Bounds make the division constant.
    Scope<Interval> s;
    s.push("y", Interval(Expr(0), Expr(7)));
    EXPECT_TRUE(equal(simplify(y / 8, true, s), Expr(0)));
    EXPECT_TRUE(equal(simplify(y % 8, true, s), y));
    EXPECT_TRUE(equal(simplify((x * 8 + y) / 8, true, s), x));
    // Alignment facts.
    Scope<ModulusRemainder> align;
    align.push("x", ModulusRemainder(8, 3));
    EXPECT_TRUE(equal(simplify(x % 4, true, Scope<Interval>(), align), Expr(3)));
}

TEST(Simplify, MinMax) {
    Expr x = var("x"), y = var("y");
    EXPECT_SIMPLIFY(min(x, x + 3), x);
    EXPECT_SIMPLIFY(max(x, x + 3), x + 3);
    EXPECT_SIMPLIFY(min(x, x), x);
    EXPECT_SIMPLIFY(min(min(x, 4), 3), min(x, 3));
    EXPECT_SIMPLIFY(max(max(x, 4), 3), max(x, 4));
    EXPECT_SIMPLIFY(min(x + 5, y + 5), min(x, y) + 5);
    EXPECT_SIMPLIFY(min(3, x), min(x, 3));
    EXPECT_SIMPLIFY(min(x, max(x, y)), x);
    EXPECT_SIMPLIFY(max(x, min(x, y)), x);
    EXPECT_SIMPLIFY(min(x, min(x, y)), min(x, y));
    Scope<Interval> s;
    s.push("x", Interval(Expr(0), Expr(10)));
    EXPECT_TRUE(equal(simplify(max(x, -1), true, s), x));
    EXPECT_TRUE(equal(simplify(min(x, 10), true, s), x));
    EXPECT_TRUE(equal(simplify(min(x, 20) + max(x, 11), true, s), Expr(11) + x) ||
                equal(simplify(min(x, 20) + max(x, 11), true, s), x + 11));
    // Symbolic bounds.
    Scope<Interval> s2;
    Expr n = var("n");
    s2.push("x", Interval(Expr(0), n - 1));
    EXPECT_TRUE(equal(simplify(min(x, n), true, s2), x));
    EXPECT_TRUE(equal(simplify(max(x + 1, n), true, s2), n));
}

TEST(Simplify, Comparisons) {
    Expr x = var("x"), y = var("y"), n = var("n");
    EXPECT_SIMPLIFY(x + 3 < x + 5, const_true());
    EXPECT_SIMPLIFY(x < x, const_false());
    EXPECT_SIMPLIFY(x <= x, const_true());
    EXPECT_SIMPLIFY(x * 2 == x * 2 + 1, const_false());
    EXPECT_SIMPLIFY(x + 1 == x + 1, const_true());
    EXPECT_SIMPLIFY(x + 3 < y + 5, x < y + 2);
    EXPECT_SIMPLIFY(x > y, y < x);
    EXPECT_SIMPLIFY(!(x < y), y <= x);
    EXPECT_SIMPLIFY(!(x == y), x != y);
    EXPECT_SIMPLIFY(x < 5 && x < 3, x < 3);
    EXPECT_SIMPLIFY(x < 5 || x < 3, x < 5);
    EXPECT_SIMPLIFY(x < 3 && 5 < x, const_false());
    EXPECT_SIMPLIFY(x < 3 && x < y, x < 3 && x < y);
    Scope<Interval> s;
    s.push("i", Interval(Expr(0), n - 1));
    Expr i = var("i");
    EXPECT_TRUE(can_prove(i < n, s));
    EXPECT_TRUE(can_prove(i >= 0, s));
    EXPECT_TRUE(can_prove(i + 1 <= n, s));
    EXPECT_FALSE(can_prove(i + 1 < n, s));
    EXPECT_FALSE(can_prove(i < n - 1, s));
    EXPECT_TRUE(equal(simplify(i >= n, true, s), const_false()));
    EXPECT_FALSE(can_prove(x < y));
    EXPECT_TRUE(can_prove(x * 2 != 1));
    // unsigned compare is not reasoned about with overflow-free algebra
    Expr u = var("u", UInt(32));
    EXPECT_FALSE(can_prove(u < u + make_const(UInt(32), 1)));
    EXPECT_TRUE(can_prove(u >= make_const(UInt(32), 0)));
    Expr b = var("b", UInt(8));
    EXPECT_TRUE(can_prove(Cast::make(Int(32), b) < 256));
}

TEST(Simplify, Select) {
    Expr x = var("x"), y = var("y"), c = var("c", Bool());
    EXPECT_SIMPLIFY(select(c, x, x), x);
    EXPECT_SIMPLIFY(select(const_true(), x, y), x);
    EXPECT_SIMPLIFY(select(x < x + 1, x, y), x);
    EXPECT_SIMPLIFY(select(c, const_true(), const_false()), c);
    EXPECT_SIMPLIFY(select(c, const_false(), const_true()), !c);
    EXPECT_SIMPLIFY(select(!c, x, y), select(c, y, x));
    EXPECT_SIMPLIFY(select(c, select(c, x, y), 3), select(c, x, 3));
    // Inside the true branch, the condition holds.
    EXPECT_SIMPLIFY(select(x < 3, min(x, 5), 0), select(x < 3, x, 0));
    EXPECT_SIMPLIFY(select(x < 3, select(x < 3, 1, 2), 0), select(x < 3, 1, 0));
    // But both values are evaluated whatever the condition: a load's index
    // keeps its clamp (a constant boundary condition), and so does a read
    // of a Func, the second operand of && and ||, and the false branch.
    Expr n = var("n");
    Expr clamped = max(min(x, n + -1), 0);
    Expr load = Load::make(Float(32), "in", clamped, const_true());
    EXPECT_SIMPLIFY(select(x < n && 0 <= x, load, 0.0f), select(x < n && 0 <= x, load, 0.0f));
    EXPECT_SIMPLIFY(select(n <= x, 0.0f, load), select(n <= x, 0.0f, load));
    Expr bit = Load::make(Bool(), "mask", clamped, const_true());
    EXPECT_SIMPLIFY(x < n && bit, x < n && bit);
    EXPECT_SIMPLIFY(n <= x || bit, n <= x || bit);
    Expr image = Call::make(Float(32), "in", {clamped}, Call::Image);
    EXPECT_SIMPLIFY(select(x < n, image, 0.0f), select(x < n, image, 0.0f));
    // Arithmetic alone is evaluated harmlessly either way: still simplified.
    EXPECT_SIMPLIFY(select(x < n, clamped * 2, 0), select(x < n, max(x, 0) * 2, 0));
}

TEST(Simplify, Booleans) {
    Expr c = var("c", Bool()), d = var("d", Bool());
    EXPECT_SIMPLIFY(c && const_true(), c);
    EXPECT_SIMPLIFY(c && const_false(), const_false());
    EXPECT_SIMPLIFY(c || const_true(), const_true());
    EXPECT_SIMPLIFY(c && !c, const_false());
    EXPECT_SIMPLIFY(c || !c, const_true());
    EXPECT_SIMPLIFY(!!c, c);
    EXPECT_SIMPLIFY(c && c, c);
    EXPECT_SIMPLIFY(!(c && d), !c || !d);
    EXPECT_SIMPLIFY(c && (c || d), c);
    // Absorption with the shared operand second: the union of two regions
    // each read under a condition gives (c && d) || c.
    EXPECT_SIMPLIFY((c && d) || c, c);
    EXPECT_SIMPLIFY((d || c) && c, c);
}

TEST(Simplify, Lets) {
    Expr x = var("x"), y = var("y"), t = var("t");
    EXPECT_SIMPLIFY(Let::make("t", Expr(3), t + x), x + 3);
    EXPECT_SIMPLIFY(Let::make("t", y, t + x), y + x);
    EXPECT_SIMPLIFY(Let::make("t", x * y, x), x);
    EXPECT_SIMPLIFY(Let::make("t", x * y, t + t), Let::make("t", x * y, t * 2));
    Expr kept = simplify(Let::make("t", x * y, x), false);
    EXPECT_TRUE(kept.as<Let>() != nullptr);
    // Facts about let values are used.
    EXPECT_SIMPLIFY(Let::make("t", x % 4, t < 4), const_true());
}

TEST(Simplify, Likely) {
    Expr x = var("x"), y = var("y");
    Expr e = simplify(make_likely(x + 0 < y));
    const Call *c = e.as<Call>();
    ASSERT_TRUE(c && c->is_intrinsic(Call::likely));
    EXPECT_TRUE(equal(c->args[0], x < y));
    EXPECT_SIMPLIFY(make_likely(x < x + 1), const_true());
}

TEST(Simplify, Vectors) {
    Expr x = var("x"), y = var("y");
    Expr r = Ramp::make(x, 1, 4);
    EXPECT_SIMPLIFY(r + Broadcast::make(y, 4), Ramp::make(x + y, 1, 4));
    EXPECT_SIMPLIFY(Broadcast::make(x, 4) + Broadcast::make(y, 4), Broadcast::make(x + y, 4));
    EXPECT_SIMPLIFY(Ramp::make(x, 2, 4) + Ramp::make(y, 3, 4), Ramp::make(x + y, 5, 4));
    EXPECT_SIMPLIFY(r * Broadcast::make(Expr(3), 4), Ramp::make(x * 3, 3, 4));
    EXPECT_SIMPLIFY(Ramp::make(x, 0, 4), Broadcast::make(x, 4));
    EXPECT_SIMPLIFY(r - r, Broadcast::make(Expr(0), 4));
    EXPECT_SIMPLIFY(r < Broadcast::make(x + 4, 4), const_true(4));
    EXPECT_SIMPLIFY(r < Broadcast::make(x + 2, 4), r < Broadcast::make(x + 2, 4));
    EXPECT_SIMPLIFY(min(r, Broadcast::make(x + 3, 4)), r);
    EXPECT_SIMPLIFY(Ramp::make(x * 8, 2, 4) / Broadcast::make(Expr(2), 4), Ramp::make(x * 4, 1, 4));
    EXPECT_SIMPLIFY(Ramp::make(x * 8, 1, 4) / Broadcast::make(Expr(8), 4), Broadcast::make(x, 4));
    EXPECT_SIMPLIFY(Ramp::make(x * 8, 1, 4) % Broadcast::make(Expr(8), 4),
                    Ramp::make(Expr(0), 1, 4));
    EXPECT_SIMPLIFY(Ramp::make(x, 4, 4) % Broadcast::make(Expr(4), 4), Broadcast::make(x % 4, 4));
    EXPECT_SIMPLIFY(select(Broadcast::make(const_true(), 4), r, Broadcast::make(y, 4)), r);
    EXPECT_SIMPLIFY(Cast::make(Int(64, 4), r),
                    Ramp::make(Cast::make(Int(64), x), make_const(Int(64), 1), 4));
}

TEST(Simplify, RampDividedWithinOneMultiple) {
    // A thread's vector of a row, 4 * t + [0, 4) past a multiple of 1024
    // (t < 256): every lane has the same quotient by 1024, though the base
    // is aligned to 4 only. With t up to 256, the last lanes cross into the
    // next multiple.
    Expr co = var("co"), t = var("t");
    Scope<Interval> threads;
    threads.push("t", Interval(Expr(0), Expr(255)));
    Expr lanes = Ramp::make(co * 1024 + t * 4, 1, 4) / Broadcast::make(Expr(1024), 4);
    Expr s = simplify(lanes, true, threads);
    EXPECT_TRUE(equal(s, Broadcast::make(co, 4))) << s;
    // The rest of a sum past multiples of 1024, which the rule bounds.
    EXPECT_TRUE(equal(rest_modulo(co * 1024 + t * 4 + 1029, 1024), t * 4 + 5))
        << rest_modulo(co * 1024 + t * 4 + 1029, 1024);
    EXPECT_TRUE(equal(rest_modulo(co * 2048 - 3, 1024), Expr(1021)))
        << rest_modulo(co * 2048 - 3, 1024);
    Scope<Interval> wider;
    wider.push("t", Interval(Expr(0), Expr(256)));
    EXPECT_EQ(simplify(lanes, true, wider).as<Broadcast>(), nullptr);
}

TEST(Simplify, Stmts) {
    Expr x = var("x"), n = var("n");
    Stmt store = Store::make("buf", x, x, Expr());
    // Empty and single-iteration loops.
    EXPECT_TRUE(
        is_const(simplify(For::make("x", 0, 0, ForType::Serial, store)).as<Evaluate>()->value));
    Stmt one = simplify(For::make("x", 5, 1, ForType::Serial, store));
    EXPECT_TRUE(equal(one, Store::make("buf", Expr(5), Expr(5), Expr()))) << one;
    // Loop bounds are facts inside the loop.
    Stmt guarded =
        For::make("x", 0, n, ForType::Serial,
                  IfThenElse::make(x < n, store, Store::make("buf", Expr(0), x, Expr())));
    Stmt s = simplify(guarded);
    EXPECT_TRUE(equal(s, For::make("x", 0, n, ForType::Serial, store))) << s;
    // If conditions are facts inside their branches.
    Stmt nested = IfThenElse::make(x < 10, IfThenElse::make(x < 20, store));
    EXPECT_TRUE(equal(simplify(nested), IfThenElse::make(x < 10, store)));
    Stmt else_fact = IfThenElse::make(x < 10, store,
                                      IfThenElse::make(x >= 10, Evaluate::make(x + Expr(0) == x)));
    Stmt es = simplify(else_fact);
    EXPECT_TRUE(equal(es, IfThenElse::make(x < 10, store))) << es;
    // Constant conditions, empty blocks.
    EXPECT_TRUE(equal(simplify(IfThenElse::make(Expr(1) < 2, store, Evaluate::make(0))), store));
    EXPECT_TRUE(equal(simplify(Block::make(Evaluate::make(0), store)), store));
    // Lets of constants are substituted.
    Stmt let = LetStmt::make("t", Expr(4), Store::make("buf", var("t") + 1, x, Expr()));
    EXPECT_TRUE(equal(simplify(let), Store::make("buf", Expr(5), x, Expr())));
    // An intrinsic call with side effects survives.
    Stmt err = Evaluate::make(error_message({StringImm::make("bad")}));
    EXPECT_TRUE(equal(simplify(err), err));
    // Conditions on the loop variable use the symbolic loop range.
    Stmt tail = For::make(
        "x", 0, n - 4, ForType::Serial,
        IfThenElse::make(make_likely(x + 4 <= n), store, Store::make("buf", Expr(1), x, Expr())));
    Stmt ts = simplify(tail);
    EXPECT_TRUE(equal(ts, For::make("x", 0, n + (-4), ForType::Serial, store))) << ts;
}

TEST(Simplify, RandomInt32) { check_random(Int(32), 1, 3000, 4); }

// With known ranges: x in [-3, 6] (constant), y in [0, z] (symbolic, z >= 0).
// Simplifying under those facts must agree with evaluation at values that
// satisfy them.
void check_random_with_bounds(uint32_t seed, int count) {
    Gen g(seed, Int(32));
    Eval ev;
    Scope<Interval> scope;
    scope.push("x", Interval(Expr(-3), Expr(6)));
    scope.push("y", Interval(Expr(0), var("z")));
    scope.push("z", Interval(Expr(0), Expr()));
    for (int i = 0; i < count; i++) {
        Expr e = g.expr(4);
        Expr s = simplify(e, true, scope);
        for (int trial = 0; trial < 8; trial++) {
            int64_t z = g.rnd(12);
            ev.env = {{"x", g.rnd(10) - 3}, {"y", g.rnd(static_cast<int>(z) + 1)}, {"z", z}};
            ASSERT_EQ(ev.eval(e), ev.eval(s))
                << "expr " << e << "\nsimplified " << s << "\nat x=" << ev.env["x"]
                << " y=" << ev.env["y"] << " z=" << ev.env["z"];
        }
    }
}

TEST(Simplify, RandomWithBounds) { check_random_with_bounds(5, 1500); }

// LOOM_FUZZ_SEEDS=n runs n more seeds of each type (for local stress runs).
TEST(Simplify, RandomMoreSeeds) {
    const char *env = getenv("LOOM_FUZZ_SEEDS");
    int n = env ? atoi(env) : 0;
    for (int s = 0; s < n; s++) {
        check_random(Int(32), 1000 + s, 1000, 5);
        check_random(UInt(8), 2000 + s, 500, 4);
        check_random(Int(8), 3000 + s, 500, 4);
        check_random(UInt(32), 4000 + s, 500, 4);
        check_random_with_bounds(5000 + s, 500);
        if (HasFatalFailure()) return;
    }
}
TEST(Simplify, RandomInt32Deep) { check_random(Int(32), 7, 500, 6); }
TEST(Simplify, RandomUInt8) { check_random(UInt(8), 2, 2000, 4); }
TEST(Simplify, RandomInt16) { check_random(Int(16), 3, 2000, 4); }

TEST(Simplify, RandomVectors) {
    // Scalar expressions lifted to vectors: x becomes ramp(x, s, 4), y a
    // broadcast; the simplified vector expression must agree lane by lane.
    Gen g(11, Int(32));
    Eval ev;
    for (int i = 0; i < 1500; i++) {
        Expr e = g.expr(3);
        int s = g.rnd(5) - 2;
        Expr vx = Ramp::make(var("x"), Expr(s == 0 ? 1 : s), 4), vy = Broadcast::make(var("y"), 4);
        // Rebuild e with vector leaves; constants and z become broadcasts.
        struct Lift : IRMutator {
            Expr vx, vy;
            Expr visit(const Variable *op) override {
                if (op->name == "x") return vx;
                if (op->name == "y") return vy;
                if (op->name == "w") return Variable::make(Int(32, 4), "w");
                return Broadcast::make(op, 4);
            }
            Expr visit(const IntImm *op) override { return Broadcast::make(op, 4); }
            Expr visit(const Let *op) override {
                return Let::make(op->name, mutate(op->value), mutate(op->body));
            }
        } l;
        l.vx = vx;
        l.vy = vy;
        Expr ve = l.mutate(e);
        Expr sv = simplify(ve);
        for (int trial = 0; trial < 4; trial++) {
            ev.env = {{"x", g.rnd(21) - 10}, {"y", g.rnd(21) - 10}, {"z", g.rnd(21) - 10}};
            ASSERT_EQ(ev.eval(ve), ev.eval(sv)) << ve << "\n-> " << sv;
        }
    }
}

TEST(Simplify, Terminates) {
    // A long chain of nested mins and sums must not blow up.
    Expr x = var("x"), e = x;
    for (int i = 0; i < 40; i++) e = min(e + 1, var("y") + i) - 1;
    Expr s = simplify(e);
    EXPECT_TRUE(s.defined());
    Expr sum = x;
    for (int i = 0; i < 500; i++) sum = sum + (i % 2 ? x : var("y"));
    EXPECT_SIMPLIFY(sum, x * 251 + var("y") * 250);
}

}  // namespace

TEST(Simplify, LetRebindingItsOwnName) {
    // The vectorizer's per-lane copies rebind a name in terms of its
    // enclosing binding: let x = min(a, b) in (let x = min(a, b) + 1 in ...).
    // The simplifier rewrites the inner value to the outer x plus 1, or to the
    // outer x itself; it must then read x in that value as the outer one (it
    // used to recurse forever through x -> x + 1 -> ...).
    Expr a = Variable::make(Int(32), "a"), b = Variable::make(Int(32), "b");
    Expr x = Variable::make(Int(32), "x");
    for (int k : {0, 1, 5}) {
        // min(x, 7) makes the simplifier ask what it knows about x.
        Stmt inner =
            LetStmt::make("x", Min::make(a, b) + k,
                          Store::make("out", Min::make(x, 7) * 2, make_zero(Int(32)), Expr()));
        Stmt s =
            LetStmt::make("x", Min::make(a, b),
                          Block::make(Store::make("out", x, make_one(Int(32)), Expr()), inner));
        Stmt r = simplify(s);
        // out[0] = min(min(a, b) + k, 7) * 2 and out[1] = min(a, b), whatever
        // the lets became.
        std::vector<Expr> stored(2);
        struct Find : IRVisitor {
            std::vector<Expr> *stored;
            std::map<std::string, std::vector<Expr>> lets;
            using IRVisitor::visit;
            void visit(const LetStmt *op) override {
                std::map<std::string, Expr> m;
                for (auto &kv : lets)
                    if (!kv.second.empty()) m[kv.first] = kv.second.back();
                lets[op->name].push_back(substitute(m, op->value));
                op->body.accept(this);
                lets[op->name].pop_back();
            }
            void visit(const Store *op) override {
                std::map<std::string, Expr> m;
                for (auto &kv : lets)
                    if (!kv.second.empty()) m[kv.first] = kv.second.back();
                (*stored)[*as_const_int(op->index)] = substitute(m, op->value);
            }
        } find;
        find.stored = &stored;
        r.accept(&find);
        ASSERT_TRUE(stored[0].defined() && stored[1].defined()) << r;
        EXPECT_TRUE(can_prove(stored[0] == Min::make(Min::make(a, b) + k, 7) * 2)) << r;
        EXPECT_TRUE(can_prove(stored[1] == Min::make(a, b))) << r;
    }
}

TEST(Simplify, QuotientsByTheSameConstant) {
    // Floor division by a positive constant is monotone, and quotients of
    // numerators a constant apart differ by at most one: the bounds of split
    // loops compare such quotients.
    Expr n = Variable::make(Int(32), "n");
    EXPECT_TRUE(can_prove((n - 2) / 2 <= (n - 1) / 2));
    EXPECT_TRUE(can_prove(n / 2 <= (n + 1) / 2));
    EXPECT_TRUE(can_prove((n + 1) / 2 - n / 2 <= 1));
    EXPECT_TRUE(can_prove((n + 1) / 2 - n / 2 >= 0));
    EXPECT_TRUE(is_const(simplify(min(n / 2, (n + 1) / 2) - n / 2)));
    EXPECT_FALSE(can_prove((n + 1) / 2 <= n / 2));  // false for odd n
    EXPECT_FALSE(can_prove((n + 3) / 2 - n / 2 <= 1));
}

TEST(Simplify, DifferencesOfExtremaWithASharedOperand) {
    // min(x, z + c) - min(x, z) lies in [min(c, 0), max(c, 0)], and so does
    // the difference of two maxes: the extent of a ragged tile,
    // min(t, n - T) + T - min(t, n - 1), is at most T. Interval arithmetic
    // cannot see that in the difference; the simplifier writes it as a
    // clamp, whose bounds it can.
    Expr x = var("x"), z = var("z");
    Eval ev;
    for (int is_max = 0; is_max < 2; is_max++) {
        for (int c = -3; c <= 3; c++) {
            for (int order = 0; order < 4; order++) {
                auto ext = [&](const Expr &a, const Expr &b, bool swap) {
                    Expr p = swap ? b : a, q = swap ? a : b;
                    return is_max ? Max::make(p, q) : Min::make(p, q);
                };
                Expr e = Sub::make(ext(x, z + c, order & 1), ext(x, z, order & 2));
                Expr s = simplify(e);
                EXPECT_TRUE(can_prove(s <= std::max(c, 0)) && can_prove(s >= std::min(c, 0)))
                    << e << " simplified to " << s;
                for (int xv = -6; xv <= 6; xv++) {
                    for (int zv = -6; zv <= 6; zv++) {
                        ev.env = {{"x", xv}, {"z", zv}};
                        ASSERT_EQ(ev.eval(e), ev.eval(s))
                            << e << " simplified to " << s << " at x=" << xv << " z=" << zv;
                    }
                }
            }
        }
    }
    // The ragged tile's extent: between 1 and 8.
    Expr t = var("t"), n = var("n");
    Expr extent = simplify(min(t * 8, n - 8) + 8 - min(t * 8, n - 1));
    EXPECT_TRUE(can_prove(extent <= 8) && can_prove(extent >= 1)) << extent;
    // Scaled (the extent of a fused loop) and in a longer sum.
    EXPECT_TRUE(can_prove(simplify((min(t, n) - min(t, n + 2)) * 16 + z - z) >= -32));
    // Nothing shared, or a difference that is not constant: left alone.
    EXPECT_SIMPLIFY(min(x, n) - min(t, n + 2), min(x, n) - min(t, n + 2));
    EXPECT_SIMPLIFY(min(x, n) - min(x, z), min(x, n) - min(x, z));
    // A min or max less one of its own operands, up to a constant.
    EXPECT_SIMPLIFY(min(x, z) - z, min(x - z, 0));
    EXPECT_SIMPLIFY(max(x, z + 3) - z, max(x - z, 3));
    EXPECT_TRUE(can_prove(simplify(n - 1 - min(t * 8, n - 1)) >= 0));
    for (const Expr &e : {Sub::make(Min::make(z + 2, x), z), Sub::make(z, Max::make(x, z - 1))}) {
        Expr s = simplify(e);
        EXPECT_EQ(s.as<Sub>() && s.as<Sub>()->b.as<Variable>(), false) << e << " -> " << s;
        for (int xv = -6; xv <= 6; xv++) {
            for (int zv = -6; zv <= 6; zv++) {
                ev.env = {{"x", xv}, {"z", zv}};
                ASSERT_EQ(ev.eval(e), ev.eval(s)) << e << " simplified to " << s;
            }
        }
    }
    // The operand a multiple of a variable, as a tile's start: the tile's
    // extent, max(min(n, t * 8 + 8) - t * 8, 1) after bounds inference,
    // is at most 8, so its storage fits any index type (the size check of
    // a per-tile allocation folds away).
    EXPECT_SIMPLIFY(min(t * 8, n - 8) - t * 8, min(n - t * 8, 8) + -8);
    EXPECT_SIMPLIFY(max(z * 3 + 2, x) - z * 3, max(x - z * 3, 2));
    for (const Expr &e :
         {Sub::make(Min::make(t * 4, n - 4), t * 4), Sub::make(Max::make(x, t * -2 + 1), t * -2),
          Add::make(Min::make(t * 4, n), t * 4)}) {
        Expr s = simplify(e);
        for (int tv = -4; tv <= 4; tv++) {
            for (int nv = -9; nv <= 9; nv++) {
                ev.env = {{"t", tv}, {"n", nv}, {"x", nv + tv}};
                ASSERT_EQ(ev.eval(e), ev.eval(s)) << e << " simplified to " << s;
            }
        }
    }
    Expr tile = Max::make(Min::make(t * 8, n - 8) - t * 8, -7) + 8;
    EXPECT_TRUE(can_prove(Cast::make(Int(64), tile) * make_const(Int(64), 64) <=
                          make_const(Int(64), 2147483647)))
        << simplify(tile);
    // Narrow types wrap: left alone.
    Expr x8 = var("x", Int(8)), z8 = var("z", Int(8));
    Expr e8 = Min::make(x8, z8 + make_const(Int(8), 3)) - Min::make(x8, z8);
    EXPECT_TRUE(simplify(e8).as<Sub>() != nullptr) << simplify(e8);
}

TEST(Simplify, ExtremaDropAnOperandTheOtherSideDominates) {
    // max(max(a, b), c) is max(b, c) where a <= c: a region that joins a
    // loop's footprint (a clamped value, at most the required end) with the
    // required region itself then reads as the required region.
    Expr x = var("x"), y = var("y"), z = var("z");
    EXPECT_SIMPLIFY(max(max(min(x, y) - 1, z), y + 7), max(z, y + 7));
    EXPECT_SIMPLIFY(min(min(max(x, y) + 1, z), y - 2), min(z, y + Expr(-2)));
    EXPECT_SIMPLIFY(max(y + 7, max(z, min(x, y))), max(z, y + 7));
    // Neither nested operand is dominated: kept.
    Expr kept = simplify(max(max(x, z), y));
    EXPECT_TRUE(kept.as<Max>() && kept.as<Max>()->a.as<Max>()) << kept;
    // Values, with the operands' order varied.
    Eval ev;
    Expr cases[] = {max(max(min(x, y) - 1, z), y + 7), max(y, max(z, x - 3)),
                    min(min(max(x, y) + 1, z), y - 2), min(y + 2, min(x, z))};
    for (const Expr &e : cases) {
        Expr s = simplify(e);
        for (int xv = -4; xv <= 4; xv++) {
            for (int yv = -4; yv <= 4; yv++) {
                for (int zv = -4; zv <= 4; zv++) {
                    ev.env = {{"x", xv}, {"y", yv}, {"z", zv}};
                    ASSERT_EQ(ev.eval(e), ev.eval(s)) << e << " simplified to " << s;
                }
            }
        }
    }
}

TEST(Simplify, LoopRangesBoundTheLastTileThroughItsQuotient) {
    // A loop over tiles of 8 runs ro up to (n + 7) / 8 - 1, so its tile
    // starts at most at n - 1: (n + 7) / 8 * 8 is at most n + 7. The region
    // of a tile, min(ro * 8, n - 1), is then ro * 8, and arrays indexed
    // relative to it are indexed by constants once the tile is unrolled.
    Expr ro = var("ro"), n = var("n"), m = var("m");
    Scope<Interval> tiles;
    tiles.push("ro", Interval(Expr(0), (n + 7) / 8 - 1));
    Expr first = min(ro * 8, n - 1);
    EXPECT_TRUE(equal(simplify(first, true, tiles), ro * 8)) << simplify(first, true, tiles);
    // Offset by the data's origin and with wider tiles, as a block loop is.
    Scope<Interval> blocks;
    blocks.push("ro", Interval(Expr(0), (n + 63) / 64 - 1));
    Expr offset = min(m + ro * 64, m + n - 1);
    EXPECT_TRUE(equal(simplify(offset, true, blocks), simplify(m + ro * 64)))
        << simplify(offset, true, blocks);
    // One tile too many reaches past the end: kept.
    Scope<Interval> too_many;
    too_many.push("ro", Interval(Expr(0), (n + 8) / 8 - 1));
    EXPECT_TRUE(simplify(first, true, too_many).as<Min>()) << simplify(first, true, too_many);
    // A let bound to the tile's start, x * c (+ c'), is substituted into
    // its uses, as Halide does, so that what is relative to it folds.
    Expr start = var("start");
    EXPECT_SIMPLIFY(Let::make("start", ro * 8, (start + 3) / 8 - ro), Expr(0));
    EXPECT_SIMPLIFY(Let::make("start", ro * 8 + 16, (start + 7) / 8 - ro), Expr(2));
    // The values agree wherever the loop runs.
    Eval ev;
    for (int nv = 1; nv <= 40; nv++) {
        for (int rv = 0; rv <= (nv + 7) / 8 - 1; rv++) {
            ev.env = {{"ro", rv}, {"n", nv}, {"m", 3}};
            ASSERT_EQ(ev.eval(first), ev.eval(simplify(first, true, tiles)));
        }
        for (int rv = 0; rv <= (nv + 63) / 64 - 1; rv++) {
            ev.env = {{"ro", rv}, {"n", nv}, {"m", -5}};
            ASSERT_EQ(ev.eval(offset), ev.eval(simplify(offset, true, blocks)));
        }
    }
}

TEST(Simplify, LinearConditionsAreFactsInTheirBranches) {
    // A guard on a sum decides comparisons of sums that differ from it by
    // a bounded amount: under ro * 8 + ri < n, the clamp min(ro * 8 + ri,
    // n - 1) of a ragged tile's key is the key itself. Inside the loops over
    // ro and ri, bounding each variable by its range loses that: the guard
    // holds for ro and ri together.
    Expr ro = var("ro"), ri = var("ri"), n = var("n");
    auto store = [](const Expr &v) { return Store::make("buf", v, Expr(0), Expr()); };
    auto in_loops = [&](const Stmt &body) {
        return For::make("ro", 0, (n + 7) / 8, ForType::Serial,
                         For::make("ri", 0, 8, ForType::Serial, body));
    };
    // The value of the one store left in s.
    auto stored = [](const Stmt &s) {
        struct Find : IRVisitor {
            std::vector<Expr> values;
            void visit(const Store *op) override { values.push_back(op->value); }
        } f;
        s.accept(&f);
        return f.values.size() == 1 ? f.values[0] : Expr();
    };
    Expr key = ro * 8 + ri;
    Stmt guarded = simplify(in_loops(IfThenElse::make(likely(key < n), store(min(key, n - 1)))));
    Expr v = stored(guarded);
    EXPECT_TRUE(v.defined() && equal(v, key)) << guarded;
    // The rest of the difference is bounded by the ranges in scope: with ri
    // at least 0, ro * 8 is below n too.
    Stmt tile = simplify(in_loops(IfThenElse::make(key < n, store(min(ro * 8 + 1, n)))));
    v = stored(tile);
    EXPECT_TRUE(v.defined() && equal(v, ro * 8 + 1)) << tile;
    // Negated in the else branch: ro * 8 + ri * 2 > n there.
    Stmt otherwise = simplify(in_loops(IfThenElse::make(ro * 8 + ri * 2 <= n, Evaluate::make(0),
                                                        store(max(ro * 8 + ri * 2, n + 1)))));
    v = stored(otherwise);
    EXPECT_TRUE(v.defined() && equal(v, simplify(ro * 8 + ri * 2))) << otherwise;
    // A difference the fact does not bound: kept.
    Stmt unrelated = simplify(in_loops(IfThenElse::make(key < n, store(min(ro * 8 + ri * 2, n)))));
    v = stored(unrelated);
    EXPECT_TRUE(v.defined() && v.as<Min>()) << unrelated;
}
