"""The one interface through which the analyses (fairseq_mgsa/analysis/attention) read an
attention module's own weights, whatever the method: every method's attention module
implements ExtraAttentionWeights, and the analyses ask nothing else of it.

fairseq's need_head_weights gives H x B x T x S over the key tokens. A method's module may
have more to show: the softmax over n-grams (PBA), over each branch (HySAN), over phrases
(MG-SA). Switched on by keep_extra_weights(True), every forward keeps those, and
kept_extra_weights() returns them as KeptWeights, one per named part, each with the shape
contract below; keep_extra_weights(False) stops keeping and drops what was kept.

The shape contract, for a forward over a batch of B sentences, T query positions and S keys:
    KeptWeights.probs   B x h x T x K   the probabilities of h heads over K keys, for each
                                        query position (several parts may split one softmax,
                                        as PBA's heterogeneous n-gram blocks do)
    keys are tokens (phrase_index None): K = S, key k is token k, or the n-gram ending at it;
    keys are phrases (phrase_index B x T, each token's phrase, -1 at padding): slot m is the
    sentence's phrase m (0 = its first, numbered without padding; its last is the end-of-sentence
    token's), K >= the sentence's phrases (slots past the last one are zero).
"""

from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

from torch import Tensor


@dataclass(frozen=True)
class KeptWeights:
    name: str                              # the part's name: npz key m<k>_<prefix><layer>_<name>
    probs: Tensor                          # B x h x T x K (module docstring)
    phrase_index: Optional[Tensor] = None  # B x T when the keys are phrases; None: tokens
    tree_level: int = 0                    # the phrases' parse-tree level (tags in the batch), 0: none

    def detach(self) -> "KeptWeights":
        return replace(self, probs=self.probs.detach(),
                       phrase_index=None if self.phrase_index is None else self.phrase_index.detach())


class ExtraAttentionWeights:
    """Mixin of every method's attention module. A module sets EXTRA_WEIGHTS_PREFIX (the npz key
    prefix of its parts: mgsa, pba, hysan), calls keep_extra(value) in its forward when
    keeping_extra_weights, and implements extra_parts(value); token_level_weights and
    weights_from_output have fairseq's MultiheadAttention behaviour by default."""

    EXTRA_WEIGHTS_PREFIX = ""
    LISTS_EXTRA_WEIGHTS = False  # the parts' names also stored, in head order, as <prefix><layer>_groups
    _keeping_extra = False
    _kept_extra = None

    def keep_extra_weights(self, flag: bool = True) -> None:
        self._keeping_extra = bool(flag)
        if not flag:
            self._kept_extra = None

    @property
    def keeping_extra_weights(self) -> bool:
        return self._keeping_extra

    def keep_extra(self, value) -> None:
        """For the module's forward: what kept_extra_weights() will read, in the module's own form."""
        self._kept_extra = value

    def kept_extra_weights(self) -> List[KeptWeights]:
        """The parts kept by the last forward with keep_extra_weights(True), in the module's order
        (none before such a forward, or after keep_extra_weights(False))."""
        return [] if self._kept_extra is None else self.extra_parts(self._kept_extra)

    def extra_parts(self, kept) -> List[KeptWeights]:
        """The module's own: its parts, from what its forward gave keep_extra."""
        raise NotImplementedError

    def token_level_weights(self, weights: Tensor) -> Tensor:
        """H x B x T x S over the key tokens, from the head weights the last forward returned
        (need_head_weights), asked right after it while keeping (what it kept may be needed);
        by default they are already over tokens."""
        return weights

    def weights_from_output(self, output) -> Tuple[object, Tensor]:
        """(what the caller of a forward asked for need_head_weights gets, the head weights),
        from its output; by default fairseq's (attn, weights)."""
        return output, output[1]


def weights_from_output(module, output) -> Tuple[object, Tensor]:
    """ExtraAttentionWeights.weights_from_output for any attention module (fairseq's own too)."""
    if isinstance(module, ExtraAttentionWeights):
        return module.weights_from_output(output)
    return output, output[1]


def token_level_weights(module, weights: Tensor) -> Tensor:
    return module.token_level_weights(weights) if isinstance(module, ExtraAttentionWeights) else weights
