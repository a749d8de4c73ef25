// The algorithm side of a Func: its pure definition and update definitions,
// independent of any schedule.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/IR.h"
#include "loom/Var.h"

namespace loom {
namespace internal {

/** One definition of a Func: values (one per Tuple element) written at args.
 * For the pure definition the args are the pure Vars; for an update they are
 * arbitrary Exprs over the pure Vars and the RVars of `rdom`. */
struct Definition {
    std::vector<Expr> args;
    std::vector<Expr> values;
    ReductionDomainPtr rdom;  // null for definitions with no reduction domain
    bool defined() const { return !values.empty(); }
};

struct FunctionContents {
    std::string name;
    std::vector<std::string> args;   // pure Var names, outermost first
    std::vector<Type> output_types;  // one per Tuple element
    Definition init;
    std::vector<Definition> updates;
    // An inline reduction (sum, maximum, ...) made this Func.
    bool is_inline_reduction = false;
    // Schedule::in made this Func, a copy of the input buffer of this name:
    // messages about it name the buffer the user wrote.
    std::string copy_of_input;
    // The promises about the buffers its outputs are written into when it is
    // a pipeline output (Func::output_buffer), by output; made on first use.
    std::vector<ParameterPtr> output_buffers;
};

/** A Func made by lowering (a copy of a user's Func, the wrappers and
 * partials reduction fusion derives), a copy of `from`. While a
 * FuncsMadeByLowering is open on this thread it records the Func. */
FunctionPtr make_lowered_function(const FunctionContents &from = FunctionContents());

/** Records the Funcs made by lowering while it lives, and when it ends
 * (lowering returns or throws) empties their definitions. Funcs that
 * reduction fusion makes call each other (a tile partial and its member
 * read each other's running values, a wrapper calls itself), so they own
 * each other through the shared pointers of their calls: a cycle that
 * would outlive the compile. Nothing uses those Funcs after lowering. An
 * enclosing one is handed the records of those it encloses when they end
 * (a test watching a compile). */
class FuncsMadeByLowering {
  public:
    FuncsMadeByLowering();
    ~FuncsMadeByLowering();
    FuncsMadeByLowering(const FuncsMadeByLowering &) = delete;
    FuncsMadeByLowering &operator=(const FuncsMadeByLowering &) = delete;
    const std::vector<std::weak_ptr<FunctionContents>> &funcs() const { return made; }

  private:
    friend FunctionPtr make_lowered_function(const FunctionContents &);
    std::vector<std::weak_ptr<FunctionContents>> made;
    FuncsMadeByLowering *enclosing;
};

/** Every Func reachable from `outputs` by calls, by name. Two different Funcs
 * sharing a name are a CompileError. */
std::map<std::string, FunctionPtr> find_transitive_calls(const std::vector<FunctionPtr> &outputs);

/** The Funcs called directly by f's definitions, by name. */
std::map<std::string, FunctionPtr> find_direct_calls(const FunctionPtr &f);

/** Funcs in an order where every Func comes after those it calls; the outputs
 * come last. A cycle of calls between different Funcs is a CompileError, or
 * with `cycles_allowed` (Funcs made by reduction fusion, where a tile partial
 * and its member read each other's running values) a call that closes one
 * is passed over. */
std::vector<std::string> realization_order(const std::vector<FunctionPtr> &outputs,
                                           const std::map<std::string, FunctionPtr> &env,
                                           bool cycles_allowed = false);

/** Input buffers and scalar params read by the pipeline, in first-use order:
 * those of the Funcs' definitions, then any other that `schedule` (their
 * loop nest) uses, such as a Param given as a split factor. */
std::vector<ParameterPtr> find_parameters(const std::map<std::string, FunctionPtr> &env,
                                          const Stmt &schedule = Stmt());

/** All RVars of a definition, outermost first. */
std::vector<ReductionVariable> rvars_of(const Definition &d);

}  // namespace internal
}  // namespace loom
