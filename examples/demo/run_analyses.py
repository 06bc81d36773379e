"""`make analyses`: the paper's analyses on the project's grammar corpus, offline on CPU.

1. A parallel corpus from the grammar (mgsa_preprocess.synthetic) with gold trees, binarized
   by `mgsa-preprocess --trees-suffix tree` (word level, 3 tree levels); a second, separate
   grammar sample (another seed) with its trees is the probing corpus.
2. `fairseq-train` of the NMT models set-up 1 probes (the paper's Table 5 rows 1-4): the
   baseline, MG-SA n-gram, MG-SA syntactic without and with ON-LSTM interaction, the
   syntactic ones without tag loss (--phrase-tag-weight 0, Table 5's caption); the small
   dimensions and training options of the demo (examples/demo/run_demo.py), 2 at a time.
3. `mgsa-attention` (encoder self-attention of the baseline and syntactic MG-SA on test
   sentence 0) when installed.
4. `mgsa-probe` on the probing corpus: set-up 1 on those checkpoints, set-up 2 for every
   registered system with an encoder self-attention of its own, the partition-only control,
   the majority baselines; the table is printed at the end.

    python examples/demo/run_analyses.py [--out analyses-out] [--train-size 2000] ...

Everything goes under --out (logs in --out/logs); no tracked file is touched.
"""

import argparse
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# this checkout's package, also where an older copy is installed; run_demo.py lies beside this script
sys.path.insert(0, ROOT)
if __name__ == "__main__":  # before the training, and before the imports below
    from fairseq_mgsa.preflight import require
    require("make analyses", ["sacrebleu", "plots"])
import run_demo as demo  # noqa: E402  (its run(), preprocess(), small dimensions and training options)
from fairseq_mgsa import systems as registry  # noqa: E402
from mgsa_preprocess.synthetic import write_corpus  # noqa: E402

# set-up 1's checkpoints: (name, registry system, extra options) -> Table 5 rows 1-4
NMT_MODELS = [
    ("BASE (Transformer)", "transformer", ()),
    ("N-Gram Phrase (MG-SA n-gram)", "mgsa_ngram", ()),
    ("Syntactic Phrase (MG-SA syntactic, no interaction)", "mgsa_syntactic",
     ("--mgsa-interaction", "none", "--phrase-tag-weight", "0")),
    ("Syntactic Phrase + Interaction (MG-SA syntactic + ON-LSTM)", "mgsa_syntactic", ("--phrase-tag-weight", "0")),
]
RUN_NAMES = ["transformer", "mgsa_ngram", "mgsa_syntactic_plain", "mgsa_syntactic"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="analyses-out", help="output directory (default: analyses-out, git-ignored)")
    p.add_argument("--train-size", type=int, default=2000, help="NMT training sentences")
    p.add_argument("--max-update", type=int, default=600, help="NMT training budget of every model")
    p.add_argument("--probe-size", type=int, default=1200, help="sentences of the probing corpus (split 10:1:1)")
    p.add_argument("--scratch-systems", default=None, help="mgsa-probe --scratch-systems (default: all)")
    p.add_argument("--scratch-epochs", type=int, default=6, help="mgsa-probe --scratch-epochs")
    p.add_argument("--epochs", type=int, default=30, help="mgsa-probe --epochs (set-up 1's MLP)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=2, help="NMT models trained at once")
    a = p.parse_args(argv)
    start = time.time()
    out = os.path.abspath(a.out)
    raw, data, logs = os.path.join(out, "raw"), os.path.join(out, "data-bin"), os.path.join(out, "logs")
    probe_raw = os.path.join(out, "probing-corpus")
    os.makedirs(logs, exist_ok=True)
    timings = {}

    print(f"[analyses] 1/4 grammar corpus ({a.train_size} training sentences) -> {raw}; "
          f"probing corpus ({a.probe_size} sentences, another seed) -> {probe_raw}", flush=True)
    write_corpus(raw, (("train", a.train_size), ("valid", 200), ("test", 200)), seed=a.seed)
    write_corpus(probe_raw, (("probe", a.probe_size),), seed=a.seed + 100)
    shutil.rmtree(data, ignore_errors=True)
    demo.preprocess(raw, data, os.path.join(logs, "preprocess.log"), "--trees-suffix", "tree")

    t0 = time.time()
    threads = max(1, (os.cpu_count() or 1) // a.jobs)

    def train(k):
        label, system_name, extra = NMT_MODELS[k]
        system, save = registry.get(system_name), os.path.join(out, "checkpoints", RUN_NAMES[k])
        shutil.rmtree(save, ignore_errors=True)
        demo.run(["fairseq-train", data, "--user-dir", demo.USER_DIR,
                  *demo.training.system_args(system, demo.SMALL), *extra, *demo.training.OPTIMISATION,
                  "--max-update", a.max_update, "--seed", a.seed,
                  # the probe reads the last checkpoint: no validation, one save at the end
                  "--disable-validation", "--save-interval", "1000000",
                  "--save-dir", save, "--no-epoch-checkpoints", "--no-progress-bar", "--log-format", "simple",
                  "--log-interval", "10", "--cpu"], os.path.join(logs, f"train.{RUN_NAMES[k]}.log"),
                 total_updates=a.max_update, desc=f"[analyses] 2/4 train {RUN_NAMES[k]}", position=k % a.jobs,
                 threads=threads)
        return os.path.join(save, "checkpoint_last.pt")

    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        checkpoints = list(pool.map(train, range(len(NMT_MODELS))))
    timings["nmt_training_minutes"] = round((time.time() - t0) / 60, 1)

    t0 = time.time()
    if shutil.which("mgsa-attention"):
        print("[analyses] 3/4 mgsa-attention: baseline vs syntactic MG-SA, test sentence 0", flush=True)
        demo.run(["mgsa-attention", data, "--path", checkpoints[0], "--path", checkpoints[3],
                  "--out", os.path.join(out, "attention"), "--test-ids", "0"], os.path.join(logs, "attention.log"))
    else:
        print("[analyses] 3/4 mgsa-attention is not installed in this checkout: the attention figure is skipped",
              flush=True)
    timings["attention_minutes"] = round((time.time() - t0) / 60, 1)

    t0 = time.time()
    print("[analyses] 4/4 mgsa-probe: set-up 1 (frozen NMT encoders), set-up 2 (from scratch), control", flush=True)
    probe = [sys.executable, "-m", "fairseq_mgsa.analysis.probing",
             "--trees", os.path.join(probe_raw, "probe.src.tree"), "--text", os.path.join(probe_raw, "probe.src"), "--out", os.path.join(out, "probing"),
             "--seed", a.seed, "--epochs", a.epochs, "--scratch-epochs", a.scratch_epochs, "--threads", "1"]
    for (label, _, _), path in zip(NMT_MODELS, checkpoints):
        probe += ["--checkpoint", f"{label}={path}"]
    if a.scratch_systems:
        probe += ["--scratch-systems", a.scratch_systems]
    # on the terminal, not in a log: its progress bars are this step's progress
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
               OMP_NUM_THREADS="1")
    if subprocess.run([str(c) for c in probe], env=env).returncode != 0:
        raise demo.CommandFailed("mgsa-probe failed (its message is above)")
    timings["probing_minutes"] = round((time.time() - t0) / 60, 1)
    timings["total_minutes"] = round((time.time() - start) / 60, 1)

    with open(os.path.join(out, "probing", "probing.md")) as f:
        print(f.read())
    print(f"[analyses] done in {timings['total_minutes']} min ({timings}); outputs under {out}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except demo.CommandFailed as e:
        sys.exit(f"analyses: error: {e}")
