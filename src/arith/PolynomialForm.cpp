// Polynomial normal forms: see PolynomialForm.h.
#include "arith/PolynomialForm.h"

#include <algorithm>
#include <cmath>

#include "ir/IREquality.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

int AtomTable::index_of(const Expr &e) {
    for (size_t k = 0; k < atoms_.size(); k++) {
        if (equal(atoms_[k], e)) return static_cast<int>(k);
    }
    atoms_.push_back(e);
    return static_cast<int>(atoms_.size()) - 1;
}

PolyForm PolyForm::constant(double c) {
    PolyForm p;
    if (c != 0) p.terms[{}] = c;
    return p;
}

PolyForm PolyForm::atom(int k) {
    PolyForm p;
    p.terms[{{k, 1}}] = 1;
    return p;
}

bool PolyForm::is_constant(double *value) const {
    if (terms.empty()) {
        if (value) *value = 0;
        return true;
    }
    if (terms.size() != 1 || !terms.begin()->first.empty()) return false;
    if (value) *value = terms.begin()->second;
    return true;
}

namespace {

void accumulate(std::map<Monomial, double> &into, const Monomial &m, double c) {
    double &slot = into[m];
    slot += c;
    if (slot == 0) into.erase(m);
}

Monomial multiply(const Monomial &a, const Monomial &b) {
    Monomial out;
    size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
        if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
            out.push_back(a[i++]);
        } else if (i == a.size() || b[j].first < a[i].first) {
            out.push_back(b[j++]);
        } else {
            int e = a[i].second + b[j].second;
            if (e != 0) out.emplace_back(a[i].first, e);
            i++, j++;
        }
    }
    return out;
}

}  // namespace

PolyForm PolyForm::operator+(const PolyForm &o) const {
    PolyForm r = *this;
    for (const auto &[m, c] : o.terms) accumulate(r.terms, m, c);
    return r;
}

PolyForm PolyForm::operator-(const PolyForm &o) const { return *this + o.scaled(-1); }

PolyForm PolyForm::operator*(const PolyForm &o) const {
    PolyForm r;
    for (const auto &[ma, ca] : terms) {
        for (const auto &[mb, cb] : o.terms) accumulate(r.terms, multiply(ma, mb), ca * cb);
    }
    return r;
}

PolyForm PolyForm::scaled(double c) const {
    PolyForm r;
    if (c == 0) return r;
    for (const auto &[m, v] : terms) r.terms[m] = v * c;
    return r;
}

PolyForm PolyForm::inverse() const {
    PolyForm r;
    const auto &[m, c] = *terms.begin();
    Monomial inv = m;
    for (auto &p : inv) p.second = -p.second;
    r.terms[inv] = 1 / c;
    return r;
}

bool PolyForm::same_as(const PolyForm &o, double rel_tol) const {
    PolyForm d = *this - o;
    double scale = 0;
    for (const auto &t : terms) scale = std::max(scale, std::abs(t.second));
    for (const auto &t : o.terms) scale = std::max(scale, std::abs(t.second));
    for (const auto &t : d.terms) {
        if (std::abs(t.second) > rel_tol * std::max(scale, 1e-300)) return false;
    }
    return true;
}

namespace {

class ToPoly {
  public:
    ToPoly(AtomTable &atoms, size_t max_terms) : atoms(atoms), max_terms(max_terms) {}

    PolyForm form(const Expr &e) {
        if (const FloatImm *f = e.as<FloatImm>()) return PolyForm::constant(f->value);
        if (const IntImm *i = e.as<IntImm>())
            return PolyForm::constant(static_cast<double>(i->value));
        if (const UIntImm *u = e.as<UIntImm>()) {
            return PolyForm::constant(static_cast<double>(u->value));
        }
        if (const Add *op = e.as<Add>()) return form(op->a) + form(op->b);
        if (const Sub *op = e.as<Sub>()) return form(op->a) - form(op->b);
        if (const Mul *op = e.as<Mul>()) {
            PolyForm a = form(op->a), b = form(op->b);
            if (a.terms.size() * b.terms.size() > max_terms) return atom(e);
            return a * b;
        }
        if (const Div *op = e.as<Div>(); op && e.type().is_float()) {
            PolyForm b = form(op->b);
            double c;
            if (b.is_constant(&c) && c == 0) return atom(e);
            PolyForm inv = b.is_monomial() ? b.inverse() : atom(op->b).inverse();
            return form(op->a) * inv;
        }
        if (const Cast *op = e.as<Cast>();
            op && op->type.is_float() && op->value.type().is_float()) {
            return form(op->value);
        }
        return atom(e);
    }

