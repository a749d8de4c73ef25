// GPU schedules the CUDA backend cannot map, and GPU pipelines where they
// cannot run yet: each a CompileError naming the Func or kernel and saying
// what to do.
#include <gtest/gtest.h>

#include "gpu_test_pipelines.h"
#include "loom/runtime/loom_runtime.h"
#include "test_util.h"

using namespace loom;
using loom_test::throws_with;

using loom_test::Blur;

TEST(GpuScheduleErrors, GpuLoopsNeedAGpuTarget) {
    Blur b;
    Schedule sch;
    sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(b.blur_y).compile(sch, Target("x86-64-linux-avx2")); },
        {"Func blur_y", "gpu_blocks", "has no GPU", "host-cuda-sm_90"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(b.blur_y).compile_to_cuda(sch, Target("x86-64-linux")); },
        {"compile_to_cuda needs a target with a GPU"}));
}

TEST(GpuScheduleErrors, ThreadsNeedBlocks) {
    Blur b;
    Schedule sch;
    sch[b.blur_y].split(b.x, b.xo, b.xi, 32).gpu_threads(b.xi);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(sch); }, {"Func blur_y", "gpu_threads loop with no gpu_blocks loop"}));
}

TEST(GpuScheduleErrors, AtMost1024ThreadsPerBlock) {
    Blur b;
    Schedule sch;
    sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 64, 32);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(sch); }, {"32 x 64 x 1 = 2048 threads per block", "at most 1024"}));
    // gpu_threads names threadIdx.x first: blur_x's threads written outer
    // first put 128 threads on y, and the error shows whose they are.
    Schedule mixed;
    mixed[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 128, TailStrategy::GuardWithIf);
    mixed[b.blur_x].compute_at(b.blur_y, b.xo).gpu_threads(b.y, b.x);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(mixed); },
        {"128 x 128 x 1 = 16384 threads per block", "blur_x: 10 x 128 (y, x)",
         "blur_y: 128 x 8 (xi, yi)", "names the loop on threadIdx.x first"}));
}

TEST(GpuScheduleErrors, ThreadLoopsNeedConstantExtents) {
    Blur b;
    Schedule sch;
    sch[b.blur_y].split(b.y, b.yo, b.yi, 4).gpu_blocks(b.yo).gpu_threads(b.x);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(sch); },
        {"Func blur_y's gpu_threads loop blur_y.s0.x", "not a positive constant", "gpu_tile"}));
}

TEST(GpuScheduleErrors, BlockLevelFuncsNeedThreadLoops) {
    // blur_x computed at the block loop is shared by the block; with serial
    // loops every thread would compute all of it.
    Blur b;
    Schedule sch;
    sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32, TailStrategy::ShiftInwards);
    sch[b.blur_x].compute_at(b.blur_y, b.xo);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(sch); },
        {"stores to blur_x outside its gpu_threads loops", "mark its loops with gpu_threads"}));
}

TEST(GpuScheduleErrors, SharedMemoryLimit) {
    // 258 x 256 floats of blur_x per block: 258 KiB, more than any GPU has;
    // 194 x 192 floats (145.5 KiB) fit sm_80 but not sm_86.
    Blur b;
    EXPECT_TRUE(
        throws_with<CompileError>([&] { b.cuda(b.shared_tiles(256)); },
                                  {"needs 264192 bytes of shared memory per block with blur_x",
                                   "sm_90 allows 232448", "Use smaller tiles"}));
    auto compile_for = [&](const char *target) {
        Pipeline(b.blur_y).compile_to_cuda(b.shared_tiles(192), Target(target));
    };
    EXPECT_NO_THROW(compile_for("host-cuda-sm_80"));
    EXPECT_TRUE(throws_with<CompileError>([&] { compile_for("host-cuda-sm_86"); },
                                          {"needs 148992 bytes", "sm_86 allows 101376 (99 KiB)"}));
}

