// Loom vs Halide 14 on the CPU: every app of apps/ written twice, with the
// same algorithm and the same schedule, both JIT-compiled in this process,
// cross-checked, and timed side by side; and a row argmax, vectorized along
// the row (Halide through rfactor).
//
//   loom_vs_halide [--threads N] [--reps N] [--quick] [--only NAME] [--dump DIR]
//
// Index order: a Loom Func's LAST index is innermost; a Halide Func's FIRST
// index is. So Loom's f(y, x) is Halide's f(x, y), Loom's tile(y, x, ...) is
// Halide's tile(x, y, ...), and the loop lists of reorder/fuse are reversed
// (Loom lists loops outermost first, Halide innermost first).
//
// Tail strategies are spelled out on both sides wherever a split is not
// guaranteed to divide, because the two compilers' defaults differ (Loom:
// GuardWithIf; Halide: ShiftInwards for pure definitions, RoundUp for pure
// vars of updates). Comparing defaults would compare different loops.
#include <Halide.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../attention/attention.h"
#include "../blur/blur.h"
#include "../gemm/gemm.h"
#include "../layernorm/layernorm.h"
#include "../softmax/softmax.h"
#include "dump_dir.h"

#ifndef LOOM_HALIDE_VERSION
#define LOOM_HALIDE_VERSION "14"
#endif

