"""fairseq's Transformer layers with phrase-based attention in their attention sub-layers.

The encoder layer's self-attention, and the decoder layer's self and/or encoder-decoder
attention (its `roles`), become PhraseBasedAttention; everything else is fairseq's
TransformerEncoderLayerBase / TransformerDecoderLayerBase. The method's options come parsed
from the model (a PBAOptions, options.py); fairseq's own (dropout) are read from the
layer's config as fairseq's layers read theirs.
"""

from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase

from .attention import PhraseBasedAttention
from .options import PBAOptions


def phrase_based_attention(cfg, options: PBAOptions, embed_dim: int, heads: int, role: str,
                           kdim=None) -> PhraseBasedAttention:
    return PhraseBasedAttention(embed_dim, heads, kdim=kdim, dropout=cfg.attention_dropout, attention=options.attention,
                                mode=options.mode, ngrams=options.ngrams, role=role, shared_key=options.shared_key)


class PBAEncoderLayer(TransformerEncoderLayerBase):
    def __init__(self, cfg, options: PBAOptions, return_fc: bool = False):
        self.pba_options = options  # read by build_self_attention during fairseq's __init__
        super().__init__(cfg, return_fc=return_fc)

    def build_self_attention(self, embed_dim, cfg):
        return phrase_based_attention(cfg, self.pba_options, embed_dim, cfg.encoder.attention_heads, "enc")


class PBADecoderLayer(TransformerDecoderLayerBase):
    def __init__(self, cfg, options: PBAOptions, no_encoder_attn: bool = False):
        self.pba_options = options  # read by the build_* methods during fairseq's __init__
        super().__init__(cfg, no_encoder_attn)

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        if "dec" not in self.pba_options.roles:
            return super().build_self_attention(embed_dim, cfg, add_bias_kv, add_zero_attn)
        return phrase_based_attention(cfg, self.pba_options, embed_dim, cfg.decoder.attention_heads, "dec")

    def build_encoder_attention(self, embed_dim, cfg):
        if "cross" not in self.pba_options.roles:
            return super().build_encoder_attention(embed_dim, cfg)
        return phrase_based_attention(cfg, self.pba_options, embed_dim, cfg.decoder.attention_heads, "cross",
                                      kdim=cfg.encoder.embed_dim)

    def forward(self, x, encoder_out=None, encoder_padding_mask=None, incremental_state=None,
                prev_self_attn_state=None, prev_attn_state=None, self_attn_mask=None,
                self_attn_padding_mask=None, need_attn=False, need_head_weights=False):
        # fairseq gives the cross attention only the source padding; its bigram queries
        # (interleaved mode) also need the target's, handed over for this call only
        cross = self.encoder_attn if isinstance(self.encoder_attn, PhraseBasedAttention) else None
        if cross is not None:
            cross.query_padding_mask = self_attn_padding_mask
        try:
            return super().forward(x, encoder_out, encoder_padding_mask, incremental_state, prev_self_attn_state,
                                   prev_attn_state, self_attn_mask, self_attn_padding_mask, need_attn,
                                   need_head_weights)
        finally:
            if cross is not None:
                cross.query_padding_mask = None
