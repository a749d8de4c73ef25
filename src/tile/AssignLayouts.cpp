// Layout assignment (see the header).
#include "tile/AssignLayouts.h"

#include <algorithm>
#include <map>
#include <memory>

#include "loom/Error.h"
#include "tile/Layout.h"

namespace loom {
namespace internal {
namespace tile {

namespace {

using LayoutPtr = std::shared_ptr<const LinearLayout>;

void set_layout(TileType *t, const LinearLayout &l, const std::string &name) {
    t->layout = std::make_shared<const LinearLayout>(l);
    t->layout_name = name;
}

/** The layout of operand `which` (0: A, 1: B) of the instruction's dot,
 * for a tile of t's shape. */
void set_operand_layout(TileType *t, const TensorInstruction *instruction, int which,
                        WarpGrid warps) {
    const int rows = t->shape[0], cols = t->shape[1];
    if (which == 0) {
        set_layout(t, instruction->a_layout(rows, cols, warps.m, warps.n), "mma_a");
    } else {
        set_layout(t, instruction->b_layout(rows, cols, warps.m, warps.n), "mma_b");
    }
}

/** Where an op reads an operand in a layout other than the one the op
 * needs (a map's operands in its result's, a broadcast's in the slice of
 * its result's, a dot's in the instruction's), a convert_layout just
 * before it. */
void insert_conversions(std::vector<TileStmt> &body, std::map<std::string, TileType> &layout_of,
                        const TensorInstruction *instruction, WarpGrid warps, int *next) {
    std::vector<TileStmt> out;
    for (TileStmt &s : body) {
        if (s.loop) {
            insert_conversions(s.loop->body, layout_of, instruction, warps, next);
            out.push_back(s);
            continue;
        }
        TileOp &o = *s.op;
        for (size_t i = 0; i < o.operands.size(); i++) {
            auto have = layout_of.find(o.operands[i]);
            if (have == layout_of.end() || have->second.space != MemorySpace::Registers) continue;
            TileType need = have->second;
            if (o.kind == TileOpKind::Map) {
                need.layout = o.type.layout;
                need.layout_name = o.type.layout_name;
            } else if (o.kind == TileOpKind::Broadcast) {
                set_layout(&need, slice_layout(*o.type.layout, o.axis),
                           "slice(" + o.type.layout_name + ")");
            } else if (o.kind == TileOpKind::Dot && i < 2) {
                set_operand_layout(&need, instruction, int(i), warps);
            } else if (o.kind == TileOpKind::Dot) {
                need.layout = o.type.layout;
                need.layout_name = o.type.layout_name;
            } else {
                continue;
            }
            if (*need.layout == *have->second.layout) continue;
            const std::string converted = o.operands[i] + ".cvt" + std::to_string((*next)++);
            out.push_back(
                op_stmt(make_op(TileOpKind::ConvertLayout, converted, need, {o.operands[i]})));
            layout_of[converted] = need;
            o.operands[i] = converted;
        }
        out.push_back(s);
    }
    body = out;
}
}  // namespace

namespace {

/** Union-find over value names: the 1-D values a map joins, which must
 * share a layout. */
struct Classes {
    std::map<std::string, std::string> parent;
    std::string find(const std::string &v) {
        auto it = parent.find(v);
        if (it == parent.end() || it->second == v) return v;
        return it->second = find(it->second);
    }
    void join(const std::string &a, const std::string &b) { parent[find(a)] = find(b); }
};

}  // namespace

void assign_layouts(TileProgram &p, WarpGrid warps, const TensorInstruction *instruction) {
    p.num_warps = warps.m * warps.n;
    std::map<std::string, int> operand_of;  // 0: A, 1: B
    Classes classes;
    for_each_op(p.body, [&](TileOp &o) {
        if (o.kind == TileOpKind::Dot) {
            internal_assert(instruction) << "dot " << o.result << " without its instruction";
            operand_of[o.operands[0]] = 0;
            operand_of[o.operands[1]] = 1;
        }
        if (o.kind == TileOpKind::Map && o.type.shape.size() == 1) {
            for (const std::string &x : o.operands) classes.join(x, o.result);
        }
    });
    // Every 2-D register tile takes the anchor layout (the accumulator's
    // with a tensorized dot, else blocked), except a load feeding a dot,
    // which is loaded straight into the instruction's operand layout.
    // One blocked layout for every type, so that a cast needs no
    // conversion: 16 bytes of the widest type per thread where a row holds
    // them.
    int widest = 1;
    for_each_op(p.body, [&](TileOp &o) {
        if (o.type.space == MemorySpace::Registers && o.type.shape.size() == 2) {
            widest = std::max(widest, o.type.elem.bytes());
        }
    });
    auto anchor = [&](const TileType &t, TileType *into) {
        const int rows = t.shape[0], cols = t.shape[1];
        if (instruction) {
            set_layout(into, instruction->accumulator_layout(rows, cols, warps.m, warps.n),
                       "mma_accumulator");
        } else {
            const int vector = std::max(1, std::min(cols, 16 / widest));
            set_layout(into, blocked_layout(rows, cols, vector, p.num_warps), "blocked");
        }
    };
    // 1-D tiles take the slice of the 2-D layout they are reduced from or
    // broadcast into (a reduction's first), else a blocked one.
    std::map<std::string, TileType> slice_of;  // by class
    auto slice_type = [&](const TileType &two_d, int axis) {
        TileType t;
        set_layout(&t, slice_layout(*two_d.layout, axis), "slice(" + two_d.layout_name + ")");
        return t;
    };
    std::map<std::string, TileType> layout_of;  // each value's, as assigned
    for (int pass = 0; pass < 2; pass++) {
        // Reductions first (pass 0), then broadcasts (pass 1) for 1-D
        // values no reduction reaches.
        for_each_op(p.body, [&](TileOp &o) {
            if (o.result.empty() || o.type.space == MemorySpace::Shared) return;
            if (pass == 1) {
                if (o.kind == TileOpKind::Broadcast) {
                    const std::string c = classes.find(o.operands[0]);
                    if (!slice_of.count(c)) slice_of[c] = slice_type(o.type, o.axis);
                }
                return;
            }
            if (o.type.shape.size() == 2) {
                auto operand = operand_of.find(o.result);
                if (operand != operand_of.end() && o.kind == TileOpKind::Load) {
                    set_operand_layout(&o.type, instruction, operand->second, warps);
                } else {
                    anchor(o.type, &o.type);
                }
                layout_of[o.result] = o.type;
            } else if (o.kind == TileOpKind::Reduce) {
                const std::string c = classes.find(o.result);
                if (!slice_of.count(c))
                    slice_of[c] = slice_type(layout_of.at(o.operands[0]), o.axis);
            }
        });
    }
    for_each_op(p.body, [&](TileOp &o) {
        if (o.result.empty() || o.type.space == MemorySpace::Shared || o.type.shape.size() != 1) {
            return;
        }
        auto s = slice_of.find(classes.find(o.result));
        if (s != slice_of.end()) {
            o.type.layout = s->second.layout;
            o.type.layout_name = s->second.layout_name;
        } else {
            set_layout(&o.type, blocked_layout_1d(o.type.shape[0], p.num_warps), "blocked");
        }
        layout_of[o.result] = o.type;
    });
    int next = 0;
    insert_conversions(p.body, layout_of, instruction, warps, &next);
}

}  // namespace tile
}  // namespace internal
}  // namespace loom
