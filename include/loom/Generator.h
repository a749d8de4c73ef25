// Generators: a pipeline packaged as a class with named compile-time
// parameters, inputs and outputs, so that a driver (loom-gen, or the CMake
// function loom_add_library) can compile it ahead of time without anyone
// writing a main().
//
//     class Brighten : public loom::Generator {
//       public:
//         GeneratorParam<Type> elem{"elem", Float(32)};       // compile-time knobs
//         GeneratorParam<int> vec{"vec", 8};
//         Input<Buffer<>> input{"input", elem, 2};            // element type from a param
//         Input<float> gain{"gain"};
//         Output<Buffer<>> output{"output", elem, 2};
//
//         Var y{"y"}, x{"x"};
//         void generate() override { output(y, x) = cast(elem, input(y, x) * gain); }
//         void schedule() override { sched[output].vectorize(x, vec); }
//     };
//     LOOM_REGISTER_GENERATOR(Brighten, brighten)
//
// The generated function takes the inputs in declaration order, then the
// outputs in declaration order: brighten(input, gain, output).
//
// Life cycle: construct, set parameters (set_param / the driver's
// name=value arguments), then build(), which creates the inputs with their
// final types, runs generate() and then schedule(). After that the
// generator can be JIT-compiled (compile()) or emitted to files (emit()).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/Buffer.h"
#include "loom/Error.h"
#include "loom/Func.h"
#include "loom/Param.h"
#include "loom/Pipeline.h"
#include "loom/Schedule.h"
#include "loom/Target.h"
#include "loom/Type.h"

namespace loom {

class Generator;

namespace internal {

class GeneratorParamBase;
class GeneratorInputBase;
class GeneratorOutputBase;

/** The members a generator declared, in declaration order. Generator derives
 * from this first, so it exists (and is "the generator being constructed")
 * before any member, including Generator's own "target" param, is built. */
class GeneratorMembers {
  public:
    GeneratorMembers();
    ~GeneratorMembers();
    GeneratorMembers(const GeneratorMembers &) = delete;
    GeneratorMembers &operator=(const GeneratorMembers &) = delete;

  protected:
    friend class GeneratorParamBase;
    friend class GeneratorInputBase;
    friend class GeneratorOutputBase;
    std::vector<GeneratorParamBase *> params_;
    std::vector<GeneratorInputBase *> inputs_;
    std::vector<GeneratorOutputBase *> outputs_;
    bool built_ = false;
    /** Stops later members (of other objects) from registering here. */
    void end_construction();
};

/** Parsers shared by the GeneratorParam kinds. Each throws CompileError
 * naming the param and saying what would have been accepted. */
bool parse_bool_param(const std::string &param, const std::string &value);
int64_t parse_int_param(const std::string &param, const std::string &value, int64_t lo, int64_t hi);
uint64_t parse_uint_param(const std::string &param, const std::string &value, uint64_t hi);
double parse_float_param(const std::string &param, const std::string &value);
Type parse_type_param(const std::string &param, const std::string &value);
Target parse_target_param(const std::string &param, const std::string &value);
/** The scalar type names a GeneratorParam<Type> accepts. */
const std::vector<std::string> &type_param_names();
std::string format_double(double v);

/** The type-independent face of a GeneratorParam: what the driver and
 * `--list` need. */
class GeneratorParamBase {
  public:
    explicit GeneratorParamBase(const std::string &name);
    virtual ~GeneratorParamBase() = default;
    GeneratorParamBase(const GeneratorParamBase &) = delete;
    GeneratorParamBase &operator=(const GeneratorParamBase &) = delete;

    const std::string &name() const { return name_; }
    /** "int", "float", "bool", "string", "Type", "Target", "enum". */
    virtual std::string type_name() const = 0;
    virtual std::string value_string() const = 0;
    const std::string &default_string() const { return default_; }
    /** The accepted values when they form a short list (bool, Type, enums),
     * else empty. */
    virtual std::vector<std::string> valid_values() const { return {}; }
    /** "[min, max]" for a ranged numeric param, else empty. */
    virtual std::string range_string() const { return ""; }
    /** Parses and stores `value`; throws CompileError naming this param. */
    void set_from_string(const std::string &value);

