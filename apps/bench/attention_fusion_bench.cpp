// Fused attention against materialized attention on the CPU: the schedule
// templates of schedules/flash_attention.h (rolling_update and split_k)
// against the materialized-softmax schedule of the same algorithm
// (AttentionVariant::schedule_materialized), and, when built with Halide 14,
// against Halide's materialized attention (the same math and the same
// materialized schedule, written in Halide). See apps/bench/README.md.
//
//   attention_fusion_bench [--reps N] [--quick] [--threads N] [--budget S]
//                          [--only prefill|decode|compile|sweep] [--no-memory] [--no-torch]
//                          [--max-seq N] [--heads N] [--query-block N]
//                          [--key-tile N] [--vector N] [--halide-causal-max-seq N]
//                          [--exact] [--markdown] [--dump DIR]
//
// It prints four tables:
//   1. prefill (Lq == Lk), causal and global variants: run time of each
//      schedule, their ratios, GFLOP/s and modelled bytes moved;
//   2. the peak memory of each prefill schedule, measured in forked children;
//   3. decode (Lq == 1, causal): split_k with several chunk counts,
//      split_k over tile programs, rolling_update and materialized, with
//      the decode's peak memory, and PyTorch's SDPA (unless --no-torch);
//   4. the compile time of each pipeline and the part spent deriving the
//      repairs of the fused chains (CompiledPipeline::fusion_seconds).
// --only sweep prints instead the template options against the
// materialized schedule with the same key staging. Every kernel's first run at every size is
// checked against the float64 reference of apps/attention/variants_reference.h;
// a wrong output aborts the program with exit status 1.
//
// The file has five parts: measurement (heap counter, timing, forked memory
// probe), kernels (the Loom schedules and, under LOOM_BENCH_HALIDE, Halide's
// attention), correctness, the sections, and main(). Everything but the
// Halide kernel builds without Halide.
#ifdef LOOM_BENCH_HALIDE
#include <Halide.h>
#endif

#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../../schedules/flash_attention.h"
#include "../attention/variants.h"
#include "../bench_common.h"
#include "../torch_sdpa.h"
#include "dump_dir.h"

#ifndef LOOM_HALIDE_VERSION
#define LOOM_HALIDE_VERSION "14"
#endif

// ===========================================================================
// Part 1: measurement.

// ---- Heap counter. malloc and friends are replaced for the whole process
// (glibc supports this: its own internal calls go through these too) by
// thin wrappers that, once armed, count the bytes live on the heap, their
// high-water mark and the allocations made. Only the forked children that
// measure memory arm it (probe_memory), so that the timed runs pay nothing
// but a relaxed load per call. Every allocation a kernel makes (Loom's
// loom_malloc, Halide's halide_malloc, the C++ runtime) is counted; stack
// allocations are not (Loom puts constant-sized allocations of at most
// 16 KiB on the stack), the RSS measurement below sees those.
extern "C" {
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);
}

namespace heap {
std::atomic<bool> armed{false};
std::atomic<int64_t> live{0}, high{0}, allocations{0};
inline void *counted(void *p) {
    if (p != nullptr && armed.load(std::memory_order_relaxed)) {
        const int64_t n = static_cast<int64_t>(malloc_usable_size(p));
        const int64_t now = live.fetch_add(n, std::memory_order_relaxed) + n;
        allocations.fetch_add(1, std::memory_order_relaxed);
        int64_t h = high.load(std::memory_order_relaxed);
        while (now > h && !high.compare_exchange_weak(h, now, std::memory_order_relaxed)) {}
    }
    return p;
}
inline void uncount(void *p) {
    if (p != nullptr && armed.load(std::memory_order_relaxed)) {
        live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
    }
}
/** Restarts the high-water mark and the allocation count at the current
 * live bytes; returns them. */
int64_t reset_high() {
    const int64_t now = live.load();
    high.store(now);
    allocations.store(0);
    return now;
}
}  // namespace heap

extern "C" {
void *malloc(size_t n) { return heap::counted(__libc_malloc(n)); }
void *calloc(size_t n, size_t size) { return heap::counted(__libc_calloc(n, size)); }
void *realloc(void *p, size_t n) {
    heap::uncount(p);
    void *q = __libc_realloc(p, n);
    if (q == nullptr && n != 0) {
        heap::counted(p);  // the old block is still live
        return nullptr;
    }
    return heap::counted(q);
}
void free(void *p) {
    heap::uncount(p);
    __libc_free(p);
}
void *memalign(size_t align, size_t n) { return heap::counted(__libc_memalign(align, n)); }
void *aligned_alloc(size_t align, size_t n) { return heap::counted(__libc_memalign(align, n)); }
int posix_memalign(void **out, size_t align, size_t n) {
    if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
    void *p = heap::counted(__libc_memalign(align, n));
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
}
void *valloc(size_t n) { return heap::counted(__libc_memalign(sysconf(_SC_PAGESIZE), n)); }
void *pvalloc(size_t n) {
    size_t page = sysconf(_SC_PAGESIZE);
    return heap::counted(__libc_memalign(page, (n + page - 1) / page * page));
}
}

namespace {

using attention::AttentionVariant;
using attention::Variant;

struct Options {
    int threads = 0;     // 0: every core
    int reps = 9;        // the most timed rounds per configuration
    double budget = 10;  // seconds of timed rounds per configuration, about
    bool quick = false;
    bool memory = true;
    bool torch = true;  // PyTorch's SDPA as a column (not with --quick)
    bool exact = false;
    bool markdown = false;
    std::string only;
    std::string dump_dir;
    int max_seq = 1 << 30;
    int query_block = 16, key_tile = 64, vector = 16;
    int prefill_heads = 4;
    /** Halide's causal attention is several times slower than its global
     * one (README); beyond this length it is skipped. */
    int halide_causal_max_seq = 2048;
};

using apps::now_seconds;

/** Median run time of each of `runs`, timed round-robin (A B C A B C ...) so
 * that noise from the rest of the machine hits all alike. Each has run once
 * already (the checked first run), taking first_run_s. Rounds: as many as
 * `budget` seconds hold, at least 3 and at most `reps`; when even one round
 * takes longer than `budget`, the checked runs are the only sample (1
 * round). A warm-up round precedes the timed ones when a round is short. */
std::vector<double> median_times(const std::vector<std::function<void()>> &runs,
                                 const std::vector<double> &first_run_s, int reps, double budget,
                                 int *rounds) {
    double round_s = 0;
    for (double t : first_run_s) round_s += t;
    if (round_s >= budget) {
        *rounds = 1;
        return first_run_s;
    }
    int n = std::min(reps, std::max(3, static_cast<int>(budget / std::max(round_s, 1e-9))));
    if (round_s < 1.0) {
        for (const auto &f : runs) f();
    }
    *rounds = n;
    return apps::round_robin_medians(runs, n);
}

/** Peak memory of one run, above what was live before it. */
struct MemoryUse {
    bool measured = false;
    double heap_mib = 0;      // high-water of live heap bytes (malloc counter)
    double rss_mib = 0;       // getrusage ru_maxrss growth over the child's baseline
    int64_t allocations = 0;  // heap allocations made by the run
};

// ===========================================================================
// Part 2: problems and kernels.

/** One attention call: q [1, H, Lq, D], k and v [1, H, Lk, D], float32. */
struct Problem {
    Variant variant = Variant::Causal;
    int heads = 1, seq_q = 1, seq_k = 1, head_dim = 64;
    float scale = 1;
    loom::Buffer<float> q, k, v;

