// GPU schedules compiled to CUDA C++ and through NVRTC, for sm_80 and
// sm_90a, in every test run: no GPU is needed to compile, so code the
// backend generates wrongly fails here on any machine with the CUDA toolkit.
// (Running the kernels needs a device; those tests carry the label gpu.)
#include <gtest/gtest.h>

#include <sstream>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "codegen/NVRTC.h"
#include "gpu_test_pipelines.h"
#include "test_util.h"

using namespace loom;
using loom::internal::compile_cuda;
using loom::internal::CudaBinary;

namespace {

const char *kArchs[] = {"sm_80", "sm_90a"};

/** Generates the pipeline's CUDA C++ for each architecture, compiles it with
 * NVRTC, and checks that every kernel named in the source is in the PTX
 * and that the cubin is an ELF image. Returns the source. */
std::string compile_for_every_arch(const Func &out, const Schedule &sch, int kernels) {
    std::string why;
    if (!loom::internal::nvrtc_available(&why)) {
        ADD_FAILURE() << "NVRTC is needed to check the CUDA backend (" << why << ")";
        return "";
    }
    std::string source;
    for (const char *arch : kArchs) {
        SCOPED_TRACE(arch);
        Target target(std::string("host-cuda-") + arch);
        source = Pipeline(out).compile_to_cuda(sch, target);
        CudaBinary bin = compile_cuda(source, out.name(), arch);
        EXPECT_EQ(bin.log, "") << source;
        EXPECT_NE(bin.ptx.find(std::string(".target ") + arch), std::string::npos);
        int found = 0;
        for (size_t at = source.find("__global__"); at != std::string::npos;
             at = source.find("__global__", at + 1)) {
            size_t open = source.find('(', source.find(") ", at) + 2);
            std::string name =
                source.substr(source.rfind(' ', open) + 1, open - source.rfind(' ', open) - 1);
            EXPECT_NE(bin.ptx.find(".entry " + name), std::string::npos) << name;
            found++;
        }
        EXPECT_EQ(found, kernels) << source;
        // All the shared memory a kernel uses is the dynamic kind, which the
        // launch sizes: static shared memory would count against the 48 KiB
        // a launch may take without opting in, unseen by the runtime.
        std::istringstream ptx(bin.ptx);
        for (std::string line; std::getline(ptx, line);) {
            const size_t start = line.find_first_not_of(" \t");
            if (start == std::string::npos) continue;
            EXPECT_NE(line.compare(start, 7, ".shared"), 0) << "static shared memory: " << line;
        }
        EXPECT_GE(bin.cubin.size(), 4u);
        if (bin.cubin.size() >= 4) EXPECT_EQ(std::string(bin.cubin.data() + 1, 3), "ELF");
    }
    return source;
}

}  // namespace

TEST(CudaTarget, ParsesCapabilities) {
    Target t("host-cuda-sm_90a");
    EXPECT_TRUE(t.has_feature(Target::CUDA));
    EXPECT_EQ(t.cuda_capability(), 90);
    EXPECT_TRUE(t.cuda_arch_specific());
    EXPECT_EQ(t.cuda_arch(), "sm_90a");
    EXPECT_EQ(Target(t.to_string()), t);
    Target u("x86-64-linux-avx2-sm_86");  // a capability implies cuda
    EXPECT_TRUE(u.has_feature(Target::CUDA));
    EXPECT_EQ(u.cuda_arch(), "sm_86");
    EXPECT_EQ(u.to_string(), "x86-64-linux-sse41-avx-avx2-fma-f16c-cuda-sm_86");
    Target device("host-cuda");  // the device's capability, read at run time
    EXPECT_EQ(device.cuda_capability(), 0);
    EXPECT_EQ(device.cuda_arch(), "");
    EXPECT_FALSE(u.without_feature(Target::CUDA).has_feature(Target::CUDA));
    EXPECT_EQ(u.without_feature(Target::CUDA).cuda_capability(), 0);
    for (const char *bad : {"host-sm_75", "host-sm_86a", "host-sm_", "host-sm_9x"}) {
        EXPECT_TRUE(loom_test::throws_with<CompileError>(
            [&] { Target t2(bad); }, {"Unknown GPU capability", "sm_80, sm_86, sm_89, sm_90"}))
            << bad;
    }
}

TEST(CudaCodegen, ElementwiseOneDimension) {
    loom_test::Brighten p;
    Schedule sch;
    sch[p.brighten].gpu_tile(p.x, p.xo, p.xi, 128);
    std::string src = compile_for_every_arch(p.brighten, sch, 1);
    // Names from the algorithm, the launch bounds, the tail guard.
    EXPECT_NE(src.find("brighten_s0_xi_ = 0 + (int)threadIdx.x"), std::string::npos) << src;
    EXPECT_NE(src.find("__launch_bounds__(128)"), std::string::npos) << src;
    EXPECT_NE(src.find("const float gain_"), std::string::npos) << src;
    EXPECT_NE(src.find("const float *__restrict__ in_"), std::string::npos) << src;
}

TEST(CudaCodegen, ABoundGivesSharedMemoryAConstantSize) {
    loom_test::Taps p;
    EXPECT_TRUE(loom_test::throws_with<CompileError>(
        [&] {
            Pipeline(p.filtered).compile_to_cuda(p.table_per_block(0), Target("host-cuda-sm_90"));
        },
        {"gpu_threads loop weight.s0.k has the extent coef.extent.0", "bound()"}));
    std::string src = compile_for_every_arch(p.filtered, p.table_per_block(32), 1);
    // 32 floats at the start of the block's shared memory. The check that
    // the taps fit depends on no block or thread: the host makes it before
    // the launch, where it has its message.
    EXPECT_NE(src.find("float *const weight_ = reinterpret_cast<float *>(loom_shared_memory + 0);  "
                       "// [32]"),
              std::string::npos)
        << src;
    EXPECT_EQ(src.find("__trap"), std::string::npos) << src;
    const std::string stmt =
        Pipeline(p.filtered)
            .compile_to_lowered_stmt(p.table_per_block(32), Target("host-cuda-sm_90"));
    const size_t check = stmt.find("assert((coef.extent.0 < 33)");
    EXPECT_NE(check, std::string::npos) << stmt;
    EXPECT_LT(check, stmt.find("gpu_block")) << stmt;

    // A block's tile of blur_x, 32 columns wherever the block starts (the
    // last one too, without ShiftInwards): whether a block reads more
    // depends on the block, so that check stays in the kernel.
    loom_test::Blur b;
    src = compile_for_every_arch(b.blur_y, b.shared_tiles_of_32_columns(), 1);
    EXPECT_NE(src.find("__trap();"), std::string::npos) << src;
    EXPECT_NE(src.find("blur_x_ = reinterpret_cast<float *>(loom_shared_memory + 0);  // [320]"),
              std::string::npos)
        << src;
}

