// Differential fuzzer: random pipelines (stencils, reductions, update
// definitions, scans, several stages) under random legal schedules, compiled
// through the JIT and compared with the reference interpreter. Schedules
// may declare regions (bound, bound_extent); one the pipeline reads past
// must be refused at run time with the region it reads.
//
// Each case is a pure function of a seed. When a case fails, the fuzzer
// reduces it by dropping scheduling directives one at a time while it still
// fails, and prints the seed and the mask of directives kept: add that pair to
// kRegressions below to keep it as a regression test.
//
// Environment: LOOM_FUZZ_CASES (default 60) cases starting at LOOM_FUZZ_SEED
// (default: random), or LOOM_FUZZ_SECONDS to run for a time instead.
//
// Two more tests put the same pipelines under random GPU schedules: one
// compiles them to CUDA C++ and through NVRTC (default 40 cases), the other
// runs them on the stand-in CUDA driver, which runs kernels on the CPU
// (default 30 cases).
#include <gtest/gtest.h>

#include <cstring>

#include <chrono>
#include <functional>
#include <random>
#include <set>
#include <sstream>

#include "codegen/NVRTC.h"
#include "test_util.h"

using namespace loom;

namespace {

// A scheduling directive, recorded so that it can be dropped while reducing.
struct Directive {
    std::string text;
    std::function<void(Schedule &)> apply;
};

struct FuzzCase {
    std::vector<BufferParam> inputs;
    std::vector<Func> funcs;  // the last one is the output
    std::vector<Directive> directives;
    std::vector<int> sizes;
    std::string description;
    // Funcs whose update is a scan along x (f(y, k) reads f(y, k - 1)): its
    // loops are y and k, and only y may run in any order.
    std::set<std::string> scans;
    bool is_scan(const Func &f) const { return scans.count(f.name()) > 0; }
};

constexpr int kPad = 24;

const char *tail_name(TailStrategy t) {
    switch (t) {
    case TailStrategy::Auto: return "auto";
    case TailStrategy::GuardWithIf: return "guard";
    case TailStrategy::ShiftInwards: return "shift";
    case TailStrategy::RoundUp: return "roundup";
    }
    return "?";
}  // inputs cover [-kPad, size + kPad) in each dimension

Var vy("y"), vx("x");

// Builds a random pipeline and a random schedule for it from `seed`.
/** The name of a stage's innermost loop. */
std::string last_loop(Stage u) {
    std::string loops = u.dump();
    size_t open = loops.rfind('('), close = loops.rfind(')');
    return loops.substr(open + 1, close - open - 1);
}

/** Vectorizes the stage's innermost loop by `lanes` if it is an RVar (an
 * update over an RDom); an update without one is left alone. */
void vectorize_rvar(Stage u, int lanes) {
    std::string last = last_loop(u);
    if (last != "x" && last != "y") u.vectorize(RVar(last), lanes);
}

FuzzCase make_case(uint64_t seed) {
    std::mt19937_64 rng(seed);
    // Choices added to the generator later draw from a stream of their own,
    // so that the main stream, and with it most older seeds' cases, stays.
    std::mt19937_64 later(seed ^ 0x2545f4914f6cdd1dull);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    FuzzCase c;
    std::ostringstream desc;
    int n_inputs = 1 + pick(2);
    for (int i = 0; i < n_inputs; i++)
        c.inputs.emplace_back(Float(32), 2, "in" + std::to_string(i));

    // Something earlier in the pipeline to read: an input or a previous Func.
    auto source = [&](const Expr &y, const Expr &x) -> Expr {
        int n = static_cast<int>(c.funcs.size()) + n_inputs;
        int k = pick(n);
        if (k < n_inputs) return c.inputs[k](y, x);
        return c.funcs[k - n_inputs](y, x);
    };
    auto prev = [&](const Expr &y, const Expr &x) -> Expr {
        if (c.funcs.empty() || pick(3) == 0) return source(y, x);
        return c.funcs.back()(y, x);
    };

    int n_stages = 1 + pick(4);
    for (int s = 0; s < n_stages; s++) {
        Func f("f" + std::to_string(s));
        int kind = pick(5);
        int dy = pick(3), dx = pick(3);
        switch (kind) {
        case 0:  // pointwise / stencil
            f(vy, vx) = prev(vy, vx) + prev(vy + dy, vx + dx) * 0.5f;
            desc << f.name() << ": stencil(+" << dy << ",+" << dx << ")\n";
            break;
        case 1: {  // inline reduction over a small window
            RDom r(0, 2 + pick(3), "r" + std::to_string(s));
            f(vy, vx) = sum(prev(vy + dy, vx + r)) * 0.25f;
            desc << f.name() << ": window sum\n";
            break;
        }
        case 2: {  // pure definition plus an update with an RDom
            const int n = 1 + pick(3);
            f(vy, vx) = prev(vy, vx);
            if (later() % 3 == 0) {
                // A scan along x over its first points (all inside the
                // smallest output): each reads its left neighbour's new
                // value, so only the rows are independent.
                RDom k(1, n + 1, "k" + std::to_string(s));
                f(vy, k) = f(vy, k - 1) * 0.5f + prev(vy + dy, k) * 0.25f;
                c.scans.insert(f.name());
                desc << f.name() << ": scan along x\n";
                break;
            }
            RDom r(0, n, "u" + std::to_string(s));
            f(vy, vx) += prev(vy + r, vx + dx) * 0.125f;
            desc << f.name() << ": update over RDom\n";
            break;
        }
        case 3:  // max/select nonlinearity
            f(vy, vx) =
                select(prev(vy, vx) > 0.0f, prev(vy, vx + dx), max(prev(vy + dy, vx), -0.5f));
            desc << f.name() << ": select/max\n";
            break;
        default: {  // a plain pure update (order-independent)
            f(vy, vx) = prev(vy, vx) * 2.0f;
            f(vy, vx) = f(vy, vx) - prev(vy + dy, vx);
            desc << f.name() << ": pointwise update\n";
            break;
        }
        }
        c.funcs.push_back(f);
    }
    c.sizes = {5 + pick(20), 5 + pick(40)};
    desc << "sizes " << c.sizes[0] << " x " << c.sizes[1] << "\n";

    // Random legal directives.
    const Func &out = c.funcs.back();
    const TailStrategy tails[] = {TailStrategy::Auto, TailStrategy::GuardWithIf,
                                  TailStrategy::ShiftInwards, TailStrategy::RoundUp};
    auto add = [&](std::string text, std::function<void(Schedule &)> f) {
        c.directives.push_back({std::move(text), std::move(f)});
    };
    // The output's loops.
    int out_pattern = pick(7);
    Var yo("yo"), yi("yi"), xo("xo"), xi("xi"), t("t");
    int fy = 2 + pick(7), fx = 2 + pick(15);
    bool out_has_yo = false, out_has_xo = false;
    // ShiftInwards overlaps the last iteration with the previous one, so it
    // needs the output to be at least one factor wide.
    int lanes = 4 << pick(3);
    TailStrategy out_tail = pick(2) ? TailStrategy::GuardWithIf : TailStrategy::Auto;
    // (tile applies the tail to both y and x).
    if (c.sizes[0] >= fy && c.sizes[1] >= std::max(fx, lanes) && pick(3) == 0) {
        out_tail = TailStrategy::ShiftInwards;
    }
    switch (out_pattern) {
    case 0:
        add("out.tile",
            [=](Schedule &s) { s[out].tile(vy, vx, yo, xo, yi, xi, fy, fx, out_tail); });
        out_has_yo = out_has_xo = true;
        break;
    case 1:
        add("out.split y", [=](Schedule &s) { s[out].split(vy, yo, yi, fy); });
        out_has_yo = true;
        break;
    case 2: {
        add("out.vectorize x", [=](Schedule &s) { s[out].vectorize(vx, lanes, out_tail); });
        break;
    }
    case 3: add("out.reorder", [=](Schedule &s) { s[out].reorder(vx, vy); }); break;
    case 4:
        // Fused loops: the fused variable is split back by division and
        // modulo of symbolic extents.
        add("out.fuse y x + split",
            [=](Schedule &s) { s[out].fuse(vy, vx, t).split(t, yo, yi, fy * fx); });
        out_pattern = 3;  // no plain y loop left to parallelize
        break;
    case 5:
        // A tile whose inner loops are fused and vectorized.
        add("out.tile + fuse inner + vectorize", [=](Schedule &s) {
            s[out].tile(vy, vx, yo, xo, yi, xi, 2, 4).fuse(yi, xi, t).vectorize(t);
        });
        out_has_yo = out_has_xo = true;
        break;
    default: break;
    }
    if (pick(2)) {
        if (out_has_yo) add("out.parallel yo", [=](Schedule &s) { s[out].parallel(yo); });
        else if (out_pattern != 3) add("out.parallel y", [=](Schedule &s) { s[out].parallel(vy); });
    }
    // Update stages of the output: vectorize the pure var x or the RVar (one
    // vectorized loop per stage), and split a reduction variable (its loops
    // in order, or for a sum in any order: the meaning is kept).
    const int out_update_vector = out.num_update_definitions() > 0 ? pick(4) : 0;
    // A scan's update has no loop over x, and its RVar carries its
    // dependence: its rows are what may be vectorized or parallel.
    const bool out_is_scan = c.is_scan(out);
    if (out_update_vector == 1) {
        if (out_is_scan)
            add("out.update.vectorize y", [=](Schedule &s) { s[out].update().vectorize(vy, 4); });
        else add("out.update.vectorize", [=](Schedule &s) { s[out].update().vectorize(vx, 4); });
    }
    if (out.num_update_definitions() > 0 && pick(2)) {
        // A sum's RVar may also visit its points out of order: its inner
        // part outermost (a scan's may not).
        const bool swap_parts = !out_is_scan && pick(2);
        add(swap_parts ? "out.update.split rvar, inner part outside" : "out.update.split rvar",
            [=](Schedule &s) {
                Stage u = s[out].update();
                // Only updates with an RDom have an RVar loop, innermost.
                std::string loops = u.dump();
                size_t open = loops.rfind('('), close = loops.rfind(')');
                std::string last = loops.substr(open + 1, close - open - 1);
                if (last == "x" || last == "y") return;
                u.split(RVar(last), RVar("ro"), RVar("ri"), 2);
                if (swap_parts) u.reorder(RVar("ri"), RVar("ro"));
            });
    }
    // Or vectorize it: every lane updates the same point with +, so the
    // lanes are combined (their extents of 1 to 3 leave masked lanes).
    if (out_update_vector == 2) {
        if (out_is_scan)
            add("out.update.parallel y", [=](Schedule &s) { s[out].update().parallel(vy); });
        else
            add("out.update.vectorize rvar",
                [=](Schedule &s) { vectorize_rvar(s[out].update(), 4); });
    }

    // The other Funcs: placement and loops. compute_at a loop of the output's
    // pure stage is only legal when its update stages do not read the Func
    // too, which this generator does not track: it avoids the case.
    if (out.num_update_definitions() > 0) out_has_yo = out_has_xo = false;
    std::vector<Directive> bounds;
    // Placement depth: 0 root, 1 the output's yo loop, 2 its xo loop. A
    // producer must be computed at the same or an outer level than anything
    // that reads it, so depths never decrease along the chain.
    int max_depth = out_has_xo ? 2 : out_has_yo ? 1 : 0;
    int depth = 0;
    for (size_t i = 0; i + 1 < c.funcs.size(); i++) {
        Func f = c.funcs[i];
        bool has_updates = f.num_update_definitions() > 0;
        if (!has_updates && pick(4) == 0) continue;  // inline
        if (depth < max_depth && pick(2)) depth += 1 + pick(max_depth - depth);
        if (depth == 2 && !out_has_yo) depth = 2;
        if (depth == 0) {
            add(f.name() + ".compute_root", [=](Schedule &s) { s[f].compute_root(); });
        } else {
            Var at = depth == 2 ? xo : yo;
            if (depth == 1 && !out_has_yo) at = xo;
            if (pick(2)) {
                add(f.name() + ".store_root.compute_at(out, " + at.name() + ")",
                    [=](Schedule &s) { s[f].store_root().compute_at(out, at); });
            } else {
                add(f.name() + ".compute_at(out, " + at.name() + ")",
                    [=](Schedule &s) { s[f].compute_at(out, at); });
            }
        }
        int loops = pick(4);
        Var a("a"), b("b");
        TailStrategy tail = tails[pick(4)];
        int lanes = 4 << pick(2), factor = 2 + pick(3);
        if (loops == 1) {
            add(f.name() + ".vectorize x " + std::to_string(lanes) + " " + tail_name(tail),
                [=](Schedule &s) { s[f].vectorize(vx, lanes, tail); });
        } else if (loops == 2) {
            add(f.name() + ".split y + unroll " + tail_name(tail),
                [=](Schedule &s) { s[f].split(vy, a, b, factor, tail).unroll(b); });
        } else if (loops == 3) {
            add(f.name() + ".parallel y", [=](Schedule &s) { s[f].parallel(vy); });
        }
        // A declared region in x: at root, from 0 (every read is at x + a
        // non-negative offset) over the output's width and a margin; per
        // tile of the output's xo, the tile's width and a margin from the
        // first point read. A margin too small for the stencils that read
        // f is a refusal at run time (run_case tolerates it); a large one
        // computes past what is read, inside the inputs' padding. (Listed
        // after the other directives, so that the masks of kRegressions,
        // kept from before bounds were drawn, still name the same ones.)
        if (later() % 4 == 0) {
            const int margin = static_cast<int>(later() % 12);
            if (depth == 0) {
                const int extent = c.sizes[1] + margin;
                bounds.push_back({f.name() + ".bound x [0, " + std::to_string(extent) + ")",
                                  [=](Schedule &s) { s[f].bound(vx, 0, extent); }});
            } else if (depth == 2 || !out_has_yo) {
                const int extent = fx + margin;
                bounds.push_back({f.name() + ".bound_extent x " + std::to_string(extent),
                                  [=](Schedule &s) { s[f].bound_extent(vx, extent); }});
            }
        }
        const int update_vector = has_updates ? pick(3) : 0;
        if (c.is_scan(f) && update_vector == 1) {
            add(f.name() + ".update.vectorize y",
                [=](Schedule &s) { s[f].update().vectorize(vy, 8); });
        } else if (c.is_scan(f) && update_vector == 2) {
            add(f.name() + ".update.parallel y", [=](Schedule &s) { s[f].update().parallel(vy); });
        } else if (update_vector == 1) {
            add(f.name() + ".update.vectorize x",
                [=](Schedule &s) { s[f].update().vectorize(vx, 8); });
        } else if (update_vector == 2) {
            add(f.name() + ".update.vectorize rvar",
                [=](Schedule &s) { vectorize_rvar(s[f].update(), 8); });
        }
    }
    // The output bounded to exactly the buffer it is realized into.
    if (later() % 6 == 0) {
        const int width = c.sizes[1];
        bounds.push_back({"out.bound x [0, " + std::to_string(width) + ")",
                          [=](Schedule &s) { s[out].bound(vx, 0, width); }});
    }
    c.directives.insert(c.directives.end(), bounds.begin(), bounds.end());
    c.description = desc.str();
    return c;
}

/** Whether `message` is the run-time refusal of a bound that the pipeline
 * reads past: "Func f is bounded in x to [lo, hi] (bound...), but the
 * pipeline reads it over [a, b] there", with [a, b] indeed not inside
 * [lo, hi]. */
bool is_bound_refusal(const std::string &message) {
    long long lo, hi, a, b;
    const size_t at = message.find(" is bounded in x to [");
    if (at == std::string::npos) return false;
    if (std::sscanf(message.c_str() + at, " is bounded in x to [%lld, %lld]", &lo, &hi) != 2)
        return false;
    const size_t reads = message.find("reads it over [", at);
    if (reads == std::string::npos ||
        std::sscanf(message.c_str() + reads, "reads it over [%lld, %lld]", &a, &b) != 2)
        return false;
    return a < lo || b > hi;
}

/** Binds random inputs, with rows of a multiple of 4 floats where the
 * case promises that (promise_alignment). */
void bind_inputs(FuzzCase &c, uint64_t seed, bool rows_of_4 = false) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    std::uniform_real_distribution<float> dist(-1, 1);
    for (BufferParam &in : c.inputs) {
        int row = c.sizes[1] + 2 * kPad + 16;
        if (rows_of_4) row = (row + 3) / 4 * 4;
        Buffer<float> b({c.sizes[0] + 2 * kPad + 16, row});
        b.fill([&](const std::vector<int> &) { return dist(rng); });
        b.set_min({-kPad, -kPad});
        in.set(b);
    }
}