    std::vector<int> q_shape() const { return {1, heads, seq_q, head_dim}; }
    std::vector<int> kv_shape() const { return {1, heads, seq_k, head_dim}; }
};

using apps::fill_uniform;

Problem make_problem(Variant var, int heads, int seq_q, int seq_k, int head_dim) {
    Problem p;
    p.variant = var;
    p.heads = heads;
    p.seq_q = seq_q;
    p.seq_k = seq_k;
    p.head_dim = head_dim;
    p.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    p.q = loom::Buffer<float>(p.q_shape());
    p.k = loom::Buffer<float>(p.kv_shape());
    p.v = loom::Buffer<float>(p.kv_shape());
    fill_uniform(p.q, 1 + seq_k);
    fill_uniform(p.k, 2 + seq_k);
    fill_uniform(p.v, 3 + seq_k);
    return p;
}

/** A compiled attention kernel: bind() points it at a problem (and
 * allocates and touches its output), run() computes the output. */
class Kernel {
  public:
    virtual ~Kernel() = default;
    virtual void bind(const Problem &p) = 0;
    virtual void run() = 0;
    const loom::Buffer<float> &output() const { return out_; }

    std::string name;                      // "rolling", "materialized", "split_k 8", "Halide"
    double compile_wall = 0;               // seconds, measured here around the compile call
    double compile_s = -1, fusion_s = -1;  // Loom's own accounting (-1: n/a)
    double lower_s = -1;                   // a cache-hit recompile: lowering alone (incl. fusion)
    std::string what;                      // the schedule in words
    // For the bytes model: queries per task, whether s and p are stored over
    // the whole key range per task, whether the keys are staged transposed
    // (kt) once per run, and split_k's chunk count (0: none).
    int query_block = 16;
    bool stores_scores = false, stages_keys = false;
    int chunks = 0;

  protected:
    void make_output(const Problem &p) {
        std::vector<int> shape = p.q_shape();
        if (!out_.defined() || out_.shape() != shape) {
            out_ = loom::Buffer<float>(shape);
        }
        std::fill(out_.data(), out_.data() + out_.number_of_elements(), 0.0f);
    }
    loom::Buffer<float> out_;
};

/** The Loom target: the feature set loom_vs_halide uses to match Halide's
 * JIT (reassociation and contraction, LLVM's loop passes), unless --exact. */
loom::Target loom_target(const Options &opt) {
    if (opt.exact) return loom::Target::host();
    return loom::Target::host()
        .with_feature(loom::Target::FastMath)
        .with_feature(loom::Target::LLVMLoopOpt);
}

enum class LoomSchedule {
    Rolling,       // schedules::flash_attention
    Materialized,  // AttentionVariant::schedule_materialized
    // schedule_materialized with the keys staged transposed once per run,
    // kt computed at root as flash_attention does: the materialized
    // schedule given the same score stage as the fused one.
    MaterializedStagedKeys,
    SplitK,  // schedules::flash_decoding
    // flash_attention without stage_keys: for decode, where one query
    // cannot repay a transposed copy of the keys.
    RollingUnstaged,
    // flash_attention with the head dimension fixed: a tile program.
    Tiles,
    // flash_decoding with the head dimension fixed: split_k over tile
    // programs of one query.
    SplitKTiles,
};

/** A Loom schedule of the attention chain and its options. */
struct LoomSpec {
    LoomSchedule kind = LoomSchedule::Rolling;
    int query_block = 16, key_tile = 64, vector = 16, chunks = 0;
    int head_dim = 0;  // Tiles: the fixed head dimension
};

LoomSpec spec(LoomSchedule kind, const Options &opt, int chunks = 0) {
    return {kind, opt.query_block, opt.key_tile, opt.vector, chunks};
}

class LoomKernel : public Kernel {
  public:
    LoomKernel(Variant var, const LoomSpec &o, const Options &opt)
        : app_(std::make_unique<AttentionVariant>(var, loom::Float(32))) {
        AttentionVariant &a = *app_;
        if (o.kind == LoomSchedule::Tiles || o.kind == LoomSchedule::SplitKTiles) {
            a.fix_head_dim(o.head_dim);
        }
        const loom::schedules::AttentionChain chain = a.chain();
        loom::Schedule sch;
        char buf[200];
        query_block = o.query_block;
        switch (o.kind) {
        case LoomSchedule::Rolling:
            loom::schedules::flash_attention(sch, chain, {o.query_block, o.key_tile, o.vector});
            name = "rolling";
            stages_keys = true;
            std::snprintf(buf, sizeof buf,
                          "flash_attention{query_block %d, key_tile %d, vector %d}", o.query_block,
                          o.key_tile, o.vector);
            break;
        case LoomSchedule::Materialized:
            a.schedule_materialized(sch, o.query_block, o.vector);
            name = "materialized";
            stores_scores = true;
            std::snprintf(buf, sizeof buf, "schedule_materialized(query_block %d, vector %d)",
                          o.query_block, o.vector);
            break;
        case LoomSchedule::RollingUnstaged: {
            loom::schedules::FlashAttentionOptions fo{o.query_block, o.key_tile, o.vector};
            fo.stage_keys = false;
            loom::schedules::flash_attention(sch, chain, fo);
            name = "rolling";
            std::snprintf(buf, sizeof buf,
                          "flash_attention{query_block %d, key_tile %d, vector %d, "
                          "stage_keys false}",
                          o.query_block, o.key_tile, o.vector);
            break;
        }
        case LoomSchedule::MaterializedStagedKeys:
            a.schedule_materialized(sch, o.query_block, o.vector);
            sch[a.kt].compute_root().parallel(a.h).vectorize(a.j, o.vector);
            name = "materialized+kt";
            stores_scores = stages_keys = true;
            std::snprintf(buf, sizeof buf,
                          "schedule_materialized(query_block %d, vector %d), kt at root",
                          o.query_block, o.vector);
            break;
        case LoomSchedule::Tiles: {
            loom::schedules::FlashAttentionOptions fo;
            fo.head_dim = o.head_dim;
            fo.key_tile = o.key_tile;
            loom::schedules::flash_attention(sch, chain, fo);
            name = "tiles";
            query_block = fo.tile_queries;
            std::snprintf(buf, sizeof buf,
                          "flash_attention{head_dim %d, tile_queries %d, key_tile %d}: a tile "
                          "program",
                          o.head_dim, fo.tile_queries, o.key_tile);
            break;
        }
        case LoomSchedule::SplitKTiles: {
            loom::schedules::FlashDecodingOptions fo{o.chunks, o.key_tile, o.vector};
            fo.head_dim = o.head_dim;
            loom::schedules::flash_decoding(sch, chain, fo);
            name = "split_k tiles " + std::to_string(o.chunks);
            chunks = o.chunks;
            std::snprintf(buf, sizeof buf,
                          "flash_decoding{chunks %d, key_tile %d, head_dim %d, tile_queries %d}: "
                          "split_k over tile programs",
                          o.chunks, o.key_tile, o.head_dim, fo.tile_queries);
            break;
        }
        case LoomSchedule::SplitK:
            loom::schedules::flash_decoding(sch, chain, {o.chunks, o.key_tile, o.vector});
            name = "split_k " + std::to_string(o.chunks);
            chunks = o.chunks;
            std::snprintf(buf, sizeof buf, "flash_decoding{chunks %d, key_tile %d, vector %d}",
                          o.chunks, o.key_tile, o.vector);
            break;
        }
        what = buf;
        const loom::Target target = loom_target(opt);
        double t0 = now_seconds();
        compiled_ = loom::Pipeline(a.out).compile(sch, target);
        compile_wall = now_seconds() - t0;
        compile_s = compiled_.compile_seconds();
        fusion_s = compiled_.fusion_seconds();
        // Compiling again hits Loom's cache after lowering: what that costs
        // is the front end, repair derivation included, without LLVM.
        std::vector<double> t;
        for (int r = 0; r < (opt.quick ? 1 : 3); r++) {
            double t1 = now_seconds();
            loom::Pipeline(a.out).compile(sch, target);
            t.push_back(now_seconds() - t1);
        }
        std::sort(t.begin(), t.end());
        lower_s = t[t.size() / 2];
        if (!opt.dump_dir.empty()) {
            std::string base = opt.dump_dir + "/" + attention::variant_name(var) + "." + name;
            for (char &c : base) {
                if (c == ' ' || c == ',') c = '_';
            }
            std::ofstream(base + ".loom.stmt") << compiled_.lowered_stmt();
            std::ofstream(base + ".loom.s") << compiled_.assembly();
            std::ofstream(base + ".loom.loops") << loom::Pipeline(a.out).print_loop_nest(sch);
        }
    }