  protected:
    virtual void parse_and_set(const std::string &value) = 0;
    /** Called by the derived constructors, once the value exists. */
    void record_default() { default_ = value_string(); }
    /** Params are read by generate() and fixed after it runs. */
    void check_settable() const;
    std::string name_;
    std::string default_;
    GeneratorMembers *owner_ = nullptr;
};

/** What a GeneratorParam<T> does for each T: parse, print, name the type. */
template <typename T, typename Enable = void> struct ParamTraits;

template <> struct ParamTraits<bool> {
    static std::string type_name() { return "bool"; }
    static std::string to_string(bool v) { return v ? "true" : "false"; }
    static bool parse(const std::string &p, const std::string &s) { return parse_bool_param(p, s); }
    static std::vector<std::string> valid_values() { return {"true", "false"}; }
};

template <typename T>
struct ParamTraits<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
    static std::string type_name() { return type_to_string(type_of<T>()); }
    static std::string to_string(T v) { return std::to_string(v); }
    static T parse(const std::string &p, const std::string &s) {
        if constexpr (std::is_signed_v<T>) {
            return static_cast<T>(parse_int_param(p, s, std::numeric_limits<T>::min(),
                                                  std::numeric_limits<T>::max()));
        } else {
            return static_cast<T>(parse_uint_param(p, s, std::numeric_limits<T>::max()));
        }
    }
    static std::vector<std::string> valid_values() { return {}; }
};

template <typename T> struct ParamTraits<T, std::enable_if_t<std::is_floating_point_v<T>>> {
    static std::string type_name() { return type_to_string(type_of<T>()); }
    static std::string to_string(T v) { return format_double(static_cast<double>(v)); }
    static T parse(const std::string &p, const std::string &s) {
        return static_cast<T>(parse_float_param(p, s));
    }
    static std::vector<std::string> valid_values() { return {}; }
};

template <> struct ParamTraits<std::string> {
    static std::string type_name() { return "string"; }
    static std::string to_string(const std::string &v) { return v; }
    static std::string parse(const std::string &, const std::string &s) { return s; }
    static std::vector<std::string> valid_values() { return {}; }
};

template <> struct ParamTraits<Type> {
    static std::string type_name() { return "Type"; }
    static std::string to_string(Type v) { return type_to_string(v); }
    static Type parse(const std::string &p, const std::string &s) { return parse_type_param(p, s); }
    static std::vector<std::string> valid_values() { return type_param_names(); }
};

template <> struct ParamTraits<Target> {
    static std::string type_name() { return "Target"; }
    static std::string to_string(const Target &v) {
        return v == Target::host() ? "host" : v.to_string();
    }
    static Target parse(const std::string &p, const std::string &s) {
        return parse_target_param(p, s);
    }
    static std::vector<std::string> valid_values() { return {}; }
};

/** A value known now or read from a GeneratorParam when the generator is
 * built: the element type or rank of an Input/Output may depend on a param
 * whose final value is set only after construction. */
template <typename T> class Deferred {
  public:
    Deferred(const T &v) : value_(v) {}
    template <typename P,
              typename = std::enable_if_t<
                  std::is_base_of_v<GeneratorParamBase, P> &&
                  std::is_convertible_v<decltype(std::declval<const P &>().value()), T>>>
    Deferred(const P &param)
        : param_(&param), get_([](const GeneratorParamBase *p) -> T {
              return static_cast<const P *>(p)->value();
          }) {}
    T get() const { return param_ ? get_(param_) : value_; }
    /** The param it reads, or null for a plain value. */
    const GeneratorParamBase *param() const { return param_; }

  private:
    T value_{};
    const GeneratorParamBase *param_ = nullptr;
    T (*get_)(const GeneratorParamBase *) = nullptr;
};

/** An Input of a generator, type-independent part. The underlying
 * BufferParam / Param is created at build time, in declaration order, so
 * the compiled function takes the inputs in the order they were declared. */
class GeneratorInputBase {
  public:
    GeneratorInputBase(const std::string &name, bool is_buffer, std::optional<Deferred<Type>> type,
                       Deferred<int> dims);
    virtual ~GeneratorInputBase() = default;
    GeneratorInputBase(const GeneratorInputBase &) = delete;
    GeneratorInputBase &operator=(const GeneratorInputBase &) = delete;

