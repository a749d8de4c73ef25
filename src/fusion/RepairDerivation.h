// Repair derivation for reduction fusion (rolling_update, split_k).
//
// A dependent reduction X ⊕= g(r, c) reads the final value r of producer
// reductions. Fused with them it only sees running values, so whenever a
// producer moves from r to r' its partial result t must be repaired by h:
//
//   (1) h(g(r, c), r, r') = g(r', c)      (the repair is exact per term)
//   (2) h(x ⊕ y, r, r') = h(x) ⊕ h(y)     (so it is exact for partial sums)
//
// This file derives h from g, proves (1) and (2) and explains refusals. It
// knows four shapes of h, found by separating g into its producer part and
// the rest on a polynomial normal form (PolynomialForm.h), where "free of
// c" means free of every value that varies from term to term (what reads
// the RVar): Params, buffer values and Funcs of the row are constants there.
//   scale:   g = C(c) · b^Λ(r, c) (b = e, or a positive base free of c) with
//            Λ(r', c) − Λ(r, c) free of c, so h(t) = t · b^(Λ(r') − Λ(r)).
//            Linear in t, with a positive factor: distributes over +, max
//            and min. Run-time scales (exp((x − m) / T)) are of this shape.
//   shift:   g(r', c) − g(r, c) = D(r, r') free of c, so h(t) = t + D.
//            Distributes over max and min.
//   carried: under +, g a polynomial of degree D in its one producer r. A
//            partial sum t = Σ g(r, c) is then a polynomial in r, kept in
//            Taylor form about the value it was summed at: the running sums
//            B_k = Σ d_k(r, c) of g's Taylor coefficients d_k = ∂^k g / k!
//            (k = 1..D) are carried beside t, and a move by δ = r' − r
//            shifts them all, B_j' = Σ_{k>=j} C(k, j) B_k δ^(k−j) (t = B_0).
//            Each B_k below the top reads r itself, so it is a repaired
//            reduction too; a constant top coefficient is carried as a term
//            count. Linear in (t, B), so it distributes over +. Kept about a
//            value near the final one (ReductionFusion's pivots), this is
//            Welford's update for variance and Chan's combine for chunks.
//            With g(r') − g(r) = D free of c and several producers, the
//            carried sum is a term count: h = t + count · D.
//   reset:   h(t) = t if the max (min) producer did not move, else the
//            identity: terms like select(x == max, v, e) that count only
//            while they attain the producer (online top-1 carrying a value).
//            Exact under the producer's invariant φ(c) <= r <= r', which the
//            numerical check samples.
// (1) is proved symbolically on the polynomial normal form of the exponent,
// the difference, or both sides of (1) (Loom's float simplifier does not
// reassociate, so the proof normalizes on its own); every repair is also
// checked in float64 at random points. Where the symbolic separation fails,
// a repair found numerically (g(r', c) / g(r, c) the same for every sampled
// c) is accepted and the log says so. Whether a repair is also accurate in
// the pipeline's precision is RepairConditioning's question.
#pragma once

#include <string>
#include <vector>

#include "loom/IR.h"

namespace loom {
namespace internal {

enum class ReduceOp { Add, Mul, Max, Min };

const char *reduce_op_name(ReduceOp op);
/** a ⊕ b. */
Expr reduce_combine(ReduceOp op, const Expr &a, const Expr &b);
/** a ⊕ b in float64. */
double reduce_combine(ReduceOp op, double a, double b);
/** The identity of ⊕ in type t (0, 1, -inf, +inf). */
Expr reduce_identity(ReduceOp op, Type t);

/** What a dependent reduction reads from one producer: the Variable that
 * stands for the producer's value inside g. */
struct ProducerSlot {
    std::string func;  // the producer Func's name (for messages)
    std::string var;   // the Variable in g standing for its final value
    ReduceOp op;       // the producer's own reduction
    Type type;         // the producer's value type
    /** The producer's own term φ(c), if it reads no producer itself. For a
     * max (min) producer, every term c already in a partial result t was
     * also reduced into the producer, so φ(c) <= r <= r' (>= for min): the
     * properties need to hold only there, which is what makes a reset
     * repair exact. */
    Expr per_term;
};

/** A running sum that a carried repair keeps beside the reduction: each
 * term adds `per_term` (in g's variables; the constant 1 for a term count),
 * and a producer move from r to r' changes the reduction by the sum times
 * `change` (in the slot variables and their primed names). */
struct CarriedSum {
    Expr per_term;
    Expr change;
    bool is_count() const;
};

struct Repair {
    enum Kind { None, Scale, Shift, Carried, Reset };
    Kind kind = None;
    /** Scale: the factor F, h(t) = t * F. Shift: the offset D, h(t) = t + D.
     * In terms of the slot Variables (old values) and the same names with a
     * trailing ' (new values). Reset: the identity e of ⊕, h(t) = t if no
     * producer moved, else e: for terms that count only while they attain
     * the producer (select(x == max, v, e)), which a moved max forgets. */
    Expr term;
    /** Carried: h(t, A, r, r') = t + Σ_k A_k * carried[k].change. */
    std::vector<CarriedSum> carried;
    /** Carried, one per entry of `carried`: the repair of a carried sum whose
     * per_term reads the producer (a Taylor coefficient below the top), in
     * terms of later entries of `carried` (matched by per_term); kind None
     * for a sum that reads no producer. */
    std::vector<Repair> carried_repairs;
    bool proved_symbolically = false;
    std::string log;  // how h was found and accepted, for the compile log

    /** h applied to t, for producers moving from old_values to new_values
     * (one per slot, in slot order); `sums` are the carried running sums
     * over the same terms as t (Carried only). */
    Expr apply(const Expr &t, const std::vector<ProducerSlot> &slots,
               const std::vector<Expr> &old_values, const std::vector<Expr> &new_values,
               const std::vector<Expr> &sums = {}) const;
    /** h as a readable formula, e.g. "h(t, m, m') = t * exp(m - m')". */
    std::string formula(const std::vector<ProducerSlot> &slots) const;
};

/** Derives the repair of the dependent reduction `member` (⊕ = op, per-term
 * contribution g) for its producers. Throws a CompileError naming the
 * member, the producer and the failed property when no repair exists.
 * `directive` names the schedule directive for the message. */
Repair derive_repair(const std::string &member, ReduceOp op, const Expr &g,
                     const std::vector<ProducerSlot> &slots, const std::string &directive);

/** Whether the term g of a reduction ⊕ is ⊕'s identity wherever `mask` is
 * false, for any finite values of the producers in `slots`: then the points
 * outside the mask change nothing and may be skipped. Checked in float64 at
 * random points outside the mask (false when too few fall outside). */
bool vanishes_where_false(const Expr &g, ReduceOp op, const Expr &mask,
                          const std::vector<ProducerSlot> &slots);

/** Whether e reads a reduction variable: it varies from term to term (it
 * is part of the c of g). What does not (a Param, a buffer value or a Func
 * of the row, the row's Vars) is the same for every term of one reduction. */
bool reads_rvar(const Expr &e);

/** The float64 function of a one-argument math intrinsic (exp_f32, abs,
 * ...), or null. */
double (*math_function(const std::string &name))(double);

/** The name of the Variable standing for the new value of a slot. */
std::string primed(const std::string &var);

}  // namespace internal
}  // namespace loom
