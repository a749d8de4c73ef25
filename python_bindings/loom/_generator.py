"""Generators in Python: a pipeline packaged as a class with compile-time
params, inputs and outputs, compiled ahead of time by `python -m loom.gen`
into the same static library and header as C++'s loom-gen.

    class Brighten(loom.Generator, name="brighten"):
        elem = loom.GeneratorParam(loom.Float(32))
        vec = loom.GeneratorParam(8, min=1, max=64)
        input = loom.Input(elem, 2)            # a buffer whose type is a param
        gain = loom.Input(loom.Float(32), default=1.0)   # a scalar
        output = loom.Output(elem, 2)

        def generate(self):
            y, x = self.y, self.x = loom.Var("y"), loom.Var("x")
            self.output[y, x] = loom.cast(self.elem, self.input[y, x] * self.gain)

        def schedule(self):
            self.sched[self.output].vectorize(self.x, self.vec)

The generated function takes the inputs in declaration order, then the
outputs: brighten(input, gain, output).
"""
import itertools
import re

from . import _loom

_order = itertools.count()
_registry = {}


class GeneratorParam:
    """A compile-time parameter: bool, int, float, str, loom.Type or
    loom.Target, set on the command line as name=value. Ints and floats may
    have a min and max; `choices` maps names to values (an enum)."""

    def __init__(self, default, *, min=None, max=None, choices=None):
        self.default, self.min, self.max, self.choices = default, min, max, choices
        self.order = next(_order)
        self.name = None

    def __set_name__(self, owner, name):
        self.name = name

    def parse(self, text):
        d = self.default
        try:
            if self.choices is not None:
                if text not in self.choices:
                    raise ValueError(f"one of {', '.join(self.choices)}")
                return self.choices[text]
            if isinstance(d, bool):
                if text.lower() not in ("true", "false", "1", "0"):
                    raise ValueError("true or false")
                return text.lower() in ("true", "1")
            if isinstance(d, int):
                v = int(text)
            elif isinstance(d, float):
                v = float(text)
            elif isinstance(d, _loom.Type):
                return _loom.type_of(text)
            elif isinstance(d, _loom.Target):
                return _loom.Target(text)
            else:
                return text
        except (ValueError, TypeError, _loom.Error) as e:
            what = str(e) if isinstance(e, ValueError) and self.choices is not None else \
                f"a {type(d).__name__}"
            raise _loom.CompileError(f"GeneratorParam {self.name}: the value '{text}' is not "
                                     f"{what}") from None
        if (self.min is not None and v < self.min) or (self.max is not None and v > self.max):
            raise _loom.CompileError(f"GeneratorParam {self.name}: {v} is outside "
                                     f"[{self.min}, {self.max}]")
        return v

    def __get__(self, gen, owner):
        if gen is None:
            return self
        return gen._params[self.name]


def _resolve(gen, x):
    return gen._params[x.name] if isinstance(x, GeneratorParam) else x


class _Member:
    """A declared Input or Output: its name is the attribute's, and reading
    it on a built generator gives the Param, BufferParam or Func made for it."""
    role = ""

    def __init__(self):
        self.order = next(_order)
        self.name = None

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, gen, owner):
        if gen is None:
            return self
        made = gen._inputs if isinstance(self, Input) else gen._outputs
        if self.name not in made:
            raise _loom.CompileError(f"{self.role} {self.name} is used before the generator is "
                                     f"built: use it in generate()")
        return made[self.name]


class Input(_Member):
    """An input: Input(type) is a scalar Param, Input(type, dimensions) a
    buffer. The type (and dimensions) may be a GeneratorParam."""
    role = "Input"

    def __init__(self, type, dimensions=None, *, default=None):
        super().__init__()
        self.type, self.dimensions, self.default = type, dimensions, default

    def make(self, gen):
        t = _loom.type_of(_resolve(gen, self.type))
        if self.dimensions is None:
            return _loom.Param(t, self.name, self.default)
        return _loom.BufferParam(t, int(_resolve(gen, self.dimensions)), self.name)


class Output(_Member):
    """An output buffer: a Func of this type and dimensions, defined in
    generate() (self.output[x, y] = ...)."""
    role = "Output"

    def __init__(self, type, dimensions):
        super().__init__()
        self.type, self.dimensions = type, dimensions


def _members(cls, kind):
    found = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, kind):
                found[name] = value
    return sorted(found.values(), key=lambda m: m.order)


class Generator:
    """The base of every Python generator; see the module's docstring."""

    target = GeneratorParam(_loom.Target("host"))

    def __init_subclass__(cls, name=None, **kw):
        super().__init_subclass__(**kw)
        cls.generator_name = name or re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()
        _registry[cls.generator_name] = cls

    def __init__(self, **params):
        self._params = {p.name: p.default for p in _members(type(self), GeneratorParam)}
        self._inputs, self._outputs = {}, {}
        self._pipeline = None
        self.sched = _loom.Schedule()
        for k, v in params.items():
            self.set_param(k, v)

    # ---- Before build().
    def set_param(self, name, value):
        """Sets a GeneratorParam, from its value or its text form."""
        params = {p.name: p for p in _members(type(self), GeneratorParam)}
        if name not in params:
            raise _loom.CompileError(f"Generator {self.generator_name} has no GeneratorParam "
                                     f"'{name}'; its params are: {', '.join(params)}")
        if self._pipeline is not None:
            raise _loom.CompileError(f"GeneratorParam {name} is set after the generator was built")
        self._params[name] = params[name].parse(value) if isinstance(value, str) and \
            not isinstance(params[name].default, str) else value

    def generate(self):
        raise NotImplementedError("a Generator defines generate()")

    def schedule(self):
        pass

    # ---- Building.
    def build(self):
        """Creates the inputs, runs generate(), checks the outputs, runs
        schedule(). Runs once."""
        if self._pipeline is not None:
            return
        for i in _members(type(self), Input):
            self._inputs[i.name] = i.make(self)
        for o in _members(type(self), Output):
            self._outputs[o.name] = _loom.Func(o.name)
        self.generate()
        funcs = []
        for o in _members(type(self), Output):
            f = self._outputs[o.name]
            t, dims = _loom.type_of(_resolve(self, o.type)), int(_resolve(self, o.dimensions))
            if not f.defined():
                raise _loom.CompileError(f"Output {o.name} of generator {self.generator_name} "
                                         f"was not defined by generate()")
            if f.dimensions() != dims or f.type != t:
                raise _loom.CompileError(
                    f"Output {o.name} of generator {self.generator_name} is declared as "
                    f"{dims}-D {t} but generate() defined it as {f.dimensions()}-D {f.type}")
            funcs.append(f)
        if not funcs:
            raise _loom.CompileError(f"Generator {self.generator_name} declares no Output")
        self.schedule()
        self._pipeline = _loom.Pipeline(funcs)

    def pipeline(self):
        self.build()
        return self._pipeline

    def compile(self, output_shape=None):
        """JIT-compiles for the target param."""
        return self.pipeline().compile(self.sched, self.target, output_shape=output_shape)

    def emit(self, directory, basename, function_name, kinds=("static_library",)):
        """Writes directory/basename.<suffix> for each kind of
        loom.emit_kinds(), as C++'s Generator::emit (the same code)."""
        _loom._emit_pipeline(self.pipeline(), self.sched, self.target, directory, basename,
                             function_name, list(kinds))


def registered_generators():
    """Every Generator subclass defined so far, by name."""
    return dict(_registry)
