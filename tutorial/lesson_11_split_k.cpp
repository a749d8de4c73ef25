// Lesson 11: FlashDecoding with split_k.
//
// When a language model generates text, each step attends ONE new query to
// every key so far: a long reduction with almost nothing around it to run
// in parallel. Lesson 10's one pass over the keys is sequential, so a decode
// step would use one core per head. FlashDecoding splits the keys into
// chunks, runs the softmax chain on every chunk in parallel, and merges the
// chunks' results.
//
// split_k(o, r, K, chunk) does this for the chain that o depends on. The
// merge is not written by hand: it uses the same repair that the compiler
// derived for rolling_update.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <loom/loom.h>

// Reusable schedule templates, and the attention variants they schedule.
#include "../apps/attention/variants.h"
#include "../schedules/flash_attention.h"

using namespace loom;

namespace {

int failures = 0;

/** Compares a [heads, dims] result with the reference interpreter's and
 * with a plain C++ computation. */
void check(const char *what, const Buffer<float> &got, const Buffer<float> &interpreted,
           const std::vector<std::vector<double>> &expected) {
    double worst = 0;
    for (int y = 0; y < got.extent(0); y++) {
        for (int x = 0; x < got.extent(1); x++) {
            double g = got(y, x);
            double tol = 1e-5 * (1 + std::abs(expected[y][x]));
            if (!(std::abs(g - interpreted(y, x)) <= tol && std::abs(g - expected[y][x]) <= tol)) {
                std::printf("  %s: (%d, %d) is %f; the interpreter says %f, C++ says %f\n", what, y,
                            x, g, interpreted(y, x), expected[y][x]);
                failures++;
                return;
            }
            worst = std::max(worst, std::abs(g - expected[y][x]));
        }
    }
    std::printf("  %s matches (largest difference from C++: %.1e)\n", what, worst);
}

void print_log(const CompiledPipeline &compiled) {
    for (const std::string &line : compiled.compile_log()) std::printf("  log: %s\n", line.c_str());
}

}  // namespace

