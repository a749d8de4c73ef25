// Memory-bound GPU kernels against the GPU's own copy bandwidth, measured in
// the same run: an elementwise chain, row softmax, LayerNorm and RMSNorm
// over float32 matrices of about 1 GiB each way (the row apps with each row
// staged in shared memory by blocks of 512 threads, their generators'
// default, and of 1024 and 256, and unstaged (by blocks of 1024, 512 and
// 256; softmax's unstaged schedule is the online one, its max and sum in
// one pass), and staged again with the
// target feature fast_math, which makes
// exp, division and square roots the GPU's approximations; softmax also
// keeping its exponentials in shared memory instead of its input; and the
// copy, the chain and the staged row apps again with the promises of
// loom_apps::promise_aligned_rows, which let them move their vectors as
// aligned words with no test of the address; and the row apps with each
// row kept in its threads' registers, compiled for rows of exactly 16384
// floats, aligned). Bandwidth counts the bytes a
// kernel must move (its input read once, its output written once), so a
// kernel that reads a row twice is not credited for the second read. The
// peers are cuMemcpyDtoD (the driver's device-to-device copy) and a Loom
// copy kernel with the same vectorized schedule as the elementwise chain.
//
// Then a row argmax (greedy decoding's: the index of each row's largest
// value, and the value), a block per row whose threads share the row and
// keep the first of equal maxima as the CPU does, each thread taking one
// point a step, and again four and eight (a vector load a step, whose lanes
// the thread ranks one by one). It reads its input once and writes almost
// nothing, so it counts the bytes read, against the copy's read-and-write
// rate.
//
//   gpu_memory_bound_bench [--quick] [--reps N] [--rows N] [--cols N]
//                          [--only 'NAME[|NAME...]']
//
// Each kernel is checked against the same pipeline on the CPU, with the
// app's CPU schedule, at small sizes: rows of 3001 floats, padded to 3004 as
// the promises ask (the kernels for a fixed row length at that length, 2
// rows; the elementwise ones, once, on 70001 rows of 5, more than a grid's
// y takes); then it is timed, and its line printed, before the next kernel is
// compiled, so that a run stopped early keeps every line it reached. The
// rows in registers come first. --quick checks only: the correctness run,
// which CTest runs with the label gpu. --only keeps the kernels whose names
// contain one of the NAMEs ("registers", "aligned", "row argmax"); --rows
// and --cols time matrices of N rows, of N columns, instead of 16384. Rows
// of 4096 floats or fewer add the row apps with several rows a block
// ("(R rows a block, T threads a row)", schedule_gpu's rows_per_block),
// staged and not; the kernels in registers are built for rows of 16384
// and run with those alone.
// Without a GPU it says why and exits with 77 (skipped).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <loom/loom.h>

#include "bench/gpu_bench_util.h"
#include "elementwise/elementwise.h"
#include "gpu_rows.h"
#include "layernorm/layernorm.h"
#include "rmsnorm/rmsnorm.h"
#include "softmax/softmax.h"

using namespace loom;
using loom_bench::Driver;
using loom_bench::seconds_per_call;

namespace {

/** Values in [-4, 4) from a fixed sequence (fast enough for 1 GiB). */
Buffer<float> pseudo_random(const std::vector<int> &shape, uint32_t seed) {
    Buffer<float> b(shape);
    size_t n = 1;
    for (int e : shape) n *= static_cast<size_t>(e);
    uint32_t s = seed;
    float *p = b.data();
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = static_cast<float>(s >> 8) / 16777216.0f * 8.0f - 4.0f;
    }
    return b;
}

/** One benchmarked kernel: its output Func, GPU schedule and inputs. */
struct Case {
    std::string name;
    BufferParam input;
    Func out;
    Schedule gpu;
    std::function<void(int rows, int cols)> bind;  // sets the other inputs
    Target target = Target("host-cuda");
    int columns = 0;  // the row length the kernel is compiled for; 0: any
    Schedule cpu;     // the CPU's schedule of the check (the app's own)
    // The check's size; 0: 37 rows of 3001 floats, or 2 of `columns`.
    int check_rows = 0, check_cols = 0;
};

/** Binds LayerNorm's gamma and beta, or RMSNorm's weight, for rows of
 * `cols`. */
