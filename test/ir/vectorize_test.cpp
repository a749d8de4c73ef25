// Tests of vectorize_loops: the structure of the vector code it produces, its
// errors, and (through a small loop-IR interpreter) that the vectorized code
// computes what the scalar loop computes.
#include <gtest/gtest.h>

#include "lower/HoistVectorReductions.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "codegen/JITModule.h"
#include "lower/LoweredFunc.h"
#include "lower/PartitionLoops.h"
#include "lower/UnrollLoops.h"
#include "lower/VectorizeLoops.h"
#include "loom/Error.h"
#include "loom/IROperator.h"
#include "loom/runtime/loom_runtime.h"
#include "loop_ir_eval.h"

using namespace loom;
using namespace loom::internal;
using loom_test::collect_nodes;
using loom_test::LoopIREval;

namespace {

// likely(e), built directly.
Expr likely_(const Expr &e) { return Call::make(e.type(), Call::likely, {e}, Call::PureIntrinsic); }

Expr var(const std::string &n, Type t = Int(32)) { return Variable::make(t, n); }
Expr load_f(const std::string &buf, Expr idx) { return Load::make(Float(32), buf, idx, Expr()); }
Expr load_i(const std::string &buf, Expr idx) { return Load::make(Int(32), buf, idx, Expr()); }
Stmt store(const std::string &buf, Expr value, Expr idx) {
    return Store::make(buf, std::move(value), std::move(idx), Expr());
}
Stmt vloop(const std::string &name, Expr mn, Expr ext, Stmt body) {
    return For::make(name, std::move(mn), std::move(ext), ForType::Vectorized, std::move(body));
}
Stmt sloop(const std::string &name, Expr mn, Expr ext, Stmt body) {
    return For::make(name, std::move(mn), std::move(ext), ForType::Serial, std::move(body));
}

bool has_vectorized_loop(const Stmt &s) {
    for (const For *f : collect_nodes<For>(s)) {
        if (f->for_type == ForType::Vectorized) return true;
    }
    return false;
}

std::vector<const VectorReduce *> vector_reduces(const Stmt &s) {
    struct Find : IRVisitor {
        std::vector<const VectorReduce *> found;
        using IRVisitor::visit;
        void visit(const VectorReduce *op) override {
            found.push_back(op);
            IRVisitor::visit(op);
        }
    } find;
    s.accept(&find);
    return find.found;
}

std::vector<double> iota(int n, double scale = 1.0, double offset = 0.0) {
    std::vector<double> v(n);
    for (int i = 0; i < n; i++) v[i] = offset + scale * i;
    return v;
}

// Runs the original and the vectorized statement on copies of the same
// buffers and expects equal results.
void expect_same_results(const Stmt &original, const Stmt &vectorized,
                         const std::map<std::string, std::vector<double>> &buffers,
                         const std::map<std::string, int64_t> &scalars = {}) {
    LoopIREval a, b;
    a.buffers = b.buffers = buffers;
    for (const auto &kv : scalars) {
        a.set_var(kv.first, kv.second);
        b.set_var(kv.first, kv.second);
    }
    a.run(original);
    ASSERT_NO_THROW(b.run(vectorized)) << vectorized;
    for (const auto &kv : buffers) {
        EXPECT_EQ(a.buffers[kv.first], b.buffers[kv.first]) << "buffer " << kv.first << "\n"
                                                            << vectorized;
    }
}

TEST(VectorizeLoops, DenseLoopBecomesRampStore) {
    Expr x = var("f.s0.x");
    Stmt s = vloop("f.s0.x", 0, 8, store("out", load_f("in", x) * 2.0f + 1.0f, x));
    Stmt v = vectorize_loops(s, Target("x86-64-linux-avx2"));
    EXPECT_FALSE(has_vectorized_loop(v));
    EXPECT_TRUE(collect_nodes<For>(v).empty());
    auto stores = collect_nodes<Store>(v);
    ASSERT_EQ(stores.size(), 1u);
    const Ramp *r = stores[0]->index.as<Ramp>();
    ASSERT_NE(r, nullptr) << v;
    EXPECT_EQ(r->lanes, 8);
    EXPECT_TRUE(is_const(r->base, 0));
    EXPECT_TRUE(is_const(r->stride, 1));
    EXPECT_EQ(stores[0]->value.type(), Float(32, 8));
    EXPECT_TRUE(is_const_one(stores[0]->predicate));
    expect_same_results(s, v, {{"in", iota(8, 1.5)}, {"out", std::vector<double>(8, 0)}});
}

TEST(VectorizeLoops, AffineIndexFoldsToRamp) {
    // for y: vectorized x: out[y * 16 + x + 3] = in[x * 2 + y]
    Expr x = var("x"), y = var("y");
    Stmt body = store("out", load_f("in", x * 2 + y), y * 16 + x + 3);
    Stmt s = sloop("y", 0, 4, vloop("x", 0, 8, body));
    Stmt v = vectorize_loops(s, Target("x86-64-linux"));
    auto stores = collect_nodes<Store>(v);
    ASSERT_EQ(stores.size(), 1u);
    const Ramp *r = stores[0]->index.as<Ramp>();
    ASSERT_NE(r, nullptr) << v;
    EXPECT_TRUE(is_const(r->stride, 1));
    // The load index x * 2 + y is a ramp of stride 2.
    const Load *l = stores[0]->value.as<Load>();
    ASSERT_NE(l, nullptr);
    const Ramp *lr = l->index.as<Ramp>();
    ASSERT_NE(lr, nullptr) << v;
    EXPECT_TRUE(is_const(lr->stride, 2));
    // The serial loop over y stays.
    auto loops = collect_nodes<For>(v);
    ASSERT_EQ(loops.size(), 1u);
    EXPECT_EQ(loops[0]->name, "y");
    expect_same_results(s, v, {{"in", iota(32, 0.5)}, {"out", std::vector<double>(64, 0)}});
}

TEST(VectorizeLoops, RampValuedLetStaysARamp) {
    // vectorized xi: let x = xo * 8 + xi in out[x * 2 + 1] = in[x]
    Expr xo = var("xo"), xi = var("xi"), x = var("x");
    Stmt body = LetStmt::make("x", xo * 8 + xi, store("out", load_f("in", x), x * 2 + 1));
    Stmt s = sloop("xo", 0, 2, vloop("xi", 0, 8, body));
    Stmt v = vectorize_loops(s, Target("host"));
    auto lets = collect_nodes<LetStmt>(v);
    ASSERT_EQ(lets.size(), 1u);
    EXPECT_TRUE(lets[0]->value.type().is_scalar()) << "the let binds the ramp's base\n" << v;
    auto stores = collect_nodes<Store>(v);
    ASSERT_EQ(stores.size(), 1u);
    const Ramp *r = stores[0]->index.as<Ramp>();
    ASSERT_NE(r, nullptr) << v;
    EXPECT_TRUE(is_const(r->stride, 2));
    expect_same_results(s, v, {{"in", iota(16, 1.5)}, {"out", std::vector<double>(33, 0)}});
}

TEST(VectorizeLoops, NonZeroMin) {
    Expr x = var("x"), m = var("m");
    Stmt s = vloop("x", m, 4, store("out", load_i("in", x) + x, x));
    Stmt v = vectorize_loops(s, Target("host"));
    EXPECT_FALSE(has_vectorized_loop(v));
    expect_same_results(s, v, {{"in", iota(16, 3)}, {"out", std::vector<double>(16, 0)}},
                        {{"m", 5}});
}

TEST(VectorizeLoops, GuardedVectorIsDenseWhenEveryLaneHoldsElseMasked) {
    // for xo in [0, (n + 7) / 8): vectorized xi in [0, 8):
    //   if (likely_(xo * 8 + xi < n)) out[xo * 8 + xi] = in[xo * 8 + xi] + 1
    Expr xo = var("xo"), xi = var("xi"), n = var("n");
    Expr idx = xo * 8 + xi;
    Stmt guarded = IfThenElse::make(likely_(idx < n), store("out", load_f("in", idx) + 1.0f, idx));
    Stmt s = sloop("xo", 0, (n + 7) / 8, vloop("xi", 0, 8, guarded));
    Stmt v = vectorize_loops(s, Target("host"));
    EXPECT_FALSE(has_vectorized_loop(v));
    // if (xo * 8 + 7 < n) <dense store> else <masked store>: the guard of
    // the whole vector is its last lane's.
    auto ifs = collect_nodes<IfThenElse>(v);
    ASSERT_EQ(ifs.size(), 1u) << v;
    EXPECT_TRUE(ifs[0]->condition.type().is_scalar()) << v;
    auto dense = collect_nodes<Store>(ifs[0]->then_case);
    ASSERT_EQ(dense.size(), 1u) << v;
    EXPECT_TRUE(is_const_one(dense[0]->predicate)) << v;
    ASSERT_NE(dense[0]->index.as<Ramp>(), nullptr) << v;
    auto masked = collect_nodes<Store>(ifs[0]->else_case);
    ASSERT_EQ(masked.size(), 1u) << v;
    EXPECT_EQ(masked[0]->predicate.type(), Bool(8));
    EXPECT_FALSE(is_const(masked[0]->predicate)) << v;
    ASSERT_NE(masked[0]->index.as<Ramp>(), nullptr);
    const Load *l = masked[0]->value.as<Add>() ? masked[0]->value.as<Add>()->a.as<Load>() : nullptr;
    ASSERT_NE(l, nullptr) << v;
    EXPECT_FALSE(is_const(l->predicate)) << "the load under the guard must be masked too";
    // The interpreter checks every unmasked access against the buffer's
    // bounds, so this also checks the masks and the whole-vector guard.
    for (int count : {1, 7, 8, 13, 16, 21}) {
        expect_same_results(s, v, {{"in", iota(count, 2)}, {"out", std::vector<double>(count, 0)}},
                            {{"n", count}});
    }
}

TEST(VectorizeLoops, WholeVectorGuardOfFallingRampsAndLowerBounds) {
    // vectorized x in [0, 8): if (likely_(m <= 20 - x && 13 - x < k))
    //   out[20 - x] = in[20 - x]
    // A falling ramp: every lane holds when its extreme lanes do.
    Expr x = var("x"), m = var("m"), k = var("k");
    Expr idx = 20 - x;
    Stmt s = vloop(
        "x", 0, 8,
        IfThenElse::make(likely_(m <= idx && 13 - x < k), store("out", load_f("in", idx), idx)));
    Stmt v = vectorize_loops(s, Target("host"));
    auto ifs = collect_nodes<IfThenElse>(v);
    ASSERT_EQ(ifs.size(), 1u) << v;
    EXPECT_TRUE(ifs[0]->condition.type().is_scalar()) << v;
    for (int mv : {0, 12, 13, 14, 21}) {
        for (int kv : {5, 6, 13, 14, 30}) {
            expect_same_results(s, v, {{"in", iota(21, 1)}, {"out", std::vector<double>(21, 0)}},
                                {{"m", mv}, {"k", kv}});
        }
    }
}

TEST(VectorizeLoops, IfElseWithLaneCondition) {
    Expr x = var("x");
    Stmt s = vloop("x", 0, 8,
                   IfThenElse::make(x < 3, store("out", 1, x), store("out", load_i("in", x), x)));
    Stmt v = vectorize_loops(s, Target("host"));
    EXPECT_TRUE(collect_nodes<IfThenElse>(v).empty());
    EXPECT_EQ(collect_nodes<Store>(v).size(), 2u);
    expect_same_results(s, v, {{"in", iota(8, 10)}, {"out", std::vector<double>(8, 0)}});
}

TEST(VectorizeLoops, ScalarConditionStaysAnIf) {
    Expr x = var("x"), n = var("n");
    Stmt s = vloop("x", 0, 4, IfThenElse::make(n > 2, store("out", x, x)));
    Stmt v = vectorize_loops(s, Target("host"));
    auto ifs = collect_nodes<IfThenElse>(v);
    ASSERT_EQ(ifs.size(), 1u);
    EXPECT_TRUE(ifs[0]->condition.type().is_scalar());
    expect_same_results(s, v, {{"out", std::vector<double>(4, 0)}}, {{"n", 3}});
}

TEST(VectorizeLoops, LetsSelectsCastsAndCalls) {
    Expr x = var("x"), t = var("t", Float(32)), u = var("u", Float(32));
    // let t = in[x] * 3; let u = float(x) (scalar-independent parts stay scalar)
    // out[x] = select(x % 2 == 0, t + t, -t) + exp(float(x) * 0.1f)
    Expr value = select(x % 2 == 0, t + t, 0.0f - t) + exp(cast<float>(x) * 0.1f) + u;
    Stmt body = LetStmt::make("t", load_f("in", x) * 3.0f,
                              LetStmt::make("u", Expr(2.5f), store("out", value, x)));
    Stmt s = vloop("x", 0, 8, body);
    Stmt v = vectorize_loops(s, Target("host"));
    auto lets = collect_nodes<LetStmt>(v);
    ASSERT_EQ(lets.size(), 2u);
    EXPECT_EQ(lets[0]->value.type(), Float(32, 8));
    EXPECT_EQ(lets[1]->value.type(), Float(32)) << "a lane-independent let stays scalar";
    expect_same_results(s, v, {{"in", iota(8, 0.25)}, {"out", std::vector<double>(8, 0)}});
}

TEST(VectorizeLoops, InnerLoopWithIndependentBoundsIsKept) {
    // vectorized x in [0, 4): for r in [0, 5): acc[x] = acc[x] + in[r * 4 + x]
    Expr x = var("x"), r = var("r");
    Stmt body = sloop("r", 0, 5, store("acc", load_f("acc", x) + load_f("in", r * 4 + x), x));
    Stmt s = vloop("x", 0, 4, body);
    Stmt v = vectorize_loops(s, Target("host"));
    auto loops = collect_nodes<For>(v);
    ASSERT_EQ(loops.size(), 1u);
    EXPECT_EQ(loops[0]->name, "r");
    EXPECT_EQ(loops[0]->for_type, ForType::Serial);
    expect_same_results(s, v, {{"in", iota(20, 1.0)}, {"acc", std::vector<double>(4, 0)}});
}

TEST(VectorizeLoops, InnerLoopWithLaneBoundsIsScalarized) {
    // vectorized x in [0, 4): for r in [0, x): out[x] = out[x] + 2
    Expr x = var("x");
    Stmt body = sloop("r", 0, x, store("out", load_i("out", x) + 2, x));
    Stmt s = vloop("x", 0, 4, body);
    Stmt v = vectorize_loops(s, Target("host"));
    EXPECT_FALSE(has_vectorized_loop(v));
    EXPECT_EQ(collect_nodes<For>(v).size(), 4u) << v;
    expect_same_results(s, v, {{"out", std::vector<double>(4, 1)}});
}

TEST(VectorizeLoops, ScalarizedLoopSeesLaneLets) {
    // vectorized x: let t = x * 2 in for r in [0, t): out[x] = out[x] + 1
    Expr x = var("x"), t = var("t");
    Stmt body = LetStmt::make("t", x * 2, sloop("r", 0, t, store("out", load_i("out", x) + 1, x)));
    Stmt s = vloop("x", 0, 4, body);
    Stmt v = vectorize_loops(s, Target("host"));
    expect_same_results(s, v, {{"out", std::vector<double>(4, 0)}});
}

TEST(VectorizeLoops, AllocationGetsOneCopyPerLane) {
    // vectorized x in [0, 8): allocate tmp[3]; for k: tmp[k] = in[x] + k;
    //                         out[x] = tmp[0] + tmp[1] + tmp[2]
    Expr x = var("x"), k = var("k");
    Stmt fill = sloop("k", 0, 3, store("tmp", load_f("in", x) + cast<float>(k), k));
    Stmt use = store("out", load_f("tmp", 0) + load_f("tmp", 1) + load_f("tmp", 2), x);
    Stmt alloc =
        Allocate::make("tmp", Float(32), MemoryType::Stack, {3}, Expr(), Block::make(fill, use));
    Stmt s = vloop("x", 0, 8, alloc);
    Stmt v = vectorize_loops(s, Target("host"));
    auto allocs = collect_nodes<Allocate>(v);
    ASSERT_EQ(allocs.size(), 1u);
    ASSERT_EQ(allocs[0]->extents.size(), 2u);
    EXPECT_TRUE(is_const(allocs[0]->extents[1], 8));
    for (const Store *st : collect_nodes<Store>(v)) EXPECT_TRUE(st->index.type().is_vector());
    expect_same_results(s, v, {{"in", iota(8, 1.0)}, {"out", std::vector<double>(8, 0)}});
}

TEST(VectorizeLoops, LaneDependentAssertIsScalarized) {
    Expr x = var("x");
    Stmt check = AssertStmt::make(x < 100, error_message({StringImm::make("x too big: "), x}));
    Stmt s = vloop("x", 0, 4, Block::make(check, store("out", x, x)));
    Stmt v = vectorize_loops(s, Target("host"));
    EXPECT_FALSE(has_vectorized_loop(v));
    expect_same_results(s, v, {{"out", std::vector<double>(4, 0)}});
}

// The loads of `buffer` in s: {vector loads, scalar loads}.
std::pair<int, int> loads_of(const Stmt &s, const std::string &buffer) {
    std::pair<int, int> n{0, 0};
    struct Find : IRVisitor {
        const std::string &buffer;
        std::pair<int, int> &n;
        Find(const std::string &b, std::pair<int, int> &n) : buffer(b), n(n) {}
        using IRVisitor::visit;
        void visit(const Load *op) override {
            if (op->name == buffer) (op->type.is_vector() ? n.first : n.second)++;
            IRVisitor::visit(op);
        }
    } find(buffer, n);
    s.accept(&find);
    return n;
}

TEST(VectorizeLoops, ScalarizedLanesShareTheirDenseLoads) {
    // vectorized x in [0, 4): assert(in[x + 1] < 100); out[x] = in[x] * 2.
    // The assert runs lane by lane, but reads its 4 elements of `in` with
    // one vector load before the lanes.
    Expr x = var("x");
    auto checked = [&](const Expr &value) {
        return AssertStmt::make(value < 100.0f, error_message({StringImm::make("big: "), value}));
    };
    Stmt s =
        vloop("x", 0, 4,
              Block::make(checked(load_f("in", x + 1)), store("out", load_f("in", x) * 2.0f, x)));
    Stmt v = vectorize_loops(s, Target("host"));
    EXPECT_EQ(loads_of(v, "in"), std::make_pair(2, 0)) << v;
    auto allocs = collect_nodes<Allocate>(v);
    ASSERT_EQ(allocs.size(), 1u) << v;
    EXPECT_TRUE(is_const(allocs[0]->extents[0], 4)) << v;
    expect_same_results(s, v, {{"in", iota(5, 1.0)}, {"out", std::vector<double>(4, 0)}});

    // Under a lane-dependent condition (a guarded tail), the shared load
    // reads only the lanes the condition keeps (`in` ends at n); where it
    // holds in every lane, all of them.
    Stmt tail = vloop("x", 0, 4, IfThenElse::make(x < var("n"), checked(load_f("in", x))));
    v = vectorize_loops(tail, Target("host"));
    EXPECT_EQ(loads_of(v, "in"), std::make_pair(2, 0)) << v;
    int masked = 0;
    for (const Store *st : collect_nodes<Store>(v)) {
        const Load *l = st->value.as<Load>();
        ASSERT_TRUE(l && l->name == "in") << v;
        masked += !is_const_one(l->predicate);
    }
    EXPECT_EQ(masked, 1) << v;
    for (int n : {0, 3, 4}) {
        expect_same_results(tail, v, {{"in", iota(n, 1.0)}}, {{"n", n}});
    }

    // Each lane reads on its own: a load under a select's branch (which
    // only some lanes may reach), of memory the loop writes, or strided.
    for (const Stmt &body : {checked(select(x < 2, load_f("in", x), 0.0f)),
                             Block::make(checked(load_f("out", x)), store("out", 1.0f, x)),
                             checked(load_f("in", x * 2))}) {
        Stmt apart = vloop("x", 0, 4, body);
        v = vectorize_loops(apart, Target("host"));
        EXPECT_TRUE(collect_nodes<Allocate>(v).empty()) << v;
        expect_same_results(apart, v, {{"in", iota(8, 1.0)}, {"out", std::vector<double>(4, 0)}});
    }
}

TEST(VectorizeLoops, ExtentOfOneSubstitutes) {
    Expr x = var("x");
    Stmt s = vloop("x", 2, 1, store("out", x, x));
    Stmt v = vectorize_loops(s, Target("host"));
    EXPECT_TRUE(collect_nodes<For>(v).empty());
    expect_same_results(s, v, {{"out", std::vector<double>(4, 0)}});
}

TEST(VectorizeLoops, NonConstantExtentIsAnError) {
    Expr x = var("g.s0.x"), n = var("n");
    Stmt s = vloop("g.s0.x", 0, n, store("out", x, x));
    try {
        vectorize_loops(s, Target("host"));
        FAIL() << "expected a CompileError";
    } catch (const CompileError &e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("g.s0.x"), std::string::npos) << msg;
        EXPECT_NE(msg.find("constant extent"), std::string::npos) << msg;
        EXPECT_NE(msg.find("plit it by a constant factor"), std::string::npos) << msg;
    }
}

