// Loom's CUDA runtime and the host code of GPU pipelines, against a stand-in
// driver (test/fake_cuda) so that they are tested on every machine: which
// copies happen and when (dirty flags), what each launch is given, how
// modules are loaded and cached, and how each failing driver call is
// reported. The stand-in runs no kernel: a hook plays the GPU, checking
// that a kernel's inputs are in device memory and writing its outputs
// there. Whether the kernels compute the right values is the gpu-labelled
// tests' business: on a machine with a GPU, and (on_cpu.*) on the stand-in
// driver running them on the CPU (kernels_on_cpu_test.cpp tests that).
#include <gtest/gtest.h>

#include <cmath>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda.h"
#include "gpu_test_pipelines.h"
#include "loom/loom.h"
#include "test_util.h"

using namespace loom;
using loom_test::throws_with;

namespace {

// Loom's runtime loads the stand-in driver (test/fake_cuda).
const bool driver_selected = fake_cuda_select();

const Target kTarget("host-cuda-sm_90");

/** One kernel launch as the stand-in driver saw it. */
struct Launch {
    std::string kernel;
    unsigned grid[3], block[3], shared;
    std::map<std::string, void *> args;  // by the CUDA names of its parameters ("in_")
    template <typename T> T arg(const std::string &name) const {
        auto it = args.find(name);
        EXPECT_NE(it, args.end()) << kernel << " has no parameter " << name;
        T v{};
        if (it != args.end()) std::memcpy(&v, it->second, sizeof(T));
        return v;
    }
};

/** Plays the GPU: names each launch's arguments from the kernels' CUDA
 * signatures and hands the launch to `on_launch`. */
class FakeGpu {
  public:
    std::function<void(const Launch &)> on_launch;
    std::vector<Launch> launches;

    FakeGpu() {
        fake_cuda_reset(1, 90);
        fake_cuda_set_launch_hook(&FakeGpu::hook, this);
    }
    ~FakeGpu() { fake_cuda_set_launch_hook(nullptr, nullptr); }

    /** Reads the parameter names of every kernel in `source`. */
    void learn(const std::string &source) {
        const std::string marker = "__launch_bounds__(";
        for (size_t at = source.find(marker); at != std::string::npos;
             at = source.find(marker, at + 1)) {
            size_t name_start = source.find(") ", at) + 2;
            size_t open = source.find('(', name_start);
            size_t close = source.find(") {", open);
            std::string kernel = source.substr(name_start, open - name_start);
            std::vector<std::string> names;
            std::string list = source.substr(open + 1, close - open - 1);
            size_t start = 0;
            while (start < list.size()) {
                size_t comma = list.find(',', start);
                if (comma == std::string::npos) comma = list.size();
                std::string p = list.substr(start, comma - start);
                names.push_back(p.substr(p.find_last_of(" *") + 1));
                start = comma + 1;
            }
            params[kernel] = names;
        }
    }

  private:
    std::map<std::string, std::vector<std::string>> params;

    static void hook(const char *kernel, const unsigned grid[3], const unsigned block[3],
                     unsigned shared, void **args, void *user) {
        FakeGpu *self = static_cast<FakeGpu *>(user);
        Launch l;
        l.kernel = kernel;
        for (int d = 0; d < 3; d++) {
            l.grid[d] = grid[d];
            l.block[d] = block[d];
        }
        l.shared = shared;
        auto it = self->params.find(kernel);
        EXPECT_NE(it, self->params.end()) << "launch of unknown kernel " << kernel;
        if (it != self->params.end()) {
            for (size_t i = 0; i < it->second.size(); i++) l.args[it->second[i]] = args[i];
        }
        if (self->on_launch) self->on_launch(l);
        for (auto &a : l.args) a.second = nullptr;  // only valid during the launch
        self->launches.push_back(l);
    }
};

/** out = in * gain + 1 over a 2-D grid of 8 x 32 thread blocks. Each test
 * names its output differently: compiled pipelines are cached by their
 * definitions, and with them their loaded modules. */
struct Scale {
    BufferParam in{Float(32), 2, "in"};
    Param<float> gain{"gain"};
    Var x{"x"}, y{"y"}, xo{"xo"}, yo{"yo"}, xi{"xi"}, yi{"yi"};
    Func out;
    Schedule sch;
    /** The kernel's name. */
    std::string kernel() const { return "loom_" + out.name() + "_" + out.name(); }
    explicit Scale(const std::string &name) : out(name) {
        out(y, x) = in(y, x) * gain + 1.0f;
        sch[out].gpu_tile(y, x, yo, xo, yi, xi, 8, 32);
    }
    CompiledPipeline compile(FakeGpu &gpu) const {
        gpu.learn(Pipeline(out).compile_to_cuda(sch, kTarget));
        return Pipeline(out).compile(sch, kTarget);
    }
};

/** A GPU stand-in for Scale's kernel over rows x cols: checks that `in`
 * arrived in device memory with the host's values (`in_host`, read through
 * its raw pointer: host() would mark it changed), and writes
 * out = in * gain + 1 there, with the strides the launch was given. */
void run_scale(const Launch &l, const RawBuffer &in_host, int rows, int cols) {
    // The kernel is loom_<output>_<output>.
    const std::string output = l.kernel.substr(5, (l.kernel.size() - 6) / 2);
    const float *in = reinterpret_cast<const float *>(l.arg<uint64_t>("in_"));
    float *out = reinterpret_cast<float *>(l.arg<uint64_t>(output + "_"));
    const int in_stride = l.arg<int>("in_stride_0_");
    const int out_stride = l.arg<int>(output + "_stride_0_");
    ASSERT_TRUE(fake_cuda_is_device_memory(reinterpret_cast<uint64_t>(in),
                                           sizeof(float) * ((rows - 1) * in_stride + cols)));
    ASSERT_TRUE(fake_cuda_is_device_memory(reinterpret_cast<uint64_t>(out),
                                           sizeof(float) * ((rows - 1) * out_stride + cols)));
    const float *host = reinterpret_cast<const float *>(in_host.raw_buffer()->host);
    const float gain = l.arg<float>("gain_");
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            ASSERT_EQ(in[r * in_stride + c], host[r * in_host.stride(0) + c]) << r << ", " << c;
            out[r * out_stride + c] = in[r * in_stride + c] * gain + 1.0f;
        }
    }
}

}  // namespace

