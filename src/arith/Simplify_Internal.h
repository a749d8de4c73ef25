// Internals of the simplifier, shared by the Simplify_*.cpp files.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "arith/Interval.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/Scope.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

/** Signed integer arithmetic of 32 bits or more is assumed not to overflow
 * when reasoning symbolically (x + 1 > x); narrower and unsigned integer
 * types wrap, so only ring identities (which hold modulo 2^bits) apply. */
inline bool no_overflow_int(Type t) { return t.is_int() && t.bits >= 32; }

/** Whether a let's value is cheap and simple enough to substitute for its
 * name: constants, variables, x * c and x * c + c' for a variable x (as
 * Halide does: differences of lets such as (m + 7) - m then fold to
 * constants), and vectors of those. */
bool should_substitute(const Expr &v);

/** A condition known to be `truth`, as a < b (strict) or a <= b, or a == b
 * (is_eq), over integers of 32 bits or more: negations swap the operands
 * (!(a < b) is b <= a). False for other conditions. */
bool as_integer_comparison(const Expr &cond, bool truth, Expr *a, Expr *b, bool *strict,
                           bool *is_eq);

/** Constant bounds and a (modulus, remainder) fact about an integer value.
 * modulus 0 means the value is exactly `remainder`. */
struct ExprInfo {
    bool min_defined = false, max_defined = false;
    int64_t min = 0, max = 0;
    ModulusRemainder alignment;  // (1, 0): nothing known

    bool bounded() const { return min_defined && max_defined; }
    bool is_single_point() const { return bounded() && min == max; }
    void set_point(int64_t v) {
        min_defined = max_defined = true;
        min = max = v;
        alignment = ModulusRemainder(0, v);
    }
    /** Intersects with another set of facts about the same value. */
    void intersect(const ExprInfo &o);
};

/** A sum of terms with integer coefficients plus a constant, over a single
 * integer type (scalar or vector). Coefficients wrap to the type's width,
 * which keeps the algebra valid for wrapping types too. */
struct LinearForm {
    struct Term {
        Expr e;
        int64_t coeff;
    };
    Type type;
    std::vector<Term> terms;
    int64_t constant = 0;

    explicit LinearForm(Type t) : type(t) {}
    void add(const Expr &e, int64_t k);
    void add_term(const Expr &e, int64_t k);
    void add_const(int64_t v);
    void add_form(const LinearForm &o, int64_t k);
    /** The form less its terms whose coefficient c divides, its constant
     * reduced modulo c (c > 0): the form minus the result is a multiple
     * of c. */
    LinearForm rest_modulo(int64_t c) const;
    int64_t wrap(int64_t v) const;
    bool is_const() const { return terms.empty(); }
};

class Simplify : public IRMutator {
  public:
    Simplify(bool remove_dead_lets, const Scope<Interval> &bounds,
             const Scope<ModulusRemainder> &alignment);

    using IRMutator::mutate;
    Expr mutate(const Expr &e) override;
    Stmt mutate(const Stmt &s) override;

    /** Constant bounds and alignment of an already simplified expression. */
    ExprInfo info_of(const Expr &e);
    ExprInfo compute_info_of(const Expr &e);
    /** Bounds of a sum through c * (x / c) == x - x mod c (floor division,
     * c > 0), with x mod c in [0, c - 1]: once a quotient's multiple meets x
     * itself the x terms cancel, and a sum that interval arithmetic leaves
     * unbounded is bounded, such as the last tile's start against the end of
     * the data, ((n + 7) / 8) * 8 - n, which lies in [0, 7]. */
    bool info_through_quotients(const Expr &e, ExprInfo *out);
    /** Bounds of a linear form from its terms' (no alignment). */
    ExprInfo info_of_linear(const LinearForm &f);

    // ---- rewrites on already simplified operands (Simplify_Arith.cpp) ----
    Expr rewrite_add(const Expr &a, const Expr &b);
    Expr rewrite_sub(const Expr &a, const Expr &b);
    Expr rewrite_mul(const Expr &a, const Expr &b);
    Expr rewrite_div(const Expr &a, const Expr &b);
    Expr rewrite_mod(const Expr &a, const Expr &b);
    Expr rewrite_cast(Type t, const Expr &v);
    /** Normalizes a linear form and rebuilds it in canonical order. */
    Expr rebuild(LinearForm lf);
    Expr rebuild_scalar(LinearForm lf);
    /** ext(x, y) - ext(x, z), for ext min or max and y - z a constant c, as
     * a clamp of one difference to [min(c, 0), max(c, 0)]: the bound that
     * interval arithmetic cannot see in the difference of two extrema
     * (the extent of a ragged tile, min(t, n - T) + T - min(t, n - 1)). */
    bool difference_of_paired_extrema(const Expr &a, const Expr &b, Type t, Expr *out);
    /** ext(x, b + c) - b as ext(x - b, c): what is left of a min or max less
     * one of its own operands (min(x, y) - y is min(x - y, 0), at most 0). */
    bool extremum_less_an_operand(const Expr &a, const Expr &b, Type t, Expr *out);

    // ---- Simplify_Cmp.cpp ----
    Expr rewrite_min(const Expr &a, const Expr &b);
    Expr rewrite_max(const Expr &a, const Expr &b);
    Expr rewrite_lt(const Expr &a, const Expr &b, bool strict);
    Expr rewrite_eq(const Expr &a, const Expr &b, bool eq);
    Expr rewrite_and(const Expr &a, const Expr &b);
    Expr rewrite_or(const Expr &a, const Expr &b);
    Expr rewrite_not(const Expr &a);
    Expr rewrite_select(const Expr &c, const Expr &t, const Expr &f);
    /** The sign of a - b if decidable: -1 (a < b), 0 (a == b), 1 (a > b);
     * `le` and `ge` report weaker facts a <= b, a >= b. */
    void compare(const Expr &a, const Expr &b, bool *lt, bool *le, bool *gt, bool *ge);
    /** Bounds of an integer d from the linear facts of enclosing if
     * conditions: under a < b, d = a - b + c is at most c - 1. A guard
     * ro * 8 + ri < n then decides min(ro * 8 + ri, n - 1), which a bound
     * of each variable alone cannot. */
    ExprInfo info_from_linear_facts(const Expr &d);
    /** Whether known facts (enclosing if conditions) decide a boolean. */
    Expr check_facts(const Expr &e);

