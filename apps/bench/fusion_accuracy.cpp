// The accuracy of fused reduction chains against the unfused order, both
// against float64: the single-pass variance (the sum, then the squared
// deviations from sum / n) and the softmax-weighted average with a run-time
// temperature, on rows drawn as mean + N(0, 1) at growing means. Prints one
// table per chain: the worst relative error over the rows for each schedule.
//
//     fusion_accuracy [--cols N] [--rows R] [--quick]
//
// docs/numerics.md quotes its output. --quick (small rows) is a test.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <loom/loom.h>

using namespace loom;

namespace {

struct Named {
    std::string name;
    Schedule sch;
};

/** Rows of `mean + N(0, 1)`. */
Buffer<float> offset_rows(int rows, int cols, double mean, std::mt19937 &rng) {
    Buffer<float> b({rows, cols});
    std::normal_distribution<double> normal(0, 1);
    b.fill([&](const std::vector<int> &) { return static_cast<float>(mean + normal(rng)); });
    return b;
}

double relative(double got, double ref) {
    double e = std::abs(got - ref) / std::max(std::abs(ref), 1e-30);
    return std::isnan(e) ? INFINITY : e;
}

/** The unfused order (every reduction of `chain` at root), then `x` rolled
 * one term a step and in tiles of 64, split_k in 7 chunks, and, with
 * `interleaved`, in 64 interleaved chunks. */
std::vector<Named> schedules_of(const std::vector<Func> &chain, const Func &x, const RDom &r,
                                bool interleaved) {
    std::vector<Named> out(interleaved ? 5 : 4);
    out[0].name = "unfused";
    for (const Func &f : chain) out[0].sch[f].compute_root();
    out[1].name = "rolling_update";
    out[1].sch.rolling_update(x, r);
    out[2].name = "rolling_update, tiles of 64";
    out[2].sch.rolling_update(x, r).split(r, RVar("ro"), RVar("ri"), 64);
    out[3].name = "split_k 7";
    out[3].sch.split_k(x, r, 7, Var("c")).compute_root();
    if (interleaved) {
        out[4].name = "split_k 64 interleaved";
        out[4].sch.split_k(x, r, 64, Var("c"), ChunkLayout::Interleaved).compute_root();
    }
    return out;
}

/** The worst relative error of each row of `got` against `ref`. */
double worst_error(const Buffer<float> &got, const std::vector<double> &ref) {
    double worst = 0;
    for (size_t a = 0; a < ref.size(); a++) {
        worst = std::max(worst, relative(got(static_cast<int>(a)), ref[a]));
    }
    return worst;
}

std::vector<std::string> names_of(const std::vector<Named> &schedules) {
    std::vector<std::string> names;
    for (const Named &n : schedules) names.push_back(n.name);
    return names;
}

void print_table(const char *title, const std::vector<double> &means,
                 const std::vector<std::string> &names,
                 const std::vector<std::vector<double>> &errors) {
    std::printf("\n%s\n\n| mean |", title);
    for (const std::string &n : names) std::printf(" %s |", n.c_str());
    std::printf("\n|---|");
    for (size_t k = 0; k < names.size(); k++) std::printf("---|");
    std::printf("\n");
    for (size_t m = 0; m < means.size(); m++) {
        std::printf("| %g |", means[m]);
        for (double e : errors[m]) std::printf(" %.1e |", e);
        std::printf("\n");
    }
}

/** Runs every schedule on rows at each mean; error(out, x) is the worst
 * relative error of one output. */
template <typename MakeInputs, typename Error>
std::vector<std::vector<double>> measure(const Func &out, int rows,
                                         const std::vector<Named> &schedules,
                                         const std::vector<double> &means, MakeInputs make_inputs,
                                         Error error) {
    std::vector<CompiledPipeline> compiled;
    for (const Named &n : schedules) compiled.push_back(Pipeline(out).compile(n.sch));
    std::vector<std::vector<double>> table;
    for (double mean : means) {
        make_inputs(mean);
        std::vector<double> row;
        for (CompiledPipeline &c : compiled) {
            Buffer<float> got({rows});
            c.realize({got});
            row.push_back(error(got));
        }
        table.push_back(row);
    }
    return table;
}

void variance(int rows, int cols, std::mt19937 &rng) {
    BufferParam x(Float(32), 2, "x");
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    Func s("s"), l("l"), out("out");
    Expr n = cast<float>(x.dim(1).extent());
    s(i) = sum(x(i, r));
    Expr dev = x(i, r) - s(i) / n;
    l(i) = sum(dev * dev);
    out(i) = l(i) / n;
    const std::vector<Named> schedules = schedules_of({s, l}, l, r, true);
    std::vector<double> means = {0, 1e2, 1e4, 1e6};
    std::vector<double> ref(rows);
    auto inputs = [&](double mean) {
        Buffer<float> b = offset_rows(rows, cols, mean, rng);
        x.set(b);
        for (int a = 0; a < rows; a++) {
            double m = 0, m2 = 0;
            for (int j = 0; j < cols; j++) m += b(a, j);
            m /= cols;
            for (int j = 0; j < cols; j++) m2 += (b(a, j) - m) * (b(a, j) - m);
            ref[a] = m2 / cols;
        }
    };
    auto error = [&](const Buffer<float> &got) { return worst_error(got, ref); };
    char title[128];
    std::snprintf(title, sizeof(title),
                  "Variance, %d rows of %d floats drawn as mean + N(0, 1): worst relative error",
                  rows, cols);
    print_table(title, means, names_of(schedules),
                measure(out, rows, schedules, means, inputs, error));
}

void tempered_softmax(int rows, int cols, std::mt19937 &rng) {
    BufferParam x(Float(32), 2, "x"), v(Float(32), 2, "v");
    Param<float> temperature("T", 0.6f);
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    Func m("m"), l("l"), o("o"), out("out");
    m(i) = maximum(x(i, r));
    Expr p = exp((x(i, r) - m(i)) / temperature);
    l(i) = sum(p);
    o(i) = sum(p * v(i, r));
    out(i) = o(i) / l(i);
    const std::vector<Named> schedules = schedules_of({m, l, o}, o, r, false);
    std::vector<double> means = {0, 1e2, 1e4};
    std::vector<double> ref(rows);
    auto inputs = [&](double mean) {
        Buffer<float> xb = offset_rows(rows, cols, mean, rng), vb = offset_rows(rows, cols, 0, rng);
        // Ascending scores: the max moves at every key.
        for (int a = 0; a < rows; a++) {
            std::vector<float> row(cols);
            for (int j = 0; j < cols; j++) row[j] = xb(a, j);
            std::sort(row.begin(), row.end());
            for (int j = 0; j < cols; j++) xb(a, j) = row[j];
        }
        x.set(xb);
        v.set(vb);
        for (int a = 0; a < rows; a++) {
            double mx = -INFINITY, den = 0, num = 0;
            for (int j = 0; j < cols; j++) mx = std::max(mx, static_cast<double>(xb(a, j)));
            for (int j = 0; j < cols; j++) {
                double e = std::exp((xb(a, j) - mx) / static_cast<double>(0.6f));
                den += e;
                num += e * vb(a, j);
            }
            ref[a] = num / den;
        }
    };
    auto error = [&](const Buffer<float> &got) { return worst_error(got, ref); };
    char title[160];
    std::snprintf(title, sizeof(title),
                  "Softmax-weighted average with exp((x - max) / T), T = 0.6 a Param, %d rows of "
                  "%d ascending scores drawn as mean + N(0, 1): worst relative error",
                  rows, cols);
    print_table(title, means, names_of(schedules),
                measure(out, rows, schedules, means, inputs, error));
}

}  // namespace

int main(int argc, char **argv) {
    int rows = 4, cols = 4099;
    for (int k = 1; k < argc; k++) {
        if (!std::strcmp(argv[k], "--quick")) {
            cols = 301;
        } else if (!std::strcmp(argv[k], "--cols") && k + 1 < argc) {
            cols = std::atoi(argv[++k]);
        } else if (!std::strcmp(argv[k], "--rows") && k + 1 < argc) {
            rows = std::atoi(argv[++k]);
        } else {
            std::fprintf(stderr, "usage: %s [--cols N] [--rows R] [--quick]\n", argv[0]);
            return 2;
        }
    }
    if (rows < 1 || cols < 1) {
        std::fprintf(stderr, "--rows and --cols must be positive\n");
        return 2;
    }
    std::mt19937 rng(2026);
    try {
        variance(rows, cols, rng);
        tempered_softmax(rows, cols, rng);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "fusion_accuracy: %s\n", e.what());
        return 1;
    }
    return 0;
}
