// LLVM IR generation for the flat loop IR. See CodeGen_LLVM.h for the
// semantics the generated code implements.
#include "codegen/CodeGen_LLVM.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/PassTimingInfo.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/StandardInstrumentations.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#include "arith/Bounds.h"
#include "gpu/OffloadGPULoops.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/Scope.h"
#include "ir/Util.h"
#include "loom/Error.h"
#include "loom/IROperator.h"
#include "loom/runtime/loom_runtime.h"

namespace loom {
namespace internal {

using llvm::BasicBlock;
using llvm::Value;

namespace {

const char *const kTriple = "x86_64-unknown-linux-gnu";

// Sizes of stack allocations: anything larger goes to the heap unless the
// schedule asked for the stack explicitly.
constexpr int64_t kMaxStackAllocation = 16 * 1024;

bool is_math_intrinsic(const Call *op, std::string *fn, int *bits) {
    if (op->call_type != Call::PureIntrinsic) return false;
    const std::string &n = op->name;
    if (n.size() < 5) return false;
    std::string suffix = n.substr(n.size() - 4);
    if (suffix != "_f32" && suffix != "_f64") return false;
    *fn = n.substr(0, n.size() - 4);
    *bits = suffix == "_f32" ? 32 : 64;
    return true;
}

// Every buffer and allocation name the function loads from or stores to: each
// gets its own alias scope.
class CollectMemoryNames : public IRVisitor {
  public:
    std::set<std::string> names;
    using IRVisitor::visit;
    void visit(const Load *op) override {
        names.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        names.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Allocate *op) override {
        names.insert(op->name);
        IRVisitor::visit(op);
    }
};

// The buffer and allocation names a statement stores to.
class CollectStoredNames : public IRVisitor {
  public:
    std::set<std::string> names;
    using IRVisitor::visit;
    void visit(const Store *op) override {
        names.insert(op->name);
        IRVisitor::visit(op);
    }
};

// Names a statement may read from the enclosing scope: variables, and the
// buffers and allocations it loads from or stores to.
class CollectUsedNames : public IRVisitor {
  public:
    std::set<std::string> names;
    using IRVisitor::visit;
    void visit(const Variable *op) override { names.insert(op->name); }
    void visit(const Load *op) override {
        names.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        names.insert(op->name);
        IRVisitor::visit(op);
    }
};

// Whether a statement contains vector code: then Loom has already
// vectorized it (vectorize_loops) and LLVM's loop vectorizer has nothing to
// add.
class ContainsVectorCode : public IRVisitor {
  public:
    bool found = false;
    using IRVisitor::visit;
    void visit(const Ramp *) override { found = true; }
    void visit(const Broadcast *) override { found = true; }
    void visit(const Load *op) override {
        if (op->type.is_vector()) found = true;
        if (!found) IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        if (op->value.type().is_vector()) found = true;
        if (!found) IRVisitor::visit(op);
    }
};

class CodeGen_LLVM : public IRVisitor {
  public:
    CodeGen_LLVM(const Target &t, llvm::LLVMContext &c, bool portable)
        : target(t), portable(portable), ctx(c) {
        i1_t = llvm::Type::getInt1Ty(ctx);
        i8_t = llvm::Type::getInt8Ty(ctx);
        i16_t = llvm::Type::getInt16Ty(ctx);
        i32_t = llvm::Type::getInt32Ty(ctx);
        i64_t = llvm::Type::getInt64Ty(ctx);
        f16_t = llvm::Type::getHalfTy(ctx);
        f32_t = llvm::Type::getFloatTy(ctx);
        f64_t = llvm::Type::getDoubleTy(ctx);
        void_t = llvm::Type::getVoidTy(ctx);
        i8ptr_t = i8_t->getPointerTo();
        dim_t = llvm::StructType::create(ctx, {i32_t, i32_t, i32_t, i32_t}, "loom_dimension_t");
        // Matches loom_buffer_t in loom_runtime.h field by field.
        buffer_t = llvm::StructType::create(
            ctx,
            {i64_t, i8ptr_t, i8ptr_t, i64_t, llvm::StructType::get(ctx, {i8_t, i8_t, i16_t}), i32_t,
             dim_t->getPointerTo(), i8ptr_t},
            "loom_buffer_t");
    }

    std::unique_ptr<llvm::Module> compile(const LoweredFunc &f,
                                          const std::vector<HostGlobal> &globals) {
        module = std::make_unique<llvm::Module>(f.name, ctx);
        module->setTargetTriple(kTriple);
        builder = std::make_unique<llvm::IRBuilder<>>(ctx);
        func_name = f.name;

        setup_alias_scopes(f.body);
        for (const HostGlobal &g : globals) symbols.push(g.name, define_global(g));

        llvm::FunctionType *ft = llvm::FunctionType::get(i32_t, {i8ptr_t->getPointerTo()}, false);
        function =
            llvm::Function::Create(ft, llvm::Function::ExternalLinkage, f.name, module.get());
        set_function_attributes(function);
        function->addParamAttr(0, llvm::Attribute::NoAlias);
        function->addParamAttr(0, llvm::Attribute::NoCapture);
        function->addParamAttr(0, llvm::Attribute::ReadOnly);
        Value *args = function->getArg(0);
        args->setName("args");
        BasicBlock *entry = BasicBlock::Create(ctx, "entry", function);
        builder->SetInsertPoint(entry);

        // Stand-ins read instead of a null descriptor, or instead of a dim
        // array of the wrong length, so that unpacking never touches memory
        // the caller did not give us; the argument checks at the top of the
        // body (ArgumentChecks.h) then report the mistake.
        int max_dims = 0;
        for (const LoweredArgument &a : f.args) max_dims = std::max(max_dims, a.dimensions);
        Value *zero_buffer = nullptr, *zero_dims = nullptr;
        for (const LoweredArgument &a : f.args) {
            if (!a.is_buffer || zero_buffer) continue;
            zero_buffer = entry_alloca(buffer_t, "zero_buffer", 8);
            builder->CreateStore(llvm::Constant::getNullValue(buffer_t), zero_buffer);
            if (max_dims > 0) {
                llvm::Type *arr = llvm::ArrayType::get(dim_t, max_dims);
                Value *z = entry_alloca(arr, "zero_dims", 8);
                builder->CreateStore(llvm::Constant::getNullValue(arr), z);
                zero_dims = builder->CreateBitCast(z, dim_t->getPointerTo());
            }
        }

        for (size_t i = 0; i < f.args.size(); i++) {
            const LoweredArgument &a = f.args[i];
            Value *slot = builder->CreateGEP(i8ptr_t, args, builder->getInt64(i));
            Value *p = builder->CreateAlignedLoad(i8ptr_t, slot, llvm::Align(8), a.name + ".arg");
            if (a.is_buffer) {
                Value *given = builder->CreateBitCast(p, buffer_t->getPointerTo());
                Value *is_null = builder->CreateIsNull(given, a.name + ".is_null");
                Value *b = builder->CreateSelect(is_null, zero_buffer, given);
                auto field = [&](llvm::Type *t, std::vector<unsigned> path, unsigned align,
                                 const std::string &name) {
                    std::vector<Value *> idx{builder->getInt32(0)};
                    for (unsigned k : path) idx.push_back(builder->getInt32(k));
                    Value *ptr = builder->CreateInBoundsGEP(buffer_t, b, idx);
                    return builder->CreateAlignedLoad(t, ptr, llvm::Align(align), name);
                };
                Value *host = field(i8ptr_t, {2}, 8, a.name);
                Value *code = field(i8_t, {4, 0}, 1, a.name + ".type.code");
                Value *bits = field(i8_t, {4, 1}, 1, a.name + ".type.bits");
                Value *lanes = field(i16_t, {4, 2}, 2, a.name + ".type.lanes");
                Value *ndims = field(i32_t, {5}, 4, a.name + ".dimensions");
                Value *dims = field(dim_t->getPointerTo(), {6}, 8, a.name + ".dim");
                symbols.push(a.name, host);
                symbols.push(a.name + ".buffer", p);
                symbols.push(a.name + ".is_null", is_null);
                // The views of the CPU code, which uses the buffer's host
                // memory: a pass that moves the buffer's uses elsewhere (to
                // a GPU kernel) rebinds these.
                Value *no_host = builder->CreateIsNull(host);
                Value *device = field(i64_t, {0}, 8, a.name + ".device");
                Value *has_device = builder->CreateICmpNE(device, builder->getInt64(0));
                symbols.push(a.name + ".host_is_null", no_host);
                symbols.push(a.name + ".gpu_memory_alone", builder->CreateAnd(no_host, has_device));
                // The address whose alignment a promise is checked on.
                symbols.push(a.name + ".host_address", builder->CreatePtrToInt(host, i64_t));
                // Both memories, for the checks that buffers do not overlap.
                symbols.push(a.name + ".host_pointer", builder->CreatePtrToInt(host, i64_t));
                symbols.push(a.name + ".device_pointer", device);
                symbols.push(a.name + ".flags", field(i64_t, {3}, 8, a.name + ".flags"));
                buffer_descriptors[a.name] = b;
                symbols.push(a.name + ".type.code", builder->CreateZExt(code, i32_t));
                symbols.push(a.name + ".type.bits", builder->CreateZExt(bits, i32_t));
                symbols.push(a.name + ".type.lanes", builder->CreateZExt(lanes, i32_t));
                symbols.push(a.name + ".dimensions", ndims);
                symbols.push(a.name + ".dim_is_null", builder->CreateIsNull(dims));
                if (a.dimensions > 0) {
                    Value *dims_ok = builder->CreateAnd(
                        builder->CreateICmpEQ(ndims, builder->getInt32(a.dimensions)),
                        builder->CreateIsNotNull(dims));
                    dims = builder->CreateSelect(dims_ok, dims, zero_dims);
                }
                static const char *fields[] = {"min", "extent", "stride"};
                for (int k = 0; k < a.dimensions; k++) {
                    Value *d = builder->CreateGEP(dim_t, dims, builder->getInt32(k));
                    for (int j = 0; j < 3; j++) {
                        std::string n = a.name + "." + fields[j] + "." + std::to_string(k);
                        Value *v = builder->CreateAlignedLoad(
                            i32_t, builder->CreateStructGEP(dim_t, d, j), llvm::Align(4), n);
                        symbols.push(n, v);
                    }
                }
            } else {
                llvm::Type *st = storage_type(a.type);
                Value *v =
                    builder->CreateAlignedLoad(st, builder->CreateBitCast(p, st->getPointerTo()),
                                               llvm::Align(std::max(1, a.type.bytes())), a.name);
                if (a.type.is_bool()) v = builder->CreateICmpNE(v, llvm::ConstantInt::get(st, 0));
                symbols.push(a.name, v);
            }
        }

        if (f.body.defined()) codegen(f.body);

        // What this code wrote is newer than a GPU copy of it.
        CollectStoredNames stored;
        if (f.body.defined()) f.body.accept(&stored);
        for (const LoweredArgument &a : f.args) {
            if (a.is_buffer && stored.names.count(a.name)) {
                Value *b = buffer_descriptors[a.name];
                Value *device = load_buffer_field(b, i64_t, 0);
                emit_if_rarely(
                    builder->CreateICmpNE(device, builder->getInt64(0)), a.name + ".host_written",
                    [&] {
                        Value *flags = load_buffer_field(b, i64_t, 3);
                        builder->CreateStore(
                            builder->CreateOr(flags, builder->getInt64(loom_buffer_host_dirty)),
                            builder->CreateStructGEP(buffer_t, b, 3));
                    });
            }
        }
        builder->CreateRet(builder->getInt32(0));

        std::string err;
        llvm::raw_string_ostream es(err);
        if (llvm::verifyModule(*module, &es)) {
            es.flush();
            internal_error << "LLVM IR generated for " << f.name << " is invalid: " << err;
        }
        return std::move(module);
    }

  private:
    Target target;
    bool portable;
    llvm::LLVMContext &ctx;
    std::unique_ptr<llvm::Module> module;
    std::unique_ptr<llvm::IRBuilder<>> builder;
    std::string func_name;
    llvm::Function *function = nullptr;
    Value *value = nullptr;
    Scope<Value *> symbols;
    // Heap allocations live at the current point of the current function: an
    // error return must free them.
    std::vector<Value *> heap_allocations;
    // The LetStmts around the statement being compiled, outermost first.
    std::vector<std::pair<std::string, Expr>> enclosing_lets;
    int closure_count = 0;

