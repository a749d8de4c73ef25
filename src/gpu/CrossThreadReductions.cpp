#include "gpu/CrossThreadReductions.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "fusion/AssociativeUpdates.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/Scope.h"
#include "ir/Substitute.h"
#include "ir/Util.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

Expr intrinsic(Type t, const char *name, const std::vector<Expr> &args = {}) {
    return Call::make(t, name, args, Call::Intrinsic);
}

/** One update that every thread of a block (or of a group of its threads)
 * makes to the same element: buffer[index] = op(buffer[index], value). */
struct Reduction {
    std::string buffer, partial;
    Expr index;
    VectorReduce::Op op = VectorReduce::Add;  // set once the update is known
    Type type;
    /** Grouped: the element depends on some of the stage's thread loops
     * (each of their points is a group of threads with an element of its
     * own), and these are all the stage's thread loops around the update,
     * outermost first, to fold each group's total at its coordinates. Empty:
     * the whole block shares one element. */
    std::vector<const For *> thread_loops;
    std::set<std::string> group_loops;  // those of them the element depends on
    /** The region's lets the element's index reads (outermost first), to
     * bind them again where the groups fold. */
    std::vector<std::pair<std::string, Expr>> index_lets;
    /** The conditions around the update that depend on the group alone
     * (a guarded split of its rows): a group they exclude has no element. */
    Expr group_condition;
    /** The thread dimensions reduced over (x 1, y 2, z 4). */
    int reduced = 7;

    /** An update that keeps the point attaining an extreme, and what that
     * point carries (argmax): the element (`buffer`) is the extreme, `op`
     * Max or Min, and each payload's element takes its value where the
     * element does: p[j] = select(better, x, p[j]) with the same test
     * `better` of the point's value against the element's old value. The
     * test is strict (the first point attaining the extreme wins ties) or
     * not (the last does). The threads rank their points by the update's
     * RVars, so that the block keeps the one the serial order would. */
    struct Payload {
        std::string buffer, partial;
        Expr index;
        Type type;
    };
    bool keeps_point = false;
    bool strict = true;
    /** Each of the key's stores (several where a loop was unrolled), with
     * its test `better`, reading the element's old value. */
    std::map<const Store *, Expr> tests;
    std::vector<Payload> payloads;
    std::vector<std::string> rank_vars;  // the lets of the point's rank, outermost first
};

/** A store of select(condition, value, the element) to one element, as the
 * stores of a Tuple update that keeps a point are. */
struct SelectUpdate {
    const Store *store;
    Expr condition, value;           // with the lets in the stored value substituted
    const LetStmt *computed_before;  // the let that evaluated it ahead of the stores, if any
    Reduction element;               // its element, as a reduction's (op unset)
};

/** The stores to one element per region (or per group of its threads) made
 * inside the thread loops of stage `stage` within `region`: the element is
 * fixed for the whole region, or depends only on some of the stage's thread
 * loops there (its groups), through lets at most. */
class FindReductions : public IRVisitor {
  public:
    FindReductions(const std::string &stage, const std::set<std::string> &per_thread)
        : stage(stage), per_thread(per_thread) {}
    std::vector<Reduction> found;
    /** Whether an update found to keep a point has no rank of its points
     * (gpu_point_rank lets) where it takes them. */
    bool unranked = false;

    /** Visits a region, then pairs the updates that keep a point. */
    void find_in(const Stmt &region) {
        region.accept(this);
        pair_updates_that_keep_a_point();
    }