namespace {

namespace HL = Halide;

struct Options {
    int threads = 2;
    int reps = 15;
    bool quick = false;
    std::string only;
    std::string dump_dir;
};

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/** Median wall time of `reps` calls of f, in seconds, after two warm-ups. */
double median_time(const std::function<void()> &f, int reps) {
    f();
    f();
    std::vector<double> t;
    for (int r = 0; r < reps; r++) {
        double t0 = now_seconds();
        f();
        t.push_back(now_seconds() - t0);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

/** Times Loom's and Halide's kernels interleaved (L H L H ...), so that noise
 * from other processes on the machine hits both alike. */
std::pair<double, double> median_times(const std::function<void()> &loom_run,
                                       const std::function<void()> &halide_run, int reps) {
    loom_run();
    halide_run();
    loom_run();
    halide_run();
    std::vector<double> tl, th;
    for (int r = 0; r < reps; r++) {
        double t0 = now_seconds();
        loom_run();
        double t1 = now_seconds();
        halide_run();
        double t2 = now_seconds();
        tl.push_back(t1 - t0);
        th.push_back(t2 - t1);
    }
    std::sort(tl.begin(), tl.end());
    std::sort(th.begin(), th.end());
    return {tl[tl.size() / 2], th[th.size() / 2]};
}

std::mt19937 &rng() {
    static std::mt19937 gen(1234);
    return gen;
}

loom::Buffer<float> random_buffer(const std::vector<int> &shape, float lo, float hi) {
    loom::Buffer<float> b(shape);
    std::uniform_real_distribution<float> dist(lo, hi);
    float *p = b.data();
    for (int64_t n = 0; n < b.number_of_elements(); n++) p[n] = dist(rng());
    return b;
}

/** A Halide view of a dense Loom buffer: the same memory, dims reversed. */
HL::Buffer<float> halide_view(const loom::Buffer<float> &b) {
    std::vector<int> shape = b.shape();
    std::vector<int> sizes(shape.rbegin(), shape.rend());
    return HL::Buffer<float>(b.data(), sizes);
}

double max_abs_diff(const float *a, const float *b, int64_t n) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = std::abs(static_cast<double>(a[i]) - b[i]);
        if (!(d <= worst)) worst = d;  // NaN-sticky
    }
    return worst;
}

struct Row {
    std::string kernel, size;
    double loom_s = 0, halide_s = 0;
    double work = 0;  // bytes or flops per run
    bool flops = false;
    double loom_compile_s = 0, halide_compile_s = 0;
    double diff_lh = 0, diff_ref = 0, tol = 0;
    /** A Loom schedule beside Halide's usual one (a fused chain Halide
     * cannot derive): shown, but left out of the geomean of the others. */
    bool beside = false;
};

/** The Loom target that matches the Halide JIT target's code generation
 * settings. Halide's float semantics by default are reassociation,
 * contraction and reciprocals of constants, Loom's are exact unless asked:
 * hence fast_math. Halide 14 lets LLVM's loop vectorizer and unroller run
 * unless its target says disable_llvm_loop_opt, Loom only when asked: hence
 * llvm_loop_opt, following Halide's target. */
loom::Target loom_target() {
    HL::Target ht = HL::get_jit_target_from_environment();
    loom::Target t = loom::Target::host().with_feature(loom::Target::FastMath);
    if (ht.has_feature(HL::Target::EnableLLVMLoopOpt) ||
        !ht.has_feature(HL::Target::DisableLLVMLoopOpt)) {
        t = t.with_feature(loom::Target::LLVMLoopOpt);
    }
    return t;
}

/** Compiles the Loom pipeline (timed), optionally dumping stmt and assembly. */
loom::CompiledPipeline compile_loom(const loom::Func &out, const loom::Schedule &sch,
                                    const std::string &name, const Options &opt, double *secs) {
    double t0 = now_seconds();
    loom::CompiledPipeline k = loom::Pipeline(out).compile(sch, loom_target());
    *secs = now_seconds() - t0;
    if (!opt.dump_dir.empty()) {
        std::ofstream(opt.dump_dir + "/" + name + ".loom.stmt") << k.lowered_stmt();
        std::ofstream(opt.dump_dir + "/" + name + ".loom.s") << k.assembly();
        std::ofstream(opt.dump_dir + "/" + name + ".loom.ll") << k.llvm_ir();
    }
    return k;
}

/** Compiles the Halide pipeline (timed), optionally dumping stmt and assembly. */
void compile_halide(HL::Pipeline &p, const std::string &name, const Options &opt, double *secs) {
    HL::Target t = HL::get_jit_target_from_environment();
    double t0 = now_seconds();
    p.compile_jit(t);
    *secs = now_seconds() - t0;
    if (!opt.dump_dir.empty()) {
        auto args = p.infer_arguments();
        p.compile_to_lowered_stmt(opt.dump_dir + "/" + name + ".halide.stmt", args, HL::Text, t);
        p.compile_to_assembly(opt.dump_dir + "/" + name + ".halide.s", args, name, t);
    }
}

// ---------------------------------------------------------------------------
// Two-stage blur.

Row bench_blur(const Options &opt) {
    const int H = opt.quick ? 512 : 2048, W = opt.quick ? 1024 : 4096;
    const int TY = 32, TX = 256, V = 16;
    Row row{"blur", std::to_string(H) + "x" + std::to_string(W)};
    loom::Buffer<float> in = random_buffer({H + 2, W + 2}, 0, 1);
    loom::Buffer<float> out_l({H, W}), out_h({H, W}), out_r({H, W});

    blur::Blur app;
    loom::Schedule sch;
    app.schedule_cpu(sch, TY, TX, V);
    app.input.set(in);
    loom::CompiledPipeline lk = compile_loom(app.blur_y, sch, "blur", opt, &row.loom_compile_s);

    HL::ImageParam hin(HL::Float(32), 2, "input");
    HL::Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    HL::Func bx("blur_x"), by("blur_y");
    bx(x, y) = (hin(x, y) + hin(x + 1, y) + hin(x + 2, y)) / 3.0f;
    by(x, y) = (bx(x, y) + bx(x, y + 1) + bx(x, y + 2)) / 3.0f;
    by.tile(x, y, xo, yo, xi, yi, TX, TY, HL::TailStrategy::GuardWithIf)
        .parallel(yo)
        .vectorize(xi, V, HL::TailStrategy::GuardWithIf);
    bx.compute_at(by, xo).vectorize(x, V, HL::TailStrategy::GuardWithIf);
    HL::Pipeline hp(by);
    compile_halide(hp, "blur", opt, &row.halide_compile_s);
    hin.set(halide_view(in));
    HL::Buffer<float> hout = halide_view(out_h);

    auto t = median_times([&] { lk.realize({out_l}); }, [&] { hp.realize(hout); }, opt.reps);
    row.loom_s = t.first;
    row.halide_s = t.second;
    row.work = 4.0 * ((H + 2.0) * (W + 2.0) + double(H) * W);
    blur::reference(in.data(), W + 2, out_r.data(), H, W);
    row.diff_lh = max_abs_diff(out_l.data(), out_h.data(), out_l.number_of_elements());
    row.diff_ref = max_abs_diff(out_l.data(), out_r.data(), out_l.number_of_elements());
    row.tol = 1e-5;
    return row;
}

// ---------------------------------------------------------------------------
// GEMM.

Row bench_gemm(const Options &opt) {
    const int N = opt.quick ? 256 : 1024;
    const int TR = 32, TC = 32, MR = 8, V = 16;
    Row row{"gemm", std::to_string(N) + "^3"};
    loom::Buffer<float> a = random_buffer({N, N}, -1, 1), b = random_buffer({N, N}, -1, 1);
    loom::Buffer<float> out_l({N, N}), out_h({N, N}), out_r({N, N});

    gemm::Gemm app;
    loom::Schedule sch;
    app.schedule_cpu(sch, TR, TC, MR, V);
    app.A.set(a);
    app.B.set(b);
    loom::CompiledPipeline lk = compile_loom(app.C, sch, "gemm", opt, &row.loom_compile_s);

    // Loom C(i, j) is Halide C(j, i); A(i, k) is A(k, i); B(k, j) is B(j, k).
    HL::ImageParam ha(HL::Float(32), 2, "A"), hb(HL::Float(32), 2, "B");
    HL::Var i("i"), j("j"), io("io"), jo("jo"), ii("ii"), ji("ji"), t("t"), iio("iio"), iii("iii"),
        jio("jio"), jii("jii"), pjo("pjo"), pji("pji");
    HL::RDom k(0, ha.dim(0).extent(), "k");
    HL::Func prod("prod"), c("C");
    prod(j, i) = 0.0f;
    prod(j, i) += ha(k, i) * hb(j, k);
    c(j, i) = prod(j, i);
    c.tile(j, i, jo, io, ji, ii, TC, TR, HL::TailStrategy::ShiftInwards)
        .fuse(jo, io, t)
        .parallel(t)
        .split(ii, iio, iii, MR, HL::TailStrategy::ShiftInwards)
        .split(ji, jio, jii, V, HL::TailStrategy::ShiftInwards)
        .vectorize(jii)
        .unroll(jio)
        .unroll(iii);
    prod.compute_at(c, iio)
        .split(j, pjo, pji, V, HL::TailStrategy::GuardWithIf)
        .vectorize(pji)
        .unroll(i);
    HL::RVar ko("ko"), ki("ki");
    prod.update(0)
        .reorder(j, i, k)
        .split(j, pjo, pji, V, HL::TailStrategy::GuardWithIf)
        .vectorize(pji)
        .unroll(pjo)
        .unroll(i)
        .split(k, ko, ki, 2, HL::TailStrategy::GuardWithIf)
        .unroll(ki);
    HL::Pipeline hp(c);
    compile_halide(hp, "gemm", opt, &row.halide_compile_s);
    ha.set(halide_view(a));
    hb.set(halide_view(b));
    HL::Buffer<float> hout = halide_view(out_h);

    auto tm = median_times([&] { lk.realize({out_l}); }, [&] { hp.realize(hout); }, opt.reps);
    row.loom_s = tm.first;
    row.halide_s = tm.second;
    row.work = 2.0 * N * double(N) * N;
    row.flops = true;
    gemm::reference(a.data(), b.data(), out_r.data(), N, N, N);
    row.diff_lh = max_abs_diff(out_l.data(), out_h.data(), out_l.number_of_elements());
    row.diff_ref = max_abs_diff(out_l.data(), out_r.data(), out_l.number_of_elements());
    row.tol = 1e-3;
    return row;
}

// ---------------------------------------------------------------------------
// Row softmax.

Row bench_softmax(const Options &opt) {
    const int R = opt.quick ? 512 : 4096, C = 1024;
    const int RT = 8, V = 16;
    Row row{"softmax", std::to_string(R) + "x" + std::to_string(C)};
    loom::Buffer<float> in = random_buffer({R, C}, -8, 8);
    loom::Buffer<float> out_l({R, C}), out_h({R, C}), out_r({R, C});

    softmax::Softmax app;
    loom::Schedule sch;
    app.schedule_cpu(sch, RT, V);
    app.input.set(in);
    loom::CompiledPipeline lk = compile_loom(app.out, sch, "softmax", opt, &row.loom_compile_s);

    HL::ImageParam hin(HL::Float(32), 2, "input");
    HL::Var r("r"), c("c"), ro("ro"), ri("ri");
    HL::RDom k(0, hin.dim(0).extent(), "k");
    // The same algorithm as softmax::Softmax: one division per row.
    HL::Func row_max("row_max"), e("e"), row_sum("row_sum"), inv_sum("inv_sum"), out("out");
    row_max(r) = -std::numeric_limits<float>::infinity();
    row_max(r) = HL::max(row_max(r), hin(k, r));
    e(c, r) = HL::exp(hin(c, r) - row_max(r));
    row_sum(r) = 0.0f;
    row_sum(r) += e(k, r);
    inv_sum(r) = 1.0f / row_sum(r);
    out(c, r) = e(c, r) * inv_sum(r);
    out.split(r, ro, ri, RT, HL::TailStrategy::GuardWithIf)
        .parallel(ro)
        .vectorize(c, V, HL::TailStrategy::GuardWithIf);
    row_max.compute_at(out, ri);
    e.compute_at(out, ri).vectorize(c, V, HL::TailStrategy::GuardWithIf);
    row_sum.compute_at(out, ri);
    inv_sum.compute_at(out, ri);
    HL::Pipeline hp(out);
    compile_halide(hp, "softmax", opt, &row.halide_compile_s);
    hin.set(halide_view(in));
    HL::Buffer<float> hout = halide_view(out_h);

    auto tm = median_times([&] { lk.realize({out_l}); }, [&] { hp.realize(hout); }, opt.reps);
    row.loom_s = tm.first;
    row.halide_s = tm.second;
    row.work = 4.0 * 2 * R * double(C);
    softmax::reference(in.data(), out_r.data(), R, C);
    row.diff_lh = max_abs_diff(out_l.data(), out_h.data(), out_l.number_of_elements());
    row.diff_ref = max_abs_diff(out_l.data(), out_r.data(), out_l.number_of_elements());
    row.tol = 1e-5;
    return row;
}

// ---------------------------------------------------------------------------
// LayerNorm.

/** Loom's two-pass schedule, or with `one_pass` its statistics in one pass
 * over each row (the variance rolled with the sum, about the running mean:
 * LayerNorm::schedule_cpu_one_pass), against Halide's two-pass schedule. */
Row bench_layernorm_schedule(const Options &opt, bool one_pass) {
    const int R = opt.quick ? 512 : 4096, C = 1024;
    const int RT = 8, V = 16;
    const float eps = 1e-5f;
    Row row{one_pass ? "ln 1-pass" : "layernorm", std::to_string(R) + "x" + std::to_string(C)};
    row.beside = one_pass;
    loom::Buffer<float> in = random_buffer({R, C}, -4, 6);
    loom::Buffer<float> gamma = random_buffer({C}, 0.5, 1.5), beta = random_buffer({C}, -1, 1);
    loom::Buffer<float> out_l({R, C}), out_h({R, C}), out_r({R, C});

    layernorm::LayerNorm app;
    loom::Schedule sch;
    if (one_pass) {
        app.schedule_cpu_one_pass(sch, RT, V);
    } else {
        app.schedule_cpu(sch, RT, V);
    }
    app.input.set(in);
    app.gamma.set(gamma);
    app.beta.set(beta);
    app.eps.set(eps);
    loom::CompiledPipeline lk = compile_loom(app.out, sch, "layernorm", opt, &row.loom_compile_s);

    HL::ImageParam hin(HL::Float(32), 2, "input"), hg(HL::Float(32), 1, "gamma"),
        hbeta(HL::Float(32), 1, "beta");
    HL::Param<float> heps("eps");
    HL::Var r("r"), c("c"), ro("ro"), ri("ri");
    HL::RDom k(0, hin.dim(0).extent(), "k");
    HL::Func sum_x("sum_x"), mean("mean"), sum_sq("sum_sq"), inv_std("inv_std"), out("out");
    HL::Expr n = HL::cast<float>(hin.dim(0).extent());
    sum_x(r) = 0.0f;
    sum_x(r) += hin(k, r);
    mean(r) = sum_x(r) / n;
    sum_sq(r) = 0.0f;
    HL::Expr d = hin(k, r) - mean(r);
    sum_sq(r) += d * d;
    inv_std(r) = 1.0f / HL::sqrt(sum_sq(r) / n + heps);
    out(c, r) = (hin(c, r) - mean(r)) * inv_std(r) * hg(c) + hbeta(c);
    out.split(r, ro, ri, RT, HL::TailStrategy::GuardWithIf)
        .parallel(ro)
        .vectorize(c, V, HL::TailStrategy::GuardWithIf);
    sum_x.compute_at(out, ri);
    mean.compute_at(out, ri);
    sum_sq.compute_at(out, ri);
    inv_std.compute_at(out, ri);
    HL::Pipeline hp(out);
    compile_halide(hp, "layernorm", opt, &row.halide_compile_s);
    hin.set(halide_view(in));
    hg.set(halide_view(gamma));
    hbeta.set(halide_view(beta));
    heps.set(eps);
    HL::Buffer<float> hout = halide_view(out_h);

    auto tm = median_times([&] { lk.realize({out_l}); }, [&] { hp.realize(hout); }, opt.reps);
    row.loom_s = tm.first;
    row.halide_s = tm.second;
    row.work = 4.0 * 2 * R * double(C);
    layernorm::reference(in.data(), gamma.data(), beta.data(), eps, out_r.data(), R, C);
    row.diff_lh = max_abs_diff(out_l.data(), out_h.data(), out_l.number_of_elements());
    row.diff_ref = max_abs_diff(out_l.data(), out_r.data(), out_l.number_of_elements());
    row.tol = 1e-4;
    return row;
}

Row bench_layernorm(const Options &opt) { return bench_layernorm_schedule(opt, false); }
Row bench_layernorm_one_pass(const Options &opt) { return bench_layernorm_schedule(opt, true); }

// ---------------------------------------------------------------------------
// Plain attention, float32.

void attention_reference(const float *q, const float *k, const float *v, float scale, float *out,
                         int B, int H, int S, int D) {
    std::vector<double> s(S);
    for (int bh = 0; bh < B * H; bh++) {
        const float *qb = q + size_t(bh) * S * D, *kb = k + size_t(bh) * S * D,
                    *vb = v + size_t(bh) * S * D;
        float *ob = out + size_t(bh) * S * D;
        for (int i = 0; i < S; i++) {
            double m = -INFINITY;
            for (int j = 0; j < S; j++) {
                double acc = 0;
                for (int e = 0; e < D; e++) acc += double(qb[i * D + e]) * kb[j * D + e];
                s[j] = acc * scale;
                m = std::max(m, s[j]);
            }
            double l = 0;
            for (int j = 0; j < S; j++) l += (s[j] = std::exp(s[j] - m));
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int j = 0; j < S; j++) acc += s[j] * vb[j * D + d];
                ob[i * D + d] = static_cast<float>(acc / l);
            }
        }
    }
}