    const std::string &name() const { return name_; }
    bool is_buffer() const { return is_buffer_; }
    /** The element type (final once built). */
    Type type() const;
    int dimensions() const;
    /** "float32" or "Type param 'elem' (now float32)", for --list. */
    std::string type_description() const;
    std::string dims_description() const;
    /** Whether the underlying parameter exists yet. */
    bool materialized() const { return param_ != nullptr; }
    const ParameterPtr &parameter() const;

    /** Creates the parameter with the final type and rank. */
    virtual void materialize() = 0;

  protected:
    std::string name_;
    bool is_buffer_;
    std::optional<Deferred<Type>> type_;
    Deferred<int> dims_;
    ParameterPtr param_;
    void check_materialized() const;
};

/** An Output of a generator: a Func generate() defines, with the type and
 * rank the declaration promised (checked after generate()). */
class GeneratorOutputBase {
  public:
    GeneratorOutputBase(const std::string &name, std::optional<Deferred<Type>> type,
                        Deferred<int> dims);
    virtual ~GeneratorOutputBase() = default;
    GeneratorOutputBase(const GeneratorOutputBase &) = delete;
    GeneratorOutputBase &operator=(const GeneratorOutputBase &) = delete;

    const std::string &name() const { return name_; }
    /** The declared type, if any (Output<Buffer<>> without one takes the
     * type generate() gives it). */
    std::optional<Type> declared_type() const;
    int dimensions() const { return dims_.get(); }
    std::string type_description() const;
    std::string dims_description() const;
    const Func &func() const { return func_; }
    /** Throws CompileError if generate() left this undefined or defined it
     * with another type or rank. */
    void check_defined(const std::string &generator) const;

  protected:
    std::string name_;
    Func func_;
    std::optional<Deferred<Type>> type_;
    Deferred<int> dims_;
};

}  // namespace internal

/** A compile-time parameter of a generator, set from the command line as
 * name=value. T: bool, an integer or floating-point type, std::string,
 * loom::Type (written "float16", "int32", ...), loom::Target, or an enum
 * (give the name -> value map). Integer params may have a [min, max] range.
 *
 *     GeneratorParam<int> tile{"tile", 64, 8, 512};
 *     GeneratorParam<Mode> mode{"mode", Mode::Fast, {{"fast", Mode::Fast}, {"exact",
 * Mode::Exact}}};
 */