    // ---- facts (Simplify_Stmt.cpp) ----
    struct Undo {
        enum Kind { TrueFact, FalseFact, Info, SymBound } kind;
        std::string name;
    };
    void learn(const Expr &cond, bool truth, std::vector<Undo> &undo);
    void unlearn(std::vector<Undo> &undo);

    bool remove_dead_lets;
    struct VarInfo {
        Expr replacement;  // defined: substitute this for the variable
        ExprInfo info;
    };
    Scope<VarInfo> vars;
    /** Expressions known to be simplified already (simplify_shallow's
     * operands): mutate returns them as they are. */
    std::vector<const IRNode *> trusted;
    /** info_of's results for compound expressions while `vars` is unchanged:
     * compare() asks for the info of the same nested min/max bounds many
     * times. The Expr keeps its node alive, so its address stays its key. */
    struct InfoCache {
        std::unordered_map<const IRNode *, std::pair<Expr, ExprInfo>> entries;
        uint64_t generation = 0;
    };
    InfoCache info_cache;
    /** Symbolic ranges of variables (loop variables, given bounds, learned
     * facts), for proofs through bounds_of_expr_in_scope. */
    Scope<Interval> sym_bounds;
    enum class SymProof { NonPositive, Negative, NonNegative, Positive };
    bool sym_prove(const Expr &e, SymProof goal);
    /** The symbolic range to record for a let binding name = value. */
    Interval sym_point(const std::string &name, const Expr &value) const;
    /** sym_prove's answers per goal (-1: not asked yet), keyed by the
     * expression and the ranges of the variables the proof can reach. */
    struct SymAnswers {
        int8_t answer[4] = {-1, -1, -1, -1};
    };
    struct SymKey {
        Expr e;
        // Per variable reached: its name; its range's ends and replacement
        // (by identity); its constant bounds and alignment.
        std::vector<std::string> names;
        std::vector<const IRNode *> nodes;
        std::vector<int64_t> numbers;
        std::vector<Expr> keep_alive;  // the nodes, so their addresses stay theirs
    };
    struct SymKeyLess {
        bool operator()(const SymKey &a, const SymKey &b) const;
    };
    SymKey sym_key(const Expr &e) const;
    std::map<SymKey, SymAnswers, SymKeyLess> sym_cache;
    /** The values of the enclosing LetStmts that are pure integer
     * expressions, and their names: a later let with the same value (or
     * that value plus a constant) becomes that name (plus the constant), so
     * that differences such as the extent max - min + 1 of a tile's loop,
     * whose bounds bounds inference writes out in full, fold to constants. */
    std::map<Expr, std::string, ExprDeepCompare> let_values;
    int sym_count = 0;
    std::vector<Expr> true_facts, false_facts;
    int depth = 0;

  protected:
    Expr visit(const IntImm *) override;
    Expr visit(const UIntImm *) override;
    Expr visit(const FloatImm *) override;
    Expr visit(const Cast *) override;
    Expr visit(const Reinterpret *) override;
    Expr visit(const Variable *) override;
    Expr visit(const Add *) override;
    Expr visit(const Sub *) override;
    Expr visit(const Mul *) override;
    Expr visit(const Div *) override;
    Expr visit(const Mod *) override;
    Expr visit(const Min *) override;
    Expr visit(const Max *) override;
    Expr visit(const EQ *) override;
    Expr visit(const NE *) override;
    Expr visit(const LT *) override;
    Expr visit(const LE *) override;
    Expr visit(const GT *) override;
    Expr visit(const GE *) override;
    Expr visit(const And *) override;
    Expr visit(const Or *) override;
    Expr visit(const Not *) override;
    Expr visit(const Select *) override;
    Expr visit(const Load *) override;
    Expr visit(const Ramp *) override;
    Expr visit(const Broadcast *) override;
    Expr visit(const Let *) override;
    Expr visit(const Call *) override;
    Expr visit(const VectorReduce *) override;
    Stmt visit(const LetStmt *) override;
    Stmt visit(const AssertStmt *) override;
    Stmt visit(const ProducerConsumer *) override;
    Stmt visit(const For *) override;
    Stmt visit(const Store *) override;
    Stmt visit(const Provide *) override;
    Stmt visit(const Allocate *) override;
    Stmt visit(const Realize *) override;
    Stmt visit(const Block *) override;
    Stmt visit(const IfThenElse *) override;
    Stmt visit(const Evaluate *) override;

  private:
    /** Whether the symbolic prover may be used (not nested in itself). */
    bool can_use_sym() const;

  public:
    /** Tries to show e <= 0 (strict: e < 0) using the symbolic ranges. */
    bool sym_prove_nonpositive(const Expr &e, bool strict);
    bool sym_prove_nonnegative(const Expr &e, bool strict);
};

// Helpers on constants.
bool const_int(const Expr &e, int64_t *v);  // int or uint scalar/broadcast constant, as bits
bool is_no_op(const Stmt &s);
Expr make_bool(bool v, int lanes);
int64_t wrap_to_type(int64_t v, Type t);  // sign-extends from t.bits for ints, masks for uints

}  // namespace internal
}  // namespace loom
