// Attention written as the plain chain, for tile programs to roll: the
// scores' product as a named contraction over the head dimension, the
// rows' maximum and sum, the weighted sum of the values, and its ratio.
// Scheduled as one tile program whose rolling_update rolls the chain over
// tiles of keys (on the GPU: the products on tensor cores, P rounded to
// the values' type for P V).
#pragma once

#include <cmath>

#include "loom/loom.h"

namespace loom_test {

struct RolledAttention {
    loom::BufferParam Q, K, V;
    loom::Var i{"i"}, j{"j"}, d{"d"}, io{"io"}, dout{"dout"};
    loom::RDom e, r;
    loom::Func qk{"qk"}, m{"m"}, l{"l"}, o{"o"}, out{"out"};

    RolledAttention(loom::Type in, float scale, bool causal)
        : Q(in, 2, "Q"),
          K(in, 2, "K"),
          V(in, 2, "V"),
          e(0, Q.dim(1).extent(), "e"),
          r(0, K.dim(0).extent(), "r") {
        using namespace loom;
        qk(i, j) = 0.0f;
        qk(i, j) += cast<float>(Q(i, e)) * cast<float>(K(j, e));
        Expr s = qk(i, r) * scale;
        if (causal) s = select(r <= i, s, Expr(-INFINITY));
        m(i) = Expr(-INFINITY);
        m(i) = max(m(i), s);
        l(i) = 0.0f;
        l(i) += exp(s - m(i));
        o(i, d) = 0.0f;
        o(i, d) += exp(s - m(i)) * cast<float>(V(r, d));
        out(i, d) = o(i, d) / l(i);
    }

    /** rows x head_dim output tiles, the keys in tiles of key_tile. */
    loom::Schedule schedule(int rows, int head_dim, int key_tile, loom::TileOptions options,
                            bool tensor_cores) {
        using namespace loom;
        Schedule sch;
        sch[out].tile_program(i, d, io, dout, rows, head_dim, options);
        RVar ro("ro"), ri("ri");
        sch.rolling_update(o, r).split(r, ro, ri, key_tile);
        sch[o].compute_at(out, dout);
        sch[qk].compute_at(out, dout);
        if (tensor_cores) {
            sch[qk].update().tensorize("mma.m16n8k16");
            sch[o].update().tensorize("mma.m16n8k16", TensorizeRounding::RoundOperands);
        }
        return sch;
    }
};

}  // namespace loom_test