TEST(GpuScheduleErrors, ThreadsCombineOnlyReductions) {
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x");
    RDom r(0, in.dim(1).extent(), "r");
    RVar ro("ro"), ri("ri");
    // Every thread updates decay(y), but not with an associative operator
    // of its own value: the order of the updates matters.
    Func decay("decay");
    decay(y) = 0.0f;
    decay(y) = decay(y) * 0.5f + in(y, r);
    Schedule sch;
    sch[decay].gpu_blocks(y);
    sch[decay].update().split(r, ro, ri, 128).gpu_blocks(y).gpu_threads(ri);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(decay).compile_to_cuda(sch, Target("host-cuda-sm_90")); },
        {"every thread of the gpu_threads loop decay.s1.ri store to the same element of decay",
         "+, *, min, max, && or ||", "make the loop serial"}));
    // A Tuple element updated from the other's old value is no reduction
    // of its own, whichever of the two is stored first.
    for (bool first_reads_second : {false, true}) {
        Func pair = loom_test::tuple_element_reading_the_other(in, y, r, first_reads_second);
        Schedule ps;
        ps[pair].gpu_blocks(y);
        ps[pair].update().split(r, ro, ri, 128).gpu_blocks(y).gpu_threads(ri);
        EXPECT_TRUE(throws_with<CompileError>(
            [&] { Pipeline(pair).compile_to_cuda(ps, Target("host-cuda-sm_90")); },
            {"every thread of the gpu_threads loop pair.s1.ri store to the same element of pair"}));
    }
    // An argmax whose index takes the point under another test than its
    // extreme does keeps no one point: the threads cannot share it.
    Func skewed("skewed");
    skewed(y) = Tuple(0, type_min(Float(32)));
    Expr v = in(y, r);
    skewed(y) = Tuple(select(v > skewed(y)[1], Expr(r), skewed(y)[0]),
                      select(v >= skewed(y)[1], v, skewed(y)[1]));
    Schedule ss;
    ss[skewed].gpu_blocks(y);
    ss[skewed].update().split(r, ro, ri, 128).gpu_blocks(y).gpu_threads(ri);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(skewed).compile_to_cuda(ss, Target("host-cuda-sm_90")); },
        {"every thread of the gpu_threads loop skewed.s1.ri store to the same element",
         "keep the point where a value reaches its max or min"}));
    // A histogram's threads may collide on a bin that depends on r: refused
    // when scheduled.
    Func hist("hist");
    hist(x) = 0;
    hist(clamp(cast<int>(in(0, r)), 0, 9)) += 1;
    Schedule hs;
    EXPECT_TRUE(
        throws_with<CompileError>([&] { hs[hist].update().split(r, ro, ri, 128).gpu_threads(ri); },
                                  {"cannot gpu_threads loop 'ri'", "carries a dependence"}));
}

TEST(GpuScheduleErrors, NoGpuLoopsInsideAnotherFuncsLoopsOfTheSameKind) {
    // A reduction computed in each thread of its consumer, its RVar over
    // threads too: each thread's partial stayed its own, and every thread
    // wrote the row with its own partial.
    BufferParam in(Float(32), 2, "in");
    Var y("y"), yo("yo"), yi("yi");
    RDom r(0, in.dim(1).extent(), "r");
    RVar ro("ro"), ri("ri");
    Func total("total"), out("out");
    total(y) = 0.0f;
    total(y) += in(y, r);
    out(y) = total(y) + 1.0f;
    Schedule sch;
    sch[out].split(y, yo, yi, 4).gpu_blocks(yo).gpu_threads(yi);
    sch[total].compute_at(out, yi);
    sch[total].update().split(r, ro, ri, 32).gpu_threads(ri);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(out).compile_to_cuda(sch, Target("host-cuda-sm_90")); },
        {"Func total's gpu_threads loop total.s1.ri is inside the gpu_threads loop out.s0.yi of "
         "Func out",
         "compute_at(out, yo)", "gpu_threads(ri, y)"}));
    // A pure producer the same way: each thread wrote one element of its
    // own copy and read two.
    Blur b;
    Schedule pure;
    pure[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
    pure[b.blur_x].compute_at(b.blur_y, b.xi).gpu_threads(b.y);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(pure); },
        {"Func blur_x's gpu_threads loop blur_x.s0.y is inside the gpu_threads loop blur_y.s0.xi",
         "compute_at(blur_y, xo)"}));
    // Nor blocks inside another Func's blocks: the message named a serial
    // loop of the producer instead.
    Schedule blocks;
    blocks[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
    blocks[b.blur_x].compute_at(b.blur_y, b.xo).gpu_blocks(b.x);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(blocks); },
        {"Func blur_x's gpu_blocks loop blur_x.s0.x is inside the gpu_blocks loop blur_y.s0.xo",
         "compute_at(blur_y, xo).gpu_threads(x, y)", "compute it at root"}));
    // One stage's own thread loops nest, as gpu_tile makes them.
    Schedule own;
    own[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
    own[b.blur_x].compute_at(b.blur_y, b.xo).gpu_threads(b.x, b.y);
    EXPECT_NO_THROW(b.cuda(own));
}

