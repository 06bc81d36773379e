"""The demo's reading of fairseq-generate output and its section of docs/demo.md (run_demo.py
--update-docs). The scoring, table and plots are mgsa-compare's (fairseq_mgsa/analysis/compare/)."""

import re
from typing import List, Tuple

from fairseq_mgsa.analysis.compare import report as compare_report

DOCS_START = "<!-- demo-results:start (written by examples/demo/run_demo.py --update-docs) -->"
DOCS_END = "<!-- demo-results:end -->"
DOCS_START_PREFIX = "<!-- demo-results:start"


def read_generate(path: str, expected: int) -> Tuple[List[str], List[str]]:
    """Hypotheses and references from fairseq-generate output, in the test set's order;
    every test sentence must be there."""
    hyps, refs = {}, {}
    with open(path) as f:
        for line in f:
            if line.startswith("H-"):
                i, _, text = line.rstrip("\n").split("\t")
                hyps[int(i[2:])] = text
            elif line.startswith("T-"):
                i, text = line.rstrip("\n").split("\t")
                refs[int(i[2:])] = text
    if sorted(hyps) != list(range(expected)) or sorted(refs) != list(range(expected)):
        raise ValueError(f"{path}: {len(hyps)} hypotheses and {len(refs)} references for {expected} test sentences")
    return [hyps[i] for i in range(expected)], [refs[i] for i in range(expected)]


def docs_section(results: dict, images: str) -> str:
    s = results["setup"]
    parser = results.get("parser")
    parser_text = []
    if parser:
        t = parser["test"]
        parser_text = [
            "",
            f"Parser trees: `mgsa-train-parser` trained stanza's tagger and parser on the {parser['train_trees']} gold "
            f"training trees ({parser['tagger_steps']} tagger steps, {parser['parser_epochs']} parser epochs: "
            f"{parser['train_minutes']} min); on the test set its labeled bracket F1 is {t['f1']:.2f}. Rows marked "
            f"gold read the grammar's own trees (an oracle parser); rows marked parser read this parser's trees.",
        ]
    rule = results.get("stopping")
    training = f"{s['max_update']} updates per model" if not rule else (
        f"every run validated every {rule['validate_every']} updates and stopped after {rule['patience']} "
        f"validations without a new best {compare_report.rule_score(rule)}, or at the cap of {rule['max_update']} "
        f"updates")
    steps = s.get("step_minutes")
    steps = f" ({', '.join(f'{name} {minutes}' for name, minutes in steps.items())})" if steps else ""
    threads = f" with {s['threads']} thread{'s' if s['threads'] != 1 else ''} each" if s.get("threads") else ""
    load = s.get("load_average")
    load = (f", the machine's load average (1, 5, 15 min) {' '.join(map(str, load['start']))} at the start and "
            f"{' '.join(map(str, load['end']))} at the end") if load else ""
    subsets = []
    if results.get("subsets"):
        subsets = [compare_report.markdown(compare_report.subset_rows(results)), "",
                   compare_report.subset_notes(results), ""]
    return "\n".join([
        DOCS_START,
        f"Last run (`{s['command']}`): {s['train_sentences']} training and {s['test_sentences']} test sentences "
        f"from the grammar, {training}, training seeds {', '.join(map(str, s['seeds']))}, "
        f"{s['minutes']} minutes in all{steps}, {s['jobs']} models trained at once{threads}{load} (so speeds are a "
        f"rough guide: `benchmarks/bench_training.py` times the systems on identical batches).",
        *parser_text,
        "",
        compare_report.markdown(compare_report.rows(results)),
        "",
        compare_report.notes(results),
        "",
        *subsets,
        compare_report.markdown(compare_report.ngram_rows(results)),
        "",
        f"![BLEU by n-gram order]({images}/bleu_by_ngram_order.png) ![validation loss]({images}/valid_loss.png)",
        "",
        "sacrebleu: " + ", ".join(f"`{sig}`" for sig in results["signature"].values()),
        DOCS_END,
    ])


def update_docs(path: str, results: dict, images: str) -> None:
    """Rewrite the results section of `path` (docs/demo.md) between its markers, in place."""
    with open(path) as f:
        text = f.read()
    start = re.search(re.escape(DOCS_START_PREFIX) + r"[^\n]*-->", text)
    if start is None or DOCS_END not in text[start.end():]:
        raise ValueError(f"{path}: no results section between {DOCS_START!r} and {DOCS_END!r}")
    tail = text[start.end():].split(DOCS_END, 1)[1]
    with open(path, "w") as f:
        f.write(text[:start.start()] + docs_section(results, images) + tail)
