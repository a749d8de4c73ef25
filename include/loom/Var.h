// Var: a pure dimension variable of a Func. RDom/RVar: reduction domains.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/IROperator.h"

namespace loom {
namespace internal {

struct ReductionVariable {
    std::string var;
    Expr min, extent;
};

/** The variables of a reduction domain, iterated with the LAST innermost, and
 * the predicate (from where()) that selects the points that run. */
struct ReductionDomainContents {
    std::string name;
    std::vector<ReductionVariable> domain;
    Expr predicate;  // undefined means true
    // Set once a definition uses the domain: where() after that would change
    // the meaning of definitions already made, so it is refused.
    mutable bool frozen = false;
};

std::string unique_name(const std::string &prefix);

}  // namespace internal

/** A pure variable: one dimension of a Func's domain. */
class Var {
  public:
    Var();
    explicit Var(const std::string &name);
    const std::string &name() const { return name_; }
    operator Expr() const { return internal::Variable::make(Int(32), name_); }
    bool same_as(const Var &o) const { return name_ == o.name_; }

  private:
    std::string name_;
};

/** One variable of a reduction domain. */
class RVar {
  public:
    RVar() = default;
    RVar(internal::ReductionDomainPtr dom, int index);
    /** A name-only RVar, as made by split or fuse on a reduction loop. */
    explicit RVar(const std::string &name) : name_(name) {}
    const std::string &name() const { return name_; }
    Expr min() const;
    Expr extent() const;
    operator Expr() const;
    const internal::ReductionDomainPtr &domain() const { return dom_; }

  private:
    internal::ReductionDomainPtr dom_;
    int index_ = 0;
    std::string name_;
};

/** A reduction domain: a box of points visited in order by an update
 * definition, each dimension [min, min + extent). The last dimension is the
 * innermost. */
class RDom {
  public:
    RDom() = default;
    RDom(Expr min, Expr extent, const std::string &name = "");
    /** One (min, extent) pair per dimension, outermost first. */
    RDom(const std::vector<std::pair<Expr, Expr>> &ranges, const std::string &name = "");

    int dimensions() const;
    RVar operator[](int i) const;
    operator RVar() const;
    operator Expr() const;
    const std::string &name() const;

    /** Restricts the domain to the points where `predicate` holds. Calls
     * accumulate (they are and-ed). Returns *this for chaining. */
    RDom &where(Expr predicate);

    RVar x, y, z, w;
    internal::ReductionDomainPtr contents() const { return dom_; }

  private:
    std::shared_ptr<internal::ReductionDomainContents> dom_;
    void init_vars();
};

/** A Var or an RVar: what a scheduling directive names. */
class VarOrRVar {
  public:
    VarOrRVar(const Var &v) : name_(v.name()), is_rvar_(false) {}
    VarOrRVar(const RVar &r) : name_(r.name()), is_rvar_(true) {}
    VarOrRVar(const RDom &r) : VarOrRVar(RVar(r)) {}
    const std::string &name() const { return name_; }
    bool is_rvar() const { return is_rvar_; }

  private:
    std::string name_;
    bool is_rvar_;
};

}  // namespace loom
