// Var, RVar and RDom.
#include "PyLoom.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace loom::python {

void define_vars(nb::module_ &m) {
    nb::class_<Var> var(m, "Var", "A pure variable: one dimension of a Func's domain.");
    var.def(nb::init<>())
        .def(nb::init<const std::string &>(), nb::arg("name"))
        .def_prop_ro("name", &Var::name)
        .def("same_as", &Var::same_as)
        .def("__repr__", [](const Var &v) { return "loom.Var('" + v.name() + "')"; })
        .def("__str__", [](const Var &v) { return v.name(); });
    add_expr_operators_var(var);

    nb::class_<RVar> rvar(m, "RVar", "One variable of a reduction domain.");
    rvar.def(nb::init<const std::string &>(), nb::arg("name"),
             "A name-only RVar, for the loops split or fuse make of reduction loops.")
        .def_prop_ro("name", &RVar::name)
        .def_prop_ro("min", &RVar::min)
        .def_prop_ro("extent", &RVar::extent)
        .def("__repr__", [](const RVar &v) { return "loom.RVar('" + v.name() + "')"; })
        .def("__str__", [](const RVar &v) { return v.name(); });
    add_expr_operators_rvar(rvar);

    nb::class_<RDom> rdom(m, "RDom",
                          "A reduction domain: a box of points visited in order by an update "
                          "definition, the last dimension innermost.");
    rdom.def(
            "__init__",
            [](RDom *self, nb::args args, const std::string &name) {
                // RDom(min, extent) or RDom([(min, extent), ...]) / RDom((min, extent), ...).
                std::vector<std::pair<Expr, Expr>> ranges;
                auto add_range = [&](nb::handle pair, size_t i) {
                    if (!(nb::isinstance<nb::tuple>(pair) || nb::isinstance<nb::list>(pair)) ||
                        nb::len(pair) != 2) {
                        type_error("RDom: range " + std::to_string(i) +
                                   " must be a (min, extent) pair, not " + py_type_name(pair));
                    }
                    std::string w = "the min of range " + std::to_string(i) + " of RDom";
                    std::string x = "the extent of range " + std::to_string(i) + " of RDom";
                    ranges.emplace_back(to_expr(pair[0], w.c_str()), to_expr(pair[1], x.c_str()));
                };
                if (args.size() == 2 && !nb::isinstance<nb::tuple>(args[0]) &&
                    !nb::isinstance<nb::list>(args[0])) {
                    ranges.emplace_back(to_expr(args[0], "the min of RDom"),
                                        to_expr(args[1], "the extent of RDom"));
                } else if (args.size() == 1 && nb::isinstance<nb::list>(args[0])) {
                    size_t i = 0;
                    for (nb::handle pair : args[0]) add_range(pair, i++);
                } else {
                    for (size_t i = 0; i < args.size(); i++) add_range(args[i], i);
                }
                if (ranges.empty()) {
                    type_error("RDom takes (min, extent), or one (min, extent) pair per dimension");
                }
                for (size_t i = 0; i < ranges.size(); i++) {
                    for (const Expr &e : {ranges[i].first, ranges[i].second}) {
                        if (!e.type().is_int_or_uint()) {
                            type_error("RDom: the min and extent of range " + std::to_string(i) +
                                       " must be integers, not " + type_to_string(e.type()));
                        }
                    }
                }
                new (self) RDom(ranges, name);
            },
            nb::arg("ranges"), nb::arg("name") = "",
            "RDom(min, extent, name=''), or RDom([(min0, extent0), (min1, extent1), ...]): one "
            "pair per dimension, outermost first.")
        .def_prop_ro("name", &RDom::name)
        .def("dimensions", &RDom::dimensions)
        .def("__len__", &RDom::dimensions)
        .def("__getitem__",
             [](const RDom &r, int i) {
                 if (i < 0 || i >= r.dimensions()) {
                     throw nb::index_error(("RDom " + r.name() + " has " +
                                            std::to_string(r.dimensions()) + " dimensions; index " +
                                            std::to_string(i) + " is out of range")
                                               .c_str());
                 }
                 return r[i];
             })
        .def_prop_ro("x", [](const RDom &r) { return r[0]; })
        .def_prop_ro("y", [](const RDom &r) { return r[1]; })
        .def_prop_ro("z", [](const RDom &r) { return r[2]; })
        .def_prop_ro("w", [](const RDom &r) { return r[3]; })
        .def(
            "where",
            [](RDom &r, nb::handle pred) -> RDom & {
                return r.where(to_expr(pred, "the predicate of where"));
            },
            nb::arg("predicate"), nb::rv_policy::reference_internal,
            "Restricts the domain to the points where `predicate` holds (calls accumulate).")
        .def("__repr__", [](const RDom &r) { return "loom.RDom('" + r.name() + "')"; });
    add_expr_operators_rdom(rdom);
}

}  // namespace loom::python
