// Plain attention with a GPU schedule and no tensor cores
// (schedules/flash_attention.h, flash_attention_gpu, per key, per key with
// aligned head rows promised and the q.k dot product in vectors, and over
// key tiles of 4 and 8 staged in shared memory): the baseline that the tensor-core
// tile programs will be measured against. Prints TFLOP/s (4 *
// batch * heads * Lq * Lk * head_dim flops per call) for float32 and
// float16 inputs, and the fraction of the GPU's float32 FMA peak (SMs x
// clock x 128 FMA lanes x 2, from the device's attributes). Then decoding
// (one query per head): flash_attention_gpu against flash_decoding_gpu
// (split_k, the keys in 64 or 256 pieces) and flash_decoding_tensor_cores
// (split_k over tile programs, 16 or 64 pieces), in GB/s of keys and
// values read.
//
//   gpu_attention_bench [--quick] [--reps N]
//
// Each schedule and element type is first checked against the float64 reference
// (attention/variants_reference.h) at sizes that leave partial blocks;
// --quick stops there (the gpu-labelled CTest). Without a GPU it says why
// and exits with 77 (skipped).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <loom/loom.h>

#include "../schedules/flash_attention.h"
#include "attention/variants.h"
#include "bench/gpu_bench_util.h"

using namespace loom;

namespace {

constexpr int kHeadDim = 64;

/** A buffer of type t, [b, h, l, kHeadDim], from a fixed sequence in
 * [-1, 1); `values` receives what was stored (rounded to t). */
RawBuffer make_input(Type t, int b, int h, int l, uint32_t seed, std::vector<float> *values) {
    RawBuffer buf(t, {b, h, l, kHeadDim});
    const size_t n = size_t(b) * h * l * kHeadDim;
    if (values) values->resize(n);
    uint32_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        float x = static_cast<float>(s >> 8) / 16777216.0f * 2.0f - 1.0f;
        if (t == Float(32)) {
            reinterpret_cast<float *>(buf.host())[i] = x;
        } else {
            float16_t hx(x);
            reinterpret_cast<float16_t *>(buf.host())[i] = hx;
            x = static_cast<float>(hx);
        }
        if (values) (*values)[i] = x;
    }
    return buf;
}

double output_at(const RawBuffer &out, size_t i) {
    if (out.type() == Float(32)) return reinterpret_cast<const float *>(out.host())[i];
    return static_cast<float>(reinterpret_cast<const float16_t *>(out.host())[i]);
}

struct DecodingConfig {
    int chunks;
    bool per_tile;
};

struct Kernel {
    attention::AttentionVariant app;
    CompiledPipeline compiled;
    /** `aligned`: with the promises of promise_aligned_heads, and the q.k
     * dot product read in vectors of 8 (key_tile 0 only). */
    Kernel(Type t, int key_tile, bool aligned) : app(attention::Variant::Global, t) {
        app.fix_head_dim(kHeadDim);
        Schedule sch;
        schedules::FlashAttentionGpuOptions opt;
        opt.head_dim = kHeadDim;
        opt.key_tile = key_tile;
        if (aligned) {
            app.promise_aligned_heads(kHeadDim);
            opt.qk_vector = 8;
        }
        schedules::flash_attention_gpu(sch, app.chain(), opt);
        compiled = Pipeline(app.out).compile(sch, Target("host-cuda"));
    }
    /** flash_decoding_gpu: the keys in `chunks` pieces, one per thread;
     * with `per_tile`, each tile's probabilities computed once into an array
     * (probabilities_per_tile). */
    Kernel(Type t, const DecodingConfig &d) : app(attention::Variant::Global, t) {
        const int chunks = d.chunks;
        app.fix_head_dim(kHeadDim);
        Schedule sch;
        schedules::FlashDecodingGpuOptions opt;
        opt.head_dim = kHeadDim;
        opt.chunks = chunks;
        opt.chunks_per_block = std::min(chunks, 64);
        opt.probabilities_per_tile = d.per_tile;
        schedules::flash_decoding_gpu(sch, app.chain(), opt);
        compiled = Pipeline(app.out).compile(sch, Target("host-cuda"));
    }
    /** flash_decoding_tensor_cores: split_k over tile programs, `chunks`
     * pieces of the keys rolled on tensor cores, then the combine. */
    Kernel(Type t, int chunks) : app(attention::Variant::Global, t) {
        app.fix_head_dim(kHeadDim);
        Schedule sch;
        schedules::FlashDecodingTensorCoreOptions opt;
        opt.head_dim = kHeadDim;
        opt.chunks = chunks;
        schedules::flash_decoding_tensor_cores(sch, app.chain(), opt);
        compiled = Pipeline(app.out).compile(sch, Target("host-cuda"));
    }
    RawBuffer bind(int b, int h, int lq, int lk, std::vector<float> *q, std::vector<float> *k,
                   std::vector<float> *v) {
        const Type t = app.q.type();
        app.q.set(make_input(t, b, h, lq, 1, q));
        app.k.set(make_input(t, b, h, lk, 2, k));
        app.v.set(make_input(t, b, h, lk, 3, v));
        app.scale.set(1.0f / std::sqrt(float(kHeadDim)));
        return RawBuffer(t, {b, h, lq, kHeadDim});
    }
};