TEST(GpuScheduleErrors, AStoreInsideSomeOfANestsThreadLoopsButNotAll) {
    // f stored per block and computed per row of threads (inside yi, outside
    // xi): all 16 threads of a row applied its update to the row, which
    // came out multiplied by 2^16 rather than 2.
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x"), yo("yo"), xo("xo"), yi("yi"), xi("xi");
    Func f("f"), out("out");
    f(y, x) = in(y, x);
    f(y, x) = f(y, x) * 2.0f;
    out(y, x) = f(y, x) + 1.0f;
    Schedule sch;
    sch[out].gpu_tile(y, x, yo, xo, yi, xi, 4, 16);
    sch[f].store_at(out, xo).compute_at(out, yi);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(out).compile_to_cuda(sch, Target("host-cuda-sm_90")); },
        {"Kernel loom_out_out stores to f inside the gpu_threads loop out.s0.yi (threadIdx.y) but "
         "outside the gpu_threads loop out.s0.xi (threadIdx.x)",
         "every thread on threadIdx.x would make that store",
         "compute_at(consumer, xo).gpu_threads(x, y)", "make out.s0.xi serial"}));
    // Inside its own thread loops, or per thread, it is fine.
    Schedule threads = sch.clone();
    threads[f].compute_at(out, xo).gpu_threads(x, y);
    threads[f].update().gpu_threads(x, y);
    EXPECT_NO_THROW(Pipeline(out).compile_to_cuda(threads, Target("host-cuda-sm_90")));
    Schedule per_thread;
    per_thread[out].gpu_tile(y, x, yo, xo, yi, xi, 4, 16);
    per_thread[f].compute_at(out, yi);
    EXPECT_NO_THROW(Pipeline(out).compile_to_cuda(per_thread, Target("host-cuda-sm_90")));
}

TEST(GpuScheduleErrors, ATupleStoreInsideSomeOfANestsThreadLoopsButNotAll) {
    // The same rule for each element buffer of a Tuple (g.0, g.1), whose
    // Func the message names: its update is refused, its pure definition
    // alone is not.
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x"), yo("yo"), xo("xo"), yi("yi"), xi("xi");
    Func g("g"), out("out"), pure("pure"), out_of_pure("out_of_pure");
    g(y, x) = Tuple(in(y, x), in(y, x) * in(y, x));
    g(y, x) = Tuple(g(y, x)[0] * 2.0f, g(y, x)[1] + 1.0f);
    out(y, x) = g(y, x)[0] + g(y, x)[1];
    Schedule sch;
    sch[out].gpu_tile(y, x, yo, xo, yi, xi, 4, 16);
    sch[g].store_at(out, xo).compute_at(out, yi);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(out).compile_to_cuda(sch, Target("host-cuda-sm_90")); },
        {"Kernel loom_out_out stores to g.0 inside the gpu_threads loop out.s0.yi (threadIdx.y)",
         "Compute g inside all of those gpu_threads loops"}));
    pure(y, x) = Tuple(in(y, x), in(y, x) * in(y, x));
    out_of_pure(y, x) = pure(y, x)[0] + pure(y, x)[1];
    Schedule pure_sch;
    pure_sch[out_of_pure].gpu_tile(y, x, yo, xo, yi, xi, 4, 16);
    pure_sch[pure].store_at(out_of_pure, xo).compute_at(out_of_pure, yi);
    EXPECT_NO_THROW(Pipeline(out_of_pure).compile_to_cuda(pure_sch, Target("host-cuda-sm_90")));
}

