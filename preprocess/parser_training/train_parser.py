"""``mgsa-train-parser``: train stanza's POS tagger and constituency parser on a treebank, offline.

For a language or domain without a downloadable stanza model, or on a machine that
cannot download stanza's models, from bracketed treebank files (or, with --treebank-format, the
Penn Chinese Treebank's files as distributed or the Sinica Treebank's ICG lines: treebank.py):

    mgsa-train-parser --train train.mrg --dev dev.mrg --out parser/
    mgsa-preprocess ... --parser stanza --stanza-dir parser/

Steps: the trees are read and normalised (preprocess/parser_training/treebank.py); word vectors are
learned from --wordvec-text, read from --wordvec, or random (preprocess/parser_training/word_vectors.py);
stanza's tagger learns the treebank's tags (as XPOS) and stanza's constituency parser
learns the trees, retagged by that tagger as they will be at parsing time, each until its
dev score stops improving or its step (epoch) cap, and a time cap only where one is asked for
(preprocess/parser_training/stopping.py); the directory is then loaded as a stanza pipeline, exactly as
mgsa-preprocess loads it, and scored on the dev set (and --test), by the project's scorer and
under evalb's convention (parser_eval.py). A cap that ends training while the dev score still
rises is a warning, in the final line and in the record (`warnings`).

Every input is read and checked before anything is written, --out included: a new or empty
folder, or a model directory this command wrote, holding none of the inputs (stanza_model.py's
check_out_dir). The new model is built in OUT/partial/ and replaces the one in OUT (if any) only
once it is complete and scored, so a failed or stopped run leaves the old model usable; only the
files the old model's record lists as made are replaced, nothing else in OUT is touched.

stanza's trainers run in this process (their ``main(argv)``, the code behind
``python -m stanza.models.tagger`` / ``python -m stanza.models.constituency_parser``)
rather than as subprocesses, because two of their steps cannot run offline and must be
replaced for the duration of the call, which only works in-process (dev scoring by Java
CoreNLP, retagging with a downloaded tagger), and the parser's epochs are reported one
line each, also under --quiet: preprocess/parser_training/stanza_offline.py.

"""

import argparse
import logging
import os
import sys
import time

from ..errors import PreprocessError
from ..stanza_model import FILES, check_out_dir, install_model, model_files, staging_dir, write_record
from .stanza_offline import EpochProgress, stanza_offline
from .stopping import Plateau, StopTraining, tagger_stopping
from .treebank import FORMATS, read_inputs, read_treebank, write_conllu
from .word_vectors import check_text, check_vectors, random_vectors, train_word2vec, write_pretrain

TAGGER_EVALS = 10  # the tagger's default step cap, in dev evaluations (tagger_schedule)


def default_parser_epochs(train_trees: int, batch_size: int) -> int:
    """At most about 6,000 updates, 4 to 30 epochs (19 for the WSJ sample's 3,114 trees). stanza's
    multistage training switches optimizer after half of them; on the WSJ sample its first stage
    gained 2-3 F1 an epoch up to the switch and the second about 1. With 13 epochs (the switch
    after 6) an idle machine's run stopped on its plateau at 78.9 test F1 in 15 minutes; with 19
    (the switch after 9) at 82.3 in 21 minutes, within the 27 the old time caps allowed
    (docs/benchmarks-parser.md)."""
    return min(30, max(4, round(6000 * batch_size / train_trees)))


