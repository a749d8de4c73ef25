// Vector code generation: dense loads/stores, broadcasts, gathers/scatters,
// predicated (masked) accesses, vector reductions, and the registers used.
#include <cmath>
#include <cstring>
#include <limits>

#include "codegen_test_util.h"

using namespace cgtest;

namespace {

bool host_has(Target::Feature f) { return Target::host().has_feature(f); }

// for xo in [0, n/L): out[ramp(xo*L, 1, L)] = f(ramp index)
Stmt vector_loop(const std::string &out, int lanes, const std::function<Expr(Expr)> &f) {
    Expr xo = var("xo");
    Expr idx = Ramp::make(xo * i32(lanes), i32(1), lanes);
    return loop("xo", i32(0), Div::make(var(out + ".extent.0"), i32(lanes)),
                store(out, f(idx), idx));
}

}  // namespace

TEST(CodeGenVector, DenseFloatAndIntAVX2) {
    if (!host_has(Target::AVX2)) GTEST_SKIP() << "no AVX2";
    Stmt s = Block::make(vector_loop("outf", 8,
                                     [](Expr idx) {
                                         return load(Float(32, 8), "inf", idx) *
                                                    Broadcast::make(f32(2), 8) +
                                                Broadcast::make(f32(1), 8);
                                     }),
                         vector_loop("outi", 8, [](Expr idx) {
                             return load(Int(32, 8), "ini", idx) * Broadcast::make(i32(3), 8) - idx;
                         }));
    auto m = compile("vec8",
                     {buffer_arg("inf", Float(32), 1), buffer_arg("outf", Float(32), 1),
                      buffer_arg("ini", Int(32), 1), buffer_arg("outi", Int(32), 1)},
                     s, Target("x86-64-linux-avx2"));
    std::vector<float> inf(64), outf(64);
    std::vector<int> ini(64), outi(64);
    for (int i = 0; i < 64; i++) {
        inf[i] = i * 0.25f - 3;
        ini[i] = i * 7 - 100;
    }
    Buf a(inf.data(), Float(32), {64}), b(outf.data(), Float(32), {64}),
        c(ini.data(), Int(32), {64}), d(outi.data(), Int(32), {64});
    ASSERT_EQ(run(m, {a.arg(), b.arg(), c.arg(), d.arg()}), 0);
    for (int i = 0; i < 64; i++) {
        EXPECT_EQ(outf[i], inf[i] * 2 + 1);
        EXPECT_EQ(outi[i], ini[i] * 3 - i);
    }
    EXPECT_NE(m->assembly().find("ymm"), std::string::npos);
    EXPECT_EQ(m->assembly().find("zmm"), std::string::npos);
    // Contiguous accesses must be plain vector loads, not gathers.
    EXPECT_EQ(m->llvm_ir().find("masked.gather"), std::string::npos);
    EXPECT_NE(m->llvm_ir().find("load <8 x float>"), std::string::npos);
}

TEST(CodeGenVector, SixteenLanesUseZmmOnAVX512) {
    if (!host_has(Target::AVX512)) GTEST_SKIP() << "no AVX-512";
    Stmt s = vector_loop("out", 16, [](Expr idx) {
        return load(Float(32, 16), "in", idx) * load(Float(32, 16), "in", idx) +
               Broadcast::make(f32(0.5f), 16);
    });
    auto m = compile("vec16", {buffer_arg("in", Float(32), 1), buffer_arg("out", Float(32), 1)}, s,
                     Target("x86-64-linux-avx512"));
    std::vector<float> in(64), out(64);
    for (int i = 0; i < 64; i++) in[i] = i * 0.5f;
    Buf a(in.data(), Float(32), {64}), b(out.data(), Float(32), {64});
    ASSERT_EQ(run(m, {a.arg(), b.arg()}), 0);
    for (int i = 0; i < 64; i++) EXPECT_EQ(out[i], in[i] * in[i] + 0.5f);
    EXPECT_NE(m->assembly().find("zmm"), std::string::npos);
}

