// Plain attention, written as in DESIGN.md: scores, a materialized softmax
// (max, exp, sum) and the weighted sum of values. No scheduling here.
#pragma once

#include <loom/loom.h>

#include "attention_reference.h"

namespace attention {

struct Attention {
    // Inputs in [batch, heads, seq, head_dim] order (the last index innermost).
    loom::BufferParam q, k, v;
    loom::Param<float> scale{"scale"};
    loom::Var b{"b"}, h{"h"}, i{"i"}, j{"j"}, d{"d"};
    loom::Func s{"s"}, m{"m"}, p{"p"}, l{"l"}, o{"o"}, out{"out"};
    /** The keys every reduction of the softmax chain runs over. */
    loom::RDom r;

    explicit Attention(loom::Type input_type)
        : q(input_type, 4, "q"), k(input_type, 4, "k"), v(input_type, 4, "v") {
        define(input_type);
    }
    /** Over parameters made elsewhere, e.g. a generator's Inputs, so that the
     * generated function takes them as its arguments. q, k and v must have
     * the same element type, which is also the output's. */
    Attention(loom::BufferParam q_, loom::BufferParam k_, loom::BufferParam v_,
              loom::Param<float> scale_)
        : q(std::move(q_)), k(std::move(k_)), v(std::move(v_)), scale(std::move(scale_)) {
        define(q.type());
    }

  private:
    void define(loom::Type input_type) {
        using namespace loom;
        r = RDom(0, k.dim(2).extent(), "r");
        RDom e(0, q.dim(3).extent(), "e");
        s(b, h, i, j) = sum(cast<float>(q(b, h, i, e)) * cast<float>(k(b, h, j, e))) * scale;
        m(b, h, i) = maximum(s(b, h, i, r));
        p(b, h, i, j) = exp(s(b, h, i, j) - m(b, h, i));
        l(b, h, i) = sum(p(b, h, i, r));
        o(b, h, i, d) = sum(p(b, h, i, r) * cast<float>(v(b, h, r, d)));
        out(b, h, i, d) = cast(input_type, o(b, h, i, d) / l(b, h, i));
    }

  public:
    /** A CPU schedule: blocks of queries in parallel; per block the scores,
     * probabilities and softmax statistics are materialized, vectorized
     * along the key and head dimensions. */
    void schedule_cpu(loom::Schedule &sch, int query_block = 16, int vector = 8) const {
        using namespace loom;
        Var io("io"), ii("ii"), t("t");
        sch[out].split(i, io, ii, query_block).fuse(h, io, t).parallel(t).vectorize(d, vector);
        sch[s].compute_at(out, t).vectorize(j, vector);
        sch[m].compute_at(out, t);
        sch[p].compute_at(out, t).vectorize(j, vector);
        sch[l].compute_at(out, t);
        sch[o].compute_at(out, t).vectorize(d, vector);
    }
    loom::Schedule cpu_schedule(int query_block = 16, int vector = 8) const {
        loom::Schedule sch;
        schedule_cpu(sch, query_block, vector);
        return sch;
    }
};

}  // namespace attention
