// JIT compilation of lowered functions with LLVM's ORC LLJIT.
//
// Each JITModule owns one LLJIT instance holding one module: its code lives
// exactly as long as the JITModule. The symbols compiled code refers to (the
// loom_* runtime, libm, and the libcalls LLVM itself emits) are bound to
// absolute addresses in this process; anything else falls back to a search of
// the process's loaded libraries.
#include "codegen/JITModule.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/Support/SourceMgr.h>

#include <llvm/ExecutionEngine/JITEventListener.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassTimingInfo.h>
#include <llvm/Target/TargetMachine.h>

#include <dlfcn.h>
#include <math.h>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "codegen/CodeGen_LLVM.h"
#include "codegen/JITMemoryManager.h"
#include "gpu/OffloadGPULoops.h"
#include "loom/Error.h"
#include "loom/runtime/loom_runtime.h"

extern "C" {
// src/runtime/loom_half.cpp: the half-precision libcalls of LLVM 14 on x86
// without F16C.
float loom_half_to_float(uint16_t h);
uint16_t loom_float_to_half(float f);
uint16_t loom_double_to_half(double d);
}

namespace loom {
namespace internal {

namespace {

template <typename T> void *addr(T *fn) { return reinterpret_cast<void *>(fn); }

// Name -> address of every function generated code may call directly.
std::vector<std::pair<const char *, void *>> runtime_symbols() {
    using F1 = float (*)(float);
    using D1 = double (*)(double);
    using F2 = float (*)(float, float);
    using D2 = double (*)(double, double);
    using F3 = float (*)(float, float, float);
    using D3 = double (*)(double, double, double);
    return {
        {"loom_error_begin", addr(&loom_error_begin)},
        {"loom_error_append_string", addr(&loom_error_append_string)},
        {"loom_error_append_int", addr(&loom_error_append_int)},
        {"loom_error_append_float", addr(&loom_error_append_float)},
        {"loom_error_end", addr(&loom_error_end)},
        {"loom_last_error_message", addr(&loom_last_error_message)},
        {"loom_set_error_handler", addr(&loom_set_error_handler)},
        {"loom_malloc", addr(&loom_malloc)},
        {"loom_free", addr(&loom_free)},
        {"loom_do_par_for", addr(&loom_do_par_for)},
        {"loom_num_threads", addr(&loom_num_threads)},
        {"loom_device_buffer_for_host", addr(&loom_device_buffer_for_host)},
        {"loom_device_buffer_for_kernel", addr(&loom_device_buffer_for_kernel)},
        {"loom_device_allocate", addr(&loom_device_allocate)},
        {"loom_device_deallocate", addr(&loom_device_deallocate)},
        {"loom_device_launch", addr(&loom_device_launch)},
        {"loom_device_finish", addr(&loom_device_finish)},
        {"loom_type_name", addr(&loom_type_name)},
        {"__gnu_h2f_ieee", addr(&loom_half_to_float)},
        {"__gnu_f2h_ieee", addr(&loom_float_to_half)},
        {"__truncdfhf2", addr(&loom_double_to_half)},
        {"expf", addr(static_cast<F1>(::expf))},
        {"exp", addr(static_cast<D1>(::exp))},
        {"logf", addr(static_cast<F1>(::logf))},
        {"log", addr(static_cast<D1>(::log))},
        {"sinf", addr(static_cast<F1>(::sinf))},
        {"sin", addr(static_cast<D1>(::sin))},
        {"cosf", addr(static_cast<F1>(::cosf))},
        {"cos", addr(static_cast<D1>(::cos))},
        {"tanhf", addr(static_cast<F1>(::tanhf))},
        {"tanh", addr(static_cast<D1>(::tanh))},
        {"erff", addr(static_cast<F1>(::erff))},
        {"erf", addr(static_cast<D1>(::erf))},
        {"sqrtf", addr(static_cast<F1>(::sqrtf))},
        {"sqrt", addr(static_cast<D1>(::sqrt))},
        {"floorf", addr(static_cast<F1>(::floorf))},
        {"floor", addr(static_cast<D1>(::floor))},
        {"ceilf", addr(static_cast<F1>(::ceilf))},
        {"ceil", addr(static_cast<D1>(::ceil))},
        {"rintf", addr(static_cast<F1>(::rintf))},
        {"rint", addr(static_cast<D1>(::rint))},
        {"nearbyintf", addr(static_cast<F1>(::nearbyintf))},
        {"nearbyint", addr(static_cast<D1>(::nearbyint))},
        {"roundevenf", addr(static_cast<F1>(::roundevenf))},
        {"roundeven", addr(static_cast<D1>(::roundeven))},
        {"powf", addr(static_cast<F2>(::powf))},
        {"pow", addr(static_cast<D2>(::pow))},
        {"fmodf", addr(static_cast<F2>(::fmodf))},
        {"fmod", addr(static_cast<D2>(::fmod))},
        {"fmaf", addr(static_cast<F3>(::fmaf))},
        {"fma", addr(static_cast<D3>(::fma))},
        {"memcpy", addr(&::memcpy)},
        {"memmove", addr(&::memmove)},
        {"memset", addr(&::memset)},
    };
}

bool is_reserved_symbol(const std::string &name) {
    for (const auto &s : runtime_symbols()) {
        if (name == s.first) return true;
    }
    return dlsym(RTLD_DEFAULT, name.c_str()) != nullptr;
}

std::string llvm_error_string(llvm::Error e) { return llvm::toString(std::move(e)); }

}  // namespace

struct JITModule::Impl {
    std::unique_ptr<llvm::orc::LLJIT> jit;
    // A GPU pipeline's module state (loom_device_launch's): its modules are
    // unloaded with the code that launches them.
    void **device_module_state = nullptr;
};

JITModule::~JITModule() {
    if (impl_ && impl_->device_module_state) loom_device_release_module(impl_->device_module_state);
}

std::shared_ptr<JITModule> JITModule::compile(const LoweredFunc &f, const Target &t) {
    std::string why;
    if (!host_supports_target(t, &why)) {
        user_error << "Cannot JIT-compile " << f.name << " for target " << t.to_string() << ": "
                   << why << ". Use Target(\"host\") or a target with fewer features.";
    }
    initialize_llvm();

    auto ctx = std::make_unique<llvm::LLVMContext>();
    std::unique_ptr<llvm::Module> m = codegen_llvm(f, t, *ctx);
    // A pipeline named like a symbol its code may call (e.g. "pow", or
    // "memset" for a loop LLVM turns into one) would call itself: give the
    // JIT's copy of the entry another name.
    std::string entry_name = f.name;
    if (is_reserved_symbol(entry_name)) {
        entry_name += ".loom_entry";
        m->getFunction(f.name)->setName(entry_name);
    }
    const std::string state_name = device_module_state_name(f.name);
    const bool has_gpu_code = m->getNamedGlobal(state_name) != nullptr;
    std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(t);
    optimize_module(*m, *tm, t);

    std::shared_ptr<JITModule> result(new JITModule());
    result->llvm_ir_ = module_to_llvm_ir(*m);
    result->target_ = t;

    llvm::orc::JITTargetMachineBuilder jtmb(tm->getTargetTriple());
    jtmb.setCPU(llvm_cpu_name(t));
    jtmb.addFeatures(std::vector<std::string>{llvm_feature_string(t)});
    jtmb.setRelocationModel(llvm::Reloc::PIC_);
    jtmb.setCodeModel(llvm::CodeModel::Small);
    jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
    jtmb.getOptions().AllowFPOpFusion = llvm::FPOpFusion::Standard;

    llvm::orc::LLJITBuilder builder;
    builder.setJITTargetMachineBuilder(std::move(jtmb));
    // Each object in one mapping (JITMemoryManager.h): small-code-model code
    // reaches its constants PC-relative. LOOM_PERF_JIT=1 also describes the
    // compiled code to `perf` (jit-<pid>.dump files for `perf inject --jit`),
    // so profiles name the pipelines' code.
    builder.setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession &es, const llvm::Triple &) {
        auto layer =
            std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(es, make_jit_memory_manager);
        if (std::getenv("LOOM_PERF_JIT") != nullptr) {
            if (llvm::JITEventListener *perf = llvm::JITEventListener::createPerfJITEventListener())
                layer->registerJITEventListener(*perf);
        }
        return layer;
    });
    auto jit = builder.create();
    if (!jit)
        internal_error << "Could not create the LLVM JIT: " << llvm_error_string(jit.takeError());
    llvm::orc::LLJIT &J = **jit;