    // The calls an error return makes at the current point (on_error), after
    // freeing the heap allocations, innermost last.
    std::vector<Expr> error_cleanups;
    // Each buffer argument's descriptor (a stand-in when the caller passed
    // null).
    std::map<std::string, Value *> buffer_descriptors;

    llvm::Type *i1_t, *i8_t, *i16_t, *i32_t, *i64_t, *f16_t, *f32_t, *f64_t, *void_t, *i8ptr_t;
    llvm::StructType *dim_t, *buffer_t;

    std::map<std::string, llvm::MDNode *> alias_scope, noalias_set;

    // ---------------------------------------------------------------- types

    llvm::Type *llvm_type(Type t) {
        llvm::Type *s;
        if (t.is_bfloat()) s = i16_t;
        else if (t.code == Type::Float) {
            s = t.bits == 16 ? f16_t : t.bits == 32 ? f32_t : f64_t;
            internal_assert(t.bits == 16 || t.bits == 32 || t.bits == 64)
                << "float type with " << (int)t.bits << " bits";
        } else if (t.is_handle()) s = i8ptr_t;
        else s = llvm::IntegerType::get(ctx, t.bits);
        return t.lanes > 1 ? llvm::FixedVectorType::get(s, t.lanes) : s;
    }
    // Bools are bytes in memory.
    llvm::Type *storage_type(Type t) {
        if (t.is_bool()) return llvm_type(UInt(8, t.lanes));
        return llvm_type(t);
    }

    llvm::Constant *const_int(Type t, int64_t v) {
        return llvm::ConstantInt::get(llvm_type(t), static_cast<uint64_t>(v), true);
    }
    llvm::Constant *const_float(llvm::Type *t, double v) { return llvm::ConstantFP::get(t, v); }
    // A constant of LLVM type t (i32 or vector of i32, etc.) splatted.
    llvm::Constant *splat_int(llvm::Type *t, int64_t v) {
        return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true);
    }

    void set_function_attributes(llvm::Function *fn) {
        fn->addFnAttr("target-cpu", llvm_cpu_name(target, portable));
        fn->addFnAttr("target-features", llvm_feature_string(target, portable));
        if (portable) fn->addFnAttr("tune-cpu", llvm_tune_cpu_name(target));
        fn->addFnAttr(llvm::Attribute::NoUnwind);
        if (target.has_feature(Target::AVX512)) {
            // Without these, LLVM's Skylake-style tuning splits 512-bit vectors
            // into two 256-bit halves; an AVX-512 target asked for zmm.
            fn->addFnAttr("min-legal-vector-width", "512");
            fn->addFnAttr("prefer-vector-width", "512");
        }
    }

    // ---------------------------------------------------------- alias scopes

    void setup_alias_scopes(const Stmt &body) {
        if (!body.defined()) return;
        CollectMemoryNames c;
        body.accept(&c);
        llvm::MDBuilder mdb(ctx);
        llvm::MDNode *domain = mdb.createAnonymousAliasScopeDomain("loom." + func_name);
        for (const auto &n : c.names) alias_scope[n] = mdb.createAnonymousAliasScope(domain, n);
        for (const auto &n : c.names) {
            std::vector<llvm::Metadata *> others;
            for (const auto &kv : alias_scope) {
                if (kv.first != n) others.push_back(kv.second);
            }
            noalias_set[n] = llvm::MDNode::get(ctx, others);
        }
    }

    void add_alias_info(Value *inst, const std::string &name) {
        auto *i = llvm::dyn_cast<llvm::Instruction>(inst);
        if (!i) return;
        auto it = alias_scope.find(name);
        if (it == alias_scope.end()) return;
        i->setMetadata(llvm::LLVMContext::MD_alias_scope, llvm::MDNode::get(ctx, {it->second}));
        i->setMetadata(llvm::LLVMContext::MD_noalias, noalias_set[name]);
    }

    // -------------------------------------------------------------- helpers

    Value *codegen(const Expr &e) {
        internal_assert(e.defined()) << "codegen of an undefined Expr";
        value = nullptr;
        e.accept(this);
        internal_assert(value) << "codegen produced no value for an expression";
        return value;
    }
    void codegen(const Stmt &s) {
        if (!s.defined()) return;
        s.accept(this);
    }

    llvm::FunctionCallee runtime_fn(const char *name, llvm::Type *ret,
                                    std::vector<llvm::Type *> args) {
        return module->getOrInsertFunction(name, llvm::FunctionType::get(ret, args, false));
    }

    llvm::AllocaInst *entry_alloca(llvm::Type *t, const std::string &name, unsigned align) {
        BasicBlock &entry = function->getEntryBlock();
        llvm::IRBuilder<> b(&entry, entry.begin());
        llvm::AllocaInst *a = b.CreateAlloca(t, nullptr, name);
        a->setAlignment(llvm::Align(align));
        return a;
    }

    Value *splat(Value *v, int lanes) {
        if (lanes <= 1) return v;
        return builder->CreateVectorSplat(lanes, v);
    }

    int lanes_of(Value *v) {
        if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType()))
            return vt->getNumElements();
        return 1;
    }

    // bfloat16 (as i16) <-> float32.
    Value *bf16_to_f32(Value *v) {
        int lanes = lanes_of(v);
        llvm::Type *i32v =
            lanes > 1 ? (llvm::Type *)llvm::FixedVectorType::get(i32_t, lanes) : i32_t;
        llvm::Type *f32v =
            lanes > 1 ? (llvm::Type *)llvm::FixedVectorType::get(f32_t, lanes) : f32_t;
        Value *w = builder->CreateZExt(v, i32v);
        w = builder->CreateShl(w, splat_int(i32v, 16));
        return builder->CreateBitCast(w, f32v);
    }
    Value *f32_to_bf16(Value *v) {
        int lanes = lanes_of(v);
        llvm::Type *i32v =
            lanes > 1 ? (llvm::Type *)llvm::FixedVectorType::get(i32_t, lanes) : i32_t;
        llvm::Type *i16v =
            lanes > 1 ? (llvm::Type *)llvm::FixedVectorType::get(i16_t, lanes) : i16_t;
        Value *bits = builder->CreateBitCast(v, i32v);
        Value *is_nan = builder->CreateFCmpUNO(v, v);
        Value *hi = builder->CreateLShr(bits, splat_int(i32v, 16));
        // Round to nearest even: add 0x7fff plus the lowest kept bit.
        Value *rounding =
            builder->CreateAdd(splat_int(i32v, 0x7fff), builder->CreateAnd(hi, splat_int(i32v, 1)));
        Value *rounded =
            builder->CreateLShr(builder->CreateAdd(bits, rounding), splat_int(i32v, 16));
        Value *quiet_nan = builder->CreateOr(hi, splat_int(i32v, 0x40));
        Value *r = builder->CreateSelect(is_nan, quiet_nan, rounded);
        return builder->CreateTrunc(r, i16v);
    }

    // ---------------------------------------------------------------- casts

