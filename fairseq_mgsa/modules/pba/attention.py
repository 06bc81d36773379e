"""Phrase-based attention (Nguyen & Joty, "Phrase-Based Attentions"). docs/peers.md states the
method and the decisions taken where the paper is silent.

Keys and values are n-grams of the key sequence, made by convolution (CONVKV, eq. 5)
or scored with the query as the convolution kernel (QUERYK, eq. 6), arranged as
- homogeneous: each head group attends to one n-gram size (heads unigram first);
- heterogeneous: every head attends to all sizes at once, one softmax over all blocks (eqs. 7-8);
- interleaved: unigram and bigram queries each attend heterogeneously over 1-2-grams, and
  a strided convolution over the interleaved outputs replaces W_O (eqs. 9-17).

Same call signature and return as fairseq's MultiheadAttention, so fairseq's layers use it
unchanged. The parameters of the unigram part carry MultiheadAttention's names (q_proj,
k_proj, v_proj, out_proj), so a unigram-only module loads a MultiheadAttention state dict.
It is not a MultiheadAttention subclass: its incremental state holds n-gram keys, the
recent layer inputs and, for the interleaved cross attention, the previous query input,
and every entry must follow the beam (docs/peers.md, incremental decoding). That bookkeeping is
decoding.py's (PhraseBasedDecoding); this file holds the attention itself.
"""

from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq import utils
from fairseq.incremental_decoding_utils import with_incremental_state
from fairseq.modules.fairseq_dropout import FairseqDropout
from torch import Tensor

from ...errors import MGSAError
from ..shared.extra_weights import ExtraAttentionWeights, KeptWeights
from .ngram_convolution import NGramConv, ngram_invalid, spread_over_tokens, zero_pads
from ..shared.mask_cache import MaskCache
from .batched import PhraseBasedBatched, _heads
from .decoding import PhraseBasedDecoding

CONVKV, QUERYK = "convkv", "queryk"
HOMOGENEOUS, HETEROGENEOUS, INTERLEAVED = "homogeneous", "heterogeneous", "interleaved"
ROLES = ("enc", "dec", "cross")


def head_groups(mode: str, ngrams: Sequence[int], num_heads: int) -> List[Tuple[int, int]]:
    """(n, heads) per softmax group. Homogeneous: `ngrams` lists one size per head group,
    the heads split evenly over the list (1,2 = 4/4 with 8 heads; 1,1,1,2,2,3,3,3 = the
    paper's 3/2/3); consecutive equal sizes merge into one group. Otherwise one group of
    all heads over every size."""
    if mode != HOMOGENEOUS:
        return [(n, num_heads) for n in ngrams]
    per_group = num_heads // len(ngrams)
    groups: List[Tuple[int, int]] = []
    for n in ngrams:
        if groups and groups[-1][0] == n:
            groups[-1] = (n, groups[-1][1] + per_group)
        else:
            groups.append((n, per_group))
    return groups