    void bind(const Problem &p) override {
        app_->q.set(p.q);
        app_->k.set(p.k);
        app_->v.set(p.v);
        app_->scale.set(p.scale);
        make_output(p);
    }
    void run() override { compiled_.realize({out_}); }

  private:
    std::unique_ptr<AttentionVariant> app_;
    loom::CompiledPipeline compiled_;
};

#ifdef LOOM_BENCH_HALIDE
namespace HL = Halide;

/** Halide 14's materialized attention: loom_vs_halide's attention with the
 * variant's mask and its fully-masked-row rule, i.e. the same math as
 * variants.h, and the same schedule as schedule_materialized (index order
 * reversed: Loom's s(b, h, i, j) is Halide's s(j, i, h, b)). */
class HalideKernel : public Kernel {
  public:
    HalideKernel(Variant var, const Options &opt)
        : hq_(HL::Float(32), 4, "q"), hk_(HL::Float(32), 4, "k"), hv_(HL::Float(32), 4, "v") {
        const int QB = opt.query_block, V = opt.vector;
        HL::Var b("b"), h("h"), i("i"), j("j"), d("d"), io("io"), ii("ii"), t("t");
        HL::RDom r(0, hk_.dim(1).extent(), "r"), e(0, hq_.dim(0).extent(), "e");
        HL::Func s("s"), m("m"), p("p"), l("l"), o("o"), out("out");
        HL::Expr score = HL::sum(hq_(e, i, h, b) * hk_(e, j, h, b)) * scale_;
        if (var != Variant::Global) {
            HL::Expr query_pos = i + hk_.dim(1).extent() - hq_.dim(1).extent();
            score = HL::select(j <= query_pos, score, -std::numeric_limits<float>::infinity());
        }
        s(j, i, h, b) = score;
        m(i, h, b) = HL::maximum(s(r, i, h, b));
        p(j, i, h, b) = HL::exp(s(j, i, h, b) - m(i, h, b));
        l(i, h, b) = HL::sum(p(r, i, h, b));
        o(d, i, h, b) = HL::sum(p(r, i, h, b) * hv_(d, r, h, b));
        out(d, i, h, b) = HL::select(l(i, h, b) > 0, o(d, i, h, b) / l(i, h, b), 0.0f);
        out.split(i, io, ii, QB, HL::TailStrategy::GuardWithIf)
            .fuse(io, h, t)
            .parallel(t)
            .vectorize(d, V, HL::TailStrategy::GuardWithIf);
        s.compute_at(out, t).vectorize(j, V, HL::TailStrategy::GuardWithIf);
        m.compute_at(out, t);
        p.compute_at(out, t).vectorize(j, V, HL::TailStrategy::GuardWithIf);
        l.compute_at(out, t);
        o.compute_at(out, t).vectorize(d, V, HL::TailStrategy::GuardWithIf);
        pipeline_ = HL::Pipeline(out);
        name = "Halide";
        query_block = QB;
        stores_scores = true;
        char buf[120];
        std::snprintf(buf, sizeof buf, "Halide %s, materialized (query_block %d, vector %d)",
                      LOOM_HALIDE_VERSION, QB, V);
        what = buf;
        HL::Target target = HL::get_jit_target_from_environment();
        double t0 = now_seconds();
        pipeline_.compile_jit(target);
        compile_wall = now_seconds() - t0;
        if (!opt.dump_dir.empty()) {
            auto args = pipeline_.infer_arguments();
            std::string base =
                opt.dump_dir + "/" + attention::variant_name(var) + ".materialized.halide";
            pipeline_.compile_to_lowered_stmt(base + ".stmt", args, HL::Text, target);
            pipeline_.compile_to_assembly(base + ".s", args, "attention", target);
        }
    }

    void bind(const Problem &p) override {
        hq_.set(view(p.q));
        hk_.set(view(p.k));
        hv_.set(view(p.v));
        scale_.set(p.scale);
        make_output(p);
        hout_ = view(out_);
    }
    void run() override { pipeline_.realize(hout_); }

  private:
    /** A Halide view of a dense Loom buffer: the same memory, dims reversed. */
    static HL::Buffer<float> view(const loom::Buffer<float> &b) {
        std::vector<int> shape = b.shape();
        return HL::Buffer<float>(b.data(), std::vector<int>(shape.rbegin(), shape.rend()));
    }
    HL::ImageParam hq_, hk_, hv_;
    HL::Param<float> scale_{"scale"};
    HL::Pipeline pipeline_;
    HL::Buffer<float> hout_;
};

/** One throwaway compile, so that Halide's one-time setup is not charged to
 * the first pipeline. */
void warm_up_halide() {
    HL::ImageParam in(HL::Float(32), 1, "in");
    HL::Var x("x");
    HL::Func g("g");
    g(x) = in(x)*2.0f;
    g.compile_jit();
}
constexpr bool have_halide = true;
#else
constexpr bool have_halide = false;
#endif

void warm_up_loom() {
    loom::BufferParam in(loom::Float(32), 1, "in");
    loom::Var x("x");
    loom::Func f("f");
    f(x) = in(x)*2.0f;
    loom::Pipeline(f).compile();
}

/** Runs `k` once on `p` in a forked child and measures the memory that run
 * needs above what the child held before it: the heap high-water mark
 * (counter above) and the growth of the peak resident set size (getrusage's
 * ru_maxrss; a forked child starts with its parent's current RSS as its
 * peak). The child first runs `k` on the small problem `warm` so that the
 * thread pool's threads, their stacks and the code pages are in the
 * baseline, then binds `p` (inputs are the parent's, shared; the output is
 * allocated and touched), takes the baseline, runs once and reports.
 *
 * Must be called before this process runs any parallel kernel: the thread
 * pools of both compilers start on the first parallel run, and a forked
 * child has none of its parent's threads. */
MemoryUse probe_memory(Kernel &k, const Problem &p, const Problem &warm) {
    MemoryUse result;
    int fds[2];
    if (pipe(fds) != 0) return result;
    std::fflush(stdout);
    std::fflush(stderr);
    malloc_trim(0);  // the child's RSS baseline starts from the parent's current RSS
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return result;
    }
    if (pid == 0) {
        close(fds[0]);
        heap::armed = true;
        MemoryUse r;
        try {
            k.bind(warm);
            k.run();
            k.bind(p);
            rusage u0, u1;
            getrusage(RUSAGE_SELF, &u0);
            int64_t heap0 = heap::reset_high();
            k.run();
            int64_t heap1 = heap::high.load();
            r.allocations = heap::allocations.load();
            getrusage(RUSAGE_SELF, &u1);
            r.measured = true;
            r.heap_mib = (heap1 - heap0) / 1048576.0;
            r.rss_mib = (u1.ru_maxrss - u0.ru_maxrss) / 1024.0;
        } catch (const std::exception &e) {
            std::fprintf(stderr, "memory probe of %s failed: %s\n", k.name.c_str(), e.what());
        }
        ssize_t w = write(fds[1], &r, sizeof r);
        (void)w;
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], &result, sizeof result);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != static_cast<ssize_t>(sizeof result) || !WIFEXITED(status)) {
        std::fprintf(stderr, "memory probe of %s: the child did not report (status %d)\n",
                     k.name.c_str(), status);
        result = MemoryUse{};
    }
    return result;
}

