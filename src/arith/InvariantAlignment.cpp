#include "arith/InvariantAlignment.h"

#include <map>

#include "arith/Simplify.h"
#include "ir/IREquality.h"
#include "ir/IRVisitor.h"
#include "ir/Scope.h"
#include "loom/IROperator.h"
#include "lower/AlignVectorAccesses.h"

namespace loom {
namespace internal {

namespace {

/** The terms of e's sums and differences, each with its sign (true: to be
 * subtracted). */
void collect_terms(const Expr &e, bool negated, std::vector<std::pair<Expr, bool>> &terms) {
    if (const Add *a = e.as<Add>()) {
        collect_terms(a->a, negated, terms);
        collect_terms(a->b, negated, terms);
    } else if (const Sub *s = e.as<Sub>()) {
        collect_terms(s->a, negated, terms);
        collect_terms(s->b, !negated, terms);
    } else {
        terms.emplace_back(e, negated);
    }
}

class Collector : public IRVisitor {
  public:
    Collector(const std::function<int(const std::string &, Type, int, const ModulusRemainder &)>
                  &tested_word)
        : tested_word(tested_word) {}

    /** The accesses found aligned with an invariant index, in the order
     * met; an index (a node, which IR may share) that occurs more than
     * once on a buffer counts only if every occurrence agrees. */
    std::vector<InvariantAlignment> found() const {
        std::vector<InvariantAlignment> out;
        for (const Key &k : order) {
            const Occurrences &o = occurrences.at(k);
            if (o.agree) out.push_back(o.first);
        }
        return out;
    }

    void enter_loop(const For *loop) {
        bound[loop->name]++;
        loop->body.accept(this);
        bound[loop->name]--;
    }

  private:
    const std::function<int(const std::string &, Type, int, const ModulusRemainder &)> &tested_word;
    using Key = std::pair<std::string, const Ramp *>;
    struct Occurrences {
        InvariantAlignment first;
        bool agree = true;
    };
    std::map<Key, Occurrences> occurrences;
    std::vector<Key> order;
    // The names bound inside the loop (its variable, inner loops' and lets),
    // counted for shadowing; the buffers allocated inside it.
    std::map<std::string, int> bound;
    std::map<std::string, int> allocated;
    // Each let inside the loop in scope: its value with the lets inside the
    // loop expanded, or undefined when that is unknown or too big.
    Scope<Expr> values;

    using IRVisitor::visit;

    Expr expanded(const Expr &e) const { return expand_lets(e, values); }
    /** Whether e varies along the loop, or may: it mentions a name bound
     * inside it, or loads or calls anything (a load may read what the loop
     * writes, or, moved before a loop that runs no times, what it must not
     * read). */
    bool may_vary(const Expr &e) const {
        struct Finder : IRVisitor {
            const std::map<std::string, int> &bound;
            bool found = false;
            explicit Finder(const std::map<std::string, int> &b) : bound(b) {}
            using IRVisitor::visit;
            void visit(const Variable *op) override {
                auto it = bound.find(op->name);
                found |= it != bound.end() && it->second > 0;
            }
            void visit(const Load *) override { found = true; }
            void visit(const Call *) override { found = true; }
        } finder(bound);
        e.accept(&finder);
        return finder.found;
    }

    void push_let(const std::string &name, const Expr &value) {
        Expr known;
        if (value.type().is_int_or_uint() && value.type().is_scalar()) {
            Expr e = expanded(value);
            if (count_nodes(e) <= kMaxExpandedNodes) known = e;
        }
        values.push(name, known);
        bound[name]++;
    }
    void pop_let(const std::string &name) {
        values.pop(name);
        bound[name]--;
    }

