// The conditioning check of a derived repair: see RepairConditioning.h.
#include "fusion/RepairConditioning.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

using Lanes = std::vector<double>;

/** v rounded to t, as a value of type t holds it. */
double round_to(Type t, double v) {
    if (t.is_float()) {
        if (t.is_bfloat()) return static_cast<float>(bfloat16_t(static_cast<float>(v)));
        if (t.bits == 16) return static_cast<float>(float16_t(static_cast<float>(v)));
        if (t.bits == 32) return static_cast<float>(v);
        return v;
    }
    if (t.is_bool()) return v != 0;
    return std::isfinite(v) ? std::trunc(v) : 0;
}

/** The unit roundoff of a float type. */
double unit_roundoff(Type t) {
    if (t.is_bfloat()) return std::ldexp(1.0, -8);
    if (t.bits == 16) return std::ldexp(1.0, -11);
    if (t.bits == 32) return std::ldexp(1.0, -24);
    return std::ldexp(1.0, -53);
}

/** Values of every atom of the simulated terms (what is neither a slot nor
 * arithmetic), drawn per scenario and shared by the rounded and the exact
 * evaluation. */
class Data {
  public:
    Data(int lanes, double offset, bool ascending, uint64_t seed, const Expr &extent)
        : lanes(lanes), offset(offset), ascending(ascending), rng(seed), extent(extent) {}

    const Lanes &of(const Expr &atom) {
        for (const auto &a : atoms) {
            if (equal(a.first, atom)) return a.second;
        }
        atoms.emplace_back(atom, draw(atom));
        return atoms.back().second;
    }

  private:
    int lanes;
    double offset;
    bool ascending;
    std::mt19937_64 rng;
    Expr extent;
    std::vector<std::pair<Expr, Lanes>> atoms;

    Lanes draw(const Expr &atom) {
        Type t = atom.type();
        const Variable *v = atom.as<Variable>();
        if (v && v->rdom) {
            Lanes l(lanes);
            for (int j = 0; j < lanes; j++) l[j] = j;  // the point of the reduction
            return l;
        }
        if (extent.defined() && equal(atom, extent)) return Lanes(lanes, lanes);
        std::uniform_real_distribution<double> unit(0, 1);
        if (!reads_rvar(atom)) {
            // Constant along the reduction: a Param, a value of the row.
            double c = t.is_float()  ? 0.5 + 1.5 * unit(rng)
                       : t.is_bool() ? (unit(rng) < 0.5)
                                     : std::floor(unit(rng) * lanes);
            return Lanes(lanes, round_to(t, c));
        }
        Lanes l(lanes);
        std::normal_distribution<double> normal(0, 1);
        for (int j = 0; j < lanes; j++) {
            if (t.is_float()) {
                l[j] = offset + normal(rng);
            } else if (t.is_bool()) {
                l[j] = unit(rng) < 0.5;
            } else {
                l[j] = std::floor(unit(rng) * lanes);
            }
        }
        if (ascending && t.is_float()) std::sort(l.begin(), l.end());
        for (double &x : l) x = round_to(t, x);
        return l;
    }
};

/** Evaluates scalar Exprs over lanes, every operation rounded to its type
 * (or, `exact`, in float64). Variables in `vars` (the slots) take their
 * lanes; everything else not arithmetic is an atom from `data`. */
class LaneEval {
  public:
    LaneEval(int lanes, bool exact, Data &data) : lanes(lanes), exact(exact), data(data) {}
    std::map<std::string, Lanes> vars;

