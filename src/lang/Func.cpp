#include "loom/Func.h"

#include <set>

#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/Scope.h"
#include "ir/Util.h"
#include "lang/Function.h"
#include "loom/Interpreter.h"
#include "lower/BoundsInference.h"

namespace loom {

using namespace internal;

namespace internal {

/** Realizes f over [0, sizes) with the default schedule. Defined by the
 * pipeline (Pipeline.cpp); Func::realize forwards to it. */
RawBuffer realize_with_default_schedule(const Func &f, const std::vector<int> &sizes);

// A weak fallback, so that libloom links (and Func::realize works, through the
// reference interpreter) before or without the compiled pipeline. The strong
// definition in Pipeline.cpp replaces it at link time.
__attribute__((weak)) RawBuffer realize_with_default_schedule(const Func &f,
                                                              const std::vector<int> &sizes) {
    return interpret(f, sizes);
}

}  // namespace internal

namespace {

// The name of e if it is a pure Var (a Variable that is neither a parameter
// nor a reduction variable), else null.
const std::string *as_pure_var(const Expr &e) {
    const Variable *v = e.as<Variable>();
    if (v && !v->param && !v->rdom) return &v->name;
    return nullptr;
}

// A C++ literal (an int or float constant that has not been given a type on
// purpose), which may adapt to the type of a Func in an update.
bool is_literal(const Expr &e) {
    if (!e.defined() || !e.type().is_scalar()) return false;
    if (e.as<IntImm>()) return e.type() == Int(32);
    if (e.as<FloatImm>()) return e.type() == Float(32) || e.type() == Float(64);
    return false;
}

// Collects what a definition refers to: free pure Vars (in order of first
// appearance), reduction domains, and calls to the Func being defined.
class DefinitionScanner : public IRVisitor {
  public:
    explicit DefinitionScanner(const FunctionContents *self = nullptr) : self(self) {}

    std::vector<std::string> pure_vars;
    std::vector<ReductionDomainPtr> rdoms;
    std::vector<std::string> rvar_names;  // first RVar seen of each rdom
    std::vector<const Call *> self_calls;

    void scan(const Expr &e) {
        if (e.defined()) e.accept(this);
    }

  protected:
    using IRVisitor::visit;
    void visit(const Variable *op) override {
        if (lets.contains(op->name) || op->param) return;
        if (op->rdom) {
            for (const auto &r : rdoms) {
                if (r.get() == op->rdom.get()) return;
            }
            rdoms.push_back(op->rdom);
            rvar_names.push_back(op->name);
            return;
        }
        if (seen.insert(op->name).second) pure_vars.push_back(op->name);
    }
    void visit(const Let *op) override {
        op->value.accept(this);
        ScopedBinding<int> bind(lets, op->name, 0);
        op->body.accept(this);
    }
    void visit(const Call *op) override {
        if (self && op->call_type == Call::Func && op->func.get() == self) {
            self_calls.push_back(op);
        }
        IRVisitor::visit(op);
    }

  private:
    const FunctionContents *self;
    std::set<std::string> seen;
    Scope<int> lets;
};

// Calls from a Func's update definitions to itself hold a non-owning alias of
// the Func, so that the Func does not own itself (a shared_ptr cycle that would
// leak it). The alias compares equal (by get()) to every other pointer to the
// Func and is only reachable through the Func, which keeps it alive.
class WeakenSelfCalls : public IRMutator {
  public:
    explicit WeakenSelfCalls(FunctionContents *self) : self(self) {}

  protected:
    using IRMutator::visit;
    Expr visit(const Call *op) override {
        Expr e = IRMutator::visit(op);
        const Call *c = e.as<Call>();
        if (c && c->call_type == Call::Func && c->func.get() == self && c->func.use_count() != 0) {
            FunctionPtr weak(FunctionPtr(), self);
            return Call::make(c->type, c->name, c->args, c->call_type, weak, c->value_index,
                              c->param, c->buffer);
        }
        return e;
    }