TEST(GpuScheduleErrors, GpuLoopsInsideParallelLoops) {
    Blur b;
    Schedule sch;
    sch[b.blur_y].split(b.x, b.xo, b.xi, 32).parallel(b.y).gpu_blocks(b.xo);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(sch); }, {"blur_y.s0.xo", "inside the parallel loop blur_y.s0.y"}));
    // Threads named outer first leave the vectorized split of x outside y.
    Schedule vec;
    vec[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 128, TailStrategy::GuardWithIf);
    vec[b.blur_x].compute_at(b.blur_y, b.xo).gpu_threads(b.y, b.x).vectorize(b.x, 4);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(vec); }, {"blur_x.s0.y is inside the vectorized loop blur_x.s0.x_i",
                               "name the innermost loop first"}));
}

TEST(GpuScheduleErrors, WithoutADriverAGpuPipelineFailsWhenItRuns) {
    // Compiling for a named capability needs no GPU; running does. Without
    // a driver the first call says so (and loading Loom did not fail).
    int32_t capability = 0;
    if (loom_cuda_device_capability(0, &capability) == 0) {
        GTEST_SKIP() << "this machine has a GPU (sm_" << capability << ")";
    }
    Blur b;
    Schedule sch;
    sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
    CompiledPipeline p = Pipeline(b.blur_y).compile(sch, Target("host-cuda-sm_90"));
    Buffer<float> in({40, 70}), out({38, 64});
    EXPECT_TRUE(throws_with<RuntimeError>([&] { p(in, out); }, {"CUDA: ", "GPU pipelines need"}));
}

TEST(GpuScheduleErrors, TheDevicesCapabilityNeedsADevice) {
    // "host-cuda" means the capability of GPU 0, read through the driver.
    // Where there is none (as in CI), compiling says so, and what to do.
    int32_t capability = 0;
    if (loom_cuda_device_capability(0, &capability) == 0) {
        GTEST_SKIP() << "this machine has a GPU (sm_" << capability << ")";
    }
    Blur b;
    Schedule sch;
    sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
    std::string base = ::testing::TempDir() + "loom_no_device";
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(b.blur_y).compile_to_cuda(base, sch, Target("host-cuda")); },
        {"compiles for the GPU of this machine", "CUDA: ", "host-cuda-sm_90a"}));
}

TEST(GpuScheduleErrors, RegistersAtABlockLoopMustBeOwnedByThreads) {
    // acc's update runs its j loop serially on each thread of x, but the
    // block also has 16 threads along y (c's ji): all of them would update
    // the same elements, which in registers would be 16 different copies.
    loom_test::MatMul p;
    Schedule sch;
    sch[p.c]
        .tile(p.i, p.j, p.io, p.jo, p.ii, p.ji, 16, 16)
        .gpu_blocks(p.io, p.jo)
        .gpu_threads(p.ii, p.ji);
    sch[p.acc].compute_at(p.c, p.io).gpu_threads(p.i, p.j).store_in(MemoryType::Register);
    sch[p.acc].update().split(p.k, p.ko, p.ki, 8).reorder(p.ko, p.i, p.j, p.ki).gpu_threads(p.i);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(p.c).compile_to_cuda(sch, Target("host-cuda-sm_90")); },
        {"Func acc is stored in MemoryType::Register at a block loop", "acc(acc.s1.i, acc.s1.j)",
         "its coordinate 1 is the same for every thread, unlike another access's"}));
}

