// The lowering pipeline, pass by pass. Each pass lives in its own file; this
// one orders them and adds the checks of the pipeline's arguments.
#include "Lower.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

#include "AlignVectorAccesses.h"
#include "ArgumentChecks.h"
#include "BoundGPUThreadLoops.h"
#include "Bounds.h"
#include "BoundsInference.h"
#include "BufferAliasing.h"
#include "BufferPromises.h"
#include "CSE.h"
#include "CodeGen_CUDA.h"
#include "HoistKernelAllocations.h"
#include "HoistKernelChecks.h"
#include "HoistLoopInvariants.h"
#include "HoistVectorReductions.h"
#include "IRMutator.h"
#include "IRPrinter.h"
#include "IRVisitor.h"
#include "PartitionLoops.h"
#include "ReductionFusion.h"
#include "ScheduleFunctions.h"
#include "Simplify.h"
#include "SkipMaskedTiles.h"
#include "StorageFlattening.h"
#include "Substitute.h"
#include "ThreadOwnedStorage.h"
#include "UnrollLoops.h"
#include "VectorizeLoops.h"
#include "VectorizePointReductions.h"
#include "loom/IROperator.h"
#include "loom/Param.h"

namespace loom {
namespace internal {

namespace {

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }

// When the previous pass ended, for LOOM_DEBUG's per-pass times.
thread_local std::chrono::steady_clock::time_point last_pass_end;

void debug_print(const char *pass, const Stmt &s) {
    // Read on every call (it is cheap) so a program can turn it on at will.
    auto now = std::chrono::steady_clock::now();
    if (std::getenv("LOOM_DEBUG") != nullptr) {
        double ms = std::chrono::duration<double, std::milli>(now - last_pass_end).count();
        std::cerr << "---- after " << pass << " (" << ms << " ms) ----\n" << s << "\n";
    }
    last_pass_end = std::chrono::steady_clock::now();
}

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

/** Replaces each promise_clamped(v, lo, hi) by v: the promise served bounds
 * analysis; code generation needs only the value. */
Stmt strip_promises(const Stmt &s) {
    class Strip : public IRMutator {
      protected:
        using IRMutator::visit;
        Expr visit(const Call *op) override {
            if (op->is_intrinsic(Call::promise_clamped)) return mutate(op->args[0]);
            return IRMutator::visit(op);
        }
    };
    return Strip().mutate(s);
}

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

/** A buffer argument whose innermost dimension is assumed contiguous. */
struct DenseBuffer {
    std::string name;
    int dimensions;
    bool is_input;
};

/** Substitutes stride 1 for the innermost stride of every buffer argument
 * assumed contiguous (so vector accesses are dense), and checks the
 * assumption at run time. */
Stmt assume_dense_innermost(const Stmt &s, const std::vector<DenseBuffer> &buffers) {
    Stmt body = s;
    std::vector<Stmt> checks;
    for (const DenseBuffer &b : buffers) {
        if (b.dimensions == 0) continue;
        std::string k = std::to_string(b.dimensions - 1);
        std::string stride = b.name + ".stride." + k;
        body = substitute(stride, make_one(Int(32)), body);
        std::string advice = b.is_input
                                 ? "Pass a dense buffer, or call allow_strided_innermost() on "
                                   "the BufferParam."
                                 : "Pass a dense output buffer.";
        checks.push_back(AssertStmt::make(
            int_var(stride) == 1,
            error_message(
                {StringImm::make("Buffer " + b.name + " has stride "), int_var(stride),
                 StringImm::make(" in its innermost dimension " + k +
                                 "; Loom expects it to be contiguous (stride 1). " + advice)})));
    }
    checks.push_back(body);
    return Block::make(checks);
}

}  // namespace

LoweringResult lower(const std::vector<FunctionPtr> &outputs, const ScheduleContents &schedule,
                     const Target &target, const std::string &name) {
    user_assert(!outputs.empty()) << "A Pipeline needs at least one output Func.";
    for (const FunctionPtr &f : outputs) {
        user_assert(f && !f->init.values.empty())
            << "The output Func " << (f ? f->name : std::string("?"))
            << " has no definition. Define it before compiling the pipeline.";
    }
    last_pass_end = std::chrono::steady_clock::now();
    const FuncsMadeByLowering made_here;
    LoweringEnv env = make_lowering_env(outputs, schedule);
    auto fusion_start = std::chrono::steady_clock::now();
    fuse_reduction_chains(env, schedule);
    double fusion_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - fusion_start).count();
    if (!schedule.fusions.empty()) {
        env.fusion_log.push_back("reduction fusion (derivation and rewrite) took " +
                                 std::to_string(fusion_seconds * 1000) + " ms");
    }
    if (std::getenv("LOOM_DEBUG") != nullptr) {
        for (const std::string &note : env.fusion_log) std::cerr << note << "\n";
    }

    Stmt s = schedule_functions(env);
    const InPlaceVerdicts in_place = in_place_verdicts(s, env);
    const std::vector<ParameterPtr> params = find_parameters(env.funcs, s);
    const std::vector<ParameterPtr> promising = promising_buffers(params, outputs);
    s = substitute_fixed_sizes(s, promising);
    debug_print("schedule_functions", s);
    check_placement(s, env);
    check_gpu_loops(s, target, env.origins);
    s = skip_masked_tiles(s, env);
    debug_print("skip_masked_tiles", s);

    s = bounds_inference(s, env);
    debug_print("bounds_inference", s);

