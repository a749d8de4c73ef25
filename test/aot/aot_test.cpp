// Runs pipelines compiled ahead of time (by aot_emit, at build time) through
// their C ABI: results against plain C++ loops, every argument check, the
// error hook, the metadata, and DLPack conversions. This program links the
// generated static libraries and neither libloom nor LLVM.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "aot_blur.h"
#include "aot_blur_sse41.h"
#include "aot_gpu_scale.h"
#include "aot_half.h"
#include "aot_reduce.h"
#include "fake_cuda.h"
#include "loom_dlpack.h"

namespace {

std::mt19937 &rng() {
    static std::mt19937 gen(12345);
    return gen;
}

std::vector<float> random_floats(size_t n) {
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> v(n);
    for (float &f : v) f = dist(rng());
    return v;
}

/** A dense row-major loom_buffer_t over caller-owned memory. */
struct View {
    loom_buffer_t buf{};
    std::vector<loom_dimension_t> dims;
    View(void *host, loom_type_t type, std::vector<int> shape) {
        dims.resize(shape.size());
        int stride = 1;
        for (int d = static_cast<int>(shape.size()) - 1; d >= 0; d--) {
            dims[d] = {0, shape[d], stride, 0};
            stride *= shape[d];
        }
        buf.host = static_cast<uint8_t *>(host);
        buf.type = type;
        buf.dimensions = static_cast<int32_t>(shape.size());
        buf.dim = dims.data();
    }
    loom_buffer_t *operator&() { return &buf; }
};

const loom_type_t f32{loom_type_float, 32, 1};
const loom_type_t f16{loom_type_float, 16, 1};
const loom_type_t i32{loom_type_int, 32, 1};

std::vector<float> reference_blur(const std::vector<float> &in, int h, int w, float scale) {
    int iw = w + 2;
    std::vector<float> bx((h + 2) * w), out(h * w);
    for (int y = 0; y < h + 2; y++)
        for (int x = 0; x < w; x++)
            bx[y * w + x] = (in[y * iw + x] + in[y * iw + x + 1] + in[y * iw + x + 2]) / 3.0f;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            out[y * w + x] =
                (bx[y * w + x] + bx[(y + 1) * w + x] + bx[(y + 2) * w + x]) / 3.0f * scale;
    return out;
}

void expect_near_all(const std::vector<float> &a, const std::vector<float> &b, float tol) {
    ASSERT_EQ(a.size(), b.size());
    int bad = 0;
    for (size_t i = 0; i < a.size() && bad < 5; i++) {
        if (!(std::fabs(a[i] - b[i]) <= tol * (1 + std::fabs(b[i])))) {
            ADD_FAILURE() << "element " << i << ": " << a[i] << " vs " << b[i];
            bad++;
        }
    }
}

/** Whether the calling thread's last error message contains `fragment`. */
::testing::AssertionResult last_error_says(const std::string &fragment) {
    const std::string message = loom_last_error_message();
    if (message.find(fragment) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "the last error message does not say \"" << fragment << "\": " << message;
}

std::vector<std::string> handled_messages;
void record_message(const char *msg) { handled_messages.push_back(msg); }

}  // namespace

TEST(AOT, LinksNeitherLibloomNorLLVM) {
    std::ifstream maps("/proc/self/maps");
    ASSERT_TRUE(maps.good());
    std::string line;
    while (std::getline(maps, line)) {
        EXPECT_EQ(line.find("libloom"), std::string::npos) << line;
        EXPECT_EQ(line.find("libLLVM"), std::string::npos) << line;
    }
}

TEST(AOT, BlurMatchesReference) {
    for (auto fn : {&aot_blur, &aot_blur_sse41}) {
        for (auto [h, w] : {std::pair{37, 61}, std::pair{8, 16}, std::pair{1, 1}}) {
            std::vector<float> in = random_floats((h + 2) * (w + 2)), out(h * w, -7.0f);
            View vin(in.data(), f32, {h + 2, w + 2}), vout(out.data(), f32, {h, w});
            ASSERT_EQ(fn(&vin, 1.5f, &vout), 0) << loom_last_error_message();
            expect_near_all(out, reference_blur(in, h, w, 1.5f), 1e-5f);
        }
    }
}

TEST(AOT, BlurOfACroppedOutput) {
    // Output coordinates need not start at 0: the input must then cover
    // [min, min + extent + 2) in each dimension.
    int h = 10, w = 20;
    std::vector<float> in = random_floats((h + 7) * (w + 9)), out(h * w);
    View vin(in.data(), f32, {h + 7, w + 9}), vout(out.data(), f32, {h, w});
    vout.dims[0].min = 5;
    vout.dims[1].min = 7;
    ASSERT_EQ(aot_blur(&vin, 2.0f, &vout), 0) << loom_last_error_message();
    std::vector<float> full = reference_blur(in, h + 5, w + 7, 2.0f);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            EXPECT_NEAR(out[y * w + x], full[(y + 5) * (w + 7) + x + 7], 1e-5f);
}

TEST(AOT, ArgvEntryPoint) {
    int h = 9, w = 13;
    std::vector<float> in = random_floats((h + 2) * (w + 2)), out(h * w);
    View vin(in.data(), f32, {h + 2, w + 2}), vout(out.data(), f32, {h, w});
    float scale = 0.5f;
    void *args[] = {&vin, &scale, &vout};
    ASSERT_EQ(aot_blur_argv(args), 0) << loom_last_error_message();
    expect_near_all(out, reference_blur(in, h, w, 0.5f), 1e-5f);
}

TEST(AOT, Float16InputsAndTupleOutputs) {
    int h = 5, w = 27;
    std::vector<uint16_t> q(h * w);
    for (uint16_t &v : q)
        v = loom_float_to_half(std::uniform_real_distribution<float>(-4, 4)(rng()));
    std::vector<float> doubled(h * w);
    std::vector<uint16_t> shifted(h * w);
    View vq(q.data(), f16, {h, w}), v0(doubled.data(), f32, {h, w}),
        v1(shifted.data(), f16, {h, w});
    uint16_t bias = loom_float_to_half(0.3f);
    ASSERT_EQ(aot_half(&vq, bias, &v0, &v1), 0) << loom_last_error_message();
    for (int i = 0; i < h * w; i++) {
        float qf = loom_half_to_float(q[i]);
        EXPECT_EQ(doubled[i], qf * 2.0f) << i;
        EXPECT_EQ(shifted[i], loom_float_to_half(qf + loom_half_to_float(bias))) << i;
    }
}

TEST(AOT, ReductionMatchesReference) {
    int h = 17, w = 33;
    std::vector<float> a = random_floats(h * w), out(h);
    View va(a.data(), f32, {h, w}), vo(out.data(), f32, {h});
    ASSERT_EQ(aot_reduce(&va, 3, &vo), 0) << loom_last_error_message();
    for (int y = 0; y < h; y++) {
        float s = 0;
        for (int x = 0; x < w; x++) s += a[y * w + x];
        EXPECT_NEAR(out[y], s + 3.0f, 1e-5f) << y;
    }
}

TEST(AOT, Metadata) {
    const loom_filter_metadata_t *m = aot_half_metadata();
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->version, LOOM_FILTER_METADATA_VERSION);
    EXPECT_STREQ(m->name, "aot_half");
    ASSERT_EQ(m->num_arguments, 4);
    const char *names[] = {"q", "bias", "f.0", "f.1"};
    int kinds[] = {loom_argument_input_buffer, loom_argument_input_scalar,
                   loom_argument_output_buffer, loom_argument_output_buffer};
    int dims[] = {2, 0, 2, 2};
    int bits[] = {16, 16, 32, 16};
    for (int i = 0; i < 4; i++) {
        EXPECT_STREQ(m->arguments[i].name, names[i]);
        EXPECT_EQ(m->arguments[i].kind, kinds[i]);
        EXPECT_EQ(m->arguments[i].dimensions, dims[i]);
        EXPECT_EQ(m->arguments[i].type.code, loom_type_float);
        EXPECT_EQ(m->arguments[i].type.bits, bits[i]);
        EXPECT_EQ(m->arguments[i].type.lanes, 1);
    }
    EXPECT_EQ(std::string(aot_blur_sse41_metadata()->target).find("avx"), std::string::npos);
    EXPECT_NE(std::string(aot_blur_sse41_metadata()->target).find("sse41"), std::string::npos);
    EXPECT_STREQ(aot_reduce_metadata()->arguments[1].name, "offset");
    EXPECT_EQ(aot_reduce_metadata()->arguments[1].type.code, loom_type_int);
}

