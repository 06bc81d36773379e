"""The main job, offline on CPU: fairseq's Transformer vs n-gram and syntactic MG-SA,
with gold trees and with the trees of a parser the demo trains itself.

1. A parallel corpus from the project's grammar (preprocess/synthetic.py), in which the
   target depends on the source's constituents (verb-final verb phrases, adjectives
   after nouns, PP attachment that changes word order and word choice), with gold trees.
2. `mgsa-preprocess --trees-suffix tree`: fairseq binaries plus the phrase files (gold trees).
3. `mgsa-train-parser` on the gold training trees (stanza's tagger and parser, offline), then
   `mgsa-preprocess --parser stanza` on the same text with the same dictionaries: phrase
   files from parser trees; the parser's labeled bracket F1 on the test set.
4. `fairseq-train` of the systems with the same dimensions, data, seed and budget:
   fairseq's `transformer`; n-gram MG-SA (word,ngram2,ngram3,ngram4, SAN, layer 1);
   syntactic MG-SA, the paper's default (`mgsa_transformer_syntactic`: word + top 3 tree
   levels, SAN, ON-LSTM, phrase-tag loss), once on gold trees, once on parser trees.
5. `fairseq-generate` on the test set for every row (a system + the trees it was trained
   and tested on); sacrebleu BLEU and chrF, paired bootstrap resampling against the
   baseline; BLEU-N gaps for N = 1..8 (the paper's Figure 2).
6. Results: a table (markdown + JSON) and PNG plots in --workdir, copied to docs/demo/,
   and the README's results section rewritten from them (--no-readme to leave it).

Every step is the real command a user would run; logs are in --workdir/logs.

    python examples/demo/run_demo.py [--workdir DIR] [--max-update N] [--train-size N]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Optional

from tqdm import tqdm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, HERE]
import demo_report as report  # noqa: E402
from preprocess.synthetic import write_corpus  # noqa: E402

USER_DIR = os.path.join(ROOT, "fairseq_mgsa")
SMALL = [  # the same small dimensions for every model (4 heads: one per granularity)
    "--encoder-layers", "2", "--decoder-layers", "2",
    "--encoder-embed-dim", "64", "--decoder-embed-dim", "64",
    "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128",
    "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
    "--share-all-embeddings",
]
# system -> (label, task, arch and MG-SA options, criterion options). The baseline and the
# n-gram model need no phrase files: fairseq's translation task reads the same binaries.
SYSTEMS = {
    "transformer": ("Transformer (fairseq)", "translation", ["--arch", "transformer"],
                    ["--criterion", "label_smoothed_cross_entropy"]),
    "mgsa_ngram": ("MG-SA n-gram", "translation",
                   ["--arch", "mgsa_transformer", "--mgsa-granularities", "word,ngram2,ngram3,ngram4"],
                   ["--criterion", "label_smoothed_cross_entropy"]),
    "mgsa_syntactic": ("MG-SA syntactic (paper default)", "mgsa_translation", ["--arch", "mgsa_transformer_syntactic"],
                       ["--criterion", "label_smoothed_cross_entropy_with_phrase_tags"]),
}


@dataclass(frozen=True)
class Row:
    """One row of the results: a system, and the source trees (None, "gold" or "parser") its
    phrase files came from at training and at test time. Rows with the same system and
    training trees share one trained model."""
    system: str
    train_trees: Optional[str] = None
    test_trees: Optional[str] = None


ROWS = {
    "transformer": Row("transformer"),
    "mgsa_ngram": Row("mgsa_ngram"),
    "mgsa_syntactic": Row("mgsa_syntactic", "gold", "gold"),
    "mgsa_syntactic_test_parser": Row("mgsa_syntactic", "gold", "parser"),
    "mgsa_syntactic_parser": Row("mgsa_syntactic", "parser", "parser"),
}
TREE_LABELS = {("gold", "gold"): "gold trees", ("gold", "parser"): "gold trees, tested on parser trees",
               ("parser", "parser"): "parser trees"}
BASELINE = "transformer"


class CommandFailed(Exception):
    pass


def run(cmd, log, total_updates=None, desc=None):
    """Run `cmd`, its output going to `log`; with total_updates, a progress bar follows
    fairseq-train's num_updates."""
    cmd = [str(c) for c in cmd]
    bar = tqdm(total=total_updates, desc=desc, unit="upd", leave=True) if total_updates else None
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            f.write(line)
            m = bar is not None and re.search(r"num_updates[= ](\d+)", line)
            if m:
                bar.update(int(m.group(1)) - bar.n)
        proc.wait()
    if bar is not None:
        bar.close()
    if proc.returncode != 0:
        raise CommandFailed(f"{cmd[0]} failed (exit {proc.returncode}); see {log}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workdir", default="work/demo")
    p.add_argument("--train-size", type=int, default=4000)
    p.add_argument("--test-size", type=int, default=500)
    p.add_argument("--max-update", type=int, default=1200, help="training budget of every model")
    p.add_argument("--validate-every", type=int, default=100, help="updates between validations (loss curves)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bootstrap-samples", type=int, default=1000)
    p.add_argument("--models", default=",".join(ROWS), help=f"rows, comma-separated, from {','.join(ROWS)}")
    p.add_argument("--parser-epochs", type=int, default=3,
                   help="mgsa-train-parser --parser-epochs (its default, 20, is for a few hundred trees)")
    p.add_argument("--tagger-steps", type=int, default=200, help="mgsa-train-parser --tagger-steps")
    p.add_argument("--docs-dir", default=os.path.join(ROOT, "docs", "demo"),
                   help="where the table and plots are copied for the README")
    p.add_argument("--no-readme", action="store_true", help="do not rewrite the README's results section")
    a = p.parse_args(argv)
    rows = [m for m in a.models.split(",") if m]
    unknown = [m for m in rows if m not in ROWS]
    if unknown or BASELINE not in rows:
        p.error(f"--models: unknown {unknown}" if unknown else f"--models must include the baseline {BASELINE}")
    try:
        run_demo(a, rows)
    except (CommandFailed, ValueError) as e:
        sys.exit(f"demo: error: {e}")


