// Param (a scalar input of any type), BufferParam, Dimension and
// OutputBuffer.
#include "PyLoom.h"

#include <cmath>
#include <cstring>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace loom::python {

/** The bits of the Python number `v` as a scalar of type `t`, or a
 * TypeError / ValueError naming `who`. */
uint64_t scalar_bits(nb::handle v, Type t, const std::string &who) {
    uint64_t bits = 0;
    auto store = [&](auto x) { std::memcpy(&bits, &x, sizeof(x)); };
    if (t.is_float()) {
        if (!(PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr()) || nb::hasattr(v, "__float__")) ||
            PyBool_Check(v.ptr())) {
            type_error(who + " is a " + type_to_string(t) + " and takes a number, not " +
                       py_type_name(v));
        }
        nb::object f = nb::steal(PyNumber_Float(v.ptr()));
        if (!f.is_valid()) throw nb::python_error();
        double d = PyFloat_AsDouble(f.ptr());
        if (t == Float(64)) store(d);
        else if (t == Float(32)) store(static_cast<float>(d));
        else if (t == Float(16)) store(float16_t(d).bits);
        else store(bfloat16_t(d).bits);
        return bits;
    }
    if (t.is_bool()) {
        if (!PyBool_Check(v.ptr()) && !(PyLong_Check(v.ptr()) && nb::cast<long long>(v) >= 0 &&
                                        nb::cast<long long>(v) <= 1)) {
            type_error(who + " is a bool and takes True or False, not " +
                       std::string(nb::repr(v).c_str()));
        }
        return PyObject_IsTrue(v.ptr()) ? 1 : 0;
    }
    if (!PyIndex_Check(v.ptr()) || PyFloat_Check(v.ptr())) {
        type_error(who + " is a " + type_to_string(t) + " and takes an int, not " +
                   py_type_name(v) + " (" + std::string(nb::repr(v).c_str()) + ")");
    }
    nb::object i = nb::steal(PyNumber_Index(v.ptr()));
    if (!i.is_valid()) throw nb::python_error();
    int overflow = 0;
    long long s = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    bool fits;
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(i.ptr());
        if (PyErr_Occurred()) PyErr_Clear(), fits = false;
        else fits = t.is_uint() && t.can_represent(uint64_t(u));
        s = static_cast<long long>(u);
    } else {
        fits = overflow == 0 && t.can_represent(int64_t(s));
    }
    if (!fits) {
        value_error(who + " is a " + type_to_string(t) + ", which cannot hold " +
                    std::string(nb::repr(v).c_str()));
    }
    std::memcpy(&bits, &s, t.bytes());
    return bits;
}

/** The Python number a scalar's bits hold. */
nb::object scalar_value(uint64_t bits, Type t) {
    if (t == Float(64)) {
        double d;
        std::memcpy(&d, &bits, 8);
        return nb::float_(d);
    }
    if (t == Float(32)) {
        float f;
        std::memcpy(&f, &bits, 4);
        return nb::float_(f);
    }
    if (t == Float(16)) return nb::float_(float(float16_t::from_bits(uint16_t(bits))));
    if (t.is_bfloat()) return nb::float_(float(bfloat16_t::from_bits(uint16_t(bits))));
    if (t.is_bool()) return nb::bool_(bits != 0);
    if (t.is_uint()) return nb::int_(bits);
    int64_t s = 0;
    std::memcpy(&s, &bits, t.bytes());
    s = (s << (64 - t.bits)) >> (64 - t.bits);  // sign-extend
    return nb::int_(s);
}

namespace {

std::vector<Expr> coordinates(nb::handle key, const std::string &name, int dims, const char *kind) {
    std::vector<Expr> args = to_exprs(key, "a coordinate");
    if (static_cast<int>(args.size()) != dims) {
        value_error(std::string(kind) + " " + name + " has " + std::to_string(dims) +
                    " dimensions but is indexed with " + std::to_string(args.size()) +
                    " coordinates");
    }
    for (size_t i = 0; i < args.size(); i++) {
        if (!args[i].type().is_int_or_uint()) {
            type_error("Coordinate " + std::to_string(i) + " of " + kind + " " + name + " is a " +
                       type_to_string(args[i].type()) +
                       "; coordinates must be integers (cast it: loom.cast(loom.Int(32), "
                       "loom.floor(e)))");
        }
    }
    return args;
}

}  // namespace

std::vector<Expr> func_coordinates(nb::handle key, const Func &f) {
    if (!f.defined()) return to_exprs(key, "a coordinate");
    return coordinates(key, f.name(), f.dimensions(), "Func");
}

