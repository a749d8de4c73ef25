// The extension module `loom._loom`: Loom's exceptions as Python exceptions,
// and the conversions every binding file uses.
#include "PyLoom.h"

#include <climits>
#include <map>

#include <nanobind/stl/string.h>

namespace loom::python {

namespace {

PyObject *error_type = nullptr;
PyObject *compile_error_type = nullptr;
PyObject *runtime_error_type = nullptr;
PyObject *internal_error_type = nullptr;

PyObject *new_exception(nb::module_ &m, const char *name, PyObject *base, const char *doc) {
    std::string qualified = std::string("loom.") + name;
    PyObject *t = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
    m.attr(name) = nb::borrow(t);
    return t;
}

void define_exceptions(nb::module_ &m) {
    error_type = new_exception(m, "Error", PyExc_Exception, "Base of every error Loom raises.");
    compile_error_type =
        new_exception(m, "CompileError", error_type,
                      "A mistake in an algorithm or schedule, found while defining or compiling.");
    runtime_error_type = new_exception(
        m, "RuntimeError", error_type,
        "A mistake in the arguments of a call to a compiled pipeline (nothing was written).");
    internal_error_type = new_exception(m, "InternalError", error_type,
                                        "A broken invariant inside Loom: a bug in Loom.");
    nb::register_exception_translator([](const std::exception_ptr &p, void *) {
        try {
            std::rethrow_exception(p);
        } catch (const CompileError &e) {
            PyErr_SetString(compile_error_type, e.what());
        } catch (const RuntimeError &e) {
            PyErr_SetString(runtime_error_type, e.what());
        } catch (const InternalError &e) {
            PyErr_SetString(internal_error_type, e.what());
        } catch (const Error &e) {
            PyErr_SetString(error_type, e.what());
        }
    });
}

/** The RVar of a one-dimensional RDom, which stands for it. */
RVar only_rvar_of(const RDom &r, const char *what) {
    if (r.dimensions() != 1) {
        type_error(std::string(what) + " is the RDom " + r.name() + " of " +
                   std::to_string(r.dimensions()) +
                   " dimensions; use one of its RVars (r.x, r[1], ...)");
    }
    return r;
}

}  // namespace

std::string py_type_name(nb::handle h) { return nb::inst_name(h).c_str(); }

std::string py_str(nb::handle h) {
    nb::object s = nb::steal(PyObject_Str(h.ptr()));
    if (!s.is_valid()) throw nb::python_error();
    return nb::cast<std::string>(s);
}

void type_error(const std::string &msg) { throw nb::type_error(msg.c_str()); }
void value_error(const std::string &msg) { throw nb::value_error(msg.c_str()); }

Expr to_expr(nb::handle h, const char *what) {
    if (nb::isinstance<Expr>(h)) {
        Expr e = nb::cast<Expr>(h);
        if (!e.defined()) value_error(std::string(what) + " is an undefined Expr");
        return e;
    }
    if (nb::isinstance<Var>(h)) return nb::cast<Var>(h);
    if (nb::isinstance<RVar>(h)) return nb::cast<RVar>(h);
    if (nb::isinstance<RDom>(h)) return only_rvar_of(nb::cast<RDom>(h), what);
    if (nb::isinstance<FuncRef>(h)) return nb::cast<FuncRef>(h);
    if (nb::isinstance<PyParam>(h)) return nb::cast<PyParam>(h).expr();
    if (PyBool_Check(h.ptr())) return Expr(h.ptr() == Py_True);
    if (PyLong_Check(h.ptr()) || (!PyFloat_Check(h.ptr()) && PyIndex_Check(h.ptr()))) {
        nb::object i = nb::steal(PyNumber_Index(h.ptr()));
        if (!i.is_valid()) throw nb::python_error();
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
        if (overflow) {
            value_error(std::string(what) + " is the integer " + py_str(h) +
                        ", which does not fit in int64");
        }
        if (v >= INT32_MIN && v <= INT32_MAX) return Expr(static_cast<int32_t>(v));
        return Expr(static_cast<int64_t>(v));
    }
    if (PyFloat_Check(h.ptr()) || nb::hasattr(h, "__float__")) {
        double v = PyFloat_AsDouble(h.ptr());
        if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
        return Expr(static_cast<float>(v));
    }
    type_error(std::string(what) + " must be an Expr, Var, RVar, Func call, Param or number, not " +
               py_type_name(h));
}

std::vector<Expr> to_exprs(nb::handle h, const char *what) {
    std::vector<Expr> r;
    if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
        size_t i = 0;
        for (nb::handle e : h) {
            std::string w = std::string(what) + " " + std::to_string(i++);
            r.push_back(to_expr(e, w.c_str()));
        }
    } else {
        r.push_back(to_expr(h, what));
    }
    return r;
}

