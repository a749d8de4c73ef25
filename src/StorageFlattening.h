// Storage flattening: turns multi-dimensional Realize/Provide/Call into flat
// Allocate/Store/Load with explicit strides.
#pragma once

#include "ScheduleFunctions.h"

namespace loom {
namespace internal {

/** Every Realize becomes an Allocate per Tuple element, dense in NumPy order
 * (last dimension contiguous), with the symbols buf.min.K, buf.extent.K and
 * buf.stride.K defined around it; outputs and inputs use the same symbols,
 * bound from their buffer descriptors. */
Stmt storage_flattening(const Stmt &s, const LoweringEnv &env);

}  // namespace internal
}  // namespace loom