void define_params(nb::module_ &m) {
    nb::class_<PyParam> param(m, "Param", "A scalar input of the pipeline.");
    param
        .def(
            "__init__",
            [](PyParam *self, nb::handle type, const std::string &name, nb::handle value) {
                new (self) PyParam();
                self->param = std::make_shared<internal::ParameterContents>();
                self->param->name = name.empty() ? internal::unique_name("p") : name;
                self->param->type = to_type(type, "the type of Param");
                if (!self->param->type.is_scalar() || self->param->type.is_handle()) {
                    type_error("A Param's type must be a scalar number type");
                }
                if (!value.is_none()) {
                    self->param->scalar_bits =
                        scalar_bits(value, self->param->type, "Param " + self->param->name);
                    self->param->scalar_set = true;
                }
            },
            nb::arg("type"), nb::arg("name") = "", nb::arg("value") = nb::none(),
            "Param(type, name='', value=None): type is a loom.Type or dtype name.")
        .def_prop_ro("name", [](const PyParam &p) { return p.param->name; })
        .def_prop_ro("type", [](const PyParam &p) { return p.param->type; })
        .def(
            "set",
            [](PyParam &p, nb::handle v) {
                p.param->scalar_bits = scalar_bits(v, p.param->type, "Param " + p.param->name);
                p.param->scalar_set = true;
            },
            nb::arg("value"), "The value JIT calls that do not pass one use.")
        .def("get",
             [](const PyParam &p) -> nb::object {
                 if (!p.param->scalar_set) return nb::none();
                 return scalar_value(p.param->scalar_bits, p.param->type);
             })
        .def("__repr__", [](const PyParam &p) {
            return "loom.Param('" + p.param->name + "', " + type_to_string(p.param->type) + ")";
        });
    add_expr_operators_param(param);

    nb::class_<Dimension>(m, "Dimension", "The extent, min or stride of one buffer dimension.")
        .def("min", &Dimension::min)
        .def("extent", &Dimension::extent)
        .def("max", &Dimension::max)
        .def("stride", &Dimension::stride)
        .def("set_extent", &Dimension::set_extent, nb::arg("extent"),
             nb::rv_policy::reference_internal)
        .def("set_min", &Dimension::set_min, nb::arg("min"), nb::rv_policy::reference_internal)
        .def("set_stride_multiple", &Dimension::set_stride_multiple, nb::arg("multiple"),
             nb::rv_policy::reference_internal);

    nb::class_<BufferParam>(m, "BufferParam",
                            "An input buffer whose element type and rank are fixed; indexed "
                            "b[x, y] in definitions.")
        .def(
            "__init__",
            [](BufferParam *self, nb::handle type, int dims, const std::string &name) {
                new (self) BufferParam(to_type(type, "the type of BufferParam"), dims, name);
            },
            nb::arg("type"), nb::arg("dimensions"), nb::arg("name") = "")
        .def_prop_ro("name", &BufferParam::name)
        .def_prop_ro("type", &BufferParam::type)
        .def("dimensions", &BufferParam::dimensions)
        .def(
            "dim", [](const BufferParam &b, int d) { return b.dim(d); }, nb::arg("d"))
        .def("allow_strided_innermost", &BufferParam::allow_strided_innermost,
             nb::rv_policy::reference_internal)
        .def("set_host_alignment", &BufferParam::set_host_alignment, nb::arg("bytes"),
             nb::rv_policy::reference_internal)
        .def(
            "set", [](BufferParam &b, const PyBuffer &buf) { b.set(buf.buffer); },
            nb::arg("buffer"), "Binds a loom.Buffer for JIT calls that do not pass one.")
        .def("__getitem__",
             [](const BufferParam &b, nb::handle key) {
                 return b(coordinates(key, b.name(), b.dimensions(), "BufferParam"));
             })
        .def("__repr__", [](const BufferParam &b) {
            return "loom.BufferParam('" + b.name() + "', " + type_to_string(b.type()) + ", " +
                   std::to_string(b.dimensions()) + ")";
        });

    nb::class_<OutputBuffer>(m, "OutputBuffer",
                             "Promises about the buffer a pipeline output is written into.")
        .def_prop_ro("name", &OutputBuffer::name)
        .def("dimensions", &OutputBuffer::dimensions)
        .def("dim", &OutputBuffer::dim, nb::arg("d"))
        .def("set_host_alignment", &OutputBuffer::set_host_alignment, nb::arg("bytes"),
             nb::rv_policy::reference_internal);
}

}  // namespace loom::python
