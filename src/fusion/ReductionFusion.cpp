// Reduction fusion: see ReductionFusion.h.
#include "fusion/ReductionFusion.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <sstream>

#include "arith/Simplify.h"
#include "fusion/RepairConditioning.h"
#include "fusion/RepairDerivation.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "ir/Util.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

std::string directive_name(const FusionDirective &d) {
    std::string s = d.kind == FusionDirective::RollingUpdate ? "rolling_update" : "split_k";
    return s + "(" + d.func + ", " + d.rvar + ")";
}

Expr pure_var(const std::string &name) { return Variable::make(Int(32), name); }

std::vector<Expr> pure_args(const FunctionPtr &f) {
    std::vector<Expr> args;
    for (const std::string &a : f->args) args.push_back(pure_var(a));
    return args;
}

/** Applies a split, fuse or rename of the fused update's loops to a pure
 * definition's loops, where it has the Vars that it consumes (not an
 * RVar's split, nor a Var of the leader's alone in another member). */
void apply_to_pure_loops(const Split &sp, StageSchedule *init) {
    auto index_of = [&](const std::string &v) {
        for (size_t k = 0; k < init->dims.size(); k++) {
            if (init->dims[k].var == v) return static_cast<int>(k);
        }
        return -1;
    };
    if (sp.kind == Split::FuseVars) {
        const int o = index_of(sp.outer), i = index_of(sp.inner);
        if (o < 0 || i < 0) return;
        init->dims[o].var = sp.old_var;
        init->dims.erase(init->dims.begin() + i);
    } else {
        const int at = index_of(sp.old_var);
        if (at < 0) return;
        if (sp.kind == Split::SplitVar) {
            init->dims[at].var = sp.inner;
            init->dims.insert(init->dims.begin() + at, Dim{sp.outer, ForType::Serial, false});
        } else {
            init->dims[at].var = sp.outer;
        }
    }
    init->splits.push_back(sp);
}

Expr call(const FunctionPtr &f, const std::vector<Expr> &args) {
    return Call::make(f->output_types[0], f->name, args, Call::Func, f);
}

/** Calls to Funcs (by name) anywhere in a definition. */
template <typename F> void visit_calls(const Expr &e, F f) {
    struct V : IRVisitor {
        F *f;
        using IRVisitor::visit;
        void visit(const Call *op) override {
            IRVisitor::visit(op);
            if (op->call_type == Call::Func) (*f)(op);
        }
    } v;
    v.f = &f;
    if (e.defined()) e.accept(&v);
}

template <typename F> void visit_calls(const FunctionContents &fn, F f) {
    auto def = [&](const Definition &d) {
        for (const Expr &e : d.values) visit_calls(e, f);
        for (const Expr &e : d.args) visit_calls(e, f);
        if (d.rdom && d.rdom->predicate.defined()) visit_calls(d.rdom->predicate, f);
    };
    def(fn.init);
    for (const Definition &u : fn.updates) def(u);
}

/** Replaces calls by name with whatever `replace` returns (undefined: keep). */
class ReplaceCalls : public IRMutator {
  public:
    std::function<Expr(const Call *)> replace;

  protected:
    using IRMutator::visit;
    Expr visit(const Call *op) override {
        Expr e = IRMutator::visit(op);
        const Call *c = e.as<Call>();
        if (c && c->call_type == Call::Func) {
            Expr r = replace(c);
            if (r.defined()) return r;
        }
        return e;
    }
};

/** The pivot of a Sum producer with running value `value` over `count`
 * terms of a domain of `extent` points: the value extrapolated to the whole
 * domain, value * (extent / count), about which its dependents keep their
 * state (Chain::pivots). */
Expr pivot_of(const Expr &value, const Expr &count, const Expr &extent) {
    Type t = value.type();
    return select(count > 0, value * (cast(t, extent) / cast(t, count)), value);
}

/** The reduction domains a pass over definitions rewrote, by the original:
 * definitions that shared a domain share its rewrite, since reduction
 * fusion finds a chain by the identity of its RDom. */
using DomainRewrites = std::map<const ReductionDomainContents *, ReductionDomainPtr>;

Definition map_definition(const Definition &d, const std::function<Expr(const Expr &)> &f,
                          DomainRewrites &domains) {
    Definition r = d;
    for (Expr &v : r.values) v = f(v);
    for (Expr &a : r.args) a = f(a);
    if (d.rdom && d.rdom->predicate.defined()) {
        auto known = domains.find(d.rdom.get());
        if (known != domains.end()) {
            r.rdom = known->second;
        } else {
            Expr p = f(d.rdom->predicate);
            if (!p.same_as(d.rdom->predicate)) {
                auto dom = std::make_shared<ReductionDomainContents>(*d.rdom);
                dom->predicate = p;
                r.rdom = dom;
            }
            domains[d.rdom.get()] = r.rdom;
        }
    }
    return r;
}

std::set<std::string> callers_of(const LoweringEnv &env, const std::string &name) {
    std::set<std::string> callers;
    for (const auto &kv : env.funcs) {
        visit_calls(*kv.second, [&](const Call *c) {
            if (c->name == name && kv.first != name) callers.insert(kv.first);
        });
    }
    return callers;
}

// ---------------------------------------------------------------- folding

/** Gives the inline reduction R behind the user's Func W (defined as
 * W(vars) = R(vars...)) W's name, Vars and schedule, so that the fused loops
 * carry the user's names and compute_at(W, loop) finds them. */
void fold_inline_reduction(LoweringEnv &env, const std::string &reduction,
                           const FunctionPtr &user_w, const ScheduleContents &s) {
    if (reduction == user_w->name || !env.funcs.count(reduction)) return;
    const FunctionPtr r = env.funcs.at(reduction);
    // Which of W's Vars each of R's Vars is, from W's definition.
    const Call *c = user_w->init.values[0].as<Call>();
    internal_assert(c && c->name == reduction);
    std::map<std::string, std::string> r_to_w;
    for (size_t k = 0; k < c->args.size(); k++) {
        r_to_w[r->args[k]] = c->args[k].as<Variable>()->name;
    }
    std::set<std::string> callers = callers_of(env, reduction);
    bool wrapper_in_env = env.funcs.count(user_w->name) > 0;
    if (wrapper_in_env) {
        // Only the wrapper may read R; otherwise R stays a separate Func.
        if (callers != std::set<std::string>{user_w->name}) return;
    }

    auto w = make_lowered_function(*r);
    w->name = user_w->name;
    w->args = user_w->args;
    w->is_inline_reduction = false;
    std::map<std::string, Expr> rename;
    for (const auto &kv : r_to_w) rename[kv.first] = pure_var(kv.second);
    ReplaceCalls self;
    self.replace = [&](const Call *op) -> Expr {
        if (op->name != reduction) return Expr();
        return Call::make(op->type, w->name, pure_args(w), Call::Func, w, op->value_index);
    };
    auto fix = [&](const Expr &e) { return self.mutate(substitute(rename, e)); };
    DomainRewrites domains;
    w->init = map_definition(r->init, fix, domains);
    w->init.args = pure_args(w);
    for (Definition &u : w->updates) {
        u = map_definition(u, fix, domains);
        u.args = pure_args(w);
    }

    // Callers of R now call W, with the arguments in W's order.
    ReplaceCalls to_w;
    to_w.replace = [&](const Call *op) -> Expr {
        if (op->name != reduction) return Expr();
        std::vector<Expr> args(w->args.size());
        for (size_t k = 0; k < op->args.size(); k++) {
            size_t pos =
                std::find(w->args.begin(), w->args.end(), r_to_w[r->args[k]]) - w->args.begin();
            args[pos] = op->args[k];
        }
        return Call::make(op->type, w->name, args, Call::Func, w, op->value_index);
    };
    for (auto &kv : env.funcs) {
        if (kv.first == reduction || kv.first == user_w->name) continue;
        auto copy = make_lowered_function(*kv.second);
        copy->init = map_definition(
            copy->init, [&](const Expr &e) { return to_w.mutate(e); }, domains);
        for (Definition &u : copy->updates)
            u = map_definition(
                u, [&](const Expr &e) { return to_w.mutate(e); }, domains);
        kv.second = copy;
        env.schedules[kv.first].func = copy;
    }

    // W's placement (if the user scheduled W), R's loop schedule.
    FuncSchedule fs = env.schedules.at(reduction);
    if (wrapper_in_env) {
        fs.compute_level = env.schedules.at(user_w->name).compute_level;
        fs.store_level = env.schedules.at(user_w->name).store_level;
    } else {
        auto it = s.funcs.find(user_w->name);
        if (it != s.funcs.end() && it->second.compute_level_set) {
            fs.compute_level = it->second.compute_level;
            fs.store_level = it->second.store_level;
        }
    }
    fs.func = w;
    if (!fs.stages.empty()) fs.stages[0] = default_stage_schedule(w, 0);
    env.funcs.erase(reduction);
    env.schedules.erase(reduction);
    env.funcs[w->name] = w;
    env.schedules[w->name] = fs;
    std::replace(env.order.begin(), env.order.end(), reduction, w->name);
    if (wrapper_in_env) {
        env.order.erase(std::find(env.order.begin(), env.order.end(), w->name));
        // The wrapper's slot in the order was after R's; R's slot now holds W.
    }
    for (FunctionPtr &o : env.outputs) {
        if (o->name == w->name) o = w;
    }
}

// ---------------------------------------------------------------- Tuple states

/** One element of a Tuple reduction as a reduction of its own. */
struct Element {
    ReduceOp op;
    Expr init, term;
};

/** Splits a Tuple-valued reduction T over `dom` into single-valued ones:
 * each element either reduces on its own (T[k] = T[k] op g_k, with g_k not
 * reading T), or T is the argmax (argmin) shape that argmax() builds:
 * every element select(e > T[v], t_k, T[k]) with t_v = e and the other t_k
 * the RVar. Then T[v] is the max of e, and T[k] the first point attaining
 * it, min(select(e == T[v], r, +inf)): a dependent of T[v], repaired like
 * any other. Returns the elements' names (empty if T is not of either
 * shape); calls to T[k] anywhere in env now read element k. */
std::vector<std::string> decompose_tuple(LoweringEnv &env, const std::string &name,
                                         const ReductionDomainPtr &dom) {
    FunctionPtr f = env.funcs.at(name);
    if (f->output_types.size() < 2 || f->updates.size() != 1 || f->updates[0].rdom != dom)
        return {};
    const Definition &u = f->updates[0];
    size_t n = f->output_types.size();
    for (size_t k = 0; k < u.args.size(); k++) {
        const Variable *v = u.args[k].as<Variable>();
        if (!v || v->name != f->args[k]) return {};
    }
    auto self = [&](size_t k) {
        return Call::make(f->output_types[k], name, pure_args(f), Call::Func, f,
                          static_cast<int>(k));
    };
    auto reads_self = [&](const Expr &e) {
        bool found = false;
        visit_calls(e, [&](const Call *c) { found |= c->name == name; });
        return found;
    };
    std::vector<Element> elements(n);
    bool independent = true;
    for (size_t k = 0; k < n && independent; k++) {
        const Expr &v = u.values[k];
        Expr a, b;
        ReduceOp op;
        if (const Add *x = v.as<Add>()) op = ReduceOp::Add, a = x->a, b = x->b;
        else if (const Mul *x = v.as<Mul>()) op = ReduceOp::Mul, a = x->a, b = x->b;
        else if (const Max *x = v.as<Max>()) op = ReduceOp::Max, a = x->a, b = x->b;
        else if (const Min *x = v.as<Min>()) op = ReduceOp::Min, a = x->a, b = x->b;
        else {
            independent = false;
            break;
        }
        if (equal(b, self(k))) std::swap(a, b);
        independent = equal(a, self(k)) && !reads_self(b);
        elements[k] = {op, f->init.values[k], b};
    }
    if (!independent) {
        // argmax / argmin: one condition e > T[v] (e < T[v]) selecting
        // every element.
        const Select *first = u.values[0].as<Select>();
        if (!first || dom->domain.size() != 1) return {};
        Expr cond = first->condition;
        Expr e, best;
        ReduceOp op;
        if (const GT *g = cond.as<GT>()) op = ReduceOp::Max, e = g->a, best = g->b;
        else if (const LT *l = cond.as<LT>()) op = ReduceOp::Min, e = l->a, best = l->b;
        else return {};
        const Call *bc = best.as<Call>();
        if (!bc || bc->name != name || reads_self(e)) return {};
        size_t value = static_cast<size_t>(bc->value_index);
        Expr rv = Variable::make(Int(32), dom->domain[0].var, nullptr, dom);
        for (size_t k = 0; k < n; k++) {
            const Select *sk = u.values[k].as<Select>();
            if (!sk || !equal(sk->condition, cond) || !equal(sk->false_value, self(k))) return {};
            if (k == value) {
                if (!equal(sk->true_value, e)) return {};
                elements[k] = {op, f->init.values[k], e};
            } else {
                const Variable *t = sk->true_value.as<Variable>();
                if (!t || t->name != dom->domain[0].var) return {};
                // The first point attaining the extreme value.
                Type it = f->output_types[k];
                elements[k] = {ReduceOp::Min, type_max(it),
                               select(e == self(value), cast(it, rv), type_max(it))};
            }
        }
    }

    // The elements as Functions; calls to T[k] read element k.
    std::vector<FunctionPtr> parts(n);
    std::vector<std::string> names;
    for (size_t k = 0; k < n; k++) {
        auto p = make_lowered_function();
        p->name = name + "_" + std::to_string(k);
        user_assert(!env.funcs.count(p->name))
            << "Tuple reduction " << name << ": the pipeline already has a Func named " << p->name
            << ", the name its element " << k << " takes in reduction fusion.";
        p->args = f->args;
        p->output_types = {f->output_types[k]};
        parts[k] = p;
        names.push_back(p->name);
    }
    ReplaceCalls to_parts;
    to_parts.replace = [&](const Call *c) -> Expr {
        if (c->name != name) return Expr();
        return Call::make(c->type, parts[c->value_index]->name, c->args, Call::Func,
                          parts[c->value_index]);
    };
    auto relink = [&](const Expr &e) { return to_parts.mutate(e); };
    for (size_t k = 0; k < n; k++) {
        FunctionPtr p = parts[k];
        p->init.args = pure_args(p);
        p->init.values = {relink(elements[k].init)};
        Definition pu;
        pu.args = pure_args(p);
        pu.rdom = dom;
        pu.values = {
            reduce_combine(elements[k].op, call(p, pure_args(p)), relink(elements[k].term))};
        p->updates = {pu};
    }
    FuncSchedule fs = env.schedules.at(name);
    env.funcs.erase(name);
    env.schedules.erase(name);
    auto pos = std::find(env.order.begin(), env.order.end(), name);
    pos = env.order.erase(pos);
    for (size_t k = 0; k < n; k++) {
        FuncSchedule pfs = fs;
        pfs.func = parts[k];
        pfs.stages = {default_stage_schedule(parts[k], 0), default_stage_schedule(parts[k], 1)};
        env.funcs[parts[k]->name] = parts[k];
        env.schedules[parts[k]->name] = pfs;
        pos = env.order.insert(pos, parts[k]->name) + 1;
    }
    DomainRewrites domains;
    for (auto &kv : env.funcs) {
        auto copy = make_lowered_function(*kv.second);
        copy->init = map_definition(copy->init, relink, domains);
        for (Definition &d : copy->updates) d = map_definition(d, relink, domains);
        kv.second = copy;
        env.schedules[kv.first].func = copy;
    }
    for (FunctionPtr &o : env.outputs) {
        user_assert(o->name != name)
            << "Tuple reduction " << name << " is an output of the pipeline; reduction fusion "
            << "needs it read through another Func (e.g. out(x) = " << name << "(x)[0]).";
    }
    for (const std::string &e : names) {
        env.tuple_siblings[e] = std::set<std::string>(names.begin(), names.end());
        env.tuple_siblings[e].erase(e);
    }
    env.fusion_log.push_back("Tuple reduction " + name + " is computed as " + [&] {
        std::string s;
        for (const std::string &e : names) s += (s.empty() ? "" : ", ") + e;
        return s;
    }());
    return names;
}

