"""The whole phrase-interaction recurrence, every step of every granularity, as one operator
each way (`torch.ops.mgsa_recurrence.{lstm,onlstm}_recurrence[_backward]`), which the
hand-written recurrence (recurrence.py) calls once per forward and once per backward.

    forward(xg, W[, chunk_size]) -> (H, Z, C, H_prev)
        xg  Gr x B x P x K   the input projections of every step (may be a strided view)
        W   Gr x K x D       the recurrent weights, in xg's dtype
        H   Gr x B x P x D   the hidden states (the layer's output)
        Z   Gr x B x P x K   each step's gate pre-activations,  C  Gr x B x P x D  its cell state
        H_prev  Gr x (P-1)B x D  the states steps 1..P-1 multiplied by W, step-major
    backward(Z, C, W, dH[, chunk_size]) -> (dxg, dZ_later)
        dxg      Gr x B x P x K      the gradient of the pre-activations (= of xg)
        dZ_later Gr x (P-1)B x K     that of steps 1..P-1, step-major: W's gradient is then one
                                     product, dZ_later^T H_prev (recurrence.py)

On a CUDA device with Triton, float32, float16 or bfloat16, each is one persistent kernel
(recurrence_triton_loop.py); elsewhere (the CPU, no Triton, MGSA_NO_TRITON=1, float64) the
step loop in torch: per step one product with W and one cell operator (recurrence_cells.py),
the arithmetic the recurrence has always had on the CPU. As the cells are, they are registered
operators so that a count of dispatched operators (benchmarks' op counts) sees what a GPU
launches: one operator each way, whatever the number of steps.
"""

from typing import Callable, List, Optional

import torch
from torch import Tensor

from . import recurrence_path
from .recurrence_cells import ops, register


def _cells(chunk_size: int):
    """(forward, backward) of one step: the LSTM's (chunk_size 0) or the ON-LSTM's."""
    if chunk_size:
        return (lambda z, c: ops.onlstm_cell(z, c, chunk_size),
                lambda *a: ops.onlstm_cell_backward(*a, chunk_size))
    return ops.lstm_cell, ops.lstm_cell_backward


def _step_major(steps: List[Tensor], empty: Callable[[], Tensor]) -> Tensor:
    """Gr x B x . steps as one Gr x (len)B x . tensor, steps one after another."""
    if not steps:
        return empty()
    Gr, B, n = steps[0].shape
    return torch.stack(steps, dim=1).view(Gr, -1, n)


def recurrence_torch(xg: Tensor, w: Tensor, chunk_size: int):
    cell, _ = _cells(chunk_size)
    Gr, B, P, _ = xg.shape
    w_t = w.transpose(1, 2)
    zs, cs, hs = [], [], []
    h = c = None  # zero initial state: the first step has no product with it
    for t in range(P):
        z = xg[:, :, t] if h is None else torch.baddbmm(xg[:, :, t], h, w_t)
        h, c = cell(z, c)
        zs.append(z)
        cs.append(c)
        hs.append(h)
    h_prev = _step_major(hs[:-1], lambda: xg.new_empty(Gr, 0, w.size(2)))
    return torch.stack(hs, dim=2), torch.stack(zs, dim=2), torch.stack(cs, dim=2), h_prev


def recurrence_backward_torch(z: Tensor, c: Tensor, w: Tensor, d_out: Tensor, chunk_size: int):
    _, cell_backward = _cells(chunk_size)
    Gr, B, P, K = z.shape
    dzs: List[Optional[Tensor]] = [None] * P
    dh_rec = dc = None
    for t in reversed(range(P)):
        dz, dc = cell_backward(z[:, :, t], c[:, :, t - 1] if t else None, c[:, :, t], d_out[:, :, t], dh_rec, dc)
        if t:
            dh_rec = torch.bmm(dz, w)
        dzs[t] = dz
    return torch.stack(dzs, dim=2), _step_major(dzs[1:], lambda: z.new_empty(Gr, 0, K))


# ---------------------------------------------------------------- the operators

def _lstm_recurrence(xg, w):
    return recurrence_path.run("lstm forward", xg, w.size(2), lambda k: k.lstm_recurrence(xg, w),
                               lambda: recurrence_torch(xg, w, 0))


def _lstm_recurrence_backward(z, c, w, d_out):
    return recurrence_path.run("lstm backward", z, w.size(2), lambda k: k.lstm_recurrence_backward(z, c, w, d_out),
                               lambda: recurrence_backward_torch(z, c, w, d_out, 0))


def _onlstm_recurrence(xg, w, chunk_size):
    return recurrence_path.run("onlstm forward", xg, w.size(2), lambda k: k.onlstm_recurrence(xg, w, chunk_size),
                               lambda: recurrence_torch(xg, w, chunk_size))


def _onlstm_recurrence_backward(z, c, w, d_out, chunk_size):
    return recurrence_path.run("onlstm backward", z, w.size(2),
                               lambda k: k.onlstm_recurrence_backward(z, c, w, d_out, chunk_size),
                               lambda: recurrence_backward_torch(z, c, w, d_out, chunk_size))


def _recurrence_fake(xg, w):
    Gr, B, P, K = xg.shape
    D = w.size(2)
    return xg.new_empty(Gr, B, P, D), xg.new_empty(Gr, B, P, K), xg.new_empty(Gr, B, P, D), \
        xg.new_empty(Gr, (P - 1) * B, D)


def _recurrence_backward_fake(z, c, w, d_out):
    Gr, B, P, K = z.shape
    return z.new_empty(Gr, B, P, K), z.new_empty(Gr, (P - 1) * B, K)


SCHEMAS = {
    "lstm_recurrence": ("(Tensor xg, Tensor w) -> (Tensor, Tensor, Tensor, Tensor)", _lstm_recurrence,
                        _recurrence_fake),
    "lstm_recurrence_backward": ("(Tensor z, Tensor c, Tensor w, Tensor d_out) -> (Tensor, Tensor)",
                                 _lstm_recurrence_backward, _recurrence_backward_fake),
    "onlstm_recurrence": ("(Tensor xg, Tensor w, int chunk_size) -> (Tensor, Tensor, Tensor, Tensor)",
                          _onlstm_recurrence, lambda xg, w, cs: _recurrence_fake(xg, w)),
    "onlstm_recurrence_backward": ("(Tensor z, Tensor c, Tensor w, Tensor d_out, int chunk_size) "
                                   "-> (Tensor, Tensor)", _onlstm_recurrence_backward,
                                   lambda z, c, w, d, cs: _recurrence_backward_fake(z, c, w, d)),
}

_LIBRARY = register(SCHEMAS)