    Value *cast_value(Value *v, Type from, Type to) {
        if (from == to) return v;
        int lanes = to.lanes;
        Type f32 = Float(32, lanes);
        if (from.is_handle() || to.is_handle()) {
            if (from.is_handle() && to.is_handle()) return v;
            if (from.is_handle()) return builder->CreatePtrToInt(v, llvm_type(to));
            return builder->CreateIntToPtr(cast_value(v, from, UInt(64, lanes)), llvm_type(to));
        }
        // 16-bit floats convert through float32.
        if (from.is_bfloat()) {
            return cast_value(bf16_to_f32(v), f32, to);
        }
        if (to.is_bfloat()) {
            return f32_to_bf16(cast_value(v, from, f32));
        }
        if (from.is_float() && from.bits == 16 && to != f32) {
            return cast_value(builder->CreateFPExt(v, llvm_type(f32)), f32, to);
        }
        if (to.is_float() && to.bits == 16 && from != f32) {
            return builder->CreateFPTrunc(cast_value(v, from, f32), llvm_type(to));
        }
        llvm::Type *dst = llvm_type(to);
        if (to.is_bool()) {
            if (from.is_float()) {
                return freeze_float_result(
                    builder->CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0)));
            }
            return builder->CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
        }
        if (from.is_float() && to.is_float()) {
            return to.bits > from.bits ? builder->CreateFPExt(v, dst)
                                       : builder->CreateFPTrunc(v, dst);
        }
        if (from.is_float()) {
            // C semantics: truncate toward zero. Out-of-range values are
            // poison in LLVM; freeze keeps that from spreading.
            Value *r = to.is_int() ? builder->CreateFPToSI(v, dst) : builder->CreateFPToUI(v, dst);
            return builder->CreateFreeze(r);
        }
        if (to.is_float()) {
            return from.is_int() ? builder->CreateSIToFP(v, dst) : builder->CreateUIToFP(v, dst);
        }
        // int <-> int
        if (to.bits > from.bits) {
            return from.is_int() ? builder->CreateSExt(v, dst) : builder->CreateZExt(v, dst);
        }
        if (to.bits < from.bits) return builder->CreateTrunc(v, dst);
        return v;
    }

    // -------------------------------------------------- arithmetic helpers

    enum class BinOp { Add, Sub, Mul, Div, Mod, Min, Max, EQ, NE, LT, LE, GT, GE, And, Or };

    // With Target::FastMath, float arithmetic written by the user may be
    // reassociated and contracted into fused multiply-adds, as Halide allows
    // by default: without it LLVM can neither vectorize a serial float
    // reduction (a sum over an RDom runs one scalar add per element, bound by
    // the add's latency) nor fuse a * b + c. A division by a constant may
    // become a multiplication by the reciprocal. Only float32/float64: half
    // arithmetic rounds every operation. The expansions of exp, log, tanh and
    // friends build their instructions without these flags: they rely on
    // exact rounding steps.
    bool relaxed_float_ok = true;
    Value *relaxed(Value *v, bool constant_divisor = false) {
        if (!relaxed_float_ok || !target.has_feature(Target::FastMath)) return v;
        auto *inst = llvm::dyn_cast<llvm::Instruction>(v);
        if (!inst || !llvm::isa<llvm::FPMathOperator>(inst)) return v;
        llvm::Type *st = inst->getType()->getScalarType();
        if (!st->isFloatTy() && !st->isDoubleTy()) return v;
        llvm::FastMathFlags f;
        f.setAllowReassoc();
        f.setAllowContract(true);
        if (constant_divisor) f.setAllowReciprocal();
        inst->setFastMathFlags(f);
        return v;
    }

    // Float min and max under Target::FastMath also get nnan and nsz: LLVM
    // 14 vectorizes a min/max reduction (a row maximum) only with both, and
    // otherwise runs it one scalar maxnum per element. The price is that a
    // NaN operand gives an unspecified result (poison) instead of fmin/fmax's
    // "NaN is ignored"; fast_math's users accept non-IEEE float semantics.
    // Poison must not reach control flow or an address: see
    // freeze_float_result.
    Value *relaxed_min_max(Value *v) {
        if (!relaxed_float_ok || !target.has_feature(Target::FastMath)) return v;
        relaxed(v);
        auto *inst = llvm::dyn_cast<llvm::Instruction>(v);
        if (!inst || !llvm::isa<llvm::FPMathOperator>(inst)) return v;
        llvm::Type *st = inst->getType()->getScalarType();
        if (!st->isFloatTy() && !st->isDoubleTy()) return v;
        inst->setHasNoNaNs(true);
        inst->setHasNoSignedZeros(true);
        return v;
    }

    // With Target::FastMath a float value may be poison (relaxed_min_max).
    // Where a float becomes a non-float (a comparison, a cast to bool, a
    // reinterpret; float-to-int casts always freeze) the result is frozen to
    // some fixed value, so that a branch on it or an index computed from it
    // is never undefined behaviour: indices are integers, and every integer
    // derived from a float passes through one of these points. Bounds checks
    // and guards compare integers only, so a frozen arbitrary value can
    // produce a wrong result but never an access out of bounds.
    Value *freeze_float_result(Value *v) {
        if (!target.has_feature(Target::FastMath)) return v;
        return builder->CreateFreeze(v);
    }

    // a op b for LLVM values of Loom type t (the operand type).
    Value *binop(BinOp op, Type t, Value *a, Value *b) {
        if (t.is_float() && op == BinOp::Mod) {
            // Each step rounded, as the interpreter does: no contraction here.
            bool saved = relaxed_float_ok;
            relaxed_float_ok = false;
            struct Restore {
                bool &flag, value;
                ~Restore() { flag = value; }
            } restore{relaxed_float_ok, saved};
            // a - b * floor(a / b), each step rounded to t (as the interpreter does).
            Value *q = binop(BinOp::Div, t, a, b);
            if (t.is_bfloat()) {
                q = f32_to_bf16(
                    builder->CreateUnaryIntrinsic(llvm::Intrinsic::floor, bf16_to_f32(q)));
            } else {
                q = builder->CreateUnaryIntrinsic(llvm::Intrinsic::floor, q);
            }
            return binop(BinOp::Sub, t, a, binop(BinOp::Mul, t, b, q));
        }
        if (t.is_bfloat() && op != BinOp::And && op != BinOp::Or) {
            Type f = Float(32, t.lanes);
            Value *r = binop(op, f, bf16_to_f32(a), bf16_to_f32(b));
            if (op >= BinOp::EQ) return r;  // a comparison
            return f32_to_bf16(r);
        }
        bool fl = t.is_float();
        bool sg = t.is_int();
        switch (op) {
        case BinOp::Add: return fl ? relaxed(builder->CreateFAdd(a, b)) : builder->CreateAdd(a, b);
        case BinOp::Sub: return fl ? relaxed(builder->CreateFSub(a, b)) : builder->CreateSub(a, b);
        case BinOp::Mul: return fl ? relaxed(builder->CreateFMul(a, b)) : builder->CreateMul(a, b);
        case BinOp::Div:
            return fl ? relaxed(builder->CreateFDiv(a, b), llvm::isa<llvm::Constant>(b))
                      : int_div(t, a, b, nullptr);
        case BinOp::Mod: return int_mod(t, a, b, nullptr);
        case BinOp::Min: {
            // Floats: C's fmin (a NaN operand is ignored), like the
            // interpreter; with fast_math, see relaxed_min_max.
            if (fl)
                return relaxed_min_max(
                    builder->CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a, b));
            Value *c = sg ? builder->CreateICmpSLT(a, b) : builder->CreateICmpULT(a, b);
            return builder->CreateSelect(c, a, b);
        }
        case BinOp::Max: {
            if (fl)
                return relaxed_min_max(
                    builder->CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a, b));
            Value *c = sg ? builder->CreateICmpSGT(a, b) : builder->CreateICmpUGT(a, b);
            return builder->CreateSelect(c, a, b);
        }
        case BinOp::EQ:
            return fl ? freeze_float_result(builder->CreateFCmpOEQ(a, b))
                      : builder->CreateICmpEQ(a, b);
        case BinOp::NE:
            return fl ? freeze_float_result(builder->CreateFCmpUNE(a, b))
                      : builder->CreateICmpNE(a, b);
        case BinOp::LT:
            return fl   ? freeze_float_result(builder->CreateFCmpOLT(a, b))
                   : sg ? builder->CreateICmpSLT(a, b)
                        : builder->CreateICmpULT(a, b);
        case BinOp::LE:
            return fl   ? freeze_float_result(builder->CreateFCmpOLE(a, b))
                   : sg ? builder->CreateICmpSLE(a, b)
                        : builder->CreateICmpULE(a, b);
        case BinOp::GT:
            return fl   ? freeze_float_result(builder->CreateFCmpOGT(a, b))
                   : sg ? builder->CreateICmpSGT(a, b)
                        : builder->CreateICmpUGT(a, b);
        case BinOp::GE:
            return fl   ? freeze_float_result(builder->CreateFCmpOGE(a, b))
                   : sg ? builder->CreateICmpSGE(a, b)
                        : builder->CreateICmpUGE(a, b);
        case BinOp::And: return builder->CreateAnd(a, b);
        case BinOp::Or: return builder->CreateOr(a, b);
        }
        return nullptr;
    }

    // If e is a constant integer (or broadcast of one), its value.
    static bool const_divisor(const Expr &e, int64_t *v) {
        if (!e.defined()) return false;
        if (const int64_t *i = as_const_int(e)) {
            *v = *i;
            return true;
        }
        if (const uint64_t *u = as_const_uint(e)) {
            if (*u > static_cast<uint64_t>(INT64_MAX)) return false;
            *v = static_cast<int64_t>(*u);
            return true;
        }
        return false;
    }
    static int log2_exact(int64_t v) {
        if (v <= 0 || (v & (v - 1))) return -1;
        int k = 0;
        while ((int64_t(1) << k) != v) k++;
        return k;
    }

    // Floor division with a zero divisor giving 0. b_expr, if given, is the
    // IR of the divisor, used to spot constant divisors.
    Value *int_div(Type t, Value *a, Value *b, const Expr *b_expr) {
        llvm::Type *lt = a->getType();
        int64_t c;
        if (b_expr && const_divisor(*b_expr, &c) && c > 0) {
            int k = log2_exact(c);
            if (k >= 0) {
                if (k == 0) return a;
                return t.is_int() ? builder->CreateAShr(a, splat_int(lt, k))
                                  : builder->CreateLShr(a, splat_int(lt, k));
            }
            if (t.is_uint()) return builder->CreateUDiv(a, b);
            // Floor division by a positive constant: flip negative numerators
            // to ~a >= 0, divide unsigned, flip back. No sdiv fixups needed.
            Value *s = builder->CreateAShr(a, splat_int(lt, t.bits - 1));
            Value *q = builder->CreateUDiv(builder->CreateXor(a, s), b);
            return builder->CreateXor(q, s);
        }
        Value *zero = llvm::Constant::getNullValue(lt);
        Value *one = splat_int(lt, 1);
        Value *b_zero = builder->CreateICmpEQ(b, zero);
        if (t.is_uint()) {
            Value *b_safe = builder->CreateSelect(b_zero, one, b);
            Value *q = builder->CreateUDiv(a, b_safe);
            return builder->CreateSelect(b_zero, zero, q);
        }
        // Signed: neither b == 0 nor b == -1 (INT_MIN / -1 overflows) reaches sdiv.
        Value *b_m1 = builder->CreateICmpEQ(b, llvm::Constant::getAllOnesValue(lt));
        Value *b_safe = builder->CreateSelect(builder->CreateOr(b_zero, b_m1), one, b);
        Value *q = builder->CreateSDiv(a, b_safe);
        Value *r = builder->CreateSRem(a, b_safe);
        // Round toward -inf: when the remainder is nonzero and its sign differs
        // from the divisor's, step the quotient down.
        Value *adj = builder->CreateAnd(builder->CreateICmpNE(r, zero),
                                        builder->CreateICmpSLT(builder->CreateXor(r, b), zero));
        q = builder->CreateSub(q, builder->CreateZExt(adj, lt));
        q = builder->CreateSelect(b_m1, builder->CreateSub(zero, a), q);
        return builder->CreateSelect(b_zero, zero, q);
    }

    Value *int_mod(Type t, Value *a, Value *b, const Expr *b_expr) {
        llvm::Type *lt = a->getType();
        int64_t c;
        if (b_expr && const_divisor(*b_expr, &c) && c > 0) {
            int k = log2_exact(c);
            if (k >= 0) return builder->CreateAnd(a, splat_int(lt, c - 1));
            if (t.is_uint()) return builder->CreateURem(a, b);
            Value *q = int_div(t, a, b, b_expr);
            return builder->CreateSub(a, builder->CreateMul(q, b));
        }
        Value *zero = llvm::Constant::getNullValue(lt);
        Value *one = splat_int(lt, 1);
        Value *b_zero = builder->CreateICmpEQ(b, zero);
        if (t.is_uint()) {
            Value *b_safe = builder->CreateSelect(b_zero, one, b);
            return builder->CreateURem(a, b_safe);  // x % 1 == 0, as required for b == 0
        }
        Value *b_m1 = builder->CreateICmpEQ(b, llvm::Constant::getAllOnesValue(lt));
        Value *b_safe = builder->CreateSelect(builder->CreateOr(b_zero, b_m1), one, b);
        Value *r = builder->CreateSRem(a, b_safe);
        Value *adj = builder->CreateAnd(builder->CreateICmpNE(r, zero),
                                        builder->CreateICmpSLT(builder->CreateXor(r, b), zero));
        return builder->CreateAdd(r, builder->CreateSelect(adj, b, zero));
    }

    // ------------------------------------------------------ expression nodes

    using IRVisitor::visit;

    void visit(const IntImm *op) override { value = const_int(op->type, op->value); }
    void visit(const UIntImm *op) override {
        value = llvm::ConstantInt::get(llvm_type(op->type), op->value, false);
    }
    void visit(const FloatImm *op) override {
        if (op->type.is_bfloat()) {
            value = llvm::ConstantInt::get(i16_t, bfloat16_t(static_cast<float>(op->value)).bits);
        } else {
            value = const_float(llvm_type(op->type), op->value);
        }
    }
    void visit(const StringImm *op) override {
        value = builder->CreateGlobalStringPtr(op->value, "str", 0, module.get());
    }
    void visit(const Cast *op) override {
        Value *v = codegen(op->value);
        value = cast_value(v, op->value.type(), op->type);
    }
    void visit(const Reinterpret *op) override {
        Value *v = codegen(op->value);
        Type from = op->value.type(), to = op->type;
        llvm::Type *dst = llvm_type(to);
        if (from.is_handle() && !to.is_handle()) value = builder->CreatePtrToInt(v, dst);
        else if (!from.is_handle() && to.is_handle()) value = builder->CreateIntToPtr(v, dst);
        else if (from.is_float() && !to.is_float())
            value = freeze_float_result(builder->CreateBitCast(v, dst));
        else value = builder->CreateBitCast(v, dst);
    }
    void visit(const Variable *op) override {
        const Value *const *v = symbols.find(op->name);
        if (!v) internal_error << "Codegen: symbol \"" << op->name << "\" is not defined here";
        value = const_cast<Value *>(*v);
    }

    void visit_bin(BinOp o, const Expr &a, const Expr &b) {
        Value *va = codegen(a);
        Value *vb = codegen(b);
        value = binop(o, a.type(), va, vb);
    }
    void visit(const Add *op) override { visit_bin(BinOp::Add, op->a, op->b); }
    void visit(const Sub *op) override { visit_bin(BinOp::Sub, op->a, op->b); }
    void visit(const Mul *op) override { visit_bin(BinOp::Mul, op->a, op->b); }
    void visit(const Div *op) override {
        if (op->type.is_float()) return visit_bin(BinOp::Div, op->a, op->b);
        Value *a = codegen(op->a), *b = codegen(op->b);
        value = int_div(op->type, a, b, &op->b);
    }
    void visit(const Mod *op) override {
        if (op->type.is_float()) return visit_bin(BinOp::Mod, op->a, op->b);
        Value *a = codegen(op->a), *b = codegen(op->b);
        value = int_mod(op->type, a, b, &op->b);
    }
    void visit(const Min *op) override { visit_bin(BinOp::Min, op->a, op->b); }
    void visit(const Max *op) override { visit_bin(BinOp::Max, op->a, op->b); }
    void visit(const EQ *op) override { visit_bin(BinOp::EQ, op->a, op->b); }
    void visit(const NE *op) override { visit_bin(BinOp::NE, op->a, op->b); }
    void visit(const LT *op) override { visit_bin(BinOp::LT, op->a, op->b); }
    void visit(const LE *op) override { visit_bin(BinOp::LE, op->a, op->b); }
    void visit(const GT *op) override { visit_bin(BinOp::GT, op->a, op->b); }
    void visit(const GE *op) override { visit_bin(BinOp::GE, op->a, op->b); }
    void visit(const And *op) override { visit_bin(BinOp::And, op->a, op->b); }
    void visit(const Or *op) override { visit_bin(BinOp::Or, op->a, op->b); }
    void visit(const Not *op) override { value = builder->CreateNot(codegen(op->a)); }

    void visit(const Select *op) override {
        Value *c = codegen(op->condition);
        Value *t = codegen(op->true_value);
        Value *f = codegen(op->false_value);
        value = builder->CreateSelect(c, t, f);
    }

    // The typed pointer to element 0 of buffer or allocation `name`.
    Value *buffer_pointer(const std::string &name, Type elem) {
        const Value *const *p = symbols.find(name);
        if (!p)
            internal_error << "Codegen: buffer or allocation \"" << name
                           << "\" is not defined here";
        return builder->CreateBitCast(const_cast<Value *>(*p), storage_type(elem)->getPointerTo());
    }

    static bool is_const_stride(const Expr &index, int64_t *stride, Expr *base) {
        const Ramp *r = index.as<Ramp>();
        if (!r) return false;
        const int64_t *s = as_const_int(r->stride);
        if (!s) return false;
        *stride = *s;
        *base = r->base;
        return true;
    }

    // A scalar element index, computed in 64 bits: sums, differences and
    // products are done in i64 from sign-extended leaves. Every in-bounds
    // index and its terms fit in 32 bits (the argument and allocation checks
    // guarantee it), so this is the value the i32 arithmetic would give; but
    // LLVM's induction-variable analysis can see through i64 sums of extended
    // values, where the extension of an i32 sum (which might wrap) blocks it.
    // Strength reduction then finds the pointer increments, instead of
    // rebuilding every address from 32-bit pieces (and it is much faster).
    Value *codegen_index(const Expr &e) {
        if (e.type() != Int(32)) return codegen(e);
        if (const IntImm *imm = e.as<IntImm>()) return builder->getInt64(imm->value);
        if (const Add *op = e.as<Add>())
            return builder->CreateAdd(codegen_index(op->a), codegen_index(op->b));
        if (const Sub *op = e.as<Sub>())
            return builder->CreateSub(codegen_index(op->a), codegen_index(op->b));
        if (const Mul *op = e.as<Mul>())
            return builder->CreateMul(codegen_index(op->a), codegen_index(op->b));
        Value *v = codegen(e);
        auto it = index_of_let.find(v);
        return it != index_of_let.end() ? it->second : sign_extend_to_64(v);
    }

    // The i64 form of an int32 let whose value is index arithmetic, keyed by
    // the let's i32 value. Without it, an index written through a let
    // (t = i - lo; f[t * n + c]) and the same index written out
    // (f[(i - lo) * n + c]) become sext(i - lo) and sext(i) - sext(lo),
    // which LLVM cannot prove equal: a load and a store of one accumulator
    // then look like two addresses, and the accumulator is not promoted to a
    // register.
    std::map<Value *, Value *> index_of_let;
    void note_index_let(const Expr &value, Value *v) {
        if (value.type() != Int(32)) return;
        if (!value.as<Add>() && !value.as<Sub>() && !value.as<Mul>()) return;
        // Only a value this let just emitted: its uses are all in the let's
        // body, which the i64 form (emitted here) dominates. A folded value
        // (a constant, an operand) may be used elsewhere.
        auto *inst = llvm::dyn_cast<llvm::Instruction>(v);
        if (!inst || inst->getParent() != builder->GetInsertBlock() ||
            inst != &inst->getParent()->back())
            return;
        index_of_let[v] = codegen_index(value);
    }

    // v as i64, extended once per value: right after its definition (or at
    // the function's entry for arguments), where it dominates every use of
    // v. Unrolled bodies use the same let variables in hundreds of indices.
    std::map<Value *, Value *> extended_to_64;
    Value *sign_extend_to_64(Value *v) {
        if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(v))
            return builder->getInt64(c->getSExtValue());
        auto it = extended_to_64.find(v);
        if (it != extended_to_64.end()) return it->second;
        llvm::IRBuilderBase::InsertPointGuard guard(*builder);
        if (auto *inst = llvm::dyn_cast<llvm::Instruction>(v)) {
            if (llvm::isa<llvm::PHINode>(inst)) {
                builder->SetInsertPoint(inst->getParent(),
                                        inst->getParent()->getFirstInsertionPt());
            } else if (llvm::Instruction *after = inst->getNextNode()) {
                builder->SetInsertPoint(after);
            } else {
                builder->SetInsertPoint(inst->getParent());  // v was just emitted: append
            }
        } else if (llvm::isa<llvm::Argument>(v)) {
            llvm::BasicBlock &entry = builder->GetInsertBlock()->getParent()->getEntryBlock();
            builder->SetInsertPoint(&entry, entry.getFirstInsertionPt());
        } else {
            return builder->CreateSExt(v, i64_t);  // (restored insertion point)
        }
        Value *x = builder->CreateSExt(v, i64_t, v->getName() + ".i64");
        extended_to_64[v] = x;
        return x;
    }

    void visit(const Load *op) override {
        Type t = op->type;
        Type et = t.element_of();
        llvm::Type *st = storage_type(et);
        unsigned align = std::max(1, et.bytes());
        Value *ptr = buffer_pointer(op->name, et);
        bool all_true = is_const_one(op->predicate);
        Value *result = nullptr;
        int64_t stride = 0;
        Expr base;
        if (t.is_scalar()) {
            Value *idx = codegen_index(op->index);
            Value *addr = builder->CreateGEP(st, ptr, idx);
            if (all_true) {
                result = builder->CreateAlignedLoad(st, addr, llvm::Align(align));
                add_alias_info(result, op->name);
            } else {
                // A scalar predicated load: branch around it.
                Value *pred = codegen(op->predicate);
                BasicBlock *pre = builder->GetInsertBlock();
                BasicBlock *do_load = BasicBlock::Create(ctx, "pred_load", function);
                BasicBlock *after = BasicBlock::Create(ctx, "pred_load_after", function);
                builder->CreateCondBr(pred, do_load, after);
                builder->SetInsertPoint(do_load);
                Value *l = builder->CreateAlignedLoad(st, addr, llvm::Align(align));
                add_alias_info(l, op->name);
                builder->CreateBr(after);
                builder->SetInsertPoint(after);
                llvm::PHINode *phi = builder->CreatePHI(st, 2);
                phi->addIncoming(llvm::UndefValue::get(st), pre);
                phi->addIncoming(l, do_load);
                result = phi;
            }
        } else {
            llvm::Type *vt = storage_type(t);
            if (is_const_stride(op->index, &stride, &base) &&
                (stride == 1 || (stride == -1 && all_true))) {
                Value *b = codegen_index(base);
                if (stride == -1) {
                    b = builder->CreateSub(b, llvm::ConstantInt::get(b->getType(), t.lanes - 1));
                }
                Value *addr =
                    builder->CreateBitCast(builder->CreateGEP(st, ptr, b), vt->getPointerTo());
                if (all_true) {
                    result = builder->CreateAlignedLoad(vt, addr, llvm::Align(align));
                } else {
                    Value *mask = codegen(op->predicate);
                    result = builder->CreateMaskedLoad(vt, addr, llvm::Align(align), mask,
                                                       llvm::UndefValue::get(vt));
                }
                add_alias_info(result, op->name);
                if (stride == -1) {
                    std::vector<int> rev;
                    for (int i = t.lanes - 1; i >= 0; i--) rev.push_back(i);
                    result = builder->CreateShuffleVector(result, result, rev);
                }
            } else if (const Broadcast *bc = op->index.as<Broadcast>(); bc && all_true) {
                Value *idx = codegen_index(bc->value);
                Value *l = builder->CreateAlignedLoad(st, builder->CreateGEP(st, ptr, idx),
                                                      llvm::Align(align));
                add_alias_info(l, op->name);
                result = splat(l, t.lanes);
            } else if (const Ramp *r = op->index.as<Ramp>(); r && all_true) {
                // A strided load: one scalar load per lane at base + i *
                // stride, as Halide emits it. Each address is a pointer
                // increment; x86's vgather is no faster than the loads it
                // stands for, and much slower where the microcode mitigates
                // Gather Data Sampling (and under contention).
                Value *base = codegen_index(r->base), *stride = codegen_index(r->stride);
                Value *lane_ptr = builder->CreateGEP(st, ptr, base);
                Value *v = llvm::UndefValue::get(vt);
                for (int i = 0; i < t.lanes; i++) {
                    if (i > 0) lane_ptr = builder->CreateGEP(st, lane_ptr, stride);
                    llvm::LoadInst *l =
                        builder->CreateAlignedLoad(st, lane_ptr, llvm::Align(align));
                    add_alias_info(l, op->name);
                    v = builder->CreateInsertElement(v, l, (uint64_t)i);
                }
                result = v;
            } else {
                Value *idx = codegen(op->index);
                Value *ptrs = builder->CreateGEP(st, ptr, idx);
                Value *mask = all_true ? nullptr : codegen(op->predicate);
                result = builder->CreateMaskedGather(vt, ptrs, llvm::Align(align), mask,
                                                     llvm::UndefValue::get(vt));
                add_alias_info(result, op->name);
            }
        }
        if (t.is_bool())
            result = builder->CreateICmpNE(result, llvm::Constant::getNullValue(result->getType()));
        value = result;
    }

    void visit(const Ramp *op) override {
        Value *b = codegen(op->base);
        Value *s = codegen(op->stride);
        Type et = op->base.type();
        std::vector<llvm::Constant *> steps;
        for (int i = 0; i < op->lanes; i++) {
            if (et.is_float()) steps.push_back(llvm::ConstantFP::get(llvm_type(et), i));
            else steps.push_back(llvm::ConstantInt::get(llvm_type(et), i));
        }
        Value *vsteps = llvm::ConstantVector::get(steps);
        Value *vb = splat(b, op->lanes), *vs = splat(s, op->lanes);
        value = binop(BinOp::Add, op->type, vb, binop(BinOp::Mul, op->type, vs, vsteps));
    }

    void visit(const Broadcast *op) override { value = splat(codegen(op->value), op->lanes); }

    void visit(const VectorReduce *op) override {
        Value *v = codegen(op->value);
        Type in = op->value.type();
        int out_lanes = op->type.lanes;
        int factor = in.lanes / out_lanes;
        BinOp bop = BinOp::Add;
        switch (op->op) {
        case VectorReduce::Add: bop = BinOp::Add; break;
        case VectorReduce::Mul: bop = BinOp::Mul; break;
        case VectorReduce::Min: bop = BinOp::Min; break;
        case VectorReduce::Max: bop = BinOp::Max; break;
        case VectorReduce::And: bop = BinOp::And; break;
        case VectorReduce::Or: bop = BinOp::Or; break;
        }
        int lanes = in.lanes;
        // Output lane j reduces input lanes [j*factor, (j+1)*factor).
        if (out_lanes == 1) {
            // Fold halves together: maps to good shuffles on x86.
            while (lanes > 1 && lanes % 2 == 0) {
                int h = lanes / 2;
                std::vector<int> lo, hi;
                for (int i = 0; i < h; i++) {
                    lo.push_back(i);
                    hi.push_back(i + h);
                }
                Value *a = builder->CreateShuffleVector(v, v, lo);
                Value *b = builder->CreateShuffleVector(v, v, hi);
                if (h == 1) {
                    a = builder->CreateExtractElement(v, uint64_t(0));
                    b = builder->CreateExtractElement(v, uint64_t(1));
                }
                v = binop(bop, in.with_lanes(h), a, b);
                lanes = h;
            }
            if (lanes > 1) {
                Value *acc = builder->CreateExtractElement(v, uint64_t(0));
                for (int i = 1; i < lanes; i++) {
                    acc = binop(bop, in.element_of(), acc,
                                builder->CreateExtractElement(v, uint64_t(i)));
                }
                v = acc;
            }
            value = v;
            return;
        }
        while (factor % 2 == 0) {
            // Pairs of neighbours: groups stay contiguous.
            std::vector<int> even, odd;
            for (int i = 0; i < lanes / 2; i++) {
                even.push_back(2 * i);
                odd.push_back(2 * i + 1);
            }
            v = binop(bop, in.with_lanes(lanes / 2), builder->CreateShuffleVector(v, v, even),
                      builder->CreateShuffleVector(v, v, odd));
            lanes /= 2;
            factor /= 2;
        }
        if (factor > 1) {
            auto strided = [&](int k) {
                std::vector<int> idx;
                for (int j = 0; j < out_lanes; j++) idx.push_back(j * factor + k);
                return builder->CreateShuffleVector(v, v, idx);
            };
            Value *acc = strided(0);
            for (int k = 1; k < factor; k++) acc = binop(bop, op->type, acc, strided(k));
            v = acc;
        }
        value = v;
    }

    // Names a fresh instruction after the Let that binds it (readable IR);
    // values that already have a name (loop variables, other lets) keep it.
    static void name_value(Value *v, const std::string &name) {
        if (llvm::isa<llvm::Instruction>(v) && !v->hasName()) v->setName(name);
    }

    void visit(const Let *op) override {
        Value *v = codegen(op->value);
        name_value(v, op->name);
        note_index_let(op->value, v);
        ScopedBinding<Value *> bind(symbols, op->name, v);
        value = codegen(op->body);
    }

    // ------------------------------------------------------------ math

    // y = fmuladd(a, b, c): fused where the target has FMA.
    Value *fma(Value *a, Value *b, Value *c) {
        return builder->CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, b, c});
    }

    // exp for float32 (scalar or vector), inline so that it vectorizes: Cody-
    // Waite range reduction x = n ln2 + r, a degree-6 polynomial (Cephes'
    // expf coefficients) for e^r, then the scaling by 2^n, done so that
    // results that overflow become inf and subnormal results stay right. Max
    // relative error ~1e-7 over the normal range; NaN gives NaN.
    Value *fast_exp_f32(Value *x) {
        llvm::Type *ft = x->getType();
        int lanes = lanes_of(x);
        llvm::Type *it = lanes > 1 ? (llvm::Type *)llvm::FixedVectorType::get(i32_t, lanes) : i32_t;
        auto C = [&](double v) { return llvm::ConstantFP::get(ft, v); };
        // Clamped to where e^x is neither 0 nor inf in float, NaN kept.
        Value *xc = builder->CreateSelect(builder->CreateFCmpOLT(x, C(-104.0)), C(-104.0), x);
        xc = builder->CreateSelect(builder->CreateFCmpOGT(xc, C(89.0)), C(89.0), xc);
        Value *t = builder->CreateFMul(xc, C(1.44269504088896341));
        // AVX-512 rounds (vrndscaleps) and scales by 2^n (vscalefps, exact,
        // subnormals included) in one instruction each, with NaN flowing
        // through as a value: 18 instructions where the portable path needs
        // 27.
        const bool avx512 = target.has_feature(Target::AVX512);
        Value *n;
        if (avx512) {
            n = builder->CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, t);
        } else {
            // Round to nearest even with the 1.5 * 2^23 trick (|t| < 2^22):
            // works on any SSE level, unlike roundps.
            Value *magic = C(12582912.0);
            n = builder->CreateFSub(builder->CreateFAdd(t, magic), magic);
        }
        Value *r = fma(n, C(-0.693359375), xc);
        r = fma(n, C(2.12194440e-4), r);
        Value *p = C(1.9875691500e-4);
        p = fma(p, r, C(1.3981999507e-3));
        p = fma(p, r, C(8.3334519073e-3));
        p = fma(p, r, C(4.1665795894e-2));
        p = fma(p, r, C(1.6666665459e-1));
        p = fma(p, r, C(5.0000001201e-1));
        Value *r2 = builder->CreateFMul(r, r);
        p = fma(p, r2, r);
        p = builder->CreateFAdd(p, C(1.0));
        if (avx512) return scale_by_power_of_two(p, n);
        // 2^n as two factors 2^(n - n/2) * 2^(n/2), each a normal float for
        // n in [-150, 128].
        Value *ni = builder->CreateFPToSI(n, it);
        Value *n1 = builder->CreateAShr(ni, splat_int(it, 1));
        Value *n2 = builder->CreateSub(ni, n1);
        auto pow2 = [&](Value *k) {
            Value *bits =
                builder->CreateShl(builder->CreateAdd(k, splat_int(it, 127)), splat_int(it, 23));
            return builder->CreateBitCast(bits, ft);
        };
        Value *res = builder->CreateFMul(builder->CreateFMul(p, pow2(n1)), pow2(n2));
        // fptosi of NaN is poison in LLVM: choose NaN explicitly.
        return builder->CreateSelect(builder->CreateFCmpUNO(x, x), x, res);
    }

    // p * 2^floor(n) for float32 p and n of any lane count, with AVX-512's
    // vscalefps (which exists for 4, 8 and 16 lanes): other lane counts are
    // padded with undefined lanes and cut into pieces of those sizes.
    Value *scale_by_power_of_two(Value *p, Value *n) {
        const int lanes = lanes_of(p);
        const int piece = lanes <= 4 ? 4 : lanes <= 8 ? 8 : 16;
        const int padded = (lanes + piece - 1) / piece * piece;
        auto widen = [&](Value *v) {
            if (lanes == 1) {
                llvm::Type *vt = llvm::FixedVectorType::get(f32_t, padded);
                return builder->CreateInsertElement(llvm::UndefValue::get(vt), v, (uint64_t)0);
            }
            std::vector<int> mask(padded, -1);
            for (int i = 0; i < lanes; i++) mask[i] = i;
            return padded == lanes ? v : builder->CreateShuffleVector(v, mask);
        };
        Value *pw = widen(p), *nw = widen(n);
        llvm::Intrinsic::ID id = piece == 4   ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_128
                                 : piece == 8 ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_256
                                              : llvm::Intrinsic::x86_avx512_mask_scalef_ps_512;
        llvm::Function *fn = llvm::Intrinsic::getDeclaration(module.get(), id);
        llvm::Type *piece_t = llvm::FixedVectorType::get(f32_t, piece);
        std::vector<Value *> pieces;
        for (int base = 0; base < padded; base += piece) {
            auto slice = [&](Value *v) -> Value * {
                if (padded == piece) return v;
                std::vector<int> mask(piece);
                for (int i = 0; i < piece; i++) mask[i] = base + i;
                return builder->CreateShuffleVector(v, mask);
            };
            std::vector<Value *> args = {
                slice(pw), slice(nw), llvm::UndefValue::get(piece_t),
                llvm::ConstantInt::get(piece == 16 ? i16_t : i8_t, -1, true)};
            // The 512-bit form takes a rounding mode: 4 is "current direction".
            if (piece == 16) args.push_back(llvm::ConstantInt::get(i32_t, 4));
            pieces.push_back(builder->CreateCall(fn, args));
        }
        // Concatenate the pieces, then drop the padding.
        while (pieces.size() > 1) {
            std::vector<Value *> joined;
            for (size_t i = 0; i + 1 < pieces.size(); i += 2) {
                int w = lanes_of(pieces[i]);
                std::vector<int> mask(2 * w);
                for (int k = 0; k < 2 * w; k++) mask[k] = k;
                joined.push_back(builder->CreateShuffleVector(pieces[i], pieces[i + 1], mask));
            }
            if (pieces.size() % 2) {
                // An odd piece out: pad it to the width of the others.
                Value *last = pieces.back();
                int w = lanes_of(last), target_w = lanes_of(joined.back());
                std::vector<int> mask(target_w, -1);
                for (int k = 0; k < w; k++) mask[k] = k;
                joined.push_back(builder->CreateShuffleVector(last, mask));
            }
            pieces.swap(joined);
        }
        Value *res = pieces[0];
        if (lanes == 1) return builder->CreateExtractElement(res, (uint64_t)0);
        if (lanes_of(res) == lanes) return res;
        std::vector<int> mask(lanes);
        for (int i = 0; i < lanes; i++) mask[i] = i;
        return builder->CreateShuffleVector(res, mask);
    }

    // tanh for float32, inline so that it vectorizes: Cephes' odd polynomial
    // for |x| < 0.625, else 1 - 2 / (e^{2|x|} + 1) with the sign of x (no
    // cancellation there, as tanh >= 0.55). Max relative error ~1.5e-7.
    Value *fast_tanh_f32(Value *x) {
        llvm::Type *ft = x->getType();
        auto C = [&](double v) { return llvm::ConstantFP::get(ft, v); };
        Value *ax = builder->CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
        Value *z = builder->CreateFMul(x, x);
        Value *p = C(-5.70498872745e-3);
        p = fma(p, z, C(2.06390887954e-2));
        p = fma(p, z, C(-5.37397155531e-2));
        p = fma(p, z, C(1.33314422036e-1));
        p = fma(p, z, C(-3.33332819422e-1));
        Value *small = fma(builder->CreateFMul(p, z), x, x);
        Value *e = fast_exp_f32(builder->CreateFAdd(ax, ax));
        Value *big = builder->CreateFSub(
            C(1.0), builder->CreateFDiv(C(2.0), builder->CreateFAdd(e, C(1.0))));
        Value *r = builder->CreateSelect(builder->CreateFCmpOLT(ax, C(0.625)), small, big);
        // tanh is odd; this also keeps the sign of -0 (which the polynomial loses).
        return builder->CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
    }

    // log for float32, inline so that it vectorizes (Cephes logf): split x
    // into 2^e * m with m in [sqrt(1/2), sqrt(2)), a degree-9 polynomial in
    // m - 1, and e * ln2 added in two parts. Subnormal inputs are scaled by
    // 2^23 first. Max relative error ~1e-7.
    Value *fast_log_f32(Value *x) {
        llvm::Type *ft = x->getType();
        int lanes = lanes_of(x);
        llvm::Type *it = lanes > 1 ? (llvm::Type *)llvm::FixedVectorType::get(i32_t, lanes) : i32_t;
        auto C = [&](double v) { return llvm::ConstantFP::get(ft, v); };
        auto I = [&](int64_t v) { return splat_int(it, v); };
        Value *sub = builder->CreateFCmpOLT(x, C(1.17549435e-38));
        Value *xs = builder->CreateSelect(sub, builder->CreateFMul(x, C(8388608.0)), x);
        Value *b = builder->CreateBitCast(xs, it);
        Value *e =
            builder->CreateSub(builder->CreateAnd(builder->CreateLShr(b, I(23)), I(0xff)), I(126));
        e = builder->CreateSelect(sub, builder->CreateSub(e, I(23)), e);
        Value *m = builder->CreateBitCast(
            builder->CreateOr(builder->CreateAnd(b, I(0x807fffff)), I(0x3f000000)), ft);
        Value *lo = builder->CreateFCmpOLT(m, C(0.707106781186547524));
        Value *fe =
            builder->CreateSIToFP(builder->CreateSelect(lo, builder->CreateSub(e, I(1)), e), ft);
        Value *xr =
            builder->CreateSelect(lo, builder->CreateFSub(builder->CreateFAdd(m, m), C(1.0)),
                                  builder->CreateFSub(m, C(1.0)));
        Value *z = builder->CreateFMul(xr, xr);
        Value *y = C(7.0376836292e-2);
        for (double c : {-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
                         -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1}) {
            y = fma(y, xr, C(c));
        }
        y = builder->CreateFMul(builder->CreateFMul(y, xr), z);
        y = fma(fe, C(-2.12194440e-4), y);
        y = fma(z, C(-0.5), y);
        Value *r = builder->CreateFAdd(xr, y);
        r = fma(fe, C(0.693359375), r);
        // log(inf) = inf, log(0) = -inf, log(x < 0) = log(NaN) = NaN.
        r = builder->CreateSelect(builder->CreateFCmpOEQ(x, C(INFINITY)), x, r);
        r = builder->CreateSelect(builder->CreateFCmpOEQ(x, C(0.0)), C(-INFINITY), r);
        r = builder->CreateSelect(builder->CreateFCmpULT(x, C(0.0)), C(NAN), r);
        return r;
    }

    // Calls scalar libm function `name` on each lane.
    Value *call_per_lane(const std::string &name, llvm::Type *scalar,
                         const std::vector<Value *> &args) {
        std::vector<llvm::Type *> arg_types(args.size(), scalar);
        llvm::FunctionCallee fn = runtime_fn(name.c_str(), scalar, arg_types);
        if (auto *f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
            f->addFnAttr(llvm::Attribute::NoUnwind);
            f->setOnlyReadsMemory();  // libm math functions at most set errno: fine for us
            f->setWillReturn();
        }
        int lanes = lanes_of(args[0]);
        if (lanes == 1) return builder->CreateCall(fn, args);
        Value *result = llvm::UndefValue::get(args[0]->getType());
        for (int i = 0; i < lanes; i++) {
            std::vector<Value *> la;
            for (Value *a : args) la.push_back(builder->CreateExtractElement(a, uint64_t(i)));
            result = builder->CreateInsertElement(result, builder->CreateCall(fn, la), uint64_t(i));
        }
        return result;
    }

    Value *codegen_math(const Call *op, const std::string &fn, int bits) {
        std::vector<Value *> args;
        for (const Expr &a : op->args) args.push_back(codegen(a));
        internal_assert(!args.empty()) << "math intrinsic " << op->name << " without arguments";
        Value *x = args[0];
        llvm::Type *scalar = bits == 32 ? f32_t : f64_t;
        std::string sfx = bits == 32 ? "f" : "";
        using llvm::Intrinsic::ID;
        auto unary = [&](ID id) { return builder->CreateUnaryIntrinsic(id, x); };
        if (fn == "exp") {
            if (bits == 32) return fast_exp_f32(x);
            return unary(llvm::Intrinsic::exp);
        }
        if (fn == "log") {
            if (bits == 32) return fast_log_f32(x);
            return unary(llvm::Intrinsic::log);
        }
        if (fn == "sqrt") return unary(llvm::Intrinsic::sqrt);
        if (fn == "rsqrt") {
            return builder->CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0),
                                       unary(llvm::Intrinsic::sqrt));
        }
        if (fn == "sin") return unary(llvm::Intrinsic::sin);
        if (fn == "cos") return unary(llvm::Intrinsic::cos);
        if (fn == "floor") return unary(llvm::Intrinsic::floor);
        if (fn == "ceil") return unary(llvm::Intrinsic::ceil);
        if (fn == "round") return unary(llvm::Intrinsic::roundeven);
        if (fn == "pow") {
            internal_assert(args.size() == 2) << "pow takes two arguments";
            return builder->CreateBinaryIntrinsic(llvm::Intrinsic::pow, args[0], args[1]);
        }
        if (fn == "tanh" && bits == 32) return fast_tanh_f32(x);
        if (fn == "tanh" || fn == "erf") return call_per_lane(fn + sfx, scalar, {x});
        internal_error << "Codegen: unknown math intrinsic " << op->name;
        return nullptr;
    }

    // Shifts with total semantics (as in the interpreter): a negative amount
    // shifts the other way, and an amount of the bit width or more shifts
    // every bit out (giving 0, or the sign for a signed right shift).
    Value *shift_by_magnitude(Value *a, Value *s, bool left, bool signed_a, int bits) {
        llvm::Type *lt = a->getType();
        Value *in_range = builder->CreateICmpULT(s, splat_int(lt, bits));
        if (!left && signed_a) {
            // An arithmetic shift by bits - 1 already fills with the sign.
            Value *amt = builder->CreateSelect(in_range, s, splat_int(lt, bits - 1));
            return builder->CreateAShr(a, amt);
        }
        Value *safe = builder->CreateSelect(in_range, s, llvm::Constant::getNullValue(lt));
        Value *r = left ? builder->CreateShl(a, safe) : builder->CreateLShr(a, safe);
        return builder->CreateSelect(in_range, r, llvm::Constant::getNullValue(lt));
    }

    Value *codegen_shift(const Expr &ea, const Expr &eb, bool left) {
        Value *a = codegen(ea), *b = codegen(eb);
        Type t = ea.type();
        int bits = t.bits;
        bool signed_a = t.is_int();
        // The common case: a constant amount within range is one instruction.
        int64_t c;
        if (const_divisor(eb, &c) && c >= 0 && c < bits) {
            if (left) return builder->CreateShl(a, b);
            return signed_a ? builder->CreateAShr(a, b) : builder->CreateLShr(a, b);
        }
        if (!eb.type().is_int()) return shift_by_magnitude(a, b, left, signed_a, bits);
        llvm::Type *lt = b->getType();
        Value *neg = builder->CreateICmpSLT(b, llvm::Constant::getNullValue(lt));
        // |b| as an unsigned amount; INT_MIN stays INT_MIN, which is >= bits.
        Value *mag = builder->CreateSelect(neg, builder->CreateNeg(b), b);
        Value *fwd = shift_by_magnitude(a, mag, left, signed_a, bits);
        Value *back = shift_by_magnitude(a, mag, !left, signed_a, bits);
        return builder->CreateSelect(neg, back, fwd);
    }

    void visit(const Call *op) override {
        std::string fn;
        int bits;
        if (is_math_intrinsic(op, &fn, &bits)) {
            value = codegen_math(op, fn, bits);
            return;
        }
        Type t = op->type;
        if (op->is_intrinsic(Call::likely) || op->is_intrinsic("promise_clamped")) {
            // Hints for earlier passes; the value is the first argument.
            // (promise_clamped is normally removed by lowering already.)
            value = codegen(op->args[0]);
        } else if (op->is_intrinsic(Call::abs)) {
            Value *x = codegen(op->args[0]);
            Type at = op->args[0].type();
            if (at.is_bfloat()) value = builder->CreateAnd(x, splat_int(x->getType(), 0x7fff));
            else if (at.is_float()) value = builder->CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
            else if (at.is_int())
                value =
                    builder->CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, builder->getFalse());
            else value = x;
            value = cast_value(value, at, t);
        } else if (op->is_intrinsic(Call::bitwise_and)) {
            value = builder->CreateAnd(codegen(op->args[0]), codegen(op->args[1]));
        } else if (op->is_intrinsic(Call::bitwise_or)) {
            value = builder->CreateOr(codegen(op->args[0]), codegen(op->args[1]));
        } else if (op->is_intrinsic(Call::bitwise_xor)) {
            value = builder->CreateXor(codegen(op->args[0]), codegen(op->args[1]));
        } else if (op->is_intrinsic(Call::bitwise_not)) {
            value = builder->CreateNot(codegen(op->args[0]));
        } else if (op->is_intrinsic(Call::shift_left) || op->is_intrinsic(Call::shift_right)) {
            value = codegen_shift(op->args[0], op->args[1], op->is_intrinsic(Call::shift_left));
        } else if (op->is_intrinsic(Call::undef)) {
            value = llvm::UndefValue::get(llvm_type(t));
        } else if (op->is_intrinsic(Call::div_round_up)) {
            Expr a = op->args[0], b = op->args[1];
            value = codegen(Div::make(Sub::make(Add::make(a, b), make_one(b.type())), b));
        } else if (op->is_intrinsic(Call::error)) {
            internal_error << "Codegen: Call::error outside the message of an AssertStmt";
        } else if (op->is_intrinsic(HostIntrinsic::return_on_error)) {
            check_error(codegen(op->args[0]));
            value = builder->getInt32(0);
        } else if (op->is_intrinsic(HostIntrinsic::on_error)) {
            internal_error << "Codegen: on_error outside the value of a LetStmt";
        } else if (op->call_type == Call::Extern) {
            // A C function taking and returning scalars of the given types.
            std::vector<Value *> args;
            std::vector<llvm::Type *> types;
            for (const Expr &a : op->args) {
                internal_assert(a.type().is_scalar())
                    << "extern call " << op->name << " with a vector argument";
                args.push_back(codegen(a));
                types.push_back(args.back()->getType());
            }
            internal_assert(t.is_scalar()) << "extern call " << op->name << " returning a vector";
            value = builder->CreateCall(runtime_fn(op->name.c_str(), llvm_type(t), types), args);
        } else {
            internal_error << "Codegen: cannot generate code for a call to " << op->name
                           << " (call type " << (int)op->call_type
                           << "); Func, Image and buffer_get calls must be lowered first";
        }
    }

    // ------------------------------------------------------------ statements

    void visit(const LetStmt *op) override {
        if (const Call *c = op->value.as<Call>()) {
            if (c->is_intrinsic(HostIntrinsic::on_error)) {
                error_cleanups.push_back(c->args[0]);
                codegen(op->body);
                error_cleanups.pop_back();
                return;
            }
        }
        Value *v = codegen(op->value);
        name_value(v, op->name);
        note_index_let(op->value, v);
        ScopedBinding<Value *> bind(symbols, op->name, v);
        enclosing_lets.emplace_back(op->name, op->value);
        codegen(op->body);
        enclosing_lets.pop_back();
    }

    // A constant bound of op's size in bytes, from a constant upper bound of
    // each extent (with the lets around the allocation substituted in).
    bool constant_bound_of_size(const Allocate *op, int64_t elem_bytes, int64_t *bytes) {
        int64_t total = elem_bytes;
        for (const Expr &e : op->extents) {
            int64_t most = 0;
            if (!constant_upper_bound_under_lets(e, enclosing_lets, Scope<Interval>(), &most)) {
                return false;
            }
            most = std::max<int64_t>(most, 0);
            if (most != 0 && total > INT64_MAX / most) return false;
            total *= most;
        }
        *bytes = total;
        return true;
    }

    // Frees the live heap allocations and returns `code` from the current
    // function. Leaves the builder in a fresh, unreachable block.
    void return_error(Value *code) {
        llvm::FunctionCallee free_fn = runtime_fn("loom_free", void_t, {i8ptr_t});
        for (auto it = heap_allocations.rbegin(); it != heap_allocations.rend(); ++it) {
            builder->CreateCall(free_fn, {*it});
        }
        // Set aside while they run: a cleanup's own code then has none.
        std::vector<Expr> cleanups = std::move(error_cleanups);
        error_cleanups.clear();
        for (auto it = cleanups.rbegin(); it != cleanups.rend(); ++it) codegen(*it);
        error_cleanups = std::move(cleanups);
        builder->CreateRet(code);
    }

    /** Returns `code` from the function, after the cleanup, unless it is 0. */
    void check_error(Value *code) {
        BasicBlock *ok = BasicBlock::Create(ctx, "call_ok", function);
        BasicBlock *fail = BasicBlock::Create(ctx, "call_failed", function);
        llvm::MDBuilder mdb(ctx);
        builder->CreateCondBr(builder->CreateICmpEQ(code, builder->getInt32(0)), ok, fail,
                              mdb.createBranchWeights(1 << 20, 1));
        builder->SetInsertPoint(fail);
        return_error(code);
        builder->SetInsertPoint(ok);
    }

    Value *load_buffer_field(Value *b, llvm::Type *t, unsigned field) {
        return builder->CreateAlignedLoad(t, builder->CreateStructGEP(buffer_t, b, field),
                                          llvm::Align(8));
    }

    /** Runs emit() where `condition` holds, expected to be rarely. */
    template <typename F> void emit_if_rarely(Value *condition, const std::string &name, F emit) {
        BasicBlock *then_bb = BasicBlock::Create(ctx, name, function);
        BasicBlock *done = BasicBlock::Create(ctx, name + ".done", function);
        llvm::MDBuilder mdb(ctx);
        builder->CreateCondBr(condition, then_bb, done, mdb.createBranchWeights(1, 1 << 10));
        builder->SetInsertPoint(then_bb);
        emit();
        builder->CreateBr(done);
        builder->SetInsertPoint(done);
    }

    // --------------------------------------------------------------- globals

    llvm::Constant *define_global(const HostGlobal &g) {
        if (g.is_state) {
            // The JIT finds it by name (to release the runtime's state with
            // the code); portable code keeps it to itself.
            auto *ptr = llvm::cast<llvm::PointerType>(i8ptr_t);
            auto *state = new llvm::GlobalVariable(
                *module, ptr, false,
                portable ? llvm::GlobalValue::InternalLinkage : llvm::GlobalValue::ExternalLinkage,
                llvm::ConstantPointerNull::get(ptr), g.name);
            return llvm::ConstantExpr::getPointerCast(state, i8ptr_t);
        }
        llvm::Constant *data =
            g.null_terminated
                ? llvm::ConstantDataArray::getString(ctx, g.bytes, true)
                : llvm::ConstantDataArray::get(
                      ctx, llvm::ArrayRef<uint8_t>(
                               reinterpret_cast<const uint8_t *>(g.bytes.data()), g.bytes.size()));
        auto *global = new llvm::GlobalVariable(*module, data->getType(), true,
                                                llvm::GlobalValue::PrivateLinkage, data, g.name);
        if (g.alignment > 0) global->setAlignment(llvm::Align(g.alignment));
        return llvm::ConstantExpr::getPointerCast(global, i8ptr_t);
    }

    void append_error_piece(const Expr &piece) {
        Type t = piece.type();
        if (const StringImm *s = piece.as<StringImm>()) {
            Value *str = builder->CreateGlobalStringPtr(s->value, "msg", 0, module.get());
            builder->CreateCall(runtime_fn("loom_error_append_string", void_t, {i8ptr_t}), {str});
            return;
        }
        if (t.is_handle() && t.is_scalar()) {
            // A handle piece is a C string (e.g. loom_type_name's result).
            Value *str = builder->CreatePointerCast(codegen(piece), i8ptr_t);
            builder->CreateCall(runtime_fn("loom_error_append_string", void_t, {i8ptr_t}), {str});
            return;
        }
        if (t.is_vector()) {
            Value *str = builder->CreateGlobalStringPtr("<vector>", "msg", 0, module.get());
            builder->CreateCall(runtime_fn("loom_error_append_string", void_t, {i8ptr_t}), {str});
            return;
        }
        Value *v = codegen(piece);
        if (t.is_float()) {
            v = cast_value(v, t, Float(64));
            builder->CreateCall(runtime_fn("loom_error_append_float", void_t, {f64_t}), {v});
        } else {
            v = cast_value(v, t, t.is_uint() || t.is_handle() ? UInt(64) : Int(64));
            builder->CreateCall(runtime_fn("loom_error_append_int", void_t, {i64_t}), {v});
        }
    }

    void visit(const AssertStmt *op) override {
        if (target.has_feature(Target::NoAsserts)) return;
        if (is_const_one(op->condition)) return;
        Value *c = codegen(op->condition);
        BasicBlock *ok = BasicBlock::Create(ctx, "assert_ok", function);
        BasicBlock *fail = BasicBlock::Create(ctx, "assert_failed", function);
        llvm::MDBuilder mdb(ctx);
        builder->CreateCondBr(c, ok, fail, mdb.createBranchWeights(1 << 20, 1));
        builder->SetInsertPoint(fail);
        builder->CreateCall(runtime_fn("loom_error_begin", void_t, {}));
        const Call *msg = op->message.as<Call>();
        if (msg && msg->is_intrinsic(Call::error)) {
            for (const Expr &p : msg->args) append_error_piece(p);
        } else {
            append_error_piece(op->message);
        }
        Value *code = builder->CreateCall(runtime_fn("loom_error_end", i32_t, {}));
        return_error(code);
        builder->SetInsertPoint(ok);
    }

    void visit(const ProducerConsumer *op) override { codegen(op->body); }

    void visit(const TileKernel *) override {
        internal_error << "Codegen: a tile program's kernel in host code; offload_gpu_loops "
                          "replaces it with its launch";
    }

    void visit(const For *op) override {
        internal_assert(op->for_type != ForType::GPUBlock)
            << "Codegen: GPU loop " << op->name
            << " in host code; offload_gpu_loops replaces it with its kernel's launch";
        internal_assert(op->for_type != ForType::GPUThread)
            << "gpu_threads loop " << op->name << " outside a kernel";
        if (op->for_type == ForType::Parallel) return codegen_parallel_for(op);
        Value *mn = codegen(op->min);
        Value *ext = codegen(op->extent);
        llvm::Type *lt = mn->getType();
        Value *end = builder->CreateAdd(mn, ext, op->name + ".end");
        BasicBlock *pre = builder->GetInsertBlock();
        BasicBlock *loop = BasicBlock::Create(ctx, op->name + ".loop", function);
        BasicBlock *after = BasicBlock::Create(ctx, op->name + ".after", function);
        builder->CreateCondBr(builder->CreateICmpSGT(ext, llvm::ConstantInt::get(lt, 0)), loop,
                              after);
        builder->SetInsertPoint(loop);
        llvm::PHINode *phi = builder->CreatePHI(lt, 2, op->name);
        phi->addIncoming(mn, pre);
        {
            ScopedBinding<Value *> bind(symbols, op->name, phi);
            codegen(op->body);
        }
        // The loop variable stays below min + extent, so the increment cannot wrap.
        Value *next = builder->CreateNSWAdd(phi, llvm::ConstantInt::get(lt, 1), op->name + ".next");
        phi->addIncoming(next, builder->GetInsertBlock());
        llvm::BranchInst *back =
            builder->CreateCondBr(builder->CreateICmpNE(next, end), loop, after);
        if (contains_vector_code(op->body)) {
            // Loom vectorized this loop's body as its schedule said. LLVM's
            // loop vectorizer would only analyze it again to find nothing,
            // and its unroller would copy the vector body (and a remainder
            // loop for unknown trip counts) without a schedule asking for
            // it: tell both to leave the loop alone. Loops without vector
            // code are left to LLVM, which may vectorize reductions.
            llvm::SmallVector<llvm::Metadata *, 3> md;
            md.push_back(nullptr);  // the loop ID refers to itself
            md.push_back(llvm::MDNode::get(
                ctx, {llvm::MDString::get(ctx, "llvm.loop.vectorize.enable"),
                      llvm::ConstantAsMetadata::get(llvm::ConstantInt::getFalse(ctx))}));
            md.push_back(
                llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.unroll.disable")}));
            llvm::MDNode *id = llvm::MDNode::getDistinct(ctx, md);
            id->replaceOperandWith(0, id);
            back->setMetadata(llvm::LLVMContext::MD_loop, id);
        }
        builder->SetInsertPoint(after);
    }

    static bool contains_vector_code(const Stmt &s) {
        ContainsVectorCode c;
        s.accept(&c);
        return c.found;
    }

    void codegen_parallel_for(const For *op) {
        Value *mn = cast_value(codegen(op->min), op->min.type(), Int(32));
        Value *ext = cast_value(codegen(op->extent), op->extent.type(), Int(32));

        // The closure: every enclosing symbol the body may use.
        CollectUsedNames used;
        op->body.accept(&used);
        std::vector<std::string> names;
        std::vector<Value *> vals;
        std::vector<llvm::Type *> types;
        for (const std::string &n : used.names) {
            if (n == op->name) continue;
            const Value *const *v = symbols.find(n);
            if (!v) continue;  // bound inside the body
            names.push_back(n);
            vals.push_back(const_cast<Value *>(*v));
            types.push_back(vals.back()->getType());
        }
        llvm::StructType *closure_t = llvm::StructType::get(ctx, types);
        Value *closure = entry_alloca(closure_t, op->name + ".closure", 16);
        for (size_t i = 0; i < vals.size(); i++) {
            builder->CreateStore(vals[i], builder->CreateStructGEP(closure_t, closure, i));
        }

        llvm::FunctionType *task_t = llvm::FunctionType::get(i32_t, {i32_t, i8ptr_t}, false);
        std::string task_name =
            func_name + ".par_for." + op->name + "." + std::to_string(closure_count++);
        llvm::Function *task = llvm::Function::Create(task_t, llvm::Function::InternalLinkage,
                                                      task_name, module.get());
        set_function_attributes(task);
        task->addParamAttr(1, llvm::Attribute::NoAlias);
        task->addParamAttr(1, llvm::Attribute::NoCapture);

        // Generate the task body with its own symbols, insertion point and
        // heap allocations.
        llvm::Function *saved_function = function;
        BasicBlock *saved_block = builder->GetInsertBlock();
        Scope<Value *> saved_symbols = std::move(symbols);
        symbols = Scope<Value *>();
        std::vector<Value *> saved_heap = std::move(heap_allocations);
        std::vector<Expr> saved_cleanups = std::move(error_cleanups);
        heap_allocations.clear();
        error_cleanups.clear();

        function = task;
        BasicBlock *entry = BasicBlock::Create(ctx, "entry", task);
        builder->SetInsertPoint(entry);
        Value *arg_i = task->getArg(0);
        arg_i->setName(op->name);
        Value *cl = builder->CreateBitCast(task->getArg(1), closure_t->getPointerTo());
        for (size_t i = 0; i < names.size(); i++) {
            Value *v =
                builder->CreateLoad(types[i], builder->CreateStructGEP(closure_t, cl, i), names[i]);
            symbols.push(names[i], v);
        }
        Value *loop_var = cast_value(arg_i, Int(32), op->min.type());
        symbols.push(op->name, loop_var);
        codegen(op->body);
        builder->CreateRet(builder->getInt32(0));

        function = saved_function;
        symbols = std::move(saved_symbols);
        heap_allocations = std::move(saved_heap);
        error_cleanups = std::move(saved_cleanups);
        builder->SetInsertPoint(saved_block);

        llvm::FunctionCallee par_for =
            runtime_fn("loom_do_par_for", i32_t, {task_t->getPointerTo(), i32_t, i32_t, i8ptr_t});
        check_error(builder->CreateCall(par_for,
                                        {task, mn, ext, builder->CreateBitCast(closure, i8ptr_t)}));
    }

    void visit(const Store *op) override {
        Type t = op->value.type();
        Type et = t.element_of();
        llvm::Type *st = storage_type(et);
        unsigned align = std::max(1, et.bytes());
        Value *v = codegen(op->value);
        if (t.is_bool()) v = builder->CreateZExt(v, storage_type(t));
        Value *ptr = buffer_pointer(op->name, et);
        bool all_true = is_const_one(op->predicate);
        int64_t stride = 0;
        Expr base;
        Value *inst = nullptr;
        if (t.is_scalar()) {
            Value *idx = codegen_index(op->index);
            Value *addr = builder->CreateGEP(st, ptr, idx);
            if (all_true) {
                inst = builder->CreateAlignedStore(v, addr, llvm::Align(align));
                add_alias_info(inst, op->name);
            } else {
                Value *pred = codegen(op->predicate);
                BasicBlock *do_store = BasicBlock::Create(ctx, "pred_store", function);
                BasicBlock *after = BasicBlock::Create(ctx, "pred_store_after", function);
                builder->CreateCondBr(pred, do_store, after);
                builder->SetInsertPoint(do_store);
                inst = builder->CreateAlignedStore(v, addr, llvm::Align(align));
                add_alias_info(inst, op->name);
                builder->CreateBr(after);
                builder->SetInsertPoint(after);
            }
            return;
        }
        llvm::Type *vt = storage_type(t);
        if (is_const_stride(op->index, &stride, &base) &&
            (stride == 1 || (stride == -1 && all_true))) {
            Value *b = codegen_index(base);
            if (stride == -1) {
                b = builder->CreateSub(b, llvm::ConstantInt::get(b->getType(), t.lanes - 1));
                std::vector<int> rev;
                for (int i = t.lanes - 1; i >= 0; i--) rev.push_back(i);
                v = builder->CreateShuffleVector(v, v, rev);
            }
            Value *addr =
                builder->CreateBitCast(builder->CreateGEP(st, ptr, b), vt->getPointerTo());
            if (all_true) {
                inst = builder->CreateAlignedStore(v, addr, llvm::Align(align));
            } else {
                inst =
                    builder->CreateMaskedStore(v, addr, llvm::Align(align), codegen(op->predicate));
            }
        } else {
            Value *idx = codegen(op->index);
            Value *ptrs = builder->CreateGEP(st, ptr, idx);
            Value *mask = all_true ? nullptr : codegen(op->predicate);
            inst = builder->CreateMaskedScatter(v, ptrs, llvm::Align(align), mask);
        }
        add_alias_info(inst, op->name);
    }

    void visit(const Provide *op) override {
        internal_error << "Codegen: Provide to " << op->name << " must be lowered before codegen";
    }
    void visit(const Realize *op) override {
        internal_error << "Codegen: Realize of " << op->name << " must be lowered before codegen";
    }

    void visit(const Allocate *op) override {
        Type t = op->type;
        int64_t elem_bytes = static_cast<int64_t>(t.is_bool() ? 1 : t.bytes()) * t.lanes;
        // The size, if it is a constant.
        bool const_size = true;
        int64_t total = elem_bytes;
        for (const Expr &e : op->extents) {
            const int64_t *c = as_const_int(e);
            if (!c || *c < 0 || (*c != 0 && total > INT64_MAX / *c)) {
                const_size = false;
                break;
            }
            total *= *c;
        }
        user_assert(op->memory_type != MemoryType::Shared &&
                    op->memory_type != MemoryType::Register)
            << "Func " << op->name << " is stored in GPU "
            << (op->memory_type == MemoryType::Shared ? "shared memory" : "registers")
            << " (store_in), but it is computed on the CPU. Compute it inside a GPU kernel, or "
               "use MemoryType::Stack or Heap.";
        bool on_stack =
            op->memory_type == MemoryType::Stack ||
            (op->memory_type != MemoryType::Heap && op->memory_type != MemoryType::Global &&
             const_size && total <= kMaxStackAllocation);
        // A size that varies (a ragged last tile, a region clamped at the
        // edge of the data) but has a small constant bound: room for the most
        // it can hold, on the stack, rather than a malloc and a free at every
        // iteration of the loops around it. (A large bound is no reason to
        // reserve it: an explicit Stack then takes the size it needs.)
        int64_t bound = 0;
        if (!const_size && op->memory_type != MemoryType::Heap &&
            op->memory_type != MemoryType::Global &&
            constant_bound_of_size(op, elem_bytes, &bound) && bound <= kMaxStackAllocation) {
            const_size = on_stack = true;
            total = bound;
        }
        if (on_stack && const_size) {
            llvm::Type *at = llvm::ArrayType::get(i8_t, std::max<int64_t>(total, 1));
            Value *p = builder->CreateBitCast(entry_alloca(at, op->name, 64), i8ptr_t);
            ScopedBinding<Value *> bind(symbols, op->name, p);
            codegen(op->body);
            return;
        }
        // The size in bytes as int64, with overflow checks.
        Value *size = builder->getInt64(elem_bytes);
        Value *overflow = builder->getFalse();
        for (const Expr &e : op->extents) {
            Value *x = cast_value(codegen(e), e.type(), Int(64));
            overflow = builder->CreateOr(overflow, builder->CreateICmpSLT(x, builder->getInt64(0)));
            Value *m = builder->CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, size, x);
            size = builder->CreateExtractValue(m, {0});
            overflow = builder->CreateOr(overflow, builder->CreateExtractValue(m, {1}));
        }
        if (!is_const_one(op->condition)) {
            size = builder->CreateSelect(codegen(op->condition), size, builder->getInt64(0));
        }
        llvm::MDBuilder mdb(ctx);
        if (!llvm::isa<llvm::Constant>(overflow) ||
            !llvm::cast<llvm::Constant>(overflow)->isZeroValue()) {
            BasicBlock *ok = BasicBlock::Create(ctx, op->name + ".size_ok", function);
            BasicBlock *fail = BasicBlock::Create(ctx, op->name + ".size_overflow", function);
            builder->CreateCondBr(overflow, fail, ok, mdb.createBranchWeights(1, 1 << 20));
            builder->SetInsertPoint(fail);
            builder->CreateCall(runtime_fn("loom_error_begin", void_t, {}));
            append_error_piece(StringImm::make("The size of allocation " + op->name +
                                               " is negative or overflows 64 bits"));
            return_error(builder->CreateCall(runtime_fn("loom_error_end", i32_t, {})));
            builder->SetInsertPoint(ok);
        }
        if (on_stack) {
            // A Stack allocation of dynamic size: released when the body ends.
            Value *saved = builder->CreateIntrinsic(llvm::Intrinsic::stacksave, {}, {});
            llvm::AllocaInst *a = builder->CreateAlloca(i8_t, size, op->name);
            a->setAlignment(llvm::Align(64));
            {
                ScopedBinding<Value *> bind(symbols, op->name, a);
                codegen(op->body);
            }
            builder->CreateIntrinsic(llvm::Intrinsic::stackrestore, {}, {saved});
            return;
        }
        Value *p =
            builder->CreateCall(runtime_fn("loom_malloc", i8ptr_t, {i64_t}), {size}, op->name);
        BasicBlock *ok = BasicBlock::Create(ctx, op->name + ".alloc_ok", function);
        BasicBlock *fail = BasicBlock::Create(ctx, op->name + ".alloc_failed", function);
        builder->CreateCondBr(builder->CreateIsNull(p), fail, ok,
                              mdb.createBranchWeights(1, 1 << 20));
        builder->SetInsertPoint(fail);
        builder->CreateCall(runtime_fn("loom_error_begin", void_t, {}));
        append_error_piece(StringImm::make("Out of memory allocating " + op->name + " ("));
        builder->CreateCall(runtime_fn("loom_error_append_int", void_t, {i64_t}), {size});
        append_error_piece(StringImm::make(" bytes)"));
        builder->CreateCall(runtime_fn("loom_error_end", i32_t, {}));
        return_error(builder->getInt32(loom_error_out_of_memory_code));
        builder->SetInsertPoint(ok);
        heap_allocations.push_back(p);
        {
            ScopedBinding<Value *> bind(symbols, op->name, p);
            codegen(op->body);
        }
        heap_allocations.pop_back();
        builder->CreateCall(runtime_fn("loom_free", void_t, {i8ptr_t}), {p});
    }

    static constexpr int loom_error_out_of_memory_code = -2;

    void visit(const Free *) override {
        // Allocations are released at the end of their Allocate's body.
    }

    void visit(const Block *op) override {
        codegen(op->first);
        codegen(op->rest);
    }

    void visit(const IfThenElse *op) override {
        Value *c = codegen(op->condition);
        BasicBlock *then_bb = BasicBlock::Create(ctx, "then", function);
        BasicBlock *after = BasicBlock::Create(ctx, "after_if", function);
        BasicBlock *else_bb =
            op->else_case.defined() ? BasicBlock::Create(ctx, "else", function) : after;
        builder->CreateCondBr(c, then_bb, else_bb);
        builder->SetInsertPoint(then_bb);
        codegen(op->then_case);
        builder->CreateBr(after);
        if (op->else_case.defined()) {
            builder->SetInsertPoint(else_bb);
            codegen(op->else_case);
            builder->CreateBr(after);
        }
        builder->SetInsertPoint(after);
    }

    void visit(const Evaluate *op) override {
        if (op->value.as<IntImm>() || op->value.as<UIntImm>()) return;  // a no-op placeholder
        codegen(op->value);
    }
};

}  // namespace

