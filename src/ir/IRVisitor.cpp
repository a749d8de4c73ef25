#include "ir/IRVisitor.h"

namespace loom {
namespace internal {

void IRVisitor::visit(const IntImm *) {}
void IRVisitor::visit(const UIntImm *) {}
void IRVisitor::visit(const FloatImm *) {}
void IRVisitor::visit(const StringImm *) {}
void IRVisitor::visit(const Cast *op) { op->value.accept(this); }
void IRVisitor::visit(const Reinterpret *op) { op->value.accept(this); }
void IRVisitor::visit(const Variable *) {}

#define LOOM_VISIT_BINARY(T)             \
    void IRVisitor::visit(const T *op) { \
        op->a.accept(this);              \
        op->b.accept(this);              \
    }
LOOM_VISIT_BINARY(Add)
LOOM_VISIT_BINARY(Sub)
LOOM_VISIT_BINARY(Mul)
LOOM_VISIT_BINARY(Div)
LOOM_VISIT_BINARY(Mod)
LOOM_VISIT_BINARY(Min)
LOOM_VISIT_BINARY(Max)
LOOM_VISIT_BINARY(EQ)
LOOM_VISIT_BINARY(NE)
LOOM_VISIT_BINARY(LT)
LOOM_VISIT_BINARY(LE)
LOOM_VISIT_BINARY(GT)
LOOM_VISIT_BINARY(GE)
LOOM_VISIT_BINARY(And)
LOOM_VISIT_BINARY(Or)
#undef LOOM_VISIT_BINARY

void IRVisitor::visit(const Not *op) { op->a.accept(this); }
void IRVisitor::visit(const Select *op) {
    op->condition.accept(this);
    op->true_value.accept(this);
    op->false_value.accept(this);
}
void IRVisitor::visit(const Load *op) {
    op->index.accept(this);
    op->predicate.accept(this);
}
void IRVisitor::visit(const Ramp *op) {
    op->base.accept(this);
    op->stride.accept(this);
}
void IRVisitor::visit(const Broadcast *op) { op->value.accept(this); }
void IRVisitor::visit(const Let *op) {
    op->value.accept(this);
    op->body.accept(this);
}
void IRVisitor::visit(const Call *op) {
    for (const Expr &a : op->args) a.accept(this);
}
void IRVisitor::visit(const VectorReduce *op) { op->value.accept(this); }
void IRVisitor::visit(const LetStmt *op) {
    op->value.accept(this);
    op->body.accept(this);
}
void IRVisitor::visit(const AssertStmt *op) {
    op->condition.accept(this);
    op->message.accept(this);
}
void IRVisitor::visit(const ProducerConsumer *op) { op->body.accept(this); }
void IRVisitor::visit(const For *op) {
    op->min.accept(this);
    op->extent.accept(this);
    op->body.accept(this);
}
void IRVisitor::visit(const Store *op) {
    op->value.accept(this);
    op->index.accept(this);
    op->predicate.accept(this);
}
void IRVisitor::visit(const Provide *op) {
    for (const Expr &v : op->values) v.accept(this);
    for (const Expr &a : op->args) a.accept(this);
}
void IRVisitor::visit(const Allocate *op) {
    for (const Expr &e : op->extents) e.accept(this);
    op->condition.accept(this);
    op->body.accept(this);
}
void IRVisitor::visit(const Free *) {}
void IRVisitor::visit(const Realize *op) {
    for (const Range &r : op->bounds) {
        r.min.accept(this);
        r.extent.accept(this);
    }
    op->condition.accept(this);
    op->body.accept(this);
}
void IRVisitor::visit(const Block *op) {
    op->first.accept(this);
    op->rest.accept(this);
}
void IRVisitor::visit(const IfThenElse *op) {
    op->condition.accept(this);
    op->then_case.accept(this);
    if (op->else_case.defined()) op->else_case.accept(this);
}
void IRVisitor::visit(const Evaluate *op) { op->value.accept(this); }
void IRVisitor::visit(const TileKernel *op) {
    for (const Expr &e : op->grid) e.accept(this);
    for (const Expr &e : op->scalar_values) e.accept(this);
}

}  // namespace internal
}  // namespace loom
