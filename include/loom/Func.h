// Func: a function over an integer domain, defined by a pure definition and
// any number of update definitions. Funcs describe WHAT is computed; how is
// the job of a Schedule.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "loom/Buffer.h"
#include "loom/IROperator.h"
#include "loom/Param.h"
#include "loom/Var.h"

namespace loom {

/** Several values computed together at each point of a Func. */
class Tuple {
  public:
    Tuple(const std::vector<Expr> &values) : values_(values) {}
    template <typename... Args> Tuple(Expr a, Expr b, Args &&...rest)
        : values_{std::move(a), std::move(b), Expr(rest)...} {}
    size_t size() const { return values_.size(); }
    Expr operator[](size_t i) const { return values_.at(i); }
    const std::vector<Expr> &as_vector() const { return values_; }

  private:
    std::vector<Expr> values_;
};

class Func;

/** f(args): a call to f (usable as an Expr) or the left side of a definition. */
class FuncRef {
  public:
    FuncRef(internal::FunctionPtr f, std::vector<Expr> args)
        : func_(std::move(f)), args_(std::move(args)) {}

    /** Defines f at these args: the pure definition the first time (all args
     * distinct Vars), an update definition after that. */
    FuncRef &operator=(const Expr &e);
    FuncRef &operator=(const Tuple &t);
    FuncRef &operator=(const FuncRef &other);
    /** Update definitions f(args) = f(args) op e. On a Func with no
     * definition yet, first defines it as the identity of op (0, 1). */
    FuncRef &operator+=(const Expr &e);
    FuncRef &operator-=(const Expr &e);
    FuncRef &operator*=(const Expr &e);
    FuncRef &operator/=(const Expr &e);

    /** The call as an Expr (single-valued Funcs). */
    operator Expr() const;
    /** Element i of a Tuple-valued Func. */
    Expr operator[](int i) const;
    /** Every element, as a Tuple. */
    Tuple as_tuple() const;

  private:
    internal::FunctionPtr func_;
    std::vector<Expr> args_;
    void define(const std::vector<Expr> &values);
    void define_update_with_identity(const Expr &e, const char *op, int identity);
};

/** The buffer a pipeline writes one output of a Func into (when the Func is
 * a pipeline output), for the same promises an input's BufferParam takes:
 * fixed extents and mins, stride multiples and host alignment, each
 * checked when the pipeline runs. Its sizes cannot be read in the
 * algorithm. */
class OutputBuffer {
  public:
    explicit OutputBuffer(internal::ParameterPtr p) : param(std::move(p)) {}
    const std::string &name() const { return param->name; }
    int dimensions() const { return param->dimensions; }
    Dimension dim(int d) const;
    /** As BufferParam::set_host_alignment. */
    OutputBuffer &set_host_alignment(int bytes);

    internal::ParameterPtr param;
};

class Func {
  public:
    Func();
    explicit Func(const std::string &name);
    /** Wraps an Expr with no free Vars... or a Buffer as a Func. */
    explicit Func(const RawBuffer &b);

    const std::string &name() const;
    bool defined() const;
    int dimensions() const;
    int outputs() const;
    /** The Vars of the pure definition, outermost first. */
    std::vector<Var> args() const;
    std::vector<Type> output_types() const;
    Type type() const;
    int num_update_definitions() const;

    FuncRef operator()(const std::vector<Expr> &args) const;
    // Constrained so that a (non-const) std::vector<Expr> argument picks the
    // overload above instead of failing inside this template.
    template <typename... Args,
              typename = std::enable_if_t<(std::is_convertible_v<Args &&, Expr> && ...)>>
    FuncRef operator()(Args &&...args) const {
        return (*this)(std::vector<Expr>{Expr(args)...});
    }

    /** The buffer output `i` of this (defined) Func is written into when it
     * is a pipeline's output, for promises about it, such as
     * out.output_buffer().set_host_alignment(16). */
    OutputBuffer output_buffer(int i = 0) const;

    /** Computes this Func over [0, sizes) with the default schedule (every
     * other Func inlined or computed at root) and returns the result. */
    RawBuffer realize(const std::vector<int> &sizes) const;

    internal::FunctionPtr function() const { return contents_; }
    explicit Func(internal::FunctionPtr f) : contents_(std::move(f)) {}

  private:
    internal::FunctionPtr contents_;
};

// Inline reductions over the RVars found in e. Each makes an anonymous Func
// over the free Vars of e and returns a call to it.
Expr sum(Expr e, const std::string &name = "sum");
Expr product(Expr e, const std::string &name = "product");
Expr maximum(Expr e, const std::string &name = "maximum");
Expr minimum(Expr e, const std::string &name = "minimum");
/** The coordinates of the (first) largest value of e over its RVars, followed
 * by that value, as a Tuple: (rv_0, ..., rv_n-1, value). */
Tuple argmax(Expr e, const std::string &name = "argmax");
Tuple argmin(Expr e, const std::string &name = "argmin");

}  // namespace loom