TEST(CodeGenVector, StridedGatherScatterAndReverse) {
    // out[ramp(x*8, 1, 8)] = in[ramp(2*x*8, 2, 8)] + in[ramp(n-1-x*8, -1, 8)]
    // scat[ramp(x*8*3, 3, 8)] = in[idx[ramp(x*8, 1, 8)]]   (a data-dependent gather)
    Expr xo = var("xo");
    Expr dense = Ramp::make(xo * i32(8), i32(1), 8);
    Expr even = Ramp::make(xo * i32(16), i32(2), 8);
    Expr rev = Ramp::make(i32(63) - xo * i32(8), i32(-1), 8);
    Expr gathered = load(Float(32, 8), "in", load(Int(32, 8), "idx", dense));
    Stmt body = Block::make(
        store("out", load(Float(32, 8), "in", even) + load(Float(32, 8), "in", rev), dense),
        store("scat", gathered, Ramp::make(xo * i32(24), i32(3), 8)));
    Stmt s = loop("xo", i32(0), i32(4), body);
    for (const char *ts : {"host", "x86-64-linux", "x86-64-linux-avx2"}) {
        if (std::string(ts) == "x86-64-linux-avx2" && !host_has(Target::AVX2)) continue;
        auto m = compile("gather",
                         {buffer_arg("in", Float(32), 1), buffer_arg("idx", Int(32), 1),
                          buffer_arg("out", Float(32), 1), buffer_arg("scat", Float(32), 1)},
                         s, Target(ts));
        std::vector<float> in(64), out(32, -1), scat(96, -1);
        std::vector<int> idx(32);
        for (int i = 0; i < 64; i++) in[i] = i * 1.5f;
        for (int i = 0; i < 32; i++) idx[i] = (i * 37) % 64;
        Buf a(in.data(), Float(32), {64}), b(idx.data(), Int(32), {32}),
            c(out.data(), Float(32), {32}), d(scat.data(), Float(32), {96});
        ASSERT_EQ(run(m, {a.arg(), b.arg(), c.arg(), d.arg()}), 0);
        for (int i = 0; i < 32; i++) {
            EXPECT_EQ(out[i], in[2 * i] + in[63 - i]) << i;
            EXPECT_EQ(scat[3 * i], in[idx[i]]) << i;
            EXPECT_EQ(scat[3 * i + 1], -1);
        }
    }
}

TEST(CodeGenVector, StridedLoadIsScalarLoadsNotAGather) {
    // out[ramp(x*16, 1, 16)] = in[ramp(x*16*s + 1, s, 16)] with a stride s known
    // only at run time (a column of a row-major matrix): one scalar load per
    // lane at pointer increments of s, as Halide emits it, not a vgather.
    Expr xo = var("xo"), st = var("s");
    Expr dense = Ramp::make(xo * i32(16), i32(1), 16);
    Expr strided = Ramp::make(xo * i32(16) * st + i32(1), st, 16);
    Stmt s = loop("xo", i32(0), i32(2), store("out", load(Float(32, 16), "in", strided), dense));
    auto m = compile(
        "strided",
        {buffer_arg("in", Float(32), 1), scalar_arg("s", Int(32)), buffer_arg("out", Float(32), 1)},
        s, Target("host"));
    EXPECT_EQ(m->llvm_ir().find("masked.gather"), std::string::npos) << m->llvm_ir();
    for (int stride : {1, 3, 7}) {
        std::vector<float> in(32 * stride + 2), out(32, -1);
        for (size_t i = 0; i < in.size(); i++) in[i] = i * 0.5f;
        Buf a(in.data(), Float(32), {static_cast<int>(in.size())}), c(out.data(), Float(32), {32});
        int32_t sv = stride;
        ASSERT_EQ(run(m, {a.arg(), &sv, c.arg()}), 0);
        for (int i = 0; i < 32; i++) EXPECT_EQ(out[i], in[i * stride + 1]) << stride << " " << i;
    }
}

