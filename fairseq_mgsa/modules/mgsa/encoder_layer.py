"""A Transformer encoder layer whose self-attention is MG-SA.

Everything but the self-attention (feed-forward block, layer norms, dropout,
residuals) is fairseq's TransformerEncoderLayerBase; `forward` differs only in
passing the phrase partitions to the attention and returning the composed phrases.
"""

from typing import Dict, Optional

from fairseq.modules.transformer_layer import TransformerEncoderLayerBase
from torch import Tensor

from .granularities import Granularities
from .attention import MultiGranularitySelfAttention
from .partition import Partition


class MGSAEncoderLayer(TransformerEncoderLayerBase):
    def __init__(self, cfg, granularities: Granularities, return_fc: bool = False):
        # the encoder's parsed --mgsa-granularities, read by build_self_attention during
        # fairseq's __init__ (a plain value, so it may be set before nn.Module's)
        self.granularities = granularities
        super().__init__(cfg, return_fc=return_fc)

    def build_self_attention(self, embed_dim, cfg):
        return MultiGranularitySelfAttention(
            embed_dim,
            cfg.encoder.attention_heads,
            granularities=self.granularities,
            composition=cfg.mgsa_composition,
            interaction=cfg.mgsa_interaction,
            onlstm_chunk_size=cfg.mgsa_onlstm_chunk_size,
            dropout=cfg.attention_dropout,
            q_noise=self.quant_noise,
            qn_block_size=self.quant_noise_block_size,
        )

    def forward(self, x: Tensor, encoder_padding_mask: Optional[Tensor], partitions: Dict[str, Partition]):
        """x: T x B x C. Returns (x, G): the output and the composed phrases of the phrase
        granularities (Gr x B x P x C, in the order of Granularities.phrase; (x,) alone without
        phrase granularities). A flat tuple of tensors, so that fairseq's checkpoint_wrapper
        (--checkpoint-activations) gives every output a gradient."""
        residual = x
        if self.normalize_before:
            x = self.self_attn_layer_norm(x)
        x, composed = self.self_attn(x, key_padding_mask=encoder_padding_mask, partitions=partitions)
        phrases = () if composed.phrases is None else (composed.phrases,)
        x = self.dropout_module(x)
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)

        residual = x
        if self.normalize_before:
            x = self.final_layer_norm(x)
        x = self.activation_fn(self.fc1(x))
        x = self.activation_dropout_module(x)
        x = self.fc2(x)
        x = self.dropout_module(x)
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.final_layer_norm(x)
        return (x, *phrases)