namespace {

/** Calls aot_blur with a mutated argument and checks that it fails with a
 * message containing every fragment, through both the last-message call and
 * the handler hook, and that the output was not written. */
template <typename Mutate>
void expect_blur_error(Mutate mutate, const std::vector<std::string> &fragments) {
    int h = 6, w = 10;
    std::vector<float> in = random_floats((h + 2) * (w + 2)), out(h * w, -7.0f);
    View vin(in.data(), f32, {h + 2, w + 2}), vout(out.data(), f32, {h, w});
    loom_buffer_t *pin = &vin, *pout = &vout;
    mutate(pin, pout, vin, vout);
    handled_messages.clear();
    loom_set_error_handler(record_message);
    int r = aot_blur(pin, 1.0f, pout);
    loom_set_error_handler(nullptr);
    EXPECT_NE(r, 0);
    std::string msg = loom_last_error_message();
    for (const std::string &f : fragments) EXPECT_TRUE(last_error_says(f));
    ASSERT_EQ(handled_messages.size(), 1u);
    EXPECT_EQ(handled_messages[0], msg);
    for (float v : out) {
        if (v != -7.0f) {
            ADD_FAILURE() << "the output was written before the error: " << msg;
            break;
        }
    }
}

}  // namespace

TEST(AOT, NullDescriptors) {
    expect_blur_error([](loom_buffer_t *&in, loom_buffer_t *&, View &, View &) { in = nullptr; },
                      {"Input buffer in is a null pointer"});
    expect_blur_error([](loom_buffer_t *&, loom_buffer_t *&out, View &, View &) { out = nullptr; },
                      {"Output buffer blurred is a null pointer"});
}