TEST(CudaRuntime, LaunchGetsDeviceMemoryScalarsAndTheGrid) {
    FakeGpu gpu;
    Scale s("scaled");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 37, cols = 70;  // neither a multiple of the tile
    Buffer<float> in = loom_test::random_buffer<float>({rows, cols});
    Buffer<float> out({rows, cols});
    gpu.on_launch = [&](const Launch &l) { run_scale(l, in, rows, cols); };
    p(in, 2.5f, out);

    ASSERT_EQ(gpu.launches.size(), 1u);
    const Launch &l = gpu.launches[0];
    EXPECT_EQ(l.kernel, "loom_scaled_scaled");
    EXPECT_EQ(l.grid[0], (cols + 31) / 32u);  // x: the innermost block loop
    EXPECT_EQ(l.grid[1], (rows + 7) / 8u);
    EXPECT_EQ(l.grid[2], 1u);
    EXPECT_EQ(l.block[0], 32u);
    EXPECT_EQ(l.block[1], 8u);
    EXPECT_EQ(l.shared, 0u);
    // The pipeline returned after the kernels finished.
    EXPECT_EQ(fake_cuda_calls("cuCtxSynchronize"), 1);

    // The result is on the GPU until the host reads it.
    EXPECT_TRUE(out.device_dirty());
    EXPECT_EQ(fake_cuda_calls("cuMemcpyDtoH_v2"), 0);
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) ASSERT_EQ(out(r, c), in(r, c) * 2.5f + 1.0f);
    }
    EXPECT_EQ(fake_cuda_calls("cuMemcpyDtoH_v2"), 1);  // one dense copy
    EXPECT_FALSE(out.device_dirty());
}

TEST(CudaRuntime, InputsAreCopiedOnceUntilTheHostChangesThem) {
    FakeGpu gpu;
    Scale s("copied_once");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 16, cols = 64;
    Buffer<float> in = loom_test::random_buffer<float>({rows, cols});
    Buffer<float> out({rows, cols});
    gpu.on_launch = [&](const Launch &l) { run_scale(l, in, rows, cols); };
    p(in, 2.0f, out);
    p(in, 3.0f, out);
    // The output is written, never read, by the kernel: it is not copied in.
    EXPECT_EQ(fake_cuda_calls("cuMemcpyHtoD_v2"), 1);
    EXPECT_EQ(fake_cuda_calls("cuMemAlloc_v2"), 2);
    EXPECT_FALSE(in.host_dirty());
    EXPECT_EQ(out(3, 5), in(3, 5) * 3.0f + 1.0f);  // in(3, 5): the host may have changed it
    EXPECT_TRUE(in.host_dirty());
    in(3, 5) = 42.0f;
    p(in, 1.0f, out);
    EXPECT_EQ(fake_cuda_calls("cuMemcpyHtoD_v2"), 2);
    EXPECT_EQ(out(3, 5), 43.0f);
    EXPECT_EQ(fake_cuda_calls("cuMemAlloc_v2"), 2);  // the buffers keep their GPU memory
    // The module was loaded, and the kernel found, once.
    EXPECT_EQ(fake_cuda_calls("cuModuleLoadData"), 1);
    EXPECT_EQ(fake_cuda_calls("cuModuleGetFunction"), 1);
    EXPECT_EQ(gpu.launches.size(), 3u);
    // Buffers free their GPU memory.
    int live = fake_cuda_live_allocations();
    out.device_free();
    EXPECT_FALSE(out.has_device_memory());
    EXPECT_EQ(fake_cuda_live_allocations(), live - 1);
    { Buffer<float> dropped = std::move(in); }
    EXPECT_EQ(fake_cuda_live_allocations(), live - 2);
}

TEST(CudaRuntime, ABufferUpdatedInPlaceIsCopiedInFirst) {
    // One buffer as the input and the output. The kernel's parameters are
    // in name order, the output's (an_in_place_) before the input's (in_),
    // and preparing the output first marked the host's data stale before it
    // was copied: the kernel read GPU memory nothing had written.
    FakeGpu gpu;
    Scale s("an_in_place");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 9, cols = 40;
    Buffer<float> data = loom_test::random_buffer<float>({rows, cols});
    Buffer<float> original({rows, cols});
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) original(r, c) = data(r, c);
    }
    gpu.on_launch = [&](const Launch &l) { run_scale(l, data, rows, cols); };
    p(data, 2.0f, data);
    ASSERT_EQ(gpu.launches.size(), 1u);
    EXPECT_EQ(fake_cuda_calls("cuMemcpyHtoD_v2"), 1);
    EXPECT_TRUE(data.device_dirty());
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) ASSERT_EQ(data(r, c), original(r, c) * 2.0f + 1.0f);
    }
}

TEST(CudaRuntime, ThePtxIsLoadedWhenTheDriverRefusesTheCubin) {
    FakeGpu gpu;
    fake_cuda_refuse_cubin(1);  // as a GPU of another capability would
    Scale s("from_ptx");
    CompiledPipeline p = s.compile(gpu);
    Buffer<float> in = loom_test::random_buffer<float>({9, 33}), out({9, 33});
    gpu.on_launch = [&](const Launch &l) { run_scale(l, in, 9, 33); };
    p(in, 0.5f, out);
    EXPECT_EQ(fake_cuda_calls("cuModuleLoadData"), 2);
    EXPECT_EQ(out(8, 32), in(8, 32) * 0.5f + 1.0f);

    // A driver that refuses both says what was refused, and what to do.
    Scale other("refused");
    CompiledPipeline q = other.compile(gpu);
    fake_cuda_fail_next("cuModuleLoadData", 209);
    fake_cuda_fail_next("cuModuleLoadData", 218);
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { q(in, 0.5f, out); },
        {"cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX", "PTX of kernel loom_refused_refused",
         "cubin was refused: CUDA_ERROR_NO_BINARY_FOR_GPU", "update the driver"}));
}

