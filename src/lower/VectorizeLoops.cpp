// VectorizeLoops: turns each ForType::Vectorized loop into straight-line
// vector code. This is where the schedule's vectorize() takes effect: the
// loop variable x becomes Ramp(min, 1, lanes), every expression that depends
// on x becomes a vector of `lanes` values (the scalar operands it meets are
// broadcast), and the backend then emits SIMD instructions for the vector
// types. Lane-dependent ifs (the guarded tails of split loops) become masks
// on the stores and loads they guard, so a ragged tail still vectorizes.
// Allocations made inside the loop get one copy per lane. A store that every
// lane makes to one element, as an associative update of it (a sum over a
// vectorized RVar), combines the lanes' values with a VectorReduce and then
// updates the element once. Statements that cannot be widened (an assert
// whose condition differs by lane, a loop whose bounds differ by lane) are
// scalarized: one copy per lane.
#include "lower/VectorizeLoops.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "arith/Simplify.h"
#include "fusion/AssociativeUpdates.h"
#include "gpu/GpuLoopLevel.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "ir/Util.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

// Thrown from inside a statement that cannot be widened; the nearest
// enclosing statement catches it and scalarizes itself.
struct NeedsScalarization {};

// Scalar arithmetic that folds the trivial cases, for Ramp bases and strides.
Expr scalar_add(const Expr &a, const Expr &b) {
    if (is_const_zero(b)) return a;
    if (is_const_zero(a)) return b;
    const int64_t *ca = as_const_int(a), *cb = as_const_int(b);
    if (ca && cb && a.type().is_int()) return make_const(a.type(), *ca + *cb);
    return Add::make(a, b);
}
Expr scalar_sub(const Expr &a, const Expr &b) {
    if (is_const_zero(b)) return a;
    const int64_t *ca = as_const_int(a), *cb = as_const_int(b);
    if (ca && cb && a.type().is_int()) return make_const(a.type(), *ca - *cb);
    return Sub::make(a, b);
}
Expr scalar_mul(const Expr &a, const Expr &b) {
    if (is_const_one(b)) return a;
    if (is_const_one(a)) return b;
    const int64_t *ca = as_const_int(a), *cb = as_const_int(b);
    if (ca && cb && a.type().is_int()) return make_const(a.type(), *ca * *cb);
    return Mul::make(a, b);
}

// Vector arithmetic that keeps affine index expressions as Ramps, so dense
// accesses stay recognizably dense: ramp + broadcast is a ramp, and so on.
// The identities hold in wrapping integer arithmetic too.
Expr vec_add(const Expr &a, const Expr &b) {
    const Ramp *ra = a.as<Ramp>(), *rb = b.as<Ramp>();
    const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
    if (ra && bb) return Ramp::make(scalar_add(ra->base, bb->value), ra->stride, ra->lanes);
    if (ba && rb) return Ramp::make(scalar_add(ba->value, rb->base), rb->stride, rb->lanes);
    if (ra && rb) {
        return Ramp::make(scalar_add(ra->base, rb->base), scalar_add(ra->stride, rb->stride),
                          ra->lanes);
    }
    if (ba && bb) return Broadcast::make(scalar_add(ba->value, bb->value), ba->lanes);
    return Add::make(a, b);
}
Expr vec_sub(const Expr &a, const Expr &b) {
    const Ramp *ra = a.as<Ramp>(), *rb = b.as<Ramp>();
    const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
    if (ra && bb) return Ramp::make(scalar_sub(ra->base, bb->value), ra->stride, ra->lanes);
    if (ba && rb) {
        return Ramp::make(scalar_sub(ba->value, rb->base),
                          scalar_sub(make_zero(rb->stride.type()), rb->stride), rb->lanes);
    }
    if (ra && rb) {
        return Ramp::make(scalar_sub(ra->base, rb->base), scalar_sub(ra->stride, rb->stride),
                          ra->lanes);
    }
    if (ba && bb) return Broadcast::make(scalar_sub(ba->value, bb->value), ba->lanes);
    return Sub::make(a, b);
}
Expr vec_mul(const Expr &a, const Expr &b) {
    const Ramp *ra = a.as<Ramp>(), *rb = b.as<Ramp>();
    const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
    if (ra && bb && a.type().is_int_or_uint()) {
        return Ramp::make(scalar_mul(ra->base, bb->value), scalar_mul(ra->stride, bb->value),
                          ra->lanes);
    }
    if (ba && rb && a.type().is_int_or_uint()) {
        return Ramp::make(scalar_mul(ba->value, rb->base), scalar_mul(ba->value, rb->stride),
                          rb->lanes);
    }
    if (ba && bb) return Broadcast::make(scalar_mul(ba->value, bb->value), ba->lanes);
    return Mul::make(a, b);
}