    using IRVisitor::visit;
    void visit(const For *op) override {
        const bool stage_thread =
            op->for_type == ForType::GPUThread && stage_of_loop(op->name) == stage;
        // A thread loop whose bounds the region computes cannot be re-made
        // after it, where its groups fold their totals.
        bool bounds_fixed = true;
        for (const Expr &e : {op->min, op->extent}) {
            for (const std::string &v : free_variables(e)) bounds_fixed &= !bound.contains(v);
        }
        std::set<std::string> self;
        if (stage_thread && bounds_fixed) self.insert(op->name);
        else self.insert("");  // "": something no group may depend on
        ScopedBinding<std::set<std::string>> b(bound, op->name, self);
        if (stage_thread) stage_threads.push_back(op);
        unfixed_threads += stage_thread && !bounds_fixed;
        op->body.accept(this);
        unfixed_threads -= stage_thread && !bounds_fixed;
        if (stage_thread) stage_threads.pop_back();
    }
    void visit(const LetStmt *op) override {
        ScopedBinding<std::set<std::string>> b(bound, op->name, depends_on(op->value));
        let_order[op] = stores_seen;
        lets_open.push_back(op);
        op->body.accept(this);
        lets_open.pop_back();
    }
    void visit(const Allocate *op) override {
        ScopedBinding<std::set<std::string>> b(bound, op->name, {""});
        op->body.accept(this);
    }
    void visit(const IfThenElse *op) override {
        conditions_open.push_back(op->condition);
        op->then_case.accept(this);
        conditions_open.pop_back();
        if (op->else_case.defined()) {
            conditions_open.push_back(!op->condition);
            op->else_case.accept(this);
            conditions_open.pop_back();
        }
    }
    void visit(const Store *op) override {
        IRVisitor::visit(op);  // (its loads)
        if (stage_threads.empty() || per_thread.count(op->name) || bound.contains(op->name)) {
            return;
        }
        stores_of[op->name]++;
        order_of[op] = stores_seen++;
        lets_of[op] = lets_open;
        rank_lets_at[op] = rank_lets_open();
        std::set<std::string> deps = depends_on(op->index);
        if (deps.count("")) return;  // a different element per iteration
        Reduction r;
        r.buffer = op->name;
        r.index = op->index;
        r.type = op->value.type();
        r.group_loops = deps;
        r.reduced = 0;
        if (!describe_element(op, deps, &r)) return;
        if (record_select_update(op, r)) return;
        Expr value;
        if (!as_associative_update(op, &r.op, &value)) return;  // refused as a race later
        // (Every min or max may be a site of an extreme whose point is kept.)
        if (r.op == VectorReduce::Max || r.op == VectorReduce::Min) extreme_values[op] = value;
        for (const Reduction &other : found) {
            if (other.buffer == op->name) return;  // a second update: refused later
        }
        found.push_back(r);
    }
    void visit(const Load *op) override {
        loads.push_back(op);
        IRVisitor::visit(op);
    }

  private:
    /** Fills in r's grouping: the thread dimensions reduced over, the lets
     * its index reads, and for a grouped reduction its loops and condition.
     * False where there is nothing to reduce (an element per thread), or
     * the groups cannot be found again after the region. */
    bool describe_element(const Store *op, const std::set<std::string> &deps, Reduction *out) {
        Reduction &r = *out;
        // The innermost thread loop is x, the next y, then z.
        for (size_t i = 0; i < stage_threads.size(); i++) {
            if (!deps.count(stage_threads[i]->name))
                r.reduced |= 1 << (stage_threads.size() - 1 - i);
        }
        if (r.reduced == 0) return false;  // one element per thread: no reduction
        std::set<std::string> needed = free_variables(op->index);
        if (deps.empty()) {
            r.reduced = 7;
        } else {
            if (unfixed_threads) return false;  // its groups cannot be found again: refused later
            r.thread_loops = stage_threads;
            for (const Expr &c : conditions_open) {
                std::set<std::string> on = depends_on(c);
                bool group_only = !on.empty() && !on.count("");
                for (const std::string &d : on) group_only &= deps.count(d) > 0;
                if (!group_only) continue;
                r.group_condition = r.group_condition.defined() ? (r.group_condition && c) : c;
                for (const std::string &v : free_variables(c)) needed.insert(v);
            }
        }
        // The region's lets the fold after it needs again: those of the
        // index (a loop invariant hoisted out of an unrolled loop, say,
        // names the element) and of the group's condition.
        for (auto l = lets_open.rbegin(); l != lets_open.rend(); ++l) {
            if (!needed.count((*l)->name)) continue;
            r.index_lets.insert(r.index_lets.begin(), {(*l)->name, (*l)->value});
            for (const std::string &v : free_variables((*l)->value)) needed.insert(v);
        }
        return true;
    }

    /** Records op if it stores select(c, x, the element), directly or
     * through a let that computed it before the stores. */
    bool record_select_update(const Store *op, const Reduction &element) {
        Expr condition, value;
        const LetStmt *before = nullptr;
        if (!as_select_update(op, lets_open, &condition, &value, &before)) return false;
        selects.push_back({op, condition, value, before, element});
        return true;
    }

