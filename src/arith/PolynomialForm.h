// Polynomial normal forms of Exprs, for the repair derivation.
//
// A PolyForm is a sum of monomials c · Π atom^e with real coefficients and
// integer exponents, over atoms: the maximal subexpressions that are not
// sums, differences, products or quotients (variables, calls, selects,
// casts from integers, ...), identified structurally. Products and
// quotients by a single monomial are expanded, so (x - m) / T and
// x * invT - m * invT have the same form; a quotient by a sum keeps the sum
// as an atom. Float-to-float casts are looked through.
//
// It is sound for real arithmetic, which is what the repairs are proved in:
// Loom's float simplifier rightly refuses to reassociate, so the proofs
// normalize on their own. Two Exprs with equal forms (over one AtomTable)
// are equal as real functions of their atoms.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loom/IR.h"

namespace loom {
namespace internal {

/** The atoms of a family of forms, numbered in order of appearance. */
class AtomTable {
  public:
    /** The index of e, added if new. */
    int index_of(const Expr &e);
    const Expr &atom(int k) const { return atoms_[k]; }
    size_t size() const { return atoms_.size(); }

  private:
    std::vector<Expr> atoms_;
};

/** Π atom^exponent, sorted by atom, no zero exponents. */
using Monomial = std::vector<std::pair<int, int>>;

struct PolyForm {
    std::map<Monomial, double> terms;  // no zero coefficients

    static PolyForm constant(double c);
    static PolyForm atom(int k);
    bool is_zero() const { return terms.empty(); }
    /** The coefficient of the empty monomial, if that is the only term. */
    bool is_constant(double *value = nullptr) const;
    /** A single monomial (its inverse exists as a form). */
    bool is_monomial() const { return terms.size() == 1; }

    PolyForm operator+(const PolyForm &o) const;
    PolyForm operator-(const PolyForm &o) const;
    PolyForm operator*(const PolyForm &o) const;
    PolyForm scaled(double c) const;
    /** 1 / this, for a monomial. */
    PolyForm inverse() const;
    /** Whether the two agree up to coefficients rounded in float (1/n, ln 2). */
    bool same_as(const PolyForm &o, double rel_tol = 1e-9) const;
};

/** The form of e. Products that would have more than `max_terms` monomials
 * stay atoms. */
PolyForm poly_form(const Expr &e, AtomTable &atoms, size_t max_terms = 256);

/** e as an Expr of type t again (monomials in a stable order, positive
 * coefficients first, so that m - m' prints as such). */
Expr poly_to_expr(const PolyForm &p, const AtomTable &atoms, Type t);

/** p as an Expr with the monomials grouped by their factors outside
 * `inner`: Σ_outer outer * (the inner polynomial), so that a change of the
 * producers, m/T - m'/T in the form, is built (m - m') / T, whose difference
 * is taken before it is scaled (and is exact when m and m' are close). */
Expr poly_to_expr_factored(const PolyForm &p, const AtomTable &atoms, Type t,
                           const std::vector<int> &inner);

/** The atoms a form uses. */
std::vector<int> atoms_used(const PolyForm &p);

/** p as a polynomial in atom `var`: coefs[k] is the form multiplying
 * var^k. False when var has a negative exponent or an exponent above
 * max_degree. */
bool split_by_powers(const PolyForm &p, int var, int max_degree, std::vector<PolyForm> *coefs);

}  // namespace internal
}  // namespace loom
