// Internal entry points of the reference interpreter (see loom/Interpreter.h
// for the semantics).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lang/Function.h"
#include "loom/Buffer.h"
#include "loom/IR.h"

namespace loom {
namespace internal {

/** Fills `buffers` (one per output of each Func in `outputs`, in order) with
 * the values of the Funcs over each buffer's region. */
void interpret_functions(const std::vector<FunctionPtr> &outputs,
                         const std::vector<RawBuffer> &buffers);

/** Evaluates a scalar Expr whose free Variables are bound in `env` to
 * constants, with the interpreter's exact semantics (Params read their bound
 * values; Func calls and Image reads are evaluated too). Returns a constant
 * (IntImm, UIntImm or FloatImm) of e's type. Handy as an oracle for the
 * simplifier and for constant folding. */
Expr evaluate_expr(const Expr &e, const std::map<std::string, Expr> &env = {});

/** The element of type t at p, as a double, read as the interpreter reads
 * buffers. */
double load_element(Type t, const uint8_t *p);
/** Writes x at p as an element of type t, rounded (or wrapped) as the
 * interpreter's stores round it. */
void store_element(Type t, uint8_t *p, double x);

}  // namespace internal
}  // namespace loom
