// Layout assignment (see the header).
#include "tile/AssignLayouts.h"

#include <algorithm>
#include <map>
#include <memory>

#include "loom/Error.h"

namespace loom {
namespace internal {
namespace tile {

namespace {

using LayoutPtr = std::shared_ptr<const LinearLayout>;

void set_layout(TileType *t, const LinearLayout &l, const std::string &name) {
    t->layout = std::make_shared<const LinearLayout>(l);
    t->layout_name = name;
}

template <typename F> void for_each_op(std::vector<TileStmt> &body, F f) {
    for (TileStmt &s : body) {
        if (s.loop) {
            for_each_op(s.loop->body, f);
        } else {
            f(*s.op);
        }
    }
}

}  // namespace

void assign_layouts(TileProgram &p, WarpGrid warps, const TensorInstruction *instruction) {
    p.num_warps = warps.m * warps.n;
    // The dots' operands, by value name: they take the instruction's
    // operand layouts; every other register tile the anchor layout.
    std::map<std::string, int> operand_of;  // 0: A, 1: B
    for_each_op(p.body, [&](TileOp &o) {
        if (o.kind == TileOpKind::Dot) {
            internal_assert(instruction) << "dot " << o.result << " without its instruction";
            operand_of[o.operands[0]] = 0;
            operand_of[o.operands[1]] = 1;
        }
    });
    for_each_op(p.body, [&](TileOp &o) {
        if (o.result.empty() || o.type.space == MemorySpace::Shared) return;
        internal_assert(o.type.shape.size() == 2)
            << "layout assignment: " << o.result << " is not a 2-D tile";
        const int rows = o.type.shape[0], cols = o.type.shape[1];
        auto operand = operand_of.find(o.result);
        if (operand != operand_of.end()) {
            if (operand->second == 0) {
                set_layout(&o.type, instruction->a_layout(rows, cols, warps.m, warps.n), "mma_a");
            } else {
                set_layout(&o.type, instruction->b_layout(rows, cols, warps.m, warps.n), "mma_b");
            }
        } else if (instruction) {
            set_layout(&o.type, instruction->accumulator_layout(rows, cols, warps.m, warps.n),
                       "mma_accumulator");
        } else {
            // 16 bytes per thread where a row holds them.
            const int vector = std::max(1, std::min(cols, 16 / std::max(1, o.type.elem.bytes())));
            set_layout(&o.type, blocked_layout(rows, cols, vector, p.num_warps), "blocked");
        }
    });
}

}  // namespace tile
}  // namespace internal
}  // namespace loom
