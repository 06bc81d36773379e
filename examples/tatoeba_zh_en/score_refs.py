"""BLEU and chrF of one run's detokenized hypotheses against every reference of the test set.

    python examples/tatoeba_zh_en/score_refs.py --refs-tsv raw/test.refs.tsv --hyp results/RUN/hyp.detok [--run NAME]

The references are read as mgsa-compare reads --refs-tsv (fairseq_mgsa/analysis/compare/refs.py:
one sentence a line, one tab-separated field per reference, an empty field where a sentence has
fewer), and scored by sacrebleu's Python interface, where a missing reference is None: the
figures are those of mgsa-compare's table for the same files (13a, cased).
"""

import argparse
import sys

import sacrebleu

from fairseq_mgsa.analysis.compare.refs import CompareError, read_tsv


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--refs-tsv", required=True)
    p.add_argument("--hyp", required=True, help="detokenized hypotheses, one a line in the references' order")
    p.add_argument("--run", default="", help="the run's name, for the first line")
    a = p.parse_args(argv)
    try:
        streams = [r.lines for r in read_tsv(a.refs_tsv)]
    except CompareError as e:
        sys.exit(f"score_refs.py: error: {e}")
    with open(a.hyp, encoding="utf-8") as f:
        hyps = [line.rstrip("\n") for line in f]
    if len(hyps) != len(streams[0]):
        sys.exit(f"score_refs.py: error: {a.hyp}: {len(hyps)} lines, but {a.refs_tsv} has {len(streams[0])} "
                 "(one hypothesis a line, in the references' order, expected)")
    counts = [sum(s[i] is not None for s in streams) for i in range(len(hyps))]
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    b, c = bleu.corpus_score(hyps, streams), chrf.corpus_score(hyps, streams)
    print(f"run: {a.run}, test set: {len(hyps)} sentences, {sum(counts)} references "
          f"({sum(n > 1 for n in counts)} sentences with 2 to {max(counts)})")
    print(f"detokenized sacreBLEU, all references: {b.score:.2f} ({b}; {bleu.get_signature()})")
    print(f"chrF, all references: {c.score:.2f} ({chrf.get_signature()})")


if __name__ == "__main__":
    main()
