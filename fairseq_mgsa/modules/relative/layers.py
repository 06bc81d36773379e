"""fairseq's Transformer layers with self-attention over relative position representations
(attention.py): the self-attention of the encoder or decoder layer becomes a
RelativeMultiheadAttention with the clipping distance cfg.max_relative_positions;
cross-attention, FFN, residuals and norms are fairseq's TransformerEncoderLayerBase /
TransformerDecoderLayerBase.
"""

from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase

from ...errors import MGSAError
from .attention import RelativeMultiheadAttention


def relative_attention(layer, cfg, embed_dim: int, heads: int) -> RelativeMultiheadAttention:
    return RelativeMultiheadAttention(embed_dim, heads, cfg.max_relative_positions, dropout=cfg.attention_dropout,
                                      q_noise=layer.quant_noise, qn_block_size=layer.quant_noise_block_size)


class RelativeEncoderLayer(TransformerEncoderLayerBase):
    def build_self_attention(self, embed_dim, cfg):
        return relative_attention(self, cfg, embed_dim, cfg.encoder.attention_heads)


class RelativeDecoderLayer(TransformerDecoderLayerBase):
    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        if add_bias_kv or add_zero_attn or cfg.cross_self_attention:
            raise MGSAError("relative-position decoder layers do not support add_bias_kv, add_zero_attn or "
                            "--cross-self-attention")
        return relative_attention(self, cfg, embed_dim, cfg.decoder.attention_heads)
