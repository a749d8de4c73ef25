// Run-time checks of buffer arguments (see ArgumentChecks.h).
#include "lower/ArgumentChecks.h"

#include "loom/IROperator.h"
#include "loom/Param.h"
#include "lower/BoundsInference.h"

namespace loom {
namespace internal {

namespace {

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }
Expr bool_var(const std::string &name) { return Variable::make(Bool(), name); }

struct BufferArg {
    std::string name;
    Type type;
    int dimensions;
    bool is_output;
};

/** The checks of one buffer, in the order a caller should hear about its
 * mistakes: a missing descriptor first, then its type and rank, then its
 * memory. Each one only reads fields that the previous ones validated (code
 * generation substitutes zeros for a null descriptor's fields and for the
 * dims of a descriptor with the wrong rank, so every read is safe anyway). */
void check_buffer(const BufferArg &b, std::vector<Stmt> *checks) {
    std::string role = b.is_output ? "Output" : "Input";
    std::string who = role + " buffer " + b.name;
    checks->push_back(AssertStmt::make(
        !bool_var(b.name + ".is_null"),
        StringImm::make(who + " is a null pointer: pass a loom_buffer_t describing its memory.")));

    Expr code = int_var(b.name + ".type.code"), bits = int_var(b.name + ".type.bits"),
         lanes = int_var(b.name + ".type.lanes");
    Expr actual_name = Call::make(Handle(), "loom_type_name", {code, bits, lanes}, Call::Extern);
    checks->push_back(AssertStmt::make(
        code == static_cast<int>(b.type.code) && bits == static_cast<int>(b.type.bits) &&
            lanes == static_cast<int>(b.type.lanes),
        error_message(
            {StringImm::make(who + " has element type "), actual_name,
             StringImm::make(", but the pipeline expects " + type_to_string(b.type) + ".")})));

    Expr dims = int_var(b.name + ".dimensions");
    checks->push_back(
        AssertStmt::make(dims == b.dimensions,
                         error_message({StringImm::make(who + " has "), dims,
                                        StringImm::make(" dimensions, but the pipeline expects " +
                                                        std::to_string(b.dimensions) + ".")})));

    if (b.dimensions > 0) {
        checks->push_back(AssertStmt::make(
            !bool_var(b.name + ".dim_is_null"),
            StringImm::make(who + " has a null dim pointer: its " + std::to_string(b.dimensions) +
                            " dimensions must be described.")));
    }

    // A null host pointer is fine for a buffer with no elements.
    Expr empty = const_false();
    for (int k = 0; k < b.dimensions; k++) {
        empty = empty || int_var(b.name + ".extent." + std::to_string(k)) <= 0;
    }
    checks->push_back(AssertStmt::make(
        !bool_var(b.name + ".gpu_memory_alone") || empty,
        StringImm::make(who + " has GPU memory alone (its host pointer is null), but this "
                              "pipeline uses it on the CPU. Give it host memory, or compile the "
                              "pipeline for a CUDA target with every use of it in GPU loops.")));
    checks->push_back(AssertStmt::make(
        !bool_var(b.name + ".host_is_null") || empty,
        StringImm::make(who + " has a null data pointer, but its extents say it holds data.")));

    // Indices into a buffer are 32-bit (as a Func's storage is, see
    // StorageFlattening): its elements must lie within 2^31 - 1 of its
    // first. A larger one would be read and written at wrapped offsets.
    Expr reach = make_zero(Int(64));
    for (int k = 0; k < b.dimensions; k++) {
        std::string n = std::to_string(k);
        Expr extent = cast(Int(64), int_var(b.name + ".extent." + n));
        Expr stride = cast(Int(64), int_var(b.name + ".stride." + n));
        reach = reach + max(extent - 1, make_zero(Int(64))) * abs(stride);
    }
    if (b.dimensions > 0) {
        checks->push_back(AssertStmt::make(
            empty || reach <= make_const(Int(64), (int64_t(1) << 31) - 1),
            error_message({StringImm::make(who + " spans "), reach,
                           StringImm::make(" elements past its first one, more than the "
                                           "2^31 - 1 that Loom's 32-bit indices reach. Pass it "
                                           "in pieces (views of it) to several calls.")})));
    }
}

}  // namespace

Stmt add_argument_checks(const Stmt &s, const std::vector<ParameterPtr> &params,
                         const std::vector<FunctionPtr> &outputs) {
    std::vector<BufferArg> buffers;
    for (const ParameterPtr &p : params) {
        if (p->is_buffer) buffers.push_back({p->name, p->type, p->dimensions, false});
    }
    for (const FunctionPtr &f : outputs) {
        for (size_t i = 0; i < f->output_types.size(); i++) {
            buffers.push_back({output_buffer_name(f, static_cast<int>(i)), f->output_types[i],
                               static_cast<int>(f->args.size()), true});
        }
    }
    std::vector<Stmt> checks;
    for (const BufferArg &b : buffers) check_buffer(b, &checks);
    checks.push_back(s);
    return Block::make(checks);
}

}  // namespace internal
}  // namespace loom