template <typename T> class GeneratorParam : public internal::GeneratorParamBase {
  public:
    /** Any param but an enum. */
    template <typename U = T, typename = std::enable_if_t<!std::is_enum_v<U>>>
    GeneratorParam(const std::string &name, const T &default_value)
        : GeneratorParamBase(name), value_(default_value) {
        record_default();
    }
    /** An integer or floating-point param that must lie in [min, max]. */
    template <typename U = T,
              typename = std::enable_if_t<std::is_arithmetic_v<U> && !std::is_same_v<U, bool>>>
    GeneratorParam(const std::string &name, const T &default_value, const T &min, const T &max)
        : GeneratorParamBase(name), value_(default_value), min_(min), max_(max), ranged_(true) {
        check_range(value_);
        record_default();
    }
    /** An enum param: the map lists every accepted name. */
    template <typename U = T, typename = std::enable_if_t<std::is_enum_v<U>>>
    GeneratorParam(const std::string &name, const T &default_value,
                   const std::map<std::string, T> &names)
        : GeneratorParamBase(name), value_(default_value), enum_names_(names) {
        user_assert(!names.empty()) << "GeneratorParam " << name << " has an empty list of names.";
        bool found = false;
        for (const auto &kv : names) found = found || kv.second == default_value;
        user_assert(found) << "The default value of GeneratorParam " << name
                           << " is not one of its named values.";
        record_default();
    }

    const T &value() const { return value_; }
    operator const T &() const { return value_; }
    /** Numeric params read directly as Exprs, e.g. as split factors. */
    template <typename U = T, typename = std::enable_if_t<std::is_arithmetic_v<U>>> operator Expr()
        const {
        return Expr(value_);
    }
    /** Sets the value from C++ (before build()). */
    void set(const T &v) {
        check_settable();
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) check_range(v);
        value_ = v;
    }

    std::string type_name() const override {
        if constexpr (std::is_enum_v<T>) return "enum";
        else return internal::ParamTraits<T>::type_name();
    }
    std::string value_string() const override {
        if constexpr (std::is_enum_v<T>) {
            for (const auto &kv : enum_names_) {
                if (kv.second == value_) return kv.first;
            }
            return "?";
        } else {
            return internal::ParamTraits<T>::to_string(value_);
        }
    }
    std::vector<std::string> valid_values() const override {
        if constexpr (std::is_enum_v<T>) {
            std::vector<std::string> names;
            for (const auto &kv : enum_names_) names.push_back(kv.first);
            return names;
        } else {
            return internal::ParamTraits<T>::valid_values();
        }
    }

    std::string range_string() const override {
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            if (ranged_) {
                return "[" + internal::ParamTraits<T>::to_string(min_) + ", " +
                       internal::ParamTraits<T>::to_string(max_) + "]";
            }
        }
        return "";
    }

  protected:
    void parse_and_set(const std::string &s) override {
        if constexpr (std::is_enum_v<T>) {
            auto it = enum_names_.find(s);
            if (it == enum_names_.end()) {
                std::string list;
                for (const auto &kv : enum_names_) list += (list.empty() ? "" : ", ") + kv.first;
                user_error << "Invalid value \"" << s << "\" for GeneratorParam " << name_
                           << "; valid values are: " << list << ".";
            }
            value_ = it->second;
        } else {
            T v = internal::ParamTraits<T>::parse(name_, s);
            if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) check_range(v);
            value_ = v;
        }
    }

  private:
    T value_;
    T min_{}, max_{};
    bool ranged_ = false;
    std::map<std::string, T> enum_names_;

    void check_range(const T &v) const {
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            if (ranged_ && (v < min_ || v > max_)) {
                user_error << "Value " << internal::ParamTraits<T>::to_string(v)
                           << " of GeneratorParam " << name_ << " is out of its range ["
                           << internal::ParamTraits<T>::to_string(min_) << ", "
                           << internal::ParamTraits<T>::to_string(max_) << "].";
            }
        }
    }
};

template <typename T> class Input;
template <typename T> class Output;

/** A buffer input. Input<Buffer<float>> has a fixed element type;
 * Input<Buffer<>> takes its type at construction, often from a
 * GeneratorParam<Type>. The rank may also come from a GeneratorParam<int>.
 * Usable like a BufferParam inside generate(). */
template <typename T> class Input<Buffer<T>> : public internal::GeneratorInputBase {
  public:
    template <typename U = T, typename = std::enable_if_t<!std::is_void_v<U>>>
    Input(const std::string &name, internal::Deferred<int> dimensions)
        : GeneratorInputBase(name, true, internal::Deferred<Type>(type_of<T>()), dimensions) {}
    template <typename U = T, typename = std::enable_if_t<std::is_void_v<U>>>
    Input(const std::string &name, internal::Deferred<Type> type,
          internal::Deferred<int> dimensions)
        : GeneratorInputBase(name, true, type, dimensions) {}

    /** See BufferParam::allow_strided_innermost. */
    Input &allow_strided_innermost() {
        strided_innermost_ = true;
        if (param_) param_->innermost_stride_one = false;
        return *this;
    }
    /** The BufferParam (only once the generator is being built). */
    BufferParam param() const {
        check_materialized();
        BufferParam b(Float(32), 0, "unused");
        b.param = param_;
        return b;
    }
    Dimension dim(int d) const { return param().dim(d); }

    Expr operator()(const std::vector<Expr> &args) const { return param()(args); }
    template <typename... Args,
              typename = std::enable_if_t<(std::is_convertible_v<Args &&, Expr> && ...)>>
    Expr operator()(Args &&...args) const {
        return (*this)(std::vector<Expr>{Expr(args)...});
    }

    void materialize() override {
        BufferParam b(type(), dimensions(), name_);
        if (strided_innermost_) b.allow_strided_innermost();
        param_ = b.param;
    }

  private:
    bool strided_innermost_ = false;
};