TEST(CodeGenVector, PredicatedLoadsAndStores) {
    // A ragged tail done with masks: for xo in [0, ceil(n/8)):
    //   m = ramp(xo*8, 1, 8) < n
    //   out[ramp] = in[ramp] (masked) * 2   (masked store)
    // Also a masked gather/scatter (stride 2) and a scalar predicated load.
    Expr xo = var("xo"), n = var("n");
    Expr r = Ramp::make(xo * i32(8), i32(1), 8);
    Expr mask = LT::make(r, Broadcast::make(n, 8));
    Expr r2 = Ramp::make(xo * i32(16), i32(2), 8);
    Stmt body = Block::make(
        store("out", load(Float(32, 8), "in", r, mask) * Broadcast::make(f32(2), 8), r, mask),
        store("out2", load(Int(32, 8), "in2", r2, mask) + Broadcast::make(i32(1), 8), r2, mask));
    Stmt s = loop("xo", i32(0), Div::make(n + i32(7), i32(8)), body);
    Expr x = var("x");
    s = Block::make(
        s,
        loop("x", i32(0), i32(8),
             store("out3",
                   Select::make(LT::make(x, n), load(Int(32), "in2", x, LT::make(x, n)), i32(-7)),
                   x, LT::make(x, i32(5)))));
    for (const char *ts : {"host", "x86-64-linux", "x86-64-linux-avx2"}) {
        if (std::string(ts) == "x86-64-linux-avx2" && !host_has(Target::AVX2)) continue;
        auto m = compile("masked",
                         {scalar_arg("n", Int(32)), buffer_arg("in", Float(32), 1),
                          buffer_arg("out", Float(32), 1), buffer_arg("in2", Int(32), 1),
                          buffer_arg("out2", Int(32), 1), buffer_arg("out3", Int(32), 1)},
                         s, Target(ts));
        EXPECT_NE(m->llvm_ir().find("masked"), std::string::npos);
        for (int n_val : {0, 3, 8, 13, 16}) {
            // Exactly n elements exist: a read or write past them would be caught
            // by the guard values.
            std::vector<float> in(n_val + 8, 1e30f), out(n_val + 8, -1);
            for (int i = 0; i < n_val; i++) in[i] = i + 0.5f;
            std::vector<int> in2(2 * n_val + 16, 1000000), out2(2 * n_val + 16, -1), out3(8, -5);
            for (int i = 0; i < 2 * n_val; i++) in2[i] = i;
            Buf a(in.data(), Float(32), {n_val}), b(out.data(), Float(32), {n_val}),
                c(in2.data(), Int(32), {2 * n_val}), d(out2.data(), Int(32), {2 * n_val}),
                e(out3.data(), Int(32), {8});
            ASSERT_EQ(run(m, {&n_val, a.arg(), b.arg(), c.arg(), d.arg(), e.arg()}), 0);
            for (int i = 0; i < n_val + 8; i++)
                EXPECT_EQ(out[i], i < n_val ? (i + 0.5f) * 2 : -1) << n_val << " " << i;
            for (int i = 0; i < 2 * n_val + 16; i++) {
                int want = (i % 2 == 0 && i / 2 < n_val) ? i + 1 : -1;
                EXPECT_EQ(out2[i], want) << n_val << " " << i;
            }
            for (int i = 0; i < 8; i++) EXPECT_EQ(out3[i], i < 5 ? (i < n_val ? i : -7) : -5);
        }
    }
}

TEST(CodeGenVector, BroadcastIndexAndRampValues) {
    // out[ramp] = in[broadcast(x)] + float(ramp(x, 1, 8)); also a float Ramp.
    Expr xo = var("xo");
    Expr r = Ramp::make(xo * i32(8), i32(1), 8);
    Expr v = load(Float(32, 8), "in", Broadcast::make(xo, 8)) + Cast::make(Float(32, 8), r) +
             Ramp::make(f32(0.5f), f32(0.25f), 8);
    Stmt s = loop("xo", i32(0), i32(3), store("out", v, r));
    auto m = compile("bcast", {buffer_arg("in", Float(32), 1), buffer_arg("out", Float(32), 1)}, s);
    std::vector<float> in = {100, 200, 300}, out(24);
    Buf a(in.data(), Float(32), {3}), b(out.data(), Float(32), {24});
    ASSERT_EQ(run(m, {a.arg(), b.arg()}), 0);
    for (int i = 0; i < 24; i++) EXPECT_EQ(out[i], in[i / 8] + i + 0.5f + 0.25f * (i % 8));
}

