// Lesson 7: JIT compilation, buffers, and looking inside.
//
// Pipeline::compile returns machine code for one schedule and target; it is
// cached, so compiling the same pipeline and schedule again is free. Buffers
// can own memory or wrap yours, with any strides. And Loom shows you what it
// generated: the lowered loop IR, LLVM IR and assembly; setting LOOM_DEBUG
// in the environment prints the IR after every lowering pass.
#include <cstdio>
#include <vector>

#include <loom/loom.h>

using namespace loom;

int main() {
    // By default Loom assumes the innermost dimension of every buffer is
    // contiguous, which keeps vector loads dense (and checks it at run time).
    // This input will be given a transposed view, so it opts out.
    BufferParam in(Float(32), 2, "in");
    in.allow_strided_innermost();
    Var y("y"), x("x");
    Func twice("twice");
    twice(y, x) = in(y, x) * 2.0f;
    Pipeline pipe(twice);

    // Compile once, call many times with explicit arguments: the inputs in
    // the order they were declared, then the outputs.
    CompiledPipeline kernel = pipe.compile(Schedule());
    for (const Argument &a : kernel.arguments()) {
        std::printf("argument %s: %s%s\n", a.name.c_str(), type_to_string(a.type).c_str(),
                    a.kind == Argument::OutputBuffer ? " (output)" : "");
    }

    // Wrap existing memory: a 4x6 row-major array...
    std::vector<float> data(24);
    for (int n = 0; n < 24; n++) data[n] = static_cast<float>(n);
    Buffer<float> whole = Buffer<float>::wrap(data.data(), {4, 6});
    // ...and a strided view of it: its transpose, without copying.
    RawBuffer transposed = whole.transposed({1, 0});
    Buffer<float> out({6, 4});
    kernel(transposed, out);
    for (int j = 0; j < 6; j++) {
        for (int i = 0; i < 4; i++) {
            if (out(j, i) != 2.0f * data[i * 6 + j]) {
                std::printf("strided input read wrongly at (%d, %d)\n", j, i);
                return 1;
            }
        }
    }

    // Mistakes in arguments are errors, never crashes: here the output is
    // larger than the input can feed.
    try {
        Buffer<float> too_big({7, 4});
        kernel(transposed, too_big);
        std::printf("expected an error\n");
        return 1;
    } catch (const RuntimeError &e) {
        std::printf("caught: %s\n", e.what());
    }

    // One buffer may be both the input and the output when each element is
    // read only to compute the same element of the output, as here:
    // twice(y, x) reads in at (y, x) alone. This doubles `data` in place.
    kernel(whole, whole);
    if (data[23] != 46.0f) {
        std::printf("expected data doubled in place\n");
        return 1;
    }
    // Any other overlap would read elements already overwritten, and is
    // refused before anything runs: a blur into its own input, or, here, a
    // 4x4 block read through the transposed view and written through the
    // plain one (element (y, x) of the output is element (x, y) of the
    // input).
    try {
        kernel(transposed.cropped(0, 0, 4), whole.cropped(1, 0, 4));
        std::printf("expected an error\n");
        return 1;
    } catch (const RuntimeError &e) {
        std::printf("caught: %s\n", e.what());
    }

    // Compiling again with the same schedule reuses the machine code.
    CompiledPipeline again = pipe.compile(Schedule());
    if (&again.assembly() != &kernel.assembly()) {
        std::printf("expected the cached kernel\n");
        return 1;
    }

    // The lowered loop IR, as text.
    std::printf("%s\n", pipe.compile_to_lowered_stmt(Schedule()).c_str());
    std::printf("Lesson 7 passed.\n");
    return 0;
}
