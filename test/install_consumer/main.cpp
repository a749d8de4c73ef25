// Calls the two generated functions through their headers and checks them.
#include <cstdio>
#include <cstring>
#include <vector>

#include "saxpy.h"
#include "saxpy_f64.h"

template <typename T> loom_buffer_t vector_buffer(std::vector<T> &v, loom_dimension_t *dim) {
    dim->min = 0;
    dim->extent = static_cast<int32_t>(v.size());
    dim->stride = 1;
    dim->flags = 0;
    loom_buffer_t b;
    std::memset(&b, 0, sizeof(b));
    b.host = reinterpret_cast<uint8_t *>(v.data());
    b.type = {loom_type_float, static_cast<uint8_t>(8 * sizeof(T)), 1};
    b.dimensions = 1;
    b.dim = dim;
    return b;
}

template <typename T, typename F> int check(F fn, const char *name) {
    const int n = 103;
    std::vector<T> x(n), y0(n), y(n);
    for (int i = 0; i < n; i++) {
        x[i] = static_cast<T>(i);
        y0[i] = static_cast<T>(1000 - i);
    }
    loom_dimension_t dx, dy0, dy;
    loom_buffer_t bx = vector_buffer(x, &dx), by0 = vector_buffer(y0, &dy0),
                  by = vector_buffer(y, &dy);
    if (int rc = fn(3.0f, &bx, &by0, &by)) {
        std::printf("%s failed (%d): %s\n", name, rc, loom_last_error_message());
        return 1;
    }
    for (int i = 0; i < n; i++) {
        T want = static_cast<T>(3) * x[i] + y0[i];
        if (y[i] != want) {
            std::printf("%s: y[%d] = %g, expected %g\n", name, i, double(y[i]), double(want));
            return 1;
        }
    }
    std::printf("%s: ok\n", name);
    return 0;
}

int main() {
    int failures = check<float>(saxpy, "saxpy") + check<double>(saxpy_double, "saxpy_double");
    return failures ? 1 : 0;
}