/** The worst |got - want| / (1 + |want|) against the float64 reference. */
double check(Kernel &k, int b, int h, int lq, int lk) {
    std::vector<float> q, kk, v;
    RawBuffer out = k.bind(b, h, lq, lk, &q, &kk, &v);
    k.compiled.realize({out});
    out.copy_to_host();
    attention::VariantShape sh;
    sh.batch = b;
    sh.q_heads = sh.kv_heads = h;
    sh.seq_q = lq;
    sh.seq_k = lk;
    sh.head_dim = kHeadDim;
    std::vector<double> want(q.size());
    attention::variant_reference(attention::Variant::Global, q.data(), kk.data(), v.data(),
                                 1.0f / std::sqrt(float(kHeadDim)), 0, want.data(), sh);
    double worst = 0;
    for (size_t i = 0; i < want.size(); i++) {
        double e = std::abs(output_at(out, i) - want[i]) / (1 + std::abs(want[i]));
        if (!(e <= worst)) worst = e;  // NaN-sticky
    }
    return worst;
}

}  // namespace

static int run_benchmark(int argc, char **argv) {
    const loom_bench::Options options(argc, argv);
    if (!options.only.empty() || options.rows || options.cols) {
        std::fprintf(stderr,
                     "gpu_attention_bench times every kernel at its own sizes; it takes no --only, "
                     "--rows or --cols\n");
        return 2;
    }
    const bool quick = options.quick;
    const int reps = options.reps;
    loom_bench::Driver cu;
    const int capability = loom_bench::gpu_capability_or_skip(cu);
    if (!capability) return 77;
    // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16, CLOCK_RATE (kHz) = 13.
    int sms = 0, khz = 0;
    cu.device_get_attribute(&sms, 16, 0);
    cu.device_get_attribute(&khz, 13, 0);
    const double peak = double(sms) * khz * 1e3 * 128 * 2;
    std::printf("GPU: sm_%d, %d SMs at %.0f MHz: float32 FMA peak %.1f TFLOP/s\n", capability, sms,
                khz / 1e3, peak / 1e12);

    struct Case {
        const char *name;
        Type type;
        double tolerance;  // float32 accumulation, plus one ulp of the output
    };
    const Case cases[] = {{"float32", Float(32), 1e-4}, {"float16", Float(16), 2e-3}};
    // key_tile 0: each thread reads every key and value itself; 4 and 8:
    // tiles of that many keys copied into shared memory once per block.
    // "0a": key_tile 0 with aligned head rows promised and q.k in vectors.
    struct Config {
        int key_tile;
        bool aligned;
    };
    const Config configs[] = {{0, false}, {0, true}, {4, false}, {8, false}};
    bool ok = true;
    struct Entry {
        const Case *c;
        std::string key_tile;
        std::unique_ptr<Kernel> kernel;
    };
    std::vector<Entry> kernels;
    for (const Config &config : configs) {
        const std::string key_tile = std::to_string(config.key_tile) + (config.aligned ? "a" : "");
        for (const Case &c : cases) {
            kernels.push_back(
                {&c, key_tile, std::make_unique<Kernel>(c.type, config.key_tile, config.aligned)});
            // 77 queries: a full block of 64 and a partial one.
            const double err = check(*kernels.back().kernel, 2, 3, 77, 301);
            const bool good = err <= c.tolerance;
            std::printf(
                "check %-8s key_tile %-2s: max relative error %.2e vs the float64 "
                "reference: %s\n",
                c.name, key_tile.c_str(), err, good ? "ok" : "WRONG");
            ok = ok && good;
        }
    }
    // Decoding: one query (and a few) per head over many keys, in float16
    // (each of these kernels takes NVRTC ten seconds to compile); 256
    // pieces also with each tile's probabilities computed once ("256p": one
    // exponential per key instead of two, for a second per-thread array).
    const DecodingConfig decode_configs[] = {{64, false}, {256, false}, {256, true}};
    // Each decoding kernel checked with 1 and 5 queries.
    auto check_decoding = [&](const Entry &e, const char *schedule) {
        for (int lq : {1, 5}) {
            const double err = check(*e.kernel, 2, 3, lq, 301);
            const bool good = err <= e.c->tolerance;
            std::printf(
                "check %-8s %s chunks %-4s, %d queries: max relative error %.2e vs the float64 "
                "reference: %s\n",
                e.c->name, schedule, e.key_tile.c_str(), lq, err, good ? "ok" : "WRONG");
            ok = ok && good;
        }
    };
    std::vector<Entry> decoders;
    for (const DecodingConfig &d : decode_configs) {
        for (const Case &c : cases) {
            if (c.type != Float(16)) continue;
            decoders.push_back({&c, std::to_string(d.chunks) + (d.per_tile ? "p" : ""),
                                std::make_unique<Kernel>(c.type, d)});
            check_decoding(decoders.back(), "flash_decoding_gpu");
        }
    }
    // On tensor cores: 16 and 64 pieces of the keys (batch 4 x 16 heads x
    // 64 pieces is about 30 one-warp blocks per SM), each a tile program.
    std::vector<Entry> tc_decoders;
    for (const int chunks : {16, 64}) {
        const Case &c = cases[1];
        tc_decoders.push_back(
            {&c, std::to_string(chunks), std::make_unique<Kernel>(c.type, chunks)});
        check_decoding(tc_decoders.back(), "flash_decoding_tensor_cores");
    }
    if (!ok) return 1;
    if (quick) return 0;

    const int B = 4, H = 16;
    std::printf("\n%-8s %8s %6s %10s %10s %12s\n", "input", "key_tile", "seq", "ms", "TFLOP/s",
                "of FP32 peak");
    for (Entry &e : kernels) {
        for (int L : {1024, 4096}) {
            Kernel &k = *e.kernel;
            RawBuffer out = k.bind(B, H, L, L, nullptr, nullptr, nullptr);
            const double s =
                loom_bench::seconds_per_call([&] { k.compiled.realize({out}); }, cu, reps, 3);
            const double flops = 4.0 * B * H * double(L) * L * kHeadDim;
            std::printf("%-8s %8s %6d %10.3f %10.2f %11.1f%%\n", e.c->name, e.key_tile.c_str(), L,
                        s * 1e3, flops / s / 1e12, 100 * flops / s / peak);
        }
    }
    std::printf(
        "\n(batch %d, %d heads, head_dim %d, Lq = Lk; no tensor cores; key_tile 0a: "
        "aligned rows promised, q.k in vectors of 8)\n",
        B, H, kHeadDim);

    // Decoding is bound by reading the keys and values once: GB/s of them.
    std::printf("\n%-8s %-30s %7s %10s %10s\n", "input", "schedule", "Lk", "ms", "K+V GB/s");
    auto decode_row = [&](Entry &e, const std::string &name) {
        for (int L : {4096, 32768}) {
            Kernel &k = *e.kernel;
            RawBuffer out = k.bind(B, H, 1, L, nullptr, nullptr, nullptr);
            const double s =
                loom_bench::seconds_per_call([&] { k.compiled.realize({out}); }, cu, reps, 3);
            const double bytes = 2.0 * B * H * double(L) * kHeadDim * e.c->type.bytes();
            std::printf("%-8s %-30s %7d %10.3f %10.1f\n", e.c->name, name.c_str(), L, s * 1e3,
                        bytes / s / 1e9);
        }
    };
    for (Entry &e : kernels) {
        if (e.key_tile == "0a" && e.c->type == Float(16)) decode_row(e, "flash_attention_gpu 0a");
    }
    for (Entry &e : decoders) decode_row(e, "flash_decoding_gpu " + e.key_tile + " chunks");
    for (Entry &e : tc_decoders) decode_row(e, "tensor cores " + e.key_tile + " chunks");
    std::printf("\n(batch %d, %d heads, one query each, head_dim %d)\n", B, H, kHeadDim);
    return 0;
}

int main(int argc, char **argv) {
    return loom_bench::report_errors("gpu_attention_bench",
                                     [&] { return run_benchmark(argc, argv); });
}
