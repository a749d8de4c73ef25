// Analyses and checks of the GPU loops a schedule made: their chains, the
// block shape they give a kernel, and the refusals of GPU loops no kernel
// can hold. Lowering runs check_gpu_loops as a pass; GPU passes and the
// CUDA backend use the analyses.
#include "gpu/GPULoops.h"

#include <algorithm>

#include "arith/Simplify.h"
#include "ir/IRVisitor.h"
#include "ir/Util.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

const char *gpu_directive(ForType t) {
    return t == ForType::GPUBlock ? "gpu_blocks" : "gpu_threads";
}

}  // namespace

std::string next_kernel_name(const std::string &prefix, const std::string &loop,
                             std::set<std::string> *taken) {
    const std::string n = prefix + "_" + c_identifier(func_of_loop(loop));
    std::string name = n;
    for (int i = 1; taken->count(name); i++) name = n + "_" + std::to_string(i);
    taken->insert(name);
    return name;
}

bool is_gpu_loop(ForType t) { return t == ForType::GPUBlock || t == ForType::GPUThread; }

/** Each stage's thread loops in a kernel, as "f: 10 x 128 (y, x)", x
 * first: the block is the largest of these in each dimension, so an error
 * about its size names the stage that made it large. */
std::string describe_thread_loops(const Stmt &kernel_body) {
    struct Chains : IRVisitor {
        std::vector<const For *> enclosing;  // thread loops, outermost first
        int thread_loops_seen = 0;
        std::vector<std::string> chains;
        using IRVisitor::visit;
        void visit(const For *op) override {
            if (op->for_type != ForType::GPUThread) return IRVisitor::visit(op);
            const int seen_before = ++thread_loops_seen;
            enclosing.push_back(op);
            IRVisitor::visit(op);
            if (thread_loops_seen == seen_before) record();  // the innermost
            enclosing.pop_back();
        }
        void record() {
            // Loops are named func.sK.var: the vars alone, innermost first.
            std::string extents, vars;
            for (auto l = enclosing.rbegin(); l != enclosing.rend(); ++l) {
                const Expr extent = simplify((*l)->extent);
                const int64_t *n = as_const_int(extent);
                extents += (extents.empty() ? "" : " x ") + (n ? std::to_string(*n) : "?");
                const std::string &name = (*l)->name;
                vars += (vars.empty() ? "" : ", ") + var_of_loop(name);
            }
            std::string d =
                func_of_loop(enclosing.front()->name) + ": " + extents + " (" + vars + ")";
            if (std::find(chains.begin(), chains.end(), d) == chains.end()) chains.push_back(d);
        }
    } c;
    kernel_body.accept(&c);
    std::string all;
    for (const std::string &d : c.chains) all += (all.empty() ? "" : "; ") + d;
    return all;
}

int gpu_loop_chain_depth(const Stmt &s, ForType t) {
    struct Depth : IRVisitor {
        ForType t;
        int depth = 0;
        using IRVisitor::visit;
        void visit(const For *op) override {
            if (op->for_type != t) return IRVisitor::visit(op);
            Depth inner;
            inner.t = t;
            op->body.accept(&inner);
            depth = std::max(depth, inner.depth + 1);
        }
    } d;
    d.t = t;
    s.accept(&d);
    return d.depth;
}

const For *gpu_block_shape(const Stmt &kernel_body, int block[3]) {
    struct Shape : IRVisitor {
        int *block;
        const For *not_constant = nullptr;
        using IRVisitor::visit;
        void visit(const For *op) override {
            if (op->for_type == ForType::GPUThread) {
                const int dim = gpu_loop_chain_depth(op->body, ForType::GPUThread);
                const Expr extent = simplify(op->extent);
                const int64_t *n = as_const_int(extent);
                if ((!n || *n <= 0 || dim > 2) && !not_constant) not_constant = op;
                if (n && dim <= 2) block[dim] = std::max<int>(block[dim], static_cast<int>(*n));
            }
            IRVisitor::visit(op);
        }
    } shape;
    shape.block = block;
    kernel_body.accept(&shape);
    return shape.not_constant;
}