TEST(AOT, WrongElementType) {
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &in, View &) { in.buf.type = i32; },
        {"Input buffer in has element type int32, but the pipeline expects float32"});
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &, View &out) { out.buf.type = f16; },
        {"Output buffer blurred has element type float16", "expects float32"});
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &in, View &) { in.buf.type.lanes = 4; },
        {"Input buffer in has element type float32x4"});
}

TEST(AOT, WrongRank) {
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &in, View &) { in.buf.dimensions = 1; },
        {"Input buffer in has 1 dimensions, but the pipeline expects 2"});
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &, View &out) { out.buf.dimensions = 3; },
        {"Output buffer blurred has 3 dimensions, but the pipeline expects 2"});
}

TEST(AOT, NullHostPointer) {
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &in, View &) { in.buf.host = nullptr; },
        {"Input buffer in has a null data pointer"});
    // A null dim array with the right rank is refused too.
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &in, View &) { in.buf.dim = nullptr; },
        {"Input buffer in has a null dim pointer"});
    // GPU memory alone (a CUDA tensor) is no use to a library that runs on
    // the CPU: the error says so, rather than calling the host null. Nothing
    // reads the address before the check.
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &in, View &) {
            in.buf.host = nullptr;
            in.buf.device = 0x1000;
        },
        {"Input buffer in has GPU memory alone", "uses it on the CPU"});
}

TEST(AOT, OutputInsideItsInput) {
    // The blur reads each input element for several outputs: an output in
    // the input's memory would have it read after being written over.
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &in, View &out) {
            out.buf.host = in.buf.host + 4 * sizeof(float);
        },
        {"Buffers in (input) and blurred (output) share memory on the host",
         "cannot compute blurred in place over in", "Pass an output buffer of its own"});
}

TEST(AOT, EmptyBuffersWithNullHostAreFine) {
    View va(nullptr, f32, {0, 5}), vo(nullptr, f32, {0});
    EXPECT_EQ(aot_reduce(&va, 1, &vo), 0) << loom_last_error_message();
    // But not a null host pointer with elements.
    View vo2(nullptr, f32, {3});
    std::vector<float> a(15);
    View va2(a.data(), f32, {3, 5});
    EXPECT_NE(aot_reduce(&va2, 1, &vo2), 0);
    EXPECT_TRUE(last_error_says("Output buffer row_sum has a null data"));
}