TEST(CodeGenVector, VectorReduce) {
    // sums[xo] = sum of in[ramp(xo*8,1,8)]; pairs[2xo..] = 2-lane sums of groups of 4;
    // min/max/mul/and/or of 8 lanes.
    Expr xo = var("xo");
    Expr r = Ramp::make(xo * i32(8), i32(1), 8);
    Expr vf = load(Float(32, 8), "in", r);
    Expr vi = load(Int(32, 8), "ini", r);
    Expr vb = GT::make(vi, Broadcast::make(i32(3), 8));
    Stmt body = Block::make({
        store("sum", VectorReduce::make(VectorReduce::Add, vf, 1), xo),
        store("pairs", VectorReduce::make(VectorReduce::Add, vi, 2),
              Ramp::make(xo * i32(2), i32(1), 2)),
        store("quads", VectorReduce::make(VectorReduce::Max, vi, 4),
              Ramp::make(xo * i32(4), i32(1), 4)),
        store("triple", VectorReduce::make(VectorReduce::Add, Ramp::make(xo, i32(1), 6), 2),
              Ramp::make(xo * i32(2), i32(1), 2)),
        store("mn", VectorReduce::make(VectorReduce::Min, vf, 1), xo),
        store("mx", VectorReduce::make(VectorReduce::Max, vi, 1), xo),
        store("prod", VectorReduce::make(VectorReduce::Mul, vi, 1), xo),
        store("all", VectorReduce::make(VectorReduce::And, vb, 1), xo),
        store("any", VectorReduce::make(VectorReduce::Or, vb, 1), xo),
    });
    Stmt s = loop("xo", i32(0), i32(2), body);
    auto m = compile("vreduce",
                     {buffer_arg("in", Float(32), 1), buffer_arg("ini", Int(32), 1),
                      buffer_arg("sum", Float(32), 1), buffer_arg("pairs", Int(32), 1),
                      buffer_arg("quads", Int(32), 1), buffer_arg("triple", Int(32), 1),
                      buffer_arg("mn", Float(32), 1), buffer_arg("mx", Int(32), 1),
                      buffer_arg("prod", Int(32), 1), buffer_arg("all", Bool(), 1),
                      buffer_arg("any", Bool(), 1)},
                     s);
    std::vector<float> in(16), sum(2), mn(2);
    std::vector<int> ini(16), pairs(4), quads(8), triple(4), mx(2), prod(2);
    uint8_t all[2], any[2];
    for (int i = 0; i < 16; i++) {
        in[i] = (i % 5) * 1.5f - 2;
        ini[i] = i < 8 ? (i * 3) % 7 : 4 + i % 3;
    }
    Buf b0(in.data(), Float(32), {16}), b1(ini.data(), Int(32), {16}),
        b2(sum.data(), Float(32), {2}), b3(pairs.data(), Int(32), {4}),
        b4(quads.data(), Int(32), {8}), b5(triple.data(), Int(32), {4}),
        b6(mn.data(), Float(32), {2}), b7(mx.data(), Int(32), {2}), b8(prod.data(), Int(32), {2}),
        b9(all, Bool(), {2}), b10(any, Bool(), {2});
    ASSERT_EQ(run(m, {b0.arg(), b1.arg(), b2.arg(), b3.arg(), b4.arg(), b5.arg(), b6.arg(),
                      b7.arg(), b8.arg(), b9.arg(), b10.arg()}),
              0);
    for (int x = 0; x < 2; x++) {
        float s = 0, lo = 1e30f;
        int hi = -1000, p = 1;
        bool al = true, an = false;
        for (int k = 0; k < 8; k++) {
            s += in[x * 8 + k];
            lo = std::min(lo, in[x * 8 + k]);
            hi = std::max(hi, ini[x * 8 + k]);
            p *= ini[x * 8 + k];
            al = al && ini[x * 8 + k] > 3;
            an = an || ini[x * 8 + k] > 3;
        }
        EXPECT_FLOAT_EQ(sum[x], s);
        EXPECT_EQ(mn[x], lo);
        EXPECT_EQ(mx[x], hi);
        EXPECT_EQ(prod[x], p);
        EXPECT_EQ(all[x], al ? 1 : 0);
        EXPECT_EQ(any[x], an ? 1 : 0);
        for (int j = 0; j < 2; j++) {
            int ps = 0;
            for (int k = 0; k < 4; k++) ps += ini[x * 8 + j * 4 + k];
            EXPECT_EQ(pairs[x * 2 + j], ps);
            EXPECT_EQ(triple[x * 2 + j], 3 * (x + 3 * j) + 3);  // (x+3j) + (x+3j+1) + (x+3j+2)
        }
        for (int j = 0; j < 4; j++)
            EXPECT_EQ(quads[x * 4 + j], std::max(ini[x * 8 + 2 * j], ini[x * 8 + 2 * j + 1]));
    }
}

TEST(CodeGenVector, AutoVectorizedScalarLoop) {
    // With llvm_loop_opt, a plain serial loop over distinct buffers gets
    // vectorized by LLVM (the buffers are known not to alias). Without it
    // (the default) the loop stays as the schedule wrote it: scalar.
    if (!host_has(Target::AVX2)) GTEST_SKIP() << "no AVX2";
    Stmt body = elementwise(
        "out", [](Expr x) { return load(Float(32), "a", x) * load(Float(32), "b", x); });
    std::vector<LoweredArgument> args = {buffer_arg("a", Float(32), 1),
                                         buffer_arg("b", Float(32), 1),
                                         buffer_arg("out", Float(32), 1)};
    auto plain = compile("plainloop", args, body, Target("x86-64-linux-avx2"));
    EXPECT_EQ(plain->assembly().find("vmulps"), std::string::npos) << plain->assembly();
    auto m = compile("autovec", args, body,
                     Target("x86-64-linux-avx2").with_feature(Target::LLVMLoopOpt));
    EXPECT_NE(m->assembly().find("vmulps\t(%"), std::string::npos) << m->assembly();
    EXPECT_EQ(m->llvm_ir().find("vector.memcheck"), std::string::npos);  // no runtime alias checks
    std::vector<float> a(1000), b(1000), out(1000);
    for (int i = 0; i < 1000; i++) {
        a[i] = i;
        b[i] = 1000 - i;
    }
    Buf ba(a.data(), Float(32), {1000}), bb(b.data(), Float(32), {1000}),
        bo(out.data(), Float(32), {1000});
    for (auto *k : {&plain, &m}) {
        std::fill(out.begin(), out.end(), 0.f);
        ASSERT_EQ(run(*k, {ba.arg(), bb.arg(), bo.arg()}), 0);
        for (int i = 0; i < 1000; i++) ASSERT_EQ(out[i], a[i] * b[i]);
    }
}
