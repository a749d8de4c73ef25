"""Lesson 5: where producers are computed, and bounds inference.

When one Func reads another, the schedule decides where the producer is
computed: inline in the consumer (the default for pure Funcs), all at once
before the consumer (compute_root), or piece by piece inside one of the
consumer's loops (compute_at). Loom infers how much of the producer each
piece needs from the consumer's loops: bounds inference.
"""
import sys

import numpy as np

import loom


def main():
    rng = np.random.default_rng()
    input_ = loom.BufferParam(loom.Float(32), 2, "input")
    y, x = loom.Var("y"), loom.Var("x")
    blur_x, blur_y = loom.Func("blur_x"), loom.Func("blur_y")
    blur_x[y, x] = (input_[y, x] + input_[y, x + 1] + input_[y, x + 2]) / 3.0
    blur_y[y, x] = (blur_x[y, x] + blur_x[y + 1, x] + blur_x[y + 2, x]) / 3.0

    # A 3x3 box blur reads two rows and two columns past each output
    # point, so the output is smaller than the input. The sizes are odd on
    # purpose: 35 x 51 is no multiple of the tiles below.
    image = rng.standard_normal((37, 53)).astype(np.float32)
    shape = (image.shape[0] - 2, image.shape[1] - 2)
    i64 = image.astype(np.float64)
    bx = (i64[:, :-2] + i64[:, 1:-1] + i64[:, 2:]) / 3
    want = (bx[:-2] + bx[1:-1] + bx[2:]) / 3

    pipe = loom.Pipeline(blur_y)

    # Inline: blur_x is recomputed three times per output point, no storage.
    # compute_root: all of blur_x first (37 x 51 points: bounds inference
    # adds the two extra rows blur_y reads), then all of blur_y.
    root = loom.Schedule()
    root[blur_x].compute_root()
    print("compute_root:\n" + pipe.print_loop_nest(root))

    # compute_at: blur_y in 8x16 tiles; for each tile, the 10x16 region of
    # blur_x that the tile reads is computed just before it. Good locality,
    # a little recomputation at the tile edges.
    yo, xo, yi, xi = loom.Var("yo"), loom.Var("xo"), loom.Var("yi"), loom.Var("xi")
    tiles = loom.Schedule()
    tiles[blur_y].tile(y, x, yo, xo, yi, xi, 8, 16)
    tiles[blur_x].compute_at(blur_y, xo)
    print("compute_at(blur_y, xo):\n" + pipe.print_loop_nest(tiles))

    # store_root + compute_at: storage for all of blur_x, filled piece by
    # piece per row strip.
    strips = loom.Schedule()
    strips[blur_y].split(y, yo, yi, 4)
    strips[blur_x].store_root().compute_at(blur_y, yo)

    # The schedule changes how, never what: every schedule, including the
    # default (None: blur_x inline), computes the same values.
    for name, s in (("inline", None), ("compute_root", root), ("tiles", tiles),
                    ("strips", strips)):
        out = pipe.compile(s, output_shape=shape)(image)
        if out.shape != want.shape or not np.allclose(out, want, rtol=1e-5, atol=1e-5):
            print(f"{name}: differs from NumPy by {np.abs(out - want).max()}")
            return 1

    # Bounds inference takes each region from what is read, and sometimes
    # you know more. A colour image has three channels, but its channel
    # Var ranges over whatever the output buffer holds, so a per-pixel
    # producer's channel loop has a run-time extent and cannot be unrolled.
    # bound(c, 0, 3) fixes the region (Halide's bound): a constant loop and
    # a constant 3-element buffer per pixel. On an output, the buffer must
    # then have exactly those channels; a Func read past its bound fails
    # the call with an error naming it.
    rgb = loom.BufferParam(loom.Float(32), 3, "rgb")
    c = loom.Var("c")
    weighted, toned = loom.Func("weighted"), loom.Func("toned")
    weighted[y, x, c] = rgb[y, x, c] * loom.select(c == 0, 0.3, loom.select(c == 1, 0.59, 0.11))
    toned[y, x, c] = weighted[y, x, c] * 0.5 + \
        (weighted[y, x, 0] + weighted[y, x, 1] + weighted[y, x, 2]) * 0.5
    colour = loom.Schedule()
    colour[weighted].compute_at(toned, x).bound(c, 0, 3).unroll(c)
    colour[toned].bound(c, 0, 3).unroll(c)
    print("bound(c, 0, 3):\n" + loom.Pipeline(toned).print_loop_nest(colour))

    picture = rng.uniform(0, 1, (9, 11, 3)).astype(np.float32)
    toning = loom.Pipeline(toned).compile(colour, output_shape=0)
    toned_out = toning(picture)
    w = picture.astype(np.float64) * np.array([0.3, 0.59, 0.11])
    toned_want = w * 0.5 + w.sum(axis=2, keepdims=True) * 0.5
    if not np.allclose(toned_out, toned_want, rtol=1e-5, atol=1e-6):
        print(f"toned differs from NumPy by {np.abs(toned_out - toned_want).max()}")
        return 1
    # Four output channels break the promise: the call raises before it
    # writes anything.
    four = np.full((9, 11, 4), 7.0, np.float32)
    try:
        toning(picture, four)
        print("expected a loom.RuntimeError for four channels")
        return 1
    except loom.RuntimeError as e:
        print(f"four channels: {e}")
    if not np.all(four == 7.0):
        print("the failed call wrote into its output")
        return 1

    # The lowered statement shows the inferred bounds explicitly.
    stmt = pipe.compile_to_lowered_stmt(tiles)
    if "blur_x" not in stmt:
        print("the lowered statement does not mention blur_x")
        return 1
    print("Lesson 5 passed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
