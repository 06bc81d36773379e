"""Triton kernels that run the whole phrase-interaction recurrence in one launch each way
(ops/recurrence.py has the torch step loop these kernels reproduce, the cell arithmetic and
the layouts; ops/recurrence_path.py the operators that call them). Imported only where Triton is.

The rows of a recurrence are independent and W is only read, so a program owns BLOCK_B
sentences of one granularity and walks all P steps with no other program to wait for:
grid (Gr, cdiv(B, BLOCK_B)). Per step the forward forms each gate group's pre-activations
z_t = xg_t + h_{t-1} W^T (tl.dot over blocks of D), runs the cell on them in float32 and
stores z_t, c_t and h_t; the backward walks the steps in reverse, runs the cell's backward,
stores dz_t and forms dh_{t-1} = dz_t W (tl.dot over blocks of K) for the earlier step.

A product over blocks of D (of K) needs h_{t-1} (dz_t) in blocks, which a register tensor
cannot be cut into: it is read back from the output the program stored at the previous step,
tl.debug_barrier() between the store and the load making every thread's writes visible to
the others. The cell state and the gradients carried between steps stay in registers.

The numbers are the step loop's: z, h, c, dz, dh_{t-1} and dc are rounded to the states'
dtype where the loop stores them (baddbmm's and bmm's outputs, the cells' outputs). The
products read float32 copies of the operands: "ieee" for float32 states (no TF32), "tf32"
for float16 / bfloat16 ones, exact there since a half value fits TF32's mantissa (and the
interpreter has no bfloat16 product). The ON-LSTM's master gates are formed at neuron
resolution, as in triton/recurrence_cells.py: each neuron reads its chunk's row of W and of xg,
and a chunk counts once (at its first neuron) in the softmax and the cumulative sums.
"""

import torch
import triton
import triton.language as tl

from .. import recurrence_path
from .recurrence_cells import _tanh

# what changes from batch to batch is left unspecialised: one compilation per model
LOOP_ARGS = ["B", "P", "sxg", "sxb", "sxp", "sdg", "sdb", "sdp"]
BLOCK_B = 16  # tl.dot's smallest M
# the contraction's block, over D forward and over K backward: the sizes with the fewest
# registers spilled at the base and big sizes' D (128, 256) by ptxas -v for sm_90
BLOCK_K_FORWARD, BLOCK_K_BACKWARD = 16, 32


@triton.jit
def _preact(xg, x_row, z, z_row, col, h, h_row, w, wrow, t, rm, jm, zm, D,
            PREC: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_K: tl.constexpr):
    """One gate group's z_t = xg_t + h_{t-1} W^T at neurons j (BLOCK_B x BLOCK_D), rounded to
    the states' dtype as baddbmm's output is, stored at z where zm; returned in float32.
    *_row: the rows' offsets at step t (h's at t - 1); col: each neuron's column of xg and z;
    wrow: each neuron's row of W (this granularity's)."""
    acc = tl.zeros([BLOCK_B, BLOCK_D], tl.float32)
    d = tl.arange(0, BLOCK_K)
    for d0 in range(0, D, BLOCK_K):  # h_{-1} = 0: at t = 0 every load is masked off
        dm = d0 + d < D
        hb = tl.load(h + h_row[:, None] + (d0 + d)[None, :], mask=rm[:, None] & dm[None, :] & (t > 0), other=0.0)
        wb = tl.load(w + wrow[None, :] * D + (d0 + d)[:, None], mask=dm[:, None] & jm[None, :], other=0.0)
        acc = tl.dot(hb.to(tl.float32), wb.to(tl.float32), acc, input_precision=PREC)
    x = tl.load(xg + x_row[:, None] + col[None, :], mask=rm[:, None] & jm[None, :], other=0.0)
    zz = (x.to(tl.float32) + acc).to(z.dtype.element_ty)
    tl.store(z + z_row[:, None] + col[None, :], zz, mask=zm)
    return zz.to(tl.float32)


