"""The phrase-interaction recurrence with a hand-written backward: what interaction.py's
modules run by default.

    xg  Gr x B x P x K   the input projections of every step (computed before, in one product)
    W   Gr x K x D       the recurrent weights
    H   Gr x B x P x D   the hidden states

Recorded by autograd, a step of the ON-LSTM is some 56 operators forward and backward; at the
benchmark's batches a GPU update is bound by launches, and the steps were most of MG-SA's
extra operators. Here the forward runs the steps without recording (one batched product with
W and one fused cell per step: recurrence_cells.py) and keeps what the backward needs (each
step's pre-activations and cell state); the backward walks the steps in reverse with one cell
backward and one product per step, and computes W's gradient after the loop as one batched
product over every step. The arithmetic is that of the plain recurrence
(StackedRecurrence.forward_reference), which the tests compare it with.
"""

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from .recurrence_cells import ops


def cell_ops(chunk_size: int):
    """(forward, backward) of the step: the LSTM's (chunk_size 0) or the ON-LSTM's."""
    if chunk_size:
        return (lambda z, c: ops.onlstm_cell(z, c, chunk_size),
                lambda *a: ops.onlstm_cell_backward(*a, chunk_size))
    return ops.lstm_cell, ops.lstm_cell_backward


class Recurrence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, xg: Tensor, weight_hh: Tensor, chunk_size: int) -> Tensor:
        P = xg.size(2)
        cell, _ = cell_ops(chunk_size)
        # float16 / bfloat16 states as autocast or --fp16 gives them: W cast once, not each step
        w = weight_hh if weight_hh.dtype == xg.dtype else weight_hh.to(xg.dtype)
        w_t = w.transpose(1, 2)
        zs, cs, hs = [], [], []
        h = c = None  # zero initial state: the first step has no product with it
        for t in range(P):
            z = xg[:, :, t] if h is None else torch.baddbmm(xg[:, :, t], h, w_t)
            h, c = cell(z, c)
            zs.append(z)
            cs.append(c)
            hs.append(h)
        out = torch.stack(hs, dim=2)
        # the states each step's product read, step-major: W's gradient is one product over them
        h_prev = torch.stack(hs[:-1], dim=1) if P > 1 else None
        # saved tensors (not ctx attributes), freed by the backward unless the graph is retained
        ctx.save_for_backward(w, h_prev, *zs, *cs)
        ctx.chunk_size, ctx.weight_dtype = chunk_size, weight_hh.dtype
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, d_out: Tensor):
        w, h_prev, *steps = ctx.saved_tensors
        P = len(steps) // 2
        zs, cs = steps[:P], steps[P:]
        _, cell_backward = cell_ops(ctx.chunk_size)
        dzs = [None] * P
        dh_rec = dc = None
        for t in reversed(range(P)):
            dz, dc = cell_backward(zs[t], cs[t - 1] if t else None, cs[t], d_out[:, :, t], dh_rec, dc)
            if t:
                dh_rec = torch.bmm(dz, w)
            dzs[t] = dz
        d_xg = torch.stack(dzs, dim=2)
        if P > 1:
            Gr, B, K = dzs[0].shape
            d_later = torch.stack(dzs[1:], dim=1).view(Gr, -1, K)  # Gr x (P-1)B x K, step-major
            d_w = torch.bmm(d_later.transpose(1, 2), h_prev.view(Gr, -1, w.size(2)))
        else:
            d_w = torch.zeros_like(w)
        return d_xg, d_w.to(ctx.weight_dtype), None


def recurrence(xg: Tensor, weight_hh: Tensor, chunk_size: int = 0) -> Tensor:
    """Hidden states of the LSTM (chunk_size 0) or ON-LSTM over the steps of xg (module docstring)."""
    return Recurrence.apply(xg, weight_hh, chunk_size)
