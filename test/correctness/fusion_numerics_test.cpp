// The numerics of fused reduction chains: accuracy at large offsets against
// a float64 reference (carried state kept about the producers' pivots),
// repairs whose exponent carries a run-time scale, and the choice of the
// carried state by the conditioning check.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.h"

using namespace loom;
using namespace loom_test;

namespace {

std::string log_of(const Func &out, const Schedule &sch) {
    std::string log;
    for (const std::string &s : Pipeline(out).compile(sch).compile_log()) log += s + "\n";
    return log;
}

/** The variance of each row of x (stored as `t`, summed in float32), as a
 * user writes it for one pass: the sum, then the squared deviations from
 * sum / n. */
struct Variance {
    BufferParam x;
    Var i{"i"};
    RDom r;
    Func s{"s"}, l{"l"}, out{"out"};
    explicit Variance(Type t) : x(t, 2, "x"), r(0, x.dim(1).extent(), "r") {
        Expr n = cast<float>(x.dim(1).extent());
        Expr v = cast<float>(x(i, r));
        s(i) = sum(v);
        Expr dev = v - s(i) / n;
        l(i) = sum(dev * dev);
        out(i) = l(i) / n;
    }
};

struct NamedSchedule {
    std::string name;
    Schedule sch;
};

/** rolling_update in tiles of 1, 7 and 64, and split_k in 2, 7 and 64
 * chunks, contiguous and interleaved. */
std::vector<NamedSchedule> fused_schedules(const Func &l, const RDom &r) {
    std::vector<NamedSchedule> out;
    for (int tile : {1, 7, 64}) {
        NamedSchedule ns{"rolling_update, tiles of " + std::to_string(tile), Schedule()};
        Stage st = ns.sch.rolling_update(l, r);
        if (tile > 1) st.split(r, RVar("ro"), RVar("ri"), tile);
        out.push_back(ns);
    }
    for (int k : {2, 7, 64}) {
        for (ChunkLayout layout : {ChunkLayout::Contiguous, ChunkLayout::Interleaved}) {
            NamedSchedule ns{"split_k " + std::to_string(k) +
                                 (layout == ChunkLayout::Interleaved ? " interleaved" : ""),
                             Schedule()};
            ns.sch.split_k(l, r, k, Var("c"), layout).compute_root();
            out.push_back(ns);
        }
    }
    return out;
}

/** Rows drawn as mean + N(0, 1), stored as T. */
template <typename T> Buffer<T> offset_rows(int rows, int n, double mean) {
    Buffer<T> b({rows, n});
    std::normal_distribution<double> normal(0, 1);
    b.fill([&](const std::vector<int> &) { return static_cast<T>(mean + normal(rng())); });
    return b;
}

/** The population variance of each row in float64, and its spread. */
template <typename T> std::vector<double> reference_variance(const Buffer<T> &x) {
    std::vector<double> v;
    const int n = x.extent(1);
    for (int i = 0; i < x.extent(0); i++) {
        double mean = 0, m2 = 0;
        for (int j = 0; j < n; j++) mean += static_cast<double>(static_cast<float>(x(i, j)));
        mean /= n;
        for (int j = 0; j < n; j++) {
            double d = static_cast<double>(static_cast<float>(x(i, j))) - mean;
            m2 += d * d;
        }
        v.push_back(m2 / n);
    }
    return v;
}

/** The largest error of `out` against the reference, relative to the
 * variance (or, for a row whose variance is 0, to the unit spread drawn). */
double worst_error(const Buffer<float> &out, const std::vector<double> &ref) {
    double worst = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        double e = std::abs(out(static_cast<int>(i)) - ref[i]) / std::max(ref[i], 1.0);
        worst = std::max(worst, std::isnan(e) ? INFINITY : e);
    }
    return worst;
}

