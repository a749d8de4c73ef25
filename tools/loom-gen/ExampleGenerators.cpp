// Example generators linked into loom-gen. They exercise each kind of
// GeneratorParam and Input, and are what the driver's tests run.
#include <loom/Generator.h>
#include <loom/loom.h>

using namespace loom;

namespace {

// output = input * gain, in any element type: the type of the input and the
// output is a GeneratorParam, so one source yields uint8, float16 and
// float32 kernels.
class Brighten : public Generator {
  public:
    GeneratorParam<Type> elem{"elem", Float(32)};
    GeneratorParam<int> vec{"vec", 8, 1, 64};
    GeneratorParam<bool> parallel{"parallel", false};

    Input<Buffer<>> input{"input", elem, 2};
    Input<float> gain{"gain", 1.0f};
    Output<Buffer<>> output{"output", elem, 2};

    Var y{"y"}, x{"x"};

    void generate() override {
        // Compute in float32 whatever the storage type, then convert back.
        output(y, x) = cast(elem, cast<float>(input(y, x)) * gain);
    }
    void schedule() override {
        sched[output].vectorize(x, vec);
        if (parallel) sched[output].parallel(y);
    }
};

enum class BlurMode { Average, Max };

// A vertical 3-tap filter, averaging or taking the maximum, with tile sizes
// as params: the kind of knob a generator exposes to its build.
class Blur3 : public Generator {
  public:
    GeneratorParam<BlurMode> mode{
        "mode", BlurMode::Average, {{"average", BlurMode::Average}, {"max", BlurMode::Max}}};
    GeneratorParam<int> tile_y{"tile_y", 16, 1, 1024};
    GeneratorParam<int> tile_x{"tile_x", 64, 1, 4096};

    Input<Buffer<float>> input{"input", 2};
    Output<Buffer<float>> output{"output", 2};

    Var y{"y"}, x{"x"}, yo{"yo"}, xo{"xo"}, yi{"yi"}, xi{"xi"};

    void generate() override {
        Expr a = input(y, x), b = input(y + 1, x), c = input(y + 2, x);
        output(y, x) = mode == BlurMode::Average ? (a + b + c) / 3.0f : max(max(a, b), c);
    }
    void schedule() override {
        sched[output].tile(y, x, yo, xo, yi, xi, tile_y, tile_x).vectorize(xi, 8);
    }
};

}  // namespace

LOOM_REGISTER_GENERATOR(Brighten, brighten)
LOOM_REGISTER_GENERATOR(Blur3, blur3)
