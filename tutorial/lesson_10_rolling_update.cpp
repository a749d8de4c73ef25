// Lesson 10: from softmax to FlashAttention with rolling_update.
//
// Attention is a chain of reductions over the keys: a row max m, a sum of
// exponentials l, and a weighted sum o of the values, where l and o read the
// FINAL value of m. Written plainly, that is three passes over the keys.
// FlashAttention computes all three in ONE pass: it keeps running values and
// rescales l and o whenever the running max grows.
//
// In Loom you keep writing the plain chain. The schedule directive
// rolling_update(o, r) asks for the one-pass version; the compiler finds the
// chain, DERIVES the rescaling (the "repair"), proves it correct, and
// refuses chains where no repair exists. This lesson walks from a plain
// softmax to FlashAttention's loop structure.
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <loom/loom.h>

using namespace loom;

namespace {

int failures = 0;

/** Compares a result with the reference interpreter's and with a plain C++
 * computation, and reports the largest difference. */
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
    // Six queries q(i, e) attend to fifty keys k(j, e) (vectors of eight),
    // averaging the values v(j, d) (vectors of four). 50 keys are not a
    // multiple of the tile size used later, on purpose.
    const int N = 6, L = 50, E = 8, D = 4;
    BufferParam q(Float(32), 2, "q"), k(Float(32), 2, "k"), v(Float(32), 2, "v");
    Var i("i"), j("j"), d("d");
    RDom e(0, q.dim(1).extent(), "e");
    RDom r(0, k.dim(0).extent(), "r");  // over the keys

    // The scores, and the row softmax written the textbook way: subtract the
    // row max (so that exp cannot overflow), exponentiate, normalize.
    Func s("s"), m("m"), p("p"), l("l"), softmax("softmax");
    s(i, j) = sum(q(i, e) * k(j, e)) * 0.5f;
    m(i) = maximum(s(i, r));
    p(i, j) = exp(s(i, j) - m(i));
    l(i) = sum(p(i, r));
    softmax(i, j) = p(i, j) / l(i);

    // Attention's output is the softmax-weighted average of the values.
    // Dividing by l once at the end, instead of once per term, is the usual
    // arrangement: o sums the unnormalized weights p.
    Func o("o"), out("out");
    o(i, d) = sum(p(i, r) * v(r, d));
    out(i, d) = o(i, d) / l(i);

    Buffer<float> Q({N, E}), K({L, E}), V({L, D});
    Q.fill([](const std::vector<int> &c) { return std::sin(1.3f * c[0] + 0.7f * c[1]); });
    K.fill([](const std::vector<int> &c) { return 2 * std::cos(0.9f * c[0] - 0.4f * c[1]); });
    V.fill([](const std::vector<int> &c) { return 0.1f * c[0] - c[1]; });
    q.set(Q);
    k.set(K);
    v.set(V);

    // The same in plain C++ (in double), for checking: the softmax weights
    // of row y over its first `seen` keys, and the weighted average.
    auto weights_of = [&](int y, int seen) {
        std::vector<double> w(seen);
        double mx = -INFINITY, total = 0;
        for (int x = 0; x < seen; x++) {
            w[x] = 0;
            for (int c = 0; c < E; c++) w[x] += double(Q(y, c)) * K(x, c);
            w[x] *= 0.5;
            mx = std::max(mx, w[x]);
        }
        for (int x = 0; x < seen; x++) total += std::exp(w[x] - mx);
        for (int x = 0; x < seen; x++) w[x] = std::exp(w[x] - mx) / total;
        return w;
    };
    auto average_of = [&](const std::vector<double> &w) {
        std::vector<double> avg(D, 0.0);
        for (size_t x = 0; x < w.size(); x++) {
            for (int c = 0; c < D; c++) avg[c] += w[x] * V(int(x), c);
        }
        return avg;
    };
    std::vector<std::vector<double>> want_softmax, want_out;
    for (int y = 0; y < N; y++) {
        want_softmax.push_back(weights_of(y, L));
        want_out.push_back(average_of(want_softmax.back()));
    }

    // ---- 1. The plain chain with an ordinary schedule.
    // compute_root on each reduction gives the textbook three passes over
    // the keys per row: one for m, one for l, one for o. The scores are
    // stored whole: N x L floats.
    std::printf("1. softmax and attention, one pass per reduction\n");
    Buffer<float> sm(Pipeline(softmax).realize({N, L}));
    check("softmax", sm, Buffer<float>(interpret(softmax, {N, L})), want_softmax);

    Pipeline attention(out);
    Buffer<float> reference(interpret(out, {N, D}));
    Schedule plain;
    plain[s].compute_root();
    plain[m].compute_root();
    plain[l].compute_root();
    plain[o].compute_root();
    std::printf("%s", attention.print_loop_nest(plain).c_str());
    check("attention, plain", Buffer<float>(attention.realize({N, D}, plain)), reference, want_out);