TEST(AOT, BuffersTooSmall) {
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &in, View &) { in.dims[1].extent -= 1; },
        {"Input buffer in is read over", "in dimension 1", "covers only"});
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &in, View &) { in.dims[0].min = 1; },
        {"Input buffer in is read over", "in dimension 0"});
}

TEST(AOT, BuffersBeyondThe32BitIndices) {
    // Rows 2^30 elements apart: the last row is past 2^31 - 1 elements, which
    // the pipeline's 32-bit indices would wrap. Refused before any access.
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &in, View &) { in.dims[0].stride = 1 << 30; },
        {"Input buffer in spans 7516192779 elements past its first one",
         "2^31 - 1 that Loom's 32-bit indices reach"});
    // Negative strides count by their size.
    expect_blur_error([](loom_buffer_t *&, loom_buffer_t *&, View &,
                         View &out) { out.dims[0].stride = -(1 << 29); },
                      {"Output buffer blurred spans 2684354569 elements"});
}

TEST(AOT, BadInnermostStride) {
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &in, View &) { in.dims[1].stride = 2; },
        {"Buffer in has stride 2 in its innermost dimension 1"});
    expect_blur_error(
        [](loom_buffer_t *&, loom_buffer_t *&, View &, View &out) { out.dims[1].stride = -1; },
        {"Buffer blurred has stride -1"});
}

TEST(AOT, ScalarAndHalfChecksOnOtherPipelines) {
    std::vector<uint16_t> q(4);
    std::vector<float> o0(4);
    std::vector<uint16_t> o1(4);
    View vq(q.data(), f32, {2, 2}), v0(o0.data(), f32, {2, 2}), v1(o1.data(), f16, {2, 2});
    EXPECT_NE(aot_half(&vq, 0, &v0, &v1), 0);
    EXPECT_TRUE(last_error_says(
        "Input buffer q has element type float32, but the pipeline expects float16"));
    vq.buf.type = f16;
    EXPECT_NE(aot_half(&vq, 0, &v1, &v1), 0);
    EXPECT_TRUE(last_error_says("Output buffer f.0 has element type float16"));
}

// ---------------------------------------------------------------- DLPack

TEST(DLPack, RoundTripThroughAPipeline) {
    int h = 12, w = 19;
    std::vector<float> in = random_floats((h + 2) * (w + 2)), out(h * w);
    int64_t in_shape[2] = {h + 2, w + 2}, out_shape[2] = {h, w};
    DLTensor tin{in.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, in_shape, nullptr, 0};
    DLTensor tout{out.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, out_shape, nullptr, 0};
    loom_buffer_t bin, bout;
    loom_dimension_t din[4], dout[4];
    ASSERT_EQ(loom_buffer_from_dltensor(&tin, &bin, din, 4), 0) << loom_last_error_message();
    ASSERT_EQ(loom_buffer_from_dltensor(&tout, &bout, dout, 4), 0) << loom_last_error_message();
    EXPECT_EQ(bin.dim[0].stride, w + 2);
    EXPECT_EQ(bin.dim[1].stride, 1);
    ASSERT_EQ(aot_blur(&bin, 1.25f, &bout), 0) << loom_last_error_message();
    expect_near_all(out, reference_blur(in, h, w, 1.25f), 1e-5f);

    DLTensor back;
    int64_t shape[4], strides[4];
    ASSERT_EQ(loom_buffer_to_dltensor(&bout, &back, shape, strides, 4), 0);
    EXPECT_EQ(back.data, out.data());
    EXPECT_EQ(back.device.device_type, kDLCPU);
    EXPECT_EQ(back.ndim, 2);
    EXPECT_EQ(back.dtype.code, kDLFloat);
    EXPECT_EQ(back.dtype.bits, 32);
    EXPECT_EQ(back.dtype.lanes, 1);
    EXPECT_EQ(back.shape[0], h);
    EXPECT_EQ(back.shape[1], w);
    EXPECT_EQ(back.strides[0], w);
    EXPECT_EQ(back.strides[1], 1);
    EXPECT_EQ(back.byte_offset, 0u);
}

