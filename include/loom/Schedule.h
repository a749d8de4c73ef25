// Schedule: HOW a pipeline is computed, kept apart from the Funcs that say
// WHAT is computed. One algorithm can be compiled with many Schedules.
//
// Loop order convention: loops are listed OUTERMOST FIRST everywhere (reorder,
// tile, fuse), matching the NumPy index order of Func definitions, whose last
// Var is the innermost loop by default.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/Func.h"
#include "loom/Param.h"
#include "loom/Var.h"

namespace loom {

/** What a split does when the factor does not divide the extent.
 * - GuardWithIf: the last partial iteration is guarded; always correct.
 * - ShiftInwards: the last iteration is shifted back to overlap the previous
 *   one, recomputing some points. Needs extent >= factor (checked at run time
 *   for outputs and inputs) and must not be used on update definitions.
 * - RoundUp: computes up to a multiple of the factor. The Func's storage grows
 *   to match; an output buffer or an input read must cover the rounded region.
 * - Auto: GuardWithIf. */
enum class TailStrategy { Auto, GuardWithIf, ShiftInwards, RoundUp };

/** Which points of a split_k reduction each chunk rolls (tiles of points,
 * when the partial's stage splits the RVar into tiles).
 * - Contiguous: chunk c rolls one run of them, [c * size, (c + 1) * size):
 *   chunks on CPU threads or GPU blocks touch memory apart from each other.
 * - Interleaved: chunk c rolls tiles c, c + chunks, c + 2 chunks, ...: with
 *   the chunks on a block's GPU threads, neighbouring threads read
 *   neighbouring tiles at each step, so a warp's loads coalesce (a row
 *   softmax's threads each roll every 256th float4 of the row). */
enum class ChunkLayout { Contiguous, Interleaved };

/** Whether tensorize may round a float32 factor to the instruction's
 * input type (Stage::tensorize). */
enum class TensorizeRounding { Exact, RoundOperands };

/** The shape of a tile program on a GPU block (Stage::tile_program). */
struct TileOptions {
    /** Warps along the tile's rows and columns: each computes a
     * (rows / warps_m) x (cols / warps_n) block of it. */
    int warps_m = 2, warps_n = 2;
    /** The reduction of a contraction advances in steps of k_tile. */
    int k_tile = 32;
    /** Shared-memory stages of the operands' pipeline: the copies of the
     * next stages - 1 steps are in flight while one step multiplies. */
    int stages = 3;
    /** The rows hold groups: those on which the contraction's other
     * operand is the same, found from how it reads the row Var (grouped-
     * query attention's keys, read at h / G, give groups of G heads; read
     * at h, groups of one). Each program takes the rows of one group, the
     * tile's rows past the group's end idle, so that the operand's tile is
     * loaded once for the group. */
    bool grouped_rows = false;
    TileOptions &warps(int m, int n) {
        warps_m = m;
        warps_n = n;
        return *this;
    }
    TileOptions &reduction_tile(int k) {
        k_tile = k;
        return *this;
    }
    TileOptions &pipeline_stages(int n) {
        stages = n;
        return *this;
    }
    TileOptions &group_rows(bool on = true) {
        grouped_rows = on;
        return *this;
    }
};

namespace internal {
struct ScheduleContents;
struct FuncSchedule;
}  // namespace internal

class Schedule;

using internal::MemoryType;

/** The scheduling handle of one stage (pure definition or an update) of one
 * Func within a Schedule. Every directive returns *this for chaining. */
class Stage {
  public:
    /** Splits loop `old` into `outer` and `inner` loops, inner of extent
     * `factor`. */
    Stage &split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner,
                 const Expr &factor, TailStrategy tail = TailStrategy::Auto);
    /** Fuses two adjacent loops (outer directly around inner) into one. */
    Stage &fuse(const VarOrRVar &outer, const VarOrRVar &inner, const VarOrRVar &fused);
    /** Reorders the named loops, listed outermost first. Loops not named
     * keep their positions. */
    Stage &reorder(const std::vector<VarOrRVar> &outermost_first);
    template <typename... Args>
    Stage &reorder(const VarOrRVar &a, const VarOrRVar &b, Args &&...rest) {
        return reorder(std::vector<VarOrRVar>{a, b, VarOrRVar(rest)...});
    }
    /** Splits y and x by (ty, tx) and orders the loops yo, xo, yi, xi. */
    Stage &tile(const VarOrRVar &y, const VarOrRVar &x, const VarOrRVar &yo, const VarOrRVar &xo,
                const VarOrRVar &yi, const VarOrRVar &xi, const Expr &ty, const Expr &tx,
                TailStrategy tail = TailStrategy::Auto);
    Stage &rename(const VarOrRVar &old, const VarOrRVar &new_name);
    Stage &unroll(const VarOrRVar &v);
    Stage &unroll(const VarOrRVar &v, const Expr &factor, TailStrategy tail = TailStrategy::Auto);
    Stage &vectorize(const VarOrRVar &v);
    Stage &vectorize(const VarOrRVar &v, const Expr &factor,
                     TailStrategy tail = TailStrategy::Auto);
    Stage &parallel(const VarOrRVar &v);
    Stage &parallel(const VarOrRVar &v, const Expr &task_size,
                    TailStrategy tail = TailStrategy::Auto);
    Stage &serial(const VarOrRVar &v);

