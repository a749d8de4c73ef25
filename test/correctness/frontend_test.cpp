// The front end: what Var, RDom, BufferParam, Func and Buffer build, checked
// structurally (names, types, definitions, layouts).
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "lang/Function.h"
#include "ir/IRVisitor.h"
#include "ir/Util.h"
#include "test_util.h"

using namespace loom;
using namespace loom::internal;
using loom_test::rng;

namespace {

const Variable *as_var(const Expr &e) { return e.as<Variable>(); }

}  // namespace

TEST(Frontend, UniqueNamesAreUniqueAcrossThreads) {
    std::vector<std::string> names[4];
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([&names, t] {
            for (int i = 0; i < 500; i++) names[t].push_back(unique_name("u"));
        });
    }
    for (auto &t : threads) t.join();
    std::set<std::string> all;
    for (auto &v : names) all.insert(v.begin(), v.end());
    EXPECT_EQ(all.size(), 2000u);
    EXPECT_TRUE(starts_with(*all.begin(), "u$"));
}

TEST(Frontend, VarNames) {
    Var a, b, x("x");
    EXPECT_NE(a.name(), b.name());
    EXPECT_TRUE(starts_with(a.name(), "v$"));
    EXPECT_EQ(x.name(), "x");
    Expr e = x;
    ASSERT_TRUE(as_var(e));
    EXPECT_EQ(as_var(e)->name, "x");
    EXPECT_EQ(e.type(), Int(32));
    EXPECT_FALSE(as_var(e)->param);
    EXPECT_FALSE(as_var(e)->rdom);
}

TEST(Frontend, RDomVariables) {
    RDom r({{0, 4}, {1, 5}, {2, 6}, {3, 7}, {4, 8}, {5, 9}}, "r");
    EXPECT_EQ(r.dimensions(), 6);
    EXPECT_EQ(r.x.name(), "r.x");
    EXPECT_EQ(r.y.name(), "r.y");
    EXPECT_EQ(r.z.name(), "r.z");
    EXPECT_EQ(r.w.name(), "r.w");
    EXPECT_EQ(r[4].name(), "r.4");
    EXPECT_EQ(r[5].name(), "r.5");
    EXPECT_TRUE(is_const(r.y.min(), 1));
    EXPECT_TRUE(is_const(r.y.extent(), 5));
    Expr e = r.z;
    ASSERT_TRUE(as_var(e));
    EXPECT_EQ(as_var(e)->rdom.get(), r.contents().get());
    EXPECT_EQ(e.type(), Int(32));

    RDom anon(0, 10);
    EXPECT_TRUE(starts_with(anon.name(), "r$"));
    EXPECT_EQ(RVar(anon).name(), anon.name() + ".x");
    // Bounds of narrower integer types become int32.
    RDom small(Expr(int16_t(2)), Expr(uint8_t(3)), "small");
    EXPECT_EQ(small.x.min().type(), Int(32));
    EXPECT_EQ(small.x.extent().type(), Int(32));
}

TEST(Frontend, RDomWhereAccumulates) {
    RDom r({{0, 8}, {0, 8}}, "r");
    r.where(r.x < r.y);
    r.where(r.x > 2);
    Expr p = r.contents()->predicate;
    ASSERT_TRUE(p.defined());
    EXPECT_TRUE(p.as<And>());
}

TEST(Frontend, RDomWithWhereDoesNotLeak) {
    std::weak_ptr<const ReductionDomainContents> weak;
    {
        RDom r(0, 8, "r");
        r.where(r > 3);
        weak = r.contents();
    }
    EXPECT_TRUE(weak.expired());
}

