#include "lower/BufferPromises.h"

#include "ir/Substitute.h"
#include "loom/IROperator.h"
#include "loom/Param.h"

namespace loom {
namespace internal {

namespace {

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }

std::string field_name(const ParameterPtr &p, const char *field, int d) {
    return p->name + "." + field + "." + std::to_string(d);
}

std::string role(const ParameterPtr &p) { return p->is_output ? "Output" : "Input"; }

/** How to call the directive that made a promise, for the messages. */
std::string directive(const ParameterPtr &p, int d, const char *name, int value) {
    return p->name + (p->is_output ? ".output_buffer()" : "") + ".dim(" + std::to_string(d) + ")." +
           name + "(" + std::to_string(value) + ")";
}

}  // namespace

Expr host_alignment_message(const std::string &buffer, bool is_output, int alignment,
                            const std::string &where, const Expr &address) {
    const std::string a = std::to_string(alignment);
    return error_message(
        {StringImm::make(std::string(is_output ? "Output" : "Input") + " buffer " + buffer +
                         " starts " + where + " at an address "),
         address % make_const(Int(64), alignment),
         StringImm::make(" bytes past a multiple of " + a + ", but " + buffer +
                         (is_output ? ".output_buffer()" : "") + ".set_host_alignment(" + a +
                         ") promised a multiple of " + a +
                         ". Pass a buffer whose first element is " + a +
                         "-byte aligned (a view cropped at an offset may not be), or compile "
                         "without the promise.")});
}

std::vector<ParameterPtr> promising_buffers(const std::vector<ParameterPtr> &params,
                                            const std::vector<FunctionPtr> &outputs) {
    std::vector<ParameterPtr> buffers;
    for (const ParameterPtr &p : params) {
        if (p->is_buffer) buffers.push_back(p);
    }
    for (const FunctionPtr &f : outputs) {
        for (const ParameterPtr &p : f->output_buffers) buffers.push_back(p);
    }
    return buffers;
}

std::map<std::string, Expr> fixed_sizes(const std::vector<ParameterPtr> &buffers) {
    std::map<std::string, Expr> constants;
    for (const ParameterPtr &p : buffers) {
        for (const auto &[d, extent] : p->fixed_extents) {
            constants[field_name(p, "extent", d)] = make_const(Int(32), extent);
        }
        for (const auto &[d, min] : p->fixed_mins) {
            constants[field_name(p, "min", d)] = make_const(Int(32), min);
        }
    }
    return constants;
}

Stmt substitute_fixed_sizes(const Stmt &s, const std::vector<ParameterPtr> &buffers) {
    const std::map<std::string, Expr> constants = fixed_sizes(buffers);
    return constants.empty() ? s : substitute(constants, s);
}

Stmt check_buffer_promises(const Stmt &s, const std::vector<ParameterPtr> &buffers) {
    std::vector<Stmt> checks;
    auto fixed = [&](const ParameterPtr &p, int d, const char *field, const char *directive_name,
                     int value) {
        Expr actual = int_var(field_name(p, field, d));
        std::string k = std::to_string(d);
        checks.push_back(AssertStmt::make(
            actual == value,
            error_message(
                {StringImm::make(role(p) + " buffer " + p->name + " has " + field + " "), actual,
                 StringImm::make(
                     " in dimension " + k + ", but the pipeline was compiled for exactly " +
                     std::to_string(value) + " (" + directive(p, d, directive_name, value) +
                     "). Pass a buffer with that " + field + ", or compile for this one.")})));
    };
    for (const ParameterPtr &p : buffers) {
        if (p->host_alignment > 1) {
            Expr address = Variable::make(Int(64), p->name + ".host_address");
            checks.push_back(AssertStmt::make(
                address % make_const(Int(64), p->host_alignment) == make_zero(Int(64)),
                host_alignment_message(p->name, p->is_output, p->host_alignment, "on the host",
                                       address)));
        }
        for (const auto &[d, extent] : p->fixed_extents) {
            fixed(p, d, "extent", "set_extent", extent);
        }
        for (const auto &[d, min] : p->fixed_mins) fixed(p, d, "min", "set_min", min);
        for (const auto &[d, multiple] : p->stride_multiples) {
            Expr actual = int_var(field_name(p, "stride", d));
            checks.push_back(AssertStmt::make(
                actual % multiple == 0,
                error_message(
                    {StringImm::make(role(p) + " buffer " + p->name + " has stride "), actual,
                     StringImm::make(" in dimension " + std::to_string(d) +
                                     ", which is not a multiple of " + std::to_string(multiple) +
                                     " as " + directive(p, d, "set_stride_multiple", multiple) +
                                     " promised. Pass a buffer whose rows are padded to a "
                                     "multiple of " +
                                     std::to_string(multiple) +
                                     " elements, or compile without the promise.")})));
        }
    }
    if (checks.empty()) return s;
    checks.push_back(s);
    return Block::make(checks);
}

Scope<ModulusRemainder> promised_congruences(const std::vector<ParameterPtr> &buffers) {
    Scope<ModulusRemainder> facts;
    for (const ParameterPtr &p : buffers) {
        for (const auto &[d, multiple] : p->stride_multiples) {
            facts.push(field_name(p, "stride", d), ModulusRemainder(multiple, 0));
        }
    }
    return facts;
}

}  // namespace internal
}  // namespace loom