    LoweringResult result;
    result.notes = env.fusion_log;
    result.fusion_seconds = fusion_seconds;
    // Bounds inference may bring in more: a Param that a bound() gives.
    result.params = find_parameters(env.funcs, s);
    std::stable_sort(
        result.params.begin(), result.params.end(),
        [](const ParameterPtr &a, const ParameterPtr &b) { return a->serial < b->serial; });
    s = add_buffer_checks(s, result.params, env);
    if (!env.schedule_checks.empty()) {
        std::vector<Stmt> checked = env.schedule_checks;
        checked.push_back(s);
        s = Block::make(checked);
    }
    debug_print("add_buffer_checks", s);

    s = strip_promises(s);
    s = bound_gpu_thread_loops(s);
    // Bounds inference brings in buffer sizes that the schedule names
    // (bound(c, 0, in.dim(1).extent())): fixed ones are constants, which
    // per-thread storage must count.
    s = substitute_fixed_sizes(s, promising);
    std::set<std::string> replicated_registers;
    s = privatize_thread_owned_storage(s, env, &replicated_registers);
    debug_print("privatize_thread_owned_storage", s);
    s = storage_flattening(s, env);
    s = substitute_fixed_sizes(s, promising);
    debug_print("storage_flattening", s);
    s = hoist_kernel_allocations(s);
    debug_print("hoist_kernel_allocations", s);

    std::vector<DenseBuffer> dense;
    for (const ParameterPtr &p : result.params) {
        if (p->is_buffer && p->innermost_stride_one)
            dense.push_back({p->name, p->dimensions, true});
    }
    for (const FunctionPtr &out : outputs) {
        for (size_t i = 0; i < out->output_types.size(); i++) {
            dense.push_back({output_buffer_name(out, static_cast<int>(i)),
                             static_cast<int>(out->args.size()), false});
        }
    }
    s = assume_dense_innermost(s, dense);
    s = check_buffer_promises(s, promising);
    s = check_buffer_aliasing(s, result.params, outputs, in_place);
    s = add_argument_checks(s, result.params, outputs);  // first of all checks at run time

    s = simplify(s);
    debug_print("simplify", s);

    s = hoist_kernel_checks(s);
    debug_print("hoist_kernel_checks", s);

    s = hoist_loop_invariants(s);
    debug_print("hoist_loop_invariants", s);

    s = unroll_loops(s);
    debug_print("unroll_loops", s);

    s = partition_loops(s, replicated_registers);
    debug_print("partition_loops", s);

    s = vectorize_point_reductions(s);
    debug_print("vectorize_point_reductions", s);

    s = vectorize_loops(s, target);
    debug_print("vectorize_loops", s);

    s = hoist_vector_reductions(s);
    debug_print("hoist_vector_reductions", s);

    s = simplify(s);
    debug_print("final simplify", s);

    s = common_subexpression_elimination(s);
    debug_print("common_subexpression_elimination", s);

    s = align_vector_accesses(s, promised_congruences(promising));
    debug_print("align_vector_accesses", s);

    LoweredFunc f;
    f.name = name;
    f.body = s;
    f.replicated_registers = replicated_registers;
    for (const auto &[func, fs] : env.schedules) {
        if (fs.gpu_blocks_per_sm > 0) f.gpu_blocks_per_sm[func] = fs.gpu_blocks_per_sm;
    }
    for (const ParameterPtr &p : result.params) {
        LoweredArgument a;
        a.name = p->name;
        a.is_buffer = p->is_buffer;
        a.type = p->type;
        a.dimensions = p->dimensions;
        a.host_alignment = p->host_alignment;
        f.args.push_back(a);
        result.arguments.push_back({p->name,
                                    p->is_buffer ? Argument::InputBuffer : Argument::InputScalar,
                                    p->type, p->dimensions});
    }
    for (const FunctionPtr &out : outputs) {
        for (size_t i = 0; i < out->output_types.size(); i++) {
            LoweredArgument a;
            a.name = output_buffer_name(out, static_cast<int>(i));
            a.is_buffer = true;
            a.is_output = true;
            a.type = out->output_types[i];
            a.dimensions = static_cast<int>(out->args.size());
            if (!out->output_buffers.empty()) {
                a.host_alignment = out->output_buffers[i]->host_alignment;
            }
            f.args.push_back(a);
            result.arguments.push_back({a.name, Argument::OutputBuffer, a.type, a.dimensions});
        }
    }
    result.func = f;
    return result;
}

std::string loop_nest_summary(const Stmt &s) {
    struct Printer : IRVisitor {
        std::ostringstream out;
        int indent = 0;
        using IRVisitor::visit;
        void pad() { out << std::string(indent * 2, ' '); }
        void visit(const For *op) override {
            pad();
            out << for_type_name(op->for_type) << " " << op->name << ":\n";
            indent++;
            op->body.accept(this);
            indent--;
        }
        void visit(const Allocate *op) override {
            pad();
            out << "allocate " << op->name << "\n";
            op->body.accept(this);
        }
        void visit(const ProducerConsumer *op) override {
            if (op->is_producer) {
                pad();
                out << "produce " << op->name << ":\n";
                indent++;
                op->body.accept(this);
                indent--;
            } else {
                op->body.accept(this);
            }
        }
        void visit(const Store *op) override {
            pad();
            out << op->name << "[...] = ...";
            if (op->value.type().is_vector()) out << "  (x" << op->value.type().lanes << ")";
            out << "\n";
        }
    } p;
    s.accept(&p);
    return p.out.str();
}

}  // namespace internal
}  // namespace loom