// ===========================================================================
// Part 3: correctness against the float64 reference of variants_reference.h.

/** The rows (head, query) a check compares: every row of small problems;
 * otherwise the edges of query blocks and key tiles, the middle, the last
 * rows and a few pseudo-random ones, in every head. */
std::vector<std::pair<int, int>> rows_to_check(const Problem &p, const Options &opt) {
    std::vector<std::pair<int, int>> rows;
    const int L = p.seq_q;
    std::vector<int> qs;
    if (static_cast<int64_t>(L) * p.seq_k <= 512 * 512) {
        for (int i = 0; i < L; i++) qs.push_back(i);
    } else {
        for (int i : {0, 1, opt.query_block - 1, opt.query_block, opt.key_tile - 1, opt.key_tile,
                      opt.key_tile + 1, L / 2 - 1, L / 2, L - opt.key_tile, L - 2, L - 1}) {
            qs.push_back(i);
        }
        uint64_t x = 12345 + L;
        for (int n = 0; n < 6; n++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            qs.push_back(static_cast<int>((x >> 33) % L));
        }
    }
    for (int h = 0; h < p.heads; h++) {
        for (int i : qs) {
            if (i >= 0 && i < L) rows.push_back({h, i});
        }
    }
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
}

/** The reference output rows, in the order of `rows`, each head_dim long. A
 * causal row at position pos is the reference over the keys [0, pos] with
 * the query as the last position; a global row is the reference over all
 * keys. */
std::vector<double> reference_rows(const Problem &p, const std::vector<std::pair<int, int>> &rows) {
    const int D = p.head_dim;
    std::vector<double> ref(rows.size() * D);
    for (size_t n = 0; n < rows.size(); n++) {
        const int h = rows[n].first, i = rows[n].second;
        const float *q = p.q.data() + (static_cast<size_t>(h) * p.seq_q + i) * D;
        const float *k = p.k.data() + static_cast<size_t>(h) * p.seq_k * D;
        const float *v = p.v.data() + static_cast<size_t>(h) * p.seq_k * D;
        attention::VariantShape sh;
        sh.head_dim = D;
        sh.seq_q = 1;
        const int pos = i + p.seq_k - p.seq_q;
        sh.seq_k = p.variant == Variant::Global ? p.seq_k : pos + 1;
        attention::variant_reference(p.variant, q, k, v, p.scale, 0, &ref[n * D], sh);
    }
    return ref;
}

/** The tolerance on |a - b| / (1 + |b|). The fp32 outputs measure ~1e-7
 * against float64 (a few 1e-7 at 64k keys); a wrong mask, tile edge or
 * repair moves them by far more than this. */
constexpr double kTolerance = 2e-5;

/** Checks k's output on the rows against the reference; aborts loudly if
 * wrong. Returns the worst |a - b| / (1 + |b|). */
double check_or_abort(const Kernel &k, const Problem &p, const std::string &config,
                      const std::vector<std::pair<int, int>> &rows,
                      const std::vector<double> &ref) {
    const int D = p.head_dim;
    double worst = 0;
    int worst_h = 0, worst_i = 0, worst_d = 0;
    for (size_t n = 0; n < rows.size(); n++) {
        const float *a =
            k.output().data() + (static_cast<size_t>(rows[n].first) * p.seq_q + rows[n].second) * D;
        for (int d = 0; d < D; d++) {
            double b = ref[n * D + d];
            double e = std::abs(a[d] - b) / (1 + std::abs(b));
            if (!(e <= worst)) {  // NaN-sticky
                worst = e;
                worst_h = rows[n].first;
                worst_i = rows[n].second;
                worst_d = d;
            }
        }
    }
    if (!(worst <= kTolerance)) {
        std::fprintf(
            stderr,
            "\n*** WRONG RESULT: %s (%s) on %s: max |a-b|/(1+|b|) = %.3g > %.1g, at "
            "head %d, query %d, d %d: got %.8g, reference %.8g ***\n",
            k.name.c_str(), k.what.c_str(), config.c_str(), worst, kTolerance, worst_h, worst_i,
            worst_d,
            k.output().data()[(static_cast<size_t>(worst_h) * p.seq_q + worst_i) * D + worst_d],
            ref[(std::find(rows.begin(), rows.end(), std::make_pair(worst_h, worst_i)) -
                 rows.begin()) *
                    D +
                worst_d]);
        std::exit(1);
    }
    return worst;
}

// ===========================================================================
// Part 4: the sections.

/** A table printed as aligned text or as Markdown. */
struct Table {
    std::string title;
    std::vector<std::string> head;
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> notes;

    void print(bool markdown) const {
        std::printf("\n%s\n", title.c_str());
        if (markdown) {
            std::printf("\n|");
            for (const auto &h : head) std::printf(" %s |", h.c_str());
            std::printf("\n|");
            for (size_t c = 0; c < head.size(); c++) std::printf("---|");
            std::printf("\n");
            for (const auto &r : rows) {
                std::printf("|");
                for (const auto &x : r) std::printf(" %s |", x.c_str());
                std::printf("\n");
            }
            std::printf("\n");
        } else {
            std::vector<size_t> w(head.size());
            for (size_t c = 0; c < head.size(); c++) {
                w[c] = head[c].size();
                for (const auto &r : rows) w[c] = std::max(w[c], r[c].size());
            }
            auto line = [&](const std::vector<std::string> &r) {
                for (size_t c = 0; c < r.size(); c++) {
                    std::printf(c == 0 ? "%-*s" : "  %*s", static_cast<int>(w[c]), r[c].c_str());
                }
                std::printf("\n");
            };
            line(head);
            for (const auto &r : rows) line(r);
        }
        for (const auto &n : notes) std::printf("%s\n", n.c_str());
        std::fflush(stdout);
    }
};

std::string fmt(const char *f, double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, x);
    return buf;
}

/** The flops a query row needs (two matrix products), counting only the
 * keys its mask lets through. */
double useful_flops(const Problem &p) {
    double keys = 0;
    for (int i = 0; i < p.seq_q; i++) {
        const double pos = i + p.seq_k - p.seq_q;
        keys += p.variant == Variant::Global ? p.seq_k : std::min<double>(pos + 1, p.seq_k);
    }
    return 4.0 * p.heads * p.head_dim * keys;
}

/** The modelled bytes moved between the cores and L3 / DRAM by one run (see
 * README): q read and out written once; every task (query block of one
 * head) streams its head's k and v over the whole key range once (no
 * schedule here skips masked key tiles); a Func stored over the whole key
 * range per query block (the materialized s and p) is written and read back
 * once each, rows x keys x 4 bytes each way; split_k's partials (max, sum
 * and head_dim weighted sums per chunk) likewise. The fused tile scratch
 * (query_block x key_tile) stays in L1 and is not counted. */
