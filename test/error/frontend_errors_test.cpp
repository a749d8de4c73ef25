// Front-end mistakes: each raises a CompileError (or, for buffers and bound
// values, a RuntimeError) whose message names the culprit.
#include <gtest/gtest.h>

#include "test_util.h"

using namespace loom;
using loom_test::random_buffer;
using loom_test::throws_with;

TEST(FrontendErrors, PureDefinitionArgsMustBeDistinctVars) {
    Var x("x"), y("y");
    Func f("f"), g("g"), h("h");
    EXPECT_TRUE(throws_with<CompileError>([&] { f(x, x) = 0; }, {"Func f", "Var x", "twice"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { g(x + 1) = 0; }, {"Func g", "not a Var"}));
    RDom r(0, 3, "r");
    EXPECT_TRUE(throws_with<CompileError>([&] { h(r) = 0; }, {"Func h", "RVar r"}));
    Param<int> p("p");
    Func k("k");
    EXPECT_TRUE(throws_with<CompileError>([&] { k(p) = 0; }, {"Func k", "p"}));
}

TEST(FrontendErrors, UndefinedVarInPureDefinition) {
    Var x("x"), y("y");
    Func f("f");
    EXPECT_TRUE(throws_with<CompileError>([&] { f(x) = x + y; }, {"Var y", "Func f"}));
}

TEST(FrontendErrors, RVarInPureDefinition) {
    Var x("x");
    RDom r(0, 3, "r");
    Func f("f");
    EXPECT_TRUE(throws_with<CompileError>([&] { f(x) = x + r; }, {"Func f", "RVar r"}));
}

TEST(FrontendErrors, PureDefinitionTwice) {
    Var x("x");
    Func f("f");
    f(x) = x;
    EXPECT_TRUE(throws_with<CompileError>([&] { f(x) = x + 1; }, {"Func f is already defined"}));
    // Reading f itself makes it an update, which is fine.
    EXPECT_NO_THROW(f(x) = f(x) + 1);
}

TEST(FrontendErrors, UpdateUsesPureVarInWrongPosition) {
    Var x("x"), y("y");
    Func f("f");
    f(x, y) = x + y;
    EXPECT_TRUE(throws_with<CompileError>([&] { f(y, x) = f(y, x) + 1; }, {"Func f", "Var y"}));
    Func g("g");
    g(x, y) = 0;
    // y appears in the value but not as itself on the left.
    EXPECT_TRUE(throws_with<CompileError>([&] { g(x, 0) = g(x, 0) + y; }, {"Func g", "Var y"}));
    Var z("z");
    EXPECT_TRUE(throws_with<CompileError>([&] { g(x, 1) = z; }, {"Func g", "Var z"}));
}

TEST(FrontendErrors, SelfCallWithDifferentPureVar) {
    Var x("x");
    Func f("f");
    f(x) = x;
    EXPECT_TRUE(throws_with<CompileError>([&] { f(x) = f(x + 1); }, {"Func f", "Var x"}));
}

TEST(FrontendErrors, RVarsFromTwoRDoms) {
    Var x("x");
    RDom r(0, 3, "r"), s(0, 4, "s");
    Func f("f");
    f(x) = 0;
    EXPECT_TRUE(throws_with<CompileError>([&] { f(r) = f(r) + s; }, {"Func f", "r", "s"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { (void)sum(r + s, "mysum"); }, {"mysum", "r", "s"}));
}

TEST(FrontendErrors, UpdateTypeMismatch) {
    Var x("x");
    RDom r(0, 3, "r");
    Func f("f");
    f(x) = 0.0f;
    EXPECT_TRUE(throws_with<CompileError>([&] { f(r) = cast<int>(r); },
                                          {"type mismatch in update of f", "int32", "float32"}));
    Func g("g");
    g(x) = cast<uint8_t>(x);
    // A literal that does not fit is refused too.
    EXPECT_TRUE(throws_with<CompileError>([&] { g(r) = 300; }, {"type mismatch in update of g"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { g(r) = 0.5f; }, {"type mismatch in update of g"}));
}

TEST(FrontendErrors, TupleSizeMismatch) {
    Var x("x");
    RDom r(0, 3, "r");
    Func f("f");
    f(x) = Tuple(x, x);
    EXPECT_TRUE(throws_with<CompileError>([&] { f(r) = Tuple(r, r, r); }, {"Func f", "2", "3"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { f(r) = r; }, {"Func f"}));
    Func g("g");
    EXPECT_TRUE(throws_with<CompileError>([&] { g(x) = f(x) + 1; }, {"Func f", "Tuple"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { (void)f(x)[2]; }, {"Func f", "2"}));
}

TEST(FrontendErrors, WrongNumberOfArguments) {
    Var x("x"), y("y");
    Func f("f"), g("g");
    f(x, y) = x + y;
    EXPECT_TRUE(throws_with<CompileError>([&] { g(x) = f(x); }, {"Func f", "2", "1"}));
    RDom r(0, 3, "r");
    EXPECT_TRUE(throws_with<CompileError>([&] { f(r) = 1; }, {"Func f", "2"}));
    BufferParam in(Float(32), 2, "in");
    EXPECT_TRUE(throws_with<CompileError>([&] { (void)in(x); }, {"in", "2", "1"}));
}

TEST(FrontendErrors, FloatCoordinates) {
    Var x("x");
    Func f("f"), g("g");
    f(x) = x;
    BufferParam in(Float(32), 1, "in");
    EXPECT_TRUE(
        throws_with<CompileError>([&] { g(x) = f(cast<float>(x)); }, {"Func f", "float32"}));
    EXPECT_TRUE(
        throws_with<CompileError>([&] { (void)in(cast<float>(x) * 0.5f); }, {"in", "float32"}));
}

TEST(FrontendErrors, UseBeforeDefinition) {
    Var x("x");
    Func f("f"), g("g");
    EXPECT_TRUE(throws_with<CompileError>([&] { f(x) = g(x) + 1; },
                                          {"Func g is used before it is defined"}));
    // A pure definition cannot refer to itself either.
    EXPECT_TRUE(throws_with<CompileError>([&] { f(x) = f(x - 1); },
                                          {"Func f is used before it is defined"}));
}

TEST(FrontendErrors, InlineReductionWithoutRVar) {
    Var x("x");
    Func f("f");
    EXPECT_TRUE(throws_with<CompileError>([&] { f(x) = sum(x * 2, "total"); }, {"total", "RVar"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { (void)argmax(x, "best"); }, {"best", "RVar"}));
}

TEST(FrontendErrors, RDomBounds) {
    EXPECT_TRUE(throws_with<CompileError>([&] { RDom r(0.5f, 3, "r"); }, {"RDom r", "float32"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { RDom r(0, 2.0, "q"); }, {"RDom q", "float64"}));
    RDom r({{0, 3}, {0, 3}}, "r2");
    EXPECT_TRUE(throws_with<CompileError>([&] { (void)r[2]; }, {"RDom r2", "2"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { Expr e = r; }, {"RDom r2", "dimensions"}));
}

TEST(FrontendErrors, RDomBoundsDependOnPureVar) {
    Var x("x");
    RDom r(0, x, "r");
    Func f("f");
    f(x) = 0;
    EXPECT_TRUE(throws_with<CompileError>([&] { f(x) = f(x) + r; }, {"RDom r", "x"}));
}

TEST(FrontendErrors, WhereAfterUse) {
    Var x("x");
    RDom r(0, 10, "r");
    Func f("f");
    f(x) = 0;
    f(r) = f(r) + 1;
    EXPECT_TRUE(throws_with<CompileError>([&] { r.where(r > 2); }, {"RDom r", "where()"}));
    RDom s(0, 10, "s");
    EXPECT_TRUE(throws_with<CompileError>([&] { s.where(s + 1); }, {"RDom s", "bool"}));
}

TEST(FrontendErrors, BufferParamMistakes) {
    EXPECT_TRUE(throws_with<CompileError>([&] { BufferParam b(Float(32), -1, "neg"); }, {"neg"}));
    BufferParam in(Float(32), 2, "in");
    EXPECT_TRUE(throws_with<CompileError>([&] { (void)in.dim(2); }, {"in", "dim(2)"}));
    Buffer<int> wrong_type({3, 3});
    EXPECT_TRUE(throws_with<RuntimeError>([&] { in.set(wrong_type); }, {"in", "int32", "float32"}));
    Buffer<float> wrong_dims({3});
    EXPECT_TRUE(throws_with<RuntimeError>([&] { in.set(wrong_dims); }, {"in", "dimensions"}));
}

TEST(FrontendErrors, BufferMistakes) {
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            Buffer<float> b({-1, 3}, "negbuf");
        },
        {"negbuf", "negative"}));
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            Buffer<uint8_t> b({65536, 65536}, "huge");
        },
        {"huge", "32-bit"}));
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            RawBuffer::wrap(Float(32), nullptr, {1 << 20, 1 << 12}, {1 << 12, 1}, "wide");
        },
        {"wide", "32-bit"}));
    Buffer<float> b({4, 5}, "b");
    EXPECT_TRUE(
        throws_with<RuntimeError>([&] { (void)b.cropped(1, 3, 4); }, {"Buffer b", "cropped"}));
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            (void)b.transposed({0, 0});
        },
        {"Buffer b", "permutation"}));
    EXPECT_TRUE(throws_with<RuntimeError>([&] { b.set_min({1}); }, {"Buffer b"}));
    EXPECT_TRUE(throws_with<RuntimeError>([&] { (void)b.extent(2); }, {"Buffer b"}));
    EXPECT_TRUE(throws_with<RuntimeError>([&] { Buffer<int> w(b); }, {"int32", "float32"}));
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            (void)Buffer<int>::wrap(nullptr, {2}, {1, 1}, "ws");
        },
        {"ws", "strides"}));
}