TEST(VectorizeLoops, UpdateOfOneElementReducesTheLanes) {
    // vectorized r: sum[0] = sum[0] + in[r]. The lanes' terms are combined
    // first (a VectorReduce), then the element is updated once.
    Expr r = var("sum.s1.r");
    Stmt s = vloop("sum.s1.r", 0, 8, store("sum", load_f("sum", 0) + load_f("in", r), 0));
    Stmt v = vectorize_loops(s, Target("host"));
    auto reduces = vector_reduces(v);
    ASSERT_EQ(reduces.size(), 1u) << v;
    EXPECT_EQ(reduces[0]->op, VectorReduce::Add);
    EXPECT_EQ(reduces[0]->value.type().lanes, 8);
    ASSERT_EQ(collect_nodes<Store>(v).size(), 1u);
    EXPECT_TRUE(collect_nodes<Store>(v)[0]->index.type().is_scalar());
    expect_same_results(s, v, {{"sum", {0.5}}, {"in", iota(8, 1.5, -3)}});
    // A term the same in every lane counts once per lane; min is reduced
    // the same way, in either operand order.
    Stmt count = vloop("sum.s1.r", 0, 8, store("sum", load_f("sum", 0) + 1.0f, 0));
    expect_same_results(count, vectorize_loops(count, Target("host")), {{"sum", {2}}});
    Stmt lo =
        vloop("sum.s1.r", 0, 8, store("sum", min(load_f("in", r * 2) - 1.0f, load_f("sum", 0)), 0));
    Stmt vlo = vectorize_loops(lo, Target("host"));
    ASSERT_EQ(vector_reduces(vlo).size(), 1u) << vlo;
    EXPECT_EQ(vector_reduces(vlo)[0]->op, VectorReduce::Min);
    std::vector<double> in = iota(16, -1.25, 7);
    expect_same_results(lo, vlo, {{"sum", {3}}, {"in", in}});
}