Expr and_predicates(const Expr &a, const Expr &b) {
    if (!a.defined() || is_const_one(a)) return b;
    if (!b.defined() || is_const_one(b)) return a;
    return And::make(a, b);
}

// Replaces likely(e) by e: masks need the bare condition.
class StripLikely : public IRMutator {
  protected:
    using IRMutator::visit;
    Expr visit(const Call *op) override {
        if (op->is_intrinsic(Call::likely) && op->args.size() == 1) return mutate(op->args[0]);
        return IRMutator::visit(op);
    }
};

/** A scalar condition under which every lane of the vector condition
 * `mask` holds, or undefined when there is no cheap one. The guards of split
 * loops are comparisons of a ramp with a broadcast, and every lane of
 * `ramp <= b` holds exactly when its last (or, for a falling ramp, its
 * first) lane does. Comparing two ramps, the largest lane of one against the
 * smallest of the other is sufficient but not necessary: the caller falls
 * back to the masked body whenever the condition fails, so it is still safe. */
Expr all_lanes_hold(const Expr &mask) {
    if (const Broadcast *b = mask.as<Broadcast>()) return b->value;
    if (const And *a = mask.as<And>()) {
        Expr x = all_lanes_hold(a->a), y = all_lanes_hold(a->b);
        if (!x.defined() || !y.defined()) return Expr();
        return And::make(x, y);
    }
    // The ramp lane that decides: its largest (`largest`) or smallest one.
    auto extreme_lane = [](const Expr &e, bool largest) -> Expr {
        const Ramp *r = e.as<Ramp>();
        if (!r || !r->type.is_int()) return Expr();
        const int64_t *stride = as_const_int(r->stride);
        if (!stride) return Expr();
        const bool last_is_largest = *stride >= 0;
        if (largest != last_is_largest) return r->base;
        return scalar_add(r->base, scalar_mul(r->stride, make_const(r->base.type(), r->lanes - 1)));
    };
    auto compare = [&](const Expr &lo, const Expr &hi, bool strict) -> Expr {
        // lo < hi (or <=) in every lane: the largest lo against the smallest hi.
        Expr l = lo.as<Broadcast>() ? lo.as<Broadcast>()->value : extreme_lane(lo, true);
        Expr h = hi.as<Broadcast>() ? hi.as<Broadcast>()->value : extreme_lane(hi, false);
        if (!l.defined() || !h.defined()) return Expr();
        return strict ? LT::make(l, h) : LE::make(l, h);
    };
    if (const LE *op = mask.as<LE>()) return compare(op->a, op->b, false);
    if (const LT *op = mask.as<LT>()) return compare(op->a, op->b, true);
    if (const GE *op = mask.as<GE>()) return compare(op->b, op->a, false);
    if (const GT *op = mask.as<GT>()) return compare(op->b, op->a, true);
    return Expr();
}

// What encloses the statement being vectorized, inside the vectorized loop:
// lets, lane-dependent conditions (now masks) and per-lane allocations.
struct ContextEntry {
    enum Kind { Let, Condition, Allocation } kind;
    std::string name;        // Let, Allocation
    Expr value;              // Let: the original scalar value; Condition: the original condition
    bool is_vector = false;  // Let: whether the value became a vector
    Expr mask;               // Condition: the widened condition
    Expr replacement;        // Let: what uses of a ramp-valued let become
    bool single_element = false;  // Allocation: one element per lane
};

