"""Throughput of mgsa-preprocess's CPU work, the parser excluded (docs/preprocessing.md, "Speed").

Times ``mgsa_preprocess.binarize.write_split``, the code ``mgsa-preprocess`` runs per split, on
generated BPE-like input in two tree forms: ``one-line`` (``(ROOT (S ...))`` a line, as a parser
writes them) and ``ptb`` (multi-line indented trees, an unlabeled outer bracket, function tags and
indices on labels, ``-NONE-`` traces). Writes ``benchmarks/runs/preprocess.json`` (or ``--out``).

    python -m benchmarks.bench_preprocess [--sentences 100000] [--workers 1]
"""

import argparse
import os
import platform
import random
import tempfile
import time

from mgsa_preprocess.binarize import PhraseJob, TagTable, commit_split, write_split
from mgsa_preprocess.phrase_files import tag_dictionary_path
from mgsa_preprocess.report import SplitReport
from mgsa_preprocess.synthetic import Grammar
from benchmarks.run_outputs import default_out, write_json

TARGET = 10_000  # sentences/s per process (issue 3)


def segment(word: str) -> list:
    """A deterministic BPE-like split: words of 5+ letters in pieces of 3."""
    if len(word) < 5:
        return [word]
    pieces = [word[i:i + 3] for i in range(0, len(word), 3)]
    return [p + "@@" for p in pieces[:-1]] + [pieces[-1]]


FUNCTION_TAGS = {"NP": ["-SBJ", "-SBJ-1", "-TMP", ""], "PP": ["-LOC", "-CLR", "-DIR=2", ""], "VP": ["", ""]}


def ptb_form(node, rng: random.Random, depth: int = 0) -> str:
    """The tree as the PTB writes it: multi-line, function tags, a trace in some VPs."""
    if node.is_preterminal:
        return f"({node.label} {node.children})"
    label = node.label + rng.choice(FUNCTION_TAGS.get(node.label, [""]))
    parts = [ptb_form(c, rng, depth + 1) for c in node.children]
    if node.label == "VP" and rng.random() < 0.3:
        parts.append("(NP (-NONE- *T*-1))")
    pad = "\n" + "  " * (depth + 1)
    return f"({label} " + pad.join(parts) + ")"


def write_inputs(d: str, n: int, form: str, seed: int = 7):
    rng = random.Random(seed)
    grammar = Grammar(seed)
    with open(os.path.join(d, "train.src"), "w") as fs, open(os.path.join(d, "train.src.tree"), "w") as ft:
        for _ in range(n):
            tree = grammar.sentence()  # (ROOT (S ...))
            words = tree.leaves()
            fs.write(" ".join(p for w in words for p in segment(w)) + "\n")
            if form == "one-line":
                ft.write(tree.bracketed() + "\n")
            else:
                ft.write("( " + ptb_form(tree.children[0], rng, 0) + " )\n\n")


def run(n: int, form: str, workers: int, levels: int = 3) -> dict:
    with tempfile.TemporaryDirectory() as d:
        write_inputs(d, n, form)
        job = PhraseJob(src_path=os.path.join(d, "train.src"), tree_path=os.path.join(d, "train.src.tree"),
                        levels=levels, style="bpe")
        report = SplitReport("train", levels, job.src_path, job.tree_path)
        tags = TagTable()
        t0 = time.perf_counter()
        written = write_split(job, os.path.join(d, "train.src-tgt.src"), report, tags, workers=workers,
                              progress=False, is_train=True)
        commit_split(written)
        tags.dictionary.save(tag_dictionary_path(d, "src"))
        seconds = time.perf_counter() - t0
        assert report.sentences == n, (report.sentences, n)
        tree_bytes = os.path.getsize(job.tree_path)
    per_process = n / seconds / max(workers, 1)
    return {"form": form, "sentences": n, "workers": workers, "levels": levels, "seconds": round(seconds, 3),
            "sentences_per_second": round(n / seconds), "sentences_per_second_per_process": round(per_process),
            "subwords": report.subwords, "phrases_per_level": report.phrases, "tree_file_bytes": tree_bytes,
            "meets_target": per_process >= TARGET}


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sentences", type=int, default=100_000)
    p.add_argument("--workers", type=int, default=1, help="worker processes (per-process rate = total / workers)")
    p.add_argument("--out", default=default_out("preprocess.json"),
                   help="JSON output (default benchmarks/runs/preprocess.json)")
    return p


def main(argv=None):
    a = get_parser().parse_args(argv)
    results = []
    for form in ("one-line", "ptb"):
        r = run(a.sentences, form, a.workers)
        results.append(r)
        print(f"{form:9s} {r['sentences']} sentences in {r['seconds']:.2f}s: "
              f"{r['sentences_per_second_per_process']} sentences/s per process "
              f"({'meets' if r['meets_target'] else 'BELOW'} the {TARGET}/s target)")
    write_json(a.out, {"benchmark": "mgsa-preprocess CPU path (trees -> phrase files), parser excluded",
                       "target_sentences_per_second_per_process": TARGET,
                       "machine": {"python": platform.python_version(),
                                   "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
                       "results": results})
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