// Runs one case with the directives in `mask`; returns an empty string on
// success (or on a bound's refusal, counted in *bound_refusals), else a
// description of the failure.
std::string run_case(uint64_t seed, const std::vector<bool> &mask, int *bound_refusals = nullptr) {
    FuzzCase c = make_case(seed);
    bind_inputs(c, seed);
    Schedule s;
    std::ostringstream applied;
    const Func &out = c.funcs.back();
    try {
        for (size_t i = 0; i < c.directives.size(); i++) {
            if (i < mask.size() && !mask[i]) continue;
            applied << "  " << c.directives[i].text << "\n";
            c.directives[i].apply(s);
        }
        RawBuffer expected = interpret(out, c.sizes);
        // Poisoned with NaN, so an element the compiled code fails to write
        // fails every time (fresh memory might by chance hold the expected
        // value, e.g. the interpreter's freed result of a previous run).
        RawBuffer actual(expected.type(), c.sizes);
        {
            std::vector<uint8_t> nan_bytes(actual.type().bytes(), 0xff);
            for (int64_t i = 0; i < actual.number_of_elements(); i++)
                std::memcpy(actual.host() + i * actual.type().bytes(), nan_bytes.data(),
                            nan_bytes.size());
        }
        Pipeline(out).realize({actual}, s);
        ::testing::AssertionResult r = loom_test::buffers_match(actual, expected, 1e-5, 1e-5);
        if (!r)
            return std::string(r.message()) + "\n" + c.description + "schedule:\n" + applied.str();
    } catch (const std::exception &e) {
        if (bound_refusals && is_bound_refusal(e.what())) {
            ++*bound_refusals;
            return "";
        }
        return std::string("exception: ") + e.what() + "\n" + c.description + "schedule:\n" +
               applied.str();
    }
    return "";
}

