// Generators: params and their parsing, inputs and outputs, the registry, the
// driver's command line, and pipelines built from generators checked against
// the interpreter.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "loom/Generator.h"
#include "loom/loom.h"
#include "test_util.h"

using namespace loom;
using loom_test::buffers_match;
using loom_test::throws_with;

namespace {

enum class Shape { Box, Tent, Gauss };

class ParamZoo : public Generator {
  public:
    GeneratorParam<bool> flag{"flag", false};
    GeneratorParam<int> tile{"tile", 32, 1, 256};
    GeneratorParam<uint8_t> small{"small", 7};
    GeneratorParam<int64_t> big{"big", -5};
    GeneratorParam<float> alpha{"alpha", 0.25f};
    GeneratorParam<double> beta{"beta", 1e-3};
    GeneratorParam<std::string> label{"label", "hello"};
    GeneratorParam<Type> elem{"elem", Float(16)};
    GeneratorParam<Shape> shape{
        "shape",
        Shape::Tent,
        {{"box", Shape::Box}, {"tent", Shape::Tent}, {"gauss", Shape::Gauss}}};

    Input<Buffer<>> in{"in", elem, 1};
    Output<Buffer<>> out{"out", elem, 1};
    Var x{"x"};
    void generate() override { out(x) = in(x); }
};
LOOM_REGISTER_GENERATOR(ParamZoo, test_param_zoo)

// Scales and offsets a 2-D input: one buffer input, two scalar inputs, a
// typed output, and a schedule driven by params.
class ScaleOffset : public Generator {
  public:
    GeneratorParam<int> vec{"vec", 8};
    GeneratorParam<bool> par{"par", true};

    Input<Buffer<float>> input{"input", 2};
    Input<float> scale{"scale", 2.0f};
    Input<int32_t> offset{"offset", 0};
    Output<Buffer<float>> output{"output", 2};

    Var y{"y"}, x{"x"};
    void generate() override { output(y, x) = input(y, x) * scale + offset; }
    void schedule() override {
        sched[output].vectorize(x, vec);
        if (par) sched[output].parallel(y);
    }
};
LOOM_REGISTER_GENERATOR(ScaleOffset, test_scale_offset)

// Two outputs, an intermediate Func, a reduction and a rank from a param.
class TwoOutputs : public Generator {
  public:
    GeneratorParam<int> taps{"taps", 3, 1, 9};
    Input<Buffer<int32_t>> a{"a", 1};
    Input<Buffer<int32_t>> b{"b", 1};
    Output<Buffer<int32_t>> sum_out{"sum_out", 1};
    Output<Buffer<float>> mean_out{"mean_out", 1};

