"""Chinese trees given with --trees-suffix: Chinese leaves (segmented words, BPE inside them, full-width
punctuation) and the Penn Chinese Treebank's phrase labels (IP, VP, NP, CP, DNP, QP, LCP, ...) reach the
phrase files, the tag dictionary, the task's batches and the tag loss."""

import os

import torch
import torch.nn.functional as F
from fairseq import options, tasks
from fairseq.data import Dictionary, data_utils

from mgsa_preprocess.cli import main
from tests.paths import ROOT
from tests.preprocess.conftest import read_phrase_file, reference_levels
from tests.preprocess.zh_trees import corpus

SIZES = (("train", 60), ("valid", 10), ("test", 10))
LEVELS = 3
CTB_PHRASES = {"NP", "VP", "PP", "DNP", "CP", "QP", "LCP", "IP"}


def preprocess(tmp_path):
    from subword_nmt.learn_bpe import learn_bpe

    raw = tmp_path / "raw"
    gold = corpus(str(raw), SIZES, seed=5)
    codes = tmp_path / "codes"
    with open(raw / "train.zh", encoding="utf-8") as a, open(raw / "train.en") as b, \
            open(codes, "w", encoding="utf-8") as out:
        learn_bpe(a.readlines() + b.readlines(), out, 30)
    dest = tmp_path / "bin"
    main(["--source-lang", "zh", "--target-lang", "en", "--trainpref", f"{raw}/train", "--validpref",
          f"{raw}/valid", "--testpref", f"{raw}/test", "--destdir", str(dest), "--no-progress-bar",
          "--trees-suffix", "tree", "--bpe-codes", str(codes), "--levels", str(LEVELS)])
    return dest, gold


def pieces_per_word(dest, split):
    segmented = (dest / "bpe" / f"{split}.zh").read_text(encoding="utf-8").splitlines()
    return [[p.count("@@\x00") + 1 for p in (s + " ").replace("@@ ", "@@\x00").split(" ") if p] for s in segmented]


def test_chinese_labels_reach_the_phrase_files_the_tag_dictionary_and_the_loss(tmp_path):
    dest, gold = preprocess(tmp_path)
    src_dict = Dictionary.load(str(dest / "dict.zh.txt"))
    tag_dict = Dictionary.load(str(dest / "dict.zh.tags.txt"))
    # the tag dictionary: exactly the train split's phrase tags, by the partition's definition
    want_tags = {t for tree in gold["train"] for level in reference_levels(tree, LEVELS) for _, _, t in level}
    assert set(tag_dict.symbols[tag_dict.nspecial:]) == want_tags
    assert CTB_PHRASES - {"IP"} <= want_tags and "IP" in want_tags  # IP under CP, at level 3
    split_words = 0
    for split, trees in gold.items():
        prefix = str(dest / f"{split}.zh-en.zh")
        tokens = data_utils.load_indexed_dataset(prefix, src_dict, "mmap")
        pieces = pieces_per_word(dest, split)
        split_words += sum(n > 1 for words in pieces for n in words)
        for k in range(1, LEVELS + 1):
            for i, (tree, (lens, tags)) in enumerate(zip(trees, read_phrase_file(prefix, k))):
                want = reference_levels(tree, LEVELS)[k - 1]
                assert lens == [sum(pieces[i][s:e]) for s, e, _ in want], (split, i, k)
                assert [tag_dict[t] for t in tags] == [t for _, _, t in want], (split, i, k)
                assert sum(lens) == len(tokens[i]) - 1
    assert split_words > 0, "BPE split no Chinese word: a weak test"

    # the task's batches carry those tags, and the tag loss supervises them
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [
        str(dest), "--user-dir", os.path.join(ROOT, "fairseq_mgsa"), "--task", "mgsa_translation",
        "--arch", "mgsa_transformer_syntactic", "--criterion", "label_smoothed_cross_entropy_with_phrase_tags",
        "--label-smoothing", "0.1", "--phrase-tag-weight", "0.5", "--encoder-layers", "1", "--decoder-layers", "1",
        "--encoder-embed-dim", "16", "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32",
        "--decoder-ffn-embed-dim", "32", "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
        "--cpu", "--seed", "1"])
    task = tasks.setup_task(args)
    assert task.tag_dictionary.symbols == tag_dict.symbols
    task.load_dataset("valid")
    ds = task.dataset("valid")
    batch = ds.collater([ds[i] for i in range(4)])
    phrase_tags = batch["phrase_tags"]  # levels x B x M
    for b, i in enumerate(batch["id"].tolist()):
        for k, level in enumerate(reference_levels(gold["valid"][i], LEVELS)):
            row = [task.tag_dictionary[t] for t in phrase_tags[k, b].tolist() if t != task.tag_dictionary.pad()]
            assert row == [t for _, _, t in level]
    # the loss function over these targets, against cross-entropy by hand on the labels' ids
    from fairseq_mgsa.criterions.label_smoothed_cross_entropy_with_phrase_tags import phrase_tag_loss

    g = torch.Generator().manual_seed(0)
    width = phrase_tags.size(2) + 1  # the model's phrases: the sentence's and the end-of-sentence one
    logits = [(k + 1, torch.randn(len(batch["id"]), width, len(task.tag_dictionary), generator=g), None)
              for k in range(LEVELS)]
    loss, _, count = phrase_tag_loss(logits, phrase_tags, task.tag_dictionary.pad(), task.tag_dictionary.unk())
    expected, n = 0.0, 0
    for b, i in enumerate(batch["id"].tolist()):
        for k, level in enumerate(reference_levels(gold["valid"][i], LEVELS)):
            for p, (_, _, label) in enumerate(level):
                expected -= F.log_softmax(logits[k][1][b, p], -1)[task.tag_dictionary.index(label)].item()
                n += 1
    assert int(count) == n and abs(loss.item() - expected) < 1e-3 * max(1.0, abs(expected))
    # and the criterion, on the model's own tag logits, counts every phrase of the batch once per level
    model = task.build_model(args)
    criterion = task.build_criterion(args)
    _, _, log = criterion(model, batch)
    assert int(log["tag_count"]) == n and float(log["tag_loss"]) > 0
