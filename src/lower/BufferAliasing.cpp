// Which buffer arguments may share memory, and the check of the others (see
// BufferAliasing.h).
#include "lower/BufferAliasing.h"

#include <map>
#include <set>

#include "ir/IREquality.h"
#include "ir/IRVisitor.h"
#include "loom/IROperator.h"
#include "loom/Param.h"
#include "lower/BoundsInference.h"

namespace loom {
namespace internal {

namespace {

/** Where each input buffer is read: the Funcs whose pure definitions read
 * it at exactly the point they write, and whether any read is elsewhere (in
 * a coordinate, a condition, a loop bound, another point, an update). */
class FindInputReads : public IRVisitor {
  public:
    explicit FindInputReads(const LoweringEnv &env) : env(env) {}

    std::map<std::string, std::set<std::string>> read_at_the_point;
    /** Inputs read elsewhere, each with a Func that does so (the first
     * found; empty where the read is outside any Func's value). */
    std::map<std::string, std::string> read_elsewhere;

  private:
    using IRVisitor::visit;
    const LoweringEnv &env;
    const Provide *provide = nullptr;          // whose value is being visited
    const Provide *pure_definition = nullptr;  // the same, if it is a pure definition

    /** Whether p writes its Func's pure definition: its coordinates are
     * that stage's own variables, in order. */
    bool is_pure_definition(const Provide *p) const {
        auto f = env.funcs.find(p->name);
        if (f == env.funcs.end() || f->second->args.size() != p->args.size()) return false;
        for (size_t k = 0; k < p->args.size(); k++) {
            const auto *v = p->args[k].as<Variable>();
            if (!v || v->name != loop_name(p->name, 0, f->second->args[k])) return false;
        }
        return true;
    }

    void visit(const Provide *op) override {
        const Provide *outer = provide, *outer_pure = pure_definition;
        provide = op;
        pure_definition = nullptr;
        for (const Expr &a : op->args) a.accept(this);
        pure_definition = is_pure_definition(op) ? op : nullptr;
        for (const Expr &v : op->values) v.accept(this);
        provide = outer;
        pure_definition = outer_pure;
    }

    void visit(const Call *op) override {
        if (op->call_type == Call::Image && op->param && op->param->is_buffer) {
            bool at_the_point = pure_definition && op->args.size() == pure_definition->args.size();
            for (size_t k = 0; at_the_point && k < op->args.size(); k++) {
                at_the_point = equal(op->args[k], pure_definition->args[k]);
            }
            if (at_the_point) {
                read_at_the_point[op->name].insert(pure_definition->name);
            } else {
                read_elsewhere.emplace(op->name, provide ? provide->name : "");
            }
        }
        // The coordinates are not at the point: in(in(x)) reads in at in(x).
        const Provide *outer = pure_definition;
        pure_definition = nullptr;
        IRVisitor::visit(op);
        pure_definition = outer;
    }
};

bool recomputes_points(const StageSchedule &stage) {
    for (const Split &s : stage.splits) {
        if (s.kind == Split::SplitVar && s.tail == TailStrategy::ShiftInwards) return true;
    }
    return false;
}

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }
Expr wide(const std::string &name) { return cast(Int(64), int_var(name)); }

struct BufferArg {
    std::string name, role;  // role: "input" or "output"
    int dimensions;
    int element_bytes;

