// Lesson 12: scheduling for the GPU, and reading the CUDA Loom generates.
//
// A GPU runs a kernel as a grid of blocks, each block a group of threads
// (at most 1024) that run together on one multiprocessor. In Loom the
// algorithm stays as it is; the schedule says which loops become the grid
// and which the threads of a block:
//
//   gpu_blocks(x, y)   loops x and y index the blocks (blockIdx.x, .y)
//   gpu_threads(x, y)  loops x and y index the threads of a block
//   gpu_tile(y, x, yo, xo, yi, xi, 8, 32)
//                      tiles of 8 x 32: one block per tile (xo, yo), one
//                      thread per point of the tile (xi, yi)
//
// Loom turns each nest of block loops into a CUDA C++ kernel, with the
// names of your Funcs and Vars, and NVRTC compiles it to PTX and a cubin. A
// Func computed inside the thread loops is private to each thread; one
// computed at a block loop is shared by the block's threads.
// No GPU is needed for sections 1 to 4 (with 2b to 2h: shared memory,
// vectors, reductions across threads, per-thread arrays, registers kept
// across a block's loop, fused chains of reductions): they run anywhere the
// CUDA toolkit is installed.
// Section 5 runs the kernels, where there is a GPU; section 6 is about
// sharing the GPU with PyTorch.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include <loom/loom.h>

using namespace loom;

/** Prints the line of `source` holding each of `what`; false if one is
 * missing. */
bool show_lines(const std::string &source, std::initializer_list<const char *> what) {
    for (const char *w : what) {
        size_t at = source.find(w);
        if (at == std::string::npos) {
            std::printf("expected %s in the kernel\n", w);
            return false;
        }
        size_t start = source.find_first_not_of(' ', source.rfind('\n', at) + 1);
        std::printf("  %s\n", source.substr(start, source.find('\n', at) - start).c_str());
    }
    return true;
}

