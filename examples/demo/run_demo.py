"""The main job, offline on CPU: systems of the registry (fairseq_mgsa/systems.py: fairseq's
Transformer and its parameter-matched variant, MG-SA, phrase-based attention, HySAN) on equal
terms, the syntactic ones with gold trees and with the trees of a parser the demo trains itself.
By default five systems (six models with the parser-tree row) at 800 updates (about 10-20 minutes on 2 cores); --full: every system
at 1200 updates (about 30-45 minutes).

1. A parallel corpus from the project's grammar (preprocess/synthetic.py), in which the
   target depends on the source's constituents (verb-final verb phrases, adjectives
   after nouns, PP attachment that changes word order and word choice), with gold trees.
2. `mgsa-preprocess --trees-suffix tree`: fairseq binaries plus the phrase files (gold trees).
3. `mgsa-train-parser` on the gold training trees (stanza's tagger and parser, offline), then
   `mgsa-preprocess --parser stanza` on the same text with the same dictionaries: phrase
   files from parser trees; the parser's labeled bracket F1 on the test set.
4. `fairseq-train` of every system (`--systems` for a subset) with the same dimensions,
   data, seed and budget, `--jobs` at a time (one thread each); a system that reads
   trees (syntactic MG-SA, the paper's default) once on gold trees, once on parser trees.
5. `fairseq-generate` on the test set for every row (a system + the trees it was trained
   and tested on).
6. mgsa-compare's scoring (fairseq_mgsa/analysis/compare/): BLEU and chrF, the paired
   bootstrap against the baseline, mean and sd over seeds, BLEU by n-gram order (the paper's
   Figure 2), compare-mt's report; table (markdown, JSON, terminal) and plots in --workdir.

Everything goes under --workdir (default: demo-out/ in the current directory); the checkout is
left alone. --update-docs (for the maintainer) rewrites docs/demo.md's results section and
docs/demo/*.png from the run. Every step is the real command a user would run; logs are in
--workdir/logs.

    python examples/demo/run_demo.py [--workdir DIR] [--full] [--systems a,b] [--seeds 1,2,3] [--jobs N]
"""

import argparse
import os
import queue
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

from tqdm import tqdm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, HERE]
if __name__ == "__main__":  # before 20 minutes of training, and before the imports below
    from fairseq_mgsa.preflight import require
    require("make demo", ["stanza", "sacrebleu", "compare", "plots"])
import demo_report as report  # noqa: E402
from fairseq_mgsa import systems as registry  # noqa: E402
from fairseq_mgsa.analysis import compare  # noqa: E402  (the package: its names load when used)
from fairseq_mgsa.analysis.compare import report as compare_report  # noqa: E402
from fairseq_mgsa.analysis.compare.matched import PEER, matched_args  # noqa: E402
from mgsa_preprocess.synthetic import write_corpus  # noqa: E402

compare.quiet_other_libraries()  # importing fairseq sets the root logger to DEBUG
DEFAULT_SYSTEMS = "transformer,transformer_matched,mgsa_syntactic,pba_interleaved_queryk,hysan"

USER_DIR = os.path.join(ROOT, "fairseq_mgsa")
SMALL = [  # the same small dimensions for every model (4 heads: one per granularity)
    "--encoder-layers", "2", "--decoder-layers", "2",
    "--encoder-embed-dim", "64", "--decoder-embed-dim", "64",
    "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128",
    "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
    "--share-all-embeddings",
]
@dataclass(frozen=True)
class Row:
    """One row of the results: a system, and the source trees (None, "gold" or "parser") its
    phrase files came from at training and at test time. Rows with the same system and
    training trees share one trained model."""
    system: str
    train_trees: Optional[str] = None
    test_trees: Optional[str] = None


def rows_of(system: registry.System, parser_rows: bool):
    """A system's rows: one, or for a system that reads trees, gold trees and (with
    parser_rows) gold-trained tested on parser trees, and trained and tested on parser trees."""
    if not system.needs_trees:
        return {system.name: Row(system.name)}
    rows = {system.name: Row(system.name, "gold", "gold")}
    if parser_rows:
        rows[f"{system.name}_test_parser"] = Row(system.name, "gold", "parser")
        rows[f"{system.name}_parser"] = Row(system.name, "parser", "parser")
    return rows