// ---------------------------------------------------------------- chain analysis

struct Member {
    std::string name;
    FunctionPtr f;  // as found in env
    ReduceOp op;
    Expr g;     // the per-term contribution, over f's Vars and the RVar, bridges inlined
    Expr term;  // the same with calls to bridges kept (what the rewrite computes)
    std::vector<std::string> producers;
    std::vector<std::string> carried;  // members holding the repair's carried sums
    std::vector<ProducerSlot> slots;
    Expr g_slots;  // g with producer calls replaced by slot Variables
    Repair repair;
    bool made = false;  // a carried sum or count the fusion made
    FunctionPtr fused;  // the replacement
};

/** Splits `f(args) = f(args) ⊕ g` into ⊕ and g. */
bool parse_update(const FunctionPtr &f, ReduceOp *op, Expr *g) {
    if (f->updates.size() != 1 || f->updates[0].values.size() != 1) return false;
    const Definition &u = f->updates[0];
    for (size_t k = 0; k < u.args.size(); k++) {
        const Variable *v = u.args[k].as<Variable>();
        if (!v || v->name != f->args[k]) return false;
    }
    auto is_self = [&](const Expr &e) {
        const Call *c = e.as<Call>();
        if (!c || c->call_type != Call::Func || c->name != f->name) return false;
        for (size_t k = 0; k < c->args.size(); k++) {
            if (!equal(c->args[k], u.args[k])) return false;
        }
        return true;
    };
    auto reads_self = [&](const Expr &e) {
        bool found = false;
        visit_calls(e, [&](const Call *c) { found |= c->name == f->name; });
        return found;
    };
    const Expr &v = u.values[0];
    Expr a, b;
    if (const Add *n = v.as<Add>()) *op = ReduceOp::Add, a = n->a, b = n->b;
    else if (const Mul *n = v.as<Mul>()) *op = ReduceOp::Mul, a = n->a, b = n->b;
    else if (const Max *n = v.as<Max>()) *op = ReduceOp::Max, a = n->a, b = n->b;
    else if (const Min *n = v.as<Min>()) *op = ReduceOp::Min, a = n->a, b = n->b;
    else return false;
    if (is_self(b)) std::swap(a, b);
    if (!is_self(a) || reads_self(b)) return false;
    *g = b;
    return true;
}

bool reduces_over(const FunctionPtr &f, const ReductionDomainPtr &dom) {
    return f->updates.size() == 1 && f->updates[0].rdom.get() == dom.get();
}

/** A pure Func between a member and its producers, e.g. attention's
 * p(i, j) = exp(s(i, j) - m(i)), kept as a Func so its schedule (computed
 * once per tile, vectorized) survives fusion. Members read it with the
 * RVar at argument `key`; the rewrite gives it the producers' running
 * values for the piece that holds point `key`. */
struct Bridge {
    FunctionPtr f;
    int key = -1;
    Expr body;                  // its value, with bridges it reads inlined
    bool read_outside = false;  // read by Funcs outside the chain too
};

class Chain {
  public:
    /** `directed_elsewhere`: the reductions another directive fuses or
     * splits; this chain reads their results rather than taking them in. */
    Chain(LoweringEnv &env, const FusionDirective &d, std::set<std::string> directed_elsewhere)
        : env(env),
          d(d),
          what(directive_name(d)),
          directed_elsewhere(std::move(directed_elsewhere)) {}

    std::vector<Member> members;  // producers before their dependents
    std::map<std::string, Bridge> bridges;
    ReductionDomainPtr dom;
    std::string leader;

    void discover() {
        const FunctionPtr &x = env.funcs.at(d.func);
        ReduceOp op;
        Expr g;
        user_assert(parse_update(x, &op, &g))
            << what << ": the update of " << x->name << " must have the form " << x->name
            << "(vars) = " << x->name << "(vars) op term, with op one of +, *, max, min, and a "
            << "single value (Tuple reductions are not supported by reduction fusion yet).";
        dom = x->updates[0].rdom;
        user_assert(dom->domain.size() == 1)
            << what << ": the RDom " << dom->name << " of " << x->name << " has "
            << dom->domain.size() << " dimensions; reduction fusion needs a one-dimensional "
            << "RDom.";
        leader = x->name;
        add(x->name);
        // Siblings: other reductions over the same RDom that read a member.
        // (Not for split_k of a lone reduction, Halide's rfactor of it
        // alone: the reductions that read it are computed after it.)
        const bool lone = d.kind == FusionDirective::SplitK && members.size() == 1;
        for (bool grew = !lone; grew;) {
            grew = false;
            for (const auto &kv : env.funcs) {
                if (is_member(kv.first) || !reduces_over(kv.second, dom) ||
                    directed_elsewhere.count(kv.first))
                    continue;
                ReduceOp o;
                Expr term;
                if (!parse_update(kv.second, &o, &term)) continue;
                bool reads_member = false;
                visit_calls(inline_paths_to_reductions(term),
                            [&](const Call *c) { reads_member |= is_member(c->name); });
                if (reads_member) {
                    add(kv.first);
                    grew = true;
                    break;
                }
            }
        }
        order_members();
        finish_bridges();
    }

    bool is_member(const std::string &name) const {
        for (const Member &m : members) {
            if (m.name == name) return true;
        }
        return false;
    }
    Member &member(const std::string &name) {
        for (Member &m : members) {
            if (m.name == name) return m;
        }
        internal_error << "no member " << name;
    }

    void derive(std::vector<std::string> &log) {
        std::vector<std::string> names;
        for (const Member &m : members) names.push_back(m.name);
        for (const std::string &name : names) {
            if (member(name).producers.empty()) continue;
            Member &m = member(name);
            std::map<std::string, Expr> slot_values;
            for (const std::string &p : m.producers) {
                const Member &pm = member(p);
                // The producer's own term, when it reads no producer itself.
                Expr phi = pm.producers.empty() ? pm.g : Expr();
                m.slots.push_back({p, p, pm.op, pm.f->output_types[0], phi});
            }
            ReplaceCalls to_slots;
            to_slots.replace = [&](const Call *c) -> Expr {
                if (!is_member(c->name)) return Expr();
                return Variable::make(c->type, c->name);
            };
            m.g_slots = to_slots.mutate(m.g);
            m.repair = derive_repair(m.name, m.op, m.g_slots, m.slots, what);
            std::ostringstream os;
            os << what << ": " << m.name << " " << reduce_op_name(m.op) << "= " << m.g_slots
               << "; repair " << m.repair.formula(m.slots) << " (" << m.repair.log << ")";
            log.push_back(os.str());
        }
        choose_pivots(log);
        check_conditioning_of_members(log);
        // The carried sums join the chain as members, with the repairs of
        // the state chosen.
        for (const std::string &name : names) add_carried_sums(name);
        order_members();
    }

    /** Sum producers (by name) whose dependents keep their state about the
     * producer's pivot, with the chain's count: the running value
     * extrapolated to the whole domain, r * N / count, rather than the
     * running value itself. A sum's running value grows with the terms, so
     * a state kept about it (sum((x - S/n)^2) at the running S) is far from
     * the final one and cancels catastrophically when repaired; about the
     * pivot (S/count, the running mean) it is Welford's. Any value is exact
     * in real arithmetic, since the repairs hold for any move; the final
     * state is about the final value because the pivot of all N terms is
     * r * (N / N) = r, exactly. */
    std::map<std::string, std::string> pivots;

  private:
    /** Whether producer `name` can have a pivot: a Sum that reads no other
     * producer, in a float type that holds N (float16 stops at 65504: the
     * pivot is formed in the producer's type). */
    bool can_pivot(const std::string &name) {
        const Member &p = member(name);
        const Type t = p.f->output_types[0];
        return p.op == ReduceOp::Add && p.producers.empty() && t.is_float() && t.bits >= 32;
    }

    void choose_pivots(std::vector<std::string> &log) {
        std::vector<std::string> names;
        for (const Member &m : members) names.push_back(m.name);
        for (const std::string &name : names) {
            if (!can_pivot(name)) continue;
            const Member p = member(name);
            bool read = false;
            for (const Member &m : members) {
                read |=
                    std::find(m.producers.begin(), m.producers.end(), name) != m.producers.end();
            }
            if (!read) continue;
            pivots[name] = count_member(p.f->args);
            log.push_back(what + ": the dependents of " + name + " are kept about " + name +
                          " * N / " + pivots[name] + " (" + name +
                          "'s running value extrapolated to all N terms)");
        }
    }

  public:
    /** A condition C over the members' Vars and the RVar outside of which
     * every member's term is its reduction's identity, so that a piece of
     * the domain where C cannot hold changes nothing: the mask of a max
     * (min) producer's term (attention's select(causal, s, -inf)), kept if
     * the terms of all members vanish outside it (checked numerically: a
     * chain like sum(x - max) does not). Undefined when there is none. Call
     * after derive(). */
    Expr vanishing_mask() {
        auto inline_pure = [&](const Expr &g) {
            return inline_calls(g, [](const Call *, const FunctionPtr &) { return true; });
        };
        for (const Member &p : members) {
            if (!p.producers.empty() || (p.op != ReduceOp::Max && p.op != ReduceOp::Min)) continue;
            Type t = p.f->output_types[0];
            Expr mask = where_not_identity(inline_pure(p.g), reduce_identity(p.op, t));
            if (is_const_one(mask)) continue;
            bool vanish = true;
            for (const Member &m : members) {
                Expr g = inline_pure(m.producers.empty() ? m.g : m.g_slots);
                vanish = vanish && vanishes_where_false(g, m.op, mask, m.slots);
            }
            if (vanish) return mask;
        }
        return Expr();
    }

  private:
    LoweringEnv &env;
    const FusionDirective &d;
    std::string what;
    std::set<std::string> directed_elsewhere;
    std::string count;  // the chain's term count, once made
    /** Per member, the carried sums made for its repairs, by term. */
    std::map<std::string, std::vector<std::pair<Expr, std::string>>> families;

