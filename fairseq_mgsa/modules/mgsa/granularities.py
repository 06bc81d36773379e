"""MG-SA's granularities (`--mgsa-granularities`), parsed and checked in this one place.

The option lists one granularity per head group, in head order: `word`, `ngramN`
(non-overlapping n-grams of N tokens) or `synK` (the phrases of level K of the parse tree,
read from the phrase files). Its stored form, in the options and in checkpoints, stays
that string. The architecture checks it when the command's options are read; the MG-SA
encoder parses it once into a Granularities and hands that value to its layers and their
attention; the task asks the model how many tree levels it reads (`tree_levels`).
"""

import re
from dataclasses import dataclass
from typing import Iterable, Tuple, Union

from ...errors import MGSAError

WORD, NGRAM, SYNTACTIC = "word", "ngram", "syn"
_NAMES = re.compile(r"^(?:(word)|(ngram)([1-9][0-9]*)|(syn)([1-9][0-9]*))$")


class Granularity(str):
    """One granularity: its name as the option writes it (so it compares, hashes and
    prints as that name), with `kind` (WORD, NGRAM or SYNTACTIC) and `size` (N of an
    n-gram, K of a tree level, 0 for words) read from it once."""

    kind: str
    size: int

    def __new__(cls, name: str) -> "Granularity":
        name = str(name).strip()
        m = _NAMES.match(name)
        if m is None:
            raise MGSAError(f"unknown MG-SA granularity {name!r}: expected 'word', 'ngramN' (e.g. ngram3) "
                            f"or 'synK' (e.g. syn2)")
        self = super().__new__(cls, name)
        if m.group(1):
            self.kind, self.size = WORD, 0
        elif m.group(2):
            self.kind, self.size = NGRAM, int(m.group(3))
        else:
            self.kind, self.size = SYNTACTIC, int(m.group(5))
        return self


@dataclass(frozen=True)
class Granularities:
    groups: Tuple[Granularity, ...]  # the granularity of each head group, in head order

    @classmethod
    def parse(cls, spec: Union[str, Iterable[str], "Granularities"]) -> "Granularities":
        """From the option's string ('word,ngram2,syn1'), or a list of names; a parsed value is returned as is."""
        if isinstance(spec, Granularities):
            return spec
        names = spec.split(",") if isinstance(spec, str) else [str(g) for g in spec]
        names = [g.strip() for g in names if g.strip()]
        if not names:
            raise MGSAError(f"--mgsa-granularities {spec!r}: expected a comma-separated list such as word,ngram2,syn1")
        return cls(tuple(Granularity(g) for g in names))

    def __str__(self) -> str:
        return ",".join(self.groups)  # the option's form

    @property
    def phrase(self) -> Tuple[Granularity, ...]:
        """The distinct phrase granularities in order of first appearance: one phrase memory
        each, and the order of the composed phrases an MG-SA layer returns."""
        return tuple(g for g in dict.fromkeys(self.groups) if g.kind != WORD)

    @property
    def tree_levels(self) -> int:
        """The deepest tree level read (syn1..synK need the phrase files' levels 1..K); 0: no tree."""
        return max((g.size for g in self.groups if g.kind == SYNTACTIC), default=0)

    def heads_per_group(self, num_heads: int) -> int:
        """Heads are split evenly over the groups."""
        if num_heads % len(self.groups):
            raise MGSAError(f"--mgsa-granularities {self}: {num_heads} heads cannot be split evenly over "
                            f"{len(self.groups)} granularities")
        return num_heads // len(self.groups)