void check_gpu_loops(const Stmt &s, const Target &target, const FuncOrigins &origins) {
    struct Checker : IRVisitor {
        const Target *target;
        const FuncOrigins *origins;
        std::vector<const For *> loops;  // enclosing loops, outermost first
        using IRVisitor::visit;
        void visit(const For *op) override {
            if (is_gpu_loop(op->for_type)) {
                const std::string func = func_of_loop(op->name);
                const std::string named = func_for_message(*origins, func);
                user_assert(target->has_feature(Target::CUDA))
                    << named << " runs its loop " << op->name << " with "
                    << gpu_directive(op->for_type) << ", but the target " << target->to_string()
                    << " has no GPU. Compile for one, e.g. Target(\"host-cuda-sm_90\"), or use "
                       "parallel() for the CPU.";
                bool in_block = false, in_thread = false;
                const For *block_loop = nullptr, *other_stage_threads = nullptr;
                for (const For *l : loops) {
                    user_assert(l->for_type != ForType::Parallel &&
                                l->for_type != ForType::Vectorized)
                        << named << "'s GPU loop " << op->name << " is inside the "
                        << for_type_name(l->for_type) << " loop " << l->name
                        << ": GPU loops must be outside every parallel or vectorized loop. "
                           "Vectorize a loop inside the GPU loops, or reorder() them; note that "
                           "gpu_threads and gpu_blocks name the innermost loop first and "
                           "reorder the loops to match.";
                    if (l->for_type == ForType::GPUBlock) block_loop = l;
                    in_block |= l->for_type == ForType::GPUBlock;
                    in_thread |= l->for_type == ForType::GPUThread;
                    if (l->for_type == ForType::GPUThread &&
                        stage_of_loop(l->name) != stage_of_loop(op->name)) {
                        other_stage_threads = l;
                    }
                }
                user_assert(!(op->for_type == ForType::GPUBlock && block_loop &&
                              stage_of_loop(block_loop->name) != stage_of_loop(op->name)))
                    << named << "'s gpu_blocks loop " << op->name
                    << " is inside the gpu_blocks loop " << block_loop->name << " of Func "
                    << func_of_loop(block_loop->name)
                    << ": a Func computed inside a kernel runs in that kernel's blocks and cannot "
                       "have blocks of its own. Mark its loops with gpu_threads to compute it "
                       "with each block's threads (compute_at("
                    << func_of_loop(block_loop->name) << ", " << var_of_loop(block_loop->name)
                    << ").gpu_threads(x, y)), or compute it at root to give it a kernel of its "
                       "own.";
                // One stage's thread loops nest into the block's dimensions;
                // another's inside them would have to share what each
                // thread of the outer loops computes alone, in storage no
                // other thread can see.
                if (op->for_type == ForType::GPUThread && other_stage_threads) {
                    const For *l = other_stage_threads;
                    user_error << named << "'s gpu_threads loop " << op->name
                               << " is inside the gpu_threads loop " << l->name << " of Func "
                               << func_of_loop(l->name) << ", where each thread computes " << func
                               << " alone: threads cannot share it there. To compute " << func
                               << " with a block's threads, compute it at a block loop"
                               << (block_loop ? " (compute_at(" + func_of_loop(block_loop->name) +
                                                    ", " + var_of_loop(block_loop->name) + "))"
                                              : std::string())
                               << " and mark its loops with gpu_threads, one for each dimension "
                                  "that the consumer's threads split (several rows per block: "
                                  "gpu_threads(ri, y)); or drop "
                               << func << "'s gpu_threads to compute it in each thread.";
                }
                if (op->for_type == ForType::GPUThread) {
                    user_assert(in_block)
                        << named << "'s loop " << op->name
                        << " is a gpu_threads loop with no gpu_blocks loop around it. Threads "
                           "run inside blocks: mark an outer loop with gpu_blocks (gpu_tile "
                           "does both), or compute "
                        << func << " inside another Func's block loop.";
                } else {
                    user_assert(!in_thread)
                        << named << "'s gpu_blocks loop " << op->name
                        << " is inside a gpu_threads loop. Block loops must enclose thread loops.";
                }
                int depth = gpu_loop_chain_depth(Stmt(op), op->for_type);
                user_assert(depth <= 3)
                    << named << " has " << depth << " nested " << gpu_directive(op->for_type)
                    << " loops from " << op->name
                    << "; a CUDA kernel has at most three (x, y, z). Fuse some of them first.";
            }
            loops.push_back(op);
            op->body.accept(this);
            loops.pop_back();
        }
    } checker;
    checker.target = &target;
    checker.origins = &origins;
    s.accept(&checker);
}

}  // namespace internal
}  // namespace loom