    Lanes eval(const Expr &e) {
        Type t = e.type();
        if (const FloatImm *f = e.as<FloatImm>()) return Lanes(lanes, f->value);
        if (const IntImm *i = e.as<IntImm>()) return Lanes(lanes, static_cast<double>(i->value));
        if (const UIntImm *u = e.as<UIntImm>()) return Lanes(lanes, static_cast<double>(u->value));
        if (const Variable *v = e.as<Variable>()) {
            auto it = vars.find(v->name);
            if (it != vars.end()) return it->second;
            return data.of(e);
        }
        if (const Add *op = e.as<Add>()) return binary(t, op->a, op->b, std::plus<double>());
        if (const Sub *op = e.as<Sub>()) return binary(t, op->a, op->b, std::minus<double>());
        if (const Mul *op = e.as<Mul>()) return binary(t, op->a, op->b, std::multiplies<double>());
        if (const Div *op = e.as<Div>()) {
            bool is_float = t.is_float();
            return binary(t, op->a, op->b, [is_float](double a, double b) {
                if (is_float) return a / b;
                return b == 0 ? 0.0 : std::floor(a / b);
            });
        }
        if (const Min *op = e.as<Min>()) {
            return binary(t, op->a, op->b, [](double a, double b) { return std::min(a, b); });
        }
        if (const Max *op = e.as<Max>()) {
            return binary(t, op->a, op->b, [](double a, double b) { return std::max(a, b); });
        }
        if (const EQ *op = e.as<EQ>()) return compare(op->a, op->b, std::equal_to<double>());
        if (const NE *op = e.as<NE>()) return compare(op->a, op->b, std::not_equal_to<double>());
        if (const LT *op = e.as<LT>()) return compare(op->a, op->b, std::less<double>());
        if (const LE *op = e.as<LE>()) return compare(op->a, op->b, std::less_equal<double>());
        if (const GT *op = e.as<GT>()) return compare(op->a, op->b, std::greater<double>());
        if (const GE *op = e.as<GE>()) return compare(op->a, op->b, std::greater_equal<double>());
        if (const And *op = e.as<And>()) {
            return compare(op->a, op->b, [](double a, double b) { return a != 0 && b != 0; });
        }
        if (const Or *op = e.as<Or>()) {
            return compare(op->a, op->b, [](double a, double b) { return a != 0 || b != 0; });
        }
        if (const Not *op = e.as<Not>()) {
            Lanes a = eval(op->a);
            for (double &x : a) x = x == 0;
            return a;
        }
        if (const Select *op = e.as<Select>()) {
            Lanes c = eval(op->condition), a = eval(op->true_value), b = eval(op->false_value);
            for (int j = 0; j < lanes; j++) a[j] = c[j] != 0 ? a[j] : b[j];
            return a;
        }
        if (const Cast *op = e.as<Cast>()) return rounded(t, eval(op->value));
        if (const Let *op = e.as<Let>()) {
            Lanes value = eval(op->value);
            auto saved = vars.find(op->name) == vars.end() ? nullptr : &vars[op->name];
            Lanes old = saved ? *saved : Lanes();
            vars[op->name] = value;
            Lanes body = eval(op->body);
            if (saved) {
                vars[op->name] = old;
            } else {
                vars.erase(op->name);
            }
            return body;
        }
        if (const Call *op = e.as<Call>(); op && op->call_type == Call::PureIntrinsic) {
            if (double (*f)(double) = math_function(op->name); f && op->args.size() == 1) {
                Lanes a = eval(op->args[0]);
                for (double &x : a) x = f(x);
                return rounded(t, std::move(a));
            }
            if (op->name.rfind("pow_", 0) == 0 && op->args.size() == 2) {
                return binary(t, op->args[0], op->args[1],
                              [](double a, double b) { return std::pow(a, b); });
            }
        }
        if (const Call *op = e.as<Call>(); op && op->is_intrinsic(Call::likely)) {
            return eval(op->args[0]);
        }
        return data.of(e);
    }

  private:
    int lanes;
    bool exact;
    Data &data;

    Lanes rounded(Type t, Lanes v) {
        if (!exact || !t.is_float()) {
            for (double &x : v) x = round_to(t, x);
        }
        return v;
    }
    template <typename F> Lanes binary(Type t, const Expr &a, const Expr &b, F f) {
        Lanes x = eval(a), y = eval(b);
        for (int j = 0; j < lanes; j++) x[j] = f(x[j], y[j]);
        return rounded(t, std::move(x));
    }
    template <typename F> Lanes compare(const Expr &a, const Expr &b, F f) {
        Lanes x = eval(a), y = eval(b);
        for (int j = 0; j < lanes; j++) x[j] = f(x[j], y[j]) ? 1 : 0;
        return x;
    }
};

double identity_of(ReduceOp op) {
    switch (op) {
    case ReduceOp::Add: return 0;
    case ReduceOp::Mul: return 1;
    case ReduceOp::Max: return -INFINITY;
    case ReduceOp::Min: return INFINITY;
    }
    return 0;
}

bool ordered(ReduceOp op) { return op == ReduceOp::Max || op == ReduceOp::Min; }

/** The member's state: the reduction (index 0) and its carried sums (1 + k
 * for carried[k]), flattened, with for each the repair that keeps it in
 * step and where its carried sums are in the flat list. */