TEST(Frontend, BufferParamDimensions) {
    BufferParam in(Float(32), 3, "in");
    EXPECT_EQ(in.name(), "in");
    EXPECT_EQ(in.dimensions(), 3);
    EXPECT_EQ(in.type(), Float(32));
    const char *fields[] = {"min", "extent", "stride"};
    for (int d = 0; d < 3; d++) {
        Expr es[] = {in.dim(d).min(), in.dim(d).extent(), in.dim(d).stride()};
        for (int k = 0; k < 3; k++) {
            const Variable *v = as_var(es[k]);
            ASSERT_TRUE(v);
            EXPECT_EQ(v->name, "in." + std::string(fields[k]) + "." + std::to_string(d));
            EXPECT_EQ(v->param.get(), in.param.get());
            EXPECT_EQ(v->type, Int(32));
        }
    }
    Expr mx = in.dim(1).max();
    EXPECT_EQ(mx.type(), Int(32));
    BufferParam anon(UInt(8), 1);
    EXPECT_TRUE(starts_with(anon.name(), "b$"));
}

TEST(Frontend, BufferParamCall) {
    BufferParam in(Float(32), 2, "in");
    Var x("x");
    Expr c = in(x, Expr(int16_t(3)));
    const Call *call = c.as<Call>();
    ASSERT_TRUE(call);
    EXPECT_EQ(call->call_type, Call::Image);
    EXPECT_EQ(call->name, "in");
    EXPECT_EQ(call->type, Float(32));
    EXPECT_EQ(call->param.get(), in.param.get());
    ASSERT_EQ(call->args.size(), 2u);
    for (const Expr &a : call->args) EXPECT_EQ(a.type(), Int(32));
    // The vector overload is picked for a non-const vector too.
    std::vector<Expr> args = {x, x};
    EXPECT_TRUE(in(args).as<Call>());
}

TEST(Frontend, FuncPureDefinition) {
    Var y("y"), x("x");
    Func f("f");
    EXPECT_FALSE(f.defined());
    f(y, x) = cast<uint8_t>(x + y);
    EXPECT_TRUE(f.defined());
    EXPECT_EQ(f.name(), "f");
    EXPECT_EQ(f.dimensions(), 2);
    EXPECT_EQ(f.outputs(), 1);
    EXPECT_EQ(f.type(), UInt(8));
    EXPECT_EQ(f.num_update_definitions(), 0);
    ASSERT_EQ(f.args().size(), 2u);
    EXPECT_EQ(f.args()[0].name(), "y");
    EXPECT_EQ(f.args()[1].name(), "x");
    Func anon;
    EXPECT_TRUE(starts_with(anon.name(), "f$"));
}

TEST(Frontend, FuncCallsAndTuples) {
    Var x("x");
    Func f("f"), g("g");
    f(x) = Tuple(x, cast<float>(x));
    EXPECT_EQ(f.outputs(), 2);
    EXPECT_EQ(f.output_types()[1], Float(32));
    Expr c = f(Expr(int16_t(2)))[1];
    const Call *call = c.as<Call>();
    ASSERT_TRUE(call);
    EXPECT_EQ(call->call_type, Call::Func);
    EXPECT_EQ(call->value_index, 1);
    EXPECT_EQ(call->func.get(), f.function().get());
    EXPECT_EQ(call->args[0].type(), Int(32));
    EXPECT_EQ(call->type, Float(32));
    g(x) = f(x);  // copies the whole Tuple
    EXPECT_EQ(g.outputs(), 2);
}

TEST(Frontend, UpdateDefinitions) {
    Var x("x");
    RDom r(0, 10, "r");
    Func f("f");
    f(x) = 0.0f;
    f(r) = f(r) + 1;  // the literal adapts to float32
    f(x) += 2;
    EXPECT_EQ(f.num_update_definitions(), 2);
    const FunctionContents &fc = *f.function();
    EXPECT_EQ(fc.updates[0].rdom.get(), r.contents().get());
    EXPECT_EQ(fc.updates[1].rdom, nullptr);
    ASSERT_EQ(rvars_of(fc.updates[0]).size(), 1u);
    EXPECT_EQ(rvars_of(fc.updates[0])[0].var, "r.x");
    EXPECT_EQ(fc.updates[0].values[0].type(), Float(32));
    // Using the RDom freezes it.
    EXPECT_TRUE(r.contents()->frozen);

    Func g("g");
    g(x) = cast<uint8_t>(x);
    g(r) = 7;  // a literal converts to the Func's type
    EXPECT_EQ(g.function()->updates[0].values[0].type(), UInt(8));
}

