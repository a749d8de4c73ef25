// VectorizePointReductions: per-lane partials for the updates that keep a
// point (argmax, argmin) in a vectorized loop. An argmax's update reads the
// key (the running max) and writes it and the payloads (the index) at one
// element every lane shares, so the lanes of one vector cannot run as one
// step. The rewrite is the one split_k makes with interleaved chunks, each
// lane a chunk:
//
//   for (ko) vectorized (ki) { ...; key, payloads updated at the point }
//
// becomes
//
//   key_l[*] = identity; rank_l[*] = -1
//   for (ko) vectorized (ki) {
//     take = key_l[ki] < v          (the update's own test, per lane)
//     payload_l[ki] = select(take, x, payload_l[ki])
//     rank_l[ki] = select(take, (ko - min) * lanes + ki, rank_l[ki])
//     key_l[ki] = select(take, v, key_l[ki])
//   }
//   for (lane) fold lane into the elements, by key, then by rank
//
// Each lane now keeps the point the serial loop would keep among its own
// points, and the fold keeps the one it would keep among the lanes': the
// most extreme key, and of equal keys the first point for a strict test
// (the elements' old point, before all of the loop's, wins ties) or the
// last for <= and >=. Every lane stores only its own element of the
// partials, which vectorize_loops turns into vector code.
#include "lower/VectorizePointReductions.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "fusion/AssociativeUpdates.h"
#include "gpu/CrossThreadReductions.h"
#include "gpu/GpuLoopLevel.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

/** A store in the vectorized loop's body, with the lets and the branches
 * of ifs around it there. */
struct StoreSite {
    const Store *store = nullptr;
    std::vector<const LetStmt *> lets;  // outermost first
    std::vector<std::pair<const IfThenElse *, bool>> branches;
    size_t order = 0;
    bool in_inner_loop = false;  // inside a loop nested in the vectorized one
};

/** The stores of a loop body, and how often it loads each buffer. */
class FindSites : public IRVisitor {
  public:
    std::vector<StoreSite> sites;
    std::map<std::string, int> loads, stores;
    std::set<std::string> bound;  // names the body binds

    using IRVisitor::visit;
    void visit(const LetStmt *op) override {
        op->value.accept(this);
        bound.insert(op->name);
        lets.push_back(op);
        op->body.accept(this);
        lets.pop_back();
    }
    void visit(const IfThenElse *op) override {
        op->condition.accept(this);
        branches.push_back({op, true});
        op->then_case.accept(this);
        branches.back().second = false;
        if (op->else_case.defined()) op->else_case.accept(this);
        branches.pop_back();
    }
    void visit(const For *op) override {
        bound.insert(op->name);
        inner_loops++;
        IRVisitor::visit(op);
        inner_loops--;
    }
    void visit(const Allocate *op) override {
        bound.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        stores[op->name]++;
        sites.push_back({op, lets, branches, sites.size(), inner_loops > 0});
        IRVisitor::visit(op);
    }
    void visit(const Load *op) override {
        loads[op->name]++;
        IRVisitor::visit(op);
    }
    void visit(const Call *op) override {
        ranks_points |= op->is_intrinsic(gpu_intrinsic::point_rank);
        IRVisitor::visit(op);
    }
    bool ranks_points = false;  // a gpu_point_rank: the point is shared by threads

  private:
    std::vector<const LetStmt *> lets;
    std::vector<std::pair<const IfThenElse *, bool>> branches;
    int inner_loops = 0;
};

int count_loads(const Expr &e, const std::string &buffer) {
    struct Count : IRVisitor {
        const std::string *buffer;
        int n = 0;
        using IRVisitor::visit;
        void visit(const Load *op) override {
            n += op->name == *buffer;
            IRVisitor::visit(op);
        }
    } count;
    count.buffer = &buffer;
    e.accept(&count);
    return count.n;
}

/** What a store in the body does to its element. */
struct Update {
    const StoreSite *site = nullptr;
    const LetStmt *value_let = nullptr;  // the let whose Variable it stores, if any
    bool is_select = false;              // select(condition, value, the element)
    bool is_extreme = false;             // max or min (op) of the element and value
    VectorReduce::Op op = VectorReduce::Max;
    Expr condition, value;
    /** The element's index with the region's lets substituted: where the
     * lanes are folded, after the region, they are not bound. */
    Expr outside_index;
};

