// Repair derivation: see RepairDerivation.h.
#include "RepairDerivation.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <sstream>

#include "IREquality.h"
#include "IRMutator.h"
#include "IRPrinter.h"
#include "IRVisitor.h"
#include "Simplify.h"
#include "Substitute.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

const char *reduce_op_name(ReduceOp op) {
    switch (op) {
    case ReduceOp::Add: return "+";
    case ReduceOp::Mul: return "*";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    }
    return "?";
}

Expr reduce_combine(ReduceOp op, const Expr &a, const Expr &b) {
    switch (op) {
    case ReduceOp::Add: return a + b;
    case ReduceOp::Mul: return a * b;
    case ReduceOp::Max: return max(a, b);
    case ReduceOp::Min: return min(a, b);
    }
    return Expr();
}

Expr reduce_identity(ReduceOp op, Type t) {
    switch (op) {
    case ReduceOp::Add: return make_zero(t);
    case ReduceOp::Mul: return make_one(t);
    case ReduceOp::Max: return type_min(t);
    case ReduceOp::Min: return type_max(t);
    }
    return Expr();
}

std::string primed(const std::string &var) { return var + "'"; }

namespace {

using SlotNames = std::set<std::string>;

SlotNames slot_names(const std::vector<ProducerSlot> &slots, bool with_primes) {
    SlotNames s;
    for (const ProducerSlot &p : slots) {
        s.insert(p.var);
        if (with_primes) s.insert(primed(p.var));
    }
    return s;
}

/** Whether e reads nothing but the given slot variables and constants. */
bool only_reads(const Expr &e, const SlotNames &allowed) {
    struct Check : IRVisitor {
        const SlotNames *allowed;
        bool ok = true;
        using IRVisitor::visit;
        void visit(const Variable *op) override {
            if (!allowed->count(op->name)) ok = false;
        }
        void visit(const Call *op) override {
            if (op->call_type == Call::Func || op->call_type == Call::Image ||
                op->call_type == Call::Intrinsic) {
                ok = false;
                return;
            }
            IRVisitor::visit(op);
        }
    } check;
    check.allowed = &allowed;
    e.accept(&check);
    return check.ok;
}

/** Whether e reads any of the slot variables. */
bool reads_slots(const Expr &e, const SlotNames &slots) {
    for (const std::string &s : slots) {
        if (expr_uses_var(e, s)) return true;
    }
    return false;
}

/** e with every slot variable renamed to its primed name. */
Expr prime_slots(const Expr &e, const std::vector<ProducerSlot> &slots) {
    // The slot Variables have the producers' types, which may differ from
    // e's; substitute with the right type per slot.
    struct Rename : IRMutator {
        const std::vector<ProducerSlot> *slots;
        using IRMutator::visit;
        Expr visit(const Variable *op) override {
            for (const ProducerSlot &p : *slots) {
                if (p.var == op->name) return Variable::make(op->type, primed(op->name));
            }
            return op;
        }
    } rename;
    rename.slots = &slots;
    return rename.mutate(e);
}

// ---------------------------------------------------------------- linear forms

/** Σ coef_k · atom_k + constant, over atoms compared structurally. Sums,
 * differences, negation and scaling by constants are linear; anything else
 * is an atom. Sound for reals; used only to prove cancellations. */
struct LinearForm {
    std::vector<std::pair<Expr, double>> terms;
    double constant = 0;