def preprocess(raw, data, log, *trees_args):
    run([sys.executable, "-m", "preprocess.cli", "--source-lang", "src", "--target-lang", "tgt",
         "--trainpref", f"{raw}/train", "--validpref", f"{raw}/valid", "--testpref", f"{raw}/test",
         *trees_args, "--levels", "3", "--subword-style", "none", "--destdir", data, "--joined-dictionary",
         "--workers", "2"], log)


def train_parser(a, raw, work, gold_data, logs):
    """mgsa-train-parser on the gold training trees (dev: the valid trees), mgsa-preprocess with
    its trees into data-bin-parser (the gold run's dictionaries, so that every model reads
    both), and its labeled bracket F1 on the test set."""
    from preprocess.bracket_score import score_files
    from preprocess.stanza_model import read_record

    parser_dir, data = os.path.join(work, "parser"), os.path.join(work, "data-bin-parser")
    shutil.rmtree(parser_dir, ignore_errors=True)
    print(f"[demo] 3/6 mgsa-train-parser on {a.train_size} gold training trees -> {parser_dir}", flush=True)
    run([sys.executable, "-m", "preprocess.train_parser", "--train", f"{raw}/train.src.tree",
         "--dev", f"{raw}/valid.src.tree", "--out", parser_dir, "--parser-epochs", a.parser_epochs,
         "--tagger-steps", a.tagger_steps, "--seed", a.seed], os.path.join(logs, "train_parser.log"))
    print(f"[demo] 3/6 mgsa-preprocess --parser stanza --stanza-dir {parser_dir} -> {data}", flush=True)
    shutil.rmtree(data, ignore_errors=True)
    t0 = time.time()
    preprocess(raw, data, os.path.join(logs, "preprocess_parser.log"), "--parser", "stanza", "--stanza-dir",
               parser_dir, "--srcdict", os.path.join(gold_data, "dict.src.txt"),
               "--tagdict", os.path.join(gold_data, "dict.src.tags.txt"))
    record = read_record(parser_dir)
    test = score_files(f"{raw}/test.src.tree", os.path.join(data, "trees", "test.src.tree"))
    return data, {
        "test": test.as_dict(), "dev": record["dev"], "train_trees": record["train_trees"],
        "tagger_steps": a.tagger_steps, "parser_epochs": a.parser_epochs,
        "train_minutes": round(record["seconds"] / 60, 1),
        "parse_and_preprocess_minutes": round((time.time() - t0) / 60, 1),
        "megabytes": round(sum(record["bytes"].values()) / 1e6, 1),
    }