class VectorSubs : public IRMutator {
  public:
    /** With `shares_loads`, a statement scalarized lane by lane reads its
     * lanes' dense loads as one vector (not in a kernel's block-level
     * code, whose arrays the threads would share). */
    VectorSubs(const std::string &var, const Expr &min, int lanes, const Stmt &body,
               bool shares_loads)
        : var(var), lanes(lanes), shares_loads(shares_loads), min(min) {
        ramp = Ramp::make(min, make_one(min.type()), lanes);
        struct Stores : IRVisitor {
            std::set<std::string> *names;
            using IRVisitor::visit;
            void visit(const Store *op) override {
                names->insert(op->name);
                IRVisitor::visit(op);
            }
        } stores;
        stores.names = &stored;
        body.accept(&stores);
    }

    using IRMutator::mutate;
    Stmt mutate(const Stmt &s) override {
        size_t depth = context.size();
        try {
            return IRMutator::mutate(s);
        } catch (const NeedsScalarization &) {
            context.resize(depth);
            return scalarize(s);
        }
    }

  private:
    std::string var;
    int lanes;
    bool shares_loads;
    std::set<std::string> stored;  // the buffers the loop body stores to
    Expr min, ramp;
    std::vector<ContextEntry> context;

    Expr widen(const Expr &e, int l) const {
        if (e.type().lanes == l) return e;
        if (e.type().is_scalar()) return Broadcast::make(e, l);
        user_error << "Cannot vectorize the loop over " << var << ": it contains vectors of "
                   << e.type().lanes << " lanes (is it nested inside another vectorized loop?). "
                   << "Vectorize only one loop of a loop nest.";
        return Expr();
    }
    Expr widen(const Expr &e) const { return widen(e, lanes); }

    // The lanes of the widest operand, which every operand is widened to.
    static int max_lanes(std::initializer_list<Expr> es) {
        int l = 1;
        for (const Expr &e : es) {
            if (e.defined() && e.type().lanes > l) l = e.type().lanes;
        }
        return l;
    }

    const ContextEntry *find_let(const std::string &name) const {
        for (auto it = context.rbegin(); it != context.rend(); ++it) {
            if (it->kind == ContextEntry::Let && it->name == name) return &*it;
        }
        return nullptr;
    }
    const ContextEntry *widened_allocation(const std::string &name) const {
        for (auto it = context.rbegin(); it != context.rend(); ++it) {
            if (it->kind == ContextEntry::Allocation && it->name == name) return &*it;
        }
        return nullptr;
    }
    bool is_widened_allocation(const std::string &name) const {
        return widened_allocation(name) != nullptr;
    }
    // The conjunction of the lane masks in effect, or undefined if none.
    Expr current_mask() const {
        Expr m;
        for (const ContextEntry &c : context) {
            if (c.kind == ContextEntry::Condition) m = and_predicates(m, c.mask);
        }
        return m;
    }

    // Each lane owns a copy of a per-lane allocation: element i of lane l is
    // at i * lanes + l. A copy of one element (an inline reduction's
    // accumulator) has only index 0, so whatever the index expression, each
    // lane's element is its own: a dense access, not a gather.
    Expr widened_index(const std::string &name, const Expr &index) const {
        const ContextEntry *a = widened_allocation(name);
        if (a && a->single_element) {
            return Ramp::make(make_zero(index.type().element_of()),
                              make_one(index.type().element_of()), lanes);
        }
        Expr L = make_const(index.type().element_of(), lanes);
        if (index.type().is_scalar()) {
            return Ramp::make(scalar_mul(index, L), make_one(index.type()), lanes);
        }
        Expr lane_ids = Ramp::make(make_zero(L.type()), make_one(L.type()), lanes);
        return vec_add(vec_mul(index, Broadcast::make(L, lanes)), lane_ids);
    }

    Expr lane_value(int i) const {
        if (const int64_t *c = as_const_int(min)) return make_const(min.type(), *c + i);
        return scalar_add(min, make_const(min.type(), i));
    }

    // Whether e reads memory that the loop writes and that is not each
    // lane's own (a tuple's other element updated beside this one): the
    // lanes of one vector would read it as it was before all of them.
    bool reads_other_iterations(const Expr &e) const {
        for (const std::string &name : stored) {
            if (!is_widened_allocation(name) && reads_buffer(e, name)) return true;
        }
        return false;
    }

