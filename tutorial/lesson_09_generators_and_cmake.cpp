// Lesson 9: generators, the loom-gen driver, and using them from CMake.
//
// Lesson 8 compiled a Pipeline to a static library by calling
// compile_to_static_library from a program you wrote. A generator packages
// that program: a class that declares its compile-time parameters, its
// inputs and its outputs, defines the algorithm in generate() and the
// schedule in schedule(). A driver then compiles it from the command line,
// and a CMake function runs that driver while your project builds, so a
// kernel becomes an ordinary library target.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <loom/Generator.h>
#include <loom/loom.h>

using namespace loom;

// A generator is a class derived from loom::Generator. Its members, in
// declaration order, are its interface:
//
// - GeneratorParam<T>: a value fixed at compile time, set on the command
//   line as name=value. T may be bool, an integer or floating-point type,
//   std::string, Type (written "uint8", "float16", ...), Target, or an enum
//   with a name -> value map. Integer params may carry a [min, max] range.
// - Input<Buffer<T>> and Input<T>: the buffer and scalar arguments of the
//   generated function. Input<Buffer<>> takes its element type at
//   construction, here from a GeneratorParam<Type>, so one source makes
//   kernels for several element types.
// - Output<Buffer<T>>: the results. An Output is a Func: generate() defines
//   it, schedule() schedules it.
//
// The generated C function takes the inputs in declaration order, then the
// outputs: unsharp(input, amount, output).

enum class Edge { Sharpen, Soften };

class Unsharp : public Generator {
  public:
    GeneratorParam<Type> elem{"elem", Float(32)};
    GeneratorParam<Edge> edge{
        "edge", Edge::Sharpen, {{"sharpen", Edge::Sharpen}, {"soften", Edge::Soften}}};
    GeneratorParam<int> vec{"vec", 8, 1, 64};

    Input<Buffer<>> input{"input", elem, 2};
    Input<float> amount{"amount", 0.5f};
    Output<Buffer<>> output{"output", elem, 2};

    // Funcs and Vars shared by generate() and schedule() are members too.
    Var y{"y"}, x{"x"};
    Func blur{"blur"};

    // The algorithm. Params have their final values here, and the Inputs
    // exist with their final types.
    void generate() override {
        Expr in = cast<float>(input(y + 1, x + 1));
        blur(y, x) = (cast<float>(input(y, x + 1)) + cast<float>(input(y + 2, x + 1)) +
                      cast<float>(input(y + 1, x)) + cast<float>(input(y + 1, x + 2)) + in) /
                     5.0f;
        Expr detail = in - blur(y, x);
        Expr result = edge == Edge::Sharpen ? in + amount * detail : in - amount * detail;
        output(y, x) = cast(elem, result);
    }

    // The schedule, kept apart: it writes to the member `sched`, the same
    // Schedule object as in earlier lessons. Numeric params read directly as
    // split factors.
    void schedule() override { sched[output].vectorize(x, vec).parallel(y); }
};

// Registering gives the generator a name the driver can find.
LOOM_REGISTER_GENERATOR(Unsharp, unsharp)

int main() {
    // ---- Listing. `loom-gen --list` (or any generator executable with
    // --list) prints each generator with its params (name, type, default)
    // and its arguments. The same listing from C++:
    list_generators(std::cout, "unsharp");

    // ---- Using a generator directly. Create it from the registry, set
    // params as the command line would, then JIT-compile it: the result
    // takes exactly the arguments the AOT function will take.
    std::unique_ptr<Generator> gen = GeneratorRegistry::create("unsharp");
    gen->set_param("elem", "float32");
    gen->set_param("vec", "4");
    CompiledPipeline kernel = gen->compile();
    for (const Argument &a : kernel.arguments()) {
        std::printf("argument %s: %s\n", a.name.c_str(), type_to_string(a.type).c_str());
    }
    Buffer<float> in({10, 12}), out({8, 10});
    in.fill([](const std::vector<int> &c) { return static_cast<float>((c[0] * 3 + c[1]) % 7); });
    kernel(in, 0.5f, out);
    // Check one point by hand: sharpening moves a pixel away from the
    // average of its neighbourhood.
    float center = in(4, 5);
    float avg = (in(3, 5) + in(5, 5) + in(4, 4) + in(4, 6) + center) / 5.0f;
    float want = center + 0.5f * (center - avg);
    if (std::abs(out(3, 4) - want) > 1e-5f) {
        std::printf("unexpected value %f, wanted %f\n", out(3, 4), want);
        return 1;
    }

    // ---- Mistakes are clear errors. A bad value names the param and lists
    // what it accepts; an unknown name lists the params there are.
    try {
        std::unique_ptr<Generator> g = GeneratorRegistry::create("unsharp");
        g->set_param("edge", "blur");
        return 1;
    } catch (const CompileError &e) {
        std::printf("caught: %s\n", e.what());
    }

    // ---- The driver. Every generator executable runs this command line
    // (its main() comes from the loom_generator_main library); here we call
    // it in-process. -e lists what to write: static_library (.a and .h),
    // h, object, assembly, llvm_ir, stmt.
    std::filesystem::path dir = std::filesystem::temp_directory_path() / "loom_lesson_09";
    std::filesystem::remove_all(dir);
    int rc = run_generator(
        {"lesson_09", "-g", "unsharp", "-o", dir.string(), "-e", "static_library,stmt", "-f",
         "unsharp_u8", "elem=uint8", "edge=soften", "target=host"},
        std::cout, std::cerr);
    if (rc != 0) return 1;
    for (const char *file : {"unsharp_u8.a", "unsharp_u8.h", "unsharp_u8.stmt"}) {
        bool ok = std::filesystem::exists(dir / file);
        std::printf("%s %s\n", ok ? "wrote" : "MISSING", file);
        if (!ok) return 1;
    }
    // A bad command line returns a non-zero status with a message, which
    // is what stops a build that passes a wrong param.
    rc = run_generator({"lesson_09", "-g", "unsharp", "-o", dir.string(), "vec=0"}, std::cout,
                       std::cerr);
    if (rc == 0) return 1;
    std::filesystem::remove_all(dir);

    // ---- From CMake. In a project (in Loom's tree, or anywhere after
    // `cmake --install` and find_package(Loom)):
    //
    //     find_package(Loom REQUIRED)
    //     # An executable holding the generator, with the driver's main().
    //     loom_add_generator(unsharp_gen SOURCES unsharp_generator.cpp)
    //     # Runs it at build time: unsharp_u8.a and unsharp_u8.h in the
    //     # binary directory, and a target of that name to link.
    //     loom_add_library(unsharp_u8 GENERATOR unsharp_gen
    //                      TARGET x86-64-linux-avx2
    //                      PARAMS elem=uint8 edge=soften)
    //     add_executable(app main.cpp)
    //     target_link_libraries(app PRIVATE unsharp_u8)   # #include "unsharp_u8.h"
    //
    // The library holds the kernel and the small runtime it needs; `app`
    // links neither libloom nor LLVM. Changing a param or the generator's
    // source re-runs the generator on the next build.
    std::printf("Lesson 9 passed.\n");
    return 0;
}