    void add_atom(const Expr &atom, double coef) {
        for (auto &t : terms) {
            if (equal(t.first, atom)) {
                t.second += coef;
                return;
            }
        }
        terms.emplace_back(atom, coef);
    }
    void add(const LinearForm &o, double scale) {
        for (const auto &t : o.terms) add_atom(t.first, t.second * scale);
        constant += o.constant * scale;
    }
    void drop_zeros() {
        std::vector<std::pair<Expr, double>> kept;
        for (auto &t : terms) {
            if (t.second != 0) kept.push_back(t);
        }
        terms = kept;
    }
};

const double *const_value(const Expr &e) {
    if (const FloatImm *f = e.as<FloatImm>()) return &f->value;
    return nullptr;
}

LinearForm linear_form(const Expr &e) {
    LinearForm f;
    if (const FloatImm *c = e.as<FloatImm>()) {
        f.constant = c->value;
    } else if (const IntImm *i = e.as<IntImm>()) {
        f.constant = static_cast<double>(i->value);
    } else if (const Add *a = e.as<Add>()) {
        f.add(linear_form(a->a), 1);
        f.add(linear_form(a->b), 1);
    } else if (const Sub *s = e.as<Sub>()) {
        f.add(linear_form(s->a), 1);
        f.add(linear_form(s->b), -1);
    } else if (const Mul *m = e.as<Mul>(); m && (const_value(m->a) || const_value(m->b))) {
        bool a_const = const_value(m->a) != nullptr;
        f.add(linear_form(a_const ? m->b : m->a), *const_value(a_const ? m->a : m->b));
    } else if (const Div *d = e.as<Div>(); d && const_value(d->b) && *const_value(d->b) != 0) {
        f.add(linear_form(d->a), 1 / *const_value(d->b));
    } else if (const Cast *c = e.as<Cast>();
               c && c->type.is_float() && c->value.type().is_float()) {
        f.add(linear_form(c->value), 1);
    } else {
        f.add_atom(e, 1);
    }
    return f;
}

Expr rebuild(const LinearForm &f, Type t) {
    Expr sum;
    auto append = [&](Expr term, bool negative) {
        if (!sum.defined()) {
            sum = negative ? -term : term;
        } else {
            sum = negative ? sum - term : sum + term;
        }
    };
    // Positive terms first, so that m - m' prints as such, not 0 - m' + m.
    std::vector<std::pair<Expr, double>> terms = f.terms;
    std::stable_sort(terms.begin(), terms.end(),
                     [](const auto &a, const auto &b) { return a.second > 0 && b.second < 0; });
    for (const auto &term : terms) {
        Expr atom = term.first.type() == t ? term.first : cast(t, term.first);
        double c = std::abs(term.second);
        append(c == 1 ? atom : make_const(t, c) * atom, term.second < 0);
    }
    if (f.constant != 0 || !sum.defined()) {
        append(make_const(t, std::abs(f.constant)), f.constant < 0);
    }
    return sum;
}

// ---------------------------------------------------------------- log form

/** Splits a product g = Π factors into Σ ±exponent (for exp() and pow() of
 * a positive constant base) and producer-free factors. Returns false, with
 * the offending factor, if a factor reads a producer another way. */
using Exponents = std::map<double, LinearForm>;  // by base; exp() is base e

bool log_terms(const Expr &e, double sign, Exponents &exponent, const SlotNames &slots,
               Expr *culprit) {
    if (!reads_slots(e, slots)) return true;  // a factor of C(c)
    if (const Mul *m = e.as<Mul>()) {
        return log_terms(m->a, sign, exponent, slots, culprit) &&
               log_terms(m->b, sign, exponent, slots, culprit);
    }
    if (const Div *d = e.as<Div>()) {
        return log_terms(d->a, sign, exponent, slots, culprit) &&
               log_terms(d->b, -sign, exponent, slots, culprit);
    }
    if (const Cast *c = e.as<Cast>(); c && c->type.is_float() && c->value.type().is_float()) {
        return log_terms(c->value, sign, exponent, slots, culprit);
    }
    if (const Call *c = e.as<Call>()) {
        if (c->name == "exp_f32" || c->name == "exp_f64") {
            exponent[M_E].add(linear_form(c->args[0]), sign);
            return true;
        }
        if (c->name == "pow_f32" || c->name == "pow_f64") {
            const double *base = const_value(c->args[0]);
            if (base && *base > 0) {
                exponent[*base].add(linear_form(c->args[1]), sign);
                return true;
            }
        }
    }
    *culprit = e;
    return false;
}

/** Σ coef · atom over atoms that read only producer values, or undefined if
 * some atom still depends on c. */
Expr producer_only(LinearForm f, Type t, const SlotNames &allowed, Expr *culprit) {
    f.drop_zeros();
    for (const auto &term : f.terms) {
        if (!only_reads(term.first, allowed)) {
            *culprit = term.first;
            return Expr();
        }
    }
    return rebuild(f, t);
}

// ---------------------------------------------------------------- polynomial forms

constexpr int kMaxDegree = 4;

/** e as Σ_k coefs[k] · var^k with coefficients free of var, or false. Sums,
 * differences, products and division by var-free values. */
// Sums and products that skip zeros and ones, so coefficients stay readable
// (the float simplifier may not drop x + 0.0f: it is -0.0f-sensitive).
Expr padd(const Expr &a, const Expr &b) {
    if (is_const_zero(a)) return b;
    if (is_const_zero(b)) return a;
    return a + b;
}
Expr psub(const Expr &a, const Expr &b) {
    if (is_const_zero(b)) return a;
    if (is_const_zero(a)) return -b;
    return a - b;
}
Expr pmul(const Expr &a, const Expr &b) {
    if (is_const_zero(a) || is_const_zero(b)) return make_zero(a.type());
    if (is_const_one(a)) return b;
    if (is_const_one(b)) return a;
    return a * b;
}

bool polynomial(const Expr &e, const std::string &var, std::vector<Expr> &coefs) {
    Type t = e.type();
    if (!expr_uses_var(e, var)) {
        coefs = {e};
        return true;
    }
    if (const Variable *v = e.as<Variable>(); v && v->name == var) {
        coefs = {make_zero(t), make_one(t)};
        return true;
    }
    std::vector<Expr> a, b;
    auto add = [&](double sign) {
        coefs.assign(std::max(a.size(), b.size()), Expr());
        for (size_t k = 0; k < coefs.size(); k++) {
            Expr x = k < a.size() ? a[k] : make_zero(t), y = k < b.size() ? b[k] : make_zero(t);
            coefs[k] = sign > 0 ? padd(x, y) : psub(x, y);
        }
        return true;
    };
    if (const Add *op = e.as<Add>()) {
        return polynomial(op->a, var, a) && polynomial(op->b, var, b) && add(1);
    }
    if (const Sub *op = e.as<Sub>()) {
        return polynomial(op->a, var, a) && polynomial(op->b, var, b) && add(-1);
    }
    if (const Mul *op = e.as<Mul>()) {
        if (!polynomial(op->a, var, a) || !polynomial(op->b, var, b)) return false;
        if (a.size() + b.size() - 2 > kMaxDegree) return false;
        coefs.assign(a.size() + b.size() - 1, make_zero(t));
        for (size_t i = 0; i < a.size(); i++) {
            for (size_t j = 0; j < b.size(); j++)
                coefs[i + j] = padd(coefs[i + j], pmul(a[i], b[j]));
        }
        return true;
    }
    if (const Div *op = e.as<Div>(); op && t.is_float() && !expr_uses_var(op->b, var)) {
        if (!polynomial(op->a, var, a)) return false;
        coefs = a;
        for (Expr &c : coefs) c = is_const_zero(c) ? c : c / op->b;
        return true;
    }
    if (const Cast *op = e.as<Cast>(); op && t.is_float() && op->value.type().is_float()) {
        if (!polynomial(op->value, var, a)) return false;
        coefs = a;
        for (Expr &c : coefs) c = cast(t, c);
        return true;
    }
    return false;
}

/** x^k for k >= 1. */
Expr power(const Expr &x, int k) {
    Expr p = x;
    for (int i = 1; i < k; i++) p = p * x;
    return p;
}

// ---------------------------------------------------------------- float64 evaluation

/** Evaluates scalar Exprs in double. Variables and calls that are not slot
 * values (the "c" of g) are atoms given random values, the same value for
 * structurally equal atoms. */
class Evaluator {
  public:
    explicit Evaluator(std::mt19937_64 &rng) : rng(rng) {}
    std::map<std::string, double> slots;
    void new_point() { atoms.clear(); }
    using Atoms = std::vector<std::pair<Expr, double>>;
    const Atoms &current_atoms() const { return atoms; }
    void use_atoms(const Atoms &a) { atoms = a; }

