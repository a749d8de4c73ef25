// Staging of dot operands through shared memory (see the header).
#include "tile/StageOperands.h"

#include <map>
#include <memory>

#include "ir/Substitute.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {
namespace tile {

namespace {

/** The async copy of load `o` into its shared value, at the reduction
 * step `step` (an Expr of the loop's variable), into `slot`. */
TileOp copy_of(const TileOp &load, const TileType &shared, const std::string &loop_var,
               const Expr &step, const Expr &slot) {
    TileOp c = load;
    c.kind = TileOpKind::AsyncCopy;
    c.result = load.result + "_shared";
    c.type = shared;
    c.slot = slot;
    for (Expr &e : c.origin) e = substitute(loop_var, step, e);
    for (Expr &e : c.bounds) e = substitute(loop_var, step, e);
    return c;
}

void stage_loop(TileLoop &loop, std::vector<TileStmt> *prologue, int stages) {
    std::map<std::string, const TileOp *> loads;
    std::map<std::string, bool> operand;
    for (const TileStmt &s : loop.body) {
        if (!s.op) continue;
        if (s.op->kind == TileOpKind::Load) loads[s.op->result] = s.op.get();
        if (s.op->kind == TileOpKind::Dot) {
            operand[s.op->operands[0]] = operand[s.op->operands[1]] = true;
        }
    }
    std::vector<TileOp> staged;  // the operand loads, in order
    for (const TileStmt &s : loop.body) {
        if (s.op && s.op->kind == TileOpKind::Load && operand.count(s.op->result)) {
            staged.push_back(*s.op);
        }
    }
    if (staged.empty()) return;
    std::map<std::string, TileType> shared;
    for (const TileOp &l : staged) {
        internal_assert(l.type.shape.size() == 2 && l.type.elem.bits == 16)
            << "staging: operand " << l.result << " is not a 2-D tile of 16-bit elements";
        TileType t = l.type;
        t.space = MemorySpace::Shared;
        t.slots = stages;
        // Shared rows run the way global memory is contiguous, so that the
        // copy moves 16-byte chunks: down the tile's columns for an operand
        // stored transposed (its last buffer dimension follows tile axis 0).
        const std::vector<int> axes = access_axes(l, 2);
        const bool transposed = !axes.empty() && axes.back() == 0;
        t.layout = std::make_shared<const LinearLayout>(
            transposed ? swizzled_shared_layout_transposed(t.shape[0], t.shape[1], t.elem.bytes())
                       : swizzled_shared_layout(t.shape[0], t.shape[1], t.elem.bytes()));
        t.layout_name = transposed ? "swizzled_transposed" : "swizzled";
        shared[l.result] = t;
    }
    const Expr k = Variable::make(Int(32), loop.var);
    const TileOp commit = make_op(TileOpKind::AsyncCommit), barrier = make_op(TileOpKind::Barrier);
    TileOp wait = make_op(TileOpKind::AsyncWait);
    auto issue = [&](std::vector<TileStmt> *out, const Expr &step, const Expr &slot) {
        for (const TileOp &l : staged)
            out->push_back(op_stmt(copy_of(l, shared[l.result], loop.var, step, slot)));
        out->push_back(op_stmt(commit));
    };
    std::vector<TileStmt> body;
    if (stages == 1) {
        issue(&body, k, Expr());
        body.push_back(op_stmt(wait));
        body.push_back(op_stmt(barrier));
    } else {
        for (int s = 0; s < stages - 1; s++) issue(prologue, loop.min + s, Expr(s));
        wait.pending = stages - 2;
        body.push_back(op_stmt(wait));
        body.push_back(op_stmt(barrier));
    }
    const Expr slot = stages == 1 ? Expr() : (k - loop.min) % stages;
    for (const TileStmt &s : loop.body) {
        if (s.op && s.op->kind == TileOpKind::Load && operand.count(s.op->result)) {
            TileOp convert = make_op(TileOpKind::ConvertLayout, s.op->result, s.op->type,
                                     {s.op->result + "_shared"});
            convert.slot = slot;
            body.push_back(op_stmt(convert));
        } else {
            body.push_back(s);
        }
    }
    if (stages == 1) {
        // The next step's copies overwrite the tiles this one reads.
        body.push_back(op_stmt(barrier));
    } else {
        issue(&body, k + (stages - 1), (k - loop.min + (stages - 1)) % stages);
    }
    loop.body = body;
}

void stage(std::vector<TileStmt> &body, int stages) {
    std::vector<TileStmt> out;
    for (TileStmt &s : body) {
        if (s.loop) {
            stage(s.loop->body, stages);
            std::vector<TileStmt> prologue;
            stage_loop(*s.loop, &prologue, stages);
            out.insert(out.end(), prologue.begin(), prologue.end());
        }
        out.push_back(s);
    }
    body = out;
}

}  // namespace

void stage_operands(TileProgram &p, int stages) {
    internal_assert(stages >= 1) << "staging: " << stages << " stages";
    stage(p.body, stages);
}

}  // namespace tile
}  // namespace internal
}  // namespace loom
