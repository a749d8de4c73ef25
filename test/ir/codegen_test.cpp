// Code generation through LLVM and the JIT: scalar loops, buffers with
// strides, parameters, allocations, parallel loops, asserts.
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "codegen_test_util.h"
#include "loom/Error.h"

using namespace cgtest;

TEST(CodeGen, ScalarLoop) {
    // out[x] = in[x] * 2 + 1
    Stmt body =
        elementwise("out", [](Expr x) { return load(Float(32), "in", x) * f32(2) + f32(1); });
    auto m = compile("scalar_loop",
                     {buffer_arg("in", Float(32), 1), buffer_arg("out", Float(32), 1)}, body);
    std::vector<float> in(100), out(100, -1);
    for (int i = 0; i < 100; i++) in[i] = i * 0.5f;
    Buf bi(in.data(), Float(32), {100}), bo(out.data(), Float(32), {100});
    ASSERT_EQ(run(m, {bi.arg(), bo.arg()}), 0);
    for (int i = 0; i < 100; i++) EXPECT_EQ(out[i], in[i] * 2 + 1) << i;
    EXPECT_NE(m->llvm_ir().find("define"), std::string::npos);
    EXPECT_FALSE(m->assembly().empty());
}

TEST(CodeGen, EmptyLoopAndEmptyBody) {
    Stmt body = elementwise("out", [](Expr x) { return x; });
    auto m = compile("empty_loop", {buffer_arg("out", Int(32), 1)}, body);
    int dummy = 7;
    Buf bo(&dummy, Int(32), {0});
    EXPECT_EQ(run(m, {bo.arg()}), 0);
    EXPECT_EQ(dummy, 7);
    auto m2 = compile("no_body", {}, Evaluate::make(i32(0)));
    EXPECT_EQ(run(m2, {}), 0);
}

TEST(CodeGen, TwoDimensionsWithStrides) {
    // out(y, x) = in(y, x) + 100 * y, with in padded to a row stride of 13 and
    // both buffers starting at nonzero coordinates.
    const int H = 5, W = 9;
    auto index = [](const std::string &b, Expr y, Expr x) {
        return (y - var(b + ".min.0")) * var(b + ".stride.0") +
               (x - var(b + ".min.1")) * var(b + ".stride.1");
    };
    Expr x = var("x"), y = var("y");
    Stmt s =
        store("out", load(Int(32), "in", index("in", y, x)) + y * i32(100), index("out", y, x));
    s = loop("x", var("out.min.1"), var("out.extent.1"), s);
    s = loop("y", var("out.min.0"), var("out.extent.0"), s);
    auto m = compile("two_d", {buffer_arg("in", Int(32), 2), buffer_arg("out", Int(32), 2)}, s);
    std::vector<int> in(H * 13, -1), out(H * W, -1);
    for (int r = 0; r < H; r++)
        for (int c = 0; c < W; c++) in[r * 13 + c] = r * 1000 + c;
    Buf bi(in.data(), Int(32), {H, W}, {13, 1}, {3, -2}),
        bo(out.data(), Int(32), {H, W}, {}, {3, -2});
    ASSERT_EQ(run(m, {bi.arg(), bo.arg()}), 0);
    for (int r = 0; r < H; r++)
        for (int c = 0; c < W; c++) EXPECT_EQ(out[r * W + c], r * 1000 + c + 100 * (r + 3));
}

