// Operators and math functions on Expr, and the type promotion rules.
//
// Promotion rules for a binary operator on operands of types A and B:
//  1. Equal types: unchanged.
//  2. One side is a C++ int/float literal (an IntImm/UIntImm/FloatImm that was
//     built from a literal): it is converted to the other side's type; a
//     literal that does not fit (e.g. 300 for a uint8, 0.5 for an int) is an
//     error.
//  3. float vs int: the int side converts to the float type.
//  4. float vs float: the narrower converts to the wider (bfloat16 and float16
//     meet at float32).
//  5. int vs int: the narrower converts to the wider; at equal width a signed
//     and an unsigned meet at the unsigned type.
// Integer division and modulo round toward negative infinity: (-7) / 2 == -4 and
// (-7) % 2 == 1; the result of % has the sign of the divisor. Dividing an
// integer by zero yields zero (no trap). Unsigned integers and signed ones
// narrower than 32 bits wrap on overflow; signed 32- and 64-bit arithmetic
// must not overflow (the compiler assumes it does not, as Halide does).
#pragma once

#include <vector>

#include "loom/Expr.h"
#include "loom/IR.h"

namespace loom {

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);
Expr operator&(Expr a, Expr b);
Expr operator|(Expr a, Expr b);
Expr operator^(Expr a, Expr b);
Expr operator~(Expr a);
Expr operator<<(Expr a, Expr b);
Expr operator>>(Expr a, Expr b);
Expr &operator+=(Expr &a, Expr b);
Expr &operator-=(Expr &a, Expr b);
Expr &operator*=(Expr &a, Expr b);
Expr &operator/=(Expr &a, Expr b);

Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr clamp(Expr x, Expr lo, Expr hi);
Expr select(Expr condition, Expr true_value, Expr false_value);
/** select(c1, v1, c2, v2, ..., default). */
Expr select(Expr c1, Expr v1, Expr c2, Expr v2, Expr default_value);
Expr abs(Expr x);
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr rsqrt(Expr x);
Expr pow(Expr x, Expr y);
Expr tanh(Expr x);
Expr sin(Expr x);
Expr cos(Expr x);
Expr floor(Expr x);
Expr ceil(Expr x);
Expr round(Expr x);  // to nearest, ties to even
Expr erf(Expr x);

Expr cast(Type t, Expr x);
template <typename T> Expr cast(Expr x) { return cast(type_of<T>(), std::move(x)); }
/** Reinterprets the bits of x as type t (equal total width). */
Expr reinterpret(Type t, Expr x);
template <typename T> Expr reinterpret(Expr x) { return reinterpret(type_of<T>(), std::move(x)); }

/** The largest / smallest finite value of a type (infinity for floats). */
Expr type_max(Type t);
Expr type_min(Type t);

namespace internal {

/** A constant of type t (broadcast if t is a vector). */
Expr make_const(Type t, int64_t v);
Expr make_const(Type t, uint64_t v);
Expr make_const(Type t, int v);
Expr make_const(Type t, unsigned v);
Expr make_const(Type t, double v);
Expr make_zero(Type t);
Expr make_one(Type t);
Expr const_true(int lanes = 1);
Expr const_false(int lanes = 1);

/** Whether e is a constant (a scalar immediate, or a broadcast of one). */
bool is_const(const Expr &e);
bool is_const(const Expr &e, int64_t v);
bool is_const_zero(const Expr &e);
bool is_const_one(const Expr &e);
/** Whether e is a positive / negative constant. */
bool is_positive_const(const Expr &e);
bool is_negative_const(const Expr &e);
/** If e is a scalar int or uint constant (or broadcast of one) that fits in
 * int64, returns a pointer to its value, else null. */
const int64_t *as_const_int(const Expr &e);
const uint64_t *as_const_uint(const Expr &e);
const double *as_const_float(const Expr &e);
bool is_pure(const Expr &e);
/** Whether e reads memory: a Load, or a call to a Func or an input buffer
 * (a load once storage is flattened). */
bool reads_memory(const Expr &e);
/** Whether e calls an intrinsic with side effects (loads do not count). */
bool has_side_effects(const Expr &e);

/** Converts both operands to a common type by the rules above. `op` names
 * the operator for the error message. */
void match_types(Expr &a, Expr &b, const char *op);

/** Integer division and modulo with floor semantics, and Euclidean helpers,
 * on constants: used by the simplifier and the interpreter. */
int64_t div_imp(int64_t a, int64_t b);
int64_t mod_imp(int64_t a, int64_t b);

/** A call to a pure intrinsic or extern math function. */
Expr make_intrinsic(Type t, const char *name, const std::vector<Expr> &args);

/** likely(e): a hint that e is usually true, for loop partitioning. */
Expr likely(Expr e);

/** Builds the message of a runtime assertion: pieces are StringImms or
 * integer Exprs printed in order. */
Expr error_message(const std::vector<Expr> &pieces);

}  // namespace internal
}  // namespace loom
