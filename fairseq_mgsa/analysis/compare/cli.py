"""mgsa-compare: systems against a baseline on one test set, over training seeds.

    mgsa-compare --ref test.de --system transformer=run1/hyp.txt,run2/hyp.txt \\
                 --system mgsa_syntactic=results/mgsa_syntactic_seed1,results/mgsa_syntactic_seed2 --out compare/

The references: --ref FILE (one a line; repeat it for each reference of the test set),
--refs-tsv FILE (tab-separated, one field per reference), --refs-sgml FILE (NIST/WMT SGML,
<refset><doc><seg>, every refset or sysid a reference; IWSLT's .xml too) or --refs-xml FILE
(WMT's XML test sets since 2021, every <ref translator=...> a reference), several of each;
lines (--ref, --refs-tsv) and segments with ids (--refs-sgml, --refs-xml) are not mixed, since
lines carry no ids to match the segments by. Every score, test and verdict is taken with all of
them (sacrebleu's multi-reference BLEU and chrF).

Each --system is NAME=PATH[,PATH...], one PATH per training seed: a file of hypotheses (one
a line, in the reference's order; or fairseq-generate's output, read by sentence id: its D-
lines, else its H- lines) or a run directory as the recipes write it (results/RUN_NAME: its
--hyp-name file, fairseq-generate's generate-test.log or .txt, and the training log
train.log beside it or in ../../checkpoints/RUN_NAME/: where each run stopped, its best
validation loss, its training minutes, and whether its cap cut it while still improving).
The first --system is the baseline unless --baseline names another.

Written into --out: results.json, results.md (the table, and BLEU by n-gram order as the
paper's Fig. 2), bleu_by_ngram_order.png, and compare-mt's HTML report (compare-mt/index.html:
word accuracy by frequency, sentence BLEU by length, characteristic n-grams, examples).
The table is printed on the terminal too.

Scores are sacrebleu's: BLEU and chrF, and its paired bootstrap resampling (`sacrebleu
--paired-bs`) against the baseline, on each seed pair (seed i with the baseline's seed i) and
on all seed pairs pooled. With unequal seed counts only the seeds both have are paired.
"""

import argparse
import logging
import os
import sys

from fairseq_mgsa import preflight

MAX_ORDER = 8  # as scoring.MAX_ORDER, without importing sacrebleu before the preflight check