    // Whether e (following the lets of the loop body) loads from `buffer`.
    bool reads_buffer(const Expr &e, const std::string &buffer) const {
        struct Finder : IRVisitor {
            const VectorSubs *self;
            const std::string &buffer;
            int depth = 0;
            bool found = false;
            Finder(const VectorSubs *s, const std::string &b) : self(s), buffer(b) {}
            using IRVisitor::visit;
            void visit(const Load *op) override {
                if (op->name == buffer) found = true;
                IRVisitor::visit(op);
            }
            void visit(const Variable *op) override {
                const ContextEntry *let = self->find_let(op->name);
                if (let && depth < 64) {
                    depth++;
                    let->value.accept(this);
                    depth--;
                }
            }
        } finder(this, buffer);
        e.accept(&finder);
        return finder.found;
    }

    // One scalar copy of s per lane, inside the lets and conditions of the
    // vectorized body rebuilt for that lane. The dense loads that s makes
    // in every lane are made once, as one vector, before the copies.
    Stmt scalarize(const Stmt &s) {
        std::vector<std::string> allocations;
        for (const ContextEntry &c : context) {
            if (c.kind == ContextEntry::Allocation) allocations.push_back(c.name);
        }
        const std::vector<SharedLoad> shared = shared_loads(s);
        std::vector<Stmt> copies;
        for (int i = 0; i < lanes; i++) {
            Expr x = lane_value(i);
            LaneAccess access(allocations, lanes, i);
            Stmt body = access.mutate(substitute(var, x, LaneOfSharedLoads(shared, i).mutate(s)));
            for (auto it = context.rbegin(); it != context.rend(); ++it) {
                if (it->kind == ContextEntry::Let && it->is_vector) {
                    body =
                        LetStmt::make(it->name, access.mutate(substitute(var, x, it->value)), body);
                } else if (it->kind == ContextEntry::Condition) {
                    body = IfThenElse::make(access.mutate(substitute(var, x, it->value)), body);
                }
            }
            copies.push_back(body);
        }
        Stmt result = Block::make(copies);
        for (auto it = shared.rbegin(); it != shared.rend(); ++it) {
            const Type t = it->load->type;
            Stmt fill = Store::make(it->name, it->vector,
                                    Ramp::make(make_zero(Int(32)), make_one(Int(32)), lanes),
                                    const_true(lanes), nullptr);
            result = Allocate::make(it->name, t, MemoryType::Auto, {make_const(Int(32), lanes)},
                                    const_true(), Block::make(fill, result));
        }
        return result;
    }

    // A load that a scalarized statement makes in every lane, of
    // consecutive elements of memory the vectorized loop does not write:
    // read once as `vector` into the per-lane array `name`. Each lane's
    // copy reads its element instead: where the lanes would have made one
    // narrow load each (a GPU thread taking an argmax's lanes one by one),
    // they make one wide load together.
    struct SharedLoad {
        const Load *load;  // as s makes it, in terms of the loop variable
        std::string name;
        Expr vector;
    };

    // The loads of s that every lane reaches (none under a condition, a
    // select's branch, a failed assert's message or a loop of s), whose
    // indices are dense ramps over the lanes, read from memory the loop
    // does not write, and bound outside s.
    std::vector<SharedLoad> shared_loads(const Stmt &s) {
        if (!shares_loads) return {};
        struct Reached : IRVisitor {
            std::vector<const Load *> loads;
            using IRVisitor::visit;
            void visit(const Load *op) override {
                loads.push_back(op);
                IRVisitor::visit(op);
            }
            void visit(const Select *op) override { op->condition.accept(this); }
            void visit(const And *op) override { op->a.accept(this); }
            void visit(const Or *op) override { op->a.accept(this); }
            void visit(const IfThenElse *op) override { op->condition.accept(this); }
            void visit(const AssertStmt *op) override { op->condition.accept(this); }
            void visit(const For *op) override {
                op->min.accept(this);
                op->extent.accept(this);
            }
        } reached;
        s.accept(&reached);
        // The names s binds: an index that reads one differs by copy.
        const std::set<std::string> bound = names_defined_in(s);
        std::vector<SharedLoad> shared;
        for (const Load *l : reached.loads) {
            if (l->type.is_vector() || l->type.is_bool() || l->type.is_handle() ||
                !is_const_one(l->predicate) || stored.count(l->name) ||
                is_widened_allocation(l->name)) {
                continue;
            }
            bool local = false;
            for (const std::string &v : free_variables(l->index)) local |= bound.count(v) > 0;
            if (local) continue;
            bool seen = false;
            for (const SharedLoad &e : shared) seen |= equal(Expr(e.load), Expr(l));
            if (seen) continue;
            Expr index;
            const size_t depth = context.size();
            try {
                index = mutate(l->index);
            } catch (const NeedsScalarization &) {
                context.resize(depth);
                continue;
            }
            const Ramp *dense = index.as<Ramp>();
            if (!dense || dense->lanes != lanes || !is_const_one(dense->stride)) continue;
            Expr mask = current_mask();
            Expr pred = mask.defined() ? widen(mask) : const_true(lanes);
            shared.push_back(
                {l, unique_name(l->name + "_lanes"),
                 Load::make(l->type.with_lanes(lanes), l->name, index, pred, l->param)});
        }
        return shared;
    }