Type to_type(nb::handle h, const char *what) {
    if (nb::isinstance<Type>(h)) return nb::cast<Type>(h);
    std::string name;
    if (PyType_Check(h.ptr())) {
        if (h.ptr() == (PyObject *)&PyFloat_Type) return Float(32);
        if (h.ptr() == (PyObject *)&PyLong_Type) return Int(32);
        if (h.ptr() == (PyObject *)&PyBool_Type) return Bool();
        name = nb::cast<std::string>(h.attr("__name__"));  // numpy.float32, ...
    } else if (nb::isinstance<nb::str>(h)) {
        name = nb::cast<std::string>(h);
    } else if (nb::hasattr(h, "name") && nb::isinstance<nb::str>(h.attr("name"))) {
        name = nb::cast<std::string>(h.attr("name"));  // a numpy dtype
    } else {
        name = py_str(h);  // torch.float32
    }
    if (name.rfind("torch.", 0) == 0) name = name.substr(6);
    static const std::map<std::string, Type> names = {
        {"bool", Bool()},       {"bool_", Bool()},       {"int8", Int(8)},
        {"int16", Int(16)},     {"int32", Int(32)},      {"int64", Int(64)},
        {"uint8", UInt(8)},     {"uint16", UInt(16)},    {"uint32", UInt(32)},
        {"uint64", UInt(64)},   {"float16", Float(16)},  {"half", Float(16)},
        {"float32", Float(32)}, {"float", Float(32)},    {"float64", Float(64)},
        {"double", Float(64)},  {"bfloat16", BFloat(16)}};
    auto it = names.find(name);
    if (it == names.end()) {
        type_error(std::string(what) + " must be a loom.Type or a type name such as 'float32', " +
                   "'bfloat16', 'int8' or 'bool' (or the NumPy / PyTorch dtype), not " +
                   std::string(nb::repr(h).c_str()));
    }
    return it->second;
}

VarOrRVar to_var_or_rvar(nb::handle h, const char *what) {
    if (nb::isinstance<Var>(h)) return nb::cast<Var>(h);
    if (nb::isinstance<RVar>(h)) return nb::cast<RVar>(h);
    if (nb::isinstance<RDom>(h)) return only_rvar_of(nb::cast<RDom>(h), what);
    type_error(std::string(what) + " must be a Var, RVar or one-dimensional RDom, not " +
               py_type_name(h));
}

std::vector<VarOrRVar> to_var_or_rvars(nb::handle h, const char *what) {
    std::vector<VarOrRVar> r;
    size_t i = 0;
    for (nb::handle e : h) {
        std::string w = std::string(what) + " " + std::to_string(i++);
        r.push_back(to_var_or_rvar(e, w.c_str()));
    }
    return r;
}

}  // namespace loom::python

NB_MODULE(_loom, m) {
    using namespace loom::python;
    m.doc() = "Loom's C++ API (the package `loom` re-exports it).";
    // Kernels registered as PyTorch ops live until the interpreter exits;
    // nanobind would report them as leaks.
    nb::set_leak_warnings(false);
    define_exceptions(m);
    define_types(m);
    define_expr(m);
    define_vars(m);
    define_params(m);
    define_func(m);
    define_schedule(m);
    define_target(m);
    define_buffer(m);
    define_pipeline(m);
    define_templates(m);
}
