#include "loom/Var.h"

#include "ir/IRMutator.h"
#include "ir/Util.h"
#include "loom/Error.h"

namespace loom {

using namespace internal;

Var::Var() : name_(unique_name("v")) {}
Var::Var(const std::string &name) : name_(name) {
    user_assert(!name.empty()) << "A Var needs a non-empty name (or use Var() for a fresh one).";
}

RVar::RVar(ReductionDomainPtr dom, int index) : dom_(std::move(dom)), index_(index) {
    internal_assert(dom_ && index >= 0 && index < static_cast<int>(dom_->domain.size()));
    name_ = dom_->domain[index].var;
}

Expr RVar::min() const {
    user_assert(dom_) << "RVar " << name_ << " has no reduction domain, so it has no min.";
    return dom_->domain[index_].min;
}

Expr RVar::extent() const {
    user_assert(dom_) << "RVar " << name_ << " has no reduction domain, so it has no extent.";
    return dom_->domain[index_].extent;
}

RVar::operator Expr() const {
    user_assert(!name_.empty()) << "Use of an RVar that was never initialized.";
    return Variable::make(Int(32), name_, nullptr, dom_);
}

namespace {

// RDom bounds are loop bounds: they must be 32-bit integers.
Expr rdom_bound(const Expr &e, const std::string &rdom, int d, const char *what) {
    user_assert(e.defined()) << "RDom " << rdom << ": the " << what << " of dimension " << d
                             << " is undefined.";
    user_assert(e.type().is_scalar() && e.type().is_int_or_uint())
        << "RDom " << rdom << ": the " << what << " of dimension " << d << " has type "
        << type_to_string(e.type()) << "; RDom bounds must be integers.";
    return cast(Int(32), e);
}

std::string rvar_suffix(int d) {
    static const char *names[] = {"x", "y", "z", "w"};
    return d < 4 ? names[d] : std::to_string(d);
}

// Replaces the owning domain pointer in Variables that refer to `dom` itself
// by a non-owning alias of it: the predicate lives inside the domain, so an
// owning pointer there would be a reference cycle and leak the domain.
class WeakenSelfRefs : public IRMutator {
  public:
    explicit WeakenSelfRefs(const ReductionDomainContents *d) : dom(d) {}

  protected:
    using IRMutator::visit;
    Expr visit(const Variable *op) override {
        if (op->rdom.get() == dom && op->rdom.use_count() != 0) {
            // The aliasing constructor with an empty owner: points at the
            // domain but keeps nothing alive.
            ReductionDomainPtr weak(ReductionDomainPtr(), dom);
            return Variable::make(op->type, op->name, op->param, weak);
        }
        return op;
    }

  private:
    const ReductionDomainContents *dom;
};

}  // namespace

RDom::RDom(Expr min, Expr extent, const std::string &name)
    : RDom(std::vector<std::pair<Expr, Expr>>{{std::move(min), std::move(extent)}}, name) {}

RDom::RDom(const std::vector<std::pair<Expr, Expr>> &ranges, const std::string &name) {
    dom_ = std::make_shared<ReductionDomainContents>();
    dom_->name = name.empty() ? unique_name("r") : name;
    user_assert(!ranges.empty()) << "RDom " << dom_->name << " needs at least one dimension.";
    for (size_t d = 0; d < ranges.size(); d++) {
        ReductionVariable rv;
        rv.var = dom_->name + "." + rvar_suffix(static_cast<int>(d));
        rv.min = rdom_bound(ranges[d].first, dom_->name, static_cast<int>(d), "min");
        rv.extent = rdom_bound(ranges[d].second, dom_->name, static_cast<int>(d), "extent");
        dom_->domain.push_back(rv);
    }
    init_vars();
}

void RDom::init_vars() {
    RVar *vars[] = {&x, &y, &z, &w};
    for (int d = 0; d < 4; d++) {
        *vars[d] = d < dimensions() ? RVar(dom_, d) : RVar();
    }
}

int RDom::dimensions() const { return dom_ ? static_cast<int>(dom_->domain.size()) : 0; }

RVar RDom::operator[](int i) const {
    user_assert(dom_) << "Indexing an RDom that was never initialized.";
    user_assert(i >= 0 && i < dimensions()) << "RDom " << dom_->name << " has " << dimensions()
                                            << " dimensions, so [" << i << "] does not exist.";
    return RVar(dom_, i);
}

RDom::operator RVar() const {
    user_assert(dom_) << "Use of an RDom that was never initialized.";
    user_assert(dimensions() == 1) << "RDom " << dom_->name << " has " << dimensions()
                                   << " dimensions, so it cannot be used as a single RVar; use "
                                   << dom_->name << ".x, " << dom_->name << ".y, ...";
    return RVar(dom_, 0);
}

RDom::operator Expr() const { return Expr(RVar(*this)); }

const std::string &RDom::name() const {
    static const std::string empty;
    return dom_ ? dom_->name : empty;
}

RDom &RDom::where(Expr predicate) {
    user_assert(dom_) << "where() on an RDom that was never initialized.";
    user_assert(!dom_->frozen)
        << "RDom " << dom_->name
        << ": where() must be called before the RDom is used in a definition (it would "
           "change definitions already made).";
    user_assert(predicate.defined()) << "RDom " << dom_->name << ": where() of an undefined Expr.";
    user_assert(predicate.type().is_bool() && predicate.type().is_scalar())
        << "RDom " << dom_->name << ": where() needs a bool condition, but got a "
        << type_to_string(predicate.type()) << ". Compare it with something first.";
    predicate = WeakenSelfRefs(dom_.get()).mutate(predicate);
    dom_->predicate = dom_->predicate.defined() ? (dom_->predicate && predicate) : predicate;
    return *this;
}

}  // namespace loom