def check_pba_config(attention: str, mode: str, ngrams: Sequence[int], num_heads: int, embed_dim: int,
                     shared_key: bool = False, where: str = "") -> None:
    """Raise MGSAError (one line) for a configuration that cannot be built."""
    spec = ",".join(str(n) for n in ngrams)
    if attention not in (CONVKV, QUERYK):
        raise MGSAError(f"--pba-attention {attention!r}: expected convkv or queryk")
    if mode not in (HOMOGENEOUS, HETEROGENEOUS, INTERLEAVED):
        raise MGSAError(f"--pba-mode {mode!r}: expected homogeneous, heterogeneous or interleaved")
    if not ngrams or any(n < 1 for n in ngrams):
        raise MGSAError(f"--pba-ngrams {spec!r}: expected n-gram sizes >= 1")
    if embed_dim % num_heads:
        raise MGSAError(f"{where}embedding dim {embed_dim} is not divisible by {num_heads} heads")
    if mode == HOMOGENEOUS:
        if num_heads % len(ngrams):
            raise MGSAError(f"--pba-ngrams {spec}: {where}{num_heads} heads cannot be split evenly over "
                            f"{len(ngrams)} head groups (homogeneous mode: one size per head group)")
        if list(ngrams) != sorted(ngrams):
            raise MGSAError(f"--pba-ngrams {spec}: homogeneous head groups must be listed by increasing size")
    else:
        if len(set(ngrams)) != len(ngrams) or list(ngrams) != sorted(ngrams):
            raise MGSAError(f"--pba-ngrams {spec}: {mode} mode needs distinct sizes in increasing order")
        if ngrams[0] != 1:
            # the unigram block keeps every softmax row non-empty (decoder position 0 has no n-gram)
            raise MGSAError(f"--pba-ngrams {spec}: {mode} mode needs the unigram size 1")
        if mode == INTERLEAVED and list(ngrams) != [1, 2]:
            raise MGSAError(f"--pba-ngrams {spec}: the interleaved mode is defined for 1,2 only")
    if shared_key and (attention != QUERYK or mode == HOMOGENEOUS):
        raise MGSAError("--pba-queryk-shared-key applies to heterogeneous or interleaved QUERYK only")