TEST(CodeGen, ScalarParams) {
    // out[x] = flag ? in[x] * scale + offset : -1
    Expr x = var("x");
    Expr v = Select::make(
        var("flag", Bool()),
        load(Float(32), "in", x) * var("scale", Float(32)) + Cast::make(Float(32), var("offset")),
        f32(-1));
    Stmt body = loop("x", i32(0), var("out.extent.0"), store("out", v, x));
    auto m = compile("params",
                     {buffer_arg("in", Float(32), 1), scalar_arg("scale", Float(32)),
                      scalar_arg("offset", Int(32)), scalar_arg("flag", Bool()),
                      buffer_arg("out", Float(32), 1)},
                     body);
    std::vector<float> in = {1, 2, 3, 4}, out(4);
    Buf bi(in.data(), Float(32), {4}), bo(out.data(), Float(32), {4});
    float scale = 2.5f;
    int offset = 10;
    bool flag = true;
    ASSERT_EQ(run(m, {bi.arg(), &scale, &offset, &flag, bo.arg()}), 0);
    for (int i = 0; i < 4; i++) EXPECT_EQ(out[i], in[i] * 2.5f + 10);
    flag = false;
    ASSERT_EQ(run(m, {bi.arg(), &scale, &offset, &flag, bo.arg()}), 0);
    for (int i = 0; i < 4; i++) EXPECT_EQ(out[i], -1);

    // int64 and double scalars.
    Stmt b2 = store("o", Cast::make(Float(64), var("a", Int(64))) * var("d", Float(64)), i32(0));
    auto m2 = compile(
        "params64",
        {scalar_arg("a", Int(64)), scalar_arg("d", Float(64)), buffer_arg("o", Float(64), 1)}, b2);
    int64_t a = int64_t(1) << 40;
    double d = 0.25, o = 0;
    Buf bo2(&o, Float(64), {1});
    ASSERT_EQ(run(m2, {&a, &d, bo2.arg()}), 0);
    EXPECT_EQ(o, std::ldexp(1.0, 38));
}

TEST(CodeGen, LetIfThenElseAndBool) {
    // for x: let t = x * 3 in if (t % 2 == 0) out[x] = t else out[x] = -t;
    // flags[x] = (x > 4) && !(x == 7)  (bool buffer: bytes)
    Expr x = var("x"), t = var("t");
    Stmt ite = IfThenElse::make(EQ::make(Mod::make(t, i32(2)), i32(0)), store("out", t, x),
                                store("out", i32(0) - t, x));
    Stmt s = LetStmt::make("t", x * i32(3), ite);
    s = Block::make(
        s, store("flags", And::make(GT::make(x, i32(4)), Not::make(EQ::make(x, i32(7)))), x));
    s = loop("x", i32(0), var("out.extent.0"), s);
    auto m = compile("let_if", {buffer_arg("out", Int(32), 1), buffer_arg("flags", Bool(), 1)}, s);
    std::vector<int> out(10);
    uint8_t flags[10];
    Buf bo(out.data(), Int(32), {10}), bf(flags, Bool(), {10});
    ASSERT_EQ(run(m, {bo.arg(), bf.arg()}), 0);
    for (int i = 0; i < 10; i++) {
        EXPECT_EQ(out[i], (i * 3) % 2 == 0 ? i * 3 : -i * 3);
        EXPECT_EQ(flags[i], (i > 4 && i != 7) ? 1 : 0);
    }
    // A Let expression.
    Stmt s2 =
        loop("x", i32(0), i32(4), store("out", Let::make("u", x + i32(1), var("u") * var("u")), x));
    auto m2 = compile("let_expr", {buffer_arg("out", Int(32), 1)}, s2);
    ASSERT_EQ(run(m2, {bo.arg()}), 0);
    for (int i = 0; i < 4; i++) EXPECT_EQ(out[i], (i + 1) * (i + 1));
}

TEST(CodeGen, ParallelLoop) {
    // out[i] = i * i, parallel over 1000 iterations.
    Expr i = var("i");
    Stmt s = loop("i", i32(0), var("out.extent.0"), store("out", i * i, i), ForType::Parallel);
    auto m = compile("par", {buffer_arg("out", Int(32), 1)}, s);
    std::vector<int> out(1000, -1);
    Buf bo(out.data(), Int(32), {1000});
    ASSERT_EQ(run(m, {bo.arg()}), 0);
    for (int k = 0; k < 1000; k++) ASSERT_EQ(out[k], k * k);
    EXPECT_NE(m->llvm_ir().find("loom_do_par_for"), std::string::npos);
}