TEST(CudaRuntime, EveryFailedDriverCallIsNamedAndThePipelineRecovers) {
    struct Case {
        const char *entry;
        int error;
        std::vector<std::string> message;
    };
    const std::vector<Case> cases = {
        {"cuMemAlloc_v2", 2, {"cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2)", "for buffer in"}},
        {"cuMemcpyHtoD_v2", 1, {"cuMemcpyHtoD failed", "copying to the GPU in"}},
        {"cuModuleGetFunction", 500, {"cuModuleGetFunction failed", "kernel loom_f2_f2"}},
        {"cuLaunchKernel",
         701,
         {"cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "kernel loom_f3_f3"}},
        {"cuCtxSynchronize",
         700,
         {"CUDA_ERROR_ILLEGAL_ADDRESS", "after the kernels of pipeline", "(loom_f4_f4)",
          "compute-sanitizer"}},
    };
    for (size_t i = 0; i < cases.size(); i++) {
        const Case &c = cases[i];
        SCOPED_TRACE(c.entry);
        FakeGpu gpu;
        Scale s("f" + std::to_string(i));
        CompiledPipeline p = s.compile(gpu);
        Buffer<float> in = loom_test::random_buffer<float>({5, 40}), out({5, 40});
        gpu.on_launch = [&](const Launch &l) { run_scale(l, in, 5, 40); };
        fake_cuda_fail_next(c.entry, c.error);
        EXPECT_TRUE(throws_with<RuntimeError>([&] { p(in, 2.0f, out); }, c.message));
        // Nothing is left half done: the next call works.
        p(in, 2.0f, out);
        EXPECT_EQ(out(4, 39), in(4, 39) * 2.0f + 1.0f);
    }
    // Copying back is reported by the buffer, with the driver's reason.
    FakeGpu gpu;
    Scale s("copied_back");
    CompiledPipeline p = s.compile(gpu);
    Buffer<float> in = loom_test::random_buffer<float>({5, 40}), out({5, 40}, "result");
    gpu.on_launch = [&](const Launch &l) { run_scale(l, in, 5, 40); };
    p(in, 2.0f, out);
    fake_cuda_fail_next("cuMemcpyDtoH_v2", 1);
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { (void)out(0, 0); },
        {"Buffer result: copy_to_host failed", "cuMemcpyDtoH failed: CUDA_ERROR_INVALID_VALUE"}));
    EXPECT_TRUE(out.device_dirty());  // still the GPU's, and copied on the next access
    EXPECT_EQ(out(0, 0), in(0, 0) * 2.0f + 1.0f);
}

TEST(CudaRuntime, GridDimensionsOverTheLimitAreRefusedWithAdvice) {
    FakeGpu gpu;
    Scale s("tall");
    CompiledPipeline p = s.compile(gpu);
    // 8-row tiles on y: 65536 * 8 rows need 65536 blocks in y, one too many.
    Buffer<float> in({65536 * 8, 1}), out({65536 * 8, 1});
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { p(in, 1.0f, out); },
        {"kernel loom_tall_tall needs a grid of 1 x 65536 x 1 blocks", "gpu_blocks' x"}));
    EXPECT_EQ(gpu.launches.size(), 0u);
}

TEST(CudaRuntime, SharedMemoryPast48KiBIsAskedForAtLaunch) {
    FakeGpu gpu;
    loom_test::Blur b;
    Schedule sch = b.shared_tiles(128);
    gpu.learn(b.cuda(sch));
    CompiledPipeline p = Pipeline(b.blur_y).compile(sch, kTarget);
    Buffer<float> in({130, 258}), out({128, 256});
    p(in, out);
    ASSERT_EQ(gpu.launches.size(), 1u);
    EXPECT_EQ(gpu.launches[0].shared, 66560u);
    EXPECT_EQ(fake_cuda_calls("cuFuncSetAttribute"), 1);
}

TEST(CudaRuntime, SharedMemorySizedAtLaunchFollowsTheArguments) {
    // A row staged in shared memory (Schedule::in): the launch asks for the
    // kernel's constant 32 bytes (the reductions' room: two halves of a
    // float for each of 4 warps; row_max and row_sum are in every thread's
    // registers) plus the row, 16-byte aligned; a row past what a block may
    // have is refused with its size.
    FakeGpu gpu;
    loom_test::RowSoftmax p;
    Schedule sch = p.staged_rows(128);
    gpu.learn(Pipeline(p.softmax).compile_to_cuda(sch, kTarget));
    CompiledPipeline c = Pipeline(p.softmax).compile(sch, kTarget);
    for (int cols : {1000, 20000}) {
        Buffer<float> in({3, cols}), out({3, cols});
        c(in, out);
        ASSERT_FALSE(gpu.launches.empty());
        EXPECT_EQ(gpu.launches.back().shared, 32u + 4u * static_cast<unsigned>(cols));
    }
    EXPECT_EQ(fake_cuda_calls("cuFuncSetAttribute"), 1);  // 80032 bytes > 48 KiB
    Buffer<float> in({3, 60000}), out({3, 60000});
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { c(in, out); }, {"cuFuncSetAttribute failed", "needs 240032 bytes of shared memory",
                              "more than this GPU allows", "stage less per block"}));
}