    /** Where a key's extreme changes: the key's store, with the value the
     * point brings (v) and the test of v against the key's old value under
     * which the point is taken (and every payload takes its value). */
    struct KeySite {
        const Store *store;
        Expr value, test;
        VectorReduce::Op op;
        bool strict = true;
        std::vector<const SelectUpdate *> payloads;
    };

    /** Makes the reductions that keep a point. A key is an element updated
     * with select(test, v, key) where the test compares v with the key's
     * old value (or with min or max of the two); each payload takes its
     * value under the same test, evaluated after the key's previous store
     * and before this one, with the same bindings of what the test reads.
     * An unrolled loop makes several such sites, all of which must agree. */
    void pair_updates_that_keep_a_point() {
        std::map<std::string, std::vector<KeySite>> sites;  // by key buffer, in order
        std::set<const SelectUpdate *> keys;
        for (const SelectUpdate &u : selects) {
            Expr a, b;
            bool strict;
            if (!as_less(u.condition, &a, &b, &strict)) continue;
            auto is_old = [&](const Expr &e) {
                const Load *l = e.as<Load>();
                return l && l->name == u.store->name && equal(l->index, u.store->index);
            };
            VectorReduce::Op op;
            if (is_old(a) && equal(b, u.value)) op = VectorReduce::Max;
            else if (is_old(b) && equal(a, u.value)) op = VectorReduce::Min;
            else continue;
            sites[u.store->name].push_back({u.store, u.value, u.condition, op, strict, {}});
            keys.insert(&u);
        }
        for (const auto &[store, value] : extreme_values) {
            VectorReduce::Op op = VectorReduce::Max;
            Expr ignored;
            as_associative_update(store, &op, &ignored);
            sites[store->name].push_back({store, value, Expr(), op, true, {}});
        }
        for (auto &entry : sites) {
            std::sort(entry.second.begin(), entry.second.end(),
                      [&](const KeySite &x, const KeySite &y) {
                          return order_of.at(x.store) < order_of.at(y.store);
                      });
        }
        // Each payload to the first site of its key at or after it.
        std::set<std::string> failed;
        for (const SelectUpdate &p : selects) {
            if (keys.count(&p)) continue;
            Expr a, b;
            bool strict;
            if (!as_less(p.condition, &a, &b, &strict)) continue;
            for (const Expr &side : {a, b}) {
                const Load *old = side.as<Load>();
                auto it = old ? sites.find(old->name) : sites.end();
                if (it == sites.end()) continue;
                const size_t evaluated =
                    p.computed_before ? let_order.at(p.computed_before) : order_of.at(p.store);
                // (A payload computed in a let sees the lets outside it.)
                std::vector<const LetStmt *> scope = lets_of.at(p.store);
                if (p.computed_before) {
                    scope.resize(std::find(scope.begin(), scope.end(), p.computed_before) -
                                 scope.begin());
                }
                KeySite *site = nullptr;
                for (KeySite &k : it->second) {
                    if (order_of.at(k.store) >= evaluated) {
                        site = &k;
                        break;
                    }
                }
                bool matches = site && equal(old->index, site->store->index);
                for (const std::string &v : free_variables(p.condition)) {
                    matches = matches && innermost_binding(scope, v) ==
                                             innermost_binding(lets_of.at(site->store), v);
                }
                if (matches && site->test.defined()) {
                    matches = equal(p.condition, site->test);
                } else if (matches) {
                    // min or max of the key: the test must be v against the key.
                    const Expr &other = side.same_as(a) ? b : a;
                    const bool greater_wins = side.same_as(a);
                    matches = equal(other, site->value) &&
                              greater_wins == (site->op == VectorReduce::Max);
                    if (matches) {
                        site->test = p.condition;
                        site->strict = strict;
                    }
                }
                if (matches) site->payloads.push_back(&p);
                else failed.insert(it->first);
                break;
            }
        }
        for (const auto &[buffer, key_sites] : sites) {
            if (!failed.count(buffer)) make_reduction(key_sites);
        }
    }

