// Storage flattening: see StorageFlattening.h.
#include "lower/StorageFlattening.h"

#include "arith/Simplify.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Scope.h"
#include "loom/IROperator.h"
#include "lower/BoundsInference.h"

namespace loom {
namespace internal {

namespace {

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }

/** Whether e calls Func `func` for a Tuple element other than `element`
 * (any element, for -1). */
bool reads_other_element(const Expr &e, const std::string &func, int element) {
    struct Find : IRVisitor {
        const std::string *func;
        int element;
        bool found = false;
        using IRVisitor::visit;
        void visit(const Call *op) override {
            found = found || (op->call_type == Call::Func && op->name == *func &&
                              op->value_index != element);
            IRVisitor::visit(op);
        }
    } find;
    find.func = &func;
    find.element = element;
    e.accept(&find);
    return find.found;
}

/** The flat index of `args` in `buf`. A dimension in `single_point` holds
 * one element, so every access the bounds allow is at its min: its term is
 * zero, and is left out rather than computed from a coordinate the code
 * generator cannot prove equal to the min. That keeps indices of small
 * per-thread arrays constant after unrolling, so that they stay in
 * registers (a GPU puts an array indexed by a run-time value in local
 * memory). */
Expr flat_index(const std::string &buf, const std::vector<Expr> &args,
                const std::vector<bool> &single_point = {}) {
    Expr idx = make_zero(Int(32));
    for (size_t d = 0; d < args.size(); d++) {
        if (d < single_point.size() && single_point[d]) continue;
        std::string k = std::to_string(d);
        idx = idx + (args[d] - int_var(buf + ".min." + k)) * int_var(buf + ".stride." + k);
    }
    return idx;
}

class FlattenStorage : public IRMutator {
  public:
    explicit FlattenStorage(const LoweringEnv &env) : env(env) {}

  protected:
    using IRMutator::visit;
    const LoweringEnv &env;

    int tuple_size(const std::string &func) const {
        auto it = env.funcs.find(func);
        internal_assert(it != env.funcs.end()) << "storage of unknown Func " << func;
        return static_cast<int>(it->second->output_types.size());
    }

    /** Per realized Func (innermost realization), which of its dimensions
     * have the constant extent 1. */
    Scope<std::vector<bool>> single_points;

    std::vector<bool> single_point_dims(const std::string &func) const {
        const std::vector<bool> *dims = single_points.find(func);
        return dims ? *dims : std::vector<bool>();
    }

    Stmt visit(const Realize *op) override {
        int n = static_cast<int>(op->types.size());
        int dims = static_cast<int>(op->bounds.size());
        std::vector<bool> single(dims);
        for (int d = 0; d < dims; d++) single[d] = is_const_one(simplify(op->bounds[d].extent));
        Stmt body;
        {
            ScopedBinding<std::vector<bool>> bind(single_points, op->name, single);
            body = mutate(op->body);
        }
        for (int i = n - 1; i >= 0; i--) {
            std::string buf = buffer_name(op->name, i, n);
            std::vector<Expr> extents;
            for (int d = 0; d < dims; d++)
                extents.push_back(int_var(buf + ".extent." + std::to_string(d)));
            body = Allocate::make(buf, op->types[i], op->memory_type, extents, op->condition, body,
                                  op->replicated);
            // The allocation's element count must fit the int32 index space.
            Expr total = make_const(Int(64), 1);
            for (const Expr &e : extents) total = total * cast(Int(64), e);
            body = Block::make(
                AssertStmt::make(
                    total <= make_const(Int(64), (int64_t(1) << 31) - 1),
                    error_message({StringImm::make("Func " + op->name + " needs storage of "),
                                   total,
                                   StringImm::make(" elements, more than the 2^31-1 "
                                                   "that Loom can index. Compute it "
                                                   "in smaller pieces (compute_at).")})),
                body);
            // Dense strides, last dimension innermost.
            for (int d = 0; d < dims; d++) {
                std::string k = std::to_string(d);
                Expr stride = make_one(Int(32));
                if (d + 1 < dims) {
                    std::string k1 = std::to_string(d + 1);
                    stride = int_var(buf + ".stride." + k1) * int_var(buf + ".extent." + k1);
                }
                body = LetStmt::make(buf + ".stride." + k, stride, body);
            }
            for (int d = dims - 1; d >= 0; d--) {
                std::string k = std::to_string(d);
                body = LetStmt::make(buf + ".extent." + k, op->bounds[d].extent, body);
                body = LetStmt::make(buf + ".min." + k, op->bounds[d].min, body);
            }
        }
        return body;
    }

    Stmt visit(const Provide *op) override {
        int n = static_cast<int>(op->values.size());
        std::vector<std::pair<std::string, Expr>> lets;
        // A coordinate that reads the Func (a scatter through its own values)
        // is evaluated once, before any store: each element's store would
        // otherwise recompute it from the elements already stored.
        std::vector<Expr> args;
        for (size_t k = 0; k < op->args.size(); k++) {
            Expr arg = mutate(op->args[k]);
            if (n > 1 && reads_other_element(op->args[k], op->name, -1)) {
                std::string tmp = op->name + ".index." + std::to_string(k);
                lets.emplace_back(tmp, arg);
                arg = Variable::make(arg.type(), tmp);
            }
            args.push_back(arg);
        }
        // An element whose value reads another element of the Tuple (argmax's
        // index reads the old maximum) is evaluated before any store, as the
        // elements are stored one after another. The others are stored as
        // they are, which keeps an element's update of itself recognizable as
        // a reduction (see AssociativeUpdates.h); one that reads another
        // element is none, for the lanes of a vector or the threads of a
        // block that would combine it.
        std::vector<Stmt> stores;
        for (int i = 0; i < n; i++) {
            Expr value = mutate(op->values[i]);
            std::string buf = buffer_name(op->name, i, n);
            if (reads_other_element(op->values[i], op->name, i)) {
                std::string tmp = op->name + ".value." + std::to_string(i);
                lets.emplace_back(tmp, value);
                value = Variable::make(value.type(), tmp);
            }
            stores.push_back(Store::make(
                buf, value, flat_index(buf, args, single_point_dims(op->name)), Expr()));
        }
        Stmt s = Block::make(stores);
        for (auto it = lets.rbegin(); it != lets.rend(); ++it)
            s = LetStmt::make(it->first, it->second, s);
        return s;
    }

    Expr visit(const Call *op) override {
        if (op->call_type == Call::Func) {
            std::vector<Expr> args;
            for (const Expr &a : op->args) args.push_back(mutate(a));
            std::string buf = buffer_name(op->name, op->value_index, tuple_size(op->name));
            return Load::make(op->type, buf, flat_index(buf, args, single_point_dims(op->name)),
                              Expr());
        }
        if (op->call_type == Call::Image) {
            std::vector<Expr> args;
            for (const Expr &a : op->args) args.push_back(mutate(a));
            return Load::make(op->type, op->name, flat_index(op->name, args), Expr(), op->param);
        }
        return IRMutator::visit(op);
    }
};

}  // namespace

std::string buffer_name(const std::string &func, int index, int tuple_size) {
    return tuple_size == 1 ? func : func + "." + std::to_string(index);
}

Stmt storage_flattening(const Stmt &s, const LoweringEnv &env) {
    return FlattenStorage(env).mutate(s);
}

}  // namespace internal
}  // namespace loom
