"""Phrase interaction H_g = REC(G): a recurrence over the sequence of composed phrases.

    G    Gr x B x P x C   composed phrases of Gr granularities, right-padded along P
    H_g  Gr x B x P x C   phrase memories

Each granularity has its own recurrence (its own weights), but all of them run as one:
the weights are stacked along a leading granularity axis and every step is a batched
matrix product over granularities, so a layer takes max(P) steps instead of the sum of
the granularities' phrase counts. A granularity with fewer phrases leaves the batch once
its phrases are done (see `phases`), so the arithmetic is that of separate recurrences.
Padding slots follow the real phrases, so they never affect a real phrase's state (and
need no packing, hence no host sync).

The recurrences run at width `dim` (the width of the granularity's heads) and a linear
map takes their states back to the model's width, as the paper's parameter counts suggest
(LSTM interaction adds about 1.1M parameters to Transformer-Base).

No library kernel covers per-granularity weights (nn.LSTM takes one weight set), so the
steps are written here, twice: `forward` runs them through the hand-written recurrence of
ops/recurrence.py (no autograd recording per step, one kernel each way on a GPU), every granularity over
all P steps, a granularity's slots past its phrase count zeroed after; `forward_reference`
is the plain autograd version, which also skips a granularity's steps past its phrase count
(`phases`), kept as the reference the tests compare with (and used with `use_fast_path=False`;
the fused operator's own reference is ops/recurrence.py's `recurrence_ref`).
The LSTM keeps nn.LSTM's gate order (i, f, g, o) and initialisation, the ON-LSTM the
layout of Shen et al.'s gates (master f, master i, o, f, i, c).
"""

import math
from typing import List, Tuple, Union

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from ...errors import MGSAError
from ...ops.recurrence import recurrence


def cumax(x: Tensor) -> Tensor:
    return torch.cumsum(F.softmax(x, dim=-1), dim=-1)


def phases(max_phrases: List[int]) -> List[Tuple[int, Tuple[int, int]]]:
    """Steps grouped by the granularities still running (those with more than t phrases):
    [(end step, (lo, hi))], where granularities lo..hi-1 run until `end`. A granularity that
    has ended stays ended, so when the running ones form a block (phrase counts ordered along
    the granularities, as the levels of a tree or n-grams of growing n are) each phase runs
    on a slice of the granularity axis; otherwise every granularity runs every step."""
    out = []
    for t in range(max(max_phrases)):
        running = [g for g, p in enumerate(max_phrases) if p > t]
        block = (running[0], running[-1] + 1)
        if block[1] - block[0] != len(running):
            block = (0, len(max_phrases))
        if out and out[-1][1] == block:
            out[-1] = (t + 1, block)
        else:
            out.append((t + 1, block))
    return out


