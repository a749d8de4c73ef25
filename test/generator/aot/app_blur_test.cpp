// apps/blur/blur_generator.cpp built into a library with loom_add_library
// and compared with the plain C++ reference of apps/blur/blur.h.
#include <cstdio>
#include <cstring>
#include <vector>

#include "../../../apps/blur/blur.h"
#include "app_blur_cpu.h"

int main() {
    const int rows = 45, cols = 301;  // not multiples of the tile sizes
    const int in_rows = rows + 2, in_cols = cols + 2;
    std::vector<float> in(in_rows * in_cols), out(rows * cols), want(rows * cols);
    for (int n = 0; n < in_rows * in_cols; n++) in[n] = static_cast<float>((n * 13) % 31) / 7.0f;
    loom_dimension_t din[2] = {{0, in_rows, in_cols, 0}, {0, in_cols, 1, 0}};
    loom_dimension_t dout[2] = {{0, rows, cols, 0}, {0, cols, 1, 0}};
    loom_buffer_t bin, bout;
    std::memset(&bin, 0, sizeof(bin));
    std::memset(&bout, 0, sizeof(bout));
    bin.host = reinterpret_cast<uint8_t *>(in.data());
    bout.host = reinterpret_cast<uint8_t *>(out.data());
    bin.type = bout.type = {loom_type_float, 32, 1};
    bin.dimensions = bout.dimensions = 2;
    bin.dim = din;
    bout.dim = dout;
    if (int rc = app_blur_cpu(&bin, &bout)) {
        std::printf("app_blur_cpu failed (%d): %s\n", rc, loom_last_error_message());
        return 1;
    }
    blur::reference(in.data(), in_cols, want.data(), rows, cols);
    for (int n = 0; n < rows * cols; n++) {
        float d = out[n] - want[n];
        if (d > 1e-5f || d < -1e-5f) {
            std::printf("mismatch at (%d, %d): got %g, expected %g\n", n / cols, n % cols, out[n],
                        want[n]);
            return 1;
        }
    }
    std::printf("apps/blur generator: ok\n");
    return 0;
}
