// Compiles a LoweredFunc to machine code in this process (LLVM ORC JIT), and
// keeps it alive while anything holds the module.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "loom/Target.h"
#include "lower/LoweredFunc.h"

namespace loom {
namespace internal {

class JITModule {
  public:
    using Entry = int32_t (*)(void **args);

    /** Generates LLVM IR for f, optimizes it for the target and JIT-compiles
     * it. Throws CompileError if the target cannot run on this machine. */
    static std::shared_ptr<JITModule> compile(const LoweredFunc &f, const Target &t);

    Entry entry() const { return entry_; }
    /** The optimized LLVM IR and the target assembly of the module, for
     * inspection (tests check vector instructions this way). */
    const std::string &llvm_ir() const { return llvm_ir_; }
    /** Generated on first request (from the optimized IR), since running
     * LLVM's code generator a second time would double every compile. */
    const std::string &assembly() const;

    ~JITModule();

  private:
    JITModule() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    Entry entry_ = nullptr;
    Target target_;
    std::string llvm_ir_;
    mutable std::once_flag assembly_once_;
    mutable std::string assembly_;
};

}  // namespace internal
}  // namespace loom