class StackedRecurrence(nn.Module):
    """Input, recurrent and output weights of `num_granularities` one-layer recurrences."""

    def __init__(self, num_granularities: int, embed_dim: int, dim: int, gates: int, use_fast_path: bool = True):
        super().__init__()
        G = num_granularities
        self.dim = dim
        self.weight_ih = nn.Parameter(torch.empty(G, gates, embed_dim))
        self.bias_ih = nn.Parameter(torch.empty(G, gates))
        self.weight_hh = nn.Parameter(torch.empty(G, gates, dim))
        self.weight_out = nn.Parameter(torch.empty(G, embed_dim, dim))
        self.bias_out = nn.Parameter(torch.empty(G, embed_dim))
        self.use_fast_path = use_fast_path  # ops/recurrence.py's operator; False: forward_reference
        self.reset_parameters()

    def reset_parameters(self):
        # as nn.Linear(dim, embed_dim) initialises the output map
        bound = 1 / math.sqrt(self.dim)
        nn.init.uniform_(self.weight_out, -bound, bound)
        nn.init.uniform_(self.bias_out, -bound, bound)

    # the LSTM's recurrence (0) or the ON-LSTM's chunk size
    chunk_size = 0

    @property
    def fast(self) -> bool:
        """use_fast_path's earlier name (scripts set it after construction)."""
        return self.use_fast_path

    @fast.setter
    def fast(self, value: bool):
        self.use_fast_path = value

    def forward(self, g: Tensor, num_phrases: Union[Tensor, List[int]]) -> Tensor:
        """g: Gr x B x P x C; num_phrases: Gr x B phrases of each sentence in each granularity
        (or, plainly, a list of each granularity's phrase count P_g, P the largest).
        Returns Gr x B x P x C; a granularity's slots past its largest phrase count are 0."""
        if not self.use_fast_path:
            counts = num_phrases if isinstance(num_phrases, list) else num_phrases.amax(dim=1).tolist()
            return self.forward_reference(g, counts)
        Gr, B, P, C = g.shape
        x_gates = torch.baddbmm(self.bias_ih.unsqueeze(1), g.reshape(Gr, B * P, C), self.weight_ih.transpose(1, 2))
        states = recurrence(x_gates.view(Gr, B, P, -1), self.weight_hh, self.chunk_size)
        out = torch.baddbmm(self.bias_out.unsqueeze(1), states.view(Gr, B * P, self.dim),
                            self.weight_out.transpose(1, 2)).view(Gr, B, P, C)
        if isinstance(num_phrases, list):
            ends = torch.tensor(num_phrases, device=g.device)
        else:
            ends = num_phrases.amax(dim=1)
        past = torch.arange(P, device=g.device) >= ends.unsqueeze(1)  # Gr x P
        return out.masked_fill(past.view(Gr, 1, P, 1), 0)

    def forward_reference(self, g: Tensor, max_phrases: List[int]) -> Tensor:
        """The plain recurrence, recorded by autograd step by step (module docstring)."""
        Gr, B, P, C = g.shape
        w_ih, w_hh, w_out = (w.transpose(1, 2) for w in (self.weight_ih, self.weight_hh, self.weight_out))
        b_ih, b_out = self.bias_ih.unsqueeze(1), self.bias_out.unsqueeze(1)
        h = c = None  # zero initial state: the first step skips the products with it
        pieces, start, (lo, hi) = [], 0, (0, Gr)
        for end, (new_lo, new_hi) in phases(max_phrases):
            if h is not None:  # granularities that have ended leave the block
                h, c = h[new_lo - lo:new_hi - lo], c[new_lo - lo:new_hi - lo]
            lo, hi = new_lo, new_hi
            n, steps = hi - lo, end - start

            def block(t: Tensor) -> Tensor:  # the running granularities' rows
                return t if (lo, hi) == (0, Gr) else t[lo:hi]

            # input projection of the phase's steps at once: n x B x steps x gates
            x = g[:, :, start:end] if (lo, hi) == (0, Gr) else g[lo:hi, :, start:end]
            x_gates = torch.baddbmm(block(b_ih), x.reshape(n, B * steps, C), block(w_ih)).view(n, B, steps, -1)
            w, outputs = block(w_hh), []
            for x_t in x_gates.unbind(2):
                gates = x_t if h is None else torch.baddbmm(x_t, h, w)
                h, c = self.cell(gates, c)
                outputs.append(h)
            states = torch.stack(outputs, dim=2).view(n, B * steps, self.dim)
            out = torch.baddbmm(block(b_out), states, block(w_out)).view(n, B, steps, C)
            pieces.append(out if (lo, hi) == (0, Gr) else F.pad(out, (0, 0, 0, 0, 0, 0, lo, Gr - hi)))
            start = end
        return pieces[0] if len(pieces) == 1 else torch.cat(pieces, dim=2)

    def cell(self, gates: Tensor, c):
        raise NotImplementedError


class LSTMInteraction(StackedRecurrence):
    """One LSTM per granularity (nn.LSTM's equations, with b_ih + b_hh held as one bias)."""

    def __init__(self, num_granularities: int, embed_dim: int, dim: int, use_fast_path: bool = True):
        super().__init__(num_granularities, embed_dim, dim, 4 * dim, use_fast_path)

    def reset_parameters(self):
        super().reset_parameters()
        bound = 1 / math.sqrt(self.dim)  # nn.LSTM's initialisation
        for w in (self.weight_ih, self.bias_ih, self.weight_hh):
            nn.init.uniform_(w, -bound, bound)

    def cell(self, gates: Tensor, c):
        Gr, B, _ = gates.shape
        # split / unbind rather than slicing: their backward is one cat / stack, where every
        # slice's backward fills a zero tensor of the gates' size
        ifg, o = gates.view(Gr, B, 4, self.dim).split([3, 1], dim=2)
        i, f, g = ifg.unbind(2)
        i, f, o = torch.sigmoid(i), torch.sigmoid(f), torch.sigmoid(o.squeeze(2))
        cell = torch.tanh(g)
        c = i * cell if c is None else torch.addcmul(f * c, i, cell)
        return o * torch.tanh(c), c