TEST(CudaRuntime, AFuncBetweenTwoKernelsLivesInGpuMemory) {
    FakeGpu gpu;
    BufferParam in(Float(32), 1, "in");
    Var x("x"), xo("xo"), xi("xi");
    Func a("a"), b("b");
    a(x) = in(x)*2.0f;
    b(x) = a(x) + a(x + 1);
    Schedule sch;
    sch[a].compute_root().gpu_tile(x, xo, xi, 64);
    sch[b].gpu_tile(x, xo, xi, 64);
    gpu.learn(Pipeline(b).compile_to_cuda(sch, kTarget));
    CompiledPipeline p = Pipeline(b).compile(sch, kTarget);
    const int n = 300;
    Buffer<float> input = loom_test::random_buffer<float>({n + 1}), out({n});
    uint64_t a_memory = 0;
    gpu.on_launch = [&](const Launch &l) {
        if (l.kernel == "loom_b_a") {
            a_memory = l.arg<uint64_t>("a_");
            EXPECT_TRUE(fake_cuda_is_device_memory(a_memory, sizeof(float) * (n + 1)));
            float *av = reinterpret_cast<float *>(a_memory);
            const float *iv = reinterpret_cast<const float *>(l.arg<uint64_t>("in_"));
            for (int i = 0; i <= n; i++) av[i] = iv[i] * 2.0f;
        } else {
            EXPECT_EQ(l.kernel, "loom_b_b");
            EXPECT_EQ(l.arg<uint64_t>("a_"), a_memory);  // what the first kernel wrote
            const float *av = reinterpret_cast<const float *>(a_memory);
            float *bv = reinterpret_cast<float *>(l.arg<uint64_t>("b_"));
            for (int i = 0; i < n; i++) bv[i] = av[i] + av[i + 1];
        }
    };
    p(input, out);
    ASSERT_EQ(gpu.launches.size(), 2u);
    EXPECT_EQ(gpu.launches[0].kernel, "loom_b_a");
    EXPECT_EQ(gpu.launches[0].grid[0], (n + 1 + 63) / 64u);
    EXPECT_EQ(gpu.launches[1].grid[0], (n + 63) / 64u);
    for (int i = 0; i < n; i++) ASSERT_EQ(out(i), input(i) * 2.0f + input(i + 1) * 2.0f);
    // a's GPU memory lived for the call only; input and out keep theirs.
    EXPECT_EQ(fake_cuda_live_allocations(), 2);
    // Also when the second launch fails.
    fake_cuda_fail_next("cuLaunchKernel", 701);
    fake_cuda_fail_next("cuLaunchKernel", 0);
    EXPECT_THROW(p(input, out), RuntimeError);
    EXPECT_EQ(fake_cuda_live_allocations(), 2);
}

TEST(CudaRuntime, BuffersOfGpuMemoryAloneAreNeverCopied) {
    FakeGpu gpu;
    Scale s("device_only");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 6, cols = 50;
    Buffer<float> in_host = loom_test::random_buffer<float>({rows, cols}), out_host({rows, cols});
    in_host.copy_to_device();
    out_host.copy_to_device();
    // As a PyTorch tensor's memory would be given: an address and a shape.
    RawBuffer in = RawBuffer::wrap_device(Float(32), in_host.raw_buffer()->device, {rows, cols});
    RawBuffer out = RawBuffer::wrap_device(Float(32), out_host.raw_buffer()->device, {rows, cols});
    const int copies = fake_cuda_calls("cuMemcpyHtoD_v2") + fake_cuda_calls("cuMemcpyDtoH_v2");
    gpu.on_launch = [&](const Launch &l) { run_scale(l, in_host, rows, cols); };
    p(in, 4.0f, out);
    EXPECT_EQ(fake_cuda_calls("cuMemcpyHtoD_v2") + fake_cuda_calls("cuMemcpyDtoH_v2"), copies);
    EXPECT_EQ(fake_cuda_calls("cuMemAlloc_v2"), 2);
    EXPECT_TRUE(throws_with<RuntimeError>([&] { (void)Buffer<float>(out)(0, 0); },
                                          {"has GPU memory alone"}));
    // Its memory is its owner's: dropping the view frees nothing.
    { RawBuffer dropped = std::move(in); }
    EXPECT_EQ(fake_cuda_live_allocations(), 2);
    // The owner sees what the kernel wrote once it is told so.
    out_host.raw_buffer()->flags |= loom_buffer_device_dirty;
    EXPECT_EQ(out_host(5, 49), in_host(5, 49) * 4.0f + 1.0f);
}

TEST(CudaRuntime, GpuMemoryIsCheckedForOverlapsLikeTheHosts) {
    // Tensors given by their GPU addresses: a pointwise pipeline may write
    // over its input, element for element; any other overlap is refused.
    FakeGpu gpu;
    Scale s("over_gpu_memory");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 6, cols = 50;
    Buffer<float> host = loom_test::random_buffer<float>({rows, cols}), before({rows, cols});
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) before(r, c) = host(r, c);
    }
    host.copy_to_device();
    const uint64_t device = host.raw_buffer()->device;
    RawBuffer tensor = RawBuffer::wrap_device(Float(32), device, {rows, cols});
    gpu.on_launch = [&](const Launch &l) { run_scale(l, before, rows, cols); };
    p(tensor, 3.0f, tensor);
    ASSERT_EQ(gpu.launches.size(), 1u);
    host.raw_buffer()->flags |= loom_buffer_device_dirty;
    EXPECT_EQ(host(5, 49), before(5, 49) * 3.0f + 1.0f);

    // The same memory one row on: row r of the output is row r + 1 of the
    // input, which a block computing row r + 1 may already have written.
    RawBuffer next_rows =
        RawBuffer::wrap_device(Float(32), device + sizeof(float) * cols, {rows - 1, cols});
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { p(tensor, 3.0f, next_rows); },
        {"Buffers in (input) and over_gpu_memory (output) share memory on the GPU, but not "
         "element for element"}));
    EXPECT_EQ(gpu.launches.size(), 1u);
}

