// Every app of apps/, compiled through the JIT with its CPU schedule and
// compared with its plain C++ reference, on sizes that are not multiples of
// the schedules' tile and vector sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <tuple>

#include <unistd.h>

#include "../../schedules/flash_attention.h"
#include "../attention/attention.h"
#include "../attention/variants.h"
#include "../blur/blur.h"
#include "../elementwise/elementwise.h"
#include "../gemm/gemm.h"
#include "../layernorm/layernorm.h"
#include "../rmsnorm/rmsnorm.h"
#include "../softmax/softmax.h"

using namespace loom;

namespace {

Buffer<float> random_buffer(const std::vector<int> &shape, float lo, float hi, unsigned seed) {
    Buffer<float> b(shape);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    for (int64_t n = 0; n < b.number_of_elements(); n++) b.data()[n] = dist(rng);
    return b;
}

// Max |a - b| / (1 + |b|): absolute near zero, relative for large values.
double max_error(const Buffer<float> &a, const std::vector<float> &b) {
    double worst = 0;
    for (int64_t n = 0; n < a.number_of_elements(); n++) {
        double d = std::abs(double(a.data()[n]) - b[n]) / (1 + std::abs(double(b[n])));
        if (!(d <= worst)) worst = d;  // NaN-sticky
    }
    return worst;
}

/** The CUDA C++ and the PTX that compile_to_cuda writes for `out` (through
 * NVRTC), read back; the files are removed. */
struct CudaText {
    std::string source, ptx;
};
CudaText compile_to_cuda_text(const Func &out, const Schedule &sch, const Target &target) {
    // A name of this process's own: CTest runs tests of this binary at once.
    const std::string base =
        ::testing::TempDir() + "loom_apps_cuda_" + std::to_string(static_cast<long>(getpid()));
    Pipeline(out).compile_to_cuda(base, sch, target);
    auto read = [&](const char *suffix) {
        std::ifstream in(base + suffix);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    CudaText text{read(".cu"), read(".ptx")};
    for (const char *suffix : {".cu", ".ptx", ".cubin"}) std::remove((base + suffix).c_str());
    return text;
}

}  // namespace

TEST(Apps, Blur) {
    const int H = 45, W = 301;  // neither a multiple of the 32 x 256 tile
    blur::Blur app;
    Buffer<float> in = random_buffer({H + 2, W + 2}, 0, 1, 1);
    app.input.set(in);
    Buffer<float> out({H, W});
    Pipeline(app.blur_y).compile(app.cpu_schedule()).realize({out});
    std::vector<float> ref(size_t(H) * W);
    blur::reference(in.data(), W + 2, ref.data(), H, W);
    EXPECT_LE(max_error(out, ref), 1e-6);
}

TEST(Apps, Gemm) {
    const int M = 70, N = 50, K = 45;
    gemm::Gemm app;
    Buffer<float> a = random_buffer({M, K}, -1, 1, 2), b = random_buffer({K, N}, -1, 1, 3);
    app.A.set(a);
    app.B.set(b);
    Buffer<float> out({M, N});
    Pipeline(app.C).compile(app.cpu_schedule()).realize({out});
    std::vector<float> ref(size_t(M) * N);
    gemm::reference(a.data(), b.data(), ref.data(), M, N, K);
    EXPECT_LE(max_error(out, ref), 1e-5);
}

TEST(Apps, Softmax) {
    const int R = 13, C = 100;
    softmax::Softmax app;
    Buffer<float> in = random_buffer({R, C}, -20, 20, 4);
    app.input.set(in);
    Buffer<float> out({R, C});
    Pipeline(app.out).compile(app.cpu_schedule()).realize({out});
    std::vector<float> ref(size_t(R) * C);
    softmax::reference(in.data(), ref.data(), R, C);
    EXPECT_LE(max_error(out, ref), 1e-6);
}

/** Binds LayerNorm's inputs (random gamma and beta, eps 1e-5) for rows
 * `in`, and returns the reference output. */
std::vector<float> bind_layernorm(layernorm::LayerNorm &app, const Buffer<float> &in) {
    const int R = in.extent(0), C = in.extent(1);
    Buffer<float> gamma = random_buffer({C}, 0.5, 1.5, 6), beta = random_buffer({C}, -1, 1, 7);
    app.input.set(in);
    app.gamma.set(gamma);
    app.beta.set(beta);
    app.eps.set(1e-5f);
    std::vector<float> ref(size_t(R) * C);
    layernorm::reference(in.data(), gamma.data(), beta.data(), 1e-5f, ref.data(), R, C);
    return ref;
}

TEST(Apps, LayerNorm) {
    const int R = 13, C = 100;
    layernorm::LayerNorm app;
    // Far from zero on purpose: the two-pass variance must not cancel.
    const std::vector<float> ref = bind_layernorm(app, random_buffer({R, C}, 90, 110, 5));
    for (bool one_pass : {false, true}) {
        SCOPED_TRACE(one_pass ? "one pass" : "two passes");
        Buffer<float> out({R, C});
        Pipeline(app.out)
            .compile(one_pass ? app.cpu_one_pass_schedule() : app.cpu_schedule())
            .realize({out});
        EXPECT_LE(max_error(out, ref), 1e-4);
    }
}

TEST(Apps, LayerNormInOnePassAtLargeOffsets) {
    // The statistics in one pass (the variance rolled with the sum, kept
    // about the running mean) are as accurate as the two passes at means
    // up to 1e4 against a unit spread, on rows of odd lengths.
    layernorm::LayerNorm app;
    std::mt19937 rng(17);
    for (int C : {1, 7, 1000, 4099}) {
        for (double mean : {0.0, 1e2, 1e4}) {
            const int R = 5;
            Buffer<float> in({R, C});
            std::normal_distribution<double> normal(0, 1);
            in.fill(
                [&](const std::vector<int> &) { return static_cast<float>(mean + normal(rng)); });
            const std::vector<float> ref = bind_layernorm(app, in);
            Buffer<float> two({R, C}), one({R, C});
            Pipeline(app.out).compile(app.cpu_schedule()).realize({two});
            Pipeline(app.out).compile(app.cpu_one_pass_schedule()).realize({one});
            const double two_error = max_error(two, ref), one_error = max_error(one, ref);
            EXPECT_LE(one_error, std::max(2 * two_error, 1e-4))
                << "rows of " << C << " at " << mean << ": two passes " << two_error;
        }
    }
}

TEST(Apps, RmsNorm) {
    const int R = 13, C = 100;
    rmsnorm::RmsNorm app;
    Buffer<float> in = random_buffer({R, C}, -3, 3, 11);
    Buffer<float> weight = random_buffer({C}, 0.5, 1.5, 12);
    app.input.set(in);
    app.weight.set(weight);
    app.eps.set(1e-4f);
    Buffer<float> out({R, C});
    Schedule sch;
    app.schedule_cpu(sch);
    Pipeline(app.out).compile(sch).realize({out});
    std::vector<float> ref(size_t(R) * C);
    rmsnorm::reference(in.data(), weight.data(), 1e-4f, ref.data(), R, C);
    EXPECT_LE(max_error(out, ref), 1e-5);
}

TEST(Apps, SiluChain) {
    const int R = 13, C = 100;
    elementwise::SiluChain app;
    Buffer<float> in = random_buffer({R, C}, -6, 6, 13);
    app.input.set(in);
    Buffer<float> out({R, C});
    Schedule sch;
    app.schedule_cpu(sch);
    Pipeline(app.out).compile(sch).realize({out});
    std::vector<float> ref(size_t(R) * C);
    elementwise::reference(in.data(), ref.data(), ref.size());
    EXPECT_LE(max_error(out, ref), 1e-6);
}

TEST(Apps, Attention) {
    const int B = 1, H = 2, S = 37, D = 20;
    attention::Attention app(Float(32));
    Buffer<float> q = random_buffer({B, H, S, D}, -1, 1, 8),
                  k = random_buffer({B, H, S, D}, -1, 1, 9),
                  v = random_buffer({B, H, S, D}, -1, 1, 10);
    const float scale = 1.0f / std::sqrt(float(D));
    app.q.set(q);
    app.k.set(k);
    app.v.set(v);
    app.scale.set(scale);
    Buffer<float> out({B, H, S, D});
    Pipeline(app.out).compile(app.cpu_schedule(16, 16)).realize({out});
    std::vector<float> ref(out.number_of_elements());
    attention::reference(q.data(), k.data(), v.data(), scale, ref.data(), B * H, S, S, D);
    EXPECT_LE(max_error(out, ref), 1e-5);
}

// The GPU schedules (one block per row, reductions across the block's
// threads, vectorized output rows) compiled through NVRTC for sm_80 and
// sm_90a: no GPU needed. gpu_memory_bound_bench runs them on one.
/** The memory-bound apps with their GPU schedules; `aligned`: with the
 * promises of promise_aligned_rows. */
struct GpuRowApps {
    softmax::Softmax sm;
    layernorm::LayerNorm ln;
    rmsnorm::RmsNorm rms;
    elementwise::SiluChain chain;
    /** Each app's output and GPU schedule, with its number of row
     * reductions: staged (the default), unstaged (each thread reducing its
     * own points, softmax online), and staged with each thread reducing
     * its own points of the copy. */
    std::vector<std::tuple<Func, Schedule, int>> schedules;
    explicit GpuRowApps(bool aligned) {
        if (aligned) {
            sm.promise_aligned_rows();
            ln.promise_aligned_rows();
            rms.promise_aligned_rows();
            chain.promise_aligned_rows();
        }
        for (bool staged : {true, false}) {
            Schedule s, l, n;
            sm.schedule_gpu(s, 256, 4, staged);
            ln.schedule_gpu(l, 256, 4, staged);
            rms.schedule_gpu(n, 256, 4, staged);
            schedules.insert(schedules.end(), {{sm.out, s, 2}, {ln.out, l, 2}, {rms.out, n, 1}});
        }
        Schedule s, l, n, c;
        sm.schedule_gpu_online(s, 256, 4, 0, true);
        ln.schedule_gpu_per_thread(l, 256, 4, true);
        rms.schedule_gpu_per_thread(n, 256, 4, true);
        chain.schedule_gpu(c);
        schedules.insert(schedules.end(),
                         {{sm.out, s, 2}, {ln.out, l, 2}, {rms.out, n, 1}, {chain.out, c, 0}});
        // LayerNorm's statistics in one pass, staged and not: the sum and
        // the squares are each combined across the block once (the pivot's
        // count, read only at each thread's own chunk, is not).
        for (bool staged : {true, false}) {
            Schedule one;
            ln.schedule_gpu_one_pass(one, 256, 4, staged);
            schedules.push_back({ln.out, one, 2});
        }
    }
    const std::vector<std::tuple<Func, Schedule, int>> &kernels() const { return schedules; }
};

TEST(Apps, GpuSchedulesCompileThroughNvrtc) {
    const GpuRowApps apps(false);
    for (const char *arch : {"sm_80", "sm_90a"}) {
        const Target target(std::string("host-cuda-") + arch);
        for (auto [out, sch, reductions] : apps.kernels()) {
            const CudaText cuda = compile_to_cuda_text(out, sch, target);
            const std::string &text = cuda.ptx, &source = cuda.source;
            // Only the row reductions combine partials across threads, once
            // each: the ragged end of a row does not make a second combine.
            EXPECT_EQ(text.find("shfl.sync.bfly") != std::string::npos, reductions > 0) << arch;
            int combines = 0;
            for (size_t at = source.find(" = loom_block_reduce<"); at != std::string::npos;
                 at = source.find(" = loom_block_reduce<", at + 1)) {
                combines++;
            }
            EXPECT_EQ(combines, reductions) << arch << "\n" << source;
            EXPECT_NE(text.find("st.global.v4.b32"), std::string::npos) << arch;
        }
    }
}

TEST(Apps, GpuRowsKeptInRegistersStayInRegisters) {
    // schedule_gpu_in_registers, rows of 16384 floats fixed and aligned:
    // each of 1024 threads keeps 16 floats of its row (512: 32), with no
    // shared memory for it, and nvcc keeps them in registers (no local
    // memory in the PTX). Each reduction is combined across the block
    // once.
    for (auto [threads, per_thread] : {std::pair{1024, true}, {512, true}, {1024, false}}) {
        softmax::Softmax sm;
        layernorm::LayerNorm ln;
        rmsnorm::RmsNorm rms;
        sm.fix_row_length(16384);
        ln.fix_row_length(16384);
        rms.fix_row_length(16384);
        sm.promise_aligned_rows();
        ln.promise_aligned_rows();
        rms.promise_aligned_rows();
        Schedule s, l, n;
        sm.schedule_gpu_in_registers(s, threads, 4, per_thread);
        ln.schedule_gpu_in_registers(l, threads, 4, per_thread);
        rms.schedule_gpu_in_registers(n, threads, 4, per_thread);
        const std::string array = "float input_in_[" + std::to_string(16384 / threads) + "];";
        for (auto [out, sch, reductions, app] : {std::tuple{sm.out, s, 2, "softmax"},
                                                 {ln.out, l, 2, "layernorm"},
                                                 {rms.out, n, 1, "rmsnorm"}}) {
            for (const char *arch : {"sm_80", "sm_90a"}) {
                SCOPED_TRACE(std::string(app) + ", " + std::to_string(threads) + " threads" +
                             (per_thread ? ", per thread, " : ", ") + arch);
                const CudaText cuda =
                    compile_to_cuda_text(out, sch, Target(std::string("host-cuda-") + arch));
                EXPECT_NE(cuda.source.find(array), std::string::npos) << cuda.source;
                // Softmax's exponentials replace its row in the registers.
                if (std::string(app) == "softmax" && per_thread) {
                    EXPECT_NE(
                        cuda.source.find("float e_[" + std::to_string(16384 / threads) + "];"),
                        std::string::npos)
                        << cuda.source;
                }
                EXPECT_EQ(cuda.source.find("input_in_ = reinterpret_cast"), std::string::npos)
                    << cuda.source;
                EXPECT_EQ(cuda.ptx.find(".local"), std::string::npos) << cuda.ptx;
                int combines = 0;
                for (size_t at = cuda.source.find(" = loom_block_reduce<"); at != std::string::npos;
                     at = cuda.source.find(" = loom_block_reduce<", at + 1)) {
                    combines++;
                }
                EXPECT_EQ(combines, reductions) << cuda.source;
            }
        }
    }
}

TEST(Apps, AlignedRowsMoveEveryWholeVectorUntested) {
    // With the promises of promise_aligned_rows, no access of any app's GPU
    // kernels is left that tests its address: every whole vector moves as
    // aligned words (the staged rows' copies included).
    GpuRowApps apps(true);
    for (auto [out, sch, reductions] : apps.kernels()) {
        const std::string source =
            compile_to_cuda_text(out, sch, Target("host-cuda-sm_90a")).source;
        const std::string kernels = source.substr(source.find("__global__"));
        EXPECT_EQ(kernels.find("loom_load_dense"), std::string::npos) << kernels;
        EXPECT_EQ(kernels.find("loom_store_dense"), std::string::npos) << kernels;
        EXPECT_NE(kernels.find("loom_store_aligned_global<float, 4>(out_"), std::string::npos)
            << kernels;
    }

    // The promises hold for rows padded to a multiple of 4 floats, and the
    // result is the reference's; rows that are not padded are refused.
    const int R = 13, C = 99, padded = 100;
    Buffer<float> in(random_buffer({R, padded}, -20, 20, 21).cropped(1, 0, C));
    Buffer<float> out(Buffer<float>({R, padded}).cropped(1, 0, C));
    softmax::Softmax &sm = apps.sm;
    sm.input.set(in);
    Pipeline(sm.out).compile(sm.cpu_schedule()).realize({out});
    std::vector<float> dense(size_t(R) * C), ref(size_t(R) * C);
    for (int i = 0; i < R; i++) {
        for (int j = 0; j < C; j++) dense[size_t(i) * C + j] = in(i, j);
    }
    softmax::reference(dense.data(), ref.data(), R, C);
    double worst = 0;
    for (int i = 0; i < R; i++) {
        for (int j = 0; j < C; j++)
            worst = std::max(worst, double(std::abs(out(i, j) - ref[size_t(i) * C + j])));
    }
    EXPECT_LE(worst, 1e-6);
    sm.input.set(random_buffer({R, C}, -20, 20, 22));
    try {
        Pipeline(sm.out).compile(sm.cpu_schedule()).realize({out});
        ADD_FAILURE() << "rows of 99 floats were accepted";
    } catch (const RuntimeError &e) {
        EXPECT_NE(std::string(e.what()).find("input.dim(0).set_stride_multiple(4)"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Apps, GpuAttentionOverKeyTilesCompilesThroughNvrtc) {
    // flash_attention_gpu with a key_tile: per tile the block copies the
    // keys and values into shared memory, between barriers; each thread
    // keeps its running values and query row across the tiles, one array
    // of the head dimension each (o's tile partial takes over o's
    // registers: the step only copies it back), and computes each key's
    // probability once.
    for (attention::Variant var : {attention::Variant::Causal, attention::Variant::GroupedQuery}) {
        attention::AttentionVariant app(var, Float(16));
        app.fix_head_dim(64);
        Schedule sch;
        schedules::FlashAttentionGpuOptions opt;
        opt.key_tile = 4;
        schedules::flash_attention_gpu(sch, app.chain(), opt);
        for (const char *arch : {"sm_80", "sm_90a"}) {
            const Target target(std::string("host-cuda-") + arch);
            const CudaText cuda = compile_to_cuda_text(app.out, sch, target);
            const std::string &source = cuda.source;
            // The loop over tiles is partitioned: full tiles first, with
            // none of the last tile's guards. Each of the two loops computes
            // one exponential per key of a tile (p, once per thread and key),
            // and one per repair of l and of o.
            std::vector<size_t> tile_loops;
            for (size_t at = source.find("for (int o_s1_ro_ = "); at != std::string::npos;
                 at = source.find("for (int o_s1_ro_ = ", at + 1))
                tile_loops.push_back(at);
            ASSERT_EQ(tile_loops.size(), 2u) << app.name() << " " << arch;
            for (size_t k = 0; k < tile_loops.size(); k++) {
                const size_t end = k + 1 < tile_loops.size() ? tile_loops[k + 1] : source.size();
                size_t exps = 0;
                for (size_t at = source.find("expf(", tile_loops[k]); at < end;
                     at = source.find("expf(", at + 1))
                    exps++;
                EXPECT_EQ(exps, size_t(opt.key_tile + 2)) << app.name() << " " << arch;
            }
            for (const char *line :
                 {"float o_[64];", "float qf_[64];", "float m_[1];", "float l_[1];",
                  "float *const kt_ = ", "float *const vf_ = ", "__syncthreads();"}) {
                EXPECT_NE(source.find(line), std::string::npos)
                    << app.name() << " " << arch << ": " << line;
            }
            EXPECT_NE(source.find("o_[0] = o_tile_[0];"), std::string::npos)
                << app.name() << " " << arch << ": the step copies the tile partial";
            // Every per-thread array is indexed by constants only, so that it
            // lives in registers: the ragged last tile's clamped key
            // indices, relative to the tile's start, fold to the key's
            // place in the tile. (A run-time index puts an array in local
            // memory, a round trip through the cache per access.)
            const std::regex array_decl(R"(float (\w+_)\[\d+\];)");
            size_t arrays = 0;
            for (std::sregex_iterator it(source.begin(), source.end(), array_decl), end; it != end;
                 ++it, ++arrays) {
                const std::regex dynamic_index("\\b" + (*it)[1].str() +
                                               R"(\[[^\]]*[^\d\]][^\]]*\])");
                std::smatch m;
                EXPECT_FALSE(std::regex_search(source, m, dynamic_index))
                    << app.name() << " " << arch << ": " << m.str();
            }
            EXPECT_GE(arrays, size_t(6)) << source;
            EXPECT_EQ(cuda.ptx.find(".local"), std::string::npos) << app.name() << " " << arch;
            // The tile's copy: its keys and 16-byte vectors of k and v fused
            // over the block's threads (4 keys x 8 vectors of a row: one per
            // thread for half the block), loaded through the read-only cache
            // and stored as float32: kt transposed (a scatter), vf as it is,
            // in words proven aligned (the tile's rows of 8 floats in shared
            // memory start on 16 bytes).
            // The fused loop's extent varies at the last tile, but has a
            // constant bound: the copy is a guarded thread loop, not a
            // refusal, and its coordinates divide by the row's 8 vectors, a
            // constant.
            for (const auto &[func, input, store] :
                 {std::tuple<std::string, std::string, std::string>{"kt", "k",
                                                                    "loom_scatter(kt_, "},
                  {"vf", "v", "loom_store_aligned<float, 8>(vf_, "}}) {
                const std::string load = "loom_load_dense_readonly<__half, 8>(" + input + "_, ";
                const size_t at = source.find(store);
                ASSERT_NE(at, std::string::npos) << app.name() << " " << arch << ": " << store;
                EXPECT_NE(source.find(load, at), std::string::npos)
                    << app.name() << " " << arch << ": " << load;
                const std::string fused = func + "_s0_j_ = (loom_div<int>(";
                const size_t j = source.find(fused);
                ASSERT_NE(j, std::string::npos) << app.name() << " " << arch << ": " << fused;
                EXPECT_EQ(source.compare(source.find(',', j), 4, ", 8)"), 0)
                    << source.substr(j, 120);
            }
            // Without the guards, each thread of a full tile reads kt and vf
            // from shared memory in 16-byte vectors (4 keys of kt per element
            // of the head dimension, 16 vectors of vf per key).
            size_t vector_reads = 0;
            for (size_t at = cuda.ptx.find("ld.shared.v4.f32"); at != std::string::npos;
                 at = cuda.ptx.find("ld.shared.v4.f32", at + 1))
                vector_reads++;
            EXPECT_GE(vector_reads, size_t(64 + 4 * 16)) << app.name() << " " << arch;
        }
    }
}

TEST(Apps, GpuFlashDecodingCompilesThroughNvrtc) {
    // flash_decoding_gpu: the pieces' kernel runs a block per 64 pieces,
    // query and head (heads and batch fused), a thread per piece, each with
    // its tile's running values in registers; the output's kernel combines
    // the pieces, a thread per query.
    // With probabilities_per_tile, each thread also keeps its tile's
    // probabilities, one array of key_tile floats: every step's tile is one
    // that exists, so its size is constant even in the last pieces, whose
    // steps run past the last key.
    // (One variant: the template does not know which it schedules, and
    // each compile of these kernels takes NVRTC ten seconds.)
    for (bool per_tile : {false, true}) {
        attention::AttentionVariant app(attention::Variant::Causal, Float(16));
        app.fix_head_dim(64);
        Schedule sch;
        schedules::FlashDecodingGpuOptions opt;
        opt.probabilities_per_tile = per_tile;
        schedules::flash_decoding_gpu(sch, app.chain(), opt);
        for (const char *arch : {"sm_80", "sm_90a"}) {
            SCOPED_TRACE(std::string(arch) + (per_tile ? ", probabilities per tile" : ""));
            const CudaText cuda =
                compile_to_cuda_text(app.out, sch, Target(std::string("host-cuda-") + arch));
            const std::string &source = cuda.source;
            for (const char *piece :
                 {"// Kernel loom_out_o_partial_1: grid ((o_partial.s1.bh.loop_max + 1), "
                  "o_partial.s1.i.loop_extent, 1), "
                  "block (64, 1, 1)",
                  "const int o_partial_s1_ci_ = 0 + (int)threadIdx.x;", "float qf_[64];",
                  "float qk_[16];", "float o_partial_tile_[64];", "float o_[64];"}) {
                EXPECT_NE(source.find(piece), std::string::npos) << piece;
            }
            EXPECT_EQ(source.find("float p_[16];") != std::string::npos, per_tile);
            EXPECT_NE(cuda.ptx.find(".entry loom_out_out("), std::string::npos);
        }
    }
}

TEST(Apps, GpuAttentionOverKeyTilesNeedsTheKeysAndValues) {
    attention::AttentionVariant app(attention::Variant::Global, Float(32));
    app.fix_head_dim(32);
    schedules::AttentionChain chain = app.chain();
    chain.v.reset();
    Schedule sch;
    schedules::FlashAttentionGpuOptions opt;
    opt.head_dim = 32;
    opt.key_tile = 8;
    try {
        schedules::flash_attention_gpu(sch, chain, opt);
        FAIL() << "expected a CompileError";
    } catch (const CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("set its k, v, kt and vf"), std::string::npos)
            << e.what();
    }
}

TEST(Apps, GpuAttentionCompilesThroughNvrtcWithStateInRegisters) {
    // Each thread's running max, sum, weighted sum and query row are arrays
    // indexed by constants, so they live in registers: a GPU puts an array
    // indexed at run time in local memory (".local" in the PTX). The
    // rolling update's repair factor is computed once per key, not once
    // per element of the weighted sum: two exponentials per key in all.
    for (attention::Variant var : attention::all_variants) {
        attention::AttentionVariant app(var, Float(16));
        app.fix_head_dim(64);
        Schedule sch;
        schedules::flash_attention_gpu(sch, app.chain());
        for (const char *arch : {"sm_80", "sm_90a"}) {
            const Target target(std::string("host-cuda-") + arch);
            const CudaText cuda = compile_to_cuda_text(app.out, sch, target);
            const std::string &text = cuda.ptx;
            EXPECT_EQ(text.find(".local"), std::string::npos) << app.name() << " " << arch;
            // o's update reads each value row in 16-byte vectors, and o's
            // registers take them 8 lanes at a time, lane by lane (a word
            // moved through its address would put o in local memory). Its
            // initial value is stored in the same vectors as the update's:
            // the pure definition takes the update's split of d.
            for (const char *piece :
                 {"loom_load_dense_readonly<__half, 8>(v_, ", "loom_load_lanes<float, 8>(o_, 56)",
                  "loom_store_lanes<float, 8>(o_, 56, loom_broadcast<8>(0x0p+0f));"}) {
                EXPECT_NE(cuda.source.find(piece), std::string::npos)
                    << app.name() << " " << arch << ": " << piece;
            }
            if (var == attention::Variant::Global) {
                size_t exps = 0;
                for (size_t at = text.find("ex2.approx"); at != std::string::npos;
                     at = text.find("ex2.approx", at + 1))
                    exps++;
                EXPECT_EQ(exps, 2u) << arch;
            }
        }
    }
}

TEST(Apps, GpuAttentionWithAlignedHeadRowsReadsWholeWords) {
    // With promise_aligned_heads, each key row of the q.k dot product
    // (qk_vector 8) and each value row of the weighted sum is read as
    // aligned words, and no load left tests its address; the running state
    // stays in registers.
    for (Type t : {Float(16), Float(32)}) {
        attention::AttentionVariant app(attention::Variant::Causal, t);
        app.fix_head_dim(64);
        app.promise_aligned_heads(64);
        Schedule sch;
        schedules::FlashAttentionGpuOptions opt;
        opt.qk_vector = 8;
        schedules::flash_attention_gpu(sch, app.chain(), opt);
        const CudaText cuda = compile_to_cuda_text(app.out, sch, Target("host-cuda-sm_90a"));
        const std::string kernels = cuda.source.substr(cuda.source.find("__global__"));
        const std::string elem = t == Float(16) ? "__half" : "float";
        for (const char *buffer : {"k_", "v_"}) {
            const std::string piece = "loom_load_aligned_readonly<" + elem + ", 8>(" + buffer;
            EXPECT_NE(kernels.find(piece), std::string::npos) << piece << "\n" << kernels;
        }
        EXPECT_EQ(kernels.find("loom_load_dense"), std::string::npos) << kernels;
        EXPECT_EQ(cuda.ptx.find(".local"), std::string::npos) << elem;
    }

    // qk_vector must divide the head dimension, and applies per key only.
    attention::AttentionVariant app(attention::Variant::Global, Float(32));
    app.fix_head_dim(64);
    auto refused = [&](int key_tile, int qk_vector, const std::string &part) {
        Schedule sch;
        schedules::FlashAttentionGpuOptions opt;
        opt.key_tile = key_tile;
        opt.qk_vector = qk_vector;
        try {
            schedules::flash_attention_gpu(sch, app.chain(), opt);
        } catch (const CompileError &e) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
            return;
        }
        ADD_FAILURE() << "key_tile " << key_tile << ", qk_vector " << qk_vector << " accepted";
    };
    refused(0, 6, "qk_vector 6 does not divide head_dim 64");
    refused(8, 8, "qk_vector applies to key_tile 0 only");
}
