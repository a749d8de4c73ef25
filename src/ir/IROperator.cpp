#include "loom/IROperator.h"

#include <cmath>

#include "ir/IRVisitor.h"
#include "loom/Error.h"

namespace loom {

using namespace internal;

namespace internal {

Expr make_const(Type t, int64_t v) {
    Expr s;
    Type e = t.element_of();
    if (e.is_int()) s = IntImm::make(e, v);
    else if (e.is_uint()) s = UIntImm::make(e, static_cast<uint64_t>(v));
    else if (e.is_float()) s = FloatImm::make(e, static_cast<double>(v));
    else internal_error << "make_const of type " << type_to_string(t);
    return t.lanes > 1 ? Broadcast::make(s, t.lanes) : s;
}
Expr make_const(Type t, uint64_t v) {
    Expr s;
    Type e = t.element_of();
    if (e.is_int()) s = IntImm::make(e, static_cast<int64_t>(v));
    else if (e.is_uint()) s = UIntImm::make(e, v);
    else if (e.is_float()) s = FloatImm::make(e, static_cast<double>(v));
    else internal_error << "make_const of type " << type_to_string(t);
    return t.lanes > 1 ? Broadcast::make(s, t.lanes) : s;
}
Expr make_const(Type t, int v) { return make_const(t, static_cast<int64_t>(v)); }
Expr make_const(Type t, unsigned v) { return make_const(t, static_cast<uint64_t>(v)); }
Expr make_const(Type t, double v) {
    Expr s;
    Type e = t.element_of();
    if (e.is_float()) s = FloatImm::make(e, v);
    else if (e.is_int()) s = IntImm::make(e, static_cast<int64_t>(v));
    else if (e.is_uint()) s = UIntImm::make(e, static_cast<uint64_t>(v));
    else internal_error << "make_const of type " << type_to_string(t);
    return t.lanes > 1 ? Broadcast::make(s, t.lanes) : s;
}
Expr make_zero(Type t) { return make_const(t, 0); }
Expr make_one(Type t) { return make_const(t, 1); }
Expr const_true(int lanes) { return make_const(Bool(lanes), 1); }
Expr const_false(int lanes) { return make_const(Bool(lanes), 0); }

namespace {
Expr strip_broadcast(const Expr &e) {
    if (const Broadcast *b = e.as<Broadcast>()) return strip_broadcast(b->value);
    return e;
}
}  // namespace

bool is_const(const Expr &e) {
    if (!e.defined()) return false;
    Expr s = strip_broadcast(e);
    return s.as<IntImm>() || s.as<UIntImm>() || s.as<FloatImm>();
}
bool is_const(const Expr &e, int64_t v) {
    if (!e.defined()) return false;
    Expr s = strip_broadcast(e);
    if (const IntImm *i = s.as<IntImm>()) return i->value == v;
    if (const UIntImm *u = s.as<UIntImm>()) return v >= 0 && u->value == static_cast<uint64_t>(v);
    if (const FloatImm *f = s.as<FloatImm>()) return f->value == static_cast<double>(v);
    return false;
}
bool is_const_zero(const Expr &e) { return is_const(e, 0); }
bool is_const_one(const Expr &e) { return is_const(e, 1); }
bool is_positive_const(const Expr &e) {
    Expr s = e.defined() ? strip_broadcast(e) : e;
    if (!s.defined()) return false;
    if (const IntImm *i = s.as<IntImm>()) return i->value > 0;
    if (const UIntImm *u = s.as<UIntImm>()) return u->value > 0;
    if (const FloatImm *f = s.as<FloatImm>()) return f->value > 0;
    return false;
}
bool is_negative_const(const Expr &e) {
    Expr s = e.defined() ? strip_broadcast(e) : e;
    if (!s.defined()) return false;
    if (const IntImm *i = s.as<IntImm>()) return i->value < 0;
    if (const FloatImm *f = s.as<FloatImm>()) return f->value < 0;
    return false;
}
const int64_t *as_const_int(const Expr &e) {
    if (!e.defined()) return nullptr;
    if (const Broadcast *b = e.as<Broadcast>()) return as_const_int(b->value);
    if (const IntImm *i = e.as<IntImm>()) return &i->value;
    return nullptr;
}
const uint64_t *as_const_uint(const Expr &e) {
    if (!e.defined()) return nullptr;
    if (const Broadcast *b = e.as<Broadcast>()) return as_const_uint(b->value);
    if (const UIntImm *u = e.as<UIntImm>()) return &u->value;
    return nullptr;
}
const double *as_const_float(const Expr &e) {
    if (!e.defined()) return nullptr;
    if (const Broadcast *b = e.as<Broadcast>()) return as_const_float(b->value);
    if (const FloatImm *f = e.as<FloatImm>()) return &f->value;
    return nullptr;
}

int64_t div_imp(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1 && a == INT64_MIN) return a;
    int64_t q = a / b;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) q--;
    return q;
}
int64_t mod_imp(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

namespace {

// A "literal" is a scalar constant of a default C++ type: int32 or a float
// constant. It adapts to the type of the other operand.
bool is_literal(const Expr &e) {
    if (!e.type().is_scalar()) return false;
    if (const IntImm *i = e.as<IntImm>()) return i->type == Int(32);
    if (e.as<FloatImm>()) return e.type() == Float(32) || e.type() == Float(64);
    return false;
}

Expr convert_literal(const Expr &lit, Type t, const char *op) {
    if (const IntImm *i = lit.as<IntImm>()) {
        user_assert(t.element_of().can_represent(i->value) || t.is_float())
            << "The constant " << i->value << " does not fit in " << type_to_string(t)
            << ", the type of the other operand of '" << op << "'. Cast one side explicitly.";
        return make_const(t, i->value);
    }
    const FloatImm *f = lit.as<FloatImm>();
    internal_assert(f);
    if (t.is_float()) return make_const(t, f->value);
    user_assert(t.element_of().can_represent(f->value))
        << "The float constant " << f->value << " is used with an integer of type "
        << type_to_string(t) << " in '" << op
        << "' and is not a whole number in its range. Cast the integer to a float first.";
    return make_const(t, f->value);
}

}  // namespace

void match_types(Expr &a, Expr &b, const char *op) {
    user_assert(a.defined() && b.defined())
        << "An operand of '" << op << "' is undefined (an Expr that was never assigned).";
    Type ta = a.type(), tb = b.type();
    user_assert(!ta.is_handle() && !tb.is_handle())
        << "Operator '" << op << "' cannot be applied to a handle.";
    // Broadcast a scalar to the other side's lanes.
    if (ta.lanes != tb.lanes) {
        if (ta.is_scalar()) a = Broadcast::make(a, tb.lanes);
        else if (tb.is_scalar()) b = Broadcast::make(b, ta.lanes);
        else
            user_error << "Operator '" << op << "' between vectors of " << ta.lanes << " and "
                       << tb.lanes << " lanes.";
        ta = a.type();
        tb = b.type();
    }
    if (ta == tb) return;
    auto convert = [&](Expr &e, Type t) {
        if (is_literal(strip_broadcast(e))) {
            Expr c = convert_literal(strip_broadcast(e), t.element_of(), op);
            e = t.lanes > 1 ? Broadcast::make(c, t.lanes) : c;
        } else {
            e = Cast::make(t, e);
        }
    };
    bool la = is_literal(strip_broadcast(a)), lb = is_literal(strip_broadcast(b));
    if (la && !lb) return convert(a, tb);
    if (lb && !la) return convert(b, ta);
    if (ta.is_float() && !tb.is_float()) return convert(b, ta);
    if (tb.is_float() && !ta.is_float()) return convert(a, tb);
    if (ta.is_float() && tb.is_float()) {
        Type t;
        if (ta.bits == 16 && tb.bits == 16) t = Float(32, ta.lanes);  // float16 meets bfloat16
        else t = ta.bits >= tb.bits ? ta : tb;
        if (ta != t) convert(a, t);
        if (tb != t) convert(b, t);
        return;
    }
    if (ta.is_bool() != tb.is_bool() && (ta.is_bool() || tb.is_bool())) {
        // A bool meeting an integer widens to the integer type.
        if (ta.is_bool()) return convert(a, tb);
        return convert(b, ta);
    }
    // int vs int.
    int bits = std::max<int>(ta.bits, tb.bits);
    Type::Code code = (ta.is_uint() && ta.bits == bits) || (tb.is_uint() && tb.bits == bits)
                          ? Type::UInt
                          : Type::Int;
    Type t(code, bits, ta.lanes);
    if (ta != t) convert(a, t);
    if (tb != t) convert(b, t);
}

Expr make_intrinsic(Type t, const char *name, const std::vector<Expr> &args) {
    return Call::make(t, name, args, Call::PureIntrinsic);
}

Expr likely(Expr e) {
    Type t = e.type();
    return make_intrinsic(t, Call::likely, {std::move(e)});
}

Expr error_message(const std::vector<Expr> &pieces) {
    return Call::make(Int(32), Call::error, pieces, Call::Intrinsic);
}

bool reads_memory(const Expr &e) {
    struct Find : IRVisitor {
        bool found = false;
        void visit(const Load *) override { found = true; }
        void visit(const Call *op) override {
            if (op->call_type == Call::Func || op->call_type == Call::Image) found = true;
            if (!found) IRVisitor::visit(op);
        }
    } find;
    e.accept(&find);
    return find.found;
}

bool has_side_effects(const Expr &e) {
    struct Find : IRVisitor {
        bool found = false;
        void visit(const Call *op) override {
            if (!op->is_pure()) found = true;
            if (!found) IRVisitor::visit(op);
        }
    } find;
    e.accept(&find);
    return find.found;
}

bool is_pure(const Expr &e) {
    struct Check : IRVisitor {
        bool pure = true;
        void visit(const Call *op) override {
            if (!op->is_pure()) pure = false;
            IRVisitor::visit(op);
        }
        void visit(const Load *) override { pure = false; }
    } check;
    e.accept(&check);
    return check.pure;
}

}  // namespace internal

