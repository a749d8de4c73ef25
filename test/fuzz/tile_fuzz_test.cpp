// Differential fuzzer of tile programs: random matrix-product pipelines
// (operand types, a transposed operand, a batch, an elementwise epilogue
// reading a bias row or a residual, the output's type) under random tile
// schedules (tile sizes, warps, reduction tile, pipeline stages), run on the
// stand-in CUDA driver in both thread orders against float64, and on the CPU
// against the reference interpreter, to the bit.
//
// Each case is a pure function of a seed, printed on failure.
// Environment: LOOM_FUZZ_CASES (default 12) cases starting at LOOM_FUZZ_SEED
// (default: random).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>

#include "test_util.h"

using namespace loom;

namespace {

struct TileCase {
    Type in, out;
    bool b_transposed = false, batched = false;
    int epilogue = 0;  // 0 none, 1 scale + bias row, 2 relu of a residual sum
    int batch = 1, M = 1, N = 1, K = 1;
    int rows = 16, cols = 8, warps_m = 1, warps_n = 1, k_tile = 16, stages = 1;
    std::string describe() const {
        std::ostringstream s;
        s << type_to_string(in) << " -> " << type_to_string(out)
          << (b_transposed ? ", B transposed" : "") << (batched ? ", batched" : "") << ", epilogue "
          << epilogue << ", " << batch << " x " << M << " x " << N << " x " << K << ", tiles "
          << rows << " x " << cols << " x " << k_tile << ", warps " << warps_m << " x " << warps_n
          << ", " << stages << " stages";
        return s.str();
    }
};

int pick(std::mt19937 &rng, std::initializer_list<int> options) {
    std::vector<int> v(options);
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

TileCase make_case(uint64_t seed) {
    std::mt19937 rng(static_cast<uint32_t>(seed));
    TileCase c;
    c.in = pick(rng, {0, 1}) ? BFloat(16) : Float(16);
    const int out = pick(rng, {0, 1, 2});
    c.out = out == 0 ? Float(32) : c.in;
    c.b_transposed = pick(rng, {0, 1});
    c.batched = pick(rng, {0, 0, 1});
    c.epilogue = pick(rng, {0, 1, 2});
    auto size = [&](int hi) { return std::uniform_int_distribution<int>(1, hi)(rng); };
    c.batch = c.batched ? size(3) : 1;
    c.M = size(150);
    c.N = size(150);
    c.K = size(120);
    // A schedule that fits mma.m16n8k16 and the shared memory of sm_80.
    do {
        c.warps_m = pick(rng, {1, 2, 4});
        c.warps_n = pick(rng, {1, 2, 4});
        c.rows = c.warps_m * 16 * pick(rng, {1, 2, 4});
        c.cols = c.warps_n * 8 * pick(rng, {1, 2, 4, 8});
        c.k_tile = pick(rng, {16, 32, 64});
        c.stages = pick(rng, {1, 2, 3, 4});
    } while (c.rows > 128 || c.cols > 128 ||
             int64_t(c.rows + c.cols) * c.k_tile * 2 * c.stages > 96 * 1024);
    return c;
}

/** The pipeline of a case, its inputs bound to fresh random values. */
struct TilePipeline {
    BufferParam A, B, bias, residual;
    Var b{"b"}, i{"i"}, j{"j"}, io{"io"}, jo{"jo"};
    RDom k;
    Func acc{"acc"}, C{"C"};
    explicit TilePipeline(const TileCase &c, uint64_t seed)
        : A(c.in, c.batched ? 3 : 2, "A"),
          B(c.in, c.batched ? 3 : 2, "B"),
          bias(Float(32), 1, "bias"),
          residual(Float(32), 2, "residual"),
          k(0, A.dim(c.batched ? 2 : 1).extent(), "k") {
        auto at = [&](const BufferParam &p, Expr x, Expr y) {
            return c.batched ? p(b, x, y) : p(x, y);
        };
        std::vector<Var> vars = c.batched ? std::vector<Var>{b, i, j} : std::vector<Var>{i, j};
        std::vector<Expr> args(vars.begin(), vars.end());
        acc(args) = 0.0f;
        Expr bk = c.b_transposed ? at(B, j, k) : at(B, k, j);
        acc(args) += cast<float>(at(A, i, k)) * cast<float>(bk);
        Expr v = acc(args);
        if (c.epilogue == 1) v = v * 0.5f + bias(j);
        if (c.epilogue == 2) v = max(v + residual(i, j), 0.0f);
        C(args) = c.out == Float(32) ? v : cast(c.out, v);
        loom_test::rng().seed(static_cast<uint32_t>(seed * 7 + 1));
        std::vector<int> a_shape = {c.M, c.K};
        std::vector<int> b_shape =
            c.b_transposed ? std::vector<int>{c.N, c.K} : std::vector<int>{c.K, c.N};
        if (c.batched) {
            a_shape.insert(a_shape.begin(), c.batch);
            b_shape.insert(b_shape.begin(), c.batch);
        }
        if (c.in == BFloat(16)) {
            A.set(loom_test::random_buffer<bfloat16_t>(a_shape));
            B.set(loom_test::random_buffer<bfloat16_t>(b_shape));
        } else {
            A.set(loom_test::random_buffer<float16_t>(a_shape));
            B.set(loom_test::random_buffer<float16_t>(b_shape));
        }
        bias.set(loom_test::random_buffer<float>({c.N}));
        residual.set(loom_test::random_buffer<float>({c.M, c.N}));
    }
    Schedule schedule(const TileCase &c) {
        Schedule sch;
        sch[C].tile_program(i, j, io, jo, c.rows, c.cols,
                            TileOptions()
                                .warps(c.warps_m, c.warps_n)
                                .reduction_tile(c.k_tile)
                                .pipeline_stages(c.stages));
        sch[acc].compute_at(C, jo).update().tensorize("mma.m16n8k16");
        return sch;
    }
    std::vector<int> sizes(const TileCase &c) const {
        return c.batched ? std::vector<int>{c.batch, c.M, c.N} : std::vector<int>{c.M, c.N};
    }
};

}  // namespace

TEST(TileFuzz, RandomTileSchedulesOnTheStandInAndTheCpu) {
    setenv("LOOM_CUDA_DRIVER", LOOM_FAKE_CUDA_DRIVER, 1);
    setenv("LOOM_FAKE_CUDA_RUN_KERNELS", "1", 1);
    uint64_t seed = std::random_device{}();
    if (const char *s = std::getenv("LOOM_FUZZ_SEED")) seed = std::stoull(s);
    int cases = 12;
    if (const char *s = std::getenv("LOOM_FUZZ_CASES")) cases = std::stoi(s);
    std::printf("[tile fuzz] starting at seed %llu\n", static_cast<unsigned long long>(seed));
    int failures = 0, ran = 0, transposed = 0, batched = 0, pipelined = 0;
    for (int n = 0; n < cases && failures < 3; n++) {
        const uint64_t case_seed = seed + uint64_t(n);
        const TileCase c = make_case(case_seed);
        TilePipeline p(c, case_seed);
        Schedule sch = p.schedule(c);
        const std::string what = "seed " + std::to_string(case_seed) + " (" + c.describe() + ")";
        try {
            // The CPU lowering of the program keeps the interpreter's order.
            RawBuffer expected = interpret(p.C, p.sizes(c));
            RawBuffer cpu = Pipeline(p.C).realize(p.sizes(c), sch, Target("host"));
            ::testing::AssertionResult same = loom_test::buffers_match(cpu, expected);
            if (!same) {
                ADD_FAILURE() << what << " on the CPU: " << same.message();
                failures++;
                continue;
            }
            // The GPU's sums run in another order: float32 rounding apart,
            // and one rounding of the output type.
            const double out_ulp = c.out == Float(32)    ? 0
                                   : c.out == BFloat(16) ? 1.0 / 128
                                                         : 1.0 / 1024;
            for (const char *order : {"0", "1"}) {
                setenv("LOOM_FAKE_CUDA_REVERSED", order, 1);
                RawBuffer gpu = Pipeline(p.C).realize(p.sizes(c), sch, Target("host-cuda"));
                ::testing::AssertionResult close = loom_test::buffers_match(
                    gpu, expected, 1e-4 + 2 * out_ulp, 1e-4 * std::sqrt(double(c.K)));
                if (!close) {
                    ADD_FAILURE() << what << (*order == '1' ? ", reversed" : "") << ": "
                                  << close.message();
                    failures++;
                    break;
                }
            }
            ran++;
            transposed += c.b_transposed;
            batched += c.batched;
            pipelined += c.stages > 1;
        } catch (const std::exception &e) {
            ADD_FAILURE() << what << ": " << e.what();
            failures++;
        }
    }
    unsetenv("LOOM_FAKE_CUDA_REVERSED");
    std::printf("[tile fuzz] %d ran (%d with B transposed, %d batched, %d pipelined), %d failed\n",
                ran, transposed, batched, pipelined, failures);
    EXPECT_EQ(ran, cases);
}