Row bench_attention(const Options &opt) {
    const int B = 1, H = opt.quick ? 2 : 8, S = opt.quick ? 256 : 512, D = 64;
    const int QB = 16, V = 16;
    const float scale = 1.0f / std::sqrt(float(D));
    Row row{"attention", std::to_string(B) + "x" + std::to_string(H) + "x" + std::to_string(S) +
                             "x" + std::to_string(D)};
    loom::Buffer<float> q = random_buffer({B, H, S, D}, -1, 1),
                        k = random_buffer({B, H, S, D}, -1, 1),
                        v = random_buffer({B, H, S, D}, -1, 1);
    loom::Buffer<float> out_l({B, H, S, D}), out_h({B, H, S, D}), out_r({B, H, S, D});

    attention::Attention app(loom::Float(32));
    loom::Schedule sch = app.cpu_schedule(QB, V);
    app.q.set(q);
    app.k.set(k);
    app.v.set(v);
    app.scale.set(scale);
    loom::CompiledPipeline lk = compile_loom(app.out, sch, "attention", opt, &row.loom_compile_s);

    // Loom s(b, h, i, j) is Halide s(j, i, h, b), and so on.
    HL::ImageParam hq(HL::Float(32), 4, "q"), hk(HL::Float(32), 4, "k"), hv(HL::Float(32), 4, "v");
    HL::Param<float> hscale("scale");
    HL::Var b("b"), h("h"), i("i"), j("j"), d("d"), io("io"), ii("ii"), t("t");
    HL::RDom r(0, hk.dim(1).extent(), "r"), e(0, hq.dim(0).extent(), "e");
    HL::Func s("s"), m("m"), p("p"), l("l"), o("o"), out("out");
    s(j, i, h, b) = HL::sum(hq(e, i, h, b) * hk(e, j, h, b)) * hscale;
    m(i, h, b) = HL::maximum(s(r, i, h, b));
    p(j, i, h, b) = HL::exp(s(j, i, h, b) - m(i, h, b));
    l(i, h, b) = HL::sum(p(r, i, h, b));
    o(d, i, h, b) = HL::sum(p(r, i, h, b) * hv(d, r, h, b));
    out(d, i, h, b) = o(d, i, h, b) / l(i, h, b);
    out.split(i, io, ii, QB, HL::TailStrategy::GuardWithIf)
        .fuse(io, h, t)
        .parallel(t)
        .vectorize(d, V, HL::TailStrategy::GuardWithIf);
    s.compute_at(out, t).vectorize(j, V, HL::TailStrategy::GuardWithIf);
    m.compute_at(out, t);
    p.compute_at(out, t).vectorize(j, V, HL::TailStrategy::GuardWithIf);
    l.compute_at(out, t);
    o.compute_at(out, t).vectorize(d, V, HL::TailStrategy::GuardWithIf);
    HL::Pipeline hp(out);
    compile_halide(hp, "attention", opt, &row.halide_compile_s);
    hq.set(halide_view(q));
    hk.set(halide_view(k));
    hv.set(halide_view(v));
    hscale.set(scale);
    HL::Buffer<float> hout = halide_view(out_h);

    auto tm = median_times([&] { lk.realize({out_l}); }, [&] { hp.realize(hout); }, opt.reps);
    row.loom_s = tm.first;
    row.halide_s = tm.second;
    row.work = 4.0 * B * H * double(S) * S * D;
    row.flops = true;
    attention_reference(q.data(), k.data(), v.data(), scale, out_r.data(), B, H, S, D);
    row.diff_lh = max_abs_diff(out_l.data(), out_h.data(), out_l.number_of_elements());
    row.diff_ref = max_abs_diff(out_l.data(), out_r.data(), out_l.number_of_elements());
    row.tol = 1e-4;
    return row;
}

