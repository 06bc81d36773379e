"""The phrase-tag classifier learns: after a short CPU run of fairseq-train, its accuracy
on held-out phrases (the valid split) is far above always predicting the most common tag.

lambda is 1 here, not the paper's 0.001, so that the tag loss shapes the classifier
within 100 updates; the classifier and the loss are the same at any weight."""

import collections
import os
import re
import subprocess
import sys

from fairseq.data import Dictionary, data_utils

from mgsa_preprocess.synthetic import write_corpus

from tests.paths import ROOT
LEVELS = 3


def run(cmd, cwd):
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-4000:]}"
    return proc.stdout


def majority_accuracy(data_bin, split):
    """Percentage of the split's supervised phrases that carry its most common tag."""
    tags = Dictionary.load(str(data_bin / "dict.src.tags.txt"))
    counts = collections.Counter()
    for k in range(1, LEVELS + 1):
        for item in data_utils.load_indexed_dataset(str(data_bin / f"{split}.src-tgt.src.syn{k}"), None):
            m = len(item) // 2
            counts.update(t for t in item[m:].tolist() if t not in (tags.pad(), tags.unk()))
    return 100.0 * counts.most_common(1)[0][1] / sum(counts.values()), sum(counts.values())


def test_tag_accuracy_on_held_out_phrases_beats_the_majority_tag(tmp_path):
    write_corpus(str(tmp_path / "raw"), (("train", 600), ("valid", 100)), seed=11)
    data_bin = tmp_path / "data-bin"
    run([sys.executable, "-m", "mgsa_preprocess.cli", "--source-lang", "src", "--target-lang", "tgt",
         "--trainpref", tmp_path / "raw" / "train", "--validpref", tmp_path / "raw" / "valid",
         "--trees-suffix", "tree", "--levels", str(LEVELS), "--subword-style", "none",
         "--destdir", data_bin, "--joined-dictionary", "--workers", "1"], ROOT)
    log = run(["fairseq-train", data_bin, "--user-dir", os.path.join(ROOT, "fairseq_mgsa"),
               "--task", "mgsa_translation", "--arch", "mgsa_transformer_syntactic",
               "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32",
               "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
               "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
               "--criterion", "label_smoothed_cross_entropy_with_phrase_tags", "--label-smoothing", "0.1",
               "--phrase-tag-weight", "1", "--optimizer", "adam", "--lr", "3e-3", "--max-tokens", "1500",
               "--max-update", "100", "--validate-interval", "1000", "--no-save", "--cpu", "--seed", "1",
               "--log-format", "simple", "--log-interval", "10"], tmp_path)

    valid = re.findall(r"valid on 'valid' subset .*\| tag_accuracy ([\d.]+)", log)
    assert len(valid) == 1, log[-3000:]  # validated once, after the last update
    first_train = float(re.findall(r"tag_accuracy=([\d.]+)", log)[0])
    majority, phrases = majority_accuracy(data_bin, "valid")
    assert phrases > 1000
    assert majority < 30.0  # the corpus has many tags: NP, VP, PP, DT, NN, ...
    assert first_train < majority + 15.0  # it starts near chance...
    assert float(valid[0]) > majority + 50.0  # ...and ends far above the majority tag on unseen phrases