double modelled_bytes(const Problem &p, const Kernel &k) {
    const double f = 4;
    const double D = p.head_dim, Lk = p.seq_k;
    const double rows_per_block = std::min(k.query_block, p.seq_q);
    const double blocks = p.heads * std::ceil(p.seq_q / static_cast<double>(k.query_block));
    double bytes = f * p.heads * p.seq_q * D * 2;  // q and out
    bytes += blocks * 2 * Lk * D * f;              // k and v per task
    if (k.stores_scores) {
        bytes += blocks * 2 /*s, p*/ * rows_per_block * Lk * f * 2 /*write + read*/;
    }
    if (k.chunks > 0) bytes += p.heads * p.seq_q * k.chunks * (D + 2) * f * 2;
    if (k.stages_keys) bytes += p.heads * Lk * D * f * 2;  // k read, kt written, once
    return bytes;
}

/** Every kernel compiled, once each (a pipeline serves every size). */
struct Registry {
    explicit Registry(const Options &o) : opt(o) {}
    const Options &opt;
    std::map<std::string, std::unique_ptr<Kernel>> kernels;
    std::vector<std::string> order;  // compile order, for the compile table

    /** chunks: split_k's; head_dim: the tile program's. */
    Kernel &get(Variant var, const std::string &which, int chunks = 0, int head_dim = 0) {
        std::string key = std::string(attention::variant_name(var)) + " " + which;
        if (chunks > 0) key += " " + std::to_string(chunks);
        if (head_dim > 0) key += " D" + std::to_string(head_dim);
        auto it = kernels.find(key);
        if (it != kernels.end()) return *it->second;
        std::unique_ptr<Kernel> k;
        if (which == "rolling") {
            k = std::make_unique<LoomKernel>(var, spec(LoomSchedule::Rolling, opt), opt);
        } else if (which == "materialized") {
            k = std::make_unique<LoomKernel>(var, spec(LoomSchedule::Materialized, opt), opt);
        } else if (which == "rolling, k unstaged") {
            k = std::make_unique<LoomKernel>(var, spec(LoomSchedule::RollingUnstaged, opt), opt);
        } else if (which == "materialized+kt") {
            k = std::make_unique<LoomKernel>(var, spec(LoomSchedule::MaterializedStagedKeys, opt),
                                             opt);
        } else if (which == "tiles") {
            LoomSpec ls = spec(LoomSchedule::Tiles, opt);
            ls.head_dim = head_dim;
            k = std::make_unique<LoomKernel>(var, ls, opt);
        } else if (which == "split_k") {
            k = std::make_unique<LoomKernel>(var, spec(LoomSchedule::SplitK, opt, chunks), opt);
        } else if (which == "split_k tiles") {
            LoomSpec ls = spec(LoomSchedule::SplitKTiles, opt, chunks);
            ls.head_dim = head_dim;
            k = std::make_unique<LoomKernel>(var, ls, opt);
        } else {
#ifdef LOOM_BENCH_HALIDE
            k = std::make_unique<HalideKernel>(var, opt);
#endif
        }
        Kernel &ref = *k;
        kernels[key] = std::move(k);
        order.push_back(key);
        return ref;
    }
};

std::string config_name(const Problem &p) {
    char buf[120];
    std::snprintf(buf, sizeof buf, "%s H=%d Lq=%d Lk=%d D=%d", attention::variant_name(p.variant),
                  p.heads, p.seq_q, p.seq_k, p.head_dim);
    return buf;
}

/** A small problem of the same kind, to start the thread pools with. */
Problem warm_problem(const Problem &p) {
    return make_problem(p.variant, 2, std::min(p.seq_q, 32), 32, p.head_dim);
}

/** Runs every kernel once on p, checks each output, then times them
 * round-robin. Returns the median seconds per kernel. */
std::vector<double> check_and_time(const std::vector<Kernel *> &ks, const Problem &p,
                                   const Options &opt, double *worst_error, int *rounds) {
    const std::string config = config_name(p);
    const auto rows = rows_to_check(p, opt);
    const auto ref = reference_rows(p, rows);
    std::vector<std::function<void()>> runs;
    std::vector<double> first;
    *worst_error = 0;
    for (Kernel *k : ks) {
        k->bind(p);
        double t0 = now_seconds();
        k->run();
        first.push_back(now_seconds() - t0);
        *worst_error = std::max(*worst_error, check_or_abort(*k, p, config, rows, ref));
        runs.push_back([k] { k->run(); });
    }
    return median_times(runs, first, opt.reps, opt.budget, rounds);
}

struct PrefillConfig {
    Variant variant;
    int seq, head_dim;
};

std::vector<PrefillConfig> prefill_configs(const Options &opt) {
    std::vector<int> seqs =
        opt.quick ? std::vector<int>{256, 512} : std::vector<int>{1024, 2048, 4096, 8192};
    std::vector<PrefillConfig> c;
    for (Variant var : {Variant::Causal, Variant::Global}) {
        for (int D : {64, 128}) {
            for (int S : seqs) {
                if (S <= opt.max_seq) c.push_back({var, S, D});
            }
        }
    }
    return c;
}

/** The kernels of one prefill configuration: rolling, materialized and
 * (when built in and not skipped) Halide. */
std::vector<Kernel *> prefill_kernels(Registry &reg, const PrefillConfig &c) {
    std::vector<Kernel *> ks = {&reg.get(c.variant, "rolling"),
                                &reg.get(c.variant, "materialized")};
    const bool skip_halide = c.variant != Variant::Global && c.seq > reg.opt.halide_causal_max_seq;
    if (have_halide && !skip_halide) ks.push_back(&reg.get(c.variant, "Halide"));
    return ks;
}

void prefill_memory(Registry &reg, const Options &opt, Table &mem) {
    mem.title =
        "Peak memory of one prefill run above its inputs and output, MiB (heap: malloc "
        "high-water mark; RSS: ru_maxrss growth, in a forked child)";
    mem.head = {"variant",        "seq",       "D",        "rolling heap", "rolling RSS",
                "rolling allocs", "mat. heap", "mat. RSS", "mat. allocs"};
    if (have_halide)
        mem.head.insert(mem.head.end(), {"Halide heap", "Halide RSS", "Halide allocs"});
    mem.head.push_back("one S x S fp32");
    // The global variant has the same loops and allocations as the causal
    // one (no schedule here skips masked tiles): only the causal one.
    for (const PrefillConfig &c : prefill_configs(opt)) {
        if (c.variant != Variant::Causal) continue;
        Problem p = make_problem(c.variant, opt.prefill_heads, c.seq, c.seq, c.head_dim);
        Problem warm = warm_problem(p);
        std::vector<std::string> row = {attention::variant_name(c.variant), std::to_string(c.seq),
                                        std::to_string(c.head_dim)};
        std::vector<Kernel *> ks = prefill_kernels(reg, c);
        for (size_t n = 0; n < (have_halide ? 3u : 2u); n++) {
            MemoryUse m = n < ks.size() ? probe_memory(*ks[n], p, warm) : MemoryUse{};
            row.push_back(m.measured ? fmt("%.2f", m.heap_mib) : "skip");
            row.push_back(m.measured ? fmt("%.2f", m.rss_mib) : "skip");
            row.push_back(m.measured ? std::to_string(m.allocations) : "skip");
        }
        row.push_back(fmt("%.0f", 4.0 * c.seq * c.seq / 1048576.0));
        mem.rows.push_back(row);
        std::fprintf(stderr, "  memory: %s done\n", config_name(p).c_str());
    }
    char buf[900];
    std::snprintf(buf, sizeof buf,
                  "(%d threads. allocs: heap allocations made by the run. From the schedules: "
                  "materialized stores s and p, query_block x seq floats each, per running task: "
                  "%d x 2 x %d x seq x 4 bytes = %.2f MiB per 1k of seq; rolling stores the keys "
                  "transposed once (stage_keys: heads x seq x D floats, the size of k, 1 MiB per "
                  "1k of seq at D 64 with 4 heads) and allocates and frees its tiles "
                  "(query_block x key_tile floats, %d KiB) at every key tile, so few are live at "
                  "once. The last column is the size of ONE head's full score matrix, for "
                  "scale. skip: Halide causal beyond seq %d, see the prefill table.)",
                  opt.threads, opt.threads, opt.query_block,
                  opt.threads * 2.0 * opt.query_block * 1024 * 4 / 1048576.0,
                  opt.query_block * opt.key_tile * 4 / 1024, opt.halide_causal_max_seq);
    mem.notes.push_back(buf);
}