TEST(FrontendErrors, IndicesLoadedFromBuffersNeedBounds) {
    // An index loaded from a buffer has no bound the compiler can see: each
    // kind of access through one is refused with the buffer or Func and the
    // clamp that fixes it, at compile time.
    BufferParam in(Int(32), 1, "idx");
    Var x("x");
    RDom r(0, 10, "r");
    auto lowering = [](const Func &f, const Schedule &s) {
        return [f, s] { (void)Pipeline(f).compile_to_lowered_stmt(s); };
    };
    Func direct("direct");
    direct(x) = in(in(x));
    EXPECT_TRUE(throws_with<CompileError>(
        lowering(direct, Schedule()),
        {"Input buffer idx is read", "dimension 0", "idx(clamp(i, 0, n - 1))"}));
    Func hist("hist");
    hist(x) = 0;
    hist(in(r)) += 1;
    EXPECT_TRUE(throws_with<CompileError>(
        lowering(hist, Schedule()),
        {"Output buffer hist is written", "dimension 0", "hist(clamp(i, 0, n - 1))"}));
    Func chase("chase");
    chase(x) = Tuple(x, 0);
    chase(r) = Tuple(chase(in(r))[0], chase(r)[1] + 1);
    EXPECT_TRUE(throws_with<CompileError>(lowering(chase, Schedule()),
                                          {"Output buffer chase.0 is read", "dimension 0"}));
    Func counts("counts"), use("use");
    counts(x) = 0;
    counts(in(r)) += 1;
    use(x) = counts(x);
    EXPECT_TRUE(throws_with<CompileError>(
        lowering(use, Schedule()),
        {"region of counts", "updates", "no lower bound", "counts(clamp(i, 0, n - 1))"}));
    Func table("table"), lookup("lookup");
    table(x) = x * 2;
    lookup(x) = table(in(x));
    Schedule rooted;
    rooted[table].compute_root();
    EXPECT_TRUE(throws_with<CompileError>(lowering(lookup, rooted),
                                          {"region of table", "reads", "dimension 0"}));
}