    double eval(const Expr &e) {
        if (const FloatImm *f = e.as<FloatImm>()) return f->value;
        if (const IntImm *i = e.as<IntImm>()) return static_cast<double>(i->value);
        if (const UIntImm *u = e.as<UIntImm>()) return static_cast<double>(u->value);
        if (const Variable *v = e.as<Variable>()) {
            auto it = slots.find(v->name);
            if (it != slots.end()) return it->second;
            return atom(e);
        }
        if (const Add *op = e.as<Add>()) return eval(op->a) + eval(op->b);
        if (const Sub *op = e.as<Sub>()) return eval(op->a) - eval(op->b);
        if (const Mul *op = e.as<Mul>()) return eval(op->a) * eval(op->b);
        if (const Div *op = e.as<Div>()) return eval(op->a) / eval(op->b);
        if (const Min *op = e.as<Min>()) return std::min(eval(op->a), eval(op->b));
        if (const Max *op = e.as<Max>()) return std::max(eval(op->a), eval(op->b));
        if (const EQ *op = e.as<EQ>()) return eval(op->a) == eval(op->b);
        if (const NE *op = e.as<NE>()) return eval(op->a) != eval(op->b);
        if (const LT *op = e.as<LT>()) return eval(op->a) < eval(op->b);
        if (const LE *op = e.as<LE>()) return eval(op->a) <= eval(op->b);
        if (const GT *op = e.as<GT>()) return eval(op->a) > eval(op->b);
        if (const GE *op = e.as<GE>()) return eval(op->a) >= eval(op->b);
        if (const And *op = e.as<And>()) return eval(op->a) != 0 && eval(op->b) != 0;
        if (const Or *op = e.as<Or>()) return eval(op->a) != 0 || eval(op->b) != 0;
        if (const Not *op = e.as<Not>()) return eval(op->a) == 0;
        if (const Select *op = e.as<Select>()) {
            return eval(op->condition) != 0 ? eval(op->true_value) : eval(op->false_value);
        }
        if (const Cast *op = e.as<Cast>()) {
            double v = eval(op->value);
            return op->type.is_float() ? v : std::trunc(v);
        }
        if (const Call *op = e.as<Call>()) {
            if (op->call_type == Call::PureIntrinsic && !op->args.empty()) {
                std::string n = op->name.substr(0, op->name.rfind('_'));
                double a = eval(op->args[0]);
                if (n == "exp") return std::exp(a);
                if (n == "log") return std::log(a);
                if (n == "sqrt") return std::sqrt(a);
                if (n == "rsqrt") return 1 / std::sqrt(a);
                if (n == "tanh") return std::tanh(a);
                if (n == "sin") return std::sin(a);
                if (n == "cos") return std::cos(a);
                if (n == "erf") return std::erf(a);
                if (n == "floor") return std::floor(a);
                if (n == "ceil") return std::ceil(a);
                if (n == "pow") return std::pow(a, eval(op->args[1]));
                if (op->name == Call::abs) return std::abs(a);
            }
            return atom(e);
        }
        return atom(e);
    }

