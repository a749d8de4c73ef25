#include "lower/HoistVectorReductions.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "fusion/AssociativeUpdates.h"
#include "gpu/GpuLoopLevel.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

/** buffer[index] = op(buffer[index], lets(vector_reduce(op, v))): the
 * vector of terms, with the lets around it. */
struct VectorUpdate {
    const Store *store;
    VectorReduce::Op op;
    std::vector<std::pair<std::string, Expr>> lets;  // outermost first
    Expr terms;
};

bool as_vector_update(const Store *st, VectorUpdate *u) {
    Expr value;
    if (!as_associative_update(st, &u->op, &value)) return false;
    u->lets.clear();
    while (const Let *l = value.as<Let>()) {
        u->lets.emplace_back(l->name, l->value);
        value = l->body;
    }
    const VectorReduce *r = value.as<VectorReduce>();
    if (!r || r->op != u->op || !r->type.is_scalar()) return false;
    u->store = st;
    u->terms = r->value;
    return true;
}

/** The accumulating stores of a loop's body, grouped by buffer, and how
 * often the body loads and stores each buffer. */
class FindVectorUpdates : public IRVisitor {
  public:
    std::map<std::string, std::vector<VectorUpdate>> updates;
    std::map<std::string, int> loads, stores;

    using IRVisitor::visit;
    void visit(const Store *op) override {
        stores[op->name]++;
        VectorUpdate u;
        if (as_vector_update(op, &u)) updates[op->name].push_back(u);
        IRVisitor::visit(op);
    }
    void visit(const Load *op) override {
        loads[op->name]++;
        IRVisitor::visit(op);
    }
};

/** Replaces the chosen updates of one buffer by updates of the partials. */
class AccumulatePartials : public IRMutator {
  public:
    AccumulatePartials(const std::vector<VectorUpdate> &u, const std::string &partial)
        : updates(u), partial(partial) {}
    using IRMutator::visit;
    Stmt visit(const Store *op) override {
        for (const VectorUpdate &u : updates) {
            if (u.store != op) continue;
            int lanes = u.terms.type().lanes;
            Expr all = Ramp::make(make_zero(Int(32)), make_one(Int(32)), lanes);
            Expr sofar = Load::make(u.terms.type(), partial, all, const_true());
            Expr value = combine(u.op, sofar, u.terms);
            for (auto l = u.lets.rbegin(); l != u.lets.rend(); ++l) {
                value = Let::make(l->first, l->second, value);
            }
            return Store::make(partial, value, all, const_true());
        }
        return IRMutator::visit(op);
    }

  private:
    const std::vector<VectorUpdate> &updates;
    std::string partial;
};

class HoistVectorReductions : public IRMutator {
  public:
    using IRMutator::visit;
    Stmt visit(const For *op) override {
        Stmt body = level.inside(op, [&] { return mutate(op->body); });
        Stmt loop = body.same_as(op->body) ? Stmt(op)
                                           : For::make(op->name, op->min, op->extent, op->for_type,
                                                       body, op->attributes);
        if (op->for_type != ForType::Serial || level.block_level()) {
            return loop;
        }
        return hoist_out_of(loop);
    }

  private:
    GpuLoopLevel level;
    int made = 0;

    Stmt hoist_out_of(Stmt loop) {
        const Stmt original = loop;  // keeps the stores found alive while loop is rewritten
        const For *f = original.as<For>();
        FindVectorUpdates find;
        f->body.accept(&find);
        std::set<std::string> bound = names_defined_in(f->body);
        bound.insert(f->name);
        std::vector<Stmt> inits, folds;
        std::vector<std::pair<std::string, Type>> partials;
        for (const auto &entry : find.updates) {
            const std::string &buffer = entry.first;
            const std::vector<VectorUpdate> &us = entry.second;
            const VectorUpdate &first = us.front();
            // Every access to the buffer in the loop is one of these
            // updates of one element that the loop does not move.
            bool ok = !bound.count(buffer) && find.stores[buffer] == static_cast<int>(us.size()) &&
                      find.loads[buffer] == static_cast<int>(us.size());
            for (const std::string &v : free_variables(first.store->index)) {
                ok = ok && !bound.count(v);
            }
            for (const VectorUpdate &u : us) {
                ok = ok && u.op == first.op && u.terms.type() == first.terms.type() &&
                     equal(u.store->index, first.store->index);
            }
            if (!ok) continue;
            Type t = first.terms.type();
            int lanes = t.lanes;
            std::string partial = buffer + ".lanes." + std::to_string(made++);
            loop = AccumulatePartials(us, partial).mutate(loop);
            Expr all = Ramp::make(make_zero(Int(32)), make_one(Int(32)), lanes);
            inits.push_back(Store::make(
                partial, Broadcast::make(reduction_identity(first.op, t.element_of()), lanes), all,
                const_true()));
            Expr element = Load::make(t.element_of(), buffer, first.store->index, const_true());
            Expr total = VectorReduce::make(first.op, Load::make(t, partial, all, const_true()), 1);
            folds.push_back(Store::make(buffer, combine(first.op, element, total),
                                        first.store->index, const_true(), first.store->param));
            partials.push_back({partial, t});
        }
        if (partials.empty()) return loop;
        std::vector<Stmt> steps = inits;
        steps.push_back(loop);
        steps.insert(steps.end(), folds.begin(), folds.end());
        Stmt result = Block::make(steps);
        for (const auto &p : partials) {
            result = Allocate::make(p.first, p.second.element_of(), MemoryType::Auto,
                                    {make_const(Int(32), p.second.lanes)}, const_true(), result);
        }
        return result;
    }
};

}  // namespace

Stmt hoist_vector_reductions(const Stmt &s) {
    struct HasVectorReduce : IRVisitor {
        bool found = false;
        using IRVisitor::visit;
        void visit(const VectorReduce *) override { found = true; }
    } has;
    s.accept(&has);
    // Most pipelines have none: no need to walk each loop's body.
    if (!has.found) return s;
    return HoistVectorReductions().mutate(s);
}

}  // namespace internal
}  // namespace loom
