"""The phrase-interaction recurrence with a hand-written backward (what modules/mgsa/interaction.py
runs by default), its torch step loop and cells, and its reference `recurrence_ref`.

    xg  Gr x B x P x K   the input projections of every step (computed before, in one product)
    W   Gr x K x D       the recurrent weights
    H   Gr x B x P x D   the hidden states

Recorded by autograd, a step of the ON-LSTM is some 56 operators forward and backward; at the
benchmark's batches a GPU update is bound by launches, and the steps were most of MG-SA's
extra operators. Here the whole recurrence, every step of every granularity, is one operator
forward and one backward (`torch.ops.mgsa_recurrence.*_recurrence[_backward]`, registered in
recurrence_path.py, which picks one persistent Triton kernel each way on a GPU or the torch
step loop below), and W's gradient one batched product over every step after the backward.
The forward keeps what the backward needs (each step's pre-activations and cell state, and
the states the products read). `recurrence_ref` is the same arithmetic recorded by autograd
step by step, which the tests compare it with.

The step loop, forward(xg, W[, chunk_size]) -> (H, Z, C, H_prev) and backward(Z, C, W, dH[,
chunk_size]) -> (dxg, dZ_later): Z (Gr x B x P x K) holds each step's gate pre-activations,
C (Gr x B x P x D) its cell state, H_prev (Gr x (P-1)B x D) the states steps 1..P-1 multiply
by W, dZ_later (Gr x (P-1)B x K) the gradient of steps 1..P-1, step-major, so that W's
gradient is one product dZ_later^T H_prev. Per step: one product with W and one cell operator.

The cells, forward(z, c) -> (h, c') and backward(z, c, c', dh, dh_rec, dc) -> (dz, dc_prev):
z (Gr x B x K) a step's gate pre-activations (may be a strided view), c the previous cell
state (None at the first step), dh the gradient reaching h from the layer's output, dh_rec the
one from the next step, dc the one reaching c' from the next step (None where there is none);
dc_prev is empty at the first step. They compute in float32 whatever the states' dtype
(float16 / bfloat16 under --fp16 or autocast) and write the states in that dtype. Gate
layouts: the LSTM's (i, f, g, o) as nn.LSTM, the ON-LSTM's (master f, master i, o, f, i, c)
with the master gates over chunks of `chunk_size` neurons (modules/mgsa/interaction.py).
"""

import sys
from typing import Callable, List, Optional

import torch
from torch import Tensor

# the registered operators (recurrence_path.py, which the package imports first and which imports
# this file's torch cells and step loop for its torch path), looked up at call time
ops = getattr(torch.ops, "mgsa_recurrence")


DOUBLE_BACKWARD = ("MG-SA's phrase-interaction recurrence has no double backward: its gradient cannot be "
                   "differentiated again (create_graph=True); --mgsa-interaction none has no recurrence")


class Recurrence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, xg: Tensor, weight_hh: Tensor, chunk_size: int) -> Tensor:
        # float16 / bfloat16 states as autocast or --fp16 gives them: W cast once, not each step
        w = weight_hh if weight_hh.dtype == xg.dtype else weight_hh.to(xg.dtype)
        if chunk_size:
            out, z, c, h_prev = ops.onlstm_recurrence(xg, w, chunk_size)
        else:
            out, z, c, h_prev = ops.lstm_recurrence(xg, w)
        # saved tensors (not ctx attributes), freed by the backward unless the graph is retained
        ctx.save_for_backward(w, h_prev, z, c)
        ctx.chunk_size, ctx.weight_dtype = chunk_size, weight_hh.dtype
        return out

    @staticmethod
    def backward(ctx, d_out: Tensor):
        w, h_prev, z, c = ctx.saved_tensors
        if ctx.chunk_size:
            d_xg, d_later = ops.onlstm_recurrence_backward(z, c, w, d_out, ctx.chunk_size)
        else:
            d_xg, d_later = ops.lstm_recurrence_backward(z, c, w, d_out)
        if z.size(2) > 1:  # Gr x K x (P-1)B times Gr x (P-1)B x D: every step's product at once
            d_w = torch.bmm(d_later.transpose(1, 2), h_prev)
        else:
            d_w = torch.zeros_like(w)
        d_w = d_w.to(ctx.weight_dtype)
        if torch.is_grad_enabled():  # create_graph=True: the gradients may be differentiated again
            d_xg, d_w = _NoDoubleBackward.apply(d_xg.detach().requires_grad_(), d_w.detach().requires_grad_())
        return d_xg, d_w, None


