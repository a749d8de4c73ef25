// Lesson 5: where producers are computed, and bounds inference.
//
// When one Func reads another, the schedule decides where the producer is
// computed: inline in the consumer (the default for pure Funcs), all at once
// before the consumer (compute_root), or piece by piece inside one of the
// consumer's loops (compute_at). Loom infers how much of the producer each
// piece needs from the consumer's loops: bounds inference.
#include <cmath>
#include <cstdio>

#include <loom/loom.h>

using namespace loom;

int main() {
    BufferParam input(Float(32), 2, "input");
    Var y("y"), x("x");
    Func blur_x("blur_x"), blur_y("blur_y");
    blur_x(y, x) = (input(y, x) + input(y, x + 1) + input(y, x + 2)) / 3.0f;
    blur_y(y, x) = (blur_x(y, x) + blur_x(y + 1, x) + blur_x(y + 2, x)) / 3.0f;

    Buffer<float> in({34, 50});
    in.fill([](const std::vector<int> &c) { return std::sin(c[0] * 0.3f) + c[1] * 0.1f; });
    input.set(in);
    Pipeline pipe(blur_y);
    Buffer<float> reference(pipe.realize({32, 48}));

    // Inline: blur_x is recomputed three times per output point, no storage.
    // compute_root: all of blur_x first (34 x 48 points: bounds inference
    // adds the two extra rows blur_y reads), then all of blur_y.
    Schedule root;
    root[blur_x].compute_root();
    std::printf("compute_root:\n%s", pipe.print_loop_nest(root).c_str());

    // compute_at: blur_y in 8x16 tiles; for each tile, the 10x16 region of
    // blur_x that the tile reads is computed just before it. Good locality,
    // a little recomputation at the tile edges.
    Var yo("yo"), xo("xo"), yi("yi"), xi("xi");
    Schedule tiles;
    tiles[blur_y].tile(y, x, yo, xo, yi, xi, 8, 16);
    tiles[blur_x].compute_at(blur_y, xo);
    std::printf("compute_at(blur_y, xo):\n%s", pipe.print_loop_nest(tiles).c_str());

    // store_root + compute_at: storage for all of blur_x, filled piece by
    // piece per row strip.
    Schedule strips;
    strips[blur_y].split(y, yo, yi, 4);
    strips[blur_x].store_root().compute_at(blur_y, yo);

    for (const Schedule &s : {root, tiles, strips}) {
        Buffer<float> out(pipe.realize({32, 48}, s));
        for (int j = 0; j < 32; j++) {
            for (int i = 0; i < 48; i++) {
                if (std::abs(out(j, i) - reference(j, i)) > 1e-5f) {
                    std::printf("mismatch at (%d, %d)\n", j, i);
                    return 1;
                }
            }
        }
    }

    // Bounds inference takes each region from what is read, and sometimes
    // you know more. A colour image has three channels, but its channel
    // Var ranges over whatever the output buffer holds, so a per-pixel
    // producer's channel loop has a run-time extent and cannot be unrolled.
    // bound(c, 0, 3) fixes the region (Halide's bound): a constant loop and
    // a constant 3-element buffer per pixel. On an output, the buffer must
    // then have exactly those channels; a Func read past its bound fails
    // the call with an error naming it.
    BufferParam rgb(Float(32), 3, "rgb");
    Var c("c");
    Func weighted("weighted"), toned("toned");
    weighted(y, x, c) = rgb(y, x, c) * select(c == 0, 0.3f, select(c == 1, 0.59f, 0.11f));
    toned(y, x, c) = weighted(y, x, c) * 0.5f +
                     (weighted(y, x, 0) + weighted(y, x, 1) + weighted(y, x, 2)) * 0.5f;
    Schedule colour;
    colour[weighted].compute_at(toned, x).bound(c, 0, 3).unroll(c);
    colour[toned].bound(c, 0, 3).unroll(c);
    std::printf("bound(c, 0, 3):\n%s", Pipeline(toned).print_loop_nest(colour).c_str());

    Buffer<float> image({4, 5, 3});
    image.fill([](const std::vector<int> &p) { return 0.1f * (p[0] + p[1] + p[2]); });
    rgb.set(image);
    Buffer<float> toned_out(Pipeline(toned).realize({4, 5, 3}, colour));
    Buffer<float> toned_ref(Pipeline(toned).realize({4, 5, 3}));
    if (std::abs(toned_out(3, 4, 2) - toned_ref(3, 4, 2)) > 1e-6f) return 1;
    try {
        Pipeline(toned).realize({4, 5, 4}, colour);
        return 1;
    } catch (const RuntimeError &e) {
        std::printf("four channels: %s\n", e.what());
    }

    // The lowered statement shows the inferred bounds explicitly.
    std::string stmt = pipe.compile_to_lowered_stmt(tiles);
    if (stmt.find("blur_x") == std::string::npos) return 1;
    std::printf("Lesson 5 passed.\n");
    return 0;
}