    llvm::orc::SymbolMap symbols;
    for (const auto &s : runtime_symbols()) {
        symbols[J.mangleAndIntern(s.first)] = llvm::JITEvaluatedSymbol(
            llvm::pointerToJITTargetAddress(s.second),
            llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
    }
    if (llvm::Error e =
            J.getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols)))) {
        internal_error << "Could not define the Loom runtime symbols: "
                       << llvm_error_string(std::move(e));
    }
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        J.getDataLayout().getGlobalPrefix());
    if (!gen)
        internal_error << "Could not search the process for symbols: "
                       << llvm_error_string(gen.takeError());
    J.getMainJITDylib().addGenerator(std::move(*gen));

    m->setDataLayout(J.getDataLayout());
    if (llvm::Error e = J.addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx)))) {
        internal_error << "Could not add the module of " << f.name
                       << " to the JIT: " << llvm_error_string(std::move(e));
    }
    take_jit_memory_failure();
    auto sym = J.lookup(entry_name);
    if (!sym) {
        const std::string memory = take_jit_memory_failure();
        internal_error << "JIT compilation of " << f.name
                       << " failed: " << llvm_error_string(sym.takeError())
                       << (memory.empty() ? "" : " (" + memory + ")");
    }
    // With LOOM_LLVM_ARGS=-time-passes, report this module's pass timings
    // (LLVM would otherwise print them only at exit, if at all).
    if (llvm::TimePassesIsEnabled) llvm::reportAndResetTimings(&llvm::errs());
    result->entry_ = reinterpret_cast<Entry>(static_cast<uintptr_t>(sym->getAddress()));
    result->impl_ = std::make_unique<Impl>();
    if (has_gpu_code) {
        auto state = J.lookup(state_name);
        if (!state) {
            internal_error << "The JIT lost " << state_name << ": "
                           << llvm_error_string(state.takeError());
        }
        result->impl_->device_module_state =
            reinterpret_cast<void **>(static_cast<uintptr_t>(state->getAddress()));
    }
    result->impl_->jit = std::move(*jit);
    return result;
}

const std::string &JITModule::assembly() const {
    std::call_once(assembly_once_, [this] {
        llvm::LLVMContext ctx;
        llvm::SMDiagnostic err;
        std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(llvm_ir_, err, ctx);
        internal_assert(m) << "Could not re-read the module's LLVM IR: " << err.getMessage().str();
        std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(target_);
        assembly_ = module_to_assembly(*m, *tm);
    });
    return assembly_;
}

}  // namespace internal
}  // namespace loom