    /** The reduction of a key's sites, if they agree: the same extreme, the
     * same strictness, the same payloads once each, and every store to and
     * read of their elements is one of theirs. */
    void make_reduction(const std::vector<KeySite> &key_sites) {
        const KeySite &first = key_sites.front();
        if (first.payloads.empty()) return;
        std::vector<std::pair<std::string, Expr>> elements;  // payloads: buffer, index
        for (const SelectUpdate *p : first.payloads) {
            elements.push_back({p->store->name, p->store->index});
        }
        for (const KeySite &k : key_sites) {
            if (k.op != first.op || k.strict != first.strict || !k.test.defined() ||
                !equal(k.store->index, first.store->index) ||
                k.payloads.size() != elements.size()) {
                return;
            }
            for (size_t j = 0; j < elements.size(); j++) {
                if (k.payloads[j]->store->name != elements[j].first ||
                    !equal(k.payloads[j]->store->index, elements[j].second)) {
                    return;
                }
            }
        }
        std::set<std::string> group{first.store->name};
        for (const auto &e : elements) group.insert(e.first);
        for (const std::string &b : group) {
            if (stores_of[b] != static_cast<int>(key_sites.size())) return;
        }
        for (const SelectUpdate &u : selects) {
            if (group.count(u.store->name) && loads_from(u.value, group)) return;
        }
        for (const auto &[store, value] : extreme_values) {
            if (group.count(store->name) && loads_from(value, group)) return;
        }
        // Every read of the group's elements is of the elements themselves.
        for (const Load *l : loads) {
            if (!group.count(l->name)) continue;
            Expr index = first.store->index;
            for (const auto &e : elements) {
                if (e.first == l->name) index = e.second;
            }
            if (!equal(l->index, index)) return;
        }
        // Each site's grouping is the element's, and the fold binds the
        // lets any of the indices read, in the key's order of them.
        const SelectUpdate *key_select = nullptr;
        for (const SelectUpdate &u : selects) {
            if (u.store == first.store) key_select = &u;
        }
        Reduction r = key_select ? key_select->element : extreme_reduction(first.store);
        std::set<std::string> needed;
        for (const auto &l : r.index_lets) needed.insert(l.first);
        for (const KeySite &k : key_sites) {
            for (const SelectUpdate *p : k.payloads) {
                if (p->element.group_loops != r.group_loops || p->element.reduced != r.reduced) {
                    return;
                }
                for (const auto &l : p->element.index_lets) needed.insert(l.first);
            }
        }
        r.index_lets.clear();
        for (const LetStmt *l : lets_of.at(first.store)) {
            if (needed.erase(l->name)) r.index_lets.push_back({l->name, l->value});
        }
        if (!needed.empty()) return;
        r.rank_vars = rank_lets_at.at(first.store);
        for (const KeySite &k : key_sites) {
            if (rank_lets_at.at(k.store).empty() ||
                rank_lets_at.at(k.store).size() != r.rank_vars.size()) {
                unranked = true;
                return;
            }
        }
        r.op = first.op;
        r.keeps_point = true;
        r.strict = first.strict;
        for (const KeySite &k : key_sites) r.tests[k.store] = k.test;
        for (const SelectUpdate *p : first.payloads) {
            r.payloads.push_back({p->store->name, "", p->store->index, p->store->value.type()});
        }
        found.erase(std::remove_if(found.begin(), found.end(),
                                   [&](const Reduction &f) { return f.buffer == r.buffer; }),
                    found.end());
        found.push_back(r);
    }

    /** The reduction found for an extreme kept with min or max. */
    Reduction extreme_reduction(const Store *store) const {
        for (const Reduction &f : found) {
            if (f.buffer == store->name) return f;
        }
        return Reduction();
    }

    /** The open lets that rank the stage's point (gpu_point_rank),
     * outermost first. */
    std::vector<std::string> rank_lets_open() const {
        std::vector<std::string> names;
        for (const LetStmt *l : lets_open) {
            const Call *c = l->value.as<Call>();
            if (c && c->is_intrinsic(gpu_intrinsic::point_rank) &&
                stage_of_loop(l->name) == stage) {
                names.push_back(l->name);
            }
        }
        return names;
    }

    std::string stage;
    const std::set<std::string> &per_thread;
    std::vector<SelectUpdate> selects;
    std::map<const Store *, Expr> extreme_values;  // min/max updates, by store: the value
    std::map<const Store *, size_t> order_of;
    std::map<const LetStmt *, size_t> let_order;  // the region's stores before each let
    std::map<const Store *, std::vector<const LetStmt *>> lets_of;
    std::map<std::string, int> stores_of;
    size_t stores_seen = 0;
    std::vector<const Load *> loads;
    std::map<const Store *, std::vector<std::string>> rank_lets_at;  // rank_lets_open() at each
    /** Names the region binds, each with the stage's thread loops its value
     * depends on ("" for anything else the region binds). */
    Scope<std::set<std::string>> bound;
    std::vector<const For *> stage_threads;  // open, outermost first
    int unfixed_threads = 0;                 // open ones whose bounds the region computes
    std::vector<const LetStmt *> lets_open;
    std::vector<Expr> conditions_open;  // around the statement visited

