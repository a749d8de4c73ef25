// Repair derivation: see RepairDerivation.h.
#include "fusion/RepairDerivation.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <sstream>

#include "arith/PolynomialForm.h"
#include "arith/Simplify.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
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

double reduce_combine(ReduceOp op, double a, double b) {
    switch (op) {
    case ReduceOp::Add: return a + b;
    case ReduceOp::Mul: return a * b;
    case ReduceOp::Max: return std::max(a, b);
    case ReduceOp::Min: return std::min(a, b);
    }
    return a;
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

bool reads_rvar(const Expr &e) {
    struct Find : IRVisitor {
        bool found = false;
        using IRVisitor::visit;
        void visit(const Variable *op) override { found = found || op->rdom != nullptr; }
    } find;
    e.accept(&find);
    return find.found;
}

double (*math_function(const std::string &name))(double) {
    if (name == Call::abs) return [](double x) { return std::abs(x); };
    const std::string n = name.substr(0, name.rfind('_'));
    if (n == "exp") return [](double x) { return std::exp(x); };
    if (n == "log") return [](double x) { return std::log(x); };
    if (n == "sqrt") return [](double x) { return std::sqrt(x); };
    if (n == "rsqrt") return [](double x) { return 1 / std::sqrt(x); };
    if (n == "tanh") return [](double x) { return std::tanh(x); };
    if (n == "sin") return [](double x) { return std::sin(x); };
    if (n == "cos") return [](double x) { return std::cos(x); };
    if (n == "erf") return [](double x) { return std::erf(x); };
    if (n == "floor") return [](double x) { return std::floor(x); };
    if (n == "ceil") return [](double x) { return std::ceil(x); };
    return nullptr;
}

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

/** Whether any of the slot variables occurs in e. */
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

// ---------------------------------------------------------------- normal forms

/** Whether no atom of p varies from term to term; else the first that does. */
bool free_of_terms(const PolyForm &p, const AtomTable &atoms, Expr *culprit) {
    for (int k : atoms_used(p)) {
        if (reads_rvar(atoms.atom(k))) {
            *culprit = atoms.atom(k);
            return false;
        }
    }
    return true;
}

/** The form of e(r') - e(r). */
PolyForm change_of(const Expr &e, const std::vector<ProducerSlot> &slots, AtomTable &atoms) {
    return poly_form(prime_slots(e, slots), atoms) - poly_form(e, atoms);
}

/** e's change as an Expr, factored by what is free of the producers (see
 * poly_to_expr_factored). */
Expr change_expr(const PolyForm &diff, const AtomTable &atoms, Type t,
                 const std::vector<ProducerSlot> &slots) {
    const SlotNames names = slot_names(slots, true);
    std::vector<int> inner;
    for (size_t k = 0; k < atoms.size(); k++) {
        if (reads_slots(atoms.atom(static_cast<int>(k)), names))
            inner.push_back(static_cast<int>(k));
    }
    return poly_to_expr_factored(diff, atoms, t, inner);
}

/** Whether a and b are equal as real functions (same normal form). */
bool same_function(const Expr &a, const Expr &b) {
    AtomTable atoms;
    return poly_form(a, atoms).same_as(poly_form(b, atoms));
}

// ---------------------------------------------------------------- log form

/** The exponents of one base in a product, with their signs. */
struct Power {
    double base;  // M_E for exp()
    std::vector<std::pair<double, Expr>> exponents;
};

/** Splits a product g = Π factors into Σ ±exponent per base (for exp() and
 * pow() of a positive constant base) and producer-free factors. Returns
 * false, with the offending factor, if a factor reads a producer another
 * way. */
bool log_terms(const Expr &e, double sign, std::vector<Power> &powers, const SlotNames &slots,
               Expr *culprit) {
    if (!reads_slots(e, slots)) return true;  // a factor of C(c)
    if (const Mul *m = e.as<Mul>()) {
        return log_terms(m->a, sign, powers, slots, culprit) &&
               log_terms(m->b, sign, powers, slots, culprit);
    }
    if (const Div *d = e.as<Div>()) {
        return log_terms(d->a, sign, powers, slots, culprit) &&
               log_terms(d->b, -sign, powers, slots, culprit);
    }
    if (const Cast *c = e.as<Cast>(); c && c->type.is_float() && c->value.type().is_float()) {
        return log_terms(c->value, sign, powers, slots, culprit);
    }
    auto add = [&](double base, const Expr &exponent) {
        for (Power &p : powers) {
            if (p.base == base) {
                p.exponents.emplace_back(sign, exponent);
                return true;
            }
        }
        powers.push_back({base, {{sign, exponent}}});
        return true;
    };
    if (const Call *c = e.as<Call>()) {
        if (c->name == "exp_f32" || c->name == "exp_f64") return add(M_E, c->args[0]);
        if (c->name == "pow_f32" || c->name == "pow_f64") {
            const FloatImm *base = c->args[0].as<FloatImm>();
            if (base && base->value > 0 && !reads_slots(c->args[0], slots)) {
                return add(base->value, c->args[1]);
            }
        }
    }
    *culprit = e;
    return false;
}

constexpr int kMaxDegree = 4;

/** x^k for k >= 1. */
Expr power(const Expr &x, int k) {
    Expr p = x;
    for (int i = 1; i < k; i++) p = p * x;
    return p;
}

/** d e / d var, by the rules of +, -, *, / (by what is free of var) and
 * float casts, keeping e's own shape: the derivative of (x - r/n)^2 is
 * 2 (x - r/n) (-1/n), not 2r/n^2 - 2x/n, whose two terms cancel when x is
 * large against its spread. Undefined where var enters any other way. */
Expr derivative(const Expr &e, const std::string &var) {
    Type t = e.type();
    if (!expr_uses_var(e, var)) return make_zero(t);
    auto plus = [](const Expr &a, const Expr &b) {
        if (is_const_zero(a)) return b;
        if (is_const_zero(b)) return a;
        // d(u * u) = u' u + u u': once, doubled.
        if (const Mul *ma = a.as<Mul>(), *mb = b.as<Mul>();
            ma && mb && equal(ma->a, mb->b) && equal(ma->b, mb->a)) {
            return a * make_const(a.type(), 2);
        }
        return a + b;
    };
    auto times = [&](const Expr &a, const Expr &b) {
        if (is_const_zero(a) || is_const_zero(b)) return make_zero(t);
        if (is_const_one(a)) return b;
        if (is_const_one(b)) return a;
        return a * b;
    };
    if (const Variable *v = e.as<Variable>(); v && v->name == var) return make_one(t);
    if (const Add *op = e.as<Add>()) {
        Expr a = derivative(op->a, var), b = derivative(op->b, var);
        return a.defined() && b.defined() ? plus(a, b) : Expr();
    }
    if (const Sub *op = e.as<Sub>()) {
        Expr a = derivative(op->a, var), b = derivative(op->b, var);
        if (!a.defined() || !b.defined()) return Expr();
        return is_const_zero(b) ? a : (is_const_zero(a) ? make_zero(t) - b : a - b);
    }
    if (const Mul *op = e.as<Mul>()) {
        Expr a = derivative(op->a, var), b = derivative(op->b, var);
        if (!a.defined() || !b.defined()) return Expr();
        return plus(times(a, op->b), times(op->a, b));
    }
    if (const Div *op = e.as<Div>(); op && t.is_float() && !expr_uses_var(op->b, var)) {
        Expr a = derivative(op->a, var);
        if (!a.defined()) return Expr();
        return is_const_zero(a) ? a : a / op->b;
    }
    if (const Cast *op = e.as<Cast>(); op && t.is_float() && op->value.type().is_float()) {
        Expr a = derivative(op->value, var);
        return a.defined() ? cast(t, a) : Expr();
    }
    return Expr();
}

/** C(n, k). */
double binomial(int n, int k) {
    double c = 1;
    for (int i = 1; i <= k; i++) c = c * (n - k + i) / i;
    return c;
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
                if (op->name.rfind("pow_", 0) == 0 && op->args.size() == 2) {
                    return std::pow(eval(op->args[0]), eval(op->args[1]));
                }
                if (double (*f)(double) = math_function(op->name); f && op->args.size() == 1) {
                    return f(eval(op->args[0]));
                }
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
    auto combine = [&](double a, double b) { return reduce_combine(op, a, b); };
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

/** Replaces every value of e that varies from term to term (what reads the
 * RVar) with the constant it has at one random point: a representative c.
 * Slots and what is constant along the reduction (Params, the row's values)
 * stay. */
Expr at_fixed_c(const Expr &e, Evaluator &ev) {
    struct Fix : IRMutator {
        Evaluator *ev;
        using IRMutator::visit;
        Expr fix(const Expr &e) { return make_const(e.type(), ev->eval(e)); }
        Expr visit(const Variable *op) override { return op->rdom ? fix(op) : Expr(op); }
        Expr visit(const Call *op) override {
            if (op->call_type == Call::PureIntrinsic) return IRMutator::visit(op);
            return reads_rvar(op) ? fix(op) : Expr(op);
        }
    } fix;
    fix.ev = &ev;
    return fix.mutate(e);
}

/** Property (1) of a carried repair, and of the repairs of its carried
 * sums, on normal forms: h(g(r, c), A(r, c), r, r') = g(r', c), with each
 * carried sum A holding its one term's per_term. */
bool carried_property_one_holds(const Repair &h, const Expr &g,
                                const std::vector<ProducerSlot> &slots) {
    std::vector<Expr> olds, news, sums;
    for (const ProducerSlot &p : slots) {
        olds.push_back(Variable::make(p.type, p.var));
        news.push_back(Variable::make(p.type, primed(p.var)));
    }
    for (const CarriedSum &c : h.carried) sums.push_back(c.per_term);
    if (!same_function(h.apply(g, slots, olds, news, sums), prime_slots(g, slots))) return false;
    for (size_t k = 0; k < h.carried_repairs.size(); k++) {
        const Repair &sub = h.carried_repairs[k];
        if (sub.kind != Repair::None &&
            !carried_property_one_holds(sub, h.carried[k].per_term, slots))
            return false;
    }
    return true;
}

/** The carried repair of a polynomial g in its one producer r, in Taylor
 * form (see RepairDerivation.h): false if g is not one. */
bool taylor_repair(const Expr &g, const std::vector<ProducerSlot> &slots, Repair *h) {
    if (slots.size() != 1) return false;
    const ProducerSlot &slot = slots[0];
    Type t = g.type();
    AtomTable atoms;
    const int r = atoms.index_of(Variable::make(slot.type, slot.var));
    PolyForm form = poly_form(g, atoms);
    // r must enter g as a variable of the polynomial, not inside an atom.
    for (int k : atoms_used(form)) {
        if (k != r && expr_uses_var(atoms.atom(k), slot.var)) return false;
    }
    std::vector<PolyForm> a;
    if (!split_by_powers(form, r, kMaxDegree, &a) || a.size() < 2) return false;
    const int degree = static_cast<int>(a.size()) - 1;
    // d_k = g^(k) / k!, the k-th Taylor coefficient, differentiated in g's
    // own shape (see derivative()); the top one, a_D, as the form gives it.
    std::vector<Expr> d(degree + 1);
    Expr dk = g;
    for (int k = 1; k < degree; k++) {
        dk = derivative(dk, slot.var);
        if (!dk.defined()) return false;
        d[k] = simplify(dk / make_const(t, static_cast<double>(k)));
        dk = d[k];
    }
    d[degree] = simplify(poly_to_expr(a[degree], atoms, t));
    // A top coefficient constant along the reduction is carried as a count.
    Expr unused;
    AtomTable top_atoms;
    const bool top_is_count = free_of_terms(poly_form(d[degree], top_atoms), top_atoms, &unused);
    Expr delta = Variable::make(slot.type, primed(slot.var)) - Variable::make(slot.type, slot.var);
    if (slot.type != t) delta = cast(t, delta);
    // The repair of B_j (B_0 = t): + Σ_{k>j} C(k, j) B_k δ^(k-j).
    auto shift_of = [&](int j) {
        Repair rj;
        rj.kind = Repair::Carried;
        for (int k = j + 1; k <= degree; k++) {
            Expr change = power(delta, k - j);
            double c = binomial(k, j);
            if (c != 1) change = make_const(t, c) * change;
            if (k == degree && top_is_count) {
                rj.carried.push_back({make_one(t), simplify(d[degree] * change)});
            } else {
                rj.carried.push_back({d[k], change});
            }
            rj.carried_repairs.emplace_back();
        }
        rj.proved_symbolically = true;
        rj.log = "Taylor coefficient " + std::to_string(j) + " of the carried repair";
        return rj;
    };
    Repair out = shift_of(0);
    for (int k = 1; k < degree; k++) out.carried_repairs[k - 1] = shift_of(k);
    *h = out;
    return true;
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
        for (size_t k = 0; k < carried.size(); k++) {
            Expr sum = sums[k].type() == t.type() ? sums[k] : cast(t.type(), sums[k]);
            r = r + sum * substitute(m, carried[k].change);
        }
        return r;
    }
    case None: break;
    }
    return t;
}