std::function<void(int, int)> bind_layernorm(const layernorm::LayerNorm &ln) {
    return [gamma = ln.gamma, beta = ln.beta](int, int cols) mutable {
        gamma.set(pseudo_random({cols}, 7));
        beta.set(pseudo_random({cols}, 8));
    };
}
std::function<void(int, int)> bind_rmsnorm(const rmsnorm::RmsNorm &rms) {
    return [weight = rms.weight](int, int cols) mutable {
        Buffer<float> w({cols});
        for (int i = 0; i < cols; i++) w(i) = 0.5f + 0.001f * (i % 100);
        weight.set(w);
    };
}

/** The row apps with each row kept in its threads' registers
 * (schedule_gpu_in_registers), compiled for rows of exactly `columns`
 * floats, aligned rows promised: each thread reducing its own vectors
 * first with 1024 threads a block (and again asking for 2 blocks per SM,
 * which caps a thread's registers at 32), with 512 and with 256 (64 floats
 * a thread, 16 loads of 16 bytes in flight each; again asking for 3 blocks
 * per SM, which caps a thread at 80 registers), and the reductions
 * across the threads at each step with 1024. Softmax's per-thread schedule
 * keeps the row's exponentials in the registers; the online one over the
 * same registers (two exponentials a point) is timed too. They take an
 * input of their own, whose fixed length is a promise the others do not
 * make. */
void add_register_cases(std::vector<Case> &cases, int columns) {
    BufferParam in(Float(32), 2, "in");
    softmax::Softmax sm(in);
    layernorm::LayerNorm ln(in);
    rmsnorm::RmsNorm rms(in);
    sm.fix_row_length(columns);
    ln.fix_row_length(columns);
    rms.fix_row_length(columns);
    sm.promise_aligned_rows();
    ln.promise_aligned_rows();
    rms.promise_aligned_rows();
    const Target gpu("host-cuda");
    for (auto [threads, per_thread, blocks_per_sm] : {std::tuple{1024, true, 0},
                                                      {1024, true, 2},
                                                      {512, true, 0},
                                                      {256, true, 0},
                                                      {256, true, 3},
                                                      {1024, false, 0}}) {
        const std::string name =
            std::string(" (registers, ") + (per_thread ? "per thread, " : "") +
            std::to_string(threads) + " threads" +
            (blocks_per_sm ? ", " + std::to_string(blocks_per_sm) + " blocks per SM" : "") + ")";
        Case s{"row softmax" + name, in, sm.out, Schedule(), nullptr, gpu, columns};
        Case l{"LayerNorm" + name, in, ln.out, Schedule(), bind_layernorm(ln), gpu, columns};
        Case n{"RMSNorm" + name, in, rms.out, Schedule(), bind_rmsnorm(rms), gpu, columns};
        sm.schedule_gpu_in_registers(s.gpu, threads, 4, per_thread, blocks_per_sm);
        ln.schedule_gpu_in_registers(l.gpu, threads, 4, per_thread, blocks_per_sm);
        rms.schedule_gpu_in_registers(n.gpu, threads, 4, per_thread, blocks_per_sm);
        sm.schedule_cpu(s.cpu);
        ln.schedule_cpu(l.cpu);
        rms.schedule_cpu(n.cpu);
        cases.insert(cases.end(), {s, l, n});
    }
    Case online{"row softmax (registers, online, 1024 threads)",
                in,
                sm.out,
                Schedule(),
                nullptr,
                gpu,
                columns};
    loom_apps::schedule_row_app_in_registers(sm, online.gpu, 1024, 4, true, 0);
    sm.schedule_cpu(online.cpu);
    cases.push_back(online);
}

/** The memory-bound kernels over `in`: a copy, the elementwise chain, and
 * softmax, LayerNorm and RMSNorm with each row staged in shared memory (and,
 * with `unstaged_too`, without). `suffix` names the set. With `aligned`,
 * every buffer makes the promises of loom_apps::promise_aligned_rows. */
