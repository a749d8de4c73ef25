// Shared by the binding files: the conversions from Python objects to Loom's
// C++ values, with errors that name the argument, and the wrappers of the
// types that have no C++ class of their own (a type-erased Param, a Buffer
// that keeps the array it wraps alive).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <loom/loom.h>

#include <string>
#include <vector>

namespace loom::python {

namespace nb = nanobind;

/** A scalar Param of any type (C++'s Param<T> with T chosen at run time). */
struct PyParam {
    internal::ParameterPtr param;
    Expr expr() const { return internal::Variable::make(param->type, param->name, param); }
};

/** A Loom buffer, and the array (NumPy, PyTorch, any DLPack producer) whose
 * memory it uses, kept alive as long as the buffer is. */
struct PyBuffer {
    RawBuffer buffer;
    nb::ndarray<nb::ro> array;  // the imported DLPack tensor or buffer view
    nb::object owner;           // the array object it came from
};

/** `h` as an Expr: an Expr, Var, RVar, one-dimensional RDom, Func call,
 * Param, or a Python bool, int (int32, or int64 if it does not fit) or
 * float (float32). A TypeError naming `what` otherwise. */
Expr to_expr(nb::handle h, const char *what);
/** Every element of a tuple or list (or `h` alone) as an Expr. */
std::vector<Expr> to_exprs(nb::handle h, const char *what);
/** A loom.Type, or a dtype-like name: "float32", "bfloat16", "bool",
 * numpy.float16, torch.int8, ... */
Type to_type(nb::handle h, const char *what);
/** A Var, RVar or RDom, as a schedule directive names it. */
VarOrRVar to_var_or_rvar(nb::handle h, const char *what);
std::vector<VarOrRVar> to_var_or_rvars(nb::handle h, const char *what);

/** Raises TypeError / ValueError with `msg`. */
[[noreturn]] void type_error(const std::string &msg);
[[noreturn]] void value_error(const std::string &msg);
/** str(h). */
std::string py_str(nb::handle h);
/** A Python object's type name, for messages. */
std::string py_type_name(nb::handle h);

/** The Python operators of an Expr, on the other Expr-like classes. */
void add_expr_operators_var(nb::class_<Var> &c);
void add_expr_operators_rvar(nb::class_<RVar> &c);
void add_expr_operators_rdom(nb::class_<RDom> &c);
void add_expr_operators_funcref(nb::class_<FuncRef> &c);
void add_expr_operators_param(nb::class_<PyParam> &c);

void define_types(nb::module_ &m);
void define_expr(nb::module_ &m);
void define_vars(nb::module_ &m);
void define_params(nb::module_ &m);
void define_func(nb::module_ &m);
void define_schedule(nb::module_ &m);
void define_target(nb::module_ &m);
void define_buffer(nb::module_ &m);
void define_pipeline(nb::module_ &m);
void define_templates(nb::module_ &m);

}  // namespace loom::python

namespace loom::python {
/** The bits of Python number `v` as a scalar of type `t` (errors name `who`). */
uint64_t scalar_bits(nb::handle v, Type t, const std::string &who);
/** The Python number that the bits of a scalar of type `t` hold. */
nb::object scalar_value(uint64_t bits, Type t);
/** The coordinates of f[key], checked against f's dimensions when f is defined. */
std::vector<Expr> func_coordinates(nb::handle key, const Func &f);
}  // namespace loom::python

namespace loom::python {
/** An IndexError / ValueError unless `c` is a point of b. */
void check_coordinates(const RawBuffer &b, const std::vector<int> &c);
}  // namespace loom::python
