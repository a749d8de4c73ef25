// Tiles of a fused chain whose every term is masked to its identity change
// nothing; the test that finds them is one interval evaluation of the mask
// per tile, so it costs a few scalar operations where a tile costs
// thousands. Done on the loop nest (not in the rewrite) because only here
// is the tile's whole body known: the Funcs computed at the tile loop
// (attention's scores and probabilities) are skipped with it.
#include "lower/SkipMaskedTiles.h"

#include <algorithm>
#include <map>
#include <vector>

#include "arith/Bounds.h"
#include "arith/Simplify.h"
#include "ir/IRMutator.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

class SkipMaskedTiles : public IRMutator {
  public:
    explicit SkipMaskedTiles(const LoweringEnv &env) : env(env) {}

  protected:
    using IRMutator::visit;

    Stmt visit(const For *op) override {
        enclosing.push_back(op->name);
        Stmt body = mutate(op->body);
        enclosing.pop_back();
        for (const FusedGroup &g : env.groups) {
            if (!g.mask.defined() || op->name != loop_name(g.leader, 1, g.tile_loop)) continue;
            Expr active = may_hold(g);
            if (active.defined() && !is_const_one(active)) {
                body = IfThenElse::make(active, body);
            }
        }
        return For::make(op->name, op->min, op->extent, op->for_type, body, op->attributes);
    }

  private:
    const LoweringEnv &env;
    std::vector<std::string> enclosing;

    bool encloses(const std::string &loop) const {
        return std::find(enclosing.begin(), enclosing.end(), loop) != enclosing.end();
    }

    /** Whether g's mask may hold for some key of the current tile and some
     * row: the upper end of the mask's interval, a boolean. Undefined when
     * interval arithmetic cannot bound it. */
    Expr may_hold(const FusedGroup &g) const {
        const FunctionPtr &leader = env.funcs.at(g.leader);
        Scope<Interval> scope;
        std::map<std::string, Expr> to_loops;
        // The leader's Vars: a loop around the tile loop is one point; one
        // inside it spans its bounds (defined around the leader's update).
        for (const std::string &a : leader->args) {
            std::string loop = loop_name(g.leader, 1, a);
            Expr v = Variable::make(Int(32), loop);
            to_loops[a] = v;
            if (!encloses(loop)) {
                scope.push(loop, Interval(Variable::make(Int(32), loop + ".loop_min"),
                                          Variable::make(Int(32), loop + ".loop_max")));
            }
        }
        to_loops[g.tile_loop] = Variable::make(Int(32), loop_name(g.leader, 1, g.tile_loop));
        Interval first = bounds_of_expr_in_scope(substitute(to_loops, g.tile_first), scope);
        Interval last = bounds_of_expr_in_scope(substitute(to_loops, g.tile_last), scope);
        if (!first.has_lower_bound() || !last.has_upper_bound()) return Expr();
        std::string key = g.leader + ".tile_key";
        to_loops[g.mask_key] = Variable::make(Int(32), key);
        scope.push(key, Interval(first.min, last.max));
        Interval holds = bounds_of_expr_in_scope(substitute(to_loops, g.mask), scope);
        if (!holds.has_upper_bound()) return Expr();
        return simplify(holds.max);
    }
};

}  // namespace

Stmt skip_masked_tiles(const Stmt &s, const LoweringEnv &env) {
    for (const FusedGroup &g : env.groups) {
        if (g.mask.defined()) return SkipMaskedTiles(env).mutate(s);
    }
    return s;
}

}  // namespace internal
}  // namespace loom