TEST(VectorizeLoops, CarriedUpdateThatIsNotAReductionIsAnError) {
    // sum[0] = sum[0] * 0.5 + in[r] depends on the order of the lanes.
    Expr r = var("sum.s1.r");
    Stmt s = vloop("sum.s1.r", 0, 8, store("sum", load_f("sum", 0) * 0.5f + load_f("in", r), 0));
    try {
        vectorize_loops(s, Target("host"));
        FAIL() << "expected a CompileError";
    } catch (const CompileError &e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("sum.s1.r"), std::string::npos) << msg;
        EXPECT_NE(msg.find("dependence through sum"), std::string::npos) << msg;
        EXPECT_NE(msg.find("not an associative operator"), std::string::npos) << msg;
    }
    // The term reads the element too: no reduction of it.
    Stmt square = vloop("sum.s1.r", 0, 8,
                        store("sum", load_f("sum", 0) + load_f("sum", 0) * load_f("in", r), 0));
    EXPECT_THROW(vectorize_loops(square, Target("host")), CompileError);
    // Nor does one whose term reads another element the loop updates: every
    // lane would read it as it was before all of them.
    Stmt chained = vloop("sum.s1.r", 0, 8,
                         Block::make(store("run", load_f("run", 0) + load_f("in", r), 0),
                                     store("sum", load_f("sum", 0) + load_f("run", 0), 0)));
    try {
        vectorize_loops(chained, Target("host"));
        FAIL() << "expected a CompileError";
    } catch (const CompileError &e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("dependence through sum"), std::string::npos) << msg;
    }
}

