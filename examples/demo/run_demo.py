"""The main job, offline on CPU: fairseq's Transformer vs n-gram and syntactic MG-SA.

1. A parallel corpus from the project's grammar (preprocess/synthetic.py), in which the
   target depends on the source's constituents (verb-final verb phrases, adjectives
   after nouns, PP attachment that changes word order and word choice), with gold trees.
2. `mgsa-preprocess --trees-suffix tree`: fairseq binaries plus the phrase files.
3. `fairseq-train` of three models with the same dimensions, data, seed and budget:
   fairseq's `transformer`; n-gram MG-SA (word,ngram2,ngram3,ngram4, SAN, layer 1);
   syntactic MG-SA, the paper's default (`mgsa_transformer_syntactic`: word + top 3 tree
   levels, SAN, ON-LSTM, phrase-tag loss).
4. `fairseq-generate` on the test set; sacrebleu BLEU and chrF, paired bootstrap
   resampling against the baseline; BLEU-N gaps for N = 1..8 (the paper's Figure 2).
5. Results: a table (markdown + JSON) and PNG plots in --workdir, copied to docs/demo/,
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
# name -> (label, task, arch and MG-SA options, criterion options). The baseline and the
# n-gram model need no phrase files: fairseq's translation task reads the same binaries.
MODELS = {
    "transformer": ("Transformer (fairseq)", "translation", ["--arch", "transformer"],
                    ["--criterion", "label_smoothed_cross_entropy"]),
    "mgsa_ngram": ("MG-SA n-gram", "translation",
                   ["--arch", "mgsa_transformer", "--mgsa-granularities", "word,ngram2,ngram3,ngram4"],
                   ["--criterion", "label_smoothed_cross_entropy"]),
    "mgsa_syntactic": ("MG-SA syntactic (paper default)", "mgsa_translation", ["--arch", "mgsa_transformer_syntactic"],
                       ["--criterion", "label_smoothed_cross_entropy_with_phrase_tags"]),
}
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
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, from {','.join(MODELS)}")
    p.add_argument("--docs-dir", default=os.path.join(ROOT, "docs", "demo"),
                   help="where the table and plots are copied for the README")
    p.add_argument("--no-readme", action="store_true", help="do not rewrite the README's results section")
    a = p.parse_args(argv)
    models = [m for m in a.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown or BASELINE not in models:
        p.error(f"--models: unknown {unknown}" if unknown else f"--models must include the baseline {BASELINE}")
    try:
        run_demo(a, models)
    except (CommandFailed, ValueError) as e:
        sys.exit(f"demo: error: {e}")


def run_demo(a, models):
    start = time.time()
    work = os.path.abspath(a.workdir)
    raw, data, logs = (os.path.join(work, d) for d in ("raw", "data-bin", "logs"))
    os.makedirs(logs, exist_ok=True)

    print(f"[demo] 1/5 corpus: {a.train_size} training sentences with gold trees -> {raw}", flush=True)
    write_corpus(raw, (("train", a.train_size), ("valid", 200), ("test", a.test_size)), seed=a.seed)

    print(f"[demo] 2/5 mgsa-preprocess --trees-suffix tree -> {data}", flush=True)
    shutil.rmtree(data, ignore_errors=True)
    run([sys.executable, "-m", "preprocess.cli", "--source-lang", "src", "--target-lang", "tgt",
         "--trainpref", f"{raw}/train", "--validpref", f"{raw}/valid", "--testpref", f"{raw}/test",
         "--trees-suffix", "tree", "--levels", "3", "--subword-style", "none",
         "--destdir", data, "--joined-dictionary", "--workers", "2"], os.path.join(logs, "preprocess.log"))

    runs = {}
    for name in models:
        label, task, arch, criterion = MODELS[name]
        save = os.path.join(work, "checkpoints", name)
        shutil.rmtree(save, ignore_errors=True)  # the same budget from scratch, also on a rerun
        t0 = time.time()
        train_log = os.path.join(logs, f"train.{name}.log")
        run(["fairseq-train", data, "--user-dir", USER_DIR, "--task", task, *arch, *SMALL, *criterion,
             "--label-smoothing", "0.1", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "1e-3",
             "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "200", "--dropout", "0.1",
             "--max-tokens", "2048", "--max-update", a.max_update, "--seed", a.seed,
             "--validate-interval", "1000", "--validate-interval-updates", a.validate_every,
             "--save-dir", save, "--no-epoch-checkpoints", "--save-interval-updates", a.validate_every,
             "--keep-interval-updates", "1", "--no-progress-bar", "--log-format", "simple",
             "--log-interval", "10", "--cpu"],
            train_log, total_updates=a.max_update, desc=f"[demo] 3/5 train {name}")
        train_minutes = (time.time() - t0) / 60

        out = os.path.join(logs, f"generate.{name}.txt")
        print(f"[demo] 4/5 fairseq-generate {name}", flush=True)
        # --required-batch-size-multiple 1: fairseq drops a last batch smaller than the
        # multiple (default 8), which would silently skip test sentences.
        run(["fairseq-generate", data, "--user-dir", USER_DIR, "--task", task,
             "--path", f"{save}/checkpoint_best.pt", "--gen-subset", "test", "--beam", "4",
             "--max-tokens", "4096", "--required-batch-size-multiple", "1", "--cpu"], out)
        hyps, refs = report.read_generate(out, a.test_size)
        runs[name] = report.Run(name, label, hyps, refs, report.read_valid_curve(train_log), train_minutes)

    print("[demo] 5/5 scoring (sacrebleu, paired bootstrap against the baseline) and plots", flush=True)
    results = report.score(runs, BASELINE, a.bootstrap_samples)
    results["setup"] = {
        "train_sentences": a.train_size, "test_sentences": a.test_size, "max_update": a.max_update,
        "seed": a.seed, "dims": " ".join(SMALL), "minutes": round((time.time() - start) / 60, 1),
    }
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