TEST(FrontendErrors, InterpreterOutOfBoundsRead) {
    BufferParam in(Float(32), 2, "in");
    in.set(random_buffer<float>({4, 6}));
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = in(y, x + 1);
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            interpret(f, {4, 6});
        },
        {"Buffer in", "(0, 6)", "6", "dimension 1", "[0, 5]"}));
}

TEST(FrontendErrors, InterpreterUnboundInputs) {
    BufferParam in(Float(32), 1, "unbound_in");
    Param<float> scale("unbound_scale");
    Var x("x");
    Func f("f"), g("g");
    f(x) = in(x);
    g(x) = cast<float>(x) * scale;
    EXPECT_TRUE(throws_with<RuntimeError>([&] { interpret(f, {4}); }, {"unbound_in"}));
    EXPECT_TRUE(throws_with<RuntimeError>([&] { interpret(g, {4}); }, {"unbound_scale"}));
}

TEST(FrontendErrors, InterpreterArgumentMistakes) {
    Var x("x");
    Func f("f"), u("u");
    f(x) = x;
    EXPECT_TRUE(throws_with<RuntimeError>([&] { interpret(f, {4, 4}); }, {"Func f", "dimensions"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { interpret(u, {4}); }, {"Func u", "not defined"}));
    Buffer<float> wrong({4});
    EXPECT_TRUE(throws_with<RuntimeError>([&] { interpret_into({f}, {wrong}); },
                                          {"Func f", "float32", "int32"}));
}

TEST(FrontendErrors, BufferOfAnotherExtentThanFixed) {
    BufferParam in(Float(32), 2, "in");
    in.dim(1).set_extent(8);
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = in(y, x) + 1.0f;
    CompiledPipeline compiled = Pipeline(f).compile(Schedule());
    Buffer<float> wide({3, 9}), out({3, 9});
    in.set(wide);
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { compiled.realize({out}); },
        {"Input buffer in", "extent 9", "dimension 1", "exactly 8", "in.dim(1).set_extent(8)"}));
    EXPECT_TRUE(
        throws_with<CompileError>([&] { in.dim(0).set_extent(-1); }, {"in.dim(0)", "negative"}));
}

