"""`mgsa_transformer`: fairseq's Transformer with MG-SA in chosen encoder layers.

The decoder, embeddings and every other encoder layer are fairseq's own. The model
options are dataclass fields (so fairseq-hydra-train sees them too); on the command
line they are --mgsa-layers, --mgsa-granularities, --mgsa-composition,
--mgsa-interaction and --mgsa-onlstm-chunk-size.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import (
    TransformerEncoderBase,
    base_architecture,
    TransformerModel,
    transformer_iwslt_de_en,
    transformer_vaswani_wmt_en_de_big,
)
from fairseq.distributed import fsdp_wrap
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from torch import Tensor

from ..modules.mgsa_encoder_layer import MGSAEncoderLayer, parse_granularities
from ..modules.multi_granularity_attention import check_granularity
from ..modules.partition import NGRAM, Partition, ngram_partition


@dataclass
class MGSAConfig(FairseqDataclass):
    mgsa_layers: str = field(
        default="1",
        metadata={"help": "encoder layers (1 = bottom) whose self-attention is MG-SA: "
                          "a comma-separated list such as 1,2,3, or 'all'"},
    )
    mgsa_granularities: str = field(
        default="word,ngram2,ngram3,ngram4",
        metadata={"help": "granularity of each head group, heads split evenly in this order: "
                          "'word', 'ngramN' (non-overlapping n-grams) or 'synK' (level K of the parse tree)"},
    )
    mgsa_composition: ChoiceEnum(["max", "lstm", "san"]) = field(
        default="san", metadata={"help": "phrase composition: max-pooling, LSTM, or self-attention (SANs)"}
    )
    mgsa_interaction: ChoiceEnum(["none", "lstm", "onlstm"]) = field(
        default="none", metadata={"help": "phrase interaction: none, LSTM, or ON-LSTM"}
    )
    mgsa_onlstm_chunk_size: int = field(
        default=2, metadata={"help": "ON-LSTM chunk size (neurons per master-gate level)"}
    )


def parse_mgsa_layers(spec: str, num_layers: int) -> List[int]:
    """'1,3' / 'all' -> 0-based layer indices; clear errors for anything else."""
    spec = str(spec).strip()
    if spec == "all":
        return list(range(num_layers))
    try:
        layers = [int(s) for s in spec.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--mgsa-layers {spec!r}: expected comma-separated layer numbers (1 = bottom) or 'all'")
    for i in layers:
        if not 1 <= i <= num_layers:
            raise ValueError(f"--mgsa-layers {spec!r}: layer {i} is out of range, the encoder has layers 1..{num_layers}")
    return sorted(set(i - 1 for i in layers))


class MGSATransformerEncoder(TransformerEncoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, return_fc=False):
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        self.mgsa_layer_ids = parse_mgsa_layers(cfg.mgsa_layers, len(self.layers))
        granularities = parse_granularities(cfg.mgsa_granularities)
        for g in granularities:
            check_granularity(g)
        self.phrase_granularities = [g for g in dict.fromkeys(granularities) if g != "word"]
        for i in self.mgsa_layer_ids:
            self.layers[i] = self.build_mgsa_layer(cfg)

    def build_mgsa_layer(self, cfg):
        # same wrapping as fairseq's build_encoder_layer
        layer = MGSAEncoderLayer(cfg, return_fc=self.return_fc)
        if cfg.checkpoint_activations:
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        min_params_to_wrap = cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0
        return fsdp_wrap(layer, min_num_params=min_params_to_wrap)

    def build_partitions(self, padding_mask: Tensor) -> Dict[str, Partition]:
        partitions = {}
        for g in self.phrase_granularities:
            m = NGRAM.match(g)
            if m:
                partitions[g] = ngram_partition(padding_mask, int(m.group(1)))
            else:
                raise ValueError(f"granularity {g!r} needs phrase partitions from the data")
        return partitions

    def forward(
        self,
        src_tokens: Tensor,
        src_lengths: Optional[Tensor] = None,
        return_all_hiddens: bool = False,
        token_embeddings: Optional[Tensor] = None,
    ):
        """As TransformerEncoderBase.forward, plus the phrase partitions for MG-SA layers.

        The output dict also holds "mgsa_composed": for every MG-SA layer, the composed
        phrases G of each phrase granularity with their partition.
        """
        padding_mask = src_tokens.eq(self.padding_idx)  # B x T
        has_pads = bool(padding_mask.any())
        partitions = self.build_partitions(padding_mask)

        x, encoder_embedding = self.forward_embedding(src_tokens, token_embeddings)
        if has_pads:
            x = x * (1 - padding_mask.unsqueeze(-1).type_as(x))
        x = x.transpose(0, 1)  # T x B x C

        encoder_states = [x] if return_all_hiddens else []
        composed = []
        layer_mask = padding_mask if has_pads else None
        for i, layer in enumerate(self.layers):
            if i in self.mgsa_layer_ids:
                x, layer_composed = layer(x, layer_mask, partitions)
                composed.append(layer_composed)
            else:
                x = layer(x, encoder_padding_mask=layer_mask)
            if isinstance(x, tuple):  # return_fc layers
                x = x[0]
            if return_all_hiddens:
                encoder_states.append(x)
        if self.layer_norm is not None:
            x = self.layer_norm(x)

        return {
            "encoder_out": [x],  # T x B x C
            "encoder_padding_mask": [padding_mask],  # B x T
            "encoder_embedding": [encoder_embedding],  # B x T x C
            "encoder_states": encoder_states,  # List[T x B x C]
            "fc_results": [],
            "src_tokens": [],
            "src_lengths": [(~padding_mask).sum(dim=1, dtype=torch.int32).reshape(-1, 1)],
            "mgsa_composed": composed,
        }


# Like fairseq's `transformer`, the model is configured through argparse: fairseq's
# TransformerConfig nests dataclasses, which fairseq cannot turn into a registered
# model config, so the MG-SA fields live in a flat dataclass of their own.
@register_model("mgsa_transformer")
class MGSATransformerModel(TransformerModel):
    """Transformer with Multi-Granularity Self-Attention (Hao et al., EMNLP 2019) in its encoder."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        # no defaults on the command line, so that architectures can fill them in
        gen_parser_from_dataclass(parser, MGSAConfig(), delete_default=True)

    @classmethod
    def build_encoder(cls, cfg, src_dict, embed_tokens):
        return MGSATransformerEncoder(cfg, src_dict, embed_tokens)


