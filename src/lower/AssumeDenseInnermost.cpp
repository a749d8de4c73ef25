// Buffers are assumed contiguous in their innermost dimension unless a
// BufferParam allows otherwise (outputs always are): stride 1 is
// substituted for that stride, so that vector accesses are dense, and the
// assumption is checked when the pipeline runs.
#include "lower/AssumeDenseInnermost.h"

#include "ir/Substitute.h"
#include "loom/IROperator.h"
#include "lower/BoundsInference.h"

namespace loom {
namespace internal {

namespace {

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }

/** A buffer argument whose innermost dimension is assumed contiguous. */
struct DenseBuffer {
    std::string name;
    int dimensions;
    bool is_input;
};

Stmt assume_dense_innermost(const Stmt &s, const std::vector<DenseBuffer> &buffers) {
    Stmt body = s;
    std::vector<Stmt> checks;
    for (const DenseBuffer &b : buffers) {
        if (b.dimensions == 0) continue;
        std::string k = std::to_string(b.dimensions - 1);
        std::string stride = b.name + ".stride." + k;
        body = substitute(stride, make_one(Int(32)), body);
        std::string advice = b.is_input
                                 ? "Pass a dense buffer, or call allow_strided_innermost() on "
                                   "the BufferParam."
                                 : "Pass a dense output buffer.";
        // An empty buffer holds no element: its strides say nothing (NumPy
        // and others give a zero-size array any strides).
        Expr empty = const_false();
        for (int d = 0; d < b.dimensions; d++) {
            empty = empty || int_var(b.name + ".extent." + std::to_string(d)) <= 0;
        }
        checks.push_back(AssertStmt::make(
            int_var(stride) == 1 || empty,
            error_message(
                {StringImm::make("Buffer " + b.name + " has stride "), int_var(stride),
                 StringImm::make(" in its innermost dimension " + k +
                                 "; Loom expects it to be contiguous (stride 1). " + advice)})));
    }
    checks.push_back(body);
    return Block::make(checks);
}

}  // namespace

Stmt assume_dense_innermost(const Stmt &s, const std::vector<ParameterPtr> &params,
                            const std::vector<FunctionPtr> &outputs) {
    std::vector<DenseBuffer> dense;
    for (const ParameterPtr &p : params) {
        if (p->is_buffer && p->innermost_stride_one)
            dense.push_back({p->name, p->dimensions, true});
    }
    for (const FunctionPtr &out : outputs) {
        for (size_t i = 0; i < out->output_types.size(); i++) {
            dense.push_back({output_buffer_name(out, static_cast<int>(i)),
                             static_cast<int>(out->args.size()), false});
        }
    }
    return assume_dense_innermost(s, dense);
}

}  // namespace internal
}  // namespace loom