TEST(HoistVectorReductions, PartialsStayInAVectorAcrossTheLoop) {
    // for ro: vectorized ri: sum[1] = sum[1] + in[ro * 8 + ri]. The serial
    // loop accumulates a vector of partials, reduced once after it.
    Expr ro = var("sum.s1.ro"), ri = var("sum.s1.ri");
    Stmt s = sloop(
        "sum.s1.ro", 0, 5,
        vloop("sum.s1.ri", 0, 8, store("sum", load_f("sum", 1) + load_f("in", ro * 8 + ri), 1)));
    Stmt v = hoist_vector_reductions(vectorize_loops(s, Target("host")));
    auto reduces = vector_reduces(v);
    ASSERT_EQ(reduces.size(), 1u) << v;
    auto loops = collect_nodes<For>(v);
    ASSERT_EQ(loops.size(), 1u) << v;
    EXPECT_TRUE(vector_reduces(loops[0]->body).empty()) << v;
    ASSERT_EQ(collect_nodes<Allocate>(v).size(), 1u) << v;
    expect_same_results(s, v, {{"sum", {0, 0.25}}, {"in", iota(40, 0.5, -9)}});
}

TEST(HoistVectorReductions, ElementUsedInsideTheLoopIsLeftAlone) {
    // The running sum is read in every iteration (a prefix sum per vector),
    // and in the second case its element moves with the loop: either way
    // the partials cannot wait for the loop's end.
    Expr ro = var("sum.s1.ro"), ri = var("sum.s1.ri");
    Stmt update =
        vloop("sum.s1.ri", 0, 4, store("sum", load_f("sum", 0) + load_f("in", ro * 4 + ri), 0));
    Stmt read = sloop("sum.s1.ro", 0, 3, Block::make(update, store("out", load_f("sum", 0), ro)));
    Stmt v = hoist_vector_reductions(vectorize_loops(read, Target("host")));
    EXPECT_TRUE(collect_nodes<Allocate>(v).empty()) << v;
    expect_same_results(read, v, {{"sum", {0}}, {"out", {0, 0, 0}}, {"in", iota(12)}});
    Stmt moving = sloop(
        "sum.s1.ro", 0, 3,
        vloop("sum.s1.ri", 0, 4, store("sum", load_f("sum", ro) + load_f("in", ro * 4 + ri), ro)));
    v = hoist_vector_reductions(vectorize_loops(moving, Target("host")));
    EXPECT_TRUE(collect_nodes<Allocate>(v).empty()) << v;
    expect_same_results(moving, v, {{"sum", {0, 1, 2}}, {"in", iota(12)}});
}

