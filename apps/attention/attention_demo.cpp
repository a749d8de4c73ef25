// The flagship example: attention written once as plain Funcs
// (apps/attention/variants.h: scores, max, exp, sum, weighted sum) and
// compiled for this CPU with two schedules of the same algorithm:
//
//   materialized  per block of 16 queries, the scores and probabilities are
//                 stored over every key, then reduced
//                 (AttentionVariant::schedule_materialized);
//   fused         schedules/flash_attention.h's template: rolling_update, ONE
//                 pass over tiles of 64 keys, whose repairs of the running
//                 max, sum and weighted sum the compiler derives and prints;
//                 the keys staged transposed once (kt) and each score tile
//                 (qk) computed in L1; causal tiles above the diagonal
//                 skipped (the materialized schedule computes and masks them);
//   tile program  the same template with the head dimension fixed: per 64
//                 queries one tile program rolling the chain over tiles of
//                 keys, its products register-blocked dots and its row
//                 statistics vector reductions.
//
// All are checked against the float64 reference, then timed side by side,
// with the memory each stores, and, when python3 can import torch, PyTorch's
// scaled_dot_product_attention on the CPU on the same inputs, with the same
// thread count (LOOM_NUM_THREADS, default every core). For fp32 without a
// mask tensor PyTorch runs its own fused kernel
// (_scaled_dot_product_flash_attention_for_cpu), so it is the bar to meet,
// not a straw man.
//
//   attention_demo [--quick] [--global] [--seq N] [--heads N] [--head-dim N]
//                  [--reps N] [--query-block N] [--key-tile N] [--no-torch]
//                  [--stmt FILE]
//
// Default: causal, 4 heads, seq 4096, head_dim 64 (about 10 s on 2 cores).
// Exits with 1 if a schedule's output is wrong; timings are printed as
// ratios, never asserted. --quick (the CTest run, about a second) is 2 heads
// of seq 512 without PyTorch.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <loom/runtime/loom_runtime.h>

#include "../../schedules/flash_attention.h"
#include "../bench_common.h"
#include "../torch_sdpa.h"
#include "variants.h"

using namespace loom;
using attention::AttentionVariant;
using attention::Variant;