/** A scalar input, an argument of the generated function passed by value.
 * Converts to Expr inside generate(). */
template <typename T> class Input : public internal::GeneratorInputBase {
    static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, float16_t> ||
                      std::is_same_v<T, bfloat16_t>,
                  "Input<T>: T must be a scalar type, or Buffer<...> for a buffer input");

  public:
    explicit Input(const std::string &name)
        : GeneratorInputBase(name, false, internal::Deferred<Type>(type_of<T>()), 0) {}
    /** With a value for JIT calls that do not pass this argument. */
    Input(const std::string &name, T value) : Input(name) {
        value_ = value;
        has_value_ = true;
    }

    operator Expr() const {
        check_materialized();
        return internal::Variable::make(param_->type, param_->name, param_);
    }
    Expr expr() const { return Expr(*this); }
    /** The Param (only once the generator is being built). */
    Param<T> param() const {
        check_materialized();
        Param<T> p("unused");
        p.param = param_;
        return p;
    }
    /** Sets the value used by JIT realize() calls. */
    void set(T value) {
        value_ = value;
        has_value_ = true;
        if (param_) param().set(value);
    }

    void materialize() override {
        Param<T> p(name_);
        param_ = p.param;
        if (has_value_) p.set(value_);
    }

  private:
    T value_{};
    bool has_value_ = false;
};

/** An output buffer: generate() defines it like a Func, schedule() schedules
 * it like a Func (sched[output]). Output<Buffer<float>> has a fixed type;
 * Output<Buffer<>> takes one at construction (maybe from a
 * GeneratorParam<Type>) or accepts whatever generate() defines. */
template <typename T> class Output<Buffer<T>> : public internal::GeneratorOutputBase {
  public:
    /** Output<Buffer<T>>: of type T. Output<Buffer<>>: of the type
     * generate() gives it. */
    Output(const std::string &name, internal::Deferred<int> dimensions)
        : GeneratorOutputBase(name, static_type(), dimensions) {}
    template <typename U = T, typename = std::enable_if_t<std::is_void_v<U>>>
    Output(const std::string &name, internal::Deferred<Type> type,
           internal::Deferred<int> dimensions)
        : GeneratorOutputBase(name, type, dimensions) {}

    /** Makes an existing Func the output, for algorithms written as plain
     * Funcs elsewhere (output = algo.result;). Funcs cannot be renamed, so
     * the Func must have the Output's name (checked by build()): it names
     * the argument of the generated function. */
    Output &operator=(const Func &f) {
        func_ = f;
        return *this;
    }

    operator const Func &() const { return func_; }
    FuncRef operator()(const std::vector<Expr> &args) const { return func_(args); }
    template <typename... Args,
              typename = std::enable_if_t<(std::is_convertible_v<Args &&, Expr> && ...)>>
    FuncRef operator()(Args &&...args) const {
        return func_(std::vector<Expr>{Expr(args)...});
    }
    std::vector<Var> args() const { return func_.args(); }

  private:
    static std::optional<internal::Deferred<Type>> static_type() {
        if constexpr (std::is_void_v<T>) return std::nullopt;
        else return internal::Deferred<Type>(type_of<T>());
    }
};

/** One argument of the function a generator compiles to, as declared. */
struct GeneratorArgument {
    std::string name;
    Argument::Kind kind;
    Type type;
    int dimensions;
};

/** The base of every generator. Derive, declare GeneratorParams, Inputs and
 * Outputs as members (in the order the generated function takes them),
 * define the Outputs in generate() and schedule them in schedule() by
 * writing to `sched`. Register with LOOM_REGISTER_GENERATOR. */
class Generator : private internal::GeneratorMembers {
  public:
    Generator();
    virtual ~Generator();

    /** The algorithm: defines every Output. Params have their final values
     * and Inputs exist when it runs. */
    virtual void generate() = 0;
    /** The schedule: directives written into `sched`. Runs after
     * generate(); the default schedules nothing. */
    virtual void schedule() {}