// A GPU address that is not GPU memory, or a tensor described as larger
// than its memory, would fault in the kernel (and leave the context
// unusable): both ends of every caller-given span are asked about first.
TEST(CudaRuntime, GpuAddressesOutsideGpuMemoryAreRefusedBeforeTheLaunch) {
    FakeGpu gpu;
    Scale s("on_bad_addresses");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 6, cols = 50;
    Buffer<float> host = loom_test::random_buffer<float>({rows, cols}), before({rows, cols});
    std::memcpy(before.data(), host.data(), sizeof(float) * rows * cols);
    host.copy_to_device();
    const uint64_t device = host.raw_buffer()->device;
    RawBuffer in = RawBuffer::wrap_device(Float(32), device, {rows, cols});
    Buffer<float> out_memory({rows, cols});
    out_memory.copy_to_device();
    const uint64_t out_device = out_memory.raw_buffer()->device;
    gpu.on_launch = [&](const Launch &l) { run_scale(l, before, rows, cols); };

    // Host memory in the device field, as an input and as an output.
    RawBuffer host_as_gpu =
        RawBuffer::wrap_device(Float(32), reinterpret_cast<uint64_t>(before.data()), {rows, cols});
    const std::string not_gpu =
        "'s device address is not memory the CUDA driver allocated or mapped "
        "(cuPointerGetAttribute: CUDA_ERROR_INVALID_VALUE): host memory, freed memory, or no "
        "address at all. Set its device field to GPU memory";
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            p(host_as_gpu, 2.0f, RawBuffer::wrap_device(Float(32), out_device, {rows, cols}));
        },
        {"CUDA: buffer in" + not_gpu}));
    EXPECT_TRUE(throws_with<RuntimeError>([&] { p(in, 2.0f, host_as_gpu); },
                                          {"CUDA: buffer on_bad_addresses" + not_gpu}));

    // One row more than the allocation holds: its last byte is past it.
    RawBuffer too_tall = RawBuffer::wrap_device(Float(32), device, {rows + 1, cols});
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            p(too_tall, 2.0f, RawBuffer::wrap_device(Float(32), out_device, {rows + 1, cols}));
        },
        {"CUDA: buffer in starts in GPU memory, but its last byte, " +
             std::to_string((rows + 1) * cols * 4 - 1) +
             " bytes further, is not in memory the CUDA driver allocated or mapped",
         "Its extents or strides describe more memory than its device address points into."}));
    EXPECT_EQ(gpu.launches.size(), 0u);

    // The lowest address of a span is its start: rows walked backwards from
    // the last one fit, while the same rows from the first do not.
    RawBuffer rows_backwards = RawBuffer::wrap_device(
        Float(32), device + sizeof(float) * (rows - 1) * cols, {rows, cols}, {-cols, 1});
    RawBuffer out = RawBuffer::wrap_device(Float(32), out_device, {rows, cols});
    gpu.on_launch = [&](const Launch &l) {
        const float *first_row = reinterpret_cast<const float *>(l.arg<uint64_t>("in_"));
        EXPECT_EQ(l.arg<int>("in_stride_0_"), -cols);
        EXPECT_EQ(first_row[-cols], before(rows - 2, 0));
    };
    p(rows_backwards, 2.0f, out);
    ASSERT_EQ(gpu.launches.size(), 1u);
    RawBuffer backwards_from_first =
        RawBuffer::wrap_device(Float(32), device, {rows, cols}, {-cols, 1});
    EXPECT_TRUE(throws_with<RuntimeError>([&] { p(backwards_from_first, 2.0f, out); },
                                          {"CUDA: buffer in" + not_gpu}));
    EXPECT_EQ(gpu.launches.size(), 1u);
}

TEST(CudaRuntime, ACroppedOutputCopiesBackItsOwnElementsOnly) {
    FakeGpu gpu;
    Scale s("cropped");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 12, cols = 70;
    Buffer<float> in = loom_test::random_buffer<float>({rows, 40});
    Buffer<float> whole({rows, cols});
    whole.fill([](const std::vector<int> &) { return -7.0f; });
    // Columns [10, 50) of every row: 12 runs of 40 floats, 70 apart.
    Buffer<float> view(whole.cropped(1, 10, 40));
    view.set_min({0, 0});
    gpu.on_launch = [&](const Launch &l) { run_scale(l, in, rows, 40); };
    p(in, 2.0f, view);
    EXPECT_EQ(gpu.launches.size(), 1u);
    EXPECT_EQ(view(11, 39), in(11, 39) * 2.0f + 1.0f);
    EXPECT_EQ(fake_cuda_calls("cuMemcpyDtoH_v2"), rows);
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            if (c >= 10 && c < 50) {
                ASSERT_EQ(whole(r, c), in(r, c - 10) * 2.0f + 1.0f);
            } else {
                ASSERT_EQ(whole(r, c), -7.0f) << r << ", " << c;
            }
        }
    }
}