    std::set<std::string> depends_on(const Expr &e) const {
        std::set<std::string> deps;
        for (const std::string &v : free_variables(e)) {
            if (bound.contains(v)) {
                for (const std::string &d : bound.get(v)) deps.insert(d);
            }
        }
        return deps;
    }
};

/** Drops the lets nothing reads any more (an element's index, once the
 * element became a partial), leaving those whose values call anything. */
class DropUnreadLets : public IRMutator {
    using IRMutator::visit;
    Stmt visit(const LetStmt *op) override {
        Stmt body = mutate(op->body);
        struct HasCall : IRVisitor {
            bool found = false;
            using IRVisitor::visit;
            void visit(const Call *) override { found = true; }
        } calls;
        op->value.accept(&calls);
        if (!calls.found && !stmt_uses_var(body, op->name)) return body;
        return body.same_as(op->body) ? Stmt(op) : LetStmt::make(op->name, op->value, body);
    }
};

/** The names of the registers of a reduction that keeps a point. */
std::string rank_partial(const Reduction &r, size_t k) {
    return r.partial + ".rank" + std::to_string(k);
}
std::string best_of(const std::string &partial) { return partial + ".best"; }

/** The rank of no point: later than every point when the first point
 * attaining the extreme wins, earlier when the last does. */
Expr no_rank(const Reduction &r) { return r.strict ? type_max(Int(32)) : type_min(Int(32)); }

/** Replaces the region's updates of each reduction's element by updates of
 * the thread's partial. A reduction that keeps a point reads and writes its
 * partials for its elements, and ranks the point its key takes by the
 * update's RVars (with the key's test, before the key changes). */
class AccumulatePartials : public IRMutator {
  public:
    explicit AccumulatePartials(const std::vector<Reduction> &r) : reductions(r) {}
    using IRMutator::visit;
    Expr visit(const Load *op) override {
        for (const Reduction &r : reductions) {
            if (!r.keeps_point) continue;
            if (op->name == r.buffer && equal(op->index, r.index)) {
                return Load::make(r.type, r.partial, 0, const_true());
            }
            for (const Reduction::Payload &p : r.payloads) {
                if (op->name == p.buffer && equal(op->index, p.index)) {
                    return Load::make(p.type, p.partial, 0, const_true());
                }
            }
        }
        return IRMutator::visit(op);
    }
    Stmt visit(const Store *op) override {
        for (const Reduction &r : reductions) {
            if (r.keeps_point) {
                if (op->name == r.buffer && equal(op->index, r.index)) return keep_point(r, op);
                for (const Reduction::Payload &p : r.payloads) {
                    if (op->name == p.buffer && equal(op->index, p.index)) {
                        return Store::make(p.partial, mutate(op->value), 0, const_true());
                    }
                }
                continue;
            }
            VectorReduce::Op reduce;
            Expr value;
            if (op->name == r.buffer && equal(op->index, r.index) &&
                as_associative_update(op, &reduce, &value) && reduce == r.op) {
                Expr partial = Load::make(r.type, r.partial, 0, const_true());
                return Store::make(r.partial, combine(r.op, partial, value), 0, const_true());
            }
        }
        return op;
    }

  private:
    const std::vector<Reduction> &reductions;

    /** The key's update of its partial, after the ranks' updates under the
     * test of the value against the partial's old value. */
    Stmt keep_point(const Reduction &r, const Store *op) {
        Expr taken = mutate(r.tests.at(op));
        std::vector<Stmt> steps;
        for (size_t k = 0; k < r.rank_vars.size(); k++) {
            Expr rank = Load::make(Int(32), rank_partial(r, k), 0, const_true());
            steps.push_back(Store::make(
                rank_partial(r, k), select(taken, Variable::make(Int(32), r.rank_vars[k]), rank), 0,
                const_true()));
        }
        steps.push_back(Store::make(r.partial, mutate(op->value), 0, const_true()));
        return Block::make(steps);
    }
};

class LowerBlockLevel : public IRMutator {
  public:
    explicit LowerBlockLevel(const std::string &kernel) : kernel(kernel) {}
    /** Every thread's own storage: what it owns, and the copies it keeps. */
    std::set<std::string> per_thread;