TEST(DLPack, StridesOffsetsAndBool) {
    // A transposed view with a byte offset of one row.
    std::vector<float> data(3 * 4);
    int64_t shape[2] = {4, 2}, strides[2] = {1, 4};
    DLTensor t{data.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, strides, 4 * sizeof(float)};
    loom_buffer_t b;
    loom_dimension_t d[2];
    ASSERT_EQ(loom_buffer_from_dltensor(&t, &b, d, 2), 0);
    EXPECT_EQ(b.host, reinterpret_cast<uint8_t *>(data.data() + 4));
    EXPECT_EQ(b.dim[0].extent, 4);
    EXPECT_EQ(b.dim[0].stride, 1);
    EXPECT_EQ(b.dim[1].stride, 4);

    uint8_t flags[3] = {1, 0, 1};
    int64_t n = 3;
    DLTensor tb{flags, {kDLCPU, 0}, 1, {kDLBool, 8, 1}, &n, nullptr, 0};
    ASSERT_EQ(loom_buffer_from_dltensor(&tb, &b, d, 2), 0);
    EXPECT_EQ(b.type.code, loom_type_uint);
    EXPECT_EQ(b.type.bits, 1);
    DLTensor back;
    int64_t s[2], st[2];
    ASSERT_EQ(loom_buffer_to_dltensor(&b, &back, s, st, 2), 0);
    EXPECT_EQ(back.dtype.code, kDLBool);
    EXPECT_EQ(back.dtype.bits, 8);

    // Zero dimensions: a scalar.
    float x = 1;
    DLTensor ts{&x, {kDLCPU, 0}, 0, {kDLFloat, 32, 1}, nullptr, nullptr, 0};
    ASSERT_EQ(loom_buffer_from_dltensor(&ts, &b, nullptr, 0), 0);
    EXPECT_EQ(b.dimensions, 0);
}

TEST(DLPack, Refusals) {
    std::vector<float> data(16);
    int64_t shape[2] = {4, 4};
    loom_buffer_t b;
    loom_dimension_t d[2];
    auto refused = [&](DLTensor t, int max_dims, const char *fragment) {
        int r = loom_buffer_from_dltensor(&t, &b, d, max_dims);
        EXPECT_EQ(r, loom_error_unsupported) << fragment;
        EXPECT_TRUE(last_error_says(fragment));
    };
    DLTensor ok{data.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, nullptr, 0};
    DLTensor t = ok;
    t.device.device_type = kDLROCM;
    refused(t, 2, "neither in CPU memory");
    t = ok;
    t.dtype = {kDLComplex, 64, 1};
    refused(t, 2, "no buffer type");
    t = ok;
    t.dtype = {kDLFloat, 8, 1};
    refused(t, 2, "bits");
    t = ok;
    t.dtype = {kDLFloat, 32, 4};
    refused(t, 2, "lanes");
    t = ok;
    t.byte_offset = 2;
    refused(t, 2, "multiple of the element size");
    refused(ok, 1, "more dimensions");
    int64_t huge[2] = {int64_t(1) << 32, 1};
    t = ok;
    t.shape = huge;
    refused(t, 2, "does not fit in int32");
    int64_t big[2] = {int64_t(1) << 20, int64_t(1) << 12};  // outer stride 2^12 fits...
    t = ok;
    t.shape = big;
    EXPECT_EQ(loom_buffer_from_dltensor(&t, &b, d, 2), 0);
    int64_t bigger[2] = {2, int64_t(1) << 31};  // ...a compact outer stride of 2^31 does not
    t.shape = bigger;
    refused(t, 2, "does not fit in int32");
    EXPECT_EQ(loom_buffer_from_dltensor(nullptr, &b, d, 2), loom_error_unsupported);
    EXPECT_EQ(loom_buffer_to_dltensor(nullptr, &t, nullptr, nullptr, 0), loom_error_unsupported);
}