struct Family {
    struct Entry {
        Expr term;  // in slot variables; 1 for the count
        Type type;
        bool is_count = false;
        const Repair *repair = nullptr;  // null or None: a root, never repaired
        std::vector<int> sums;           // flat indices of repair->carried
    };
    std::vector<Entry> entries;

    Family(const ConditioningSubject &s) {
        Entry top;
        top.term = s.g;
        top.type = s.g.type();
        top.repair = &s.repair;
        entries.push_back(top);
        for (const CarriedSum &c : s.repair.carried) {
            Entry e;
            e.term = c.per_term;
            e.type = c.is_count() ? Int(32) : s.g.type();
            e.is_count = c.is_count();
            entries.push_back(e);
        }
        for (size_t k = 0; k < s.repair.carried_repairs.size(); k++) {
            if (s.repair.carried_repairs[k].kind != Repair::None) {
                entries[1 + k].repair = &s.repair.carried_repairs[k];
            }
        }
        for (Entry &e : entries) {
            if (!e.repair) continue;
            for (const CarriedSum &c : e.repair->carried) e.sums.push_back(index_of(c));
        }
    }

  private:
    int index_of(const CarriedSum &c) {
        for (size_t k = 1; k < entries.size(); k++) {
            if (c.is_count() ? entries[k].is_count : equal(entries[k].term, c.per_term))
                return static_cast<int>(k);
        }
        internal_error << "a carried sum outside the family: " << c.per_term;
        return 0;
    }
};

/** One scenario's fused and unfused results, rounded and exact. */
class Simulation {
  public:
    Simulation(const ConditioningSubject &s, const Family &family, Data &data, int lanes)
        : s(s), family(family), data(data), lanes(lanes) {}

    /** The reduction rolled over the lanes cut into `chunks` contiguous
     * pieces (1: rolling_update one term a step), each piece combined into
     * the result with its repair to the producers' final values. */
    double fused(int chunks) {
        const size_t slots = s.slots.size();
        // Producers: their terms, and running values per lane within each
        // chunk, before (old) and after (new) the lane's term.
        LaneEval ev(lanes, false, data);
        std::vector<Lanes> phi(slots), old_view(slots), new_view(slots), old_raw(slots),
            new_raw(slots);
        const int size = (lanes + chunks - 1) / chunks;
        std::vector<std::vector<double>> chunk_final(slots, std::vector<double>(chunks));
        std::vector<double> chunk_count(chunks);
        for (size_t p = 0; p < slots; p++) {
            const ProducerSlot &slot = s.slots[p];
            phi[p] = ev.eval(slot.per_term);
            for (Lanes *l : {&old_view[p], &new_view[p], &old_raw[p], &new_raw[p]})
                l->resize(lanes);
            for (int c = 0; c < chunks; c++) {
                double r = identity_of(slot.op);
                int n = 0;
                for (int j = c * size; j < std::min(lanes, (c + 1) * size); j++) {
                    old_raw[p][j] = r;
                    old_view[p][j] = view(p, r, n);
                    r = round_to(slot.type, reduce_combine(slot.op, r, phi[p][j]));
                    n++;
                    new_raw[p][j] = r;
                    new_view[p][j] = view(p, r, n);
                }
                chunk_final[p][c] = r;
                chunk_count[c] = n;
            }
        }
        // Per lane: each entry's term at the new values, and the pieces of
        // each repair at (old, new).
        bind(ev, old_view, new_view);
        std::vector<Lanes> terms;
        for (const Family::Entry &e : family.entries) {
            terms.push_back(e.is_count ? Lanes(lanes, 1) : ev.eval(prime(e.term)));
        }
        std::vector<std::vector<Lanes>> pieces = repair_pieces(ev);
        std::vector<bool> unchanged(lanes), empty(lanes);
        for (int j = 0; j < lanes; j++) {
            bool same = true, fresh = false, none = false;
            for (size_t p = 0; p < slots; p++) {
                same = same && old_view[p][j] == new_view[p][j];
                if (ordered(s.slots[p].op)) {
                    fresh = fresh || old_raw[p][j] == identity_of(s.slots[p].op);
                    none = none || new_raw[p][j] == identity_of(s.slots[p].op);
                }
            }
            unchanged[j] = same || fresh;
            empty[j] = none;
        }
        // The recurrence, chunk by chunk.
        const size_t n_entries = family.entries.size();
        std::vector<std::vector<double>> states(chunks, std::vector<double>(n_entries));
        for (int c = 0; c < chunks; c++) {
            std::vector<double> state(n_entries);
            for (size_t e = 0; e < n_entries; e++) state[e] = identity(e);
            for (int j = c * size; j < std::min(lanes, (c + 1) * size); j++) {
                std::vector<double> next = state;
                for (size_t e = 0; e < n_entries; e++) {
                    const Family::Entry &en = family.entries[e];
                    ReduceOp op = e == 0 ? s.op : ReduceOp::Add;
                    if (!en.repair || en.repair->kind == Repair::None) {
                        if (e != 0 || !empty[j]) {
                            next[e] = round_to(en.type, reduce_combine(op, state[e], terms[e][j]));
                        }
                        continue;
                    }
                    if (empty[j]) continue;
                    double t = unchanged[j] ? state[e] : apply(e, state, pieces[e], j);
                    next[e] = round_to(en.type, reduce_combine(op, t, terms[e][j]));
                }
                state = next;
            }
            states[c] = state;
        }
        // The combine: producers fold their chunks, the member folds each
        // chunk's state repaired from the chunk's view to the final values.
        if (chunks == 1) return states[0][0];
        LaneEval cev(chunks, false, data);
        std::vector<Lanes> olds(slots, Lanes(chunks)), news(slots, Lanes(chunks));
        for (size_t p = 0; p < slots; p++) {
            const ProducerSlot &slot = s.slots[p];
            double r = identity_of(slot.op);
            for (int c = 0; c < chunks; c++) {
                r = round_to(slot.type, reduce_combine(slot.op, r, chunk_final[p][c]));
            }
            for (int c = 0; c < chunks; c++) {
                olds[p][c] = view(p, chunk_final[p][c], static_cast<int>(chunk_count[c]));
                news[p][c] = r;
            }
        }
        bind(cev, olds, news);
        std::vector<std::vector<Lanes>> combine_pieces = repair_pieces(cev);
        double x = identity_of(s.op);
        for (int c = 0; c < chunks; c++) {
            bool same = true, fresh = false;
            for (size_t p = 0; p < slots; p++) {
                same = same && olds[p][c] == news[p][c];
                fresh = fresh ||
                        (ordered(s.slots[p].op) && chunk_final[p][c] == identity_of(s.slots[p].op));
            }
            double t = same || fresh ? states[c][0] : apply(0, states[c], combine_pieces[0], c);
            x = round_to(s.g.type(), reduce_combine(s.op, x, t));
        }
        return x;
    }

