// y = a * x + y0 over a 1-D vector, in the element type chosen by a param.
#include <loom/Generator.h>
#include <loom/loom.h>

using namespace loom;

class Saxpy : public Generator {
  public:
    GeneratorParam<Type> elem{"elem", Float(32)};
    GeneratorParam<int> vec{"vec", 8, 1, 64};

    Input<float> a{"a"};
    Input<Buffer<>> x{"x", elem, 1};
    Input<Buffer<>> y0{"y0", elem, 1};
    Output<Buffer<>> y{"y", elem, 1};

    Var i{"i"};
    void generate() override { y(i) = cast(elem, a) * x(i) + y0(i); }
    void schedule() override { sched[y].vectorize(i, vec); }
};

LOOM_REGISTER_GENERATOR(Saxpy, saxpy)
