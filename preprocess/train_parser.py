"""``mgsa-train-parser``: train stanza's POS tagger and constituency parser on a treebank, offline.

For a language or domain without a downloadable stanza model, or on a machine that
cannot download (these: DESIGN.md section 5), from PTB-format treebank files:

    mgsa-train-parser --train train.mrg --dev dev.mrg --out parser/
    mgsa-preprocess ... --parser stanza --stanza-dir parser/

Steps: the trees are read and normalised as mgsa-preprocess reads them (multi-line
trees, function tags, -NONE- elements: preprocess/trees.py), so the parser learns the
trees the phrase files are built from; word vectors are made (random vectors over
the training words, unless --wordvec is given); stanza's tagger learns the treebank's
tags (as XPOS) and stanza's constituency parser learns the trees, retagged by that
tagger as they will be at parsing time; the directory is then loaded as a stanza
pipeline, exactly as mgsa-preprocess loads it, and scored on the dev set.

stanza's trainers run in this process (their ``main(argv)``, the code behind
``python -m stanza.models.tagger`` / ``python -m stanza.models.constituency_parser``)
rather than as subprocesses, because two of their steps cannot run offline and must be
replaced for the duration of the call, which only works in-process (dev scoring by Java
CoreNLP, retagging with a downloaded tagger), and the parser's epochs are reported one
line each, also under --quiet: preprocess/stanza_offline.py.

Constituent labels of the dev trees that the (normalised) training trees lack are an
error before any training: stanza would stop on them only after the tagger has trained.
"""

import argparse
import logging
import os
import random
import re
import sys
import time
from collections import Counter
from typing import FrozenSet, List, NamedTuple

from .errors import PreprocessError
from .stanza_model import FILES, model_files, write_record
from .stanza_offline import EpochProgress, stanza_offline
from .trees import TreeStats, canonical_token, iter_tree_texts, parse_tree, strip_label

_ESCAPE = (("(", "-LRB-"), (")", "-RRB-"))


def _leaf(word: str) -> str:
    """A leaf as the pipeline will see the word (escapes undone), brackets escaped for the tree file."""
    word = canonical_token(word)
    for ch, esc in _ESCAPE:
        word = word.replace(ch, esc)
    return word


def bracketed(node, words) -> str:
    """One-line tree text of a normalised node (preprocess/trees.py's tuples)."""
    tag, start, _, children = node
    if children is None:
        return f"({tag} {_leaf(words[start])})"
    return f"({tag} " + " ".join(bracketed(c, words) for c in children) + ")"


class Tree(NamedTuple):
    text: str  # one line, under ROOT
    words: List[str]
    tags: List[str]
    line: int  # of the tree's first line in its file
    labels: FrozenSet[str]  # constituent labels, ROOT included (what stanza's trainer checks)


def read_treebank(path: str):
    """Normalised trees of a treebank file: [Tree], stats."""
    stats = TreeStats()
    out = []
    empty = 0
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise PreprocessError(f"cannot read the treebank: {e.strerror}", path) from None
    with f:
        for line, text in iter_tree_texts(f, path):
            top, leaves = parse_tree(text, path, line, stats)  # BadTree / PreprocessError name file and line
            if top is None:
                empty += 1
                continue
            words = [canonical_token(w) for w in leaves]
            tags = [None] * len(words)
            labels = {"ROOT"}
            stack = [top]
            while stack:
                tag, start, _, children = stack.pop()
                if children is None:
                    tags[start] = tag
                else:
                    labels.add(tag)
                    stack.extend(children)
            out.append(Tree(f"(ROOT {bracketed(top, leaves)})", words, tags, line, frozenset(labels)))
    if not out:
        raise PreprocessError("no tree with words in this file", path)
    return out, dict(stats.as_dict(), empty_trees_skipped=empty)


_INNER_LABEL = re.compile(r"\(\s*([^\s()]+)\s*\(")  # a label followed by a bracket: not a pre-terminal


def raw_label_counts(path: str) -> Counter:
    """Constituent labels as the file writes them (function tags stripped), before the
    normalisation drops constituents over one word or over empty elements only."""
    with open(path, encoding="utf-8") as f:
        return Counter(strip_label(m) for m in _INNER_LABEL.findall(f.read()))


