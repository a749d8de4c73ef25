// Asserts, before any access, that each input buffer covers the region the
// pipeline reads and each output buffer the region it writes, naming the
// buffer, the dimension and both ranges when it does not.
#include "lower/AddBufferChecks.h"

#include <map>

#include "arith/Bounds.h"
#include "arith/Simplify.h"
#include "loom/Error.h"
#include "loom/IROperator.h"
#include "lower/BoundsInference.h"

namespace loom {
namespace internal {

namespace {

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }

}  // namespace

/** Asserts, before any access, that each input buffer covers the region the
 * pipeline reads and each output buffer the region it writes. */
Stmt add_buffer_checks(const Stmt &s, const std::vector<ParameterPtr> &inputs,
                       const LoweringEnv &env) {
    std::map<std::string, Box> read = boxes_required_with_conditions(bounds_analysis_view(s));
    std::map<std::string, Box> written = boxes_provided_with_conditions(bounds_analysis_view(s));
    std::vector<Stmt> checks;
    auto check = [&](const std::string &buf, const std::string &func, const Box &box,
                     const char *role, const char *verb) {
        for (size_t d = 0; d < box.size(); d++) {
            user_assert(box[d].is_bounded())
                << role << " buffer " << buf << " is " << verb
                << " at an index with no bound in dimension " << d
                << " (for example an index loaded from a buffer). Clamp the index, e.g. "
                << (func.empty() ? buf : func) << "(clamp(i, 0, n - 1)).";
            std::string k = std::to_string(d);
            Expr mn = simplify(box[d].min), mx = simplify(box[d].max);
            Expr bmin = int_var(buf + ".min." + k), bext = int_var(buf + ".extent." + k);
            // A region touched only inside loops that run no times (or
            // branches never taken) is not touched.
            Expr ok = mx < mn || (bmin <= mn && mx <= bmin + bext - 1);
            if (box.used.defined()) ok = !box.used || ok;
            checks.push_back(AssertStmt::make(
                simplify(ok),
                error_message(
                    {StringImm::make(std::string(role) + " buffer " + buf + " is " + verb +
                                     " over ["),
                     mn, StringImm::make(", "), mx,
                     StringImm::make("] in dimension " + k + ", but it covers only ["), bmin,
                     StringImm::make(", "), bmin + bext - 1,
                     StringImm::make(
                         "]. Pass a larger buffer" +
                         std::string(func.empty() ? "" : " or change the schedule of " + func) +
                         ".")})));
        }
    };
    for (const ParameterPtr &p : inputs) {
        if (!p->is_buffer) continue;
        auto it = read.find(p->name);
        if (it == read.end()) continue;
        check(p->name, "", it->second, "Input", "read");
    }
    for (const FunctionPtr &f : env.outputs) {
        auto it = written.find(f->name);
        if (it == written.end()) continue;
        for (size_t i = 0; i < f->output_types.size(); i++) {
            check(output_buffer_name(f, static_cast<int>(i)), f->name, it->second, "Output",
                  "written");
        }
        auto r = read.find(f->name);
        if (r != read.end()) {
            for (size_t i = 0; i < f->output_types.size(); i++) {
                check(output_buffer_name(f, static_cast<int>(i)), f->name, r->second, "Output",
                      "read");
            }
        }
    }
    checks.push_back(s);
    return Block::make(checks);
}

}  // namespace internal
}  // namespace loom