  private:
    AtomTable &atoms;
    size_t max_terms;
    PolyForm atom(const Expr &e) { return PolyForm::atom(atoms.index_of(e)); }
};

}  // namespace

PolyForm poly_form(const Expr &e, AtomTable &atoms, size_t max_terms) {
    return ToPoly(atoms, max_terms).form(e);
}

Expr poly_to_expr(const PolyForm &p, const AtomTable &atoms, Type t) {
    auto as_t = [&](const Expr &e) { return e.type() == t ? e : cast(t, e); };
    auto product = [&](const Monomial &m, bool positive) {
        Expr out;
        for (const auto &[k, e] : m) {
            if ((e > 0) != positive) continue;
            for (int n = 0; n < std::abs(e); n++) {
                Expr a = as_t(atoms.atom(k));
                out = out.defined() ? out * a : a;
            }
        }
        return out;
    };
    std::vector<std::pair<Monomial, double>> ordered(p.terms.begin(), p.terms.end());
    std::stable_partition(ordered.begin(), ordered.end(),
                          [](const auto &term) { return term.second > 0; });
    Expr sum;
    for (const auto &[m, c] : ordered) {
        Expr num = product(m, true), den = product(m, false);
        double mag = std::abs(c);
        Expr term;
        if (!num.defined()) {
            term = make_const(t, mag);
        } else {
            term = mag == 1 ? num : make_const(t, mag) * num;
        }
        if (den.defined()) term = term / den;
        if (!sum.defined()) {
            sum = c < 0 ? make_zero(t) - term : term;
        } else {
            sum = c < 0 ? sum - term : sum + term;
        }
    }
    return sum.defined() ? sum : make_zero(t);
}

Expr poly_to_expr_factored(const PolyForm &p, const AtomTable &atoms, Type t,
                           const std::vector<int> &inner) {
    std::map<Monomial, PolyForm> groups;  // by the factor outside `inner`
    for (const auto &[m, c] : p.terms) {
        Monomial in, out;
        for (const auto &f : m) {
            (std::find(inner.begin(), inner.end(), f.first) != inner.end() ? in : out).push_back(f);
        }
        groups[out].terms[in] = c;
    }
    Expr sum;
    for (const auto &[outer, poly] : groups) {
        Expr term = poly_to_expr(poly, atoms, t);
        PolyForm factor;
        factor.terms[outer] = 1;
        if (!outer.empty()) {
            // outer = num / den: term * num / den.
            Monomial num, den;
            for (const auto &f : outer)
                (f.second > 0 ? num : den).emplace_back(f.first, std::abs(f.second));
            PolyForm n, d;
            n.terms[num] = 1;
            d.terms[den] = 1;
            if (!num.empty()) term = term * poly_to_expr(n, atoms, t);
            if (!den.empty()) term = term / poly_to_expr(d, atoms, t);
        }
        sum = sum.defined() ? sum + term : term;
    }
    return sum.defined() ? sum : make_zero(t);
}

std::vector<int> atoms_used(const PolyForm &p) {
    std::vector<int> used;
    for (const auto &t : p.terms) {
        for (const auto &f : t.first) {
            if (std::find(used.begin(), used.end(), f.first) == used.end()) used.push_back(f.first);
        }
    }
    std::sort(used.begin(), used.end());
    return used;
}

bool split_by_powers(const PolyForm &p, int var, int max_degree, std::vector<PolyForm> *coefs) {
    coefs->assign(1, PolyForm());
    for (const auto &[m, c] : p.terms) {
        int power = 0;
        Monomial rest;
        for (const auto &f : m) {
            if (f.first == var) {
                power = f.second;
            } else {
                rest.push_back(f);
            }
        }
        if (power < 0 || power > max_degree) return false;
        if (static_cast<int>(coefs->size()) <= power) coefs->resize(power + 1);
        (*coefs)[power].terms[rest] = c;
    }
    while (coefs->size() > 1 && coefs->back().is_zero()) coefs->pop_back();
    return true;
}

}  // namespace internal
}  // namespace loom
