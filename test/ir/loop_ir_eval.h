// A small interpreter for the flat loop IR, scalar and vector, for tests of
// the loop passes (vectorize, unroll, partition): run a statement before and
// after a pass and compare the buffers. It checks every unmasked load and
// store against the bounds of its buffer, so a missing mask is an error.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/IRVisitor.h"
#include "loom/IR.h"
#include "loom/IROperator.h"

namespace loom_test {

using namespace loom;
using namespace loom::internal;

/** A value of the loop IR: one entry per lane, ints in i, floats in f. */
struct EvalValue {
    Type type;
    std::vector<int64_t> i;
    std::vector<double> f;
    int lanes() const { return type.lanes; }
    bool is_float() const { return type.is_float(); }
    double as_double(int l) const { return is_float() ? f[l] : static_cast<double>(i[l]); }
};

class LoopIREval {
  public:
    /** Buffers by name; elements are kept as doubles whatever their type. */
    std::map<std::string, std::vector<double>> buffers;
    /** Counts executed Store statements (one per vector store). */
    int stores_executed = 0;

    void set_var(const std::string &name, int64_t v, Type t = Int(32)) {
        EvalValue x;
        x.type = t;
        x.i = {v};
        vars[name].push_back(x);
    }

    void run(const Stmt &s) {
        if (!s.defined()) return;
        if (const Block *op = s.as<Block>()) {
            run(op->first);
            run(op->rest);
        } else if (const For *op = s.as<For>()) {
            int64_t mn = scalar_int(op->min), ext = scalar_int(op->extent);
            for (int64_t x = mn; x < mn + ext; x++) {
                EvalValue v;
                v.type = op->min.type();
                v.i = {x};
                vars[op->name].push_back(v);
                run(op->body);
                vars[op->name].pop_back();
            }
        } else if (const LetStmt *op = s.as<LetStmt>()) {
            vars[op->name].push_back(eval(op->value));
            run(op->body);
            vars[op->name].pop_back();
        } else if (const IfThenElse *op = s.as<IfThenElse>()) {
            EvalValue c = eval(op->condition);
            if (c.lanes() != 1) throw std::runtime_error("vector if condition");
            if (c.i[0]) run(op->then_case);
            else run(op->else_case);
        } else if (const Store *op = s.as<Store>()) {
            EvalValue v = eval(op->value), idx = eval(op->index), p = eval(op->predicate);
            std::vector<double> &buf = buffer(op->name);
            stores_executed++;
            for (int l = 0; l < v.lanes(); l++) {
                if (!p.i[l]) continue;
                int64_t k = idx.i[l];
                if (k < 0 || k >= static_cast<int64_t>(buf.size())) {
                    throw std::runtime_error("store out of bounds: " + op->name + "[" +
                                             std::to_string(k) + "]");
                }
                buf[k] = v.as_double(l);
            }
        } else if (const Allocate *op = s.as<Allocate>()) {
            int64_t size = 1;
            for (const Expr &e : op->extents) size *= scalar_int(e);
            auto old = buffers.find(op->name);
            bool had = old != buffers.end();
            std::vector<double> saved;
            if (had) saved = old->second;
            buffers[op->name] = std::vector<double>(size, -12345.0);
            run(op->body);
            if (had) buffers[op->name] = saved;
            else buffers.erase(op->name);
        } else if (const Evaluate *op = s.as<Evaluate>()) {
            eval(op->value);
        } else if (const AssertStmt *op = s.as<AssertStmt>()) {
            if (!eval(op->condition).i[0]) throw std::runtime_error("assertion failed");
        } else if (const ProducerConsumer *op = s.as<ProducerConsumer>()) {
            run(op->body);
        } else if (s.as<Free>()) {
        } else {
            throw std::runtime_error("LoopIREval: unsupported statement");
        }
    }