    Var x{"x"};
    Func both{"both"};
    void generate() override {
        RDom r(0, taps.value(), "r");
        both(x) = a(x) + b(x);
        sum_out(x) = sum(both(x + r));
        mean_out(x) = cast<float>(sum_out(x)) / static_cast<float>(taps.value());
    }
    void schedule() override { sched[both].compute_root(); }
};
LOOM_REGISTER_GENERATOR(TwoOutputs, test_two_outputs)

std::string run(const std::vector<std::string> &args, int *rc, std::string *err_text = nullptr) {
    std::vector<std::string> argv = {"test-gen"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::ostringstream out, err;
    *rc = run_generator(argv, out, err);
    if (err_text) *err_text = err.str();
    return out.str();
}

std::filesystem::path temp_dir(const std::string &name) {
    std::filesystem::path p = std::filesystem::temp_directory_path() /
                              ("loom_generator_test_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(p);
    return p;
}

}  // namespace

// ---------------------------------------------------------------------------
// Params

TEST(GeneratorParam, DefaultsAndListing) {
    ParamZoo g;
    EXPECT_EQ(g.params().size(), 10u);  // target + 9
    EXPECT_EQ(g.params()[0]->name(), "target");
    EXPECT_EQ(g.flag.value(), false);
    EXPECT_EQ(g.tile.value(), 32);
    EXPECT_EQ(g.elem.value(), Float(16));
    EXPECT_EQ(g.shape.value(), Shape::Tent);
    EXPECT_EQ(g.tile.type_name(), "int32");
    EXPECT_EQ(g.alpha.type_name(), "float32");
    EXPECT_EQ(g.elem.type_name(), "Type");
    EXPECT_EQ(g.shape.type_name(), "enum");
    EXPECT_EQ(g.alpha.default_string(), "0.25");
    EXPECT_EQ(g.beta.default_string(), "0.001");
    EXPECT_EQ(g.elem.default_string(), "float16");
    EXPECT_EQ(g.shape.default_string(), "tent");
    EXPECT_EQ(g.tile.range_string(), "[1, 256]");
    EXPECT_EQ(g.shape.valid_values(), (std::vector<std::string>{"box", "gauss", "tent"}));
    EXPECT_EQ(g.params()[0]->default_string(), "host");
}

TEST(GeneratorParam, ParsesEveryKind) {
    ParamZoo g;
    g.set_params({{"flag", "true"},
                  {"tile", "128"},
                  {"small", "255"},
                  {"big", "-9000000000"},
                  {"alpha", "-1.5e2"},
                  {"beta", "0.125"},
                  {"label", "a b=c"},
                  {"elem", "bfloat16"},
                  {"shape", "gauss"},
                  {"target", "x86-64-linux-avx2"}});
    EXPECT_TRUE(g.flag.value());
    EXPECT_EQ(g.tile.value(), 128);
    EXPECT_EQ(g.small.value(), 255);
    EXPECT_EQ(g.big.value(), -9000000000LL);
    EXPECT_EQ(g.alpha.value(), -150.0f);
    EXPECT_EQ(g.beta.value(), 0.125);
    EXPECT_EQ(g.label.value(), "a b=c");
    EXPECT_EQ(g.elem.value(), BFloat(16));
    EXPECT_EQ(g.shape.value(), Shape::Gauss);
    EXPECT_TRUE(g.get_target().has_feature(Target::AVX2));
    EXPECT_FALSE(g.get_target().has_feature(Target::AVX512));
    EXPECT_EQ(g.tile.value_string(), "128");
    EXPECT_EQ(g.shape.value_string(), "gauss");
    g.set_param("flag", "0");
    EXPECT_FALSE(g.flag.value());
    g.set_param("tile", "0x10");
    EXPECT_EQ(g.tile.value(), 16);
    // Numeric params read as Exprs (split factors) and as values.
    Expr e = g.tile;
    EXPECT_TRUE(e.defined());
    int twice = g.tile * 2;
    EXPECT_EQ(twice, 32);
}

TEST(GeneratorParam, BadValuesNameTheParamAndTheValidValues) {
    ParamZoo g;
    EXPECT_TRUE(throws_with<CompileError>([&] { g.set_param("flag", "yes"); },
                                          {"\"yes\"", "flag", "true, false"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { g.set_param("tile", "12abc"); },
                                          {"\"12abc\"", "tile", "integer"}));
    EXPECT_TRUE(
        throws_with<CompileError>([&] { g.set_param("tile", "1000"); }, {"tile", "[1, 256]"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { g.set_param("tile", "0"); }, {"tile", "[1, 256]"}));
    EXPECT_TRUE(
        throws_with<CompileError>([&] { g.set_param("small", "256"); }, {"small", "[0, 255]"}));
    EXPECT_TRUE(
        throws_with<CompileError>([&] { g.set_param("small", "-1"); }, {"small", "non-negative"}));
    EXPECT_TRUE(
        throws_with<CompileError>([&] { g.set_param("alpha", "fast"); }, {"alpha", "number"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { g.set_param("alpha", ""); }, {"alpha"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { g.set_param("elem", "float8"); },
                                          {"\"float8\"", "elem", "float16", "bfloat16"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { g.set_param("shape", "disk"); },
                                          {"\"disk\"", "shape", "box, gauss, tent"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { g.set_param("target", "arm-linux"); },
                                          {"target", "arm-linux"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { g.set_param("tiles", "4"); },
                                          {"no GeneratorParam named \"tiles\"", "tile", "target"}));
    // Nothing was changed by the failed attempts.
    EXPECT_EQ(g.tile.value(), 32);
    EXPECT_EQ(g.small.value(), 7);
    EXPECT_EQ(g.shape.value(), Shape::Tent);
}

TEST(GeneratorParam, FrozenOnceBuilt) {
    ScaleOffset g;
    g.build();
    EXPECT_TRUE(throws_with<CompileError>([&] { g.set_param("vec", "4"); },
                                          {"vec", "cannot be set after the generator was built"}));
    EXPECT_TRUE(
        throws_with<CompileError>([&] { g.vec.set(4); }, {"vec", "after the generator was built"}));
}

// ---------------------------------------------------------------------------
// Declarations and build-time checks

namespace {

class Untyped : public Generator {
  public:
    Input<Buffer<float>> in{"in", 1};
    Output<Buffer<>> out{"out", 1};
    Var x{"x"};
    void generate() override { out(x) = cast<int16_t>(in(x)); }
};

class WrongType : public Generator {
  public:
    Input<Buffer<float>> in{"in", 1};
    Output<Buffer<int32_t>> out{"out", 1};
    Var x{"x"};
    void generate() override { out(x) = in(x); }
};

class WrongRank : public Generator {
  public:
    Input<Buffer<float>> in{"in", 2};
    Output<Buffer<float>> out{"out", 2};
    Var x{"x"};
    void generate() override { out(x) = in(0, x); }
};

class Undefined : public Generator {
  public:
    Input<Buffer<float>> in{"in", 1};
    Output<Buffer<float>> out{"out", 1};
    Output<Buffer<float>> forgotten{"forgotten", 1};
    Var x{"x"};
    void generate() override { out(x) = in(x); }
};

class UnusedInput : public Generator {
  public:
    Input<Buffer<float>> in{"in", 1};
    Input<float> bias{"bias"};
    Output<Buffer<float>> out{"out", 1};
    Var x{"x"};
    void generate() override { out(x) = in(x); }
};

class StrayParam : public Generator {
  public:
    Input<Buffer<float>> in{"in", 1};
    Output<Buffer<float>> out{"out", 1};
    Var x{"x"};
    void generate() override {
        Param<float> k("k", 1.0f);
        out(x) = in(x)*k;
    }
};

class RankFromParam : public Generator {
  public:
    GeneratorParam<int> rank{"rank", 2, 1, 4};
    GeneratorParam<Type> elem{"elem", Int(32)};
    Input<Buffer<>> in{"in", elem, rank};
    Output<Buffer<>> out{"out", elem, rank};
    void generate() override {
        std::vector<Var> vars;
        for (int i = 0; i < rank; i++) vars.push_back(Var("v" + std::to_string(i)));
        std::vector<Expr> args(vars.begin(), vars.end());
        out(args) = in(args) + cast(elem, 1);
    }
};

// An algorithm written as plain Funcs over a BufferParam, outside any
// generator, as apps/ does; the generator binds its Input and Output to it.
struct PlainAlgorithm {
    Var y{"y"}, x{"x"};
    Func doubled{"doubled"}, result{"result"};
    explicit PlainAlgorithm(const BufferParam &in) {
        doubled(y, x) = in(y, x) * 2.0f;
        result(y, x) = doubled(y, x) + doubled(y, x + 1);
    }
};

class BindsAFunc : public Generator {
  public:
    Input<Buffer<float>> in{"in", 2};
    Output<Buffer<float>> result{"result", 2};
    std::unique_ptr<PlainAlgorithm> algo;
    void generate() override {
        algo = std::make_unique<PlainAlgorithm>(in.param());
        result = algo->result;
    }
    void schedule() override { sched[algo->doubled].compute_root(); }
};

class NoOutputs : public Generator {
  public:
    void generate() override {}
};

}  // namespace

TEST(Generator, DynamicTypesAndRanks) {
    RankFromParam g;
    g.set_params({{"rank", "3"}, {"elem", "uint8"}});
    std::vector<GeneratorArgument> args = g.arguments();
    ASSERT_EQ(args.size(), 2u);
    EXPECT_EQ(args[0].name, "in");
    EXPECT_EQ(args[0].type, UInt(8));
    EXPECT_EQ(args[0].dimensions, 3);
    EXPECT_EQ(args[1].name, "out");
    EXPECT_EQ(args[1].kind, Argument::OutputBuffer);
    EXPECT_EQ(args[1].type, UInt(8));
    EXPECT_EQ(args[1].dimensions, 3);

    CompiledPipeline k = g.compile();
    Buffer<uint8_t> in({2, 3, 4}), out({2, 3, 4});
    in.fill([](const std::vector<int> &c) {
        return static_cast<uint8_t>(c[0] * 12 + c[1] * 4 + c[2]);
    });
    k(in, out);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int l = 0; l < 4; l++) EXPECT_EQ(out(i, j, l), in(i, j, l) + 1);
}

TEST(Generator, UntypedOutputTakesTheDefinedType) {
    Untyped g;
    EXPECT_EQ(g.arguments()[1].type, Int(16));
}

TEST(Generator, OutputBoundToAnExistingFunc) {
    BindsAFunc g;
    CompiledPipeline k = g.compile();
    ASSERT_EQ(k.arguments().size(), 2u);
    EXPECT_EQ(k.arguments()[1].name, "result");
    EXPECT_EQ(g.arguments()[1].name, "result");
    Buffer<float> in = loom_test::random_buffer<float>({5, 9}), out({5, 8});
    k(in, out);
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 8; x++)
            EXPECT_FLOAT_EQ(out(y, x), in(y, x) * 2.0f + in(y, x + 1) * 2.0f);
}

TEST(Generator, BuildTimeErrors) {
    {
        WrongType g;
        EXPECT_TRUE(throws_with<CompileError>([&] { g.build(); },
                                              {"Output out", "declared as int32", "float32"}));
        EXPECT_TRUE(throws_with<CompileError>([&] { g.build(); }, {"failed to build"}));
    }
    {
        WrongRank g;
        EXPECT_TRUE(throws_with<CompileError>([&] { g.build(); },
                                              {"Output out", "2 dimensions", "with 1"}));
    }
    {
        Undefined g;
        EXPECT_TRUE(throws_with<CompileError>([&] { g.build(); },
                                              {"Output forgotten", "not defined by generate()"}));
    }
    {
        UnusedInput g;
        EXPECT_TRUE(throws_with<CompileError>([&] { g.build(); },
                                              {"Input bias", "not read by any Output"}));
    }
    {
        StrayParam g;
        EXPECT_TRUE(throws_with<CompileError>([&] { g.build(); },
                                              {"parameter k", "not one of its Inputs"}));
    }
    {
        struct MisnamedBinding : Generator {
            Input<Buffer<float>> in{"in", 2};
            Output<Buffer<float>> out{"out", 2};
            std::unique_ptr<PlainAlgorithm> algo;
            void generate() override {
                algo = std::make_unique<PlainAlgorithm>(in.param());
                out = algo->result;
            }
        };
        MisnamedBinding g;
        EXPECT_TRUE(throws_with<CompileError>(
            [&] { g.build(); }, {"Output out", "bound to the Func result", "Name the Output"}));
    }
    {
        NoOutputs g;
        EXPECT_TRUE(throws_with<CompileError>([&] { g.build(); }, {"declares no Output"}));
    }
}

TEST(Generator, DeclarationErrors) {
    struct DupParam : Generator {
        GeneratorParam<int> a{"a", 1};
        GeneratorParam<int> a2{"a", 2};
        void generate() override {}
    };
    EXPECT_TRUE(throws_with<CompileError>([] { DupParam g; }, {"two GeneratorParams named a"}));
    struct TargetParam : Generator {
        GeneratorParam<std::string> t{"target", "x"};
        void generate() override {}
    };
    EXPECT_TRUE(throws_with<CompileError>([] { TargetParam g; },
                                          {"named target", "declared by loom::Generator"}));
    struct DupInput : Generator {
        Input<Buffer<float>> in{"x", 1};
        Output<Buffer<float>> out{"x", 1};
        void generate() override {}
    };
    EXPECT_TRUE(throws_with<CompileError>([] { DupInput g; }, {"two Inputs/Outputs named x"}));
    struct BadName : Generator {
        Input<Buffer<float>> in{"my-input", 1};
        void generate() override {}
    };
    EXPECT_TRUE(throws_with<CompileError>([] { BadName g; }, {"\"my-input\"", "C identifier"}));
    struct BadEnumDefault : Generator {
        GeneratorParam<Shape> s{"s", Shape::Gauss, {{"box", Shape::Box}}};
        void generate() override {}
    };
    EXPECT_TRUE(throws_with<CompileError>([] { BadEnumDefault g; }, {"s", "not one of its"}));
    struct BadRangeDefault : Generator {
        GeneratorParam<int> n{"n", 0, 1, 8};
        void generate() override {}
    };
    EXPECT_TRUE(throws_with<CompileError>([] { BadRangeDefault g; }, {"n", "[1, 8]"}));
}

TEST(Generator, InputUsedBeforeBuild) {
    ScaleOffset g;
    EXPECT_TRUE(throws_with<CompileError>([&] { Expr e = g.input(0, 0); },
                                          {"Input input", "before the generator was built"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { Expr e = g.scale; }, {"Input scale"}));
}

// ---------------------------------------------------------------------------
// Running generated pipelines

TEST(Generator, JITMatchesInterpreter) {
    ScaleOffset g;
    g.set_params({{"vec", "4"}, {"par", "false"}});
    CompiledPipeline k = g.compile();

    // The function takes the inputs in declaration order, then the outputs.
    std::vector<GeneratorArgument> declared = g.arguments();
    const std::vector<Argument> &actual = k.arguments();
    ASSERT_EQ(declared.size(), actual.size());
    for (size_t i = 0; i < declared.size(); i++) {
        EXPECT_EQ(declared[i].name, actual[i].name);
        EXPECT_EQ(declared[i].kind, actual[i].kind);
        EXPECT_EQ(declared[i].type, actual[i].type);
        EXPECT_EQ(declared[i].dimensions, actual[i].dimensions);
    }
    EXPECT_EQ(actual[0].name, "input");
    EXPECT_EQ(actual[1].name, "scale");
    EXPECT_EQ(actual[2].name, "offset");
    EXPECT_EQ(actual[3].name, "output");

    Buffer<float> in = loom_test::random_buffer<float>({13, 37});
    Buffer<float> out({13, 37});
    k(in, 3.0f, int32_t(-2), out);

    g.input.param().set(in);
    g.scale.set(3.0f);
    g.offset.set(-2);
    RawBuffer expected = interpret(g.output, {13, 37});
    // Float code may contract a * b + c into a fused multiply-add (unless
    // the target has strict_float), so allow an ulp or so.
    EXPECT_TRUE(buffers_match(out, expected, 1e-6, 1e-6));
}

TEST(Generator, MultipleOutputsAndIntermediates) {
    std::unique_ptr<Generator> g = GeneratorRegistry::create("test_two_outputs");
    g->set_param("taps", "4");
    CompiledPipeline k = g->compile();
    ASSERT_EQ(k.arguments().size(), 4u);
    EXPECT_EQ(k.arguments()[2].name, "sum_out");
    EXPECT_EQ(k.arguments()[3].name, "mean_out");
    Buffer<int32_t> a({20}), b({20}), s({17});
    Buffer<float> m({17});
    a.fill([](const std::vector<int> &c) { return c[0]; });
    b.fill([](const std::vector<int> &c) { return 100 * c[0]; });
    k(a, b, s, m);
    for (int x = 0; x < 17; x++) {
        int expect = 0;
        for (int r = 0; r < 4; r++) expect += 101 * (x + r);
        EXPECT_EQ(s(x), expect);
        EXPECT_FLOAT_EQ(m(x), expect / 4.0f);
    }
}

TEST(Generator, EmitWritesFiles) {
    ScaleOffset g;
    std::filesystem::path dir = temp_dir("emit");
    g.emit(dir.string(), "scale_offset", "scale_offset_fn", {"stmt", "h", "llvm_ir"});
    EXPECT_TRUE(std::filesystem::exists(dir / "scale_offset.stmt"));
    EXPECT_TRUE(std::filesystem::exists(dir / "scale_offset.h"));
    EXPECT_TRUE(std::filesystem::exists(dir / "scale_offset.ll"));
    EXPECT_FALSE(std::filesystem::exists(dir / "scale_offset.a"));
    std::ifstream h(dir / "scale_offset.h");
    std::string header((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
    EXPECT_NE(header.find("scale_offset_fn("), std::string::npos) << header;
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { g.emit(dir.string(), "x", "x", {"pdf"}); },
        {"Unknown emit kind \"pdf\"", "static_library, h, object, assembly, llvm_ir, stmt"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { g.emit(dir.string(), "x", "1x", {"stmt"}); },
                                          {"\"1x\"", "not a C identifier"}));
    std::filesystem::remove_all(dir);
}

// A GPU schedule of the same computation.
class GpuScaleOffset : public ScaleOffset {
  public:
    Var xo{"xo"}, yo{"yo"}, xi{"xi"}, yi{"yi"};
    void schedule() override { sched[output].gpu_tile(y, x, yo, xo, yi, xi, 8, 32); }
};

TEST(Generator, EmitsCudaKernels) {
    GpuScaleOffset g;
    g.set_param("target", "host-cuda-sm_80");
    std::filesystem::path dir = temp_dir("emit_cuda");
    g.emit(dir.string(), "scale_offset", "scale_offset_fn", {"cuda"});
    for (const char *suffix : {".cu", ".ptx", ".cubin"}) {
        EXPECT_TRUE(std::filesystem::exists(dir / (std::string("scale_offset") + suffix)))
            << suffix;
    }
    std::ifstream ptx(dir / "scale_offset.ptx");
    std::string text((std::istreambuf_iterator<char>(ptx)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find(".target sm_80"), std::string::npos) << text;
    EXPECT_NE(text.find(".entry "), std::string::npos) << text;
    std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------
// Registry and driver

TEST(GeneratorRegistry, NamesAndCreate) {
    std::vector<std::string> names = GeneratorRegistry::names();
    for (const char *n : {"test_param_zoo", "test_scale_offset", "test_two_outputs"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    }
    std::unique_ptr<Generator> g = GeneratorRegistry::create("test_scale_offset");
    EXPECT_EQ(g->registered_name(), "test_scale_offset");
    EXPECT_TRUE(throws_with<CompileError>([] { GeneratorRegistry::create("nope"); },
                                          {"no generator named \"nope\"", "test_param_zoo"}));
}

TEST(GeneratorDriver, List) {
    int rc = -1;
    std::string out = run({"--list"}, &rc);
    EXPECT_EQ(rc, 0);
    EXPECT_NE(out.find("test_param_zoo\n"), std::string::npos) << out;
    EXPECT_NE(out.find("test_scale_offset\n"), std::string::npos) << out;
    EXPECT_NE(out.find("tile    int32 = 32  (in [1, 256])"), std::string::npos) << out;
    EXPECT_NE(out.find("shape   enum = tent  (one of: box, gauss, tent)"), std::string::npos)
        << out;
    EXPECT_NE(out.find("elem    Type = float16"), std::string::npos) << out;
    EXPECT_NE(out.find("target  Target = host"), std::string::npos) << out;
    EXPECT_NE(out.find("input  in      buffer of float16 (from param elem), dimensions 1"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("input  scale   float32"), std::string::npos) << out;

    out = run({"--list", "-g", "test_scale_offset"}, &rc);
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(out.find("test_param_zoo"), std::string::npos) << out;
    EXPECT_NE(out.find("param  vec     int32 = 8"), std::string::npos) << out;
}

TEST(GeneratorDriver, EmitsWithParams) {
    std::filesystem::path dir = temp_dir("driver");
    int rc = -1;
    std::string err;
    run({"-g", "test_param_zoo", "-o", dir.string(), "-e", "stmt,h", "-f", "zoo", "elem=int32",
         "shape=box", "target=host-avx2"},
        &rc, &err);
    EXPECT_EQ(rc, 0) << err;
    EXPECT_TRUE(std::filesystem::exists(dir / "zoo.stmt"));
    EXPECT_TRUE(std::filesystem::exists(dir / "zoo.h"));
    run({"-g", "test_param_zoo", "-o", dir.string(), "-e", "stmt", "-f", "zoo", "-n", "other"}, &rc,
        &err);
    EXPECT_EQ(rc, 0) << err;
    EXPECT_TRUE(std::filesystem::exists(dir / "other.stmt"));
    std::filesystem::remove_all(dir);
}

TEST(GeneratorDriver, Errors) {
    struct Case {
        std::vector<std::string> args;
        int rc;
        std::vector<std::string> message;
    };
    std::string dir = temp_dir("errors").string();
    std::vector<Case> cases = {
        {{"-g", "nope", "-o", dir}, 1, {"no generator named \"nope\"", "test_scale_offset"}},
        {{"-g", "test_scale_offset", "-o", dir, "vecc=4"}, 1, {"no GeneratorParam named \"vecc\""}},
        {{"-g", "test_scale_offset", "-o", dir, "vec=four"}, 1, {"\"four\"", "vec", "integer"}},
        {{"-g", "test_scale_offset", "-o", dir, "par=maybe"}, 1, {"par", "true, false"}},
        {{"-g", "test_scale_offset", "-o", dir, "-e", "stmt,pdf"},
         1,
         {"Unknown emit kind \"pdf\""}},
        {{"-g", "test_scale_offset"}, 2, {"missing -o", "Usage:"}},
        {{"-g", "test_scale_offset", "-o"}, 2, {"option -o needs a value"}},
        {{"-o", dir}, 2, {"missing -g NAME", "test_scale_offset"}},
        {{"-g", "test_scale_offset", "-o", dir, "--frobnicate"},
         2,
         {"unknown argument \"--frobnicate\""}},
        {{"-g", "test_scale_offset", "-o", dir, "target=mips"}, 1, {"target", "mips"}},
        {{"-g", "test_scale_offset", "-o", dir, "-f", "a-b"}, 1, {"\"a-b\"", "C identifier"}},
    };
    for (const Case &c : cases) {
        int rc = -1;
        std::string err;
        run(c.args, &rc, &err);
        std::string cmd;
        for (const std::string &a : c.args) cmd += " " + a;
        EXPECT_EQ(rc, c.rc) << cmd << "\n" << err;
        EXPECT_NE(err.find("test-gen: error: "), std::string::npos) << cmd << "\n" << err;
        for (const std::string &m : c.message) {
            EXPECT_NE(err.find(m), std::string::npos) << cmd << ": lacks \"" << m << "\"\n" << err;
        }
    }
    EXPECT_FALSE(std::filesystem::exists(dir));

    int rc = -1;
    std::string out = run({"--help"}, &rc);
    EXPECT_EQ(rc, 0);
    EXPECT_NE(out.find("Usage: test-gen -g NAME -o DIR"), std::string::npos) << out;
}