void prefill_section(Registry &reg, const Options &opt, Table &t) {
    t.title = "Prefill (Lq = Lk = seq), fp32, batch 1, " + std::to_string(opt.prefill_heads) +
              " heads: median ms per run";
    t.head = {"variant", "seq", "D", "rolling ms", "tiles ms", "mat. ms", "mat+kt ms"};
    if (have_halide) t.head.push_back("Halide ms");
    const bool torch = opt.torch && !opt.quick;
    if (torch) t.head.push_back("torch ms");
    t.head.insert(t.head.end(), {"roll/mat", "roll/mat+kt", "tiles/mat"});
    if (have_halide) t.head.push_back("roll/Hal");
    if (torch) t.head.insert(t.head.end(), {"roll/torch", "tiles/torch"});
    t.head.insert(t.head.end(), {"roll GF/s", "tiles GF/s", "mat GF/s"});
    if (have_halide) t.head.push_back("Hal GF/s");
    if (torch) t.head.push_back("torch GF/s");
    t.head.insert(t.head.end(), {"roll MB", "mat MB", "rounds", "max err"});
    std::string torch_note;
    for (const PrefillConfig &c : prefill_configs(opt)) {
        Problem p = make_problem(c.variant, opt.prefill_heads, c.seq, c.seq, c.head_dim);
        std::vector<Kernel *> ks = prefill_kernels(reg, c);
        ks.push_back(&reg.get(c.variant, "materialized+kt"));
        Kernel *tiles = &reg.get(c.variant, "tiles", 0, c.head_dim);
        ks.push_back(tiles);
        double err = 0;
        int rounds = 0;
        std::vector<double> ms = check_and_time(ks, p, opt, &err, &rounds);
        const bool hal = ks.size() > 4;
        const double staged = ms[ms.size() - 2], tiled = ms.back();
        // PyTorch on the same inputs and threads, after Loom's runs; its
        // output is compared with the tile program's.
        apps::TorchResult tr;
        if (torch) {
            tr = apps::time_torch_sdpa(p.q, p.k, p.v, tiles->output(), c.variant != Variant::Global,
                                       opt.threads, std::max(3, opt.reps));
            if (tr.ran) {
                torch_note = "torch " + tr.note + ", " + std::to_string(tr.threads) + " threads";
                err = std::max(err, tr.max_diff);
            } else {
                torch_note = tr.note;
            }
        }
        const double flops = useful_flops(p);
        auto or_dash = [](bool ok, const std::string &x) { return ok ? x : std::string("-"); };
        std::vector<std::string> row = {
            attention::variant_name(c.variant), std::to_string(c.seq),
            std::to_string(c.head_dim),         fmt("%.1f", ms[0] * 1e3),
            fmt("%.1f", tiled * 1e3),           fmt("%.1f", ms[1] * 1e3),
            fmt("%.1f", staged * 1e3)};
        if (have_halide) row.push_back(hal ? fmt("%.1f", ms[2] * 1e3) : "skip");
        if (torch) row.push_back(or_dash(tr.ran, fmt("%.1f", tr.seconds * 1e3)));
        row.push_back(fmt("%.2f", ms[0] / ms[1]));
        row.push_back(fmt("%.2f", ms[0] / staged));
        row.push_back(fmt("%.2f", tiled / ms[1]));
        if (have_halide) row.push_back(hal ? fmt("%.2f", ms[0] / ms[2]) : "-");
        if (torch) {
            row.push_back(or_dash(tr.ran, fmt("%.2f", ms[0] / tr.seconds)));
            row.push_back(or_dash(tr.ran, fmt("%.2f", tiled / tr.seconds)));
        }
        row.push_back(fmt("%.1f", flops / ms[0] * 1e-9));
        row.push_back(fmt("%.1f", flops / tiled * 1e-9));
        row.push_back(fmt("%.1f", flops / ms[1] * 1e-9));
        if (have_halide) row.push_back(hal ? fmt("%.1f", flops / ms[2] * 1e-9) : "-");
        if (torch) row.push_back(or_dash(tr.ran, fmt("%.1f", flops / tr.seconds * 1e-9)));
        row.push_back(fmt("%.0f", modelled_bytes(p, *ks[0]) / 1e6));
        row.push_back(fmt("%.0f", modelled_bytes(p, *ks[1]) / 1e6));
        row.push_back(std::to_string(rounds));
        row.push_back(fmt("%.1e", err));
        t.rows.push_back(row);
        std::fprintf(stderr, "  prefill: %s done\n", config_name(p).c_str());
    }
    t.notes.push_back(
        "(rolling: flash_attention's loops; tiles: flash_attention with head_dim, a tile "
        "program. roll/mat, roll/mat+kt, tiles/mat, roll/Hal, roll/torch, tiles/torch: run-time "
        "ratios; below 1 the Loom schedule is faster. mat+kt: the materialized schedule with "
        "the keys staged transposed at root, the score stage flash_attention uses. GF/s: "
        "useful flops, 4 x heads x D x unmasked query-key pairs, per second. MB: modelled "
        "bytes moved to and from L3/DRAM (README). rounds: timed rounds behind the medians (1: "
        "the checked run alone, when one round takes longer than --budget). max err: worst "
        "|a-b|/(1+|b|) against float64 over the checked rows of every Loom schedule, and "
        "torch's largest |difference| from the tile program's output.)");
    if (torch) {
        t.notes.push_back(
            "(torch: scaled_dot_product_attention on the CPU, fp32, timed by "
            "python3 on the same inputs right after Loom's runs, median of " +
            std::to_string(std::max(3, opt.reps)) + ": " + torch_note + ".)");
    } else if (opt.torch) {
        t.notes.push_back("(torch: not run with --quick.)");
    }
    if (have_halide) {
        t.notes.push_back("(Halide skip: the causal variant beyond seq " +
                          std::to_string(opt.halide_causal_max_seq) +
                          " (--halide-causal-max-seq), where one Halide run takes minutes.)");
    }
}

std::vector<int> decode_lengths(const Options &opt) {
    return opt.quick ? std::vector<int>{1024, 4096} : std::vector<int>{4096, 16384, 65536};
}
std::vector<int> decode_chunks() { return {2, 8, 32}; }
const int decode_heads = 8, decode_head_dim = 128;

std::vector<Kernel *> decode_kernels(Registry &reg) {
    std::vector<Kernel *> ks;
    for (int c : decode_chunks()) ks.push_back(&reg.get(Variant::Causal, "split_k", c));
    ks.push_back(&reg.get(Variant::Causal, "rolling, k unstaged"));
    ks.push_back(&reg.get(Variant::Causal, "materialized"));
    if (have_halide) ks.push_back(&reg.get(Variant::Causal, "Halide"));
    ks.push_back(&reg.get(Variant::Causal, "split_k tiles", 8, decode_head_dim));
    return ks;
}