template <typename T> void check_variance_at_offsets(Type t, const std::vector<double> &means) {
    Variance v(t);
    // The unfused yardstick: the sum, then the squares, each once per row
    // (left inline, the sum would be recomputed for every square).
    Schedule unfused_schedule;
    unfused_schedule[v.s].compute_root();
    unfused_schedule[v.l].compute_root();
    CompiledPipeline plain = Pipeline(v.out).compile(unfused_schedule);
    std::vector<NamedSchedule> schedules = fused_schedules(v.l, v.r);
    std::vector<CompiledPipeline> fused;
    for (const NamedSchedule &ns : schedules) fused.push_back(Pipeline(v.out).compile(ns.sch));
    const int rows = 3;
    const double u = std::ldexp(1.0, -24);  // the accumulators are float32
    for (int n : {1, 2, 37, 4099, 100000}) {
        for (double mean : means) {
            Buffer<T> x = offset_rows<T>(rows, n, mean);
            v.x.set(x);
            std::vector<double> ref = reference_variance(x);
            Buffer<float> out({rows});
            plain.realize({out});
            const double unfused = worst_error(out, ref);
            // The documented bound (docs/numerics.md): within 8x of the
            // larger of the unfused order's error, u sqrt(N) (summing in
            // another order), and 2 u kappa / sqrt(N) (one rounding of the
            // running mean per term, as Welford's algorithm has), with
            // kappa = |mean| / spread; split_k's combine moves each chunk
            // from its own pivot, rounded once more: 4 u kappa / sqrt(N).
            double spread = std::sqrt(std::max(ref[0], 1e-30));
            double kappa = std::abs(mean) / std::max(spread, 1e-30);
            for (size_t k = 0; k < fused.size(); k++) {
                const bool chunks = schedules[k].name.rfind("split_k", 0) == 0;
                const double floor = u * (std::sqrt(n) + (chunks ? 4 : 2) * kappa / std::sqrt(n));
                const double bound = 8 * std::max(unfused, floor);
                fused[k].realize({out});
                double e = worst_error(out, ref);
                EXPECT_LE(e, bound)
                    << schedules[k].name << ", " << type_to_string(t) << ", rows of " << n
                    << " drawn as " << mean << " + N(0, 1): unfused error " << unfused;
            }
        }
    }
}

}  // namespace

TEST(FusionNumerics, VarianceAtLargeOffsetsFloat32) {
    check_variance_at_offsets<float>(Float(32), {0, 1e2, 1e4, 1e6});
}

TEST(FusionNumerics, VarianceAtLargeOffsetsFloat16Inputs) {
    // float16 holds at most 65504: the largest offset is 1e4 (where its
    // spacing, 8, quantizes the unit spread away from most values).
    check_variance_at_offsets<float16_t>(Float(16), {0, 1e2, 1e4});
}

TEST(FusionNumerics, VarianceKeptAboutThePivot) {
    // The log says which state was chosen, and that it was checked.
    Variance v(Float(32));
    Schedule sch;
    sch.rolling_update(v.l, v.r);
    std::string log = log_of(v.out, sch);
    EXPECT_NE(log.find("carried repair in Taylor form, proved symbolically"), std::string::npos)
        << log;
    EXPECT_NE(log.find("the dependents of s are kept about s * N / l_count"), std::string::npos)
        << log;
    EXPECT_NE(log.find("conditioning checked in float32"), std::string::npos) << log;
}

TEST(FusionNumerics, HigherCentralMomentsAndCenteredWeightedSums) {
    // The third and fourth central moments, and sum((x - mean) * w): every
    // polynomial in the mean is carried in Taylor form about the pivot.
    BufferParam x(Float(32), 2, "x"), w(Float(32), 2, "w");
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    Expr n = cast<float>(x.dim(1).extent());
    const int rows = 4, cols = 301;
    Buffer<float> xb = offset_rows<float>(rows, cols, 50), wb = random_buffer<float>({rows, cols});
    x.set(xb);
    w.set(wb);
    for (int kind = 0; kind < 3; kind++) {
        Func s("s"), l("l"), out("out");
        s(i) = sum(x(i, r));
        Expr dev = x(i, r) - s(i) / n;
        l(i) = sum(kind == 0 ? dev * dev * dev : kind == 1 ? dev * dev * dev * dev : dev * w(i, r));
        out(i) = l(i);
        std::vector<double> ref(rows);
        for (int a = 0; a < rows; a++) {
            double mean = 0;
            for (int b = 0; b < cols; b++) mean += xb(a, b);
            mean /= cols;
            for (int b = 0; b < cols; b++) {
                double d = xb(a, b) - mean;
                ref[a] += kind == 0 ? d * d * d : kind == 1 ? d * d * d * d : d * wb(a, b);
            }
        }
        // The unfused order's error, as the yardstick: these sums cancel.
        Buffer<float> plain({rows});
        Pipeline(out).compile(Schedule()).realize({plain});
        double scale = 0;
        for (int a = 0; a < rows; a++) scale = std::max(scale, std::abs(plain(a) - ref[a]));
        scale = std::max(scale, 1e-3);
        for (const NamedSchedule &ns : fused_schedules(l, r)) {
            Buffer<float> got({rows});
            Pipeline(out).compile(ns.sch).realize({got});
            for (int a = 0; a < rows; a++) {
                EXPECT_LE(std::abs(got(a) - ref[a]), 8 * scale)
                    << ns.name << ", kind " << kind << ", row " << a << ": " << got(a) << " vs "
                    << ref[a];
            }
        }
    }
}

