// Lesson 13: fused chains that stay accurate.
//
// Lessons 10 and 11 fused softmax's chain: the compiler derived how to
// repair a partial sum when the max it depends on moves. A repair that is
// exact in real arithmetic can still lose every digit in float32. This
// lesson fuses the variance, the textbook case: written as two reductions
// (the sum, then the squared deviations from sum / n), rolled into one pass,
// it is E[x^2] - E[x]^2 if the compiler keeps its state about the running
// sum, and Welford's algorithm if it keeps it about the running mean. Loom
// does the second, checks that the result is as accurate as the two passes,
// and refuses a fused chain that would not be.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <loom/loom.h>

using namespace loom;

namespace {

int failures = 0;

void expect(bool ok, const char *what) {
    std::printf("  %s: %s\n", what, ok ? "yes" : "NO");
    if (!ok) failures++;
}

void print_log(const CompiledPipeline &compiled) {
    for (const std::string &line : compiled.compile_log()) std::printf("  log: %s\n", line.c_str());
}

}  // namespace

int main() {
    // 1. The algorithm: plain, two reductions over each row of x.
    BufferParam x(Float(32), 2, "x");
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    Func s("s"), l("l"), variance("variance");
    Expr n = cast<float>(x.dim(1).extent());
    s(i) = sum(x(i, r));                  // the sum
    Expr deviation = x(i, r) - s(i) / n;  // from the mean
    l(i) = sum(deviation * deviation);    // needs the FINAL sum
    variance(i) = l(i) / n;

    // Rows far from zero against their spread: the values a LayerNorm sees
    // after a few layers. 10000 + N(0, 1), so the variance is about 1.
    const int rows = 4, cols = 4099;
    Buffer<float> data({rows, cols});
    std::mt19937 rng(13);
    std::normal_distribution<double> normal(0, 1);
    data.fill([&](const std::vector<int> &) { return static_cast<float>(1e4 + normal(rng)); });
    x.set(data);
    std::vector<double> exact(rows);  // float64, two passes
    for (int a = 0; a < rows; a++) {
        double mean = 0, m2 = 0;
        for (int b = 0; b < cols; b++) mean += data(a, b);
        mean /= cols;
        for (int b = 0; b < cols; b++) m2 += (data(a, b) - mean) * (data(a, b) - mean);
        exact[a] = m2 / cols;
    }
    auto worst_error = [&](const Buffer<float> &got) {
        double worst = 0;
        for (int a = 0; a < rows; a++)
            worst = std::max(worst, std::abs(got(a) - exact[a]) / exact[a]);
        return worst;
    };

    // 2. Two passes, each reduction at root: the yardstick.
    Schedule two_passes;
    two_passes[s].compute_root();
    two_passes[l].compute_root();
    Buffer<float> plain({rows});
    Pipeline(variance).compile(two_passes).realize({plain});
    std::printf("two passes: relative error %.1e\n", worst_error(plain));

    // 3. One pass. rolling_update(l, r) fuses l with the sum it reads. The
    // squares are a polynomial in the sum, so the compiler carries the sums
    // of their Taylor coefficients beside l and shifts them when the sum
    // moves ("carried repair in Taylor form"); and it keeps them about the
    // running sum extrapolated to the whole row, s * N / count, which is
    // n times the running mean ("kept about s * N / l_count"). The log also
    // says it simulated the fused pass on hostile inputs in float32 and found
    // it within 8x of the two passes' error ("conditioning checked").
    std::printf("\none pass (rolling_update):\n");
    Schedule one_pass;
    one_pass.rolling_update(l, r);
    CompiledPipeline rolled = Pipeline(variance).compile(one_pass);
    print_log(rolled);
    Buffer<float> fused({rows});
    rolled.realize({fused});
    std::printf("one pass: relative error %.1e\n", worst_error(fused));
    expect(worst_error(fused) <= 8 * std::max(worst_error(plain), 1e-6),
           "one pass as accurate as two (within 8x)");

    // 4. split_k cuts the row into chunks, each its own pass, and combines
    // them with the same repair: Chan's parallel variance. With nothing else
    // scheduled, the chunks' partials are computed where their combine needs
    // them. Shorter runs sum more accurately, so it beats the two passes here.
    Schedule chunks;
    chunks.split_k(l, r, 8, Var("c"));
    Buffer<float> split({rows});
    Pipeline(variance).compile(chunks).realize({split});
    std::printf("\nsplit_k in 8 chunks: relative error %.1e\n", worst_error(split));
    expect(worst_error(split) <= 8 * std::max(worst_error(plain), 1e-6),
           "the chunks as accurate as two passes");

    // 5. A scale known only when the pipeline runs fuses like a constant:
    // softmax with a temperature, FlashAttention's way, the max over the raw
    // scores and T inside the exponent. The repair multiplies by
    // exp((m - m') / T).
    Param<float> temperature("T", 0.7f);
    Func m("m"), z("z"), lse("lse");
    m(i) = maximum(x(i, r));
    z(i) = sum(exp((x(i, r) - m(i)) / temperature));
    lse(i) = m(i) + temperature * log(z(i));
    Schedule softmax;
    softmax.rolling_update(z, r).split(r, RVar("ro"), RVar("ri"), 64);
    Buffer<float> got({rows}), reference(interpret(lse, {rows}));
    Pipeline(lse).compile(softmax).realize({got});
    double worst = 0;
    for (int a = 0; a < rows; a++) worst = std::max(worst, double(std::abs(got(a) - reference(a))));
    std::printf("\ntempered log-sum-exp, rolled in tiles of 64: largest difference %.1e\n", worst);
    expect(worst <= 1e-2, "the same as the interpreter's (values near 1e4)");

    // 6. Over an RDom with a predicate (only some points count) the rolled
    // pass still works: its count of terms stops short of the row, so its
    // last pivot is not the final sum, and where the result is read it is
    // moved there with the same repair (the log says so).
    RDom valid(0, x.dim(1).extent(), "valid");
    valid.where(x(i, valid) > 0.0f);
    Func vs("vs"), vl("vl"), masked("masked");
    vs(i) = sum(x(i, valid));
    Expr dv = x(i, valid) - vs(i) / n;
    vl(i) = sum(dv * dv);
    masked(i) = vl(i) / n;
    Schedule over_valid;
    over_valid.rolling_update(vl, valid);
    CompiledPipeline rolled_valid = Pipeline(masked).compile(over_valid);
    Buffer<float> masked_out({rows});
    rolled_valid.realize({masked_out});
    // (Every value here is positive, so the masked variance is the variance.)
    std::printf("\nrolled over an RDom with a predicate: relative error %.1e\n",
                worst_error(masked_out));
    expect(worst_error(masked_out) <= 8 * std::max(worst_error(plain), 1e-6),
           "as accurate as two passes");

    // 7. What the compiler refuses: a chain with no accurate fused form.
    // Here one sum is read two ways: exp(x - s/n) needs its state about the
    // running mean (about the running sum it overflows), exp(x - s) about
    // the running sum (extrapolated, the early terms overflow). No state
    // serves both, and the error says so, with the inputs that exposed it.
    Func a("a"), b("b"), both("both");
    a(i) = sum(exp(x(i, r) - s(i) / n));
    b(i) = sum(exp(x(i, r) - s(i)));
    both(i) = a(i) + b(i);
    Schedule refused;
    refused.rolling_update(b, r);
    std::printf("\none sum read two ways, rolled:\n");
    try {
        Pipeline(both).compile(refused);
        expect(false, "refused");
    } catch (const CompileError &e) {
        std::printf("  CompileError: %s\n", e.what());
        expect(
            std::string(e.what()).find("no state serves every dependent of s") != std::string::npos,
            "refused, naming the reason");
    }

    std::printf("\n%s\n", failures ? "FAILED" : "lesson 13 done");
    return failures ? 1 : 0;
}
