// Reference-counted handles to immutable IR nodes: Expr (values) and Stmt
// (statements). Nodes are shared freely between trees; passes rebuild only the
// spine that changes.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "loom/Type.h"

namespace loom {
namespace internal {

class IRVisitor;
class IRMutator;
struct Expr_;

/** Intrusive reference count; nodes own one. */
struct RefCount {
    mutable std::atomic<int> count{0};
};

template <typename T> class IntrusivePtr {
  public:
    T *ptr = nullptr;

    IntrusivePtr() = default;
    IntrusivePtr(T *p) : ptr(p) { incref(); }
    IntrusivePtr(const IntrusivePtr &o) : ptr(o.ptr) { incref(); }
    IntrusivePtr(IntrusivePtr &&o) noexcept : ptr(o.ptr) { o.ptr = nullptr; }
    ~IntrusivePtr() { decref(); }
    IntrusivePtr &operator=(const IntrusivePtr &o) {
        if (o.ptr != ptr) {
            T *old = ptr;
            ptr = o.ptr;
            incref();
            if (old && --old->ref.count == 0) delete old;
        }
        return *this;
    }
    IntrusivePtr &operator=(IntrusivePtr &&o) noexcept {
        std::swap(ptr, o.ptr);
        return *this;
    }
    T *get() const { return ptr; }
    T &operator*() const { return *ptr; }
    T *operator->() const { return ptr; }
    bool defined() const { return ptr != nullptr; }
    bool same_as(const IntrusivePtr &o) const { return ptr == o.ptr; }
    bool operator<(const IntrusivePtr &o) const { return ptr < o.ptr; }

  private:
    void incref() {
        if (ptr) ++ptr->ref.count;
    }
    void decref() {
        if (ptr && --ptr->ref.count == 0) delete ptr;
        ptr = nullptr;
    }
};

enum class IRNodeType {
    // Exprs
    IntImm,
    UIntImm,
    FloatImm,
    StringImm,
    Cast,
    Reinterpret,
    Variable,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Min,
    Max,
    EQ,
    NE,
    LT,
    LE,
    GT,
    GE,
    And,
    Or,
    Not,
    Select,
    Load,
    Ramp,
    Broadcast,
    Let,
    Call,
    VectorReduce,
    // Stmts
    LetStmt,
    AssertStmt,
    ProducerConsumer,
    For,
    Store,
    Provide,
    Allocate,
    Free,
    Realize,
    Block,
    IfThenElse,
    Evaluate,
    TileKernel,
};

struct IRNode {
    RefCount ref;
    IRNodeType node_type;
    explicit IRNode(IRNodeType t) : node_type(t) {}
    virtual ~IRNode() = default;
    virtual void accept(IRVisitor *v) const = 0;
};

struct BaseExprNode : IRNode {
    Type type;
    explicit BaseExprNode(IRNodeType t) : IRNode(t) {}
};

struct BaseStmtNode : IRNode {
    explicit BaseStmtNode(IRNodeType t) : IRNode(t) {}
};

/** A handle to any IR node, with checked downcasts. */
struct IRHandle : IntrusivePtr<const IRNode> {
    IRHandle() = default;
    IRHandle(const IRNode *p) : IntrusivePtr<const IRNode>(p) {}

    /** The node as a T if it is one, else null. */
    template <typename T> const T *as() const {
        if (ptr && ptr->node_type == T::_node_type) return static_cast<const T *>(ptr);
        return nullptr;
    }
    IRNodeType node_type() const { return ptr->node_type; }
    void accept(IRVisitor *v) const { ptr->accept(v); }
};

}  // namespace internal

/** A value-producing expression. Implicitly built from C++ scalars:
 * int -> int32, float -> float32, double -> float64. */
struct Expr : internal::IRHandle {
    Expr() = default;
    Expr(const internal::BaseExprNode *n) : IRHandle(n) {}
    Expr(int8_t x);
    Expr(int16_t x);
    Expr(int32_t x);
    Expr(int64_t x);
    Expr(uint8_t x);
    Expr(uint16_t x);
    Expr(uint32_t x);
    Expr(uint64_t x);
    Expr(bool x);
    Expr(float x);
    Expr(double x);
    Expr(float16_t x);
    Expr(bfloat16_t x);

    const internal::BaseExprNode *get() const {
        return static_cast<const internal::BaseExprNode *>(ptr);
    }
    Type type() const { return get()->type; }
};

/** Orders Exprs by node identity, for use as map keys. */
struct ExprCompare {
    bool operator()(const Expr &a, const Expr &b) const { return a.get() < b.get(); }
};

namespace internal {

/** A statement of the loop IR. */
struct Stmt : IRHandle {
    Stmt() = default;
    Stmt(const BaseStmtNode *n) : IRHandle(n) {}
    const BaseStmtNode *get() const { return static_cast<const BaseStmtNode *>(ptr); }
};

}  // namespace internal
}  // namespace loom