int main() {
    // A 3 x 3 box blur, written as for the CPU.
    BufferParam in(Float(32), 2, "in");
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func blur_x("blur_x"), blur_y("blur_y");
    blur_x(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f;
    blur_y(y, x) = (blur_x(y, x) + blur_x(y + 1, x) + blur_x(y + 2, x)) / 3.0f;
    Pipeline blur(blur_y);

    // The target names the GPU: sm_80 (A100), sm_86, sm_89, sm_90 (H100),
    // or sm_90a for Hopper's own instructions. "host-cuda" alone would mean
    // the GPU found when the pipeline first runs.
    Target gpu("host-cuda-sm_90");

    // ---- 1. One thread per output point.
    // Blocks of 8 x 32 threads tile the output; blur_x is computed inside
    // each thread, over the three rows that thread needs (compute_at the
    // innermost thread loop): every thread keeps them in registers.
    std::printf("1. gpu_tile, blur_x per thread\n");
    Schedule per_thread;
    per_thread[blur_y].gpu_tile(y, x, yo, xo, yi, xi, 8, 32);
    per_thread[blur_x].compute_at(blur_y, xi);
    std::printf("%s", blur.print_loop_nest(per_thread).c_str());

    // The kernel: block loops read blockIdx, thread loops threadIdx. x is the
    // innermost thread dimension, so neighbouring threads read neighbouring
    // addresses (coalesced). The last tiles are guarded, for sizes that are
    // not multiples of the tile.
    std::string cuda = blur.compile_to_cuda(per_thread, gpu);
    size_t kernel = cuda.find("// Kernel");
    std::printf("%s", cuda.substr(kernel).c_str());
    if (cuda.find("float blur_x_[3]") == std::string::npos ||
        cuda.find("(int)threadIdx.x") == std::string::npos) {
        std::printf("unexpected kernel\n");
        return 1;
    }

    // ---- 2. Two kernels.
    // blur_x computed at root, with its own gpu_tile, becomes a kernel of
    // its own, launched before blur_y's: each point of blur_x is computed
    // once instead of three times, at the price of a round trip through
    // global memory. The comment above each kernel gives its launch shape.
    std::printf("\n2. blur_x at root: two kernels\n");
    Schedule two;
    two[blur_x].compute_root().gpu_tile(y, x, yo, xo, yi, xi, 4, 64);
    two[blur_y].gpu_tile(y, x, yo, xo, yi, xi, 8, 32);
    std::string two_kernels = blur.compile_to_cuda(two, gpu);
    for (size_t at = two_kernels.find("// Kernel"); at != std::string::npos;
         at = two_kernels.find("// Kernel", at + 1)) {
        std::printf("  %s\n", two_kernels.substr(at, two_kernels.find('\n', at) - at).c_str());
    }

    // ---- 2b. Shared memory.
    // Computed per thread, each point of blur_x is computed three times (by
    // three threads); at root, it costs a round trip through global memory.
    // In between: compute blur_x once per block, at the block loop xo, by
    // the block's threads (gpu_threads on blur_x's own loops). It then lives
    // in the block's shared memory, and Loom puts a barrier
    // (__syncthreads) between the threads that write it and those that read
    // it. ShiftInwards keeps the last tiles whole (shifted back to overlap),
    // so that every block's tile, and with it the shared allocation and the
    // thread count, is a constant: 8 x 32 outputs need 10 x 32 of blur_x,
    // computed by 10 x 32 threads, of which 8 x 32 then compute blur_y.
    std::printf("\n2b. blur_x per block, in shared memory\n");
    Schedule shared;
    shared[blur_y].gpu_tile(y, x, yo, xo, yi, xi, 8, 32, TailStrategy::ShiftInwards);
    shared[blur_x].compute_at(blur_y, xo).gpu_threads(x, y);
    std::string tiled = blur.compile_to_cuda(shared, gpu);
    if (!show_lines(tiled, {"// Kernel", "__shared__", "__syncthreads", "if (threadIdx.y"})) {
        return 1;
    }

    // ---- 2c. Several points per thread, as one vector.
    // Memory-bound kernels reach the GPU's bandwidth when each thread moves
    // 16 bytes at a time. Split the thread loop again and vectorize the
    // innermost part: each thread then computes 4 consecutive floats as one
    // vector, and its dense loads and stores become single 16-byte
    // instructions (when the address is aligned, which the kernel checks).
    // ShiftInwards keeps every block whole, so no lane needs a mask.
    // (Marking first works too, as in Halide: gpu_tile(x, xo, xi, 512)
    // followed by vectorize(xi, 4) gives the same 128 threads, because a
    // split keeps a thread loop's marking on its outer part.)
    std::printf("\n2c. four floats per thread\n");
    Func brighter("brighter");
    brighter(y, x) = in(y, x) * 1.5f + 0.25f;
    Var v("v");
    Schedule wide;
    wide[brighter]
        .split(x, xo, xi, 512, TailStrategy::ShiftInwards)
        .split(xi, xi, v, 4)
        .vectorize(v)
        .gpu_blocks(xo, y)
        .gpu_threads(xi);
    std::string vectors = Pipeline(brighter).compile_to_cuda(wide, gpu);
    // One line loads the 4 inputs (loom_load_dense_readonly: the kernel
    // only reads `in`, so the load goes through the read-only data cache)
    // and stores the 4 results.
    if (!show_lines(vectors, {"loom_store_dense_global<float, 4>"}) ||
        vectors.find("loom_load_dense_readonly<float, 4>(in_") == std::string::npos) {
        return 1;
    }

    // The kernel tests each address because it cannot know where a row
    // starts: `in` may be a view at any offset, with rows of any length,
    // and beside every word it keeps a lane-by-lane path for the other
    // case. When the caller knows better, say so, as in Halide: the
    // buffer's first element is 16-byte aligned, its rows hold a whole
    // number of float4s, and its columns count from 0. The pipeline checks
    // each promise when it runs (a buffer that breaks one is refused, by
    // name), and the compiler proves every vector aligned: the words move
    // with no test and no second path. (GuardWithIf keeps each block's
    // start a multiple of 512; ShiftInwards would shift the last one.)
    BufferParam frame(Float(32), 2, "frame");
    frame.set_host_alignment(16).dim(0).set_stride_multiple(4);
    frame.dim(1).set_min(0);
    Func dimmer("dimmer");
    dimmer(y, x) = frame(y, x) * 0.5f;
    dimmer.output_buffer().set_host_alignment(16).dim(0).set_stride_multiple(4);
    dimmer.output_buffer().dim(1).set_min(0);
    Schedule promised;
    promised[dimmer]
        .split(x, xo, xi, 512, TailStrategy::GuardWithIf)
        .split(xi, xi, v, 4)
        .vectorize(v)
        .gpu_blocks(xo, y)
        .gpu_threads(xi);
    std::string proven = Pipeline(dimmer).compile_to_cuda(promised, gpu);
    if (!show_lines(proven, {"loom_store_aligned_global<float, 4>(dimmer_"}) ||
        proven.find("loom_load_aligned_readonly<float, 4>(frame_") == std::string::npos) {
        return 1;
    }

    // A loop along a row needs no promise for most of that. Here a block
    // walks its row 512 floats at a time: every vector of the row is
    // aligned exactly when the row's start is, so the kernel tests the
    // start once, before the loop, and runs a copy of the loop whose words
    // move untested (the loop as written, testing each access, runs for a
    // row that starts elsewhere).
    Func halved("halved");
    halved(y, x) = in(y, x) * 0.5f;
    Schedule along;
    along[halved]
        .split(x, xo, xi, 512, TailStrategy::GuardWithIf)
        .split(xi, xi, v, 4)
        .vectorize(v)
        .gpu_blocks(y)
        .gpu_threads(xi);
    std::string walked = Pipeline(halved).compile_to_cuda(along, gpu);
    if (!show_lines(walked,
                    {"if (loom_is_aligned<16>(in_", "loom_load_aligned_readonly<float, 4>(in_"})) {
        return 1;
    }

    // ---- 2d. Threads that reduce together.
    // Softmax needs each row's maximum and sum. With one block per row, mark
    // the reduction's RVar (split by the block's size) with gpu_threads:
    // every thread then accumulates its share of the row in a register, and
    // the block combines the shares (warp shuffles, then shared memory
    // across warps) into a total that every thread receives. Loom does
    // this for updates of the form f(y) = f(y) op e with op one of +, *,
    // min, max, && and ||; any other update that several threads would make
    // to one element is refused. A single point like row_max(y), computed
    // once per block, is kept by every thread in a register of its own:
    // each folds the total into its copy, so none waits at a barrier for
    // another to store it in shared memory.
    std::printf("\n2d. softmax, one block per row\n");
    RDom r(0, in.dim(1).extent(), "r");
    RVar ro("ro"), ri("ri");
    Func row_max("row_max"), row_sum("row_sum"), softmax("softmax");
    row_max(y) = cast<float>(-INFINITY);
    row_max(y) = max(row_max(y), in(y, r));
    row_sum(y) = 0.0f;
    row_sum(y) = row_sum(y) + exp(in(y, r) - row_max(y));
    softmax(y, x) = exp(in(y, x) - row_max(y)) / row_sum(y);
    Schedule rows;
    rows[softmax].split(x, xo, xi, 256).gpu_blocks(y).gpu_threads(xi);
    for (Func f : {row_max, row_sum}) {
        rows[f].compute_at(softmax, y);
        rows[f].update().split(r, ro, ri, 256).gpu_threads(ri);
    }
    std::string reduced = Pipeline(softmax).compile_to_cuda(rows, gpu);
    if (!show_lines(reduced, {"row_max_partial_[0] = fmaxf(row_max_partial_[0]",
                              "row_sum_partial_[0] = loom_block_reduce<", "float row_max_[1];",
                              "row_sum_[0] = (row_sum_[0] + row_sum_partial_[0]);"})) {
        return 1;
    }

    // Short rows would leave most of a block idle. Give a block several
    // rows instead, one per threadIdx.y, and reduce each over threadIdx.x:
    // the element row_max(y) depends on the y loop, so each row's threads
    // (a group) combine their own shares, with warp shuffles when a row's
    // threads are a part of one warp.
    Var ys("ys"), yr("yr");
    Schedule short_rows;
    short_rows[softmax]
        .split(y, ys, yr, 8, TailStrategy::ShiftInwards)
        .split(x, xo, xi, 32)
        .reorder(ys, xo, yr, xi)
        .gpu_blocks(ys)
        .gpu_threads(xi, yr);
    for (Func f : {row_max, row_sum}) {
        short_rows[f].compute_at(softmax, ys).gpu_threads(y);
        short_rows[f].update().split(r, ro, ri, 32).reorder(ro, y, ri).gpu_threads(ri, y);
    }
    std::string grouped = Pipeline(softmax).compile_to_cuda(short_rows, gpu);
    if (!show_lines(grouped, {"row_max_partial_[0] = loom_group_reduce<"})) return 1;

    // The softmax above reads each row three times: for the max, the sum
    // and the output. A memory-bound kernel's time is the bytes it moves,
    // so copy the row into shared memory once and let the three passes read
    // the copy. The algorithm does not change: sch.in(in, {y, x}) makes
    // every read of `in` go through a Func of its own, in_in(y, x), which
    // the schedule computes per row (per block) with the block's threads.
    // Its size, the row's length, is known only when the kernel is
    // launched; the launch asks for that much shared memory (a row too long
    // for a block fails there, with its size).
    Schedule staged = rows.clone();
    staged.in(in, {y, x}).compute_at(softmax, y).split(x, xo, xi, 256).gpu_threads(xi);
    std::string staged_cuda = Pipeline(softmax).compile_to_cuda(staged, gpu);
    if (!show_lines(staged_cuda, {"in_in_ = reinterpret_cast<float *>(loom_shared_memory",
                                  "fmaxf(row_max_partial_[0], in_in_["})) {
        return 1;
    }

    // Greedy decoding wants the point of each row where it is largest, not
    // the largest value: an argmax. Written out as a Tuple update, each
    // element takes its value at a point that beats the running max, under
    // the one test (argmax() builds this update inline; write it out to
    // schedule it):
    //
    //   top(y) = (index, max), each taken under the test v > top(y)[1]
    //
    // Its threads can share a row too. Each keeps its own max, the point
    // where it found it, and the rest of the Tuple there; the block combines
    // the maxima, then picks, among the threads that reached the largest,
    // the point the serial loop would have kept: with a strict test (>) the
    // first, with >= the last, by the update's RVars. So ties go as they
    // would on the CPU, whatever thread saw which point.
    std::printf("\n2d. argmax, one block per row\n");
    Func top("top");
    top(y) = Tuple(0, type_min(Float(32)));
    Expr beats = in(y, r) > top(y)[1];
    top(y) = Tuple(select(beats, Expr(r), top(y)[0]), select(beats, in(y, r), top(y)[1]));
    Schedule argmax_rows;
    argmax_rows[top].gpu_blocks(y);
    argmax_rows[top].update().split(r, ro, ri, 256).gpu_threads(ri).gpu_blocks(y);
    std::string argmax_cuda = Pipeline(top).compile_to_cuda(argmax_rows, gpu);
    if (!show_lines(argmax_cuda, {"top_1_partial_best_[0] = loom_block_reduce<",
                                  "top_1_partial_rank0_best_[0] = loom_block_reduce<"})) {
        return 1;
    }

    // A thread may take several neighbouring points a step: split its share
    // of the row again and vectorize the inner part. The block ranks every
    // point, so a thread still weighs its lanes one by one, but it loads
    // them together, as one vector of 4 floats (a 16-byte load where the
    // row is aligned, which the kernel tests once per row; the row's last
    // vector, masked, where it is not whole). Each load then brings 4 times
    // the bytes, for the same cost of issuing it.
    std::printf("\n2d. argmax, 4 points a thread a step\n");
    RVar rv("rv");
    Schedule argmax_vectors;
    argmax_vectors[top].gpu_blocks(y);
    argmax_vectors[top]
        .update()
        .split(r, ro, ri, 256 * 4)
        .split(ri, ri, rv, 4)
        .gpu_threads(ri)
        .vectorize(rv)
        .gpu_blocks(y);
    std::string vector_cuda = Pipeline(top).compile_to_cuda(argmax_vectors, gpu);
    if (!show_lines(vector_cuda, {"loom_is_aligned<16>(in_", "float in_lanes_",
                                  "loom_load_aligned_readonly<float, 4>(in_"})) {
        return 1;
    }

    // ---- 2e. A thread's own arrays.
    // A Func computed inside the thread loops is an array per thread. Its
    // size must be a constant, and it stays in registers only if every
    // index into it is a constant too: a GPU puts an array indexed at run
    // time in (slow) local memory. So unroll the loops over it. When the
    // size comes from an input's extent, fix that extent in the algorithm
    // with set_extent: the pipeline is compiled for exactly that extent
    // (and checks it when called). Here each thread squares a row of 16,
    // then sums it reversed times itself.
    std::printf("\n2e. a row of 16 per thread, in registers\n");
    BufferParam rows_in(Float(32), 2, "rows_in");
    rows_in.dim(1).set_extent(16);
    Var c("c");
    RDom k(0, rows_in.dim(1).extent(), "k");
    Func squared("squared"), folded("folded");
    squared(y, c) = rows_in(y, c) * rows_in(y, c);
    folded(y) = 0.0f;
    folded(y) += squared(y, k) * squared(y, 15 - k);
    Schedule rows_of_16;
    rows_of_16[folded].split(y, yo, yi, 128).gpu_blocks(yo).gpu_threads(yi);
    rows_of_16[folded].update().split(y, yo, yi, 128).gpu_blocks(yo).gpu_threads(yi).unroll(k);
    rows_of_16[squared].compute_at(folded, yi).unroll(c);
    std::string registers = Pipeline(folded).compile_to_cuda(rows_of_16, gpu);
    if (!show_lines(registers, {"float squared_[16]", "squared_[15]"})) return 1;

    // ---- 2f. Registers a thread keeps across a block's loop.
    // A matrix product, c = a * b: each block computes a 16 x 16 tile of c,
    // one element per thread, walking k in steps of 8. At each step the
    // block copies the step's 16 x 8 tile of a and 8 x 16 tile of b into
    // shared memory (every element is read by 16 threads), and each thread
    // adds its 8 products to its own sum. The sums must live across the
    // steps, so acc is computed at the block loop, outside the thread loops,
    // yet each of its elements is touched by one thread only: store_in
    // (Register) there asks for one float per thread. Loom proves that
    // every access to acc is at its tile's corner plus the index of the
    // thread making it, or names the access that is not.
    std::printf("\n2f. a matrix product: sums in registers, tiles in shared memory\n");
    BufferParam ma(Float(32), 2, "ma"), mb(Float(32), 2, "mb");
    Var i("i"), j("j"), io("io"), jo("jo"), ii("ii"), ji("ji");
    RDom kk(0, ma.dim(1).extent(), "kk");
    RVar ko("ko"), ki("ki");
    Func acc("acc"), product("product");
    acc(i, j) = 0.0f;
    acc(i, j) += ma(i, kk) * mb(kk, j);
    product(i, j) = acc(i, j);
    Schedule gemm;
    gemm[product]
        .tile(i, j, io, jo, ii, ji, 16, 16, TailStrategy::GuardWithIf)
        .gpu_blocks(io, jo)
        .gpu_threads(ii, ji);
    gemm[acc].compute_at(product, io).gpu_threads(i, j).store_in(MemoryType::Register);
    gemm[acc].update().split(kk, ko, ki, 8).reorder(ko, i, j, ki).gpu_threads(i, j);
    Var a0("a0"), a1("a1"), b0("b0"), b1("b1");
    gemm.in(ma, {a0, a1}).compute_at(acc, ko).gpu_threads(a0, a1);
    gemm.in(mb, {b0, b1}).compute_at(acc, ko).gpu_threads(b0, b1);
    std::string gemm_cuda = Pipeline(product).compile_to_cuda(gemm, gpu);
    if (!show_lines(gemm_cuda, {"float acc_[1];", "ma_in_ = reinterpret_cast<float *>",
                                "acc_[0] = (acc_[0] + (ma_in_["})) {
        return 1;
    }

    // ---- 2g. A fused chain of reductions: rolling_update and split_k.
    // Lessons 10 and 11 fused softmax's max, sum and weighted sum into one
    // pass (rolling_update) and into parallel chunks (split_k). On the GPU
    // the same directives take blocks and threads on the Vars every
    // reduction of the chain has, the rows: split them on the stage the
    // directive returns, as any loop. A row per thread, here: each thread
    // keeps its row's running max, sum and weighted sum (8 floats, the
    // fixed extent of v's second dimension) in registers.
    std::printf("\n2g. a fused chain: a row per thread, chunks on blocks\n");
    BufferParam scores(Float(32), 2, "scores"), values(Float(32), 2, "values");
    values.dim(1).set_extent(8);
    Var d("d"), row_block("row_block"), row("row"), chunk("chunk");
    RDom keys(0, scores.dim(1).extent(), "keys");
    Func best("best"), weight("weight"), total("total"), mix("mix"), average("average");
    best(i) = maximum(scores(i, keys));
    weight(i, j) = exp(scores(i, j) - best(i));
    total(i) = sum(weight(i, keys));
    mix(i, d) = sum(weight(i, keys) * values(keys, d));
    average(i, d) = mix(i, d) / total(i);
    average.output_buffer().dim(1).set_extent(8);
    Schedule rolled;
    rolled[average].split(i, io, ii, 64).gpu_blocks(io).gpu_threads(ii);
    rolled.rolling_update(mix, keys)
        .split(i, row_block, row, 64)
        .gpu_blocks(row_block)
        .gpu_threads(row);
    rolled[mix].compute_root();
    std::string rolled_cuda = Pipeline(average).compile_to_cuda(rolled, gpu);
    if (!show_lines(rolled_cuda, {"// Kernel loom_average_mix_1", "const int mix_s1_row_ = "})) {
        return 1;
    }
    // With few rows (decoding: one query per head), a row per thread
    // leaves the GPU idle. split_k cuts the keys into chunks; put the
    // chunks on blocks too, and each thread of average combines its row's
    // chunks with the derived repairs. (schedules/flash_attention.h
    // packages this for attention as flash_decoding_gpu.)
    Schedule chunked;
    chunked[average].split(i, io, ii, 64).gpu_blocks(io).gpu_threads(ii);
    chunked.split_k(mix, keys, 16, chunk)
        .split(i, row_block, row, 64)
        .reorder(chunk, row_block, row)
        .gpu_blocks(row_block, chunk)
        .gpu_threads(row)
        .compute_root();
    chunked[mix].compute_at(average, ii);
    std::string chunked_cuda = Pipeline(average).compile_to_cuda(chunked, gpu);
    if (!show_lines(chunked_cuda, {"// Kernel loom_average_mix_partial_1",
                                   "const int mix_partial_s1_chunk_ = "})) {
        return 1;
    }

    // A row per block, when rows are long (a softmax over 16k columns):
    // the chain's chunks go on the block's threads. split_k with
    // ChunkLayout::Interleaved gives thread `lane` the tiles lane, lane +
    // 128, lane + 256, ... of its row, so that at each step neighbouring
    // threads read neighbouring 16-byte words. Each thread rolls its tiles
    // into its own running max and sum, in registers; best and total,
    // computed by the whole block (at probs' row loop, on gpu_blocks),
    // then combine the 128 partials across the threads with the derived
    // repair: a max, then a sum of total_partial * exp(best_partial -
    // best). The output's pass reads the row a second time. This is the
    // online softmax of softmax::Softmax::schedule_gpu_online.
    std::printf("\n2h. a chain's chunks on a block's threads: the online softmax\n");
    Func probs("probs");
    Var lane("lane");
    RVar step("step"), in_tile("in_tile");
    probs(i, j) = weight(i, j) / total(i);
    Schedule online;
    online[probs].split(j, jo, ji, 128).gpu_blocks(i).gpu_threads(ji);
    online.split_k(total, keys, 128, lane, ChunkLayout::Interleaved)
        .split(keys, step, in_tile, 4)
        .vectorize(in_tile)
        .compute_at(probs, i)
        .gpu_threads(lane);
    online[best].compute_at(probs, i);
    online[total].compute_at(probs, i);
    std::string online_cuda = Pipeline(probs).compile_to_cuda(online, gpu);
    if (!show_lines(online_cuda, {"float total_partial_[1];", "float best_partial_[1];",
                                  "= loom_block_reduce<"})) {
        return 1;
    }
    // A lone reduction splits the same way: split_k of a row's plain sum
    // is Halide's rfactor, a partial per thread and one sum across the
    // block. Each thread's loop over its steps is its own, so its whole
    // tiles need no test of the row's end (RMSNorm's unstaged schedule).
    Func row_total("row_total"), share("share");
    row_total(i) = sum(scores(i, keys));
    share(i, j) = scores(i, j) / row_total(i);
    Schedule lone;
    lone[share].split(j, jo, ji, 128).gpu_blocks(i).gpu_threads(ji);
    lone.split_k(row_total, keys, 128, lane, ChunkLayout::Interleaved)
        .split(keys, step, in_tile, 4)
        .vectorize(in_tile)
        .compute_at(share, i)
        .gpu_threads(lane);
    lone[row_total].compute_at(share, i);
    std::string lone_cuda = Pipeline(share).compile_to_cuda(lone, gpu);
    if (!show_lines(lone_cuda, {"float row_total_partial_[1];", "= loom_block_reduce<"})) {
        return 1;
    }

    // ---- 2i. A row kept in its threads' registers.
    // The online softmax reads its row twice; the staged schedules read it
    // once, into shared memory. A row whose length is fixed can instead
    // stay in the registers of the threads that copy it: copy it with in()
    // at the row's loop, as a staged schedule does, but store_in
    // (Register). Each thread copies every 1024th run of 4 floats from its
    // own (thread t: floats 4t to 4t + 3, then 4t + 1024, ...). When every
    // pass reads the row in the same runs (here the split_k partials'
    // interleaved steps of 4, and the output's threads writing 4 floats
    // each), Loom proves that each thread touches only its own runs and
    // gives it just those: 4096 / 256 = 16 floats, indexed by constants
    // once nvcc unrolls the loops over the row, so registers, not local
    // memory. A schedule whose passes read the row in other runs is a
    // CompileError that names the access. softmax::Softmax::
    // schedule_gpu_in_registers (and LayerNorm's and RMSNorm's) packages
    // this for the apps.
    std::printf("\n2i. a row of 4096 floats kept in its threads' registers\n");
    BufferParam fixed_rows(Float(32), 2, "fixed_rows");
    fixed_rows.dim(1).set_min(0).set_extent(4096);
    RDom columns(0, fixed_rows.dim(1).extent(), "columns");
    Func fixed_total("fixed_total"), fixed_share("fixed_share");
    fixed_total(i) = sum(fixed_rows(i, columns));
    fixed_share(i, j) = fixed_rows(i, j) / fixed_total(i);
    fixed_share.output_buffer().dim(1).set_min(0).set_extent(4096);
    Schedule kept;
    Var jv("jv"), c0("c0"), c1("c1"), co("co"), ci("ci"), cv("cv");
    kept[fixed_share].split(j, jo, ji, 1024).split(ji, ji, jv, 4).vectorize(jv);
    kept[fixed_share].gpu_blocks(i).gpu_threads(ji);
    kept.in(fixed_rows, {c0, c1})
        .compute_at(fixed_share, i)
        .store_in(MemoryType::Register)
        .split(c1, co, ci, 1024)
        .split(ci, ci, cv, 4)
        .vectorize(cv)
        .gpu_threads(ci);
    kept.split_k(fixed_total, columns, 256, lane, ChunkLayout::Interleaved)
        .split(columns, step, in_tile, 4)
        .vectorize(in_tile)
        .compute_at(fixed_share, i)
        .gpu_threads(lane);
    kept[fixed_total].compute_at(fixed_share, i);
    std::string kept_cuda = Pipeline(fixed_share).compile_to_cuda(kept, gpu);
    if (!show_lines(kept_cuda,
                    {"float fixed_rows_in_[16];", "loom_load_lanes<float, 4>(fixed_rows_in_"})) {
        return 1;
    }
    // An SM runs as many blocks at once as their registers allow, and a
    // row per block in flight is little to hide the memory's latency
    // behind. gpu_blocks_per_sm(n), on the Func whose loops are the
    // kernel's blocks, is CUDA's __launch_bounds__(threads, n): nvcc caps
    // each thread's registers so that n blocks fit, spilling if it must.
    kept[fixed_share].gpu_blocks_per_sm(4);
    if (!show_lines(Pipeline(fixed_share).compile_to_cuda(kept, gpu),
                    {"__launch_bounds__(256, 4)"})) {
        return 1;
    }

    // ---- 3. PTX and cubin.
    // compile_to_cuda(basename, ...) also runs NVRTC: it writes the source
    // (.cu), the PTX (.ptx, readable assembly) and the cubin (.cubin, the
    // binary for that GPU). NVRTC is loaded when first needed; without the
    // CUDA toolkit only this step fails, with a message saying so.
    std::printf("\n3. NVRTC\n");
    try {
        blur.compile_to_cuda("lesson_12_blur", per_thread, Target("host-cuda-sm_90a"));
        std::ifstream ptx("lesson_12_blur.ptx");
        std::string line;
        while (std::getline(ptx, line)) {
            if (line.find(".target") != std::string::npos ||
                line.find(".entry") != std::string::npos) {
                std::printf("  %s\n", line.c_str());
            }
        }
    } catch (const CompileError &e) {
        std::printf("  (skipped: %s)\n", e.what());
    }
    for (const char *suffix : {".cu", ".ptx", ".cubin"}) {
        std::remove((std::string("lesson_12_blur") + suffix).c_str());
    }

    // Kernels keep IEEE float semantics by default: `exp` is CUDA's
    // accurate expf, some eight instructions, and `/` is correctly rounded,
    // some ten with a slow path. The target feature fast_math trades that
    // for speed, as nvcc's --use_fast_math does (Triton's kernels, and so
    // torch.compile's, use the same approximations): exp becomes a multiply
    // and the hardware's ex2.approx, a division a reciprocal and a
    // multiply, each a few ulp off. The staged softmax of 2d pays for its
    // exp and division at every point; compare its PTX both ways.
    try {
        for (const char *t : {"host-cuda-sm_90", "host-cuda-sm_90-fast_math"}) {
            Pipeline(softmax).compile_to_cuda("lesson_12_softmax", staged, Target(t));
            std::ifstream ptx("lesson_12_softmax.ptx");
            int instructions = 0, rounded_divisions = 0;
            for (std::string line; std::getline(ptx, line);) {
                instructions += line.find(';') != std::string::npos;
                rounded_divisions += line.find("div.rn.f32") != std::string::npos;
            }
            std::printf("  %-26s %4d lines of PTX, %d correctly rounded divisions\n", t,
                        instructions, rounded_divisions);
            if (rounded_divisions > 0 && std::string(t).find("fast_math") != std::string::npos) {
                return 1;
            }
        }
    } catch (const CompileError &e) {
        std::printf("  (skipped: %s)\n", e.what());
    }
    for (const char *suffix : {".cu", ".ptx", ".cubin"}) {
        std::remove((std::string("lesson_12_softmax") + suffix).c_str());
    }

    // ---- 4. What a block cannot do.
    // A block holds at most 1024 threads; Loom checks it when it generates
    // the kernel, and says what to change.
    std::printf("\n4. a block of 64 x 32 threads\n");
    Schedule too_big;
    too_big[blur_y].gpu_tile(y, x, yo, xo, yi, xi, 64, 32);
    try {
        blur.compile_to_cuda(too_big, gpu);
        std::printf("expected a CompileError\n");
        return 1;
    } catch (const CompileError &e) {
        std::printf("  caught: %s\n", e.what());
    }

    // ---- 5. Running it.
    // compile() with a GPU target gives a pipeline that launches its kernels
    // on the GPU, called like any other. Target("host-cuda") compiles for
    // this machine's GPU. A Buffer gets GPU memory when a GPU pipeline first
    // uses it: the input is copied there, and the output stays there until
    // the host reads it (operator() copies it back). Where there is no GPU
    // (or no NVIDIA driver), the call fails with a message saying so.
    std::printf("\n5. running on the GPU\n");
    int32_t capability = 0;
    if (loom_cuda_device_capability(0, &capability) != 0) {
        std::printf("  (skipped: %s)\n", loom_last_error_message());
    } else {
        const int rows = 100, cols = 300;
        Buffer<float> input({rows + 2, cols + 2}), output({rows, cols});
        input.fill([](const std::vector<int> &c) { return float((c[0] * 7 + c[1] * 3) % 11); });
        in.set(input);
        CompiledPipeline on_gpu = blur.compile(shared, Target("host-cuda"));
        on_gpu.realize({output});
        std::printf("  sm_%d: output on the GPU until read: %s\n", capability,
                    output.device_dirty() ? "yes" : "no");
        Buffer<float> expected(blur.realize({rows, cols}));  // the CPU, for comparison
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                if (std::abs(output(r, c) - expected(r, c)) > 1e-5f) {
                    std::printf("GPU and CPU differ at (%d, %d)\n", r, c);
                    return 1;
                }
            }
        }
        std::printf("  the GPU's blur equals the CPU's\n");

        // A view (cropped, transposed) shares its buffer's GPU memory, and
        // each sees what the others wrote wherever they wrote it: here the
        // GPU writes the bottom rows through a view, and the whole output,
        // read on the host, shows them next to the rows the host cleared.
        output.fill([](const std::vector<int> &) { return 0.0f; });
        Buffer<float> bottom(output.cropped(0, rows / 2, rows - rows / 2));
        on_gpu.realize({bottom});
        if (output(rows - 1, 7) != expected(rows - 1, 7) || output(0, 7) != 0.0f) {
            std::printf("the view's rows are not the output's\n");
            return 1;
        }
        std::printf("  rows written through a view are the buffer's\n");
    }

    // ---- 6. Next to PyTorch.
    // A pipeline waits for its kernels before it returns, on the legacy
    // default stream unless the calling thread names another one. Code
    // that shares the GPU with PyTorch gives Loom PyTorch's current stream
    // (torch.cuda.current_stream().cuda_stream), so that Loom's copies and
    // launches queue behind PyTorch's kernels on that stream, and only that
    // stream is waited for. The setting is per thread; null goes back to the
    // default. PyTorch's CUDA tensors reach Loom through DLPack without a
    // copy (loom_buffer_from_dltensor); apps/bench/torch_compare.py does both.
    std::printf("\n6. the thread's stream: %s\n",
                loom_cuda_stream() ? "set" : "the legacy default stream");

    std::printf("Lesson 12 passed.\n");
    return 0;
}