@triton.jit
def _dh_rec(dz, dz_row, w, t, rm, jm, D, K,
            PREC: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_K: tl.constexpr):
    """dh_{t-1} = dz_t W (BLOCK_B x BLOCK_D) from the dz_t just stored, rounded as bmm's output
    is; 0 at t = 0 (no earlier step)."""
    tl.debug_barrier()  # dz_t's other columns were stored by other threads
    acc = tl.zeros([BLOCK_B, BLOCK_D], tl.float32)
    k = tl.arange(0, BLOCK_K)
    for k0 in range(0, K, BLOCK_K):
        km = k0 + k < K
        dzb = tl.load(dz + dz_row[:, None] + (k0 + k)[None, :], mask=rm[:, None] & km[None, :] & (t > 0), other=0.0)
        wb = tl.load(w + (k0 + k)[:, None] * D + tl.arange(0, BLOCK_D)[None, :], mask=km[:, None] & jm[None, :],
                     other=0.0)
        acc = tl.dot(dzb.to(tl.float32), wb.to(tl.float32), acc, input_precision=PREC)
    return acc.to(dz.dtype.element_ty).to(tl.float32)


@triton.jit
def _round(x, like):
    """x as the step loop stores it between steps (in the states' dtype), back in float32."""
    return x.to(like.dtype.element_ty).to(tl.float32)


@triton.jit
def _store2(at, at_later, mask, mask_later, value):
    """dz_t into d_xg (Gr x B x P x K) and, for t > 0, into the step-major copy W's gradient reads."""
    tl.store(at, value, mask=mask)
    tl.store(at_later, value, mask=mask_later)


@triton.jit
def _master(z, first, NEGATIVE: tl.constexpr):
    """Per row: (the softmax over chunks at each chunk's first neuron, 0 elsewhere; its cumsum
    at every neuron, or 1 - cumsum)."""
    top = tl.max(tl.where(first[None, :], z, float("-inf")), 1)
    e = tl.where(first[None, :], tl.exp(z - top[:, None]), 0.0)
    p = e / tl.sum(e, 1)[:, None]
    cm = tl.cumsum(p, 1)
    if NEGATIVE:
        cm = 1.0 - cm
    return p, cm


# ---------------------------------------------------------------- LSTM: gates (i, f, g, o)

@triton.jit(do_not_specialize=LOOP_ARGS)
def _lstm_loop_fwd(xg, w, out, z, c, hp, B, P, sxg, sxb, sxp, D,
                   PREC: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_K: tl.constexpr):
    g = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    j = tl.arange(0, BLOCK_D)
    rm, jm = rows < B, j < D
    m = rm[:, None] & jm[None, :]
    K = 4 * D
    w += g * K * D
    cell = tl.zeros([BLOCK_B, BLOCK_D], tl.float32)  # c_{t-1}, as stored
    for t in range(0, P):
        x_row = g * sxg + rows * sxb + t * sxp
        s_row = (g * B + rows) * P + t  # the row of step t in out, z and c (Gr x B x P x .)
        h_row = (s_row - 1) * D
        # a gate at a time, used as soon as formed: fewer BLOCK_B x BLOCK_D tensors live at once
        f = tl.sigmoid(_preact(xg, x_row, z, s_row * K, D + j, out, h_row, w, D + j, t, rm, jm, m, D,
                               PREC, BLOCK_B, BLOCK_D, BLOCK_K))
        c_new = f * cell
        i = tl.sigmoid(_preact(xg, x_row, z, s_row * K, j, out, h_row, w, j, t, rm, jm, m, D,
                               PREC, BLOCK_B, BLOCK_D, BLOCK_K))
        u = _tanh(_preact(xg, x_row, z, s_row * K, 2 * D + j, out, h_row, w, 2 * D + j, t, rm, jm, m, D,
                          PREC, BLOCK_B, BLOCK_D, BLOCK_K))
        c_new += i * u
        o = tl.sigmoid(_preact(xg, x_row, z, s_row * K, 3 * D + j, out, h_row, w, 3 * D + j, t, rm, jm, m, D,
                               PREC, BLOCK_B, BLOCK_D, BLOCK_K))
        h = o * _tanh(c_new)
        tl.store(c + s_row[:, None] * D + j[None, :], c_new, mask=m)
        tl.store(out + s_row[:, None] * D + j[None, :], h, mask=m)
        # the states W's gradient reads, step-major: Gr x (P - 1)B x D
        tl.store(hp + ((g * (P - 1) + t) * B + rows)[:, None] * D + j[None, :], h, mask=m & (t < P - 1))
        cell = _round(c_new, c)
        tl.debug_barrier()  # h_t, stored by every thread, is read back in blocks at t + 1