def check_dev_labels(train_trees, dev_trees, train_path: str, dev_path: str, drop: bool):
    """The dev trees whose labels all occur in the training trees; an error naming the first
    other one, unless `drop`. Returns (dev trees kept, {label: dropped trees with it})."""
    known = frozenset().union(*(t.labels for t in train_trees))
    unseen = [t for t in dev_trees if not t.labels <= known]
    counts = Counter(label for t in unseen for label in t.labels - known)
    if unseen and not drop:
        first = unseen[0]
        label = min(first.labels - known)
        raw = raw_label_counts(train_path)[label]
        why = (f"{train_path} has {label} {raw} times, but each over a single word or over empty elements only, "
               f"which the normalisation collapses or removes (as mgsa-preprocess reads trees)" if raw
               else f"{train_path} has no {label}")
        others = ", ".join(f"{k} in {n}" for k, n in sorted(counts.items()))
        raise PreprocessError(f"constituent label {label} does not occur in the training trees ({why}), so the "
                              f"parser could never predict it; {len(unseen)} of {len(dev_trees)} dev trees have such "
                              f"labels ({others}): add trees with them to the training file, or pass "
                              f"--unseen-dev-labels drop to leave those dev trees out (counted)", dev_path, first.line)
    return [t for t in dev_trees if t.labels <= known], dict(sorted(counts.items()))


def write_conllu(trees, path: str) -> None:
    """The tagger's data: the treebank's tag in XPOS (what the parser reads) and in UPOS. stanza's
    scorer (UD's) wants a tree in HEAD/DEPREL: a flat one, every word under the first."""
    with open(path, "w", encoding="utf-8") as f:
        for _, words, tags, _, _ in trees:
            for i, (w, t) in enumerate(zip(words, tags), 1):
                head = "0\troot" if i == 1 else "1\tdep"
                f.write(f"{i}\t{w}\t_\t{t}\t{t}\t_\t{head}\t_\t_\n")
            f.write("\n")


def make_word_vectors(trees, out_pt: str, dim: int, seed: int, given: str = None) -> int:
    """stanza's pretrain file from --wordvec (word2vec text, optionally .xz/.gz) or, by default,
    random vectors over the training words: the tagger and parser fine-tune their own word
    embeddings on top, the fixed vectors only need to cover the vocabulary."""
    from stanza.models.common.pretrain import Pretrain

    made = given is None
    if made:
        counts = Counter(w for t in trees for w in t.words)
        rng = random.Random(seed)
        given = out_pt[:-3] + ".vec.txt"
        with open(given, "w", encoding="utf-8") as f:
            f.write(f"{len(counts)} {dim}\n")
            for w, _ in counts.most_common():
                f.write(w + " " + " ".join(f"{rng.gauss(0, 0.1):.4f}" for _ in range(dim)) + "\n")
    elif not os.path.isfile(given):
        raise PreprocessError("word vector file not found", given)
    if os.path.exists(out_pt):
        os.remove(out_pt)
    pretrain = Pretrain(out_pt, given, max_vocab=-1)
    pretrain.load()  # reads the text file, writes the .pt
    if made:
        os.remove(given)  # the .pt holds the same vectors
    return len(pretrain.vocab)


def default_parser_epochs(train_trees: int, batch_size: int) -> int:
    """About 2,000 updates, 4 to 20 epochs. 20 epochs of a small treebank are minutes; of 3,000
    trees of 25 words they were 2-3 hours on a 2-core machine, where the dev F1 of the PTB-shaped
    benchmark treebank was 92 after 2 epochs (docs/benchmarks-parser.md)."""
    return min(20, max(4, round(2000 * batch_size / train_trees)))


