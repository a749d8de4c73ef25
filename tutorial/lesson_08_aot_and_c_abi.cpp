// Lesson 8: ahead-of-time compilation and the C ABI.
//
// The JIT compiles a pipeline inside your program, which then needs Loom and
// LLVM at run time. To ship a kernel as an ordinary library instead, compile
// it ahead of time: compile_to_static_library writes a static library (the
// pipeline's machine code plus Loom's small runtime: errors, heap memory, the
// thread pool) and a C header. Programs using it need neither Loom nor LLVM,
// not even a C++ runtime: a C compiler, libpthread and libm suffice.
//
// This lesson compiles a pipeline to a library in a temporary directory,
// shows the header, and then builds and runs a small C program against it.
// docs/aot.md describes the ABI in full.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include <loom/loom.h>

using namespace loom;

#ifndef LOOM_TUTORIAL_CC
#define LOOM_TUTORIAL_CC "cc"
#endif

namespace {

std::string read_file(const std::string &path) {
    std::ifstream f(path);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

// The C program of this lesson. It fills a buffer descriptor for each
// argument, calls the pipeline, and checks the result; then it makes a
// mistake on purpose.
const char *const c_program = R"(
#include <stdio.h>
#include <string.h>
#include "brighten.h"

int main(void) {
    enum { H = 4, W = 10 };
    float in[H * (W + 2)], out[H * W];
    for (int i = 0; i < H * (W + 2); i++) in[i] = (float)i;

    /* Dimension 0 is the outermost (rows); strides count elements. */
    loom_dimension_t in_dims[2] = {{0, H, W + 2, 0}, {0, W + 2, 1, 0}};
    loom_dimension_t out_dims[2] = {{0, H, W, 0}, {0, W, 1, 0}};
    loom_buffer_t in_buf, out_buf;
    memset(&in_buf, 0, sizeof in_buf);
    in_buf.host = (uint8_t *)in;
    in_buf.type.code = loom_type_float;
    in_buf.type.bits = 32;
    in_buf.type.lanes = 1;
    in_buf.dimensions = 2;
    in_buf.dim = in_dims;
    out_buf = in_buf;
    out_buf.host = (uint8_t *)out;
    out_buf.dim = out_dims;

    /* Buffers by pointer, scalars by value, in the order of the header. */
    if (brighten(&in_buf, 2.0f, &out_buf) != 0) {
        printf("error: %s\n", loom_last_error_message());
        return 1;
    }
    printf("out[1][3] = %g (expected %g)\n", out[1 * W + 3], (in[15] + in[16] + in[17]) / 3 * 2);

    /* Mistakes are error codes with a message, never crashes. */
    out_dims[0].extent = H + 1; /* more rows than the input has */
    int code = brighten(&in_buf, 2.0f, &out_buf);
    printf("error %d: %s\n", code, loom_last_error_message());
    return code != 0 ? 0 : 1;
}
)";

}  // namespace

int main() {
    // The algorithm and the schedule are written exactly as for the JIT.
    BufferParam in(Float(32), 2, "in");
    Param<float> gain("gain");
    Var y("y"), x("x");
    Func brighten("brighten");
    brighten(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f * gain;
    Schedule s;
    s[brighten].parallel(y).vectorize(x, 16);
    Pipeline pipe(brighten);

    char tmpl[] = "/tmp/loom_lesson_08_XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    std::string dir = tmpl;

    // compile_to_static_library writes brighten.a and brighten.h. The second
    // argument is the C name of the function. The target says which
    // machines the code is for: "host" is this one; a string such as
    // "x86-64-linux-avx2" makes a library for every AVX2 machine, whatever
    // machine compiles it.
    pipe.compile_to_static_library(dir + "/brighten", "brighten", s, Target("host"));

    // The header is self-contained: it carries the runtime's C declarations
    // (loom_buffer_t, error functions) and then the pipeline's. The function
    // takes the pipeline's arguments in the order CompiledPipeline::arguments()
    // lists them: inputs in the order they were declared, then outputs.
    std::string header = read_file(dir + "/brighten.h");
    size_t doc = header.find("/** Runs brighten.");
    size_t end = header.find("#ifdef __cplusplus", doc);
    std::printf("---- from brighten.h ----\n%s", header.substr(doc, end - doc).c_str());

    // A C program uses the library like any other. It links the archive with
    // libpthread (the thread pool) and libm (math functions).
    std::ofstream(dir + "/main.c") << c_program;
    std::string build = std::string(LOOM_TUTORIAL_CC) + " -O2 -I" + dir + " " + dir + "/main.c " +
                        dir + "/brighten.a -lpthread -lm -o " + dir + "/main";
    std::printf("---- %s\n", build.c_str());
    if (std::system(build.c_str()) != 0) {
        std::printf("building the C program failed\n");
        return 1;
    }
    std::fflush(stdout);
    if (std::system((dir + "/main").c_str()) != 0) {
        std::printf("the C program failed\n");
        return 1;
    }

    // The other AOT outputs are for inspection and for build systems with
    // their own conventions: an object file, the assembly, the LLVM IR, and
    // the header alone. Here: the AVX-512 assembly of the same pipeline,
    // which can be produced on any machine.
    pipe.compile_to_assembly(dir + "/brighten.s", "brighten", s, Target("x86-64-linux-avx512"));
    std::string assembly = read_file(dir + "/brighten.s");
    std::printf("the AVX-512 assembly %s zmm registers\n",
                assembly.find("zmm") != std::string::npos ? "uses" : "does not use");

    int removed = std::system(("rm -rf " + dir).c_str());
    (void)removed;
    return 0;
}
