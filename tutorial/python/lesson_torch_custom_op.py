"""Lesson: a Loom kernel inside a PyTorch model, eager and torch.compile'd.

A kernel written in Loom is a function of tensors like any other, so it can
sit inside a torch.nn.Module. loom.torch.custom_op registers a compiled
pipeline as a PyTorch custom operator (torch.ops.loom.<name>) with a "fake"
implementation that tells PyTorch the output's shape, dtype and device
without running anything. That is what torch.compile needs to trace
through the op: the model compiles with fullgraph=True, i.e. with no graph
break, and the traced graph calls Loom's machine code.

The kernel here is a row softmax, softmax(x * scale) over the last
dimension, fused into one loop nest per row. rolling_update (lesson 10)
makes it an online softmax: the running max and the sum of exponentials
are computed in one pass over the row, then a second pass writes the
output, instead of three passes.
"""
import sys

import numpy as np
import torch

import loom
import loom.torch  # noqa: F401  (imports PyTorch's side of loom: custom_op)


def softmax_kernel():
    """The Loom row softmax, compiled for this CPU."""
    x = loom.BufferParam(loom.Float(32), 2, "x")
    scale = loom.Param(loom.Float(32), "scale")  # a float argument of the op
    row, col = loom.Var("row"), loom.Var("col")
    r = loom.RDom(0, x.dim(1).extent(), name="r")

    # The algorithm is the textbook one: subtract the row max so that exp
    # cannot overflow, exponentiate, normalize.
    z, m, e, l, softmax = (loom.Func(n) for n in ("z", "m", "e", "l", "softmax"))
    z[row, col] = x[row, col] * scale
    m[row] = loom.maximum(z[row, r])
    e[row, col] = loom.exp(z[row, col] - m[row])
    l[row] = loom.sum(e[row, r])
    softmax[row, col] = e[row, col] / l[row]

    # The schedule: rows in parallel, columns in vectors of 8; m and l per
    # row, fused into one pass over the row by rolling_update, which
    # derives the rescaling of l when the running max grows.
    sch = loom.Schedule()
    sch[softmax].parallel(row).vectorize(col, 8)
    sch.rolling_update(l, r)
    sch[l].compute_at(softmax, row)
    # output_shape=0: the output has the shape of input buffer 0, x.
    return loom.Pipeline(softmax).compile(sch, output_shape=0)


class TinyAttention(torch.nn.Module):
    """One head of self-attention over [batch, tokens, dim]; the softmax is
    Loom's op or PyTorch's."""

    def __init__(self, dim, softmax):
        super().__init__()
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.softmax = softmax
        self.scale = dim ** -0.5

    def forward(self, x):
        batch, tokens, dim = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2)
        # The kernel is 2-D: every (batch, query) pair is one row.
        probs = self.softmax(scores.reshape(-1, tokens), self.scale).reshape(batch, tokens, tokens)
        return self.proj(probs @ v)


def torch_softmax(x, scale):
    return torch.softmax(x * scale, dim=-1)


def main():
    torch.manual_seed(int(np.random.SeedSequence().entropy % 2**31))
    kernel = softmax_kernel()
    print("compile log:\n  " + "\n  ".join(kernel.compile_log()))

    # Register the kernel as torch.ops.loom.tutorial_softmax. The op takes
    # the kernel's inputs (x: Tensor, scale: float), allocates the output,
    # and returns it; output_shape is given the op's arguments (fake
    # tensors while torch.compile traces).
    op = loom.torch.custom_op("tutorial_softmax", kernel,
                              output_shape=lambda x, scale: x.shape)

    # 1. The op alone, against PyTorch in float64, on odd sizes.
    x = torch.randn(19, 45) * 4
    got = op(x, 0.3)
    want = torch.softmax(x.double() * 0.3, dim=-1)
    torch.testing.assert_close(got, want.float(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.ops.loom.tutorial_softmax(x, 0.3), got, rtol=0, atol=0)
    print(f"op vs float64 softmax: largest difference {(got.double() - want).abs().max():.1e}")

    # 2. A model using it, against the same model with PyTorch's softmax
    # (the same weights). The op has no backward: this is inference, so
    # run without autograd.
    model = TinyAttention(24, op).eval()
    reference = TinyAttention(24, torch_softmax).eval()
    reference.load_state_dict(model.state_dict())
    tokens = torch.randn(3, 37, 24)
    with torch.no_grad():
        want = reference(tokens)
        eager = model(tokens)
        torch.testing.assert_close(eager, want, rtol=1e-4, atol=1e-5)
        print(f"eager model: largest difference {(eager - want).abs().max():.1e}")

        # 3. torch.compile, with fullgraph=True: a graph break (PyTorch
        # falling back to Python around an op it cannot trace) is an error.
        # The fake implementation gives the output's shape, so Loom's op is
        # one node of the compiled graph.
        compiled = torch.compile(model, fullgraph=True)
        out = compiled(tokens)
        torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)
        print(f"torch.compile(fullgraph=True): largest difference {(out - want).abs().max():.1e}")

        # The compiled graph really calls Loom: count the op's calls
        # through torch's dispatcher while the compiled model runs.
        calls = []

        def counting(x, scale):
            calls.append(tuple(x.shape))
            return kernel(x, scale)

        op.register_kernel("cpu", counting)
        out = compiled(tokens)
        torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)
        if calls != [(3 * 37, 37)]:
            print(f"expected one call of the Loom op on a (111, 37) tensor, saw {calls}")
            return 1

    print("Lesson (torch custom op) passed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
