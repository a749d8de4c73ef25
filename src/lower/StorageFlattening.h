// Storage flattening: turns multi-dimensional Realize/Provide/Call into flat
// Allocate/Store/Load with explicit strides.
#pragma once

#include <string>

#include "lower/ScheduleFunctions.h"

namespace loom {
namespace internal {

/** Every Realize becomes an Allocate per Tuple element, dense in NumPy order
 * (last dimension contiguous), with the symbols buf.min.K, buf.extent.K and
 * buf.stride.K defined around it; outputs and inputs use the same symbols,
 * bound from their buffer descriptors. */
Stmt storage_flattening(const Stmt &s, const LoweringEnv &env);

/** The flat buffer of element `index` of a Func with `tuple_size` values:
 * the Func's name for a single value, else name.index. */
std::string buffer_name(const std::string &func, int index, int tuple_size);

}  // namespace internal
}  // namespace loom
