"""Triton kernels of the recurrences' element-wise step (ops/recurrence.py has the torch
arithmetic they fuse, and the layouts): one program per (granularity, sentence) row, the row's
gates in float32 registers. Imported only where Triton is (CUDA builds of torch ship it). On a
GPU they run where the whole-loop kernels (recurrence_loop.py) do not: float64 states,
a launch per step and direction; the loop kernels share their _tanh and their layout of the
ON-LSTM's master gates.

The ON-LSTM's master gates live on chunks of neurons; a program works at neuron resolution,
each neuron reading its chunk's pre-activation, and counts a chunk once (at its first neuron)
in the softmax and the cumulative sums, so that no gather between registers is needed.
"""

import triton
import triton.language as tl

# Triton compiles a kernel anew for each "specialisation" of its integer arguments (equal to 1,
# divisible by 16); the batch size and the strides that follow it change from batch to batch,
# so they are left unspecialised: one compilation per model, not one per batch shape.
FWD_BATCH_ARGS = ["B", "szg"]
BWD_BATCH_ARGS = ["B", "szg", "sdg"]


@triton.jit
def _tanh(x):
    # tl has no tanh; exp(-2|x|) never overflows
    t = tl.exp(-2.0 * tl.abs(x))
    y = (1.0 - t) / (1.0 + t)
    return tl.where(x < 0, -y, y)


@triton.jit
def _lstm_gates(z, j, m, D):
    """The activated gates (i, f, g, o) of one row, in float32 (nn.LSTM's order)."""
    i = tl.sigmoid(tl.load(z + j, mask=m, other=0.0).to(tl.float32))
    f = tl.sigmoid(tl.load(z + D + j, mask=m, other=0.0).to(tl.float32))
    g = _tanh(tl.load(z + 2 * D + j, mask=m, other=0.0).to(tl.float32))
    o = tl.sigmoid(tl.load(z + 3 * D + j, mask=m, other=0.0).to(tl.float32))
    return i, f, g, o