namespace {

Expr binary(Expr a, Expr b, const char *op) {
    match_types(a, b, op);
    if (op[0] == '+') return Add::make(a, b);
    if (op[0] == '-') return Sub::make(a, b);
    if (op[0] == '*') return Mul::make(a, b);
    if (op[0] == '/') return Div::make(a, b);
    if (op[0] == '%') return Mod::make(a, b);
    internal_error << "binary op " << op;
}

Expr to_bool(Expr e, const char *op) {
    user_assert(e.defined()) << "An operand of '" << op << "' is undefined.";
    if (e.type().is_bool()) return e;
    user_error << "Operator '" << op << "' needs bool operands, but got a "
               << type_to_string(e.type()) << ". Compare it with something first (e.g. x != 0).";
}

Expr require_int(Expr e, const char *op) {
    user_assert(e.defined()) << "An operand of '" << op << "' is undefined.";
    user_assert(e.type().is_int_or_uint())
        << "Operator '" << op << "' needs integer operands, but got a " << type_to_string(e.type())
        << ".";
    return e;
}

// Float16/bfloat16 math runs in float32 and rounds back.
Expr float_math(const char *name, Expr x) {
    user_assert(x.defined()) << name << "() of an undefined Expr.";
    Type t = x.type();
    if (!t.is_float()) {
        x = cast(Float(32, t.lanes), x);
        t = x.type();
    }
    if (t.bits < 32) {
        return cast(t, float_math(name, cast(Float(32, t.lanes), x)));
    }
    std::string fn = std::string(name) + (t.bits == 64 ? "_f64" : "_f32");
    return Call::make(t, fn, {x}, Call::PureIntrinsic);
}

}  // namespace