    /** The unfused order: every producer's final value, then the sum of the
     * terms at those values, rounded (or exact). */
    double unfused(bool exact, double *magnitude = nullptr) {
        LaneEval ev(lanes, exact, data);
        for (const ProducerSlot &slot : s.slots) {
            ev.vars[slot.var] = Lanes(lanes, final_value(ev, slot, exact));
        }
        Lanes g = ev.eval(s.g);
        double x = identity_of(s.op), mag = 0;
        for (double v : g) {
            x = reduce_combine(s.op, x, v);
            if (!exact) x = round_to(s.g.type(), x);
            mag += std::isfinite(v) ? std::abs(v) : 0;
        }
        if (magnitude) *magnitude = mag;
        return x;
    }

    /** What rounding each producer's value once per term, independently,
     * costs the result to first order: Σ_p u_p ||r_p * dg/dr_p||_2 over the
     * terms, at the exact final values. A fused pass sees a running value
     * rounded anew at every term, so this is the least any fusion loses
     * (Welford's algorithm loses this much); the unfused order rounds the
     * final value once, and where g is stationary in it (a centered sum of
     * squares) that costs it only second order. */
    double producer_rounding() {
        LaneEval ev(lanes, true, data);
        std::vector<double> finals;
        for (const ProducerSlot &slot : s.slots) finals.push_back(final_value(ev, slot, true));
        double total = 0;
        const double eta = std::ldexp(1.0, -20);
        for (size_t p = 0; p < s.slots.size(); p++) {
            if (!std::isfinite(finals[p]) || finals[p] == 0) continue;
            Lanes g[2];
            for (int side = 0; side < 2; side++) {
                for (size_t q = 0; q < s.slots.size(); q++) {
                    double r = finals[q] * (q == p ? (side ? 1 + eta : 1 - eta) : 1);
                    ev.vars[s.slots[q].var] = Lanes(lanes, r);
                }
                g[side] = ev.eval(s.g);
            }
            double sq = 0;
            for (int j = 0; j < lanes; j++) {
                double d = (g[1][j] - g[0][j]) / (2 * eta);
                if (std::isfinite(d)) sq += d * d;
            }
            total += unit_roundoff(s.slots[p].type) * std::sqrt(sq);
        }
        return total;
    }

