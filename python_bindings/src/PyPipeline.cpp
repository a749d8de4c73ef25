// Pipeline, CompiledPipeline (called from Python through loom/_pipeline.py,
// which turns arrays into Buffers and allocates outputs), the interpreter,
// and the GPU stream pipelines run on.
#include "PyLoom.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace loom::python {

namespace {

using nb::arg;

Schedule schedule_or_default(nb::handle s) {
    if (s.is_none()) return Schedule();
    if (!nb::isinstance<Schedule>(s))
        type_error("schedule must be a loom.Schedule, not " + py_type_name(s));
    return nb::cast<Schedule>(s);
}

Target target_or_host(nb::handle t) {
    if (t.is_none()) return Target::host();
    if (nb::isinstance<Target>(t)) return nb::cast<Target>(t);
    if (nb::isinstance<nb::str>(t)) return Target(nb::cast<std::string>(t));
    type_error("target must be a loom.Target or a target string such as 'host-cuda', not " +
               py_type_name(t));
}

std::vector<Func> funcs_of(nb::handle outputs) {
    if (nb::isinstance<Func>(outputs)) return {nb::cast<Func>(outputs)};
    std::vector<Func> r;
    if (!nb::try_cast(outputs, r) || r.empty()) {
        type_error("Pipeline takes a Func or a non-empty list of Funcs, not " +
                   py_type_name(outputs));
    }
    return r;
}

std::vector<RawBuffer> raw_buffers(const std::vector<PyBuffer> &bs) {
    std::vector<RawBuffer> r;
    for (const PyBuffer &b : bs) r.push_back(b.buffer);
    return r;
}

void call(const CompiledPipeline &p, nb::list args) {
    const std::vector<Argument> &formal = p.arguments();
    std::vector<ArgValue> values;
    for (size_t i = 0; i < args.size(); i++) {
        if (i >= formal.size()) {
            // Extra arguments: CompiledPipeline::call counts them and says so.
            values.emplace_back(0);
            continue;
        }
        const Argument &a = formal[i];
        std::string who = "Argument " + std::to_string(i) + " (" + a.name + ")";
        nb::handle v = args[i];
        if (a.kind == Argument::InputScalar) {
            if (nb::isinstance<PyBuffer>(v))
                type_error(who + " is a scalar, but a buffer was passed");
            ArgValue s(0);
            s.scalar.type = a.type;
            s.scalar.bits = scalar_bits(v, a.type, who);
            values.push_back(s);
        } else {
            if (!nb::isinstance<PyBuffer>(v)) {
                type_error(who + " is a buffer, but " + py_type_name(v) + " was passed");
            }
            values.emplace_back(nb::cast<const PyBuffer &>(v).buffer);
        }
    }
    nb::gil_scoped_release release;
    p.call(values);
}

}  // namespace