@with_incremental_state
class PhraseBasedAttention(PhraseBasedDecoding, PhraseBasedBatched, ExtraAttentionWeights, nn.Module):
    EXTRA_WEIGHTS_PREFIX = "pba"  # kept: the softmax over n-grams, a part per size (ngram<n>)

    def __init__(self, embed_dim: int, num_heads: int, kdim: Optional[int] = None, dropout: float = 0.0,
                 attention: str = CONVKV, mode: str = HETEROGENEOUS, ngrams: Sequence[int] = (1, 2),
                 role: str = "enc", shared_key: bool = False):
        super().__init__()
        ngrams = [int(n) for n in ngrams]
        check_pba_config(attention, mode, ngrams, num_heads, embed_dim, shared_key)
        if role not in ROLES:
            raise MGSAError(f"phrase-based attention role {role!r}: expected one of {', '.join(ROLES)}")
        d = self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.num_heads = num_heads
        self.head_dim = dk = embed_dim // num_heads
        self.attention, self.mode, self.role, self.shared_key = attention, mode, role, shared_key
        self.self_attention = role != "cross"
        self.encoder_decoder_attention = role == "cross"
        self.groups = head_groups(mode, ngrams, num_heads)
        self.ngrams = [n for n, _ in self.groups]
        self.max_n = max(self.ngrams)
        self.dropout_module = FairseqDropout(dropout, module_name=self.__class__.__name__)
        # the decoder layer sets this for the cross attention (interleaved bigram queries)
        self.query_padding_mask: Optional[Tensor] = None
        # hypotheses per sentence in beam search (set_beam_size): the cross attention then keeps
        # its encoder-side n-grams once per sentence, as fairseq's MultiheadAttention does
        self.beam_size = 1
        # the full forward's masks, built once per batch; the model gives one cache to a whole stack
        self.mask_cache = MaskCache()

        homogeneous = mode == HOMOGENEOUS
        width = {n: (h * dk if homogeneous else d) for n, h in self.groups}  # K/V width per size
        if attention == CONVKV:
            self.q_proj = nn.Linear(d, d)  # one query for every block (eq. 7)
        elif 1 in width:
            self.q_proj = nn.Linear(d, width[1])
        if 1 in width:
            self.k_proj = nn.Linear(self.kdim, width[1])
            self.v_proj = nn.Linear(self.kdim, width[1])
        self.k_ngram, self.v_ngram, self.q_kernel = nn.ModuleDict(), nn.ModuleDict(), nn.ModuleDict()
        for n, w in width.items():
            if n == 1:
                continue
            self.v_ngram[str(n)] = NGramConv(self.kdim, w, n)
            if attention == CONVKV:
                self.k_ngram[str(n)] = NGramConv(self.kdim, w, n)
            else:
                # W_q in R^{n x d x d_k} per head: n kernel taps per query token; outputs (head, tap, d_k)
                self.q_kernel[str(n)] = nn.Linear(d, n * w)
                if not shared_key:
                    self.k_ngram[str(n)] = nn.Linear(self.kdim, w)
        if mode == INTERLEAVED:
            self.q2_proj = NGramConv(d, d, 2)  # bigram queries Conv_2(Q, W_q2) (W_{q2,1} for QUERYK)
            if attention == QUERYK:
                self.q2_kernel = NGramConv(d, 2 * d, 2)  # W_{q2,2}: 2 taps per bigram query
            # eqs. 15-17: window 3 (encoder: both neighbouring bigrams) or 2 (decoder side: past only)
            self.out_conv = nn.Conv1d(d, d, kernel_size=3 if role == "enc" else 2, stride=2)
        else:
            self.out_proj = nn.Linear(d, d)
        self.reset_parameters()

    def reset_parameters(self):
        # as MultiheadAttention.reset_parameters: scaled Xavier for the input projections
        gain = 2 ** -0.5 if self.kdim == self.embed_dim else 1.0
        for name, module in self.named_modules():
            if module is self or not isinstance(module, (nn.Linear, nn.Conv1d)):
                continue
            if name in ("out_proj", "out_conv"):
                nn.init.xavier_uniform_(module.weight)
                nn.init.constant_(module.bias, 0.0)
            else:
                nn.init.xavier_uniform_(module.weight, gain=gain)

    # ---- projections -------------------------------------------------------------------------

    def _key_linear(self, n: int) -> nn.Module:
        return self.k_proj if self.shared_key else self.k_ngram[str(n)]

    def keys_values(self, x: Tensor, real: Optional[Tensor], proj: Optional[Dict[int, Tensor]] = None,
                    with_invalid: bool = True, keep: Optional[Tensor] = None
                    ) -> Dict[int, Tuple[Tensor, Tensor, Optional[Tensor]]]:
        """x: B x S x kdim -> per size n: K (B x h x S x e), V (B x h x S x d_k), invalid (B x S or None;
        with_invalid=False: None). proj: the projections of x (project(); computed here without).
        Pads are zeroed before the n-grams in homogeneous mode only (keep: that multiplier, B x S x 1,
        from the caller): elsewhere an n-gram that reads a pad is masked, whatever its value."""
        B, S, _ = x.shape
        homogeneous = self.mode == HOMOGENEOUS
        if proj is None:
            if homogeneous and keep is None and real is not None:
                keep = real.unsqueeze(-1).to(x.dtype)
            proj = self.project(x, self.kv_modules(), keep if homogeneous else None)
        out = {}
        for n, h in self.groups:
            invalid = ngram_invalid(real, n, S, B, x.device, homogeneous) if with_invalid else None
            if n == 1:
                k, v = _heads(proj[id(self.k_proj)], h), _heads(proj[id(self.v_proj)], h)
            else:
                v = _heads(proj[id(self.v_ngram[str(n)])], h)
                if self.attention == CONVKV:
                    k = _heads(proj[id(self.k_ngram[str(n)])], h)
                else:
                    # projected keys (zero, not the bias, at pads and before the start: docs/peers.md,
                    # QUERYK), unfolded into n-tap windows once, so a decoding step appends one window
                    k = proj[id(self._key_linear(n))]
                    if homogeneous:
                        k = zero_pads(k, real)
                    windows = F.pad(k, (0, 0, n - 1, 0)).unfold(1, n, 1)  # B x S x (h*e) x n
                    k = windows.view(B, S, h, -1, n).permute(0, 2, 1, 4, 3).reshape(B, h, S, -1)  # taps then e
            out[n] = (k, v, invalid)
        return out

    def queries(self, x: Tensor, real: Optional[Tensor], bigram: bool, last_only: bool = False) -> Dict[int, Tensor]:
        """x: B x T x d -> per size n the query of that block, B x h x T x e.
        bigram=True: the interleaved mode's bigram-query stream (Conv_2 over the queries).
        last_only: the queries of the last position only (B x h x 1 x e; a decoding step)."""
        out = {}
        x_last = x[:, -1:] if last_only else x  # linear queries read one token
        if self.attention == CONVKV:
            q = self.q2_proj(x, real, last_only) if bigram else self.q_proj(x_last)
            if self.mode != HOMOGENEOUS:  # every head, one query for all blocks
                q = _heads(q, self.num_heads)
                return {n: q for n in self.ngrams}
            start = 0
            for n, h in self.groups:
                out[n] = _heads(q[..., start * self.head_dim:(start + h) * self.head_dim], h)
                start += h
            return out
        for n, h in self.groups:
            if n == 1:
                out[n] = _heads(self.q2_proj(x, real, last_only) if bigram else self.q_proj(x_last), h)
            else:
                out[n] = _heads(self.q2_kernel(x, real, last_only) if bigram else self.q_kernel[str(n)](x_last), h)
        return out

    def step_keys_values(self, window: Tensor, window_real: Tensor, state):
        """The n-gram keys and values ending at the newest token only (keys_values' last position):
        window B x (>= max_n) x d. Per n: K B x h x 1 x e, V B x h x 1 x d_k, invalid B x 1."""
        x_t, real_t = window[:, -1:], window_real[:, -1:]
        out = {}
        for n, h in self.groups:
            if self.mode == HOMOGENEOUS or n == 1:
                invalid = ~real_t
            else:  # the n-gram exists iff its n tokens are real (ngram_invalid)
                invalid = ~window_real[:, -n:].all(dim=1, keepdim=True)
            if n == 1:
                out[n] = (_heads(self.k_proj(x_t), h), _heads(self.v_proj(x_t), h), invalid)
                continue
            v = _heads(self.v_ngram[str(n)](window, window_real, last_only=True), h)
            if self.attention == CONVKV:
                k = _heads(self.k_ngram[str(n)](window, window_real, last_only=True), h)
            else:
                # the new window of projected keys: the previous window's last n-1 taps (zeros
                # before the sentence) and the newest token's key, zero at a pad
                new = _heads(zero_pads(self._key_linear(n)(x_t), real_t), h)  # B x h x 1 x d_k
                dk = new.size(-1)
                prev = state[f"k{n}"][:, :, -1:, dk:] if f"k{n}" in state else \
                    new.new_zeros(new.shape[:-1] + ((n - 1) * dk,))
                k = torch.cat([prev, new], dim=-1)  # B x h x 1 x n*d_k
            out[n] = (k, v, invalid)
        return out

    # ---- attention ---------------------------------------------------------------------------

    def step_window(self) -> int:
        """Layer inputs before the newest that a decoding step keeps: the n-gram keys of self
        attention read max_n - 1 of them, the interleaved bigram queries one."""
        width = (self.max_n - 1) if self.self_attention else 0
        return max(width, 1) if self.mode == INTERLEAVED else width

    def scale(self, n: int) -> float:
        # QUERYK sums n times as many products per logit (eq. 6)
        return (self.head_dim * (n if self.attention == QUERYK else 1)) ** -0.5

    def attend(self, q: Dict[int, Tensor], kv, attn_mask: Optional[Tensor], beam: int = 1,
               step: bool = False) -> Tuple[Tensor, List[Tensor]]:
        """One softmax per head group over the concatenated n-gram blocks.
        Returns B x T x d (heads concatenated) and the probabilities per group, B x h x T x (blocks*S).
        beam > 1: q has B*beam rows of one position and kv one row per sentence (B): a sentence's
        hypotheses are its query positions (B x h x beam x e), so its keys are never copied.
        step (a decoding step, T = 1): keys and values, the whole decoding state, are used block by
        block and never concatenated. A full forward is full_forward's (batched.py);
        step=False, the plain form it replaced, is the reference its tests compare with."""
        if beam > 1:  # (B*beam) x h x 1 x e -> B x h x beam x e
            q = {n: t.reshape(-1, beam, t.size(1), t.size(-1)).transpose(1, 2) for n, t in q.items()}
        outputs, probs_all = [], []
        group_sizes = [[n for n, _ in self.groups]] if self.mode != HOMOGENEOUS else [[n] for n, _ in self.groups]
        for sizes in group_sizes:
            if self.attention == CONVKV and not step:  # one shared query: one matmul against all key blocks
                keys = torch.cat([kv[n][0] for n in sizes], dim=2) if len(sizes) > 1 else kv[sizes[0]][0]
                logits = torch.matmul(q[sizes[0]], keys.transpose(-1, -2)) * self.scale(1)
            else:  # a block at a time (the logits are T x S per block)
                blocks = [torch.matmul(q[n], kv[n][0].transpose(-1, -2)) * self.scale(n) for n in sizes]
                logits = torch.cat(blocks, dim=-1) if len(blocks) > 1 else blocks[0]  # B x h x T x (blocks*S)
            if attn_mask is not None:  # end alignment: the token causal mask holds for every block
                logits = logits + attn_mask.to(logits.dtype).repeat(1, len(sizes))
            invalid = [kv[n][2] for n in sizes]
            if any(m is not None for m in invalid):
                S = kv[sizes[0]][1].size(2)
                B = logits.size(0)
                mask = torch.cat([m if m is not None else logits.new_zeros(B, S, dtype=torch.bool)
                                  for m in invalid], dim=1)
                logits = logits.masked_fill(mask[:, None, None, :], float("-inf"))
            probs = utils.softmax(logits, dim=-1).type_as(logits)
            p = self.dropout_module(probs)
            if not step or len(sizes) == 1:
                values = torch.cat([kv[n][1] for n in sizes], dim=2) if len(sizes) > 1 else kv[sizes[0]][1]
                out = torch.matmul(p, values)  # B x h x T x d_k
            else:
                S = kv[sizes[0]][1].size(2)
                out = torch.matmul(p[..., :S], kv[sizes[0]][1])
                for i, n in enumerate(sizes[1:], 1):
                    out = out + torch.matmul(p[..., i * S:(i + 1) * S], kv[n][1])
            outputs.append(out)
            probs_all.append(probs)
        out = torch.cat(outputs, dim=1) if len(outputs) > 1 else outputs[0]  # B x H x T x d_k
        B, H, T, dk = out.shape
        out = out.transpose(1, 2)  # B x T x H x d_k (beam > 1: B x beam: the hypotheses, one position each)
        return (out.reshape(B * T, 1, H * dk) if beam > 1 else out.reshape(B, T, H * dk)), probs_all

    def token_weights(self, probs_all: List[Tensor], key_real: Optional[Tensor]) -> Tensor:
        """Per-head attention over source TOKENS (fairseq's alignment buffer is token-wide; docs/peers.md, attention weights), B x H x T x S."""
        heads = []
        if self.mode == HOMOGENEOUS:
            for (n, _), p in zip(self.groups, probs_all):
                heads.append(spread_over_tokens(p, n, key_real))
        else:
            p = probs_all[0]
            S = p.size(-1) // len(self.ngrams)
            heads.append(sum(spread_over_tokens(p[..., i * S:(i + 1) * S], n, key_real)
                             for i, n in enumerate(self.ngrams)))
        return torch.cat(heads, dim=1)

    def combine(self, x_q: Tensor, real_q: Optional[Tensor], kv, attn_mask: Optional[Tensor],
                last_only: bool = False, beam: int = 1) -> Tuple[Tensor, List[Tensor]]:
        """Queries from x_q (B x T x d) attend over kv; output B x T x d (or B x 1 x d: last_only,
        whose queries are computed for the last position only). beam: see attend."""
        q = self.queries(x_q, real_q, bigram=False, last_only=last_only)
        u, probs = self.attend(q, kv, attn_mask, beam, step=last_only)
        if self.mode != INTERLEAVED:
            return self.out_proj(u), probs
        q2 = self.queries(x_q, real_q, bigram=True, last_only=last_only)
        b, _ = self.attend(q2, kv, attn_mask, beam, step=last_only)
        # b'_t exists only when tokens t-1 and t both do (zeros of eqs. 13-14)
        b_invalid = ngram_invalid(real_q, 2, x_q.size(1), x_q.size(0), x_q.device, homogeneous=False)
        if b_invalid is not None:
            b = b.masked_fill((b_invalid[:, -1:] if last_only else b_invalid).unsqueeze(-1), 0.0)
        # strided conv over (.., b'_t, u_t, b'_{t+1}, ..) in closed form: taps W_a b'_t + W_b u_t (+ W_c b'_{t+1})
        taps = [b, u]
        if self.role == "enc":
            taps.append(F.pad(b[:, 1:], (0, 0, 0, 1)))
        weight = self.out_conv.weight.transpose(1, 2).reshape(self.embed_dim, -1)  # d x (taps*d)
        return F.linear(torch.cat(taps, dim=-1), weight, self.out_conv.bias), probs

    # ---- fairseq interface -------------------------------------------------------------------

    def forward(self, query: Tensor, key: Optional[Tensor], value: Optional[Tensor],
                key_padding_mask: Optional[Tensor] = None,
                incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
                need_weights: bool = True, static_kv: bool = False, attn_mask: Optional[Tensor] = None,
                before_softmax: bool = False, need_head_weights: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        """query: T x B x d; key/value: S x B x kdim (value must be key: both read the same
        sequence); key_padding_mask: B x S (True = pad). Returns T x B x d and, if asked,
        token-level weights: B x T x S averaged over heads, or H x B x T x S (need_head_weights)."""
        if before_softmax:
            raise NotImplementedError("phrase-based attention has no single logit matrix to return")
        need_weights = need_weights or need_head_weights
        x_q = query.transpose(0, 1)  # B x T x d
        pad = key_padding_mask.bool() if key_padding_mask is not None else None
        if incremental_state is not None:
            out, probs, key_real, beam = self._incremental(x_q, key, pad, incremental_state)
            if need_weights and beam > 1:  # per hypothesis again: B x h x beam x S -> B*beam x h x 1 x S
                probs = [p.transpose(1, 2).reshape(-1, p.size(1), 1, p.size(-1)) for p in probs]
                key_real = key_real.repeat_interleave(beam, dim=0)
        else:
            x_kv = x_q if self.self_attention else key.transpose(0, 1)  # B x S x kdim
            qpad = pad if self.self_attention else self.query_padding_mask
            need_probs = need_weights or self.keeping_extra_weights
            out, probs, key_real = self.full_forward(x_q, x_kv, pad, qpad.bool() if qpad is not None else None,
                                                     attn_mask, need_probs)
        if self.keeping_extra_weights:
            # for attention maps (fairseq_mgsa/analysis): the softmax over n-grams itself, per
            # head group B x h x T x (blocks*S), before token_weights spreads it over tokens
            self.keep_extra(probs)
        weights = None
        if need_weights:
            weights = self.token_weights(probs, key_real).transpose(0, 1)  # H x B x T x S
            if not need_head_weights:
                weights = weights.mean(dim=0)
        return out.transpose(0, 1), weights

    def extra_parts(self, kept: List[Tensor]) -> List[KeptWeights]:
        """A part per n-gram size (ngram<n>, B x h x T x S, key s = the n-gram ending at token
        s): homogeneous, each head group's softmax; otherwise the blocks of the one softmax."""
        sizes = [[n] for n, _ in self.groups] if self.mode == HOMOGENEOUS else [list(self.ngrams)]
        parts = []
        for size_list, p in zip(sizes, kept):
            S = p.size(-1) // len(size_list)
            parts += [KeptWeights(f"ngram{n}", p[..., i * S:(i + 1) * S]) for i, n in enumerate(size_list)]
        return parts
