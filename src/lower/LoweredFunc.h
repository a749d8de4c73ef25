// The result of lowering: a flat loop-IR function over buffer and scalar
// arguments, ready for a backend.
//
// Conventions the backends rely on:
//  - The entry point is `int32_t name(void **args)`. args[i] points to a
//    loom_buffer_t for a buffer argument and to the scalar value for a scalar.
//    It returns 0, or a negative loom error code after reporting the message
//    through loom_error_begin/append/end.
//  - Inside the body, a buffer argument `b` is named by Loads and Stores as
//    `b` (its host pointer; indices are in elements from that pointer) and its
//    descriptor fields are the Int(32) variables `b.min.K`, `b.extent.K`,
//    `b.stride.K` for each dimension K; `b.buffer` is the loom_buffer_t*
//    (Handle). For the argument checks (ArgumentChecks.h) there are also
//    `b.is_null` and `b.host_is_null` (Bool: the descriptor / its host
//    pointer is null; for a buffer only GPU kernels use, both its pointers
//    are), `b.gpu_memory_alone` (Bool: the CPU code uses the buffer, and
//    only its device pointer is set), `b.type.code`, `b.type.bits`, `b.type.lanes` and
//    `b.dimensions` (Int(32), as the caller's descriptor says),
//    `b.dim_is_null` (Bool), and `b.host_address` (Int(64)): the host
//    pointer as an integer where the CPU code uses it, else 0 (a GPU
//    kernel's launch checks the GPU address it passes). For the overlap
//    checks (BufferAliasing.h), `b.host_pointer` and `b.device_pointer`
//    (Int(64)) are the descriptor's two pointers as integers. Reading
//    these never faults: for a null descriptor they are all zero, and for a
//    descriptor whose dimensions differ from the argument's (or whose dim
//    pointer is null) every `b.min/extent/stride.K` is zero.
//    A scalar argument `p` is the variable `p`.
//  - A Handle-typed piece of an error message is a C string.
//  - No Provide, Realize or Func/Image Call remains. Allocate nodes own their
//    memory until the end of their body.
#pragma once

#include <string>
#include <vector>

#include "lang/Function.h"
#include "loom/IR.h"
#include "loom/Param.h"
#include "loom/Pipeline.h"

namespace loom {
namespace internal {

struct LoweredArgument {
    std::string name;
    bool is_buffer = false;
    Type type;           // element type of a buffer, or the scalar's type
    int dimensions = 0;  // buffers only
    // Buffers: the promised alignment in bytes of the address of the element
    // at the mins (0: none). Code generation checks it on the address its
    // code uses (the host's, or the GPU's for a kernel).
    int host_alignment = 0;
    bool is_output = false;
};

struct LoweredFunc {
    std::string name;
    std::vector<LoweredArgument> args;
    Stmt body;
};

/** The LoweredFunc of a lowered body: its arguments are the inputs, in
 * order, then one buffer per output of each output Func. */
LoweredFunc make_lowered_func(const std::string &name, const Stmt &body,
                              const std::vector<ParameterPtr> &params,
                              const std::vector<FunctionPtr> &outputs);

/** The arguments of f as CompiledPipeline::arguments() lists them. */
std::vector<Argument> public_arguments(const LoweredFunc &f);

}  // namespace internal
}  // namespace loom
