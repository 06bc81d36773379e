"""`relative_transformer`: fairseq's Transformer with self-attention over relative position
representations (Shaw et al., NAACL 2018; modules/relative/attention.py) in every encoder and
decoder layer; cross-attention, FFN, residuals, norms and embeddings are fairseq's own.

Absolute positions stay as fairseq's options make them: fairseq's sinusoidal (or learned)
position embeddings are added to the token embeddings unless --no-token-positional-embeddings
is given, which leaves the relative positions alone (Shaw et al.'s relative rows; the
registry's `transformer_relative`). Option (a dataclass field, so fairseq-hydra-train sees it
too): --max-relative-positions K, the clipping distance (16, as in Shaw et al.'s base rows).
"""

from dataclasses import dataclass, field

from fairseq.dataclass import FairseqDataclass
from fairseq.models import register_model
from fairseq.models.transformer import TransformerDecoderBase, TransformerEncoderBase

from ..errors import MGSAError
from ..modules.relative.layers import RelativeDecoderLayer, RelativeEncoderLayer
from .base import SIZES, MethodTransformerModel, wrap_layer

HELP = ("clipping distance k of the relative position representations: keys further than k positions away "
        "share the table's outermost entry (2k+1 learned vectors for keys, 2k+1 for values, per layer)")


@dataclass
class RelativeConfig(FairseqDataclass):
    max_relative_positions: int = field(default=16, metadata={"help": HELP})


def check_relative_options(args, stacks=("encoder", "decoder")):
    """One-line MGSAError for options that cannot go with relative self-attention in `stacks`."""
    k = args.max_relative_positions
    if k < 1:
        raise MGSAError(f"--max-relative-positions {k}: expected a clipping distance k >= 1")
    for side in stacks:
        if getattr(args, f"{side}_xformers_att_config", None):
            raise MGSAError(f"--{side}-xformers-att-config cannot be combined with relative position "
                            f"representations in the {side}'s self-attention")
    if "decoder" in stacks and getattr(args, "cross_self_attention", False):
        raise MGSAError("--cross-self-attention cannot be combined with relative position representations: "
                        "they need the decoder's own self-attention")


class RelativeTransformerEncoder(TransformerEncoderBase):
    def build_encoder_layer(self, cfg):
        return wrap_layer(cfg, RelativeEncoderLayer(cfg, return_fc=self.return_fc))


class RelativeTransformerDecoder(TransformerDecoderBase):
    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        return wrap_layer(cfg, RelativeDecoderLayer(cfg, no_encoder_attn))


@register_model("relative_transformer")
class RelativeTransformerModel(MethodTransformerModel):
    """Transformer with relative position representations (Shaw et al., arXiv:1803.02155)."""

    CONFIG = RelativeConfig
    ENCODER = RelativeTransformerEncoder
    DECODER = RelativeTransformerDecoder

    @classmethod
    def check_args(cls, args):
        check_relative_options(args)


# at each of fairseq's sizes (base.SIZES): relative_transformer, relative_transformer_big,
# relative_transformer_iwslt_de_en
for _size, _arch in SIZES.items():
    RelativeTransformerModel.architecture(f"relative_transformer{_size}", _arch)