class _NoDoubleBackward(torch.autograd.Function):
    """The recurrence's gradients under create_graph=True: usable as values, and one clear error
    where they are differentiated (instead of "element 0 of tensors does not require grad")."""

    @staticmethod
    def forward(ctx, d_xg: Tensor, d_w: Tensor):
        return d_xg.clone(), d_w.clone()

    @staticmethod
    def backward(ctx, *_):
        raise RuntimeError(DOUBLE_BACKWARD)


def recurrence(xg: Tensor, weight_hh: Tensor, chunk_size: int = 0) -> Tensor:
    """Hidden states of the LSTM (chunk_size 0) or ON-LSTM over the steps of xg (module docstring)."""
    return Recurrence.apply(xg, weight_hh, chunk_size)


# ---------------------------------------------------------------- the torch cells

def _up(t: Tensor) -> Tensor:
    """float32 for half types (float64 stays: the tests' precision)."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def _sum(*terms: Optional[Tensor]) -> Tensor:
    out = None
    for t in terms:
        if t is not None:
            out = _up(t) if out is None else out + t
    return out


def lstm_cell_torch(z: Tensor, c: Optional[Tensor]):
    Gr, B, K = z.shape
    i, f, g, o = _up(z).view(Gr, B, 4, K // 4).unbind(2)
    i, f, o, g = torch.sigmoid(i), torch.sigmoid(f), torch.sigmoid(o), torch.tanh(g)
    c_new = i * g if c is None else f * _up(c) + i * g
    return (o * torch.tanh(c_new)).to(z.dtype), c_new.to(z.dtype)


def lstm_cell_backward_torch(z, c, c_new, dh, dh_rec, dc):
    Gr, B, K = z.shape
    i, f, g, o = _up(z).view(Gr, B, 4, K // 4).unbind(2)
    i, f, o, g = torch.sigmoid(i), torch.sigmoid(f), torch.sigmoid(o), torch.tanh(g)
    dh, tc = _sum(dh, dh_rec), torch.tanh(_up(c_new))
    dct = _sum(dh * o * (1 - tc * tc), dc)
    df = torch.zeros_like(f) if c is None else dct * _up(c) * f * (1 - f)
    dz = torch.stack([dct * g * i * (1 - i), df, dct * i * (1 - g * g), dh * tc * o * (1 - o)], dim=2)
    dc_prev = z.new_empty(0) if c is None else (dct * f).to(z.dtype)
    return dz.view(Gr, B, K).to(z.dtype), dc_prev


def _onlstm_gates(z: Tensor, chunk_size: int):
    """float32 (p_f, p_i, master_f, master_i: Gr x B x nc; o, f, i, u: Gr x B x nc x cs), the
    gates activated (u = tanh of the cell input)."""
    Gr, B, K = z.shape
    nc = K // (4 * chunk_size + 2)
    zm, zr = _up(z).split([2 * nc, K - 2 * nc], dim=-1)
    p = torch.softmax(zm.view(Gr, B, 2, nc), dim=-1)
    cm = p.cumsum(-1)
    o, f, i, u = zr.view(Gr, B, 4, nc, chunk_size).unbind(2)
    return p[:, :, 0], p[:, :, 1], cm[:, :, 0], 1 - cm[:, :, 1], torch.sigmoid(o), torch.sigmoid(f), \
        torch.sigmoid(i), torch.tanh(u)


def onlstm_cell_torch(z: Tensor, c: Optional[Tensor], chunk_size: int):
    Gr, B, _ = z.shape
    _, _, mf, mi, o, f, i, u = _onlstm_gates(z, chunk_size)
    w = (mf * mi).unsqueeze(-1)
    mf, mi = mf.unsqueeze(-1), mi.unsqueeze(-1)
    c_new = (i * w + mi - w) * u
    if c is not None:
        c_new = c_new + (f * w + mf - w) * _up(c).view_as(c_new)
    h = o * torch.tanh(c_new)
    return h.view(Gr, B, -1).to(z.dtype), c_new.view(Gr, B, -1).to(z.dtype)


def _reverse_cumsum(x: Tensor) -> Tensor:
    return x.sum(-1, keepdim=True) - x.cumsum(-1) + x


def onlstm_cell_backward_torch(z, c, c_new, dh, dh_rec, dc, chunk_size: int):
    """master_f = cumsum(p_f), master_i = 1 - cumsum(p_i), w = master_f * master_i,
    f^ = f w + master_f - w, i^ = i w + master_i - w, c' = f^ c + i^ u, h = o tanh(c')."""
    Gr, B, K = z.shape
    pf, pi, mf, mi, o, f, i, u = _onlstm_gates(z, chunk_size)
    shape = o.shape
    w = (mf * mi).unsqueeze(-1)
    dh = _sum(dh, dh_rec).view(shape)
    tc = torch.tanh(_up(c_new).view(shape))
    dct = dh * o * (1 - tc * tc)
    if dc is not None:
        dct = dct + _up(dc).view(shape)
    i_hat = i * w + mi.unsqueeze(-1) - w
    di_hat = dct * u
    if c is None:
        df_hat, dc_prev = torch.zeros_like(dct), z.new_empty(0)
    else:
        c = _up(c).view(shape)
        df_hat = dct * c
        dc_prev = (dct * (f * w + mf.unsqueeze(-1) - w)).view(Gr, B, -1).to(z.dtype)
    dw = df_hat * (f - 1) + di_hat * (i - 1)
    dmf = (df_hat + dw * mi.unsqueeze(-1)).sum(-1)  # Gr x B x nc: the gradient of each chunk's master gate
    dmi = (di_hat + dw * mf.unsqueeze(-1)).sum(-1)
    dpf, dpi = _reverse_cumsum(dmf), -_reverse_cumsum(dmi)  # through the cumsums
    dzf = pf * (dpf - (pf * dpf).sum(-1, keepdim=True))  # through the softmaxes
    dzi = pi * (dpi - (pi * dpi).sum(-1, keepdim=True))
    gates = torch.stack([dh * tc * o * (1 - o), df_hat * w * f * (1 - f), di_hat * w * i * (1 - i),
                         dct * i_hat * (1 - u * u)], dim=2)
    dz = torch.cat([dzf, dzi, gates.view(Gr, B, -1)], dim=-1)
    return dz.to(z.dtype), dc_prev


# ---------------------------------------------------------------- the torch step loop

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


def recurrence_ref(xg: Tensor, weight_hh: Tensor, chunk_size: int = 0) -> Tensor:
    """recurrence's arithmetic recorded by autograd step by step (torch cells, no registered
    operator, no hand-written backward): the reference of the fused operator."""
    w_t = (weight_hh if weight_hh.dtype == xg.dtype else weight_hh.to(xg.dtype)).transpose(1, 2)
    h = c = None  # zero initial state: the first step has no product with it
    hs = []
    for t in range(xg.size(2)):
        z = xg[:, :, t] if h is None else torch.baddbmm(xg[:, :, t], h, w_t)
        h, c = onlstm_cell_torch(z, c, chunk_size) if chunk_size else lstm_cell_torch(z, c)
        hs.append(h)
    return torch.stack(hs, dim=2)


# the old name fairseq_mgsa.modules.recurrence_loops (this module now) also gave these of
# recurrence_path's, which the package has imported before any use of this file: read from
# there at access, so that this file does not import the one that imports it
_FROM_PATH = {"register", "SCHEMAS", "NAMESPACE", "recurrence_path"}


def __getattr__(name: str):
    if name in _FROM_PATH:
        path = sys.modules[__package__ + ".recurrence_path"]
        return path if name == "recurrence_path" else getattr(path, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