std::string mask_string(const std::vector<bool> &mask) {
    std::string s;
    for (bool b : mask) s += b ? '1' : '0';
    return s;
}

// The first line of a failure: what kind of failure it is.
std::string failure_kind(const std::string &failure) {
    std::string line = failure.substr(0, failure.find('\n'));
    return line.substr(0, std::min<size_t>(line.size(), 60));
}

// Drops directives while the case keeps failing in the same way (dropping a
// directive that made a loop another one names would fail differently).
std::vector<bool> reduce(uint64_t seed, size_t n, const std::string &original) {
    std::vector<bool> mask(n, true);
    for (size_t i = 0; i < n; i++) {
        mask[i] = false;
        std::string f = run_case(seed, mask);
        if (f.empty() || failure_kind(f) != failure_kind(original)) mask[i] = true;
    }
    return mask;
}

// Cases once found by the fuzzer, reduced: (seed, directive mask). A seed
// names a case only for the generator as it was when the case was found, so
// each is also kept as a hand-written test (named beside it) that survives
// changes to the generator.
const std::vector<std::pair<uint64_t, std::string>> kRegressions = {
    // Stacked RoundUp producers under store_root: the inferred input region
    // was inflated by interval arithmetic on per-iteration bounds
    // (Schedule.RoundUpProducersInsideTiles).
    {2041705836ull, "1111100"},
    {2041705898ull, "1011001111"},
};

}  // namespace