// ---------------------------------------------------------------------------
// Row argmax (greedy decoding's), the last index of each row's largest value:
// Loom vectorizes the update's RVar itself, each lane keeping its own point
// (VectorizePointReductions); Halide 14 needs rfactor over the lanes, and its
// associativity prover takes the index's select in the form that keeps the
// old point only while it is strictly larger, so ties go to the last point
// within a lane on both sides (the inputs have no NaN, for which the two
// forms differ). Halide then folds its lanes in lane order, not in the
// order of their points, so among tied maxima across lanes it may keep
// another one than the serial loop: its |L-H| compares the values at the
// two indices (both must be a row's max), and Loom's index is checked
// against the serial loop's exactly. Each row holds tied maxima.

Row bench_argmax(const Options &opt) {
    const int R = opt.quick ? 64 : 256, C = opt.quick ? 16384 : 65536;
    const int V = 16;
    Row row{"argmax", std::to_string(R) + "x" + std::to_string(C)};
    loom::Buffer<float> in = random_buffer({R, C}, 0, 1);
    // Ties: a few values repeat the row's largest.
    for (int y = 0; y < R; y++) {
        for (int x = y % 7; x < C; x += C / 3) in(y, x) = 2.0f;
    }
    loom::Buffer<int32_t> out_l({R}), out_h({R});

    loom::BufferParam lin(loom::Float(32), 2, "input");
    loom::Var r("r");
    loom::RDom k(0, lin.dim(1).extent(), "k");
    loom::Func top("top"), out("out");
    top(r) = loom::Tuple(loom::type_min(loom::Float(32)), 0);
    loom::Expr v = lin(r, k), takes = v >= top(r)[0];
    top(r) = loom::Tuple(loom::select(takes, v, top(r)[0]), loom::select(takes, k, top(r)[1]));
    out(r) = top(r)[1];
    loom::Schedule sch;
    sch[out].parallel(r);
    sch[top].compute_at(out, r);
    sch[top].update().vectorize(k, V);
    lin.set(in);
    loom::CompiledPipeline lk = compile_loom(out, sch, "argmax", opt, &row.loom_compile_s);

    HL::ImageParam hin(HL::Float(32), 2, "input");
    HL::Var hr("r"), u("u");
    HL::RDom hk(0, hin.dim(0).extent(), "k");
    HL::Func htop("top"), hout_f("out");
    htop(hr) = HL::Tuple(-std::numeric_limits<float>::infinity(), 0);
    HL::Expr hv = hin(hk, hr);
    htop(hr) = HL::Tuple(HL::max(htop(hr)[0], hv), HL::select(hv < htop(hr)[0], htop(hr)[1], hk));
    hout_f(hr) = htop(hr)[1];
    HL::RVar ko("ko"), ki("ki");
    HL::Func lanes =
        htop.update().split(hk, ko, ki, V, HL::TailStrategy::GuardWithIf).rfactor(ki, u);
    lanes.compute_at(htop, hr).vectorize(u).update().vectorize(u);
    htop.compute_at(hout_f, hr);
    hout_f.parallel(hr);
    HL::Pipeline hp(hout_f);
    compile_halide(hp, "argmax", opt, &row.halide_compile_s);
    hin.set(halide_view(in));
    HL::Buffer<int32_t> hout(out_h.data(), R);

    auto tm = median_times([&] { lk.realize({out_l}); }, [&] { hp.realize(hout); }, opt.reps);
    row.loom_s = tm.first;
    row.halide_s = tm.second;
    row.work = 4.0 * R * double(C);
    std::vector<float> loom_value(R), halide_value(R), loom_index(R), reference(R);
    for (int y = 0; y < R; y++) {
        int best = 0;
        for (int x = 1; x < C; x++) {
            if (in(y, x) >= in(y, best)) best = x;
        }
        const bool in_range = out_l(y) >= 0 && out_l(y) < C && out_h(y) >= 0 && out_h(y) < C;
        loom_value[y] = in_range ? in(y, out_l(y)) : NAN;
        halide_value[y] = in_range ? in(y, out_h(y)) : NAN;
        loom_index[y] = float(out_l(y));
        reference[y] = float(best);
    }
    row.diff_lh = max_abs_diff(loom_value.data(), halide_value.data(), R);
    row.diff_ref = max_abs_diff(loom_index.data(), reference.data(), R);
    row.tol = 0;
    return row;
}