    using IRMutator::visit;

    Stmt visit(const For *op) override {
        if (threads_open == 0 && op->for_type != ForType::GPUBlock &&
            (op->for_type == ForType::GPUThread || has_thread_loop(op->body))) {
            const std::string stage = stage_of_loop(op->name);
            if (!open_regions.count(stage)) {
                FindReductions find(stage, owned);
                find.find_in(Stmt(op));
                user_assert(!find.unranked)
                    << "Kernel " << kernel << " shares among its threads an update of "
                    << func_of_loop(stage)
                    << " that keeps the point reaching an extreme (as argmax does), but cannot "
                       "rank the points its threads take, to keep the one the serial loop "
                       "would. Make the update's loops serial.";
                if (!find.found.empty()) return lower_region(op, stage, find.found);
            }
        }
        std::set<std::string> deps;
        if (op->for_type == ForType::GPUThread) {
            deps.insert(op->name);
        } else {
            deps = depends_on(op->min);
            for (const std::string &d : depends_on(op->extent)) deps.insert(d);
        }
        ScopedBinding<std::set<std::string>> bind(thread_dependence, op->name, deps);
        const bool thread = op->for_type == ForType::GPUThread;
        const int64_t *extent = as_const_int(op->extent);
        const bool several = thread && !(extent && *extent == 1);
        const bool block_level_loop =
            threads_open == 0 && !thread && op->for_type != ForType::GPUBlock;
        threads_open += thread;
        if (several) thread_loops.push_back(op);
        if (block_level_loop) block_level_loops.push_back(op);
        Stmt s = IRMutator::visit(op);
        if (block_level_loop) block_level_loops.pop_back();
        if (several) thread_loops.pop_back();
        threads_open -= thread;
        return s;
    }
    Stmt visit(const LetStmt *op) override {
        ScopedBinding<std::set<std::string>> bind(thread_dependence, op->name,
                                                  depends_on(op->value));
        return IRMutator::visit(op);
    }
    Stmt visit(const Allocate *op) override {
        // Register storage at the block level is each thread's own
        // (privatize_thread_owned_storage proved that it may be).
        if (threads_open > 0 || op->memory_type == MemoryType::Register) {
            per_thread.insert(op->name);
            if (threads_open == 0 && op->replicated) replicated.insert(op->name);
            else owned.insert(op->name);
        }
        return IRMutator::visit(op);
    }
    Stmt visit(const Store *op) override {
        if (per_thread.count(op->name)) {
            // Inside the thread loops, a copy that every thread keeps is
            // only updated by reductions across them, made above.
            user_assert(threads_open == 0 || owned.count(op->name))
                << "Kernel " << kernel << " keeps a copy of " << op->name
                << " in every thread (MemoryType::Register at a block loop), but its update "
                   "inside the thread loops (at "
                << op->index
                << ") is not a reduction across the threads that they could combine, so the "
                   "copies would differ. Store it in MemoryType::Shared.";
            return op;
        }
        if (threads_open == 0) {
            user_assert(block_level_loops.empty())
                << "Kernel " << kernel << " stores to " << op->name
                << " outside its gpu_threads loops, in the serial loop "
                << block_level_loops.back()->name
                << ": one thread of each block would compute all of it while the others wait. "
                   "A Func computed at a block loop is shared by the block and computed by its "
                   "threads: mark its loops with gpu_threads (compute_at(consumer, "
                   "xo).gpu_threads(x, y)), or compute it inside the thread loops.";
            // A single point (a reduction's initial value): once, by one
            // thread (insert_gpu_barriers makes the others wait for it
            // where they read it).
            return IfThenElse::make(intrinsic(Bool(), gpu_intrinsic::first_thread), op);
        }
        std::set<std::string> deps = depends_on(op->index);
        for (const For *t : thread_loops) {
            user_assert(deps.count(t->name))
                << "Kernel " << kernel << " has every thread of the gpu_threads loop " << t->name
                << " store to the same element of " << op->name << " (at " << op->index
                << "). A reduction across a block's threads must update its element with +, "
                   "*, min, max, && or || of its own value (f(x) = f(x) + e), or keep the "
                   "point where a value reaches its max or min (argmax: every element of a "
                   "Tuple becomes select(v > f(x)[1], its value at the point, its old value), "
                   "one test against the extreme's old value), once per stage, at an element "
                   "fixed for the whole reduction or for each point of the stage's other "
                   "gpu_threads loops. Otherwise make the loop serial, or mark a pure "
                   "variable of "
                << func_of_loop(t->name) << " with gpu_threads instead.";
        }
        return op;
    }