@triton.jit(do_not_specialize=LOOP_ARGS)
def _lstm_loop_bwd(z, c, w, d_out, d_xg, d_later, B, P, sdg, sdb, sdp, D,
                   PREC: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_K: tl.constexpr):
    g = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    j = tl.arange(0, BLOCK_D)
    rm, jm = rows < B, j < D
    m = rm[:, None] & jm[None, :]
    K = 4 * D
    w += g * K * D
    dh_rec = tl.zeros([BLOCK_B, BLOCK_D], tl.float32)  # from step t + 1, as bmm rounds it
    dc = tl.zeros([BLOCK_B, BLOCK_D], tl.float32)  # likewise, as the cell's backward stores it
    for s in range(0, P):
        t = P - 1 - s
        s_row = (g * B + rows) * P + t
        zt = z + s_row[:, None] * K + j[None, :]
        i = tl.sigmoid(tl.load(zt, mask=m, other=0.0).to(tl.float32))
        f = tl.sigmoid(tl.load(zt + D, mask=m, other=0.0).to(tl.float32))
        u = _tanh(tl.load(zt + 2 * D, mask=m, other=0.0).to(tl.float32))
        o = tl.sigmoid(tl.load(zt + 3 * D, mask=m, other=0.0).to(tl.float32))
        ct = c + s_row[:, None] * D + j[None, :]
        tc = _tanh(tl.load(ct, mask=m, other=0.0).to(tl.float32))
        c_prev = tl.load(ct - D, mask=m & (t > 0), other=0.0).to(tl.float32)  # c_{-1} = 0
        dh = tl.load(d_out + (g * sdg + rows * sdb + t * sdp)[:, None] + j[None, :], mask=m,
                     other=0.0).to(tl.float32) + dh_rec
        dct = dh * o * (1.0 - tc * tc) + dc
        dzt = d_xg + s_row[:, None] * K + j[None, :]
        dzl = d_later + ((g * (P - 1) + t - 1) * B + rows)[:, None] * K + j[None, :]  # step-major, steps 1..P-1
        ml = m & (t > 0)
        _store2(dzt, dzl, m, ml, dct * u * i * (1.0 - i))
        _store2(dzt + D, dzl + D, m, ml, dct * c_prev * f * (1.0 - f))
        _store2(dzt + 2 * D, dzl + 2 * D, m, ml, dct * i * (1.0 - u * u))
        _store2(dzt + 3 * D, dzl + 3 * D, m, ml, dh * tc * o * (1.0 - o))
        dc = _round(dct * f, d_xg)
        dh_rec = _dh_rec(d_xg, s_row * K, w, t, rm, jm, D, K, PREC, BLOCK_B, BLOCK_D, BLOCK_K)


# ---------------------------------------------------------------- ON-LSTM: (master f, master i, o, f, i, c)

@triton.jit
def _onlstm_masters(j, jm, CS: tl.constexpr):
    """Each neuron's chunk, and whether it is its chunk's first neuron (which counts the chunk)."""
    return j // CS, jm & (j % CS == 0)


