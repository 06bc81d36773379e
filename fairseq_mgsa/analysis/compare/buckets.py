"""The finer view of mgsa-compare, by compare-mt (Neubig et al., 2019), called as a library:
word accuracy (F-measure) by reference frequency bucket, sentence BLEU by length bucket, the
n-grams each system gets right where the baseline does not (and the other way), and example
sentences, in an HTML report (index.html, with its figures) in the output directory.

compare-mt works with the project's sacrebleu 2.x and Python 3.11, so these are its, not
written again here. It reads whitespace tokens: on detokenized text, punctuation stays
attached to words (`--hyp-name hyp.tok` with a tokenized reference gives Moses tokens).
It scores the first seed of every system (its report compares single outputs) against one
reference (it takes one: with several, mgsa-compare gives it the first and says so), ignoring
case with --lowercase (its own case_insensitive option).

Two things of compare-mt's HTML are set right here: its sentence-example report renders only
its last comparison (its html_content restarts the page for every one), so every system gets
a report of its own; and it writes the text unescaped, so `<unk>` became an HTML element and
vanished: the tokens of the examples and n-grams are escaped once the text report is written.
"""

import contextlib
import html
import os
from collections import Counter
from typing import Dict, List, Optional


def escape_tokens(report) -> None:
    """HTML-escape the tokens a compare-mt report shows (its examples, its n-grams), in place.
    Escaping is one-to-one, so the n-gram counts stay keyed as they were."""
    esc = lambda words: [html.escape(w) for w in words]  # noqa: E731
    if hasattr(report, "outs"):  # SentenceExampleReport
        report.ref = [esc(s) for s in report.ref]
        report.outs = [[esc(s) for s in out] for out in report.outs]
        if report.src:
            report.src = [esc(s) if s else s for s in report.src]
    if hasattr(report, "scorelist"):  # NgramReport
        report.scorelist = [[(tuple(esc(k)), v) for k, v in scores] for scores in report.scorelist]
        report.matches = [Counter({tuple(esc(k)): v for k, v in m.items()}) for m in report.matches]


def write(systems: Dict, refs: List[str], baseline: str, out: str, lowercase: bool = False,
          which: Optional[str] = None) -> str:
    """compare-mt's report of `systems` (runs.Runs, first seed) against `baseline` into `out`;
    its text report goes to out/report.txt. `refs`: the one reference it reads; `which`: which
    of several it is, said at the top of both reports. Returns the path of index.html."""
    from compare_mt import compare_mt_main as cmt
    from compare_mt import reporters

    names = [baseline] + [n for n in systems if n != baseline]
    ref = [r.split() for r in refs]
    outs = [[h.split() for h in systems[n].hyps[0]] for n in names]
    # compare-mt keeps the system names and figure size as module globals (as its own main does)
    reporters.sys_names = [systems[n].label for n in names]
    reporters.fig_size = (6.0, 4.5)
    # its bar charts take each system's colour from a list of 8 (reporters.bar_colors) and fail past
    # it (the demo's --full compares 12 rows): the list is extended with matplotlib's tab20 colours
    if len(names) > len(reporters.bar_colors):
        from matplotlib import colormaps, colors
        palette = list(reporters.bar_colors) + [colors.to_hex(c) for c in colormaps["tab20"].colors]
        reporters.bar_colors = [palette[i % len(palette)] for i in range(len(names))]
    directions = ";".join(f"0-{i}" for i in range(1, len(names)))  # every system against the baseline
    os.makedirs(out, exist_ok=True)
    said = f"One reference: {which}." if which else ""
    with open(os.path.join(out, "report.txt"), "w") as text, contextlib.redirect_stdout(text):
        if said:
            print(said + "\n")
        reports = [
            ("Word Accuracies", [cmt.generate_word_accuracy_report(ref, outs, bucket_type="freq",
                                                                   case_insensitive=lowercase)]),
            ("Sentence Buckets", [cmt.generate_sentence_bucketed_report(
                ref, outs, None, bucket_type="length", statistic_type="score", score_measure="bleu",
                case_insensitive=lowercase)]),
        ]
        if len(names) > 1:
            reports += [
                ("Characteristic N-grams", [cmt.generate_ngram_report(ref, outs, compare_type="match",
                                                                      compare_directions=directions,
                                                                      case_insensitive=lowercase)]),
                # one report per system: compare-mt's HTML of a report shows its last comparison only
                ("Sentence Examples", [cmt.generate_sentence_examples(ref, outs, None, score_type="sentbleu",
                                                                      compare_directions=f"0-{i}",
                                                                      case_insensitive=lowercase)
                                       for i in range(1, len(names))]),
            ]
    for _, rs in reports:
        for r in rs:
            escape_tokens(r)
    title = "mgsa-compare: compare-mt report" + (f". {html.escape(said)}" if said else "")
    reporters.generate_html_report(reports, out, title)
    return os.path.join(out, "index.html")
