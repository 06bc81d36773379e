"""`pba_transformer`: fairseq's Transformer with phrase-based attention (Nguyen & Joty).

The attention sub-layers of the chosen layers and roles (encoder self, decoder self,
encoder-decoder) become PhraseBasedAttention; embeddings, FFNs, norms and every other
layer are fairseq's. Reads the `translation` task's data. Options are dataclass fields
(so fairseq-hydra-train sees them): --pba-attention, --pba-mode, --pba-ngrams,
--pba-roles, --pba-layers, --pba-queryk-shared-key.
"""

from dataclasses import dataclass, field
from typing import List

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import register_model
from fairseq.models.transformer import TransformerDecoderBase, TransformerEncoderBase

from ..errors import MGSAError
from ..modules.pba.layers import PBADecoderLayer, PBAEncoderLayer
from ..modules.shared.mask_cache import MaskCache
from ..modules.pba.attention import ROLES, PhraseBasedAttention, check_pba_config
from .base import SIZES, MethodTransformerModel, parse_layers, wrap_layer


@dataclass
class PBAConfig(FairseqDataclass):
    pba_attention: ChoiceEnum(["convkv", "queryk"]) = field(
        default="convkv", metadata={"help": "n-gram keys/values by convolution (convkv) or the query as "
                                            "convolution kernel over the keys (queryk)"})
    pba_mode: ChoiceEnum(["homogeneous", "heterogeneous", "interleaved"]) = field(
        default="heterogeneous", metadata={"help": "homogeneous: one n-gram size per head group; heterogeneous: "
                                                   "every head attends to all sizes in one softmax; interleaved: "
                                                   "unigram and bigram queries too (sizes 1,2 only)"})
    pba_ngrams: str = field(
        default="1,2", metadata={"help": "comma-separated n-gram sizes; homogeneous: one size per head group, "
                                         "heads split evenly (1,2 = 4/4 of 8 heads; 1,1,1,2,2,3,3,3 = 3/2/3)"})
    pba_roles: str = field(
        default="enc,dec,cross", metadata={"help": "attention roles using it: enc (encoder self), dec (decoder "
                                                   "self), cross (encoder-decoder); comma-separated"})
    pba_layers: str = field(
        default="all", metadata={"help": "layers (1 = bottom, in encoder and decoder alike) using it: "
                                         "a comma-separated list or 'all'"})
    pba_queryk_shared_key: bool = field(
        default=False, metadata={"help": "QUERYK heterogeneous/interleaved: one key projection for every "
                                         "n-gram size (reproduces the paper's parameter counts)"})


def parse_ngrams(spec: str) -> List[int]:
    try:
        sizes = [int(s) for s in str(spec).split(",") if s.strip()]
    except ValueError:
        sizes = []
    if not sizes:
        raise MGSAError(f"--pba-ngrams {spec!r}: expected comma-separated n-gram sizes such as 1,2")
    return sizes


def share_mask_cache(stack):
    """One MaskCache for the phrase-based attention modules of a stack: fairseq gives each layer the
    same padding and causal masks, so the n-gram masks are built once per batch (pba_masks.py)."""
    cache = MaskCache()
    for module in stack.modules():
        if isinstance(module, PhraseBasedAttention):
            module.mask_cache = cache


def parse_roles(spec: str) -> List[str]:
    roles = [r.strip() for r in str(spec).split(",") if r.strip()]
    bad = [r for r in roles if r not in ROLES]
    if bad or not roles:
        raise MGSAError(f"--pba-roles {spec!r}: expected a comma-separated subset of enc,dec,cross")
    return roles


class PBATransformerEncoder(TransformerEncoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, return_fc=False):
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        self.pba_layer_ids = []
        if "enc" in parse_roles(cfg.pba_roles):
            self.pba_layer_ids = parse_layers(cfg.pba_layers, len(self.layers), "--pba-layers", "encoder")
        ngrams = parse_ngrams(cfg.pba_ngrams)
        for i in self.pba_layer_ids:
            self.layers[i] = wrap_layer(cfg, PBAEncoderLayer(cfg, ngrams, return_fc=self.return_fc))
        share_mask_cache(self)