TEST(Fuzz, Regressions) {
    for (const auto &r : kRegressions) {
        std::vector<bool> mask;
        for (char ch : r.second) mask.push_back(ch == '1');
        // Directives the generator draws now that it did not then (at the
        // end of the list) are left out.
        mask.resize(make_case(r.first).directives.size(), false);
        std::string failure = run_case(r.first, mask);
        EXPECT_TRUE(failure.empty())
            << "seed " << r.first << " mask " << r.second << ": " << failure;
    }
}

TEST(Fuzz, RandomPipelinesAndSchedules) {
    uint64_t seed = std::random_device{}();
    if (const char *s = std::getenv("LOOM_FUZZ_SEED")) seed = std::stoull(s);
    int cases = 60;
    if (const char *s = std::getenv("LOOM_FUZZ_CASES")) cases = std::stoi(s);
    double seconds = 0;
    if (const char *s = std::getenv("LOOM_FUZZ_SECONDS")) seconds = std::stod(s);
    std::printf("[fuzz] starting at seed %llu\n", static_cast<unsigned long long>(seed));
    auto start = std::chrono::steady_clock::now();
    int failures = 0, run = 0, bounded = 0, bound_refusals = 0;
    for (uint64_t k = 0;; k++) {
        double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (seconds > 0 ? elapsed > seconds : static_cast<int>(k) >= cases) break;
        uint64_t case_seed = seed + k;
        run++;
        for (const Directive &d : make_case(case_seed).directives) {
            if (d.text.find(".bound") != std::string::npos) {
                bounded++;
                break;
            }
        }
        std::string failure = run_case(case_seed, {}, &bound_refusals);
        if (!failure.empty()) {
            size_t n = make_case(case_seed).directives.size();
            std::vector<bool> mask = reduce(case_seed, n, failure);
            // The first failure is reported too: a failure that does not
            // happen again (a race, say) leaves the reduced one empty.
            std::string reduced = run_case(case_seed, mask);
            ADD_FAILURE() << "fuzz case failed; keep it with {" << case_seed << "ull, \""
                          << mask_string(mask) << "\"} in kRegressions.\nFailure: " << failure
                          << "\nReduced failure: "
                          << (reduced.empty() ? "(none: it did not fail again)" : reduced);
            if (++failures >= 3) break;
        }
    }
    std::printf(
        "[fuzz] %d cases, %d failures; %d with a bound, %d of them refused for reading "
        "past it\n",
        run, failures, bounded, bound_refusals);
}