// ------------------------------------------------------------------ plumbing

void initialize_llvm() {
    static std::once_flag once;
    std::call_once(once, [] {
        LLVMInitializeX86TargetInfo();
        LLVMInitializeX86Target();
        LLVMInitializeX86TargetMC();
        LLVMInitializeX86AsmPrinter();
        LLVMInitializeX86AsmParser();
        // LOOM_LLVM_ARGS passes options to LLVM itself, as if on llc's
        // command line (e.g. "-time-passes" to see where compile time goes).
        if (const char *env = std::getenv("LOOM_LLVM_ARGS")) {
            std::vector<std::string> words{"loom"};
            std::istringstream in(env);
            for (std::string w; in >> w;) words.push_back(w);
            std::vector<const char *> argv;
            for (const std::string &w : words) argv.push_back(w.c_str());
            llvm::cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data(), "Loom",
                                              &llvm::errs());
        }
    });
}

namespace {

bool is_host_isa(const Target &t) {
    Target h = Target::host();
    for (Target::Feature f :
         {Target::SSE41, Target::AVX, Target::AVX2, Target::FMA, Target::F16C, Target::AVX512}) {
        if (h.has_feature(f) != t.has_feature(f)) return false;
    }
    return true;
}

}  // namespace

// The host's CPU name and full LLVM feature string, asked once: the queries
// cost more than lowering a small pipeline.
const std::string &host_cpu_name() {
    static const std::string name = llvm::sys::getHostCPUName().str();
    return name;
}
const std::string &host_feature_string() {
    static const std::string features = [] {
        // Everything the host has (including features Loom does not name,
        // e.g. bmi2), so that the host CPU name and features agree.
        llvm::StringMap<bool> f;
        std::string s;
        if (llvm::sys::getHostCPUFeatures(f)) {
            for (const auto &kv : f) {
                if (!s.empty()) s += ",";
                s += (kv.second ? "+" : "-") + kv.first().str();
            }
        }
        return s;
    }();
    return features;
}