TEST(GpuScheduleErrors, CopiesThatEveryThreadKeepsNeedReductionsAndAFixedSize) {
    // Every thread keeps a copy of a Register Func at a block loop that no
    // thread owns a part of only if every thread computes the same copy:
    // inside the thread loops, only reductions across them may store to it.
    {
        BufferParam in(Float(32), 2, "in");
        Var y("y"), x("x"), xo("xo"), xi("xi");
        RDom r(0, in.dim(1).extent(), "r");
        RVar ro("ro"), ri("ri");
        Func decayed("decayed"), out("out");
        decayed(y) = 0.0f;
        decayed(y) = decayed(y) * 0.5f + in(y, r);
        out(y, x) = in(y, x) - decayed(y);
        Schedule sch;
        sch[out].split(x, xo, xi, 64).gpu_blocks(y).gpu_threads(xi);
        sch[decayed].compute_at(out, y).store_in(MemoryType::Register);
        sch[decayed].update().split(r, ro, ri, 64).gpu_threads(ri);
        EXPECT_TRUE(throws_with<CompileError>(
            [&] { Pipeline(out).compile_to_cuda(sch, Target("host-cuda-sm_90")); },
            {"Func decayed is stored in MemoryType::Register at a block loop",
             "Nor can every thread keep a copy of all of it",
             "is stored to inside the thread loops by something other than a reduction across "
             "them",
             "Store it in MemoryType::Shared"}));
    }
    // A copy of a region whose size is known only at run time.
    loom_test::RowMoments p;
    Schedule sch = p.per_block(64, MemoryType::Register);
    sch[p.moments].bound(p.k, 0, p.in.dim(0).extent());
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(p.out).compile_to_cuda(sch, Target("host-cuda-sm_90")); },
        {"Func moments is stored in MemoryType::Register at a block loop",
         "every thread keeps a copy of all of it", "known only at run time", "bound()"}));
}

TEST(GpuScheduleErrors, RowsInRegistersNeedAFixedLengthAndOneLayout) {
    // A row kept in its threads' registers: how many floats each thread
    // keeps must be known when the kernel compiles (the rows' start is
    // fixed, their length is not).
    {
        loom_test::RowSoftmax a;
        a.in.dim(1).set_min(0);
        a.softmax.output_buffer().dim(1).set_min(0);
        EXPECT_TRUE(throws_with<CompileError>(
            [&] {
                Pipeline(a.softmax).compile_to_cuda(a.row_in_registers(32, 4, true),
                                                    Target("host-cuda-sm_90"));
            },
            {"Func in_in is stored in MemoryType::Register", "known only at run time",
             "set_extent()", "MemoryType::Shared"}));
    }
    // The runs are the same for every call only if the output's columns
    // start where the row's do.
    {
        loom_test::RowSoftmax a;
        a.in.dim(1).set_min(0).set_extent(1000);
        a.softmax.output_buffer().dim(1).set_extent(1000);
        EXPECT_TRUE(throws_with<CompileError>(
            [&] {
                Pipeline(a.softmax).compile_to_cuda(a.row_in_registers(32, 4, true),
                                                    Target("host-cuda-sm_90"));
            },
            {"Func in_in is stored in MemoryType::Register", "it holds softmax.min.1",
             "known only at run time", "set_min(0)"}));
    }
    // Every pass must read the runs its thread copied: an output whose
    // threads take one point each (32 of them) reads other threads' runs of
    // 4.
    loom_test::RowSoftmax a;
    a.in.dim(1).set_min(0).set_extent(1000);
    a.softmax.output_buffer().dim(1).set_min(0).set_extent(1000);
    Schedule sch;
    Var xv("xv");
    sch[a.softmax].split(a.x, a.xo, a.xi, 32).gpu_blocks(a.y).gpu_threads(a.xi);
    sch.in(a.in, {a.y, a.x})
        .compute_at(a.softmax, a.y)
        .store_in(MemoryType::Register)
        .bound(a.x, 0, a.in.dim(1).extent())
        .split(a.x, a.xo, a.xi, 128)
        .split(a.xi, a.xi, xv, 4)
        .vectorize(xv)
        .gpu_threads(a.xi);
    for (const Func &f : {a.row_max, a.row_sum}) {
        sch[f].compute_at(a.softmax, a.y);
        sch[f].update().split(a.r, a.ro, a.ri, 32).gpu_threads(a.ri);
    }
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(a.softmax).compile_to_cuda(sch, Target("host-cuda-sm_90")); },
        {"Func in_in is stored in MemoryType::Register", "in_in(",
         "its coordinate 1 follows threadIdx.x in runs of", "unlike another access's",
         "Store it in MemoryType::Shared"}));
}