namespace {

// aot_gpu_scale loads the stand-in CUDA driver (test/fake_cuda),
// so that it runs here without a GPU.
const bool driver_selected = fake_cuda_select();

/** Plays aot_gpu_scale's kernel: its parameters start with in, out and
 * gain (buffers, then scalars, each by name), then the scalars it indexes
 * with; the test's buffers are dense. */
void scale_kernel(const char *kernel, const unsigned grid[3], const unsigned block[3], unsigned,
                  void **args, void *user) {
    const int *shape = static_cast<const int *>(user);
    EXPECT_STREQ(kernel, "aot_gpu_scale_argv_out");  // <lowered function>_<Func>
    EXPECT_EQ(grid[0], (shape[1] + 31) / 32u);
    EXPECT_EQ(block[0] * block[1], 256u);
    const size_t n = static_cast<size_t>(shape[0]) * shape[1];
    uint64_t in, out;
    float gain;
    std::memcpy(&in, args[0], 8);
    std::memcpy(&out, args[1], 8);
    std::memcpy(&gain, args[2], 4);
    ASSERT_TRUE(fake_cuda_is_device_memory(in, n * 4));
    ASSERT_TRUE(fake_cuda_is_device_memory(out, n * 4));
    for (size_t i = 0; i < n; i++) {
        reinterpret_cast<float *>(out)[i] = reinterpret_cast<float *>(in)[i] * gain + 1.0f;
    }
}

}  // namespace

TEST(AOT, GpuLibraryLaunchesItsEmbeddedKernel) {
    fake_cuda_reset(1, 90);
    int shape[2] = {13, 70};
    fake_cuda_set_launch_hook(&scale_kernel, shape);
    std::vector<float> in = random_floats(13 * 70), out(13 * 70, -7.0f);
    View vin(in.data(), f32, {13, 70}), vout(out.data(), f32, {13, 70});
    ASSERT_EQ(aot_gpu_scale(&vin, 3.0f, &vout), 0) << loom_last_error_message();
    // The cubin embedded in the library was loaded; the result is on the GPU.
    EXPECT_EQ(fake_cuda_calls("cuModuleLoadData"), 1);
    EXPECT_EQ(fake_cuda_calls("cuLaunchKernel"), 1);
    EXPECT_TRUE(vout.buf.flags & loom_buffer_device_dirty);
    EXPECT_EQ(out[0], -7.0f);
    ASSERT_EQ(loom_copy_to_host(&vout), 0) << loom_last_error_message();
    for (size_t i = 0; i < out.size(); i++) ASSERT_EQ(out[i], in[i] * 3.0f + 1.0f) << i;
    ASSERT_EQ(loom_device_free(&vin), 0);
    ASSERT_EQ(loom_device_free(&vout), 0);
    EXPECT_EQ(fake_cuda_live_allocations(), 0);
    fake_cuda_set_launch_hook(nullptr, nullptr);
}

TEST(AOT, GpuLibraryRefusesAChangeOnTheGpuWithoutGpuMemory) {
    // A descriptor that says its GPU copy is newer, with no GPU copy: the data
    // its caller meant is nowhere Loom can see, so the call fails instead of
    // uploading the host's (stale) elements.
    fake_cuda_reset(1, 90);
    std::vector<float> in = random_floats(13 * 70), out(13 * 70);
    View vin(in.data(), f32, {13, 70}), vout(out.data(), f32, {13, 70});
    vin.buf.flags = loom_buffer_device_dirty;
    EXPECT_NE(aot_gpu_scale(&vin, 3.0f, &vout), 0);
    EXPECT_TRUE(
        last_error_says("buffer in is marked as changed on the GPU (loom_buffer_device_dirty), but "
                        "has no GPU memory"));
    EXPECT_EQ(fake_cuda_calls("cuLaunchKernel"), 0);
    // The explicit copies say the same of a buffer they are handed.
    EXPECT_NE(loom_copy_to_host(&vin), 0);
    EXPECT_TRUE(last_error_says("the buffer is marked as changed"));
    EXPECT_NE(loom_copy_to_device(&vin), 0);
    ASSERT_EQ(loom_device_free(&vout), 0);
    EXPECT_EQ(fake_cuda_live_allocations(), 0);
}