std::string llvm_cpu_name(const Target &t, bool portable) {
    // The host's own CPU gives the best tuning when we compile for exactly it.
    if (!portable && is_host_isa(t)) {
        const std::string &cpu = host_cpu_name();
        if (!cpu.empty() && cpu != "generic") return cpu;
    }
    if (t.has_feature(Target::AVX512)) return "x86-64-v4";
    if (t.has_feature(Target::AVX2)) return "x86-64-v3";
    if (t.has_feature(Target::SSE41)) return "x86-64-v2";
    return "x86-64";
}

std::string llvm_tune_cpu_name(const Target &t) {
    if (is_host_isa(t)) {
        const std::string &cpu = host_cpu_name();
        if (!cpu.empty() && cpu != "generic") return cpu;
    }
    return llvm_cpu_name(t, true);
}

std::string llvm_feature_string(const Target &t, bool portable) {
    if (!portable && is_host_isa(t) && !host_feature_string().empty()) {
        return host_feature_string();
    }
    std::string s;
    auto add = [&](bool on, const char *name) {
        if (!s.empty()) s += ",";
        s += (on ? "+" : "-");
        s += name;
    };
    add(t.has_feature(Target::SSE41), "sse4.1");
    add(t.has_feature(Target::AVX), "avx");
    add(t.has_feature(Target::AVX2), "avx2");
    add(t.has_feature(Target::FMA), "fma");
    add(t.has_feature(Target::F16C), "f16c");
    bool a5 = t.has_feature(Target::AVX512);
    for (const char *n : {"avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512cd"}) add(a5, n);
    return s;
}