    // ---- 2. One pass: rolling_update(o, r).
    // Fusing m, l and o into one loop over r means that at key j only the
    // RUNNING max m_j is known. Every term of o was added as
    //   g(m, c) = exp(s - m) * v
    // with whatever m was then. When the max moves from m to m', the partial
    // sum t must be repaired by some h(t, m, m'). Two properties make a
    // repair exact, and the compiler proves both before using it:
    //   (1) it fixes one term:      h(g(m, c), m, m') = g(m', c)
    //   (2) it distributes over +:  h(t1 + t2, m, m') = h(t1) + h(t2)
    // (1) says a term added against an old max becomes the term against the
    // new max; (2) says one h applied to a partial SUM does that for every
    // term in it at once. For softmax, h(t) = t * exp(m - m'):
    // exp(s - m) * exp(m - m') = exp(s - m'), and a product distributes over
    // a sum. The same repair keeps l right. The division out = o / l runs
    // after the loop, on the final values.
    std::printf("\n2. rolling_update(o, r): one pass, repaired at every key\n");
    Schedule one_pass;
    one_pass.rolling_update(o, r);
    one_pass[o].compute_root();  // s stays inline: the log shows its sum, sum$0
    CompiledPipeline fused = attention.compile(one_pass);
    print_log(fused);
    std::printf("%s", attention.print_loop_nest(one_pass).c_str());
    Buffer<float> fused_out({N, D});
    fused.realize({fused_out});
    check("attention, rolling_update", fused_out, reference, want_out);

    // The log names the derived repair; it is the FlashAttention rescaling.
    std::string log;
    for (const std::string &line : fused.compile_log()) log += line + "\n";
    if (log.find("h(t, m, m') = t * exp") == std::string::npos ||
        log.find("proved symbolically") == std::string::npos) {
        std::printf("expected the rescaling repair, proved symbolically\n");
        failures++;
    }

    // ---- 3. FlashAttention: tiles of keys, blocks of queries.
    // Split r into tiles of 16 keys. Per tile the compiler makes m_tile, the
    // running max after the tile (m's value, then the tile's scores); then
    // l_tile and o_tile, the running l and o after the tile: each starts
    // from the running value repaired once to the new max, and adds the
    // tile's terms taken against it, as FlashAttention-2 does. The step then
    // copies them back into m, l and o. p reads m, so inside the loop it
    // reads that running max: the log says so. The scores and probabilities
    // are computed per tile with compute_at(o, ro), so no Func is ever
    // stored over all the keys.
    //
    // Add blocks of queries, and this is FlashAttention's structure: for
    // each block of queries (io), loop over the key tiles (ro); per tile,
    // compute the block's scores against the tile (a small matrix product),
    // their max and exponentials, then rescale the block's running l and o
    // and accumulate the tile into them. reorder(ro, i) puts the queries of
    // the block inside the tile loop, so one tile of scores serves the block.
    std::printf("\n3. FlashAttention: blocks of 4 queries, tiles of 16 keys\n");
    Var io("io"), ii("ii");
    RVar ro("ro"), ri("ri");
    Schedule flash;
    flash[out].split(i, io, ii, 4);
    flash.rolling_update(o, r).split(r, ro, ri, 16).reorder(ro, i);
    flash[o].compute_at(out, io);
    flash[s].compute_at(o, ro);
    flash[p].compute_at(o, ro);
    CompiledPipeline tiled = attention.compile(flash);
    print_log(tiled);
    std::printf("%s", attention.print_loop_nest(flash).c_str());
    Buffer<float> tiled_out({N, D});
    tiled.realize({tiled_out});
    check("attention, FlashAttention tiles", tiled_out, reference, want_out);

    // The lowered statement starts with the same log, as comments. Inside
    // the tile loop, l_tile starts from l rescaled by exp(m - m_tile) (a
    // select skips the rescaling while the max has not moved, or m is still
    // -inf), the tile's exponentials are added to it only if m_tile is not
    // -inf (every score so far masked: there is nothing to add, and
    // exp(-inf + inf) would be NaN), one test per tile; then m and l take
    // the tile's values (o likewise).
    std::printf("\nfrom the lowered statement:\n");
    std::string stmt = attention.compile_to_lowered_stmt(flash);
    for (const std::string &line : tiled.compile_log()) {
        if (line.find("repair h(") != std::string::npos &&
            stmt.find("// " + line) == std::string::npos) {
            std::printf("the lowered statement does not start with the log\n");
            failures++;
        }
    }
    std::istringstream lines(stmt);
    int shown = 0;
    for (std::string line; std::getline(lines, line);) {
        size_t start = line.find_first_not_of(' ');
        if (start == std::string::npos) continue;
        bool l_tile = line.compare(start, 7, "l_tile[") == 0;
        bool test = line.find("if ((m_tile[") != std::string::npos;
        bool step =
            (line.compare(start, 2, "m[") == 0 && line.find("m_tile[") != std::string::npos) ||
            (line.compare(start, 2, "l[") == 0 && line.find("l_tile[") != std::string::npos);
        if (l_tile || test || step) {
            std::printf("  %s\n", line.c_str() + start);
            shown++;
        }
    }
    if (shown < 4) {
        std::printf("expected l_tile's start, its test and sum, and the steps of m and l\n");
        failures++;
    }