    // Lane `lane`'s copy of a scalarized statement: each shared load reads
    // the lane's element of its array.
    class LaneOfSharedLoads : public IRMutator {
      public:
        LaneOfSharedLoads(const std::vector<SharedLoad> &shared, int lane)
            : shared(shared), lane(lane) {}

      protected:
        using IRMutator::visit;
        const std::vector<SharedLoad> &shared;
        int lane;
        Expr visit(const Load *op) override {
            for (const SharedLoad &e : shared) {
                if (equal(Expr(e.load), Expr(op))) {
                    return Load::make(op->type, e.name, make_const(Int(32), lane), const_true(),
                                      nullptr);
                }
            }
            return IRMutator::visit(op);
        }
    };

    // Rewrites accesses to per-lane allocations in a scalar copy for one lane.
    class LaneAccess : public IRMutator {
      public:
        LaneAccess(const std::vector<std::string> &names, int lanes, int lane)
            : names(names), lanes(lanes), lane(lane) {}
        using IRMutator::mutate;

      protected:
        using IRMutator::visit;
        const std::vector<std::string> &names;
        int lanes, lane;
        bool owned(const std::string &n) const {
            for (const std::string &m : names) {
                if (m == n) return true;
            }
            return false;
        }
        Expr index_for(const Expr &index) const {
            Type t = index.type();
            return scalar_add(scalar_mul(index, make_const(t, lanes)), make_const(t, lane));
        }
        Expr visit(const Load *op) override {
            Expr e = IRMutator::visit(op);
            if (!owned(op->name)) return e;
            const Load *l = e.as<Load>();
            return Load::make(l->type, l->name, index_for(l->index), l->predicate, l->param);
        }
        Stmt visit(const Store *op) override {
            Stmt s = IRMutator::visit(op);
            if (!owned(op->name)) return s;
            const Store *st = s.as<Store>();
            return Store::make(st->name, st->value, index_for(st->index), st->predicate, st->param);
        }
    };

  protected:
    using IRMutator::visit;

    Expr visit(const Variable *op) override {
        if (op->name == var) return ramp;
        const ContextEntry *let = find_let(op->name);
        if (let && let->replacement.defined() && op->type.is_scalar()) return let->replacement;
        if (let && let->is_vector && op->type.is_scalar()) {
            return Variable::make(op->type.with_lanes(lanes), op->name, op->param, op->rdom);
        }
        return op;
    }

    Expr visit(const Cast *op) override {
        Expr v = mutate(op->value);
        if (v.same_as(op->value)) return op;
        return Cast::make(op->type.with_lanes(v.type().lanes), v);
    }
    Expr visit(const Reinterpret *op) override {
        Expr v = mutate(op->value);
        if (v.same_as(op->value)) return op;
        if (op->type.lanes == op->value.type().lanes) {
            return Reinterpret::make(op->type.with_lanes(v.type().lanes), v);
        }
        return Reinterpret::make(op->type, widen(v, op->value.type().lanes));
    }