bool host_supports_target(const Target &t, std::string *why) {
    Target h = Target::host();
    static const std::pair<Target::Feature, const char *> isa[] = {
        {Target::SSE41, "sse41"}, {Target::AVX, "avx"},   {Target::AVX2, "avx2"},
        {Target::FMA, "fma"},     {Target::F16C, "f16c"}, {Target::AVX512, "avx512"}};
    std::string missing;
    for (const auto &f : isa) {
        if (t.has_feature(f.first) && !h.has_feature(f.first))
            missing += std::string(" ") + f.second;
    }
    if (missing.empty()) return true;
    if (why) *why = "this machine lacks the target feature(s)" + missing;
    return false;
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const Target &t, bool portable) {
    initialize_llvm();
    std::string err;
    const llvm::Target *llt = llvm::TargetRegistry::lookupTarget(kTriple, err);
    internal_assert(llt) << "LLVM has no x86-64 target: " << err;
    llvm::TargetOptions opts;
    // fmuladd may fuse; plain fadd/fmul never reassociate or contract.
    opts.AllowFPOpFusion = llvm::FPOpFusion::Standard;
    std::unique_ptr<llvm::TargetMachine> tm(llt->createTargetMachine(
        kTriple, llvm_cpu_name(t, portable), llvm_feature_string(t, portable), opts,
        llvm::Reloc::PIC_, llvm::CodeModel::Small, llvm::CodeGenOpt::Aggressive));
    internal_assert(tm) << "could not create an LLVM TargetMachine for " << t.to_string();
    return tm;
}