    // GPU loops (a target with the cuda feature). Each loop named becomes
    // one dimension of the kernel's grid (gpu_blocks) or of its blocks
    // (gpu_threads), the first named being x; a block's loops must have
    // constant extents. The loops must be adjacent, thread loops inside
    // block loops.
    Stage &gpu_blocks(const VarOrRVar &x);
    Stage &gpu_blocks(const VarOrRVar &x, const VarOrRVar &y);
    Stage &gpu_blocks(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z);
    Stage &gpu_threads(const VarOrRVar &x);
    Stage &gpu_threads(const VarOrRVar &x, const VarOrRVar &y);
    Stage &gpu_threads(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z);
    /** Splits x by tx: blocks over xo, tx threads per block over xi. */
    Stage &gpu_tile(const VarOrRVar &x, const VarOrRVar &xo, const VarOrRVar &xi, const Expr &tx,
                    TailStrategy tail = TailStrategy::Auto);
    /** tile(y, x, yo, xo, yi, xi, ty, tx), then blocks over (xo, yo) and
     * threads over (xi, yi): a ty x tx block of threads per tile. */
    Stage &gpu_tile(const VarOrRVar &y, const VarOrRVar &x, const VarOrRVar &yo,
                    const VarOrRVar &xo, const VarOrRVar &yi, const VarOrRVar &xi, const Expr &ty,
                    const Expr &tx, TailStrategy tail = TailStrategy::Auto);

    /** Makes the stage a block-level tile program (docs/tile.md): its
     * loops y and x are split into rows x cols tiles, each computed by one
     * GPU block, the tile's blocks numbered by the loops yo and xo (and the
     * stage's other Vars, each a grid dimension too). Inside the block
     * every value is a whole tile: the stage's expression, and that of each
     * Func computed at xo (compute_at(f, xo)), such as the accumulator of a
     * matrix product whose reduction then advances options.k_tile at a
     * time. A part of them that is not a tile operation (an index that is
     * not the Var plus a constant, a reduction that is not a contraction,
     * ...) is refused, naming the Func and the reason. Tile sizes are powers
     * of two. On the Stage split_k returns, it makes the partial a program
     * rolling each chunk (its pure stage: the user has no other handle). */
    Stage &tile_program(const Var &y, const Var &x, const Var &yo, const Var &xo, int rows,
                        int cols, const TileOptions &options = TileOptions());
    /** Computes this update, a contraction inside a tile program, with the
     * tensor-core instruction `instruction` (e.g. "mma.m16n8k16"): the
     * compiler checks that the update computes what the instruction
     * computes (types, shapes) and says why not otherwise.
     *
     * With `rounding` RoundOperands, a factor computed in float32 (not a
     * cast of the instruction's input type) is rounded to the type of the
     * other factor, f16 or bf16, for the instruction: what FlashAttention
     * does to P before P V. Each product then carries that rounding, a
     * relative error of 2^-11 (f16) or 2^-8 (bf16) of the factor, which
     * the schedule accepts by asking for it. */
    Stage &tensorize(const std::string &instruction,
                     TensorizeRounding rounding = TensorizeRounding::Exact);