  private:
    std::mt19937_64 &rng;
    std::vector<std::pair<Expr, double>> atoms;
    double atom(const Expr &e) {
        for (const auto &a : atoms) {
            if (equal(a.first, e)) return a.second;
        }
        double v = std::uniform_real_distribution<double>(-3, 3)(rng);
        atoms.emplace_back(e, v);
        return v;
    }
};

/** Agreement in float64 up to what float32 constants in a repair (ln 2,
 * 1/n) can explain. */
bool close(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return false;
    if (std::isinf(a) || std::isinf(b)) return a == b;
    return std::abs(a - b) <= 1e-6 * std::max({std::abs(a), std::abs(b), 1e-12});
}

constexpr int kPoints = 64;

bool reads_rvar(const Expr &e) {
    struct Find : IRVisitor {
        bool found = false;
        using IRVisitor::visit;
        void visit(const Variable *op) override { found = found || op->rdom != nullptr; }
    } find;
    e.accept(&find);
    return find.found;
}

/** Producer values for two sampled terms c1, c2: for a max (min) producer
 * with a known term φ, r >= max(φ(c1), φ(c2)) and r' >= r (<= for min),
 * often with equality, since that is where indicator terms live; otherwise
 * anywhere in [-3, 3]. */
void sample_slots(Evaluator &ev, std::mt19937_64 &rng, const std::vector<ProducerSlot> &slots,
                  const Evaluator::Atoms &c1, const Evaluator::Atoms &c2) {
    std::uniform_real_distribution<double> value(-3, 3), gap(0, 3);
    std::uniform_int_distribution<int> third(0, 2);
    auto some_gap = [&]() { return third(rng) == 0 ? 0.0 : gap(rng); };
    for (const ProducerSlot &p : slots) {
        bool ordered = p.per_term.defined() && (p.op == ReduceOp::Max || p.op == ReduceOp::Min);
        if (!ordered) {
            ev.slots[p.var] = value(rng);
            ev.slots[primed(p.var)] = value(rng);
            continue;
        }
        double sign = p.op == ReduceOp::Max ? 1 : -1;
        ev.use_atoms(c1);
        double phi1 = ev.eval(p.per_term);
        ev.use_atoms(c2);
        double phi2 = ev.eval(p.per_term);
        double r = sign > 0 ? std::max(phi1, phi2) : std::min(phi1, phi2);
        // Both terms masked to the identity (-inf for max): any finite value
        // bounds them. An infinite one never reaches a repair: the fused
        // loops skip steps and repairs while the producer is at its identity.
        if (std::isinf(r)) r = value(rng);
        r += sign * some_gap();
        ev.slots[p.var] = r;
        ev.slots[primed(p.var)] = r + sign * some_gap();
    }
}

/** Two fresh sets of atom values (terms c1 and c2), covering every atom of
 * the given Exprs. */
std::pair<Evaluator::Atoms, Evaluator::Atoms> sample_terms(Evaluator &ev,
                                                           const std::vector<Expr> &exprs) {
    std::pair<Evaluator::Atoms, Evaluator::Atoms> c;
    for (Evaluator::Atoms *a : {&c.first, &c.second}) {
        ev.new_point();
        if (a == &c.second) {
            // What does not read an RVar (a Param, a buffer's extent, the
            // row's Vars) is the same for every term of one reduction.
            Evaluator::Atoms shared;
            for (const auto &atom : c.first) {
                if (!reads_rvar(atom.first)) shared.push_back(atom);
            }
            ev.use_atoms(shared);
        }
        // Slots are not atoms; give them placeholder values meanwhile.
        for (const Expr &e : exprs) {
            if (e.defined()) ev.eval(e);
        }
        *a = ev.current_atoms();
    }
    return c;
}

/** Checks properties (1) and (2) of the repair at random points. Returns an
 * empty string, or which property failed. */
std::string check_numerically(const Repair &h, ReduceOp op, const Expr &g,
                              const std::vector<ProducerSlot> &slots) {
    std::mt19937_64 rng(0x5eed);
    Evaluator ev(rng);
    Expr g_new = prime_slots(g, slots);
    Type t = g.type();
    Expr tv = Variable::make(t, "t.check");
    std::vector<Expr> olds, news;
    for (const ProducerSlot &p : slots) {
        olds.push_back(Variable::make(p.type, p.var));
        news.push_back(Variable::make(p.type, primed(p.var)));
    }
    // Carried sums: A_k over one term, then over two.
    std::vector<Expr> sums, atoms_of = {g};
    for (size_t k = 0; k < h.carried.size(); k++) {
        sums.push_back(Variable::make(t, "A" + std::to_string(k) + ".check"));
        atoms_of.push_back(h.carried[k].per_term);
    }
    for (const ProducerSlot &p : slots) atoms_of.push_back(p.per_term);
    Expr h1 = h.apply(tv, slots, olds, news, sums);
    auto combine = [&](double a, double b) {
        switch (op) {
        case ReduceOp::Add: return a + b;
        case ReduceOp::Mul: return a * b;
        case ReduceOp::Max: return std::max(a, b);
        case ReduceOp::Min: return std::min(a, b);
        }
        return a;
    };
    for (int k = 0; k < kPoints; k++) {
        for (const ProducerSlot &p : slots) ev.slots[p.var] = ev.slots[primed(p.var)] = 0;
        auto [c1, c2] = sample_terms(ev, atoms_of);
        sample_slots(ev, rng, slots, c1, c2);
        double g_old[2], g_next[2];
        std::vector<double> a_both(h.carried.size(), 0.0);
        for (int n = 0; n < 2; n++) {
            ev.use_atoms(n == 0 ? c1 : c2);
            g_old[n] = ev.eval(g);
            g_next[n] = ev.eval(g_new);
            for (size_t j = 0; j < h.carried.size(); j++) {
                double a = ev.eval(h.carried[j].per_term);
                a_both[j] += a;
                ev.slots["A" + std::to_string(j) + ".check"] = a;
            }
            ev.slots["t.check"] = g_old[n];
            if (!close(ev.eval(h1), g_next[n])) {
                return "h(g(r, c), r, r') = g(r', c) (property 1)";
            }
        }
        for (size_t j = 0; j < h.carried.size(); j++) {
            ev.slots["A" + std::to_string(j) + ".check"] = a_both[j];
        }
        ev.slots["t.check"] = combine(g_old[0], g_old[1]);
        if (!close(ev.eval(h1), combine(g_next[0], g_next[1]))) {
            return std::string("h(x ") + reduce_op_name(op) + " y) = h(x) " + reduce_op_name(op) +
                   " h(y) (property 2)";
        }
    }
    return "";
}

/** Samples points where `mask` is false (its atoms, indices and extents,
 * drawn like the term's: about half the points fall outside a select
 * mask) and checks that the term g of ⊕ is ⊕'s identity there, exactly,
 * whatever finite values the producers have reached. Returns how many
 * points fell outside the mask, or -1 at the first where g is not the
 * identity. */
int points_outside_where_vanishing(const Expr &g, ReduceOp op, const Expr &mask,
                                   const std::vector<ProducerSlot> &slots) {
    std::mt19937_64 rng(0x0ff5);
    Evaluator ev(rng);
    std::uniform_real_distribution<double> value(-3, 3);
    const double identity = ev.eval(reduce_identity(op, Float(64)));
    int outside = 0;
    for (int k = 0; k < 8 * kPoints && outside < kPoints; k++) {
        ev.new_point();
        for (const ProducerSlot &p : slots) ev.slots[p.var] = value(rng);
        if (ev.eval(mask) != 0) continue;
        outside++;
        if (ev.eval(g) != identity) return -1;
    }
    return outside;
}

/** Replaces every atom of e (what is not a slot) with the constant it has at
 * one random point: a representative c. */
Expr at_fixed_c(const Expr &e, const SlotNames &allowed, Evaluator &ev) {
    struct Fix : IRMutator {
        const SlotNames *allowed;
        Evaluator *ev;
        using IRMutator::visit;
        Expr fix(const Expr &e) { return make_const(e.type(), ev->eval(e)); }
        Expr visit(const Variable *op) override {
            if (allowed->count(op->name)) return op;
            return fix(op);
        }
        Expr visit(const Call *op) override {
            if (op->call_type == Call::PureIntrinsic) return IRMutator::visit(op);
            return fix(op);
        }
    } fix;
    fix.allowed = &allowed;
    fix.ev = &ev;
    return fix.mutate(e);
}

}  // namespace