def system_args(system: registry.System):
    """The registry's options of `system` at the demo's small dimensions (its base arch); the
    parameter-matched baseline's FFN width is computed for these dimensions (built models)."""
    size_args = system.size_args.get("base", ())
    if size_args:
        if system.name != "transformer_matched":
            raise ValueError(f"system {system.name}: no options at the demo's dimensions for {' '.join(size_args)}")
        peer = registry.get(PEER)
        size_args = matched_args(["--arch", system.arch("base"), *SMALL],
                                 ["--arch", peer.arch("base"), *SMALL, *peer.model_args])
    return ["--task", system.task, "--arch", system.arch("base"), *SMALL, *size_args, *system.model_args,
            "--criterion", system.criterion, *system.criterion_args]
TREE_LABELS = {("gold", "gold"): "gold trees", ("gold", "parser"): "gold trees, tested on parser trees",
               ("parser", "parser"): "parser trees"}
BASELINE = registry.BASELINE


class CommandFailed(Exception):
    pass


def run(cmd, log, total_updates=None, desc=None, position=None, threads=None):
    """Run `cmd`, its output going to `log`; with total_updates, a progress bar follows
    fairseq-train's num_updates. Returns the seconds it took."""
    cmd = [str(c) for c in cmd]
    # this checkout's packages first, also where an older copy is installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    bar = tqdm(total=total_updates, desc=desc, unit="upd", leave=True, position=position) if total_updates else None
    t0 = time.time()
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
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
    return time.time() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workdir", default="demo-out", help="where everything goes (default: demo-out/ here)")
    p.add_argument("--full", action="store_true",
                   help="every system of the registry at 1200 updates (about 30-45 minutes on 2 cores)")
    p.add_argument("--train-size", type=int, default=4000)
    p.add_argument("--test-size", type=int, default=500)
    p.add_argument("--max-update", type=int, help="training budget of every model (default 800; --full 1200)")
    p.add_argument("--validate-every", type=int, default=100, help="updates between validations (loss curves)")
    p.add_argument("--systems", help=f"systems of the registry, comma-separated (default: {DEFAULT_SYSTEMS}; "
                                     f"--full: all: {','.join(registry.SYSTEMS)})")
    p.add_argument("--no-parser-rows", action="store_true",
                   help="no parser: systems that read trees are trained and tested on gold trees only")
    p.add_argument("--seeds", default="1",
                   help="training seeds, comma-separated: with several, mean and sd over seeds, and the paired "
                        "bootstrap on each seed pair and pooled")
    p.add_argument("--data-seed", type=int, default=1, help="seed of the generated corpus")
    p.add_argument("--jobs", type=int, default=2,
                   help="models trained at once, with (CPU cores / jobs) threads each (results do not depend on it)")
    p.add_argument("--bootstrap-samples", type=int, default=1000)
    p.add_argument("--parser-epochs", type=int, default=3,
                   help="mgsa-train-parser --parser-epochs (its default, 20, is for a few hundred trees)")
    p.add_argument("--tagger-steps", type=int, default=200, help="mgsa-train-parser --tagger-steps")
    p.add_argument("--update-docs", action="store_true",
                   help="(maintainer) rewrite docs/demo.md's results section and docs/demo/*.png from this run")
    p.add_argument("--docs-dir", default=os.path.join(ROOT, "docs"), help="with --update-docs: the docs folder")
    a = p.parse_args(argv)
    if a.max_update is None:
        a.max_update = 1200 if a.full else 800
    try:
        systems = registry.select(a.systems or ("" if a.full else DEFAULT_SYSTEMS))
        seeds = [int(x) for x in a.seeds.split(",") if x.strip()]
    except ValueError as e:
        p.error(str(e))
    if BASELINE not in [s.name for s in systems]:
        p.error(f"--systems must include the baseline {BASELINE}")
    if not seeds or a.jobs < 1:
        p.error("--seeds needs at least one seed and --jobs at least 1")
    rows = {}
    for system in systems:
        rows.update(rows_of(system, not a.no_parser_rows))
    try:
        run_demo(a, rows, seeds)
    except (CommandFailed, ValueError) as e:
        sys.exit(f"demo: error: {e}")