namespace {

struct Options {
    Variant variant = Variant::Causal;
    int heads = 0, seq = 0, head_dim = 64, reps = 0;  // 0: the default of the mode
    int query_block = 16, key_tile = 64;
    bool quick = false, torch = true;
    std::string stmt_file;
};

using apps::now_seconds;

/** Uniform values in [-1, 1) from a fixed seed. */
Buffer<float> random_buffer(const std::vector<int> &shape, uint64_t seed) {
    Buffer<float> b(shape);
    apps::fill_uniform(b, seed);
    return b;
}

/** Worst |a - b| / (1 + |b|) of `out` against the float64 reference over
 * the query rows `rows` of every head (a causal row at position i is the
 * reference over keys [0, i]). */
double error_vs_reference(const Options &o, const Buffer<float> &q, const Buffer<float> &k,
                          const Buffer<float> &v, const Buffer<float> &out, float scale,
                          const std::vector<int> &rows) {
    const int S = q.shape()[2], D = q.shape()[3];
    double worst = 0;
    std::vector<double> ref(D);
    for (int h = 0; h < q.shape()[1]; h++) {
        for (int i : rows) {
            const size_t row = (static_cast<size_t>(h) * S + i) * D;
            const size_t head = static_cast<size_t>(h) * S * D;
            attention::VariantShape sh;
            sh.head_dim = D;
            sh.seq_k = o.variant == Variant::Global ? S : i + 1;
            attention::variant_reference(o.variant, q.data() + row, k.data() + head,
                                         v.data() + head, scale, 0, ref.data(), sh);
            for (int d = 0; d < D; d++) {
                double e = std::abs(out.data()[row + d] - ref[d]) / (1 + std::abs(ref[d]));
                if (!(e <= worst)) worst = e;  // NaN-sticky
            }
        }
    }
    return worst;
}

std::string bytes_str(double b) {
    char buf[32];
    if (b >= 1 << 20) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
    else std::snprintf(buf, sizeof buf, "%.0f KiB", b / 1024);
    return buf;
}

int usage(const char *argv0) {
    std::fprintf(stderr,
                 "usage: %s [--quick] [--global] [--seq N] [--heads N] [--head-dim N] [--reps N]\n"
                 "          [--query-block N] [--key-tile N] [--no-torch] [--stmt FILE]\n",
                 argv0);
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    for (int a = 1; a < argc; a++) {
        const std::string s = argv[a];
        auto next_int = [&]() { return a + 1 < argc ? std::max(1, std::atoi(argv[++a])) : -1; };
        if (s == "--help" || s == "-h") {
            usage(argv[0]);
            return 0;
        }
        if (s == "--quick") o.quick = true;
        else if (s == "--global") o.variant = Variant::Global;
        else if (s == "--seq") o.seq = next_int();
        else if (s == "--heads") o.heads = next_int();
        else if (s == "--head-dim") o.head_dim = next_int();
        else if (s == "--reps") o.reps = next_int();
        else if (s == "--query-block") o.query_block = next_int();
        else if (s == "--key-tile") o.key_tile = next_int();
        else if (s == "--no-torch") o.torch = false;
        else if (s == "--stmt" && a + 1 < argc) o.stmt_file = argv[++a];
        else return usage(argv[0]);
        if (o.seq < 0 || o.heads < 0 || o.head_dim <= 0 || o.reps < 0) return usage(argv[0]);
    }
    // The default size is one where the fused schedule's gain is plain on 2
    // cores and the whole demo takes about 10 s; --quick keeps CTest's run
    // near a second (PyTorch's import alone takes seconds).
    if (o.quick) o.torch = false;
    if (o.heads == 0) o.heads = o.quick ? 2 : 4;
    if (o.seq == 0) o.seq = o.quick ? 512 : 4096;
    if (o.reps == 0) o.reps = o.quick ? 2 : 5;
    try {
        // The algorithm, fp32 in and out: plain attention with the variant's
        // mask in its scores. Nothing in it says how to compute it.
        AttentionVariant attn(o.variant, Float(32));
        const schedules::AttentionChain chain = attn.chain();

        // Fast math lets the score tile's sums be reassociated, as PyTorch's
        // and Halide's kernels are; both schedules get it.
        const Target target =
            Target::host().with_feature(Target::FastMath).with_feature(Target::LLVMLoopOpt);
        const int vector = std::max(8, target.vector_bytes() / 4);  // floats per vector
        const int query_block = o.query_block, key_tile = o.key_tile;
        Schedule materialized;
        attn.schedule_materialized(materialized, query_block, vector);
        // One call of the template: the kt, qk and qf of the chain are what
        // let it stage the keys and compute each score tile with the head
        // dimension outermost (apps/bench/README.md, finding 1).
        Schedule fused;
        schedules::flash_attention(fused, chain, {query_block, key_tile, vector});
        // The same template for a fixed head dimension (the inputs' is
        // checked when the pipeline runs): a tile program.
        attn.fix_head_dim(o.head_dim);
        schedules::FlashAttentionOptions tile_options;
        tile_options.head_dim = o.head_dim;
        Schedule tiled;
        schedules::flash_attention(tiled, chain, tile_options);

        Pipeline pipe(attn.out);
        const int threads = loom_num_threads();
        std::printf(
            "Loom attention demo: %s, fp32, batch 1, %d heads, seq %d, head_dim %d, %d "
            "threads\ntarget %s\n\n",
            attention::variant_name(o.variant), o.heads, o.seq, o.head_dim, threads,
            target.to_string().c_str());

        double t0 = now_seconds();
        CompiledPipeline mat_kernel = pipe.compile(materialized, target);
        const double mat_compile = now_seconds() - t0;
        t0 = now_seconds();
        CompiledPipeline fused_kernel = pipe.compile(fused, target);
        const double fused_compile = now_seconds() - t0;
        t0 = now_seconds();
        CompiledPipeline tiled_kernel = pipe.compile(tiled, target);
        const double tiled_compile = now_seconds() - t0;
        std::printf(
            "compiled: materialized %.2f s, fused %.2f s (of which deriving the repairs "
            "%.1f ms), tile program %.2f s\n",
            mat_compile, fused_compile, fused_kernel.fusion_seconds() * 1e3, tiled_compile);
        std::printf("what rolling_update derived (compile_log):\n");
        for (const std::string &line : fused_kernel.compile_log()) {
            std::printf("  %s\n", line.c_str());
        }

        // 1. Correctness: every row of a small problem whose sizes are no
        // multiple of the tiles, then the timed problem below.
        const float tolerance = 2e-5f;  // fp32 against float64; a wrong repair is far off
        auto bind = [&](const Buffer<float> &q, const Buffer<float> &k, const Buffer<float> &v,
                        float scale) {
            attn.q.set(q);
            attn.k.set(k);
            attn.v.set(v);
            attn.scale.set(scale);
        };
        {
            const int H = 2, S = 77, D = o.head_dim;
            Buffer<float> q = random_buffer({1, H, S, D}, 1), k = random_buffer({1, H, S, D}, 2),
                          v = random_buffer({1, H, S, D}, 3);
            const float scale = 1.0f / std::sqrt(static_cast<float>(D));
            bind(q, k, v, scale);
            std::vector<int> rows(S);
            for (int i = 0; i < S; i++) rows[i] = i;
            for (const CompiledPipeline *kernel : {&mat_kernel, &fused_kernel, &tiled_kernel}) {
                Buffer<float> out({1, H, S, D});
                kernel->realize({out});
                double err = error_vs_reference(o, q, k, v, out, scale, rows);
                const char *name = kernel == &mat_kernel     ? "materialized"
                                   : kernel == &fused_kernel ? "fused"
                                                             : "tile program";
                std::printf("\ncheck [1, %d, %d, %d], %-12s: max |a-b|/(1+|b|) vs float64 %.1e", H,
                            S, D, name, err);
                if (!(err <= tolerance)) {
                    std::printf("\nFAILED: the compiled kernel disagrees with the reference\n");
                    return 1;
                }
            }
            std::printf("\n");
        }

        const int H = o.heads, S = o.seq, D = o.head_dim;
        const std::vector<int> shape = {1, H, S, D};
        Buffer<float> q = random_buffer(shape, 4), k = random_buffer(shape, 5),
                      v = random_buffer(shape, 6);
        const float scale = 1.0f / std::sqrt(static_cast<float>(D));
        bind(q, k, v, scale);
        Buffer<float> mat_out(shape), fused_out(shape), tiled_out(shape);
        mat_kernel.realize({mat_out});
        fused_kernel.realize({fused_out});
        tiled_kernel.realize({tiled_out});
        // Rows at the tiles' edges, the middle and the end, in every head.
        std::vector<int> rows = {0, 1, query_block - 1, key_tile, S / 2, S - 2, S - 1};
        rows.erase(std::remove_if(rows.begin(), rows.end(), [&](int i) { return i >= S; }),
                   rows.end());
        const double mat_err = error_vs_reference(o, q, k, v, mat_out, scale, rows);
        const double fused_err = error_vs_reference(o, q, k, v, fused_out, scale, rows);
        const double tiled_err = error_vs_reference(o, q, k, v, tiled_out, scale, rows);
        double diff = 0;
        for (int64_t n = 0; n < fused_out.number_of_elements(); n++) {
            diff = std::max<double>(diff, std::abs(fused_out.data()[n] - mat_out.data()[n]));
            diff = std::max<double>(diff, std::abs(tiled_out.data()[n] - mat_out.data()[n]));
        }
        std::printf(
            "check [1, %d, %d, %d]: vs float64 on %zu rows per head: materialized %.1e, "
            "fused %.1e, tile program %.1e; fused and tile program vs materialized, every "
            "element: max |diff| %.1e\n",
            H, S, D, rows.size(), mat_err, fused_err, tiled_err, diff);
        if (!(mat_err <= tolerance && fused_err <= tolerance && tiled_err <= tolerance)) {
            std::printf("FAILED: a compiled kernel disagrees with the reference\n");
            return 1;
        }

        // 2. Time, the Loom kernels interleaved (each has run once above).
        std::vector<double> t = apps::round_robin_medians(
            {[&] { mat_kernel.realize({mat_out}); }, [&] { fused_kernel.realize({fused_out}); },
             [&] { tiled_kernel.realize({tiled_out}); }},
            o.reps);
        // Useful flops: two matrix products over the unmasked query-key pairs.
        const double pairs = o.variant == Variant::Global ? double(S) * S : double(S) * (S + 1) / 2;
        const double flops = 4.0 * H * D * pairs;
        apps::TorchResult torch;
        if (o.torch) {
            torch = apps::time_torch_sdpa(q, k, v, tiled_out, o.variant != Variant::Global, threads,
                                          o.reps);
        }
        std::printf("\ntime, median of %d runs (GFLOP/s: useful flops, masked pairs not counted)\n",
                    o.reps);
        std::printf("  %-40s %9.1f ms  %6.1f GFLOP/s\n", "Loom, materialized", t[0] * 1e3,
                    flops / t[0] * 1e-9);
        std::printf("  %-40s %9.1f ms  %6.1f GFLOP/s\n", "Loom, fused (flash_attention template)",
                    t[1] * 1e3, flops / t[1] * 1e-9);
        std::printf("  %-40s %9.1f ms  %6.1f GFLOP/s\n", "Loom, fused tile program (head_dim)",
                    t[2] * 1e3, flops / t[2] * 1e-9);
        if (torch.ran) {
            std::string name =
                "PyTorch " + torch.note + " sdpa, " + std::to_string(torch.threads) + " threads";
            std::printf("  %-40s %9.1f ms  %6.1f GFLOP/s   (max |diff| from Loom's %.1e)\n",
                        name.c_str(), torch.seconds * 1e3, flops / torch.seconds * 1e-9,
                        torch.max_diff);
        } else if (o.torch) {
            std::printf("  PyTorch: skipped (%s)\n", torch.note.c_str());
        } else {
            std::printf("  PyTorch: skipped (%s)\n", o.quick ? "--quick" : "--no-torch");
        }
        std::printf("  fused / materialized time:        %.2f (%.1fx faster)\n", t[1] / t[0],
                    t[0] / t[1]);
        std::printf("  tile program / materialized time: %.2f (%.1fx faster)\n", t[2] / t[0],
                    t[0] / t[2]);
        if (torch.ran) {
            std::printf("  fused / PyTorch time:             %.2f\n", t[1] / torch.seconds);
            std::printf("  tile program / PyTorch time:      %.2f\n", t[2] / torch.seconds);
        }

        // 3. Memory: what each schedule stores besides q, k, v and out, from
        // the schedules (apps/bench/README.md measures the same peaks).
        const double f = sizeof(float);
        const double full_scores = f * H * double(S) * S;
        const double mat_rows = 2 * f * query_block * double(S);  // s and p, per task
        const double tiles = 3 * f * query_block * key_tile;      // qk, s and p, per task
        const double staged = f * H * double(S) * D;              // kt, k transposed once
        std::printf("\nmemory stored besides q, k, v and out (%s each)\n",
                    bytes_str(staged).c_str());
        std::printf("  unfused softmax(q k^T) v: the score matrix, %d x %d x %d floats: %s\n", H, S,
                    S, bytes_str(full_scores).c_str());
        std::printf(
            "  materialized: s and p of %d queries x %d keys, per thread: %s (%d threads: "
            "%s)\n",
            query_block, S, bytes_str(mat_rows).c_str(), threads,
            bytes_str(mat_rows * threads).c_str());
        std::printf(
            "  fused: qk, s and p tiles of %d queries x %d keys, per thread, at any seq: %s "
            "(%d threads: %s),\n         plus the keys staged transposed once (kt, the "
            "size of k): %s\n",
            query_block, key_tile, bytes_str(tiles).c_str(), threads,
            bytes_str(tiles * threads).c_str(), bytes_str(staged).c_str());
        std::printf(
            "  tile program: on the stack of each task, tiles of %d queries x %d keys and %d x "
            "%d for q, k, v, the scores and the output, at any seq, no staged copy\n",
            tile_options.tile_queries, tile_options.key_tile, tile_options.tile_queries, D);
        const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
        std::printf("  scores per thread, materialized / fused: %.0fx", mat_rows / tiles);
        if (l1 > 0) std::printf(" (L1 data cache here: %s)", bytes_str(double(l1)).c_str());
        std::printf("\n");

        if (!o.stmt_file.empty()) {
            pipe.compile_to_lowered_stmt(o.stmt_file, fused, target);
            std::printf("\nlowered IR of the fused schedule written to %s\n",
                        std::filesystem::absolute(o.stmt_file).c_str());
        }
        return 0;
    } catch (const loom::Error &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