TEST(CodeGen, NestedParallelWithFreeVariables) {
    // out(y, x) = y * 100 + x + k, with both loops parallel, and a let and a
    // scalar param used inside.
    Expr x = var("x"), y = var("y");
    Stmt s = store("out", var("row") + x + var("k"), y * var("out.stride.0") + x);
    s = loop("x", i32(0), var("out.extent.1"), s, ForType::Parallel);
    s = LetStmt::make("row", y * i32(100), s);
    s = loop("y", i32(0), var("out.extent.0"), s, ForType::Parallel);
    auto m = compile("nested_par", {scalar_arg("k", Int(32)), buffer_arg("out", Int(32), 2)}, s);
    std::vector<int> out(37 * 41, -1);
    Buf bo(out.data(), Int(32), {37, 41});
    int k = 5;
    ASSERT_EQ(run(m, {&k, bo.arg()}), 0);
    for (int r = 0; r < 37; r++)
        for (int c = 0; c < 41; c++) ASSERT_EQ(out[r * 41 + c], r * 100 + c + 5);
}

TEST(CodeGen, AssertFailureReportsMessage) {
    Expr cond = GE::make(var("in.extent.0"), i32(100));
    Expr msg = error_message({StringImm::make("Input in has extent "), var("in.extent.0"),
                              StringImm::make(", needs at least "), i32(100),
                              StringImm::make(" (scale "), f32(1.5f), StringImm::make(")")});
    Stmt s = Block::make(AssertStmt::make(cond, msg), store("in", f32(42), i32(0)));
    auto m = compile("assert", {buffer_arg("in", Float(32), 1)}, s);
    std::vector<float> in(10, 0);
    Buf bi(in.data(), Float(32), {10});
    int r = run(m, {bi.arg()});
    EXPECT_LT(r, 0);
    EXPECT_STREQ(loom_last_error_message(),
                 "Input in has extent 10, needs at least 100 (scale 1.5)");
    EXPECT_EQ(in[0], 0);  // nothing after the assert ran
    std::vector<float> big(200, 0);
    Buf bb(big.data(), Float(32), {200});
    EXPECT_EQ(run(m, {bb.arg()}), 0);
    EXPECT_EQ(big[0], 42);

    // no_asserts drops the check.
    auto m2 = compile("assert_off", {buffer_arg("in", Float(32), 1)}, s, Target("host-no_asserts"));
    EXPECT_EQ(run(m2, {bi.arg()}), 0);
    EXPECT_EQ(in[0], 42);
}

TEST(CodeGen, AssertInsideParallelLoop) {
    // Iteration 37 fails; the error and its message reach the caller.
    Expr i = var("i");
    Stmt s = Block::make(AssertStmt::make(NE::make(i, i32(37)),
                                          error_message({StringImm::make("bad iteration "), i})),
                         store("out", i, i));
    s = loop("i", i32(0), i32(100), s, ForType::Parallel);
    auto m = compile("par_assert", {buffer_arg("out", Int(32), 1)}, s);
    std::vector<int> out(100, -1);
    Buf bo(out.data(), Int(32), {100});
    for (int rep = 0; rep < 5; rep++) {
        loom_error_begin();  // clear
        EXPECT_LT(run(m, {bo.arg()}), 0);
        EXPECT_STREQ(loom_last_error_message(), "bad iteration 37");
    }
}