    // ---- 3b. A mask: tiles with nothing in them are skipped.
    // Causal attention lets query i see only the keys up to its position;
    // the others get the score -inf, the identity of max, so exp(-inf - m)
    // adds 0 to l and o. Here query i sits at position 8 i. With tiles of 16
    // keys and blocks of 2 queries, the first block sees only tile 0: the
    // other tiles change nothing for it. The compiler finds the mask in the
    // max's terms, checks that every reduction of the chain adds its
    // identity outside it, and then tests once per tile whether the mask can
    // hold for some key of the tile and some query of the block; where it
    // cannot, the whole tile (scores, probabilities, repairs) is skipped.
    std::printf("\n3b. a causal mask: empty tiles are skipped\n");
    Func cs("cs"), cm("cm"), cp("cp"), cl("cl"), co("co"), cout("cout");
    cs(i, j) = select(j <= i * 8, s(i, j), -std::numeric_limits<float>::infinity());
    cm(i) = maximum(cs(i, r));
    cp(i, j) = exp(cs(i, j) - cm(i));
    cl(i) = sum(cp(i, r));
    co(i, d) = sum(cp(i, r) * v(r, d));
    cout(i, d) = co(i, d) / cl(i);
    Schedule causal;
    causal[cout].split(i, io, ii, 2);
    causal.rolling_update(co, r).split(r, ro, ri, 16).reorder(ro, i);
    causal[co].compute_at(cout, io);
    causal[cs].compute_at(co, ro);
    causal[cp].compute_at(co, ro);
    Pipeline causal_attention(cout);
    CompiledPipeline masked = causal_attention.compile(causal);
    for (const std::string &line : masked.compile_log()) {
        if (line.find("skipped") != std::string::npos) std::printf("  log: %s\n", line.c_str());
    }
    std::vector<std::vector<double>> want_causal;
    for (int y = 0; y < N; y++) {
        want_causal.push_back(average_of(weights_of(y, std::min(L, 8 * y + 1))));  // keys 0 .. 8 y
    }
    Buffer<float> causal_out({N, D});
    masked.realize({causal_out});
    check("causal attention, empty tiles skipped", causal_out,
          Buffer<float>(interpret(cout, {N, D})), want_causal);
    // In the lowered statement the test sits right inside the tile loop:
    // the tile's first key must not be past the block's last query.
    std::istringstream causal_lines(causal_attention.compile_to_lowered_stmt(causal));
    bool in_tile_loop = false;
    for (std::string line; std::getline(causal_lines, line);) {
        if (line.find("for (co.s1.ro") != std::string::npos) in_tile_loop = true;
        if (in_tile_loop && line.find("if (") != std::string::npos) {
            std::printf("  %s\n", line.c_str() + line.find_first_not_of(' '));
            break;
        }
    }

    // ---- 4. A chain the compiler refuses.
    // Not every dependent reduction can be repaired. Here each term is
    // sin(s - m): when m moves, how much a term changes depends on s itself,
    // so no h(t, m, m') that sees only the partial sum t can fix it. The
    // compiler says which reduction, which producer and why, when compiling.
    std::printf("\n4. a chain with no repair\n");
    Func wavy("wavy"), wavy_out("wavy_out");
    wavy(i) = sum(sin(s(i, r) - m(i)));
    wavy_out(i) = wavy(i) * 2.0f;
    Schedule refused;
    refused.rolling_update(wavy, r);
    try {
        Pipeline(wavy_out).compile(refused);
        std::printf("expected a CompileError\n");
        failures++;
    } catch (const CompileError &err) {
        std::printf("  caught: %s\n", err.what());
    }
    // Without the directive it is an ordinary two-pass computation.
    Buffer<float> wavy_plain(Pipeline(wavy_out).realize({N}));
    Buffer<float> wavy_ref(interpret(wavy_out, {N}));
    for (int y = 0; y < N; y++) {
        if (std::abs(wavy_plain(y) - wavy_ref(y)) > 1e-4f) {
            std::printf("wavy(%d) is %f, expected %f\n", y, wavy_plain(y), wavy_ref(y));
            failures++;
        }
    }

    if (failures) return 1;
    std::printf("Lesson 10 passed.\n");
    return 0;
}