    template <typename T> Expr visit_binary(const T *op) {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (a.same_as(op->a) && b.same_as(op->b)) return op;
        int l = max_lanes({a, b});
        return T::make(widen(a, l), widen(b, l));
    }
    Expr visit(const Add *op) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (a.same_as(op->a) && b.same_as(op->b)) return op;
        int l = max_lanes({a, b});
        return l > 1 ? vec_add(widen(a, l), widen(b, l)) : Add::make(a, b);
    }
    Expr visit(const Sub *op) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (a.same_as(op->a) && b.same_as(op->b)) return op;
        int l = max_lanes({a, b});
        return l > 1 ? vec_sub(widen(a, l), widen(b, l)) : Sub::make(a, b);
    }
    Expr visit(const Mul *op) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (a.same_as(op->a) && b.same_as(op->b)) return op;
        int l = max_lanes({a, b});
        return l > 1 ? vec_mul(widen(a, l), widen(b, l)) : Mul::make(a, b);
    }
    Expr visit(const Div *op) override { return visit_binary(op); }
    Expr visit(const Mod *op) override { return visit_binary(op); }
    Expr visit(const Min *op) override { return visit_binary(op); }
    Expr visit(const Max *op) override { return visit_binary(op); }
    Expr visit(const EQ *op) override { return visit_binary(op); }
    Expr visit(const NE *op) override { return visit_binary(op); }
    Expr visit(const LT *op) override { return visit_binary(op); }
    Expr visit(const LE *op) override { return visit_binary(op); }
    Expr visit(const GT *op) override { return visit_binary(op); }
    Expr visit(const GE *op) override { return visit_binary(op); }
    Expr visit(const And *op) override { return visit_binary(op); }
    Expr visit(const Or *op) override { return visit_binary(op); }

    Expr visit(const Select *op) override {
        Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
        if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
            return op;
        }
        int l = max_lanes({c, t, f});
        // A scalar condition may select between vectors as it is.
        if (c.type().is_vector()) c = widen(c, l);
        return Select::make(c, widen(t, l), widen(f, l));
    }

    Expr visit(const Load *op) override {
        Expr index = mutate(op->index), pred = mutate(op->predicate);
        Expr mask = current_mask();
        bool per_lane = is_widened_allocation(op->name);
        if (per_lane) index = widened_index(op->name, index);
        int l = max_lanes({index, pred, mask});
        if (l == 1) {
            if (index.same_as(op->index) && pred.same_as(op->predicate)) return op;
            return Load::make(op->type, op->name, index, pred, op->param);
        }
        // A load under a lane-dependent condition reads only the lanes for
        // which the condition holds.
        pred = and_predicates(widen(pred, l), mask);
        return Load::make(op->type.with_lanes(l), op->name, widen(index, l), pred, op->param);
    }

    Expr visit(const Ramp *op) override {
        Expr b = mutate(op->base), s = mutate(op->stride);
        if (b.same_as(op->base) && s.same_as(op->stride)) return op;
        widen(b, 1);  // a ramp of vectors is a nested vectorization: refused
        widen(s, 1);
        return Ramp::make(b, s, op->lanes);
    }
    Expr visit(const Broadcast *op) override {
        Expr v = mutate(op->value);
        if (v.same_as(op->value)) return op;
        widen(v, 1);
        return Broadcast::make(v, op->lanes);
    }

    // A let whose value became a ramp binds the ramp's base instead, under the
    // same name, and its uses become ramps again: an index computed through
    // the let (let x = ramp(b, 1, 8) in out[x * s + c]) then folds to a ramp
    // that the backend recognizes as a dense or strided access.
    template <typename LetT, typename Body> Body visit_let(const LetT *op, const Body &body) {
        Expr v = mutate(op->value);
        ContextEntry entry{ContextEntry::Let,    op->name, op->value,
                           v.type().is_vector(), Expr(),   Expr()};
        Expr bound = v;
        if (const Ramp *r = v.as<Ramp>(); r && !expr_uses_var(r->stride, op->name)) {
            bound = r->base;
            entry.replacement =
                Ramp::make(Variable::make(r->base.type(), op->name), r->stride, r->lanes);
        }
        context.push_back(entry);
        Body b = mutate(body);
        context.pop_back();
        if (v.same_as(op->value) && b.same_as(body)) return op;
        return LetT::make(op->name, bound, b);
    }
    Expr visit(const Let *op) override { return visit_let(op, op->body); }

    Expr visit(const Call *op) override {
        internal_assert(op->call_type != Call::Image && op->call_type != Call::Func)
            << "vectorize_loops runs after storage flattening, but found a call to " << op->name;
        bool changed = false;
        std::vector<Expr> args = mutate_exprs(op->args, &changed);
        if (!changed) return op;
        int l = 1;
        for (const Expr &a : args) l = std::max<int>(l, a.type().lanes);
        if (l == 1) {
            return Call::make(op->type, op->name, args, op->call_type, op->func, op->value_index,
                              op->param, op->buffer);
        }
        // A call with side effects must happen once per lane.
        if (!op->is_pure()) throw NeedsScalarization();
        for (Expr &a : args) {
            if (!a.type().is_handle()) a = widen(a, l);
        }
        return Call::make(op->type.with_lanes(l), op->name, args, op->call_type, op->func,
                          op->value_index, op->param, op->buffer);
    }

    Stmt visit(const LetStmt *op) override { return visit_let(op, op->body); }

    Stmt visit(const AssertStmt *op) override {
        Expr c = mutate(op->condition), m = mutate(op->message);
        if (c.type().is_vector() || m.type().is_vector()) throw NeedsScalarization();
        if (c.same_as(op->condition) && m.same_as(op->message)) return op;
        return AssertStmt::make(c, m);
    }

    Stmt visit(const Evaluate *op) override {
        // A side effect must happen once per lane, not once for all lanes.
        if (has_side_effects(op->value)) throw NeedsScalarization();
        Expr v = mutate(op->value);
        if (v.same_as(op->value)) return op;
        return Evaluate::make(v);
    }

    Stmt visit(const Store *op) override {
        Expr value = mutate(op->value), index = mutate(op->index), pred = mutate(op->predicate);
        Expr mask = current_mask();
        if (is_widened_allocation(op->name)) {
            index = widened_index(op->name, index);
        } else if (index.type().is_scalar()) {
            // Every lane writes the same element. An associative update of
            // it (a sum over the vectorized RVar) combines the lanes' values
            // first, then the element once: the lanes' order is free.
            VectorReduce::Op reduce;
            Expr term;
            if (reads_buffer(op->value, op->name) && as_associative_update(op, &reduce, &term) &&
                !reads_other_iterations(term)) {
                Expr terms = widen(mutate(term));
                if (mask.defined()) {
                    // Lanes outside a guarded tail contribute nothing.
                    terms = Select::make(
                        widen(mask), terms,
                        Broadcast::make(reduction_identity(reduce, term.type()), lanes));
                }
                Expr element = Load::make(op->value.type(), op->name, index, const_true());
                return Store::make(op->name,
                                   combine(reduce, element, VectorReduce::make(reduce, terms, 1)),
                                   index, const_true(), op->param);
            }
            user_assert(!reads_buffer(op->value, op->name))
                << "Cannot vectorize the loop over " << var << ": it carries a dependence through "
                << op->name << " (every iteration "
                << "reads and writes the same element of " << op->name
                << ", and the update is not an associative operator of that element and a value: "
                << "+, *, min, max, && or ||). Vectorize a loop over a pure dimension instead, or "
                << "give each lane a partial of its own first: sch.split_k(f, r, lanes, c, "
                << "ChunkLayout::Interleaved) and vectorize(c) on the stage it returns.";
            user_assert(value.type().is_scalar())
                << "Cannot vectorize the loop over " << var << ": it carries a dependence through "
                << op->name << " (every iteration writes a different value to the same element of "
                << op->name << ", so only the last one counts). Vectorize a loop whose "
                << "iterations write different elements.";
            if (pred.type().is_vector() || mask.defined()) throw NeedsScalarization();
            if (value.same_as(op->value) && index.same_as(op->index) &&
                pred.same_as(op->predicate)) {
                return op;
            }
            return Store::make(op->name, value, index, pred, op->param);
        }
        pred = and_predicates(widen(pred), mask);
        return Store::make(op->name, widen(value), widen(index), pred, op->param);
    }

    Stmt visit(const IfThenElse *op) override {
        Expr c = mutate(op->condition);
        if (c.type().is_scalar()) {
            Stmt t = mutate(op->then_case), e = mutate(op->else_case);
            if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) {
                return op;
            }
            return IfThenElse::make(c, t, e);
        }
        // The condition differs between lanes: run both branches, with the
        // stores and loads of each masked by its condition.
        Expr mask = StripLikely().mutate(widen(c));
        Expr cond = StripLikely().mutate(op->condition);
        context.push_back({ContextEntry::Condition, "", cond, false, mask, Expr()});
        Stmt t = mutate(op->then_case);
        context.pop_back();
        Stmt e;
        if (op->else_case.defined()) {
            context.push_back(
                {ContextEntry::Condition, "", Not::make(cond), false, Not::make(mask), Expr()});
            e = mutate(op->else_case);
            context.pop_back();
        }
        Stmt masked = Block::make(t, e);
        // When the condition holds in every lane (all but the last vector of
        // a guarded row), the then-case runs unmasked: its dense accesses
        // stay whole vector loads and stores. This matters where loop
        // partitioning cannot peel the ragged end off, as in a GPU thread,
        // which has no loop to partition.
        Expr all = all_lanes_hold(mask);
        if (all.defined()) all = simplify(all);
        if (!all.defined() || is_const_zero(all)) return masked;
        Stmt unmasked = mutate(op->then_case);
        if (is_const_one(all)) return unmasked;
        return IfThenElse::make(all, unmasked, masked);
    }

    Stmt visit(const For *op) override {
        user_assert(op->for_type != ForType::Vectorized)
            << "Cannot vectorize the loop over " << op->name << ": it is inside the "
            << "vectorized loop over " << var << ". Vectorize only one loop of a loop nest.";
        Expr mn = mutate(op->min), ext = mutate(op->extent);
        // A loop whose bounds differ by lane runs once per lane.
        if (mn.type().is_vector() || ext.type().is_vector()) throw NeedsScalarization();
        Stmt body = mutate(op->body);
        if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return op;
        return For::make(op->name, mn, ext, op->for_type, body, op->attributes);
    }

    Stmt visit(const Allocate *op) override {
        bool changed = false;
        std::vector<Expr> extents = mutate_exprs(op->extents, &changed);
        Expr cond = mutate(op->condition);
        for (const Expr &e : extents) {
            if (e.type().is_vector()) throw NeedsScalarization();
        }
        if (cond.type().is_vector()) throw NeedsScalarization();
        ContextEntry entry{ContextEntry::Allocation, op->name, Expr(), false, Expr(), Expr()};
        entry.single_element = true;
        for (const Expr &e : extents) {
            const int64_t *c = as_const_int(e);
            entry.single_element = entry.single_element && c && *c == 1;
        }
        context.push_back(entry);
        Stmt body = mutate(op->body);
        context.pop_back();
        extents.push_back(make_const(Int(32), lanes));
        return Allocate::make(op->name, op->type, op->memory_type, extents, cond, body,
                              op->replicated);
    }

    Stmt visit(const Provide *op) override {
        internal_error << "vectorize_loops runs after storage flattening, but found a "
                       << "Provide to " << op->name;
        return Stmt();
    }
    Stmt visit(const Realize *op) override {
        internal_error << "vectorize_loops runs after storage flattening, but found a "
                       << "Realize of " << op->name;
        return Stmt();
    }
};

