// The GEMM template's kernels (schedules/gemm.h at its default 128 x 128 x 32
// tiles, 2 x 2 warps, 3 stages) compiled by NVRTC for sm_80 and sm_90a, f16
// and bf16, with and without a fused epilogue: ptxas reports no spills and
// no stack, and the machine code multiplies on tensor cores (HMMA), reads
// shared memory with ldmatrix (LDSM), copies with cp.async (LDGSTS), and
// never touches local memory (LDL/STL). What a GPU run would show about the
// instruction mix, checked without one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../apps/gemm/tensor_core_gemm.h"
#include "codegen/NVRTC.h"
#include "sass.h"

namespace {

using namespace loom;

struct SassCase {
    Type in, out;
    gemm::Epilogue epilogue;
    const char *arch;
};

class TileTemplateSass : public ::testing::TestWithParam<SassCase> {};

int count(const std::string &s, const std::string &what) {
    int n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) n++;
    return n;
}

}  // namespace

TEST_P(TileTemplateSass, TensorCoresWithoutSpills) {
    const SassCase c = GetParam();
    gemm::TensorCoreGemm g(c.in, c.out, false, c.epilogue);
    Schedule sch;
    g.schedule_gpu(sch);
    const std::string target = std::string("host-cuda-") + c.arch;
    const std::string source = Pipeline(g.C).compile_to_cuda(sch, Target(target));
    internal::CudaBinary bin;
    try {
        bin = internal::compile_cuda(source, "gemm_template", c.arch, {"--ptxas-options=-v"});
    } catch (const CompileError &e) {
        // Only a missing NVRTC skips; a kernel it refuses is a failure.
        if (std::string(e.what()).find("could not be loaded") == std::string::npos) throw;
        GTEST_SKIP() << e.what();
    }
    EXPECT_NE(bin.log.find("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
              std::string::npos)
        << bin.log;
    const size_t regs = bin.log.find("Used ");
    std::printf("[sass] %s %s -> %s%s: %s\n", c.arch, type_to_string(c.in).c_str(),
                type_to_string(c.out).c_str(),
                c.epilogue == gemm::Epilogue::None ? "" : " with an epilogue",
                regs == std::string::npos
                    ? "?"
                    : bin.log.substr(regs, bin.log.find('\n', regs) - regs).c_str());
    const std::string nvdisasm = loom_test::find_nvdisasm();
    if (nvdisasm.empty()) GTEST_SKIP() << "no nvdisasm (pip install nvidia-cuda-nvdisasm)";
    const std::string sass = loom_test::sass_of(bin.cubin, nvdisasm);
    // 64 x 64 per warp and 32 of k per step: 4 x 8 fragments x 2 = 64.
    EXPECT_GE(count(sass, "HMMA.16816.F32"), 64) << "tensor-core multiplies";
    EXPECT_GT(count(sass, "LDSM"), 0) << "ldmatrix";
    EXPECT_GT(count(sass, "LDGSTS"), 0) << "cp.async";
    EXPECT_EQ(count(sass, "STL"), 0) << "local memory stores (spills)";
    EXPECT_EQ(count(sass, "LDL"), 0) << "local memory loads (spills)";
}

INSTANTIATE_TEST_SUITE_P(
    Template, TileTemplateSass,
    ::testing::Values(SassCase{Float(16), Float(32), gemm::Epilogue::None, "sm_80"},
                      SassCase{BFloat(16), Float(32), gemm::Epilogue::None, "sm_80"},
                      SassCase{Float(16), Float(16), gemm::Epilogue::BiasResidual, "sm_80"},
                      SassCase{BFloat(16), BFloat(16), gemm::Epilogue::None, "sm_90a"},
                      SassCase{Float(16), Float(32), gemm::Epilogue::BiasResidual, "sm_90a"}),
    [](const ::testing::TestParamInfo<SassCase> &info) {
        const SassCase &c = info.param;
        return std::string(c.arch) + "_" + (c.in == BFloat(16) ? "bf16" : "f16") + "_" +
               (c.out == Float(32) ? "f32" : "16bit") +
               (c.epilogue == gemm::Epilogue::None ? "" : "_epilogue");
    });
