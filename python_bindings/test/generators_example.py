"""Brighten, as tools/loom-gen/ExampleGenerators.cpp writes it in C++: the
Python generator test compares what both drivers emit."""
import loom


class Brighten(loom.Generator, name="brighten"):
    elem = loom.GeneratorParam(loom.Float(32))
    vec = loom.GeneratorParam(8, min=1, max=64)
    parallel = loom.GeneratorParam(False)

    input = loom.Input(elem, 2)
    gain = loom.Input(loom.Float(32), default=1.0)
    output = loom.Output(elem, 2)

    y, x = loom.Var("y"), loom.Var("x")

    def generate(self):
        # Compute in float32 whatever the storage type, then convert back.
        f32 = loom.cast(loom.Float(32), self.input[self.y, self.x])
        self.output[self.y, self.x] = loom.cast(self.elem, f32 * self.gain)

    def schedule(self):
        self.sched[self.output].vectorize(self.x, self.vec)
        if self.parallel:
            self.sched[self.output].parallel(self.y)
