// Differential fuzzer of reduction fusion: random chains of reductions (a
// max, min or sum producer and one or two dependents of the shapes the
// repairs know), under random rolling_update and split_k schedules, on rows
// drawn as offset + N(0, 1) with offsets large against that spread. Each
// fused result is compared with the same chain unfused, both against the
// chain computed in float64: the fused error must stay within the bound of
// docs/numerics.md (8x the unfused error, or u (sqrt(N) + 2 kappa /
// sqrt(N)) of the terms' magnitudes).
//
// Environment: LOOM_CHAIN_FUZZ_CASES (default 24) cases starting at
// LOOM_CHAIN_FUZZ_SEED (default: random). A failure prints its seed.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "test_util.h"

using namespace loom;

namespace {

/** One random chain, built in any float type from the same choices. */
struct ChainCase {
    int producer = 0;      // 0 max, 1 min, 2 sum
    int dependent = 0;     // index into the shapes of dependent_term
    bool sibling = false;  // a second dependent, divided into the first
    int schedule = 0;      // 0 rolling, 1 split_k
    int tile = 0;          // 0: untiled
    int chunks = 1;
    bool interleaved = false;
    int rows = 1, cols = 1;
    double offset = 0;
    std::string describe() const {
        static const char *producers[] = {"max", "min", "sum"};
        std::ostringstream os;
        os << producers[producer] << " producer, dependent shape " << dependent
           << (sibling ? " with a sibling" : "") << ", "
           << (schedule == 0 ? "rolling_update" : "split_k " + std::to_string(chunks))
           << (schedule == 1 && interleaved ? " interleaved" : "")
           << (tile ? ", tiles of " + std::to_string(tile) : "") << ", " << rows << " rows of "
           << cols << " drawn as " << offset << " + N(0, 1)";
        return os.str();
    }
};

constexpr int kShapes = 5;

/** The term of a dependent of producer p (its value p_at), over the row's
 * point x and a weight v: shapes whose fused forms are stable. */
Expr dependent_term(int shape, int producer, const Expr &x, const Expr &v, const Expr &p_at,
                    const Expr &n, const Expr &scale) {
    if (producer == 2) {
        Expr dev = x - p_at / n;  // from the mean
        switch (shape % 3) {
        case 0: return dev * dev;
        case 1: return dev * dev * dev;
        default: return dev * v;
        }
    }
    // Max (min): differences from it are <= 0 (>= 0).
    Expr d = producer == 0 ? x - p_at : p_at - x;
    switch (shape) {
    case 0: return exp(d * scale);
    case 1: return exp(d / scale) * v;
    case 2: return d;
    case 3: return d * d;
    default: return pow(cast(d.type(), 2.0f), d * scale);
    }
}

struct Built {
    Func out, lead;
    RDom r;
    std::vector<Func> reductions;
    /** Each reduction once, at root: the unfused order. */
    Schedule unfused() const {
        Schedule sch;
        for (const Func &f : reductions) sch[f].compute_root();
        return sch;
    }
};

/** The chain in type t (t's casts of x and v), out(i) = lead(i) [/
 * sibling(i)]; with `magnitudes`, the lead sums its terms' magnitudes. */
Built build(const ChainCase &c, Type t, const BufferParam &x, const BufferParam &v,
            const Param<float> &scale, bool magnitudes = false) {
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    Expr xv = cast(t, x(i, r)), vv = cast(t, v(i, r));
    Expr n = cast(t, x.dim(1).extent());
    Expr s = cast(t, scale);
    Func p("p"), a("a"), b("b"), out("out");
    if (c.producer == 0) p(i) = maximum(xv);
    if (c.producer == 1) p(i) = minimum(xv);
    if (c.producer == 2) p(i) = sum(xv);
    Expr term = dependent_term(c.dependent, c.producer, xv, vv, p(i), n, s);
    a(i) = sum(magnitudes ? abs(term) : term);
    if (c.sibling) {
        // A second dependent: exp(d), which is positive (the normalizer).
        Expr d = c.producer == 0 ? xv - p(i) : c.producer == 1 ? p(i) - xv : xv - p(i) / n;
        b(i) = sum(c.producer == 2 ? d * d + cast(t, 1.0f) : exp(d));
        out(i) = a(i) / b(i);
        return {out, a, r, {p, a, b}};
    }
    out(i) = a(i);
    return {out, a, r, {p, a}};
}

ChainCase make_case(uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % n); };
    ChainCase c;
    c.producer = pick(3);
    c.dependent = pick(kShapes);
    c.sibling = pick(3) == 0;
    c.schedule = pick(2);
    const int tiles[] = {0, 0, 1, 3, 16, 64};
    c.tile = tiles[pick(6)];
    const int chunk_counts[] = {1, 2, 7, 64};
    c.chunks = chunk_counts[pick(4)];
    c.interleaved = pick(2) == 0;
    c.rows = 1 + pick(4);
    const int cols[] = {1, 2, 7, 37, 301, 1000, 4099};
    c.cols = cols[pick(7)];
    const double offsets[] = {0, 1e2, -1e2, 1e4, -1e4};
    c.offset = offsets[pick(5)];
    return c;
}