    void visit(const For *op) override {
        op->min.accept(this);
        op->extent.accept(this);
        bound[op->name]++;
        op->body.accept(this);
        bound[op->name]--;
    }
    void visit(const Let *op) override {
        op->value.accept(this);
        push_let(op->name, op->value);
        op->body.accept(this);
        pop_let(op->name);
    }
    void visit(const LetStmt *op) override {
        op->value.accept(this);
        push_let(op->name, op->value);
        op->body.accept(this);
        pop_let(op->name);
    }
    void visit(const Allocate *op) override {
        allocated[op->name]++;
        IRVisitor::visit(op);
        allocated[op->name]--;
    }
    void visit(const Load *op) override {
        IRVisitor::visit(op);
        consider(op->name, op->type.element_of(), op->type.lanes, op->index, op->predicate,
                 op->alignment);
    }
    void visit(const Store *op) override {
        IRVisitor::visit(op);
        const Type t = op->value.type();
        consider(op->name, t.element_of(), t.lanes, op->index, op->predicate, op->alignment);
    }

    void consider(const std::string &buffer, Type element, int lanes, Expr index,
                  const Expr &predicate, const ModulusRemainder &proven) {
        if (lanes == 1 || !is_const_one(predicate)) return;
        auto a = allocated.find(buffer);
        if (a != allocated.end() && a->second > 0) return;  // not there before the loop
        // A store's index may carry lets (CSE's) around its Ramp.
        std::vector<std::string> peeled;
        while (const Let *let = index.as<Let>()) {
            push_let(let->name, let->value);
            peeled.push_back(let->name);
            index = let->body;
        }
        const Ramp *ramp = index.as<Ramp>();
        if (ramp && ramp->base.type().is_scalar() && is_const_one(ramp->stride)) {
            const int word = tested_word(buffer, element, lanes, proven);
            if (word > 0) record(ramp, buffer, element, word);
        }
        for (auto it = peeled.rbegin(); it != peeled.rend(); ++it) pop_let(*it);
    }

    void record(const Ramp *ramp, const std::string &buffer, Type element, int word) {
        InvariantAlignment a = invariant_alignment(ramp, buffer, element, word);
        const Key key(buffer, ramp);
        auto [it, first] = occurrences.emplace(key, Occurrences{a, a.invariant_index.defined()});
        if (first) {
            order.push_back(key);
        } else if (!a.invariant_index.defined() || !it->second.agree ||
                   !equal(a.invariant_index, it->second.first.invariant_index)) {
            it->second.agree = false;
        }
    }

    /** The access with its invariant index, which is undefined when it has
     * none. */
    InvariantAlignment invariant_alignment(const Ramp *ramp, const std::string &buffer,
                                           Type element, int word) const {
        InvariantAlignment none{ramp, buffer, element, word, Expr()};
        Expr base = expanded(ramp->base);
        if (count_nodes(base) > kMaxExpandedNodes) return none;
        // base = invariant + varying, the terms that mention no name bound
        // inside the loop and those that do; the access's alignment is the
        // invariant part's when the varying one moves in whole words.
        std::vector<std::pair<Expr, bool>> terms;
        collect_terms(base, false, terms);
        const Type t = base.type();
        Expr invariant = make_zero(t), varying = make_zero(t);
        for (const auto &[term, negated] : terms) {
            Expr &sum = may_vary(term) ? varying : invariant;
            sum = negated ? sum - term : sum + term;
        }
        const ModulusRemainder step = modulus_remainder(varying);
        auto whole_words = [&](int64_t elements) {
            return (elements % word) * element.bytes() % word == 0;
        };
        if (!whole_words(step.modulus) || !whole_words(step.remainder)) return none;
        return {ramp, buffer, element, word, simplify(invariant)};
    }
};

}  // namespace

std::vector<InvariantAlignment> invariant_alignments(
    const For *loop,
    const std::function<int(const std::string &, Type, int, const ModulusRemainder &)>
        &tested_word) {
    Collector c(tested_word);
    c.enter_loop(loop);
    return c.found();
}

}  // namespace internal
}  // namespace loom
