// Rebuilding traversal of IR trees. Each visit returns the new node; the
// defaults mutate the children and return the original node when none changed,
// so untouched subtrees stay shared.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loom/IR.h"

namespace loom {
namespace internal {

class IRMutator {
  public:
    virtual ~IRMutator() = default;

    virtual Expr mutate(const Expr &e);
    virtual Stmt mutate(const Stmt &s);
    /** Mutates each element; `changed` reports whether any differs. */
    std::vector<Expr> mutate_exprs(const std::vector<Expr> &v, bool *changed);

  protected:
    virtual Expr visit(const IntImm *);
    virtual Expr visit(const UIntImm *);
    virtual Expr visit(const FloatImm *);
    virtual Expr visit(const StringImm *);
    virtual Expr visit(const Cast *);
    virtual Expr visit(const Reinterpret *);
    virtual Expr visit(const Variable *);
    virtual Expr visit(const Add *);
    virtual Expr visit(const Sub *);
    virtual Expr visit(const Mul *);
    virtual Expr visit(const Div *);
    virtual Expr visit(const Mod *);
    virtual Expr visit(const Min *);
    virtual Expr visit(const Max *);
    virtual Expr visit(const EQ *);
    virtual Expr visit(const NE *);
    virtual Expr visit(const LT *);
    virtual Expr visit(const LE *);
    virtual Expr visit(const GT *);
    virtual Expr visit(const GE *);
    virtual Expr visit(const And *);
    virtual Expr visit(const Or *);
    virtual Expr visit(const Not *);
    virtual Expr visit(const Select *);
    virtual Expr visit(const Load *);
    virtual Expr visit(const Ramp *);
    virtual Expr visit(const Broadcast *);
    virtual Expr visit(const Let *);
    virtual Expr visit(const Call *);
    virtual Expr visit(const VectorReduce *);
    virtual Stmt visit(const LetStmt *);
    virtual Stmt visit(const AssertStmt *);
    virtual Stmt visit(const ProducerConsumer *);
    virtual Stmt visit(const For *);
    virtual Stmt visit(const Store *);
    virtual Stmt visit(const Provide *);
    virtual Stmt visit(const Allocate *);
    virtual Stmt visit(const Free *);
    virtual Stmt visit(const Realize *);
    virtual Stmt visit(const Block *);
    virtual Stmt visit(const IfThenElse *);
    virtual Stmt visit(const Evaluate *);
    virtual Stmt visit(const TileKernel *);
};

/** An IRMutator that remembers the result for each Expr node it has seen, so a
 * DAG with shared subexpressions is rewritten once per node. */
class IRGraphMutator : public IRMutator {
  public:
    Expr mutate(const Expr &e) override;
    Stmt mutate(const Stmt &s) override;

  protected:
    std::map<Expr, Expr, ExprCompare> expr_replacements;
    std::map<Stmt, Stmt> stmt_replacements;
};

/** An IRMutator that keeps the bindings of the LetStmts around the
 * statement it is at, outermost first (for substitute_enclosing_lets). */
class LetTrackingMutator : public IRMutator {
  protected:
    using IRMutator::visit;
    std::vector<std::pair<std::string, Expr>> enclosing_lets;
    Stmt visit(const LetStmt *op) override;
};

}  // namespace internal
}  // namespace loom