TEST(CudaCodegen, TwoDimensionalTilesWithAPerThreadReduction) {
    loom_test::RowNormalize p;
    Schedule sch;
    sch[p.normalized].gpu_tile(p.y, p.x, p.yo, p.xo, p.yi, p.xi, 8, 32);
    sch[p.rowsum].compute_at(p.normalized, p.xi);
    std::string src = compile_for_every_arch(p.normalized, sch, 1);
    EXPECT_NE(src.find("blockIdx.y"), std::string::npos) << src;
    EXPECT_NE(src.find("block (32, 8, 1)"), std::string::npos) << src;
    EXPECT_NE(src.find("// produce rowsum"), std::string::npos) << src;
}

TEST(CudaCodegen, IntegerArithmeticKeepsLoomSemantics) {
    loom_test::IntegerMix p;
    Schedule sch;
    sch[p.f].gpu_tile(p.x, p.xo, p.xi, 64);
    std::string src = compile_for_every_arch(p.f, sch, 1);
    EXPECT_NE(src.find("loom_div<int>("), std::string::npos) << src;
    EXPECT_NE(src.find("loom_mod<int>("), std::string::npos) << src;
    EXPECT_NE(src.find("unsigned char *__restrict__ f_"), std::string::npos) << src;
    // A constant amount within the width is C's shift, but for a signed
    // value shifted left; any other amount, Loom's.
    EXPECT_NE(src.find(" >> 2)"), std::string::npos) << src;
    Schedule shifts;
    shifts[p.shifted].gpu_tile(p.x, p.xo, p.xi, 64);
    std::string shift_src = compile_for_every_arch(p.shifted, shifts, 1);
    EXPECT_NE(shift_src.find("loom_shift<int>("), std::string::npos) << shift_src;
    EXPECT_NE(shift_src.find("loom_shift<unsigned short>("), std::string::npos) << shift_src;
    EXPECT_NE(shift_src.find(", 3, true)"), std::string::npos) << shift_src;
    EXPECT_NE(shift_src.find(" << (unsigned int)(5U)"), std::string::npos) << shift_src;
}

using loom_test::Blur;

TEST(CudaCodegen, StagesAtRootAreSeparateKernels) {
    Blur b;
    Schedule sch;
    sch[b.blur_x].compute_root().gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 4, 64);
    sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 16, 16);
    std::string src = compile_for_every_arch(b.blur_y, sch, 2);
    EXPECT_NE(src.find("loom_blur_y_blur_x("), std::string::npos) << src;
    EXPECT_NE(src.find("loom_blur_y_blur_y("), std::string::npos) << src;
}

TEST(CudaCodegen, PerThreadTilesOfAProducer) {
    // blur_x computed per thread, over the 3 rows that thread needs: a
    // small constant-sized array in registers.
    Blur b;
    Schedule sch;
    sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
    sch[b.blur_x].compute_at(b.blur_y, b.xi);
    std::string src = compile_for_every_arch(b.blur_y, sch, 1);
    EXPECT_NE(src.find("float blur_x_[3]"), std::string::npos) << src;
    sch[b.blur_x].store_in(MemoryType::Register);
    EXPECT_EQ(b.cuda(sch), src);
}

TEST(CudaCodegen, SharedMemoryTilesWithBarriers) {
    // blur_x computed per block, by the block's threads, into shared
    // memory (10 x 32 floats for an 8 x 32 tile of blur_y), then read by
    // them after a barrier. ShiftInwards keeps every tile whole, so the
    // sizes are constant.
    Blur b;
    Schedule sch;
    sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32, TailStrategy::ShiftInwards);
    sch[b.blur_x].compute_at(b.blur_y, b.xo).gpu_threads(b.x, b.y);
    std::string src = compile_for_every_arch(b.blur_y, sch, 1);
    EXPECT_NE(src.find("float *const blur_x_ = reinterpret_cast<float *>(loom_shared_memory + "
                       "0);  // [320]"),
              std::string::npos)
        << src;
    EXPECT_NE(src.find("extern __shared__ __align__(16) unsigned char loom_shared_memory[];"),
              std::string::npos)
        << src;
    EXPECT_NE(src.find("block (32, 10, 1), 1280 bytes of shared memory"), std::string::npos) << src;
    // One barrier, between the producer's thread loops and the consumer's.
    size_t sync = src.find("__syncthreads();");
    EXPECT_NE(sync, std::string::npos) << src;
    EXPECT_LT(src.find("// produce blur_x"), sync);
    EXPECT_GT(src.find("// consume blur_x"), sync);
    EXPECT_EQ(src.find("__syncthreads();", sync + 1), std::string::npos) << src;
    // The consumer has 8 rows of threads of the block's 10.
    EXPECT_NE(src.find("if (threadIdx.y < 8)"), std::string::npos) << src;
    // Saying so changes nothing: MemoryType::Shared is what Auto chose.
    sch[b.blur_x].store_in(MemoryType::Shared);
    EXPECT_EQ(b.cuda(sch), src);
    std::string ptx = loom::internal::compile_cuda(src, "blur", "sm_90").ptx;
    EXPECT_NE(ptx.find(".shared"), std::string::npos);
    EXPECT_NE(ptx.find("bar.sync"), std::string::npos);
}

namespace {

/** How often `what` occurs in `text`. */
int count_of(const std::string &text, const std::string &what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
    return n;
}

/** The kernels of a CUDA source, without the helpers before them. */
std::string kernels_of(const std::string &src) { return src.substr(src.find("\n// Kernel")); }

}  // namespace

TEST(CudaCodegen, VectorizedThreadsMoveWholeWords) {
    // Each thread vectorizes 4 floats: one 16-byte load of the input (the
    // expression reads it five times) and one 16-byte store. ShiftInwards
    // keeps the last block whole, so no lane is masked.
    loom_test::Brighten p;
    Schedule sch;
    loom_test::vectorized_threads(sch[p.brighten], p.x, 512, 4);
    std::string src = kernels_of(compile_for_every_arch(p.brighten, sch, 1));
    EXPECT_NE(src.find("block (128, 1, 1)"), std::string::npos) << src;
    EXPECT_EQ(count_of(src, "loom_load_dense_readonly<float, 4>(in_"), 1) << src;
    EXPECT_EQ(count_of(src, "loom_store_dense_global<float, 4>(brighten_"), 1) << src;
    EXPECT_EQ(src.find("loom_gather("), std::string::npos) << src;
    std::string ptx = loom::internal::compile_cuda(p.cuda(sch), "brighten", "sm_90").ptx;
    // The kernel only reads `in`: through the read-only data cache.
    EXPECT_EQ(count_of(ptx, "ld.global.nc.v4.u32") + count_of(ptx, "ld.global.nc.v4.f32"), 1)
        << ptx;
    EXPECT_EQ(count_of(ptx, "ld.global.v4"), 0) << ptx;
    EXPECT_EQ(count_of(ptx, "st.global.v4.b32"), 1) << ptx;

    // Eight 16-bit lanes are one 16-byte word too.
    loom_test::HalfChain h;
    Schedule hs;
    loom_test::vectorized_threads(hs[h.out], h.x, 1024, 8);
    src = compile_for_every_arch(h.out, hs, 1);
    EXPECT_NE(src.find("loom_load_dense_readonly<__half, 8>(in_"), std::string::npos) << src;
    EXPECT_NE(src.find("loom_store_dense_global<__nv_bfloat16, 8>(out_"), std::string::npos) << src;
    ptx = loom::internal::compile_cuda(src, "half", "sm_90").ptx;
    EXPECT_EQ(count_of(ptx, "st.global.v4.b32"), 1) << ptx;
}