def get_parser():
    p = argparse.ArgumentParser(
        prog="mgsa-train-parser",
        description="Train stanza's POS tagger and constituency parser on treebank files (bracketed; or the Penn "
                    "Chinese Treebank as distributed, or the Sinica Treebank's ICG lines: --treebank-format), offline, into "
                    "one directory that mgsa-preprocess --parser stanza --stanza-dir DIR and fairseq-interactive "
                    "--stanza-dir DIR load. Defaults chosen on the Penn Treebank's WSJ sample (3,114 training trees; "
                    "docs/benchmarks-parser.md): a small model (hidden size 64, the tagger's 128); the tagger and the parser each "
                    "trained until their dev score stops improving or their step (epoch) cap, keeping the best, so "
                    "that the model does not depend on the machine's load; a time cap only when asked for; one "
                    "progress line per dev evaluation. The model in --out is replaced only once the new one is "
                    "complete.")
    p.add_argument("--train", required=True, metavar="FILE", help="training trees (bracketed, a tree may span lines)")
    p.add_argument("--dev", required=True, metavar="FILE", help="dev trees: model selection and the reported score")
    p.add_argument("--test", metavar="FILE", help="test trees: the final model is scored on them too (record 'test')")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="model directory to write: a new or empty folder, or one this command wrote, in which only "
                        "the files it made are replaced (its record lists them); never a folder holding an input")
    p.add_argument("--lang", default="xx",
                   help="language code stored with the model and given to stanza's trainers and pipeline (default: xx; "
                        "zh for Chinese: the trees' leaves are then the words of segmented text, which mgsa-preprocess "
                        "gives the parser as they are)")
    p.add_argument("--treebank-format", choices=FORMATS, default="ptb",
                   help="how --train, --dev and --test are written: ptb, bracketed trees (default); ctb, the Penn "
                        "Chinese Treebank as distributed (SGML wrappers such as <DOC> and <S ID=1> removed, then "
                        "normalised as ptb: -NONE- elements, function tags IP-HLN, NP-SBJ-1); sinica, the Sinica "
                        "Treebank's ICG lines (NLTK's sample: roles dropped, words to Simplified characters, "
                        "docs/preprocessing.md). What was removed is counted in the record ('normalisation')")
    vec = p.add_mutually_exclusive_group()
    vec.add_argument("--wordvec-text", metavar="FILE",
                     help="learn word vectors from this text (gensim word2vec; one sentence a line, tokenized as the "
                          "treebank is, .gz too), for example the NMT corpus's source side; the training trees' "
                          "sentences are added to it. Default: random vectors over the training words")
    vec.add_argument("--wordvec", metavar="FILE", help="word vectors made elsewhere, word2vec text format (.xz/.gz too)")
    p.add_argument("--wordvec-dim", type=int,
                   help="dimension of the learned or random vectors (default: 100 learned, 50 random)")
    p.add_argument("--wordvec-epochs", type=int, default=10, help="word2vec passes over the text (default: 10)")
    p.add_argument("--tagger-steps", type=int,
                   help=f"tagger updates at most (default: {TAGGER_EVALS} evaluation intervals, each one pass over "
                        f"the training sentences, at most 500 steps: 980 steps on the WSJ sample's 3,114 trees)")
    p.add_argument("--tagger-batch-size", type=int, default=32, help="sentences per tagger update (default: 32; "
                                                                     "stanza's: 250)")
    p.add_argument("--tagger-lr", type=float, default=0.01, help="tagger learning rate (default: 0.01; stanza's: "
                                                                 "0.003 for 50000 steps)")
    p.add_argument("--tagger-hidden-size", type=int,
                   help="hidden size of the tagger's layers (default: twice --hidden-size, 128). At 64 with dropout "
                        "0.5 the tagger stopped at 93%% dev accuracy on the WSJ sample; at 128 with dropout 0.25, "
                        "95.7%% in as many steps (docs/benchmarks-parser.md)")
    p.add_argument("--tagger-dropout", type=float, default=0.25,
                   help="dropout of the tagger's layers (default: 0.25; stanza's: 0.5)")
    p.add_argument("--tagger-word-cutoff", type=int, default=1,
                   help="training words seen fewer times get no embedding of the tagger's own (they are read by "
                        "their characters and fixed vectors only). Default: 1, every word; stanza's: 7 with a large "
                        "vector file, which on 3,000 trees left most word types without one")
    p.add_argument("--tagger-eval-interval", type=int,
                   help="tagger updates between dev evaluations (default: one pass over the training sentences, "
                        "at most 500 and at most a quarter of --tagger-steps)")
    p.add_argument("--tagger-patience", type=int, default=3,
                   help="stop the tagger after this many dev evaluations without a new best (default: 3)")
    p.add_argument("--tagger-minutes", type=float,
                   help="a time cap for the tagger: no evaluation interval starts that would end past it (default: "
                        "none: the model then depends on the machine's speed and load)")
    p.add_argument("--parser-batch-size", type=int, default=10,
                   help="trees per parser update (default: 10; stanza's: 30). 50 made an epoch of 3,000 trees 1.5 "
                        "times faster but learned less per epoch: a lower dev F1 at the same time "
                        "(docs/benchmarks-parser.md)")
    p.add_argument("--parser-epochs", type=int,
                   help="parser epochs at most, each one pass over the training trees (default: about 6,000 updates, "
                        "at least 4 and at most 30 epochs: 30 up to 2,000 trees, 19 for 3,114); stanza switches "
                        "optimizer after half of them")
    p.add_argument("--parser-patience", type=int, default=3,
                   help="stop the parser after this many epochs without a new best dev F1, counted from stanza's "
                        "optimizer switch at half of --parser-epochs (default: 3)")
    p.add_argument("--parser-minutes", type=float,
                   help="a time cap for the parser, its setup included: no epoch starts that would end past it "
                        "(default: none: the model then depends on the machine's speed and load)")
    p.add_argument("--one-word-constituents", choices=["keep", "collapse"], default="keep",
                   help="constituents over a single word, (NP (PRP it)): the parser learns them (keep, the default: "
                        "as published parsers do, so that its evalb-convention F1 compares with theirs), or learns the "
                        "trees as mgsa-preprocess reads them, collapsed to the word's tag (collapse). mgsa-preprocess "
                        "collapses them either way when it reads the parser's trees")
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