void decode_section(Registry &reg, const Options &opt, const std::vector<MemoryUse> &memory,
                    Table &t) {
    const std::vector<Kernel *> ks = decode_kernels(reg);
    t.title = "Decode (Lq = 1, causal), fp32, batch 1, " + std::to_string(decode_heads) +
              " heads, D " + std::to_string(decode_head_dim) + ": median ms per run";
    t.head = {"KV len",   "schedule", "ms",      "vs mat.", "GB/s",   "GF/s",
              "model MB", "heap MiB", "RSS MiB", "allocs",  "rounds", "max err"};
    size_t mem_index = 0;
    std::string torch_note;
    for (int Lk : decode_lengths(opt)) {
        Problem p = make_problem(Variant::Causal, decode_heads, 1, Lk, decode_head_dim);
        double err = 0;
        int rounds = 0;
        std::vector<double> ms = check_and_time(ks, p, opt, &err, &rounds);
        const double mat_s = ms[decode_chunks().size() + 1];
        for (size_t n = 0; n < ks.size(); n++) {
            const double bytes = modelled_bytes(p, *ks[n]);
            MemoryUse m = mem_index < memory.size() ? memory[mem_index] : MemoryUse{};
            mem_index++;
            t.rows.push_back({std::to_string(Lk), ks[n]->name, fmt("%.2f", ms[n] * 1e3),
                              fmt("%.2f", ms[n] / mat_s), fmt("%.1f", bytes / ms[n] * 1e-9),
                              fmt("%.2f", useful_flops(p) / ms[n] * 1e-9), fmt("%.0f", bytes / 1e6),
                              m.measured ? fmt("%.2f", m.heap_mib) : "-",
                              m.measured ? fmt("%.2f", m.rss_mib) : "-",
                              m.measured ? std::to_string(m.allocations) : "-",
                              std::to_string(rounds), fmt("%.1e", err)});
        }
        // PyTorch on the same inputs and threads, its output compared with
        // the tile programs'. Not causal there: SDPA's causal mask is
        // aligned to the top left, and one decode query sees every key.
        if (opt.torch && !opt.quick) {
            const apps::TorchResult tr = apps::time_torch_sdpa(
                p.q, p.k, p.v, ks.back()->output(), false, opt.threads, std::max(3, opt.reps));
            const double kv_bytes = 2.0 * decode_heads * double(Lk) * decode_head_dim * 4;
            if (tr.ran) {
                torch_note = "torch " + tr.note + ", " + std::to_string(tr.threads) + " threads";
                t.rows.push_back({std::to_string(Lk), "torch SDPA", fmt("%.2f", tr.seconds * 1e3),
                                  fmt("%.2f", tr.seconds / mat_s),
                                  fmt("%.1f", kv_bytes / tr.seconds * 1e-9),
                                  fmt("%.2f", useful_flops(p) / tr.seconds * 1e-9), "-", "-", "-",
                                  "-", "-", fmt("%.1e", tr.max_diff)});
            } else {
                torch_note = tr.note;
            }
        }
        std::fprintf(stderr, "  decode: %s done\n", config_name(p).c_str());
    }
    if (!torch_note.empty()) {
        t.notes.push_back("(torch SDPA: scaled_dot_product_attention on the CPU, fp32, " +
                          torch_note +
                          "; its GB/s count k and v once, its max err is against "
                          "split_k tiles.)");
    }
    t.notes.push_back(
        "(vs mat.: run time over the materialized schedule's. GB/s: modelled bytes (k and v "
        "once, plus stored intermediates) per second; GF/s: 4 x heads x D x Lk flops per "
        "second. heap/RSS: peak memory of one run, measured as for prefill. max err: worst "
        "over all schedules.)");
}

std::vector<MemoryUse> decode_memory(Registry &reg, const Options &opt) {
    std::vector<MemoryUse> out;
    const std::vector<Kernel *> ks = decode_kernels(reg);
    for (int Lk : decode_lengths(opt)) {
        Problem p = make_problem(Variant::Causal, decode_heads, 1, Lk, decode_head_dim);
        Problem warm = warm_problem(p);
        for (Kernel *k : ks) out.push_back(probe_memory(*k, p, warm));
        std::fprintf(stderr, "  memory: %s done\n", config_name(p).c_str());
    }
    return out;
}

void compile_section(const Registry &reg, Table &t) {
    t.title = "Compile time of each pipeline, seconds";
    t.head = {"pipeline",         "schedule",   "compile s",     "compile_seconds()",
              "fusion_seconds()", "lowering s", "fusion < 50 ms"};
    for (const std::string &key : reg.order) {
        const Kernel &k = *reg.kernels.at(key);
        const bool loom_kernel = k.compile_s >= 0;
        t.rows.push_back({key, k.what, fmt("%.3f", k.compile_wall),
                          loom_kernel ? fmt("%.3f", k.compile_s) : "-",
                          loom_kernel ? fmt("%.4f", k.fusion_s) : "-",
                          loom_kernel ? fmt("%.3f", k.lower_s) : "-",
                          loom_kernel ? (k.fusion_s < 0.05 ? "yes" : "NO") : "-"});
    }
    t.notes.push_back(
        "(compile s: wall time of the first compile, measured here, after one throwaway "
        "compile in each compiler; compile_seconds(): Loom's own count of it; "
        "fusion_seconds(): the part spent finding the chains, deriving and proving the repairs "
        "and rewriting; lowering s: median wall time of 3 recompiles (1 with --quick) that hit "
        "Loom's "
        "code cache, i.e. the front end, fusion included, without LLVM.)");
}

/** --only sweep: flash_attention's options against the materialized
 * schedule with the same key staging, query_block and vector, on causal
 * and global prefill at one length, and flash_decoding's options against
 * rolling on decode. */
void sweep_section(const Options &opt, Table &t, Table &td) {
    const int S = opt.quick ? 512 : std::min(opt.max_seq, 2048);
    t.title = "flash_attention options, prefill, seq " + std::to_string(S) + ", " +
              std::to_string(opt.prefill_heads) +
              " heads (rolling vs materialized+kt with the same query_block and vector, "
              "interleaved)";
    t.head = {"variant",    "D",         "query_block", "key_tile", "vector",
              "rolling ms", "mat+kt ms", "roll/mat+kt", "roll GF/s"};
    struct Point {
        int qb, kt, vec;
    };
    std::vector<Point> points;
    points.push_back({16, 64, 8});  // the templates' default vector
    for (int qb : {8, 16, 32}) {
        for (int kt : {32, 64, 128, 256}) points.push_back({qb, kt, 16});
    }
    for (Variant var : {Variant::Causal, Variant::Global}) {
        for (int D : {64, 128}) {
            Problem p = make_problem(var, opt.prefill_heads, S, S, D);
            for (const Point &pt : points) {
                Options o = opt;
                o.query_block = pt.qb;
                o.key_tile = pt.kt;
                o.vector = pt.vec;
                o.dump_dir.clear();
                LoomKernel rolling(var, spec(LoomSchedule::Rolling, o), o);
                LoomKernel staged(var, spec(LoomSchedule::MaterializedStagedKeys, o), o);
                std::vector<Kernel *> ks = {&rolling, &staged};
                double err = 0;
                int rounds = 0;
                std::vector<double> ms = check_and_time(ks, p, o, &err, &rounds);
                t.rows.push_back({attention::variant_name(var), std::to_string(D),
                                  std::to_string(pt.qb), std::to_string(pt.kt),
                                  std::to_string(pt.vec), fmt("%.1f", ms[0] * 1e3),
                                  fmt("%.1f", ms[1] * 1e3), fmt("%.2f", ms[0] / ms[1]),
                                  fmt("%.1f", useful_flops(p) / ms[0] * 1e-9)});
                std::fprintf(stderr, "  sweep: %s D %d qb %d kt %d vec %d: %.1f / %.1f ms\n",
                             attention::variant_name(var), D, pt.qb, pt.kt, pt.vec, ms[0] * 1e3,
                             ms[1] * 1e3);
            }
        }
    }

    const int Lk = opt.quick ? 4096 : 16384;
    td.title = "flash_decoding options, decode, KV " + std::to_string(Lk) + ", " +
               std::to_string(decode_heads) + " heads, D " + std::to_string(decode_head_dim) +
               " (all interleaved)";
    td.head = {"schedule", "ms", "vs rolling"};
    Problem p = make_problem(Variant::Causal, decode_heads, 1, Lk, decode_head_dim);
    std::vector<std::unique_ptr<Kernel>> owned;
    Options o = opt;
    o.dump_dir.clear();
    owned.push_back(
        std::make_unique<LoomKernel>(Variant::Causal, spec(LoomSchedule::RollingUnstaged, o), o));
    for (int chunks : {2, 8, 32}) {
        for (int kt : {64, 256, 1024}) {
            LoomSpec sp = spec(LoomSchedule::SplitK, o, chunks);
            sp.key_tile = kt;
            owned.push_back(std::make_unique<LoomKernel>(Variant::Causal, sp, o));
        }
    }
    std::vector<Kernel *> ks;
    for (auto &k : owned) ks.push_back(k.get());
    double err = 0;
    int rounds = 0;
    std::vector<double> ms = check_and_time(ks, p, opt, &err, &rounds);
    for (size_t n = 0; n < ks.size(); n++) {
        td.rows.push_back({ks[n]->what, fmt("%.2f", ms[n] * 1e3), fmt("%.2f", ms[n] / ms[0])});
    }
}

