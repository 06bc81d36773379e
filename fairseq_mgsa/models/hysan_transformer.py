"""`hysan_transformer`: fairseq's Transformer with HySAN's hybrid self-attention.

The self-attention of the chosen encoder and decoder layers becomes a
HybridMultiheadAttention (global, directional and local branches over one score
matrix, fused before W_O); cross-attention, FFN, residuals, norms and embeddings are
fairseq's own. A stack whose branches are just `global` keeps fairseq's attention.
Options (dataclass fields, so fairseq-hydra-train sees them too): --hysan-encoder-branches,
--hysan-decoder-branches, --hysan-fusion, --hysan-gate-reduction, --hysan-gate-shared,
--hysan-directional-exclude-self, --hysan-recompute, --hysan-encoder-layers,
--hysan-decoder-layers, --max-relative-positions.

--max-relative-positions K (0, off, by default) adds Shaw et al.'s relative position
representations (modules/relative/attention.py) to every self-attention of both stacks: inside
HySAN's layers the relative key term enters the one score matrix before the branches' masks
(modules/hysan/relative.py), and the layers that keep fairseq's attention get fairseq's layers
with relative self-attention (modules/relative/layers.py).
"""

from dataclasses import dataclass, field

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import register_model
from fairseq.models.transformer import TransformerDecoderBase, TransformerEncoderBase

from ..errors import MGSAError
from ..modules.hysan.attention import Branch, parse_branches
from ..modules.hysan.branch_fusion import FUSIONS
from ..modules.hysan.layers import HySANDecoderLayer, HySANEncoderLayer
from ..modules.relative.layers import RelativeDecoderLayer, RelativeEncoderLayer
from .base import SIZES, MethodTransformerModel, parse_layers, place_layers
from .relative_transformer import HELP as RELATIVE_HELP, check_relative_options


@dataclass
class HySANConfig(FairseqDataclass):
    hysan_encoder_branches: str = field(
        default="global,forward,backward,local2",
        metadata={"help": "encoder self-attention branches over one score matrix: global, forward (fw), "
                          "backward (bw), localK (window radius K >= 1; several radii allowed)"},
    )
    hysan_decoder_branches: str = field(
        default="global,local2",
        metadata={"help": "decoder self-attention branches: global (causal) and localK (the K previous "
                          "positions and itself); 'global' alone keeps fairseq's attention"},
    )
    hysan_fusion: ChoiceEnum(list(FUSIONS)) = field(
        default="gate", metadata={"help": "branch fusion before W_O: add (sum), concat (Linear l*d -> d) or "
                                          "gate (sum of squeeze-gated branches)"},
    )
    hysan_gate_reduction: int = field(
        default=64, metadata={"help": "reduction ratio r of the squeeze gate (hidden width d/r)"}
    )
    hysan_gate_shared: bool = field(
        default=False, metadata={"help": "one squeeze gate per layer shared by its branches (default: one per branch)"}
    )
    hysan_directional_exclude_self: bool = field(
        default=False, metadata={"help": "strict directional masks (j < i, j > i) instead of j <= i, j >= i"}
    )
    hysan_recompute: bool = field(
        default=False, metadata={"help": "recompute the branches' attention and fusion in the backward pass instead "
                                         "of keeping them (activation checkpointing): less memory, more operations"},
    )
    hysan_encoder_layers: str = field(
        default="all", metadata={"help": "encoder layers (1 = bottom) with HySAN: comma-separated list or 'all'"}
    )
    hysan_decoder_layers: str = field(
        default="all", metadata={"help": "decoder layers (1 = bottom) with HySAN: comma-separated list or 'all'"}
    )
    max_relative_positions: int = field(
        default=0, metadata={"help": "relative position representations (Shaw et al.) in every self-attention, "
                                     "0 = off; " + RELATIVE_HELP}
    )


GLOBAL_ONLY = [Branch("global")]  # fairseq's own attention: the stack keeps its layers


def relative(cfg) -> bool:
    # absent from the configurations of checkpoints written before the option existed
    return (getattr(cfg, "max_relative_positions", 0) or 0) > 0


class HySANTransformerEncoder(TransformerEncoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, return_fc=False):
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        branches = parse_branches(cfg.hysan_encoder_branches, False, "--hysan-encoder-branches")
        self.hysan_layer_ids = []
        if branches != GLOBAL_ONLY:
            self.hysan_layer_ids = parse_layers(cfg.hysan_encoder_layers, len(self.layers), "--hysan-encoder-layers")

        def build(i):
            if i in self.hysan_layer_ids:
                return HySANEncoderLayer(cfg, branches, return_fc=self.return_fc)
            return RelativeEncoderLayer(cfg, return_fc=self.return_fc) if relative(cfg) else None

        place_layers(self, cfg, build)