TEST(AOT, GpuLibraryRunsOnDLPackCudaTensorsInPlace) {
    // What a PyTorch caller does: CUDA tensors, passed through DLPack, are
    // read and written where they are; nothing is copied to or from the host.
    fake_cuda_reset(1, 90);
    int shape[2] = {13, 70};
    fake_cuda_set_launch_hook(&scale_kernel, shape);
    const size_t n = 13 * 70;
    uint64_t din = 0, dout = 0;
    ASSERT_EQ(loom_cuda_malloc(n * 4, "in", &din), 0) << loom_last_error_message();
    ASSERT_EQ(loom_cuda_malloc(n * 4, "out", &dout), 0) << loom_last_error_message();
    std::vector<float> in = random_floats(n);
    std::memcpy(reinterpret_cast<void *>(din), in.data(),
                n * 4);  // the stand-in's memory is host's
    int64_t dl_shape[2] = {13, 70};
    DLTensor tin{
        reinterpret_cast<void *>(din), {kDLCUDA, 0}, 2, {kDLFloat, 32, 1}, dl_shape, nullptr, 0};
    DLTensor tout = tin;
    tout.data = reinterpret_cast<void *>(dout);
    loom_buffer_t bin, bout;
    loom_dimension_t din_dims[2], dout_dims[2];
    ASSERT_EQ(loom_buffer_from_dltensor(&tin, &bin, din_dims, 2), 0);
    ASSERT_EQ(loom_buffer_from_dltensor(&tout, &bout, dout_dims, 2), 0);
    EXPECT_EQ(bin.host, nullptr);
    EXPECT_EQ(bin.device, din);

    ASSERT_EQ(aot_gpu_scale(&bin, 3.0f, &bout), 0) << loom_last_error_message();
    EXPECT_EQ(fake_cuda_calls("cuLaunchKernel"), 1);
    EXPECT_EQ(fake_cuda_calls("cuMemcpyHtoD_v2"), 0);
    EXPECT_EQ(fake_cuda_calls("cuMemcpyDtoH_v2"), 0);
    EXPECT_EQ(fake_cuda_calls("cuMemAlloc_v2"), 2);  // the test's own two
    const float *result = reinterpret_cast<const float *>(dout);
    for (size_t i = 0; i < n; i++) ASSERT_EQ(result[i], in[i] * 3.0f + 1.0f) << i;

    // In place, element for element, is allowed; one row on is not.
    ASSERT_EQ(aot_gpu_scale(&bout, 0.5f, &bout), 0) << loom_last_error_message();
    for (size_t i = 0; i < n; i++) ASSERT_EQ(result[i], (in[i] * 3.0f + 1.0f) * 0.5f + 1.0f) << i;
    DLTensor next_row = tout;
    next_row.data = reinterpret_cast<void *>(dout + 70 * 4);
    int64_t fewer_rows[2] = {12, 70};
    next_row.shape = fewer_rows;
    loom_buffer_t bnext;
    loom_dimension_t dnext[2];
    ASSERT_EQ(loom_buffer_from_dltensor(&next_row, &bnext, dnext, 2), 0);
    EXPECT_NE(aot_gpu_scale(&bout, 0.5f, &bnext), 0);
    EXPECT_TRUE(
        last_error_says("Buffers in (input) and out (output) share memory on the GPU, but not "
                        "element for element"));
    EXPECT_EQ(fake_cuda_calls("cuLaunchKernel"), 2);

    // Back to DLPack: still the same GPU memory.
    DLTensor back;
    int64_t s[2], st[2];
    ASSERT_EQ(loom_buffer_to_dltensor(&bout, &back, s, st, 2), 0);
    EXPECT_EQ(back.device.device_type, kDLCUDA);
    EXPECT_EQ(back.data, reinterpret_cast<void *>(dout));
    // There is no host memory to copy to; and freeing leaves the memory to
    // its owner.
    EXPECT_NE(loom_copy_to_host(&bout), 0);
    EXPECT_TRUE(last_error_says("no host memory"));
    ASSERT_EQ(loom_device_free(&bout), 0);
    EXPECT_EQ(fake_cuda_live_allocations(), 2);
    loom_cuda_free(din);
    loom_cuda_free(dout);
    EXPECT_EQ(fake_cuda_live_allocations(), 0);
    fake_cuda_set_launch_hook(nullptr, nullptr);
}
