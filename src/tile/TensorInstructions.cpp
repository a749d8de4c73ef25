// The tensor instruction registry and the semantic matcher (see the header).
#include "tile/TensorInstructions.h"

#include <map>

#include "ir/IREquality.h"
#include "ir/IRPrinter.h"
#include "loom/Error.h"
#include "loom/IR.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {
namespace tile {

namespace {

Expr placeholder(const char *name, Type t, const char *i, const char *j) {
    return Call::make(t, name, {Variable::make(Int(32), i), Variable::make(Int(32), j)},
                      Call::Extern);
}

TensorInstruction mma_m16n8k16(Type in) {
    TensorInstruction t;
    t.name = "mma.m16n8k16";
    t.ptx = "mma.sync.aligned.m16n8k16.row.col.f32." +
            std::string(in == BFloat(16) ? "bf16.bf16" : "f16.f16") + ".f32";
    t.m = 16;
    t.n = 8;
    t.k = 16;
    t.a_type = t.b_type = in;
    t.accumulator_type = Float(32);
    t.min_sm = 80;
    t.semantics =
        placeholder("C", Float(32), "m", "n") + cast(Float(32), placeholder("A", in, "m", "k")) *
                                                    cast(Float(32), placeholder("B", in, "k", "n"));
    t.accumulator_layout = mma_accumulator_layout;
    t.a_layout = mma_a_layout;
    t.b_layout = mma_b_layout;
    return t;
}

/** Structural unification of a pattern with an Expr: the placeholders
 * bind to any subexpression of their type, + and * commute. */
class Matcher {
  public:
    std::map<std::string, Expr> bound;
    /** Whether a factor of the pattern's cast(wide, A) may bind A to a
     * wider Expr rounded to A's type; at most one factor is. */
    bool may_round = false, rounded = false;

    bool match(const Expr &pattern, const Expr &e) {
        if (pattern.type() != e.type()) return false;
        if (const Call *p = pattern.as<Call>()) {
            if (p->call_type == Call::Extern) {
                auto it = bound.find(p->name);
                if (it != bound.end()) return equal(it->second, e);
                bound[p->name] = e;
                return true;
            }
        }
        if (const Cast *p = pattern.as<Cast>()) {
            const Cast *c = e.as<Cast>();
            if (c && match(p->value, c->value)) return true;
            const Call *a = p->value.as<Call>();
            if (may_round && !rounded && a && a->call_type == Call::Extern &&
                !bound.count(a->name)) {
                bound[a->name] = cast(a->type, e);
                rounded = true;
                return true;
            }
            return false;
        }
        if (const Add *p = pattern.as<Add>()) {
            const Add *o = e.as<Add>();
            return o && commuted(p->a, p->b, o->a, o->b);
        }
        if (const Mul *p = pattern.as<Mul>()) {
            const Mul *o = e.as<Mul>();
            return o && commuted(p->a, p->b, o->a, o->b);
        }
        return equal(pattern, e);
    }

  private:
    bool commuted(const Expr &pa, const Expr &pb, const Expr &a, const Expr &b) {
        const std::map<std::string, Expr> saved = bound;
        const bool was_rounded = rounded;
        if (match(pa, a) && match(pb, b)) return true;
        bound = saved;
        rounded = was_rounded;
        if (match(pa, b) && match(pb, a)) return true;
        bound = saved;
        rounded = was_rounded;
        return false;
    }
};

/** The multiplication in a `c + a * b` update (either order), or null. */
const Mul *product_of(const Expr &update) {
    if (const Add *add = update.as<Add>()) {
        if (const Mul *m = add->b.as<Mul>()) return m;
        if (const Mul *m = add->a.as<Mul>()) return m;
    }
    return nullptr;
}

std::string operand_types(const Mul *m) {
    std::string s;
    for (const Expr &f : {m->a, m->b}) {
        const Cast *c = f.as<Cast>();
        const Expr inner = c ? c->value : f;
        s += (s.empty() ? "" : " and ") + type_to_string(inner.type()) + " (" + to_string(f) + ")";
    }
    return s;
}

}  // namespace

const std::vector<TensorInstruction> &tensor_instructions() {
    static const std::vector<TensorInstruction> all = {mma_m16n8k16(Float(16)),
                                                       mma_m16n8k16(BFloat(16))};
    return all;
}

std::string tensor_instruction_names() {
    std::string s;
    for (const TensorInstruction &t : tensor_instructions()) {
        if (s.find(t.name) == std::string::npos) s += (s.empty() ? "" : ", ") + t.name;
    }
    return s;
}

ContractionMatch match_contraction(const std::string &name, const Expr &update, std::string *why,
                                   bool round_operands) {
    std::vector<const TensorInstruction *> named;
    for (const TensorInstruction &t : tensor_instructions()) {
        if (t.name == name) named.push_back(&t);
    }
    internal_assert(!named.empty()) << "no tensor instruction " << name;
    // Exact matches first; rounding one factor only where none is.
    for (bool round : {false, true}) {
        if (round && !round_operands) break;
        for (const TensorInstruction *t : named) {
            Matcher m;
            m.may_round = round;
            if (m.match(t->semantics, update))
                return {t, m.bound.at("A"), m.bound.at("B"), m.bound.at("C")};
        }
    }
    const Mul *product = product_of(update);
    const TensorInstruction &first = *named[0];
    std::string inputs;
    for (const TensorInstruction *t : named) {
        inputs += (inputs.empty() ? "" : " or ") + type_to_string(t->a_type);
    }
    if (!product) {
        *why = "it is not an accumulation of a product, acc + a * b (it is " + to_string(update) +
               "), which is what " + name + " computes";
    } else if (update.type() != first.accumulator_type) {
        *why = "it accumulates in " + type_to_string(update.type()) + ", and " + name +
               " accumulates in " + type_to_string(first.accumulator_type);
    } else {
        *why = "it multiplies " + operand_types(product) + ", and " + name + " multiplies " +
               inputs + " operands, each cast to " + type_to_string(first.accumulator_type) +
               ", both of the same type";
    }
    return {};
}

}  // namespace tile
}  // namespace internal
}  // namespace loom