    /** Where e can differ from `identity`: false where e is a select of
     * the identity, true where nothing is known. */
    static Expr where_not_identity(const Expr &e, const Expr &identity) {
        if (equal(e, identity)) return const_false();
        if (const Select *s = e.as<Select>()) {
            Expr t = where_not_identity(s->true_value, identity);
            Expr f = where_not_identity(s->false_value, identity);
            if (is_const_zero(f)) return is_const_one(t) ? s->condition : (s->condition && t);
            if (is_const_zero(t)) return is_const_one(f) ? !s->condition : (!s->condition && f);
            return const_true();
        }
        if (const Let *l = e.as<Let>()) {
            return where_not_identity(substitute(l->name, l->value, l->body), identity);
        }
        if (const Cast *c = e.as<Cast>(); c && c->type.is_float() && c->value.type().is_float()) {
            if (const FloatImm *v = identity.as<FloatImm>()) {
                return where_not_identity(c->value, make_const(c->value.type(), v->value));
            }
        }
        return const_true();
    }

    /** The running sums a carried repair of member `name` needs, as
     * reductions over the chain's RDom that join the chain. */
    void add_carried_sums(const std::string &name) {
        const Member m = member(name);
        if (m.repair.kind != Repair::Carried) return;
        std::vector<std::string> names = carried_members(m, m.repair);
        member(name).carried = names;
    }

    /** The chain's term count, a reduction of 1 over the RDom in Int(32) (a
     * float count would stop at 2^24 terms), made on first use, over the
     * Vars of `like`. */
    std::string count_member(const std::vector<std::string> &args) {
        if (!count.empty()) return count;
        auto c = make_lowered_function();
        c->name = leader + "_count";
        user_assert(!env.funcs.count(c->name))
            << what << ": the pipeline already has a Func named " << c->name << ".";
        c->args = args;
        c->output_types = {Int(32)};
        c->init.args = pure_args(c);
        c->init.values = {make_zero(Int(32))};
        Definition u;
        u.args = pure_args(c);
        u.rdom = dom;
        u.values = {call(c, pure_args(c)) + make_one(Int(32))};
        c->updates.push_back(u);
        register_made(c);
        env.origins[c->name] = "the term count that " + what + " carries with the chain of " +
                               leader + ", computed with it";
        add(c->name);
        member(c->name).made = true;
        count = c->name;
        return count;
    }

    /** The members holding the carried sums of `repair`, a repair of member
     * m or of one of its carried sums: the chain's count, or one member per
     * Taylor coefficient of m's term, made on first use and shared by the
     * repairs of m's family (matched by their terms). A coefficient that
     * reads the producer is a dependent itself, repaired with the later
     * ones. */
    std::vector<std::string> carried_members(const Member &m, const Repair &repair) {
        const std::vector<std::string> producer_args = member(m.producers[0]).f->args;
        std::vector<std::string> names;
        for (size_t k = 0; k < repair.carried.size(); k++) {
            const CarriedSum &sum = repair.carried[k];
            if (sum.is_count()) {
                names.push_back(count_member(producer_args));
                continue;
            }
            std::vector<std::pair<Expr, std::string>> &family = families[m.name];
            auto known = std::find_if(family.begin(), family.end(),
                                      [&](const auto &f) { return equal(f.first, sum.per_term); });
            if (known != family.end()) {
                names.push_back(known->second);
                continue;
            }
            bool row_only = true;
            for (const std::string &a : m.f->args) {
                if (std::find(producer_args.begin(), producer_args.end(), a) ==
                        producer_args.end() &&
                    expr_uses_var(sum.per_term, a))
                    row_only = false;
            }
            auto c = make_lowered_function();
            c->name = m.name + "_sum" + std::to_string(family.size() + 1);
            user_assert(!env.funcs.count(c->name))
                << what << ": the pipeline already has a Func named " << c->name << ".";
            c->args = row_only ? producer_args : m.f->args;
            Type t = m.f->output_types[0];
            c->output_types = {t};
            c->init.args = pure_args(c);
            c->init.values = {make_zero(t)};
            // The term in the producers' calls again.
            std::map<std::string, Expr> producer_calls;
            for (const ProducerSlot &slot : m.slots) {
                const FunctionPtr &pf = member(slot.func).f;
                producer_calls[slot.var] = call(pf, pure_args(pf));
            }
            Definition u;
            u.args = pure_args(c);
            u.rdom = dom;
            u.values = {call(c, pure_args(c)) + substitute(producer_calls, sum.per_term)};
            c->updates.push_back(u);
            register_made(c);
            env.origins[c->name] = "a running sum that " + what + " carries beside " + m.name +
                                   " to repair it, computed with the chain";
            family.emplace_back(sum.per_term, c->name);
            add(c->name);
            names.push_back(c->name);
            Member &made = member(c->name);
            made.made = true;
            if (made.producers.empty()) continue;
            made.slots = m.slots;
            made.g_slots = sum.per_term;
            // Its repair is the family's, wherever it was first needed.
            for (size_t f = 0; f < m.repair.carried.size(); f++) {
                if (equal(m.repair.carried[f].per_term, sum.per_term))
                    made.repair = m.repair.carried_repairs[f];
            }
            internal_assert(made.repair.kind == Repair::Carried)
                << "no repair for the carried sum " << sum.per_term << " of " << m.name;
            const Repair own = made.repair;  // carried_members may move the members
            std::vector<std::string> sub = carried_members(m, own);
            member(c->name).carried = sub;
        }
        return names;
    }

    /** Adds a Func the fusion made to env, placed inline until the rewrite
     * places it with the chain. */
    void register_made(const FunctionPtr &c) {
        FuncSchedule fs;
        fs.func = c;
        fs.compute_level = fs.store_level = LoopLevel::inlined();
        fs.stages = {default_stage_schedule(c, 0), default_stage_schedule(c, 1)};
        env.funcs[c->name] = c;
        env.schedules[c->name] = fs;
        env.order.push_back(c->name);
    }

    /** Inlines, until none is left, the calls in g to pure Funcs of env
     * that `inline_it` chooses. */
    Expr inline_calls(Expr g,
                      const std::function<bool(const Call *, const FunctionPtr &)> &inline_it) {
        for (int guard = 0; guard < 64; guard++) {
            bool changed = false;
            ReplaceCalls inl;
            inl.replace = [&](const Call *c) -> Expr {
                auto it = env.funcs.find(c->name);
                if (it == env.funcs.end() || !it->second->updates.empty() ||
                    !inline_it(c, it->second))
                    return Expr();
                const FunctionPtr &f = it->second;
                std::map<std::string, Expr> args;
                for (size_t k = 0; k < f->args.size(); k++) args[f->args[k]] = c->args[k];
                changed = true;
                return substitute(args, f->init.values[c->value_index]);
            };
            g = inl.mutate(g);
            if (!changed) return g;
        }
        return g;
    }

    /** Inlines the calls in g to pure Funcs of env that lead to a reduction
     * over the chain's RDom, except the calls `keep` keeps. */
    Expr inline_paths(Expr g, const std::function<bool(const Call *, const FunctionPtr &)> &keep) {
        return inline_calls(g, [&](const Call *c, const FunctionPtr &f) {
            return reaches_reduction_over_dom(f, 0) && !keep(c, f);
        });
    }

    /** g with every pure Func on the way to a member producer inlined, so
     * the producer calls become visible (and can be replaced). */
    Expr inline_paths_to_reductions(const Expr &g) {
        return inline_paths(g, [](const Call *, const FunctionPtr &) { return false; });
    }

    /** g with the calls to pure Funcs on the way to a producer kept where
     * they can be bridges (called with the RVar itself at one argument),
     * and inlined elsewhere. */
    Expr keep_bridges(const Expr &g) {
        const std::string &r = dom->domain[0].var;
        std::set<std::string> refused;
        return inline_paths(g, [&](const Call *c, const FunctionPtr &f) {
            int key = -1;
            for (size_t k = 0; k < c->args.size(); k++) {
                const Variable *v = c->args[k].as<Variable>();
                if (v && v->name == r) key = static_cast<int>(k);
            }
            auto b = bridges.find(f->name);
            bool ok = key >= 0 && f->init.values.size() == 1 && !refused.count(f->name) &&
                      (b == bridges.end() || b->second.key == key);
            if (ok && b == bridges.end()) {
                Bridge nb;
                nb.f = f;
                nb.key = key;
                nb.body = inline_paths_to_reductions(f->init.values[0]);
                ok = producers_read_at_own_vars(nb.body, f);
                if (ok) bridges[f->name] = nb;
            }
            if (!ok) {
                refused.insert(f->name);
                bridges.erase(f->name);
            }
            return ok;
        });
    }

    bool producers_read_at_own_vars(const Expr &body, const FunctionPtr &f) {
        bool ok = true;
        visit_calls(body, [&](const Call *c) {
            auto it = env.funcs.find(c->name);
            if (it == env.funcs.end() || !reduces_over(it->second, dom)) return;
            for (size_t k = 0; k < c->args.size(); k++) {
                const Variable *v = c->args[k].as<Variable>();
                ok = ok && v && std::find(f->args.begin(), f->args.end(), v->name) != f->args.end();
            }
        });
        return ok;
    }

    /** The conditioning check (RepairConditioning.h) of dependent m, with
     * its producers seen through their pivots or not. */
    ConditioningReport conditioning(const Member &m, const std::set<std::string> &pivoted) {
        ConditioningSubject subject;
        subject.op = m.op;
        subject.g = m.g_slots;
        subject.slots = m.slots;
        subject.repair = m.repair;
        for (const ProducerSlot &slot : m.slots)
            subject.pivoted.push_back(pivoted.count(slot.func));
        subject.extent = dom->domain[0].extent;
        return check_conditioning(subject);
    }

    /** Whether every dependent of producer p is stable with p pivoted (or
     * not), the other producers as chosen. */
    bool dependents_stable(const std::string &p, bool pivot) {
        std::set<std::string> pivoted;
        for (const auto &kv : pivots) pivoted.insert(kv.first);
        if (pivot) {
            pivoted.insert(p);
        } else {
            pivoted.erase(p);
        }
        for (const Member &m : members) {
            if (m.made || std::find(m.producers.begin(), m.producers.end(), p) == m.producers.end())
                continue;
            ConditioningReport r = conditioning(m, pivoted);
            if (r.checked && !r.stable) return false;
        }
        return true;
    }

    /** Keeps each pivot that its dependents need, drops one they are stable
     * without and stable with only without, and refuses a dependent that is
     * unstable either way: a fused chain is never much less accurate than
     * the unfused one without saying so. */
    void check_conditioning_of_members(std::vector<std::string> &log) {
        for (auto it = pivots.begin(); it != pivots.end();) {
            if (!dependents_stable(it->first, true) && dependents_stable(it->first, false)) {
                log.push_back(what + ": the dependents of " + it->first +
                              " are kept about its "
                              "running value: about its pivot they would lose accuracy");
                it = pivots.erase(it);
            } else {
                ++it;
            }
        }
        std::set<std::string> pivoted;
        for (const auto &kv : pivots) pivoted.insert(kv.first);
        for (const Member &m : members) {
            if (m.made || m.producers.empty()) continue;
            ConditioningReport r = conditioning(m, pivoted);
            log.push_back(what + ": " + m.name + ": " + r.summary);
            if (!r.checked || r.stable) continue;
            std::string producers = join(m.producers, ", ");
            std::ostringstream os;
            os << what << ": the fused form of reduction " << m.name << " (" << reduce_op_name(m.op)
               << " of " << m.g_slots << ") is numerically unstable "
               << "when its producer " << producers << " changes: " << r.worst_case << ", its "
               << m.f->output_types[0];
            if (std::isfinite(r.fused_error)) {
                os << " error is " << r.fused_error << " (relative to the result), "
                   << std::round(r.worst_ratio) << "x the larger of the unfused order's ("
                   << r.unfused_error << ") and what rounding the producer once per term costs; "
                   << "the bound is " << kConditioningFactor << "x";
            } else {
                os << " result overflows to inf or nan, where the unfused order's error is "
                   << r.unfused_error;
            }
            // The other state of each Sum producer: would it do, and who
            // needs this one?
            for (const ProducerSlot &slot : m.slots) {
                if (!can_pivot(slot.func)) continue;
                std::set<std::string> other = pivoted;
                bool was = other.erase(slot.func) > 0;
                if (!was) other.insert(slot.func);
                ConditioningReport alt = conditioning(m, other);
                if (alt.checked && alt.stable) {
                    os << ". About " << slot.func
                       << (was ? "'s running value" : "'s running value extrapolated to all terms")
                       << " it would be stable, but another dependent of " << slot.func
                       << " is not: no state serves every dependent of " << slot.func;
                } else {
                    os << ", with its state kept about " << slot.func
                       << "'s running value and about its extrapolation to all terms alike";
                }
            }
            os << ". Compute " << m.name << " after " << producers
               << " instead (remove the directive).";
            user_error << os.str();
        }
    }

