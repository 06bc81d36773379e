"""Phrase-based attention's options (--pba-*), parsed and checked in this one place.

Their stored form, in the options and in checkpoints, stays the command line's strings. The
architecture checks them when the command's options are read (PBATransformerModel.check_args);
the model parses them once into a PBAOptions when it is built and hands that value to its
encoder, decoder, layers and attention modules, none of which reads the strings again.
"""

from dataclasses import dataclass
from typing import List, Tuple

from ...errors import MGSAError
from .attention import ROLES, check_pba_config


def parse_ngrams(spec: str) -> List[int]:
    try:
        sizes = [int(s) for s in str(spec).split(",") if s.strip()]
    except ValueError:
        sizes = []
    if not sizes:
        raise MGSAError(f"--pba-ngrams {spec!r}: expected comma-separated n-gram sizes such as 1,2")
    return sizes


def parse_roles(spec: str) -> List[str]:
    roles = [r.strip() for r in str(spec).split(",") if r.strip()]
    bad = [r for r in roles if r not in ROLES]
    if bad or not roles:
        raise MGSAError(f"--pba-roles {spec!r}: expected a comma-separated subset of enc,dec,cross")
    return roles


@dataclass(frozen=True)
class PBAOptions:
    attention: str             # convkv or queryk
    mode: str                  # homogeneous, heterogeneous or interleaved
    ngrams: Tuple[int, ...]    # the n-gram sizes as listed (homogeneous: one per head group)
    roles: Tuple[str, ...]     # of enc, dec, cross
    layers: str                # --pba-layers as given: each stack reads it against its own depth
    shared_key: bool           # --pba-queryk-shared-key

    @classmethod
    def parse(cls, args) -> "PBAOptions":
        """From the model's options (a namespace or config with the pba_* fields); a one-line
        MGSAError for an n-gram list or roles that cannot be read."""
        return cls(args.pba_attention, args.pba_mode, tuple(parse_ngrams(args.pba_ngrams)),
                   tuple(parse_roles(args.pba_roles)), str(args.pba_layers), bool(args.pba_queryk_shared_key))

    @property
    def encoder(self) -> bool:
        """Whether the encoder has phrase-based attention (its self-attention)."""
        return "enc" in self.roles

    @property
    def decoder(self) -> bool:
        """Whether the decoder has phrase-based attention (its self and/or cross attention)."""
        return bool({"dec", "cross"} & set(self.roles))

    def check(self, num_heads: int, embed_dim: int, where: str = "") -> None:
        """A one-line MGSAError if a stack of num_heads heads of embed_dim cannot be built."""
        check_pba_config(self.attention, self.mode, self.ngrams, num_heads, embed_dim, self.shared_key, where=where)
