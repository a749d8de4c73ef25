// The tensor-core attention template's kernels (schedules/flash_attention.h,
// flash_attention_tensor_cores, and flash_decoding_tensor_cores's split_k
// over tile programs) compiled by NVRTC for sm_80 and sm_90a,
// head dims 64 and 128, fp16 and bf16, global and causal: ptxas reports no
// spills and no stack, and the key loop multiplies on tensor cores (HMMA:
// both products), reads shared memory with ldmatrix (LDSM), copies with
// cp.async (LDGSTS), reduces the rows by shuffles (SHFL.BFLY) and computes
// one exponential (MUFU.EX2) per score plus one per row for the repair: P
// is computed once. Also the JIT compile time of the template (lowering and
// NVRTC), which the issue asks to stay under 2 s.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "../../apps/attention/variants.h"
#include "../../schedules/flash_attention.h"
#include "codegen/NVRTC.h"
#include "sass.h"

namespace {

using namespace loom;

struct AttentionSassCase {
    attention::Variant variant;
    Type in;
    int head_dim;
    const char *arch;
    int warps = 4, query_tile = 64;  // 16 rows per warp either way
    /** flash_decoding_tensor_cores instead: one warp of 16 queries per
     * piece of the keys. */
    bool decode = false;
};

class AttentionTemplateSass : public ::testing::TestWithParam<AttentionSassCase> {};

}  // namespace