bool is_element(const Expr &e, const Store *st) {
    const Load *l = e.as<Load>();
    return l && l->name == st->name && equal(l->index, st->index) && is_const_one(l->predicate);
}

bool as_update(const StoreSite &site, Update *u) {
    const Store *st = site.store;
    u->site = &site;
    if (as_select_update(st, site.lets, &u->condition, &u->value, &u->value_let)) {
        u->is_select = true;
        return true;
    }
    Expr value;
    if (!u->value_let && as_associative_update(st, &u->op, &value) &&
        (u->op == VectorReduce::Max || u->op == VectorReduce::Min)) {
        u->is_extreme = true;
        u->value = substitute_in_all_lets(value);
        return true;
    }
    return false;
}

/** A key kept at its extreme and the payloads that take their values at
 * its point. */
struct Group {
    const Update *key = nullptr;
    VectorReduce::Op op = VectorReduce::Max;
    Expr v;  // the value a point brings to the key
    bool strict = true, strict_known = false;
    std::vector<const Update *> payloads;

    /** The payloads, then the key. */
    std::vector<const Update *> members() const {
        std::vector<const Update *> all = payloads;
        all.push_back(key);
        return all;
    }
    /** The site of the group's first store, where the lanes' update goes. */
    const StoreSite *first_site() const {
        const StoreSite *first = key->site;
        for (const Update *u : payloads) {
            if (u->site->order < first->order) first = u->site;
        }
        return first;
    }
};

/** The test of `u`, if it compares the key of `g`'s element with g's v: the
 * key's old value on the left of < for a max, on the right for a min. */
bool tests_key(const Update &u, const Group &g, bool *strict) {
    Expr a, b;
    if (!u.is_select || !as_less(u.condition, &a, &b, strict)) return false;
    const Store *key = g.key->site->store;
    if (g.op == VectorReduce::Max) return is_element(a, key) && equal(b, g.v);
    return is_element(b, key) && equal(a, g.v);
}

class Rewrite : public IRMutator {
  public:
    using IRMutator::visit;

    Stmt visit(const For *op) override {
        if (op->for_type == ForType::GPUBlock || op->for_type == ForType::GPUThread) {
            return level.inside(op, [&] { return IRMutator::visit(op); });
        }
        // In a kernel, only a thread's own code: there the partials are its
        // registers, where in the block's own code they would be shared.
        if (level.block_level()) return IRMutator::visit(op);
        if (op->for_type == ForType::Serial) {
            // A serial loop whose body is lets and one vectorized loop: the
            // lanes' partials may outlive its iterations.
            std::vector<const LetStmt *> lets;
            Stmt inner = op->body;
            while (const LetStmt *l = inner.as<LetStmt>()) {
                lets.push_back(l);
                inner = l->body;
            }
            const For *v = inner.as<For>();
            if (v && v->for_type == ForType::Vectorized) {
                Stmt s = rewrite(op, lets, v);
                if (s.defined()) return s;
            }
        }
        if (op->for_type == ForType::Vectorized) {
            Stmt s = rewrite(nullptr, {}, op);
            if (s.defined()) return s;
        }
        return IRMutator::visit(op);
    }

  private:
    GpuLoopLevel level;
    int made = 0;

