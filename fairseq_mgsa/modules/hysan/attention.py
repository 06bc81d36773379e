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

In training and in any full forward (no incremental state, no attention weights asked
for), the branches run as one call of torch's fused attention
(F.scaled_dot_product_attention): the query rows are repeated once per branch (B x H x l*T x
d_k) against the shared K and V, with the branches' masks stacked along the rows, so each
branch's scores are E plus its mask as above, and nothing of size T x S is kept for the
backward pass. E is then formed once per branch inside the kernel rather than once per layer
(l - 1 more Q K^T products, under 1% of a base model's FLOPs), in exchange for far fewer
operations than a softmax, a product and their backward per branch: at base size a step on
a GPU is bound by the number of operations, not by arithmetic. Incremental decoding and a
call that asks for the weights keep the explicit form: fairseq's scores E (B*H x T x S), one
softmax over E with the stacked masks (B*H x l x T x S), one product with V.

The masks depend only on the branches and the lengths: they are built once per shape and
device (stacked_masks), and their combination with the key padding and fairseq's attn_mask
once per forward of a stack (the encoder's or decoder's layers share a MaskCache, shared/mask_cache.py: fairseq
hands every layer the same padding and attn_mask tensors). Nothing on the way waits for the
device: no decision depends on a tensor's values.

Blocked keys get a large finite negative value instead of -inf (the paper's -inf, made
finite like fairseq's encoder does for attn_mask): fairseq's key padding stays -inf, so a
row whose allowed keys are all padding (a padding query under a forward mask, a local
window beside padding) still has finite entries and never turns into NaN, which would
otherwise reach every real position through P @ V (0 * NaN = NaN).
"""

import functools
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.modules import MultiheadAttention
from torch import Tensor

from ...errors import MGSAError
from .branch_fusion import BranchFusion
from ..shared.extra_weights import ExtraAttentionWeights, KeptWeights
from ..shared.mask_cache import MaskCache

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


@functools.lru_cache(maxsize=32)  # a few training lengths; decoding steps pass through
def stacked_masks(branches: Tuple[Branch, ...], tgt_len: int, src_len: int, causal: bool, exclude_self: bool,
                  dtype: torch.dtype, device: torch.device) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
    """(M: l x T x S additive masks in dtype, zeros for a global branch; allowed: l x T x S
    bool; keep_all: l x 1 bool, True for the branches that are not strict directional, None
    without strict ones). Cached per shape and device: callers must not change them in place."""
    # normal tensors even when first asked for under torch.inference_mode
    with torch.inference_mode(False), torch.no_grad():
        allowed = torch.ones(len(branches), tgt_len, src_len, dtype=torch.bool, device=device)
        for i, branch in enumerate(branches):
            a = allowed_keys(branch, tgt_len, src_len, causal, exclude_self, device)
            if a is not None:
                allowed[i] = a
        masks = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill_(~allowed, blocked_value(dtype))
        strict = [exclude_self and b.kind in ("forward", "backward") for b in branches]
        keep_all = torch.tensor([[not s] for s in strict], device=device) if any(strict) else None
    return masks, allowed, keep_all


class HybridMultiheadAttention(MultiheadAttention, ExtraAttentionWeights):
    """Self-attention with HySAN branches over one score matrix, fused before W_O.

    Inherits the projections, the key/value cache of incremental decoding and its beam
    reordering from fairseq's MultiheadAttention (self-attention only, so the cache is
    reordered as is)."""

    EXTRA_WEIGHTS_PREFIX = "hysan"  # kept: every branch's probabilities, a part per branch
    FUSED = True  # full forwards through torch's fused attention (fused_branches)

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
        # shared by the layers of a stack (models/base.py, place_layers)
        self.mask_cache = MaskCache()
        # recompute the branches in the backward pass instead of keeping their outputs (torch's
        # activation checkpointing; fused_branches, or explicit_recomputed without the fused
        # path): less memory, the branches' forward run twice
        self.recompute = False
        # fairseq takes its fast path (F.multi_head_attention_forward), which ignores
        # before_softmax, whenever incremental_state is None; this flag turns that path off
        # (and an embed_dim assertion the projections' shapes make anyway).
        self._set_skip_embed_dim_check()

    def branch_masks(self, tgt_len: int, src_len: int, like: Tensor) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """stacked_masks for this module's branches, in like's dtype and on its device."""
        return stacked_masks(tuple(self.branches), tgt_len, src_len, self.causal, self.exclude_self, like.dtype,
                             like.device)

    def branch_keep(self, allowed: Tensor, keep_all: Optional[Tensor], key_padding_mask: Optional[Tensor],
                    bsz: int, dtype: torch.dtype) -> Optional[Tensor]:
        """B x 1 x l x T x 1: 0 where a strict directional branch has no key at all (the first
        token forward, the last backward, beside padding), so that branch contributes nothing
        there; None without strict directional branches."""
        if keep_all is None:
            return None
        real = allowed.unsqueeze(0)  # 1 x l x T x S
        if key_padding_mask is not None:
            real = real & ~key_padding_mask.bool()[:, None, None, :]  # B x l x T x S
        has_key = real.any(-1) | keep_all  # B x l x T (or 1 x l x T)
        return has_key.expand(bsz, -1, -1).to(dtype)[:, None, :, :, None]

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
        o = self.weighted_values(probs.view(bh, branches, tgt_len, src_len), v)  # B*H x l x T x d_k
        o = o.view(bsz, self.num_heads, branches, tgt_len, head_dim)
        if keep is not None:
            o = o * keep
        # l x T x B x C (heads concatenated), one O_i per branch
        outputs = o.permute(2, 3, 0, 1, 4).reshape(branches, tgt_len, bsz, self.num_heads * head_dim)
        return self.fusion(outputs), probs_float

    def weighted_values(self, probs: Tensor, v: Tensor) -> Tensor:
        """sum_j p_ij v_j for every branch: probs B*H x l x T x S, v B*H x S x d_k -> B*H x l x T x d_k."""
        bh, branches, tgt_len, src_len = probs.size()
        return torch.bmm(probs.reshape(bh, branches * tgt_len, src_len), v).view(bh, branches, tgt_len, -1)

    def scores(self, query: Tensor, key: Optional[Tensor], value: Optional[Tensor],
               key_padding_mask: Optional[Tensor], incremental_state, attn_mask: Optional[Tensor]
               ) -> Tuple[Tensor, Tensor]:
        """E (scaled, attn_mask added, padded keys -inf): B*H x T x S, and V: B*H x S x d_k, from
        fairseq's MultiheadAttention (its projections and its cache)."""
        return super().forward(query, key, value, key_padding_mask=key_padding_mask,
                               incremental_state=incremental_state, need_weights=False,
                               attn_mask=attn_mask, before_softmax=True)

    def fused_masks(self, key_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor], tgt_len: int,
                    bsz: int, like: Tensor) -> Tuple[Tensor, Optional[Tensor]]:
        """The fused path's (B|1 x 1 x l*T x S additive mask, keep of branch_keep), memoised
        for the layers of a stack."""
        def build():
            masks, allowed, keep_all = self.branch_masks(tgt_len, tgt_len, like)
            if attn_mask is not None:
                masks = masks + self.finite_attn_mask(attn_mask, like.dtype)
            mask = masks.view(1, 1, -1, tgt_len)
            if key_padding_mask is not None:
                mask = mask.masked_fill(key_padding_mask.bool().view(bsz, 1, 1, tgt_len), float("-inf"))
            return mask, self.branch_keep(allowed, keep_all, key_padding_mask, bsz, like.dtype)
        key = (tuple(self.branches), self.causal, self.exclude_self, tgt_len, bsz, like.dtype, like.device)
        return self.mask_cache.get(key, (key_padding_mask, attn_mask), build)

    @staticmethod
    def finite_attn_mask(attn_mask: Tensor, dtype: torch.dtype) -> Tensor:
        """attn_mask (bool True = blocked, or additive) as finite additive values in dtype, like
        the branch masks: a left-padded target would otherwise leave a padding query with only
        -inf entries (the causal mask and padding)."""
        if attn_mask.dtype == torch.bool:
            return torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device).masked_fill(
                attn_mask, blocked_value(dtype))
        return attn_mask.to(dtype).clamp(min=blocked_value(dtype))

    def fused_branches(self, query: Tensor, key_padding_mask: Optional[Tensor],
                       attn_mask: Optional[Tensor]) -> Tensor:
        """All branches in one call of torch's fused attention (see the module's docstring);
        returns f(O_1, ..., O_l) W_O, T x B x C."""
        tgt_len, bsz, embed_dim = query.size()
        heads, head_dim, branches = self.num_heads, self.head_dim, len(self.branches)

        def heads_first(x):  # T x B x C -> B x H x T x d_k
            return x.view(tgt_len, bsz, heads, head_dim).permute(1, 2, 0, 3)

        q, k, v = heads_first(self.q_proj(query)), heads_first(self.k_proj(query)), heads_first(self.v_proj(query))
        mask, keep = self.fused_masks(key_padding_mask, attn_mask, tgt_len, bsz, q)
        dropout = self.dropout_module.p if (self.training or self.dropout_module.apply_during_inference) else 0.0

        def branches_fused(q, k, v):
            # each branch a block of query rows: B x H x l*T x d_k, its mask on its rows
            rows = q.unsqueeze(2).expand(-1, -1, branches, -1, -1).reshape(bsz, heads, branches * tgt_len, head_dim)
            o = F.scaled_dot_product_attention(rows, k, v, attn_mask=mask, dropout_p=dropout, scale=self.scaling)
            o = o.view(bsz, heads, branches, tgt_len, head_dim)
            if keep is not None:
                o = o * keep
            # l x T x B x C (heads concatenated), one O_i per branch
            return self.fusion(o.permute(2, 3, 0, 1, 4).reshape(branches, tgt_len, bsz, embed_dim))

        if self.recompute and torch.is_grad_enabled() and q.requires_grad:
            from torch.utils.checkpoint import checkpoint
            fused = checkpoint(branches_fused, q, k, v, use_reentrant=False)
        else:
            fused = branches_fused(q, k, v)
        return self.out_proj(fused)

    def explicit_recomputed(self, query: Tensor, key: Optional[Tensor], value: Optional[Tensor],
                            key_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor]) -> Tensor:
        """The explicit path's branches (scores, softmax, P V, fusion) for a full forward, recomputed
        in the backward pass as fused_branches recomputes its own: the path of a module without the
        fused one (relative positions, relative.py). Returns f(O_1, ..., O_l), T x B x C."""
        from torch.utils.checkpoint import checkpoint

        bsz = query.size(1)

        def branches(query, key, value):
            logits, v = self.scores(query, key, value, key_padding_mask, None, attn_mask)
            tgt_len, src_len = logits.shape[-2:]
            masks, allowed, keep_all = self.branch_masks(tgt_len, src_len, logits)
            keep = self.branch_keep(allowed, keep_all, key_padding_mask, bsz, self.out_proj.weight.dtype)
            return self.attend(logits, v, masks, keep)[0]

        return checkpoint(branches, query, key, value, use_reentrant=False)

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
        want_weights = need_weights or need_head_weights
        keep_branches = self.keeping_extra_weights
        if incremental_state is None and self.FUSED and not (want_weights or keep_branches or self.onnx_trace):
            return self.fused_branches(query, key_padding_mask, attn_mask), None
        tgt_len, bsz, embed_dim = query.size()
        if attn_mask is not None:
            attn_mask = self.finite_attn_mask(attn_mask, query.dtype)
        if (self.recompute and incremental_state is None and not (want_weights or keep_branches)
                and torch.is_grad_enabled()):
            return self.out_proj(self.explicit_recomputed(query, key, value, key_padding_mask, attn_mask)), None
        logits, v = self.scores(query, key, value, key_padding_mask, incremental_state, attn_mask)
        src_len = logits.size(-1)
        masks, allowed, keep_all = self.branch_masks(tgt_len, src_len, logits)
        keep = self.branch_keep(allowed, keep_all, key_padding_mask, bsz, self.out_proj.weight.dtype)
        fused, probs = self.attend(logits, v, masks, keep)
        attn = self.out_proj(fused)  # T x B x C

        if keep_branches:
            # for attention maps (fairseq_mgsa/analysis): every branch's probabilities, B*H x l x T x S
            self.keep_extra(probs)
        if not want_weights:
            return attn, None
        kinds = [b.kind for b in self.branches]
        weights = probs[:, kinds.index("global") if "global" in kinds else 0]
        weights = weights.view(bsz, self.num_heads, tgt_len, src_len).transpose(1, 0)  # H x B x T x S
        return attn, (weights if need_head_weights else weights.mean(dim=0))

    def extra_parts(self, kept: Tensor) -> List[KeptWeights]:
        """A part per branch, named as the option names it (global, forward, local2, ...): B x H x T x S."""
        return [KeptWeights(branch.name, p.view(-1, self.num_heads, *p.shape[1:]))
                for branch, p in zip(self.branches, kept.unbind(1))]  # kept: B*H x l x T x S