@triton.jit(do_not_specialize=LOOP_ARGS)
def _onlstm_loop_fwd(xg, w, out, z, c, hp, B, P, sxg, sxb, sxp, D, NC, CS: tl.constexpr,
                     PREC: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_K: tl.constexpr):
    g = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    j = tl.arange(0, BLOCK_D)
    rm, jm = rows < B, j < D
    m = rm[:, None] & jm[None, :]
    k, first = _onlstm_masters(j, jm, CS)
    mk = rm[:, None] & first[None, :]  # a chunk's master pre-activation is stored once
    K = 2 * NC + 4 * D
    w += g * K * D
    cell = tl.zeros([BLOCK_B, BLOCK_D], tl.float32)
    for t in range(0, P):
        x_row = g * sxg + rows * sxb + t * sxp
        s_row = (g * B + rows) * P + t
        z_row, h_row = s_row * K, (s_row - 1) * D
        zf = _preact(xg, x_row, z, z_row, k, out, h_row, w, k, t, rm, jm, mk, D, PREC, BLOCK_B, BLOCK_D, BLOCK_K)
        zi = _preact(xg, x_row, z, z_row, NC + k, out, h_row, w, NC + k, t, rm, jm, mk, D,
                     PREC, BLOCK_B, BLOCK_D, BLOCK_K)
        _, mf = _master(zf, first, False)
        _, mi = _master(zi, first, True)
        om = mf * mi
        r = 2 * NC + j
        # a gate at a time, used as soon as formed: fewer BLOCK_B x BLOCK_D tensors live at once
        i = tl.sigmoid(_preact(xg, x_row, z, z_row, r + 2 * D, out, h_row, w, r + 2 * D, t, rm, jm, m, D,
                               PREC, BLOCK_B, BLOCK_D, BLOCK_K))
        u = _tanh(_preact(xg, x_row, z, z_row, r + 3 * D, out, h_row, w, r + 3 * D, t, rm, jm, m, D,
                          PREC, BLOCK_B, BLOCK_D, BLOCK_K))
        c_new = (i * om + mi - om) * u
        f = tl.sigmoid(_preact(xg, x_row, z, z_row, r + D, out, h_row, w, r + D, t, rm, jm, m, D,
                               PREC, BLOCK_B, BLOCK_D, BLOCK_K))
        c_new += (f * om + mf - om) * cell
        o = tl.sigmoid(_preact(xg, x_row, z, z_row, r, out, h_row, w, r, t, rm, jm, m, D,
                               PREC, BLOCK_B, BLOCK_D, BLOCK_K))
        h = o * _tanh(c_new)
        tl.store(c + s_row[:, None] * D + j[None, :], c_new, mask=m)
        tl.store(out + s_row[:, None] * D + j[None, :], h, mask=m)
        tl.store(hp + ((g * (P - 1) + t) * B + rows)[:, None] * D + j[None, :], h, mask=m & (t < P - 1))
        cell = _round(c_new, c)
        tl.debug_barrier()  # h_t, stored by every thread, is read back in blocks at t + 1