def _check(a):
    if a.tagger_word_cutoff < 0:
        raise PreprocessError(f"--tagger-word-cutoff must be at least 0 (got {a.tagger_word_cutoff})")
    for name in ("tagger_steps", "tagger_batch_size", "tagger_eval_interval", "tagger_patience", "parser_epochs",
                 "parser_batch_size", "parser_patience", "hidden_size", "tagger_hidden_size", "wordvec_dim",
                 "wordvec_epochs", "threads"):
        if getattr(a, name) is not None and getattr(a, name) < 1:
            raise PreprocessError(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(a, name)})")
    if not 0 <= a.tagger_dropout < 1:
        raise PreprocessError(f"--tagger-dropout must be in [0, 1) (got {a.tagger_dropout})")
    for name in ("tagger_minutes", "parser_minutes"):
        if getattr(a, name) is not None and getattr(a, name) <= 0:
            raise PreprocessError(f"--{name.replace('_', '-')} must be positive (got {getattr(a, name)})")
    replaces = check_out_dir(a.out, {"--train": a.train, "--dev": a.dev, "--test": a.test,
                                     "--wordvec-text": a.wordvec_text, "--wordvec": a.wordvec})
    if a.wordvec_text:
        check_text(a.wordvec_text)
    if a.wordvec:
        check_vectors(a.wordvec)
    if a.test:
        read_treebank(a.test, fmt=a.treebank_format)  # a bad test file fails now, not after the training
    return replaces


def word_vectors(a, train_trees, pretrain_pt: str, record: dict) -> None:
    """stanza's pretrain file: from --wordvec, learned from --wordvec-text, or random."""
    if a.wordvec:
        _stage(2, f"word vectors from {a.wordvec}")
        record["wordvec"] = {"file": os.path.abspath(a.wordvec)}
        record["wordvec"]["vocab"] = write_pretrain(a.wordvec, pretrain_pt)
        return
    txt = pretrain_pt[:-3] + ".vec.txt"
    t0 = time.time()
    if a.wordvec_text:
        dim = a.wordvec_dim or 100
        _stage(2, f"word vectors: gensim word2vec, dim {dim}, {a.wordvec_epochs} epochs over {a.wordvec_text} and "
                  f"the training trees' sentences")
        record["wordvec"] = train_word2vec(a.wordvec_text, [t.words for t in train_trees], txt, dim,
                                           a.wordvec_epochs, a.seed)
    else:
        dim = a.wordvec_dim or 50
        _stage(2, f"word vectors: random, dim {dim}, over the training words")
        random_vectors([t.words for t in train_trees], txt, dim, a.seed)
        record["wordvec"] = {"method": "random", "dim": dim}
    record["wordvec"]["vocab"] = write_pretrain(txt, pretrain_pt)
    os.remove(txt)  # the .pt holds the same vectors
    record["wordvec"]["seconds"] = round(time.time() - t0, 1)


def tagger_hidden_size(a) -> int:
    """--tagger-hidden-size, by default twice --hidden-size: the tagger needs the width to use the
    words' context (docs/benchmarks-parser.md), and scales down with --hidden-size in small runs."""
    return a.tagger_hidden_size or 2 * a.hidden_size