  public:
    /** A read of dependent `name`'s rolled result, `value` at the call's
     * arguments `args` (by the dependent's Vars), moved from the last pivot
     * to the producer's final value: over an RDom with a predicate the
     * count of terms stops short of the extent, so the last pivot is not
     * the final value. (Where it is, the move is zero and skipped.)
     * Undefined when the dependent keeps no state about a pivot. */
    Expr read_at_final_value(const std::string &name, const Expr &value,
                             const std::map<std::string, Expr> &args) {
        const Member &m = member(name);
        if (m.made || m.producers.empty() || m.repair.kind == Repair::None) return Expr();
        bool any = false;
        for (const ProducerSlot &slot : m.slots) any |= pivots.count(slot.func) > 0;
        if (!any) return Expr();
        auto at = [&](const std::string &f) {
            const Member &mf = member(f);
            std::vector<Expr> call_args;
            for (const std::string &a : mf.fused->args) call_args.push_back(args.at(a));
            return call(mf.fused, call_args);
        };
        std::vector<Expr> olds, news, sums;
        Expr unchanged;
        for (const ProducerSlot &slot : m.slots) {
            Expr final_value = at(slot.func);
            auto it = pivots.find(slot.func);
            Expr last = it == pivots.end()
                            ? final_value
                            : pivot_of(final_value, at(it->second), dom->domain[0].extent);
            olds.push_back(last);
            news.push_back(final_value);
            Expr same = last == final_value;
            unchanged = unchanged.defined() ? (unchanged && same) : same;
        }
        for (const std::string &c : m.carried) sums.push_back(at(c));
        return select(unchanged, value, m.repair.apply(value, m.slots, olds, news, sums));
    }

    /** Marks the bridges that Funcs outside the chain also read; those keep
     * their original and get a fused copy. Drops bridges that a member no
     * longer reads through its term (a later member inlined them). */
    void finish_bridges() {
        // A bridge refused for one member stays inlined in every member.
        for (Member &m : members) m.term = inline_non_bridges(m.term);
        std::set<std::string> used;
        for (const Member &m : members) {
            visit_calls(m.term, [&](const Call *c) { used.insert(c->name); });
        }
        for (auto it = bridges.begin(); it != bridges.end();) {
            if (!used.count(it->first)) {
                it = bridges.erase(it);
                continue;
            }
            for (const auto &kv : env.funcs) {
                if (is_member(kv.first) || bridges.count(kv.first)) continue;
                visit_calls(*kv.second, [&](const Call *c) {
                    if (c->name == it->first) it->second.read_outside = true;
                });
            }
            ++it;
        }
    }

  private:
    Expr inline_non_bridges(const Expr &g) {
        return inline_paths(
            g, [&](const Call *c, const FunctionPtr &) { return bridges.count(c->name) > 0; });
    }

    bool reaches_reduction_over_dom(const FunctionPtr &f, int depth) {
        if (depth > 64) return false;
        bool found = false;
        visit_calls(*f, [&](const Call *c) {
            if (found || c->name == f->name) return;
            auto it = env.funcs.find(c->name);
            if (it == env.funcs.end()) return;
            found =
                reduces_over(it->second, dom) ||
                (it->second->updates.empty() && reaches_reduction_over_dom(it->second, depth + 1));
        });
        return found;
    }

    void add(const std::string &name) {
        FunctionPtr f = env.funcs.at(name);
        Member m;
        m.name = name;
        m.f = f;
        user_assert(parse_update(f, &m.op, &m.g))
            << what << ": " << name << " is part of the chain (it reduces over "
            << dom->domain[0].var << " and is read by or reads another member), but its update "
            << "is not of the form " << name << "(vars) = " << name << "(vars) op term.";
        user_assert(f->init.values.size() == 1) << what << ": " << name << " is a Tuple.";
        m.term = keep_bridges(m.g);
        m.g = inline_paths_to_reductions(m.g);
        // Producers: reductions over the same RDom that g reads.
        std::vector<std::string> found;
        visit_calls(m.g, [&](const Call *c) {
            auto it = env.funcs.find(c->name);
            if (it == env.funcs.end() || !reduces_over(it->second, dom) ||
                directed_elsewhere.count(c->name))
                return;
            const FunctionPtr &p = it->second;
            for (size_t k = 0; k < c->args.size(); k++) {
                const Variable *v = c->args[k].as<Variable>();
                user_assert(v && v->name == p->args[k] &&
                            std::find(f->args.begin(), f->args.end(), v->name) != f->args.end())
                    << what << ": " << name << " reads the reduction " << p->name << " at "
                    << Expr(c) << "; reduction fusion needs producers read at their own Vars ("
                    << p->name << "(" <<
                    [&] {
                        std::string s;
                        for (auto &a : p->args) s += (s.empty() ? "" : ", ") + a;
                        return s;
                    }()
                    << ")), which " << name << " must also have.";
            }
            if (std::find(found.begin(), found.end(), p->name) == found.end())
                found.push_back(p->name);
        });
        m.producers = found;
        members.push_back(m);
        for (const std::string &p : found) {
            if (!is_member(p)) add(p);
        }
    }

    void order_members() {
        std::vector<Member> ordered;
        std::set<std::string> done;
        std::function<void(const std::string &)> visit = [&](const std::string &n) {
            if (done.count(n)) return;
            done.insert(n);
            for (const std::string &p : member(n).producers) {
                visit(p);
                // A pivoted producer is seen with the count: the count's
                // step comes after every step that reads its old value.
                if (auto it = pivots.find(p); it != pivots.end()) visit(it->second);
            }
            for (const std::string &p : member(n).carried) visit(p);
            ordered.push_back(member(n));
        };
        for (const Member &m : members) visit(m.name);
        members = ordered;
        for (const Member &m : members) {
            if (m.producers.empty()) continue;
            Expr id = reduce_identity(m.op, m.f->output_types[0]);
            user_assert(equal(simplify(m.f->init.values[0]), id))
                << what << ": " << m.name << " reads a producer of the chain, so it must start "
                << "at the identity of its reduction (" << id << "), but it starts at "
                << m.f->init.values[0] << ". Add the start value after the reduction instead.";
        }
        // split_k of a lone reduction is Halide's rfactor in chunks: each
        // chunk's partial, then a combine (on a GPU, a chunk per thread
        // rolls its own points in registers). A lone rolling_update would
        // be the reduction itself.
        bool leader_depends = !member(leader).producers.empty();
        if (!leader_depends && members.size() > 1) {
            // Others read the leader: the chain ends elsewhere.
            std::vector<std::string> last;
            for (const Member &m : members) {
                bool read = false;
                for (const Member &o : members) {
                    read |= std::find(o.producers.begin(), o.producers.end(), m.name) !=
                            o.producers.end();
                }
                if (!read) last.push_back(m.name);
            }
            user_error << what << ": " << leader << " reads no other reduction over "
                       << dom->domain[0].var << ", but " << join(last, " and ")
                       << (last.size() == 1 ? " reads" : " read") << " it: the chain ends at "
                       << join(last, " and ") << ". Give the directive to "
                       << (last.size() == 1 ? "it" : "one of them") << " instead.";
        }
        user_assert(leader_depends || d.kind == FusionDirective::SplitK)
            << what << ": " << leader << " reads no other reduction over " << dom->domain[0].var
            << ", so there is no chain to fuse. Schedule it directly.";
    }
};

// ---------------------------------------------------------------- rewriting

ReductionDomainPtr make_domain(const std::string &name, const std::string &var, Expr min,
                               Expr extent, Expr predicate) {
    auto d = std::make_shared<ReductionDomainContents>();
    d->name = name;
    d->domain.push_back({var, std::move(min), std::move(extent)});
    d->predicate = std::move(predicate);
    d->frozen = true;
    return d;
}

Expr rvar_of(const ReductionDomainPtr &d) {
    return Variable::make(Int(32), d->domain[0].var, nullptr, d);
}

/** A reduction over `dom` of f's Vars, starting at the identity. */
FunctionPtr make_reduction(const std::string &name, const std::vector<std::string> &args,
                           ReduceOp op, Type t, const ReductionDomainPtr &dom) {
    auto f = make_lowered_function();
    f->name = name;
    f->args = args;
    f->output_types = {t};
    f->init.args = pure_args(f);
    f->init.values = {reduce_identity(op, t)};
    Definition u;
    u.args = pure_args(f);
    u.rdom = dom;
    f->updates.push_back(u);
    return f;
}

Expr and_predicates(const Expr &a, const Expr &b) {
    if (!a.defined()) return b;
    if (!b.defined()) return a;
    return a && b;
}

/** Whether any max/min producer value of m's among `values` is still its
 * identity (nothing reduced into it yet); undefined if m has none. */
Expr any_at_identity(const Member &m, const std::vector<Expr> &values) {
    Expr any;
    for (size_t k = 0; k < m.slots.size(); k++) {
        if (m.slots[k].op != ReduceOp::Max && m.slots[k].op != ReduceOp::Min) continue;
        Expr id = values[k] == reduce_identity(m.slots[k].op, values[k].type());
        any = any.defined() ? (any || id) : id;
    }
    return any;
}

/** m's repair of t for producers moving from `olds` to `news`, except when
 * none moved, or when one was still at its identity: then t holds no terms
 * yet (steps and chunks skip them, see repaired_step), and a repair could
 * only turn the identity into inf * 0. */
Expr guarded_repair(const Member &m, const Expr &t, const std::vector<Expr> &olds,
                    const std::vector<Expr> &news, const std::vector<Expr> &sums) {
    Expr unchanged;
    for (size_t k = 0; k < olds.size(); k++) {
        Expr same = olds[k] == news[k];
        unchanged = unchanged.defined() ? (unchanged && same) : same;
    }
    if (Expr fresh = any_at_identity(m, olds); fresh.defined()) unchanged = unchanged || fresh;
    Expr repaired = m.repair.apply(t, m.slots, olds, news, sums);
    return unchanged.defined() ? select(unchanged, t, repaired) : repaired;
}

/** The step of dependent m: its current value `t` repaired, combined with
 * its contribution `add` computed with the producers' new values; while a
 * producer is still at its identity (everything so far masked) the step
 * adds nothing and gives `skip_value`. */
Expr repaired_step(const Member &m, const Expr &t, const std::vector<Expr> &olds,
                   const std::vector<Expr> &news, const std::vector<Expr> &sums, const Expr &add,
                   const Expr &skip_value) {
    Expr value = reduce_combine(m.op, guarded_repair(m, t, olds, news, sums), add);
    Expr empty = any_at_identity(m, news);
    return empty.defined() ? select(empty, skip_value, value) : value;
}

/** `base` (the default loops of a stage) with the user's directives that
 * apply to its loops: their splits, then their order and loop kinds; loops
 * the user's schedule does not name keep their default order, innermost. */
StageSchedule adapt_stage(const StageSchedule &user, const StageSchedule &base) {
    std::set<std::string> loops;
    for (const Dim &dim : base.dims) loops.insert(dim.var);
    StageSchedule ss;
    for (const Split &sp : user.splits) {
        bool applies = sp.kind == Split::FuseVars ? loops.count(sp.outer) && loops.count(sp.inner)
                                                  : loops.count(sp.old_var) > 0;
        if (!applies) continue;
        ss.splits.push_back(sp);
        if (sp.kind == Split::FuseVars) {
            loops.erase(sp.outer);
            loops.erase(sp.inner);
            loops.insert(sp.old_var);
        } else {
            loops.erase(sp.old_var);
            loops.insert(sp.outer);
            if (sp.kind == Split::SplitVar) loops.insert(sp.inner);
        }
    }
    for (const Dim &dim : user.dims) {
        if (loops.count(dim.var)) {
            ss.dims.push_back(dim);
            loops.erase(dim.var);
        }
    }
    for (const Dim &dim : base.dims) {
        if (loops.count(dim.var)) ss.dims.push_back(dim);
    }
    return ss;
}

RolledChain rolled_in_tile_program(const Chain &chain, const std::string &what);

class Rewriter {
  public:
    Rewriter(LoweringEnv &env, const ScheduleContents &s, const FusionDirective &d, Chain &chain)
        : env(env), s(s), d(d), chain(chain), what(directive_name(d)) {
        const ReductionVariable &rv = chain.dom->domain[0];
        r = rv.var;
        r_min = rv.min;
        r_extent = rv.extent;
        predicate = chain.dom->predicate;
    }

    /** rolling_update: the whole domain rolled into the members. */
    void rolling_update() {
        // The members are computed together where the leader is, in one
        // loop nest: the leader's rolling stage (the one rolling_update
        // returns), whose splits and loop types the pure definitions
        // follow. A schedule of their own would be dropped.
        for (const Member &m : chain.members) {
            if (m.name != chain.leader) refuse_dropped_placement(m);
            refuse_dropped_loops(m, 0);
            refuse_dropped_loops(m, 1);
        }
        create_fused_functions();
        std::map<std::string, FunctionPtr> target;
        for (const Member &m : chain.members) target[m.name] = m.fused;
        roll(target, user_stage(d.reduction, 1), "", Expr(), env.schedules.at(chain.leader));
    }