/** One throwaway compile in each compiler, so that one-time initialization
 * (LLVM target registration, the JIT's setup) is not charged to the first
 * kernel. */
void warm_up_compilers() {
    loom::BufferParam in(loom::Float(32), 1, "in");
    loom::Var x("x");
    loom::Func f("f");
    f(x) = in(x)*2.0f;
    loom::Pipeline(f).compile();
    HL::ImageParam hin(HL::Float(32), 1, "in");
    HL::Var hx("x");
    HL::Func g("g");
    g(hx) = hin(hx) * 2.0f;
    g.compile_jit();
}

}  // namespace

int main(int argc, char **argv) {
    Options opt;
    for (int a = 1; a < argc; a++) {
        std::string s = argv[a];
        auto next = [&]() -> std::string {
            if (a + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", s.c_str());
                std::exit(2);
            }
            return argv[++a];
        };
        if (s == "--threads") opt.threads = std::atoi(next().c_str());
        else if (s == "--reps") opt.reps = std::max(1, std::atoi(next().c_str()));
        else if (s == "--quick") opt.quick = true;
        else if (s == "--only") opt.only = next();
        else if (s == "--dump") opt.dump_dir = next();
        else {
            std::fprintf(stderr,
                         "usage: %s [--threads N] [--reps N] [--quick] [--only KERNEL] [--dump "
                         "DIR]\n",
                         argv[0]);
            return 2;
        }
    }
    if (!opt.dump_dir.empty() && !loom_bench::make_dump_dir(opt.dump_dir)) return 2;
    if (opt.quick) opt.reps = std::min(opt.reps, 3);
    // Both thread pools read these when they start, which is at the first
    // parallel run: set them before anything runs.
    std::string nt = std::to_string(opt.threads);
    setenv("LOOM_NUM_THREADS", nt.c_str(), 1);
    setenv("HL_NUM_THREADS", nt.c_str(), 1);

    std::printf(
        "Loom vs Halide %s, CPU, %d threads, median of %d runs\n"
        "Halide target %s\nLoom target   %s\n",
        LOOM_HALIDE_VERSION, opt.threads, opt.reps,
        HL::get_jit_target_from_environment().to_string().c_str(),
        loom_target().to_string().c_str());
    std::fflush(stdout);

    struct Entry {
        const char *name;
        Row (*run)(const Options &);
    };
    const Entry entries[] = {{"blur", bench_blur},
                             {"gemm", bench_gemm},
                             {"softmax", bench_softmax},
                             {"layernorm", bench_layernorm},
                             {"layernorm_one_pass", bench_layernorm_one_pass},
                             {"attention", bench_attention},
                             {"argmax", bench_argmax}};
    std::vector<Row> rows;
    bool ok = true;
    try {
        warm_up_compilers();
        for (const Entry &e : entries) {
            if (!opt.only.empty() && opt.only != e.name) continue;
            rows.push_back(e.run(opt));
            const Row &r = rows.back();
            if (!(r.diff_lh <= r.tol) || !(r.diff_ref <= r.tol)) {
                std::printf(
                    "MISMATCH in %s: max |loom - halide| = %.3g, max |loom - ref| = %.3g "
                    "(tolerance %.1g)\n",
                    r.kernel.c_str(), r.diff_lh, r.diff_ref, r.tol);
                ok = false;
            }
        }
    } catch (const loom::Error &e) {
        std::fprintf(stderr, "Loom error: %s\n", e.what());
        return 1;
    } catch (const HL::Error &e) {
        std::fprintf(stderr, "Halide error: %s\n", e.what());
        return 1;
    }

    std::printf("\n%-10s %-14s %9s %9s %7s %12s %12s %8s %8s %9s\n", "kernel", "size", "Loom ms",
                "Halide ms", "L/H", "Loom rate", "Halide rate", "Loom cs", "Hal. cs", "|L-H|");
    double log_sum = 0;
    int in_geomean = 0;
    for (const Row &r : rows) {
        double ratio = r.loom_s / r.halide_s;
        if (!r.beside) {
            log_sum += std::log(ratio);
            in_geomean++;
        }
        const char *unit = r.flops ? "GFLOP/s" : "GB/s";
        char lr[32], hr[32];
        std::snprintf(lr, sizeof lr, "%.1f %s", r.work / r.loom_s * 1e-9, unit);
        std::snprintf(hr, sizeof hr, "%.1f %s", r.work / r.halide_s * 1e-9, unit);
        std::printf("%-10s %-14s %9.3f %9.3f %7.3f %12s %12s %8.3f %8.3f %9.2g\n", r.kernel.c_str(),
                    r.size.c_str(), r.loom_s * 1e3, r.halide_s * 1e3, ratio, lr, hr,
                    r.loom_compile_s, r.halide_compile_s, r.diff_lh);
    }
    if (in_geomean > 0) {
        std::printf(
            "geomean Loom/Halide run-time ratio: %.3f (ln 1-pass, LayerNorm's statistics "
            "in one pass, which Halide's schedule cannot express, left out)\n",
            std::exp(log_sum / in_geomean));
    }
    std::printf("(cs: JIT compile seconds; rates count bytes read + written once, or flops)\n");
    return ok ? 0 : 1;
}
