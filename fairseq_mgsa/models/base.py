"""What the plugin's models share: fairseq's Transformer with a method's layers in chosen
places, configured through argparse with the method's options in one flat dataclass.

A method is a model file here (its options, its encoder and decoder, its architectures)
and its layers in modules/. This base gives every model the options on the command line
(and as `model:` keys under fairseq-hydra-train) with their defaults, the registration of
an architecture that checks them when the command's options are read, and the wrapping
fairseq gives its own layers.

Like fairseq's own `transformer`, the models are registered without a dataclass:
fairseq's TransformerConfig nests dataclasses, which fairseq cannot turn into a
registered model config, so each method's fields live in a flat dataclass (CONFIG)
whose fields become the command-line options.
"""

import argparse
from typing import Callable, List, Optional

from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.distributed import fsdp_wrap
from fairseq.models import MODEL_REGISTRY, register_model_architecture
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerModel,
    base_architecture,
    transformer_iwslt_de_en,
    transformer_vaswani_wmt_en_de_big,
)
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from omegaconf import DictConfig, OmegaConf
from torch import nn

from .. import shared_embeddings
from ..errors import MGSAError
from ..modules.shared.mask_cache import share_mask_cache

# fairseq's sizes, by the suffix of the plugin's architecture names: base (d 512, ffn 2048,
# 8 heads), big (d 1024, ffn 4096, 16 heads, dropout 0.3), IWSLT (d 512, ffn 1024, 4 heads)
SIZES = {"": base_architecture, "_big": transformer_vaswani_wmt_en_de_big, "_iwslt_de_en": transformer_iwslt_de_en}


class MethodTransformerModel(TransformerModel):
    CONFIG = None  # the method's FairseqDataclass: a field per option
    ENCODER = None  # the method's TransformerEncoderBase subclass (None: fairseq's encoder)
    DECODER = None  # the method's TransformerDecoderBase subclass (None: fairseq's decoder)
    # the method's options parsed into one value (a class with parse(args), e.g. PBAOptions),
    # handed to the encoder and decoder as cfg.method_options; None: they read the options themselves
    OPTIONS = None

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        # no defaults on the command line, so that architectures can fill them in
        gen_parser_from_dataclass(parser, cls.CONFIG(), delete_default=True)

    @classmethod
    def fill_defaults(cls, args):
        """Give every option of the method that `args` leaves unset its default."""
        for name, value in vars(cls.CONFIG()).items():
            if not name.startswith("_") and getattr(args, name, None) is None:
                setattr(args, name, value)

    @classmethod
    def check_args(cls, args):
        """Raise MGSAError for options the model could not be built with."""

    @classmethod
    def architecture(cls, name: str, transformer_arch, preset=None):
        """Register `name`: fairseq's `transformer_arch` with the method's options, `preset`'s
        values first, then the defaults; a bad option stops the command at argument parsing
        with a one-line error (see errors.py). fairseq calls it again on the options a
        checkpoint holds, when the model is built from them."""

        def arch(args):
            for key, value in (preset or {}).items():
                if getattr(args, key, None) is None:
                    setattr(args, key, value)
            cls.fill_defaults(args)
            transformer_arch(args)
            cls.check_args(args)

        arch.__doc__ = f"{cls.__name__} on fairseq's `{transformer_arch.__name__}` architecture."
        model_name = next(n for n, c in MODEL_REGISTRY.items() if c is cls)
        return register_model_architecture(model_name, name)(arch)

    @staticmethod
    def as_namespace(args):
        """fairseq-hydra-train hands a DictConfig, whose keys TransformerConfig.from_namespace
        cannot see (it reads vars()); the namespace form keeps the method's fields."""
        if isinstance(args, DictConfig):
            return argparse.Namespace(**OmegaConf.to_container(args, resolve=True))
        return args

    @classmethod
    def build_model(cls, args, task):
        args = cls.as_namespace(args)
        cls.fill_defaults(args)
        shared_embeddings.check_task(args, task)  # one line naming the dictionaries, not fairseq's traceback
        if cls.OPTIONS is None:
            return super().build_model(args, task)
        # parsed once, here: fairseq copies the namespace's entries into the config it gives the
        # encoder and the decoder; removed again, so that the value never reaches the options a
        # checkpoint stores (they stay the command line's strings)
        args.method_options = cls.OPTIONS.parse(args)
        try:
            return super().build_model(args, task)
        finally:
            del args.method_options

    @classmethod
    def build_encoder(cls, cfg, src_dict, embed_tokens):
        if cls.ENCODER is None:
            return super().build_encoder(cfg, src_dict, embed_tokens)
        return cls.ENCODER(TransformerConfig.from_namespace(cfg), src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, cfg, tgt_dict, embed_tokens):
        if cls.DECODER is None:
            return super().build_decoder(cfg, tgt_dict, embed_tokens)
        cfg = TransformerConfig.from_namespace(cfg)
        return cls.DECODER(cfg, tgt_dict, embed_tokens, no_encoder_attn=cfg.no_cross_attention)


def wrap_layer(cfg, layer):
    """`layer` wrapped as fairseq's build_encoder_layer / build_decoder_layer wrap their own
    (activation checkpointing, FSDP)."""
    if cfg.checkpoint_activations:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0)


def place_layers(stack, cfg, build: Callable[[int], Optional[nn.Module]]) -> None:
    """Put a method's layers into a stack fairseq's __init__ has built: layer i (0 = bottom)
    becomes build(i), wrapped as fairseq wraps its own (wrap_layer); build(i) None keeps
    fairseq's layer. Then the stack's modules that keep a MaskCache share one (mask_cache.py).

    Every model with layers chosen by index places them here, after fairseq's layers, not through
    fairseq's build_encoder_layer / build_decoder_layer hook: the hook is not told which layer it
    builds, and building fairseq's layers first, then the method's, is the order in which the
    parameters have always drawn their initial values (tests/fairseq_mgsa/models/test_initialisation.py).
    A model that replaces every layer alike may use the hook (relative_transformer.py)."""
    for i in range(len(stack.layers)):
        layer = build(i)
        if layer is not None:
            stack.layers[i] = wrap_layer(cfg, layer)
    share_mask_cache(stack)


def parse_layers(spec: str, num_layers: int, option: str, stack: str = "stack") -> List[int]:
    """'1,3' / 'all' -> 0-based indices of layers (1 = bottom) in a stack of num_layers;
    a one-line MGSAError naming `option` for anything else."""
    spec = str(spec).strip()
    if spec == "all":
        return list(range(num_layers))
    try:
        layers = [int(s) for s in spec.split(",") if s.strip()]
    except ValueError:
        layers = []
    if not layers:
        raise MGSAError(f"{option} {spec!r}: expected comma-separated layer numbers (1 = bottom) or 'all'")
    for i in layers:
        if not 1 <= i <= num_layers:
            raise MGSAError(f"{option} {spec!r}: layer {i} is out of range, the {stack} has layers 1..{num_layers}")
    return sorted(set(i - 1 for i in layers))
