// Target: where compiled code runs.
#include "PyLoom.h"

#include <nanobind/stl/string.h>

namespace loom::python {

void define_target(nb::module_ &m) {
    nb::class_<Target> t(m, "Target",
                         "A compilation target: 'host', 'host-cuda', "
                         "'x86-64-linux-avx2', 'host-cuda-sm_90a', ...");
    nb::enum_<Target::Feature>(t, "Feature")
        .value("SSE41", Target::SSE41)
        .value("AVX", Target::AVX)
        .value("AVX2", Target::AVX2)
        .value("FMA", Target::FMA)
        .value("F16C", Target::F16C)
        .value("AVX512", Target::AVX512)
        .value("NoAsserts", Target::NoAsserts)
        .value("Debug", Target::Debug)
        .value("FastMath", Target::FastMath)
        .value("LLVMLoopOpt", Target::LLVMLoopOpt)
        .value("CUDA", Target::CUDA)
        .value("CUDASource", Target::CUDASource);
    t.def(nb::init<>())
        .def(nb::init<const std::string &>(), nb::arg("target"))
        .def_static("host", &Target::host)
        .def("has_feature", &Target::has_feature)
        .def("with_feature", &Target::with_feature)
        .def("without_feature", &Target::without_feature)
        .def("vector_bytes", &Target::vector_bytes)
        .def("cuda_capability", &Target::cuda_capability)
        .def("cuda_arch", &Target::cuda_arch)
        .def("to_string", &Target::to_string)
        .def("__eq__",
             [](const Target &a, nb::handle b) {
                 return nb::isinstance<Target>(b) && a == nb::cast<Target>(b);
             })
        .def("__hash__", [](const Target &t) { return nb::hash(nb::str(t.to_string().c_str())); })
        .def("__str__", &Target::to_string)
        .def("__repr__", [](const Target &t) { return "loom.Target('" + t.to_string() + "')"; });
    nb::implicitly_convertible<nb::str, Target>();
}

}  // namespace loom::python
