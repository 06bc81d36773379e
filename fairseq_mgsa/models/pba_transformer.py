"""`pba_transformer`: fairseq's Transformer with phrase-based attention (Nguyen & Joty).

The attention sub-layers of the chosen layers and roles (encoder self, decoder self,
encoder-decoder) become PhraseBasedAttention; embeddings, FFNs, norms and every other
layer are fairseq's. Reads the `translation` task's data. Options are dataclass fields
(so fairseq-hydra-train sees them): --pba-attention, --pba-mode, --pba-ngrams,
--pba-roles, --pba-layers, --pba-queryk-shared-key.
"""

from dataclasses import dataclass, field

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import register_model
from fairseq.models.transformer import TransformerDecoderBase, TransformerEncoderBase

from ..errors import MGSAError
from ..modules.pba.attention import PhraseBasedAttention
from ..modules.pba.layers import PBADecoderLayer, PBAEncoderLayer
from ..modules.pba.options import PBAOptions
from .base import SIZES, MethodTransformerModel, parse_layers, place_layers


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


def pba_options(cfg) -> PBAOptions:
    """The model's parsed options (MethodTransformerModel.build_model); parsed here only for a
    stack built on its own, outside a model."""
    options = getattr(cfg, "method_options", None)
    return options if isinstance(options, PBAOptions) else PBAOptions.parse(cfg)


class PBATransformerEncoder(TransformerEncoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, return_fc=False):
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        options = pba_options(cfg)
        self.pba_layer_ids = []
        if options.encoder:
            self.pba_layer_ids = parse_layers(options.layers, len(self.layers), "--pba-layers", "encoder")
        place_layers(self, cfg, lambda i: PBAEncoderLayer(cfg, options, return_fc=self.return_fc)
                     if i in self.pba_layer_ids else None)


class PBATransformerDecoder(TransformerDecoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, no_encoder_attn=False, output_projection=None):
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn,
                         output_projection=output_projection)
        options = pba_options(cfg)
        self.pba_layer_ids = []
        if options.decoder:
            self.pba_layer_ids = parse_layers(options.layers, len(self.layers), "--pba-layers", "decoder")
        place_layers(self, cfg, lambda i: PBADecoderLayer(cfg, options, no_encoder_attn)
                     if i in self.pba_layer_ids else None)


@register_model("pba_transformer")
class PBATransformerModel(MethodTransformerModel):
    """Transformer with phrase-based attention (Nguyen & Joty, arXiv:1810.03444)."""

    CONFIG = PBAConfig
    OPTIONS = PBAOptions
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
        options = PBAOptions.parse(args)
        stacks = []
        if options.encoder:
            stacks.append(("encoder", args.encoder_layers, args.encoder_attention_heads, args.encoder_embed_dim))
        if options.decoder:
            stacks.append(("decoder", args.decoder_layers, args.decoder_attention_heads, args.decoder_embed_dim))
        for which, layers, heads, dim in stacks:
            parse_layers(options.layers, layers, "--pba-layers", which)
            options.check(heads, dim, where=f"{which}: ")
        # options fairseq's MultiheadAttention would honour and PhraseBasedAttention cannot
        if getattr(args, "quant_noise_pq", 0):
            raise MGSAError("--quant-noise-pq is not supported by phrase-based attention (its convolutions "
                            "have no quantization noise); use --pba-roles/--pba-layers to keep fairseq's attention")
        for side in ("encoder", "decoder"):
            if getattr(args, f"{side}_xformers_att_config", None):
                raise MGSAError(f"--{side}-xformers-att-config cannot be combined with phrase-based attention")
        if "dec" in options.roles and getattr(args, "cross_self_attention", False):
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
