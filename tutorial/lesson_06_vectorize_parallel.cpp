// Lesson 6: vector and parallel loops.
//
// vectorize(x, n) splits x by n and turns the inner loop into SIMD
// instructions (AVX2 or AVX-512 on x86). parallel(y) runs the iterations of
// y on Loom's thread pool (LOOM_NUM_THREADS sets its size).
#include <chrono>
#include <cmath>
#include <cstdio>

#include <loom/loom.h>

using namespace loom;

int main() {
    BufferParam a(Float(32), 2, "a");
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = sqrt(a(y, x) * a(y, x) + 1.0f) * 0.5f;

    Buffer<float> in({301, 1003});
    in.fill([](const std::vector<int> &c) { return static_cast<float>((c[0] * 7 + c[1]) % 13); });
    a.set(in);
    Pipeline pipe(f);

    Schedule fast;
    Var yo("yo"), yi("yi");
    fast[f].vectorize(x, 8).split(y, yo, yi, 16).parallel(yo);
    std::printf("%s", pipe.print_loop_nest(fast).c_str());

    // The vector loop compiles to 256-bit ymm instructions.
    CompiledPipeline kernel = pipe.compile(fast);
    if (kernel.assembly().find("ymm") == std::string::npos) {
        std::printf("expected AVX vector instructions\n");
        return 1;
    }

    // Odd sizes (1003 is not a multiple of 8, 301 not of 16) are handled by
    // guarded tails; the results match the scalar default schedule exactly.
    Buffer<float> scalar(pipe.realize({301, 1003}));
    Buffer<float> out({301, 1003});
    auto t0 = std::chrono::steady_clock::now();
    kernel.realize({out});
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (int j = 0; j < 301; j++) {
        for (int i = 0; i < 1003; i++) {
            if (out(j, i) != scalar(j, i)) {
                std::printf("mismatch at (%d, %d)\n", j, i);
                return 1;
            }
        }
    }
    std::printf("vectorized + parallel: %.3f ms\n", ms);

    // The RVar of a reduction can be vectorized too, when every iteration
    // updates the same point with an associative operator (+, *, min, max,
    // && or ||). Each vector of iterations then combines its lanes, and a
    // serial loop around it keeps a vector of partial results, combined once
    // at its end: the loop body is one vector add. The lanes add in a
    // different order than the serial loop, so a float sum may differ in its
    // last bits (as with Halide's rfactor, or a GPU reduction).
    BufferParam m(Float(32), 2, "m");
    Var row("row");
    RDom k(0, m.dim(1).extent(), "k");
    Func row_sum("row_sum");
    row_sum(row) = 0.0f;
    row_sum(row) += m(row, k);
    Buffer<float> mat({64, 4099});
    mat.fill([](const std::vector<int> &c) { return static_cast<float>((c[0] + c[1]) % 7); });
    m.set(mat);
    Pipeline sums(row_sum);
    Schedule by_lanes;
    by_lanes[row_sum].update().vectorize(k, 16);
    Buffer<float> serial_sums(sums.realize({64}));
    Buffer<float> vector_sums({64});
    sums.compile(by_lanes).realize({vector_sums});
    for (int j = 0; j < 64; j++) {
        // Small integers: every order of the additions gives the same sum.
        if (vector_sums(j) != serial_sums(j)) {
            std::printf("row sums differ at %d\n", j);
            return 1;
        }
    }
    std::string stmt = sums.compile_to_lowered_stmt(by_lanes);
    if (stmt.find("vector_reduce_add") == std::string::npos) {
        std::printf("expected a vector reduction\n");
        return 1;
    }
    std::printf("row sums over vectors of 16 lanes match\n");

    // For the same reason such an update may visit its reduction domain in
    // any order: its RVars may be reordered, or split and interleaved, as
    // Halide allows for an update it proves associative and commutative.
    // Here each block of 8 rows is summed column by column (blk.y, the
    // column, outermost) rather than row by row, the domain's own order.
    RDom blk({{0, 8}, {0, 4099}}, "blk");
    Func block_sum("block_sum");
    block_sum(row) = 0.0f;
    block_sum(row) += m(row * 8 + blk.x, blk.y);
    Pipeline blocks(block_sum);
    Schedule by_columns;
    by_columns[block_sum].update().reorder(blk.y, blk.x);
    Buffer<float> in_order(blocks.realize({8}));
    Buffer<float> by_column({8});
    blocks.compile(by_columns).realize({by_column});
    for (int j = 0; j < 8; j++) {
        if (by_column(j) != in_order(j)) {
            std::printf("block sums differ at %d\n", j);
            return 1;
        }
    }
    std::printf("block sums visited column by column match\n");

    // An argmax keeps a point, not a value: the index of the row's largest
    // element, written out as a Tuple update whose elements all change
    // where a point beats the best so far. No operator combines two lanes'
    // indices, nor may its RVar be reordered (ties would go another way),
    // but each lane can keep its own best point (its value, index and
    // place in the loop's order), and after the loop the lanes are folded
    // into the row's answer: the largest value, and of equal values the
    // first point, exactly as the serial loop decides (with >= instead of
    // >, the last).
    Func best("best");
    best(row) = Tuple(0, type_min(Float(32)));
    Expr beats = m(row, k) > best(row)[1];
    best(row) = Tuple(select(beats, Expr(k), best(row)[0]), select(beats, m(row, k), best(row)[1]));
    Pipeline argmax(best);
    Schedule argmax_lanes;
    argmax_lanes[best].update().vectorize(k, 16);
    Buffer<int32_t> serial_index({64}), vector_index({64});
    Buffer<float> serial_value({64}), vector_value({64});
    argmax.realize(std::vector<RawBuffer>{serial_index, serial_value});
    argmax.compile(argmax_lanes).realize(std::vector<RawBuffer>{vector_index, vector_value});
    for (int j = 0; j < 64; j++) {
        // Values 0..6 repeat along every row: the first 6 must win.
        if (vector_index(j) != serial_index(j) || vector_value(j) != serial_value(j)) {
            std::printf("argmax differs at row %d\n", j);
            return 1;
        }
    }
    // In the lowered statement, each lane's best so far lives in arrays of
    // 16 (best.1.lane_key..., lane_rank..., best.0.lane_value...).
    if (argmax.compile_to_lowered_stmt(argmax_lanes).find("lane_key") == std::string::npos) {
        std::printf("expected each lane to keep its own point\n");
        return 1;
    }
    std::printf("argmax over vectors of 16 lanes keeps the first maximum\n");

    // A loop that carries a dependence cannot be vectorized or parallelized
    // (nor can its RVars be reordered): Loom refuses it with an error naming
    // the loop.
    BufferParam v(Float(32), 1, "v");
    RDom r(1, 99, "r");
    Func scan("scan");
    scan(x) = v(x);
    scan(r) = scan(r - 1) + v(r);
    Schedule bad;
    try {
        bad[scan].update().parallel(r);
        std::printf("expected an error\n");
        return 1;
    } catch (const CompileError &e) {
        std::printf("refused as expected: %s\n", e.what());
    }
    std::printf("Lesson 6 passed.\n");
    return 0;
}
