// The free names of a GPU kernel: what it takes as parameters (buffers it
// loads or stores, scalars it reads) and which buffers it both reads and
// writes (whose accesses barriers must order).
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gpu/GPULoops.h"
#include "ir/IRVisitor.h"
#include "ir/Scope.h"
#include "loom/IR.h"

namespace loom {
namespace internal {

/** The free names of a kernel: scalars read and buffers loaded or stored
 * that the kernel does not define. */
struct KernelFreeNames : IRVisitor {
    Scope<int> defined;
    std::map<std::string, Type> scalars;
    struct Use {
        Type type;
        bool read = false, written = false;
    };
    std::map<std::string, Use> buffers;
    std::vector<std::string> order;  // first use

    using IRVisitor::visit;
    void note(const std::string &n) {
        if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
    }
    void visit(const Variable *op) override {
        if (defined.contains(op->name)) return;
        scalars[op->name] = op->type;
        note(op->name);
    }
    void visit(const Load *op) override {
        IRVisitor::visit(op);
        if (defined.contains(op->name)) return;
        auto &b = buffers[op->name];
        b.type = op->type.element_of();
        b.read = true;
        note(op->name);
    }
    void visit(const Store *op) override {
        IRVisitor::visit(op);
        if (defined.contains(op->name)) return;
        auto &b = buffers[op->name];
        b.type = op->value.type().element_of();
        b.written = true;
        note(op->name);
    }
    void visit(const Let *op) override {
        op->value.accept(this);
        ScopedBinding<int> bind(defined, op->name, 0);
        op->body.accept(this);
    }
    void visit(const LetStmt *op) override {
        op->value.accept(this);
        ScopedBinding<int> bind(defined, op->name, 0);
        op->body.accept(this);
    }
    void visit(const For *op) override {
        op->min.accept(this);
        // A GPU loop's extent is the launch's business (grid size, or the
        // block's threads), not the kernel's.
        if (!is_gpu_loop(op->for_type)) op->extent.accept(this);
        ScopedBinding<int> bind(defined, op->name, 0);
        op->body.accept(this);
    }
    void visit(const Allocate *op) override {
        for (const Expr &e : op->extents) e.accept(this);
        ScopedBinding<int> bind(defined, op->name, 0);
        op->body.accept(this);
    }
};

}  // namespace internal
}  // namespace loom