    /** split_k: each chunk rolled into partials over (Vars, chunk), then
     * one combine per member. */
    void split_k() {
        // Each member's own schedule places and loops its combine; the
        // chunks' rolling pass is the partial's stage that split_k returns.
        for (const Member &m : chain.members) refuse_dropped_loops(m, 1);
        Expr chunks = d.chunks;
        const std::string &c = d.chunk_var;
        // A count known only at run time (a Param) is checked then: with
        // none, every chunk would be empty and the combine would make the
        // reductions' identities, a wrong answer with no error.
        if (!is_const(chunks)) {
            env.schedule_checks.push_back(AssertStmt::make(
                chunks > 0,
                error_message({StringImm::make(what + ": the number of chunks is "), chunks,
                               StringImm::make("; it must be positive. Pass 1 or "
                                               "more (1 makes one chunk: no split).")})));
        }
        create_fused_functions();
        std::map<std::string, FunctionPtr> target;
        for (const Member &m : chain.members) {
            // The chunk outermost: each chunk's partials are contiguous, so
            // chunks computed in parallel do not share cache lines.
            std::vector<std::string> args = {c};
            args.insert(args.end(), m.f->args.begin(), m.f->args.end());
            std::string name = m.name == chain.leader ? d.partial : m.name + "_partial";
            user_assert(!env.funcs.count(name))
                << what << ": the pipeline already has a Func named " << name << ".";
            auto f = make_reduction(name, args, m.op, m.f->output_types[0], nullptr);
            f->updates.clear();
            target[m.name] = f;
            env.origins[name] = "the partial values of " + m.name + " per chunk, which " + what +
                                " makes; all the chunks' partials are placed and looped by the "
                                "Stage that split_k returns, e.g. sch.split_k(...).compute_root()";
        }
        FuncSchedule placement;
        placement.compute_level = placement.store_level = LoopLevel::inlined();
        StageSchedule user_ss;
        if (auto it = s.funcs.find(d.partial); it != s.funcs.end()) {
            placement = it->second;
            if (it->second.stages.size() > 1) user_ss = it->second.stages[1];
        }
        if (user_ss.dims.empty()) {
            auto stand_in = make_lowered_function(*target.at(chain.leader));
            Definition u;
            u.args = pure_args(stand_in);
            u.rdom = chain.dom;
            stand_in->updates = {u};
            user_ss = default_stage_schedule(stand_in, 1);
        }
        if (placement.tile_program) {
            roll_in_tile_program(target, placement, user_ss);
        } else {
            for (const auto &kv : target) {
                FuncSchedule fs = placement;
                fs.func = kv.second;
                add_function(kv.second, fs);
            }
            roll(target, user_ss, c, chunks, placement);
        }
        // Chunks rolled by a block's threads: a member computed by the
        // whole block has those threads combine its partials, each its
        // own chunk's (a reduction across the threads).
        bool chunks_on_threads = false;
        for (const Dim &dim : user_ss.dims) {
            chunks_on_threads |= dim.var == c && dim.for_type == ForType::GPUThread;
        }

        // Combines: producers fold their partials; dependents fold the
        // partials repaired to the producers' final values.
        ReductionDomainPtr combine_dom = make_domain(chain.leader + "." + c, c, 0, chunks, Expr());
        Expr kc = rvar_of(combine_dom);
        auto partial_at = [&](const std::string &name, const Expr &chunk) {
            std::vector<Expr> args = {chunk};
            for (const Expr &a : pure_args(chain.member(name).f)) args.push_back(a);
            return call(target.at(name), args);
        };
        for (const Member &m : chain.members) {
            FunctionPtr f = m.fused;
            Expr term = partial_at(m.name, kc);
            if (!m.producers.empty()) {
                std::vector<Expr> olds, news, sums;
                for (const std::string &p : m.producers) {
                    // A pivoted producer's chunk holds its state about the
                    // chunk's pivot, and is shifted to the final value.
                    olds.push_back(chain.pivots.count(p) ? pivot(partial_at(p, kc),
                                                                 partial_at(chain.pivots.at(p), kc))
                                                         : partial_at(p, kc));
                    news.push_back(current(chain.member(p)));
                }
                for (const std::string &p : m.carried) sums.push_back(partial_at(p, kc));
                // A chunk whose producer is still its identity holds no
                // terms: its partial is the identity, left unrepaired.
                term = guarded_repair(m, term, olds, news, sums);
            }
            Definition u;
            u.args = pure_args(f);
            u.rdom = combine_dom;
            u.values = {reduce_combine(m.op, current(m), term)};
            f->updates = {u};
            // The combine follows the user's directives on the Func's loops
            // (e.g. parallel over heads), its loop over chunks innermost.
            FuncSchedule &fs = env.schedules.at(m.name);
            fs.func = f;
            StageSchedule user_loops;
            if (auto it = s.funcs.find(m.name); it != s.funcs.end() && !it->second.stages.empty())
                user_loops = it->second.stages[0];
            fs.stages = {adapt_stage(user_loops, default_stage_schedule(f, 0)),
                         adapt_stage(user_loops, default_stage_schedule(f, 1))};
            if (chunks_on_threads && computed_by_whole_block(fs.compute_level)) {
                for (Dim &dim : fs.stages[1].dims) {
                    if (dim.is_rvar && dim.var == c) dim.for_type = ForType::GPUThread;
                }
            }
        }
        std::ostringstream os;
        os << what << ": " << chunks << " chunks of " << r << " (Var " << c
           << "), each rolled into";
        for (const Member &m : chain.members) os << " " << target.at(m.name)->name;
        os << "; combined into";
        for (const Member &m : chain.members) os << " " << m.name;
        env.fusion_log.push_back(os.str());
    }

    /** split_k whose partial is a tile program: the tile layer rolls each
     * chunk (a coordinate of the program, like a batch) over its tiles of
     * the RVar. Each member becomes X_chunk(chunk, Vars), computed in the
     * program over the whole RVar (for bounds; the program narrows it to
     * the chunk), and the program's Func, the leader's partial, is its
     * leader's X_chunk; the program stores the other members' partials
     * (Funcs at root) beside it, for the combines. */
    void roll_in_tile_program(const std::map<std::string, FunctionPtr> &target,
                              const FuncSchedule &placement, const StageSchedule &user_ss) {
        user_assert(d.layout == ChunkLayout::Contiguous)
            << what << ": its partial is a tile program, which rolls contiguous chunks of " << r
            << "; interleaved ones (ChunkLayout::Interleaved) are not built for tile "
            << "programs. Use ChunkLayout::Contiguous.";
        RolledChain rc = rolled_in_tile_program(chain, what);
        const std::string &c = d.chunk_var;
        const FunctionPtr &program = target.at(chain.leader);
        std::map<std::string, FunctionPtr> per_chunk;
        for (const Member &m : chain.members) {
            std::vector<std::string> args = {c};
            args.insert(args.end(), m.f->args.begin(), m.f->args.end());
            const std::string name = target.at(m.name)->name + "_chunk";
            user_assert(!env.funcs.count(name))
                << what << ": the pipeline already has a Func named " << name << ".";
            per_chunk[m.name] = make_reduction(name, args, m.op, m.f->output_types[0], chain.dom);
            env.origins[name] = "the values of " + m.name + " over one chunk, which the tile " +
                                "program of " + program->name + " (the split_k Stage) rolls";
        }
        // The terms read the other members' values in the same chunk.
        ReplaceCalls in_chunk;
        in_chunk.replace = [&](const Call *call_to) -> Expr {
            auto it = per_chunk.find(call_to->name);
            if (it == per_chunk.end()) return Expr();
            std::vector<Expr> args = {pure_var(c)};
            args.insert(args.end(), call_to->args.begin(), call_to->args.end());
            return call(it->second, args);
        };
        const LoopLevel in_program = {LoopLevel::At, program->name,
                                      placement.tile_program->col_block};
        auto add_placed = [&](const FunctionPtr &f, const LoopLevel &at,
                              std::vector<StageSchedule> stages) {
            FuncSchedule fs;
            fs.func = f;
            fs.compute_level = fs.store_level = at;
            fs.compute_level_set = fs.store_level_set = true;
            fs.stages = std::move(stages);
            add_function(f, fs);
        };
        for (RolledMember &rm : rc.members) {
            const FunctionPtr &f = per_chunk.at(rm.name);
            rm.term = in_chunk.mutate(rm.term);
            for (ProducerSlot &slot : rm.slots) slot.func = per_chunk.at(slot.func)->name;
            f->updates[0].values = {reduce_combine(rm.op, call(f, pure_args(f)), rm.term)};
            // The leader's loops over the RVar are the user's (its tiles,
            // its tensorize): the program reads them there.
            add_placed(f, in_program,
                       {default_stage_schedule(f, 0),
                        rm.name == chain.leader ? user_ss : default_stage_schedule(f, 1)});
            rm.name = f->name;
        }
        rc.leader = per_chunk.at(chain.leader)->name;
        rc.chunk_var = c;
        rc.chunks = d.chunks;
        rc.program = program->name;
        // The program's Func is its leader's chunk; the others' partials are
        // stored by the program, at root, with no loops of their own.
        program->init.values = {call(per_chunk.at(chain.leader), pure_args(program))};
        FuncSchedule ps = placement;
        ps.func = program;
        ps.stages.resize(1);
        add_function(program, ps);
        for (const Member &m : chain.members) {
            if (m.name == chain.leader) continue;
            const FunctionPtr &f = target.at(m.name);
            add_placed(f, LoopLevel::root(), {default_stage_schedule(f, 0)});
            rc.stored.push_back({f->name, per_chunk.at(m.name)->name});
        }
        env.rolled_in_tiles.push_back(rc);
        env.fusion_log.push_back(what + ": each chunk rolled by the tile program of " +
                                 program->name + ", per tile of " + r);
    }

    /** The Funcs the rewrite made besides the members: tile partials and
     * the bridges that read the running values. */
    std::set<std::string> made;

  private:
    /** Whether a Func computed at `level` is computed by a GPU block's
     * threads together: the level is inside a gpu_blocks loop and outside
     * every gpu_threads loop (those around the level, and those around
     * where its consumer is computed, and so on outwards). */
    bool computed_by_whole_block(LoopLevel level) const {
        bool in_block = false;
        std::set<std::string> seen;
        while (level.kind == LoopLevel::At && seen.insert(level.func).second) {
            auto it = env.schedules.find(level.func);
            if (it == env.schedules.end()) return false;
            for (const StageSchedule &stage : it->second.stages) {
                auto at = std::find_if(stage.dims.begin(), stage.dims.end(),
                                       [&](const Dim &dim) { return dim.var == level.var; });
                if (at == stage.dims.end()) continue;
                for (auto d = stage.dims.begin(); d <= at; ++d) {
                    if (d->for_type == ForType::GPUThread) return false;
                    in_block |= d->for_type == ForType::GPUBlock;
                }
                break;
            }
            level = it->second.compute_level;
        }
        return in_block;
    }

