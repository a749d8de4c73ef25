// The installed headers and libloom.so are enough to JIT-compile.
#include <cstdio>

#include <loom/loom.h>

using namespace loom;

int main() {
    BufferParam in(Float(32), 1, "in");
    Var x("x");
    Func f("f");
    f(x) = in(x)*2.0f + 1.0f;
    Buffer<float> b({16});
    for (int i = 0; i < 16; i++) b(i) = static_cast<float>(i);
    in.set(b);
    Buffer<float> out(Pipeline(f).realize({16}));
    for (int i = 0; i < 16; i++) {
        if (out(i) != 2.0f * i + 1.0f) {
            std::printf("JIT result wrong at %d\n", i);
            return 1;
        }
    }
    std::printf("jit: ok\n");
    return 0;
}
