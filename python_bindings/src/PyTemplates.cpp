// The schedule templates of schedules/ (loom.schedules) and the attention
// variants of apps/attention (loom.attention): the same C++ the C++ apps
// call, so a Python algorithm is scheduled exactly as a C++ one.
#include "PyLoom.h"

#include <nanobind/stl/pair.h>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "apps/attention/variants.h"
#include "schedules/flash_attention.h"
#include "schedules/gemm.h"
#include "schedules/materialized_attention.h"

namespace loom::python {

namespace {

using nb::arg;
using schedules::AttentionChain;

/** Options of type O from keyword arguments, each one of O's fields. */
template <typename O> O options_from(const nb::kwargs &kw, const char *fn) {
    nb::object o = nb::type<O>()();
    for (auto [key, value] : kw) {
        std::string k = nb::cast<std::string>(key);
        if (!nb::hasattr(o, k.c_str())) {
            type_error(std::string(fn) + "() got an unexpected option '" + k +
                       "'; its options are " + py_str(nb::type<O>().attr("__doc__")));
        }
        nb::setattr(o, k.c_str(), value);
    }
    return nb::cast<O>(o);
}

template <typename O> void bind_options(nb::module_ &m, const char *name,
                                        std::vector<std::pair<const char *, int O::*>> ints,
                                        std::vector<std::pair<const char *, bool O::*>> bools) {
    std::string doc;
    for (auto &[n, _] : ints) doc += (doc.empty() ? "" : ", ") + std::string(n);
    for (auto &[n, _] : bools) doc += (doc.empty() ? "" : ", ") + std::string(n);
    nb::class_<O> c(m, name, doc.c_str());
    c.def(nb::init<>());
    for (auto &[n, f] : ints) c.def_rw(n, f);
    for (auto &[n, f] : bools) c.def_rw(n, f);
}

PyParam param_of(const internal::ParameterPtr &p) { return PyParam{p}; }

}  // namespace

void define_templates(nb::module_ &m) {
    nb::module_ s = m.def_submodule("schedules", "Schedule templates (schedules/*.h).");

    s.def(
        "gemm_tensor_cores",
        [](Schedule &sch, const Func &out, const Func &acc, const Var &i, const Var &j, int rows,
           int cols, std::pair<int, int> warps, int k_tile, int stages,
           const std::string &instruction) {
            schedules::GemmTileOptions o;
            o.rows = rows;
            o.cols = cols;
            o.warps_m = warps.first;
            o.warps_n = warps.second;
            o.k_tile = k_tile;
            o.stages = stages;
            o.instruction = instruction;
            schedules::gemm_tensor_cores(sch, out, acc, i, j, o);
        },
        nb::arg("sch"), nb::arg("out"), nb::arg("acc"), nb::arg("i"), nb::arg("j"),
        nb::arg("rows") = 128, nb::arg("cols") = 128, nb::arg("warps") = std::make_pair(2, 2),
        nb::arg("k_tile") = 32, nb::arg("stages") = 3, nb::arg("instruction") = "mma.m16n8k16",
        "Schedules out (with acc, its accumulator, which may be out) as a tensor-core tile "
        "program over its Vars i (rows) and j (columns): schedules/gemm.h.");

    nb::class_<AttentionChain>(s, "AttentionChain",
                               "The Funcs, Vars and RDom of an attention algorithm that the "
                               "templates schedule: s, p, o, out, b, h, i, j, d, r, and optionally "
                               "kt, qk, e, qf, c, k, v, vf (see schedules/flash_attention.h).")
        .def("__init__",
             [](AttentionChain *self, nb::kwargs kw) {
                 // The fields are set on a finished instance, then copied in.
                 nb::object chain = nb::cast(AttentionChain());
                 for (auto [key, value] : kw) {
                     std::string k = nb::cast<std::string>(key);
                     if (!nb::hasattr(chain, k.c_str())) {
                         type_error("AttentionChain has no field '" + k + "'");
                     }
                     if ((k == "r" || k == "e") && nb::isinstance<RDom>(value)) {
                         nb::setattr(chain, k.c_str(), nb::cast(RVar(nb::cast<RDom>(value))));
                     } else {
                         nb::setattr(chain, k.c_str(), value);
                     }
                 }
                 new (self) AttentionChain(nb::cast<AttentionChain>(chain));
             })
        .def_rw("s", &AttentionChain::s)
        .def_rw("p", &AttentionChain::p)
        .def_rw("o", &AttentionChain::o)
        .def_rw("out", &AttentionChain::out)
        .def_rw("b", &AttentionChain::b)
        .def_rw("h", &AttentionChain::h)
        .def_rw("i", &AttentionChain::i)
        .def_rw("j", &AttentionChain::j)
        .def_rw("d", &AttentionChain::d)
        .def_rw("r", &AttentionChain::r)
        .def_rw("kt", &AttentionChain::kt)
        .def_rw("qk", &AttentionChain::qk)
        .def_rw("e", &AttentionChain::e)
        .def_rw("qf", &AttentionChain::qf)
        .def_rw("c", &AttentionChain::c)
        .def_rw("k", &AttentionChain::k)
        .def_rw("v", &AttentionChain::v)
        .def_rw("vf", &AttentionChain::vf);

    using schedules::FlashAttentionGpuOptions;
    using schedules::FlashAttentionOptions;
    using schedules::FlashAttentionTensorCoreOptions;
    using schedules::FlashDecodingGpuOptions;
    using schedules::FlashDecodingOptions;
    using schedules::FlashDecodingTensorCoreOptions;
    bind_options<FlashAttentionOptions>(s, "FlashAttentionOptions",
                                        {{"query_block", &FlashAttentionOptions::query_block},
                                         {"key_tile", &FlashAttentionOptions::key_tile},
                                         {"vector", &FlashAttentionOptions::vector},
                                         {"head_dim", &FlashAttentionOptions::head_dim},
                                         {"tile_queries", &FlashAttentionOptions::tile_queries}},
                                        {{"stage_keys", &FlashAttentionOptions::stage_keys}});
    bind_options<FlashDecodingOptions>(s, "FlashDecodingOptions",
                                       {{"chunks", &FlashDecodingOptions::chunks},
                                        {"key_tile", &FlashDecodingOptions::key_tile},
                                        {"vector", &FlashDecodingOptions::vector},
                                        {"head_dim", &FlashDecodingOptions::head_dim},
                                        {"tile_queries", &FlashDecodingOptions::tile_queries}},
                                       {});
    bind_options<FlashAttentionGpuOptions>(
        s, "FlashAttentionGpuOptions",
        {{"queries_per_block", &FlashAttentionGpuOptions::queries_per_block},
         {"head_dim", &FlashAttentionGpuOptions::head_dim},
         {"key_tile", &FlashAttentionGpuOptions::key_tile},
         {"qk_vector", &FlashAttentionGpuOptions::qk_vector}},
        {});
    bind_options<FlashAttentionTensorCoreOptions>(
        s, "FlashAttentionTensorCoreOptions",
        {{"head_dim", &FlashAttentionTensorCoreOptions::head_dim},
         {"query_tile", &FlashAttentionTensorCoreOptions::query_tile},
         {"key_tile", &FlashAttentionTensorCoreOptions::key_tile},
         {"warps", &FlashAttentionTensorCoreOptions::warps},
         {"stages", &FlashAttentionTensorCoreOptions::stages}},
        {});
    bind_options<FlashDecodingTensorCoreOptions>(
        s, "FlashDecodingTensorCoreOptions",
        {{"head_dim", &FlashDecodingTensorCoreOptions::head_dim},
         {"chunks", &FlashDecodingTensorCoreOptions::chunks},
         {"query_tile", &FlashDecodingTensorCoreOptions::query_tile},
         {"key_tile", &FlashDecodingTensorCoreOptions::key_tile},
         {"stages", &FlashDecodingTensorCoreOptions::stages}},
        {});
    bind_options<FlashDecodingGpuOptions>(
        s, "FlashDecodingGpuOptions",
        {{"chunks", &FlashDecodingGpuOptions::chunks},
         {"chunks_per_block", &FlashDecodingGpuOptions::chunks_per_block},
         {"queries_per_block", &FlashDecodingGpuOptions::queries_per_block},
         {"key_tile", &FlashDecodingGpuOptions::key_tile},
         {"head_dim", &FlashDecodingGpuOptions::head_dim}},
        {{"probabilities_per_tile", &FlashDecodingGpuOptions::probabilities_per_tile}});

#define LOOM_PY_TEMPLATE(NAME, OPTIONS, DOC)                                      \
    s.def(                                                                        \
        #NAME,                                                                    \
        [](Schedule &sch, const AttentionChain &a, nb::kwargs kw) {               \
            schedules::NAME(sch, a, options_from<schedules::OPTIONS>(kw, #NAME)); \
        },                                                                        \
        arg("schedule"), arg("chain"), arg("options"), DOC)
    LOOM_PY_TEMPLATE(flash_attention, FlashAttentionOptions,
                     "FlashAttention for prefill on the CPU: tasks of query_block queries in "
                     "parallel, one rolling pass over key tiles; with head_dim (fixed by "
                     "fix_head_dim), a tile program per tile_queries queries instead. Options: "
                     "query_block, key_tile, vector, stage_keys, head_dim, tile_queries.");
    LOOM_PY_TEMPLATE(flash_decoding, FlashDecodingOptions,
                     "FlashDecoding on the CPU: the keys split_k into chunks combined with the "
                     "derived repairs; with head_dim (fixed by fix_head_dim), each chunk a tile "
                     "program per query and group of tile_queries query heads (those reading one "
                     "key/value head). Options: chunks, key_tile, vector, head_dim, "
                     "tile_queries.");
    LOOM_PY_TEMPLATE(flash_attention_gpu, FlashAttentionGpuOptions,
                     "FlashAttention on CUDA cores. Options: queries_per_block, head_dim, "
                     "key_tile, qk_vector.");
    LOOM_PY_TEMPLATE(flash_attention_tensor_cores, FlashAttentionTensorCoreOptions,
                     "FlashAttention on tensor cores: a tile program per query tile rolling the "
                     "chain over key tiles, both products on mma.sync (P rounded to the input "
                     "type). Options: head_dim, query_tile, key_tile, warps, stages.");
    LOOM_PY_TEMPLATE(flash_decoding_tensor_cores, FlashDecodingTensorCoreOptions,
                     "FlashDecoding on tensor cores: split_k over tile programs, each chunk of "
                     "the keys rolled on mma.sync and stored as partials, then the derived "
                     "combine. Options: head_dim, chunks, query_tile, key_tile, stages.");
    LOOM_PY_TEMPLATE(flash_decoding_gpu, FlashDecodingGpuOptions,
                     "FlashDecoding on CUDA cores. Options: chunks, chunks_per_block, "
                     "queries_per_block, key_tile, head_dim, probabilities_per_tile.");
#undef LOOM_PY_TEMPLATE
    s.def("materialized_attention", &schedules::materialized_attention, arg("schedule"),
          arg("chain"), arg("m"), arg("l"), arg("query_block") = 16, arg("vector") = 8,
          "The unfused baseline: every score and probability stored per query block.");

    nb::module_ at = m.def_submodule("attention", "The attention variants of apps/attention.");
    using attention::AttentionVariant;
    using attention::Variant;
    nb::enum_<Variant>(at, "Variant")
        .value("Global", Variant::Global)
        .value("Causal", Variant::Causal)
        .value("ALiBi", Variant::ALiBi)
        .value("SoftCap", Variant::SoftCap)
        .value("SlidingWindow", Variant::SlidingWindow)
        .value("GroupedQuery", Variant::GroupedQuery)
        .value("SoftCapGQA", Variant::SoftCapGQA)
        .value("WindowSoftCapGQA", Variant::WindowSoftCapGQA);
    at.attr("soft_cap") = attention::soft_cap;
    at.def("variant_name", [](Variant v) { return std::string(attention::variant_name(v)); });
    nb::class_<AttentionVariant>(at, "AttentionVariant",
                                 "One attention variant as a plain algorithm over q, k, v "
                                 "[batch, heads, seq, head_dim] (apps/attention/variants.h).")
        .def(
            "__init__",
            [](AttentionVariant *self, Variant v, nb::handle type) {
                new (self) AttentionVariant(v, to_type(type, "the input type"));
            },
            arg("variant"), arg("input_type") = Float(32))
        .def_prop_ro("name", [](const AttentionVariant &a) { return std::string(a.name()); })
        .def_ro("variant", &AttentionVariant::variant)
        .def_ro("q", &AttentionVariant::q)
        .def_ro("k", &AttentionVariant::k)
        .def_ro("v", &AttentionVariant::v)
        .def_prop_ro("scale", [](const AttentionVariant &a) { return param_of(a.scale.param); })
        .def_prop_ro("window", [](const AttentionVariant &a) { return param_of(a.window.param); })
#define LOOM_PY_MEMBER(F) .def_ro(#F, &AttentionVariant::F)
            LOOM_PY_MEMBER(b) LOOM_PY_MEMBER(h) LOOM_PY_MEMBER(i) LOOM_PY_MEMBER(j)
                LOOM_PY_MEMBER(d) LOOM_PY_MEMBER(c) LOOM_PY_MEMBER(kt) LOOM_PY_MEMBER(vf)
                    LOOM_PY_MEMBER(qf) LOOM_PY_MEMBER(qk) LOOM_PY_MEMBER(e) LOOM_PY_MEMBER(s)
                        LOOM_PY_MEMBER(m) LOOM_PY_MEMBER(p) LOOM_PY_MEMBER(l) LOOM_PY_MEMBER(o)
                            LOOM_PY_MEMBER(out) LOOM_PY_MEMBER(r)
#undef LOOM_PY_MEMBER
        .def("chain", &AttentionVariant::chain, "The Funcs the schedule templates take.")
        .def("fix_head_dim", &AttentionVariant::fix_head_dim, arg("head_dim"))
        .def("promise_aligned_heads", &AttentionVariant::promise_aligned_heads, arg("head_dim"))
        .def("materialized_schedule", &AttentionVariant::materialized_schedule,
             arg("query_block") = 16, arg("vector") = 8);
}

}  // namespace loom::python