    /** Rolls the chain over r into `target` (one Function per member, with
     * the member's Vars, plus `chunk` if it is not empty): a pure definition
     * and one update per tile (or point), all in one FusedGroup. With a
     * chunk Var c, only the points [c * chunk_size, (c + 1) * chunk_size)
     * of r are rolled. The tile size and the leader's loops come from
     * `user_ss`, the placement from `placement`. */
    void roll(const std::map<std::string, FunctionPtr> &target, const StageSchedule &user_ss,
              const std::string &chunk, const Expr &chunks, const FuncSchedule &placement) {
        bool chunked = !chunk.empty();
        Expr tile = 1;
        std::string outer = r, inner;
        std::vector<Split> splits;
        for (const Split &sp : user_ss.splits) {
            if (sp.kind == Split::SplitVar && sp.old_var == r && inner.empty()) {
                tile = sp.factor;
                outer = sp.outer;
                inner = sp.inner;
                continue;
            }
            user_assert(sp.old_var != outer && sp.old_var != inner &&
                        (sp.kind != Split::FuseVars || (sp.outer != outer && sp.inner != outer &&
                                                        sp.inner != inner && sp.outer != inner)))
                << what << ": the loops over " << r << " may be split once into tiles (here "
                << outer << " and " << inner << "), not split, fused or renamed further.";
            splits.push_back(sp);
        }
        bool tiled = !inner.empty();
        const std::string leader = target.at(chain.leader)->name;

        // Contiguous chunks: chunk c rolls the points [c * size, (c + 1) *
        // size) of [0, N). With tiles, chunks are whole tiles (size is a
        // multiple of the tile), so a tile is numbered once for the whole
        // domain: global tile G holds [G * tile, (G + 1) * tile), wherever
        // its chunk. Interleaved chunks: step s of chunk c rolls global tile
        // (point, untiled) s * chunks + c.
        bool interleaved = chunked && d.layout == ChunkLayout::Interleaved;
        Expr units = tiled ? (r_extent + tile - 1) / tile : r_extent;  // tiles, or points
        Expr steps_per_chunk = interleaved ? max((units + chunks - 1) / chunks, 1) : Expr();
        Expr per_chunk = chunked ? max((r_extent + chunks - 1) / chunks, 1) : Expr();
        Expr tiles_per_chunk = chunked && tiled ? (per_chunk + tile - 1) / tile : Expr();
        Expr size = !chunked ? r_extent : tiled ? tiles_per_chunk * tile : per_chunk;
        // The most points one piece rolls.
        Expr span = interleaved ? (tiled ? steps_per_chunk * tile : steps_per_chunk) : size;
        Expr cv = chunked ? pure_var(chunk) : Expr();
        // With chunks and no bridges, the tile partials take the chunk too,
        // as a Var: the step of chunk c then reads and writes its running
        // values at c itself, which a GPU thread rolling one chunk keeps in
        // its registers, rather than at the chunk worked out from the tile
        // (an index no analysis ties to the thread). A bridge reads them at
        // the chunk of its key's tile, a region bounds inference cannot pin
        // to one chunk; with bridges the chunk stays worked out.
        const bool chunk_var_in_tiles = chunked && chain.bridges.empty();
        /** The global tile (point, untiled) that step `s` of chunk cv rolls. */
        auto global_unit = [&](const Expr &s) {
            if (interleaved) return s * chunks + cv;
            return chunked ? cv * (tiled ? tiles_per_chunk : size) + s : s;
        };
        /** Untiled: the point that step `s` of chunk cv rolls, clamped into
         * the chunk and the domain (a step past either is predicated off).
         * A contiguous chunk's end is written as min(base + size, N), not
         * base + limit: interval arithmetic then bounds it by N. */
        auto point_of_step = [&](const Expr &s) -> Expr {
            if (!chunked) return r_min + s;
            Expr global = global_unit(s);
            return r_min + (interleaved ? min(global, r_extent - 1)
                                        : min(global, min(cv * size + size, r_extent) - 1));
        };

        /** Where a step or a bridge is: its chunk, and its global tile (tiled)
         * or point of r (untiled). */
        struct Piece {
            Expr c, tile, point;
        };

        ReductionDomainPtr steps, tile_dom;
        // Chunks of whole tiles can cover more tiles than the domain holds:
        // the last chunk's final steps (and every step of a chunk past the
        // end) have no tile. Those steps are left out (the predicate), and
        // their tile is clamped to the last one, so that a step reads only
        // a tile that exists: what is computed per step (the tile partials,
        // the bridges, Funcs computed at the tile loop) then covers one
        // tile, a constant size that a GPU thread can hold in an array.
        // Unclamped, a step past the end would read its own tile and, through
        // the bridges' clamped points, the last one. (In a chunk past the
        // end, the clamped tile's partials start from the last tile's chunk;
        // the step that would use them is left out.)
        Expr last_tile = tiled ? (r_extent + tile - 1) / tile - 1 : Expr();
        if (tiled) {
            Expr step_pred;
            // likely(): partition_loops then peels the steps past the end
            // (a chunk's last, at most), so the steady state rolls whole tiles.
            if (chunked) {
                step_pred = likely(global_unit(Variable::make(Int(32), outer)) <= last_tile);
            }
            steps =
                make_domain(leader + "." + outer, outer, 0, (span + tile - 1) / tile, step_pred);
            // The tile partials run over global tile G = their Var `outer`;
            // their points are clamped into the domain (so bounds inference
            // sees reads inside it) and the predicate drops those past N.
            Expr within = pure_var(outer) * tile + Variable::make(Int(32), inner);
            // likely(): partition_loops peels the last tile, so the steady
            // state has neither the test nor the clamp of the point.
            Expr pred = likely(within < r_extent);
            if (predicate.defined())
                pred = pred && substitute(r, r_min + min(within, r_extent - 1), predicate);
            tile_dom = make_domain(leader + "." + inner, inner, 0, tile, pred);
        } else {
            Expr t = Variable::make(Int(32), r);
            Expr pred, at = point_of_step(t);
            if (chunked) pred = global_unit(t) < r_extent;
            if (predicate.defined()) pred = and_predicates(pred, substitute(r, at, predicate));
            steps = make_domain(leader + "." + r, r, 0, span, pred);
        }
        Expr step = rvar_of(steps);
        Piece step_piece;
        step_piece.c = cv;
        if (tiled) {
            // Clamped to the last tile, so that a bridge read at a step past
            // the end reads one tile that exists. Without bridges the
            // terms' points are clamped into the domain anyway, and the
            // tile left as it is lets partition_loops find the steps whose
            // tiles are whole.
            step_piece.tile = !chunked             ? step
                              : chunk_var_in_tiles ? global_unit(step)
                                                   : min(global_unit(step), last_tile);
        } else {
            step_piece.point = point_of_step(step);
        }

        auto args_of = [&](const Member &m, const Expr &c) {
            std::vector<Expr> args;
            if (chunked) args.push_back(c);
            for (const Expr &a : pure_args(m.f)) args.push_back(a);
            return args;
        };
        auto current_of = [&](const Member &m, const Expr &c) {
            return call(target.at(m.name), args_of(m, c));
        };
        // With tiles, partial[m](Vars, G) is m's running value after tile G
        // (see below).
        std::map<std::string, FunctionPtr> partial;
        // new_value(p, piece): member p's running value after the piece.
        std::function<Expr(const std::string &, const Piece &)> new_value;
        // What the dependents see of producer p before and after a piece:
        // its running value, or for a pivoted producer, its pivot.
        auto old_view = [&](const std::string &p, const Expr &c) {
            Expr v = current_of(chain.member(p), c);
            auto it = chain.pivots.find(p);
            return it == chain.pivots.end() ? v : pivot(v, current_of(chain.member(it->second), c));
        };
        std::function<Expr(const std::string &, const Piece &)> new_view = [&](const std::string &p,
                                                                               const Piece &at) {
            Expr v = new_value(p, at);
            auto it = chain.pivots.find(p);
            return it == chain.pivots.end() ? v : pivot(v, new_value(it->second, at));
        };
        // The producers' values before and after the piece, for m's repair.
        auto repair_inputs = [&](const Member &m, const Piece &at, std::vector<Expr> *olds,
                                 std::vector<Expr> *news, std::vector<Expr> *sums) {
            for (const std::string &p : m.producers) {
                olds->push_back(old_view(p, at.c));
                news->push_back(new_view(p, at));
            }
            for (const std::string &p : m.carried)
                sums->push_back(current_of(chain.member(p), at.c));
        };
        new_value = [&](const std::string &name, const Piece &at) -> Expr {
            const Member &m = chain.member(name);
            if (tiled) {
                std::vector<Expr> args = pure_args(m.f);
                if (chunk_var_in_tiles) args.push_back(at.c);
                args.push_back(at.tile);
                return call(partial.at(m.name), args);
            }
            Expr cur = current_of(m, at.c);
            Expr add = with_producers(m, substitute(r, at.point, m.term),
                                      [&](const std::string &p) { return new_view(p, at); });
            if (m.producers.empty()) return reduce_combine(m.op, cur, add);
            std::vector<Expr> olds, news, sums;
            repair_inputs(m, at, &olds, &news, &sums);
            return repaired_step(m, cur, olds, news, sums, add, cur);
        };

        if (tiled) {
            for (const Member &m : chain.members) {
                std::vector<std::string> args = m.f->args;
                if (chunk_var_in_tiles) args.push_back(chunk);
                args.push_back(outer);
                partial[m.name] = make_reduction(target.at(m.name)->name + "_tile", args, m.op,
                                                 m.f->output_types[0], tile_dom);
                made.insert(partial[m.name]->name);
                env.origins[partial[m.name]->name] =
                    "the running value of " + m.name + " after each tile of " + what +
                    ", placed by the fused pass; schedule the Stage that " +
                    (d.kind == FusionDirective::SplitK ? "split_k" : "rolling_update") + " returns";
            }
        }
        // Bridges see the producers' values for the chunk and tile of their
        // key point. chunk_of_unit(g): the chunk of global tile (point,
        // untiled) g, the inverse of global_unit. A tile is always in one
        // of the chunks (chunks * tiles_per_chunk tiles cover the domain);
        // the clamp says so to bounds inference, which cannot simplify
        // (chunks * T - 1) / T and would otherwise give the partials a size
        // known only at run time (on a GPU, one they cannot have in shared
        // memory).
        auto chunk_of_unit = [&](const Expr &g) -> Expr {
            if (!chunked) return Expr();
            if (interleaved) return clamp(g % chunks, 0, chunks - 1);
            return tiled ? clamp(g / max(tiles_per_chunk, 1), 0, chunks - 1) : g / size;
        };
        rewrite_bridges([&](const std::string &p, const Expr &key) {
            Piece at;
            Expr rel = key - r_min;
            if (tiled) {
                at.tile = rel / tile;
                at.c = chunk_of_unit(at.tile);
            } else {
                at.c = chunk_of_unit(rel);
                at.point = key;
            }
            return new_view(p, at);
        });
        if (tiled) {
            // Tile partials: each member's running value rolled on through
            // one tile, with the producers at their values after the tile.
            // A dependent starts from its running value repaired to those
            // values and accumulates the tile's terms into it, as
            // FlashAttention-2 rescales its output once per tile: the step
            // then only copies the partial, so the running value and the
            // partial are never live together (one register per element on
            // a GPU, not two). While a producer is still its identity the
            // repair leaves the value as it is, and the tile's points are
            // left out (their terms could be inf - inf): a test of the
            // producers, the same at every point of the tile, which
            // schedule_functions makes once per tile.
            Piece at;
            at.tile = pure_var(outer);
            at.c = chunk_var_in_tiles ? pure_var(chunk) : chunk_of_unit(at.tile);
            for (const Member &m : chain.members) {
                FunctionPtr p = partial[m.name];
                Expr start = current_of(m, at.c);
                ReductionDomainPtr dom = tile_dom;
                if (!m.producers.empty()) {
                    std::vector<Expr> olds, news, sums;
                    repair_inputs(m, at, &olds, &news, &sums);
                    start = guarded_repair(m, start, olds, news, sums);
                    if (Expr empty = any_at_identity(m, news); empty.defined()) {
                        dom = make_domain(tile_dom->name, inner, 0, tile,
                                          and_predicates(tile_dom->predicate, !empty));
                    }
                }
                Expr within = at.tile * tile + rvar_of(dom);
                Expr term = substitute(r, r_min + min(within, r_extent - 1), m.term);
                term =
                    with_producers(m, term, [&](const std::string &q) { return new_view(q, at); });
                p->init.values = {start};
                p->updates[0].rdom = dom;
                p->updates[0].values = {reduce_combine(m.op, call(p, pure_args(p)), term)};
                FuncSchedule fs;
                fs.func = p;
                fs.compute_level = fs.store_level = LoopLevel::inlined();
                fs.stages = {default_stage_schedule(p, 0), default_stage_schedule(p, 1)};
                for (Dim &dim : fs.stages[1].dims) {
                    for (const Dim &ud : user_ss.dims) {
                        if (ud.var == inner && dim.var == inner) dim.for_type = ud.for_type;
                    }
                }
                add_function(p, fs);
            }
        }

        // Each member: its pure definition, then one step per tile.
        for (const Member &m : chain.members) {
            FunctionPtr f = target.at(m.name);
            Definition u;
            u.args = pure_args(f);
            u.rdom = steps;
            u.values = {new_value(m.name, step_piece)};
            f->updates = {u};
        }

        // The group and the leader's loops: the tile loop sits inside the
        // loops of the Vars all members share and outside the leader's own.
        FusedGroup group;
        group.leader = leader;
        const Member &lm = chain.member(chain.leader);
        const FunctionPtr &lf = target.at(chain.leader);
        // The Vars every member has: the loops where the members' steps
        // meet. A lone reduction (split_k as rfactor) has no other
        // members' steps to place, so all of its Vars are.
        std::set<std::string> shared;
        for (const Member &m : chain.members) {
            if (m.name == chain.leader && chain.members.size() > 1) continue;
            for (const std::string &a : target.at(m.name)->args) shared.insert(a);
        }
        for (const Member &m : chain.members) {
            if (m.name == chain.leader) continue;
            const FunctionPtr &f = target.at(m.name);
            std::set<std::string> own(f->args.begin(), f->args.end());
            user_assert(own == shared)
                << what << ": the reductions of the chain other than " << lm.name
                << " must all have the same Vars to share one loop, but " << m.name
                << " differs from the others.";
        }
        for (const std::string &a : lf->args) {
            if (shared.count(a)) group.row_dims.push_back(a);
        }
        for (const std::string &a : shared) {
            user_assert(std::find(lf->args.begin(), lf->args.end(), a) != lf->args.end())
                << what << ": " << lm.name << " has no Var " << a
                << ", which the other reductions of the chain have.";
        }
        // Step order: the leader, the other dependents, then producers after
        // everything that reads them.
        group.members.push_back(leader);
        for (auto it = chain.members.rbegin(); it != chain.members.rend(); ++it) {
            if (it->name != chain.leader) group.members.push_back(target.at(it->name)->name);
        }

        StageSchedule ss;
        ss.splits = splits;
        std::map<std::string, std::string> origin;  // loop -> original Var
        for (const std::string &a : lf->args) origin[a] = a;
        origin[outer] = outer;
        // The Vars every member has (the rows) may be split, fused and
        // renamed (into blocks and threads of rows): the other members'
        // steps, which run where the rows' loops meet, define the Vars from
        // those loops as the leader's step does. A loop over a row and one
        // of the leader's own Vars at once would be the leader's alone.
        std::vector<Split> row_splits, own_splits;
        auto origin_of = [&](const std::string &v) {
            auto it = origin.find(v);
            return it == origin.end() ? v : it->second;
        };
        for (const Split &sp : splits) {
            const bool fuse = sp.kind == Split::FuseVars;
            const std::vector<std::string> consumed =
                fuse ? std::vector<std::string>{sp.outer, sp.inner}
                     : std::vector<std::string>{sp.old_var};
            std::vector<std::string> rows, others;
            for (const std::string &v : consumed) {
                (shared.count(origin_of(v)) ? rows : others).push_back(v);
            }
            user_assert(rows.empty() || others.empty())
                << what << ": fuse(" << sp.outer << ", " << sp.inner << ") joins " << rows[0]
                << ", a Var every reduction of the chain has, with " << others[0] << ", which "
                << lm.name << " alone has; the other reductions' steps could not run on the "
                << "fused loop. Fuse Vars of one kind only.";
            (rows.empty() ? own_splits : row_splits).push_back(sp);
            const std::string o = origin_of(consumed.front());
            if (fuse) {
                origin[sp.old_var] = o;
            } else {
                origin[sp.outer] = o;
                if (sp.kind == Split::SplitVar) origin[sp.inner] = o;
            }
        }
        std::vector<Dim> outside, inside;
        for (const Dim &dim : user_ss.dims) {
            if (dim.var == inner) continue;
            Dim nd = dim;
            if (dim.var == outer) {
                nd.is_rvar = true;
                user_assert(dim.for_type == ForType::Serial || dim.for_type == ForType::Unrolled)
                    << what << ": the loop " << outer << " carries the running values; it must "
                    << "run serially (use split_k for parallel pieces).";
            }
            std::string o = origin.count(dim.var) ? origin[dim.var] : dim.var;
            const bool own = !(o == outer || shared.count(o));
            if (own && (dim.for_type == ForType::GPUThread || dim.for_type == ForType::GPUBlock)) {
                // The other members' steps run once per point of the shared
                // loops, outside this one: its threads would each repeat them.
                std::vector<std::string> others;
                for (const Member &m : chain.members) {
                    if (m.name != chain.leader) others.push_back(m.name);
                }
                user_error << what << ": " << o << " is a Var of " << lm.name << " alone ("
                           << join(others, " and ") << (others.size() == 1 ? " has" : " have")
                           << " none), so the loop " << dim.var
                           << " runs inside the step that updates "
                           << (others.size() == 1 ? "it" : "them") << " once per point of "
                           << join(std::vector<std::string>(shared.begin(), shared.end()), ", ")
                           << "; as a "
                           << (dim.for_type == ForType::GPUThread ? "gpu_threads loop, each of its "
                                                                    "threads"
                                                                  : "gpu_blocks loop, each of its "
                                                                    "blocks")
                           << " would repeat that step. Put the GPU loops on the Vars every "
                              "reduction of the chain has, and keep "
                           << dim.var << " within each thread (serial, unroll or vectorize).";
            }
            (own ? inside : outside).push_back(nd);
        }
        internal_assert(!outside.empty());
        group.loop_var = outside.back().var;
        ss.dims = outside;
        ss.dims.insert(ss.dims.end(), inside.begin(), inside.end());
        if (tiled && !inside.empty()) {
            // The leader's tile partial (attention's sum of p * v over the
            // tile) is computed once per row, where the steps meet, with the
            // leader's own inner loops (e.g. the head dimension, split and
            // vectorized) inside the loop over the tile's points: one
            // accumulator per vector of the head dimension, updated by every
            // point, instead of one dependent chain per vector.
            FunctionPtr px = partial.at(chain.leader);
            FuncSchedule &pfs = env.schedules.at(px->name);
            pfs.compute_level = pfs.store_level = {LoopLevel::At, leader, group.loop_var};
            pfs.compute_level_set = pfs.store_level_set = true;
            // It is computed per row: the rows' splits are not its own.
            StageSchedule pss;
            pss.splits = own_splits;
            for (const std::string &a : px->args) {
                if (a == outer || shared.count(a)) pss.dims.push_back({a, ForType::Serial, false});
            }
            Dim ri{inner, ForType::Serial, true};
            for (const Dim &ud : user_ss.dims) {
                if (ud.var == inner) ri.for_type = ud.for_type;
            }
            // Its start (the running value repaired) runs over the same
            // inner loops, without the tile's points.
            StageSchedule start = pss;
            start.dims.insert(start.dims.end(), inside.begin(), inside.end());
            pfs.stages[0] = start;
            pss.dims.push_back(ri);
            pss.dims.insert(pss.dims.end(), inside.begin(), inside.end());
            pfs.stages[1] = pss;
        }
        for (const Member &m : chain.members) {
            const FunctionPtr &f = target.at(m.name);
            FuncSchedule &fs = env.schedules[f->name];
            fs.func = f;
            fs.compute_level = placement.compute_level;
            fs.store_level = placement.store_level;
            fs.compute_level_set = placement.compute_level_set;
            fs.store_level_set = placement.store_level_set;
            // The pure definitions run with the loop types the steps give
            // their Vars: on a GPU, the threads that update an element are
            // the ones that initialize it. A Var the leader's step splits
            // (attention's head dimension, in vectors; the rows, into
            // blocks and threads) is split the same way in the pure
            // definitions that have it, whose loops then take the pieces'
            // types (unrolled, vectorized, blocks, threads) too ...
            StageSchedule init = default_stage_schedule(f, 0);
            for (const Split &sp : m.name == chain.leader ? ss.splits : row_splits) {
                apply_to_pure_loops(sp, &init);
            }
            // ... and nest in the steps' order (blocks outside threads).
            std::vector<size_t> slots;
            std::vector<Dim> stepped;
            for (size_t k = 0; k < init.dims.size(); k++) {
                for (const Dim &step : ss.dims) {
                    if (step.is_rvar || step.var != init.dims[k].var) continue;
                    init.dims[k].for_type = step.for_type;
                    slots.push_back(k);
                    stepped.push_back(init.dims[k]);
                }
            }
            auto step_position = [&](const Dim &d) {
                return std::find_if(ss.dims.begin(), ss.dims.end(),
                                    [&](const Dim &s) { return s.var == d.var; }) -
                       ss.dims.begin();
            };
            std::stable_sort(stepped.begin(), stepped.end(), [&](const Dim &x, const Dim &y) {
                return step_position(x) < step_position(y);
            });
            for (size_t k = 0; k < slots.size(); k++) init.dims[slots[k]] = stepped[k];
            fs.stages = {init, m.name == chain.leader ? ss : default_stage_schedule(f, 1)};
        }
        if (tiled) {
            group.mask = chain.vanishing_mask();
            if (group.mask.defined()) {
                Expr g = global_unit(pure_var(outer));
                group.mask_key = r;
                group.tile_loop = outer;
                group.tile_first = r_min + g * tile;
                group.tile_last = r_min + min(g * tile + tile, r_extent) - 1;
                std::ostringstream os;
                os << what << ": every term is its identity where " << group.mask
                   << " is false, so tiles where it holds for no row are skipped";
                env.fusion_log.push_back(os.str());
            }
        }
        env.groups.push_back(group);
        std::ostringstream os;
        os << what << ": one loop over " << (tiled ? "tiles " + outer + " of " : "") << r
           << (chunked ? " within each chunk" : "") << " computes";
        for (const std::string &n : group.members) os << " " << n;
        if (tiled) os << " (tiles of " << tile << " points, reduced in " << inner << ")";
        env.fusion_log.push_back(os.str());
    }