Expr operator+(Expr a, Expr b) { return binary(std::move(a), std::move(b), "+"); }
Expr operator-(Expr a, Expr b) { return binary(std::move(a), std::move(b), "-"); }
Expr operator*(Expr a, Expr b) { return binary(std::move(a), std::move(b), "*"); }
Expr operator/(Expr a, Expr b) { return binary(std::move(a), std::move(b), "/"); }
Expr operator%(Expr a, Expr b) { return binary(std::move(a), std::move(b), "%"); }
Expr operator-(Expr a) {
    user_assert(a.defined()) << "Negation of an undefined Expr.";
    return Sub::make(make_zero(a.type()), a);
}
Expr operator==(Expr a, Expr b) {
    match_types(a, b, "==");
    return EQ::make(a, b);
}
Expr operator!=(Expr a, Expr b) {
    match_types(a, b, "!=");
    return NE::make(a, b);
}
Expr operator<(Expr a, Expr b) {
    match_types(a, b, "<");
    return LT::make(a, b);
}
Expr operator<=(Expr a, Expr b) {
    match_types(a, b, "<=");
    return LE::make(a, b);
}
Expr operator>(Expr a, Expr b) {
    match_types(a, b, ">");
    return GT::make(a, b);
}
Expr operator>=(Expr a, Expr b) {
    match_types(a, b, ">=");
    return GE::make(a, b);
}
Expr operator&&(Expr a, Expr b) {
    a = to_bool(a, "&&");
    b = to_bool(b, "&&");
    match_types(a, b, "&&");
    return And::make(a, b);
}
Expr operator||(Expr a, Expr b) {
    a = to_bool(a, "||");
    b = to_bool(b, "||");
    match_types(a, b, "||");
    return Or::make(a, b);
}
Expr operator!(Expr a) { return Not::make(to_bool(a, "!")); }