TEST(FrontendErrors, BrokenBufferPromises) {
    BufferParam in(Float(32), 2, "in");
    in.set_host_alignment(16);
    in.dim(0).set_stride_multiple(4);
    in.dim(1).set_min(0);
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = in(y, x) * 2.0f;
    f.output_buffer().dim(1).set_extent(7);
    Schedule sch;
    sch[f].vectorize(x, 4);
    CompiledPipeline compiled = Pipeline(f).compile(sch);
    Buffer<float> padded({3, 8}), out({3, 7});
    // Kept: rows of 7 in rows of 8, from column 0 of 64-byte aligned memory.
    in.set(padded.cropped(1, 0, 7));
    compiled.realize({out});
    // A view one column in starts 4 bytes past the promised 16 (its min
    // set back to 0 so that only the address is wrong).
    RawBuffer shifted = Buffer<float>({3, 12}).cropped(1, 1, 7);
    shifted.set_min({0, 0});
    in.set(shifted);
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { compiled.realize({out}); },
        {"Input buffer in starts on the host at an address 4 bytes past a multiple of 16",
         "in.set_host_alignment(16)"}));
    in.set(Buffer<float>({3, 7}));
    EXPECT_TRUE(
        throws_with<RuntimeError>([&] { compiled.realize({out}); },
                                  {"Input buffer in has stride 7 in dimension 0",
                                   "not a multiple of 4", "in.dim(0).set_stride_multiple(4)"}));
    RawBuffer from_two = padded.cropped(1, 0, 7);
    from_two.set_min({0, 2});
    in.set(from_two);
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { compiled.realize({out}); },
        {"Input buffer in has min 2 in dimension 1", "exactly 0", "in.dim(1).set_min(0)"}));
    in.set(padded.cropped(1, 0, 7));
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            compiled.realize({Buffer<float>({3, 6})});
        },
        {"Output buffer f has extent 6 in dimension 1", "exactly 7",
         "f.output_buffer().dim(1).set_extent(7)"}));
}

