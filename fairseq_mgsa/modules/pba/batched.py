"""The full forward of phrase-based attention (training, scoring) as a few batched operations
(PhraseBasedAttention; docs/benchmarks-pba.md, issue 43). A decoding step is decoding.py's.

On a GPU a training update at the base size is bound by the number of kernels it launches, not by
arithmetic, so the n-gram sizes, the head groups and the interleaved mode's two query streams are
batched instead of looped over:

* one matrix product for every linear map that reads the same input (queries, unigram keys and
  values, QUERYK's key projections), one convolution per n-gram width for the n-gram maps;
* one attention call: the n-gram blocks are one key axis (block after block, each block's keys
  the n-grams ending at each position), the homogeneous head groups one head axis, and the
  interleaved mode's bigram and unigram queries one query axis (rows (t, bigram), (t, unigram)).
  QUERYK's blocks have queries and keys of n*d_k per head: each block sits in its own slice of a
  sum(n)*d_k-wide vector (zeros elsewhere), its 1/sqrt(n*d_k) scale folded into its queries, so
  one product gives every block's logits. Without attention weights to return, the call is
  torch's scaled_dot_product_attention (fused kernels on a GPU);
* the interleaved mode's strided convolution over (.., b'_t, u_t, b'_{t+1}, ..) reads the
  attention output as it comes, rows (t, bigram), (t, unigram);
* the masks come from MaskCache (masks.py): built once per batch, not in every layer.

The same numbers as the plain form (per-block products, concatenated logits; kept as the tests'
reference) up to float rounding; with attention dropout the random draw differs (the same
distribution, drawn by scaled_dot_product_attention as in fairseq's MultiheadAttention).
"""

from typing import Dict, List, Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq import utils
from torch import Tensor

from .ngram_convolution import NGramConv
from .masks import additive_mask, bigram_rows_invalid, key_invalid


def _cat(tensors: Sequence[Tensor], dim: int) -> Tensor:
    return torch.cat(list(tensors), dim=dim) if len(tensors) > 1 else tensors[0]