// A buffer and its views (cropped, transposed) share one GPU allocation;
// each keeps the dirty flags of its own elements, and a view about to be
// used first takes in what the others changed.
TEST(CudaRuntime, ViewsShareGpuMemoryAndSeeEachOthersWrites) {
    FakeGpu gpu;
    Scale s("shared_views");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 10, cols = 40, top = 3, band = 4;  // the view: rows [3, 7)
    Buffer<float> whole = loom_test::random_buffer<float>({rows, cols});
    Buffer<float> before = loom_test::random_buffer<float>({rows, cols});
    std::memcpy(before.data(), whole.data(), sizeof(float) * rows * cols);
    Buffer<float> view(whole.cropped(0, top, band));
    view.set_min({0, 0});
    Buffer<float> in = loom_test::random_buffer<float>({band, cols});
    gpu.on_launch = [&](const Launch &l) {
        if (gpu.launches.empty()) {
            // The view is written where the whole buffer's GPU memory has it.
            EXPECT_EQ(l.arg<uint64_t>("shared_views_"),
                      whole.contents->raw.device + sizeof(float) * top * cols);
            run_scale(l, in, band, cols);
        } else {
            run_scale(l, whole, rows, cols);
        }
    };
    p(in, 2.0f, view);
    // One allocation for the input, one for the buffer and all its views.
    EXPECT_EQ(fake_cuda_calls("cuMemAlloc_v2"), 2);
    // The buffer sees the view's rows; only those are copied back (one run).
    const int downloads = fake_cuda_calls("cuMemcpyDtoH_v2");
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            float want = r >= top && r < top + band ? in(r - top, c) * 2.0f + 1.0f : before(r, c);
            ASSERT_EQ(whole(r, c), want) << r << ", " << c;
        }
    }
    EXPECT_EQ(fake_cuda_calls("cuMemcpyDtoH_v2"), downloads + 1);
    // A GPU pipeline reading the whole buffer finds the view's rows in GPU
    // memory (run_scale checks every element against the host's).
    Buffer<float> out({rows, cols});
    p(whole, 1.0f, out);
    // (in * 2 + 1) + 1, rounded after each step as run_scale computes it
    // (in * 2 + 2, rounded once, differs in the last bit for some inputs).
    EXPECT_EQ(out(top + 1, 5), whole(top + 1, 5) * 1.0f + 1.0f);
    EXPECT_NEAR(out(top + 1, 5), in(1, 5) * 2.0f + 2.0f, 1e-5f * (1 + std::abs(out(top + 1, 5))));
    EXPECT_EQ(fake_cuda_calls("cuMemAlloc_v2"), 3);
}

TEST(CudaRuntime, AViewTakenBeforeAGpuWriteReadsWhatItWrote) {
    FakeGpu gpu;
    Scale s("view_before_write");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 8, cols = 36;
    Buffer<float> in = loom_test::random_buffer<float>({rows, cols});
    Buffer<float> whole({rows, cols});
    // Taken while the buffer has no GPU memory yet.
    Buffer<float> corner(whole.cropped(0, 2, 3).cropped(1, 4, 20));
    RawBuffer flipped = whole.transposed({1, 0});
    gpu.on_launch = [&](const Launch &l) {
        if (gpu.launches.empty()) {
            run_scale(l, in, rows, cols);
        } else {
            run_scale(l, corner, 3, 20);
        }
    };
    p(in, 3.0f, whole);
    EXPECT_EQ(corner(2, 4), in(2, 4) * 3.0f + 1.0f);
    EXPECT_EQ(corner(4, 23), in(4, 23) * 3.0f + 1.0f);
    EXPECT_EQ(Buffer<float>(flipped)(30, 7), in(7, 30) * 3.0f + 1.0f);
    // Read by a GPU pipeline, the view's elements in GPU memory are the
    // buffer's (run_scale checks them against the host's).
    Buffer<float> out({3, 20});
    corner.set_min({0, 0});
    p(corner, 1.0f, out);
    // (in * 3 + 1) + 1, rounded after each step as run_scale computes it:
    // in * 3 + 2 may round differently, or be contracted into one fma.
    EXPECT_EQ(out(2, 19), corner(2, 19) * 1.0f + 1.0f);
    EXPECT_NEAR(out(2, 19), in(4, 23) * 3.0f + 2.0f, 1e-5f * (1 + std::abs(out(2, 19))));
}

TEST(CudaRuntime, WhatADroppedViewWroteIsKept) {
    FakeGpu gpu;
    Scale s("dropped_view");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 6, cols = 33;
    Buffer<float> whole({rows, cols});
    whole.fill([](const std::vector<int> &) { return -1.0f; });
    Buffer<float> in = loom_test::random_buffer<float>({2, cols});
    gpu.on_launch = [&](const Launch &l) { run_scale(l, in, 2, cols); };
    {
        RawBuffer last_rows = whole.cropped(0, 4, 2);
        last_rows.set_min({0, 0});
        p(in, 5.0f, last_rows);
    }
    const int live = fake_cuda_live_allocations();
    EXPECT_EQ(whole(5, 32), in(1, 32) * 5.0f + 1.0f);
    EXPECT_EQ(whole(3, 32), -1.0f);
    // The GPU memory is the buffer's, not the dropped view's.
    EXPECT_TRUE(whole.has_device_memory());
    EXPECT_EQ(fake_cuda_live_allocations(), live);
}

TEST(CudaRuntime, HostWritesThroughAViewReachTheGpu) {
    FakeGpu gpu;
    Scale s("host_write_view");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 12, cols = 64;
    Buffer<float> whole = loom_test::random_buffer<float>({rows, cols});
    whole.copy_to_device();
    Buffer<float> column(whole.cropped(1, 10, 1));
    column(7, 10) = 42.0f;
    EXPECT_TRUE(column.host_dirty());
    EXPECT_FALSE(whole.host_dirty());
    Buffer<float> out({rows, cols});
    gpu.on_launch = [&](const Launch &l) { run_scale(l, whole, rows, cols); };
    const int uploads = fake_cuda_calls("cuMemcpyHtoD_v2");
    p(whole, 2.0f, out);
    // Only the column's elements went up: one float per row.
    EXPECT_EQ(fake_cuda_calls("cuMemcpyHtoD_v2"), uploads + rows);
    EXPECT_EQ(out(7, 10), 85.0f);
    EXPECT_FALSE(column.host_dirty());
}