@triton.jit(do_not_specialize=LOOP_ARGS)
def _onlstm_loop_bwd(z, c, w, d_out, d_xg, d_later, B, P, sdg, sdb, sdp, D, NC, CS: tl.constexpr,
                     PREC: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_K: tl.constexpr):
    g = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    j = tl.arange(0, BLOCK_D)
    rm, jm = rows < B, j < D
    m = rm[:, None] & jm[None, :]
    k, first = _onlstm_masters(j, jm, CS)
    mk = rm[:, None] & first[None, :]
    K = 2 * NC + 4 * D
    w += g * K * D
    dh_rec = tl.zeros([BLOCK_B, BLOCK_D], tl.float32)
    dc = tl.zeros([BLOCK_B, BLOCK_D], tl.float32)
    for s in range(0, P):
        t = P - 1 - s
        s_row = (g * B + rows) * P + t
        zt = z + s_row[:, None] * K
        pf, mf = _master(tl.load(zt + k[None, :], mask=m, other=0.0).to(tl.float32), first, False)
        pi, mi = _master(tl.load(zt + NC + k[None, :], mask=m, other=0.0).to(tl.float32), first, True)
        zt += 2 * NC + j[None, :]
        o = tl.sigmoid(tl.load(zt, mask=m, other=0.0).to(tl.float32))
        f = tl.sigmoid(tl.load(zt + D, mask=m, other=0.0).to(tl.float32))
        i = tl.sigmoid(tl.load(zt + 2 * D, mask=m, other=0.0).to(tl.float32))
        u = _tanh(tl.load(zt + 3 * D, mask=m, other=0.0).to(tl.float32))
        om = mf * mi
        ct = c + s_row[:, None] * D + j[None, :]
        tc = _tanh(tl.load(ct, mask=m, other=0.0).to(tl.float32))
        c_prev = tl.load(ct - D, mask=m & (t > 0), other=0.0).to(tl.float32)  # c_{-1} = 0: df^ = 0 at t = 0
        dh = tl.load(d_out + (g * sdg + rows * sdb + t * sdp)[:, None] + j[None, :], mask=m,
                     other=0.0).to(tl.float32) + dh_rec
        dct = dh * o * (1.0 - tc * tc) + dc
        di_hat = dct * u
        df_hat = dct * c_prev
        dw = df_hat * (f - 1.0) + di_hat * (i - 1.0)
        dmf = tl.where(m, df_hat + dw * mi, 0.0)
        dmi = tl.where(m, di_hat + dw * mf, 0.0)
        # at a chunk's first neuron: the sum over this and later chunks (the cumsum's backward)
        dpf = tl.sum(dmf, 1)[:, None] - tl.cumsum(dmf, 1) + dmf
        dpi = -(tl.sum(dmi, 1)[:, None] - tl.cumsum(dmi, 1) + dmi)
        dzf = pf * (dpf - tl.sum(pf * dpf, 1)[:, None])  # pf is 0 but at first neurons
        dzi = pi * (dpi - tl.sum(pi * dpi, 1)[:, None])
        dzt = d_xg + s_row[:, None] * K
        dzl = d_later + ((g * (P - 1) + t - 1) * B + rows)[:, None] * K  # step-major, steps 1..P-1
        ml, mkl = m & (t > 0), mk & (t > 0)
        _store2(dzt + k[None, :], dzl + k[None, :], mk, mkl, dzf)
        _store2(dzt + NC + k[None, :], dzl + NC + k[None, :], mk, mkl, dzi)
        dzt += 2 * NC + j[None, :]
        dzl += 2 * NC + j[None, :]
        _store2(dzt, dzl, m, ml, dh * tc * o * (1.0 - o))
        _store2(dzt + D, dzl + D, m, ml, df_hat * om * f * (1.0 - f))
        _store2(dzt + 2 * D, dzl + 2 * D, m, ml, di_hat * om * i * (1.0 - i))
        _store2(dzt + 3 * D, dzl + 3 * D, m, ml, dct * (i * om + mi - om) * (1.0 - u * u))
        dc = _round(dct * (f * om + mf - om), d_xg)
        dh_rec = _dh_rec(d_xg, s_row * K, w, t, rm, jm, D, K, PREC, BLOCK_B, BLOCK_D, BLOCK_K)


# ---------------------------------------------------------------- launchers