std::unique_ptr<llvm::Module> codegen_llvm(const LoweredFunc &f, const Target &t,
                                           llvm::LLVMContext &ctx, bool portable) {
    initialize_llvm();
    CodeGen_LLVM cg(t, ctx, portable);
    OffloadedFunc host = offload_gpu_loops(f, t, portable);
    if (std::getenv("LOOM_DEBUG") != nullptr) {
        std::cerr << "---- after offload_gpu_loops ----\n" << host.func.body << "\n";
    }
    return cg.compile(host.func, host.globals);
}

void optimize_module(llvm::Module &m, llvm::TargetMachine &tm, const Target &t) {
    m.setDataLayout(tm.createDataLayout());
    m.setTargetTriple(tm.getTargetTriple().str());
    // Loop vectorization and unrolling belong to the schedule (see
    // Target::LLVMLoopOpt); straight-line SLP vectorization does not.
    const bool loop_opt = t.has_feature(Target::LLVMLoopOpt);
    llvm::PipelineTuningOptions pto;
    pto.LoopVectorization = loop_opt;
    pto.SLPVectorization = true;
    pto.LoopInterleaving = loop_opt;
    pto.LoopUnrolling = loop_opt;
    // Forgetting all SCEV results after unrolling, rather than those of the
    // unrolled loop only, is much cheaper on the deep loop nests lowering
    // produces.
    pto.ForgetAllSCEVInLoopUnroll = true;
    // Instrumentation only when timing passes (LOOM_LLVM_ARGS=-time-passes).
    llvm::PassInstrumentationCallbacks pic;
    llvm::StandardInstrumentations si(/*DebugLogging=*/false);
    if (llvm::TimePassesIsEnabled) si.registerCallbacks(pic);
    llvm::PassBuilder pb(&tm, pto, llvm::None, llvm::TimePassesIsEnabled ? &pic : nullptr);
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(m, mam);
}

