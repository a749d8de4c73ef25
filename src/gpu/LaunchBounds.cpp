// Launch bounds on the kernels' loops (see the header).
#include "gpu/LaunchBounds.h"

#include <algorithm>
#include <map>
#include <set>

#include "gpu/GPULoops.h"
#include "ir/IRMutator.h"
#include "ir/Util.h"
#include "loom/Error.h"

namespace loom {
namespace internal {

namespace {

class SetLaunchBounds : public IRMutator {
  public:
    SetLaunchBounds(const std::string &prefix, const std::map<std::string, int> &asked)
        : prefix(prefix), asked(asked) {}

    /** Whether s has a kernel: a gpu_blocks nest or a tile program's. */
    bool has_kernels = false;
    /** The Funcs whose blocks per SM a kernel took. */
    std::set<std::string> used;

  protected:
    using IRMutator::visit;

    Stmt visit(const TileKernel *op) override {
        has_kernels = true;
        return op;
    }

    Stmt visit(const For *op) override {
        if (op->for_type != ForType::GPUBlock) return IRMutator::visit(op);
        has_kernels = true;
        // Named in the order the backend names them, every kernel counting.
        const std::string kernel = next_kernel_name(prefix, op->name, &kernel_names);
        const std::string func = func_of_loop(op->name);
        auto it = asked.find(func);
        if (it == asked.end()) return op;
        const int blocks_per_sm = it->second;
        used.insert(func);
        int block[3] = {1, 1, 1};
        const int threads = gpu_block_shape(Stmt(op), block) == nullptr
                                ? block[0] * block[1] * block[2]
                                : 0;  // refused by the backend, which names the loop
        // (A block of more than 1024 threads is refused by the backend, with
        // its own message, whatever it asks of an SM.)
        user_assert(threads > 1024 || blocks_per_sm * threads <= 2048)
            << "gpu_blocks_per_sm(" << blocks_per_sm << ") on Func " << func << ": kernel "
            << kernel << " has " << threads << " threads per block, and " << blocks_per_sm
            << " blocks of them are " << blocks_per_sm * threads
            << " threads, more than the 2048 an SM holds. Ask for at most "
            << std::max(1, 2048 / threads) << ".";
        LoopAttributes attributes = op->attributes;
        attributes.gpu_blocks_per_sm = blocks_per_sm;
        return For::make(op->name, op->min, op->extent, op->for_type, op->body, attributes);
    }

  private:
    const std::string prefix;
    const std::map<std::string, int> &asked;
    std::set<std::string> kernel_names;
};

}  // namespace

Stmt set_gpu_launch_bounds(const Stmt &s, const std::string &pipeline_name,
                           const LoweringEnv &env) {
    std::map<std::string, int> asked;
    for (const auto &[func, fs] : env.schedules) {
        if (fs.gpu_blocks_per_sm > 0) asked[func] = fs.gpu_blocks_per_sm;
    }
    if (asked.empty()) return s;
    SetLaunchBounds set(pipeline_name, asked);
    Stmt result = set.mutate(s);
    // A pipeline with no kernel (its GPU schedule's other Funcs on the CPU)
    // has no launch for the count to bound.
    if (set.has_kernels) {
        for (const auto &[func, blocks] : asked) {
            user_assert(set.used.count(func))
                << "gpu_blocks_per_sm(" << blocks << ") on Func " << func
                << ", but no GPU kernel's blocks are its loops. Give it to the Func whose "
                   "gpu_blocks loops make the kernel (the consumer it is computed at).";
        }
    }
    return result;
}

}  // namespace internal
}  // namespace loom