namespace {

/** A random GPU schedule for case `c`: the output tiled over blocks and
 * threads, each intermediate inlined, computed per thread, per block (in
 * shared memory, by the block's threads), or at root as a kernel of its
 * own. */
Schedule make_gpu_schedule(uint64_t case_seed, const FuzzCase &c, std::string *what) {
    std::mt19937_64 rng(case_seed ^ 0x9e3779b97f4a7c15ull);
    // Choices added later draw from a stream of their own (as in make_case).
    std::mt19937_64 later(case_seed ^ 0x6a09e667f3bcc909ull);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    auto pick_later = [&](int n) { return static_cast<int>(later() % static_cast<uint64_t>(n)); };
    Var yo("yo"), xo("xo"), yi("yi"), xi("xi");
    const Func &out = c.funcs.back();
    Schedule sch;
    std::ostringstream w;
    // Every stage of a Func on the GPU: a stage left on the CPU could not
    // read what the GPU wrote in the same pipeline.
    auto tile_every_stage = [&](const Func &f, int ty, int tx, TailStrategy tail) {
        for (int u = 0; u <= f.num_update_definitions(); u++) {
            Stage st = u == 0 ? sch[f] : sch[f].update(u - 1);
            // A scan's update: a thread per row, each scanning its row.
            if (u > 0 && c.is_scan(f)) st.split(vy, yo, yi, ty * 4).gpu_blocks(yo).gpu_threads(yi);
            else st.gpu_tile(vy, vx, yo, xo, yi, xi, ty, tx, tail);
        }
    };
    int ty = 1 << pick(4), tx = 1 << (2 + pick(4));  // up to 8 x 32 threads
    // Each thread may compute a vector of 2 or 4 points along x (of a pure
    // output: an update's guarded tail would not vectorize).
    const int lanes = out.num_update_definitions() == 0 && pick(3) == 0 ? 2 << pick(2) : 1;
    // A block's threads need a constant count: a Func computed per block
    // has a constant region when the output's tiles are all whole
    // (ShiftInwards, which updates may not use), and otherwise a region
    // with a constant bound, or none (an expected refusal).
    const bool whole_tiles = out.num_update_definitions() == 0 && c.sizes[0] >= ty &&
                             c.sizes[1] >= tx * lanes && pick(3) != 0;
    tile_every_stage(out, ty, tx * lanes,
                     whole_tiles ? TailStrategy::ShiftInwards : TailStrategy::Auto);
    w << out.name() << ".gpu_tile(" << ty << ", " << tx * lanes << (whole_tiles ? ", shift" : "")
      << ")";
    // Halide's way: the split keeps the threads on xi, which keeps its name.
    if (lanes > 1) {
        sch[out].vectorize(xi, lanes);
        w << ".vectorize(xi, " << lanes << ")";
    }
    for (size_t i = 0; i + 1 < c.funcs.size(); i++) {
        const Func &f = c.funcs[i];
        int placement = pick(4);
        // Not inlined, a Func with updates would be computed on the CPU by
        // default, where the kernels cannot read it.
        if (placement == 0 && f.num_update_definitions() > 0) placement = 3;
        // A Func with an update over an RDom (not a scan): per block, its
        // RVar on the block's threads, which combine each point's sum
        // across them. In shared memory (the pure definition on the
        // threads too, the first thread folding each total), or in every
        // thread's registers (every thread computing the whole region and
        // folding each total into its copy).
        const std::string rvar =
            f.num_update_definitions() > 0 ? last_loop(sch[f].update()) : std::string();
        if (!rvar.empty() && rvar != "x" && rvar != "y" && !c.is_scan(f) && pick_later(2) == 0) {
            sch[f].compute_at(out, xo);
            sch[f].update().gpu_threads(RVar(rvar));
            w << "; " << f.name() << ".compute_at(xo), update.gpu_threads(" << rvar << ")";
            if (pick_later(2)) {
                sch[f].store_in(MemoryType::Register);
                w << ".store_in(Register)";
            } else {
                sch[f].gpu_threads(vx, vy).store_in(MemoryType::Shared);
                w << ".gpu_threads(x, y).store_in(Shared)";
            }
            continue;
        }
        switch (placement) {
        case 0: break;  // the default
        case 1:
            sch[f].compute_at(out, xi);
            w << "; " << f.name() << ".compute_at(xi)";
            // Its points for the thread's vector, as a vector too.
            if (lanes > 1 && f.num_update_definitions() == 0 && pick(2)) {
                sch[f].vectorize(vx, lanes);
                w << ".vectorize(x, " << lanes << ")";
            }
            if (pick(3) == 0) {
                sch[f].store_in(MemoryType::Global);
                w << ".store_in(Global)";
            }
            break;
        case 2:
            // Shared by the block, computed by as many threads as it has
            // points; in shared memory, or in device memory.
            sch[f].compute_at(out, xo).gpu_threads(vx, vy);
            for (int u = 0; u < f.num_update_definitions(); u++) {
                if (c.is_scan(f)) sch[f].update(u).gpu_threads(vy);
                else sch[f].update(u).gpu_threads(vx, vy);
            }
            w << "; " << f.name() << ".compute_at(xo).gpu_threads(x, y)";
            // Each of its threads a vector along x too.
            if (lanes > 1 && f.num_update_definitions() == 0 && pick(2)) {
                sch[f].vectorize(vx, lanes);
                w << ".vectorize(x, " << lanes << ")";
            }
            if (pick(2)) {
                sch[f].store_in(MemoryType::Global);
                w << ".store_in(Global)";
            } else if (f.num_update_definitions() == 0 && pick_later(3) == 0) {
                // In its threads' registers: legal exactly when every
                // thread of the block reads only the points (or runs of
                // points) that it computed itself.
                sch[f].store_in(MemoryType::Register);
                w << ".store_in(Register)";
            }
            break;
        default:
            sch[f].compute_root();
            tile_every_stage(f, 4, 32, TailStrategy::Auto);
            w << "; " << f.name() << ".compute_root().gpu_tile(4, 32)";
            break;
        }
    }
    *what = w.str();
    return sch;
}

/** For some GPU cases: the promises that let the CUDA backend prove
 * vectors aligned and move them as words with no test of the address
 * (16-byte buffer starts, rows of a multiple of 4 floats, the columns'
 * min), on the inputs and the output. The stand-in checks every such
 * proof; binding the inputs and allocating the output (rows padded to a
 * multiple of 4) keep the promises. Returns whether the case promises. */
bool promise_alignment(FuzzCase &c, uint64_t case_seed) {
    if ((case_seed ^ 0x5bd1e995u) % 2 != 0) return false;
    for (BufferParam &in : c.inputs) {
        in.set_host_alignment(16).dim(0).set_stride_multiple(4);
        in.dim(1).set_min(-kPad);
    }
    OutputBuffer out = c.funcs.back().output_buffer();
    out.set_host_alignment(16).dim(0).set_stride_multiple(4);
    out.dim(1).set_min(0);
    return true;
}

/** Whether a GPU schedule's CompileError is one it may get: a placement
 * that is illegal on any target; a Func computed on one side (CPU or GPU)
 * and read on the other (an inline reduction that two kernels read is
 * computed around both, on the CPU, and Loom copies only at a pipeline's
 * boundaries); an inline reduction that threads of a block and others read,
 * placed by default at the block level with no gpu_threads loops of its
 * own (every Func this generator places there has them); a Func in device
 * memory whose per-block copy would differ in size between blocks; the
 * documented limit that per-thread and per-block storage, and a block's
 * thread count, must be constants that the compiler can see (a guarded
 * tile's clamped region, or the region of a Func that a per-block Func
 * reads, may not be); or more than 1024 threads per block (a Func per
 * block takes a thread per point of its region, which a vectorized output
 * widens). Anything else is a bug. */
bool expected_gpu_refusal(const std::string &m) {
    return m.find("is used outside the loop where it is computed") != std::string::npos ||
           m.find("with a size that differs between blocks") != std::string::npos ||
           m.find("is computed on the CPU, but the GPU kernel") != std::string::npos ||
           m.find("but code that runs on the CPU reads it") != std::string::npos ||
           m.find("outside its gpu_threads loops") != std::string::npos ||
           m.find("with a size known only at run time") != std::string::npos ||
           m.find("threads per block; CUDA allows at most 1024") != std::string::npos ||
           m.find("is stored in MemoryType::Register at a block loop") != std::string::npos ||
           m.find(
               "every thread keeps a copy of all of it, but its size is known only at run "
               "time") != std::string::npos ||
           m.find("which is not a positive constant: a block has a fixed number of threads") !=
               std::string::npos;
}

}  // namespace