std::string module_to_llvm_ir(const llvm::Module &m) {
    std::string s;
    llvm::raw_string_ostream os(s);
    m.print(os, nullptr);
    os.flush();
    return s;
}

namespace {

std::string emit(const llvm::Module &m, llvm::TargetMachine &tm, llvm::CodeGenFileType type) {
    // Code generation rewrites the module it runs on: work on a copy.
    std::unique_ptr<llvm::Module> clone = llvm::CloneModule(m);
    clone->setDataLayout(tm.createDataLayout());
    llvm::SmallString<0> buf;
    llvm::raw_svector_ostream os(buf);
    llvm::legacy::PassManager pm;
    bool failed = tm.addPassesToEmitFile(pm, os, nullptr, type);
    internal_assert(!failed) << "LLVM cannot emit this file type for the target";
    pm.run(*clone);
    return std::string(buf.begin(), buf.end());
}

}  // namespace

std::string module_to_assembly(const llvm::Module &m, llvm::TargetMachine &tm) {
    return emit(m, tm, llvm::CGFT_AssemblyFile);
}

std::string module_to_object(const llvm::Module &m, llvm::TargetMachine &tm) {
    return emit(m, tm, llvm::CGFT_ObjectFile);
}

}  // namespace internal
}  // namespace loom