namespace {

/** Softmax-weighted sums whose exponent carries a scale known only at run
 * time, written the ways users write it. */
struct ScaledSoftmax {
    BufferParam x{Float(32), 3, "x"}, v{Float(32), 3, "v"};  // [head, row, key]
    BufferParam row_scale{Float(32), 2, "row_scale"}, head_scale{Float(32), 1, "head_scale"};
    Param<float> temperature{"T", 1.7f}, inv_temperature{"invT", 0.6f};
    Var h{"h"}, i{"i"};
    RDom r;
    ScaledSoftmax() : r(0, x.dim(2).extent(), "r") {}

    /** The chain m, l, o with the exponent `e(x, m)`; out = o / l. */
    Func build(int form) {
        Func m("m"), l("l"), o("o"), out("out");
        Expr s = x(h, i, r);
        m(h, i) = maximum(s);
        Expr e;
        switch (form) {
        case 0: e = exp((s - m(h, i)) / temperature); break;
        case 1: e = exp((s - m(h, i)) * inv_temperature); break;
        case 2: e = exp(s / temperature - m(h, i) / temperature); break;
        case 3: e = pow(2.0f, (s - m(h, i)) * inv_temperature); break;
        case 4: e = exp((s - m(h, i)) * row_scale(h, i)); break;
        default: e = exp((s - m(h, i)) * head_scale(h)); break;
        }
        l(h, i) = sum(e);
        o(h, i) = sum(e * v(h, i, r));
        out(h, i) = o(h, i) / l(h, i);
        chain_l = l;
        chain_o = o;
        return out;
    }
    Func chain_l, chain_o;
};

}  // namespace

TEST(FusionNumerics, RunTimeScalesInTheExponent) {
    const char *forms[] = {"exp((x - m) / T)",       "exp((x - m) * invT)",
                           "exp(x / T - m / T)",     "pow(2, (x - m) * invT)",
                           "exp((x - m) * s(h, i))", "exp((x - m) * s(h))"};
    ScaledSoftmax a;
    const int heads = 3, rows = 5, keys = 43;
    a.x.set(random_buffer<float>({heads, rows, keys}, -6, 6));
    a.v.set(random_buffer<float>({heads, rows, keys}));
    a.row_scale.set(random_buffer<float>({heads, rows}, 0.2, 3));
    a.head_scale.set(random_buffer<float>({heads}, 0.2, 3));
    for (int form = 0; form < 6; form++) {
        SCOPED_TRACE(forms[form]);
        Func out = a.build(form);
        Buffer<float> expected(interpret(out, {heads, rows}));
        std::vector<NamedSchedule> schedules;
        for (int tile : {1, 8}) {
            NamedSchedule ns{"rolling_update, tiles of " + std::to_string(tile), Schedule()};
            Stage st = ns.sch.rolling_update(a.chain_o, a.r);
            if (tile > 1) st.split(a.r, RVar("ro"), RVar("ri"), tile);
            schedules.push_back(ns);
        }
        for (ChunkLayout layout : {ChunkLayout::Contiguous, ChunkLayout::Interleaved}) {
            NamedSchedule ns{"split_k 7", Schedule()};
            ns.sch.split_k(a.chain_o, a.r, 7, Var("c"), layout).compute_root();
            schedules.push_back(ns);
        }
        for (const NamedSchedule &ns : schedules) {
            SCOPED_TRACE(ns.name);
            Buffer<float> actual({heads, rows});
            CompiledPipeline c = Pipeline(out).compile(ns.sch);
            c.realize({actual});
            EXPECT_TRUE(buffers_match(actual, expected, 2e-5, 2e-5));
            std::string log;
            for (const std::string &s : c.compile_log()) log += s + "\n";
            EXPECT_NE(log.find("scale repair, proved symbolically"), std::string::npos) << log;
        }
    }
}