    // ---- Before build().
    /** Sets a GeneratorParam (or "target") from its text form. Throws
     * CompileError for an unknown name (listing the valid ones) or a bad
     * value (naming the param and what it accepts). */
    void set_param(const std::string &name, const std::string &value);
    void set_params(const std::map<std::string, std::string> &values);
    void set_target(const Target &t) { target.set(t); }
    /** Every param, in declaration order; "target" comes first. */
    const std::vector<internal::GeneratorParamBase *> &params() const { return params_; }
    const std::vector<internal::GeneratorInputBase *> &inputs() const { return inputs_; }
    const std::vector<internal::GeneratorOutputBase *> &outputs() const { return outputs_; }
    const Target &get_target() const { return target.value(); }

    // ---- Building: the first call to any of these builds the generator.
    /** Creates the inputs, runs generate(), checks the outputs, runs
     * schedule(). Runs once; later calls do nothing. */
    void build();
    Pipeline pipeline();
    const Schedule &get_schedule();
    /** The arguments of the generated function: inputs, then outputs. */
    std::vector<GeneratorArgument> arguments();
    /** JIT-compiles for get_target(). Its arguments() are arguments(). */
    CompiledPipeline compile();

    /** The file kinds emit() writes and their suffixes:
     * static_library (.a, with .h), h (.h), object (.o), assembly (.s),
     * llvm_ir (.ll), stmt (.stmt). */
    static const std::vector<std::pair<std::string, std::string>> &emit_kinds();
    /** Writes `dir/basename.<suffix>` for each kind, with the C function
     * named `function_name`. Throws CompileError for an unknown kind. */
    void emit(const std::string &dir, const std::string &basename, const std::string &function_name,
              const std::vector<std::string> &kinds);

    /** The name this generator was registered under (empty if it was
     * constructed directly). */
    const std::string &registered_name() const { return registered_name_; }

  protected:
    /** What schedule() writes to. */
    Schedule sched;
    /** The target compiled for ("target=..." on the command line). */
    GeneratorParam<Target> target{"target", Target::host()};

  private:
    friend class GeneratorRegistry;
    std::string registered_name_;
    std::shared_ptr<Pipeline> pipeline_;
    bool build_failed_ = false;
    std::vector<Func> output_funcs() const;
    std::string display_name() const;
};

/** Every generator linked into this program, by name. */
class GeneratorRegistry {
  public:
    using Factory = std::function<std::unique_ptr<Generator>()>;
    /** Used by LOOM_REGISTER_GENERATOR; a second generator with the same
     * name is an error reported when the driver runs. */
    static void add(const std::string &name, Factory factory);
    static std::vector<std::string> names();
    /** A fresh instance; CompileError listing the known names if `name` is
     * not registered. */
    static std::unique_ptr<Generator> create(const std::string &name);
};

namespace internal {
struct RegisterGenerator {
    RegisterGenerator(const char *name, GeneratorRegistry::Factory f) {
        GeneratorRegistry::add(name, std::move(f));
    }
};
}  // namespace internal

/** What Generator::emit writes, for a pipeline built elsewhere (a
 * generator written in Python, say): `dir/basename.<suffix>` for each kind
 * of Generator::emit_kinds(), with the C function `function_name`. */
void emit_pipeline(const Pipeline &p, const Schedule &schedule, const Target &target,
                   const std::string &dir, const std::string &basename,
                   const std::string &function_name, const std::vector<std::string> &kinds);

/** Runs the generator driver on a command line (args[0] is the program
 * name), writing messages to `out` and errors to `err`. Returns the exit
 * status: 0 on success. The usage text lists the options. */
int run_generator(const std::vector<std::string> &args, std::ostream &out, std::ostream &err);
/** run_generator on main()'s arguments, with std::cout and std::cerr. */
int generator_main(int argc, char **argv);

/** Prints every registered generator (or only `name`) with its params
 * (name, type, default) and its arguments: the output of `--list`. */
void list_generators(std::ostream &out, const std::string &name = "");

}  // namespace loom

/** Registers `Class` (a loom::Generator) under the name `name` (a C
 * identifier, written without quotes). */
#define LOOM_REGISTER_GENERATOR(Class, name)                                             \
    namespace {                                                                          \
    const ::loom::internal::RegisterGenerator loom_register_generator_##name(#name, [] { \
        return std::unique_ptr<::loom::Generator>(new Class());                          \
    });                                                                                  \
    }
