#include "lang/Function.h"

#include <algorithm>
#include <functional>
#include <set>

#include "ir/IRVisitor.h"
#include "ir/Util.h"
#include "loom/Error.h"

namespace loom {
namespace internal {

namespace {

// Calls every Expr that belongs to a definition: its args, values, and the
// bounds and predicate of its reduction domain.
template <typename F> void for_each_expr(const Definition &d, F f) {
    for (const Expr &e : d.args) f(e);
    for (const Expr &e : d.values) f(e);
    if (d.rdom) {
        for (const ReductionVariable &rv : d.rdom->domain) {
            f(rv.min);
            f(rv.extent);
        }
        if (d.rdom->predicate.defined()) f(d.rdom->predicate);
    }
}

template <typename F> void for_each_expr(const FunctionContents &fn, F f) {
    for_each_expr(fn.init, f);
    for (const Definition &u : fn.updates) for_each_expr(u, f);
}

void add_unique(std::map<std::string, FunctionPtr> &m, const FunctionPtr &f) {
    auto it = m.find(f->name);
    if (it == m.end()) {
        m.emplace(f->name, f);
    } else if (it->second.get() != f.get()) {
        user_error << "Two different Funcs are named " << f->name
                   << "; Func names must be unique within a pipeline.";
    }
}

}  // namespace

namespace {
thread_local FuncsMadeByLowering *open_lowering = nullptr;
}  // namespace

FunctionPtr make_lowered_function(const FunctionContents &from) {
    FunctionPtr f = std::make_shared<FunctionContents>(from);
    if (open_lowering) open_lowering->made.push_back(f);
    return f;
}

FuncsMadeByLowering::FuncsMadeByLowering() : enclosing(open_lowering) { open_lowering = this; }

FuncsMadeByLowering::~FuncsMadeByLowering() {
    open_lowering = enclosing;
    std::vector<FunctionPtr> alive;
    for (const std::weak_ptr<FunctionContents> &w : made) {
        if (FunctionPtr f = w.lock()) alive.push_back(f);
    }
    // Held until all are emptied: emptying one may release another.
    for (const FunctionPtr &f : alive) {
        f->init = Definition();
        f->updates.clear();
    }
    if (enclosing) enclosing->made.insert(enclosing->made.end(), made.begin(), made.end());
}

std::map<std::string, FunctionPtr> find_direct_calls(const FunctionPtr &f) {
    struct Finder : IRVisitor {
        const FunctionContents *self;
        std::map<std::string, FunctionPtr> calls;
        using IRVisitor::visit;
        void visit(const Call *op) override {
            IRVisitor::visit(op);
            // Self-calls (in update definitions) are not calls to another
            // Func; they also hold a non-owning pointer that must not escape.
            // Compared by name too: lowering works on copies of Funcs whose
            // self-calls still point at the original.
            if (op->call_type == Call::Func && op->func && op->func.get() != self &&
                op->name != self->name) {
                add_unique(calls, op->func);
            }
        }
    } finder;
    finder.self = f.get();
    for_each_expr(*f, [&](const Expr &e) {
        if (e.defined()) e.accept(&finder);
    });
    return finder.calls;
}

std::map<std::string, FunctionPtr> find_transitive_calls(const std::vector<FunctionPtr> &outputs) {
    std::map<std::string, FunctionPtr> env;
    std::vector<FunctionPtr> stack;
    for (const FunctionPtr &f : outputs) {
        internal_assert(f);
        auto it = env.find(f->name);
        if (it != env.end() && it->second.get() == f.get()) continue;
        add_unique(env, f);
        stack.push_back(f);
    }
    while (!stack.empty()) {
        FunctionPtr f = stack.back();
        stack.pop_back();
        for (const auto &kv : find_direct_calls(f)) {
            auto it = env.find(kv.first);
            if (it != env.end() && it->second.get() == kv.second.get()) continue;
            add_unique(env, kv.second);
            stack.push_back(kv.second);
        }
    }
    return env;
}

std::vector<std::string> realization_order(const std::vector<FunctionPtr> &outputs,
                                           const std::map<std::string, FunctionPtr> &env,
                                           bool cycles_allowed) {
    // Depth-first post-order from the outputs: every Func is emitted after the
    // Funcs it calls. Callees are visited in name order so the order is
    // deterministic.
    std::vector<std::string> order;
    std::map<std::string, int> state;  // 1: on the stack, 2: done
    std::vector<std::string> path;
    std::function<void(const std::string &)> visit = [&](const std::string &name) {
        int &s = state[name];
        if (s == 2) return;
        if (s == 1) {
            if (cycles_allowed) return;
            auto start = std::find(path.begin(), path.end(), name);
            std::vector<std::string> cycle(start, path.end());
            cycle.push_back(name);
            user_error << "The Funcs " << join(cycle, " -> ")
                       << " call each other in a cycle; a Func may only call itself (in an "
                          "update definition) or Funcs defined before it.";
        }
        s = 1;
        path.push_back(name);
        auto it = env.find(name);
        internal_assert(it != env.end()) << "realization_order: " << name << " not in env";
        for (const auto &kv : find_direct_calls(it->second)) visit(kv.first);
        path.pop_back();
        state[name] = 2;
        order.push_back(name);
    };
    for (const FunctionPtr &f : outputs) visit(f->name);
    return order;
}

std::vector<ParameterPtr> find_parameters(const std::map<std::string, FunctionPtr> &env,
                                          const Stmt &schedule) {
    struct Finder : IRVisitor {
        std::vector<ParameterPtr> params;
        std::set<const ParameterContents *> seen;
        void add(const ParameterPtr &p) {
            if (p && seen.insert(p.get()).second) params.push_back(p);
        }
        using IRVisitor::visit;
        void visit(const Variable *op) override { add(op->param); }
        void visit(const Call *op) override {
            IRVisitor::visit(op);
            add(op->param);
        }
        void visit(const Load *op) override {
            IRVisitor::visit(op);
            add(op->param);
        }
    } finder;
    std::vector<FunctionPtr> outputs;
    for (const auto &kv : env) outputs.push_back(kv.second);
    // Visit in realization order, so "first use" follows the data flow rather
    // than Func names.
    std::vector<std::string> order = realization_order(outputs, env, /*cycles_allowed=*/true);
    for (const std::string &name : order) {
        for_each_expr(*env.at(name), [&](const Expr &e) {
            if (e.defined()) e.accept(&finder);
        });
    }
    if (schedule.defined()) schedule.accept(&finder);
    return finder.params;
}

std::vector<ReductionVariable> rvars_of(const Definition &d) {
    if (!d.rdom) return {};
    return d.rdom->domain;
}

}  // namespace internal
}  // namespace loom