#define LOOM_BITWISE(OP, NAME)                               \
    Expr operator OP(Expr a, Expr b) {                       \
        a = require_int(a, #OP);                             \
        b = require_int(b, #OP);                             \
        match_types(a, b, #OP);                              \
        return make_intrinsic(a.type(), Call::NAME, {a, b}); \
    }
LOOM_BITWISE(&, bitwise_and)
LOOM_BITWISE(|, bitwise_or)
LOOM_BITWISE(^, bitwise_xor)
LOOM_BITWISE(<<, shift_left)
LOOM_BITWISE(>>, shift_right)
#undef LOOM_BITWISE
Expr operator~(Expr a) {
    a = require_int(a, "~");
    return make_intrinsic(a.type(), Call::bitwise_not, {a});
}

Expr &operator+=(Expr &a, Expr b) { return a = a + std::move(b); }
Expr &operator-=(Expr &a, Expr b) { return a = a - std::move(b); }
Expr &operator*=(Expr &a, Expr b) { return a = a * std::move(b); }
Expr &operator/=(Expr &a, Expr b) { return a = a / std::move(b); }

Expr min(Expr a, Expr b) {
    match_types(a, b, "min");
    return Min::make(a, b);
}
Expr max(Expr a, Expr b) {
    match_types(a, b, "max");
    return Max::make(a, b);
}
Expr clamp(Expr x, Expr lo, Expr hi) {
    user_assert(x.defined() && lo.defined() && hi.defined()) << "clamp() of an undefined Expr.";
    Type t = x.type();
    lo = cast(t, lo);
    hi = cast(t, hi);
    return max(min(x, hi), lo);
}
Expr select(Expr c, Expr t, Expr f) {
    user_assert(c.defined() && t.defined() && f.defined()) << "select() of an undefined Expr.";
    c = to_bool(c, "select");
    match_types(t, f, "select");
    if (c.type().lanes != t.type().lanes) {
        if (c.type().is_scalar()) {
            // a scalar condition with vector values is fine as it is
        } else if (t.type().is_scalar()) {
            t = Broadcast::make(t, c.type().lanes);
            f = Broadcast::make(f, c.type().lanes);
        }
    }
    return Select::make(c, t, f);
}
Expr select(Expr c1, Expr v1, Expr c2, Expr v2, Expr d) {
    return select(std::move(c1), std::move(v1), select(std::move(c2), std::move(v2), std::move(d)));
}
Expr abs(Expr x) {
    user_assert(x.defined()) << "abs() of an undefined Expr.";
    return make_intrinsic(x.type(), Call::abs, {x});
}
Expr exp(Expr x) { return float_math("exp", std::move(x)); }
Expr log(Expr x) { return float_math("log", std::move(x)); }
Expr sqrt(Expr x) { return float_math("sqrt", std::move(x)); }
Expr rsqrt(Expr x) { return float_math("rsqrt", std::move(x)); }
Expr tanh(Expr x) { return float_math("tanh", std::move(x)); }
Expr sin(Expr x) { return float_math("sin", std::move(x)); }
Expr cos(Expr x) { return float_math("cos", std::move(x)); }
Expr floor(Expr x) { return float_math("floor", std::move(x)); }
Expr ceil(Expr x) { return float_math("ceil", std::move(x)); }
Expr round(Expr x) { return float_math("round", std::move(x)); }
Expr erf(Expr x) { return float_math("erf", std::move(x)); }
Expr pow(Expr x, Expr y) {
    user_assert(x.defined() && y.defined()) << "pow() of an undefined Expr.";
    if (!x.type().is_float()) x = cast(Float(32, x.type().lanes), x);
    Type t = x.type();
    if (t.bits < 32) return cast(t, pow(cast(Float(32, t.lanes), x), y));
    y = cast(t, y);
    return Call::make(t, t.bits == 64 ? "pow_f64" : "pow_f32", {x, y}, Call::PureIntrinsic);
}

Expr cast(Type t, Expr x) {
    user_assert(x.defined()) << "cast<" << type_to_string(t) << ">() of an undefined Expr.";
    if (x.type().lanes != t.lanes) {
        if (t.is_scalar()) t = t.with_lanes(x.type().lanes);
        else if (x.type().is_scalar()) x = Broadcast::make(x, t.lanes);
    }
    if (x.type() == t) return x;
    if (is_const(x) && x.type().is_scalar()) {
        if (const int64_t *i = as_const_int(x)) return make_const(t, *i);
        if (const uint64_t *u = as_const_uint(x)) {
            if (t.is_bool()) return make_const(t, *u != 0 ? 1 : 0);
            return make_const(t, *u);
        }
    }
    if (t.is_bool() && !x.type().is_bool()) return NE::make(x, make_zero(x.type()));
    return Cast::make(t, x);
}

Expr reinterpret(Type t, Expr x) {
    user_assert(x.defined()) << "reinterpret() of an undefined Expr.";
    user_assert(t.bits * t.lanes == x.type().bits * x.type().lanes)
        << "reinterpret<" << type_to_string(t) << "> of a " << type_to_string(x.type())
        << ": the types have different sizes.";
    return Reinterpret::make(t, x);
}

Expr type_max(Type t) {
    if (t.is_float()) return make_const(t, INFINITY);
    if (t.is_uint()) return make_const(t, t.max_uint());
    return make_const(t, t.max_int());
}
Expr type_min(Type t) {
    if (t.is_float()) return make_const(t, -INFINITY);
    return make_const(t, t.min_int());
}

}  // namespace loom