  private:
    const ConditioningSubject &s;
    const Family &family;

    /** A producer's value after every term, each step rounded to its type
     * (or exact). */
    double final_value(LaneEval &ev, const ProducerSlot &slot, bool exact) {
        double r = identity_of(slot.op);
        for (double v : ev.eval(slot.per_term)) {
            r = reduce_combine(slot.op, r, v);
            if (!exact) r = round_to(slot.type, r);
        }
        return r;
    }

    Data &data;
    int lanes;

    double identity(size_t e) const { return e == 0 ? identity_of(s.op) : 0; }

    /** What the dependents see of producer p with running value r over n
     * terms (Rewriter::pivot). */
    double view(size_t p, double r, int n) const {
        if (!s.pivoted[p] || n == 0) return r;
        Type t = s.slots[p].type;
        return round_to(t, r * round_to(t, static_cast<double>(lanes) / n));
    }

    void bind(LaneEval &ev, const std::vector<Lanes> &olds, const std::vector<Lanes> &news) {
        for (size_t p = 0; p < s.slots.size(); p++) {
            ev.vars[s.slots[p].var] = olds[p];
            ev.vars[primed(s.slots[p].var)] = news[p];
        }
    }

    /** e with its slots at their new values. */
    Expr prime(const Expr &e) const {
        std::map<std::string, Expr> m;
        for (const ProducerSlot &p : s.slots) m[p.var] = Variable::make(p.type, primed(p.var));
        struct Rename : IRMutator {
            const std::map<std::string, Expr> *m;
            using IRMutator::visit;
            Expr visit(const Variable *op) override {
                auto it = m->find(op->name);
                return it == m->end() ? Expr(op) : it->second;
            }
        } rename;
        rename.m = &m;
        return rename.mutate(e);
    }

    /** Per entry, its repair's pieces at each lane: the factor (scale), the
     * offset (shift), the reset value (reset), or one change per carried
     * sum (carried). */
    std::vector<std::vector<Lanes>> repair_pieces(LaneEval &ev) {
        std::vector<std::vector<Lanes>> out(family.entries.size());
        for (size_t e = 0; e < family.entries.size(); e++) {
            const Repair *r = family.entries[e].repair;
            if (!r || r->kind == Repair::None) continue;
            if (r->kind == Repair::Carried) {
                for (const CarriedSum &c : r->carried) out[e].push_back(ev.eval(c.change));
            } else {
                out[e].push_back(ev.eval(r->term));
            }
        }
        return out;
    }

    double apply(size_t e, const std::vector<double> &state, const std::vector<Lanes> &pieces,
                 int j) const {
        const Family::Entry &en = family.entries[e];
        Type t = en.type;
        switch (en.repair->kind) {
        case Repair::Scale: return round_to(t, state[e] * pieces[0][j]);
        case Repair::Shift: return round_to(t, state[e] + pieces[0][j]);
        case Repair::Reset: return pieces[0][j];
        case Repair::Carried: {
            double x = state[e];
            for (size_t k = 0; k < en.sums.size(); k++) {
                x = round_to(t, x + round_to(t, state[en.sums[k]] * pieces[k][j]));
            }
            return x;
        }
        case Repair::None: break;
        }
        return state[e];
    }
};

struct Scenario {
    const char *what;
    double offset;
    bool ascending;
    bool long_run = false;  // 8 times as many terms, once
};

std::string describe(const Scenario &sc) {
    std::ostringstream os;
    if (sc.offset != 0) os << sc.offset << " + ";
    os << "N(0, 1)";
    if (sc.ascending) os << ", ascending";
    return os.str();
}

ConditioningReport simulate(const ConditioningSubject &s);

}  // namespace

