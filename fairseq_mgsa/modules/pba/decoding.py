"""The decoding-step half of phrase-based attention (PhraseBasedAttention; docs/peers.md, incremental decoding):
the incremental state a decoding step reads and extends, and its bookkeeping under beam search.

A step keeps, batch-first, the last layer inputs of the query side (the n-gram keys and the
interleaved bigram queries need them), the n-gram keys and values appended so far (decoder
self attention) or computed once (cross attention: encoder-side, one row per sentence after
set_beam_size), and every entry follows the beam. The attention itself, and the keys and
queries of the newest position, are PhraseBasedAttention's (attention.py).
"""

from typing import Dict, Optional

import torch
import torch.nn.functional as F
from torch import Tensor


class PhraseBasedDecoding:
    """Mixed into PhraseBasedAttention, whose keys_values, step_keys_values, step_window and
    combine it calls; get/set_incremental_state come from fairseq's with_incremental_state."""

    def _incremental(self, x_t: Tensor, key: Optional[Tensor], pad: Optional[Tensor], incremental_state):
        """One decoding step: x_t B x 1 x d. State (all batch-first): window / window_real: the last
        layer inputs of the query side (n-gram keys and bigram queries need them), one row per
        hypothesis; k<n>, v<n>, invalid<n>, key_real: the n-gram keys and values, one row per
        hypothesis (decoder self) or, encoder-side, one row per sentence after set_beam_size.
        Returns the output, the probabilities, the key mask and the hypotheses per key row."""
        assert x_t.size(1) == 1, "incremental phrase-based attention takes one token per step"
        state = self._get_input_buffer(incremental_state)
        B = x_t.size(0)
        real_t = ~pad[:, -1:] if (pad is not None and self.self_attention) else \
            x_t.new_ones(B, 1, dtype=torch.bool)
        if not self.self_attention and self.query_padding_mask is not None:
            real_t = ~self.query_padding_mask[:, -1:].bool()
        width = self.step_window()
        if width and "window" in state:
            window = torch.cat([state["window"], x_t], dim=1)
            window_real = torch.cat([state["window_real"], real_t], dim=1)
        else:  # before the sentence: zero inputs that are not real tokens (as the left padding)
            window = F.pad(x_t, (0, 0, width, 0))
            window_real = F.pad(real_t, (width, 0), value=False)
        if width:
            state["window"], state["window_real"] = window[:, 1:], window_real[:, 1:]

        beam = 1
        if self.self_attention:
            for n, (k, v, inv) in self.step_keys_values(window, window_real, state).items():
                for name, t in ((f"k{n}", k), (f"v{n}", v), (f"invalid{n}", inv)):
                    # appended as fairseq's MultiheadAttention appends its keys
                    state[name] = torch.cat([state[name], t], dim=-2 if t.dim() == 4 else 1) \
                        if name in state else t
            state["key_real"] = torch.cat([state["key_real"], real_t], 1) if "key_real" in state else real_t
        else:
            beam = self.beam_size
            if f"k{self.ngrams[0]}" not in state:
                # encoder-side n-gram keys and values: once per sentence, then reused every step;
                # fairseq repeats the encoder output beam times (rows sentence-major): keep one
                key_x = key.transpose(0, 1)  # (B*beam) x S x kdim
                key_real = ~pad if pad is not None else key.new_ones(B, key.size(0), dtype=torch.bool)
                if beam > 1:
                    assert key_x.size(0) % beam == 0, "set_beam_size: batch is not sentences x beam"
                    key_x, key_real = key_x[::beam], key_real[::beam]
                for n, (k, v, invalid) in self.keys_values(key_x, key_real).items():
                    state[f"k{n}"], state[f"v{n}"] = k, v
                    state[f"invalid{n}"] = invalid if invalid is not None else ~key_real
                state["key_real"] = key_real
        kv = {n: (state[f"k{n}"], state[f"v{n}"], state[f"invalid{n}"]) for n in self.ngrams}
        self._set_input_buffer(incremental_state, state)
        out, probs = self.combine(window, window_real, kv, None, last_only=True, beam=beam)
        return out, probs, state["key_real"], beam

    def set_beam_size(self, beam_size: int):
        """Called by fairseq's sequence generator (through the model) before a beam search."""
        self.beam_size = beam_size

    def reorder_incremental_state(self, incremental_state: Dict[str, Dict[str, Optional[Tensor]]],
                                  new_order: Tensor):
        """Every per-hypothesis entry follows the beam (docs/peers.md, incremental decoding), the interleaved cross
        attention's query window too. Encoder-side entries kept once per sentence (set_beam_size)
        are identical for a sentence's hypotheses and beam search reorders within a sentence, so
        they change only when sentences finish (fewer rows), as in fairseq's MultiheadAttention."""
        state = self._get_input_buffer(incremental_state)
        if state:
            beam = self.beam_size
            for name, t in state.items():
                if t is None:
                    continue
                shared = self.encoder_decoder_attention and beam > 1 and not name.startswith("window")
                if not shared:
                    state[name] = t.index_select(0, new_order)
                elif t.size(0) * beam != new_order.size(0):
                    state[name] = t.index_select(0, new_order.view(-1, beam)[:, 0] // beam)
            self._set_input_buffer(incremental_state, state)
        return incremental_state

    def _get_input_buffer(self, incremental_state) -> Dict[str, Optional[Tensor]]:
        result = self.get_incremental_state(incremental_state, "pba_state")
        return result if result is not None else {}

    def _set_input_buffer(self, incremental_state, buffer: Dict[str, Optional[Tensor]]):
        return self.set_incremental_state(incremental_state, "pba_state", buffer)
