/* A C program using an AOT-compiled Loom pipeline. It is built as C and
 * linked with the static library, libpthread and libm only: the library
 * needs no C++ runtime, no libloom and no LLVM. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "aot_blur.h"

int main(void) {
    enum { H = 6, W = 9 };
    float in[(H + 2) * (W + 2)], out[H * W];
    for (int i = 0; i < (H + 2) * (W + 2); i++) in[i] = (float)(i % 7);

    loom_dimension_t in_dims[2] = {{0, H + 2, W + 2, 0}, {0, W + 2, 1, 0}};
    loom_dimension_t out_dims[2] = {{0, H, W, 0}, {0, W, 1, 0}};
    loom_buffer_t in_buf, out_buf;
    memset(&in_buf, 0, sizeof(in_buf));
    memset(&out_buf, 0, sizeof(out_buf));
    in_buf.host = (uint8_t *)in;
    in_buf.type.code = loom_type_float;
    in_buf.type.bits = 32;
    in_buf.type.lanes = 1;
    in_buf.dimensions = 2;
    in_buf.dim = in_dims;
    out_buf = in_buf;
    out_buf.host = (uint8_t *)out;
    out_buf.dim = out_dims;

    if (aot_blur(&in_buf, 2.0f, &out_buf) != 0) {
        printf("unexpected error: %s\n", loom_last_error_message());
        return 1;
    }
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            float s = 0;
            for (int dy = 0; dy < 3; dy++) {
                float r = (in[(y + dy) * (W + 2) + x] + in[(y + dy) * (W + 2) + x + 1] +
                           in[(y + dy) * (W + 2) + x + 2]) /
                          3.0f;
                s += r;
            }
            if (fabsf(out[y * W + x] - s / 3.0f * 2.0f) > 1e-4f) {
                printf("mismatch at (%d, %d)\n", y, x);
                return 1;
            }
        }
    }
    /* A mistake is an error code and a message, not a crash. */
    in_buf.type.bits = 64;
    if (aot_blur(&in_buf, 2.0f, &out_buf) == 0 ||
        strstr(loom_last_error_message(), "float64") == NULL) {
        printf("expected a type error, got: %s\n", loom_last_error_message());
        return 1;
    }
    printf("ok: %s\n", loom_last_error_message());
    return 0;
}
