// Staging of dot operands through shared memory (see the header).
#include "tile/StageOperands.h"

#include <map>
#include <memory>

#include "ir/Substitute.h"
#include "loom/Error.h"
#include "loom/IROperator.h"
#include "tile/LoopInvariants.h"

namespace loom {
namespace internal {
namespace tile {

namespace {

/** The async copy of load `o` into its shared value, at the reduction
 * step `step` (an Expr of the loop's variable), into `slot`. */
TileOp copy_of(const TileOp &load, const std::string &name, const TileType &shared,
               const std::string &loop_var, const Expr &step, const Expr &slot) {
    TileOp c = load;
    c.kind = TileOpKind::AsyncCopy;
    c.result = name;
    c.type = shared;
    c.slot = slot;
    for (Expr &e : c.origin) e = substitute(loop_var, step, e);
    for (Expr &e : c.bounds) e = substitute(loop_var, step, e);
    return c;
}

/** The shared tiles of the loops staged before, in the same list: a loop
 * after them reuses those of its types, once they are drained. */
struct SharedPool {
    std::vector<std::pair<std::string, TileType>> tiles;
};

bool same_shared_tile(const TileType &a, const TileType &b) {
    return a.elem == b.elem && a.shape == b.shape && a.slots == b.slots &&
           a.layout_name == b.layout_name;
}

void stage_loop(TileLoop &loop, std::vector<TileStmt> *prologue, int stages, SharedPool *pool) {
    std::map<std::string, bool> operand;
    for (const TileStmt &s : loop.body) {
        if (s.op && s.op->kind == TileOpKind::Dot) {
            operand[s.op->operands[0]] = operand[s.op->operands[1]] = true;
        }
    }
    // The operand loads, in order: those of every step, and those the
    // same at every step (copied once, before the loop, into one slot).
    std::vector<TileOp> staged, invariant;
    for (const TileStmt &s : loop.body) {
        if (s.op && s.op->kind == TileOpKind::Load && operand.count(s.op->result)) {
            const bool once = is_loop_invariant_load(*s.op, loop.var, loop.body);
            (once ? invariant : staged).push_back(*s.op);
        }
    }
    if (staged.empty() && invariant.empty()) return;
    std::map<std::string, TileType> shared;
    std::map<std::string, std::string> shared_name;
    std::vector<bool> taken(pool->tiles.size(), false);
    const size_t pooled = pool->tiles.size();
    for (const std::vector<TileOp> *loads : {&staged, &invariant}) {
        for (const TileOp &l : *loads) {
            internal_assert(l.type.shape.size() == 2 && l.type.elem.bits == 16)
                << "staging: operand " << l.result << " is not a 2-D tile of 16-bit elements";
            TileType t = l.type;
            t.space = MemorySpace::Shared;
            t.slots = loads == &staged ? stages : 1;
            // Shared rows run the way global memory is contiguous, so that
            // the copy moves 16-byte chunks: down the tile's columns for an
            // operand stored transposed (its last buffer dimension follows
            // tile axis 0).
            const std::vector<int> axes = access_axes(l, 2);
            const bool transposed = !axes.empty() && axes.back() == 0;
            t.layout = std::make_shared<const LinearLayout>(
                transposed
                    ? swizzled_shared_layout_transposed(t.shape[0], t.shape[1], t.elem.bytes())
                    : swizzled_shared_layout(t.shape[0], t.shape[1], t.elem.bytes()));
            t.layout_name = transposed ? "swizzled_transposed" : "swizzled";
            shared[l.result] = t;
            size_t n = 0;
            while (n < pooled && (taken[n] || !same_shared_tile(pool->tiles[n].second, t))) n++;
            if (n < pooled) {
                taken[n] = true;
                shared_name[l.result] = pool->tiles[n].first;
            } else {
                shared_name[l.result] = l.result + "_shared";
                pool->tiles.push_back({shared_name[l.result], t});
            }
        }
    }
    if (pooled > 0) {
        // The loops before may still have copies in flight (prefetches
        // past their ends) into the tiles this one reuses, and warps
        // reading them.
        prologue->push_back(op_stmt(make_op(TileOpKind::AsyncWait)));
        prologue->push_back(op_stmt(make_op(TileOpKind::Barrier)));
    }
    const Expr k = Variable::make(Int(32), loop.var);
    const TileOp commit = make_op(TileOpKind::AsyncCommit), barrier = make_op(TileOpKind::Barrier);
    TileOp wait = make_op(TileOpKind::AsyncWait);
    auto issue = [&](std::vector<TileStmt> *out, const Expr &step, const Expr &slot) {
        for (const TileOp &l : staged) {
            out->push_back(
                op_stmt(copy_of(l, shared_name[l.result], shared[l.result], loop.var, step, slot)));
        }
        out->push_back(op_stmt(commit));
    };
    // The invariant copies join the first group the prologue commits.
    for (const TileOp &l : invariant) {
        prologue->push_back(op_stmt(
            copy_of(l, shared_name[l.result], shared[l.result], loop.var, loop.min, Expr())));
    }
    std::vector<TileStmt> body;
    if (staged.empty()) {
        prologue->push_back(op_stmt(commit));
        prologue->push_back(op_stmt(wait));
        prologue->push_back(op_stmt(barrier));
    } else if (stages == 1) {
        if (!invariant.empty()) prologue->push_back(op_stmt(commit));
        issue(&body, k, Expr());
        body.push_back(op_stmt(wait));
        body.push_back(op_stmt(barrier));
    } else {
        for (int s = 0; s < stages - 1; s++) issue(prologue, loop.min + s, Expr(s));
        wait.pending = stages - 2;
        body.push_back(op_stmt(wait));
        body.push_back(op_stmt(barrier));
        // The slot of the tile stages - 1 ahead is the one the previous
        // step read, which every warp is done with past the barrier: its
        // copy runs under this step's work.
        issue(&body, k + (stages - 1), (k - loop.min + (stages - 1)) % stages);
    }
    const Expr slot = stages == 1 ? Expr() : (k - loop.min) % stages;
    for (const TileStmt &s : loop.body) {
        if (s.op && s.op->kind == TileOpKind::Load && operand.count(s.op->result)) {
            TileOp convert = make_op(TileOpKind::ConvertLayout, s.op->result, s.op->type,
                                     {shared_name.at(s.op->result)});
            if (shared.at(s.op->result).slots > 1) convert.slot = slot;
            body.push_back(op_stmt(convert));
        } else {
            body.push_back(s);
        }
    }
    if (stages == 1 && !staged.empty()) {
        // The next step's copies overwrite the tiles this one reads.
        body.push_back(op_stmt(barrier));
    }
    loop.body = body;
}

void stage(std::vector<TileStmt> &body, int stages) {
    std::vector<TileStmt> out;
    SharedPool pool;
    for (TileStmt &s : body) {
        if (s.loop) {
            stage(s.loop->body, stages);
            std::vector<TileStmt> prologue;
            stage_loop(*s.loop, &prologue, stages, &pool);
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