// ===========================================================================
// Part 5: main.

int usage(const char *argv0) {
    std::fprintf(stderr,
                 "usage: %s [--reps N] [--quick] [--threads N] [--budget SECONDS]\n"
                 "          [--only prefill|decode|compile|sweep] [--no-memory] [--no-torch]\n"
                 "          [--max-seq N]\n"
                 "          [--query-block N] [--key-tile N] [--vector N] [--heads N]\n"
                 "          [--halide-causal-max-seq N]\n"
                 "          [--exact] [--markdown] [--dump DIR]\n",
                 argv0);
    return 2;
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
        auto next_int = [&](int lo) { return std::max(lo, std::atoi(next().c_str())); };
        if (s == "--reps") opt.reps = next_int(1);
        else if (s == "--quick") opt.quick = true;
        else if (s == "--threads") opt.threads = next_int(1);
        else if (s == "--budget") opt.budget = std::atof(next().c_str());
        else if (s == "--only") opt.only = next();
        else if (s == "--no-memory") opt.memory = false;
        else if (s == "--no-torch") opt.torch = false;
        else if (s == "--max-seq") opt.max_seq = next_int(1);
        else if (s == "--query-block") opt.query_block = next_int(1);
        else if (s == "--key-tile") opt.key_tile = next_int(1);
        else if (s == "--vector") opt.vector = next_int(1);
        else if (s == "--heads") opt.prefill_heads = next_int(1);
        else if (s == "--halide-causal-max-seq") opt.halide_causal_max_seq = next_int(0);
        else if (s == "--exact") opt.exact = true;
        else if (s == "--markdown") opt.markdown = true;
        else if (s == "--dump") opt.dump_dir = next();
        else return usage(argv[0]);
    }
    if (!opt.only.empty() && opt.only != "prefill" && opt.only != "decode" &&
        opt.only != "compile" && opt.only != "sweep") {
        return usage(argv[0]);
    }
    if (!opt.dump_dir.empty() && !loom_bench::make_dump_dir(opt.dump_dir)) return 2;
    if (opt.quick) {
        opt.reps = std::min(opt.reps, 3);
        opt.budget = std::min(opt.budget, 1.0);
        opt.prefill_heads = std::min(opt.prefill_heads, 2);
    }
    if (opt.threads == 0) opt.threads = std::max(1u, std::thread::hardware_concurrency());
    // Both thread pools read these when they start (at the first parallel
    // run): set them before anything runs.
    const std::string nt = std::to_string(opt.threads);
    setenv("LOOM_NUM_THREADS", nt.c_str(), 1);
    setenv("HL_NUM_THREADS", nt.c_str(), 1);
    auto want = [&](const char *section) { return opt.only.empty() || opt.only == section; };

    std::printf(
        "Fused vs materialized attention, CPU, %d threads, median of up to %d runs "
        "(at most %.0f s of timed runs per configuration)\n",
        opt.threads, opt.reps, opt.budget);
    std::printf("Loom target   %s\n", loom_target(opt).to_string().c_str());
#ifdef LOOM_BENCH_HALIDE
    std::printf("Halide %s target %s\n", LOOM_HALIDE_VERSION,
                HL::get_jit_target_from_environment().to_string().c_str());
#else
    std::printf("Halide: not built in (no Halide 14 found); Loom schedules only\n");
#endif
    std::fflush(stdout);

    Registry reg(opt);
    Table prefill, prefill_mem, decode, compile, sweep, sweep_decode;
    try {
        // Compile everything first (pipelines take their sizes at run time,
        // so one compile serves every size), after a throwaway compile in
        // each compiler.
        warm_up_loom();
#ifdef LOOM_BENCH_HALIDE
        warm_up_halide();
#endif
        std::fprintf(stderr, "compiling...\n");
        if (want("prefill") || want("decode") || want("compile")) {
            for (Variant var : {Variant::Causal, Variant::Global}) {
                reg.get(var, "rolling");
                reg.get(var, "materialized");
                reg.get(var, "materialized+kt");
                if (have_halide) reg.get(var, "Halide");
            }
            decode_kernels(reg);
        }
        for (const std::string &key : reg.order) {
            std::printf("  %-26s %s\n", key.c_str(), reg.kernels.at(key)->what.c_str());
        }
        // Memory first, in forked children: nothing may have run in
        // parallel in this process before (see probe_memory).
        std::vector<MemoryUse> decode_mem;
        if (opt.memory && (want("prefill") || want("decode"))) {
            std::fprintf(stderr, "measuring peak memory in forked children...\n");
            if (want("prefill")) prefill_memory(reg, opt, prefill_mem);
            if (want("decode")) decode_mem = decode_memory(reg, opt);
        }
        if (want("prefill")) {
            prefill_section(reg, opt, prefill);
            prefill.print(opt.markdown);
            if (!prefill_mem.rows.empty()) prefill_mem.print(opt.markdown);
        }
        if (want("decode")) {
            decode_section(reg, opt, decode_mem, decode);
            decode.print(opt.markdown);
        }
        if (want("compile")) {
            compile_section(reg, compile);
            compile.print(opt.markdown);
        }
        if (opt.only == "sweep") {
            sweep_section(opt, sweep, sweep_decode);
            sweep.print(opt.markdown);
            sweep_decode.print(opt.markdown);
        }
    } catch (const loom::Error &e) {
        std::fprintf(stderr, "Loom error: %s\n", e.what());
        return 1;
#ifdef LOOM_BENCH_HALIDE
    } catch (const HL::Error &e) {
        std::fprintf(stderr, "Halide error: %s\n", e.what());
        return 1;
#endif
    }
    for (const std::string &key : reg.order) {
        const Kernel &k = *reg.kernels.at(key);
        if (k.fusion_s >= 0.05) {
            std::printf("NOTE: %s spent %.3f s deriving repairs (over 50 ms)\n", key.c_str(),
                        k.fusion_s);
        }
    }
    return 0;
}