ConditioningReport check_conditioning(const ConditioningSubject &s) {
    // Pipelines are compiled again and again with the same chains (every
    // test compiles several schedules of one algorithm): the simulation
    // depends on nothing but what the key prints.
    std::ostringstream key;
    key << s.g << "|" << reduce_op_name(s.op) << "|" << s.repair.formula(s.slots) << "|"
        << s.extent;
    for (size_t p = 0; p < s.slots.size(); p++) {
        const ProducerSlot &slot = s.slots[p];
        key << "|" << slot.var << ":" << reduce_op_name(slot.op) << ":" << slot.type << ":"
            << slot.per_term << ":" << s.pivoted[p];
    }
    static std::mutex lock;
    static std::map<std::string, ConditioningReport> known;
    {
        std::lock_guard<std::mutex> guard(lock);
        auto it = known.find(key.str());
        if (it != known.end()) return it->second;
    }
    ConditioningReport report = simulate(s);
    std::lock_guard<std::mutex> guard(lock);
    if (known.size() > 4096) known.clear();
    known[key.str()] = report;
    return report;
}

namespace {

ConditioningReport simulate(const ConditioningSubject &s) {
    ConditioningReport report;
    Type t = s.g.type();
    if (!t.is_float() || s.repair.kind == Repair::None) {
        report.summary = "not simulated (an exact reduction)";
        return report;
    }
    for (const ProducerSlot &p : s.slots) {
        if (!p.per_term.defined()) {
            report.summary = "not simulated: its producer " + p.func + " is itself repaired";
            return report;
        }
    }
    // A reduction of a known length is simulated at that length.
    int lanes = 2048;
    if (const IntImm *n = s.extent.as<IntImm>(); n && n->value > 0 && n->value < lanes) {
        lanes = static_cast<int>(n->value);
    }
    const Expr extent = s.extent.as<Variable>() ? s.extent : Expr();
    static const Scenario scenarios[] = {
        {"a large offset", 1000, false},
        {"mixed signs", 0, false},
        {"a producer that moves at every term", 1000, true},
        {"a long reduction", 1000, false, true},
    };
    const int chunk_counts[] = {1, 8};
    Family family(s);
    report.checked = true;
    double worst = 0;
    const bool fixed_length = s.extent.as<IntImm>() != nullptr;
    for (const Scenario &sc : scenarios) {
        if (sc.long_run && fixed_length) continue;
        const int terms = sc.long_run ? 8 * lanes : lanes;
        for (uint64_t seed : {1u, 2u}) {
            if (sc.long_run && seed > 1) continue;
            Data data(terms, sc.offset, sc.ascending, 0xc0de + seed * 7919, extent);
            Simulation sim(s, family, data, terms);
            double magnitude = 0;
            double exact = sim.unfused(true, &magnitude);
            if (!std::isfinite(exact)) continue;
            double unfused_error = std::abs(sim.unfused(false) - exact);
            if (std::isnan(unfused_error)) unfused_error = INFINITY;
            // Summing the terms in another order costs about u sqrt(N) of
            // their magnitudes: the unfused order's own error, typically.
            double floor =
                std::max(unit_roundoff(t) * std::sqrt(terms) * magnitude, sim.producer_rounding());
            floor = std::max(floor, 1e-300);
            for (int chunks : chunk_counts) {
                if (chunks > terms) continue;
                double fused_error = std::abs(sim.fused(chunks) - exact);
                if (std::isnan(fused_error)) fused_error = INFINITY;
                double ratio = fused_error / std::max(unfused_error, floor);
                if (std::isinf(fused_error) && std::isinf(unfused_error)) ratio = 1;
                if (ratio > worst || std::isnan(ratio)) {
                    worst = std::isnan(ratio) ? INFINITY : ratio;
                    std::ostringstream os;
                    os << (chunks == 1 ? "rolled one term a step"
                                       : "in " + std::to_string(chunks) + " chunks combined")
                       << ", on " << terms << " terms drawn as " << describe(sc) << " (" << sc.what
                       << ")";
                    report.worst_case = os.str();
                    double scale = std::max(std::abs(exact), floor);
                    report.fused_error = fused_error / scale;
                    report.unfused_error = unfused_error / scale;
                }
            }
        }
    }
    report.worst_ratio = worst;
    report.stable = worst <= kConditioningFactor;
    std::ostringstream os;
    os << "conditioning checked in " << t << " on " << lanes
       << (fixed_length ? "" : " and " + std::to_string(8 * lanes))
       << " terms (a large offset against a unit spread, mixed signs, a producer moving at "
          "every term), rolled and in chunks: error at worst "
       << (worst < 0.01 ? 0.01 : std::round(worst * 100) / 100)
       << "x the larger of the unfused order's and one rounding of the producer per term ("
       << report.worst_case << ")";
    report.summary = os.str();
    return report;
}

}  // namespace

}  // namespace internal
}  // namespace loom