def tagger_schedule(a, train_trees: int):
    """(steps between dev evaluations, steps at most) of the tagger. By default an evaluation after
    each pass over the training sentences (at most 500 steps) and TAGGER_EVALS of them: 980 steps
    on the WSJ sample (3,114 sentences in batches of 32), as many as the old 7-minute cap gave it,
    where the tagger reached 95.7% dev accuracy (docs/benchmarks-parser.md). With --tagger-steps,
    at least 4 evaluations in them."""
    one_pass = -(-train_trees // a.tagger_batch_size)
    if a.tagger_steps is None:
        interval = a.tagger_eval_interval or min(500, one_pass)
        return interval, TAGGER_EVALS * interval
    return a.tagger_eval_interval or max(1, min(500, one_pass, a.tagger_steps // 4)), a.tagger_steps


def train_tagger(a, data, files, common, hidden, record) -> None:
    from stanza.models import tagger

    interval, steps = tagger_schedule(a, record["train_trees"])
    rule = Plateau(a.tagger_patience, a.tagger_minutes and 60 * a.tagger_minutes)
    _stage(3, f"POS tagger: stanza.models.tagger, batches of {a.tagger_batch_size} sentences, dev accuracy every "
              f"{interval} steps, until {a.tagger_patience} evaluations bring no new best or {steps} steps"
              + (f" or {a.tagger_minutes:g} minutes" if a.tagger_minutes else ""))
    t0 = time.time()
    try:
        with tagger_stopping(rule, interval, steps):
            tagger.main(["--mode", "train", "--train_file", data["train"][1], "--eval_file", data["dev"][1],
                         "--output_file", os.path.join(a.work, "dev.pred.conllu"), "--save_name", FILES["pos"],
                         "--max_steps", str(steps), "--eval_interval", str(interval), "--fix_eval_interval",
                         "--max_steps_before_stop", str(steps + 1), "--no_second_optim",
                         "--batch_size", str(a.tagger_batch_size), "--lr", str(a.tagger_lr),
                         "--word_cutoff", str(a.tagger_word_cutoff),
                         "--dropout", str(a.tagger_dropout),
                         "--hidden_dim", hidden, "--char_hidden_dim", hidden, "--deep_biaff_hidden_dim", hidden,
                         "--composite_deep_biaff_hidden_dim", hidden, "--word_emb_dim", "50", "--char_emb_dim", "50",
                         "--log_step", str(interval)] + common)
    except StopTraining:
        pass
    best_step = (rule.best_index + 1) * interval if rule.scores else None
    cap = "the time cap (--tagger-minutes)" if rule.stopped_by == "time cap" else \
        f"the step cap ({steps} steps, --tagger-steps)"
    record["tagger"] = {"seconds": round(time.time() - t0, 1), "eval_interval": interval, "max_steps": steps,
                        "stopped": rule.reason or f"step cap: {steps} steps (--tagger-steps)",
                        "dev_accuracy": [round(x, 2) for x in rule.scores], "dev_seconds": rule.seconds,
                        "best_step": best_step}
    record["tagger_seconds"] = record["tagger"]["seconds"]
    if rule.cut_while_rising():
        record["warnings"].append(
            f"{cap} stopped the tagger while its dev accuracy still rose (best {rule.best:.2f} at step {best_step}, "
            f"{len(rule.scores) - 1 - rule.best_index} evaluations before the last; patience {a.tagger_patience}): "
            f"more steps may give better tags")


def train_parser(a, data, model_dir, files, common, hidden, record) -> None:
    from stanza.models import constituency_parser
    from stanza.utils.constituency import condense_output_layers

    batch = a.parser_batch_size
    epochs = a.parser_epochs or default_parser_epochs(record["train_trees"], batch)
    record.update(parser_batch_size=batch, parser_epochs_planned=epochs)
    _stage(4, f"constituency parser: stanza.models.constituency_parser, at most {epochs} epochs of "
              f"{record['train_trees']} trees in batches of {batch} (optimizer switch after {epochs // 2}), until "
              f"{a.parser_patience} epochs bring no new best"
              + (f" or {a.parser_minutes:g} minutes" if a.parser_minutes else "")
              + "; dev F1 by mgsa_preprocess.parser_training.bracket_score")
    t0 = time.time()
    rule = Plateau(a.parser_patience, a.parser_minutes and 60 * a.parser_minutes,
                   min_evals=epochs // 2 + a.parser_patience)
    progress = EpochProgress(epochs, jsonl=os.path.join(a.work, "parser_epochs.jsonl"), rule=rule)
    try:
        with stanza_offline(model_dir, progress):
            constituency_parser.main(
                ["--mode", "train", "--train_file", data["train"][0], "--eval_file", data["dev"][0],
                 "--save_name", FILES["constituency"], "--epochs", str(epochs), "--epoch_size", "0",
                 "--train_batch_size", str(batch), "--hidden_size", hidden, "--delta_embedding_dim", "50",
                 "--retag_method", "xpos", "--no_checkpoint"] + common)
    except StopTraining:
        # what stanza does after its last epoch: drop the output rows no transition uses
        condense_output_layers.condense_model(files["constituency"], files["constituency"], threshold=0.001)
    record["parser_seconds"] = round(time.time() - t0, 1)
    record["parser_setup_seconds"] = progress.setup_seconds  # reading, retagging, building the model
    record["parser_epochs"] = progress.rows
    record["parser_stopped"] = rule.reason or f"epoch cap: {epochs} epochs (--parser-epochs)"
    best = max(progress.rows, key=lambda r: r["dev_f1"]) if progress.rows else None
    record["parser_best_epoch"] = best and best["epoch"]
    if rule.cut_while_rising():
        cap = "the time cap (--parser-minutes)" if rule.stopped_by == "time cap" else \
            f"the epoch cap ({epochs} epochs, --parser-epochs)"
        record["warnings"].append(
            f"{cap} stopped the parser after epoch {len(rule.scores)} while its dev F1 still rose (best "
            f"{rule.best:.2f} at epoch {rule.best_index + 1}; patience {a.parser_patience}"
            + (f", judged from epoch {rule.min_evals}" if len(rule.scores) < rule.min_evals else "")
            + "): more epochs may give a better parser")


def train(a) -> dict:
    import torch

    replaces = _check(a)  # the old model's files in --out, which the new one replaces
    torch.set_num_threads(a.threads)
    # stanza's trainers set their own loggers' levels (to DEBUG, some of them): --quiet mutes
    # records up to WARNING process-wide for the run instead
    logging.getLogger("stanza").setLevel(logging.INFO)
    if a.quiet:
        logging.disable(logging.WARNING)
    start = time.time()
    _stage(1, f"reading {a.train} and {a.dev}")
    train_trees, dev_trees, dropped, normalisation = read_inputs(a)

    a.out = os.path.abspath(a.out)
    new = staging_dir(a.out)
    a.work = os.path.join(new, "training")
    files = model_files(new)
    data = {}
    for split, trees in (("train", train_trees), ("dev", dev_trees)):
        data[split] = os.path.join(a.work, f"{split}.mrg"), os.path.join(a.work, f"{split}.conllu")
        with open(data[split][0], "w", encoding="utf-8") as f:
            f.writelines(t.text + "\n" for t in trees)
        write_conllu(trees, data[split][1])
    record = {"lang": a.lang, "files": dict(FILES), "train": os.path.abspath(a.train), "dev": os.path.abspath(a.dev),
              "train_trees": len(train_trees), "dev_trees": len(dev_trees), "dev_trees_dropped": dropped,
              "normalisation": normalisation,
              "options": {k: v for k, v in vars(a).items() if k not in ("out", "work", "quiet")},
              "load_average_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()), "warnings": []}
    write_record(new, record)

    word_vectors(a, train_trees, files["pretrain"], record)
    common = ["--lang", a.lang, "--shorthand", f"{a.lang}_mgsa", "--wordvec_pretrain_file", files["pretrain"],
              "--save_dir", new, "--seed", str(a.seed), "--device", a.device]
    hidden = str(a.hidden_size)
    record["tagger_start_seconds"] = round(time.time() - start, 1)  # for curves against the command's time
    train_tagger(a, data, files, common, str(tagger_hidden_size(a)), record)
    write_record(new, record)  # a run stopped during the parser's epochs keeps what it measured
    record["parser_start_seconds"] = round(time.time() - start, 1)
    train_parser(a, data, new, files, common, hidden, record)
    write_record(new, record)

    _stage(5, "loading the directory as mgsa-preprocess does and scoring the dev set" + (" and the test set"
                                                                                        if a.test else ""))
    from .parser_eval import evaluate, summary
    from ..stanza_model import load_pipeline

    pipeline = load_pipeline(new)
    record["dev"], _ = evaluate(new, dev_trees, pipeline, a.threads)
    if a.test:
        test_trees, _ = read_treebank(a.test, fmt=a.treebank_format)
        record["test"], _ = evaluate(new, test_trees, pipeline, a.threads)
        record["test"]["file"] = os.path.abspath(a.test)
    record["seconds"] = round(time.time() - start, 1)
    record["load_average_at_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    record["bytes"] = {k: os.path.getsize(files[k]) for k in ("pretrain", "pos", "constituency")}
    install_model(new, a.out, record, replaces)
    print(f"[mgsa-train-parser] done in {record['seconds']:.0f} s: dev {summary(record['dev'])}"
          + (f"; test {summary(record['test'])}" if a.test else "")
          + f", {sum(record['bytes'].values()) / 1e6:.1f} MB -> {a.out}"
          + "".join(f"; warning: {w}" for w in record["warnings"]), flush=True)
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