TEST(CodeGen, StackAndHeapAllocations) {
    // tmp[x] = in[x] * 3; out[x] = tmp[x] + tmp[n - 1 - x]
    // with a small constant-size allocation (stack), a dynamic size (heap),
    // a dynamic size forced onto the stack, a large constant size (heap), and
    // dynamic sizes with a constant bound: a small one (stack, room for the
    // bound), given directly or through a let around the allocation, a
    // large one (heap, or with Stack the size needed, on the stack).
    auto make = [](std::vector<Expr> extents, MemoryType mt) {
        Expr x = var("x"), n = var("in.extent.0");
        Stmt produce = loop("x", i32(0), n, store("tmp", load(Int(32), "in", x) * i32(3), x));
        Stmt consume =
            loop("x", i32(0), n,
                 store("out", load(Int(32), "tmp", x) + load(Int(32), "tmp", n - i32(1) - x), x));
        Stmt s = Allocate::make("tmp", Int(32), mt, extents, Expr(), Block::make(produce, consume));
        return LetStmt::make("tmp.extent", max(min(n, i32(80)), i32(1)), s);
    };
    std::vector<int> in(64), out(64);
    std::iota(in.begin(), in.end(), 0);
    Buf bi(in.data(), Int(32), {64}), bo(out.data(), Int(32), {64});
    std::vector<std::pair<std::vector<Expr>, MemoryType>> cases = {
        {{i32(8), i32(8)}, MemoryType::Auto},
        {{var("in.extent.0")}, MemoryType::Auto},
        {{var("in.extent.0")}, MemoryType::Stack},
        {{i32(64)}, MemoryType::Heap},
        {{i32(100000)}, MemoryType::Auto},
        {{min(var("in.extent.0"), i32(64))}, MemoryType::Auto},
        {{var("tmp.extent")}, MemoryType::Auto},
        {{min(var("in.extent.0"), i32(100000))}, MemoryType::Auto},
        {{var("tmp.extent")}, MemoryType::Heap},
        {{min(var("in.extent.0"), i32(100000))}, MemoryType::Stack},
    };
    for (size_t c = 0; c < cases.size(); c++) {
        std::fill(out.begin(), out.end(), -1);
        auto m = compile("alloc" + std::to_string(c),
                         {buffer_arg("in", Int(32), 1), buffer_arg("out", Int(32), 1)},
                         make(cases[c].first, cases[c].second));
        ASSERT_EQ(run(m, {bi.arg(), bo.arg()}), 0) << c;
        for (int i = 0; i < 64; i++) ASSERT_EQ(out[i], 3 * i + 3 * (63 - i)) << c;
        bool heap = m->llvm_ir().find("loom_malloc") != std::string::npos;
        EXPECT_EQ(heap, c == 1 || c == 3 || c == 4 || c == 7 || c == 8) << c;
        // A stack allocation of the size it needs (not of a large bound).
        bool sized_at_run_time = m->llvm_ir().find("llvm.stacksave") != std::string::npos;
        EXPECT_EQ(sized_at_run_time, c == 2 || c == 9) << c;
    }
    // An allocation per iteration of a parallel loop (per-thread scratch).
    Expr y = var("y"), x = var("x");
    Stmt inner = Block::make(
        loop("x", i32(0), i32(16), store("t", y * i32(16) + x, x)),
        loop("x", i32(0), i32(16), store("out", load(Int(32), "t", i32(15) - x), y * i32(16) + x)));
    Stmt s = loop("y", i32(0), i32(4),
                  Allocate::make("t", Int(32), MemoryType::Heap, {var("n")}, Expr(), inner),
                  ForType::Parallel);
    auto m = compile("par_alloc", {scalar_arg("n", Int(32)), buffer_arg("out", Int(32), 1)}, s);
    int n = 16;
    ASSERT_EQ(run(m, {&n, bo.arg()}), 0);
    for (int i = 0; i < 64; i++) ASSERT_EQ(out[i], (i / 16) * 16 + 15 - i % 16);
}

TEST(CodeGen, AllocationSizeOverflowIsAnError) {
    Stmt body = store("t", i32(1), i32(0));
    Stmt s = Allocate::make("t", Int(32), MemoryType::Auto, {var("n"), var("n"), var("n")}, Expr(),
                            body);
    auto m = compile("alloc_overflow", {scalar_arg("n", Int(32))}, s);
    int n = 2000000;
    EXPECT_LT(run(m, {&n}), 0);
    EXPECT_NE(std::string(loom_last_error_message()).find("allocation t"), std::string::npos)
        << loom_last_error_message();
    n = -5;
    EXPECT_LT(run(m, {&n}), 0);
    n = 10;
    EXPECT_EQ(run(m, {&n}), 0);
}

TEST(CodeGen, UnrolledAndVectorizedForsRunSerially) {
    Expr x = var("x");
    Stmt s =
        Block::make(loop("x", i32(0), i32(4), store("out", x, x), ForType::Unrolled),
                    loop("x", i32(4), i32(4), store("out", x * i32(2), x), ForType::Vectorized));
    auto m = compile("unrolled", {buffer_arg("out", Int(32), 1)}, s);
    std::vector<int> out(8);
    Buf bo(out.data(), Int(32), {8});
    ASSERT_EQ(run(m, {bo.arg()}), 0);
    for (int i = 0; i < 8; i++) EXPECT_EQ(out[i], i < 4 ? i : 2 * i);
}