TEST(Frontend, CompoundAssignmentOnUndefinedFunc) {
    BufferParam in(UInt(8), 1, "in");
    RDom r(0, 100, "r");
    Func hist("hist");
    hist(in(r)) += 1;
    EXPECT_TRUE(hist.defined());
    EXPECT_EQ(hist.dimensions(), 1);
    EXPECT_EQ(hist.num_update_definitions(), 1);
    EXPECT_EQ(hist.type(), Int(32));
    Func p("p");
    Var x("x");
    p(x) *= 2.0f;
    EXPECT_TRUE(is_const(p.function()->init.values[0], 1));
    EXPECT_EQ(p.function()->args[0], "x");
}

TEST(Frontend, SelfReferencesDoNotLeak) {
    std::weak_ptr<FunctionContents> weak;
    {
        Var x("x");
        RDom r(1, 9, "r");
        Func f("f");
        f(x) = x;
        f(r) = f(r - 1) + f(r);
        weak = f.function();
        const Call *self = nullptr;
        struct Find : IRVisitor {
            const Call **out;
            void visit(const Call *op) override {
                if (op->call_type == Call::Func) *out = op;
                IRVisitor::visit(op);
            }
        } find;
        find.out = &self;
        f.function()->updates[0].values[0].accept(&find);
        ASSERT_TRUE(self);
        EXPECT_EQ(self->func.get(), f.function().get());
    }
    EXPECT_TRUE(weak.expired());
}

TEST(Frontend, FuncsMadeByLoweringDoNotLeak) {
    // Reduction fusion makes Funcs that call each other; once the compile
    // is done, none of them is left alive, whether it succeeds or throws.
    BufferParam in(Float(32), 2, "in");
    Var y("y");
    RDom k(0, in.dim(1).extent(), "k");
    Func m("m"), l("l"), o("o"), mean("mean");
    m(y) = type_min(Float(32));
    m(y) = max(m(y), in(y, k));
    l(y) = 0.0f;
    l(y) += exp(in(y, k) - m(y));
    o(y) = 0.0f;
    o(y) += exp(in(y, k) - m(y)) * in(y, k);
    mean(y) = o(y) / l(y);
    Var c("c");
    for (bool fails : {false, true}) {
        SCOPED_TRACE(fails ? "a compile that throws" : "a compile that succeeds");
        FuncsMadeByLowering watch;
        Schedule s;
        Stage partials = s.split_k(o, k, 4, c);
        s[o].compute_root();
        if (fails) {
            // Inside mean's loop, where o's combine at root cannot read
            // them: lowering refuses it after fusion.
            partials.compute_at(mean, y);
        } else {
            partials.compute_root();
        }
        if (fails) {
            EXPECT_THROW(Pipeline(mean).compile(s), CompileError);
        } else {
            Pipeline(mean).compile(s);
        }
        EXPECT_FALSE(watch.funcs().empty());
        for (const std::weak_ptr<FunctionContents> &f : watch.funcs()) {
            EXPECT_TRUE(f.expired()) << f.lock()->name;
        }
    }
}

TEST(Frontend, InlineReductionStructure) {
    BufferParam in(Float(32), 2, "in");
    Var i("i"), j("j");
    RDom r(0, 8, "r");
    Func f("f");
    f(i, j) = sum(in(j, r) * cast<float>(i), "mysum");
    // f calls an anonymous reduction Func over (j, i): free Vars in order of
    // first appearance.
    auto calls = find_direct_calls(f.function());
    ASSERT_EQ(calls.size(), 1u);
    FunctionPtr red = calls.begin()->second;
    EXPECT_TRUE(starts_with(red->name, "mysum$"));
    EXPECT_TRUE(red->is_inline_reduction);
    ASSERT_EQ(red->args.size(), 2u);
    EXPECT_EQ(red->args[0], "j");
    EXPECT_EQ(red->args[1], "i");
    ASSERT_EQ(red->updates.size(), 1u);
    EXPECT_TRUE(is_const_zero(red->init.values[0]));

    Tuple am = argmax(in(r, j));
    EXPECT_EQ(am.size(), 2u);
    EXPECT_EQ(am[0].type(), Int(32));
    EXPECT_EQ(am[1].type(), Float(32));
}