void define_pipeline(nb::module_ &m) {
    nb::class_<Argument> a(m, "Argument", "One argument of a compiled pipeline.");
    nb::enum_<Argument::Kind>(a, "Kind")
        .value("InputBuffer", Argument::InputBuffer)
        .value("InputScalar", Argument::InputScalar)
        .value("OutputBuffer", Argument::OutputBuffer);
    a.def_ro("name", &Argument::name)
        .def_ro("kind", &Argument::kind)
        .def_ro("type", &Argument::type)
        .def_ro("dimensions", &Argument::dimensions)
        .def("__repr__", [](const Argument &a) {
            const char *k = a.kind == Argument::InputBuffer   ? "input buffer"
                            : a.kind == Argument::InputScalar ? "scalar"
                                                              : "output buffer";
            return "<loom.Argument " + a.name + ": " + k + " of " + type_to_string(a.type) +
                   (a.kind == Argument::InputScalar ? ""
                                                    : ", " + std::to_string(a.dimensions) + "-D") +
                   ">";
        });

    nb::class_<CompiledPipeline>(m, "CompiledPipeline", nb::dynamic_attr(),
                                 "Machine code for a pipeline, schedule and target; call it with "
                                 "arrays: kernel(q, k, v, out) or out = kernel(q, k, v).")
        .def("arguments", &CompiledPipeline::arguments)
        .def("_call", &call, arg("args"))
        .def(
            "realize",
            [](const CompiledPipeline &p, const std::vector<PyBuffer> &outputs) {
                std::vector<RawBuffer> r = raw_buffers(outputs);
                nb::gil_scoped_release release;
                p.realize(r);
            },
            arg("outputs"), "Runs with the inputs bound by set(), writing into outputs.")
        .def_prop_ro("lowered_stmt", &CompiledPipeline::lowered_stmt)
        .def_prop_ro("llvm_ir", &CompiledPipeline::llvm_ir)
        .def_prop_ro("assembly", &CompiledPipeline::assembly)
        .def("compile_seconds", &CompiledPipeline::compile_seconds)
        .def("compile_log", &CompiledPipeline::compile_log,
             "What rolling_update and split_k did: each chain, derived repair and its proof.")
        .def("fusion_seconds", &CompiledPipeline::fusion_seconds)
        .def("uses_gpu", &CompiledPipeline::uses_gpu);

    nb::class_<Pipeline>(m, "Pipeline",
                         "The Funcs to compute, compiled with a Schedule for a "
                         "Target.")
        .def(
            "__init__",
            [](Pipeline *self, nb::handle outputs) { new (self) Pipeline(funcs_of(outputs)); },
            arg("outputs"))
        .def("outputs", &Pipeline::outputs)
        .def(
            "_compile",
            [](const Pipeline &p, nb::handle s, nb::handle t) {
                Schedule sch = schedule_or_default(s);
                Target target = target_or_host(t);
                nb::gil_scoped_release release;
                return p.compile(sch, target);
            },
            arg("schedule") = nb::none(), arg("target") = nb::none())
        .def(
            "realize",
            [](const Pipeline &p, nb::handle sizes_or_outputs, nb::handle s,
               nb::handle t) -> nb::object {
                Schedule sch = schedule_or_default(s);
                Target target = target_or_host(t);
                std::vector<int> sizes;
                if (nb::try_cast(sizes_or_outputs, sizes)) {
                    PyBuffer b;
                    {
                        nb::gil_scoped_release release;
                        b.buffer = p.realize(sizes, sch, target);
                    }
                    return nb::cast(b);
                }
                std::vector<PyBuffer> outs;
                if (!nb::try_cast(sizes_or_outputs, outs)) {
                    type_error(
                        "realize takes the output's sizes (a list of ints) or a list of "
                        "loom.Buffers to fill");
                }
                std::vector<RawBuffer> r = raw_buffers(outs);
                {
                    nb::gil_scoped_release release;
                    p.realize(r, sch, target);
                }
                return nb::none();
            },
            arg("sizes_or_outputs"), arg("schedule") = nb::none(), arg("target") = nb::none())
        .def(
            "compile_to_lowered_stmt",
            [](const Pipeline &p, nb::handle s, nb::handle t) {
                return p.compile_to_lowered_stmt(schedule_or_default(s), target_or_host(t));
            },
            arg("schedule") = nb::none(), arg("target") = nb::none(),
            "The lowered loop IR as text.")
        .def(
            "compile_to_cuda",
            [](const Pipeline &p, nb::handle s, nb::handle t,
               const std::string &basename) -> nb::object {
                if (basename.empty()) {
                    return nb::str(
                        p.compile_to_cuda(schedule_or_default(s), target_or_host(t)).c_str());
                }
                p.compile_to_cuda(basename, schedule_or_default(s), target_or_host(t));
                return nb::none();
            },
            arg("schedule") = nb::none(), arg("target") = nb::none(), arg("basename") = "",
            "The CUDA C++ of the GPU kernels; with basename, writes .cu, .ptx and .cubin files.")
        .def(
            "print_loop_nest",
            [](const Pipeline &p, nb::handle s) {
                return p.print_loop_nest(schedule_or_default(s));
            },
            arg("schedule") = nb::none())
#define LOOM_PY_AOT(NAME)                                                                        \
    .def(                                                                                        \
        #NAME,                                                                                   \
        [](const Pipeline &p, const std::string &file, const std::string &fn_name, nb::handle s, \
           nb::handle t) { p.NAME(file, fn_name, schedule_or_default(s), target_or_host(t)); },  \
        arg("filename"), arg("fn_name"), arg("schedule") = nb::none(), arg("target") = nb::none())
            LOOM_PY_AOT(compile_to_object) LOOM_PY_AOT(compile_to_header)
                LOOM_PY_AOT(compile_to_assembly) LOOM_PY_AOT(compile_to_llvm_ir)
        .def(
            "compile_to_static_library",
            [](const Pipeline &p, const std::string &basename, const std::string &fn_name,
               nb::handle s, nb::handle t) {
                p.compile_to_static_library(basename, fn_name, schedule_or_default(s),
                                            target_or_host(t));
            },
            arg("basename"), arg("fn_name"), arg("schedule") = nb::none(),
            arg("target") = nb::none(),
            "Writes <basename>.a (pipeline and runtime) and <basename>.h.");
#undef LOOM_PY_AOT

    m.def(
        "interpret",
        [](const Func &f, const std::vector<int> &sizes) {
            PyBuffer b;
            nb::gil_scoped_release release;
            b.buffer = interpret(f, sizes);
            return b;
        },
        arg("f"), arg("sizes"), "The reference interpreter: f over [0, sizes), no schedule.");
    m.def(
        "interpret_tuple",
        [](const Func &f, const std::vector<int> &sizes) {
            std::vector<RawBuffer> r;
            {
                nb::gil_scoped_release release;
                r = interpret_tuple(f, sizes);
            }
            std::vector<PyBuffer> out;
            for (RawBuffer &b : r) out.push_back(PyBuffer{b, {}, {}});
            return out;
        },
        arg("f"), arg("sizes"));
    m.def(
        "interpret_into",
        [](const std::vector<Func> &fs, const std::vector<PyBuffer> &outs) {
            std::vector<RawBuffer> r = raw_buffers(outs);
            nb::gil_scoped_release release;
            interpret_into(fs, r);
        },
        arg("outputs"), arg("buffers"));

    m.def("emit_kinds", &Generator::emit_kinds,
          "The kinds of file a generator emits, with their suffixes: (kind, suffix) pairs.");
    m.def("_emit_pipeline", &emit_pipeline, arg("pipeline"), arg("schedule"), arg("target"),
          arg("directory"), arg("basename"), arg("function_name"), arg("kinds"));

    m.def("_set_cuda_stream",
          [](uintptr_t stream) { loom_cuda_set_stream(reinterpret_cast<void *>(stream)); });
    m.def("_cuda_stream", []() { return reinterpret_cast<uintptr_t>(loom_cuda_stream()); });
}

}  // namespace loom::python