TEST(CudaCodegen, PromisedAlignmentDropsTheTestOfTheAddress) {
    // Without promises, a vector of a row may start anywhere. Each loop
    // along the row tests where the row starts, once, and has a copy that
    // moves words untested (LoopsAlongARowTestItsAlignmentOnce); the loop
    // as written, for rows that start elsewhere, tests each access's
    // address and keeps a lane-by-lane path beside the word.
    loom_test::AlignedRows plain(false);
    const std::string plain_full = compile_for_every_arch(plain.centered, plain.schedule(), 1);
    std::string src = kernels_of(plain_full);
    // (The row max's loop, and the output's loop split at its last whole
    // vector: words in the steady loop, and in the tail where they fit.)
    EXPECT_EQ(count_of(src, "loom_load_dense_readonly<float, 4>(in_"), 3) << src;
    EXPECT_EQ(count_of(src, "loom_store_dense_global<float, 4>(centered_"), 2) << src;
    EXPECT_EQ(count_of(src, "loom_load_aligned_readonly<float, 4>(in_"), 3) << src;
    EXPECT_EQ(count_of(src, "loom_store_aligned_global<float, 4>(centered_"), 2) << src;
    EXPECT_EQ(count_of(src, "if (loom_is_aligned<16>("), 3) << src;
    const std::string plain_ptx = loom::internal::compile_cuda(plain_full, "plain", "sm_90").ptx;

    // With 16-byte starts, strides of whole vectors and columns from 0,
    // every vector of the row max and of the output is proven aligned: the
    // words move with no test. (The masked tails still go lane by lane.)
    loom_test::AlignedRows promised(true);
    const std::string full = compile_for_every_arch(promised.centered, promised.schedule(), 1);
    src = kernels_of(full);
    EXPECT_EQ(count_of(src, "loom_load_aligned_readonly<float, 4>(in_"), 3) << src;
    EXPECT_EQ(count_of(src, "loom_store_aligned_global<float, 4>(centered_"), 2) << src;
    EXPECT_EQ(count_of(src, "loom_load_dense"), 0) << src;
    EXPECT_EQ(count_of(src, "loom_store_dense"), 0) << src;
    // Lane-by-lane loads and stores are left in the masked tails alone.
    const std::string ptx = loom::internal::compile_cuda(full, "promised", "sm_90").ptx;
    EXPECT_GE(count_of(ptx, "st.global.v4.b32"), 2) << ptx;
    EXPECT_LT(count_of(ptx, "ld.global.nc.f32"), count_of(plain_ptx, "ld.global.nc.f32")) << ptx;
    EXPECT_LT(count_of(ptx, "st.global.f32"), count_of(plain_ptx, "st.global.f32")) << ptx;

    // Staged in shared memory, the row is copied from where the reads of
    // both passes begin. The output's loop is guarded, and its extent is
    // open: an empty output must not move the start of the copy, or the
    // copy's loads could not be proven aligned.
    src = kernels_of(compile_for_every_arch(promised.centered, promised.schedule(64, true), 1));
    EXPECT_EQ(count_of(src, "loom_load_aligned_readonly<float, 4>(in_"), 2) << src;
    EXPECT_GE(count_of(src, "loom_store_aligned<float, 4>(in_in_"), 2) << src;
    EXPECT_EQ(count_of(src, "loom_load_dense"), 0) << src;
    EXPECT_EQ(count_of(src, "loom_store_dense"), 0) << src;
}

TEST(CudaCodegen, LetsAreDeclaredInTheBlockTheyAreIn) {
    // A chain of lets reads as a run of declarations: no block is opened
    // for a let alone (blocks open for loops, ifs, allocations, and the
    // GPU loops' index variables), so the nesting follows the loops. (That
    // the names stay distinct where sibling scopes meet in one block, every
    // kernel's compilation through NVRTC checks.)
    loom_test::AlignedRows rows(true);
    const std::string src =
        kernels_of(compile_for_every_arch(rows.centered, rows.schedule(64, true), 1));
    std::istringstream lines(src);
    std::string line, previous;  // without their indentation
    size_t previous_indent = 0;
    int runs = 0;
    while (std::getline(lines, line)) {
        const size_t indent = line.find_first_not_of(' ');
        if (indent == std::string::npos) continue;
        const std::string text = line.substr(indent);
        if (text.compare(0, 6, "const ") == 0) {
            EXPECT_FALSE(previous == "{" && text.find("Idx.") == std::string::npos)
                << "a block opened for the let " << text << "\n"
                << src;
            if (previous.compare(0, 6, "const ") == 0 && previous_indent == indent) runs++;
        }
        previous = text;
        previous_indent = indent;
    }
    EXPECT_GE(runs, 3) << src;
    // A chain of lets inside an expression is one lambda's declarations,
    // not lambdas returning lambdas.
    EXPECT_NE(src.find("([&]() { const int"), std::string::npos) << src;
    EXPECT_EQ(src.find("return ([&]()"), std::string::npos) << src;
}

