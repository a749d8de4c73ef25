// Ahead-of-time compilation: object files, C headers, static libraries,
// assembly and LLVM IR for a pipeline (the compile_to_* methods of Pipeline).
//
// An AOT pipeline `fn` is three C functions (docs/aot.md has the full ABI):
//  - `int fn(loom_buffer_t *in0, float scale, ..., loom_buffer_t *out)`: the
//    arguments of CompiledPipeline::arguments() in order, buffers as
//    descriptors and scalars by value. A thin wrapper that packs its
//    arguments into an array and calls fn_argv.
//  - `int fn_argv(void **args)`: the lowered function itself, the same entry
//    point the JIT calls (LoweredFunc.h), for generic callers.
//  - `const loom_filter_metadata_t *fn_metadata(void)`: the argument list.
// Everything else in the object (parallel-loop closures, strings, the
// metadata tables) has internal linkage, so two pipelines with different
// names never clash. The runtime the code calls comes from the static
// library (weak definitions, see src/runtime/loom_runtime_internal.h) or from
// libloom.
#include "loom/Pipeline.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "codegen/CodeGen_LLVM.h"
#include "codegen/EmbeddedRuntime.h"
#include "lang/ScheduleContents.h"
#include "lower/Lower.h"

namespace loom {

using namespace internal;

namespace internal {
namespace {

// Names an AOT function must not take: the runtime's and those of the C
// library functions generated code calls (a pipeline named "memset" would
// replace the C library's in the whole program).
const std::set<std::string> &reserved_names() {
    static const std::set<std::string> names = {"loom_error_begin",
                                                "loom_error_append_string",
                                                "loom_error_append_int",
                                                "loom_error_append_float",
                                                "loom_error_end",
                                                "loom_last_error_message",
                                                "loom_set_error_handler",
                                                "loom_malloc",
                                                "loom_free",
                                                "loom_do_par_for",
                                                "loom_num_threads",
                                                "loom_type_name",
                                                "loom_half_to_float",
                                                "loom_float_to_half",
                                                "loom_double_to_half",
                                                "loom_buffer_from_dltensor",
                                                "loom_buffer_to_dltensor",
                                                "loom_runtime_copy_error_message",
                                                "loom_runtime_set_error_message",
                                                "memcpy",
                                                "memmove",
                                                "memset",
                                                "malloc",
                                                "free",
                                                "abort",
                                                "exit",
                                                "main",
                                                "expf",
                                                "exp",
                                                "logf",
                                                "log",
                                                "sinf",
                                                "sin",
                                                "cosf",
                                                "cos",
                                                "tanhf",
                                                "tanh",
                                                "erff",
                                                "erf",
                                                "sqrtf",
                                                "sqrt",
                                                "floorf",
                                                "floor",
                                                "ceilf",
                                                "ceil",
                                                "rintf",
                                                "rint",
                                                "nearbyintf",
                                                "nearbyint",
                                                "roundevenf",
                                                "roundeven",
                                                "powf",
                                                "pow",
                                                "fmodf",
                                                "fmod",
                                                "fmaf",
                                                "fma"};
    return names;
}

const std::set<std::string> &c_keywords() {
    static const std::set<std::string> words = {
        "auto",     "break",   "case",     "char",   "const",    "continue", "default",
        "do",       "double",  "else",     "enum",   "extern",   "float",    "for",
        "goto",     "if",      "inline",   "int",    "long",     "register", "restrict",
        "return",   "short",   "signed",   "sizeof", "static",   "struct",   "switch",
        "typedef",  "union",   "unsigned", "void",   "volatile", "while",    "bool",
        "class",    "delete",  "new",      "this",   "template", "true",     "false",
        "operator", "private", "public",   "throw",  "try",      "catch",    "namespace",
        "using",    "virtual", "friend",   "and",    "or",       "not",      "xor"};
    return words;
}

void check_fn_name(const std::string &fn_name) {
    bool ok = !fn_name.empty() &&
              (std::isalpha(static_cast<unsigned char>(fn_name[0])) || fn_name[0] == '_');
    for (char c : fn_name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    user_assert(ok) << "The AOT function name \"" << fn_name
                    << "\" is not a C identifier. Use letters, digits and '_', not starting "
                       "with a digit.";
    user_assert(!c_keywords().count(fn_name))
        << "The AOT function name \"" << fn_name << "\" is a C or C++ keyword. Choose another.";
    user_assert(!reserved_names().count(fn_name))
        << "The AOT function name \"" << fn_name
        << "\" is the name of a function Loom's runtime or generated code uses. Choose another.";
    user_assert(fn_name.compare(0, 2, "__") != 0 &&
                !(fn_name.size() > 1 && fn_name[0] == '_' && std::isupper(fn_name[1])))
        << "The AOT function name \"" << fn_name
        << "\" is reserved for the C implementation (it starts with __ or _ and a capital). "
           "Choose another.";
}

/** An argument name as a C parameter name. */
std::string c_identifier(const std::string &name, std::set<std::string> *used) {
    std::string s;
    for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
    if (s.compare(0, 2, "__") == 0) s = "arg" + s;
    while (c_keywords().count(s) || used->count(s)) s += "_";
    used->insert(s);
    return s;
}

/** The C type of a scalar argument. float16 and bfloat16 travel as their
 * bits (C has no portable half type) and bool as a byte. */
std::string c_scalar_type(Type t) {
    if (t.is_bool()) return "uint8_t";
    if (t.code == Type::Float && t.bits == 32) return "float";
    if (t.code == Type::Float && t.bits == 64) return "double";
    if (t.is_float()) return "uint16_t";
    if (t.is_handle()) return "void *";
    return std::string(t.is_int() ? "int" : "uint") + std::to_string(t.bits) + "_t";
}

std::string lowered_name(const std::string &fn_name) { return fn_name + "_argv"; }

struct AOTModule {
    LoweringResult lowered;
    std::unique_ptr<llvm::LLVMContext> ctx;
    std::unique_ptr<llvm::Module> module;
    std::unique_ptr<llvm::TargetMachine> tm;
};

LoweringResult lower_for_aot(const std::vector<Func> &outputs, const Schedule &schedule,
                             const Target &target, const std::string &fn_name) {
    check_fn_name(fn_name);
    std::vector<FunctionPtr> funcs;
    for (const Func &f : outputs) {
        user_assert(f.defined()) << "The output Func " << f.name()
                                 << " has no definition. Define it before compiling the pipeline.";
        funcs.push_back(f.function());
    }
    return lower(funcs, *schedule.contents(), target, lowered_name(fn_name));
}

// Copies the per-function target attributes of `from` onto `to`.
void copy_target_attributes(llvm::Function *from, llvm::Function *to) {
    for (const char *kind : {"target-cpu", "target-features", "tune-cpu", "min-legal-vector-width",
                             "prefer-vector-width"}) {
        if (from->hasFnAttribute(kind)) to->addFnAttr(from->getFnAttribute(kind));
    }
    to->addFnAttr(llvm::Attribute::NoUnwind);
}

/** Defines `int32_t fn(typed arguments...)`, which packs its arguments into
 * an array and calls fn_argv. */
void add_typed_entry(llvm::Module &m, const LoweredFunc &f, const std::string &fn_name) {
    llvm::LLVMContext &ctx = m.getContext();
    llvm::Function *argv_fn = m.getFunction(f.name);
    internal_assert(argv_fn) << "AOT: the module lacks " << f.name;
    llvm::Type *i8ptr = llvm::Type::getInt8PtrTy(ctx);
    llvm::Type *i32 = llvm::Type::getInt32Ty(ctx);

    std::vector<llvm::Type *> params;
    for (const LoweredArgument &a : f.args) {
        llvm::Type *t = i8ptr;
        if (!a.is_buffer) {
            Type st = a.type;
            if (st.is_bool()) t = llvm::Type::getInt8Ty(ctx);
            else if (st.code == Type::Float && st.bits == 32) t = llvm::Type::getFloatTy(ctx);
            else if (st.code == Type::Float && st.bits == 64) t = llvm::Type::getDoubleTy(ctx);
            else if (st.is_float()) t = llvm::Type::getInt16Ty(ctx);
            else if (st.is_handle()) t = i8ptr;
            else t = llvm::IntegerType::get(ctx, st.bits);
        }
        params.push_back(t);
    }
    llvm::FunctionType *ft = llvm::FunctionType::get(i32, params, false);
    llvm::Function *fn = llvm::Function::Create(ft, llvm::Function::ExternalLinkage, fn_name, &m);
    copy_target_attributes(argv_fn, fn);
    for (size_t i = 0; i < f.args.size(); i++) {
        const LoweredArgument &a = f.args[i];
        fn->getArg(i)->setName(a.name);
        // Narrow integers follow the C convention: the caller extends them.
        if (!a.is_buffer && params[i]->isIntegerTy() && params[i]->getIntegerBitWidth() < 32) {
            fn->addParamAttr(i, a.type.is_int() ? llvm::Attribute::SExt : llvm::Attribute::ZExt);
        }
    }

    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
    llvm::ArrayType *argv_t = llvm::ArrayType::get(i8ptr, std::max<size_t>(1, f.args.size()));
    llvm::Value *argv = b.CreateAlloca(argv_t, nullptr, "argv");
    for (size_t i = 0; i < f.args.size(); i++) {
        llvm::Value *arg = fn->getArg(i);
        llvm::Value *p = arg;
        if (!f.args[i].is_buffer) {
            llvm::Value *slot = b.CreateAlloca(params[i], nullptr, f.args[i].name + ".slot");
            b.CreateStore(arg, slot);
            p = b.CreateBitCast(slot, i8ptr);
        }
        b.CreateStore(p, b.CreateConstInBoundsGEP2_32(argv_t, argv, 0, i));
    }
    llvm::Value *r = b.CreateCall(argv_fn, {b.CreateConstInBoundsGEP2_32(argv_t, argv, 0, 0)});
    b.CreateRet(r);
}

/** Defines `const loom_filter_metadata_t *fn_metadata(void)`. The layouts
 * are those of loom_argument_t and loom_filter_metadata_t in
 * loom_runtime.h. */
void add_metadata(llvm::Module &m, const LoweringResult &lowered, const std::string &fn_name,
                  const Target &target) {
    llvm::LLVMContext &ctx = m.getContext();
    llvm::Type *i8 = llvm::Type::getInt8Ty(ctx), *i16 = llvm::Type::getInt16Ty(ctx),
               *i32 = llvm::Type::getInt32Ty(ctx), *i8ptr = llvm::Type::getInt8PtrTy(ctx);
    llvm::StructType *type_t = llvm::StructType::get(ctx, {i8, i8, i16});
    llvm::StructType *arg_t = llvm::StructType::get(ctx, {i8ptr, i32, i32, type_t});
    llvm::StructType *meta_t =
        llvm::StructType::get(ctx, {i32, i32, arg_t->getPointerTo(), i8ptr, i8ptr});

    llvm::FunctionType *ft = llvm::FunctionType::get(meta_t->getPointerTo(), {}, false);
    llvm::Function *fn =
        llvm::Function::Create(ft, llvm::Function::ExternalLinkage, fn_name + "_metadata", &m);
    copy_target_attributes(m.getFunction(lowered.func.name), fn);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
    auto str = [&](const std::string &s) {
        return llvm::cast<llvm::Constant>(b.CreateGlobalStringPtr(s, fn_name + ".str", 0, &m));
    };

    std::vector<llvm::Constant *> args;
    for (const Argument &a : lowered.arguments) {
        int kind = a.kind == Argument::InputBuffer ? 0 : a.kind == Argument::InputScalar ? 1 : 2;
        llvm::Constant *type =
            llvm::ConstantStruct::get(type_t, {llvm::ConstantInt::get(i8, a.type.code),
                                               llvm::ConstantInt::get(i8, a.type.bits),
                                               llvm::ConstantInt::get(i16, a.type.lanes)});
        args.push_back(
            llvm::ConstantStruct::get(arg_t, {str(a.name), llvm::ConstantInt::get(i32, kind),
                                              llvm::ConstantInt::get(i32, a.dimensions), type}));
    }
    llvm::ArrayType *args_t = llvm::ArrayType::get(arg_t, args.size());
    auto *args_g =
        new llvm::GlobalVariable(m, args_t, true, llvm::GlobalValue::PrivateLinkage,
                                 llvm::ConstantArray::get(args_t, args), fn_name + ".arguments");
    llvm::Constant *args_ptr = llvm::ConstantExpr::getPointerCast(args_g, arg_t->getPointerTo());
    llvm::Constant *meta = llvm::ConstantStruct::get(
        meta_t, {llvm::ConstantInt::get(i32, 1),  // LOOM_FILTER_METADATA_VERSION
                 llvm::ConstantInt::get(i32, static_cast<uint64_t>(args.size())), args_ptr,
                 str(target.to_string()), str(fn_name)});
    auto *meta_g = new llvm::GlobalVariable(m, meta_t, true, llvm::GlobalValue::PrivateLinkage,
                                            meta, fn_name + ".metadata");
    b.CreateRet(meta_g);
}

AOTModule compile_aot(const std::vector<Func> &outputs, const Schedule &schedule,
                      const Target &target, const std::string &fn_name) {
    AOTModule r;
    r.lowered = lower_for_aot(outputs, schedule, target, fn_name);
    r.ctx = std::make_unique<llvm::LLVMContext>();
    r.module = codegen_llvm(r.lowered.func, target, *r.ctx, /*portable=*/true);
    r.module->setModuleIdentifier(fn_name);
    add_typed_entry(*r.module, r.lowered.func, fn_name);
    add_metadata(*r.module, r.lowered, fn_name, target);
    std::string err;
    llvm::raw_string_ostream es(err);
    if (llvm::verifyModule(*r.module, &es)) {
        es.flush();
        internal_error << "AOT entry points generated for " << fn_name << " are invalid: " << err;
    }
    r.tm = make_target_machine(target, /*portable=*/true);
    optimize_module(*r.module, *r.tm, target);
    return r;
}

void write_file(const std::string &filename, const std::string &contents) {
    std::ofstream f(filename, std::ios::binary);
    user_assert(f.good()) << "Cannot open " << filename << " for writing.";
    f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    f.close();
    user_assert(f.good()) << "Could not write " << filename << ".";
}

std::string make_header(const LoweringResult &lowered, const std::string &fn_name,
                        const Target &target) {
    std::string guard = "LOOM_GENERATED_" + fn_name + "_H";
    for (char &c : guard) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::ostringstream h;
    h << "/* " << fn_name << ": generated by Loom for target " << target.to_string()
      << ". Do not edit.\n"
      << " * The C ABI is documented in Loom's docs/aot.md. This header is self-contained:\n"
      << " * it carries loom_runtime.h (under that header's own include guard). */\n"
      << "#ifndef " << guard << "\n#define " << guard << "\n\n";
    EmbeddedFile rt = embedded_runtime_header();
    h << std::string(reinterpret_cast<const char *>(rt.data), rt.size) << "\n";
    h << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";

    std::set<std::string> used = {fn_name};
    std::vector<std::string> params;
    h << "/** Runs " << fn_name << ". Arguments, in order:\n";
    for (const Argument &a : lowered.arguments) {
        std::string id = c_identifier(a.name, &used);
        bool buffer = a.kind != Argument::InputScalar;
        std::string kind = a.kind == Argument::InputBuffer   ? "input buffer"
                           : a.kind == Argument::InputScalar ? "scalar"
                                                             : "output buffer";
        h << " *   " << id << (id == a.name ? "" : " (" + a.name + ")") << ": " << kind << ", "
          << type_to_string(a.type);
        if (buffer) h << ", " << a.dimensions << " dimension" << (a.dimensions == 1 ? "" : "s");
        if (!buffer && a.type.is_float() && a.type.bits == 16) h << " (passed as its bits)";
        h << "\n";
        params.push_back(buffer ? "loom_buffer_t *" + id : c_scalar_type(a.type) + " " + id);
    }
    h << " * Returns 0, or a negative loom error code with a message for\n"
      << " * loom_last_error_message() (and the loom_set_error_handler hook). */\n";
    h << "int " << fn_name << "(";
    for (size_t i = 0; i < params.size(); i++) h << (i ? ", " : "") << params[i];
    if (params.empty()) h << "void";
    h << ");\n\n";
    h << "/** The same, with args[i] pointing to the i-th argument's loom_buffer_t\n"
      << " * or scalar value. */\n"
      << "int " << fn_name << "_argv(void **args);\n\n"
      << "/** The names, kinds and types of the arguments. */\n"
      << "const loom_filter_metadata_t *" << fn_name << "_metadata(void);\n\n";
    h << "#ifdef __cplusplus\n}  /* extern \"C\" */\n#endif\n\n#endif /* " << guard << " */\n";
    return h.str();
}

std::string object_of(const AOTModule &m) { return module_to_object(*m.module, *m.tm); }

}  // namespace
}  // namespace internal

void Pipeline::compile_to_object(const std::string &filename, const std::string &fn_name,
                                 const Schedule &schedule, const Target &target) const {
    AOTModule m = compile_aot(outputs_, schedule, target, fn_name);
    write_file(filename, object_of(m));
}

void Pipeline::compile_to_header(const std::string &filename, const std::string &fn_name,
                                 const Schedule &schedule, const Target &target) const {
    LoweringResult lowered = lower_for_aot(outputs_, schedule, target, fn_name);
    write_file(filename, make_header(lowered, fn_name, target));
}

void Pipeline::compile_to_assembly(const std::string &filename, const std::string &fn_name,
                                   const Schedule &schedule, const Target &target) const {
    AOTModule m = compile_aot(outputs_, schedule, target, fn_name);
    write_file(filename, module_to_assembly(*m.module, *m.tm));
}

void Pipeline::compile_to_llvm_ir(const std::string &filename, const std::string &fn_name,
                                  const Schedule &schedule, const Target &target) const {
    AOTModule m = compile_aot(outputs_, schedule, target, fn_name);
    write_file(filename, module_to_llvm_ir(*m.module));
}

void Pipeline::compile_to_static_library(const std::string &basename, const std::string &fn_name,
                                         const Schedule &schedule, const Target &target) const {
    AOTModule m = compile_aot(outputs_, schedule, target, fn_name);
    std::string object = object_of(m);

    // The pipeline's object first, then the runtime's: each archive member
    // keeps its own name, and the symbol table lets the linker pull exactly
    // the runtime objects the pipeline uses.
    std::string object_name = fn_name + ".o";
    std::vector<llvm::NewArchiveMember> members;
    members.emplace_back(llvm::MemoryBufferRef(object, object_name));
    for (const EmbeddedFile &f : embedded_runtime_objects()) {
        llvm::StringRef data(reinterpret_cast<const char *>(f.data), f.size);
        members.emplace_back(llvm::MemoryBufferRef(data, f.name));
    }
    std::string archive = basename + ".a";
    if (llvm::Error e =
            llvm::writeArchive(archive, members, /*WriteSymtab=*/true, llvm::object::Archive::K_GNU,
                               /*Deterministic=*/true, /*Thin=*/false)) {
        user_error << "Could not write the static library " << archive << ": "
                   << llvm::toString(std::move(e));
    }
    write_file(basename + ".h", make_header(m.lowered, fn_name, target));
}

}  // namespace loom
