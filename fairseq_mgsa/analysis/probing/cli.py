"""mgsa-probe: the paper's probing tasks (Table 5) on any treebank or parsed corpus.

    mgsa-probe --trees corpus.tree [--text corpus.txt] --out probe-out \\
        [--checkpoint BASE=ckpt/base.pt --checkpoint SYN=ckpt/syn.pt --bpe subword_nmt --bpe-codes codes] \\
        [--scratch-systems transformer,mgsa_ngram,mgsa_syntactic_plain,mgsa_syntactic | none]

Labels (Voice, Tense, TSS, SPC, POS; labels.py) come from the trees, which are
split train/valid/test 10:1:1 by a seeded shuffle. Set-up 1 (--checkpoint, repeatable):
the frozen encoder of a trained checkpoint of any system, its top-layer states pooled
(mean over the sentence; mean over a word's subwords), and an MLP with early stopping on
valid. Set-up 2 (--scratch-systems): a 3-layer encoder of each registered system trained
with the MLP from scratch on word-level input; syntactic systems get phrase boundaries
only. Two controls show what the partition alone gives away (control.py): an
MLP on the top levels' boundaries, and the syntactic encoder (+ ON-LSTM) trained from
scratch with every word replaced by <unk>. Writes OUT/probing.md and .json.
"""

import argparse
import logging
import os
import sys
import tempfile
import time

import torch
import torch.nn as nn

from ... import systems as registry
from .control import boundary_features
from .labels import (SPLITS, TASKS, ProbeError, build_task, check_split, read_corpus, read_tree_texts,
                     split_indices)
from .table import CONTROLS, data_summary, markdown, write
from .train import MLP, collate, fit, pool, shuffled_chunks

# Set-up 2's rows: the paper's four (Table 5 rows 5-8), then every other registered system
# with an encoder self-attention of its own. name -> (label, registry system, extra model options)
SCRATCH = {
    "transformer": ("BASE (Transformer)", "transformer", ()),
    "mgsa_ngram": ("N-Gram Phrase (MG-SA n-gram)", "mgsa_ngram", ()),
    "mgsa_syntactic_plain": ("Syntactic Phrase (MG-SA syntactic, no interaction)", "mgsa_syntactic",
                             ("--mgsa-interaction", "none")),
    "mgsa_syntactic": ("Syntactic Phrase + Interaction (MG-SA syntactic + ON-LSTM)", "mgsa_syntactic", ()),
}
SCRATCH.update({s.name: (s.label, s.name, ()) for s in registry.SYSTEMS.values() if s.name not in SCRATCH})
CONTROL_SYSTEM = "mgsa_syntactic"