    LoweringEnv &env;
    const ScheduleContents &s;
    const FusionDirective &d;
    Chain &chain;
    std::string what;
    std::string r;
    Expr r_min, r_extent, predicate;

    /** Refuses loop directives (splits, reorders, loop types) the user gave
     * to `stage` of member m where the fusion replaces them. A stage whose
     * loops are the default ones carries no directive. The leader's update
     * is the stage rolling_update returns: its directives are the pass's. */
    void refuse_dropped_loops(const Member &m, int stage) {
        if (stage == 1 && m.name == chain.leader && d.kind == FusionDirective::RollingUpdate)
            return;
        auto it = s.funcs.find(m.name);
        if (it == s.funcs.end() || static_cast<int>(it->second.stages.size()) <= stage) return;
        const StageSchedule &given = it->second.stages[stage];
        const StageSchedule plain = default_stage_schedule(m.f, stage);
        bool same = given.splits.empty() && given.dims.size() == plain.dims.size();
        for (size_t i = 0; same && i < given.dims.size(); i++) {
            same = given.dims[i].var == plain.dims[i].var &&
                   given.dims[i].for_type == plain.dims[i].for_type;
        }
        if (same || (given.dims.empty() && given.splits.empty())) return;
        std::string where = stage == 0 ? "sch[" + m.name + "]" : "sch[" + m.name + "].update()";
        if (d.kind == FusionDirective::SplitK) {
            user_error << what << ": the update of " << m.name
                       << " runs as part of each chunk's rolling pass, so the loop directives "
                       << "given to " << where << " would be ignored. Schedule the pass on the "
                       << "stage split_k returns (" << d.partial << "'s update); "
                       << "sch[" << m.name << "] itself schedules " << m.name << "'s combine.";
        }
        if (m.name == chain.leader) {
            user_error << what << ": the pure definition of " << m.name
                       << " runs with the loops of the stage rolling_update returns (its splits "
                       << "of " << m.name << "'s Vars and their loop types), so the loop "
                       << "directives given to " << where << " would be ignored. Give them to "
                       << "the stage rolling_update returns.";
        }
        user_error << what << ": " << m.name << " is fused into " << chain.leader << "'s pass over "
                   << r << " and computed with it, in its loops, so the "
                   << "loop directives given to " << where
                   << " would be ignored. Remove them, and schedule the stage rolling_update "
                   << "returns.";
    }

    /** Refuses a placement (compute_at, compute_root, store_in) given to a
     * member other than the leader, which rolling_update computes where
     * the leader is. */
    void refuse_dropped_placement(const Member &m) {
        auto it = s.funcs.find(m.name);
        if (it == s.funcs.end()) return;
        const FuncSchedule &fs = it->second;
        auto directive = [](const char *kind, const LoopLevel &level) {
            if (level.is_root()) return std::string(kind) + "_root()";
            if (level.is_inlined()) return std::string(kind) + "_inline()";
            return std::string(kind) + "_at(" + level.func + ", " + level.var + ")";
        };
        std::string given = fs.memory_type != MemoryType::Auto ? "store_in()"
                            : fs.compute_level_set ? directive("compute", fs.compute_level)
                                                   : directive("store", fs.store_level);
        user_assert(!fs.compute_level_set && !fs.store_level_set &&
                    fs.memory_type == MemoryType::Auto)
            << what << ": " << m.name << " is fused into " << chain.leader << "'s pass over " << r
            << " and computed where " << chain.leader << " is, so its own placement (" << given
            << ") would be ignored. Remove it, and place " << chain.leader << " instead.";
    }

    StageSchedule user_stage(const std::string &func, int stage) {
        auto it = s.funcs.find(func);
        if (it != s.funcs.end() && static_cast<int>(it->second.stages.size()) > stage) {
            const StageSchedule &ss = it->second.stages[stage];
            if (!ss.dims.empty() || !ss.splits.empty()) return ss;
        }
        return default_stage_schedule(chain.member(chain.leader).f, stage);
    }

    /** The bridges, redefined with the producers' values for the piece
     * holding their key point (value_of(producer, key)); the members'
     * terms call the new definitions. */
    void rewrite_bridges(const std::function<Expr(const std::string &, const Expr &)> &value_of) {
        std::map<std::string, FunctionPtr> fresh;
        for (const auto &kv : chain.bridges) {
            const Bridge &b = kv.second;
            auto f = make_lowered_function(*b.f);
            if (b.read_outside) {
                f->name = b.f->name + "_fused";
                env.origins[f->name] = "the copy of " + b.f->name +
                                       " that reads the running "
                                       "values of " +
                                       what + ", scheduled as " + b.f->name + " is";
                user_assert(!env.funcs.count(f->name))
                    << what << ": the pipeline already has a Func named " << f->name << ".";
            }
            Expr key = pure_var(b.f->args[b.key]);
            ReplaceCalls rc;
            rc.replace = [&](const Call *c) -> Expr {
                if (!chain.is_member(c->name)) return Expr();
                const Member &p = chain.member(c->name);
                std::map<std::string, Expr> args;
                for (size_t k = 0; k < p.f->args.size(); k++) args[p.f->args[k]] = c->args[k];
                return substitute(args, value_of(c->name, key));
            };
            f->init.values = {rc.mutate(b.body)};
            made.insert(f->name);
            FuncSchedule fs = env.schedules.at(b.f->name);
            fs.func = f;
            env.funcs[f->name] = f;
            env.schedules[f->name] = fs;
            if (b.read_outside) env.order.push_back(f->name);
            fresh[b.f->name] = f;
            env.fusion_log.push_back(what + ": Func " + f->name + " reads the running values");
        }
        ReplaceCalls relink;
        relink.replace = [&](const Call *c) -> Expr {
            auto it = fresh.find(c->name);
            if (it == fresh.end()) return Expr();
            return Call::make(c->type, it->second->name, c->args, Call::Func, it->second,
                              c->value_index);
        };
        for (Member &m : chain.members) m.term = relink.mutate(m.term);
        // Bridges reading other bridges read them inlined (see Bridge::body).
    }

    /** Fresh Functions for the members (same names), defined later. */
    void create_fused_functions() {
        for (Member &m : chain.members) {
            auto f = make_lowered_function(*m.f);
            f->updates.clear();
            m.fused = f;
            env.funcs[m.name] = f;
        }
    }

    Expr current(const Member &m) { return call(m.fused, pure_args(m.fused)); }

    Expr pivot(const Expr &value, const Expr &count) { return pivot_of(value, count, r_extent); }

    /** e with the calls to m's producers replaced by value(producer). */
    Expr with_producers(const Member &m, const Expr &e,
                        const std::function<Expr(const std::string &)> &value) {
        ReplaceCalls rc;
        rc.replace = [&](const Call *c) -> Expr {
            if (std::find(m.producers.begin(), m.producers.end(), c->name) == m.producers.end())
                return Expr();
            return value(c->name);
        };
        return rc.mutate(e);
    }

