"""fairseq's Transformer layers with HySAN's hybrid self-attention.

The self-attention of the encoder or decoder layer becomes a HybridMultiheadAttention over
the layer's `branches` (parsed by the model, models/hysan_transformer.py); cross-attention,
FFN, residuals and norms are fairseq's TransformerEncoderLayerBase /
TransformerDecoderLayerBase. The fusion options are read from the layer's config as
fairseq's layers read theirs.
"""

from typing import List

from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase

from ...errors import MGSAError
from .attention import Branch, HybridMultiheadAttention
from .relative import RelativeHybridMultiheadAttention


def hybrid_attention(layer, cfg, embed_dim: int, heads: int, branches: List[Branch],
                     causal: bool) -> HybridMultiheadAttention:
    options = dict(fusion=cfg.hysan_fusion, gate_reduction=cfg.hysan_gate_reduction, gate_shared=cfg.hysan_gate_shared,
                   causal=causal, exclude_self=cfg.hysan_directional_exclude_self, dropout=cfg.attention_dropout,
                   q_noise=layer.quant_noise, qn_block_size=layer.quant_noise_block_size)
    # both options are absent from the configurations of checkpoints written before they existed
    k = getattr(cfg, "max_relative_positions", 0) or 0
    if k > 0:
        attention = RelativeHybridMultiheadAttention(embed_dim, heads, branches, k, **options)
    else:
        attention = HybridMultiheadAttention(embed_dim, heads, branches, **options)
    attention.recompute = bool(getattr(cfg, "hysan_recompute", False))
    return attention


class HySANEncoderLayer(TransformerEncoderLayerBase):
    def __init__(self, cfg, branches: List[Branch], return_fc: bool = False):
        self.hysan_branches = branches  # read by build_self_attention during fairseq's __init__
        super().__init__(cfg, return_fc=return_fc)

    def build_self_attention(self, embed_dim, cfg):
        return hybrid_attention(self, cfg, embed_dim, cfg.encoder.attention_heads, self.hysan_branches, causal=False)


class HySANDecoderLayer(TransformerDecoderLayerBase):
    def __init__(self, cfg, branches: List[Branch], no_encoder_attn: bool = False):
        self.hysan_branches = branches  # read by build_self_attention during fairseq's __init__
        super().__init__(cfg, no_encoder_attn)

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        if add_bias_kv or add_zero_attn or cfg.cross_self_attention:
            raise MGSAError("HySAN decoder layers do not support add_bias_kv, add_zero_attn or --cross-self-attention")
        return hybrid_attention(self, cfg, embed_dim, cfg.decoder.attention_heads, self.hysan_branches, causal=True)