def _config(xg, D, block_k):
    """(grid, meta-parameters) of a launch over xg's Gr x B rows."""
    Gr, B = xg.shape[:2]
    block_d = max(16, triton.next_power_of_2(D))
    # num_stages=1: the contraction loops are a few blocks long (of 16 or 32), and plain loads keep
    # the store / barrier / load order of the states obvious (no asynchronous copies in flight)
    meta = dict(PREC="ieee" if xg.dtype == torch.float32 else "tf32", BLOCK_B=BLOCK_B, BLOCK_D=block_d,
                BLOCK_K=block_k, num_warps=4 if block_d <= 64 else 8, num_stages=1)
    return (Gr, triton.cdiv(B, BLOCK_B)), meta


def _last_unit(t):
    return t if t.stride(-1) == 1 else t.contiguous()


class DoesNotFit(Exception):
    """The compiled loop kernel needs more shared memory a block than the device allows (a
    wide D on a GPU of 64 or 96 KiB): recurrence_path then takes the step loop."""


_NEED = {}  # (kernel, device, dtype, meta-parameters) -> shared memory of its compilation, bytes


def shared_memory_need(kernel, grid, args, meta) -> int:
    """Bytes of shared memory a block of the kernel's compilation for these arguments needs,
    compiled (and cached by Triton) but not launched."""
    return kernel.warmup(*args, grid=grid, **meta).metadata.shared


def _launch(kernel, grid, args, meta):
    """The launch, after checking once per compilation that it fits the device's shared memory
    (Triton would raise OutOfResources at the launch)."""
    t = args[0]
    limit = recurrence_path.device_shared_memory(t.device)
    if limit is not None:
        key = (kernel.fn.__name__, str(t.device), t.dtype, tuple(sorted(meta.items())))
        if key not in _NEED:
            _NEED[key] = shared_memory_need(kernel, grid, args, meta)
        if _NEED[key] > limit:
            raise DoesNotFit(f"its loop kernel needs {_NEED[key]:,} bytes of shared memory a block, "
                             f"{t.device} allows {limit:,}")
    kernel[grid](*args, **meta)


def _forward(kernel, xg, w, D, *extra):
    xg, w = _last_unit(xg), w.contiguous()
    Gr, B, P, K = xg.shape
    out, c = xg.new_empty(Gr, B, P, D), xg.new_empty(Gr, B, P, D)
    z, h_prev = xg.new_empty(Gr, B, P, K), xg.new_empty(Gr, (P - 1) * B, D)
    grid, meta = _config(xg, D, BLOCK_K_FORWARD)
    # an empty h_prev (P = 1) is never written: any valid pointer stands in
    _launch(kernel, grid, (xg, w, out, z, c, h_prev if P > 1 else out, B, P, xg.stride(0), xg.stride(1),
                           xg.stride(2), D, *extra), meta)
    return out, z, c, h_prev


def _backward(kernel, z, c, w, d_out, D, *extra):
    d_out, w = _last_unit(d_out), w.contiguous()
    Gr, B, P, K = z.shape
    d_xg, d_later = z.new_empty(Gr, B, P, K), z.new_empty(Gr, (P - 1) * B, K)
    grid, meta = _config(z, D, BLOCK_K_BACKWARD)
    _launch(kernel, grid, (z, c, w, d_out, d_xg, d_later if P > 1 else d_xg, B, P, d_out.stride(0),
                           d_out.stride(1), d_out.stride(2), D, *extra), meta)
    return d_xg, d_later


def lstm_recurrence(xg, w):
    return _forward(_lstm_loop_fwd, xg, w, w.size(2))


def lstm_recurrence_backward(z, c, w, d_out):
    return _backward(_lstm_loop_bwd, z.contiguous(), c.contiguous(), w, d_out, w.size(2))


def onlstm_recurrence(xg, w, chunk_size):
    D = w.size(2)
    return _forward(_onlstm_loop_fwd, xg, w, D, D // chunk_size, chunk_size)


def onlstm_recurrence_backward(z, c, w, d_out, chunk_size):
    D = w.size(2)
    return _backward(_onlstm_loop_bwd, z.contiguous(), c.contiguous(), w, d_out, D, D // chunk_size, chunk_size)