TEST(FrontendErrors, BufferPromiseMistakes) {
    BufferParam in(Float(32), 2, "in");
    EXPECT_TRUE(throws_with<CompileError>([&] { in.set_host_alignment(12); },
                                          {"in.set_host_alignment(12)", "power of two"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { in.dim(0).set_stride_multiple(0); },
                                          {"in.dim(0).set_stride_multiple(0)", "positive"}));
    Func f("f"), pair("pair");
    Var x("x");
    EXPECT_TRUE(throws_with<CompileError>([&] { (void)f.output_buffer(); },
                                          {"Func f", "no definition", "output_buffer()"}));
    f(x) = in(0, x);
    EXPECT_TRUE(throws_with<CompileError>([&] { (void)f.output_buffer(1); },
                                          {"Func f has 1 output", "output_buffer(1)"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { (void)f.output_buffer().dim(1); },
                                          {"Output buffer f", "1 dimensions", "dim(1)"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { (void)f.output_buffer().dim(0).extent(); },
        {"Output buffer f.dim(0).extent()", "cannot be read in the algorithm"}));
    EXPECT_TRUE(
        throws_with<CompileError>([&] { f.output_buffer().set_host_alignment(3); },
                                  {"Output buffer f.set_host_alignment(3)", "power of two"}));
    pair(x) = Tuple(in(0, x), in(1, x));
    EXPECT_EQ(pair.output_buffer(1).name(), "pair.1");
}

TEST(FrontendErrors, OutputsThatOverlapAnInputOrEachOther) {
    // A pipeline reads its inputs while it writes its outputs: passing one
    // memory as both is refused, naming the two buffers and the reason,
    // unless the output can be computed in place (CorrectnessInPlace).
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x"), xo("xo"), xi("xi");
    Buffer<float> data = random_buffer<float>({6, 40});
    in.set(data);
    auto refused = [&](const Func &f, const Schedule &s, const std::vector<RawBuffer> &outs,
                       const std::vector<std::string> &words) {
        return throws_with<RuntimeError>([&] { Pipeline(f).realize(outs, s); }, words);
    };
    const std::string share = "Buffers in (input) and ";

    Func blur("blur");
    blur(y, x) = in(y, max(x - 1, 0)) + in(y, x);
    EXPECT_TRUE(refused(
        blur, Schedule(), {data},
        {share + "blur (output) share memory on the host", "cannot compute blur in place over in",
         "blur reads in elsewhere than at the element of blur being written",
         "Pass an output buffer of its own"}));
    // Any overlap counts: here a view of the input's last column.
    EXPECT_TRUE(refused(blur, Schedule(), {data.cropped(1, 39, 1)}, {share + "blur (output)"}));

    Func scaled("scaled");
    scaled(y, x) = in(y, x) * 2.0f;
    // Pointwise, but computed over memory shifted by a column: the element
    // at (y, x) would be read after (y, x - 1) was written over it.
    RawBuffer shifted = data.cropped(1, 1, 39);
    shifted.set_min({0, 0});
    EXPECT_TRUE(refused(scaled, Schedule(), {shifted},
                        {share + "scaled (output) share memory on the host, but not element for "
                                 "element",
                         "the same strides", "Pass the same buffer for both"}));
    Schedule shift_inwards;
    shift_inwards[scaled].split(x, xo, xi, 16, TailStrategy::ShiftInwards);
    EXPECT_TRUE(refused(scaled, shift_inwards, {data},
                        {"a ShiftInwards split of scaled computes some of its points twice"}));

    Func reread("reread");
    RDom r(0, 40, "r");
    reread(y, x) = in(y, x);
    reread(y, r) += in(y, r);
    EXPECT_TRUE(refused(reread, Schedule(), {data},
                        {"reread reads in elsewhere than at the element of reread"}));

    Func narrow("narrow");
    narrow(y, x) = cast<int16_t>(in(y, x));
    RawBuffer same_bytes = RawBuffer::wrap(Int(16), data.raw_buffer()->host, {6, 40});
    EXPECT_TRUE(
        refused(narrow, Schedule(), {same_bytes}, {"its elements are 2 bytes, and in's 4"}));

    Func pair("pair");
    pair(y, x) = Tuple(in(y, x), in(y, x) + 1.0f);
    Buffer<float> first({6, 40});
    EXPECT_TRUE(
        refused(pair, Schedule(), {data, first},
                {"cannot compute pair.0 in place over in", "pair.0 is an element of a Tuple"}));
    EXPECT_TRUE(refused(pair, Schedule(), {first, first.cropped(0, 5, 1)},
                        {"Buffers pair.0 (output) and pair.1 (output) share memory on the host",
                         "pass buffers that do not overlap"}));
    // Apart, everything runs.
    Buffer<float> second({6, 40});
    Pipeline(pair).realize({first, second}, Schedule());
    EXPECT_EQ(second(5, 39), data(5, 39) + 1.0f);
}