TEST(VectorizeLoops, LoopInvariantStoreStaysScalar) {
    Expr x = var("x");
    Stmt s = vloop("x", 0, 4, Block::make(store("flag", 7, 0), store("out", x, x)));
    Stmt v = vectorize_loops(s, Target("host"));
    auto stores = collect_nodes<Store>(v);
    ASSERT_EQ(stores.size(), 2u);
    EXPECT_TRUE(stores[0]->index.type().is_scalar());
    expect_same_results(s, v, {{"flag", {0}}, {"out", std::vector<double>(4, 0)}});
}

TEST(VectorizeLoops, NestedVectorizedLoopsAreAnError) {
    Expr x = var("x"), y = var("y");
    Stmt s = vloop("y", 0, 4, vloop("x", 0, 4, store("out", x + y * 4, x + y * 4)));
    try {
        vectorize_loops(s, Target("host"));
        FAIL() << "expected a CompileError";
    } catch (const CompileError &e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("x"), std::string::npos) << msg;
        EXPECT_NE(msg.find("y"), std::string::npos) << msg;
    }
}

TEST(VectorizeLoops, UntouchedWithoutVectorizedLoops) {
    Expr x = var("x");
    Stmt s = sloop("x", 0, 4, store("out", x, x));
    EXPECT_TRUE(vectorize_loops(s, Target("host")).same_as(s));
}