TEST(GpuScheduleErrors, BlocksPerSm) {
    loom_test::RowSoftmax a;
    Schedule none;
    EXPECT_TRUE(throws_with<CompileError>([&] { none[a.softmax].gpu_blocks_per_sm(0); },
                                          {"gpu_blocks_per_sm(0) on Func softmax", "1 to 32"}));
    // Three blocks of 1024 threads do not fit an SM.
    Schedule sch = a.one_row_per_block(1024);
    sch[a.softmax].gpu_blocks_per_sm(3);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(a.softmax).compile_to_cuda(sch, Target("host-cuda-sm_90")); },
        {"gpu_blocks_per_sm(3) on Func softmax", "1024 threads per block", "3072 threads",
         "2048 an SM holds", "at most 2"}));
    // row_max is computed at softmax's blocks: its loops are no kernel's.
    Schedule inner = a.one_row_per_block(256);
    inner[a.row_max].gpu_blocks_per_sm(2);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(a.softmax).compile_to_cuda(inner, Target("host-cuda-sm_90")); },
        {"gpu_blocks_per_sm(2) on Func row_max", "no GPU kernel's blocks are its loops"}));
}

TEST(GpuScheduleErrors, StoreInMustMatchThePlacement) {
    Blur b;
    Schedule per_thread;
    per_thread[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
    per_thread[b.blur_x].compute_at(b.blur_y, b.xi).store_in(MemoryType::Shared);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(per_thread); }, {"Func blur_x is stored in MemoryType::Shared",
                                      "inside the thread loops", "Compute it at a block loop"}));

    Schedule per_block;
    per_block[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32,
                                 TailStrategy::ShiftInwards);
    per_block[b.blur_x]
        .compute_at(b.blur_y, b.xo)
        .gpu_threads(b.x, b.y)
        .store_in(MemoryType::Register);
    // A stencil: each thread reads its neighbours' elements too, so they
    // cannot be its own.
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(per_block); },
        {"Func blur_x is stored in MemoryType::Register at a block loop",
         "blur_x((blur_y.s0.y + 1), blur_y.s0.x) is read",
         "is not the realization's min plus the thread index, nor w times it plus a lane in "
         "[0, w) plus a multiple of w times the block's threads (it is the min plus "
         "(threadIdx.y + 1))",
         "Store it in MemoryType::Shared"}));

    per_block[b.blur_x].store_in(MemoryType::Heap);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { b.cuda(per_block); },
        {"Func blur_x is stored in MemoryType::Heap", "the CPU's heap is not a GPU's"}));

    // Device memory is one copy per block, allocated before the launch,
    // of the most any block needs: a region whose size grows with a
    // parameter from block to block has no such bound.
    {
        BufferParam in(Float(32), 1, "in");
        Param<int> step("step");
        Var x("x"), xo("xo"), xi("xi");
        Func g("g"), out("out");
        g(x) = in(x)*2.0f;
        out(x) = g(x / step);
        Schedule spread;
        spread[out].gpu_tile(x, xo, xi, 32);
        spread[g]
            .compute_at(out, xo)
            .store_in(MemoryType::Global)
            .split(x, xo, xi, 32)
            .gpu_threads(xi);
        EXPECT_TRUE(throws_with<CompileError>(
            [&] { Pipeline(out).compile_to_cuda(spread, Target("host-cuda-sm_90")); },
            {"Func g is stored in MemoryType::Global inside a GPU kernel with a size that "
             "differs between blocks",
             "no constant bound", "of a constant most (e.g. a tile of a split)"}));
    }

    // Shared memory on the CPU.
    Schedule cpu;
    cpu[b.blur_x].compute_at(b.blur_y, b.y).store_in(MemoryType::Shared);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(b.blur_y).compile(cpu); },
        {"Func blur_x is stored in GPU shared memory", "computed on the CPU"}));
}

