"""Phrase interaction H_g = REC(G): a recurrence over the sequence of composed phrases.

    G    B x P x C   composed phrases, right-padded along P
    H_g  B x P x C   phrase memory

The recurrences run at width `dim` (the width of the granularity's heads) and a
linear layer maps their states back to the model's width, as the paper's parameter
counts suggest (LSTM interaction adds about 1.1M parameters to Transformer-Base).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from ..errors import MGSAError
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class LSTMInteraction(nn.Module):
    def __init__(self, embed_dim: int, dim: int):
        super().__init__()
        self.lstm = nn.LSTM(embed_dim, dim, batch_first=True)
        self.out_proj = nn.Linear(dim, embed_dim)

    def forward(self, g: Tensor, num_phrases: Tensor) -> Tensor:
        packed = pack_padded_sequence(g, num_phrases.cpu(), batch_first=True, enforce_sorted=False)
        h, _ = self.lstm(packed)
        h, _ = pad_packed_sequence(h, batch_first=True, total_length=g.size(1))
        return self.out_proj(h)


def cumax(x: Tensor) -> Tensor:
    return torch.cumsum(F.softmax(x, dim=-1), dim=-1)


class ONLSTM(nn.Module):
    """Ordered-Neurons LSTM (Shen et al., ICLR 2019), batch-first, one layer.

    The hidden state is split into chunks of `chunk_size` neurons; cumax master
    forget / input gates over the chunks order the neurons so that high-ranking ones
    keep long-lived (higher-level) information.

    No fused kernel exists, so the recurrence steps loop in Python over the phrase
    axis, batched over sentences. Padding slots follow the real phrases, so they never
    affect a real phrase's state.
    """

    def __init__(self, input_dim: int, hidden_dim: int, chunk_size: int):
        super().__init__()
        if hidden_dim % chunk_size != 0:
            raise MGSAError(f"ON-LSTM hidden size {hidden_dim} is not divisible by chunk size {chunk_size}")
        self.hidden_dim = hidden_dim
        self.chunk_size = chunk_size
        self.n_chunks = hidden_dim // chunk_size
        gates = 4 * hidden_dim + 2 * self.n_chunks
        self.ih = nn.Linear(input_dim, gates)
        self.hh = nn.Linear(hidden_dim, gates, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        B, P, _ = x.shape
        h = x.new_zeros(B, self.hidden_dim)
        c = x.new_zeros(B, self.hidden_dim)
        x_gates = self.ih(x)  # B x P x gates, input projection for all steps at once
        outputs = []
        for t in range(P):
            h, c = self.step(x_gates[:, t], h, c)
            outputs.append(h)
        return torch.stack(outputs, dim=1)  # B x P x D

    def step(self, x_gates: Tensor, h: Tensor, c: Tensor):
        gates = x_gates + self.hh(h)
        m = 2 * self.n_chunks
        master_f = cumax(gates[:, : self.n_chunks]).repeat_interleave(self.chunk_size, dim=1)
        master_i = (1.0 - cumax(gates[:, self.n_chunks: m])).repeat_interleave(self.chunk_size, dim=1)
        o, f, i, cell = gates[:, m:].chunk(4, dim=1)
        omega = master_f * master_i
        f_hat = torch.sigmoid(f) * omega + (master_f - omega)
        i_hat = torch.sigmoid(i) * omega + (master_i - omega)
        c = f_hat * c + i_hat * torch.tanh(cell)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


class ONLSTMInteraction(nn.Module):
    def __init__(self, embed_dim: int, dim: int, chunk_size: int):
        super().__init__()
        self.onlstm = ONLSTM(embed_dim, dim, chunk_size)
        self.out_proj = nn.Linear(dim, embed_dim)

    def forward(self, g: Tensor, num_phrases: Tensor) -> Tensor:
        return self.out_proj(self.onlstm(g))


def build_interaction(name: str, embed_dim: int, dim: int, chunk_size: int):
    if name == "none":
        return None
    if name == "lstm":
        return LSTMInteraction(embed_dim, dim)
    if name == "onlstm":
        return ONLSTMInteraction(embed_dim, dim, chunk_size)
    raise MGSAError(f"unknown phrase interaction {name!r}: expected one of none, lstm, onlstm")