class ONLSTMInteraction(StackedRecurrence):
    """One Ordered-Neurons LSTM (Shen et al., ICLR 2019) per granularity.

    The hidden state is split into chunks of `chunk_size` neurons; cumax master forget /
    input gates over the chunks order the neurons so that high-ranking ones keep
    long-lived (higher-level) information:

        master_f = cumax(z_mf),  master_i = 1 - cumax(z_mi),  omega = master_f * master_i
        f^ = sigmoid(z_f) * omega + (master_f - omega),  i^ likewise with master_i
        c = f^ * c + i^ * tanh(z_c),  h = sigmoid(z_o) * tanh(c)

    Gate vectors are viewed as (chunks x chunk_size) so that the master gates broadcast over
    a chunk's neurons instead of being repeated; the two master gates and the f, i gates are
    computed as pairs.
    """

    def __init__(self, num_granularities: int, embed_dim: int, dim: int, chunk_size: int, use_fast_path: bool = True):
        if dim % chunk_size != 0:
            raise MGSAError(f"ON-LSTM hidden size {dim} is not divisible by chunk size {chunk_size}")
        self.n_chunks = dim // chunk_size
        self.chunk_size = chunk_size
        super().__init__(num_granularities, embed_dim, dim, 4 * dim + 2 * self.n_chunks, use_fast_path)
        # master = sign * cumax + offset: (cumax(z_mf), 1 - cumax(z_mi)) in one op
        self.register_buffer("master_sign", torch.tensor([[1.0], [-1.0]]), persistent=False)
        self.register_buffer("master_offset", torch.tensor([[0.0], [1.0]]), persistent=False)

    def reset_parameters(self):
        super().reset_parameters()
        # as the nn.Linear(embed_dim, gates) and nn.Linear(dim, gates, bias=False) they replace
        bound_ih, bound_hh = 1 / math.sqrt(self.weight_ih.size(2)), 1 / math.sqrt(self.dim)
        nn.init.uniform_(self.weight_ih, -bound_ih, bound_ih)
        nn.init.uniform_(self.bias_ih, -bound_ih, bound_ih)
        nn.init.uniform_(self.weight_hh, -bound_hh, bound_hh)

    def cell(self, gates: Tensor, c):
        Gr, B, _ = gates.shape
        nc, cs = self.n_chunks, self.chunk_size
        # split / unbind rather than slicing: their backward is one cat / stack, where every
        # slice's backward fills a zero tensor of the gates' size
        z_master, z = gates.split([2 * nc, 4 * self.dim], dim=-1)
        cm = cumax(z_master.view(Gr, B, 2, nc))
        sign, offset = self.master_sign, self.master_offset
        if sign.dtype != cm.dtype:
            sign, offset = sign.to(cm.dtype), offset.to(cm.dtype)
        master = torch.addcmul(offset, cm, sign)  # Gr x B x 2 x nc: master_f, master_i
        master_f, master_i = master.unbind(2)
        omega = (master_f * master_i).unsqueeze(2)  # Gr x B x 1 x nc
        z_ofi, z_c = z.view(Gr, B, 4, nc, cs).split([3, 1], dim=2)  # o, f, i | c
        o, fi = torch.sigmoid(z_ofi).split([1, 2], dim=2)
        f_hat, i_hat = torch.addcmul((master - omega).unsqueeze(-1), fi, omega.unsqueeze(-1)).unbind(2)
        cell = torch.tanh(z_c.squeeze(2))
        c = i_hat * cell if c is None else torch.addcmul(f_hat * c, i_hat, cell)
        h = o.squeeze(2) * torch.tanh(c)  # Gr x B x nc x cs
        return h.view(Gr, B, self.dim), c


def build_interaction(name: str, num_granularities: int, embed_dim: int, dim: int, chunk_size: int,
                      use_fast_path: bool = True):
    if name == "none":
        return None
    if name == "lstm":
        return LSTMInteraction(num_granularities, embed_dim, dim, use_fast_path)
    if name == "onlstm":
        return ONLSTMInteraction(num_granularities, embed_dim, dim, chunk_size, use_fast_path)
    raise MGSAError(f"unknown phrase interaction {name!r}: expected one of none, lstm, onlstm")