int main() {
    // A decode step: one query per head q(h, e), H heads, each attending to
    // L = 1000 keys k(h, j, e) and values v(h, j, d). The algorithm is the
    // plain chain of lesson 10.
    const int H = 4, L = 1000, E = 16;
    BufferParam q(Float(32), 2, "q"), k(Float(32), 3, "k"), v(Float(32), 3, "v");
    Var h("h"), j("j"), d("d");
    RDom e(0, q.dim(1).extent(), "e");
    RDom r(0, k.dim(1).extent(), "r");  // over the keys
    Func s("s"), m("m"), p("p"), l("l"), o("o"), out("out");
    s(h, j) = sum(q(h, e) * k(h, j, e)) * 0.25f;
    m(h) = maximum(s(h, r));
    p(h, j) = exp(s(h, j) - m(h));
    l(h) = sum(p(h, r));
    o(h, d) = sum(p(h, r) * v(h, r, d));
    out(h, d) = o(h, d) / l(h);

    Buffer<float> Q({H, E}), K({H, L, E}), V({H, L, E});
    Q.fill([](const std::vector<int> &c) { return 2 * std::sin(1.3f * c[0] + 0.7f * c[1]); });
    K.fill([](const std::vector<int> &c) {
        return 2 * std::cos(0.9f * c[0] - 0.4f * c[1] + 0.3f * c[2]);
    });
    V.fill([](const std::vector<int> &c) { return std::sin(0.1f * c[1] - c[2] + c[0]); });
    q.set(Q);
    k.set(K);
    v.set(V);

    // The plain C++ version, in double: the scores, then the three passes.
    std::vector<std::vector<double>> score(H, std::vector<double>(L, 0.0));
    std::vector<std::vector<double>> want(H, std::vector<double>(E, 0.0));
    for (int y = 0; y < H; y++) {
        double mx = -INFINITY, total = 0;
        for (int x = 0; x < L; x++) {
            for (int c = 0; c < E; c++) score[y][x] += double(Q(y, c)) * K(y, x, c);
            score[y][x] *= 0.25;
            mx = std::max(mx, score[y][x]);
        }
        for (int x = 0; x < L; x++) total += std::exp(score[y][x] - mx);
        for (int x = 0; x < L; x++) {
            for (int c = 0; c < E; c++)
                want[y][c] += std::exp(score[y][x] - mx) / total * V(y, x, c);
        }
    }

    Pipeline attention(out);
    Buffer<float> reference(interpret(out, {H, E}));

    // ---- 1. The ordinary schedule: heads in parallel, and that is all the
    // parallelism there is (4 tasks), each three passes over 1000 keys.
    std::printf("1. heads in parallel\n");
    Schedule plain;
    plain[out].parallel(h);
    plain[m].compute_at(out, h);
    plain[l].compute_at(out, h);
    plain[o].compute_at(out, h);
    check("plain", Buffer<float>(attention.realize({H, E}, plain)), reference, want);

    // ---- 2. split_k(o, r, 8, chunk).
    // The keys are cut into 8 chunks of ceil(L / 8). For each head and chunk
    // k the chain runs on its own keys only, giving a chunk max m_k, sum l_k
    // and weighted sum o_k. These partials live in Funcs the compiler makes,
    // m_partial, l_partial and o_partial, with an extra dimension `chunk`
    // (their outermost, so each chunk's partials are contiguous in memory).
    // split_k returns the stage of o_partial; the others follow its
    // placement. Here: computed first, with the chunks as the outer,
    // parallel loop: 8 chunks x 4 heads.
    //
    // Then a combine stage merges the chunks, for every reduction X of the
    // chain, as X = ⊕_k h(X_k, m_k, m):
    //   m = max_k m_k                                  (m needs no repair)
    //   l = sum_k l_k * exp(m_k - m)                   (h(t, m, m') = t * exp(m - m'))
    //   o = sum_k o_k * exp(m_k - m)
    // This is sound for the same two reasons as a rolling update. Property
    // (1) turns each term computed against its chunk's max m_k into the term
    // against the global max m; property (2) lets ONE h per chunk do that for
    // the chunk's whole partial sum. (Halide's rfactor splits one
    // associative reduction; it cannot split a chain whose terms read
    // another reduction's result.)
    std::printf("\n2. split_k(o, r, 8, chunk): chunks in parallel, then a combine\n");
    Var chunk("chunk");
    Schedule decode;
    Stage partial = decode.split_k(o, r, 8, chunk);
    partial.compute_root().parallel(chunk);
    decode[o].compute_root();  // o's and l's own schedules place their combines
    decode[l].compute_root();
    CompiledPipeline split = attention.compile(decode);
    print_log(split);
    std::printf("%s", attention.print_loop_nest(decode).c_str());
    Buffer<float> split_out({H, E});
    split.realize({split_out});
    check("split_k", split_out, reference, want);

    // The combine in plain C++, from per-chunk partials, to see the formula
    // at work: it must agree with the three-pass result.
    const int chunks = 8, chunk_size = (L + chunks - 1) / chunks;
    for (int y = 0; y < H; y++) {
        std::vector<double> mk(chunks, -INFINITY), lk(chunks, 0.0);
        std::vector<std::vector<double>> ok(chunks, std::vector<double>(E, 0.0));
        for (int c = 0; c < chunks; c++) {
            int begin = c * chunk_size, end = std::min(L, begin + chunk_size);
            for (int x = begin; x < end; x++) mk[c] = std::max(mk[c], score[y][x]);
            for (int x = begin; x < end; x++) {
                double w = std::exp(score[y][x] - mk[c]);
                lk[c] += w;
                for (int z = 0; z < E; z++) ok[c][z] += w * V(y, x, z);
            }
        }
        double mx = -INFINITY, total = 0;
        for (int c = 0; c < chunks; c++) mx = std::max(mx, mk[c]);
        for (int c = 0; c < chunks; c++) total += lk[c] * std::exp(mk[c] - mx);
        for (int z = 0; z < E; z++) {
            double acc = 0;
            for (int c = 0; c < chunks; c++) acc += ok[c][z] * std::exp(mk[c] - mx);
            if (std::abs(acc / total - want[y][z]) > 1e-9) {
                std::printf("the combine formula disagrees at (%d, %d)\n", y, z);
                failures++;
            }
        }
    }

    // ---- 3. Tiles within each chunk.
    // The partial stage is a rolling update of its own, so it can be split
    // into tiles like lesson 10's: each chunk is then ONE pass over its keys
    // in tiles of 64, with the scores and probabilities computed per tile.
    std::printf("\n3. split_k with tiles of 64 keys in each chunk\n");
    RVar ro("ro"), ri("ri");
    Schedule tiled;
    Stage tiled_partial = tiled.split_k(o, r, 8, chunk);
    tiled_partial.compute_root().parallel(chunk).split(r, ro, ri, 64);
    tiled[s].compute_at(tiled_partial, ro);
    tiled[p].compute_at(tiled_partial, ro);
    tiled[o].compute_root();
    tiled[l].compute_root();
    CompiledPipeline tiled_split = attention.compile(tiled);
    print_log(tiled_split);
    Buffer<float> tiled_out({H, E});
    tiled_split.realize({tiled_out});
    check("split_k, tiled", tiled_out, reference, want);

    // ---- 4. The FlashDecoding template.
    // schedules/flash_attention.h packages this as flash_decoding(), for any
    // attention written as the chain s, m, p, l, o, out, such as the variants
    // in apps/attention/variants.h. Here: a sliding window of 100 keys at the
    // end of 1000, so most chunks see only masked keys (-inf scores). Such a
    // chunk has m_k = -inf and l_k = 0, and the combine skips it rather
    // than computing exp(-inf - m) * 0 or worse.
    std::printf("\n4. schedules::flash_decoding on a sliding-window variant\n");
    attention::AttentionVariant window(attention::Variant::SlidingWindow, Float(32));
    const int Hq = 2, Lk = 1000, hd = 16, span = 100;
    Buffer<float> wq({1, Hq, 1, hd}), wk({1, Hq, Lk, hd}), wv({1, Hq, Lk, hd});
    wq.fill([](const std::vector<int> &c) { return std::sin(1.3f * c[1] + 0.7f * c[3]); });
    wk.fill([](const std::vector<int> &c) { return std::cos(0.9f * c[1] - 0.4f * c[2] + c[3]); });
    wv.fill([](const std::vector<int> &c) { return std::sin(0.1f * c[2] - c[3] + c[1]); });
    window.q.set(wq);
    window.k.set(wk);
    window.v.set(wv);
    window.scale.set(0.25f);
    window.window.set(span);

    Schedule template_schedule;
    schedules::FlashDecodingOptions options;
    options.chunks = 8;
    options.key_tile = 32;
    schedules::flash_decoding(template_schedule,
                              {window.s, window.p, window.o, window.out, window.b, window.h,
                               window.i, window.j, window.d, window.r},
                              options);
    Pipeline decode_step(window.out);
    CompiledPipeline flash = decode_step.compile(template_schedule);
    print_log(flash);
    Buffer<float> flash_out({1, Hq, 1, hd});
    flash.realize({flash_out});

    // Check against the interpreter and the float64 reference of the variants.
    Buffer<float> flash_ref(interpret(window.out, {1, Hq, 1, hd}));
    std::vector<double> flash_want(Hq * hd);
    attention::VariantShape shape;
    shape.q_heads = shape.kv_heads = Hq;
    shape.seq_k = Lk;
    shape.head_dim = hd;
    attention::variant_reference(attention::Variant::SlidingWindow, wq.data(), wk.data(), wv.data(),
                                 0.25f, span, flash_want.data(), shape);
    Buffer<float> got2({Hq, hd}), interpreted2({Hq, hd});
    std::vector<std::vector<double>> want2(Hq, std::vector<double>(hd));
    for (int y = 0; y < Hq; y++) {
        for (int x = 0; x < hd; x++) {
            got2(y, x) = flash_out(0, y, 0, x);
            interpreted2(y, x) = flash_ref(0, y, 0, x);
            want2[y][x] = flash_want[y * hd + x];
        }
    }
    check("flash_decoding, sliding window", got2, interpreted2, want2);

    if (failures) return 1;
    std::printf("Lesson 11 passed.\n");
    return 0;
}