TEST(GpuScheduleErrors, AFuncIsComputedAndUsedOnTheSameSide) {
    // Loom copies between host and GPU at a pipeline's start and end only,
    // so a Func written on one side and used on the other is refused.
    BufferParam in(Float(32), 1, "in");
    Var x("x"), xo("xo"), xi("xi");
    Func a("a"), b("b");
    a(x) = in(x)*2.0f;
    b(x) = a(x) + a(x + 1);
    const Target gpu("host-cuda-sm_90");

    Schedule cpu_producer;
    cpu_producer[a].compute_root();
    cpu_producer[b].gpu_tile(x, xo, xi, 64);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(b).compile(cpu_producer, gpu); },
        {"Func a is computed on the CPU, but the GPU kernel loom_b_b reads it",
         "Compute it on the GPU too", "Or compute it in a pipeline of its own"}));

    Schedule cpu_consumer;
    cpu_consumer[a].compute_root().gpu_tile(x, xo, xi, 64);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(b).compile(cpu_consumer, gpu); },
        {"Func a is computed on the GPU (kernel loom_b_a), but code that runs on the CPU reads "
         "it",
         "Schedule its consumers on the GPU too",
         "Buffers move between the CPU and the GPU between pipelines"}));

    Func c("c");
    c(x) = in(x);
    c(x) += 1.0f;
    Schedule split_stages;
    split_stages[c].update(0).gpu_tile(x, xo, xi, 64);
    EXPECT_TRUE(
        throws_with<CompileError>([&] { Pipeline(c).compile(split_stages, gpu); },
                                  {"Func c is computed partly on the CPU and partly on the GPU",
                                   "gpu_blocks and gpu_threads on each"}));
}

TEST(GpuScheduleErrors, SharedStorageSizedAtLaunchIsTheSameForEveryBlock) {
    // Each block of a running sum reads a longer prefix of the input than
    // the one before: storage for it cannot be sized once per launch, and
    // has no bound but the input's size.
    BufferParam in(Float(32), 1, "in");
    Var x("x"), xo("xo"), xi("xi"), c("c"), co("co"), ci("ci");
    RDom r(0, in.dim(0).extent(), "r");
    r.where(r <= x);
    Func prefix("prefix");
    prefix(x) = 0.0f;
    prefix(x) += in(r);
    Schedule sch;
    sch[prefix].gpu_tile(x, xo, xi, 32);
    sch[prefix].update().gpu_tile(x, xo, xi, 32);
    sch.in(in, {c}).compute_at(prefix, xo).split(c, co, ci, 32).gpu_threads(ci);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(prefix).compile_to_cuda(sch, Target("host-cuda-sm_90")); },
        {"Func in_in is allocated inside the GPU kernel", "which differs between blocks"}));

    // A guarded tile's last block needs less of the input than the others,
    // but never more than they do: its storage is sized for the most.
    Blur b;
    Var a("a"), t("t");
    Schedule guarded;
    guarded[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32, TailStrategy::GuardWithIf);
    guarded.in(b.in, {b.y, b.x}).compute_at(b.blur_y, b.xo).split(b.x, a, t, 32).gpu_threads(t);
    const std::string source = b.cuda(guarded);
    EXPECT_NE(source.find("float *const in_in_ = reinterpret_cast<float *>(loom_shared_memory"),
              std::string::npos)
        << source;
}

TEST(GpuScheduleErrors, OneFuncPerKernelIsSizedAtLaunch) {
    BufferParam p(Float(32), 2, "p"), q(Float(32), 2, "q");
    Var y("y"), x("x"), xo("xo"), xi("xi");
    Func sum_rows("sum_rows");
    sum_rows(y, x) = p(y, x) + q(y, x);
    Schedule sch;
    sch[sum_rows].split(x, xo, xi, 128).gpu_blocks(y).gpu_threads(xi);
    for (const BufferParam &in : {p, q})
        sch.in(in, {y, x}).compute_at(sum_rows, y).split(x, xo, xi, 128).gpu_threads(xi);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(sum_rows).compile_to_cuda(sch, Target("host-cuda-sm_90")); },
        {"Kernel loom_sum_rows_sum_rows stores both",
         "_in in shared memory with sizes known "
         "only at launch",
         "one such Func per kernel"}));
}