    EvalValue eval(const Expr &e) {
        EvalValue r;
        r.type = e.type();
        int lanes = e.type().lanes;
        if (const IntImm *op = e.as<IntImm>()) {
            r.i = {op->value};
        } else if (const UIntImm *op = e.as<UIntImm>()) {
            r.i = {static_cast<int64_t>(op->value)};
        } else if (const FloatImm *op = e.as<FloatImm>()) {
            r.f = {op->value};
        } else if (const Variable *op = e.as<Variable>()) {
            auto it = vars.find(op->name);
            if (it == vars.end() || it->second.empty()) {
                throw std::runtime_error("LoopIREval: free variable " + op->name);
            }
            r = it->second.back();
            if (r.type != e.type()) throw std::runtime_error("type mismatch for " + op->name);
        } else if (const Broadcast *op = e.as<Broadcast>()) {
            EvalValue v = eval(op->value);
            r.i.assign(lanes, v.i.empty() ? 0 : v.i[0]);
            r.f.assign(lanes, v.f.empty() ? 0 : v.f[0]);
            if (v.f.empty()) r.f.clear();
            if (v.i.empty()) r.i.clear();
        } else if (const Ramp *op = e.as<Ramp>()) {
            EvalValue b = eval(op->base), s = eval(op->stride);
            for (int l = 0; l < lanes; l++) {
                if (r.is_float()) r.f.push_back(b.f[0] + l * s.f[0]);
                else r.i.push_back(wrap(b.i[0] + l * s.i[0], r.type));
            }
        } else if (const Cast *op = e.as<Cast>()) {
            EvalValue v = eval(op->value);
            for (int l = 0; l < lanes; l++) {
                if (r.is_float()) r.f.push_back(round_float(v.as_double(l), r.type));
                else if (r.type.is_bool()) r.i.push_back(v.as_double(l) != 0);
                else if (v.is_float()) r.i.push_back(wrap(static_cast<int64_t>(v.f[l]), r.type));
                else r.i.push_back(wrap(v.i[l], r.type));
            }
        } else if (const Add *op = e.as<Add>()) {
            return arith(
                op->a, op->b, r.type, [](double a, double b) { return a + b; },
                [](int64_t a, int64_t b) { return a + b; });
        } else if (const Sub *op = e.as<Sub>()) {
            return arith(
                op->a, op->b, r.type, [](double a, double b) { return a - b; },
                [](int64_t a, int64_t b) { return a - b; });
        } else if (const Mul *op = e.as<Mul>()) {
            return arith(
                op->a, op->b, r.type, [](double a, double b) { return a * b; },
                [](int64_t a, int64_t b) { return a * b; });
        } else if (const Div *op = e.as<Div>()) {
            return arith(
                op->a, op->b, r.type, [](double a, double b) { return a / b; },
                [](int64_t a, int64_t b) { return b == 0 ? 0 : div_imp(a, b); });
        } else if (const Mod *op = e.as<Mod>()) {
            return arith(
                op->a, op->b, r.type, [](double a, double b) { return a - b * std::floor(a / b); },
                [](int64_t a, int64_t b) { return b == 0 ? 0 : mod_imp(a, b); });
        } else if (const Min *op = e.as<Min>()) {
            return arith(
                op->a, op->b, r.type, [](double a, double b) { return std::min(a, b); },
                [](int64_t a, int64_t b) { return std::min(a, b); });
        } else if (const Max *op = e.as<Max>()) {
            return arith(
                op->a, op->b, r.type, [](double a, double b) { return std::max(a, b); },
                [](int64_t a, int64_t b) { return std::max(a, b); });
        } else if (const EQ *op = e.as<EQ>()) {
            return compare(op->a, op->b, [](double a, double b) { return a == b; });
        } else if (const NE *op = e.as<NE>()) {
            return compare(op->a, op->b, [](double a, double b) { return a != b; });
        } else if (const LT *op = e.as<LT>()) {
            return compare(op->a, op->b, [](double a, double b) { return a < b; });
        } else if (const LE *op = e.as<LE>()) {
            return compare(op->a, op->b, [](double a, double b) { return a <= b; });
        } else if (const GT *op = e.as<GT>()) {
            return compare(op->a, op->b, [](double a, double b) { return a > b; });
        } else if (const GE *op = e.as<GE>()) {
            return compare(op->a, op->b, [](double a, double b) { return a >= b; });
        } else if (const And *op = e.as<And>()) {
            return arith(op->a, op->b, r.type, nullptr,
                         [](int64_t a, int64_t b) -> int64_t { return a && b; });
        } else if (const Or *op = e.as<Or>()) {
            return arith(op->a, op->b, r.type, nullptr,
                         [](int64_t a, int64_t b) -> int64_t { return a || b; });
        } else if (const Not *op = e.as<Not>()) {
            EvalValue a = eval(op->a);
            for (int l = 0; l < lanes; l++) r.i.push_back(!a.i[l]);
        } else if (const Select *op = e.as<Select>()) {
            EvalValue c = eval(op->condition), t = eval(op->true_value), f = eval(op->false_value);
            for (int l = 0; l < lanes; l++) {
                bool take = c.i[c.lanes() == 1 ? 0 : l] != 0;
                const EvalValue &src = take ? t : f;
                if (r.is_float()) r.f.push_back(src.f[l]);
                else r.i.push_back(src.i[l]);
            }
        } else if (const Load *op = e.as<Load>()) {
            EvalValue idx = eval(op->index), p = eval(op->predicate);
            std::vector<double> &buf = buffer(op->name);
            for (int l = 0; l < lanes; l++) {
                double v = 0;
                if (p.i[l]) {
                    int64_t k = idx.i[l];
                    if (k < 0 || k >= static_cast<int64_t>(buf.size())) {
                        throw std::runtime_error("load out of bounds: " + op->name + "[" +
                                                 std::to_string(k) + "]");
                    }
                    v = buf[k];
                }
                if (r.is_float()) r.f.push_back(v);
                else r.i.push_back(static_cast<int64_t>(v));
            }
        } else if (const VectorReduce *op = e.as<VectorReduce>()) {
            EvalValue v = eval(op->value);
            int group = v.lanes() / lanes;
            for (int l = 0; l < lanes; l++) {
                double acc = v.as_double(l * group);
                for (int k = 1; k < group; k++) {
                    double x = v.as_double(l * group + k);
                    switch (op->op) {
                    case VectorReduce::Add: acc += x; break;
                    case VectorReduce::Mul: acc *= x; break;
                    case VectorReduce::Min: acc = std::min(acc, x); break;
                    case VectorReduce::Max: acc = std::max(acc, x); break;
                    case VectorReduce::And: acc = acc != 0 && x != 0; break;
                    case VectorReduce::Or: acc = acc != 0 || x != 0; break;
                    }
                }
                if (r.is_float()) r.f.push_back(round_float(acc, r.type));
                else r.i.push_back(wrap(static_cast<int64_t>(acc), r.type));
            }
        } else if (const Let *op = e.as<Let>()) {
            vars[op->name].push_back(eval(op->value));
            r = eval(op->body);
            vars[op->name].pop_back();
        } else if (const Call *op = e.as<Call>()) {
            if (op->is_intrinsic(Call::likely)) return eval(op->args[0]);
            std::vector<EvalValue> args;
            for (const Expr &a : op->args) args.push_back(eval(a));
            for (int l = 0; l < lanes; l++) {
                double x = args.empty() ? 0 : args[0].as_double(l);
                double y;
                if (op->name == "abs") y = std::fabs(x);
                else if (op->name == "exp_f32" || op->name == "exp_f64") y = std::exp(x);
                else if (op->name == "sqrt_f32" || op->name == "sqrt_f64") y = std::sqrt(x);
                else throw std::runtime_error("LoopIREval: unsupported call " + op->name);
                if (r.is_float()) r.f.push_back(round_float(y, r.type));
                else r.i.push_back(static_cast<int64_t>(y));
            }
        } else {
            throw std::runtime_error("LoopIREval: unsupported expression");
        }
        return r;
    }