    /** The rewrite of vectorized loop `v`, its partials kept across
     * `serial` (with `lets` between the two) if not null; undefined if it
     * has no update that keeps a point, or one this cannot rewrite. */
    Stmt rewrite(const For *serial, const std::vector<const LetStmt *> &lets, const For *v) {
        const int64_t *extent = as_const_int(v->extent);
        if (!extent || *extent < 2) return Stmt();
        const int lanes = static_cast<int>(*extent);
        FindSites find;
        v->body.accept(&find);
        // A point the block's threads share is CrossThreadReductions' to
        // rank (its RVar is on the threads too); a thread takes its lanes
        // one by one.
        if (find.ranks_points) return Stmt();
        // Names the partials' folds, outside the region, cannot see.
        std::set<std::string> inside = find.bound;
        inside.insert(v->name);
        if (serial) {
            inside.insert(serial->name);
            for (const LetStmt *l : lets) inside.insert(l->name);
        }
        std::vector<Update> updates(find.sites.size());
        std::vector<bool> parsed(find.sites.size());
        for (size_t i = 0; i < find.sites.size(); i++) {
            parsed[i] = as_update(find.sites[i], &updates[i]);
            std::vector<std::pair<std::string, Expr>> region_lets;
            for (const LetStmt *l : lets) region_lets.emplace_back(l->name, l->value);
            for (const LetStmt *l : find.sites[i].lets) region_lets.emplace_back(l->name, l->value);
            updates[i].outside_index =
                substitute_enclosing_lets(region_lets, find.sites[i].store->index);
        }
        // The element is the same for the whole region.
        auto element_fixed = [&](const Update &u) {
            for (const std::string &name : free_variables(u.outside_index)) {
                if (inside.count(name)) return false;
            }
            return true;
        };
        // Keys.
        std::vector<Group> groups;
        for (size_t i = 0; i < updates.size(); i++) {
            const Update &u = updates[i];
            if (!parsed[i] || !element_fixed(u)) continue;
            if (u.site->store->value.type().is_bool()) continue;
            Group g;
            g.key = &u;
            if (u.is_extreme) {
                g.op = u.op;
                g.v = u.value;
            } else {
                Expr a, b;
                if (!as_less(u.condition, &a, &b, &g.strict)) continue;
                if (is_element(a, u.site->store) && equal(b, u.value)) g.op = VectorReduce::Max;
                else if (is_element(b, u.site->store) && equal(a, u.value))
                    g.op = VectorReduce::Min;
                else continue;
                g.v = u.value;
                g.strict_known = true;
            }
            groups.push_back(g);
        }
        // Payloads.
        for (size_t i = 0; i < updates.size(); i++) {
            const Update &u = updates[i];
            if (!parsed[i] || !u.is_select || !element_fixed(u)) continue;
            for (Group &g : groups) {
                bool strict;
                if (g.key == &u || !tests_key(u, g, &strict)) continue;
                if (g.strict_known && strict != g.strict) return Stmt();
                g.strict = strict;
                g.strict_known = true;
                g.payloads.push_back(&u);
                break;
            }
        }
        std::vector<Group> kept;
        for (const Group &g : groups) {
            if (g.payloads.empty()) continue;  // a plain max: vectorize_loops combines it
            if (!valid(g, find, serial, lets)) return Stmt();
            kept.push_back(g);
        }
        if (kept.empty()) return Stmt();
        return build(serial, lets, v, lanes, kept);
    }

    /** Whether g's stores are the only accesses to its elements in the
     * region, made together, and what they store reads nothing of them. */
    static bool valid(const Group &g, const FindSites &find, const For *serial,
                      const std::vector<const LetStmt *> &lets) {
        const std::vector<const Update *> members = g.members();
        std::set<std::string> buffers;
        for (const Update *u : members) buffers.insert(u->site->store->name);
        if (buffers.size() != members.size()) return false;
        for (const std::string &b : buffers) {
            if (find.bound.count(b)) return false;  // allocated per lane already
        }
        const StoreSite *first = g.first_site();
        // What the lanes' update computes at the first store must be bound
        // there, and read nothing of the group's elements.
        std::set<std::string> bound_at_first;
        for (const LetStmt *l : first->lets) bound_at_first.insert(l->name);
        auto computable_at_first = [&](const Expr &e) {
            if (loads_from(e, buffers)) return false;
            for (const std::string &name : free_variables(e)) {
                if (find.bound.count(name) && !bound_at_first.count(name)) return false;
            }
            return true;
        };
        if (!computable_at_first(g.v)) return false;
        int group_loads = 0;
        for (const Update *u : members) {
            const StoreSite &s = *u->site;
            if (find.stores.at(s.store->name) != 1 || s.branches != first->branches ||
                s.in_inner_loop || !computable_at_first(u->value)) {
                return false;
            }
            for (const std::string &b : buffers) {
                group_loads += count_loads(s.store->value, b);
                if (u->value_let) group_loads += count_loads(u->value_let->value, b);
            }
        }
        int loads = 0;
        for (const std::string &b : buffers) {
            auto it = find.loads.find(b);
            if (it != find.loads.end()) loads += it->second;
        }
        if (loads != group_loads) return false;
        if (serial) {
            for (const LetStmt *l : lets) {
                if (loads_from(l->value, buffers)) return false;
            }
        }
        return true;
    }