def get_parser():
    p = argparse.ArgumentParser(
        prog="mgsa-train-parser",
        description="Train stanza's POS tagger and constituency parser on PTB-format treebank files, offline, into "
                    "one directory that mgsa-preprocess --parser stanza --stanza-dir DIR and fairseq-interactive "
                    "--stanza-dir DIR load. Defaults: a small model (hidden size 64) and about 2,000 parser updates "
                    "(20 epochs of a few hundred trees, 7 of 3,000; times in docs/benchmarks-parser.md); each parser "
                    "epoch prints its dev F1 and times.")
    p.add_argument("--train", required=True, metavar="FILE", help="training trees (bracketed, a tree may span lines)")
    p.add_argument("--dev", required=True, metavar="FILE", help="dev trees: model selection and the reported score")
    p.add_argument("--out", required=True, metavar="DIR", help="model directory to write")
    p.add_argument("--lang", default="xx", help="language code stored with the model (default: xx)")
    p.add_argument("--wordvec", metavar="FILE", help="word vectors, word2vec text format (.xz/.gz too); default: "
                                                      "random vectors over the training words")
    p.add_argument("--wordvec-dim", type=int, default=50, help="dimension of the random vectors (default: 50)")
    p.add_argument("--tagger-steps", type=int, default=200, help="tagger updates (default: 200)")
    p.add_argument("--tagger-batch-size", type=int, default=100, help="words per tagger update (default: 100; "
                                                                      "stanza's: 250)")
    p.add_argument("--tagger-lr", type=float, default=0.01, help="tagger learning rate (default: 0.01; stanza's: "
                                                                 "0.003 for 50000 steps)")
    p.add_argument("--parser-batch-size", type=int, default=10,
                   help="trees per parser update (default: 10; stanza's: 30). 50 made an epoch of 3,000 trees 1.5 "
                        "times faster but learned less per epoch: a lower dev F1 at the same time "
                        "(docs/benchmarks-parser.md)")
    p.add_argument("--parser-epochs", type=int,
                   help="parser epochs, each one pass over the training trees (default: about 2,000 updates, at "
                        "least 4 and at most 20 epochs: 20 up to 1,000 trees, 7 for 3,000); the dev F1 of each epoch "
                        "is printed, so the time-quality trade is visible")
    p.add_argument("--hidden-size", type=int, default=64,
                   help="hidden size of the tagger's and the parser's layers (stanza's defaults: 200-512)")
    p.add_argument("--unseen-dev-labels", choices=["error", "drop"], default="error",
                   help="dev trees with a constituent label the training trees lack: stop before training with an "
                        "error naming the first (default), or drop them from the dev set (counted in the record)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (default: 1; stanza's small operations gain little from more, and a second "
                        "thread made parsing 9-16 times slower on a busy 2-core machine)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--quiet", action="store_true",
                   help="only this command's own progress lines and errors, not stanza's log")
    return p


def _stage(i, text):
    print(f"[mgsa-train-parser] {i}/5 {text}", flush=True)