  private:
    std::string kernel;
    /** The per-thread storage at the block level that every thread keeps
     * a whole copy of (Allocate::replicated), and the rest: what a
     * reduction across the threads does not update. */
    std::set<std::string> replicated, owned;
    int threads_open = 0;
    std::vector<const For *> thread_loops;       // open ones with several threads
    std::vector<const For *> block_level_loops;  // serial loops outside them
    Scope<std::set<std::string>> thread_dependence;
    std::set<std::string> open_regions;
    std::map<std::string, int> partial_names;

    /** The thread loops e varies with. */
    std::set<std::string> depends_on(const Expr &e) {
        std::set<std::string> deps;
        for (const std::string &v : free_variables(e)) {
            if (thread_dependence.contains(v)) {
                for (const std::string &d : thread_dependence.get(v)) deps.insert(d);
            }
        }
        return deps;
    }

    Stmt lower_region(const For *op, const std::string &stage, std::vector<Reduction> found) {
        // Each thread's registers: the partial, and for a reduction that
        // keeps a point its payloads' partials, the point's rank, and the
        // combined extreme and rank.
        std::vector<std::pair<std::string, Type>> registers;
        for (Reduction &r : found) {
            int n = partial_names[r.buffer]++;
            r.partial = r.buffer + ".partial" + (n ? std::to_string(n) : "");
            registers.push_back({r.partial, r.type});
            if (!r.keeps_point) continue;
            registers.push_back({best_of(r.partial), r.type});
            for (Reduction::Payload &p : r.payloads) {
                int m = partial_names[p.buffer]++;
                p.partial = p.buffer + ".partial" + (m ? std::to_string(m) : "");
                registers.push_back({p.partial, p.type});
            }
            for (size_t k = 0; k < r.rank_vars.size(); k++) {
                registers.push_back({rank_partial(r, k), Int(32)});
                registers.push_back({best_of(rank_partial(r, k)), Int(32)});
            }
        }
        for (const auto &reg : registers) {
            per_thread.insert(reg.first);
            owned.insert(reg.first);
        }
        open_regions.insert(stage);
        Stmt loop = mutate(DropUnreadLets().mutate(AccumulatePartials(found).mutate(Stmt(op))));
        open_regions.erase(stage);

        std::vector<Stmt> steps;
        auto set = [&](const std::string &reg, const Expr &value) {
            steps.push_back(Store::make(reg, value, 0, const_true()));
        };
        auto get = [](const std::string &reg, Type t) {
            return Load::make(t, reg, 0, const_true());
        };
        for (const Reduction &r : found) {
            set(r.partial, reduction_identity(r.op, r.type));
            for (const Reduction::Payload &p : r.payloads) set(p.partial, make_zero(p.type));
            for (size_t k = 0; k < r.rank_vars.size(); k++) set(rank_partial(r, k), no_rank(r));
        }
        steps.push_back(loop);
        for (const Reduction &r : found) {
            const bool grouped = !r.thread_loops.empty();
            auto reduce = [&](const Expr &value, VectorReduce::Op op) {
                Expr op_code = make_const(Int(32), static_cast<int>(op));
                return grouped
                           ? intrinsic(value.type(), gpu_intrinsic::group_reduce,
                                       {value, op_code, make_const(Int(32), r.reduced)})
                           : intrinsic(value.type(), gpu_intrinsic::block_reduce, {value, op_code});
            };
            Expr partial = get(r.partial, r.type);
            Expr element = Load::make(r.type, r.buffer, r.index, const_true());
            Stmt fold;
            Expr folder;  // the thread that folds the total into the element
            if (!r.keeps_point) {
                set(r.partial, reduce(partial, r.op));
                fold =
                    Store::make(r.buffer, combine(r.op, element, partial), r.index, const_true());
            } else {
                // The extreme over the threads; then, among the threads that
                // reached it, the first point (or the last) by the RVars,
                // outermost first. The thread holding that point folds it,
                // with its payloads, into the element under the update's own
                // test, as the serial loop would at that point.
                set(best_of(r.partial), reduce(partial, r.op));
                Expr holds = partial == get(best_of(r.partial), r.type) &&
                             get(rank_partial(r, 0), Int(32)) != no_rank(r);
                for (size_t k = 0; k < r.rank_vars.size(); k++) {
                    Expr rank = get(rank_partial(r, k), Int(32));
                    set(best_of(rank_partial(r, k)),
                        reduce(select(holds, rank, no_rank(r)),
                               r.strict ? VectorReduce::Min : VectorReduce::Max));
                    holds = holds && rank == get(best_of(rank_partial(r, k)), Int(32));
                }
                folder = holds;
                Expr better = r.op == VectorReduce::Max
                                  ? (r.strict ? element < partial : element <= partial)
                                  : (r.strict ? partial < element : partial <= element);
                std::vector<Stmt> stores{Store::make(r.buffer, partial, r.index, const_true())};
                for (const Reduction::Payload &p : r.payloads) {
                    stores.push_back(
                        Store::make(p.buffer, get(p.partial, p.type), p.index, const_true()));
                }
                fold = IfThenElse::make(better, Block::make(stores));
            }
            if (r.group_condition.defined()) fold = IfThenElse::make(r.group_condition, fold);
            for (auto l = r.index_lets.rbegin(); l != r.index_lets.rend(); ++l) {
                fold = LetStmt::make(l->first, l->second, fold);
            }
            // The first thread of the block; of a group, the one at the
            // first point of the loops reduced over, with the stage's thread
            // loops made again around it (on the same dimensions) to give
            // its group's coordinates. (A kept point's holder is one thread
            // of its group already.)
            // A copy that every thread keeps: every thread folds the
            // total (the same bits in each) into its own.
            const bool every_thread = replicated.count(r.buffer) > 0;
            internal_assert(!every_thread || (!grouped && !r.keeps_point))
                << "replicated " << r.buffer << " reduced by groups or keeping a point";
            if (!folder.defined() && !every_thread) {
                folder = grouped ? Expr() : intrinsic(Bool(), gpu_intrinsic::first_thread);
                for (const For *t : r.thread_loops) {
                    if (r.group_loops.count(t->name)) continue;
                    Expr at_min = Variable::make(Int(32), t->name) == t->min;
                    folder = folder.defined() ? (folder && at_min) : at_min;
                }
            }
            if (folder.defined()) fold = IfThenElse::make(folder, fold);
            for (auto it = r.thread_loops.rbegin(); it != r.thread_loops.rend(); ++it) {
                const For *t = *it;
                fold =
                    For::make(t->name, t->min, t->extent, ForType::GPUThread, fold, t->attributes);
            }
            steps.push_back(fold);
        }
        Stmt s = Block::make(steps);
        for (const auto &reg : registers) {
            s = Allocate::make(reg.first, reg.second, MemoryType::Register, {}, const_true(), s);
        }
        return s;
    }
};