void add_cases(std::vector<Case> &cases, const BufferParam &in, bool aligned, bool unstaged_too,
               const std::string &suffix, int cols) {
    Var r("r"), c("c");
    Case copy{"copy (Loom)" + suffix, in, Func("copied"), Schedule(), nullptr};
    copy.out(r, c) = in(r, c);
    loom_apps::schedule_elementwise_on_gpu(copy.gpu, copy.out, r, c, 256, 4);
    if (aligned) loom_apps::promise_aligned_rows(in, copy.out, {});
    // The elementwise kernels are checked on more rows than a grid's y
    // takes (65,535), short ones: their blocks must not put rows there
    // (once: the aligned set has the same schedules).
    if (!aligned) {
        copy.check_rows = 70001;
        copy.check_cols = 5;
    }
    cases.push_back(copy);
    elementwise::SiluChain chain(in);
    if (aligned) chain.promise_aligned_rows();
    Case silu{"elementwise chain" + suffix, in, chain.out, Schedule(), nullptr};
    chain.schedule_gpu(silu.gpu);
    silu.check_rows = copy.check_rows;
    silu.check_cols = copy.check_cols;
    cases.push_back(silu);
    softmax::Softmax sm(in);
    layernorm::LayerNorm ln(in);
    rmsnorm::RmsNorm rms(in);
    if (aligned) {
        sm.promise_aligned_rows();
        ln.promise_aligned_rows();
        rms.promise_aligned_rows();
    }
    // Staged: each row read from device memory once (the default);
    // unstaged: once per pass over it (softmax: online, the max and the
    // sum in one pass, so twice), which leaves the SM's shared memory free
    // for more blocks. A name without a thread count is the apps' default
    // (threads 0: loom_apps::row_app_gpu_threads, 512 threads staged, 1024
    // unstaged).
    // A staged row of 16384 floats takes 64 KiB of shared memory, so an SM
    // holds three blocks: 768 threads of 256, 1536 of 512, 2048 of 1024
    // (two blocks). With fast_math: what the accurate exp and division
    // cost, which each point of softmax's output pays.
    // Per thread: each reduction made by each thread over its own points
    // of the row (a loop of its own, which nvcc unrolls) before the block
    // combines them (softmax online); unstaged, always so.
    struct Variant {
        bool staged;
        int threads;  // 0: the default (schedule_gpu only)
        bool fast_math;
        std::string name;
        bool per_thread = false;
        int rows_per_block = 1;  // schedule_gpu's; `threads` a row
    };
    const Target gpu("host-cuda"), fast_gpu = gpu.with_feature(Target::FastMath);
    std::vector<Variant> variants = {
        Variant{true, 0, false, ""},
        Variant{true, 1024, false, " (1024 threads)"},
        Variant{true, 256, false, " (256 threads)"},
        Variant{true, 0, true, " (fast_math)"},
        Variant{true, 1024, true, " (1024 threads, fast_math)"},
        Variant{true, 1024, false, " (staged, per thread, 1024 threads)", true},
        Variant{true, 256, false, " (staged, per thread, 256 threads)", true},
        Variant{false, 0, false, " (unstaged)"},
        Variant{false, 512, false, " (unstaged, 512 threads)"},
        Variant{false, 256, false, " (unstaged, 256 threads)"},
        Variant{false, 0, true, " (unstaged, fast_math)"}};
    // Short rows (--cols 4096 or fewer), not aligned: several rows a block,
    // each reduced by its own threads (schedule_gpu's rows_per_block).
    if (unstaged_too && cols <= 4096) {
        for (const auto &[rows, threads] : {std::pair{4, 128}, {8, 64}, {16, 32}}) {
            const std::string shape = std::to_string(rows) + " rows a block, " +
                                      std::to_string(threads) + " threads a row)";
            variants.push_back({true, threads, false, " (" + shape, false, rows});
            variants.push_back({false, threads, false, " (unstaged, " + shape, false, rows});
        }
    }
    for (const Variant &v : variants) {
        const bool staged = v.staged;
        if (!staged && !unstaged_too) continue;
        const std::string name = v.name + suffix;
        const Target target = v.fast_math ? fast_gpu : gpu;
        Case s{"row softmax" + name, in, sm.out, Schedule(), nullptr, target};
        Case l{"LayerNorm" + name, in, ln.out, Schedule(), nullptr, target};
        Case n{"RMSNorm" + name, in, rms.out, Schedule(), nullptr, target};
        sm.schedule_cpu(s.cpu);
        ln.schedule_cpu(l.cpu);
        rms.schedule_cpu(n.cpu);
        if (v.per_thread) {
            sm.schedule_gpu_per_thread(s.gpu, v.threads, 4, staged);
            ln.schedule_gpu_per_thread(l.gpu, v.threads, 4, staged);
            rms.schedule_gpu_per_thread(n.gpu, v.threads, 4, staged);
        } else {
            sm.schedule_gpu(s.gpu, v.threads, 4, staged, v.rows_per_block);
            ln.schedule_gpu(l.gpu, v.threads, 4, staged, v.rows_per_block);
            rms.schedule_gpu(n.gpu, v.threads, 4, staged, v.rows_per_block);
        }
        cases.push_back(s);
        l.bind = bind_layernorm(ln);
        cases.push_back(l);
        n.bind = bind_rmsnorm(rms);
        cases.push_back(n);
    }
    // LayerNorm's statistics in one pass over the row (the variance rolled
    // with the sum, about the running mean: LayerNorm::schedule_gpu_one_pass),
    // beside the two-pass kernels above: staged, the copy is read once
    // instead of twice; unstaged, the row is read from device memory twice
    // instead of three times.
    for (const auto &[staged, threads] :
         {std::pair{true, 512}, {true, 256}, {false, 256}, {false, 1024}}) {
        if (!staged && !unstaged_too) continue;
        Case l{std::string("LayerNorm (one pass, ") + (staged ? "staged, " : "unstaged, ") +
                   std::to_string(threads) + " threads)" + suffix,
               in,
               ln.out,
               Schedule(),
               nullptr,
               gpu};
        ln.schedule_cpu_one_pass(l.cpu);
        ln.schedule_gpu_one_pass(l.gpu, threads, 4, staged);
        l.bind = bind_layernorm(ln);
        cases.push_back(l);
    }
    // Online softmax rolling 4 and 16 floats per step of a thread, beside
    // the default 8 (Softmax::schedule_gpu_online), 256 threads a block.
    for (const int per_step : {4, 16}) {
        Case s{
            "row softmax (online, " + std::to_string(per_step) + " per step, 256 threads)" + suffix,
            in,
            sm.out,
            Schedule(),
            nullptr,
            gpu};
        sm.schedule_gpu_online(s.gpu, 256, 4, per_step);
        sm.schedule_cpu(s.cpu);
        if (unstaged_too) cases.push_back(s);
    }
    // Softmax keeping its exponentials in shared memory instead of its
    // input (Softmax::schedule_gpu_exponentials): each exponential is
    // computed once, and the row is read twice, the second time from L2
    // as a rule.
    for (const int threads : {256, 1024}) {
        Case s{"row softmax (exponentials, " + std::to_string(threads) + " threads)" + suffix,
               in,
               sm.out,
               Schedule(),
               nullptr,
               gpu};
        sm.schedule_gpu_exponentials(s.gpu, threads, 4);
        sm.schedule_cpu(s.cpu);
        cases.push_back(s);
    }
}