    struct Partials {
        std::string key, rank, best_rank;
        std::vector<std::string> payloads;
    };

    Stmt build(const For *serial, const std::vector<const LetStmt *> &lets, const For *v, int lanes,
               const std::vector<Group> &groups) {
        const Type i32 = Int(32);
        Expr lane = Variable::make(i32, v->name) - v->min;
        Expr rank = lane;
        if (serial) rank = (Variable::make(i32, serial->name) - serial->min) * lanes + lane;
        std::vector<Partials> partials;
        std::map<const Store *, Stmt> replaced;
        std::set<const LetStmt *> value_lets;
        for (const Group &g : groups) {
            Partials p;
            const std::string id = "." + std::to_string(made++);
            const Store *key = g.key->site->store;
            p.key = key->name + ".lane_key" + id;
            p.rank = key->name + ".lane_rank" + id;
            p.best_rank = key->name + ".best_rank" + id;
            for (const Update *u : g.payloads) {
                p.payloads.push_back(u->site->store->name + ".lane_value" + id);
            }
            // The lane's update, where the group's first store was.
            const Type kt = key->value.type();
            Expr lane_key = Load::make(kt, p.key, lane, const_true());
            const std::string take_name = key->name + ".lane_takes" + id;
            Expr take = Variable::make(Bool(), take_name);
            std::vector<Stmt> steps;
            for (size_t j = 0; j < g.payloads.size(); j++) {
                const Update *u = g.payloads[j];
                if (u->value_let) value_lets.insert(u->value_let);
                const Type t = u->site->store->value.type();
                Expr old = Load::make(t, p.payloads[j], lane, const_true());
                steps.push_back(Store::make(p.payloads[j], Select::make(take, u->value, old), lane,
                                            const_true()));
            }
            Expr old_rank = Load::make(i32, p.rank, lane, const_true());
            steps.push_back(
                Store::make(p.rank, Select::make(take, rank, old_rank), lane, const_true()));
            steps.push_back(
                Store::make(p.key, Select::make(take, g.v, lane_key), lane, const_true()));
            Expr better = g.op == VectorReduce::Max
                              ? (g.strict ? LT::make(lane_key, g.v) : LE::make(lane_key, g.v))
                              : (g.strict ? LT::make(g.v, lane_key) : LE::make(g.v, lane_key));
            Stmt update = LetStmt::make(take_name, better, Block::make(steps));
            const StoreSite *first = g.first_site();
            for (const Update *u : g.members()) {
                replaced[u->site->store] = u->site == first ? update : Evaluate::make(0);
            }
            partials.push_back(p);
        }

        // The loop, its stores to the elements now to the lanes' partials.
        struct Replace : IRMutator {
            const std::map<const Store *, Stmt> *replaced;
            const std::set<const LetStmt *> *value_lets;
            using IRMutator::visit;
            Stmt visit(const Store *op) override {
                auto it = replaced->find(op);
                return it != replaced->end() ? it->second : IRMutator::visit(op);
            }
            Stmt visit(const LetStmt *op) override {
                Stmt body = mutate(op->body);
                // A payload's value computed ahead of the stores: unread now.
                if (value_lets->count(op) && !stmt_uses_var(body, op->name)) return body;
                if (body.same_as(op->body)) return op;
                return LetStmt::make(op->name, op->value, body);
            }
        } replace;
        replace.replaced = &replaced;
        replace.value_lets = &value_lets;
        Stmt region = For::make(v->name, v->min, v->extent, v->for_type, replace.mutate(v->body),
                                v->attributes);
        if (serial) {
            for (auto l = lets.rbegin(); l != lets.rend(); ++l) {
                region = LetStmt::make((*l)->name, (*l)->value, region);
            }
            region = For::make(serial->name, serial->min, serial->extent, serial->for_type, region,
                               serial->attributes);
        }

        // Before it, no lane has a point; after it, the lanes are folded
        // into the elements in the order of their points.
        Expr all = Ramp::make(make_zero(i32), make_one(i32), lanes);
        std::vector<Stmt> inits, folds;
        for (size_t gi = 0; gi < groups.size(); gi++) {
            const Group &g = groups[gi];
            const Partials &p = partials[gi];
            const Store *key = g.key->site->store;
            const Type kt = key->value.type();
            inits.push_back(Store::make(p.key, Broadcast::make(reduction_identity(g.op, kt), lanes),
                                        all, const_true()));
            inits.push_back(Store::make(p.rank, Broadcast::make(make_const(i32, -1), lanes), all,
                                        const_true()));
            for (size_t j = 0; j < g.payloads.size(); j++) {
                const Type t = g.payloads[j]->site->store->value.type();
                inits.push_back(Store::make(p.payloads[j], Broadcast::make(make_zero(t), lanes),
                                            all, const_true()));
            }
            // The elements' own point comes before all of the loop's. One
            // step per lane, unrolled: every access to the partials then has
            // a constant lane, and they stay in vector registers. The
            // elements are read only under a lane that took a point, which
            // the loop did only where its guards let it touch them.
            std::vector<Stmt> fold{Store::make(p.best_rank, make_const(i32, -1), 0, const_true())};
            const Expr &key_index = g.key->outside_index;
            for (int lane_index = 0; lane_index < lanes; lane_index++) {
                Expr li = make_const(i32, lane_index);
                Expr e = Load::make(kt, p.key, li, const_true());
                Expr rk = Load::make(i32, p.rank, li, const_true());
                Expr best = Load::make(i32, p.best_rank, 0, const_true());
                Expr current = Load::make(kt, key->name, key_index, const_true());
                Expr more_extreme =
                    g.op == VectorReduce::Max ? LT::make(current, e) : LT::make(e, current);
                Expr earlier_or_later = g.strict ? LT::make(rk, best) : LT::make(best, rk);
                Expr takes = more_extreme || (EQ::make(e, current) && earlier_or_later);
                std::vector<Stmt> moves;
                for (size_t j = 0; j < g.payloads.size(); j++) {
                    const Update *u = g.payloads[j];
                    const Store *st = u->site->store;
                    moves.push_back(Store::make(
                        st->name, Load::make(st->value.type(), p.payloads[j], li, const_true()),
                        u->outside_index, const_true(), st->param));
                }
                Expr new_key = g.key->is_extreme ? combine(g.op, current, e) : e;
                moves.push_back(
                    Store::make(key->name, new_key, key_index, const_true(), key->param));
                moves.push_back(Store::make(p.best_rank, rk, 0, const_true()));
                fold.push_back(IfThenElse::make(LE::make(make_zero(i32), rk),
                                                IfThenElse::make(takes, Block::make(moves))));
            }
            folds.push_back(Allocate::make(p.best_rank, i32, MemoryType::Auto, {make_const(i32, 1)},
                                           const_true(), Block::make(fold)));
        }
        std::vector<Stmt> steps = inits;
        steps.push_back(region);
        steps.insert(steps.end(), folds.begin(), folds.end());
        Stmt result = Block::make(steps);
        for (size_t gi = 0; gi < groups.size(); gi++) {
            const Group &g = groups[gi];
            const Partials &p = partials[gi];
            auto alloc = [&](const std::string &name, Type t) {
                result = Allocate::make(name, t, MemoryType::Auto, {make_const(i32, lanes)},
                                        const_true(), result);
            };
            alloc(p.key, g.key->site->store->value.type());
            alloc(p.rank, i32);
            for (size_t j = 0; j < g.payloads.size(); j++) {
                alloc(p.payloads[j], g.payloads[j]->site->store->value.type());
            }
        }
        return result;
    }
};

}  // namespace

Stmt vectorize_point_reductions(const Stmt &s) { return Rewrite().mutate(s); }

}  // namespace internal
}  // namespace loom