def mgsa_defaults(args):
    for name, value in vars(MGSAConfig()).items():
        if name.startswith("mgsa_") and getattr(args, name, None) is None:
            setattr(args, name, value)


def check_mgsa_args(args):
    """Raise ValueError for an MG-SA configuration the encoder could not be built with."""
    granularities = parse_granularities(args.mgsa_granularities)
    for g in granularities:
        check_granularity(g)
    heads = args.encoder_attention_heads
    if heads % len(granularities) != 0:
        raise ValueError(f"--mgsa-granularities {args.mgsa_granularities}: {heads} heads cannot be split "
                         f"evenly over {len(granularities)} granularities")
    parse_mgsa_layers(args.mgsa_layers, args.encoder_layers)


def mgsa_architecture(name: str, transformer_arch):
    """Register `name` as `transformer_arch` plus MG-SA defaults; a bad MG-SA option
    stops the command with a one-line error instead of a traceback."""

    def arch(args):
        mgsa_defaults(args)
        transformer_arch(args)
        try:
            check_mgsa_args(args)
        except ValueError as e:
            raise SystemExit(f"error: {e}")

    arch.__doc__ = f"MG-SA encoder on fairseq's `{transformer_arch.__name__}` architecture."
    return register_model_architecture("mgsa_transformer", name)(arch)


# Transformer-Base (as fairseq's `transformer`): d 512, ffn 2048, 8 heads, 6+6 layers.
mgsa_transformer = mgsa_architecture("mgsa_transformer", base_architecture)
# Transformer-Big: d 1024, ffn 4096, 16 heads, dropout 0.3.
mgsa_transformer_big = mgsa_architecture("mgsa_transformer_big", transformer_vaswani_wmt_en_de_big)
# IWSLT size: d 512, ffn 1024, 4 heads (one per granularity).
mgsa_transformer_iwslt_de_en = mgsa_architecture("mgsa_transformer_iwslt_de_en", transformer_iwslt_de_en)