  private:
    std::map<std::string, std::vector<EvalValue>> vars;

    std::vector<double> &buffer(const std::string &name) {
        auto it = buffers.find(name);
        if (it == buffers.end()) throw std::runtime_error("LoopIREval: no buffer " + name);
        return it->second;
    }

    int64_t scalar_int(const Expr &e) {
        EvalValue v = eval(e);
        if (v.lanes() != 1 || v.is_float()) throw std::runtime_error("expected a scalar int");
        return v.i[0];
    }

    static int64_t wrap(int64_t v, Type t) {
        if (t.is_bool()) return v != 0;
        if (t.bits >= 64) return v;
        uint64_t mask = (uint64_t(1) << t.bits) - 1;
        uint64_t u = static_cast<uint64_t>(v) & mask;
        if (t.is_int() && (u >> (t.bits - 1))) return static_cast<int64_t>(u | ~mask);
        return static_cast<int64_t>(u);
    }
    static double round_float(double v, Type t) {
        return t.bits == 32 ? static_cast<double>(static_cast<float>(v)) : v;
    }

    template <typename FF, typename FI>
    EvalValue arith(const Expr &ea, const Expr &eb, Type t, FF ff, FI fi) {
        EvalValue a = eval(ea), b = eval(eb), r;
        r.type = t;
        for (int l = 0; l < t.lanes; l++) {
            if (t.is_float()) {
                if constexpr (!std::is_same_v<FF, std::nullptr_t>) {
                    r.f.push_back(round_float(ff(a.f[l], b.f[l]), t));
                }
            } else {
                r.i.push_back(wrap(fi(a.i[l], b.i[l]), t));
            }
        }
        return r;
    }
    template <typename F> EvalValue compare(const Expr &ea, const Expr &eb, F f) {
        EvalValue a = eval(ea), b = eval(eb), r;
        r.type = Bool(a.lanes());
        for (int l = 0; l < a.lanes(); l++) r.i.push_back(f(a.as_double(l), b.as_double(l)));
        return r;
    }
};

/** Whether any node of s satisfies pred. */
template <typename Pred> bool any_node(const Stmt &s, Pred pred) {
    struct V : IRVisitor {
        Pred &p;
        bool found = false;
        explicit V(Pred &p) : p(p) {}
        using IRVisitor::visit;
        void visit(const For *op) override {
            if (p(Stmt(op))) found = true;
            IRVisitor::visit(op);
        }
        void visit(const Store *op) override {
            if (p(Stmt(op))) found = true;
            IRVisitor::visit(op);
        }
        void visit(const IfThenElse *op) override {
            if (p(Stmt(op))) found = true;
            IRVisitor::visit(op);
        }
        void visit(const Allocate *op) override {
            if (p(Stmt(op))) found = true;
            IRVisitor::visit(op);
        }
        void visit(const LetStmt *op) override {
            if (p(Stmt(op))) found = true;
            IRVisitor::visit(op);
        }
    } v(pred);
    s.accept(&v);
    return v.found;
}

/** Every statement of kind T in s, in visiting order. */
template <typename T> std::vector<const T *> collect_nodes(const Stmt &s) {
    std::vector<const T *> out;
    any_node(s, [&](const Stmt &n) {
        if (const T *t = n.as<T>()) out.push_back(t);
        return false;
    });
    return out;
}

}  // namespace loom_test
