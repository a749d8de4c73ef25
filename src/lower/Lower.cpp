// The lowering pipeline, pass by pass. Each pass lives in its own file; this
// one orders them and adds the checks of the pipeline's arguments.
#include "lower/Lower.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "arith/Bounds.h"
#include "arith/CSE.h"
#include "arith/Simplify.h"
#include "fusion/ReductionFusion.h"
#include "gpu/BoundGPUThreadLoops.h"
#include "gpu/GPULoops.h"
#include "gpu/HoistKernelAllocations.h"
#include "gpu/HoistKernelChecks.h"
#include "gpu/LaunchBounds.h"
#include "gpu/LowerGPUKernels.h"
#include "gpu/ThreadOwnedStorage.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"
#include "loom/Param.h"
#include "lower/AddBufferChecks.h"
#include "lower/AlignVectorAccesses.h"
#include "lower/ArgumentChecks.h"
#include "lower/AssumeDenseInnermost.h"
#include "lower/BoundsInference.h"
#include "lower/BufferAliasing.h"
#include "lower/BufferPromises.h"
#include "lower/CheckPlacement.h"
#include "lower/HoistLoopInvariants.h"
#include "lower/HoistVectorReductions.h"
#include "lower/PartitionLoops.h"
#include "lower/ScheduleFunctions.h"
#include "lower/SkipMaskedTiles.h"
#include "lower/StorageFlattening.h"
#include "lower/StripPromises.h"
#include "lower/UnrollLoops.h"
#include "lower/VectorizeLoops.h"
#include "lower/VectorizePointReductions.h"
#include "tile/TranslateToTiles.h"

namespace loom {
namespace internal {

namespace {

/** LOOM_DEBUG's view of lowering: after each step, its name, its time and
 * the IR it left (checks, which change nothing, print their name and time
 * alone). LOOM_DEBUG is read at every step, so a program can turn it on
 * at will. */
class PassLog {
  public:
    PassLog() : last_(std::chrono::steady_clock::now()) {}
    /** Logs the pass that made s, and hands s on. */
    Stmt operator()(const char *pass, Stmt s) {
        if (enabled())
            std::cerr << "---- after " << pass << " (" << ms() << " ms) ----\n" << s << "\n";
        last_ = std::chrono::steady_clock::now();
        return s;
    }
    void check(const char *name) {
        if (enabled()) std::cerr << "---- " << name << " passed (" << ms() << " ms) ----\n";
        last_ = std::chrono::steady_clock::now();
    }
    void notes(const std::vector<std::string> &notes) {
        if (enabled()) {
            for (const std::string &note : notes) std::cerr << note << "\n";
        }
    }

  private:
    static bool enabled() { return std::getenv("LOOM_DEBUG") != nullptr; }
    double ms() const {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - last_)
            .count();
    }
    std::chrono::steady_clock::time_point last_;
};

/** The inputs in argument order: as created. */
std::vector<ParameterPtr> arguments_in_order(std::vector<ParameterPtr> params) {
    std::stable_sort(
        params.begin(), params.end(),
        [](const ParameterPtr &a, const ParameterPtr &b) { return a->serial < b->serial; });
    return params;
}

/** The checks a schedule asked for (bound(), ...) before s. */
Stmt add_schedule_checks(const Stmt &s, const LoweringEnv &env) {
    if (env.schedule_checks.empty()) return s;
    std::vector<Stmt> checked = env.schedule_checks;
    checked.push_back(s);
    return Block::make(checked);
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
    PassLog log;
    const FuncsMadeByLowering made_here;
    LoweringEnv env = make_lowering_env(outputs, schedule);

    // Front end: the schedule's loop nest, its checks, and its bounds.
    auto fusion_start = std::chrono::steady_clock::now();
    fuse_reduction_chains(env, schedule);
    const double fusion_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - fusion_start).count();
    if (!schedule.fusions.empty()) {
        env.fusion_log.push_back("reduction fusion (derivation and rewrite) took " +
                                 std::to_string(fusion_seconds * 1000) + " ms");
    }
    log.notes(env.fusion_log);
    log.check("fuse_reduction_chains");
    Stmt s = schedule_functions(env);
    const InPlaceVerdicts in_place = in_place_verdicts(s, env);
    const std::vector<ParameterPtr> promising =
        promising_buffers(find_parameters(env.funcs, s), outputs);
    s = log("schedule_functions", substitute_fixed_sizes(s, promising));
    check_placement(s, env);
    log.check("check_placement");
    check_gpu_loops(s, target, env.origins);
    log.check("check_gpu_loops");
    s = log("skip_masked_tiles", skip_masked_tiles(s, env));
    s = log("bounds_inference", bounds_inference(s, env));
    // Bounds inference may bring in more inputs: a Param that a bound() gives.
    const std::vector<ParameterPtr> params = arguments_in_order(find_parameters(env.funcs, s));
    s = log("add_buffer_checks", add_schedule_checks(add_buffer_checks(s, params, env), env));
    s = log("translate_tile_programs",
            translate_tile_programs(s, env, target, name, fixed_sizes(promising)));
    s = log("strip_promises", strip_promises(s));

    // Storage: GPU threads' own storage, flat buffers, kernel allocations.
    s = log("bound_gpu_thread_loops", bound_gpu_thread_loops(s));
    // Bounds inference brings in buffer sizes that the schedule names
    // (bound(c, 0, in.dim(1).extent())): fixed ones are constants, which
    // per-thread storage must count.
    s = substitute_fixed_sizes(s, promising);
    s = log("privatize_thread_owned_storage", privatize_thread_owned_storage(s));
    s = log("storage_flattening", substitute_fixed_sizes(storage_flattening(s, env), promising));
    s = log("hoist_kernel_allocations", hoist_kernel_allocations(s));

    // The checks of the arguments at run time (add_argument_checks' come first).
    s = log("assume_dense_innermost", assume_dense_innermost(s, params, outputs));
    s = log("check_buffer_promises", check_buffer_promises(s, promising));
    s = log("check_buffer_aliasing", check_buffer_aliasing(s, params, outputs, in_place));
    s = log("add_argument_checks", add_argument_checks(s, params, outputs));

    // Optimization.
    s = log("simplify", simplify(s));
    s = log("hoist_kernel_checks", hoist_kernel_checks(s));
    s = log("hoist_loop_invariants", hoist_loop_invariants(s));
    s = log("unroll_loops", unroll_loops(s));
    s = log("partition_loops", partition_loops(s));
    s = log("vectorize_point_reductions", vectorize_point_reductions(s));
    s = log("vectorize_loops", vectorize_loops(s, target));
    s = log("hoist_vector_reductions", hoist_vector_reductions(s));
    s = log("final simplify", simplify(s));
    s = log("common_subexpression_elimination", common_subexpression_elimination(s));
    s = log("align_vector_accesses", align_vector_accesses(s, promised_congruences(promising)));

    // GPU kernels: the block's own code, memory and barriers; launch bounds.
    s = log("lower_gpu_kernels", lower_gpu_kernels(s, name));
    s = log("set_gpu_launch_bounds", set_gpu_launch_bounds(s, name, env));

    LoweringResult result;
    result.func = make_lowered_func(name, s, params, outputs);
    result.arguments = public_arguments(result.func);
    result.params = params;
    result.notes = env.fusion_log;
    result.fusion_seconds = fusion_seconds;
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