/** Turns the gpu_point_rank lets back into plain ones, where a thread's
 * rank of its point reads them, and drops the rest. */
class DropPointRanks : public IRMutator {
    using IRMutator::visit;
    Stmt visit(const LetStmt *op) override {
        const Call *c = op->value.as<Call>();
        if (!c || !c->is_intrinsic(gpu_intrinsic::point_rank)) return IRMutator::visit(op);
        Stmt body = mutate(op->body);
        return stmt_uses_var(body, op->name) ? LetStmt::make(op->name, c->args[0], body) : body;
    }
};

}  // namespace

bool has_thread_loop(const Stmt &s) {
    struct Find : IRVisitor {
        bool found = false;
        using IRVisitor::visit;
        void visit(const For *op) override {
            found = found || op->for_type == ForType::GPUThread;
            if (!found) IRVisitor::visit(op);
        }
    } find;
    s.accept(&find);
    return find.found;
}

bool reduces_across_threads(const For *loop, const std::set<std::string> &per_thread) {
    FindReductions find(stage_of_loop(loop->name), per_thread);
    find.find_in(Stmt(loop));
    return !find.found.empty();
}

BlockLevelKernel lower_block_level_code(const Stmt &body, const std::string &kernel) {
    BlockLevelKernel k;
    if (!has_thread_loop(body)) {
        k.body = body;
        return k;
    }
    LowerBlockLevel lower(kernel);
    k.body = DropPointRanks().mutate(lower.mutate(body));
    k.per_thread = lower.per_thread;
    return k;
}

}  // namespace internal
}  // namespace loom
