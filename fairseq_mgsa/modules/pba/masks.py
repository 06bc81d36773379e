"""The masks of phrase-based attention's full forward (training, scoring), built once per batch.

Every layer of a stack receives the same padding and causal masks (fairseq hands each layer the
same tensors), so the n-gram validity, the causal mask repeated over the n-gram blocks and the
rows of the interleaved bigram queries are the same in every layer: the stack's MaskCache
(shared/mask_cache.py) builds them for the first layer and hands them to the others.
"""

from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from .ngram_convolution import ngram_invalid


def key_invalid(real: Optional[Tensor], ngrams: Sequence[int], length: int, batch: int, device,
                homogeneous: bool) -> Optional[Tensor]:
    """B x (blocks*S) bool, True = masked: the n-gram blocks one after another (block n's keys are
    the n-grams ending at each position), one block in homogeneous mode; None: nothing masked."""
    if homogeneous:
        return None if real is None else ~real
    parts = [ngram_invalid(real, n, length, batch, device, homogeneous=False) for n in ngrams]
    if all(p is None for p in parts):
        return None
    return torch.cat([p if p is not None else torch.zeros(batch, length, dtype=torch.bool, device=device)
                      for p in parts], dim=1)


def additive_mask(invalid: Optional[Tensor], attn_mask: Optional[Tensor], blocks: int, streams: int,
                  dtype: torch.dtype) -> Optional[Tensor]:
    """(B or 1) x 1 x (T*streams) x (blocks*S) in `dtype`, added to the logits: attn_mask (T x S,
    the causal mask; end alignment makes it right for every block) repeated over the blocks, and
    -inf at invalid n-grams. Query rows are (position, stream): each stream repeats the position's row."""
    mask = None
    if attn_mask is not None:
        mask = attn_mask.to(dtype).repeat(1, blocks)
        if streams > 1:
            mask = mask.repeat_interleave(streams, dim=0)
        mask = mask[None, None]
    if invalid is None:
        return mask
    base = mask if mask is not None else torch.zeros((), dtype=dtype, device=invalid.device)
    return torch.where(invalid[:, None, None, :], float("-inf"), base)


def bigram_rows_invalid(real_q: Optional[Tensor], length: int, batch: int, device) -> Tensor:
    """B x (2T) x 1 bool: the interleaved query rows (t, bigram), (t, unigram) whose output is zero,
    the bigram rows without tokens t-1 and t both real (eqs. 13-14)."""
    b_invalid = ngram_invalid(real_q, 2, length, batch, device, homogeneous=False)  # B x T
    return F.pad(b_invalid.unsqueeze(-1), (0, 1), value=False).view(batch, 2 * length, 1)