def positive_samples(text: str) -> int:
    """--bootstrap-samples: sacrebleu takes 0 for its default 1000, and a p from no resample is no p."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of resamples (default 1000)")
    return n


class AddReference(argparse.Action):
    """--ref, --refs-tsv, --refs-sgml, --refs-xml: (kind, path) into one list, in the order given."""

    def __call__(self, parser, namespace, value, option_string=None):
        # a new list each time: argparse's default list is shared by every parse
        setattr(namespace, self.dest, list(getattr(namespace, self.dest) or []) + [(self.const, value)])


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mgsa-compare", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[2:]))
    refs = dict(dest="references", action=AddReference, default=[], metavar="FILE")
    p.add_argument("--ref", const="plain", **refs,
                   help="a reference translation, one a line (repeat for each reference of the test set)")
    p.add_argument("--refs-tsv", const="tsv", **refs,
                   help="references, one test sentence a line, one tab-separated field per reference "
                        "(an empty field: none for that sentence)")
    p.add_argument("--refs-sgml", const="sgml", **refs,
                   help="NIST/WMT SGML references (<refset><doc docid=..><seg id=..>): every refset or doc "
                        "sysid a reference")
    p.add_argument("--refs-xml", const="xml", **refs,
                   help="a WMT XML test set (<dataset><collection><doc>): every <ref translator=..> a reference")
    p.add_argument("--system", action="append", required=True, metavar="NAME=PATH[,PATH...]",
                   help="a system and its hypothesis files or run directories, one per training seed (repeat)")
    p.add_argument("--baseline", help="the system the others are compared with (default: the first --system)")
    p.add_argument("--out", required=True, help="the output directory (created)")
    p.add_argument("--hyp-name", default="hyp.detok",
                   help="the hypothesis file in a run directory (default: the recipes' detokenized hyp.detok)")
    p.add_argument("--tokenize", default="13a", help="sacrebleu's BLEU tokenizer (none: already tokenized text)")
    p.add_argument("-lc", "--lowercase", action="store_true",
                   help="case-insensitive BLEU, chrF, exact match and compare-mt report")
    p.add_argument("--bootstrap-samples", type=positive_samples, default=1000,
                   help="resamples of sacrebleu's paired bootstrap (default 1000; smallest possible p 1/(N+1))")
    p.add_argument("--max-order", type=int, default=MAX_ORDER, help="n-gram orders of the breakdown (paper: 8)")
    p.add_argument("--no-compare-mt", action="store_true", help="no compare-mt HTML report")
    return p


def quiet_other_libraries():
    """Other libraries' logging at WARNING (matplotlib's font manager logs thousands of DEBUG lines
    when something has set the root logger to DEBUG)."""
    logging.getLogger().setLevel(logging.WARNING)
    for name in ("matplotlib", "PIL", "fontTools", "stanza", "urllib3", "absl"):
        logging.getLogger(name).setLevel(logging.WARNING)


def check_arguments(a, p: argparse.ArgumentParser):
    """What can be checked before a file is read: one line each (argparse's format)."""
    from sacrebleu.metrics.bleu import _TOKENIZERS  # sacrebleu's own list of BLEU tokenizers

    from .runs import CompareError, split_spec
    if not a.references:
        p.error("the references: one of --ref, --refs-tsv, --refs-sgml, --refs-xml is required")
    if a.tokenize not in _TOKENIZERS:
        p.error(f"argument --tokenize: unknown tokenizer {a.tokenize!r} (sacrebleu's are: {', '.join(_TOKENIZERS)})")
    if os.path.exists(a.out) and not os.path.isdir(a.out):
        raise CompareError(f"--out {a.out}: a file is there (a directory expected: mgsa-compare writes several "
                           f"files into it)")
    above = os.path.dirname(os.path.normpath(a.out)) or "."  # the first folder that exists must be one
    while not os.path.exists(above):
        above = os.path.dirname(above) or "."
    if not os.path.isdir(above):
        raise CompareError(f"--out {a.out}: {above} is a file (a directory expected)")
    names = []
    for spec in a.system:
        name, _ = split_spec(spec)
        if name in names:
            raise CompareError(f"--system {name} is given twice")
        names.append(name)
    if a.baseline is not None and a.baseline not in names:
        raise CompareError(f"--baseline {a.baseline} names no --system (the systems: {', '.join(names)})")
    if a.max_order < 1:
        raise CompareError(f"--max-order {a.max_order}: a positive n-gram order expected (the paper's: 8)")


def main(argv=None):
    p = parser()
    a = p.parse_args(argv)
    quiet_other_libraries()  # first: the check below imports matplotlib
    # the packages of the later steps import, or one line and exit 2 (before reading any file)
    preflight.require("mgsa-compare", ["sacrebleu"] + ([] if a.no_compare_mt else ["compare"]) + ["plots"])
    from . import report
    from .refs import label, read_references
    from .runs import CompareError, read_system
    from .scoring import compare
    try:
        check_arguments(a, p)
        references = read_references(a.references)
        refs = [r.lines for r in references]
        systems, notes = {}, []
        for spec in a.system:
            s = read_system(spec, len(refs[0]), label(references), a.hyp_name, notes)
            systems[s.name] = s
        if len(references) > 1:
            notes.insert(0, f"{len(references)} references, each with {len(refs[0])} sentences: "
                            + ", ".join(r.name for r in references))
        for note in notes:
            print(f"[mgsa-compare] {note}", flush=True)
        baseline = a.baseline or next(iter(systems))
        results = compare(systems, refs, baseline, a.bootstrap_samples, a.tokenize, a.lowercase, a.max_order,
                          ref_names=[r.name for r in references])
    except CompareError as e:
        p.exit(2, f"{p.prog}: error: {e}\n")
    paths = report.write_all(results, systems, refs, a.out, compare_mt=not a.no_compare_mt, lowercase=a.lowercase)
    print(report.terminal_table(results))
    print(f"[mgsa-compare] written to {os.path.abspath(a.out)}: {', '.join(os.path.basename(x) for x in paths)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