/** Runs one case; empty when it holds, else what failed. */
std::string run_case(uint64_t seed) {
    const ChainCase c = make_case(seed);
    BufferParam x(Float(32), 2, "x"), v(Float(32), 2, "v");
    Param<float> scale("scale", 0.75f);
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
    std::normal_distribution<double> normal(0, 1);
    Buffer<float> xb({c.rows, c.cols}), vb({c.rows, c.cols});
    xb.fill([&](const std::vector<int> &) { return static_cast<float>(c.offset + normal(rng)); });
    vb.fill([&](const std::vector<int> &) { return static_cast<float>(normal(rng)); });
    x.set(xb);
    v.set(vb);

    // float64, unfused: the reference; the terms' magnitudes beside it.
    Buffer<double> ref({c.rows}), magnitudes({c.rows});
    Built exact = build(c, Float(64), x, v, scale), sizes = build(c, Float(64), x, v, scale, true);
    Pipeline(exact.out).compile(exact.unfused()).realize({ref});
    Pipeline(sizes.out).compile(sizes.unfused()).realize({magnitudes});

    Buffer<float> unfused_out({c.rows});
    Built plain = build(c, Float(32), x, v, scale);
    Pipeline(plain.out).compile(plain.unfused()).realize({unfused_out});

    Built fused = build(c, Float(32), x, v, scale);
    Schedule sch;
    Stage st = c.schedule == 0 ? sch.rolling_update(fused.lead, fused.r)
                               : sch.split_k(fused.lead, fused.r, c.chunks, Var("c"),
                                             c.interleaved ? ChunkLayout::Interleaved
                                                           : ChunkLayout::Contiguous);
    if (c.tile) st.split(fused.r, RVar("ro"), RVar("ri"), c.tile);
    Buffer<float> fused_out({c.rows});
    try {
        Pipeline(fused.out).compile(sch).realize({fused_out});
    } catch (const CompileError &e) {
        return c.describe() + ": refused: " + e.what();
    }
    const double u = std::ldexp(1.0, -24);
    const double kappa = std::abs(c.offset) + 4;  // against a unit spread
    for (int i = 0; i < c.rows; i++) {
        const double exact_value = ref(i);
        if (!std::isfinite(exact_value)) continue;
        const double unfused_error = std::abs(unfused_out(i) - exact_value);
        const double fused_error = std::abs(fused_out(i) - exact_value);
        const double floor =
            u * std::abs(magnitudes(i)) * (std::sqrt(c.cols) + 2 * kappa / std::sqrt(c.cols));
        const double bound = 8 * std::max(std::isfinite(unfused_error) ? unfused_error : 0, floor);
        if (!(fused_error <= bound)) {
            std::ostringstream os;
            os << c.describe() << ": row " << i << " is " << fused_out(i) << ", float64 says "
               << exact_value << ", the unfused order " << unfused_out(i) << " (bound " << bound
               << ")";
            return os.str();
        }
    }
    return "";
}

}  // namespace

TEST(ChainFuzz, RandomChainsAtLargeOffsets) {
    uint64_t seed = std::random_device{}();
    if (const char *s = std::getenv("LOOM_CHAIN_FUZZ_SEED")) seed = std::stoull(s);
    int cases = 24;
    if (const char *s = std::getenv("LOOM_CHAIN_FUZZ_CASES")) cases = std::stoi(s);
    std::printf("[chain fuzz] starting at seed %llu\n", static_cast<unsigned long long>(seed));
    for (int k = 0; k < cases; k++) {
        const std::string failure = run_case(seed + k);
        EXPECT_TRUE(failure.empty()) << "seed " << seed + k << ": " << failure;
    }
}