  private:
    FunctionContents *self;
};

std::vector<Expr> int32_args(const std::string &func, const std::vector<Expr> &args) {
    std::vector<Expr> r;
    for (size_t i = 0; i < args.size(); i++) {
        const Expr &a = args[i];
        user_assert(a.defined()) << "Argument " << i << " of Func " << func << " is undefined.";
        user_assert(a.type().is_scalar())
            << "Argument " << i << " of Func " << func << " is a vector ("
            << type_to_string(a.type()) << "); Func coordinates are scalars.";
        user_assert(a.type().is_int_or_uint())
            << "Argument " << i << " of Func " << func << " has type " << type_to_string(a.type())
            << "; Func coordinates must be integers. Cast it (e.g. cast<int>(floor(e))).";
        r.push_back(cast(Int(32), a));
    }
    return r;
}

Expr make_func_call(const FunctionPtr &f, const std::vector<Expr> &args, int index) {
    user_assert(f->init.defined())
        << "Func " << f->name << " is used before it is defined. Define " << f->name << " (e.g. "
        << f->name << "(x) = ...) before any definition that calls it.";
    user_assert(args.size() == f->args.size())
        << "Func " << f->name << " has " << f->args.size() << " dimensions but is called with "
        << args.size() << " arguments.";
    user_assert(index >= 0 && index < static_cast<int>(f->output_types.size()))
        << "Func " << f->name << " has " << f->output_types.size() << " outputs, so output "
        << index << " does not exist.";
    return Call::make(f->output_types[index], f->name, int32_args(f->name, args), Call::Func, f,
                      index);
}

void check_values(const std::string &func, const std::vector<Expr> &values) {
    user_assert(!values.empty()) << "Definition of Func " << func << " has no values.";
    for (size_t i = 0; i < values.size(); i++) {
        user_assert(values[i].defined()) << "Definition of Func " << func << ": value " << i
                                         << " is undefined (an Expr that was never assigned).";
        user_assert(values[i].type().is_scalar() && !values[i].type().is_handle())
            << "Definition of Func " << func << ": value " << i << " has type "
            << type_to_string(values[i].type()) << "; Funcs hold scalar numbers.";
    }
}

void define_pure(FunctionContents &f, const std::vector<Expr> &args,
                 const std::vector<Expr> &values) {
    check_values(f.name, values);
    std::vector<std::string> names;
    for (size_t i = 0; i < args.size(); i++) {
        const Expr &a = args[i];
        user_assert(a.defined()) << "Argument " << i << " of Func " << f.name << " is undefined.";
        const Variable *v = a.as<Variable>();
        user_assert(v && !v->rdom)
            << "The pure definition of Func " << f.name << " has argument " << i
            << (v ? " = RVar " + v->name : std::string(" that is not a Var"))
            << ". The first definition of a Func must use distinct pure Vars (e.g. f(x, y) = "
               "...); use an update definition for RVars or expressions.";
        user_assert(!v->param) << "The pure definition of Func " << f.name << " has argument " << i
                               << " = parameter " << v->name
                               << ". The first definition must use distinct pure Vars.";
        for (const std::string &n : names) {
            user_assert(n != v->name)
                << "The pure definition of Func " << f.name << " uses Var " << v->name
                << " twice. The arguments of a pure definition must be distinct Vars.";
        }
        names.push_back(v->name);
    }
    DefinitionScanner scan;
    for (const Expr &e : values) scan.scan(e);
    user_assert(scan.rdoms.empty())
        << "The pure definition of Func " << f.name << " uses RVar " << scan.rvar_names[0]
        << ". RVars may only appear in update definitions or inside inline reductions "
           "(sum, maximum, ...).";
    for (const std::string &v : scan.pure_vars) {
        user_assert(std::find(names.begin(), names.end(), v) != names.end())
            << "Var " << v << " is used in the definition of Func " << f.name
            << " but is not one of its arguments (" << join(names, ", ") << ").";
    }
    f.args = names;
    f.output_types.clear();
    for (const Expr &e : values) f.output_types.push_back(e.type());
    f.init.args = args;
    f.init.values = values;
    f.init.rdom = nullptr;
}

// Makes an update value have the Func's type: literals convert (as they would
// in an operator), anything else must already match.
Expr convert_update_value(const FunctionContents &f, size_t i, const Expr &v) {
    Type t = f.output_types[i];
    if (v.type() == t) return v;
    if (is_literal(v)) {
        if (const IntImm *imm = v.as<IntImm>()) {
            if (t.is_float() || t.can_represent(imm->value)) return make_const(t, imm->value);
        } else if (const FloatImm *imm = v.as<FloatImm>()) {
            if (t.is_float() || t.can_represent(imm->value)) return make_const(t, imm->value);
        }
    }
    user_error << "type mismatch in update of " << f.name << ": value"
               << (f.output_types.size() > 1 ? " " + std::to_string(i) : std::string()) << " " << v
               << " has type " << type_to_string(v.type()) << " but " << f.name << " has type "
               << type_to_string(t) << ". Cast the value (e.g. cast<" << type_to_string(t)
               << ">(...)).";
}

void define_update(const FunctionPtr &fp, const std::vector<Expr> &raw_args,
                   const std::vector<Expr> &raw_values) {
    FunctionContents &f = *fp;
    check_values(f.name, raw_values);
    user_assert(raw_values.size() == f.output_types.size())
        << "Func " << f.name << " has " << f.output_types.size()
        << (f.output_types.size() == 1 ? " value" : " Tuple elements")
        << " but this update definition gives " << raw_values.size() << ".";
    user_assert(raw_args.size() == f.args.size())
        << "Func " << f.name << " has " << f.args.size()
        << " dimensions but this update definition gives " << raw_args.size() << " arguments.";
    std::vector<Expr> args = int32_args(f.name, raw_args);
    std::vector<Expr> values;
    for (size_t i = 0; i < raw_values.size(); i++) {
        values.push_back(convert_update_value(f, i, raw_values[i]));
    }

    // Pure Vars may appear in an update only in their own position of the
    // left-hand side (Halide's rule): then each value of the Var is an
    // independent copy of the update, whatever the schedule.
    std::vector<bool> pure_at(args.size(), false);
    for (size_t i = 0; i < args.size(); i++) {
        if (const std::string *n = as_pure_var(args[i])) {
            user_assert(*n == f.args[i])
                << "In an update definition of Func " << f.name << ", Var " << *n << " is argument "
                << i << ", but the pure definition has " << f.args[i]
                << " there. A pure Var may only be used in its own position; use an RVar or "
                   "an expression elsewhere.";
            pure_at[i] = true;
        }
    }
    DefinitionScanner scan(fp.get());
    for (const Expr &e : args) scan.scan(e);
    for (const Expr &e : values) scan.scan(e);
    user_assert(scan.rdoms.size() <= 1)
        << "The update definition of Func " << f.name << " uses RVars of several RDoms ("
        << scan.rvar_names[0] << " and " << scan.rvar_names[1]
        << "). All RVars of one update must come from a single RDom.";
    ReductionDomainPtr rdom = scan.rdoms.empty() ? nullptr : scan.rdoms[0];
    if (rdom) {
        scan.scan(rdom->predicate);
        user_assert(scan.rdoms.size() == 1)
            << "The where() condition of RDom " << rdom->name << " uses RVar " << scan.rvar_names[1]
            << " of another RDom (in the update of Func " << f.name << ").";
        DefinitionScanner bounds;
        for (const ReductionVariable &rv : rdom->domain) {
            bounds.scan(rv.min);
            bounds.scan(rv.extent);
        }
        user_assert(bounds.pure_vars.empty() && bounds.rdoms.empty())
            << "The bounds of RDom " << rdom->name << " (used by Func " << f.name << ") depend on "
            << (bounds.pure_vars.empty() ? bounds.rvar_names[0] : bounds.pure_vars[0])
            << "; RDom bounds may only use constants and Params.";
    }
    for (const std::string &v : scan.pure_vars) {
        bool ok = false;
        for (size_t i = 0; i < args.size(); i++) ok = ok || (pure_at[i] && f.args[i] == v);
        user_assert(ok) << "Var " << v << " is used in an update definition of Func " << f.name
                        << " but is not one of its left-hand-side arguments in its own "
                           "position. In an update, a pure Var must appear as itself at the "
                           "position it has in the pure definition.";
    }
    for (const Call *c : scan.self_calls) {
        for (size_t i = 0; i < args.size(); i++) {
            if (!pure_at[i]) continue;
            const std::string *n = as_pure_var(c->args[i]);
            user_assert(n && *n == f.args[i])
                << "In an update definition of Func " << f.name << ", a call of " << f.name
                << " to itself must use Var " << f.args[i] << " as argument " << i
                << ", as the left-hand side does.";
        }
    }
    bool all_pure = true;
    for (bool p : pure_at) all_pure = all_pure && p;
    user_assert(!(all_pure && !rdom && scan.self_calls.empty()))
        << "Func " << f.name << " is already defined; this second definition would replace it "
        << "everywhere. An update definition must use an RDom, a non-Var argument, or read "
        << f.name << " itself. To define something new, use a new Func.";

    if (rdom) rdom->frozen = true;
    WeakenSelfCalls weaken(fp.get());
    Definition d;
    for (const Expr &e : args) d.args.push_back(weaken.mutate(e));
    for (const Expr &e : values) d.values.push_back(weaken.mutate(e));
    d.rdom = rdom;
    f.updates.push_back(std::move(d));
}

}  // namespace

// ---------------------------------------------------------------- FuncRef

void FuncRef::define(const std::vector<Expr> &values) {
    if (!func_->init.defined()) define_pure(*func_, args_, values);
    else define_update(func_, args_, values);
}

FuncRef &FuncRef::operator=(const Expr &e) {
    define({e});
    return *this;
}

FuncRef &FuncRef::operator=(const Tuple &t) {
    define(t.as_vector());
    return *this;
}

FuncRef &FuncRef::operator=(const FuncRef &other) {
    if (other.func_->init.defined() && other.func_->output_types.size() > 1) {
        define(other.as_tuple().as_vector());
    } else {
        define({Expr(other)});
    }
    return *this;
}

void FuncRef::define_update_with_identity(const Expr &e, const char *op, int identity) {
    user_assert(e.defined()) << "Func " << func_->name << "(...) " << op
                             << "= of an undefined Expr.";
    if (!func_->init.defined()) {
        // Halide's convenience: the first compound assignment defines the
        // Func as the identity of the operator, over the Vars of the left side
        // where they are Vars and fresh Vars elsewhere.
        std::vector<Expr> pure_args;
        std::set<std::string> used;
        for (const Expr &a : args_) {
            const std::string *n = a.defined() ? as_pure_var(a) : nullptr;
            if (n && used.insert(*n).second) pure_args.push_back(a);
            else pure_args.push_back(Var());
        }
        define_pure(*func_, pure_args, {make_const(e.type().element_of(), identity)});
    }
    user_assert(func_->output_types.size() == 1)
        << "Func " << func_->name << " returns a Tuple; " << op
        << "= applies to single-valued Funcs. Write the update with a Tuple instead.";
    Expr cur = make_func_call(func_, args_, 0);
    Expr value;
    switch (op[0]) {
    case '+': value = cur + e; break;
    case '-': value = cur - e; break;
    case '*': value = cur * e; break;
    case '/': value = cur / e; break;
    default: internal_error << "compound assignment " << op;
    }
    define({value});
}

FuncRef &FuncRef::operator+=(const Expr &e) {
    define_update_with_identity(e, "+", 0);
    return *this;
}
FuncRef &FuncRef::operator-=(const Expr &e) {
    define_update_with_identity(e, "-", 0);
    return *this;
}
FuncRef &FuncRef::operator*=(const Expr &e) {
    define_update_with_identity(e, "*", 1);
    return *this;
}
FuncRef &FuncRef::operator/=(const Expr &e) {
    define_update_with_identity(e, "/", 1);
    return *this;
}

FuncRef::operator Expr() const {
    user_assert(!func_->init.defined() || func_->output_types.size() == 1)
        << "Func " << func_->name << " returns a Tuple of " << func_->output_types.size()
        << " values; use " << func_->name << "(...)[i] to pick one.";
    return make_func_call(func_, args_, 0);
}

Expr FuncRef::operator[](int i) const { return make_func_call(func_, args_, i); }

Tuple FuncRef::as_tuple() const {
    std::vector<Expr> v;
    // make_func_call reports a use before definition.
    v.push_back(make_func_call(func_, args_, 0));
    for (size_t i = 1; i < func_->output_types.size(); i++) {
        v.push_back(make_func_call(func_, args_, static_cast<int>(i)));
    }
    return Tuple(v);
}

// ---------------------------------------------------------------- Func

Func::Func() : Func(unique_name("f")) {}

Func::Func(const std::string &name) {
    user_assert(!name.empty()) << "A Func needs a non-empty name (or use Func() for a fresh one).";
    contents_ = std::make_shared<FunctionContents>();
    contents_->name = name;
}

Func::Func(const RawBuffer &b) {
    user_assert(b.defined()) << "Func(buffer) of an undefined buffer.";
    contents_ = std::make_shared<FunctionContents>();
    contents_->name = unique_name(b.name());
    std::vector<Expr> args;
    for (int d = 0; d < b.dimensions(); d++) args.push_back(Var());
    Expr call = Call::make(b.type(), b.name(), args, Call::Image, nullptr, 0, nullptr, b.contents);
    define_pure(*contents_, args, {call});
}

const std::string &Func::name() const { return contents_->name; }
bool Func::defined() const { return contents_->init.defined(); }
int Func::dimensions() const { return static_cast<int>(contents_->args.size()); }
int Func::outputs() const { return static_cast<int>(contents_->output_types.size()); }

OutputBuffer Func::output_buffer(int i) const {
    user_assert(defined()) << "Func " << name()
                           << " has no definition yet; define it before asking for its "
                              "output_buffer().";
    user_assert(i >= 0 && i < outputs())
        << "Func " << name() << " has " << outputs() << " output" << (outputs() == 1 ? "" : "s")
        << ", so output_buffer(" << i << ") does not exist.";
    std::vector<ParameterPtr> &buffers = contents_->output_buffers;
    if (buffers.empty()) {
        for (size_t k = 0; k < contents_->output_types.size(); k++) {
            auto p = std::make_shared<ParameterContents>();
            p->name = output_buffer_name(contents_, static_cast<int>(k));
            p->type = contents_->output_types[k];
            p->is_buffer = true;
            p->is_output = true;
            p->dimensions = dimensions();
            buffers.push_back(p);
        }
    }
    return OutputBuffer(buffers[i]);
}

std::vector<Var> Func::args() const {
    std::vector<Var> v;
    for (const std::string &n : contents_->args) v.emplace_back(n);
    return v;
}

std::vector<Type> Func::output_types() const { return contents_->output_types; }

Type Func::type() const {
    user_assert(defined()) << "Func " << name() << " has no type: it is not defined yet.";
    user_assert(outputs() == 1) << "Func " << name() << " returns a Tuple of " << outputs()
                                << " values; use output_types().";
    return contents_->output_types[0];
}

int Func::num_update_definitions() const { return static_cast<int>(contents_->updates.size()); }

FuncRef Func::operator()(const std::vector<Expr> &args) const { return FuncRef(contents_, args); }

RawBuffer Func::realize(const std::vector<int> &sizes) const {
    user_assert(defined()) << "Func " << name() << " cannot be realized: it is not defined.";
    return realize_with_default_schedule(*this, sizes);
}

// ---------------------------------------------------------------- inline reductions

namespace {

struct InlineReduction {
    ReductionDomainPtr rdom;
    std::vector<Expr> vars;  // the free pure Vars, in order of first appearance
};

InlineReduction analyze_inline(const Expr &e, const std::string &name) {
    user_assert(e.defined()) << "Inline reduction " << name << "() of an undefined Expr.";
    user_assert(e.type().is_scalar()) << "Inline reduction " << name << "() of a vector.";
    DefinitionScanner scan;
    scan.scan(e);
    user_assert(!scan.rdoms.empty())
        << "Inline reduction " << name << "() has no RVar to reduce over. Use an RDom in its "
        << "argument, e.g. " << name << "(f(x, r)) with RDom r.";
    user_assert(scan.rdoms.size() == 1)
        << "Inline reduction " << name << "() uses RVars of several RDoms (" << scan.rvar_names[0]
        << " and " << scan.rvar_names[1] << "); one inline reduction reduces over one RDom.";
    InlineReduction r;
    r.rdom = scan.rdoms[0];
    // Pure Vars in the where() condition (e.g. a causal mask r <= i) are free
    // variables of the reduction too.
    scan.scan(r.rdom->predicate);
    for (const std::string &v : scan.pure_vars) r.vars.push_back(Var(v));
    return r;
}

Expr inline_reduce(const Expr &e, const std::string &name, char op) {
    InlineReduction r = analyze_inline(e, name);
    Type t = e.type();
    Func f(unique_name(name));
    f.function()->is_inline_reduction = true;
    Expr init;
    switch (op) {
    case '+': init = make_zero(t); break;
    case '*': init = make_one(t); break;
    case '>': init = type_min(t); break;
    case '<': init = type_max(t); break;
    }
    f(r.vars) = init;
    Expr cur = f(r.vars);
    Expr value;
    switch (op) {
    case '+': value = cur + e; break;
    case '*': value = cur * e; break;
    case '>': value = max(cur, e); break;
    case '<': value = min(cur, e); break;
    }
    f(r.vars) = value;
    return f(r.vars);
}

Tuple inline_arg_reduce(const Expr &e, const std::string &name, bool is_max) {
    InlineReduction r = analyze_inline(e, name);
    Type t = e.type();
    Func f(unique_name(name));
    f.function()->is_inline_reduction = true;
    int n = static_cast<int>(r.rdom->domain.size());
    // Start at the first corner of the domain, so that a domain whose values
    // never beat the initial extreme (all -inf, say) still yields coordinates
    // inside it.
    std::vector<Expr> init;
    for (int i = 0; i < n; i++) init.push_back(r.rdom->domain[i].min);
    init.push_back(is_max ? type_min(t) : type_max(t));
    f(r.vars) = Tuple(init);
    FuncRef cur = f(r.vars);
    Expr best = cur[n];
    // Strict comparison: on ties the earliest point (in iteration order) wins.
    Expr better = is_max ? (e > best) : (e < best);
    std::vector<Expr> update;
    for (int i = 0; i < n; i++) update.push_back(select(better, Expr(RVar(r.rdom, i)), cur[i]));
    update.push_back(select(better, e, best));
    f(r.vars) = Tuple(update);
    return f(r.vars).as_tuple();
}

}  // namespace

Expr sum(Expr e, const std::string &name) { return inline_reduce(e, name, '+'); }
Expr product(Expr e, const std::string &name) { return inline_reduce(e, name, '*'); }
Expr maximum(Expr e, const std::string &name) { return inline_reduce(e, name, '>'); }
Expr minimum(Expr e, const std::string &name) { return inline_reduce(e, name, '<'); }
Tuple argmax(Expr e, const std::string &name) { return inline_arg_reduce(e, name, true); }
Tuple argmin(Expr e, const std::string &name) { return inline_arg_reduce(e, name, false); }

}  // namespace loom
