// Links two libraries made at build time by loom_add_library (from the
// example generators in loom-gen) and checks their results against plain
// C++. Needs neither libloom nor Loom's headers: only the generated ones.
#include <cstdio>
#include <cstring>
#include <vector>

#include "gen_blur3_max.h"
#include "gen_brighten_u8.h"

namespace {

// A dense row-major 2-D buffer descriptor over `data`.
template <typename T>
loom_buffer_t make_buffer(T *data, loom_dimension_t (&dims)[2], int rows, int cols, uint8_t code) {
    dims[0] = {0, rows, cols, 0};
    dims[1] = {0, cols, 1, 0};
    loom_buffer_t b;
    std::memset(&b, 0, sizeof(b));
    b.host = reinterpret_cast<uint8_t *>(data);
    b.type = {code, static_cast<uint8_t>(8 * sizeof(T)), 1};
    b.dimensions = 2;
    b.dim = dims;
    return b;
}

int failures = 0;

void check(bool ok, const char *what, int i, int j, double got, double want) {
    if (!ok && failures++ < 10)
        std::printf("%s mismatch at (%d, %d): got %g, expected %g\n", what, i, j, got, want);
}

}  // namespace

int main() {
    // brighten_u8: uint8 in, uint8 out, out = uint8(float(in) * gain).
    const int H = 19, W = 67;
    std::vector<uint8_t> in(H * W), out(H * W);
    for (int n = 0; n < H * W; n++) in[n] = static_cast<uint8_t>((n * 7) % 100);
    loom_dimension_t din[2], dout[2];
    loom_buffer_t bin = make_buffer(in.data(), din, H, W, loom_type_uint);
    loom_buffer_t bout = make_buffer(out.data(), dout, H, W, loom_type_uint);
    if (int rc = brighten_u8(&bin, 2.5f, &bout)) {
        std::printf("brighten_u8 failed (%d): %s\n", rc, loom_last_error_message());
        return 1;
    }
    for (int n = 0; n < H * W; n++) {
        uint8_t want = static_cast<uint8_t>(static_cast<float>(in[n]) * 2.5f);
        check(out[n] == want, "brighten_u8", n / W, n % W, out[n], want);
    }

    // The argument checks of the C ABI: a float buffer where uint8 is expected.
    std::vector<float> wrong(H * W);
    loom_dimension_t dwrong[2];
    loom_buffer_t bwrong = make_buffer(wrong.data(), dwrong, H, W, loom_type_float);
    if (brighten_u8(&bwrong, 1.0f, &bout) == 0) {
        std::printf("brighten_u8 accepted a float32 input\n");
        failures++;
    } else {
        std::printf("rejected as expected: %s\n", loom_last_error_message());
    }

    // gen_blur3_max: out(y, x) = max of in(y..y+2, x).
    const int OH = H - 2;
    std::vector<float> fin(H * W), fout(OH * W);
    for (int n = 0; n < H * W; n++) fin[n] = static_cast<float>((n * 37) % 101) - 50.0f;
    loom_dimension_t dfin[2], dfout[2];
    loom_buffer_t bfin = make_buffer(fin.data(), dfin, H, W, loom_type_float);
    loom_buffer_t bfout = make_buffer(fout.data(), dfout, OH, W, loom_type_float);
    if (int rc = gen_blur3_max(&bfin, &bfout)) {
        std::printf("gen_blur3_max failed (%d): %s\n", rc, loom_last_error_message());
        return 1;
    }
    for (int y = 0; y < OH; y++) {
        for (int x = 0; x < W; x++) {
            float want = fin[y * W + x];
            for (int k = 1; k < 3; k++)
                want = want > fin[(y + k) * W + x] ? want : fin[(y + k) * W + x];
            check(fout[y * W + x] == want, "gen_blur3_max", y, x, fout[y * W + x], want);
        }
    }

    if (failures) {
        std::printf("%d failures\n", failures);
        return 1;
    }
    std::printf("generated libraries agree with the C++ reference\n");
    return 0;
}
