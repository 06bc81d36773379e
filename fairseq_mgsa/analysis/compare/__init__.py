"""mgsa-compare: systems against a baseline on one test set, over training seeds.

One module per kind of analysis, as compare-mt keeps them:

    runs.py      reading a user's files: hypotheses (plain or fairseq-generate's output),
                 run directories and their fairseq-train logs (speed, validation, where it stopped)
    refs.py      the references, one or several per sentence: plain files, tab-separated,
                 NIST/WMT SGML, WMT's XML
    trainlog.py  where and why a fairseq-train run stopped
    stopping.py  the stopping rule of the recipes and the demo: its fairseq-train options, and the
                 stopping record read back by trainlog.py
                 (`python -m fairseq_mgsa.analysis.compare.stopping args|summary`)
    scoring.py   sacrebleu's BLEU and chrF, paired bootstrap per seed pair and pooled, the verdict,
                 scores on a subset of the test set
    buckets.py   compare-mt's finer view (word accuracy, sentence buckets, n-grams, examples)
    matched.py   the parameter-matched baseline (`python -m fairseq_mgsa.analysis.compare.matched`)
    plots.py     BLEU by n-gram order, validation loss
    report.py    the tables, results.json and results.md
    cli.py       the command (`mgsa-compare`, `python -m fairseq_mgsa.analysis.compare`)

The names below are imported when first used (PEP 562), so that `mgsa-compare` can check
that sacrebleu, compare-mt and matplotlib import (fairseq_mgsa.preflight) before any of
them is imported.
"""

import importlib

_EXPORTS = {
    "runs": ("Runs", "CompareError", "read_lines", "read_hyps", "read_params", "read_training_speed",
             "read_decoding_speed", "read_valid_curve", "read_stop", "read_system", "mean_or_none",
             "registry_label"),
    "refs": ("Reference", "read_references"),
    "scoring": ("ALPHA", "MAX_ORDER", "mean_sd", "verdict", "one_seed_range", "ngram_stats", "paired", "compare",
                "subset"),
    "cli": ("quiet_other_libraries",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}


def main(argv=None):
    """The console script `mgsa-compare` (setup.py names this function)."""
    from .cli import main as cli_main
    return cli_main(argv)


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