TEST(Frontend, PipelineQueries) {
    BufferParam in(Float(32), 1, "in");
    Param<float> k("k");
    Var x("x");
    Func a("a"), b("b"), c("c");
    a(x) = in(x)*k;
    b(x) = a(x) + a(x + 1);
    c(x) = b(x) + a(x) + cast<float>(in.dim(0).extent());
    auto env = find_transitive_calls({c.function()});
    EXPECT_EQ(env.size(), 3u);
    std::vector<std::string> order = realization_order({c.function()}, env);
    ASSERT_EQ(order.size(), 3u);
    EXPECT_EQ(order[0], "a");
    EXPECT_EQ(order[1], "b");
    EXPECT_EQ(order[2], "c");
    std::vector<ParameterPtr> params = find_parameters(env);
    ASSERT_EQ(params.size(), 2u);
    EXPECT_EQ(params[0]->name, "in");
    EXPECT_EQ(params[1]->name, "k");
}

TEST(Frontend, BufferLayout) {
    Buffer<float> b({3, 4, 5}, "b");
    EXPECT_EQ(b.name(), "b");
    EXPECT_EQ(b.dimensions(), 3);
    EXPECT_EQ(b.stride(2), 1);
    EXPECT_EQ(b.stride(1), 5);
    EXPECT_EQ(b.stride(0), 20);
    EXPECT_EQ(b.number_of_elements(), 60);
    EXPECT_EQ(b.shape(), (std::vector<int>{3, 4, 5}));
    EXPECT_EQ(b(0, 0, 0), 0.0f);  // zero-initialized
    b(1, 2, 3) = 7;
    EXPECT_EQ(b.data()[1 * 20 + 2 * 5 + 3], 7.0f);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
    loom_buffer_t *raw = b.raw_buffer();
    EXPECT_EQ(raw->dimensions, 3);
    EXPECT_EQ(raw->dim[1].stride, 5);
    EXPECT_EQ(raw->type.code, loom_type_float);
    EXPECT_EQ(raw->type.bits, 32);

    Buffer<float> c(b.cropped(1, 1, 2));
    EXPECT_EQ(c.dim_min(1), 1);
    EXPECT_EQ(c.extent(1), 2);
    EXPECT_EQ(c(1, 2, 3), 7.0f);  // same coordinates, same memory
    EXPECT_EQ(b.extent(1), 4);    // the original is unchanged

    Buffer<float> t(b.transposed({2, 0, 1}));
    EXPECT_EQ(t.shape(), (std::vector<int>{5, 3, 4}));
    EXPECT_EQ(t(3, 1, 2), 7.0f);

    b.set_min({10, 20, 30});
    EXPECT_EQ(b(11, 22, 33), 7.0f);
    EXPECT_EQ(c(1, 2, 3), 7.0f);  // views have their own descriptor

    std::vector<int> mem(12);
    for (int i = 0; i < 12; i++) mem[i] = i;
    // A column-major 3x4 view.
    Buffer<int> w = Buffer<int>::wrap(mem.data(), {3, 4}, {1, 3}, "w");
    EXPECT_EQ(w(2, 1), 5);
    EXPECT_EQ(w.stride(0), 1);
    Buffer<int> dense = Buffer<int>::wrap(mem.data(), {3, 4});
    EXPECT_EQ(dense(2, 1), 9);

    Buffer<int> scalar(std::vector<int>{});
    EXPECT_EQ(scalar.dimensions(), 0);
    EXPECT_EQ(scalar.number_of_elements(), 1);
    scalar() = 3;
    EXPECT_EQ(scalar(), 3);
    Buffer<uint8_t> empty({0, 5});
    EXPECT_EQ(empty.number_of_elements(), 0);
}

TEST(Frontend, FuncRealizeMatchesInterpreter) {
    Var x("x");
    Func f("f");
    f(x) = x * x;
    Buffer<int> b(f.realize({6}));
    for (int i = 0; i < 6; i++) EXPECT_EQ(b(i), i * i);
}