Expr Repair::apply(const Expr &t, const std::vector<ProducerSlot> &slots,
                   const std::vector<Expr> &old_values, const std::vector<Expr> &new_values,
                   const std::vector<Expr> &sums) const {
    if (kind == None) return t;
    std::map<std::string, Expr> m;
    for (size_t k = 0; k < slots.size(); k++) {
        m[slots[k].var] = old_values[k];
        m[primed(slots[k].var)] = new_values[k];
    }
    switch (kind) {
    case Scale: return t * substitute(m, term);
    case Reset: {
        Expr same;
        for (size_t k = 0; k < slots.size(); k++) {
            Expr e = old_values[k] == new_values[k];
            same = same.defined() ? (same && e) : e;
        }
        return select(same, t, term);
    }
    case Shift: return t + substitute(m, term);
    case Carried: {
        internal_assert(sums.size() == carried.size());
        Expr r = t;
        for (size_t k = 0; k < carried.size(); k++)
            r = r + sums[k] * substitute(m, carried[k].change);
        return r;
    }
    case None: break;
    }
    return t;
}

std::string Repair::formula(const std::vector<ProducerSlot> &slots) const {
    std::ostringstream os;
    os << "h(t";
    for (size_t k = 0; k < carried.size(); k++) os << ", A" << k + 1;
    for (const ProducerSlot &p : slots) os << ", " << p.var;
    for (const ProducerSlot &p : slots) os << ", " << primed(p.var);
    os << ") = ";
    switch (kind) {
    case None: os << "t"; break;
    case Scale: os << "t * " << term; break;
    case Shift: os << "t + " << term; break;
    case Reset: {
        os << "select(";
        for (size_t k = 0; k < slots.size(); k++) {
            os << (k ? " && " : "") << slots[k].var << " == " << primed(slots[k].var);
        }
        os << ", t, " << term << ")";
        break;
    }
    case Carried:
        os << "t";
        for (size_t k = 0; k < carried.size(); k++)
            os << " + A" << k + 1 << " * (" << carried[k].change << ")";
        os << ", carrying";
        for (size_t k = 0; k < carried.size(); k++) {
            os << (k ? "," : "") << " A" << k + 1 << " = sum of " << carried[k].per_term;
        }
        break;
    }
    return os.str();
}