@triton.jit(do_not_specialize=FWD_BATCH_ARGS)
def _lstm_fwd(z_ptr, c_ptr, h_ptr, cn_ptr, B, szg, szb, D, HAS_C: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    z = z_ptr + (row // B) * szg + (row % B) * szb
    j = tl.arange(0, BLOCK)
    m = j < D
    i, f, g, o = _lstm_gates(z, j, m, D)
    c = i * g
    if HAS_C:
        c += f * tl.load(c_ptr + row * D + j, mask=m, other=0.0).to(tl.float32)
    tl.store(cn_ptr + row * D + j, c, mask=m)
    tl.store(h_ptr + row * D + j, o * _tanh(c), mask=m)


@triton.jit(do_not_specialize=BWD_BATCH_ARGS)
def _lstm_bwd(z_ptr, c_ptr, cn_ptr, dh_ptr, dhr_ptr, dc_ptr, dz_ptr, dcp_ptr, B, szg, szb, sdg, sdb, D,
              HAS_C: tl.constexpr, HAS_DHR: tl.constexpr, HAS_DC: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    z = z_ptr + (row // B) * szg + (row % B) * szb
    j = tl.arange(0, BLOCK)
    m = j < D
    i, f, g, o = _lstm_gates(z, j, m, D)
    dh = tl.load(dh_ptr + (row // B) * sdg + (row % B) * sdb + j, mask=m, other=0.0).to(tl.float32)
    if HAS_DHR:
        dh += tl.load(dhr_ptr + row * D + j, mask=m, other=0.0).to(tl.float32)
    tc = _tanh(tl.load(cn_ptr + row * D + j, mask=m, other=0.0).to(tl.float32))
    dc = dh * o * (1.0 - tc * tc)
    if HAS_DC:
        dc += tl.load(dc_ptr + row * D + j, mask=m, other=0.0).to(tl.float32)
    dz = dz_ptr + row * 4 * D
    tl.store(dz + j, dc * g * i * (1.0 - i), mask=m)
    if HAS_C:
        c = tl.load(c_ptr + row * D + j, mask=m, other=0.0).to(tl.float32)
        tl.store(dz + D + j, dc * c * f * (1.0 - f), mask=m)
        tl.store(dcp_ptr + row * D + j, dc * f, mask=m)
    else:
        tl.store(dz + D + j, tl.zeros([BLOCK], tl.float32), mask=m)
    tl.store(dz + 2 * D + j, dc * i * (1.0 - g * g), mask=m)
    tl.store(dz + 3 * D + j, dh * tc * o * (1.0 - o), mask=m)


@triton.jit
def _master(z, first, NEGATIVE: tl.constexpr):
    """(softmax over the chunks at each chunk's first neuron, 0 elsewhere; its cumsum at every
    neuron, or 1 - cumsum)."""
    e = tl.where(first, tl.exp(z - tl.max(z, 0)), 0.0)
    p = e / tl.sum(e, 0)
    cm = tl.cumsum(p, 0)
    if NEGATIVE:
        cm = 1.0 - cm
    return p, cm


@triton.jit
def _onlstm_gates(z, j, m, D, NC, CS: tl.constexpr):
    k = j // CS
    first = m & (j % CS == 0)
    pf, mf = _master(tl.load(z + k, mask=m, other=float("-inf")).to(tl.float32), first, False)
    pi, mi = _master(tl.load(z + NC + k, mask=m, other=float("-inf")).to(tl.float32), first, True)
    zr = z + 2 * NC
    o = tl.sigmoid(tl.load(zr + j, mask=m, other=0.0).to(tl.float32))
    f = tl.sigmoid(tl.load(zr + D + j, mask=m, other=0.0).to(tl.float32))
    i = tl.sigmoid(tl.load(zr + 2 * D + j, mask=m, other=0.0).to(tl.float32))
    u = _tanh(tl.load(zr + 3 * D + j, mask=m, other=0.0).to(tl.float32))
    return first, k, pf, mf, pi, mi, o, f, i, u


@triton.jit(do_not_specialize=FWD_BATCH_ARGS)
def _onlstm_fwd(z_ptr, c_ptr, h_ptr, cn_ptr, B, szg, szb, D, NC, CS: tl.constexpr, HAS_C: tl.constexpr,
                BLOCK: tl.constexpr):
    row = tl.program_id(0)
    z = z_ptr + (row // B) * szg + (row % B) * szb
    j = tl.arange(0, BLOCK)
    m = j < D
    first, k, pf, mf, pi, mi, o, f, i, u = _onlstm_gates(z, j, m, D, NC, CS)
    w = mf * mi
    c = (i * w + mi - w) * u
    if HAS_C:
        c += (f * w + mf - w) * tl.load(c_ptr + row * D + j, mask=m, other=0.0).to(tl.float32)
    tl.store(cn_ptr + row * D + j, c, mask=m)
    tl.store(h_ptr + row * D + j, o * _tanh(c), mask=m)


@triton.jit(do_not_specialize=BWD_BATCH_ARGS)
def _onlstm_bwd(z_ptr, c_ptr, cn_ptr, dh_ptr, dhr_ptr, dc_ptr, dz_ptr, dcp_ptr, B, szg, szb, sdg, sdb, D, NC,
                CS: tl.constexpr, HAS_C: tl.constexpr, HAS_DHR: tl.constexpr, HAS_DC: tl.constexpr,
                BLOCK: tl.constexpr):
    row = tl.program_id(0)
    z = z_ptr + (row // B) * szg + (row % B) * szb
    j = tl.arange(0, BLOCK)
    m = j < D
    first, k, pf, mf, pi, mi, o, f, i, u = _onlstm_gates(z, j, m, D, NC, CS)
    w = mf * mi
    dh = tl.load(dh_ptr + (row // B) * sdg + (row % B) * sdb + j, mask=m, other=0.0).to(tl.float32)
    if HAS_DHR:
        dh += tl.load(dhr_ptr + row * D + j, mask=m, other=0.0).to(tl.float32)
    tc = _tanh(tl.load(cn_ptr + row * D + j, mask=m, other=0.0).to(tl.float32))
    dc = dh * o * (1.0 - tc * tc)
    if HAS_DC:
        dc += tl.load(dc_ptr + row * D + j, mask=m, other=0.0).to(tl.float32)
    di_hat = dc * u
    if HAS_C:
        df_hat = dc * tl.load(c_ptr + row * D + j, mask=m, other=0.0).to(tl.float32)
        tl.store(dcp_ptr + row * D + j, dc * (f * w + mf - w), mask=m)
    else:
        df_hat = tl.zeros([BLOCK], tl.float32)
    dw = df_hat * (f - 1.0) + di_hat * (i - 1.0)
    dmf = tl.where(m, df_hat + dw * mi, 0.0)
    dmi = tl.where(m, di_hat + dw * mf, 0.0)
    # at a chunk's first neuron: the sum over this and later chunks (the cumsum's backward)
    dpf = tl.sum(dmf, 0) - tl.cumsum(dmf, 0) + dmf
    dpi = -(tl.sum(dmi, 0) - tl.cumsum(dmi, 0) + dmi)
    dzf = pf * (dpf - tl.sum(pf * dpf, 0))  # pf is 0 but at first neurons
    dzi = pi * (dpi - tl.sum(pi * dpi, 0))
    dz = dz_ptr + row * (2 * NC + 4 * D)
    tl.store(dz + k, dzf, mask=first)
    tl.store(dz + NC + k, dzi, mask=first)
    dz += 2 * NC
    tl.store(dz + j, dh * tc * o * (1.0 - o), mask=m)
    tl.store(dz + D + j, df_hat * w * f * (1.0 - f), mask=m)
    tl.store(dz + 2 * D + j, di_hat * w * i * (1.0 - i), mask=m)
    tl.store(dz + 3 * D + j, dc * (i * w + mi - w) * (1.0 - u * u), mask=m)


def _rows(z):
    Gr, B, K = z.shape
    if z.stride(2) != 1:
        z = z.contiguous()
    return z, Gr, B, (Gr * B,)


def _dh(dh):
    return dh if dh.stride(2) == 1 else dh.contiguous()


def _c(t):
    return None if t is None else t.contiguous()


def lstm_cell(z, c):
    z, Gr, B, grid = _rows(z)
    c = _c(c)
    D = z.size(2) // 4
    h, c_new = z.new_empty(Gr, B, D), z.new_empty(Gr, B, D)
    _lstm_fwd[grid](z, c if c is not None else h, h, c_new, B, z.stride(0), z.stride(1), D,
                    HAS_C=c is not None, BLOCK=triton.next_power_of_2(D))
    return h, c_new


def lstm_cell_backward(z, c, c_new, dh, dh_rec, dc):
    z, Gr, B, grid = _rows(z)
    D = z.size(2) // 4
    dh, c, c_new, dh_rec, dc = _dh(dh), _c(c), c_new.contiguous(), _c(dh_rec), _c(dc)
    dz = z.new_empty(Gr, B, 4 * D)
    dc_prev = z.new_empty(Gr, B, D) if c is not None else z.new_empty(0)
    _lstm_bwd[grid](z, c if c is not None else c_new, c_new, dh, dh_rec if dh_rec is not None else c_new,
                    dc if dc is not None else c_new, dz, dc_prev if c is not None else dz,
                    B, z.stride(0), z.stride(1), dh.stride(0), dh.stride(1), D,
                    HAS_C=c is not None, HAS_DHR=dh_rec is not None, HAS_DC=dc is not None,
                    BLOCK=triton.next_power_of_2(D))
    return dz, dc_prev


def onlstm_cell(z, c, chunk_size):
    z, Gr, B, grid = _rows(z)
    nc = z.size(2) // (4 * chunk_size + 2)
    D = nc * chunk_size
    c = _c(c)
    h, c_new = z.new_empty(Gr, B, D), z.new_empty(Gr, B, D)
    _onlstm_fwd[grid](z, c if c is not None else h, h, c_new, B, z.stride(0), z.stride(1), D, nc, CS=chunk_size,
                      HAS_C=c is not None, BLOCK=triton.next_power_of_2(D))
    return h, c_new


def onlstm_cell_backward(z, c, c_new, dh, dh_rec, dc, chunk_size):
    z, Gr, B, grid = _rows(z)
    nc = z.size(2) // (4 * chunk_size + 2)
    D = nc * chunk_size
    dh, c, c_new, dh_rec, dc = _dh(dh), _c(c), c_new.contiguous(), _c(dh_rec), _c(dc)
    dz = z.new_empty(Gr, B, z.size(2))
    dc_prev = z.new_empty(Gr, B, D) if c is not None else z.new_empty(0)
    _onlstm_bwd[grid](z, c if c is not None else c_new, c_new, dh, dh_rec if dh_rec is not None else c_new,
                      dc if dc is not None else c_new, dz, dc_prev if c is not None else dz,
                      B, z.stride(0), z.stride(1), dh.stride(0), dh.stride(1), D, nc, CS=chunk_size,
                      HAS_C=c is not None, HAS_DHR=dh_rec is not None, HAS_DC=dc is not None,
                      BLOCK=triton.next_power_of_2(D))
    return dz, dc_prev