bool CarriedSum::is_count() const { return is_const_one(per_term); }

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
    SlotNames vars = slot_names(slots, false);
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
    std::vector<Power> powers;
    Expr culprit;
    bool scale_ok = false;
    if (log_terms(g, 1, powers, vars, &culprit)) {
        Expr factor, shown;
        scale_ok = true;
        for (const Power &p : powers) {
            AtomTable atoms;
            PolyForm diff, lambda;
            for (const auto &[sign, e] : p.exponents) {
                diff = diff + change_of(e, slots, atoms).scaled(sign);
                lambda = lambda + poly_form(e, atoms).scaled(sign);
            }
            if (!free_of_terms(diff, atoms, &culprit)) {
                why << "The exponent's change still reads " << culprit << ". ";
                scale_ok = false;
                break;
            }
            if (diff.is_zero()) continue;
            Expr d = simplify(change_expr(diff, atoms, t, slots));
            auto raise = [&](const Expr &x) {
                return p.base == M_E ? exp(x) : pow(make_const(t, p.base), x);
            };
            factor = factor.defined() ? factor * raise(d) : raise(d);
            Expr l = raise(simplify(poly_to_expr(lambda, atoms, t)));
            shown = shown.defined() ? shown * l : l;
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

    // g(r', c) - g(r, c), when free of c.
    Expr difference;
    if (!scale_ok) {
        AtomTable atoms;
        PolyForm diff = change_of(g, slots, atoms);
        if (free_of_terms(diff, atoms, &culprit)) {
            difference = simplify(change_expr(diff, atoms, t, slots));
        } else {
            why << "g(r', c) - g(r, c) still reads " << culprit << ". ";
        }
    }

    // Shift (max, min): h(t) = t + (g(r', c) - g(r, c)).
    if (!scale_ok && op != ReduceOp::Add && difference.defined()) {
        h.kind = Repair::Shift;
        h.term = difference;
        h.proved_symbolically = true;
        h.log = "shift repair, proved symbolically: g(r', c) - g(r, c) is free of c";
    }

    // Carried (+): g a polynomial in its one producer, in Taylor form; or,
    // with several producers, g(r') - g(r) free of c (a term count).
    if (!scale_ok && op == ReduceOp::Add) {
        if (taylor_repair(g, slots, &h)) {
            h.log =
                "carried repair in Taylor form, proved symbolically: g is a polynomial of "
                "degree " +
                std::to_string(h.carried.size()) + " in " + slots[0].func +
                ", and the sums of its Taylor coefficients about " + slots[0].func +
                " are carried and shifted with it";
        } else if (difference.defined()) {
            h.kind = Repair::Carried;
            h.carried.push_back({make_one(t), difference});
            h.carried_repairs.emplace_back();
            h.log =
                "carried repair with a term count, proved symbolically: g(r', c) - g(r, c) "
                "is free of c";
        } else if (slots.size() == 1) {
            why << "g is not a polynomial in the producer. ";
        }
        if (h.kind == Repair::Carried) {
            h.proved_symbolically = carried_property_one_holds(h, g, slots);
            internal_assert(h.proved_symbolically)
                << "the carried repair of " << member << " does not normalize to g(r', c)";
        }
    }

    // Numerical fallback: g(r', c) / g(r, c) or g(r', c) - g(r, c) the same
    // for every sampled c, then h uses g at one representative c.
    if (h.kind == Repair::None) {
        std::mt19937_64 rng(0xfa11);
        Evaluator ev(rng);
        Expr g_fixed = at_fixed_c(g, ev);
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