def train(a) -> dict:
    import torch

    for name in ("tagger_steps", "tagger_batch_size", "parser_epochs", "parser_batch_size", "hidden_size",
                 "wordvec_dim", "threads"):
        if getattr(a, name) is not None and getattr(a, name) < 1:
            raise PreprocessError(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(a, name)})")
    torch.set_num_threads(a.threads)
    # stanza's trainers set their own loggers' levels (to DEBUG, some of them): --quiet mutes
    # records up to WARNING process-wide for the run instead
    logging.getLogger("stanza").setLevel(logging.INFO)
    if a.quiet:
        logging.disable(logging.WARNING)
    start = time.time()
    out = os.path.abspath(a.out)
    work = os.path.join(out, "training")
    os.makedirs(work, exist_ok=True)
    files = model_files(out)
    for key in ("pos", "constituency"):
        if os.path.exists(files[key]):
            os.remove(files[key])  # a rerun trains from scratch, never on top of an old model

    _stage(1, f"reading {a.train} and {a.dev}")
    train_trees, train_stats = read_treebank(a.train)
    dev_trees, dev_stats = read_treebank(a.dev)
    n_dev = len(dev_trees)
    dev_trees, unseen = check_dev_labels(train_trees, dev_trees, a.train, a.dev, a.unseen_dev_labels == "drop")
    if unseen:
        print(f"[mgsa-train-parser] --unseen-dev-labels drop: dropped {n_dev - len(dev_trees)} of {n_dev} dev trees "
              f"with constituent labels the training trees lack ("
              + ", ".join(f"{k} in {n}" for k, n in unseen.items()) + ")", flush=True)
        if not dev_trees:
            raise PreprocessError("no dev tree left after --unseen-dev-labels drop", a.dev)
    data = {}
    for split, trees in (("train", train_trees), ("dev", dev_trees)):
        data[split] = os.path.join(work, f"{split}.mrg"), os.path.join(work, f"{split}.conllu")
        with open(data[split][0], "w", encoding="utf-8") as f:
            f.writelines(t.text + "\n" for t in trees)
        write_conllu(trees, data[split][1])
    record = {"lang": a.lang, "files": dict(FILES), "train": os.path.abspath(a.train), "dev": os.path.abspath(a.dev),
              "train_trees": len(train_trees), "dev_trees": len(dev_trees),
              "dev_trees_dropped": {"trees": n_dev - len(dev_trees), "by_unseen_label": unseen},
              "normalisation": {"train": train_stats, "dev": dev_stats}}
    write_record(out, record)

    batch = a.parser_batch_size
    epochs = a.parser_epochs or default_parser_epochs(len(train_trees), batch)
    record.update(parser_batch_size=batch, parser_epochs_planned=epochs)
    _stage(2, "word vectors" + (f" from {a.wordvec}" if a.wordvec else f": random, dim {a.wordvec_dim}, "
                                                                       f"over the training words"))
    record["wordvec_vocab"] = make_word_vectors(train_trees, files["pretrain"], a.wordvec_dim, a.seed, a.wordvec)
    record["wordvec"] = os.path.abspath(a.wordvec) if a.wordvec else f"random, dim {a.wordvec_dim}"

    common = ["--lang", a.lang, "--shorthand", f"{a.lang}_mgsa", "--wordvec_pretrain_file", files["pretrain"],
              "--save_dir", out, "--seed", str(a.seed), "--device", a.device]
    hidden = str(a.hidden_size)
    _stage(3, f"POS tagger: stanza.models.tagger, {a.tagger_steps} steps")
    t0 = time.time()
    from stanza.models import tagger

    tagger.main(["--mode", "train", "--train_file", data["train"][1], "--eval_file", data["dev"][1],
                 "--output_file", os.path.join(work, "dev.pred.conllu"), "--save_name", FILES["pos"],
                 "--max_steps", str(a.tagger_steps), "--eval_interval", str(max(a.tagger_steps // 5, 1)),
                 "--fix_eval_interval", "--batch_size", str(a.tagger_batch_size), "--lr", str(a.tagger_lr),
                 "--hidden_dim", hidden, "--char_hidden_dim", hidden, "--deep_biaff_hidden_dim", hidden,
                 "--composite_deep_biaff_hidden_dim", hidden, "--word_emb_dim", "50", "--char_emb_dim", "50",
                 "--log_step", str(max(a.tagger_steps // 10, 1))] + common)
    record["tagger_seconds"] = round(time.time() - t0, 1)
    write_record(out, record)  # a run stopped during the parser's epochs keeps what it measured

    _stage(4, f"constituency parser: stanza.models.constituency_parser, {epochs} epochs of "
              f"{len(train_trees)} trees in batches of {batch}, dev F1 by preprocess/bracket_score.py")
    t0 = time.time()
    from stanza.models import constituency_parser

    progress = EpochProgress(epochs, jsonl=os.path.join(work, "parser_epochs.jsonl"))
    with stanza_offline(out, progress):
        constituency_parser.main(
            ["--mode", "train", "--train_file", data["train"][0], "--eval_file", data["dev"][0],
             "--save_name", FILES["constituency"], "--epochs", str(epochs), "--epoch_size", "0",
             "--train_batch_size", str(batch), "--hidden_size", hidden, "--delta_embedding_dim", "50",
             "--retag_method", "xpos", "--no_checkpoint"] + common)
    record["parser_seconds"] = round(time.time() - t0, 1)
    record["parser_setup_seconds"] = progress.setup_seconds  # reading, retagging, building the model
    record["parser_epochs"] = progress.rows

    _stage(5, "loading the directory as mgsa-preprocess does and scoring the dev set")
    from .bracket_score import score_pairs
    from .stanza_model import load_pipeline

    pipeline = load_pipeline(out)
    doc = pipeline([t.words for t in dev_trees])
    scores = score_pairs(((t.text, "{}".format(s.constituency)) for t, s in zip(dev_trees, doc.sentences)))
    tagged = [(w.xpos == tag) for t, s in zip(dev_trees, doc.sentences) for w, tag in zip(s.words, t.tags)]
    record["dev"] = dict(scores.as_dict(), tag_accuracy=round(100 * sum(tagged) / len(tagged), 2))
    record["seconds"] = round(time.time() - start, 1)
    record["bytes"] = {k: os.path.getsize(files[k]) for k in ("pretrain", "pos", "constituency")}
    write_record(out, record)
    print(f"[mgsa-train-parser] done in {record['seconds']:.0f} s: dev labeled bracket F1 {record['dev']['f1']:.2f}, "
          f"tag accuracy {record['dev']['tag_accuracy']:.2f}, {sum(record['bytes'].values()) / 1e6:.1f} MB -> {out}",
          flush=True)
    return record


def main(argv=None):
    a = get_parser().parse_args(argv)
    try:
        train(a)
    except PreprocessError as e:
        print(f"mgsa-train-parser: error: {e}", file=sys.stderr)
        sys.exit(1)
    finally:
        logging.disable(logging.NOTSET)


if __name__ == "__main__":
    main()
