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

All branches go through one softmax over E with the masks stacked (B*H x l x T x S) and one
product with V. In training, that part and the fusion are recomputed in the backward pass
(torch.utils.checkpoint) rather than kept: only E and the masks stay for it, so the peak
memory is about the baseline's; the price is running that part's forward twice.

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
from torch.utils.checkpoint import checkpoint

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

    def branch_masks(self, tgt_len: int, src_len: int, like: Tensor) -> Tuple[Tensor, Optional[Tensor]]:
        """(M: l x T x S additive masks in like's dtype, all zeros for a global branch;
        allowed: l x T x S bool, None when every branch is global)."""
        masks = torch.zeros(len(self.branches), tgt_len, src_len, dtype=like.dtype, device=like.device)
        allowed = torch.ones(masks.shape, dtype=torch.bool, device=like.device)
        for i, branch in enumerate(self.branches):
            a = allowed_keys(branch, tgt_len, src_len, self.causal, self.exclude_self, like.device)
            if a is not None:
                allowed[i] = a
                masks[i].masked_fill_(~a, blocked_value(like.dtype))
        return masks, (None if allowed.all() else allowed)

    def branch_keep(self, allowed: Optional[Tensor], key_padding_mask: Optional[Tensor],
                    bsz: int) -> Optional[Tensor]:
        """B x 1 x l x T x 1: 0 where a strict directional branch has no key at all (the first
        token forward, the last backward), so that branch contributes nothing there; None
        without strict directional branches."""
        strict = [self.exclude_self and b.kind in ("forward", "backward") for b in self.branches]
        if not any(strict):
            return None
        real = allowed.unsqueeze(1)  # l x 1 x T x S
        if key_padding_mask is not None:
            real = real & ~key_padding_mask.bool()[None, :, None, :]  # l x B x T x S
        has_key = real.any(-1)  # l x B x T (or l x 1 x T)
        has_key[[i for i, s in enumerate(strict) if not s]] = True
        return has_key.expand(-1, bsz, -1).transpose(0, 1).to(self.out_proj.weight.dtype)[:, None, :, :, None]

    def attend(self, logits: Tensor, v: Tensor, masks: Tensor, keep: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        """All branches at once: one softmax over the scores with the stacked masks, one
        product with V (shared by the branches), then the fusion.
        logits: B*H x T x S; v: B*H x S x d_k; masks: l x T x S; keep: see branch_keep.
        Returns the fused heads f(O_1, ..., O_l) (T x B x C) and P (B*H x l x T x S, float)."""
        branches, (bh, tgt_len, src_len), head_dim = masks.size(0), logits.size(), v.size(-1)
        bsz = bh // self.num_heads
        # branches inside the batch of heads, so that P V is one bmm with V as it is
        scores = logits.unsqueeze(1) + masks.unsqueeze(0)  # B*H x l x T x S
        probs_float = utils.softmax(scores, dim=-1, onnx_trace=self.onnx_trace)
        probs = self.dropout_module(probs_float.type_as(logits))
        o = torch.bmm(probs.view(bh, branches * tgt_len, src_len), v)  # B*H x l*T x d_k
        o = o.view(bsz, self.num_heads, branches, tgt_len, head_dim)
        if keep is not None:
            o = o * keep
        # l x T x B x C (heads concatenated), one O_i per branch
        outputs = o.permute(2, 3, 0, 1, 4).reshape(branches, tgt_len, bsz, self.num_heads * head_dim)
        return self.fusion(list(outputs.unbind(0))), probs_float

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
        masks, allowed = self.branch_masks(tgt_len, src_len, logits)
        keep = self.branch_keep(allowed, key_padding_mask, bsz)
        want_weights = need_weights or need_head_weights
        keep_branches = getattr(self, "keep_branch_weights", False)
        if not (want_weights or keep_branches) and torch.is_grad_enabled() and (logits.requires_grad or v.requires_grad):
            # Recomputed in the backward pass instead of kept (torch's activation checkpointing,
            # which replays the dropout's random state): otherwise each branch would keep its
            # probabilities, its output O_i and its gate's activations for the backward pass,
            # 1.27-1.33x the baseline's peak training memory at base size; this keeps E
            # (B*H x T x S) and the masks, the branches' work is done twice.
            fused = checkpoint(lambda *t: self.attend(*t)[0], logits, v, masks, keep, use_reentrant=False)
            probs = None
        else:
            fused, probs = self.attend(logits, v, masks, keep)
        attn = self.out_proj(fused)  # T x B x C

        if keep_branches:
            # for attention maps (fairseq_mgsa/analysis): every branch's probabilities, B*H x T x S
            self.branch_weights = list(probs.unbind(1))
        if not want_weights:
            return attn, None
        kinds = [b.kind for b in self.branches]
        weights = probs[:, kinds.index("global") if "global" in kinds else 0]
        weights = weights.view(bsz, self.num_heads, tgt_len, src_len).transpose(1, 0)  # H x B x T x S
        return attn, (weights if need_head_weights else weights.mean(dim=0))