// The same random pipelines under random GPU schedules, compiled to CUDA C++
// and through NVRTC (no GPU is needed to compile). A schedule may be refused
// only for a documented reason; anything NVRTC rejects is a code generation
// bug.
TEST(Fuzz, GpuSchedulesCompileThroughNVRTC) {
    std::string why;
    ASSERT_TRUE(loom::internal::nvrtc_available(&why)) << why;
    uint64_t seed = std::random_device{}();
    if (const char *s = std::getenv("LOOM_FUZZ_SEED")) seed = std::stoull(s);
    int cases = 40;
    if (const char *s = std::getenv("LOOM_FUZZ_CASES")) cases = std::stoi(s);
    std::printf("[fuzz gpu] starting at seed %llu\n", static_cast<unsigned long long>(seed));
    int compiled = 0, proven_aligned = 0, refused = 0;
    for (int k = 0; k < cases; k++) {
        uint64_t case_seed = seed + static_cast<uint64_t>(k);
        FuzzCase c = make_case(case_seed);
        const bool promised = promise_alignment(c, case_seed);
        std::string what;
        Schedule sch = make_gpu_schedule(case_seed, c, &what);
        if (promised) what += "; alignment promised";
        std::string source;
        try {
            source = Pipeline(c.funcs.back()).compile_to_cuda(sch, Target("host-cuda-sm_80"));
        } catch (const CompileError &e) {
            EXPECT_TRUE(expected_gpu_refusal(e.what()))
                << "seed " << case_seed << " (" << what << "):\n"
                << c.description << e.what();
            refused++;
            continue;
        }
        try {
            loom::internal::compile_cuda(source, "fuzz", "sm_80");
            compiled++;
            // (The helpers' names are in every vectorized source's prelude.)
            const std::string kernels = source.substr(source.find("\n// Kernel"));
            proven_aligned += kernels.find("_aligned") != std::string::npos;
        } catch (const CompileError &e) {
            ADD_FAILURE() << "seed " << case_seed << " (" << what << "):\n"
                          << c.description << e.what() << "\n"
                          << source;
        }
    }
    std::printf("[fuzz gpu] %d compiled (%d with words proven aligned), %d refused\n", compiled,
                proven_aligned, refused);
    EXPECT_GT(compiled, cases / 3);
}