class VectorizeLoops : public IRMutator {
  public:
    // The target does not change what is legal; the lane count is the loop's
    // extent, chosen by the schedule.
    explicit VectorizeLoops(const Target &) {}

  protected:
    using IRMutator::visit;
    Stmt visit(const For *op) override {
        if (op->for_type != ForType::Vectorized) {
            return level.inside(op, [&] { return IRMutator::visit(op); });
        }
        Expr extent = op->extent;
        if (!as_const_int(extent)) extent = simplify(extent);
        const int64_t *n = as_const_int(extent);
        user_assert(n) << "The vectorized loop over " << op->name
                       << " needs a constant extent, but its extent is not a constant. Split "
                       << "it by a constant factor and vectorize the inner loop instead.";
        if (*n <= 0) return Evaluate::make(make_zero(Int(32)));
        if (*n == 1) return mutate(substitute(op->name, op->min, op->body));
        user_assert(*n <= 1024) << "The vectorized loop over " << op->name << " has " << *n
                                << " iterations; vectorize by at most 1024 lanes (split it "
                                << "by a smaller factor first).";
        VectorSubs subs(op->name, op->min, static_cast<int>(*n), op->body, !level.block_level());
        return subs.mutate(op->body);
    }

  private:
    GpuLoopLevel level;
};

}  // namespace

Stmt vectorize_loops(const Stmt &s, const Target &t) { return VectorizeLoops(t).mutate(s); }

}  // namespace internal
}  // namespace loom
