// Schedule and Stage: every scheduling directive, under its C++ name (`in`
// is a Python keyword, so Schedule.in_).
#include "PyLoom.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace loom::python {

namespace {

using nb::arg;
constexpr auto ref = nb::rv_policy::reference_internal;

Expr factor_of(nb::handle h, const char *what) {
    Expr e = to_expr(h, what);
    if (!e.type().is_int_or_uint()) {
        type_error(std::string(what) + " must be an integer (or an integer Param), not a " +
                   type_to_string(e.type()));
    }
    return e;
}

VarOrRVar V(nb::handle h, const char *what) { return to_var_or_rvar(h, what); }

/** The loops a variadic directive names: f(x, y) or f([x, y]). */
std::vector<VarOrRVar> loops_of(const nb::args &args, const char *what) {
    if (args.size() == 1 &&
        (nb::isinstance<nb::list>(args[0]) || nb::isinstance<nb::tuple>(args[0]))) {
        return to_var_or_rvars(args[0], what);
    }
    return to_var_or_rvars(args, what);
}

}  // namespace

void define_schedule(nb::module_ &m) {
    nb::enum_<TailStrategy>(m, "TailStrategy")
        .value("Auto", TailStrategy::Auto)
        .value("GuardWithIf", TailStrategy::GuardWithIf)
        .value("ShiftInwards", TailStrategy::ShiftInwards)
        .value("RoundUp", TailStrategy::RoundUp);
    nb::enum_<ChunkLayout>(m, "ChunkLayout")
        .value("Contiguous", ChunkLayout::Contiguous)
        .value("Interleaved", ChunkLayout::Interleaved);
    nb::enum_<MemoryType>(m, "MemoryType")
        .value("Auto", MemoryType::Auto)
        .value("Stack", MemoryType::Stack)
        .value("Heap", MemoryType::Heap)
        .value("Register", MemoryType::Register)
        .value("Shared", MemoryType::Shared)
        .value("Global", MemoryType::Global);

    const TailStrategy Auto = TailStrategy::Auto;
    nb::class_<Stage>(m, "Stage",
                      "The scheduling handle of one stage of one Func; every "
                      "directive returns the Stage, for chaining.")
        .def(
            "split",
            [](Stage &s, nb::handle old, nb::handle outer, nb::handle inner, nb::handle factor,
               TailStrategy tail) -> Stage & {
                return s.split(V(old, "split's loop"), V(outer, "split's outer loop"),
                               V(inner, "split's inner loop"), factor_of(factor, "split's factor"),
                               tail);
            },
            arg("old"), arg("outer"), arg("inner"), arg("factor"), arg("tail") = Auto, ref)
        .def(
            "fuse",
            [](Stage &s, nb::handle outer, nb::handle inner, nb::handle fused) -> Stage & {
                return s.fuse(V(outer, "fuse's outer loop"), V(inner, "fuse's inner loop"),
                              V(fused, "fuse's fused loop"));
            },
            arg("outer"), arg("inner"), arg("fused"), ref)
        .def(
            "reorder",
            [](Stage &s, nb::args loops) -> Stage & {
                return s.reorder(loops_of(loops, "reorder's loop"));
            },
            ref, "reorder(a, b, ...): the named loops, outermost first.")
        .def(
            "tile",
            [](Stage &s, nb::handle y, nb::handle x, nb::handle yo, nb::handle xo, nb::handle yi,
               nb::handle xi, nb::handle ty, nb::handle tx, TailStrategy tail) -> Stage & {
                return s.tile(V(y, "tile's y"), V(x, "tile's x"), V(yo, "tile's yo"),
                              V(xo, "tile's xo"), V(yi, "tile's yi"), V(xi, "tile's xi"),
                              factor_of(ty, "tile's ty"), factor_of(tx, "tile's tx"), tail);
            },
            arg("y"), arg("x"), arg("yo"), arg("xo"), arg("yi"), arg("xi"), arg("ty"), arg("tx"),
            arg("tail") = Auto, ref)
        .def(
            "rename",
            [](Stage &s, nb::handle a, nb::handle b) -> Stage & {
                return s.rename(V(a, "rename's loop"), V(b, "rename's new name"));
            },
            arg("old"), arg("new_name"), ref)
        .def(
            "unroll",
            [](Stage &s, nb::handle v, nb::handle factor, TailStrategy tail) -> Stage & {
                if (factor.is_none()) return s.unroll(V(v, "unroll's loop"));
                return s.unroll(V(v, "unroll's loop"), factor_of(factor, "unroll's factor"), tail);
            },
            arg("v"), arg("factor") = nb::none(), arg("tail") = Auto, ref)
        .def(
            "vectorize",
            [](Stage &s, nb::handle v, nb::handle factor, TailStrategy tail) -> Stage & {
                if (factor.is_none()) return s.vectorize(V(v, "vectorize's loop"));
                return s.vectorize(V(v, "vectorize's loop"),
                                   factor_of(factor, "vectorize's factor"), tail);
            },
            arg("v"), arg("factor") = nb::none(), arg("tail") = Auto, ref)
        .def(
            "parallel",
            [](Stage &s, nb::handle v, nb::handle task_size, TailStrategy tail) -> Stage & {
                if (task_size.is_none()) return s.parallel(V(v, "parallel's loop"));
                return s.parallel(V(v, "parallel's loop"), factor_of(task_size, "the task size"),
                                  tail);
            },
            arg("v"), arg("task_size") = nb::none(), arg("tail") = Auto, ref)
        .def(
            "serial",
            [](Stage &s, nb::handle v) -> Stage & { return s.serial(V(v, "serial's loop")); },
            arg("v"), ref)
        .def(
            "gpu_blocks",
            [](Stage &s, nb::args loops) -> Stage & {
                std::vector<VarOrRVar> v = loops_of(loops, "a gpu_blocks loop");
                if (v.empty() || v.size() > 3) type_error("gpu_blocks names 1 to 3 loops, x first");
                if (v.size() == 1) return s.gpu_blocks(v[0]);
                if (v.size() == 2) return s.gpu_blocks(v[0], v[1]);
                return s.gpu_blocks(v[0], v[1], v[2]);
            },
            ref, "gpu_blocks(x[, y[, z]]): the loops become the grid's dimensions, x first.")
        .def(
            "gpu_threads",
            [](Stage &s, nb::args loops) -> Stage & {
                std::vector<VarOrRVar> v = loops_of(loops, "a gpu_threads loop");
                if (v.empty() || v.size() > 3)
                    type_error("gpu_threads names 1 to 3 loops, x first");
                if (v.size() == 1) return s.gpu_threads(v[0]);
                if (v.size() == 2) return s.gpu_threads(v[0], v[1]);
                return s.gpu_threads(v[0], v[1], v[2]);
            },
            ref, "gpu_threads(x[, y[, z]]): the loops become a block's dimensions, x first.")
        .def(
            "gpu_tile",
            [](Stage &s, nb::args a, TailStrategy tail) -> Stage & {
                if (a.size() == 4) {
                    return s.gpu_tile(V(a[0], "gpu_tile's x"), V(a[1], "gpu_tile's xo"),
                                      V(a[2], "gpu_tile's xi"), factor_of(a[3], "gpu_tile's tx"),
                                      tail);
                }
                if (a.size() == 8) {
                    return s.gpu_tile(V(a[0], "gpu_tile's y"), V(a[1], "gpu_tile's x"),
                                      V(a[2], "gpu_tile's yo"), V(a[3], "gpu_tile's xo"),
                                      V(a[4], "gpu_tile's yi"), V(a[5], "gpu_tile's xi"),
                                      factor_of(a[6], "gpu_tile's ty"),
                                      factor_of(a[7], "gpu_tile's tx"), tail);
                }
                type_error(
                    "gpu_tile takes (x, xo, xi, tx) or (y, x, yo, xo, yi, xi, ty, tx), not " +
                    std::to_string(a.size()) + " arguments");
            },
            arg("loops"), arg("tail") = Auto, ref)
        .def("gpu_blocks_per_sm", &Stage::gpu_blocks_per_sm, arg("blocks"), ref)
        .def(
            "tile_program",
            [](Stage &s, const Var &y, const Var &x, const Var &yo, const Var &xo, int rows,
               int cols, std::pair<int, int> warps, int k_tile, int stages,
               bool group_rows) -> Stage & {
                return s.tile_program(y, x, yo, xo, rows, cols,
                                      TileOptions()
                                          .warps(warps.first, warps.second)
                                          .reduction_tile(k_tile)
                                          .pipeline_stages(stages)
                                          .group_rows(group_rows));
            },
            arg("y"), arg("x"), arg("yo"), arg("xo"), arg("rows"), arg("cols"),
            arg("warps") = std::make_pair(2, 2), arg("k_tile") = 32, arg("stages") = 3,
            arg("group_rows") = false, ref,
            "The stage as a block-level tile program of rows x cols tiles, one GPU block "
            "each (C++ Stage::tile_program); warps=(along rows, along columns); "
            "group_rows=True: each program takes the rows that read one value of the "
            "contraction's other operand (grouped-query attention's heads of one key head).")
        .def(
            "tensorize",
            [](Stage &s, const std::string &instruction, bool round_operands) -> Stage & {
                return s.tensorize(instruction, round_operands ? TensorizeRounding::RoundOperands
                                                               : TensorizeRounding::Exact);
            },
            arg("instruction"), arg("round_operands") = false, ref,
            "Computes this update, a contraction in a tile program, with a tensor "
            "instruction, e.g. \"mma.m16n8k16\"; round_operands=True lets a float32 factor "
            "be rounded to the instruction's input type (C++ TensorizeRounding).")
        .def("update", &Stage::update, arg("i") = 0)
        .def("compute_inline", &Stage::compute_inline, ref)
        .def("compute_root", &Stage::compute_root, ref)
        .def(
            "compute_at",
            [](Stage &s, nb::handle consumer, nb::handle loop) -> Stage & {
                VarOrRVar l = V(loop, "compute_at's loop");
                if (nb::isinstance<Func>(consumer))
                    return s.compute_at(nb::cast<Func>(consumer), l);
                if (nb::isinstance<Stage>(consumer))
                    return s.compute_at(nb::cast<Stage>(consumer), l);
                type_error("compute_at's consumer must be a Func or a Stage, not " +
                           py_type_name(consumer));
            },
            arg("consumer"), arg("loop"), ref)
        .def("store_root", &Stage::store_root, ref)
        .def(
            "store_at",
            [](Stage &s, const Func &consumer, nb::handle loop) -> Stage & {
                return s.store_at(consumer, V(loop, "store_at's loop"));
            },
            arg("consumer"), arg("loop"), ref)
        .def("store_in", &Stage::store_in, arg("memory"), ref)
        .def(
            "bound",
            [](Stage &s, const Var &v, nb::handle min, nb::handle extent) -> Stage & {
                return s.bound(v, factor_of(min, "bound's min"),
                               factor_of(extent, "bound's extent"));
            },
            arg("v"), arg("min"), arg("extent"), ref)
        .def(
            "bound_extent",
            [](Stage &s, const Var &v, nb::handle extent) -> Stage & {
                return s.bound_extent(v, factor_of(extent, "bound_extent's extent"));
            },
            arg("v"), arg("extent"), ref)
        .def("dump", &Stage::dump)
        .def("__repr__", [](const Stage &s) { return "<loom.Stage " + s.dump() + ">"; });

    nb::class_<Schedule>(m, "Schedule", "HOW a pipeline is computed: s[f] is f's Stage.")
        .def(nb::init<>())
        .def("__getitem__", &Schedule::operator[], arg("func"))
        .def("clone", &Schedule::clone)
        .def(
            "rolling_update",
            [](Schedule &s, const Func &X, nb::handle r) {
                VarOrRVar v = V(r, "rolling_update's RVar");
                if (!v.is_rvar()) type_error("rolling_update's second argument must be an RVar");
                return s.rolling_update(
                    X, nb::isinstance<RDom>(r) ? RVar(nb::cast<RDom>(r)) : nb::cast<RVar>(r));
            },
            arg("X"), arg("r"),
            "Fuses the reduction X and the reductions it depends on along r into one pass, with "
            "derived repairs; returns X's update stage.")
        .def(
            "split_k",
            [](Schedule &s, const Func &X, nb::handle r, nb::handle chunks, const Var &chunk,
               ChunkLayout layout) {
                VarOrRVar v = V(r, "split_k's RVar");
                if (!v.is_rvar()) type_error("split_k's second argument must be an RVar");
                return s.split_k(
                    X, nb::isinstance<RDom>(r) ? RVar(nb::cast<RDom>(r)) : nb::cast<RVar>(r),
                    factor_of(chunks, "split_k's chunk count"), chunk, layout);
            },
            arg("X"), arg("r"), arg("chunks"), arg("chunk"),
            arg("layout") = ChunkLayout::Contiguous,
            "Splits X's chain along r into chunks combined with the derived repairs; returns the "
            "per-chunk partial's update stage.")
        .def(
            "in_",
            [](Schedule &s, const BufferParam &input, const std::vector<Var> &vars) {
                return s.in(input, vars);
            },
            arg("input"), arg("vars"),
            "Schedule.in (a Python keyword): reads of input go "
            "through a Func of their own, returned as a Stage.");
}

}  // namespace loom::python