/** The index and value of each row's largest point, written out (as
 * argmax() would make it) so that its RVar can go on the GPU's threads: a
 * block per row, `threads` threads striding along it, each taking
 * `per_step` consecutive points a step (a vectorized RVar: one load of
 * them, 16 bytes where the row is aligned, a warp's together one
 * contiguous run, whose lanes the thread then ranks one by one). */
struct RowArgmax {
    Var r{"r"};
    RDom k;
    Func top{"top"};
    Schedule gpu;
    std::string name;
    RowArgmax(const BufferParam &in, int threads, int per_step)
        : k(0, in.dim(1).extent(), "k"),
          name(per_step > 1 ? "row argmax (" + std::to_string(per_step) + " a step)"
                            : "row argmax") {
        top(r) = Tuple(0, type_min(Float(32)));
        Expr v = in(r, k), beats = v > top(r)[1];
        top(r) = Tuple(select(beats, Expr(k), top(r)[0]), select(beats, v, top(r)[1]));
        RVar ko("ko"), ki("ki"), kv("kv");
        gpu[top].gpu_blocks(r);
        Stage u = gpu[top].update().split(k, ko, ki, threads * per_step);
        if (per_step > 1) u.split(ki, ki, kv, per_step).vectorize(kv);
        u.gpu_threads(ki).gpu_blocks(r);
    }
};

/** A rows x cols matrix whose rows are padded to a multiple of 4 floats,
 * as aligned rows must be. */
Buffer<float> padded_rows(int rows, int cols, uint32_t seed) {
    return Buffer<float>(pseudo_random({rows, (cols + 3) / 4 * 4}, seed).cropped(1, 0, cols));
}

}  // namespace

