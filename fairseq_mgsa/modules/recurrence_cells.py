"""The element-wise step of the phrase-interaction recurrences, forward and backward, as four
operators (`torch.ops.mgsa_recurrence.*_cell*`) that the step loop of recurrence_loops.py calls
once per step each: the recurrence's path on the CPU, without Triton and in float64 (on a GPU
with Triton the whole loop is one kernel each way, recurrence_triton_loop.py), and the operators'
registration; recurrence_path.py chooses between the Triton kernels and the torch arithmetic.

    z      Gr x B x K   a step's gate pre-activations (may be a strided view)
    c      Gr x B x D   the previous cell state (None at the first step)
    h, c'  Gr x B x D   the new hidden and cell states, in z's dtype

    backward(z, c, c', dh, dh_rec, dc) -> (dz, dc_prev): dh is the gradient reaching h from the
    layer's output, dh_rec the one from the next step, dc the one reaching c' from the next step
    (None where there is none); dc_prev is empty at the first step.

On a CUDA device with Triton the step is one fused kernel each way (recurrence_triton.py);
elsewhere (the CPU, no Triton, or MGSA_NO_TRITON=1 in the environment) the same arithmetic in
torch operators. Both compute in float32 whatever the dtype of the states (float16 / bfloat16
under --fp16 or autocast), and write the states in that dtype.

They are registered operators rather than Python functions so that what dispatches them sees
one operator per step and direction, as a GPU runs one kernel: a TorchDispatchMode counting
operators on the CPU (benchmarks' op counts) then predicts the GPU's launches. Gate layouts:
the LSTM's (i, f, g, o) as nn.LSTM, the ON-LSTM's (master f, master i, o, f, i, c) with the
master gates over chunks of `chunk_size` neurons (interaction.py).
"""

from typing import Optional

import torch
from torch import Tensor

from . import recurrence_path

NAMESPACE = "mgsa_recurrence"


def triton_kernels(t: Tensor):
    """recurrence_triton (one step's cell) where it would run on t, else None."""
    if recurrence_path._triton_reason(t) is not None or t.dtype == torch.float64:
        return None
    module = recurrence_path._import("recurrence_triton")
    return None if isinstance(module, str) else module


def loop_kernels(t: Tensor, width: int = 0):
    """recurrence_triton_loop (the whole recurrence) where recurrence_path would choose it for t
    (and a width D), else None."""
    key = ("query", str(t.device), t.dtype, width)
    if recurrence_path._loop_reason(key, t, width) is not None:
        return None
    module = recurrence_path._import("recurrence_triton_loop")
    return None if isinstance(module, str) else module


# ---------------------------------------------------------------- the torch arithmetic

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


# ---------------------------------------------------------------- the operators

def _lstm_cell(z, c):
    return recurrence_path.cell("lstm cell", z, z.size(-1) // 4, lambda k: k.lstm_cell(z, c),
                                lambda: lstm_cell_torch(z, c))


def _lstm_cell_backward(z, c, c_new, dh, dh_rec, dc):
    return recurrence_path.cell("lstm cell backward", z, z.size(-1) // 4,
                                lambda k: k.lstm_cell_backward(z, c, c_new, dh, dh_rec, dc),
                                lambda: lstm_cell_backward_torch(z, c, c_new, dh, dh_rec, dc))


def _onlstm_cell(z, c, chunk_size):
    return recurrence_path.cell("onlstm cell", z, c_new_width(z, chunk_size), lambda k: k.onlstm_cell(z, c, chunk_size),
                                lambda: onlstm_cell_torch(z, c, chunk_size))


def _onlstm_cell_backward(z, c, c_new, dh, dh_rec, dc, chunk_size):
    return recurrence_path.cell("onlstm cell backward", z, c_new.size(-1),
                                lambda k: k.onlstm_cell_backward(z, c, c_new, dh, dh_rec, dc, chunk_size),
                                lambda: onlstm_cell_backward_torch(z, c, c_new, dh, dh_rec, dc, chunk_size))


def c_new_width(z: Tensor, chunk_size: int) -> int:
    """D of an ON-LSTM step's gates: K = 4 D + 2 D / chunk_size."""
    return z.size(-1) * chunk_size // (4 * chunk_size + 2)


# ---------------------------------------------------------------- shapes alone (fake tensors)
# What torch.compile and torch.library.opcheck trace with: the outputs' shapes and dtypes, no data.

def _cell_fake(z, c, width):
    Gr, B, _ = z.shape
    return z.new_empty(Gr, B, width), z.new_empty(Gr, B, width)


def _cell_backward_fake(z, c, c_new):
    return torch.empty_like(z, memory_format=torch.contiguous_format), \
        z.new_empty(0) if c is None else torch.empty_like(c_new, memory_format=torch.contiguous_format)


SCHEMAS = {
    "lstm_cell": ("(Tensor z, Tensor? c) -> (Tensor, Tensor)", _lstm_cell,
                  lambda z, c: _cell_fake(z, c, z.size(-1) // 4)),
    "lstm_cell_backward": ("(Tensor z, Tensor? c, Tensor c_new, Tensor dh, Tensor? dh_rec, Tensor? dc) "
                           "-> (Tensor, Tensor)", _lstm_cell_backward,
                           lambda z, c, c_new, *_: _cell_backward_fake(z, c, c_new)),
    "onlstm_cell": ("(Tensor z, Tensor? c, int chunk_size) -> (Tensor, Tensor)", _onlstm_cell,
                    lambda z, c, cs: _cell_fake(z, c, c_new_width(z, cs))),
    "onlstm_cell_backward": ("(Tensor z, Tensor? c, Tensor c_new, Tensor dh, Tensor? dh_rec, Tensor? dc, "
                             "int chunk_size) -> (Tensor, Tensor)", _onlstm_cell_backward,
                             lambda z, c, c_new, *_: _cell_backward_fake(z, c, c_new)),
}


def register(schemas):
    """Defines {name: (schema, implementation, fake)} in the namespace: the implementation for
    CPU and CUDA tensors alike (it picks its own path), the fake for tracing."""
    # a fragment, so that a second import of a file (another package name) adds nothing twice
    lib = torch.library.Library(NAMESPACE, "FRAGMENT")
    for name, (schema, fn, fake) in schemas.items():
        if hasattr(getattr(torch.ops, NAMESPACE), name):
            continue
        lib.define(name + schema)
        for key in ("CPU", "CUDA"):
            lib.impl(name, fn, key)
        torch.library.register_fake(f"{NAMESPACE}::{name}", fake, lib=lib)
    return lib


_LIBRARY = register(SCHEMAS)
ops = getattr(torch.ops, NAMESPACE)
