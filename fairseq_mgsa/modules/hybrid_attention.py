"""HySAN's hybrid self-attention (Song et al., "Hybrid Self-Attention Network for
Machine Translation", arXiv:1811.00253; JCIP 37(9), 2023).

One set of Q/K/V projections and one score matrix E = Q K^T / sqrt(d_k) per head, as in
fairseq's MultiheadAttention; every branch only adds its own mask M_i to E before its
softmax, and the branch outputs O_i = concat_h(softmax(E_h + M_i) V_h) are fused by
`BranchFusion` before the output projection W_O:

    HySAN(X) = f(O_1, ..., O_l) W_O

Branches (query position i, key position j; "allowed" keys):
    global        every j (in the decoder, the causal mask fairseq passes in)
    forward       j <= i   (j < i with exclude_self)       encoder only
    backward      j >= i   (j > i with exclude_self)       encoder only
    localK        |i - j| <= K in the encoder, i - K <= j <= i in the decoder

Blocked keys get a large finite negative value instead of -inf (the paper's -inf, made
finite like fairseq's encoder does for attn_mask): fairseq's key padding stays -inf, so a
row whose allowed keys are all padding (a padding query under a forward mask, a local
window beside padding) still has finite entries and never turns into NaN, which would
otherwise reach every real position through P @ V (0 * NaN = NaN).
"""

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch
from fairseq import utils
from fairseq.modules import MultiheadAttention
from torch import Tensor

from ..errors import MGSAError
from .branch_fusion import BranchFusion

BRANCH = re.compile(r"^(global|forward|backward|fw|bw|local(\d+))$")
ALIASES = {"fw": "forward", "bw": "backward"}


@dataclass(frozen=True)
class Branch:
    kind: str  # "global", "forward", "backward" or "local"
    radius: int = 0  # local window radius k

    @property
    def name(self) -> str:
        return f"local{self.radius}" if self.kind == "local" else self.kind


def parse_branches(spec: str, decoder: bool, option: str) -> List[Branch]:
    """'global,forward,backward,local2' -> branches; one-line MGSAError for anything else."""
    spec = str(spec).strip()
    names = [s.strip() for s in spec.split(",")]
    if not spec or any(not n for n in names):
        raise MGSAError(f"{option} {spec!r}: expected a comma-separated list of branches such as "
                        f"'global,forward,backward,local2'")
    branches = []
    for n in names:
        m = BRANCH.match(n)
        if not m:
            raise MGSAError(f"{option} {spec!r}: unknown HySAN branch {n!r}, expected global, forward (fw), "
                            f"backward (bw) or localK with a radius K >= 1 (e.g. local2)")
        if m.group(2) is not None:
            radius = int(m.group(2))
            if radius < 1:
                raise MGSAError(f"{option} {spec!r}: local branch {n!r} has radius {radius}, expected K >= 1")
            branch = Branch("local", radius)
        else:
            branch = Branch(ALIASES.get(n, n))
        if decoder and branch.kind in ("forward", "backward"):
            raise MGSAError(f"{option} {spec!r}: directional branch {n!r} is for the encoder only (the decoder's "
                            f"self-attention is already forward-only, and a backward branch would read the future)")
        if branch in branches:
            raise MGSAError(f"{option} {spec!r}: branch {branch.name!r} is listed twice")
        branches.append(branch)
    return branches


def allowed_keys(branch: Branch, tgt_len: int, src_len: int, causal: bool, exclude_self: bool,
                 device=None) -> Optional[Tensor]:
    """T x S bool, True where query i may attend to key j; None when the branch adds no mask.

    Query i sits at position i + (S - T): in an incremental decoding step (T = 1) the query is
    the newest position and the keys are the cached ones, so the local window needs no state
    of its own beyond fairseq's key cache."""
    if branch.kind == "global":
        return None  # the caller's attn_mask (fairseq's causal mask in the decoder) applies
    i = torch.arange(tgt_len, device=device) + (src_len - tgt_len)
    j = torch.arange(src_len, device=device)
    behind = i[:, None] - j[None, :]  # T x S: how far key j lies before query i
    if branch.kind == "forward":
        return behind > 0 if exclude_self else behind >= 0
    if branch.kind == "backward":
        return behind < 0 if exclude_self else behind <= 0
    if causal:
        return (behind >= 0) & (behind <= branch.radius)
    return behind.abs() <= branch.radius


def blocked_value(dtype: torch.dtype) -> float:
    # as fairseq's encoder layer fills attn_mask: -1e8 overflows float16
    return -1e4 if dtype == torch.float16 else -1e8