def preprocess(raw, data, log, *trees_args):
    run([sys.executable, "-m", "mgsa_preprocess.cli", "--source-lang", "src", "--target-lang", "tgt",
         "--trainpref", f"{raw}/train", "--validpref", f"{raw}/valid", "--testpref", f"{raw}/test",
         *trees_args, "--levels", "3", "--subword-style", "none", "--destdir", data, "--joined-dictionary",
         "--workers", "2"], log)


def train_parser(a, raw, work, gold_data, logs):
    """mgsa-train-parser on the gold training trees (dev: the valid trees), mgsa-preprocess with
    its trees into data-bin-parser (the gold run's dictionaries, so that every model reads
    both), and its labeled bracket F1 on the test set."""
    from mgsa_preprocess.bracket_score import score_files
    from mgsa_preprocess.stanza_model import read_record

    parser_dir, data = os.path.join(work, "parser"), os.path.join(work, "data-bin-parser")
    shutil.rmtree(parser_dir, ignore_errors=True)
    print(f"[demo] 3/6 mgsa-train-parser on {a.train_size} gold training trees -> {parser_dir}", flush=True)
    run([sys.executable, "-m", "mgsa_preprocess.train_parser", "--train", f"{raw}/train.src.tree",
         "--dev", f"{raw}/valid.src.tree", "--out", parser_dir, "--parser-epochs", a.parser_epochs,
         "--tagger-steps", a.tagger_steps, "--seed", a.data_seed], os.path.join(logs, "train_parser.log"))
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