// ---------------------------------------------------------------------------
// The vectorized code compiled and run through the JIT, against plain C++.

using FloatBuffers = std::map<std::string, std::vector<float>>;

// Compiles `body` as a function of the given 1-D float32 buffers and int32
// scalars, and runs it on them.
std::shared_ptr<JITModule> jit_run(const Stmt &body, FloatBuffers &buffers,
                                   const std::map<std::string, int32_t> &scalars) {
    static int counter = 0;
    LoweredFunc f;
    f.name = "vectorize_test_" + std::to_string(counter++);
    for (const auto &kv : buffers) f.args.push_back({kv.first, true, Float(32), 1});
    for (const auto &kv : scalars) f.args.push_back({kv.first, false, Int(32), 0});
    f.body = body;
    std::shared_ptr<JITModule> m = JITModule::compile(f, Target("host"));
    std::vector<loom_buffer_t> bufs(buffers.size());
    std::vector<loom_dimension_t> dims(buffers.size());
    std::vector<int32_t> values;
    for (const auto &kv : scalars) values.push_back(kv.second);
    std::vector<void *> args;
    size_t i = 0;
    for (auto &kv : buffers) {
        dims[i] = loom_dimension_t{0, static_cast<int32_t>(kv.second.size()), 1, 0};
        bufs[i] = loom_buffer_t{};
        bufs[i].host = reinterpret_cast<uint8_t *>(kv.second.data());
        bufs[i].type = loom_type_t{loom_type_float, 32, 1};
        bufs[i].dimensions = 1;
        bufs[i].dim = &dims[i];
        args.push_back(&bufs[i]);
        i++;
    }
    for (int32_t &v : values) args.push_back(&v);
    EXPECT_EQ(m->entry()(args.data()), 0);
    return m;
}

