// The registry of tensor-core instructions that tensorize can map a tile
// contraction onto. Each entry says what the instruction computes, as a
// small Loom expression over placeholder calls A(m, k), B(k, n) and C(m, n),
// and how it is laid out and emitted: its shape, its operand types, the
// fragment layouts of a warp's operands, and the CUDA function of
// src/codegen/cuda that issues it. wgmma (sm_90a) and AMD's MFMA are
// further entries: tensorize matches semantics, not names.
#pragma once

#include <string>
#include <vector>

#include "loom/Expr.h"
#include "tile/Layout.h"

namespace loom {
namespace internal {
namespace tile {

struct TensorInstruction {
    std::string name;  // as tensorize names it, e.g. "mma.m16n8k16"
    std::string ptx;   // the instruction, for messages and docs
    int m = 0, n = 0, k = 0;
    Type a_type, b_type, accumulator_type;
    int min_sm = 0;  // the lowest CUDA capability that has it
    /** C(m, n) + A(m, k) * B(k, n) in the instruction's types, with the
     * placeholders as Extern calls named "A", "B" and "C". */
    Expr semantics;
    /** The layouts of a block tile's values computed with it by warps_m x
     * warps_n warps: the accumulator (rows x cols), A (rows x k) and B
     * (k x cols). */
    LinearLayout (*accumulator_layout)(int rows, int cols, int warps_m, int warps_n);
    LinearLayout (*a_layout)(int rows, int k, int warps_m, int warps_n);
    LinearLayout (*b_layout)(int k, int cols, int warps_m, int warps_n);
};

/** Every instruction in the registry. */
const std::vector<TensorInstruction> &tensor_instructions();

/** The names tensorize accepts, for messages: "mma.m16n8k16, ...". */
std::string tensor_instruction_names();

/** What a contraction's update value binds the placeholders to, when it
 * computes what the instruction computes. */
struct ContractionMatch {
    const TensorInstruction *instruction = nullptr;
    Expr a, b, c;  // the update's subexpressions in place of A, B and C
};

/** Matches an update's value (`c + a * b` in the Func's terms) against
 * the semantics of every instruction named `name`, up to commutation of +
 * and *: on success, the instruction and the bindings; else no
 * instruction and *why says what differs (the update's form, or its
 * types against the instruction's). With round_operands, where no exact
 * match exists, one float32 factor may bind an operand as its rounding to
 * the operand's type (the other factor chooses which entry). */
ContractionMatch match_contraction(const std::string &name, const Expr &update, std::string *why,
                                   bool round_operands = false);

}  // namespace tile
}  // namespace internal
}  // namespace loom
