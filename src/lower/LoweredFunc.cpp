// Packs a lowered body and its arguments into a LoweredFunc.
#include "lower/LoweredFunc.h"

#include "lower/BoundsInference.h"

namespace loom {
namespace internal {

LoweredFunc make_lowered_func(const std::string &name, const Stmt &body,
                              const std::vector<ParameterPtr> &params,
                              const std::vector<FunctionPtr> &outputs) {
    LoweredFunc f;
    f.name = name;
    f.body = body;
    for (const ParameterPtr &p : params) {
        LoweredArgument a;
        a.name = p->name;
        a.is_buffer = p->is_buffer;
        a.type = p->type;
        a.dimensions = p->dimensions;
        a.host_alignment = p->host_alignment;
        f.args.push_back(a);
    }
    for (const FunctionPtr &out : outputs) {
        for (size_t i = 0; i < out->output_types.size(); i++) {
            LoweredArgument a;
            a.name = output_buffer_name(out, static_cast<int>(i));
            a.is_buffer = true;
            a.is_output = true;
            a.type = out->output_types[i];
            a.dimensions = static_cast<int>(out->args.size());
            if (!out->output_buffers.empty()) {
                a.host_alignment = out->output_buffers[i]->host_alignment;
            }
            f.args.push_back(a);
        }
    }
    return f;
}

std::vector<Argument> public_arguments(const LoweredFunc &f) {
    std::vector<Argument> r;
    for (const LoweredArgument &a : f.args) {
        Argument::Kind kind = a.is_output   ? Argument::OutputBuffer
                              : a.is_buffer ? Argument::InputBuffer
                                            : Argument::InputScalar;
        r.push_back({a.name, kind, a.type, a.dimensions});
    }
    return r;
}

}  // namespace internal
}  // namespace loom
