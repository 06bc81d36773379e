"""Building blocks of phrase-based attention (Nguyen & Joty): end-aligned n-gram windows.

Every n-gram is indexed by its LAST token (docs/peers.md, n-gram alignment): the n-gram at t covers
tokens t-n+1 .. t, positions before the sequence start read as zero vectors. With
that alignment the ordinary token-level causal mask is also the right mask for
n-gram keys (an n-gram ending at j may be seen by query i iff j <= i), and one
decoding step adds exactly one n-gram per size.

Padding: the sequence is multiplied by its real-token mask before any window is
formed, so pads act as the zeros of the paper's left padding whatever side they are on.
"""

from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


def zero_pads(x: Tensor, real: Optional[Tensor]) -> Tensor:
    """x: B x S x C; real: B x S (True = real token) or None (no pads)."""
    if real is None:
        return x
    return x * real.unsqueeze(-1).to(x.dtype)


def end_aligned_windows(x: Tensor, n: int) -> Tensor:
    """B x S x C -> B x S x (n*C): row t is [x_{t-n+1}; ...; x_t], zeros before the start."""
    if n == 1:
        return x
    B, S, C = x.shape
    windows = F.pad(x, (0, 0, n - 1, 0)).unfold(1, n, 1)  # B x S x C x n
    return windows.transpose(2, 3).reshape(B, S, n * C)


def ngram_invalid(real: Optional[Tensor], n: int, length: int, batch: int, device,
                  homogeneous: bool) -> Optional[Tensor]:
    """B x S bool mask of n-grams that may not be attended (True = masked), or None.

    homogeneous: the n-gram at t is usable iff token t is real (the zero-filled part
    before the sentence is the paper's own left padding). Otherwise (heterogeneous and
    interleaved): usable iff all n tokens exist and are real, i.e. exactly the
    paper's valid convolution, which has no n-gram reaching outside the sentence.
    """
    if homogeneous or n == 1:
        return None if real is None else ~real
    if real is None:
        real = torch.ones(batch, length, dtype=torch.bool, device=device)
    # no data-dependent `if mask.any()`: on a GPU that would wait for the device in every module
    count = F.pad(real.to(torch.float32), (n - 1, 0)).unfold(1, n, 1).sum(-1)  # B x S
    return count < n


class NGramConv(nn.Conv1d):
    """Conv_n of the paper, end-aligned: B x S x d_in -> B x S x d_out, output t from tokens t-n+1..t.

    A conv1d over the whole batch (the weight is the paper's n x d_in x d_out kernel,
    stored as torch's d_out x d_in x n). Used for CONVKV keys and values, the values
    of QUERYK, and the bigram queries of the interleaved mode.
    """

    def __init__(self, d_in: int, d_out: int, n: int):
        super().__init__(d_in, d_out, kernel_size=n)
        self.n = n

    def forward(self, x: Tensor, real: Optional[Tensor] = None, last_only: bool = False) -> Tensor:
        """last_only: the output at the last position only (B x 1 x d_out), from the last n rows of x
        (a decoding step; x holds at least n rows)."""
        if last_only:
            w = zero_pads(x[:, -self.n:], real[:, -self.n:] if real is not None else None)  # B x n x d_in
            # the window flattened as (d_in, n), the weight's own layout: a view, no weight copy
            flat = w.transpose(1, 2).reshape(w.size(0), 1, -1)  # B x 1 x (d_in*n)
            return F.linear(flat, self.weight.view(self.out_channels, -1), self.bias)
        x = zero_pads(x, real).transpose(1, 2)  # B x d_in x S
        y = F.conv1d(F.pad(x, (self.n - 1, 0)), self.weight, self.bias)  # B x d_out x S
        return y.transpose(1, 2)


def spread_over_tokens(probs: Tensor, n: int, real: Optional[Tensor]) -> Tensor:
    """Token-level view of attention over n-grams (fairseq's alignment buffer is token-wide; docs/peers.md, attention weights): each n-gram's
    probability is shared evenly by the real tokens it covers.

    probs: B x H x T x S over n-grams ending at each key position; real: B x S or None.
    Returns the same shape over tokens: token s receives from the n-grams ending at s .. s+n-1, a
    sum over a sliding window of the shares (no loop).
    """
    if n == 1:
        return probs
    S = probs.size(-1)
    if real is None:
        real = torch.ones(probs.size(0), S, dtype=torch.bool, device=probs.device)
    realf = real.to(probs.dtype)  # B x S
    count = F.pad(realf, (n - 1, 0)).unfold(1, n, 1).sum(-1).clamp(min=1)  # real tokens per window
    share = probs / count[:, None, None, :]
    out = F.pad(share, (0, n - 1)).unfold(-1, n, 1).sum(-1)  # B x H x T x S
    return out * realf[:, None, None, :]