TEST(CudaRuntime, FreeingAViewsGpuMemoryFreesTheBuffers) {
    FakeGpu gpu;
    Scale s("free_view");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 5, cols = 40;
    Buffer<float> in = loom_test::random_buffer<float>({rows, cols});
    Buffer<float> whole({rows, cols});
    RawBuffer view = whole.cropped(1, 0, 8);
    view.copy_to_device();
    // copy_to_device() on a view gives memory to the whole buffer.
    EXPECT_TRUE(whole.has_device_memory());
    EXPECT_EQ(fake_cuda_calls("cuMemAlloc_v2"), 1);
    gpu.on_launch = [&](const Launch &l) { run_scale(l, in, rows, cols); };
    p(in, 2.0f, whole);
    const int live = fake_cuda_live_allocations();
    view.device_free();
    EXPECT_EQ(fake_cuda_live_allocations(), live - 1);
    EXPECT_FALSE(whole.has_device_memory());
    EXPECT_FALSE(view.has_device_memory());
    // What the GPU wrote was copied back first.
    EXPECT_EQ(whole(4, 39), in(4, 39) * 2.0f + 1.0f);
}

// Random uses of a buffer through random views, against a plain array of
// what each element must hold: host reads and writes through crops and
// transposes, GPU pipelines reading and writing crops, explicit copies and
// frees, views dropped and taken. Whichever view wrote an element last,
// every view must read its value, on the host and in a kernel.
TEST(CudaRuntime, ViewsStayCoherentUnderRandomUse) {
    FakeGpu gpu;
    Scale s("random_views");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 9, cols = 14;
    // The kernel, played on the device memory it is given, over the
    // output's n_rows x n_cols.
    int n_rows = 0, n_cols = 0;
    gpu.on_launch = [&](const Launch &l) {
        const float *in = reinterpret_cast<const float *>(l.arg<uint64_t>("in_"));
        float *out = reinterpret_cast<float *>(l.arg<uint64_t>("random_views_"));
        const int in_stride = l.arg<int>("in_stride_0_"),
                  out_stride = l.arg<int>("random_views_stride_0_");
        const float gain = l.arg<float>("gain_");
        for (int r = 0; r < n_rows; r++) {
            for (int c = 0; c < n_cols; c++) {
                out[r * out_stride + c] = in[r * in_stride + c] * gain + 1.0f;
            }
        }
    };
    std::mt19937 &rng = loom_test::rng();
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Buffer<float> whole({rows, cols});
    std::vector<float> want(rows * cols, 0.0f);  // whole(r, c) is want[r * cols + c]
    struct View {
        RawBuffer buffer;
        int row0, col0;  // where its (0, 0) is in whole
        bool transposed;
    };
    std::vector<View> views{{whole, 0, 0, false}};
    auto new_crop = [&]() {
        int r0 = uniform(0, rows - 1), c0 = uniform(0, cols - 1);
        int nr = uniform(1, rows - r0), nc = uniform(1, cols - c0);
        const View &from = views[uniform(0, int(views.size()) - 1)];
        RawBuffer b;
        if (from.transposed || from.row0 > r0 || from.col0 > c0 ||
            from.row0 + from.buffer.extent(0) < r0 + nr ||
            from.col0 + from.buffer.extent(1) < c0 + nc) {
            b = whole.cropped(0, r0, nr).cropped(1, c0, nc);  // not inside `from`
        } else {
            // A view of a view (its coordinates are from's own).
            b = from.buffer.cropped(0, from.buffer.dim_min(0) + r0 - from.row0, nr)
                    .cropped(1, from.buffer.dim_min(1) + c0 - from.col0, nc);
        }
        b.set_min({0, 0});
        return View{b, r0, c0, false};
    };
    // A GPU pipeline writes the (untransposed) view v.
    auto gpu_write = [&](const View &v) {
        const int vr = v.buffer.extent(0), vc = v.buffer.extent(1);
        Buffer<float> in = loom_test::random_buffer<float>({vr, vc});
        n_rows = vr;
        n_cols = vc;
        p(in, 2.0f, v.buffer);
        for (int r = 0; r < vr; r++) {
            for (int c = 0; c < vc; c++) {
                want[(v.row0 + r) * cols + v.col0 + c] = in(r, c) * 2.0f + 1.0f;
            }
        }
    };
    float next = 1.0f;
    for (int step = 0; step < 400; step++) {
        const int op = uniform(0, 10);
        SCOPED_TRACE("step " + std::to_string(step) + ", op " + std::to_string(op));
        View &v = views[uniform(0, int(views.size()) - 1)];
        const int vr = v.transposed ? v.buffer.extent(1) : v.buffer.extent(0),
                  vc = v.transposed ? v.buffer.extent(0) : v.buffer.extent(1);
        if (op <= 1) {  // a host write through v
            int r = uniform(0, vr - 1), c = uniform(0, vc - 1);
            Buffer<float> b(v.buffer);
            (v.transposed ? b(c, r) : b(r, c)) = next;
            want[(v.row0 + r) * cols + v.col0 + c] = next;
            next += 1.0f;
        } else if (op <= 3) {  // a host read through v
            int r = uniform(0, vr - 1), c = uniform(0, vc - 1);
            Buffer<float> b(v.buffer);
            ASSERT_EQ(v.transposed ? b(c, r) : b(r, c), want[(v.row0 + r) * cols + v.col0 + c]);
        } else if (op == 4 && !v.transposed) {
            gpu_write(v);
        } else if (op == 5 && !v.transposed) {  // a GPU pipeline reads v
            Buffer<float> out({vr, vc});
            n_rows = vr;
            n_cols = vc;
            p(v.buffer, 3.0f, out);
            for (int r = 0; r < vr; r++) {
                for (int c = 0; c < vc; c++) {
                    ASSERT_EQ(out(r, c), want[(v.row0 + r) * cols + v.col0 + c] * 3.0f + 1.0f)
                        << r << ", " << c;
                }
            }
        } else if (op == 6) {
            switch (uniform(0, 2)) {
            case 0: v.buffer.copy_to_device(); break;
            case 1: v.buffer.copy_to_host(); break;
            default: v.buffer.device_free(); break;
            }
        } else if (op == 7 && views.size() > 1) {  // a view dropped (maybe dirty)
            views.erase(views.begin() + uniform(1, int(views.size()) - 1));
        } else if (op == 8) {
            views.push_back(new_crop());
        } else if (op == 9) {
            views.push_back(View{whole.transposed({1, 0}), 0, 0, true});
        } else if (op == 10) {  // a crop written on the GPU, then dropped at once
            gpu_write(new_crop());
        }
    }
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) ASSERT_EQ(whole(r, c), want[r * cols + c]) << r << ", " << c;
    }
}

