"""Checks, before a long command starts, that the packages its later steps need import.

A missing package found at the end of a 20-minute run (compare-mt, when mgsa-compare
writes its report) costs the whole run: the demo, `make analyses`, the recipes and
mgsa-compare call `require` first and stop in one line with the install command.

This file imports nothing from the package or fairseq, so shell scripts can run it
without importing fairseq (about 3 s), as they run systems.py:

    python "$(mgsa-user-dir)/preflight.py" "the IWSLT recipe" sacrebleu compare
"""

import importlib
import logging
import os
import sys
from typing import Dict, List, Sequence, Tuple

# What a feature imports -> the pip requirements that provide it. The imports are the
# deepest ones the code makes: compare-mt's package imports, but its report module pulls
# in `six`, which compare-mt does not declare.
FEATURES: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {
    "sacrebleu": (("sacrebleu.metrics", "sacrebleu.significance"), ("sacrebleu>=2.0",)),
    "compare": (("sacrebleu.metrics", "compare_mt.compare_mt_main", "compare_mt.reporters"),
                ("sacrebleu>=2.0", "compare-mt", "six")),
    "plots": (("matplotlib.pyplot",), ("matplotlib",)),
    "stanza": (("stanza", "stanza.models.constituency.tree_reader"), ("stanza",)),
    "sacremoses": (("sacremoses",), ("sacremoses",)),
    "subword_nmt": (("subword_nmt.apply_bpe", "subword_nmt.learn_bpe"), ("subword-nmt",)),
    "gensim": (("gensim.models",), ("gensim",)),
}


def missing(features: Sequence[str]) -> List[Tuple[str, str, Tuple[str, ...]]]:
    """(feature, the import error, its requirements) for every feature that does not import."""
    # compare-mt and the plots import matplotlib: no screen is needed (the plots write files), and
    # with the root logger at DEBUG (importing fairseq sets it) matplotlib would log its set-up
    os.environ.setdefault("MPLBACKEND", "Agg")
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    out = []
    for feature in features:
        modules, requirements = FEATURES[feature]
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception as e:  # an ImportError, or a broken install raising anything else
                out.append((feature, f"{type(e).__name__}: {e}", requirements))
                break
    return out


def message(command: str, problems) -> str:
    """One line: what is missing and the pip command that installs it."""
    what = "; ".join(f"{feature} ({error})" for feature, error, _ in problems)
    reqs = []
    for _, _, requirements in problems:
        reqs += [r for r in requirements if r not in reqs]
    pip = " ".join(f"'{r}'" if (">" in r or "<" in r) else r for r in reqs)
    return (f"{command}: cannot start, a package it needs does not import: {what}. "
            f"Install: pip install {pip}  (or bash scripts/install.sh)")


def require(command: str, features: Sequence[str]) -> None:
    """Stop with one line on stderr (exit 2) unless every feature imports."""
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise ValueError(f"unknown features {unknown}; known: {sorted(FEATURES)}")
    problems = missing(features)
    if problems:
        print(message(command, problems), file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(f"usage: {sys.argv[0]} COMMAND-NAME FEATURE...  (features: {', '.join(FEATURES)})")
    require(sys.argv[1], sys.argv[2:])
