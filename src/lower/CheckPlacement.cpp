// Refuses schedules that place a Func's storage or computation where a
// consumer cannot see it: every Func read must be read inside its
// realization, after it is produced.
#include "lower/CheckPlacement.h"

#include <set>

#include "ir/IRVisitor.h"
#include "loom/Error.h"

namespace loom {
namespace internal {

/** Every Func read must be read inside its realization, after it is
 * produced; a schedule that places a Func's storage or computation where a
 * consumer cannot see it is refused here. */
void check_placement(const Stmt &s, const LoweringEnv &env) {
    struct Checker : IRVisitor {
        const LoweringEnv *env;
        std::set<std::string> realized, consuming, producing;
        using IRVisitor::visit;
        void visit(const Realize *op) override {
            realized.insert(op->name);
            IRVisitor::visit(op);
            realized.erase(op->name);
        }
        void visit(const ProducerConsumer *op) override {
            auto &set = op->is_producer ? producing : consuming;
            set.insert(op->name);
            if (op->is_producer && !env->is_output(op->name)) {
                user_assert(realized.count(op->name))
                    << func_for_message(env->origins, op->name)
                    << " is computed outside the loop where it is stored: its store_at level "
                       "must enclose its compute_at level.";
            }
            IRVisitor::visit(op);
            set.erase(op->name);
        }
        void visit(const Call *op) override {
            if (op->call_type == Call::Func && !env->is_output(op->name) &&
                !producing.count(op->name)) {
                user_assert(consuming.count(op->name))
                    << func_for_message(env->origins, op->name)
                    << " is used outside the loop where it is computed ("
                    << env->schedules.at(op->name).compute_level.to_string()
                    << "). Compute it at a loop that encloses every use, or at root.";
            }
            IRVisitor::visit(op);
        }
    } checker;
    checker.env = &env;
    s.accept(&checker);
}

}  // namespace internal
}  // namespace loom