def run_demo(a, rows):
    start = time.time()
    work = os.path.abspath(a.workdir)
    raw, logs = os.path.join(work, "raw"), os.path.join(work, "logs")
    data = {None: os.path.join(work, "data-bin"), "gold": os.path.join(work, "data-bin")}
    os.makedirs(logs, exist_ok=True)

    print(f"[demo] 1/6 corpus: {a.train_size} training sentences with gold trees -> {raw}", flush=True)
    write_corpus(raw, (("train", a.train_size), ("valid", 200), ("test", a.test_size)), seed=a.seed)

    print(f"[demo] 2/6 mgsa-preprocess --trees-suffix tree -> {data['gold']}", flush=True)
    shutil.rmtree(data["gold"], ignore_errors=True)
    preprocess(raw, data["gold"], os.path.join(logs, "preprocess.log"), "--trees-suffix", "tree")

    parser = None
    if any("parser" in (ROWS[r].train_trees, ROWS[r].test_trees) for r in rows):
        data["parser"], parser = train_parser(a, raw, work, data["gold"], logs)
        print(f"[demo] parser: labeled bracket F1 {parser['test']['f1']:.2f} on the test set "
              f"(trained in {parser['train_minutes']} min, {parser['megabytes']} MB)", flush=True)

    runs, trained = {}, {}
    for name in rows:
        row = ROWS[name]
        label, task, arch, criterion = SYSTEMS[row.system]
        key = (row.system, row.train_trees)
        if key not in trained:  # one model per system and training trees
            run_name = row.system + (f"_{row.train_trees}" if row.train_trees not in (None, "gold") else "")
            save = os.path.join(work, "checkpoints", run_name)
            shutil.rmtree(save, ignore_errors=True)  # the same budget from scratch, also on a rerun
            t0 = time.time()
            train_log = os.path.join(logs, f"train.{run_name}.log")
            run(["fairseq-train", data[row.train_trees], "--user-dir", USER_DIR, "--task", task, *arch, *SMALL,
                 *criterion, "--label-smoothing", "0.1", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)",
                 "--lr", "1e-3", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "200", "--dropout", "0.1",
                 "--max-tokens", "2048", "--max-update", a.max_update, "--seed", a.seed,
                 "--validate-interval", "1000", "--validate-interval-updates", a.validate_every,
                 "--save-dir", save, "--no-epoch-checkpoints", "--save-interval-updates", a.validate_every,
                 "--keep-interval-updates", "1", "--no-progress-bar", "--log-format", "simple",
                 "--log-interval", "10", "--cpu"],
                train_log, total_updates=a.max_update, desc=f"[demo] 4/6 train {run_name}")
            trained[key] = (save, report.read_valid_curve(train_log), (time.time() - t0) / 60)
        save, curve, train_minutes = trained[key]

        out = os.path.join(logs, f"generate.{name}.txt")
        print(f"[demo] 5/6 fairseq-generate {name}", flush=True)
        # --required-batch-size-multiple 1: fairseq drops a last batch smaller than the
        # multiple (default 8), which would silently skip test sentences.
        run(["fairseq-generate", data[row.test_trees], "--user-dir", USER_DIR, "--task", task,
             "--path", f"{save}/checkpoint_best.pt", "--gen-subset", "test", "--beam", "4",
             "--max-tokens", "4096", "--required-batch-size-multiple", "1", "--cpu"], out)
        hyps, refs = report.read_generate(out, a.test_size)
        trees = (row.train_trees, row.test_trees)
        runs[name] = report.Run(name, label + (f", {TREE_LABELS[trees]}" if row.train_trees else ""), hyps, refs,
                                curve, train_minutes, system=row.system, trees=None if row.train_trees is None
                                else trees)

    print("[demo] 6/6 scoring (sacrebleu, paired bootstrap against the baseline) and plots", flush=True)
    results = report.score(runs, BASELINE, a.bootstrap_samples)
    results["setup"] = {
        "train_sentences": a.train_size, "test_sentences": a.test_size, "max_update": a.max_update,
        "seed": a.seed, "dims": " ".join(SMALL), "minutes": round((time.time() - start) / 60, 1),
    }
    if parser is not None:
        results["parser"] = parser
    paths = report.write(results, runs, work)
    print(report.markdown_table(results))
    os.makedirs(a.docs_dir, exist_ok=True)
    for path in paths.values():
        shutil.copy(path, a.docs_dir)
    if not a.no_readme:
        report.update_readme(os.path.join(ROOT, "README.md"), results, os.path.relpath(a.docs_dir, ROOT))
    print(f"[demo] done in {results['setup']['minutes']} min: {', '.join(paths.values())}"
          f"{'' if a.no_readme else ' and README.md'}", flush=True)


if __name__ == "__main__":
    main()
