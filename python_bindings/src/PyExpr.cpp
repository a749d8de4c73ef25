// Type, Expr, the Python operators on everything that is an Expr (Expr,
// Var, RVar, RDom, Func calls, Params) and the math functions.
//
// The operators keep C++'s meaning: `/` on integers is Loom's division
// (rounding toward negative infinity, as `//` is in Python), `//` is the
// same on integers and floor(a / b) on floats, `%` takes the divisor's sign,
// and `&`, `|`, `^`, `~` are logical on bools and bitwise on integers. The
// promotion rules are C++'s (loom/IROperator.h): a Python number adapts to
// the type of the Expr it meets.
#include "PyLoom.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ir/IRPrinter.h"

namespace loom::python {

namespace {

std::string expr_repr(const Expr &e) {
    std::ostringstream s;
    s << e;
    return s.str();
}

Expr floor_div(Expr a, Expr b) {
    internal::match_types(a, b, "//");
    if (a.type().is_float()) return floor(a / b);
    return a / b;
}

Expr logical_or_bitwise(Expr a, Expr b, char op) {
    if (a.type().is_bool() && b.type().is_bool()) {
        if (op == '&') return a && b;
        if (op == '|') return a || b;
        return a != b;
    }
    if (op == '&') return a & b;
    if (op == '|') return a | b;
    return a ^ b;
}

Expr invert(const Expr &a) { return a.type().is_bool() ? !a : ~a; }

/** The operators of the Expr-like class T, applied to to_expr of both
 * sides. */
template <typename T> void add_operators(nb::class_<T> &c) {
#define LOOM_PY_BINARY(NAME, BODY)                                                               \
    c.def(                                                                                       \
        NAME,                                                                                    \
        [](nb::handle self, nb::handle other) {                                                  \
            Expr a = to_expr(self, "the left operand"), b = to_expr(other, "the right operand"); \
            return Expr(BODY);                                                                   \
        },                                                                                       \
        nb::is_operator());
#define LOOM_PY_REFLECTED(NAME, BODY)                                                            \
    c.def(                                                                                       \
        NAME,                                                                                    \
        [](nb::handle self, nb::handle other) {                                                  \
            Expr a = to_expr(other, "the left operand"), b = to_expr(self, "the right operand"); \
            return Expr(BODY);                                                                   \
        },                                                                                       \
        nb::is_operator());
#define LOOM_PY_BOTH(NAME, RNAME, BODY) \
    LOOM_PY_BINARY(NAME, BODY)          \
    LOOM_PY_REFLECTED(RNAME, BODY)
    LOOM_PY_BOTH("__add__", "__radd__", a + b)
    LOOM_PY_BOTH("__sub__", "__rsub__", a - b)
    LOOM_PY_BOTH("__mul__", "__rmul__", a * b)
    LOOM_PY_BOTH("__truediv__", "__rtruediv__", a / b)
    LOOM_PY_BOTH("__floordiv__", "__rfloordiv__", floor_div(a, b))
    LOOM_PY_BOTH("__mod__", "__rmod__", a % b)
    LOOM_PY_BOTH("__pow__", "__rpow__", pow(a, b))
    LOOM_PY_BOTH("__and__", "__rand__", logical_or_bitwise(a, b, '&'))
    LOOM_PY_BOTH("__or__", "__ror__", logical_or_bitwise(a, b, '|'))
    LOOM_PY_BOTH("__xor__", "__rxor__", logical_or_bitwise(a, b, '^'))
    LOOM_PY_BOTH("__lshift__", "__rlshift__", a << b)
    LOOM_PY_BOTH("__rshift__", "__rrshift__", a >> b)
    LOOM_PY_BINARY("__lt__", a < b)
    LOOM_PY_BINARY("__le__", a <= b)
    LOOM_PY_BINARY("__gt__", a > b)
    LOOM_PY_BINARY("__ge__", a >= b)
    LOOM_PY_BINARY("__eq__", a == b)
    LOOM_PY_BINARY("__ne__", a != b)
#undef LOOM_PY_BOTH
#undef LOOM_PY_REFLECTED
#undef LOOM_PY_BINARY
    c.def("__neg__", [](nb::handle self) { return -to_expr(self, "the operand of -"); });
    c.def("__pos__", [](nb::handle self) { return to_expr(self, "the operand of +"); });
    c.def("__abs__", [](nb::handle self) { return abs(to_expr(self, "the operand of abs")); });
    c.def("__invert__", [](nb::handle self) { return invert(to_expr(self, "the operand of ~")); });
    c.def("__bool__", [](nb::handle self) -> bool {
        type_error(
            "A Loom Expr has no truth value while the algorithm is being defined: use "
            "loom.select(c, a, b) instead of `a if c else b`, and & | ~ instead of and / or / "
            "not");
    });
    c.def("__float__", [](nb::handle self) -> double {
        type_error("A Loom Expr is not a number: it is computed when the pipeline runs");
    });
    c.def("__index__", [](nb::handle self) -> int64_t {
        type_error("A Loom Expr is not a Python int: it is computed when the pipeline runs");
    });
    // `==` builds an Expr, so these objects cannot be dict keys by value.
    c.attr("__hash__") = nb::none();
    c.def_prop_ro("type", [](nb::handle self) { return to_expr(self, "the Expr").type(); });
}

}  // namespace

void define_types(nb::module_ &m) {
    nb::class_<Type> t(m, "Type",
                       "An element type: a code (int, uint, float, bfloat), bits and lanes.");
    nb::enum_<Type::Code>(t, "Code")
        .value("Int", Type::Int)
        .value("UInt", Type::UInt)
        .value("Float", Type::Float)
        .value("Handle", Type::Handle)
        .value("BFloat", Type::BFloat);
    t.def(nb::init<Type::Code, int, int>(), nb::arg("code"), nb::arg("bits"), nb::arg("lanes") = 1)
        .def_prop_ro("code", [](const Type &t) { return t.code; })
        .def_prop_ro("bits", [](const Type &t) { return int(t.bits); })
        .def_prop_ro("lanes", [](const Type &t) { return int(t.lanes); })
        .def("bytes", &Type::bytes)
        .def("is_int", &Type::is_int)
        .def("is_uint", &Type::is_uint)
        .def("is_bool", &Type::is_bool)
        .def("is_float", &Type::is_float)
        .def("is_bfloat", &Type::is_bfloat)
        .def("with_lanes", &Type::with_lanes)
        .def("with_bits", &Type::with_bits)
        .def("element_of", &Type::element_of)
        .def(
            "max", [](const Type &t) { return type_max(t); }, "The largest value (an Expr).")
        .def(
            "min", [](const Type &t) { return type_min(t); }, "The smallest value (an Expr).")
        .def("__eq__",
             [](const Type &a, nb::handle b) {
                 return nb::isinstance<Type>(b) && a == nb::cast<Type>(b);
             })
        .def("__hash__",
             [](const Type &t) { return (int(t.code) << 24) | (t.bits << 16) | t.lanes; })
        .def("__str__", [](const Type &t) { return type_to_string(t); })
        .def("__repr__", [](const Type &t) { return "loom.Type('" + type_to_string(t) + "')"; });
    m.def("Int", &Int, nb::arg("bits"), nb::arg("lanes") = 1);
    m.def("UInt", &UInt, nb::arg("bits"), nb::arg("lanes") = 1);
    m.def("Float", &Float, nb::arg("bits"), nb::arg("lanes") = 1);
    m.def("BFloat", &BFloat, nb::arg("bits") = 16, nb::arg("lanes") = 1);
    m.def("Bool", &Bool, nb::arg("lanes") = 1);
    m.def(
        "type_of", [](nb::handle h) { return to_type(h, "the type"); }, nb::arg("dtype"),
        "The loom.Type of a dtype-like name: 'float32', numpy.int8, torch.bfloat16, ...");
}

void define_expr(nb::module_ &m) {
    nb::class_<Expr> e(m, "Expr", "A value-producing expression of the algorithm.");
    e.def(
         "__init__", [](Expr *self, nb::handle h) { new (self) Expr(to_expr(h, "Expr()")); },
         nb::arg("value"))
        .def("__repr__", [](const Expr &e) { return "<loom.Expr " + expr_repr(e) + ">"; })
        .def("__str__", &expr_repr);
    add_operators(e);

    auto unary = [&](const char *name, Expr (*f)(Expr), const char *doc) {
        m.def(
            name, [f, name](nb::handle x) { return f(to_expr(x, name)); }, nb::arg("x"), doc);
    };
    unary("abs", &abs, "|x|, in x's type.");
    unary("exp", &exp, "e**x (integers become float32).");
    unary("log", &log, "The natural logarithm.");
    unary("sqrt", &sqrt, "The square root.");
    unary("rsqrt", &rsqrt, "1 / sqrt(x).");
    unary("tanh", &tanh, "The hyperbolic tangent.");
    unary("sin", &sin, "The sine.");
    unary("cos", &cos, "The cosine.");
    unary("floor", &floor, "Rounds toward negative infinity.");
    unary("ceil", &ceil, "Rounds toward positive infinity.");
    unary("round", &round, "Rounds to the nearest, ties to even.");
    unary("erf", &erf, "The error function.");
    m.def(
        "pow", [](nb::handle x, nb::handle y) { return pow(to_expr(x, "x"), to_expr(y, "y")); },
        nb::arg("x"), nb::arg("y"), "x**y in floating point.");
    m.def(
        "min", [](nb::handle a, nb::handle b) { return min(to_expr(a, "a"), to_expr(b, "b")); },
        nb::arg("a"), nb::arg("b"));
    m.def(
        "max", [](nb::handle a, nb::handle b) { return max(to_expr(a, "a"), to_expr(b, "b")); },
        nb::arg("a"), nb::arg("b"));
    m.def(
        "clamp",
        [](nb::handle x, nb::handle lo, nb::handle hi) {
            return clamp(to_expr(x, "x"), to_expr(lo, "lo"), to_expr(hi, "hi"));
        },
        nb::arg("x"), nb::arg("lo"), nb::arg("hi"));
    m.def(
        "select",
        [](nb::args args) {
            size_t n = args.size();
            if (n < 3 || n % 2 == 0) {
                type_error(
                    "select takes (condition, true_value, false_value) or (c1, v1, c2, v2, ..., "
                    "default): an odd number of at least 3 arguments, not " +
                    std::to_string(n));
            }
            Expr r = to_expr(args[n - 1], "the default value of select");
            for (size_t i = n - 1; i >= 2; i -= 2) {
                std::string c = "condition " + std::to_string((i - 2) / 2) + " of select";
                std::string v = "value " + std::to_string((i - 2) / 2) + " of select";
                r = select(to_expr(args[i - 2], c.c_str()), to_expr(args[i - 1], v.c_str()), r);
            }
            return r;
        },
        "select(c, a, b): a where c holds, else b; select(c1, v1, c2, v2, ..., default) chains.");
    m.def(
        "cast",
        [](nb::handle t, nb::handle x) {
            return cast(to_type(t, "the type of cast"), to_expr(x, "the value of cast"));
        },
        nb::arg("type"), nb::arg("x"), "x converted to `type` (a loom.Type or dtype name).");
    m.def(
        "reinterpret",
        [](nb::handle t, nb::handle x) {
            return reinterpret(to_type(t, "the type of reinterpret"), to_expr(x, "the value"));
        },
        nb::arg("type"), nb::arg("x"));
    m.def("type_max", [](nb::handle t) { return type_max(to_type(t, "type_max")); });
    m.def("type_min", [](nb::handle t) { return type_min(to_type(t, "type_min")); });
}

// Var, RVar, RDom, FuncRef and Param get the operators where they are bound.
void add_expr_operators_var(nb::class_<Var> &c) { add_operators(c); }
void add_expr_operators_rvar(nb::class_<RVar> &c) { add_operators(c); }
void add_expr_operators_rdom(nb::class_<RDom> &c) { add_operators(c); }
void add_expr_operators_funcref(nb::class_<FuncRef> &c) { add_operators(c); }
void add_expr_operators_param(nb::class_<PyParam> &c) { add_operators(c); }

}  // namespace loom::python
