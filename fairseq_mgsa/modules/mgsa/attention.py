"""Multi-granularity self-attention (MG-SA): heads split over word and phrase memories.

Heads are split evenly over the listed granularities, in order. Every head keeps a
word-level query; a phrase head's keys and values come from the phrase memory H_g of
its granularity instead of the words:

    Q_h = H W_Q^h,   K_h = H_g W_K^h,   V_h = H_g W_V^h
    MG-SA(H) = [O_1 .. O_N] W_O

The module subclasses fairseq's MultiheadAttention so that W_Q, W_K, W_V, W_O, their
initialisation and their checkpoint names are fairseq's own: with only `word`
granularities it is ordinary multi-head attention.

All head groups attend in one call, over a memory of T slots per group (the words, or
the phrase memory of the group's granularity padded from P <= T phrases to T), each group
masked to its own memory: attention costs what fairseq's does at the same length. The keys
and values come from the groups' row blocks of W_K and W_V: one product for the word
groups, one batched product for the phrase groups. Those blocks are read from the weights
directly, so with quantization noise (--quant-noise-pq, a forward pre-hook of fairseq's)
k_proj and v_proj are also called, on an empty batch, for their hooks to run.

Attention weights follow fairseq's need_weights / need_head_weights convention; asked for
them, the module computes the same attention with its softmax probabilities in the open
(scaled_dot_product_attention does not return them) and returns them as a third output:
need_head_weights gives H x B x T x T over each head's own memory slots (tokens for word
heads, the phrases of its granularity for phrase heads, P <= T slots then zero); need_weights
alone gives B x T x T over tokens, averaged over heads, each phrase's probability shared
evenly by its tokens. The default path (no weights) is unchanged.
"""

from typing import Dict, Iterable, List, Optional, Union

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch import Tensor

from ...errors import MGSAError
from ..shared.extra_weights import ExtraAttentionWeights, KeptWeights
from .granularities import SYNTACTIC, WORD, Granularities
from .partition import Partition, stack_slices
from .phrase_memory import ComposedPhrases, PhraseMemory


def concat(tensors: List[Tensor], dim: int) -> Tensor:
    return tensors[0] if len(tensors) == 1 else torch.cat(tensors, dim=dim)


