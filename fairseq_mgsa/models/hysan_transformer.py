"""`hysan_transformer`: fairseq's Transformer with HySAN's hybrid self-attention.

The self-attention of the chosen encoder and decoder layers becomes a
HybridMultiheadAttention (global, directional and local branches over one score
matrix, fused before W_O); cross-attention, FFN, residuals, norms and embeddings are
fairseq's own. A stack whose branches are just `global` keeps fairseq's attention.
Options (dataclass fields, so fairseq-hydra-train sees them too): --hysan-encoder-branches,
--hysan-decoder-branches, --hysan-fusion, --hysan-gate-reduction, --hysan-gate-shared,
--hysan-directional-exclude-self, --hysan-encoder-layers, --hysan-decoder-layers.
"""

from dataclasses import dataclass, field

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.distributed import fsdp_wrap
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerDecoderBase,
    TransformerEncoderBase,
    base_architecture,
    transformer_iwslt_de_en,
    transformer_vaswani_wmt_en_de_big,
)
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase
from fairseq.modules.checkpoint_activations import checkpoint_wrapper

from ..errors import MGSAError
from .flat_config import FlatConfigTransformerModel, parse_layers
from ..modules.branch_fusion import FUSIONS
from ..modules.hybrid_attention import Branch, HybridMultiheadAttention, parse_branches


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
    hysan_encoder_layers: str = field(
        default="all", metadata={"help": "encoder layers (1 = bottom) with HySAN: comma-separated list or 'all'"}
    )
    hysan_decoder_layers: str = field(
        default="all", metadata={"help": "decoder layers (1 = bottom) with HySAN: comma-separated list or 'all'"}
    )


def _hybrid_attention(layer, cfg, embed_dim: int, heads: int, branches, causal: bool):
    return HybridMultiheadAttention(
        embed_dim, heads, branches, fusion=cfg.hysan_fusion, gate_reduction=cfg.hysan_gate_reduction,
        gate_shared=cfg.hysan_gate_shared, causal=causal, exclude_self=cfg.hysan_directional_exclude_self,
        dropout=cfg.attention_dropout, q_noise=layer.quant_noise, qn_block_size=layer.quant_noise_block_size)


class HySANEncoderLayer(TransformerEncoderLayerBase):
    def build_self_attention(self, embed_dim, cfg):
        branches = parse_branches(cfg.hysan_encoder_branches, False, "--hysan-encoder-branches")
        return _hybrid_attention(self, cfg, embed_dim, cfg.encoder.attention_heads, branches, causal=False)


class HySANDecoderLayer(TransformerDecoderLayerBase):
    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        if add_bias_kv or add_zero_attn or cfg.cross_self_attention:
            raise MGSAError("HySAN decoder layers do not support add_bias_kv, add_zero_attn or --cross-self-attention")
        branches = parse_branches(cfg.hysan_decoder_branches, True, "--hysan-decoder-branches")
        return _hybrid_attention(self, cfg, embed_dim, cfg.decoder.attention_heads, branches, causal=True)


def _wrap(layer, cfg):
    # the wrapping fairseq's build_encoder_layer / build_decoder_layer apply
    if cfg.checkpoint_activations:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0)


def _uses_hybrid(spec: str, decoder: bool, option: str) -> bool:
    return parse_branches(spec, decoder, option) != [Branch("global")]


class HySANTransformerEncoder(TransformerEncoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, return_fc=False):
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        self.hysan_layer_ids = []
        if _uses_hybrid(cfg.hysan_encoder_branches, False, "--hysan-encoder-branches"):
            self.hysan_layer_ids = parse_layers(cfg.hysan_encoder_layers, len(self.layers), "--hysan-encoder-layers")
        for i in self.hysan_layer_ids:
            self.layers[i] = _wrap(HySANEncoderLayer(cfg, return_fc=self.return_fc), cfg)


