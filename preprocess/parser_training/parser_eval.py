"""Score a parser directory of mgsa-train-parser on gold trees: labeled bracket F1 by the project's
scorer and under evalb's convention, tag accuracy, and parsing speed.

    python -m mgsa_preprocess.parser_training.parser_eval --model DIR --trees test.mrg [--out scores.json]

The directory is loaded as mgsa-preprocess loads it (offline, one torch thread) and given the
gold trees' words; its trees are scored against the gold trees:

* `project`: preprocess/parser_training/bracket_score.py, both trees normalised as mgsa-preprocess reads
  them (one-word constituents collapsed, punctuation kept in the spans);
* `evalb`: preprocess/parser_training/evalb.py, COLLINS.prm's convention, the figure to set beside published
  parsers' (the gold tree as the file writes it: function tags and traces are removed there);
* tag accuracy: the predicted XPOS against the gold POS tags, every word counted;
* speed: sentences per second of the pipeline call alone (model loading excluded).
"""

import argparse
import json
import sys
import time

from ..errors import PreprocessError


def evaluate(model_dir: str, trees, pipeline=None, threads: int = 1) -> dict:
    """`trees`: train_parser.Tree list (normalised text, words, tags, raw text)."""
    import torch

    from .bracket_score import score_pairs
    from .evalb import evalb_score_pairs
    from ..stanza_model import load_pipeline

    if pipeline is None:
        pipeline = load_pipeline(model_dir)
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        t0 = time.perf_counter()
        doc = pipeline([t.words for t in trees])
        seconds = time.perf_counter() - t0
    finally:
        torch.set_num_threads(saved)
    parsed = ["{}".format(s.constituency) for s in doc.sentences]
    project = score_pairs(zip((t.text for t in trees), parsed))
    evalb, errors = evalb_score_pairs(zip((t.raw for t in trees), parsed))
    tagged = [(w.xpos == tag) for t, s in zip(trees, doc.sentences) for w, tag in zip(s.words, t.tags)]
    return dict(project.as_dict(), evalb=dict(evalb.as_dict(), error_sentences=errors),
                tag_accuracy=round(100 * sum(tagged) / len(tagged), 2),
                parse_seconds=round(seconds, 2), sentences_per_second=round(len(trees) / seconds, 1),
                threads=threads), parsed


def summary(scores: dict) -> str:
    return (f"labeled bracket F1 {scores['f1']:.2f} (evalb convention {scores['evalb']['f1']:.2f}), "
            f"tag accuracy {scores['tag_accuracy']:.2f}")


def main(argv=None):
    from .treebank import read_treebank

    p = argparse.ArgumentParser(prog="python -m mgsa_preprocess.parser_training.parser_eval", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, metavar="DIR", help="a directory written by mgsa-train-parser")
    p.add_argument("--trees", required=True, metavar="FILE", help="gold trees (bracketed; a tree may span lines)")
    p.add_argument("--treebank-format", choices=("ptb", "ctb", "sinica"), default="ptb",
                   help="how --trees is written (as mgsa-train-parser's option)")
    p.add_argument("--out", metavar="FILE", help="write the scores here as JSON")
    p.add_argument("--parsed", metavar="FILE", help="write the parsed trees here, one a line")
    p.add_argument("--threads", type=int, default=1, help="torch threads while parsing (default: 1)")
    a = p.parse_args(argv)
    try:
        trees, _ = read_treebank(a.trees, fmt=a.treebank_format)
        scores, parsed = evaluate(a.model, trees, threads=a.threads)
    except PreprocessError as e:
        sys.exit(f"parser_eval: error: {e}")
    scores.update(model=a.model, trees=a.trees)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(scores, f, indent=2)
    if a.parsed:
        with open(a.parsed, "w", encoding="utf-8") as f:
            f.writelines(t + "\n" for t in parsed)
    print(f"{a.trees}: {len(trees)} trees, {summary(scores)}, {scores['sentences_per_second']} sentences/s "
          f"({a.threads} thread{'s' if a.threads > 1 else ''})")


if __name__ == "__main__":
    main()
