"""How often a treebank's own word segmentation and the pipeline's differ, on the treebank's sentences.

    python -m mgsa_preprocess.parser_training.segment_check TREES [--out report.json] [--user-dict FILE]

A parser trained on a treebank (Sinica's words) parses the words of the pipeline's segmenter
(mgsa-segment-zh: jieba) at preprocessing time. Where the two segment a sentence differently the
parser meets words, and word boundaries, it was not trained on. This measures that on the
treebank's own sentences: each tree's leaves are joined into the sentence's text and segmented
again by mgsa-segment-zh's Segmenter (preprocess/segment_zh.py: jieba's dictionary and HMM over
runs of Chinese characters, punctuation and Latin/digit runs as tokens of their own), and the two
word sequences are compared: sentences segmented identically, and the segmenter's words scored
against the treebank's (precision, recall, F1 of the words as character spans).
"""

import argparse
import json
import sys

from ..errors import PreprocessError


def spans(words):
    """Words as (start, end) character spans of their sentence."""
    out, i = set(), 0
    for w in words:
        out.add((i, i + len(w)))
        i += len(w)
    return out


def compare(sentences, segment) -> dict:
    """`sentences`: lists of words (the treebank's); `segment(text) -> words`. The counts and scores."""
    same = gold_words = test_words = common = 0
    changed_length = 0
    for words in sentences:
        text = "".join(words)
        other = [w for w in segment(text) if w.strip()]
        if "".join(other) != text.replace(" ", ""):
            changed_length += 1  # not expected: the segmenter keeps every character
        same += other == list(words)
        g, t = spans(words), spans(other)
        gold_words += len(g)
        test_words += len(t)
        common += len(g & t)
    n = len(sentences)
    p = common / test_words if test_words else 0.0
    r = common / gold_words if gold_words else 0.0
    return {"sentences": n, "identical_sentences": same, "identical_percent": round(100 * same / n, 2) if n else 0.0,
            "treebank_words": gold_words, "segmenter_words": test_words, "words_in_both": common,
            "word_precision": round(100 * p, 2), "word_recall": round(100 * r, 2),
            "word_f1": round(200 * p * r / (p + r), 2) if p + r else 0.0, "text_changed": changed_length}


def pipeline_segmenter(user_dict=None):
    """mgsa-segment-zh's segmentation of one line (its tokens)."""
    from ..segment_zh import Segmenter

    return Segmenter(user_dict=user_dict).tokens


def main(argv=None):
    from .treebank import FORMATS, read_treebank

    p = argparse.ArgumentParser(prog="python -m mgsa_preprocess.parser_training.segment_check",
                                description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("trees", help="a treebank file")
    p.add_argument("--treebank-format", choices=FORMATS, default="ptb")
    p.add_argument("--out", help="write the figures here (JSON)")
    p.add_argument("--user-dict", help="a jieba user dictionary, as mgsa-segment-zh --user-dict")
    a = p.parse_args(argv)
    try:
        trees, _ = read_treebank(a.trees, fmt=a.treebank_format)
        report = compare([t.words for t in trees], pipeline_segmenter(a.user_dict))
    except PreprocessError as e:
        sys.exit(f"segment_check: error: {e}")
    report["trees"] = a.trees
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=2)
    print(f"{a.trees}: {report['identical_sentences']} of {report['sentences']} sentences "
          f"({report['identical_percent']}%) segmented by mgsa-segment-zh as the treebank segments them; words: "
          f"precision "
          f"{report['word_precision']}, recall {report['word_recall']}, F1 {report['word_f1']} "
          f"({report['segmenter_words']} segmenter words, {report['treebank_words']} treebank words)")


if __name__ == "__main__":
    main()