TEST(FusionNumerics, APivotThatWouldHurtIsDropped) {
    // sum(exp(x - S)) reads the raw sum: about its extrapolation S * N /
    // count the early terms would overflow, about the running sum they do
    // not. The conditioning check keeps the running value.
    BufferParam x(Float(32), 2, "x");
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    Func s("s"), l("l"), out("out");
    s(i) = sum(x(i, r));
    l(i) = sum(exp(x(i, r) - s(i)));
    out(i) = log(l(i)) + s(i);
    x.set(random_buffer<float>({4, 57}, -1, 1));
    Buffer<float> expected(interpret(out, {4}));
    for (int tile : {1, 8}) {
        Schedule sch;
        Stage st = sch.rolling_update(l, r);
        if (tile > 1) st.split(r, RVar("ro"), RVar("ri"), tile);
        std::string log = log_of(out, sch);
        EXPECT_NE(log.find("the dependents of s are kept about its running value"),
                  std::string::npos)
            << log;
        Buffer<float> actual({4});
        Pipeline(out).compile(sch).realize({actual});
        EXPECT_TRUE(buffers_match(actual, expected, 1e-5, 1e-5));
    }
}

TEST(FusionNumerics, RolledVarianceOverAnRDomWithAPredicate) {
    // Over r.where(...) the count of terms stops short of the extent, so the
    // last pivot is not the final sum: the reads of the rolled result move it
    // there. As accurate as the unfused order, at a mean of 1e4.
    BufferParam x(Float(32), 2, "x");
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    r.where(x(i, r) > 10000.0f);
    Func s("s"), l("l"), out("out");
    Expr n = cast<float>(x.dim(1).extent());
    s(i) = sum(x(i, r));
    l(i) = sum((x(i, r) - s(i) / n) * (x(i, r) - s(i) / n));
    out(i) = l(i) / n;
    const int rows = 3;
    for (int cols : {1, 37, 4099}) {
        Buffer<float> xb = offset_rows<float>(rows, cols, 1e4);
        x.set(xb);
        std::vector<double> ref(rows);
        for (int a = 0; a < rows; a++) {
            double total = 0, m2 = 0;
            for (int b = 0; b < cols; b++) total += xb(a, b) > 1e4f ? xb(a, b) : 0.0;
            for (int b = 0; b < cols; b++) {
                double dev = xb(a, b) - total / cols;
                m2 += xb(a, b) > 1e4f ? dev * dev : 0.0;
            }
            ref[a] = m2 / cols;
        }
        Schedule unfused;
        unfused[s].compute_root();
        unfused[l].compute_root();
        Buffer<float> plain({rows});
        Pipeline(out).compile(unfused).realize({plain});
        const double unfused_error = worst_error(plain, ref);
        for (int tile : {1, 7, 64}) {
            Schedule sch;
            Stage st = sch.rolling_update(l, r);
            if (tile > 1) st.split(r, RVar("ro"), RVar("ri"), tile);
            CompiledPipeline c = Pipeline(out).compile(sch);
            std::string log;
            for (const std::string &line : c.compile_log()) log += line + "\n";
            EXPECT_NE(log.find("moved from their last pivot to the final value"), std::string::npos)
                << log;
            Buffer<float> got({rows});
            c.realize({got});
            EXPECT_LE(worst_error(got, ref), 8 * std::max(unfused_error, 1e-6))
                << "tiles of " << tile << ", rows of " << cols << ": unfused " << unfused_error;
        }
    }
}