class MultiGranularitySelfAttention(MultiheadAttention, ExtraAttentionWeights):
    # kept: each head group's weights over its own memory (tokens, or its granularity's phrases)
    EXTRA_WEIGHTS_PREFIX = "mgsa"
    LISTS_EXTRA_WEIGHTS = True
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        granularities: Union[Granularities, Iterable[str]],
        composition: str = "san",
        interaction: str = "none",
        onlstm_chunk_size: int = 2,
        dropout: float = 0.0,
        use_fast_path: bool = True,
        **kwargs,
    ):
        """granularities: the MG-SA encoder's parsed value, or the names of a module used alone.
        use_fast_path=False: the phrase memory's references (the plain recurrence, the SAN
        composition's segment arithmetic) instead of the fused operators, for comparisons."""
        super().__init__(embed_dim, num_heads, dropout=dropout, self_attention=True, **kwargs)
        granularities = Granularities.parse(granularities)
        self.granularities = list(granularities.groups)
        self.heads_per_granularity = granularities.heads_per_group(num_heads)
        self.q_noise = kwargs.get("q_noise", 0.0)
        group_dim = self.heads_per_granularity * self.head_dim
        # one phrase memory per distinct phrase granularity, shared by its head groups; all
        # of them built by one module with weights stacked over granularities
        self._phrase_granularities = list(granularities.phrase)
        self.phrase_memory = PhraseMemory(
            len(self._phrase_granularities), embed_dim, group_dim, composition, interaction, onlstm_chunk_size,
            use_fast_path=use_fast_path,
        ) if self._phrase_granularities else None
        # head groups by memory: word groups' keys come from the words, phrase groups' from
        # phrase memory j (an index into the stacked memories); `order` puts the concatenation
        # [word groups, phrase groups] back in head order
        self.word_groups = [i for i, g in enumerate(self.granularities) if g.kind == WORD]
        self.phrase_groups = [i for i, g in enumerate(self.granularities) if g.kind != WORD]
        memories = [self._phrase_granularities.index(self.granularities[i]) for i in self.phrase_groups]
        self.memories_in_order = memories == list(range(len(memories)))
        self.register_buffer("phrase_group_memory", torch.tensor(memories, dtype=torch.long), persistent=False)
        self.register_buffer("word_group_index", torch.tensor(self.word_groups, dtype=torch.long), persistent=False)
        self.register_buffer("phrase_group_index", torch.tensor(self.phrase_groups, dtype=torch.long),
                             persistent=False)
        order = self.word_groups + self.phrase_groups
        self.groups_in_order = order == list(range(len(order)))
        self.register_buffer("group_order", torch.tensor(order, dtype=torch.long).argsort(), persistent=False)

    @property
    def phrase_granularities(self) -> List[str]:
        return list(self._phrase_granularities)

    def forward(
        self,
        query: Tensor,
        key_padding_mask: Optional[Tensor],
        partitions: Dict[str, Partition],
        need_weights: bool = False,
        need_head_weights: bool = False,
    ):
        """query: T x B x C; key_padding_mask: B x T (True at padding) or None.

        Returns the output (T x B x C) and, for every phrase granularity, the composed
        phrases G (B x P x C) with their partition (a ComposedPhrases mapping), for phrase-tag
        supervision; with
        need_weights or need_head_weights, also the attention weights (module docstring).
        """
        T, B, C = query.shape
        hpg, d = self.heads_per_granularity, self.head_dim
        x = query.transpose(0, 1)  # B x T x C
        if self.training and self.q_noise > 0:
            # K and V below read the projections' weights block by block; calling the modules
            # runs their forward pre-hooks (fairseq's quant noise rewrites the weight in place),
            # on an empty batch so that no projection is computed twice
            self.k_proj(x[:0])
            self.v_proj(x[:0])
        q = self.q_proj(x).view(B, T, self.num_heads, d).transpose(1, 2)  # B x H x T x d

        # keys and values of every head group, side by side on one axis of T slots:
        # B x T x e per word group (e = hpg * d), and per phrase group its memory's P <= T
        # phrases padded to T
        composed, k, v, keep = ComposedPhrases(None, [], []), [], [], []
        k_rows, v_rows = self.rows_by_memory(self.k_proj), self.rows_by_memory(self.v_proj)
        if self.word_groups:
            k.append(self.project_words(k_rows[0], x))
            v.append(self.project_words(v_rows[0], x))
            if key_padding_mask is not None or self.phrase_memory is not None:
                word_keep = (x.new_ones(B, T, dtype=torch.bool) if key_padding_mask is None
                             else ~key_padding_mask)
                keep.append(word_keep.unsqueeze(1).expand(B, len(self.word_groups), T))  # B x Gw x T
        if self.phrase_memory is not None:
            parts = [partitions[g] for g in self._phrase_granularities]
            counts = stack_slices([p.num_phrases for p in parts])  # Gr x B
            h_g, g_m = self.phrase_memory(x, parts, counts)  # Gr x B x P x C
            composed = ComposedPhrases(g_m, self._phrase_granularities, parts)
            num_phrases = counts.t()  # B x Gr
            if not self.memories_in_order:
                h_g = h_g.index_select(0, self.phrase_group_memory)
                num_phrases = num_phrases.index_select(1, self.phrase_group_memory)
            k.append(self.project_phrases(k_rows[1], h_g, T))
            v.append(self.project_phrases(v_rows[1], h_g, T))
            keep.append(torch.arange(T, device=x.device) < num_phrases.unsqueeze(-1))  # B x Gp x T
        k, v = concat(k, dim=2), concat(v, dim=2)  # B x T x G x e
        if not self.groups_in_order:
            k, v = k.index_select(2, self.group_order), v.index_select(2, self.group_order)
        k = k.view(B, T, self.num_heads, d).transpose(1, 2)  # B x H x T x d
        v = v.view(B, T, self.num_heads, d).transpose(1, 2)
        mask = None  # B x H x 1 x T: each head group sees its own memory
        if keep:
            keep = concat(keep, dim=1)  # B x G x T
            if not self.groups_in_order:
                keep = keep.index_select(1, self.group_order)
            mask = (keep if hpg == 1 else keep.repeat_interleave(hpg, dim=1)).unsqueeze(2)
        dropout_p = self.dropout_module.p if self.training else 0.0
        if need_weights or need_head_weights or self.keeping_extra_weights:
            out, probs = self.attend_with_weights(q, k, v, mask)  # B x H x T x d, B x H x T x T
            if self.keeping_extra_weights:
                self.keep_extra((probs, partitions))
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)  # B x H x T x d
        out = out.transpose(1, 2).reshape(B, T, C)  # B x T x C
        out = self.out_proj(out).transpose(0, 1)
        if not (need_weights or need_head_weights):
            return out, composed
        if need_head_weights:
            return out, composed, probs.transpose(0, 1)  # H x B x T x T (slots)
        return out, composed, self.token_weights(probs, partitions).mean(dim=1)  # B x T x T

    def attend_with_weights(self, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor]):
        """What scaled_dot_product_attention computes, with the probabilities kept:
        softmax(Q K^T / sqrt(d_h)) V per head, each head masked to its memory."""
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.head_dim ** -0.5  # B x H x T x T
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        probs = torch.softmax(scores.float(), dim=-1).type_as(q)
        return torch.matmul(self.dropout_module(probs), v), probs

    def token_weights(self, probs: Tensor, partitions: Dict[str, Partition]) -> Tensor:
        """B x H x T x T over tokens: a phrase head's probability of phrase m is shared
        evenly by the tokens of phrase m (word heads unchanged)."""
        B, H, T, _ = probs.shape
        hpg = self.heads_per_granularity
        out = []
        for i, g in enumerate(self.granularities):
            p = probs[:, i * hpg:(i + 1) * hpg]  # B x h x T x T
            if g.kind != WORD:
                index = partitions[g].phrase_index  # B x T, -1 at padding
                member = F.one_hot(index.clamp(min=0), T).to(p.dtype) * (index >= 0).unsqueeze(-1).to(p.dtype)
                size = member.sum(dim=1).clamp(min=1)  # B x T(phrases): tokens per phrase
                # token j gets p[.., phrase(j)] / |phrase(j)|: B x h x T x P @ B x P x T
                p = torch.matmul(p / size[:, None, None, :], member.transpose(1, 2).unsqueeze(1))
            out.append(p)
        return torch.cat(out, dim=1)

    def extra_parts(self, kept) -> List[KeptWeights]:
        """A part per head group, in head order, named by its granularity (with _<group index>
        when a granularity has several groups): B x h x T x T over the group's memory slots."""
        probs, partitions = kept  # B x H x T x T, the partitions of the forward
        hpg, parts = self.heads_per_granularity, []
        for i, g in enumerate(self.granularities):
            name = g + (f"_{i}" if self.granularities.count(g) > 1 else "")
            group = probs[:, i * hpg:(i + 1) * hpg]
            if g.kind == WORD:
                parts.append(KeptWeights(name, group))
            else:
                parts.append(KeptWeights(name, group, partitions[g].phrase_index,
                                         g.size if g.kind == SYNTACTIC else 0))
        return parts

    def token_level_weights(self, weights: Tensor) -> Tensor:
        """H x B x T x T over tokens, from the slot weights of the last forward (with
        keep_extra_weights on): each phrase's probability shared evenly by its tokens."""
        return self.token_weights(weights.transpose(0, 1), self._kept_extra[1]).transpose(0, 1)

    def weights_from_output(self, output):
        out, composed, weights = output  # the weights come third, after the composed phrases
        return (out, composed), weights

    def rows_by_memory(self, proj: nn.Linear):
        """((w, b) of the word groups, (w, b) of the phrase groups) of W_K or W_V (group_rows),
        None for a kind without groups. Word groups first, then phrase groups: one split, whose
        backward is one cat per tensor, where two slices' backwards would each fill a zero tensor
        of the weight's size and add them."""
        if not (self.groups_in_order and self.word_groups and self.phrase_groups):
            return tuple(self.group_rows(proj, groups) if groups else None
                         for groups in (self.word_groups, self.phrase_groups))
        G, sizes = len(self.granularities), [len(self.word_groups), len(self.phrase_groups)]
        w = proj.weight.view(G, -1, proj.weight.size(1)).split(sizes)
        b = (None, None) if proj.bias is None else proj.bias.view(G, -1).split(sizes)
        return (w[0], b[0]), (w[1], b[1])

    def project_words(self, rows, x: Tensor) -> Tensor:
        """B x T x Gw x e: the word groups' rows of W_K or W_V (rows_by_memory) on the words."""
        B, T, C = x.shape
        w, b = rows
        return F.linear(x, w.reshape(-1, C), None if b is None else b.reshape(-1)).view(B, T, len(self.word_groups), -1)

    def project_phrases(self, rows, h_g: Tensor, T: int) -> Tensor:
        """B x T x Gp x e: each phrase group's rows of W_K or W_V on its phrase memory
        (Gp x B x P x C) in one batched product, phrase slots padded from P to T. (A granularity
        with fewer than P phrases has its padding slots projected too: per-granularity products
        would save those FLOPs but cost more operations than they save on a CPU, see
        python -m benchmarks.profile_layers mgsa.)"""
        Gp, B, P, C = h_g.shape
        w, b = rows  # Gp x e x C, Gp x e
        src = h_g.reshape(Gp, B * P, C)
        out = torch.bmm(src, w.transpose(1, 2)) if b is None else torch.baddbmm(b.unsqueeze(1), src, w.transpose(1, 2))
        out = out.view(Gp, B, P, -1).permute(1, 2, 0, 3)  # B x P x Gp x e
        return F.pad(out, (0, 0, 0, 0, 0, T - P))

    def group_rows(self, proj: nn.Linear, groups: List[int]):
        """Rows of proj's weight (G x e x C) and bias (G x e) for the head groups `groups`."""
        G = len(self.granularities)
        w = proj.weight.view(G, -1, proj.weight.size(1))
        b = None if proj.bias is None else proj.bias.view(G, -1)
        if len(groups) == G:  # every group, in order: the weights themselves
            return w, b
        if groups == list(range(groups[0], groups[0] + len(groups))):  # a block of groups: a view
            rows = slice(groups[0], groups[0] + len(groups))
            return w[rows], None if b is None else b[rows]
        idx = self.word_group_index if groups is self.word_groups else self.phrase_group_index
        return w.index_select(0, idx), None if b is None else b.index_select(0, idx)

    def upgrade_state_dict_named(self, state_dict, name):
        """Checkpoints written before the phrase memories were stacked over granularities hold
        one module per granularity (`phrase_memories.<g>.…`): stack their tensors in this
        layer's granularity order."""
        super().upgrade_state_dict_named(state_dict, name)
        upgrade_per_granularity_phrase_memories(state_dict, name + "." if name else "", self._phrase_granularities)