static int run_benchmark(int argc, char **argv) {
    // A line at a time, so that a run stopped early (a time limit, a pipe
    // into a file) keeps every line it reached.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const loom_bench::Options options(argc, argv);
    const bool quick = options.quick;
    const int reps = options.reps;
    Driver cu;
    const int capability = loom_bench::gpu_capability_or_skip(cu);
    if (!capability) return 77;
    const Target gpu("host-cuda");
    std::printf("GPU: sm_%d\n", capability);

    BufferParam in(Float(32), 2, "in"), aligned_in(Float(32), 2, "in");
    std::vector<Case> cases;
    // The matrices timed: 16384 x 16384 floats (1 GiB in, 1 GiB out), or
    // --rows rows of --cols.
    const int rows = options.rows ? options.rows : 16384,
              cols = options.cols ? options.cols : 16384;
    // The rows in registers first: the candidates for the 0.80 target that
    // a run stopped early (gpu-check's phase limit) should still time. They
    // are built for rows of 16384 alone.
    if (cols == 16384) add_register_cases(cases, cols);
    add_cases(cases, in, false, true, "", cols);
    add_cases(cases, aligned_in, true, false, " (aligned)", cols);

    // The bandwidth's yardstick first, so that each kernel can be timed
    // right after its check: a run stopped early keeps what it timed.
    const double bytes = 2.0 * rows * static_cast<double>(cols) * sizeof(float);
    Buffer<float> input, output;
    double copy = 0, copy_bw = 0;
    if (!quick) {
        input = pseudo_random({rows, cols}, 3);
        output = Buffer<float>({rows, cols});
        input.copy_to_device();
        output.copy_to_device();
        const uint64_t src = input.raw_buffer()->device, dst = output.raw_buffer()->device;
        copy = seconds_per_call([&] { cu.memcpy_dtod(dst, src, bytes / 2); }, cu, reps, 10);
        copy_bw = bytes / copy / 1e9;
        std::printf("%d x %d float32, %.2f GB moved per call (read once + write once)\n", rows,
                    cols, bytes / 1e9);
        std::printf("%-48s %9.3f %9.1f %14.2f\n", "cuMemcpyDtoD", copy * 1e3, copy_bw, 1.0);
    }
    if (quick) {
        std::printf("%-48s %s\n", "kernel", "GPU vs CPU");
    } else {
        std::printf("%-48s %-20s %9s %9s %14s\n", "kernel", "GPU vs CPU", "ms", "GB/s",
                    "vs cuMemcpyDtoD");
    }

    // Each kernel: on the GPU against the same pipeline on the CPU, at sizes
    // that are no multiple of the blocks (the worst relative difference),
    // then timed. Per row app, its fastest schedule in IEEE float (without
    // fast_math) and with fast_math, and the generators' default (the
    // app's name alone: schedule_gpu's defaults): the summary printed at
    // the end.
    struct Best {
        double ratio = 0;
        std::string name;
    };
    std::map<std::string, Best> best, defaults;
    bool ok = true;
    int selected = 0;
    std::map<std::tuple<std::string, int, int>, Buffer<float>> expected_rows;
    for (Case &k : cases) {
        if (!options.selects(k.name)) continue;
        selected++;
        CompiledPipeline p = Pipeline(k.out).compile(k.gpu, k.target);
        // Kernels for a fixed row length at that length, on fewer rows.
        const int check_rows = k.check_rows ? k.check_rows : k.columns ? 2 : 37;
        const int check_cols = k.check_cols ? k.check_cols : k.columns ? k.columns : 3001;
        k.input.set(padded_rows(check_rows, check_cols, 1));
        if (k.bind) k.bind(check_rows, check_cols);
        // The CPU's rows, computed once per app and size: the variants of
        // an app share its algorithm, inputs and CPU schedule, and an LLVM
        // compile per variant costs a GPU session seconds.
        const std::string app = k.name.substr(0, k.name.find(" ("));
        const auto key = std::make_tuple(app, check_rows, check_cols);
        auto cached = expected_rows.find(key);
        if (cached == expected_rows.end()) {
            Buffer<float> computed = padded_rows(check_rows, check_cols, 2);
            Pipeline(k.out).compile(k.cpu).realize({computed});
            cached = expected_rows.emplace(key, computed).first;
        }
        const Buffer<float> &expected = cached->second;
        Buffer<float> actual = padded_rows(check_rows, check_cols, 3);
        p.realize({actual});
        // Relative differences, with values under 1% of the largest counted
        // as that size: near zero the GPU's and the CPU's rounding (a tree
        // of partial sums against a serial one) differ relatively much.
        double largest = 0, worst = 0;
        for (int i = 0; i < check_rows; i++) {
            for (int j = 0; j < check_cols; j++)
                largest = std::max(largest, std::abs(double(expected(i, j))));
        }
        for (int i = 0; i < check_rows; i++) {
            for (int j = 0; j < check_cols; j++) {
                double e = expected(i, j), a = actual(i, j);
                worst = std::max(worst, std::abs(a - e) / std::max(std::abs(e), 0.01 * largest));
            }
        }
        const bool good = worst < 1e-4;
        ok = ok && good;
        char check[32];
        std::snprintf(check, sizeof(check), "%.2e %s", worst, good ? "ok" : "MISMATCH");
        if (quick || !good) {
            std::printf("%-48s %s\n", k.name.c_str(), check);
            continue;
        }
        k.input.set(input);
        if (k.bind) k.bind(rows, cols);
        const double t = seconds_per_call([&] { p.realize({output}); }, cu, reps, 10);
        std::printf("%-48s %-20s %9.3f %9.1f %14.2f\n", k.name.c_str(), check, t * 1e3,
                    bytes / t / 1e9, copy / t);
        for (const char *app : {"row softmax", "LayerNorm", "RMSNorm"}) {
            if (k.name.rfind(app, 0) != 0) continue;
            const bool fast = k.target.has_feature(Target::FastMath);
            Best &b = best[std::string(app) + (fast ? ", fast_math" : "")];
            if (copy / t > b.ratio) b = {copy / t, k.name};
            if (k.name == app) defaults[app] = {copy / t, k.name};
        }
    }

    // The argmax: exact, the same point and value, ties included (rows of
    // small whole numbers tie often). It reads the matrix once: GB/s of
    // reads, against the copy's rate of reads and writes together.
    for (const int per_step : {1, 4, 8}) {
        RowArgmax argmax(in, 256, per_step);
        if (!options.selects(argmax.name)) continue;
        selected++;
        CompiledPipeline top = Pipeline(argmax.top).compile(argmax.gpu, gpu);
        const int check_rows = 37, check_cols = 3001;
        Buffer<float> ties = pseudo_random({check_rows, check_cols}, 4);
        for (int i = 0; i < check_rows; i++) {
            for (int j = 0; j < check_cols; j++) ties(i, j) = std::floor(ties(i, j));
        }
        in.set(ties);
        Buffer<int32_t> index({check_rows}), expected_index({check_rows});
        Buffer<float> value({check_rows}), expected_value({check_rows});
        Pipeline(argmax.top).realize(std::vector<RawBuffer>{expected_index, expected_value});
        top.realize({index, value});
        int wrong = 0;
        for (int i = 0; i < check_rows; i++) {
            wrong += index(i) != expected_index(i) || value(i) != expected_value(i);
        }
        ok = ok && wrong == 0;
        char check[32];
        std::snprintf(check, sizeof(check), "%d/%d rows %s", wrong, check_rows,
                      wrong ? "MISMATCH" : "ok");
        if (quick || wrong) {
            std::printf("%-48s %s\n", argmax.name.c_str(), check);
            continue;
        }
        in.set(input);
        Buffer<int32_t> big_index({rows});
        Buffer<float> big_value({rows});
        const double t = seconds_per_call(
            [&] {
                top.realize({big_index, big_value});
            },
            cu, reps, 10);
        std::printf("%-48s %-20s %9.3f %9.1f %14.2f  (%d rows of %d, bytes read)\n",
                    argmax.name.c_str(), check, t * 1e3, bytes / 2 / t / 1e9,
                    bytes / 2 / t / 1e9 / copy_bw, rows, cols);
    }
    if (selected == 0) {
        std::fprintf(stderr, "--only selects no kernel\n");
        return 2;
    }
    if (!ok) return 1;
    if (quick || best.empty()) return 0;
    // The target of the row apps: 80% of the copy's bandwidth.
    std::printf("\nFastest schedule of each row app (target: 0.80 of cuMemcpyDtoD)\n");
    for (const auto &[app, b] : best) {
        std::printf("%-24s %5.2f %s  %s\n", app.c_str(), b.ratio,
                    b.ratio >= 0.8 ? "meets" : "below", b.name.c_str());
    }
    std::printf("\nThe generators' default schedule of each row app (staged, %d threads)\n",
                loom_apps::row_app_gpu_threads(true));
    for (const auto &[app, b] : defaults) {
        std::printf("%-24s %5.2f %s\n", app.c_str(), b.ratio, b.ratio >= 0.8 ? "meets" : "below");
    }
    return 0;
}

int main(int argc, char **argv) {
    return loom_bench::report_errors("gpu_memory_bound_bench",
                                     [&] { return run_benchmark(argc, argv); });
}