class HybridMultiheadAttention(MultiheadAttention):
    """Self-attention with HySAN branches over one score matrix, fused before W_O.

    Inherits the projections, the key/value cache of incremental decoding and its beam
    reordering from fairseq's MultiheadAttention (self-attention only, so the cache is
    reordered as is)."""

    def __init__(self, embed_dim: int, num_heads: int, branches: List[Branch], fusion: str = "gate",
                 gate_reduction: int = 64, gate_shared: bool = False, causal: bool = False,
                 exclude_self: bool = False, dropout: float = 0.0, q_noise: float = 0.0, qn_block_size: int = 8):
        super().__init__(embed_dim, num_heads, dropout=dropout, self_attention=True,
                         q_noise=q_noise, qn_block_size=qn_block_size)
        if causal and any(b.kind in ("forward", "backward") for b in branches):
            raise MGSAError("HySAN: directional branches are for the encoder only")
        self.branches = list(branches)
        self.causal = causal
        self.exclude_self = exclude_self
        self.fusion = BranchFusion(fusion, len(branches), embed_dim, gate_reduction, gate_shared)
        # fairseq takes its fast path (F.multi_head_attention_forward), which ignores
        # before_softmax, whenever incremental_state is None; this flag turns that path off
        # (and an embed_dim assertion the projections' shapes make anyway).
        self._set_skip_embed_dim_check()

    def branch_masks(self, tgt_len: int, src_len: int, like: Tensor) -> List[Tuple[Optional[Tensor], Optional[Tensor]]]:
        """(additive T x S mask in like's dtype, T x S allowed) per branch; (None, None) for global."""
        out = []
        for branch in self.branches:
            allowed = allowed_keys(branch, tgt_len, src_len, self.causal, self.exclude_self, like.device)
            if allowed is None:
                out.append((None, None))
            else:
                mask = torch.zeros(allowed.shape, dtype=like.dtype, device=like.device)
                out.append((mask.masked_fill_(~allowed, blocked_value(like.dtype)), allowed))
        return out

    def forward(
        self,
        query: Tensor,
        key: Optional[Tensor],
        value: Optional[Tensor],
        key_padding_mask: Optional[Tensor] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        need_weights: bool = True,
        static_kv: bool = False,
        attn_mask: Optional[Tensor] = None,
        before_softmax: bool = False,
        need_head_weights: bool = False,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """query: T x B x C (self-attention: key and value are the query). Returns T x B x C
        and, if asked, the global branch's attention weights (the first branch's without one)."""
        if before_softmax or static_kv:
            raise ValueError("HybridMultiheadAttention is self-attention; before_softmax/static_kv are not supported")
        tgt_len, bsz, embed_dim = query.size()
        if attn_mask is not None:
            # finite, like the branch masks: a left-padded target would otherwise leave a
            # padding query with only -inf entries (the causal mask and padding)
            if attn_mask.dtype == torch.bool:
                attn_mask = torch.zeros(attn_mask.shape, dtype=query.dtype, device=query.device).masked_fill(
                    attn_mask, float("-inf"))
            attn_mask = attn_mask.clamp(min=blocked_value(attn_mask.dtype))
        # E (scaled, attn_mask added, padded keys -inf): B*H x T x S; V: B*H x S x d_k
        logits, v = super().forward(query, key, value, key_padding_mask=key_padding_mask,
                                    incremental_state=incremental_state, need_weights=False,
                                    attn_mask=attn_mask, before_softmax=True)
        src_len = logits.size(-1)
        heads, head_dim = self.num_heads, self.head_dim

        outputs, weights = [], None
        # for attention maps (fairseq_mgsa/analysis): every branch's probabilities, B*H x T x S
        branch_weights = [] if getattr(self, "keep_branch_weights", False) else None
        for branch, (mask, allowed) in zip(self.branches, self.branch_masks(tgt_len, src_len, logits)):
            scores = logits if mask is None else logits + mask  # M_i broadcast over B*H
            probs_float = utils.softmax(scores, dim=-1, onnx_trace=self.onnx_trace)
            probs = self.dropout_module(probs_float.type_as(logits))
            if branch_weights is not None:
                branch_weights.append(probs_float)
            o = torch.bmm(probs, v)  # B*H x T x d_k
            if self.exclude_self and branch.kind in ("forward", "backward"):
                # the strict masks leave the first (forward) / last (backward) token with no
                # key at all: that branch contributes nothing there
                real_keys = allowed.unsqueeze(0) if key_padding_mask is None else \
                    allowed.unsqueeze(0) & ~key_padding_mask.bool().unsqueeze(1)  # B x T x S
                has_key = real_keys.any(-1).to(o.dtype)  # B x T (or 1 x T)
                o = (o.view(-1, heads, tgt_len, head_dim) * has_key[:, None, :, None]).view_as(o)
            outputs.append(o.view(bsz, heads, tgt_len, head_dim).permute(2, 0, 1, 3)
                           .reshape(tgt_len, bsz, embed_dim))  # T x B x C (heads concatenated)
            if (need_weights or need_head_weights) and (weights is None or branch.kind == "global"):
                weights = probs_float
        attn = self.out_proj(self.fusion(outputs))  # T x B x C
        if branch_weights is not None:
            self.branch_weights = branch_weights

        if not (need_weights or need_head_weights):
            return attn, None
        weights = weights.view(bsz, heads, tgt_len, src_len).transpose(1, 0)  # H x B x T x S
        return attn, (weights if need_head_weights else weights.mean(dim=0))