class PBATransformerDecoder(TransformerDecoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, no_encoder_attn=False, output_projection=None):
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn,
                         output_projection=output_projection)
        self.pba_layer_ids = []
        roles = parse_roles(cfg.pba_roles)
        if {"dec", "cross"} & set(roles):
            self.pba_layer_ids = parse_layers(cfg.pba_layers, len(self.layers), "--pba-layers", "decoder")
        ngrams = parse_ngrams(cfg.pba_ngrams)
        for i in self.pba_layer_ids:
            self.layers[i] = wrap_layer(cfg, PBADecoderLayer(cfg, ngrams, roles, no_encoder_attn))
        share_mask_cache(self)


@register_model("pba_transformer")
class PBATransformerModel(MethodTransformerModel):
    """Transformer with phrase-based attention (Nguyen & Joty, arXiv:1810.03444)."""

    CONFIG = PBAConfig
    ENCODER = PBATransformerEncoder
    DECODER = PBATransformerDecoder

    def set_beam_size(self, beam: int):
        """fairseq's sequence generator calls this before a beam search (as for BART): the
        phrase-based cross attention then keeps its encoder-side state once per sentence."""
        for module in self.decoder.modules():
            if isinstance(module, PhraseBasedAttention):
                module.set_beam_size(beam)

    @classmethod
    def check_args(cls, args):
        """Raise MGSAError for a configuration the model could not be built with."""
        ngrams = parse_ngrams(args.pba_ngrams)
        roles = parse_roles(args.pba_roles)
        stacks = []
        if "enc" in roles:
            stacks.append(("encoder", args.encoder_layers, args.encoder_attention_heads, args.encoder_embed_dim))
        if {"dec", "cross"} & set(roles):
            stacks.append(("decoder", args.decoder_layers, args.decoder_attention_heads, args.decoder_embed_dim))
        for which, layers, heads, dim in stacks:
            parse_layers(args.pba_layers, layers, "--pba-layers", which)
            check_pba_config(args.pba_attention, args.pba_mode, ngrams, heads, dim,
                             bool(args.pba_queryk_shared_key), where=f"{which}: ")
        # options fairseq's MultiheadAttention would honour and PhraseBasedAttention cannot
        if getattr(args, "quant_noise_pq", 0):
            raise MGSAError("--quant-noise-pq is not supported by phrase-based attention (its convolutions "
                            "have no quantization noise); use --pba-roles/--pba-layers to keep fairseq's attention")
        for side in ("encoder", "decoder"):
            if getattr(args, f"{side}_xformers_att_config", None):
                raise MGSAError(f"--{side}-xformers-att-config cannot be combined with phrase-based attention")
        if "dec" in roles and getattr(args, "cross_self_attention", False):
            raise MGSAError("--cross-self-attention cannot be combined with phrase-based decoder self-attention "
                            "(--pba-roles with dec)")


# The paper's main rows (Table 1; "homogeneous 1,2" = its 4/4 head split) and the other
# two attention x mode pairs, so that every combination has a name.
PRESETS = {
    "heterogeneous_convkv": dict(pba_attention="convkv", pba_mode="heterogeneous", pba_ngrams="1,2"),
    "heterogeneous_queryk": dict(pba_attention="queryk", pba_mode="heterogeneous", pba_ngrams="1,2"),
    "homogeneous_convkv": dict(pba_attention="convkv", pba_mode="homogeneous", pba_ngrams="1,2"),
    "homogeneous_queryk": dict(pba_attention="queryk", pba_mode="homogeneous", pba_ngrams="1,2"),
    "interleaved_convkv": dict(pba_attention="convkv", pba_mode="interleaved", pba_ngrams="1,2"),
    "interleaved_queryk": dict(pba_attention="queryk", pba_mode="interleaved", pba_ngrams="1,2"),
}

# pba_transformer (base: d 512, 8 heads), pba_transformer_big (d 1024, 16 heads),
# pba_transformer_iwslt_de_en (d 512, 4 heads): the defaults, heterogeneous CONVKV 1,2.
for _size, _arch in SIZES.items():
    PBATransformerModel.architecture(f"pba_transformer{_size}", _arch)
    # e.g. pba_transformer_interleaved_queryk, pba_transformer_interleaved_queryk_big
    for _name, _preset in PRESETS.items():
        PBATransformerModel.architecture(f"pba_transformer_{_name}{_size}", _arch, _preset)
