"""The generator driver, as C++'s loom-gen: compiles a Python Generator
ahead of time into a static library (.a, with its .h) and other files.

    python -m loom.gen my_generators.py -g brighten -o out elem=uint8 target=host
    python -m loom.gen my_generators.py --list
"""
import importlib
import importlib.util
import os
import sys

from . import _loom
from ._generator import registered_generators

USAGE = """usage: python -m loom.gen SOURCE -g NAME -o DIR [-e KINDS] [-f FUNCTION] [-n FILE_BASE]
                         [target=TARGET] [param=value ...]
       python -m loom.gen SOURCE --list [-g NAME]

  SOURCE        a Python file (or an importable module) defining loom.Generator classes
  -g NAME       the generator (optional when SOURCE defines only one)
  -o DIR        the output directory (created if missing)
  -e KINDS      comma-separated: static_library (.a and .h), h, object, assembly,
                llvm_ir, stmt, cuda; default static_library
  -f FUNCTION   the C name of the generated function; default NAME
  -n FILE_BASE  the base name of the files written; default FUNCTION
  target=T      the target, e.g. host or x86-64-linux-avx2; default host
  param=value   sets a GeneratorParam
"""


class DriverError(Exception):
    pass


def _load(source):
    if source.endswith(".py") or os.path.sep in source:
        if not os.path.exists(source):
            raise DriverError(f"no such file: {source}")
        name = "loom_gen_" + os.path.splitext(os.path.basename(source))[0]
        spec = importlib.util.spec_from_file_location(name, source)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        importlib.import_module(source)


def _describe(name, cls, out):
    g = cls()
    out.write(f"{name}\n")
    from ._generator import GeneratorParam, Input, Output, _members
    for p in _members(cls, GeneratorParam):
        out.write(f"  param {p.name} = {g._params[p.name]}\n")
    for i in _members(cls, Input):
        kind = "scalar" if i.dimensions is None else f"{i.dimensions}-D buffer"
        out.write(f"  input {i.name}: {kind}\n")
    for o in _members(cls, Output):
        out.write(f"  output {o.name}: {o.dimensions}-D buffer\n")


def run(argv, out=sys.stdout, err=sys.stderr):
    """Runs the driver on argv (without the program name); returns the exit status."""
    gen_name = out_dir = fn_name = file_base = None
    emit, params, listing, source = "static_library", {}, False, None
    try:
        i = 0
        while i < len(argv):
            a = argv[i]
            if a in ("-h", "--help"):
                out.write(USAGE)
                return 0
            if a in ("-g", "-o", "-e", "-f", "-n"):
                if i + 1 >= len(argv):
                    raise DriverError(f"{a} needs a value")
                v = argv[i + 1]
                i += 2
                if a == "-g": gen_name = v
                elif a == "-o": out_dir = v
                elif a == "-e": emit = v
                elif a == "-f": fn_name = v
                else: file_base = v
                continue
            if a in ("--list", "-l"):
                listing = True
            elif "=" in a and not a.startswith("-"):
                k, v = a.split("=", 1)
                params[k] = v
            elif source is None and not a.startswith("-"):
                source = a
            else:
                raise DriverError(f"unknown argument '{a}'")
            i += 1
        if source is None:
            raise DriverError("missing SOURCE (the Python file defining the generators)")
        _load(source)
        gens = registered_generators()
        if listing:
            for name in sorted(gens):
                if gen_name is None or name == gen_name:
                    _describe(name, gens[name], out)
            return 0
        if gen_name is None:
            if len(gens) != 1:
                raise DriverError("missing -g NAME; the generators defined are: " +
                                  ", ".join(sorted(gens)))
            gen_name = next(iter(gens))
        if gen_name not in gens:
            raise DriverError(f"no generator named '{gen_name}'; the generators defined are: " +
                              ", ".join(sorted(gens)))
        if out_dir is None:
            raise DriverError("missing -o DIR (the output directory)")
        kinds = [k for k in emit.split(",") if k]
        if not kinds:
            raise DriverError("-e names no kinds")
        g = gens[gen_name]()
        for k, v in params.items():
            g.set_param(k, v)
        fn_name = fn_name or gen_name
        g.emit(out_dir, file_base or fn_name, fn_name, kinds)
        return 0
    except (DriverError, _loom.Error) as e:
        err.write(f"loom.gen: error: {e}\n{USAGE}")
        return 1


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