TEST(CudaRuntime, CpuPipelinesSeeWhatGpuPipelinesWroteAndTheOtherWayRound) {
    FakeGpu gpu;
    Scale s("mixed");
    CompiledPipeline on_gpu = s.compile(gpu);
    BufferParam in2(Float(32), 2, "in2");
    Var x("x"), y("y");
    Func plus("plus");
    plus(y, x) = in2(y, x) + 100.0f;
    CompiledPipeline on_cpu = Pipeline(plus).compile();

    const int rows = 7, cols = 45;
    Buffer<float> in = loom_test::random_buffer<float>({rows, cols});
    Buffer<float> mid({rows, cols}), last({rows, cols});
    gpu.on_launch = [&](const Launch &l) { run_scale(l, in, rows, cols); };
    on_gpu(in, 2.0f, mid);
    EXPECT_TRUE(mid.device_dirty());
    // The CPU pipeline copies the GPU's result back before reading it.
    on_cpu(mid, last);
    EXPECT_EQ(fake_cuda_calls("cuMemcpyDtoH_v2"), 1);
    EXPECT_FALSE(mid.device_dirty());
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) ASSERT_EQ(last(r, c), in(r, c) * 2.0f + 1.0f + 100.0f);
    }
    // A CPU pipeline writing a buffer that has GPU memory marks it changed,
    // so the next GPU pipeline copies it there again.
    in.copy_to_device();
    EXPECT_FALSE(in.host_dirty());
    const int uploads = fake_cuda_calls("cuMemcpyHtoD_v2");
    Buffer<float> source = loom_test::random_buffer<float>({rows, cols});
    on_cpu(source, in);
    EXPECT_TRUE(in.host_dirty());
    on_gpu(in, 1.0f, mid);
    EXPECT_EQ(fake_cuda_calls("cuMemcpyHtoD_v2"), uploads + 1);
    EXPECT_EQ(mid(0, 0), source(0, 0) + 100.0f + 1.0f);
    // GPU memory alone cannot be read on the CPU; the error says which
    // buffer and why, not that its host pointer is null.
    RawBuffer gpu_alone = RawBuffer::wrap_device(Float(32), mid.raw_buffer()->device, {rows, cols});
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { on_cpu(gpu_alone, last); },
        {"Input buffer in2 has GPU memory alone", "uses it on the CPU", "Give it host memory"}));
}

TEST(CudaRuntime, WorkGoesOnTheStreamTheCallerSets) {
    FakeGpu gpu;
    Scale s("on_stream");
    CompiledPipeline p = s.compile(gpu);
    const int rows = 9, cols = 33;
    Buffer<float> in = loom_test::random_buffer<float>({rows, cols});
    Buffer<float> out({rows, cols});
    gpu.on_launch = [&](const Launch &l) { run_scale(l, in, rows, cols); };

    // A stream handle is opaque to Loom: any non-null value stands in for one.
    int stream_storage = 0;
    void *stream = &stream_storage;
    ASSERT_EQ(loom_cuda_stream(), nullptr);
    loom_cuda_set_stream(stream);
    EXPECT_EQ(loom_cuda_stream(), stream);
    p(in, 2.0f, out);
    // The input's copy and the launch went on the stream; the copy was
    // waited for, and then the pipeline's kernels, on that stream alone.
    EXPECT_EQ(fake_cuda_calls("cuMemcpyHtoDAsync_v2"), 1);
    EXPECT_EQ(fake_cuda_calls("cuMemcpyHtoD_v2"), 0);
    EXPECT_EQ(fake_cuda_last_stream(), stream);
    EXPECT_EQ(fake_cuda_calls("cuStreamSynchronize"), 2);
    EXPECT_EQ(fake_cuda_calls("cuCtxSynchronize"), 0);
    // Reading the result back is a copy on the stream the host waits for.
    EXPECT_EQ(out(4, 7), in(4, 7) * 2.0f + 1.0f);
    EXPECT_EQ(fake_cuda_calls("cuMemcpyDtoHAsync_v2"), 1);
    EXPECT_EQ(fake_cuda_calls("cuStreamSynchronize"), 3);
    EXPECT_EQ(loom_device_sync(), 0);
    EXPECT_EQ(fake_cuda_calls("cuStreamSynchronize"), 4);

    // The stream is per thread: another thread's work is on the default one.
    std::thread other([&] {
        EXPECT_EQ(loom_cuda_stream(), nullptr);
        EXPECT_EQ(loom_device_sync(), 0);
    });
    other.join();
    EXPECT_EQ(fake_cuda_calls("cuCtxSynchronize"), 1);

    // A failing wait is reported with the call that failed. (in(4, 7) may
    // have changed the input: it goes to the GPU first, so that the
    // pipeline's own wait is the one that fails.)
    in.copy_to_device();
    fake_cuda_fail_next("cuStreamSynchronize", 700);
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { p(in, 3.0f, out); }, {"cuStreamSynchronize failed", "pipeline loom_on_stream"}));

    // Back on the default stream.
    loom_cuda_set_stream(nullptr);
    p(in, 4.0f, out);
    EXPECT_EQ(fake_cuda_last_stream(), nullptr);
    EXPECT_EQ(fake_cuda_calls("cuCtxSynchronize"), 2);
    EXPECT_EQ(out(2, 3), in(2, 3) * 4.0f + 1.0f);
    EXPECT_EQ(fake_cuda_calls("cuMemcpyDtoH_v2"), 1);
}
