"""What the plugin's three models share: fairseq's TransformerModel configured through
argparse with the method's options in one flat dataclass, and the layer-list option.

Like fairseq's own `transformer`, the models are registered without a dataclass:
fairseq's TransformerConfig nests dataclasses, which fairseq cannot turn into a
registered model config, so each method's fields live in a flat dataclass (CONFIG)
whose fields become the command-line options (and `model:` keys under hydra).
"""

import argparse
from typing import List

from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models.transformer import TransformerModel
from omegaconf import DictConfig, OmegaConf

from ..errors import MGSAError


class FlatConfigTransformerModel(TransformerModel):
    CONFIG = None  # the method's FairseqDataclass

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        # no defaults on the command line, so that architectures can fill them in
        gen_parser_from_dataclass(parser, cls.CONFIG(), delete_default=True)

    @staticmethod
    def as_namespace(args):
        """fairseq-hydra-train hands a DictConfig, whose keys TransformerConfig.from_namespace
        cannot see (it reads vars()); the namespace form keeps the method's fields."""
        if isinstance(args, DictConfig):
            return argparse.Namespace(**OmegaConf.to_container(args, resolve=True))
        return args

    @classmethod
    def build_model(cls, args, task):
        return super().build_model(cls.as_namespace(args), task)


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