Repair derive_repair(const std::string &member, ReduceOp op, const Expr &g,
                     const std::vector<ProducerSlot> &slots, const std::string &directive) {
    SlotNames vars = slot_names(slots, false), allowed = slot_names(slots, true);
    Repair h;
    if (!reads_slots(g, vars)) return h;
    Type t = g.type();
    Expr g_new = prime_slots(g, slots);
    std::ostringstream why;  // what each attempt found, for the refusal

    auto producers = [&]() {
        std::string s;
        for (const ProducerSlot &p : slots) s += (s.empty() ? "" : ", ") + p.func;
        return s;
    };
    auto refuse = [&](const std::string &property) {
        user_error << directive << ": cannot repair reduction " << member << " ("
                   << reduce_op_name(op) << " of " << g << ") when its producer " << producers()
                   << " changes: " << property << ". " << why.str() << "Compute " << member
                   << " after " << producers()
                   << " instead (remove the directive), or write it so that the producer enters "
                   << "through a factor exp(... - producer) or an added term.";
    };
    if (op == ReduceOp::Mul) {
        refuse("products of terms that read a running producer are not supported");
    }

    // Scale: g = C(c) * Π_b b^Λ_b(r, c) with every Λ_b(r') - Λ_b(r) free of c.
    Exponents exponents;
    Expr culprit;
    bool scale_ok = false;
    if (log_terms(g, 1, exponents, vars, &culprit)) {
        Expr factor, shown;
        scale_ok = true;
        for (const auto &[base, exponent] : exponents) {
            // Λ(r') - Λ(r), atom by atom (rebuilding Λ as an Expr first
            // would round its coefficients to float and spoil the
            // cancellation).
            LinearForm diff;
            for (const auto &term : exponent.terms) {
                diff.add_atom(prime_slots(term.first, slots), term.second);
                diff.add_atom(term.first, -term.second);
            }
            Expr d = producer_only(diff, t, allowed, &culprit);
            if (!d.defined()) {
                why << "The exponent's change still reads " << culprit << ". ";
                scale_ok = false;
                break;
            }
            if (is_const_zero(simplify(d))) continue;
            Expr f = base == M_E ? exp(simplify(d)) : pow(make_const(t, base), simplify(d));
            factor = factor.defined() ? factor * f : f;
            Expr lambda = simplify(rebuild(exponent, t));
            shown = shown.defined()
                        ? shown * (base == M_E ? exp(lambda) : pow(make_const(t, base), lambda))
                        : (base == M_E ? exp(lambda) : pow(make_const(t, base), lambda));
        }
        if (scale_ok && factor.defined()) {
            h.kind = Repair::Scale;
            h.term = factor;
            h.proved_symbolically = true;
            h.log = "scale repair, proved symbolically: g = C(c) * " + to_string(shown) +
                    ", and the exponent's change is free of c";
        } else {
            scale_ok = false;
        }
    } else {
        why << "Its factor " << culprit << " reads the producer outside exp() or pow(). ";
    }

    // Shift (max, min): g(r') - g(r) free of c.
    if (!scale_ok && op != ReduceOp::Add) {
        LinearForm diff = linear_form(g_new);
        diff.add(linear_form(g), -1);
        Expr d = producer_only(diff, t, allowed, &culprit);
        if (d.defined()) {
            h.kind = Repair::Shift;
            h.term = simplify(d);
            h.proved_symbolically = true;
            h.log = "shift repair, proved symbolically: g(r', c) - g(r, c) is free of c";
        } else {
            why << "g(r', c) - g(r, c) still reads " << culprit << ". ";
        }
    }

    // Carried (+): g a polynomial in its one producer, or g(r') - g(r) free
    // of c (then the carried sum is a term count).
    if (!scale_ok && op == ReduceOp::Add) {
        std::vector<Expr> coefs;
        if (slots.size() == 1 && polynomial(g, slots[0].var, coefs) && coefs.size() > 1) {
            Expr r = Variable::make(slots[0].type, slots[0].var),
                 r_new = Variable::make(slots[0].type, primed(slots[0].var));
            h.kind = Repair::Carried;
            // Degrees with a constant coefficient share one term count.
            Expr count_change;
            for (size_t k = 1; k < coefs.size(); k++) {
                // Collected like terms: x * (-1/n) + (-1/n) * x is -2 * (x * 1/n)...
                Expr a = simplify(rebuild(linear_form(coefs[k]), t));
                if (is_const_zero(a)) continue;
                Expr change = power(r_new, static_cast<int>(k)) - power(r, static_cast<int>(k));
                if (is_const(a)) {
                    change = simplify(a * change);
                    count_change = count_change.defined() ? count_change + change : change;
                } else {
                    h.carried.push_back({a, change});
                }
            }
            if (count_change.defined()) {
                h.carried.insert(h.carried.begin(), {make_one(t), simplify(count_change)});
            }
            h.proved_symbolically = true;
            h.log = "carried repair, proved symbolically: g is a polynomial of degree " +
                    std::to_string(coefs.size() - 1) + " in " + slots[0].func +
                    " whose coefficients are summed alongside";
        } else {
            LinearForm diff = linear_form(g_new);
            diff.add(linear_form(g), -1);
            Expr d = producer_only(diff, t, allowed, &culprit);
            if (d.defined()) {
                h.kind = Repair::Carried;
                h.carried.push_back({make_one(t), simplify(d)});
                h.proved_symbolically = true;
                h.log =
                    "carried repair with a term count, proved symbolically: g(r', c) - g(r, c) "
                    "is free of c";
            } else {
                why << "g(r', c) - g(r, c) still reads " << culprit
                    << (slots.size() == 1 ? ", and g is not a polynomial in the producer. " : ". ");
            }
        }
    }

    // Numerical fallback: g(r', c) / g(r, c) or g(r', c) - g(r, c) the same
    // for every sampled c, then h uses g at one representative c.
    if (h.kind == Repair::None) {
        std::mt19937_64 rng(0xfa11);
        Evaluator ev(rng);
        Expr g_fixed = at_fixed_c(g, allowed, ev);
        Expr g_new_fixed = prime_slots(g_fixed, slots);
        Repair candidate;
        candidate.kind = Repair::Scale;
        candidate.term = g_new_fixed / g_fixed;
        bool positive = true;
        for (int k = 0; k < kPoints && positive; k++) {
            ev.new_point();
            for (const ProducerSlot &p : slots) {
                ev.slots[p.var] = std::uniform_real_distribution<double>(-3, 3)(rng);
                ev.slots[primed(p.var)] = std::uniform_real_distribution<double>(-3, 3)(rng);
            }
            positive = ev.eval(candidate.term) > 0;
        }
        if (positive && check_numerically(candidate, op, g, slots).empty()) {
            h = candidate;
            h.log =
                "scale repair, accepted numerically: g(r', c) / g(r, c) was the same for "
                "every c at " +
                std::to_string(kPoints) + " random points (float64)";
        } else {
            Expr d = g_new_fixed - g_fixed;
            if (op == ReduceOp::Add) {
                candidate.kind = Repair::Carried;
                candidate.carried = {{make_one(t), d}};
            } else {
                candidate.kind = Repair::Shift;
                candidate.term = d;
            }
            if (check_numerically(candidate, op, g, slots).empty()) {
                h = candidate;
                h.log = "shift repair" +
                        std::string(op == ReduceOp::Add ? " with a term count" : "") +
                        ", accepted numerically: g(r', c) - g(r, c) was the same for every c "
                        "at " +
                        std::to_string(kPoints) + " random points (float64)";
            }
        }
    }
    // Reset: terms that count only while they attain a max (min) producer.
    bool ordered = !slots.empty() && op != ReduceOp::Mul;
    for (const ProducerSlot &p : slots) {
        ordered =
            ordered && p.per_term.defined() && (p.op == ReduceOp::Max || p.op == ReduceOp::Min);
    }
    if (h.kind == Repair::None && ordered) {
        // Reset to the identity, or, for max and min (where repeating a
        // value changes nothing), to what g gives the terms that do not
        // attain the producer: select(x == m, v, b) resets to b.
        std::vector<Expr> targets = {reduce_identity(op, t)};
        const Select *sel = g.as<Select>();
        if (sel && op != ReduceOp::Add && !reads_slots(sel->false_value, vars)) {
            targets.push_back(sel->false_value);
        }
        Repair candidate;
        candidate.kind = Repair::Reset;
        for (const Expr &target : targets) {
            candidate.term = target;
            if (check_numerically(candidate, op, g, slots).empty()) break;
            candidate.term = Expr();
        }
        if (candidate.term.defined()) {
            h = candidate;
            h.log =
                "reset repair, accepted numerically: terms count only while they attain the "
                "producer, which a moved producer no longer holds (checked at " +
                std::to_string(kPoints) +
                " random points in float64, with each producer "
                "bounding the terms reduced into it)";
        }
    }
    if (h.kind == Repair::None) {
        refuse(
            "no repair h(t, r, r') exists that is independent of the terms c (neither "
            "g(r', c) / g(r, c) nor g(r', c) - g(r, c) is, and g is not a polynomial in the "
            "producer)");
    }
    // Property (2) for a scale repair under max/min needs a positive factor:
    // exp() is, and the numerical path checked it.
    std::string failed = check_numerically(h, op, g, slots);
    if (!failed.empty()) refuse("the derived " + h.formula(slots) + " fails " + failed);
    // The fused loops skip steps and repairs while a max (min) producer is
    // still at its identity, so that no exp(-inf - -inf) is formed. That is
    // exact only if the member's terms are the identity wherever the
    // producer's own term is (exp(s - m) is 0 where s is masked to -inf;
    // exp(x - m) reading the unmasked x is not).
    for (const ProducerSlot &p : slots) {
        if (!p.per_term.defined() || (p.op != ReduceOp::Max && p.op != ReduceOp::Min)) continue;
        Expr at_identity = reduce_identity(p.op, p.per_term.type());
        if (points_outside_where_vanishing(g, op, NE::make(p.per_term, at_identity), slots) < 0) {
            std::ostringstream os;
            os << "its terms are not " << reduce_identity(op, g.type()) << " where the terms of "
               << p.func << " are " << at_identity << " (masked), so the fused loop, which "
               << "skips those points until " << p.func << " has a value, would drop them";
            refuse(os.str());
        }
    }
    h.log += "; properties (1) and (2) checked in float64 at " + std::to_string(kPoints) +
             " random points";
    return h;
}

bool vanishes_where_false(const Expr &g, ReduceOp op, const Expr &mask,
                          const std::vector<ProducerSlot> &slots) {
    return points_outside_where_vanishing(g, op, mask, slots) >= kPoints / 4;
}

}  // namespace internal
}  // namespace loom