TEST(CudaCodegen, VectorTailsAreMaskedAndLocalVectorsStayInRegisters) {
    // GuardWithIf leaves the last block's lanes past the end masked: they
    // are neither loaded nor stored.
    loom_test::Brighten p;
    Schedule sch;
    loom_test::vectorized_threads(sch[p.brighten], p.x, 256, 4, TailStrategy::GuardWithIf);
    std::string full = compile_for_every_arch(p.brighten, sch, 1);
    std::string src = kernels_of(full);
    // The kernel only reads in: its masked lanes go through the read-only
    // cache too, one lane each.
    EXPECT_NE(src.find("loom_gather_readonly(in_"), std::string::npos) << src;
    EXPECT_NE(src.find("loom_scatter(brighten_"), std::string::npos) << src;
    std::string ptx = loom::internal::compile_cuda(full, "brighten", "sm_90").ptx;
    EXPECT_GE(count_of(ptx, "ld.global.nc"), 4) << ptx;

    // A producer computed per thread (3 rows), vectorized by 4 into its
    // per-thread array: the fourth lane is masked.
    Blur b;
    Schedule bs;
    bs[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
    bs[b.blur_x].compute_at(b.blur_y, b.xi).vectorize(b.y, 4);
    src = kernels_of(compile_for_every_arch(b.blur_y, bs, 1));
    EXPECT_NE(src.find("float blur_x_[3]"), std::string::npos) << src;
    EXPECT_NE(src.find("loom_scatter(blur_x_, loom_ramp<4>(0, 1)"), std::string::npos) << src;
    EXPECT_NE(src.find("loom_gather_readonly(in_, loom_ramp<4>("), std::string::npos) << src;

    // A bool input, which __ldg has no overload for, is read as its byte.
    BufferParam keep(Bool(), 1, "keep"), in(Float(32), 1, "in");
    Var x("x"), xo("xo"), xi("xi");
    Func masked("masked");
    masked(x) = select(keep(x), in(x), 0.0f);
    Schedule ms;
    ms[masked].gpu_tile(x, xo, xi, 128);
    full = compile_for_every_arch(masked, ms, 1);
    EXPECT_NE(kernels_of(full).find("loom_load_readonly(&keep_["), std::string::npos) << full;
    ptx = loom::internal::compile_cuda(full, "masked", "sm_90").ptx;
    EXPECT_GE(count_of(ptx, "ld.global.nc.u8"), 1) << ptx;
}

TEST(CudaCodegen, SharedMemoryPast48KiB) {
    // 130 x 128 floats of blur_x per block: 65 KiB, in the kernel's dynamic
    // shared memory (the runtime opts the kernel in at launch).
    Blur b;
    std::string src = compile_for_every_arch(b.blur_y, b.shared_tiles(128), 1);
    EXPECT_NE(src.find("66560 bytes of shared memory"), std::string::npos) << src;
    EXPECT_NE(src.find("float *const blur_x_ = reinterpret_cast<float *>(loom_shared_memory + 0)"),
              std::string::npos)
        << src;
}

TEST(CudaCodegen, ANestOfFewerThreadLoopsRunsOnTheFirstRowOfThreads) {
    // The block is 16 x 4 threads (out's tile); each stage of sums and
    // scaled has one thread loop, on threadIdx.x, which the threads at
    // threadIdx.y == 0 alone run: each update is applied once.
    loom_test::ColumnTerms c;
    std::string kernel = kernels_of(compile_for_every_arch(c.out, c.schedule(), 1));
    EXPECT_NE(kernel.find("block (16, 4, 1)"), std::string::npos) << kernel;
    EXPECT_EQ(count_of(kernel, "if (threadIdx.y == 0) {\n"), 4) << kernel;
    for (const char *stage : {"sums_s0_x_", "sums_s1_x_", "scaled_s0_x_", "scaled_s1_x_"}) {
        const std::regex guarded(std::string("if \\(threadIdx\\.y == 0\\) \\{\n *const int ") +
                                 stage + " = ");
        EXPECT_TRUE(std::regex_search(kernel, guarded)) << stage << " is not guarded:\n" << kernel;
    }
    EXPECT_NE(kernel.find("const int out_s0_yi_ = 0 + (int)threadIdx.y;"), std::string::npos)
        << kernel;
}

TEST(CudaCodegen, FusedChainsWithRowsOnBlocksAndThreads) {
    // rolling_update at root, its rows on blocks and threads: one kernel
    // per member's pure definition, and the fused update, in which each
    // thread keeps its row's tile partials in registers (a single point:
    // the fused loop's pieces, hi / rows and hi % rows, are bounded at each
    // thread's point).
    loom_test::HeadsWeightedAverage a(6);
    std::string rolled = kernels_of(compile_for_every_arch(a.out, a.rolled_rows_in_blocks(), 5));
    EXPECT_NE(rolled.find("float m_tile_[1];"), std::string::npos) << rolled;
    EXPECT_NE(rolled.find("float o_tile_[6];"), std::string::npos) << rolled;
    // split_k at root: the partials' kernel runs on blocks of (rows,
    // chunks, heads); out's kernel combines them.
    std::string blocks = kernels_of(compile_for_every_arch(a.out, a.chunks_in_blocks(4), 5));
    EXPECT_NE(
        blocks.find("// Kernel loom_out_o_partial_1: grid ((o_partial.s1.io.loop_max + 1), 4, "),
        std::string::npos)
        << blocks;
    EXPECT_NE(blocks.find("const int o_partial_s1_c_ = 0 + (int)blockIdx.y;"), std::string::npos)
        << blocks;
    // Within one block: the partials take a constant size in shared memory
    // (4 chunks of 8 rows, 6 elements each for o), so out needs one kernel.
    std::string threads = kernels_of(compile_for_every_arch(a.out, a.chunks_in_threads(4), 1));
    EXPECT_NE(threads.find("float *const o_partial_ = reinterpret_cast<float *>(loom_shared_memory "
                           "+ 0);  // [192]"),
              std::string::npos)
        << threads;
}

TEST(CudaCodegen, ArgmaxAcrossThreads) {
    // Each thread keeps its own extreme, its point's rank (the RVar) and
    // payloads; the block combines the extremes, then the ranks of the
    // threads that reached it; the thread holding the winning point folds
    // it in. A strict test keeps the first point (the least rank), one that
    // is not strict the last (the greatest, from the least int32, which is
    // printed so that it stays an int).
    for (bool strict : {true, false}) {
        SCOPED_TRACE(strict ? "strict" : "not strict");
        loom_test::RowArgExtreme a(true, strict);
        std::string kernel =
            kernels_of(compile_for_every_arch(a.best, a.one_row_per_block(128), 2));
        EXPECT_EQ(count_of(kernel, "loom_block_reduce<128, 1, 1>("), 2) << kernel;
        EXPECT_NE(kernel.find(strict ? "loom_min<int>(" : "loom_max<int>("), std::string::npos)
            << kernel;
        EXPECT_EQ(kernel.find("-2147483648"), std::string::npos) << kernel;
        if (!strict) EXPECT_NE(kernel.find("(-2147483647 - 1)"), std::string::npos) << kernel;
        // One store to each element, by the holder of the winning point.
        for (const char *element : {"best_0_[", "best_1_[", "best_2_["}) {
            EXPECT_EQ(count_of(kernel, std::string(element) + "(best_s1_y_ - "),
                      1 + (std::string(element) == "best_1_["))  // the fold reads the extreme
                << kernel;
        }
    }
    // Groups of 32 threads (a row each) combine by shuffles.
    loom_test::RowArgExtreme a(false, true, true);
    std::string kernel = kernels_of(compile_for_every_arch(a.best, a.rows_per_block(8, 32), 2));
    EXPECT_EQ(count_of(kernel, "loom_group_reduce<32, 8, 1, 1>("), 2) << kernel;
    EXPECT_EQ(kernel.find("loom_block_reduce<"), std::string::npos) << kernel;
    // Unrolled, each of a thread's points is ranked by the RVar's value,
    // kept in a let of its own (best.s1.r.x.rank) where the RVar's let was
    // folded into its uses.
    kernel = kernels_of(compile_for_every_arch(a.best, a.unrolled_in_threads(64, 4), 2));
    EXPECT_EQ(count_of(kernel, "const int best_s1_r_x_rank_ = "), 4) << kernel;
    EXPECT_EQ(kernel.find("gpu_point_rank"), std::string::npos) << kernel;
    // Vectorized, a thread still ranks its lanes one by one, but takes them
    // from one 16-byte load per step (where the row is aligned; the last
    // vector of a row, masked). The tag, read only where a lane wins, is
    // still read lane by lane, under the test.
    const std::string vectorized =
        compile_for_every_arch(a.best, a.vectorized_in_threads(64, 4), 2);
    kernel = kernels_of(vectorized);
    EXPECT_EQ(count_of(kernel, "loom_load_aligned_readonly<float, 4>(in_, "), 1) << kernel;
    EXPECT_NE(kernel.find("loom_gather_readonly(in_, "), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("loom_load_readonly(&in_["), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("<float, 4>(tag_, "), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("< best_1_partial_[0]) ? loom_load_readonly(&tag_["), std::string::npos)
        << kernel;
    // The lanes' array is written and read at constant indices: registers.
    for (const char *arch : kArchs) {
        const std::string ptx = compile_cuda(vectorized, "best", arch).ptx;
        EXPECT_EQ(ptx.find(".local"), std::string::npos) << arch << "\n" << ptx;
    }
    EXPECT_EQ(count_of(kernel, "loom_block_reduce<64, 1, 1>("), 2) << kernel;
    // A thread per row, vectorized along it: no combine across threads;
    // each lane keeps its extreme, point and payloads in the thread's
    // register arrays, and the lanes are folded into the row's elements.
    kernel = kernels_of(compile_for_every_arch(a.best, a.row_per_thread_vectorized(16, 4), 2));
    EXPECT_EQ(kernel.find("loom_block_reduce<"), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("loom_group_reduce<"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("best_1_lane_key_0_["), std::string::npos) << kernel;
}

TEST(CudaCodegen, ReductionsAcrossGroupsOfThreads) {
    // Eight rows per block: each row's 32 threads (threadIdx.x) combine
    // their partials, and the first of them (threadIdx.x == 0) folds them
    // into the row's element, at its row (threadIdx.y).
    loom_test::RowSoftmax p;
    std::string src = compile_for_every_arch(p.softmax, p.rows_per_block(8, 32), 1);
    std::string kernel = kernels_of(src);
    EXPECT_NE(
        kernel.find("row_max_partial_[0] = loom_group_reduce<32, 8, 1, 1>(row_max_partial_[0]"),
        std::string::npos)
        << kernel;
    EXPECT_NE(kernel.find("(loom_reduce_a_ + loom_reduce_b_); }, nullptr, 0, loom_reduce_parity);"),
              std::string::npos)
        << kernel;
    EXPECT_NE(kernel.find("if ((row_max_s1_ri_ == 0)) {\n"), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("loom_block_reduce<"), std::string::npos) << kernel;
    std::string ptx = loom::internal::compile_cuda(src, "softmax", "sm_90").ptx;
    EXPECT_NE(ptx.find("shfl.sync.bfly"), std::string::npos);
}

TEST(CudaCodegen, BarriersWhereThreadsShareDataOnly) {
    // Softmax with the row staged in shared memory: the copy's steady loop
    // and its tail only write the row (no barrier between them), and the
    // threads read the row once it is whole. row_max and row_sum are single
    // points that every thread keeps in its registers and folds the block's
    // total into: no barrier for them. So one barrier per row, besides the
    // one inside each combine across the block.
    loom_test::RowSoftmax p;
    std::string kernel = kernels_of(compile_for_every_arch(p.softmax, p.staged_rows(256), 1));
    EXPECT_EQ(count_of(kernel, "__syncthreads();"), 1) << kernel;
    const size_t copy = kernel.find("// produce in_in"), read = kernel.find("// consume in_in");
    ASSERT_NE(read, std::string::npos) << kernel;
    EXPECT_EQ(count_of(kernel.substr(copy, read - copy), "__syncthreads();"), 1) << kernel;
    EXPECT_LT(kernel.find("__syncthreads();", copy), kernel.find("for (", read)) << kernel;
    for (const char *total : {"row_max", "row_sum"}) {
        EXPECT_NE(kernel.find(std::string("float ") + total + "_[1];"), std::string::npos)
            << kernel;
    }
    EXPECT_EQ(kernel.find("threadIdx.x == 0"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("row_max_[0] = fmaxf(row_max_[0], row_max_partial_[0]);"),
              std::string::npos)
        << kernel;

    // Stored in shared memory as asked, the same totals are the first
    // thread's: its initial values are its own until the fold (no barrier
    // after them), and the threads read each total once it is folded.
    Schedule shared = p.staged_rows(256);
    shared[p.row_max].store_in(MemoryType::Shared);
    shared[p.row_sum].store_in(MemoryType::Shared);
    kernel = kernels_of(compile_for_every_arch(p.softmax, shared, 1));
    EXPECT_EQ(count_of(kernel, "__syncthreads();"), 3) << kernel;
    for (const char *total : {"row_max", "row_sum"}) {
        const size_t init = kernel.find(std::string("// produce ") + total);
        const size_t fold =
            kernel.find(std::string(total) + "_[0] = ", kernel.find("_reduce<", init));
        const size_t consume = kernel.find(std::string("// consume ") + total);
        ASSERT_NE(consume, std::string::npos) << kernel;
        ASSERT_NE(fold, std::string::npos) << kernel;
        EXPECT_EQ(count_of(kernel.substr(init, fold - init), "__syncthreads();"), 0) << kernel;
        EXPECT_EQ(count_of(kernel.substr(fold, consume - fold), "__syncthreads();"), 1) << kernel;
    }
}

TEST(CudaCodegen, ReductionsUseTheLaunchesSharedMemory) {
    // A block's combines pass their warps' totals through the kernel's
    // dynamic shared memory, after its Funcs' storage (none here: row_max
    // and row_sum are in every thread's registers): a float per warp, 8
    // warps for 256 threads, in two halves that consecutive combines take
    // in turn.
    loom_test::RowSoftmax p;
    std::string kernel = kernels_of(compile_for_every_arch(p.softmax, p.one_row_per_block(256), 1));
    EXPECT_NE(kernel.find("constexpr int loom_reduce_scratch_offset = 0;  // 64 bytes for "
                          "reductions"),
              std::string::npos)
        << kernel;
    EXPECT_NE(kernel.find("loom_block_reduce_half_bytes = 32;"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("64 bytes of shared memory"), std::string::npos) << kernel;
    EXPECT_EQ(count_of(kernel,
                       ", loom_shared_memory + loom_reduce_scratch_offset + "
                       "loom_block_reduce_offset, loom_block_reduce_half_bytes, "
                       "loom_reduce_parity);"),
              2)
        << kernel;
    // With the totals in shared memory, the fold into row_max ends with a
    // barrier, which also serves as the one between producing row_max and
    // consuming it: one, not two.
    Schedule shared = p.one_row_per_block(256);
    shared[p.row_max].store_in(MemoryType::Shared);
    kernel = kernels_of(compile_for_every_arch(p.softmax, shared, 1));
    const size_t fold = kernel.find("row_max_[0] = fmaxf(row_max_[0], row_max_partial_[0]);");
    const size_t consume = kernel.find("// consume row_max");
    ASSERT_NE(fold, std::string::npos) << kernel;
    ASSERT_NE(consume, std::string::npos) << kernel;
    EXPECT_EQ(count_of(kernel.substr(fold, consume - fold), "__syncthreads();"), 1) << kernel;

    // One warp combines by shuffles alone: no room is taken.
    kernel = kernels_of(compile_for_every_arch(p.softmax, p.one_row_per_block(32), 1));
    EXPECT_NE(kernel.find("nullptr, 0, loom_reduce_parity);"), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("loom_reduce_scratch_offset"), std::string::npos) << kernel;
    // Rows of 32 threads shuffle within their warp: no room is taken.
    kernel = kernels_of(compile_for_every_arch(p.softmax, p.rows_per_block(8, 32), 1));
    EXPECT_NE(kernel.find("}, nullptr, 0, loom_reduce_parity);"), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("loom_reduce_scratch_offset"), std::string::npos) << kernel;
    // Rows of 64 threads, two whole warps each, pass each warp's total
    // through the halves the block's combines take in turn: a float per
    // warp of the block's 8.
    kernel = kernels_of(compile_for_every_arch(p.softmax, p.rows_per_block(4, 64), 1));
    EXPECT_NE(kernel.find("loom_group_reduce<64, 4, 1, 1>(row_max_partial_[0]"), std::string::npos)
        << kernel;
    EXPECT_NE(kernel.find("loom_block_reduce_half_bytes = 32;"), std::string::npos) << kernel;
    EXPECT_EQ(count_of(kernel,
                       "loom_block_reduce_offset, loom_block_reduce_half_bytes, "
                       "loom_reduce_parity);"),
              2)
        << kernel;
    // Rows of 48 threads go through shared memory: a float per thread.
    kernel = kernels_of(compile_for_every_arch(p.softmax, p.rows_per_block(4, 48), 1));
    EXPECT_NE(kernel.find("// 768 bytes for reductions"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("}, loom_shared_memory + loom_reduce_scratch_offset, 0, "
                          "loom_reduce_parity);"),
              std::string::npos)
        << kernel;
}

TEST(CudaCodegen, SharedStorageSizedAtLaunch) {
    // The staged row's size is the row's length, known at launch: it
    // follows the kernel's constant-size shared storage (the reductions'
    // room), and the launch passes both sizes together.
    loom_test::RowSoftmax p;
    std::string src = compile_for_every_arch(p.softmax, p.staged_rows(256), 1);
    std::string kernel = kernels_of(src);
    EXPECT_NE(kernel.find("constexpr int loom_dynamic_shared_offset = 64;"), std::string::npos)
        << kernel;
    EXPECT_NE(kernel.find("float *const in_in_ = reinterpret_cast<float *>(loom_shared_memory + "
                          "loom_dynamic_shared_offset);  // sized at launch"),
              std::string::npos)
        << kernel;
    // Every pass over the row reads the copy; only the copy reads in_.
    EXPECT_NE(kernel.find("fmaxf(row_max_partial_[0], in_in_["), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("fmaxf(row_max_partial_[0], in_["), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("fmaxf(row_max_partial_[0], loom_load_readonly(&in_["), std::string::npos)
        << kernel;
}

TEST(CudaCodegen, CopiesThatEveryThreadKeeps) {
    // moments (Register) and scale (a single point, Auto) are computed at
    // the block loop, and every thread keeps a whole copy: arrays of 4 and
    // 1 floats, written by every thread (no first thread), each of the four
    // sums folded by every thread from the block's total; no barrier but
    // the combines'.
    loom_test::RowMoments p;
    std::string kernel =
        kernels_of(compile_for_every_arch(p.out, p.per_block(128, MemoryType::Register), 1));
    EXPECT_NE(kernel.find("float moments_[4];"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("float scale_[1];"), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("reinterpret_cast<float *>(loom_shared_memory"), std::string::npos)
        << kernel;
    EXPECT_EQ(kernel.find("threadIdx.x == 0"), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("__syncthreads();"), std::string::npos) << kernel;
    EXPECT_EQ(count_of(kernel, "= loom_block_reduce<128, 1, 1>("), 1) << kernel;
    EXPECT_TRUE(
        std::regex_search(kernel, std::regex("moments_\\[[^\\]]*\\] = \\(moments_\\[[^\\]]*\\] \\+ "
                                             "moments_partial_\\[0\\]\\);")))
        << kernel;
    // In shared memory, the first thread computes them, and barriers pass
    // them to the others.
    kernel = kernels_of(compile_for_every_arch(p.out, p.per_block(128, MemoryType::Shared), 1));
    EXPECT_NE(kernel.find("float *const moments_ = reinterpret_cast<float *>(loom_shared_memory"),
              std::string::npos)
        << kernel;
    EXPECT_NE(kernel.find("float scale_[1];"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("threadIdx.x == 0"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("__syncthreads();"), std::string::npos) << kernel;
}

TEST(CudaCodegen, RegistersThatThreadsKeepAcrossABlockLoop) {
    // acc is computed at the block loop, outside the thread loops, but
    // each thread touches only its own element: it is one float per
    // thread, with no shared memory and no barrier of its own. The tiles of
    // a and b are in shared memory. The last blocks cover fewer rows than
    // the block has threads: the thread loops run over the block's 16 x 16
    // threads, guarded by the rows and columns there are.
    loom_test::MatMul p;
    std::string src = compile_for_every_arch(p.c, p.shared_tiles(16, 8), 1);
    std::string kernel = kernels_of(src);
    EXPECT_NE(kernel.find("__launch_bounds__(256)"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("float acc_[1];"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("acc_[0] = (acc_[0] + (a_in_["), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("float *const a_in_ = reinterpret_cast<float *>(loom_shared_memory"),
              std::string::npos)
        << kernel;
    EXPECT_EQ(kernel.find("float *const acc_"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("const int acc_s1_i_ = acc_min_0_ + (int)threadIdx.x;"),
              std::string::npos)
        << kernel;
}

TEST(CudaCodegen, ReductionsAcrossThreads) {
    // Each thread accumulates its stride of the row in a register; the block
    // combines the partials (warp shuffles, then shared memory), and every
    // thread folds the total into its own copy of row_max / row_sum.
    loom_test::RowSoftmax p;
    std::string src = compile_for_every_arch(p.softmax, p.one_row_per_block(256), 1);
    std::string kernel = kernels_of(src);
    EXPECT_NE(kernel.find("float row_max_partial_[1];"), std::string::npos) << kernel;
    // The kernel only reads `in`: through the read-only data cache.
    EXPECT_NE(
        kernel.find("row_max_partial_[0] = fmaxf(row_max_partial_[0], loom_load_readonly(&in_["),
        std::string::npos)
        << kernel;

    EXPECT_NE(kernel.find("row_max_partial_[0] = loom_block_reduce<256, 1, 1>(row_max_partial_[0]"),
              std::string::npos)
        << kernel;
    EXPECT_NE(kernel.find("row_sum_partial_[0] = (row_sum_partial_[0] + expf("), std::string::npos)
        << kernel;
    // The initial values and the folds are every thread's, in its
    // registers: no first thread, no barrier outside the combines.
    EXPECT_TRUE(std::regex_search(
        kernel, std::regex("float row_max_\\[1\\];\n *// produce row_max\n.*\n *row_max_\\[0\\] = "
                           "__int_as_float\\(0xff800000\\);")))
        << kernel;
    EXPECT_NE(kernel.find("row_sum_[0] = (row_sum_[0] + row_sum_partial_[0]);"), std::string::npos)
        << kernel;
    EXPECT_EQ(kernel.find("threadIdx.x == 0"), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("__syncthreads"), std::string::npos) << kernel;
    std::string ptx = loom::internal::compile_cuda(src, "softmax", "sm_90").ptx;
    EXPECT_NE(ptx.find("shfl.sync.bfly"), std::string::npos);
    EXPECT_NE(ptx.find("ld.global.nc.f32"), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("ld.global.f32"), std::string::npos) << ptx;

    // 16-bit and integer values shuffle too (through 32-bit words), over a
    // two-dimensional block.
    BufferParam in(Int(16), 2, "in");
    Var y("y");
    RDom r(0, in.dim(1).extent(), "r");
    RVar ro("ro"), ri("ri"), rj("rj");
    Func lo("lo"), total("total");
    lo(y) = cast<int16_t>(32767);
    lo(y) = min(lo(y), in(y, r));
    total(y) = cast<float16_t>(0.0f) + cast<float16_t>(lo(y));
    total(y) = total(y) + cast<float16_t>(in(y, r));
    Schedule sch;
    sch[lo].update().split(r, ro, ri, 64).split(ro, ro, rj, 4).gpu_blocks(y).gpu_threads(ri, rj);
    sch[lo].compute_root().gpu_blocks(y);
    sch[total].update().split(r, ro, ri, 96).gpu_blocks(y).gpu_threads(ri);
    sch[total].gpu_blocks(y);
    src = kernels_of(compile_for_every_arch(total, sch, 4));
    EXPECT_NE(src.find("loom_block_reduce<64, 4, 1>(lo_partial_[0], [&](short"), std::string::npos)
        << src;
    EXPECT_NE(src.find("loom_block_reduce<96, 1, 1>(total_partial_[0], [&](__half"),
              std::string::npos)
        << src;
}

TEST(CudaCodegen, VectorizedRVarsAcrossThreads) {
    // Each thread reads 4 consecutive floats of the row as one 16-byte load,
    // combines the lanes (max, then sum) into its partial, and the block
    // combines the partials.
    loom_test::RowSoftmax p;
    std::string src = compile_for_every_arch(p.softmax, p.one_row_per_block(64, 4), 1);
    std::string kernel = kernels_of(src);
    EXPECT_NE(kernel.find("row_max_partial_[0] = fmaxf(row_max_partial_[0], loom_vreduce_all("),
              std::string::npos)
        << kernel;
    EXPECT_NE(kernel.find("row_sum_partial_[0] = (row_sum_partial_[0] + loom_vreduce_all("),
              std::string::npos)
        << kernel;
    EXPECT_NE(kernel.find("loom_load_dense_readonly<float, 4>(in_"), std::string::npos) << kernel;
    std::string ptx = loom::internal::compile_cuda(src, "softmax", "sm_90").ptx;
    EXPECT_GE(count_of(ptx, "ld.global.nc.v4"), 2) << ptx;
    EXPECT_NE(ptx.find("shfl.sync.bfly"), std::string::npos);
}

TEST(CudaCodegen, DoublePrecisionMath) {
    BufferParam in(Float(64), 1, "in");
    Var x("x"), xo("xo"), xi("xi");
    Func f("f");
    f(x) = pow(in(x), 1.5) + log(abs(in(x)) + 1.0) + tanh(in(x)) + floor(in(x)) + in(x) % 2.0;
    Schedule sch;
    sch[f].gpu_tile(x, xo, xi, 256);
    std::string src = compile_for_every_arch(f, sch, 1);
    EXPECT_NE(src.find("pow("), std::string::npos) << src;
    EXPECT_NE(src.find("loom_fmod("), std::string::npos) << src;
}

TEST(CudaCodegen, HalfAndBFloat16) {
    loom_test::HalfChain p;
    Schedule sch;
    sch[p.out].gpu_tile(p.x, p.xo, p.xi, 128);
    std::string src = compile_for_every_arch(p.out, sch, 1);
    EXPECT_NE(src.find("#include <cuda_fp16.h>"), std::string::npos) << src;
    EXPECT_NE(src.find("const __half *__restrict__ in_"), std::string::npos) << src;
    EXPECT_NE(src.find("__nv_bfloat16 *__restrict__ out_"), std::string::npos) << src;
}

TEST(CudaCodegen, WritesSourcePtxAndCubin) {
    BufferParam in(Float(32), 1, "in");
    Var x("x"), xo("xo"), xi("xi");
    Func twice("twice");
    twice(x) = in(x)*2.0f;
    Schedule sch;
    sch[twice].gpu_tile(x, xo, xi, 32);
    std::string base = ::testing::TempDir() + "loom_cuda_twice";
    Pipeline(twice).compile_to_cuda(base, sch, Target("host-cuda-sm_80"));
    for (const char *suffix : {".cu", ".ptx", ".cubin"}) {
        std::ifstream f(base + suffix, std::ios::binary);
        std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        EXPECT_GT(data.size(), 100u) << suffix;
        std::remove((base + suffix).c_str());
    }
}

TEST(CudaCodegen, LoopsAlongARowTestItsAlignmentOnce) {
    // Nothing promised: a row may start anywhere. The loops along it (the
    // staging copy, the max's, the output's) step by whole vectors, so
    // each tests where its row starts once and runs a copy whose vectors
    // move aligned words untested, or, when the test fails, the loop as it
    // was, testing each access.
    loom_test::AlignedRows p(false);
    std::string src = kernels_of(compile_for_every_arch(p.centered, p.schedule(64, true), 1));
    EXPECT_GE(count_of(src, "if (loom_is_aligned<16>(in_, "), 1) << src;
    EXPECT_GE(count_of(src, "loom_load_aligned_readonly<float, 4>(in_"), 1) << src;
    EXPECT_GE(count_of(src, "loom_load_dense_readonly<float, 4>(in_"), 1) << src;
    EXPECT_GE(count_of(src, "loom_store_aligned_global<float, 4>(centered_"), 1) << src;
    EXPECT_GE(count_of(src, "loom_store_dense_global<float, 4>(centered_"), 1) << src;

    // A loop that steps from row to row moves by the row's stride, which
    // may be any number of floats: its accesses keep their own tests.
    BufferParam in(Float(32), 2, "in");
    Var x("x"), y("y"), xo("xo"), xi("xi"), xv("xv");
    Func twice("twice");
    twice(y, x) = in(y, x) * 2.0f;
    Schedule down;
    down[twice]
        .split(x, xo, xi, 128, TailStrategy::GuardWithIf)
        .split(xi, xi, xv, 4)
        .vectorize(xv)
        .gpu_blocks(xo)
        .gpu_threads(xi)
        .reorder(xo, y, xi, xv);
    src = kernels_of(compile_for_every_arch(twice, down, 1));
    EXPECT_NE(src.find("for (int twice_s0_y_"), std::string::npos) << src;
    EXPECT_EQ(count_of(src, "loom_is_aligned"), 0) << src;
    EXPECT_GE(count_of(src, "loom_load_dense_readonly<float, 4>(in_"), 1) << src;
}

TEST(CudaCodegen, ChunksOnThreadsRollInRegistersAndCombineAcrossTheBlock) {
    // split_k with a chunk per thread of a block: each thread's running
    // max and sum are its own registers (arrays of one, not shared
    // memory), read and written at its own chunk, and the block combines
    // them in one reduction across its threads per member of the chain.
    loom_test::RowSoftmax a;
    const std::string source =
        compile_for_every_arch(a.softmax, a.chunks_on_threads(256, 4, ChunkLayout::Interleaved), 1);
    for (const char *partial : {"row_max_partial_", "row_sum_partial_"}) {
        EXPECT_NE(source.find(std::string("float ") + partial + "[1];"), std::string::npos)
            << partial << "\n"
            << source;
        EXPECT_EQ(source.find(std::string(partial) + " = reinterpret_cast"), std::string::npos)
            << partial << " is in shared memory\n"
            << source;
    }
    int combines = 0;
    for (size_t at = source.find(" = loom_block_reduce<"); at != std::string::npos;
         at = source.find(" = loom_block_reduce<", at + 1)) {
        combines++;
    }
    EXPECT_EQ(combines, 2) << source;
    // Thread t's step s reads the 4 floats at (s * 256 + t) * 4: whole
    // 16-byte words once the row's start is tested.
    EXPECT_NE(source.find("loom_load_aligned_readonly<float, 4>"), std::string::npos) << source;
}

TEST(CudaCodegen, RowsKeptInRegistersAreEachThreadsRunsWithConstantIndices) {
    // A row of 4096 floats copied once into the registers of its block's
    // 256 threads, 4 floats per thread in each period of 1024: 16 floats a
    // thread, no shared memory for the row, and every pass (the max and
    // the sum, each thread's own or across the threads per step, and the
    // output) reads the thread's own runs. Once nvcc unrolls the loops
    // over periods every index is a constant, so that the array is in
    // registers: the PTX has no local memory.
    for (bool per_thread : {true, false}) {
        SCOPED_TRACE(per_thread ? "each thread's reductions" : "reductions per step");
        loom_test::RowSoftmax a;
        a.in.dim(1).set_min(0).set_extent(4096);
        a.softmax.output_buffer().dim(1).set_min(0).set_extent(4096);
        const Schedule sch = a.row_in_registers(256, 4, per_thread);
        const std::string source = compile_for_every_arch(a.softmax, sch, 1);
        EXPECT_NE(source.find("float in_in_[16];"), std::string::npos) << source;
        EXPECT_EQ(source.find("in_in_ = reinterpret_cast"), std::string::npos) << source;
        // The copy's, the reductions' and the output's accesses: a run of 4
        // at 4 times the loop over periods.
        EXPECT_GE(count_of(source, "loom_store_lanes<float, 4>(in_in_, "), 1) << source;
        EXPECT_GE(count_of(source, "loom_load_lanes<float, 4>(in_in_, "), 2) << source;
        EXPECT_EQ(source.find("loom_gather(in_in_"), std::string::npos) << source;
        for (const char *arch : kArchs) {
            const std::string ptx = compile_cuda(source, "softmax", arch).ptx;
            EXPECT_EQ(ptx.find(".local"), std::string::npos) << arch << "\n" << ptx;
        }
    }
}

TEST(CudaCodegen, BlocksPerSmAreTheLaunchBoundsSecondArgument) {
    // gpu_blocks_per_sm on the Func whose loops are the kernel's blocks:
    // __launch_bounds__(threads, blocks), which the PTX passes on to ptxas
    // as .minnctapersm (and ptxas then caps the registers). Without it,
    // threads alone.
    loom_test::RowSoftmax a;
    a.in.dim(1).set_min(0).set_extent(16384);
    a.softmax.output_buffer().dim(1).set_min(0).set_extent(16384);
    Schedule sch = a.row_in_registers(1024, 4, true);
    const std::string plain = compile_for_every_arch(a.softmax, sch, 1);
    EXPECT_NE(plain.find("__launch_bounds__(1024) "), std::string::npos) << plain;
    const Target sm80("host-cuda-sm_80");
    const std::string plain_stmt = Pipeline(a.softmax).compile_to_lowered_stmt(sch, sm80);
    sch[a.softmax].gpu_blocks_per_sm(2);
    const std::string source = compile_for_every_arch(a.softmax, sch, 1);
    // The JIT cache is keyed by the lowered statement: the bound must show
    // in it, or a pipeline compiled without it first would be reused
    // unbounded (as it once was).
    const std::string bounded_stmt = Pipeline(a.softmax).compile_to_lowered_stmt(sch, sm80);
    EXPECT_NE(bounded_stmt.find("[blocks_per_sm = 2]"), std::string::npos) << bounded_stmt;
    EXPECT_EQ(plain_stmt.find("blocks_per_sm"), std::string::npos) << plain_stmt;
    EXPECT_NE(source.find("__launch_bounds__(1024, 2) "), std::string::npos) << source;
    for (const char *arch : kArchs) {
        const std::string ptx = compile_cuda(source, "softmax", arch).ptx;
        EXPECT_NE(ptx.find(".minnctapersm 2"), std::string::npos) << arch << "\n" << ptx;
    }
}

TEST(CudaCodegen, FastMathCompilesTheHardwaresApproximations) {
    // Without fast_math, exp is the accurate expansion and x / y correctly
    // rounded; with it, NVRTC is told --use_fast_math (and the source says
    // so): exp becomes ex2.approx of a product and the division approximate.
    BufferParam in(Float(32), 1, "in");
    Var x("x"), xo("xo"), xi("xi");
    Func ratio("ratio");
    ratio(x) = exp(in(x)) / (in(x) + 3.0f);
    Schedule sch;
    sch[ratio].gpu_tile(x, xo, xi, 64);
    auto ptx_and_source = [&](const std::string &target, const std::string &tag) {
        std::string base = ::testing::TempDir() + "loom_cuda_fast_math_" + tag;
        Pipeline(ratio).compile_to_cuda(base, sch, Target(target));
        std::vector<std::string> files;
        for (const char *suffix : {".ptx", ".cu", ".cubin"}) {
            std::ifstream f(base + suffix, std::ios::binary);
            files.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
            std::remove((base + suffix).c_str());
        }
        return files;
    };
    const std::vector<std::string> plain = ptx_and_source("host-cuda-sm_90", "plain");
    const std::vector<std::string> fast = ptx_and_source("host-cuda-sm_90-fast_math", "fast");
    EXPECT_NE(plain[0].find("div.rn.f32"), std::string::npos) << plain[0];
    EXPECT_EQ(plain[1].find("--use_fast_math"), std::string::npos);
    EXPECT_EQ(fast[0].find("div.rn.f32"), std::string::npos) << fast[0];
    EXPECT_NE(fast[0].find("ex2.approx.ftz.f32"), std::string::npos) << fast[0];
    // The accurate exp rounds its argument's split with cvt.rmi/fma.rm;
    // the approximate one multiplies by log2(e) and calls ex2 at once.
    EXPECT_LT(count_of(fast[0], "\n"), count_of(plain[0], "\n"));
    EXPECT_NE(fast[1].find("compile with --use_fast_math"), std::string::npos) << fast[1];
    EXPECT_GT(fast[2].size(), 100u);
}