TEST_P(AttentionTemplateSass, KeyLoopOnTensorCoresWithOneExpPerScore) {
    const AttentionSassCase c = GetParam();
    attention::AttentionVariant app(c.variant, c.in);
    app.fix_head_dim(c.head_dim);
    Schedule sch;
    schedules::FlashAttentionTensorCoreOptions opt;
    opt.head_dim = c.head_dim;
    opt.warps = c.warps;
    opt.query_tile = c.query_tile;
    if (c.decode) {
        schedules::FlashDecodingTensorCoreOptions dopt;
        dopt.head_dim = c.head_dim;
        schedules::flash_decoding_tensor_cores(sch, app.chain(), dopt);
    } else {
        schedules::flash_attention_tensor_cores(sch, app.chain(), opt);
    }
    const auto start = std::chrono::steady_clock::now();
    const std::string target = std::string("host-cuda-") + c.arch;
    const std::string source = Pipeline(app.out).compile_to_cuda(sch, Target(target));
    internal::CudaBinary bin;
    try {
        bin = internal::compile_cuda(source, "attention_template", c.arch, {"--ptxas-options=-v"});
    } catch (const CompileError &e) {
        if (std::string(e.what()).find("could not be loaded") == std::string::npos) throw;
        GTEST_SKIP() << e.what();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Every kernel of the module (decode's combine too): no stack, no spills.
    auto count = [&](const std::string &what) {
        int n = 0;
        for (size_t at = bin.log.find(what); at != std::string::npos;
             at = bin.log.find(what, at + 1))
            n++;
        return n;
    };
    EXPECT_GT(count("bytes stack frame"), 0) << bin.log;
    EXPECT_EQ(count("bytes stack frame"),
              count(" 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"))
        << bin.log;
    const std::string nvdisasm = loom_test::find_nvdisasm();
    if (nvdisasm.empty()) GTEST_SKIP() << "no nvdisasm (pip install nvidia-cuda-nvdisasm)";
    const std::string sass = loom_test::sass_of(bin.cubin, nvdisasm);
    EXPECT_EQ(sass.find("LDL"), std::string::npos) << "local memory";
    EXPECT_EQ(sass.find("STL"), std::string::npos) << "local memory";
    // The key loop: the loop with the most tensor-core instructions.
    std::vector<std::string> key_loop;
    int best = 0;
    for (const std::vector<std::string> &loop : loom_test::sass_loops(sass)) {
        const int mma = int(std::count_if(loop.begin(), loop.end(), [](const std::string &op) {
            return op.compare(0, 4, "HMMA") == 0;
        }));
        if (mma > best) best = mma, key_loop = loop;
    }
    std::map<std::string, int> ops;
    for (const std::string &op : key_loop) {
        ops[op.substr(0, op.find('.'))]++;
        if (op.compare(0, 8, "MUFU.EX2") == 0) ops["EX2"]++;
        if (op.compare(0, 9, "SHFL.BFLY") == 0) ops["BFLY"]++;
    }
    // Per key tile (64 keys, 32 from head dim 128 on) each warp multiplies
    // its 16 rows by the keys (keys / 8 n-fragments x head_dim / 16
    // k-steps) and P by V (head_dim / 8 n-fragments x keys / 16 k-steps),
    // once each: the head dimension is one reduction tile, whose loop of
    // one step is gone.
    const int keys = c.head_dim >= 128 ? 32 : 64;
    const int qk = (keys / 8) * (c.head_dim / 16), pv = (c.head_dim / 8) * (keys / 16);
    // Each thread holds 16 x keys / 32 scores of 2 rows.
    const int ex2 = 16 * keys / 32 + 2;
    // The tile program's registers: the kernel that uses the most.
    size_t regs = std::string::npos;
    int most = -1;
    for (size_t at = bin.log.find("Used "); at != std::string::npos;
         at = bin.log.find("Used ", at + 1)) {
        const int n = std::atoi(bin.log.c_str() + at + 5);
        if (n > most) most = n, regs = at;
    }
    std::printf(
        "[attention sass] %s%s %s d%d %s %dx%d warps: key loop %zu instructions, %d HMMA, %d "
        "LDSM, %d LDGSTS, %d MUFU.EX2, %d SHFL.BFLY; %s; lowering + NVRTC %.2f s\n",
        c.decode ? "decode " : "", attention::variant_name(c.variant), type_to_string(c.in).c_str(),
        c.head_dim, c.arch, c.decode ? 16 : c.query_tile, c.decode ? 1 : c.warps, key_loop.size(),
        ops["HMMA"], ops["LDSM"], ops["LDGSTS"], ops["EX2"], ops["BFLY"],
        regs == std::string::npos ? "?"
                                  : bin.log.substr(regs, bin.log.find('\n', regs) - regs).c_str(),
        seconds);
    EXPECT_EQ(ops["HMMA"], qk + pv);
    EXPECT_GT(ops["LDSM"], 0);
    EXPECT_GT(ops["LDGSTS"], 0);
    EXPECT_EQ(ops["EX2"], ex2);
    EXPECT_EQ(ops["BFLY"], 8);  // 2 rows x 2 lane bits x (max, sum)
}

INSTANTIATE_TEST_SUITE_P(
    Template, AttentionTemplateSass,
    ::testing::Values(
        AttentionSassCase{attention::Variant::Global, Float(16), 64, "sm_80"},
        AttentionSassCase{attention::Variant::Causal, BFloat(16), 64, "sm_80"},
        AttentionSassCase{attention::Variant::Global, Float(16), 128, "sm_80"},
        AttentionSassCase{attention::Variant::Causal, BFloat(16), 128, "sm_90a"},
        AttentionSassCase{attention::Variant::Causal, Float(16), 64, "sm_90a", 8, 128},
        AttentionSassCase{attention::Variant::Causal, Float(16), 128, "sm_90a", 4, 64, true},
        AttentionSassCase{attention::Variant::Global, BFloat(16), 64, "sm_80", 4, 64, true},
        // A group of query heads in the rows.
        AttentionSassCase{attention::Variant::GroupedQuery, Float(16), 128, "sm_90a", 4, 64, true}),
    [](const ::testing::TestParamInfo<AttentionSassCase> &info) {
        return std::string(attention::variant_name(info.param.variant)) + "_" +
               (info.param.in == BFloat(16) ? "bf16" : "f16") + "_d" +
               std::to_string(info.param.head_dim) + "_" + info.param.arch +
               (info.param.warps != 4 ? "_" + std::to_string(info.param.warps) + "warps" : "") +
               (info.param.decode ? "_decode" : "");
    });