def _heads(x: Tensor, h: int) -> Tensor:
    """B x T x (h*e) -> B x h x T x e"""
    B, T, C = x.shape
    return x.view(B, T, h, C // h).transpose(1, 2)


class PhraseBasedBatched:
    """Mixed into PhraseBasedAttention (attributes: groups, ngrams, attention, mode, role, the
    projection modules, dropout_module, mask_cache; methods scale, keys_values)."""

    def project(self, x: Tensor, modules: Sequence[nn.Module], keep: Optional[Tensor] = None) -> Dict[int, Tensor]:
        """The outputs (B x S x d_out, by id of the module) of nn.Linear and NGramConv modules that all read
        x (B x S x d_in): every linear map in one product, the convolutions of one width in one
        convolution. keep (B x S x 1, 0 at pads): multiplies x before the convolutions."""
        mods = list(dict.fromkeys(modules))
        out: Dict[int, Tensor] = {}
        linear = [m for m in mods if not isinstance(m, NGramConv)]
        if linear:
            weight, bias = _cat([m.weight for m in linear], 0), _cat([m.bias for m in linear], 0)
            if not x.is_contiguous() and x.transpose(0, 1).is_contiguous():
                # fairseq's time-first activations seen batch-first: the product on them as they lie
                # (one matrix product, no copy of x forward or of its gradient backward)
                y = F.linear(x.transpose(0, 1), weight, bias).transpose(0, 1)
            else:
                y = F.linear(x, weight, bias)
            for m, part in zip(linear, y.split([m.out_features for m in linear], dim=-1)):
                out[id(m)] = part
        convs = [m for m in mods if isinstance(m, NGramConv)]
        if convs:
            xc = (x * keep if keep is not None else x).transpose(1, 2)  # B x d_in x S
            for n in sorted({m.n for m in convs}):
                group = [m for m in convs if m.n == n]
                y = F.conv1d(F.pad(xc, (n - 1, 0)), _cat([m.weight for m in group], 0),
                             _cat([m.bias for m in group], 0)).transpose(1, 2)  # B x S x sum(d_out)
                for m, part in zip(group, y.split([m.out_channels for m in group], dim=-1)):
                    out[id(m)] = part
        return out

    def kv_modules(self) -> List[nn.Module]:
        mods: List[nn.Module] = []
        for n, _ in self.groups:
            if n == 1:
                mods += [self.k_proj, self.v_proj]
            else:
                key = self.k_ngram[str(n)] if self.attention == "convkv" else self._key_linear(n)
                mods += [self.v_ngram[str(n)], key]
        return mods

    def query_modules(self, bigram: bool) -> Dict[int, nn.Module]:
        """Per n-gram size, the module giving that block's query (CONVKV: one for all blocks, under size 0)."""
        if self.attention == "convkv":
            return {0: self.q2_proj if bigram else self.q_proj}
        return {n: (self.q2_proj if bigram else self.q_proj) if n == 1 else
                (self.q2_kernel if bigram else self.q_kernel[str(n)]) for n, _ in self.groups}

    def full_masks(self, pad_kv: Optional[Tensor], pad_q: Optional[Tensor], attn_mask: Optional[Tensor],
                   B: int, T: int, S: int, dtype: torch.dtype, device) -> Dict[str, Optional[Tensor]]:
        """From MaskCache: real (B x S, key tokens), keep (B x S x 1 in dtype, homogeneous
        mode: zeros at pads before the n-gram convolutions), logits (the additive mask, masks.py,
        in the products' dtype: autocast's where it is on), rows_invalid (interleaved: the zeroed
        bigram rows)."""
        homogeneous = self.mode == "homogeneous"
        interleaved = self.mode == "interleaved"
        streams = 2 if interleaved else 1
        blocks = 1 if homogeneous else len(self.ngrams)
        dev = torch.device(device).type
        compute = torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else dtype

        def build():
            real = ~pad_kv if pad_kv is not None else None
            invalid = key_invalid(real, self.ngrams, S, B, device, homogeneous)
            masks = {"real": real, "logits": additive_mask(invalid, attn_mask, blocks, streams, compute),
                     "keep": real.unsqueeze(-1).to(dtype) if (homogeneous and real is not None) else None,
                     "rows_invalid": None}
            if interleaved:
                real_q = ~pad_q if pad_q is not None else None
                masks["rows_invalid"] = bigram_rows_invalid(real_q, T, B, device)
            return masks

        signature = (self.role, self.mode, tuple(self.ngrams), B, T, S, dtype, compute, str(device))
        return self.mask_cache.get(signature, (pad_kv, pad_q if interleaved else None, attn_mask), build)

    def attention_inputs(self, proj: Dict[int, Tensor], streams: List[Dict[int, nn.Module]], kv, T: int):
        """q: B x H x (T*streams) x E, k: B x H x (blocks*S) x E (homogeneous: S), v: ... x d_k, and the scale."""
        homogeneous = self.mode == "homogeneous"

        def stacked(qs: List[Tensor]) -> Tensor:  # rows (t, stream)
            if len(qs) == 1:
                return qs[0]
            q = torch.stack(qs, dim=3)
            return q.view(q.size(0), q.size(1), -1, q.size(-1))

        dim = 1 if homogeneous else 2  # head groups side by side, or n-gram blocks one after another
        v = _cat([kv[n][1] for n, _ in self.groups], dim)
        if self.attention == "convkv":  # one query for every block, one scale
            q = stacked([_heads(proj[id(s[0])], self.num_heads) for s in streams])
            return q, _cat([kv[n][0] for n, _ in self.groups], dim), v, self.scale(1)
        ref = self.scale(self.groups[0][0])
        qs, ks = [], []
        for n, h in self.groups:
            q = stacked([_heads(proj[id(s[n])], h) for s in streams])
            qs.append(q * (self.scale(n) / ref) if n != self.groups[0][0] else q)
            ks.append(kv[n][0])
        widths = [q.size(-1) for q in qs]
        if homogeneous:  # heads of a smaller n padded with zeros to the widest
            E = max(widths)
            pad = [lambda t, w=w: F.pad(t, (0, E - w)) if E > w else t for w in widths]
        else:  # block i in its own slice
            offsets = [sum(widths[:i]) for i in range(len(widths))]
            E = sum(widths)
            pad = [lambda t, o=o, w=w: F.pad(t, (o, E - o - w)) for o, w in zip(offsets, widths)]
        q = torch.cat(qs, dim=-1) if not homogeneous else _cat([p(t) for p, t in zip(pad, qs)], 1)
        k = _cat([p(t) for p, t in zip(pad, ks)], dim)
        return q, k, v, ref

    def full_forward(self, x_q: Tensor, x_kv: Tensor, pad_kv: Optional[Tensor], pad_q: Optional[Tensor],
                     attn_mask: Optional[Tensor], need_probs: bool):
        """x_q: B x T x d, x_kv: B x S x kdim (self attention: x_q). Returns B x T x d, the
        probabilities per head group as the plain form gives them (B x h x T x (blocks*S), or None
        without need_probs) and the key tokens' mask (B x S, True = real, or None)."""
        B, T, _ = x_q.shape
        S = x_kv.size(1)
        masks = self.full_masks(pad_kv, pad_q, attn_mask, B, T, S, x_q.dtype, x_q.device)
        streams = [self.query_modules(True), self.query_modules(False)] if self.mode == "interleaved" else \
            [self.query_modules(False)]
        qmods = [m for s in streams for m in s.values()]
        if self.self_attention:
            proj = self.project(x_q, qmods + self.kv_modules(), masks["keep"])
            kv = self.keys_values(x_q, masks["real"], proj, with_invalid=False)
        else:
            proj = self.project(x_q, qmods)
            kv = self.keys_values(x_kv, masks["real"], with_invalid=False, keep=masks["keep"])
        q, k, v, scale = self.attention_inputs(proj, streams, kv, T)
        mask = masks["logits"]
        if mask is not None and mask.dtype != q.dtype:  # autocast: the products' dtype
            mask = mask.to(q.dtype)
        drop = self.dropout_module.p if (self.training or self.dropout_module.apply_during_inference) else 0.0
        probs = None
        if not need_probs:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop, scale=scale)
        else:
            logits = torch.matmul(q, k.transpose(-1, -2)) * scale
            if mask is not None:
                logits = logits + mask
            probs = utils.softmax(logits, dim=-1).type_as(logits)
            out = torch.matmul(self.dropout_module(probs), v)
            if len(streams) > 1:  # the unigram stream's (the plain form returns those)
                probs = probs.view(B, probs.size(1), T, len(streams), -1)[:, :, :, -1]
            probs = list(probs.split([h for _, h in self.groups], dim=1)) if self.mode == "homogeneous" else [probs]
        u = out.transpose(1, 2).reshape(B, T * len(streams), -1)  # B x T(*2) x d, heads concatenated
        if self.mode != "interleaved":
            return self.out_proj(u), probs, masks["real"]
        # eqs. 15-17: the strided convolution over (.., b'_t, u_t, b'_{t+1}, ..), b'_t zero where
        # tokens t-1 and t are not both real (row (0, bigram) is always zero: the sequence's left pad)
        seq = u.masked_fill(masks["rows_invalid"], 0.0).transpose(1, 2)  # B x d x 2T
        if self.role == "enc":
            seq = F.pad(seq, (0, 1))
        out = F.conv1d(seq, self.out_conv.weight, self.out_conv.bias, stride=2)  # B x d x T
        return out.transpose(1, 2), probs, masks["real"]