    void add_function(const FunctionPtr &f, const FuncSchedule &fs) {
        env.funcs[f->name] = f;
        env.schedules[f->name] = fs;
        env.order.push_back(f->name);
    }
};

/** A realization order of env.funcs: every Func after the Funcs it calls,
 * otherwise keeping the previous order. */
void reorder(LoweringEnv &env) {
    std::map<std::string, int> rank;
    for (size_t k = 0; k < env.order.size(); k++) rank[env.order[k]] = static_cast<int>(k);
    std::vector<std::string> order;
    std::set<std::string> done, active;
    // Funcs that the members of a group read (partials, bridges): computed
    // inside the group's loops, by the leader of that group.
    std::map<std::string, std::string> inside;
    for (const FusedGroup &g : env.groups) {
        std::vector<std::string> stack(g.members.begin(), g.members.end());
        while (!stack.empty()) {
            std::string n = stack.back();
            stack.pop_back();
            visit_calls(*env.funcs.at(n), [&](const Call *c) {
                if (!env.funcs.count(c->name) || inside.count(c->name)) return;
                if (std::find(g.members.begin(), g.members.end(), c->name) != g.members.end())
                    return;
                inside.emplace(c->name, g.leader);
                stack.push_back(c->name);
            });
        }
    }
    std::function<void(const std::string &)> visit = [&](const std::string &n) {
        if (done.count(n)) return;
        internal_assert(!active.count(n)) << "cycle of Funcs through " << n;
        active.insert(n);
        std::vector<std::string> deps;
        visit_calls(*env.funcs.at(n), [&](const Call *c) {
            // A Func inside a group reads its members' running values (a
            // tile partial starts from one): the members are realized
            // around it, not before it.
            const FusedGroup *g = env.group_led_by(c->name);
            if (!g) g = env.group_following(c->name);
            auto in = inside.find(n);
            if (g && in != inside.end() && in->second == g->leader) return;
            if (c->name != n && env.funcs.count(c->name) &&
                std::find(deps.begin(), deps.end(), c->name) == deps.end())
                deps.push_back(c->name);
        });
        // A group's leader produces the other members: it comes after
        // them and after everything they read, and before whatever reads
        // any of them.
        for (std::string &dep : deps) {
            const FusedGroup *g = env.group_following(dep);
            if (g && g->leader != n && !env.group_following(n) && !inside.count(n)) dep = g->leader;
        }
        if (const FusedGroup *g = env.group_led_by(n)) {
            for (const std::string &m : g->members) {
                if (m != n && std::find(deps.begin(), deps.end(), m) == deps.end())
                    deps.push_back(m);
            }
        }
        // Funcs a tile program stores besides its own are realized around
        // it (before its chain's leader), and read after it.
        auto has = [&](const std::string &d) {
            return std::find(deps.begin(), deps.end(), d) != deps.end();
        };
        for (const RolledChain &rc : env.rolled_in_tiles) {
            for (const auto &[stored, member] : rc.stored) {
                if (n == rc.leader) {
                    deps.push_back(stored);
                } else if (n != rc.program && !rc.member(n) && has(stored) && !has(rc.program)) {
                    deps.push_back(rc.program);
                }
            }
        }
        std::sort(deps.begin(), deps.end(),
                  [&](const std::string &a, const std::string &b) { return rank[a] < rank[b]; });
        for (const std::string &dname : deps) visit(dname);
        active.erase(n);
        done.insert(n);
        order.push_back(n);
    };
    std::vector<std::string> roots = env.order;
    std::stable_sort(roots.begin(), roots.end(),
                     [&](const std::string &a, const std::string &b) { return rank[a] < rank[b]; });
    for (const std::string &n : roots) {
        if (env.funcs.count(n)) visit(n);
    }
    env.order = order;
}

/** Calls between members of a group read running values, so a group
 * member's calls to another member (in its step) are fine; a Func outside
 * the group must not read a member before the group is done. Nothing to
 * check here beyond what placement checks; kept for the log. */

}  // namespace

namespace {

/** Whether a tile program computes f (f is one, or is computed at one's
 * tile loop). */
bool computed_in_tile_program(const LoweringEnv &env, const std::string &f) {
    auto it = env.schedules.find(f);
    if (it == env.schedules.end()) return false;
    if (it->second.tile_program) return true;
    const LoopLevel &l = it->second.compute_level;
    auto at = env.schedules.find(l.func);
    return l.kind == LoopLevel::At && at != env.schedules.end() && at->second.tile_program;
}

/** The chain as a tile program computes it: its members with their terms
 * and repairs. Refuses what the tile layer does not roll yet. */
RolledChain rolled_in_tile_program(const Chain &chain, const std::string &what) {
    RolledChain rc;
    rc.leader = chain.leader;
    const ReductionVariable &rv = chain.dom->domain[0];
    user_assert(!chain.dom->predicate.defined())
        << what << " is rolled by a tile program, over an RDom with a where() condition, "
        << "which tile programs do not roll yet. Write the condition into the terms "
        << "(select(cond, term, identity)).";
    rc.rvar = rv.var;
    rc.r_min = rv.min;
    rc.r_extent = rv.extent;
    user_assert(chain.pivots.empty())
        << what << " is rolled by a tile program, and its dependents keep their state about "
        << "a pivot (Welford's form), which tile programs do not roll yet.";
    for (const Member &m : chain.members) {
        user_assert(!m.made && (m.repair.kind == Repair::None || m.repair.kind == Repair::Scale ||
                                m.repair.kind == Repair::Shift))
            << what << " is rolled by a tile program, and " << m.name
            << "'s repair carries running sums or resets, which tile programs do not roll "
               "yet (they roll scale and shift repairs).";
        rc.members.push_back({m.name, m.op, m.g, m.slots, m.repair});
    }
    return rc;
}

}  // namespace

void fuse_reduction_chains(LoweringEnv &env, const ScheduleContents &s) {
    for (const FusionDirective &d : s.fusions) {
        std::string what = directive_name(d);
        // The user's Func X, kept alive by the Schedule.
        auto keep = s.consumers.find(d.func);
        internal_assert(keep != s.consumers.end());
        FunctionPtr user_x = keep->second.function();
        // Inline reductions over the same RDom that the user named through a
        // wrapper (m(i) = maximum(...)) take the wrapper's name, so the
        // fused loops read as the algorithm does.
        if (env.funcs.count(d.reduction) && env.funcs.at(d.reduction)->updates.size() == 1) {
            ReductionDomainPtr dom = env.funcs.at(d.reduction)->updates[0].rdom;
            std::map<std::string, FunctionPtr> all = find_transitive_calls(env.outputs);
            for (const auto &kv : all) {
                const FunctionPtr &w = kv.second;
                if (w->name == d.func || !w->updates.empty() || w->init.values.size() != 1)
                    continue;
                const Call *c = w->init.values[0].as<Call>();
                if (!c || c->call_type != Call::Func || !c->func || !c->func->is_inline_reduction ||
                    c->name == d.reduction || !env.funcs.count(c->name) ||
                    env.funcs.at(c->name)->updates.size() != 1 ||
                    env.funcs.at(c->name)->updates[0].rdom.get() != dom.get() ||
                    c->args.size() != w->args.size())
                    continue;
                std::set<std::string> vars;
                for (const Expr &a : c->args) {
                    const Variable *v = a.as<Variable>();
                    if (v && std::find(w->args.begin(), w->args.end(), v->name) != w->args.end())
                        vars.insert(v->name);
                }
                if (vars.size() == w->args.size()) fold_inline_reduction(env, c->name, w, s);
            }
        }
        if (d.reduction != d.func) fold_inline_reduction(env, d.reduction, user_x, s);
        user_assert(env.funcs.count(d.func))
            << what << ": Func " << d.func << " is not computed by this pipeline (the output "
            << "does not read it, or another directive already rewrote it).";
        for (const FusedGroup &g : env.groups) {
            user_assert(std::find(g.members.begin(), g.members.end(), d.func) == g.members.end())
                << what << ": " << d.func << " is already fused into the chain of " << g.leader
                << ".";
        }
        // Tuple reductions over the chain's RDom become one reduction per
        // element; a Tuple X is led by its first element that reads
        // another reduction.
        FusionDirective eff = d;
        {
            ReductionDomainPtr dom;
            const FunctionPtr &x = env.funcs.at(d.func);
            if (x->updates.size() == 1) dom = x->updates[0].rdom;
            std::vector<std::string> tuples;
            for (const auto &kv : env.funcs) {
                if (dom && kv.second->output_types.size() > 1 && kv.second->updates.size() == 1 &&
                    kv.second->updates[0].rdom == dom)
                    tuples.push_back(kv.first);
            }
            for (const std::string &t : tuples) {
                std::vector<std::string> parts = decompose_tuple(env, t, dom);
                if (t != d.func || parts.empty()) continue;
                eff.func = parts.back();
                for (const std::string &p : parts) {
                    bool reads = false;
                    visit_calls(*env.funcs.at(p), [&](const Call *c) {
                        const FunctionPtr *q = nullptr;
                        auto it = env.funcs.find(c->name);
                        if (it != env.funcs.end()) q = &it->second;
                        reads |= c->name != p && q && (*q)->updates.size() == 1 &&
                                 (*q)->updates[0].rdom == dom;
                    });
                    if (reads) {
                        eff.func = p;
                        break;
                    }
                }
            }
        }
        std::set<std::string> directed_elsewhere;
        for (const FusionDirective &other : s.fusions) {
            if (&other == &d) continue;
            directed_elsewhere.insert(other.func);
            directed_elsewhere.insert(other.reduction);
        }
        Chain chain(env, eff, directed_elsewhere);
        chain.discover();
        chain.derive(env.fusion_log);
        if (d.kind == FusionDirective::RollingUpdate && computed_in_tile_program(env, d.func)) {
            env.rolled_in_tiles.push_back(rolled_in_tile_program(chain, what));
            // The members are computed with the leader, in its program.
            const FuncSchedule &lead = env.schedules.at(chain.leader);
            for (const Member &m : chain.members) {
                internal_assert(env.schedules.count(m.name)) << "no schedule for " << m.name;
                FuncSchedule &ms = env.schedules.at(m.name);
                ms.compute_level = ms.store_level = lead.compute_level;
                ms.compute_level_set = ms.store_level_set = true;
            }
            env.fusion_log.push_back(what + ": rolled by its tile program, per tile of " +
                                     chain.dom->domain[0].var);
            continue;
        }
        Rewriter rw(env, s, eff, chain);
        if (d.kind == FusionDirective::RollingUpdate) {
            rw.rolling_update();
        } else {
            rw.split_k();
        }
        // Calls into members from outside now read the new Functions.
        std::map<std::string, FunctionPtr> fresh;
        for (const Member &m : chain.members) fresh[m.name] = m.fused;
        ReplaceCalls relink;
        relink.replace = [&](const Call *c) -> Expr {
            auto it = fresh.find(c->name);
            if (it == fresh.end() || c->func == it->second) return Expr();
            return Call::make(c->type, c->name, c->args, Call::Func, it->second, c->value_index);
        };
        DomainRewrites domains;
        for (auto &kv : env.funcs) {
            FunctionContents &f = *kv.second;
            f.init = map_definition(
                f.init, [&](const Expr &e) { return relink.mutate(e); }, domains);
            for (Definition &u : f.updates)
                u = map_definition(
                    u, [&](const Expr &e) { return relink.mutate(e); }, domains);
        }
        for (FunctionPtr &o : env.outputs) {
            if (fresh.count(o->name)) o = fresh[o->name];
        }
        // Rolled over an RDom with a predicate, a pivoted dependent's state
        // is about its last pivot, which is not the final value: every read
        // from outside the chain moves it there (Chain::read_at_final_value).
        const ReductionDomainPtr &dom = chain.dom;
        if (d.kind == FusionDirective::RollingUpdate && dom->predicate.defined() &&
            !chain.pivots.empty()) {
            std::set<std::string> inside = rw.made;
            for (const Member &m : chain.members) inside.insert(m.name);
            ReplaceCalls finish;
            finish.replace = [&](const Call *c) -> Expr {
                auto it = fresh.find(c->name);
                if (it == fresh.end()) return Expr();
                std::map<std::string, Expr> args;
                for (size_t k = 0; k < c->args.size(); k++) args[it->second->args[k]] = c->args[k];
                return chain.read_at_final_value(c->name, c, args);
            };
            bool any = false;
            DomainRewrites finished;
            for (auto &kv : env.funcs) {
                if (inside.count(kv.first)) continue;
                FunctionContents &f = *kv.second;
                auto fix = [&](const Expr &e) {
                    Expr r = finish.mutate(e);
                    any |= !r.same_as(e);
                    return r;
                };
                f.init = map_definition(f.init, fix, finished);
                for (Definition &u : f.updates) u = map_definition(u, fix, finished);
            }
            if (any) {
                env.fusion_log.push_back(what +
                                         ": over an RDom with a predicate the count of "
                                         "terms can stop short of the extent, so the "
                                         "pivoted dependents are moved from their last "
                                         "pivot to the final value where they are read");
            }
        }
    }
    if (!s.fusions.empty()) reorder(env);
}

}  // namespace internal
}  // namespace loom