    /** Asks the GPU compiler to fit `blocks` blocks of the kernels whose
     * blocks are this Func's loops on each SM at once: the second argument
     * of CUDA's __launch_bounds__. nvcc then caps each thread's registers
     * (at 65536 / (blocks * threads), rounded down to its granularity),
     * spilling to local memory if the kernel needs more. More blocks per SM
     * keep more memory traffic in flight; spills cost some of it back. The
     * Func must have gpu_blocks loops, and blocks * threads must fit the
     * 2048 threads an SM holds (a CompileError otherwise). */
    Stage &gpu_blocks_per_sm(int blocks);

    /** The handle of update definition i of the same Func. */
    Stage update(int i = 0) const;

    // Placement of the whole Func (valid on any of its stages).
    /** Computes the Func where it is used (the default for pure Funcs). */
    Stage &compute_inline();
    /** Computes the whole required region before the rest of the pipeline. */
    Stage &compute_root();
    /** Computes the region needed by one iteration of `consumer`'s loop
     * `loop`, inside that loop. */
    Stage &compute_at(const Func &consumer, const VarOrRVar &loop);
    /** The same, at a loop of the Func whose stage `consumer` is: for the
     * Funcs only a Schedule names, such as split_k's partials. */
    Stage &compute_at(const Stage &consumer, const VarOrRVar &loop);
    /** Allocates storage at root / inside a consumer's loop (must enclose
     * the compute level). */
    Stage &store_root();
    Stage &store_at(const Func &consumer, const VarOrRVar &loop);
    /** Where the Func's storage lives: MemoryType::Shared (a GPU block's
     * shared memory; compute it at a block loop), Register (per GPU thread;
     * compute it inside the thread loops, or at a block loop when each of
     * its elements is touched only by the thread whose index it is at, or
     * when every thread may keep a copy of all of it: stores that are the
     * same for every thread, and reductions across the threads), Global
     * (device memory), or on the CPU Stack or Heap. The default, Auto,
     * chooses by placement. A choice the placement contradicts is a
     * CompileError. */
    Stage &store_in(MemoryType memory);

    /** Computes the Func over exactly [min, min + extent) of its Var `v`
     * (Halide's bound): its loops over `v` and its storage take that
     * range, constant when `min` and `extent` are, so that `v` can be
     * unrolled or vectorized whole, or the Func kept in GPU shared memory
     * or registers. `min` and `extent` are constants or Params. Where the
     * pipeline reads more of the Func, the call fails naming it and both
     * ranges (inside a GPU kernel, where that depends on the block or
     * thread, the kernel stops, and the error lists its checks with their
     * values as "..."). On a pipeline output
     * its buffer must cover exactly that range. A Func's Var, on a Func that
     * is computed (not inlined) and not part of a rolling_update or split_k
     * chain. */
    Stage &bound(const Var &v, const Expr &min, const Expr &extent);
    /** The same with only the extent fixed: each place the Func is
     * computed covers `extent` points of `v` from the first one read there
     * (a tile's worth, say); storage and loops get that extent. */
    Stage &bound_extent(const Var &v, const Expr &extent);

    /** A readable description of this stage's loops, outermost first. */
    std::string dump() const;

  private:
    friend class Schedule;
    /** Marks `loops` (x first) as block (or thread) loops, x innermost. */
    Stage &gpu_loops(const std::vector<VarOrRVar> &loops, bool threads);
    Stage(std::shared_ptr<internal::ScheduleContents> s, internal::FunctionPtr f, int stage)
        : sched_(std::move(s)), func_(std::move(f)), stage_(stage) {}
    std::shared_ptr<internal::ScheduleContents> sched_;
    internal::FunctionPtr func_;
    int stage_;
    std::string describe() const;
};

