#include "loom/Param.h"

#include <sstream>

#include "ir/Util.h"
#include "loom/Func.h"

namespace loom {
namespace internal {

uint64_t next_parameter_serial() {
    static std::atomic<uint64_t> counter{0};
    return counter++;
}

}  // namespace internal

using namespace internal;

namespace {

const char *kind(const ParameterPtr &p) { return p->is_output ? "Output buffer " : "BufferParam "; }

// The descriptor fields of a buffer are Int(32) variables named
// "<buffer>.<field>.<dim>", the names LoweredFunc gives them, and carry the
// parameter so that passes and the interpreter can tell them from loop vars.
Expr dim_var(const ParameterPtr &p, const char *field, int d) {
    user_assert(!p->is_output) << "Output buffer " << p->name << ".dim(" << d << ")." << field
                               << "() cannot be read in the algorithm: an output buffer takes "
                                  "promises (set_extent, set_min, ...) only.";
    return Variable::make(Int(32), p->name + "." + field + "." + std::to_string(d), p);
}

}  // namespace

Expr Dimension::min() const { return dim_var(param, "min", dim); }
Expr Dimension::extent() const { return dim_var(param, "extent", dim); }
Expr Dimension::stride() const { return dim_var(param, "stride", dim); }
Expr Dimension::max() const { return min() + extent() - 1; }

std::string Dimension::describe(const char *directive, int value) const {
    std::ostringstream s;
    s << kind(param) << param->name << ".dim(" << dim << ")." << directive << "(" << value << ")";
    return s.str();
}

Dimension &Dimension::set_extent(int extent) {
    user_assert(extent >= 0) << describe("set_extent", extent) << ": an extent cannot be negative.";
    param->fixed_extents[dim] = extent;
    return *this;
}

Dimension &Dimension::set_min(int min) {
    param->fixed_mins[dim] = min;
    return *this;
}

Dimension &Dimension::set_stride_multiple(int multiple) {
    user_assert(multiple > 0) << describe("set_stride_multiple", multiple)
                              << ": the multiple must be positive.";
    param->stride_multiples[dim] = multiple;
    return *this;
}

namespace {

void check_host_alignment(const ParameterPtr &p, int bytes) {
    user_assert(bytes > 0 && (bytes & (bytes - 1)) == 0)
        << kind(p) << p->name << ".set_host_alignment(" << bytes
        << "): the alignment must be a power of two number of bytes, such as 16.";
    p->host_alignment = bytes;
}

Dimension dimension_of(const ParameterPtr &p, int d) {
    user_assert(d >= 0 && d < p->dimensions) << kind(p) << p->name << " has " << p->dimensions
                                             << " dimensions, so dim(" << d << ") does not exist.";
    return Dimension(p, d);
}

}  // namespace

BufferParam::BufferParam(Type t, int dimensions, const std::string &name) {
    param = std::make_shared<ParameterContents>();
    param->name = name.empty() ? unique_name("b") : name;
    user_assert(dimensions >= 0) << "BufferParam " << param->name << " is declared with "
                                 << dimensions << " dimensions; the count cannot be negative.";
    user_assert(t.is_scalar() && !t.is_handle())
        << "BufferParam " << param->name << " has element type " << type_to_string(t)
        << "; buffer elements must be scalar numbers.";
    param->type = t;
    param->is_buffer = true;
    param->dimensions = dimensions;
}

BufferParam &BufferParam::set_host_alignment(int bytes) {
    check_host_alignment(param, bytes);
    return *this;
}

Dimension OutputBuffer::dim(int d) const { return dimension_of(param, d); }

OutputBuffer &OutputBuffer::set_host_alignment(int bytes) {
    check_host_alignment(param, bytes);
    return *this;
}

Dimension BufferParam::dim(int d) const { return dimension_of(param, d); }

void BufferParam::set(const RawBuffer &b) {
    if (!b.defined()) {
        param->buffer = RawBuffer();
        return;
    }
    if (b.type() != param->type) {
        runtime_error_report << "BufferParam " << param->name << " has element type "
                             << type_to_string(param->type) << " but is bound to buffer "
                             << b.name() << " of type " << type_to_string(b.type()) << ".";
    }
    if (b.dimensions() != param->dimensions) {
        runtime_error_report << "BufferParam " << param->name << " has " << param->dimensions
                             << " dimensions but is bound to buffer " << b.name() << " with "
                             << b.dimensions() << ".";
    }
    param->buffer = b;
}

Expr BufferParam::operator()(const std::vector<Expr> &args) const {
    user_assert(static_cast<int>(args.size()) == param->dimensions)
        << "BufferParam " << param->name << " has " << param->dimensions
        << " dimensions but is called with " << args.size() << " arguments.";
    std::vector<Expr> int_args;
    for (size_t i = 0; i < args.size(); i++) {
        const Expr &a = args[i];
        user_assert(a.defined()) << "Argument " << i << " of a call to BufferParam " << param->name
                                 << " is undefined.";
        user_assert(a.type().is_scalar())
            << "Argument " << i << " of a call to BufferParam " << param->name << " is a vector ("
            << type_to_string(a.type()) << "); coordinates are scalars.";
        user_assert(a.type().is_int_or_uint())
            << "Argument " << i << " of a call to BufferParam " << param->name << " has type "
            << type_to_string(a.type())
            << "; coordinates must be integers. Cast it (e.g. cast<int>(floor(e))).";
        int_args.push_back(cast(Int(32), a));
    }
    return Call::make(param->type, param->name, int_args, Call::Image, nullptr, 0, param);
}

}  // namespace loom