class HySANTransformerDecoder(TransformerDecoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, no_encoder_attn=False, output_projection=None):
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn,
                         output_projection=output_projection)
        branches = parse_branches(cfg.hysan_decoder_branches, True, "--hysan-decoder-branches")
        self.hysan_layer_ids = []
        if branches != GLOBAL_ONLY:
            self.hysan_layer_ids = parse_layers(cfg.hysan_decoder_layers, len(self.layers), "--hysan-decoder-layers")

        def build(i):
            if i in self.hysan_layer_ids:
                return HySANDecoderLayer(cfg, branches, no_encoder_attn)
            return RelativeDecoderLayer(cfg, no_encoder_attn) if relative(cfg) else None

        place_layers(self, cfg, build)


@register_model("hysan_transformer")
class HySANTransformerModel(MethodTransformerModel):
    """Transformer with HySAN's hybrid self-attention (Song et al., arXiv:1811.00253)."""

    CONFIG = HySANConfig
    ENCODER = HySANTransformerEncoder
    DECODER = HySANTransformerDecoder

    @classmethod
    def check_args(cls, args):
        """Raise MGSAError for a HySAN configuration the model could not be built with, or
        with an option that would apply to nothing (PBA refuses those alike)."""
        enc_branches = parse_branches(args.hysan_encoder_branches, False, "--hysan-encoder-branches")
        dec_branches = parse_branches(args.hysan_decoder_branches, True, "--hysan-decoder-branches")
        enc, dec = enc_branches != GLOBAL_ONLY, dec_branches != GLOBAL_ONLY
        if not (enc or dec):
            raise MGSAError("--hysan-encoder-branches global and --hysan-decoder-branches global: no layer gets "
                            "HySAN's attention; use --arch transformer for fairseq's Transformer")
        for side, hybrid, num_layers in (("encoder", enc, args.encoder_layers), ("decoder", dec, args.decoder_layers)):
            spec = getattr(args, f"hysan_{side}_layers")
            if hybrid:
                parse_layers(spec, num_layers, f"--hysan-{side}-layers")
                # fairseq's attention would use it; HySAN's layers build their own attention
                if getattr(args, f"{side}_xformers_att_config", None):
                    raise MGSAError(f"--{side}-xformers-att-config cannot be combined with HySAN's {side} "
                                    f"self-attention (--hysan-{side}-branches global keeps fairseq's)")
            elif str(spec).strip() != "all":
                raise MGSAError(f"--hysan-{side}-layers {spec!r} applies to nothing: --hysan-{side}-branches global "
                                f"keeps fairseq's attention in every {side} layer")
        if dec and getattr(args, "cross_self_attention", False):
            raise MGSAError("--cross-self-attention: HySAN decoder branches need the decoder's own self-attention; "
                            "use --hysan-decoder-branches global with it")
        if args.hysan_directional_exclude_self and not (
                enc and any(b.kind in ("forward", "backward") for b in enc_branches)):
            raise MGSAError(f"--hysan-directional-exclude-self applies to the encoder's forward and backward branches "
                            f"only, and --hysan-encoder-branches {args.hysan_encoder_branches!r} has none")
        k = args.max_relative_positions
        if k < 0:
            raise MGSAError(f"--max-relative-positions {k}: expected 0 (off) or a clipping distance k >= 1")
        if k > 0:
            check_relative_options(args)
        # the squeeze gate's options, checked against their defaults (a preset or a checkpoint fills them in)
        r, default_r = args.hysan_gate_reduction, HySANConfig.hysan_gate_reduction
        if args.hysan_fusion != "gate":
            if args.hysan_gate_shared:
                raise MGSAError(f"--hysan-gate-shared applies to --hysan-fusion gate only (given: {args.hysan_fusion})")
            if r != default_r:
                raise MGSAError(f"--hysan-gate-reduction {r} applies to --hysan-fusion gate only "
                                f"(given: {args.hysan_fusion})")
        elif r < 1:
            raise MGSAError(f"--hysan-gate-reduction {r}: expected r >= 1, the squeeze gate's hidden width is "
                            f"max(1, width / r)")


# The recommended configuration (docs/peers.md, HySAN's decisions: the paper's text does not give
# it): encoder global + forward + backward + local (radius 2), decoder global + local2, squeeze-gate
# fusion, in every layer.
RECOMMENDED = dict(hysan_encoder_branches="global,forward,backward,local2", hysan_decoder_branches="global,local2",
                   hysan_fusion="gate", hysan_gate_reduction=64, hysan_encoder_layers="all",
                   hysan_decoder_layers="all")


# At each of fairseq's sizes (base.SIZES; the paper's settings table is lost: its Small, Base
# and Large are taken as IWSLT, base and big), with the option defaults and with the
# recommended preset pinned: the same as the defaults today, and stays so for recipes and
# benchmarks if a default ever changes.
for _size, _arch in SIZES.items():
    HySANTransformerModel.architecture(f"hysan_transformer{_size}", _arch)
    HySANTransformerModel.architecture(f"hysan_transformer{_size}_recommended", _arch, RECOMMENDED)