class Schedule {
  public:
    Schedule();
    /** The handle of f's pure definition (stage 0). */
    Stage operator[](const Func &f);
    /** A deep copy, which can be changed without affecting this one. */
    Schedule clone() const;

    /** Fuses the reduction X with every reduction it depends on along `r`
     * (its reduce producers, e.g. the max and the sum of a softmax) and
     * every sibling reduction over the same RDom that reads those producers,
     * into ONE sequential loop over `r`. The compiler derives and proves the
     * repairs that keep each dependent consistent when a producer's running
     * value moves (for softmax: scale by exp(m_old - m_new)); a chain that
     * cannot be repaired is refused with a CompileError.
     *
     * Returns the update stage of X's reduction. Split `r` there to roll
     * over tiles: split(r, ro, ri, 64) runs the chain exactly within each
     * tile of 64 and repairs once per tile; other Funcs may then be
     * computed per tile with compute_at(X, ro). X's other Vars (e.g. the
     * head dimension of attention's output) loop inside the tile loop and
     * may be split and vectorized there. The fused Funcs are computed
     * together where X is computed. */
    Stage rolling_update(const Func &X, const RVar &r);

    /** Splits X's chain of reductions along `r` into `chunks` pieces that
     * can run in parallel, each computing local producers and a local X,
     * and a combine stage that merges the pieces with the same derived
     * repairs: X = ⊕_k h(X_k, r_k, r). Each chunk is ONE rolling pass
     * (as rolling_update) over its points.
     *
     * Returns the update stage of X's per-chunk partial, a Func named
     * X.name() + "_partial" over `chunk` (outermost) and X's Vars, to be
     * scheduled: compute_root().parallel(chunk), and split(r, ro, ri, 64)
     * to roll each chunk in tiles (then other Funcs may be computed per
     * tile with compute_at(that stage, ro)). The partials of the other
     * reductions of the chain follow its placement; X's own schedule
     * places the combine stage. When the partials' loop over `chunk` is on
     * gpu_threads and a member is computed by the whole block (compute_at a
     * loop inside the gpu_blocks loops and outside the gpu_threads ones,
     * e.g. compute_at(out, row) with the rows on gpu_blocks), the block's
     * threads combine that member's partials together, each thread its own
     * chunk's, as a reduction across threads (warp shuffles, then shared
     * memory); computed inside the thread loops, each thread combines all
     * of them.
     *
     * `layout` says which points each chunk rolls: Contiguous runs, or
     * Interleaved tiles for chunks on a block's threads (see ChunkLayout).
     *
     * X may be a lone reduction too, reading no other over `r`: this is
     * then Halide's rfactor in chunks (a row's sum with a chunk per GPU
     * thread: each thread sums its own points in a loop of its own, the
     * block combines the sums), and reductions that read X read its
     * combined value. A reduction another directive names is not part of
     * X's chain: X reads its result. */
    Stage split_k(const Func &X, const RVar &r, const Expr &chunks, const Var &chunk,
                  ChunkLayout layout = ChunkLayout::Contiguous);

    /** Makes every read of `input` go through a Func of its own,
     * `<input>_in`, over `vars` (one per dimension, outermost first, as
     * calls to the input list them), and returns its Stage to schedule.
     * By default it is inlined and changes nothing; computed at a loop it
     * copies the region of the input needed there once, which the
     * pipeline then reads as often as it likes. The GPU use: a row that a
     * softmax reads three times, copied into shared memory per block
     * (compute_at(out, r), gpu_threads on its loops), comes from device
     * memory once. As Halide's ImageParam::in(). Called again for the same
     * input, it returns the same Stage. */
    Stage in(const BufferParam &input, const std::vector<Var> &vars);

    std::shared_ptr<internal::ScheduleContents> contents() const { return contents_; }

  private:
    std::shared_ptr<internal::ScheduleContents> contents_;
};

}  // namespace loom