def run_demo(a, rows, seeds):
    start = time.time()
    work = os.path.abspath(a.workdir)
    raw, logs = os.path.join(work, "raw"), os.path.join(work, "logs")
    data = {None: os.path.join(work, "data-bin"), "gold": os.path.join(work, "data-bin")}
    os.makedirs(logs, exist_ok=True)

    print(f"[demo] 1/6 corpus: {a.train_size} training sentences with gold trees -> {raw}", flush=True)
    write_corpus(raw, (("train", a.train_size), ("valid", 200), ("test", a.test_size)), seed=a.data_seed)

    print(f"[demo] 2/6 mgsa-preprocess --trees-suffix tree -> {data['gold']}", flush=True)
    shutil.rmtree(data["gold"], ignore_errors=True)
    preprocess(raw, data["gold"], os.path.join(logs, "preprocess.log"), "--trees-suffix", "tree")

    parser = None
    if any("parser" in (row.train_trees, row.test_trees) for row in rows.values()):
        data["parser"], parser = train_parser(a, raw, work, data["gold"], logs)
        print(f"[demo] parser: labeled bracket F1 {parser['test']['f1']:.2f} on the test set "
              f"(trained in {parser['train_minutes']} min, {parser['megabytes']} MB)", flush=True)

    # one model per system, training trees and seed; all of them trained `--jobs` at a time
    models = {}
    for row in rows.values():
        for seed in seeds:
            run_name = row.system + (f"_{row.train_trees}" if row.train_trees not in (None, "gold") else "") + \
                (f"_seed{seed}" if seed != seeds[0] else "")
            models.setdefault((row.system, row.train_trees, seed), run_name)
    threads = max(1, (os.cpu_count() or 1) // a.jobs)

    positions = queue.Queue()  # a free line of the terminal for each running job's progress bar
    for i in range(a.jobs):
        positions.put(i)

    def train(key):
        (system, train_trees, seed), run_name = key, models[key]
        position = positions.get()
        save = os.path.join(work, "checkpoints", run_name)
        shutil.rmtree(save, ignore_errors=True)  # the same budget from scratch, also on a rerun
        log = os.path.join(logs, f"train.{run_name}.log")
        seconds = run(["fairseq-train", data[train_trees], "--user-dir", USER_DIR,
                       *system_args(registry.get(system)),
                       "--label-smoothing", "0.1", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)",
                       "--lr", "1e-3", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "200", "--dropout", "0.1",
                       "--max-tokens", "2048", "--max-update", a.max_update, "--seed", seed,
                       "--validate-interval", "1000", "--validate-interval-updates", a.validate_every,
                       "--save-dir", save, "--no-epoch-checkpoints", "--save-interval-updates", a.validate_every,
                       "--keep-interval-updates", "1", "--no-progress-bar", "--log-format", "simple",
                       "--log-interval", "10", "--cpu"],
                      log, total_updates=a.max_update, desc=f"[demo] 4/6 train {run_name}",
                      position=position, threads=threads)
        positions.put(position)
        return key, (save, compare.read_valid_curve(log), seconds / 60, compare.read_params(log))

    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        trained = dict(pool.map(train, models))

    runs, refs = {}, None
    for name, row in rows.items():
        label, task = registry.get(row.system).label, registry.get(row.system).task
        trees = (row.train_trees, row.test_trees)
        hyps, speeds = [], []
        for seed in seeds:
            save, curve, train_minutes, params = trained[(row.system, row.train_trees, seed)]
            out = os.path.join(logs, f"generate.{name}" + (f".seed{seed}" if seed != seeds[0] else "") + ".txt")
            print(f"[demo] 5/6 fairseq-generate {name} (seed {seed})", flush=True)
            # --required-batch-size-multiple 1: fairseq drops a last batch smaller than the
            # multiple (default 8), which would silently skip test sentences. One at a
            # time, with every core: its speed is compared with the baseline's.
            run(["fairseq-generate", data[row.test_trees], "--user-dir", USER_DIR, "--task", task,
                 "--path", f"{save}/checkpoint_best.pt", "--gen-subset", "test", "--beam", "4",
                 "--max-tokens", "4096", "--required-batch-size-multiple", "1", "--cpu"], out)
            seed_hyps, refs = report.read_generate(out, a.test_size)
            hyps.append(seed_hyps)
            speeds.append((a.max_update / (60 * train_minutes), compare.read_decoding_speed(out)))
            if seed == seeds[0]:
                first = (curve, params)
        runs[name] = compare.Runs(
            name, label + (f", {TREE_LABELS[trees]}" if row.train_trees else ""), hyps, seeds=[str(x) for x in seeds],
            params=first[1], updates_per_second=compare.mean_or_none([t for t, _ in speeds]),
            decode_sentences_per_second=compare.mean_or_none([d for _, d in speeds]), valid_curve=first[0])

    print("[demo] 6/6 scoring (mgsa-compare: sacrebleu, paired bootstrap against the baseline) and plots", flush=True)
    results = compare.compare(runs, refs, BASELINE, a.bootstrap_samples)
    results["setup"] = {
        "train_sentences": a.train_size, "test_sentences": a.test_size, "max_update": a.max_update,
        "seeds": seeds, "data_seed": a.data_seed, "jobs": a.jobs, "dims": " ".join(SMALL),
        "minutes": round((time.time() - start) / 60, 1),
        "command": "python examples/demo/run_demo.py" + (" --full" if a.full else ""),
    }
    if parser is not None:
        results["parser"] = parser
    paths = compare_report.write_all(results, runs, refs, work)
    print()
    print(compare_report.terminal_table(results))
    if a.update_docs:
        images = os.path.join(a.docs_dir, "demo")
        os.makedirs(images, exist_ok=True)
        for path in paths:
            if path.endswith(".png") or os.path.basename(path) in ("results.json", "results.md"):
                shutil.copy(path, images)
        report.update_docs(os.path.join(a.docs_dir, "demo.md"), results, "demo")
    print(f"\n[demo] done in {results['setup']['minutes']} min. Everything is in {work}: the table in "
          f"{os.path.join(work, 'results.md')}, plots *.png, compare-mt's report compare-mt/index.html, logs in logs/"
          + (f"; docs/demo.md and {images} rewritten" if a.update_docs else ""), flush=True)


if __name__ == "__main__":
    main()