TEST(CodeGen, ProducerConsumerAndFree) {
    Expr x = var("x");
    Stmt s =
        ProducerConsumer::make_produce("f", loop("x", i32(0), i32(4), store("out", x + i32(1), x)));
    s = Block::make(s, Free::make("nothing"));
    auto m = compile("pc", {buffer_arg("out", Int(32), 1)}, s);
    std::vector<int> out(4);
    Buf bo(out.data(), Int(32), {4});
    ASSERT_EQ(run(m, {bo.arg()}), 0);
    for (int i = 0; i < 4; i++) EXPECT_EQ(out[i], i + 1);
}

TEST(CodeGen, TargetThatHostCannotRunIsRefused) {
    Target h = Target::host();
    if (h.has_feature(Target::AVX512)) GTEST_SKIP() << "this machine runs every target Loom knows";
    EXPECT_THROW(compile("refused", {}, Evaluate::make(i32(0)), Target("x86-64-linux-avx512")),
                 CompileError);
}

TEST(CodeGen, BaselineTargetsRun) {
    // Every target this machine supports compiles and runs the same code.
    Stmt body = elementwise("out", [](Expr x) {
        return Cast::make(Float(32), x) * f32(0.5f) + floor(Cast::make(Float(32), x) * f32(0.3f));
    });
    for (const char *t : {"x86-64-linux", "x86-64-linux-sse41", "x86-64-linux-avx",
                          "x86-64-linux-avx2", "x86-64-linux-avx512", "host"}) {
        std::string why;
        Target target(t);
        if (target != Target::host() &&
            ((target.has_feature(Target::AVX512) && !Target::host().has_feature(Target::AVX512)) ||
             (target.has_feature(Target::AVX2) && !Target::host().has_feature(Target::AVX2)) ||
             (target.has_feature(Target::AVX) && !Target::host().has_feature(Target::AVX)))) {
            continue;
        }
        auto m = compile("baseline", {buffer_arg("out", Float(32), 1)}, body, target);
        std::vector<float> out(37);
        Buf bo(out.data(), Float(32), {37});
        ASSERT_EQ(run(m, {bo.arg()}), 0) << t;
        for (int i = 0; i < 37; i++) EXPECT_EQ(out[i], i * 0.5f + std::floor(i * 0.3f)) << t;
    }
}

TEST(CodeGen, ConcurrentCompilationAndModuleLifetime) {
    // Several threads compile and run different functions at once; modules
    // stay usable after others are destroyed.
    std::vector<std::shared_ptr<JITModule>> mods(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([t, &mods] {
            Stmt body = elementwise("out", [t](Expr x) { return x * i32(t + 1) + var("k"); });
            mods[t] = compile("conc" + std::to_string(t),
                              {scalar_arg("k", Int(32)), buffer_arg("out", Int(32), 1)}, body);
        });
    }
    for (auto &th : threads) th.join();
    mods[0].reset();
    mods[2].reset();
    for (int t : {1, 3}) {
        std::vector<int> out(16);
        Buf bo(out.data(), Int(32), {16});
        int k = 100;
        ASSERT_EQ(run(mods[t], {&k, bo.arg()}), 0);
        for (int i = 0; i < 16; i++) EXPECT_EQ(out[i], i * (t + 1) + 100);
    }
}

TEST(CodeGen, NameCollidingWithLibmStillWorks) {
    // An entry named like a function its code calls ("pow", "exp").
    for (const char *name : {"pow", "exp", "memset"}) {
        Stmt body = elementwise("out", [](Expr x) {
            return pow(Cast::make(Float(64), x), FloatImm::make(Float(64), 0.5)) +
                   exp(Cast::make(Float(64), x));
        });
        auto m = compile(name, {buffer_arg("out", Float(64), 1)}, body);
        std::vector<double> out(8);
        Buf bo(out.data(), Float(64), {8});
        ASSERT_EQ(run(m, {bo.arg()}), 0);
        for (int i = 0; i < 8; i++)
            EXPECT_DOUBLE_EQ(out[i], std::pow(double(i), 0.5) + std::exp(double(i)));
    }
}