def parse_args(argv):
    p = argparse.ArgumentParser(prog="mgsa-probe", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n", 2)[2])
    p.add_argument("--trees", required=True, help="bracketed trees, one per sentence (multi-line trees allowed)")
    p.add_argument("--text", help="the tokenized sentences, one a line (default: the trees' leaves)")
    p.add_argument("--out", required=True, help="output directory (probing.md, probing.json)")
    p.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated, of {','.join(TASKS)}")
    p.add_argument("--split", default="10:1:1", help="train:valid:test ratio")
    p.add_argument("--seed", type=int, default=1, help="seed of the split, the initialisation and the batches")
    p.add_argument("--checkpoint", action="append", default=[], metavar="NAME=PATH",
                   help="set-up 1: a trained checkpoint, its row named NAME (repeatable)")
    p.add_argument("--data", help="the checkpoints' data directory (dictionaries), if not where they were trained")
    p.add_argument("--bpe", help="the checkpoints' BPE (as fairseq-interactive: subword_nmt, ...); "
                                 "default: the text is already what they read")
    p.add_argument("--bpe-codes", help="--bpe subword_nmt's codes file")
    p.add_argument("--bpe-separator", default="@@")
    p.add_argument("--scratch-systems", default=",".join(SCRATCH),
                   help=f"set-up 2's systems, or 'none' (default: all: {','.join(SCRATCH)})")
    p.add_argument("--no-control", action="store_true", help="leave out the partition-only control")
    p.add_argument("--levels", type=int, default=3, help="tree levels of the control's partition")
    p.add_argument("--epochs", type=int, default=30, help="set-up 1: MLP epochs at most")
    p.add_argument("--scratch-epochs", type=int, default=10, help="set-up 2 and control: epochs at most")
    p.add_argument("--patience", type=int, default=10,
                   help="set-up 1 and the boundary control: epochs without a better valid accuracy before stopping "
                        "(the MLP alone is cheap; on a small corpus a few epochs do not leave the majority class)")
    p.add_argument("--scratch-patience", type=int, default=3, help="the same for set-up 2 and the encoder control")
    p.add_argument("--batch-size", type=int, default=64, help="sentences per batch")
    p.add_argument("--word-batch-size", type=int, default=512,
                   help="words per batch of the MLP on fixed features (set-up 1, boundary control), word tasks")
    p.add_argument("--hidden", type=int, default=128, help="MLP hidden units")
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    a = p.parse_args(argv)
    a.tasks = [t.strip() for t in a.tasks.split(",") if t.strip()]
    for t in a.tasks:
        if t not in TASKS:
            p.error(f"--tasks: unknown task {t!r}; tasks: {', '.join(TASKS)}")
    try:
        a.ratio = [int(x) for x in a.split.split(":")]
        assert len(a.ratio) == 3 and min(a.ratio) > 0
    except (ValueError, AssertionError):
        p.error(f"--split {a.split!r}: expected three positive integers train:valid:test, e.g. 10:1:1")
    a.scratch = [] if a.scratch_systems == "none" else [s.strip() for s in a.scratch_systems.split(",") if s.strip()]
    for s in a.scratch:
        if s not in SCRATCH:
            p.error(f"--scratch-systems: unknown system {s!r}; known: {', '.join(SCRATCH)}")
    a.checkpoints = []
    for spec in a.checkpoint:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            p.error(f"--checkpoint {spec!r}: expected NAME=PATH")
        a.checkpoints.append((name, path))
    return a


def load_checkpoints(a, corpus, tree_texts, result):
    """Set-up 1's checkpoints loaded, and the sentences as each reads them, before any training:
    a file that is not a checkpoint, a wrong --data or a flood of <unk> (a BPE model read
    without --bpe) stops here. Only the encoders stay in memory."""
    from .encoders import FrozenEncoder, check_unknown

    loaded = []
    for name, path in a.checkpoints:
        frozen = FrozenEncoder(path, a.data, a.bpe, a.bpe_codes, a.bpe_separator, option=f"--checkpoint {name}")
        items = frozen.items(corpus, tree_texts)
        warning = check_unknown(frozen, a.bpe is not None)
        if warning:
            print(f"mgsa-probe: warning: {warning}", file=sys.stderr, flush=True)
            result["warnings"].append(warning)
        loaded.append((name, frozen, items))
    return loaded


def run_pretrained(name, frozen, items, a, task_data, result):
    """Set-up 1: features of the frozen encoder once, then an MLP per task."""
    t0 = time.time()
    sent_feats, word_feats = frozen.features(items, a.batch_size, f"[probe] {name}: features")
    row = {"name": name, "label": name, "checkpoint": frozen.path, "syntactic": bool(frozen.levels),
           "unknown_token_rate": round(frozen.unknown / max(1, frozen.total), 4)}
    row.update(mlp_on_features(sent_feats, word_feats, a, task_data, name))
    row["seconds"] = round(time.time() - t0, 1)
    result["rows"].setdefault("pretrained", []).append(row)
    return row


def mlp_on_features(sent_feats, word_feats, a, task_data, name) -> dict:
    """An MLP per task on fixed features (sentence: N x C; word: per sentence W_i x C)."""
    row = {"test": {}, "valid": {}, "epochs": {}}
    for t, data in task_data.items():
        xs, ys = {}, {}
        for s in SPLITS:
            if data.word_level:
                xs[s] = torch.cat([word_feats[i] for i in data.ids[s]])
                ys[s] = torch.tensor(data.flat(s), dtype=torch.long)
            else:
                xs[s], ys[s] = sent_feats[data.ids[s]], torch.tensor(data.labels[s], dtype=torch.long)
        torch.manual_seed(a.seed)
        mlp = MLP(xs["train"].size(1), len(data.classes), a.hidden, a.dropout)
        size = a.word_batch_size if data.word_level else a.batch_size

        def chunks(s, seed=None):
            order = (shuffled_chunks(len(ys[s]), size, seed) if seed is not None  # train, reshuffled per epoch
                     else torch.arange(len(ys[s])).split(4096))
            return [(xs[s][i], ys[s][i]) for i in order]

        r = fit(mlp, lambda b: (mlp(b[0]), b[1]), lambda e: chunks("train", a.seed * 1000 + e), chunks("valid"),
                chunks("test"), a.epochs, a.patience, a.lr, f"[probe] {name} {t}")
        row["test"][t], row["valid"][t], row["epochs"][t] = r.test, r.valid, r.epochs
    return row


class ScratchProbe(nn.Module):
    def __init__(self, encoder, classes: int, word_level: bool, hidden: int, dropout: float):
        super().__init__()
        self.encoder, self.word_level = encoder, word_level
        self.mlp = MLP(encoder.embed_tokens.embedding_dim, classes, hidden, dropout)

    def forward(self, batch):
        from .encoders import encode

        x, mask = encode(self.encoder, batch)  # B x T x C
        sentences, words = pool(x, mask, batch)
        return self.mlp(words if self.word_level else sentences), batch.targets


def run_scratch(key, a, corpus, splits, task_data, workdir, blind=False):
    """Set-up 2 (or the control, blind=True): per task, the system's 3-layer encoder and the MLP, trained together."""
    from .encoders import build_vocab, scratch_encoder, tag_vocab, word_items

    label, system_name, extra = SCRATCH[key]
    system = registry.get(system_name)
    vocab = build_vocab([corpus[i] for i in splits["train"]])
    tags = tag_vocab(corpus, a.levels)
    t0 = time.time()
    row = {"name": key, "label": label, "system": system_name, "model_options": list(extra),
           "syntactic": system.needs_trees, "test": {}, "valid": {}, "epochs": {}}
    for t, data in task_data.items():
        torch.manual_seed(a.seed)
        encoder, levels = scratch_encoder(system, extra, vocab, tags, os.path.join(workdir, key))
        items = word_items(corpus, vocab, levels, blind=blind)
        probe = ScratchProbe(encoder, len(data.classes), data.word_level, a.hidden, a.dropout)

        def batch_of(s, ids):
            chosen = [data.ids[s][i] for i in ids]
            labels = [data.labels[s][i] for i in ids]
            targets = torch.tensor([c for x in labels for c in x] if data.word_level else labels, dtype=torch.long)
            return collate([items[i] for i in chosen], vocab.pad(), targets)

        def fixed(s):
            return [batch_of(s, ids.tolist()) for ids in torch.arange(len(data.ids[s])).split(a.batch_size)]

        def train(epoch):
            return (batch_of("train", ids.tolist())
                    for ids in shuffled_chunks(len(data.ids["train"]), a.batch_size, a.seed * 1000 + epoch))

        name = "control" if blind else key
        r = fit(probe, probe, train, fixed("valid"), fixed("test"), a.scratch_epochs, a.scratch_patience, a.lr,
                f"[probe] {name} {t}")
        row["test"][t], row["valid"][t], row["epochs"][t] = r.test, r.valid, r.epochs
    row["seconds"] = round(time.time() - t0, 1)
    return row


def probe(a):
    t_start = time.time()
    for path in [a.trees, a.text] + [p for _, p in a.checkpoints]:
        if path is not None and not os.path.exists(path):
            raise ProbeError("file not found", path)
    if a.data:
        from .encoders import check_data_option

        check_data_option(a.data)
    tree_texts = read_tree_texts(a.trees)
    corpus = read_corpus(a.trees, a.text, tree_texts)  # the files' own errors first
    check_split(len(corpus), a.ratio, a.trees)
    splits = split_indices(len(corpus), a.seed, a.ratio)
    task_data = {t: build_task(t, corpus, splits, a.trees) for t in a.tasks}  # errors before any training
    result = {"tasks": a.tasks, "rows": {}, "majority": {}, "labels": {}, "warnings": [],
              "data": {"trees": a.trees, "text": a.text, "sentences": len(corpus), "split": a.split,
                       "seed": a.seed, "split_sizes": {s: len(v) for s, v in splits.items()}},
              "settings": {k: getattr(a, k) for k in ("epochs", "scratch_epochs", "patience", "scratch_patience",
                                                      "batch_size", "word_batch_size", "hidden", "dropout", "lr",
                                                      "levels", "threads")}}
    checkpoints = load_checkpoints(a, corpus, tree_texts, result)
    for t, data in task_data.items():
        cls, acc = data.majority()
        result["majority"][t] = acc
        result["labels"][t] = {"classes": data.classes, "counts": data.counts, "majority_class": cls,
                               "dropped": data.dropped}
    print(data_summary(result), end="", flush=True)
    for name, frozen, items in checkpoints:
        run_pretrained(name, frozen, items, a, task_data, result)
    with tempfile.TemporaryDirectory(prefix="mgsa-probe-") as workdir:
        for key in a.scratch:
            result["rows"].setdefault("scratch", []).append(run_scratch(key, a, corpus, splits, task_data, workdir))
        syntactic = any(r["syntactic"] for rows in result["rows"].values() for r in rows)
        if syntactic and not a.no_control:
            t0 = time.time()
            sent_feats, word_feats = boundary_features(corpus, a.levels)
            result["control"] = dict(mlp_on_features(sent_feats, word_feats, a, task_data, "control (boundaries)"),
                                     name="boundaries", label=CONTROLS["boundaries"], levels=a.levels,
                                     seconds=round(time.time() - t0, 1))
            result["control_encoder"] = dict(run_scratch(CONTROL_SYSTEM, a, corpus, splits, task_data, workdir,
                                                         blind=True), label=CONTROLS["encoder"])
    result["minutes"] = round((time.time() - t_start) / 60, 2)
    paths = write(result, a.out)
    print(markdown(result), flush=True)
    print(f"[probe] done in {result['minutes']} min: {paths['markdown']}, {paths['json']}", flush=True)
    return result


def main(argv=None):
    a = parse_args(argv)
    torch.set_num_threads(a.threads)
    logging.getLogger().setLevel(logging.WARNING)  # fairseq logs every model it builds at INFO
    for name in ("fairseq", "fairseq_mgsa", "matplotlib"):
        logging.getLogger(name).setLevel(logging.WARNING)
    from mgsa_preprocess.errors import PreprocessError
    from mgsa_preprocess.progress import end_line

    from ...errors import MGSAError

    try:
        probe(a)
    except (PreprocessError, MGSAError) as e:
        end_line()
        print(f"mgsa-probe: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
