// Generators: members that register themselves with the generator being
// constructed, the registry, and the command-line driver.
#include "loom/Generator.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "ir/Util.h"
#include "lower/Lower.h"

namespace loom {

using namespace internal;

namespace internal {

namespace {

// The generator whose constructor is running. GeneratorMembers is the first
// base of Generator, so it is set before any member is constructed; members
// register with it from their constructors, which is how a generator learns
// its params, inputs and outputs (and their declaration order) without the
// user listing them again.
thread_local GeneratorMembers *constructing = nullptr;

bool is_identifier(const std::string &s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    }
    return true;
}

std::string trim(const std::string &s) {
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

GeneratorMembers::GeneratorMembers() { constructing = this; }

GeneratorMembers::~GeneratorMembers() {
    if (constructing == this) constructing = nullptr;
}

void GeneratorMembers::end_construction() {
    if (constructing == this) constructing = nullptr;
}

// ---------------------------------------------------------------------------
// Parsing param values. Every message names the param and what it accepts,
// because the user typed the value on a command line or in CMake, far from
// the generator's source.

bool parse_bool_param(const std::string &param, const std::string &value) {
    if (value == "true" || value == "1") return true;
    if (value == "false" || value == "0") return false;
    user_error << "Invalid value \"" << value << "\" for GeneratorParam " << param
               << " (bool); valid values are: true, false.";
    return false;
}

int64_t parse_int_param(const std::string &param, const std::string &value, int64_t lo,
                        int64_t hi) {
    std::string v = trim(value);
    char *end = nullptr;
    errno = 0;
    long long x = v.empty() ? 0 : std::strtoll(v.c_str(), &end, 0);
    if (v.empty() || *end != '\0') {
        user_error << "Invalid value \"" << value << "\" for GeneratorParam " << param
                   << "; expected an integer.";
    }
    if (errno == ERANGE || x < lo || x > hi) {
        user_error << "Value " << value << " of GeneratorParam " << param
                   << " does not fit its type; it must lie in [" << lo << ", " << hi << "].";
    }
    return x;
}

uint64_t parse_uint_param(const std::string &param, const std::string &value, uint64_t hi) {
    std::string v = trim(value);
    char *end = nullptr;
    errno = 0;
    if (v.empty() || v[0] == '-') {
        user_error << "Invalid value \"" << value << "\" for GeneratorParam " << param
                   << "; expected a non-negative integer.";
    }
    unsigned long long x = std::strtoull(v.c_str(), &end, 0);
    if (*end != '\0') {
        user_error << "Invalid value \"" << value << "\" for GeneratorParam " << param
                   << "; expected a non-negative integer.";
    }
    if (errno == ERANGE || x > hi) {
        user_error << "Value " << value << " of GeneratorParam " << param
                   << " does not fit its type; it must lie in [0, " << hi << "].";
    }
    return x;
}

double parse_float_param(const std::string &param, const std::string &value) {
    std::string v = trim(value);
    char *end = nullptr;
    double x = v.empty() ? 0 : std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') {
        user_error << "Invalid value \"" << value << "\" for GeneratorParam " << param
                   << "; expected a number such as 0.5 or 1e-3.";
    }
    return x;
}

const std::vector<std::string> &type_param_names() {
    static const std::vector<std::string> names = {
        "bool",   "int8",   "int16",   "int32",   "int64",   "uint8",   "uint16",
        "uint32", "uint64", "float16", "float32", "float64", "bfloat16"};
    return names;
}

Type parse_type_param(const std::string &param, const std::string &value) {
    static const std::map<std::string, Type> types = {
        {"bool", Bool()},         {"int8", Int(8)},       {"int16", Int(16)},
        {"int32", Int(32)},       {"int64", Int(64)},     {"uint8", UInt(8)},
        {"uint16", UInt(16)},     {"uint32", UInt(32)},   {"uint64", UInt(64)},
        {"float16", Float(16)},   {"float32", Float(32)}, {"float64", Float(64)},
        {"bfloat16", BFloat(16)}, {"float", Float(32)},   {"double", Float(64)},
        {"half", Float(16)},      {"int", Int(32)}};
    auto it = types.find(value);
    if (it == types.end()) {
        user_error << "Invalid value \"" << value << "\" for GeneratorParam " << param
                   << " (Type); valid values are: " << join(type_param_names(), ", ") << ".";
    }
    return it->second;
}

Target parse_target_param(const std::string &param, const std::string &value) {
    try {
        return Target(value);
    } catch (const CompileError &e) {
        user_error << "Invalid value \"" << value << "\" for GeneratorParam " << param
                   << " (Target): " << e.what();
    }
    return Target();
}

std::string format_double(double v) {
    // The shortest text that reads back as the same double.
    char buf[64];
    for (int precision = 1; precision <= 17; precision++) {
        std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

// ---------------------------------------------------------------------------

GeneratorParamBase::GeneratorParamBase(const std::string &name)
    : name_(name), owner_(constructing) {
    user_assert(is_identifier(name))
        << "GeneratorParam name \"" << name
        << "\" is not a valid name; use letters, digits and underscores, starting with a letter.";
    if (!owner_) return;
    for (const GeneratorParamBase *p : owner_->params_) {
        user_assert(p->name() != name)
            << "A generator declares two GeneratorParams named " << name
            << (name == "target" ? " (\"target\" is declared by loom::Generator itself)" : "")
            << ". Rename one.";
    }
    owner_->params_.push_back(this);
}

void GeneratorParamBase::check_settable() const {
    user_assert(!owner_ || !owner_->built_)
        << "GeneratorParam " << name_
        << " cannot be set after the generator was built (generate() has already read it). "
           "Set params before calling build(), pipeline(), compile() or emit().";
}

void GeneratorParamBase::set_from_string(const std::string &value) {
    check_settable();
    parse_and_set(value);
}

namespace {

void check_member_name(GeneratorMembers *owner, const std::string &kind, const std::string &name,
                       const std::vector<GeneratorInputBase *> &inputs,
                       const std::vector<GeneratorOutputBase *> &outputs) {
    // Names become parameter names of a C function and of its header.
    user_assert(is_identifier(name))
        << kind << " name \"" << name
        << "\" is not a C identifier; use letters, digits and underscores, starting with a "
           "letter, since it names an argument of the generated C function.";
    for (const GeneratorInputBase *in : inputs) {
        user_assert(in->name() != name)
            << "A generator declares two Inputs/Outputs named " << name << ". Rename one.";
    }
    for (const GeneratorOutputBase *out : outputs) {
        user_assert(out->name() != name)
            << "A generator declares two Inputs/Outputs named " << name << ". Rename one.";
    }
}

}  // namespace

GeneratorInputBase::GeneratorInputBase(const std::string &name, bool is_buffer,
                                       std::optional<Deferred<Type>> type, Deferred<int> dims)
    : name_(name), is_buffer_(is_buffer), type_(type), dims_(dims) {
    if (GeneratorMembers *owner = constructing) {
        check_member_name(owner, "Input", name, owner->inputs_, owner->outputs_);
        owner->inputs_.push_back(this);
    }
}

Type GeneratorInputBase::type() const { return param_ ? param_->type : type_->get(); }

int GeneratorInputBase::dimensions() const { return param_ ? param_->dimensions : dims_.get(); }

const ParameterPtr &GeneratorInputBase::parameter() const {
    check_materialized();
    return param_;
}

void GeneratorInputBase::check_materialized() const {
    user_assert(param_ != nullptr)
        << "Input " << name_
        << " was used before the generator was built. Inputs exist only inside generate() and "
           "schedule() (their types may depend on GeneratorParams set after construction).";
}

namespace {

std::string describe_type(const std::optional<Deferred<Type>> &t, const char *untyped) {
    if (!t) return untyped;
    std::string s = type_to_string(t->get());
    if (t->param()) s += " (from param " + t->param()->name() + ")";
    return s;
}

std::string describe_dims(const Deferred<int> &d) {
    std::string s = std::to_string(d.get());
    if (d.param()) s += " (from param " + d.param()->name() + ")";
    return s;
}

}  // namespace

std::string GeneratorInputBase::type_description() const { return describe_type(type_, "any"); }
std::string GeneratorInputBase::dims_description() const { return describe_dims(dims_); }

GeneratorOutputBase::GeneratorOutputBase(const std::string &name,
                                         std::optional<Deferred<Type>> type, Deferred<int> dims)
    : name_(name), func_(name), type_(type), dims_(dims) {
    if (GeneratorMembers *owner = constructing) {
        check_member_name(owner, "Output", name, owner->inputs_, owner->outputs_);
        owner->outputs_.push_back(this);
    }
}

std::optional<Type> GeneratorOutputBase::declared_type() const {
    if (!type_) return std::nullopt;
    return type_->get();
}

std::string GeneratorOutputBase::type_description() const {
    return describe_type(type_, "any (set by generate())");
}
std::string GeneratorOutputBase::dims_description() const { return describe_dims(dims_); }

void GeneratorOutputBase::check_defined(const std::string &generator) const {
    user_assert(func_.name() == name_)
        << "Output " << name_ << " of generator " << generator << " was bound to the Func "
        << func_.name() << ", but the Func's name names the argument of the generated function. "
        << "Name the Output \"" << func_.name() << "\" (or the Func \"" << name_ << "\").";
    user_assert(func_.defined()) << "Output " << name() << " of generator " << generator
                                 << " was not defined by generate(). Define it, e.g. " << name()
                                 << "(y, x) = ...;";
    user_assert(func_.outputs() == 1)
        << "Output " << name() << " of generator " << generator << " is defined as a Tuple of "
        << func_.outputs() << " values; an Output holds one value per point.";
    user_assert(func_.dimensions() == dimensions())
        << "Output " << name() << " of generator " << generator << " is declared with "
        << dimensions() << " dimensions but generate() defined it with " << func_.dimensions()
        << ".";
    if (std::optional<Type> t = declared_type()) {
        user_assert(func_.type() == *t)
            << "Output " << name() << " of generator " << generator << " is declared as "
            << type_to_string(*t) << " but generate() defined it as "
            << type_to_string(func_.type()) << ". Cast the definition, e.g. cast("
            << type_to_string(*t) << ", ...).";
    }
}

}  // namespace internal

// ---------------------------------------------------------------------------
// Generator

Generator::Generator() = default;
Generator::~Generator() = default;

std::string Generator::display_name() const {
    return registered_name_.empty() ? std::string("(unregistered)") : registered_name_;
}

void Generator::set_param(const std::string &name, const std::string &value) {
    end_construction();
    for (GeneratorParamBase *p : params_) {
        if (p->name() == name) {
            p->set_from_string(value);
            return;
        }
    }
    std::vector<std::string> names;
    for (const GeneratorParamBase *p : params_) names.push_back(p->name());
    user_error << "Generator " << display_name() << " has no GeneratorParam named \"" << name
               << "\"; its params are: " << join(names, ", ") << ".";
}

void Generator::set_params(const std::map<std::string, std::string> &values) {
    for (const auto &kv : values) set_param(kv.first, kv.second);
}

std::vector<Func> Generator::output_funcs() const {
    std::vector<Func> funcs;
    for (const GeneratorOutputBase *o : outputs_) funcs.push_back(o->func());
    return funcs;
}

void Generator::build() {
    end_construction();
    user_assert(!build_failed_) << "Generator " << display_name()
                                << " failed to build earlier; create a fresh instance.";
    if (built_) return;
    // From here on params are frozen: generate() reads them.
    built_ = true;
    try {
        user_assert(!outputs_.empty())
            << "Generator " << display_name()
            << " declares no Output; declare at least one Output<Buffer<T>> member.";
        // Parameters are numbered as they are created and a pipeline takes its
        // inputs in that order, so creating them here, in declaration order,
        // makes the function's argument order the declaration order.
        for (GeneratorInputBase *in : inputs_) in->materialize();
        generate();
        for (const GeneratorOutputBase *out : outputs_) out->check_defined(display_name());
        schedule();
        pipeline_ = std::make_shared<Pipeline>(output_funcs());

        // The generated function's signature must be exactly the declared
        // one: an input nothing reads would silently vanish from it, and a
        // BufferParam or Param made inside generate() would silently appear.
        LoweringResult lowered = lower(
            [&] {
                std::vector<FunctionPtr> fs;
                for (const Func &f : output_funcs()) fs.push_back(f.function());
                return fs;
            }(),
            *sched.contents(), get_target(), "generator_check");
        std::set<std::string> used;
        for (const Argument &a : lowered.arguments) used.insert(a.name);
        for (const GeneratorInputBase *in : inputs_) {
            user_assert(used.count(in->name()))
                << "Input " << in->name() << " of generator " << display_name()
                << " is not read by any Output, so the generated function could not take it. "
                   "Use it in generate() or remove it.";
        }
        for (const ParameterPtr &p : lowered.params) {
            bool declared = false;
            for (const GeneratorInputBase *in : inputs_) declared |= in->parameter() == p;
            user_assert(declared) << "Generator " << display_name() << " reads the parameter "
                                  << p->name
                                  << ", which is not one of its Inputs. Declare it as an "
                                     "Input<...> member instead of creating it in generate().";
        }
    } catch (...) {
        build_failed_ = true;
        throw;
    }
}

Pipeline Generator::pipeline() {
    build();
    return *pipeline_;
}

const Schedule &Generator::get_schedule() {
    build();
    return sched;
}

std::vector<GeneratorArgument> Generator::arguments() {
    build();
    std::vector<GeneratorArgument> args;
    for (const GeneratorInputBase *in : inputs_) {
        args.push_back({in->name(), in->is_buffer() ? Argument::InputBuffer : Argument::InputScalar,
                        in->type(), in->dimensions()});
    }
    for (const GeneratorOutputBase *out : outputs_) {
        args.push_back(
            {out->name(), Argument::OutputBuffer, out->func().type(), out->func().dimensions()});
    }
    return args;
}

CompiledPipeline Generator::compile() {
    build();
    return pipeline_->compile(sched, get_target());
}

const std::vector<std::pair<std::string, std::string>> &Generator::emit_kinds() {
    static const std::vector<std::pair<std::string, std::string>> kinds = {
        {"static_library", ".a"}, {"h", ".h"},       {"object", ".o"}, {"assembly", ".s"},
        {"llvm_ir", ".ll"},       {"stmt", ".stmt"}, {"cuda", ".cu"}};
    return kinds;
}

namespace {

/** The kinds asked for, checked with the function and file names. */
std::set<std::string> checked_emit_request(const std::string &basename,
                                           const std::string &function_name,
                                           const std::vector<std::string> &kinds) {
    std::vector<std::string> valid;
    for (const auto &k : Generator::emit_kinds()) valid.push_back(k.first);
    std::set<std::string> wanted;
    for (const std::string &k : kinds) {
        bool ok = false;
        for (const std::string &v : valid) ok |= v == k;
        user_assert(ok) << "Unknown emit kind \"" << k
                        << "\"; valid kinds are: " << join(valid, ", ") << ".";
        wanted.insert(k);
    }
    user_assert(is_identifier(function_name))
        << "The function name \"" << function_name
        << "\" is not a C identifier; use letters, digits and underscores.";
    user_assert(!basename.empty() && basename.find('/') == std::string::npos)
        << "The file base name \"" << basename << "\" must be a plain file name, not a path.";
    return wanted;
}

void write_emitted_files(const Pipeline &p, const Schedule &sched, const Target &t,
                         const std::string &dir, const std::string &basename,
                         const std::string &function_name, const std::set<std::string> &wanted) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    user_assert(!ec) << "Cannot create the output directory " << dir << ": " << ec.message();
    const std::string base = (std::filesystem::path(dir) / basename).string();
    for (const auto &[kind, suffix] : Generator::emit_kinds()) {
        if (!wanted.count(kind)) continue;
        if (kind == "static_library") {
            p.compile_to_static_library(base, function_name, sched, t);
        } else if (kind == "h") {
            // compile_to_static_library writes the header too.
            if (!wanted.count("static_library"))
                p.compile_to_header(base + suffix, function_name, sched, t);
        } else if (kind == "object") {
            p.compile_to_object(base + suffix, function_name, sched, t);
        } else if (kind == "assembly") {
            p.compile_to_assembly(base + suffix, function_name, sched, t);
        } else if (kind == "llvm_ir") {
            p.compile_to_llvm_ir(base + suffix, function_name, sched, t);
        } else if (kind == "stmt") {
            p.compile_to_lowered_stmt(base + suffix, sched, t);
        } else if (kind == "cuda") {
            // The kernels' CUDA C++ (.cu), PTX (.ptx) and cubin (.cubin).
            p.compile_to_cuda(base, sched, t);
        }
    }
}

}  // namespace

void Generator::emit(const std::string &dir, const std::string &basename,
                     const std::string &function_name, const std::vector<std::string> &kinds) {
    const std::set<std::string> wanted = checked_emit_request(basename, function_name, kinds);
    build();
    write_emitted_files(*pipeline_, sched, get_target(), dir, basename, function_name, wanted);
}

void emit_pipeline(const Pipeline &p, const Schedule &sched, const Target &t,
                   const std::string &dir, const std::string &basename,
                   const std::string &function_name, const std::vector<std::string> &kinds) {
    write_emitted_files(p, sched, t, dir, basename, function_name,
                        checked_emit_request(basename, function_name, kinds));
}

// ---------------------------------------------------------------------------
// Registry

namespace {

struct RegistryState {
    std::map<std::string, GeneratorRegistry::Factory> factories;
    std::vector<std::string> duplicates;
};

RegistryState &registry() {
    static RegistryState r;
    return r;
}

}  // namespace

void GeneratorRegistry::add(const std::string &name, Factory factory) {
    // Runs during static initialization, where throwing would terminate the
    // program before main(): remember the problem and report it later.
    RegistryState &r = registry();
    if (r.factories.count(name)) r.duplicates.push_back(name);
    else r.factories[name] = std::move(factory);
}

std::vector<std::string> GeneratorRegistry::names() {
    std::vector<std::string> names;
    for (const auto &kv : registry().factories) names.push_back(kv.first);
    return names;
}

std::unique_ptr<Generator> GeneratorRegistry::create(const std::string &name) {
    RegistryState &r = registry();
    user_assert(r.duplicates.empty())
        << "Two generators were registered under the name " << r.duplicates[0]
        << "; each LOOM_REGISTER_GENERATOR needs a distinct name.";
    auto it = r.factories.find(name);
    if (it == r.factories.end()) {
        if (r.factories.empty()) {
            user_error << "There is no generator named \"" << name
                       << "\": no generators are linked into this program. Register one with "
                          "LOOM_REGISTER_GENERATOR in a source file of this executable.";
        }
        user_error << "There is no generator named \"" << name
                   << "\"; the registered generators are: " << join(names(), ", ") << ".";
    }
    std::unique_ptr<Generator> g = it->second();
    g->end_construction();
    g->registered_name_ = name;
    return g;
}

// ---------------------------------------------------------------------------
// Driver

void list_generators(std::ostream &out, const std::string &only) {
    std::vector<std::string> names = GeneratorRegistry::names();
    if (!only.empty()) names = {only};
    if (names.empty()) out << "No generators are registered in this program.\n";
    for (const std::string &name : names) {
        std::unique_ptr<Generator> g = GeneratorRegistry::create(name);
        out << name << "\n";
        size_t w = 0;
        for (const GeneratorParamBase *p : g->params()) w = std::max(w, p->name().size());
        for (const GeneratorInputBase *in : g->inputs()) w = std::max(w, in->name().size());
        for (const GeneratorOutputBase *o : g->outputs()) w = std::max(w, o->name().size());
        auto pad = [&](const std::string &s) { return s + std::string(w - s.size(), ' '); };
        for (const GeneratorParamBase *p : g->params()) {
            out << "  param  " << pad(p->name()) << "  " << p->type_name() << " = "
                << p->default_string();
            if (!p->range_string().empty()) out << "  (in " << p->range_string() << ")";
            std::vector<std::string> valid = p->valid_values();
            if (!valid.empty() && valid.size() <= 16)
                out << "  (one of: " << join(valid, ", ") << ")";
            out << "\n";
        }
        for (const GeneratorInputBase *in : g->inputs()) {
            out << "  input  " << pad(in->name()) << "  ";
            if (in->is_buffer()) {
                out << "buffer of " << in->type_description() << ", dimensions "
                    << in->dims_description();
            } else {
                out << in->type_description();
            }
            out << "\n";
        }
        for (const GeneratorOutputBase *o : g->outputs()) {
            out << "  output " << pad(o->name()) << "  buffer of " << o->type_description()
                << ", dimensions " << o->dims_description() << "\n";
        }
    }
}

namespace {

std::string usage(const std::string &program) {
    std::ostringstream u;
    u << "Usage: " << program
      << " -g NAME -o DIR [-e KINDS] [-f FUNCTION] [-n FILE_BASE] [target=TARGET] "
         "[PARAM=VALUE ...]\n"
      << "       " << program << " --list [-g NAME]\n"
      << "\n"
      << "Compiles the registered generator NAME ahead of time into DIR.\n"
      << "  -g NAME       the generator (optional when only one is linked in)\n"
      << "  -o DIR        the output directory (created if missing)\n"
      << "  -e KINDS      comma-separated: static_library (.a and .h), h, object, assembly,\n"
      << "                llvm_ir, stmt, cuda (.cu, .ptx and .cubin of the GPU kernels, for\n"
      << "                a target such as host-cuda-sm_90); default static_library\n"
      << "  -f FUNCTION   the C name of the generated function; default NAME\n"
      << "  -n FILE_BASE  the base name of the files written; default FUNCTION\n"
      << "  target=T      the target, e.g. host or x86-64-linux-avx2; default host\n"
      << "  PARAM=VALUE   sets a GeneratorParam (see --list)\n"
      << "  --list        lists the generators, their params (name, type, default) and\n"
      << "                their arguments\n";
    return u.str();
}

struct DriverError {
    std::string message;
};

}  // namespace

int run_generator(const std::vector<std::string> &args, std::ostream &out, std::ostream &err) {
    std::string program =
        args.empty() ? std::string("loom-gen") : std::filesystem::path(args[0]).filename().string();
    std::string gen_name, out_dir, emit = "static_library", fn_name, file_base;
    bool list = false;
    std::vector<std::pair<std::string, std::string>> params;
    try {
        for (size_t i = 1; i < args.size(); i++) {
            const std::string &a = args[i];
            auto value = [&](const char *what) {
                if (i + 1 >= args.size())
                    throw DriverError{"option " + a + " needs a value (" + what + ")"};
                return args[++i];
            };
            if (a == "-g") gen_name = value("a generator name");
            else if (a == "-o") out_dir = value("a directory");
            else if (a == "-e") emit = value("a comma-separated list of kinds");
            else if (a == "-f") fn_name = value("a function name");
            else if (a == "-n") file_base = value("a file base name");
            else if (a == "--list" || a == "-l") list = true;
            else if (a == "-h" || a == "--help") {
                out << usage(program);
                return 0;
            } else if (a.size() > 1 && a[0] != '-' && a.find('=') != std::string::npos) {
                size_t eq = a.find('=');
                if (eq == 0) throw DriverError{"argument \"" + a + "\" has no param name"};
                params.emplace_back(a.substr(0, eq), a.substr(eq + 1));
            } else {
                throw DriverError{"unknown argument \"" + a + "\""};
            }
        }

        if (list) {
            list_generators(out, gen_name);
            return 0;
        }
        if (gen_name.empty()) {
            std::vector<std::string> names = GeneratorRegistry::names();
            if (names.size() != 1) {
                throw DriverError{names.empty()
                                      ? std::string("no generators are linked into this program")
                                      : "missing -g NAME; the registered generators are: " +
                                            join(names, ", ")};
            }
            gen_name = names[0];
        }
        if (out_dir.empty()) throw DriverError{"missing -o DIR (the output directory)"};
        if (fn_name.empty()) fn_name = gen_name;
        if (file_base.empty()) file_base = fn_name;

        std::vector<std::string> kinds;
        std::stringstream ks(emit);
        for (std::string k; std::getline(ks, k, ',');) {
            if (!k.empty()) kinds.push_back(k);
        }
        if (kinds.empty()) throw DriverError{"-e names no kinds"};

        std::unique_ptr<Generator> g = GeneratorRegistry::create(gen_name);
        for (const auto &[k, v] : params) g->set_param(k, v);
        g->emit(out_dir, file_base, fn_name, kinds);
        return 0;
    } catch (const DriverError &e) {
        err << program << ": error: " << e.message << "\n" << usage(program);
        return 2;
    } catch (const Error &e) {
        err << program << ": error: " << e.what() << "\n";
        return 1;
    } catch (const std::exception &e) {
        err << program << ": error: " << e.what() << "\n";
        return 1;
    }
}

int generator_main(int argc, char **argv) {
    std::vector<std::string> args(argv, argv + argc);
    return run_generator(args, std::cout, std::cerr);
}

}  // namespace loom
