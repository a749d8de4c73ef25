// Func, its calls and definitions (f[x, y] = e, f[x] += e), Tuple, and the
// inline reductions.
#include "PyLoom.h"

#include <sstream>

#include "ir/IRPrinter.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace loom::python {

namespace {

/** What `f[x] += e` hands back to Func.__setitem__: Python calls
 * __getitem__, then __iadd__ (which defines the update), then __setitem__
 * with the result, which has nothing left to do. */
struct UpdateDefined {};

Tuple to_tuple(nb::handle h) {
    if (nb::isinstance<Tuple>(h)) return nb::cast<Tuple>(h);
    std::vector<Expr> values = to_exprs(h, "value");
    if (values.size() < 2) value_error("A Tuple needs at least two values");
    return Tuple(values);
}

void define_at(const Func &f, nb::handle key, nb::handle value) {
    if (nb::isinstance<UpdateDefined>(value)) return;
    std::vector<Expr> args = to_exprs(key, "a coordinate");
    FuncRef ref = f(args);
    if (nb::isinstance<Tuple>(value) || nb::isinstance<nb::tuple>(value) ||
        nb::isinstance<nb::list>(value)) {
        ref = to_tuple(value);
    } else if (nb::isinstance<FuncRef>(value)) {
        ref = nb::cast<FuncRef>(value);
    } else {
        ref = to_expr(value, ("the value of " + f.name() + "[...]").c_str());
    }
}

template <typename Op> UpdateDefined update(FuncRef &ref, nb::handle value, Op op) {
    op(ref, to_expr(value, "the right side of the update"));
    return {};
}

}  // namespace

void define_func(nb::module_ &m) {
    nb::class_<UpdateDefined>(m, "_UpdateDefined");

    nb::class_<Tuple>(m, "Tuple", "Several values computed together at each point of a Func.")
        .def("__init__", [](Tuple *self, nb::args values) { new (self) Tuple(to_tuple(values)); })
        .def("__len__", &Tuple::size)
        .def("__getitem__", [](const Tuple &t, size_t i) {
            if (i >= t.size()) throw nb::index_error("Tuple index out of range");
            return t[i];
        });

    nb::class_<FuncRef> ref(m, "FuncRef",
                            "f[x, y]: a call to a Func, or the left side of a "
                            "definition.");
    ref.def(
           "__getitem__", [](const FuncRef &r, int i) { return r[i]; }, nb::arg("i"),
           "Element i of a Tuple-valued Func's value.")
        .def("as_tuple", &FuncRef::as_tuple)
        .def("__repr__",
             [](const FuncRef &r) {
                 std::ostringstream s;
                 s << "<loom.FuncRef " << Expr(r) << ">";
                 return s.str();
             })
        .def("__iadd__",
             [](FuncRef &r, nb::handle v) {
                 return update(r, v, [](FuncRef &r, const Expr &e) { r += e; });
             })
        .def("__isub__",
             [](FuncRef &r, nb::handle v) {
                 return update(r, v, [](FuncRef &r, const Expr &e) { r -= e; });
             })
        .def("__imul__",
             [](FuncRef &r, nb::handle v) {
                 return update(r, v, [](FuncRef &r, const Expr &e) { r *= e; });
             })
        .def("__itruediv__", [](FuncRef &r, nb::handle v) {
            return update(r, v, [](FuncRef &r, const Expr &e) { r /= e; });
        });
    add_expr_operators_funcref(ref);

    nb::class_<Func>(m, "Func",
                     "A function over an integer domain: a pure definition and any "
                     "number of updates, written f[x, y] = ...")
        .def(nb::init<>())
        .def(nb::init<const std::string &>(), nb::arg("name"))
        .def(
            "__init__", [](Func *self, const PyBuffer &b) { new (self) Func(b.buffer); },
            nb::arg("buffer"), nb::keep_alive<1, 2>(), "The values of a buffer as a Func.")
        .def_prop_ro("name", &Func::name)
        .def("defined", &Func::defined)
        .def("dimensions", &Func::dimensions)
        .def("outputs", &Func::outputs)
        .def("args", &Func::args)
        .def("output_types", &Func::output_types)
        .def_prop_ro("type", &Func::type)
        .def("num_update_definitions", &Func::num_update_definitions)
        .def("output_buffer", &Func::output_buffer, nb::arg("i") = 0)
        .def("__getitem__",
             [](const Func &f, nb::handle key) { return f(func_coordinates(key, f)); })
        .def("__setitem__", &define_at)
        .def(
            "realize",
            [](const Func &f, const std::vector<int> &sizes) {
                PyBuffer b;
                {
                    nb::gil_scoped_release release;
                    b.buffer = f.realize(sizes);
                }
                return b;
            },
            nb::arg("sizes"), "Computes f over [0, sizes) with the default schedule.")
        .def("__repr__", [](const Func &f) { return "loom.Func('" + f.name() + "')"; });

    auto reduction = [&](const char *name, Expr (*r)(Expr, const std::string &), const char *doc) {
        m.def(
            name,
            [r, name](nb::handle e, const std::string &fname) {
                return r(to_expr(e, name), fname.empty() ? name : fname);
            },
            nb::arg("e"), nb::arg("name") = "", doc);
    };
    reduction("sum", &sum, "The sum of e over the RVars it uses (an inline reduction).");
    reduction("product", &product, "The product of e over its RVars.");
    reduction("maximum", &maximum, "The largest value of e over its RVars.");
    reduction("minimum", &minimum, "The smallest value of e over its RVars.");
    m.def(
        "argmax",
        [](nb::handle e, const std::string &name) {
            return argmax(to_expr(e, "argmax"), name.empty() ? "argmax" : name);
        },
        nb::arg("e"), nb::arg("name") = "",
        "(rv_0, ..., rv_n-1, value) of the first largest value of e over its RVars, as a Tuple.");
    m.def(
        "argmin",
        [](nb::handle e, const std::string &name) {
            return argmin(to_expr(e, "argmin"), name.empty() ? "argmin" : name);
        },
        nb::arg("e"), nb::arg("name") = "");
}

}  // namespace loom::python
