"""The finer view of mgsa-compare, by compare-mt (Neubig et al., 2019), called as a library:
word accuracy (F-measure) by reference frequency bucket, sentence BLEU by length bucket, the
n-grams each system gets right where the baseline does not (and the other way), and example
sentences, in an HTML report (index.html, with its figures) in the output directory.

compare-mt works with the project's sacrebleu 2.x and Python 3.11, so these are its, not
written again here. It reads whitespace tokens: on detokenized text, punctuation stays
attached to words (`--hyp-name hyp.tok` with a tokenized reference gives Moses tokens).
It scores the first seed of every system (its report compares single outputs).
"""

import contextlib
import os
from typing import Dict, List


def write(systems: Dict, refs: List[str], baseline: str, out: str) -> str:
    """compare-mt's report of `systems` (compare.Runs, first seed) against `baseline` into `out`;
    its text report goes to out/report.txt. Returns the path of index.html."""
    from compare_mt import compare_mt_main as cmt
    from compare_mt import reporters

    names = [baseline] + [n for n in systems if n != baseline]
    ref = [r.split() for r in refs]
    outs = [[h.split() for h in systems[n].hyps[0]] for n in names]
    # compare-mt keeps the system names and figure size as module globals (as its own main does)
    reporters.sys_names = [systems[n].label for n in names]
    reporters.fig_size = (6.0, 4.5)
    directions = ";".join(f"0-{i}" for i in range(1, len(names)))  # every system against the baseline
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "report.txt"), "w") as text, contextlib.redirect_stdout(text):
        reports = [
            ("Word Accuracies", [cmt.generate_word_accuracy_report(ref, outs, bucket_type="freq")]),
            ("Sentence Buckets", [cmt.generate_sentence_bucketed_report(
                ref, outs, None, bucket_type="length", statistic_type="score", score_measure="bleu")]),
        ]
        if len(names) > 1:
            reports += [
                ("Characteristic N-grams", [cmt.generate_ngram_report(ref, outs, compare_type="match",
                                                                      compare_directions=directions)]),
                ("Sentence Examples", [cmt.generate_sentence_examples(ref, outs, None, score_type="sentbleu",
                                                                      compare_directions=directions)]),
            ]
        reporters.generate_html_report(reports, out, "mgsa-compare: compare-mt report")
    return os.path.join(out, "index.html")