// for xo in [0, (n + 7) / 8): vectorized xi in [0, 8):
//   if (likely(xo * 8 + xi < n)) out[xo * 8 + xi] = in[xo * 8 + xi] * 2 + 1
Stmt guarded_tail_loop() {
    Expr xo = var("xo"), xi = var("xi"), n = var("n");
    Expr idx = xo * 8 + xi;
    Stmt guarded =
        IfThenElse::make(likely_(idx < n), store("out", load_f("in", idx) * 2.0f + 1.0f, idx));
    return sloop("xo", 0, (n + 7) / 8, vloop("xi", 0, 8, guarded));
}

TEST(VectorizeLoopsJIT, GuardedTailMaskedAndPartitioned) {
    for (bool partition : {false, true}) {
        Stmt s = guarded_tail_loop();
        if (partition) s = partition_loops(s);
        s = vectorize_loops(s, Target("host"));
        for (int n : {0, 1, 7, 8, 13, 100}) {
            // Exact sizes: a lane written or read past the end would be
            // caught by tools such as ASan, and corrupts nothing here.
            FloatBuffers b{{"in", std::vector<float>(n)}, {"out", std::vector<float>(n, -1.0f)}};
            for (int i = 0; i < n; i++) b["in"][i] = 0.5f * i - 3.0f;
            auto m = jit_run(s, b, {{"n", n}});
            for (int i = 0; i < n; i++) {
                ASSERT_EQ(b["out"][i], (0.5f * i - 3.0f) * 2.0f + 1.0f)
                    << "n = " << n << ", i = " << i << ", partition = " << partition;
            }
            if (n == 100) {
                EXPECT_NE(m->llvm_ir().find("<8 x float>"), std::string::npos) << m->llvm_ir();
            }
        }
    }
}

