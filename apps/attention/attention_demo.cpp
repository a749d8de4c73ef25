// The flagship example: plain attention compiled for this CPU with two
// schedules, the materialized softmax and FlashAttention (rolling_update,
// whose repair the compiler derives and prints), each checked against the
// reference interpreter and timed.
//
//   attention_demo [--quick] [--stmt FILE]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "../../schedules/flash_attention.h"
#include "attention.h"

using namespace loom;

namespace {

Buffer<float16_t> random_half(const std::vector<int> &shape, std::mt19937 &rng, float range) {
    Buffer<float16_t> buf(shape);
    std::uniform_real_distribution<float> dist(-range, range);
    buf.fill([&](const std::vector<int> &) { return float16_t(dist(rng)); });
    return buf;
}

double max_relative_error(const RawBuffer &a, const RawBuffer &b) {
    const auto *x = reinterpret_cast<const float16_t *>(a.host());
    const auto *y = reinterpret_cast<const float16_t *>(b.host());
    double worst = 0;
    for (int64_t n = 0; n < a.number_of_elements(); n++) {
        double u = static_cast<float>(x[n]), w = static_cast<float>(y[n]);
        worst = std::max(worst, std::abs(u - w) / std::max(1e-3, std::abs(w)));
    }
    return worst;
}

}  // namespace

int main(int argc, char **argv) {
    bool quick = false;
    std::string stmt_file = "attention.stmt";
    for (int a = 1; a < argc; a++) {
        if (!std::strcmp(argv[a], "--quick")) quick = true;
        else if (!std::strcmp(argv[a], "--stmt") && a + 1 < argc) stmt_file = argv[++a];
    }
    try {
        attention::Attention attn(Float(16));
        Schedule sch = attn.cpu_schedule();
        // The same algorithm, FlashAttention-style: one pass over the keys
        // per block of queries, in tiles of 64 keys.
        Schedule flash;
        schedules::flash_attention(
            flash,
            {attn.s, attn.p, attn.o, attn.out, attn.b, attn.h, attn.i, attn.j, attn.d, attn.r},
            {16, 64, 8});
        Pipeline pipe(attn.out);
        std::mt19937 rng(std::random_device{}());

        // 1. Correctness on a small problem, against the interpreter.
        const int B = 1, H = 2, S = 77, D = 32;
        attn.q.set(random_half({B, H, S, D}, rng, 1));
        attn.k.set(random_half({B, H, S, D}, rng, 1));
        attn.v.set(random_half({B, H, S, D}, rng, 1));
        attn.scale.set(1.0f / std::sqrt(static_cast<float>(D)));
        RawBuffer expected = interpret(attn.out, {B, H, S, D});
        for (const Schedule *s : {&sch, &flash}) {
            RawBuffer actual = pipe.realize({B, H, S, D}, *s);
            double err = max_relative_error(actual, expected);
            std::printf(
                "attention [%d, %d, %d, %d] fp16, %s: max relative error vs interpreter "
                "%.3g\n",
                B, H, S, D, s == &sch ? "materialized" : "flash", err);
            if (!(err <= 2e-3)) {
                std::printf("FAILED: the compiled kernel disagrees with the interpreter\n");
                return 1;
            }
        }

        // 2. Timing on a larger problem.
        const int TB = 1, TH = quick ? 4 : 8, TS = quick ? 256 : 1024, TD = 64;
        attn.q.set(random_half({TB, TH, TS, TD}, rng, 1));
        attn.k.set(random_half({TB, TH, TS, TD}, rng, 1));
        attn.v.set(random_half({TB, TH, TS, TD}, rng, 1));
        attn.scale.set(1.0f / std::sqrt(static_cast<float>(TD)));
        RawBuffer out(Float(16), {TB, TH, TS, TD});
        int reps = quick ? 2 : 5;
        double flops = 4.0 * TB * TH * TS * static_cast<double>(TS) * TD;
        double times[2];
        for (int k = 0; k < 2; k++) {
            CompiledPipeline kernel = pipe.compile(k == 0 ? sch : flash);
            kernel.realize({out});  // warm up
            double best = 1e30;
            for (int r = 0; r < reps; r++) {
                auto t0 = std::chrono::steady_clock::now();
                kernel.realize({out});
                best = std::min(
                    best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            }
            times[k] = best;
            std::printf(
                "attention [%d, %d, %d, %d] fp16, %s: %.3f ms, %.2f GFLOP/s (best of %d), "
                "compiled in %.2f s\n",
                TB, TH, TS, TD, k == 0 ? "materialized" : "flash       ", best * 1e3,
                flops / best * 1e-9, reps, kernel.compile_seconds());
            if (k == 1) {
                std::printf("what rolling_update derived:\n");
                for (const std::string &line : kernel.compile_log())
                    std::printf("  %s\n", line.c_str());
            }
        }
        std::printf("flash / materialized time: %.2f\n", times[1] / times[0]);

        pipe.compile_to_lowered_stmt(stmt_file, flash);
        std::printf("lowered IR written to %s\n", std::filesystem::absolute(stmt_file).c_str());
        return 0;
    } catch (const loom::Error &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