    Expr field(const char *f, int k) const {
        return wide(name + "." + f + "." + std::to_string(k));
    }
};

/** One memory (the host's or the GPU's) of a buffer: its address, and the
 * bytes its elements span, [first, last) (strides may be negative). */
struct Span {
    Expr address, first, last, holds_elements;
};

Span span_of(const BufferArg &b, const std::string &pointer) {
    Span s;
    s.address = Variable::make(Int(64), b.name + "." + pointer);
    Expr low = make_zero(Int(64)), high = make_zero(Int(64));
    s.holds_elements = const_true();
    for (int k = 0; k < b.dimensions; k++) {
        Expr reach = (b.field("extent", k) - 1) * b.field("stride", k);
        low = low + min(reach, make_zero(Int(64)));
        high = high + max(reach, make_zero(Int(64)));
        s.holds_elements = s.holds_elements && int_var(b.name + ".extent." + std::to_string(k)) > 0;
    }
    Expr bytes = make_const(Int(64), b.element_bytes);
    s.first = s.address + low * bytes;
    s.last = s.address + (high + 1) * bytes;
    return s;
}

Expr overlap(const Span &a, const Span &b) {
    return a.address != make_zero(Int(64)) && b.address != make_zero(Int(64)) && a.holds_elements &&
           b.holds_elements && a.first < b.last && b.first < a.last;
}

/** Whether each element of `out` is the element of `in` at the same
 * coordinates, in the memory `pointer` names. */
Expr same_elements(const BufferArg &in, const BufferArg &out, const std::string &pointer) {
    Expr offset = make_zero(Int(64)), strides_match = const_true();
    for (int k = 0; k < out.dimensions; k++) {
        offset = offset + (out.field("min", k) - in.field("min", k)) * in.field("stride", k);
        strides_match = strides_match && (out.field("extent", k) <= make_const(Int(64), 1) ||
                                          out.field("stride", k) == in.field("stride", k));
    }
    Expr in_address = Variable::make(Int(64), in.name + "." + pointer);
    Expr out_address = Variable::make(Int(64), out.name + "." + pointer);
    return strides_match &&
           in_address + offset * make_const(Int(64), in.element_bytes) == out_address;
}

const char *memory_name(const std::string &pointer) {
    return pointer == "host_pointer" ? "on the host" : "on the GPU";
}

}  // namespace

InPlaceVerdicts in_place_verdicts(const Stmt &s, const LoweringEnv &env) {
    FindInputReads reads(env);
    s.accept(&reads);
    InPlaceVerdicts verdicts;
    for (const ParameterPtr &p : find_parameters(env.funcs)) {
        if (!p->is_buffer) continue;
        const std::set<std::string> &readers = reads.read_at_the_point[p->name];
        auto elsewhere = reads.read_elsewhere.find(p->name);
        for (const FunctionPtr &f : env.outputs) {
            for (size_t i = 0; i < f->output_types.size(); i++) {
                std::string out = output_buffer_name(f, static_cast<int>(i)), why;
                auto schedule = env.schedules.find(f->name);
                if (f->output_types.size() > 1) {
                    why = out +
                          " is an element of a Tuple, whose elements are stored one after "
                          "another";
                } else if (f->output_types[0].bytes() != p->type.bytes()) {
                    why = "its elements are " + std::to_string(f->output_types[0].bytes()) +
                          " bytes, and " + p->name + "'s " + std::to_string(p->type.bytes());
                } else if (elsewhere != reads.read_elsewhere.end()) {
                    why = (elsewhere->second.empty() ? std::string("the pipeline")
                                                     : elsewhere->second) +
                          " reads " + p->name + " elsewhere than at the element of " + out +
                          " being written (a neighbour, a reduction, a condition, an update), so "
                          "it would read elements already overwritten";
                } else if (!readers.empty() && (readers.size() > 1 || !readers.count(f->name))) {
                    std::string other =
                        *readers.begin() == f->name ? *readers.rbegin() : *readers.begin();
                    why = other + " reads " + p->name + " too, which " + out + " would overwrite";
                } else if (schedule != env.schedules.end() && !schedule->second.stages.empty() &&
                           recomputes_points(schedule->second.stages[0])) {
                    why = "a ShiftInwards split of " + f->name +
                          " computes some of its points twice, reading them after writing them";
                }
                verdicts[{p->name, out}] = why;
            }
        }
    }
    return verdicts;
}

Stmt check_buffer_aliasing(const Stmt &s, const std::vector<ParameterPtr> &params,
                           const std::vector<FunctionPtr> &outputs,
                           const InPlaceVerdicts &verdicts) {
    std::vector<BufferArg> inputs, outs;
    for (const ParameterPtr &p : params) {
        if (p->is_buffer) inputs.push_back({p->name, "input", p->dimensions, p->type.bytes()});
    }
    for (const FunctionPtr &f : outputs) {
        for (size_t i = 0; i < f->output_types.size(); i++) {
            outs.push_back({output_buffer_name(f, static_cast<int>(i)), "output",
                            static_cast<int>(f->args.size()), f->output_types[i].bytes()});
        }
    }

    std::vector<Stmt> checks;
    auto refuse_overlap = [&](const BufferArg &a, const BufferArg &b, const std::string &tail) {
        for (const std::string pointer : {"host_pointer", "device_pointer"}) {
            std::string message = "Buffers " + a.name + " (" + a.role + ") and " + b.name + " (" +
                                  b.role + ") share memory " + memory_name(pointer) + tail;
            checks.push_back(AssertStmt::make(!overlap(span_of(a, pointer), span_of(b, pointer)),
                                              StringImm::make(message)));
        }
    };
    for (const BufferArg &out : outs) {
        for (const BufferArg &in : inputs) {
            auto verdict = verdicts.find({in.name, out.name});
            if (verdict == verdicts.end() || !verdict->second.empty()) {
                std::string why =
                    verdict == verdicts.end() ? "the pipeline does not read it" : verdict->second;
                refuse_overlap(in, out,
                               ", but this pipeline cannot compute " + out.name +
                                   " in place over " + in.name + ": " + why +
                                   ". Pass an output buffer of its own.");
                continue;
            }
            for (const std::string pointer : {"host_pointer", "device_pointer"}) {
                std::string message =
                    "Buffers " + in.name + " (input) and " + out.name + " (output) share memory " +
                    memory_name(pointer) + ", but not element for element. " + out.name +
                    " can be computed in place, over " + in.name +
                    ", only where each of its elements is the element of " + in.name +
                    " at the same coordinates (the same strides, and its first element at " +
                    in.name + "'s element of those coordinates). Pass the same buffer for both, " +
                    "or an output buffer of its own.";
                checks.push_back(
                    AssertStmt::make(!overlap(span_of(in, pointer), span_of(out, pointer)) ||
                                         same_elements(in, out, pointer),
                                     StringImm::make(message)));
            }
        }
    }
    for (size_t i = 0; i < outs.size(); i++) {
        for (size_t j = i + 1; j < outs.size(); j++) {
            refuse_overlap(outs[i], outs[j],
                           ". Each output is written separately: pass buffers that do not "
                           "overlap.");
        }
    }
    if (checks.empty()) return s;
    checks.push_back(s);
    return Block::make(checks);
}

}  // namespace internal
}  // namespace loom