TEST(VectorizeLoopsJIT, PerLaneAllocationAndInnerLoop) {
    // for xo in [0, 4): vectorized xi in [0, 8): let x = xo * 8 + xi in
    //   allocate tmp[3]; for k in [0, 3): tmp[k] = in[x] * k
    //   out[x] = tmp[0] + tmp[1] + tmp[2] + acc over r in [0, 4) of in[r]
    Expr xo = var("xo"), xi = var("xi"), x = var("x"), k = var("k"), r = var("r");
    Stmt fill = sloop("k", 0, 3, store("tmp", load_f("in", x) * cast<float>(k), k));
    Stmt sum = store("out", load_f("tmp", 0) + load_f("tmp", 1) + load_f("tmp", 2), x);
    Stmt acc = sloop("r", 0, 4, store("out", load_f("out", x) + load_f("in", r), x));
    Stmt alloc = Allocate::make("tmp", Float(32), MemoryType::Stack, {3}, Expr(),
                                Block::make({fill, sum, acc}));
    Stmt s = sloop("xo", 0, 4, vloop("xi", 0, 8, LetStmt::make("x", xo * 8 + xi, alloc)));
    Stmt v = vectorize_loops(s, Target("host"));
    FloatBuffers b{{"in", std::vector<float>(32)}, {"out", std::vector<float>(32)}};
    for (int i = 0; i < 32; i++) b["in"][i] = 1.0f + i;
    jit_run(v, b, {});
    float head = b["in"][0] + b["in"][1] + b["in"][2] + b["in"][3];
    for (int i = 0; i < 32; i++) EXPECT_EQ(b["out"][i], b["in"][i] * 3.0f + head) << i;
}

TEST(VectorizeLoopsJIT, ScalarizedLanesShareADenseLoad) {
    // for xo in [0, 4): vectorized xi in [0, 8): let x = xo * 8 + xi in
    //   assert(in[x] < 1000, ...); out[x] = in[x] + 1
    // The assert runs lane by lane from one vector load of in: on the CPU
    // the per-lane array is promoted to a register, no stack left.
    Expr xo = var("xo"), xi = var("xi"), x = var("x");
    Stmt check = AssertStmt::make(load_f("in", x) < 1000.0f,
                                  error_message({StringImm::make("too big: "), load_f("in", x)}));
    Stmt s =
        sloop("xo", 0, 4,
              vloop("xi", 0, 8,
                    LetStmt::make("x", xo * 8 + xi,
                                  Block::make(check, store("out", load_f("in", x) + 1.0f, x)))));
    Stmt v = vectorize_loops(s, Target("host"));
    ASSERT_EQ(collect_nodes<Allocate>(v).size(), 1u) << v;
    FloatBuffers b{{"in", std::vector<float>(32)}, {"out", std::vector<float>(32)}};
    for (int i = 0; i < 32; i++) b["in"][i] = 3.0f * i - 20.0f;
    auto m = jit_run(v, b, {});
    for (int i = 0; i < 32; i++) EXPECT_EQ(b["out"][i], 3.0f * i - 19.0f) << i;
    const std::string &ir = m->llvm_ir();
    EXPECT_NE(ir.find("extractelement <8 x float>"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("\"in_lanes$0\" = alloca"), std::string::npos) << ir;
    // And the assert still fails where a lane's value does.
    b["in"][13] = 5000.0f;
    LoweredFunc f;
    f.name = "vectorize_test_shared_assert";
    f.args = {{"in", true, Float(32), 1}, {"out", true, Float(32), 1}};
    f.body = v;
    std::shared_ptr<JITModule> failing = JITModule::compile(f, Target("host"));
    std::vector<loom_dimension_t> dims(2, loom_dimension_t{0, 32, 1, 0});
    std::vector<loom_buffer_t> bufs(2);
    void *args[2];
    const char *names[2] = {"in", "out"};
    for (int i = 0; i < 2; i++) {
        bufs[i] = loom_buffer_t{};
        bufs[i].host = reinterpret_cast<uint8_t *>(b[names[i]].data());
        bufs[i].type = loom_type_t{loom_type_float, 32, 1};
        bufs[i].dimensions = 1;
        bufs[i].dim = &dims[i];
        args[i] = &bufs[i];
    }
    EXPECT_NE(failing->entry()(args), 0);
    EXPECT_NE(std::string(loom_last_error_message()).find("too big: 5000"), std::string::npos)
        << loom_last_error_message();
}

TEST(VectorizeLoopsJIT, ScalarizedLoopAndUnroll) {
    // vectorized x in [0, 8): for r in [0, x): out[x] = out[x] + 1, then
    // an unrolled loop inside a vectorized loop.
    Expr x = var("x"), r = var("r"), u = var("u");
    Stmt tri = vloop("x", 0, 8, sloop("r", 0, x, store("out", load_f("out", x) + 1.0f, x)));
    Stmt unrolled = vloop(
        "x", 0, 8,
        For::make("u", 0, 2, ForType::Unrolled, store("out2", cast<float>(x * 2 + u), x * 2 + u)));
    Stmt s = unroll_loops(vectorize_loops(Block::make(tri, unrolled), Target("host")));
    FloatBuffers b{{"out", std::vector<float>(8)}, {"out2", std::vector<float>(16)}};
    jit_run(s, b, {});
    for (int i = 0; i < 8; i++) EXPECT_EQ(b["out"][i], float(i));
    for (int i = 0; i < 16; i++) EXPECT_EQ(b["out2"][i], float(i));
}

}  // namespace
