// What a pipeline's buffer arguments promise about themselves, and what the
// compiler does with it: Dimension::set_extent and set_min fix sizes at
// compile time (the constants replace the descriptor's symbols), and
// set_stride_multiple and set_host_alignment are facts that let code
// generation prove vector accesses aligned. Each promise is checked when the
// pipeline runs, so a buffer that breaks one is refused with a message
// naming it, before anything relies on it: by the assertions made here,
// and for a GPU kernel's buffer by its launch, which checks the GPU address.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/Scope.h"
#include "lang/Function.h"
#include "loom/IR.h"

namespace loom {
namespace internal {

/** The buffers that can carry promises: the input buffers among `params`,
 * then the output buffers of `outputs` that were given any
 * (Func::output_buffer). */
std::vector<ParameterPtr> promising_buffers(const std::vector<ParameterPtr> &params,
                                            const std::vector<FunctionPtr> &outputs);

/** The constant of each fixed extent and min, by its symbol's name. */
std::map<std::string, Expr> fixed_sizes(const std::vector<ParameterPtr> &buffers);

/** Replaces each fixed extent and min's symbol by its constant. Run before
 * bounds inference (so loops and storage sized by them are constant) and
 * again after storage flattening, whose indices name the mins anew. */
Stmt substitute_fixed_sizes(const Stmt &s, const std::vector<ParameterPtr> &buffers);

/** Prepends to s the run-time checks of the fixed extents and mins, the
 * stride multiples (the symbols still name the buffers' actual values
 * there) and the host alignments, of the address `b.host_address`
 * (LoweredFunc.h). */
Stmt check_buffer_promises(const Stmt &s, const std::vector<ParameterPtr> &buffers);

/** The message of a failed check of a buffer's promised host alignment:
 * `address` is where its first element is, `where` says which memory that
 * is in ("on the host", "on the GPU"). */
Expr host_alignment_message(const std::string &buffer, bool is_output, int alignment,
                            const std::string &where, const Expr &address);

/** The congruences the promised stride multiples give the stride symbols. */
Scope<ModulusRemainder> promised_congruences(const std::vector<ParameterPtr> &buffers);

}  // namespace internal
}  // namespace loom