# old per-granularity key (under phrase_memories.<g>.) -> stacked key (under phrase_memory.)
STACKED_KEYS = {
    "composition.q_proj.weight": "composition.q_weight",
    "composition.q_proj.bias": "composition.q_bias",
    "composition.k_proj.weight": "composition.k_weight",
    "composition.k_proj.bias": "composition.k_bias",
    "interaction.onlstm.ih.weight": "interaction.weight_ih",
    "interaction.onlstm.ih.bias": "interaction.bias_ih",
    "interaction.onlstm.hh.weight": "interaction.weight_hh",
    "interaction.lstm.weight_ih_l0": "interaction.weight_ih",
    "interaction.lstm.weight_hh_l0": "interaction.weight_hh",
    "interaction.out_proj.weight": "interaction.weight_out",
    "interaction.out_proj.bias": "interaction.bias_out",
}
# nn.LSTM's two biases are always added: the stacked LSTM holds their sum
SUMMED_KEYS = {("interaction.lstm.bias_ih_l0", "interaction.lstm.bias_hh_l0"): "interaction.bias_ih"}


def upgrade_per_granularity_phrase_memories(state_dict, prefix: str, granularities: List[str]) -> None:
    old = prefix + "phrase_memories."
    per_key: Dict[str, Dict[str, Tensor]] = {}
    for key in [k for k in state_dict if k.startswith(old)]:
        g, _, suffix = key[len(old):].partition(".")
        if g not in granularities:
            raise MGSAError(f"checkpoint has a phrase memory for granularity {g!r} in {prefix or 'the model'}, "
                            f"but this MG-SA layer's phrase granularities are {','.join(granularities) or 'none'}")
        per_key.setdefault(suffix, {})[g] = state_dict.pop(key)
    if not per_key:
        return

    def stacked(suffix):
        tensors = per_key.pop(suffix)
        missing = [g for g in granularities if g not in tensors]
        if missing:
            raise MGSAError(f"checkpoint has {old}<g>.{suffix} for {','.join(tensors)} but not for "
                            f"{','.join(missing)}: it was written for other MG-SA granularities")
        return [tensors[g] for g in granularities]

    new = prefix + "phrase_memory."
    for (a, b), target in SUMMED_KEYS.items():
        if a in per_key and b in per_key:
            state_dict[new + target] = torch.stack([x + y for x, y in zip(stacked(a), stacked(b))])
    for suffix in list(per_key):
        if suffix in STACKED_KEYS:
            state_dict[new + STACKED_KEYS[suffix]] = torch.stack(stacked(suffix))
        elif suffix.startswith("composition."):  # LSTM composition: one module per granularity
            for j, tensor in enumerate(stacked(suffix)):
                state_dict[f"{new}composition.per_granularity.{j}.{suffix[len('composition.'):]}"] = tensor
        else:
            raise MGSAError(f"checkpoint key {old}<g>.{suffix} is not a phrase-memory parameter this "
                            f"version knows how to convert")