// The random GPU schedules run: on the stand-in driver, which runs the
// kernels' CUDA C++ on the CPU (test/fake_cuda), against the interpreter.
// This checks what the kernels compute (indexing, guards, barriers around
// shared memory) on every machine.
TEST(Fuzz, GpuSchedulesRunOnTheCpu) {
    setenv("LOOM_CUDA_DRIVER", LOOM_FAKE_CUDA_DRIVER, 1);
    setenv("LOOM_FAKE_CUDA_RUN_KERNELS", "1", 1);
    uint64_t seed = std::random_device{}();
    if (const char *s = std::getenv("LOOM_FUZZ_SEED")) seed = std::stoull(s);
    int cases = 30;
    if (const char *s = std::getenv("LOOM_FUZZ_CASES")) cases = std::stoi(s);
    std::printf("[fuzz gpu run] starting at seed %llu\n", static_cast<unsigned long long>(seed));
    int ran = 0, vectorized = 0, promising = 0, in_registers = 0, across_threads = 0, refused = 0,
        failures = 0;
    for (int k = 0; k < cases && failures < 3; k++) {
        uint64_t case_seed = seed + static_cast<uint64_t>(k);
        FuzzCase c = make_case(case_seed);
        const bool promised = promise_alignment(c, case_seed);
        bind_inputs(c, case_seed, promised);
        std::string what;
        Schedule sch = make_gpu_schedule(case_seed, c, &what);
        if (promised) what += "; alignment promised";
        const Func &out = c.funcs.back();
        try {
            RawBuffer expected = interpret(out, c.sizes);
            // Both orders of the stand-in's threads and blocks: a missing
            // barrier computes the right values in at most one of them.
            for (const char *order : {"0", "1"}) {
                setenv("LOOM_FAKE_CUDA_REVERSED", order, 1);
                const int row = promised ? (c.sizes[1] + 3) / 4 * 4 : c.sizes[1];
                RawBuffer whole(expected.type(), {c.sizes[0], row});
                std::memset(whole.host(), 0xff, whole.number_of_elements() * 4);  // NaN
                RawBuffer actual = whole.cropped(1, 0, c.sizes[1]);
                Pipeline(out).realize({actual}, sch, Target("host-cuda"));
                ::testing::AssertionResult r =
                    loom_test::buffers_match(actual, expected, 1e-5, 1e-5);
                if (!r) {
                    // LOOM_FUZZ_VERBOSE=1 adds the kernels' CUDA C++.
                    const char *verbose = std::getenv("LOOM_FUZZ_VERBOSE");
                    ADD_FAILURE() << "seed " << case_seed << " (" << what << ")"
                                  << (*order == '1' ? ", threads and blocks highest first" : "")
                                  << ":\n"
                                  << c.description << r.message()
                                  << (verbose && *verbose ? "\n" + Pipeline(out).compile_to_cuda(
                                                                       sch, Target("host-cuda"))
                                                          : std::string());
                    failures++;
                    break;
                }
            }
            ran++;
            vectorized += what.find("vectorize") != std::string::npos;
            promising += promised;
            in_registers += what.find("store_in(Register)") != std::string::npos;
            across_threads += what.find("update.gpu_threads(") != std::string::npos;
        } catch (const CompileError &e) {
            EXPECT_TRUE(expected_gpu_refusal(e.what()))
                << "seed " << case_seed << " (" << what << "):\n"
                << c.description << e.what();
            refused++;
        } catch (const std::exception &e) {
            ADD_FAILURE() << "seed " << case_seed << " (" << what << "):\n"
                          << c.description << e.what();
            failures++;
        }
    }
    unsetenv("LOOM_FAKE_CUDA_REVERSED");
    std::printf(
        "[fuzz gpu run] %d ran (%d with vectors, %d with alignment promised, %d with a Func "
        "stored in registers at the block, %d with sums across threads), %d refused, %d "
        "failed\n",
        ran, vectorized, promising, in_registers, across_threads, refused, failures);
    EXPECT_GT(ran, cases / 3);
}