class HySANTransformerDecoder(TransformerDecoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, no_encoder_attn=False, output_projection=None):
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn,
                         output_projection=output_projection)
        self.hysan_layer_ids = []
        if _uses_hybrid(cfg.hysan_decoder_branches, True, "--hysan-decoder-branches"):
            self.hysan_layer_ids = parse_layers(cfg.hysan_decoder_layers, len(self.layers), "--hysan-decoder-layers")
        for i in self.hysan_layer_ids:
            self.layers[i] = _wrap(HySANDecoderLayer(cfg, no_encoder_attn), cfg)


# Configured through argparse like `mgsa_transformer` (see there why the fields are flat).
@register_model("hysan_transformer")
class HySANTransformerModel(FlatConfigTransformerModel):
    """Transformer with HySAN's hybrid self-attention (Song et al., arXiv:1811.00253)."""

    CONFIG = HySANConfig

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return HySANTransformerEncoder(TransformerConfig.from_namespace(args), src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        return HySANTransformerDecoder(cfg, tgt_dict, embed_tokens, no_encoder_attn=cfg.no_cross_attention)


def hysan_defaults(args):
    for name, value in vars(HySANConfig()).items():
        if name.startswith("hysan_") and getattr(args, name, None) is None:
            setattr(args, name, value)


def check_hysan_args(args):
    """Raise MGSAError for a HySAN configuration the model could not be built with, or
    with an option that would apply to nothing (PBA refuses those alike)."""
    enc_branches = parse_branches(args.hysan_encoder_branches, False, "--hysan-encoder-branches")
    dec_branches = parse_branches(args.hysan_decoder_branches, True, "--hysan-decoder-branches")
    enc, dec = enc_branches != [Branch("global")], dec_branches != [Branch("global")]
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


# The recommended configuration (docs/peers.md, HySAN's decisions: the paper's text does not give it): encoder global + forward + backward + local
# (radius 2), decoder global + local2, squeeze-gate fusion, in every layer.
RECOMMENDED = dict(hysan_encoder_branches="global,forward,backward,local2", hysan_decoder_branches="global,local2",
                   hysan_fusion="gate", hysan_gate_reduction=64, hysan_encoder_layers="all",
                   hysan_decoder_layers="all")


def hysan_architecture(name: str, transformer_arch, preset=None):
    """Register `name` as `transformer_arch` plus HySAN defaults (`preset` first); a bad
    HySAN option stops the command at argument parsing with a one-line error."""

    def arch(args):
        for key, value in (preset or {}).items():
            if getattr(args, key, None) is None:
                setattr(args, key, value)
        hysan_defaults(args)
        transformer_arch(args)
        check_hysan_args(args)

    arch.__doc__ = f"HySAN self-attention on fairseq's `{transformer_arch.__name__}` architecture."
    return register_model_architecture("hysan_transformer", name)(arch)


# Sizes as fairseq's (docs/peers.md, HySAN's decisions: the paper's settings table is lost): Base d 512 / ffn 2048 / 8 heads; Big (the paper's Large)
# d 1024 / ffn 4096 / 16 heads; IWSLT (the paper's Small) d 512 / ffn 1024 / 4 heads.
hysan_transformer = hysan_architecture("hysan_transformer", base_architecture)
hysan_transformer_big = hysan_architecture("hysan_transformer_big", transformer_vaswani_wmt_en_de_big)
hysan_transformer_iwslt_de_en = hysan_architecture("hysan_transformer_iwslt_de_en", transformer_iwslt_de_en)
# The recommended preset at each size, pinned: the same as the option defaults today, and
# stays so for recipes and benchmarks if a default ever changes.
hysan_transformer_recommended = hysan_architecture(
    "hysan_transformer_recommended", base_architecture, RECOMMENDED)
hysan_transformer_big_recommended = hysan_architecture(
    "hysan_transformer_big_recommended", transformer_vaswani_wmt_en_de_big, RECOMMENDED)
hysan_transformer_iwslt_de_en_recommended = hysan_architecture(
    "hysan_transformer_iwslt_de_en_recommended", transformer_iwslt_de_en, RECOMMENDED)
