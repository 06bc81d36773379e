"""The main job, offline on CPU: systems of the registry (fairseq_mgsa/systems.py: fairseq's
Transformer and its parameter-matched variant, MG-SA, phrase-based attention, HySAN) on equal
terms, the syntactic ones with gold trees and (--parser-rows) with the trees of a parser the demo
trains itself. By default fairseq's Transformer and syntactic MG-SA on gold trees, three training
seeds each, every run stopped by the validation rule below (or at the cap); --full: every system
of the registry and the parser's rows, the cap raised to FULL_MAX_UPDATE updates. The defaults
are the constants below the imports.

1. A parallel corpus from the project's grammar (preprocess/synthetic/), in which the
   target depends on the source's constituents (verb-final verb phrases, adjectives
   after nouns, PP attachment that changes word order and word choice), with gold trees;
   the test sentences whose source string is attachment-ambiguous (only the tree tells the
   readings apart) are listed in raw/test.ambiguous (line numbers).
2. `mgsa-preprocess --trees-suffix tree`: fairseq binaries plus the phrase files (gold trees).
3. (--parser-rows, --full) `mgsa-train-parser` on the gold training trees (stanza's tagger
   and parser, offline), then `mgsa-preprocess --parser stanza` on the same text with the
   same dictionaries: phrase files from parser trees; the parser's labeled bracket F1 on the
   test set.
4. `fairseq-train` of every system (`--systems` for a subset) and seed with the same dimensions,
   data and stopping rule, `--jobs` at a time (demo_train.py): validation every
   `--validate-every` updates, a stop after `--patience` validations without a new best
   validation BLEU (greedy decoding; `--metric loss` for the loss: fairseq's --patience,
   fairseq_mgsa/analysis/compare/stopping.py's rule as in the recipes), `--max-update` the cap. A system
   that reads trees (syntactic MG-SA, the paper's default) is trained on gold trees, and
   with --parser-rows once more on parser trees.
5. `fairseq-generate` of every row's best checkpoint (checkpoint_best.pt) on the test set (a
   row: a system + the trees it was trained and tested on).
6. mgsa-compare's scoring (fairseq_mgsa/analysis/compare/): BLEU and chrF, the paired
   bootstrap against the baseline, mean and sd over seeds, where each run stopped and whether
   the cap cut it while still improving, BLEU by n-gram order (the paper's Figure 2), BLEU and
   exact match on the ambiguous test sentences and on the others, compare-mt's report; table
   (markdown, JSON, terminal) and plots in --workdir.

Everything goes under --workdir (default: demo-out/ in the current directory); the checkout is
left alone. --update-docs (for the maintainer) rewrites docs/demo.md's results section and
docs/demo/*.png from the run. Every step is the real command a user would run; logs are in
--workdir/logs.

    python examples/demo/run_demo.py [--workdir DIR] [--full] [--systems a,b] [--seeds 1,2,3] [--jobs N]
"""

import argparse
import os
import shutil
import sys
import time
from dataclasses import dataclass
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)  # this checkout's package, also where an older copy is installed
if __name__ == "__main__":  # before any training, and before the imports below
    from fairseq_mgsa.preflight import require
    require("make demo", ["stanza", "sacrebleu", "compare", "plots"])
import demo_report as report  # noqa: E402
import demo_train as training  # noqa: E402
from demo_train import CommandFailed, USER_DIR, run  # noqa: E402
from fairseq_mgsa import systems as registry  # noqa: E402
from fairseq_mgsa.analysis import compare  # noqa: E402  (the package: its names load when used)
from fairseq_mgsa.analysis.compare import report as compare_report  # noqa: E402
from mgsa_preprocess.phrase_files import tag_dictionary_path  # noqa: E402
from mgsa_preprocess.synthetic import ambiguous_lines, write_corpus  # noqa: E402

compare.quiet_other_libraries()  # importing fairseq sets the root logger to DEBUG

# --- the demo's defaults (`make demo`), in one place ------------------------------------------
# The default asks the demo's question (does syntax-aware self-attention help where only the tree
# tells the readings apart?) with gold trees: two systems, three seeds each, to convergence, fit in
# 20 minutes on 2 cores. The parser's rows (--parser-rows) and the peers (--systems, --full) add to it.
DEFAULT_SYSTEMS = "transformer,mgsa_syntactic"
TRAIN_SIZE, VALID_SIZE, TEST_SIZE = 4000, 200, 500  # sentences of the generated corpus
SEEDS = "1,2,3"              # training seeds: the verdicts need the seeds' spread
JOBS = 2                     # models trained at once (results do not depend on it)
VALIDATE_EVERY = 100         # updates between validations
METRIC = "bleu"              # the validation score the rule watches (stopping.py: on this corpus the loss creeps
#                              down long after the translations stop changing)
PATIENCE = 5                 # validations without a new best validation score before a run stops (with 3, four of
#                              --full's 11 one-seed runs stopped at 1400-1500 updates on a dip of the noisy validation BLEU)
MAX_UPDATE = 4000            # the cap: a run still improving there is marked in the table
FULL_MAX_UPDATE = 6000       # --full: a higher cap, for the peers that learn more slowly
SMALL = [  # the model size: the same small dimensions for every model (4 heads: one per granularity)
    "--encoder-layers", "2", "--decoder-layers", "2",
    "--encoder-embed-dim", "64", "--decoder-embed-dim", "64",
    "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128",
    "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
    "--share-all-embeddings",
]
# the test subsets' descriptions in the table's notes (subset_notes: "N of the M test sentences are NAME: ...")
SUBSETS = {
    "ambiguous": "their source string has more than one reading under the grammar (a PP attached to the noun phrase "
                 "or to the verb phrase), with different targets, so only the tree tells them apart "
                 "(preprocess/synthetic/, attachment_ambiguous; line numbers in raw/test.ambiguous)",
    "unambiguous": "the others, one reading each",
}


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


TREE_LABELS = {("gold", "gold"): "gold trees", ("gold", "parser"): "gold trees, tested on parser trees",
               ("parser", "parser"): "parser trees"}
BASELINE = registry.BASELINE


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workdir", default="demo-out", help="where everything goes (default: demo-out/ here)")
    p.add_argument("--full", action="store_true",
                   help=f"every system of the registry and the parser's rows, to convergence: the stopping rule ends "
                        f"every run, the cap raised to {FULL_MAX_UPDATE} updates (seeds: --seeds, default {SEEDS})")
    p.add_argument("--train-size", type=int, default=TRAIN_SIZE, help=f"training sentences (default {TRAIN_SIZE})")
    p.add_argument("--test-size", type=int, default=TEST_SIZE, help=f"test sentences (default {TEST_SIZE})")
    p.add_argument("--max-update", type=int,
                   help=f"the cap: no run trains longer (default {MAX_UPDATE}; --full {FULL_MAX_UPDATE})")
    p.add_argument("--validate-every", type=int, default=VALIDATE_EVERY,
                   help=f"updates between validations (default {VALIDATE_EVERY})")
    p.add_argument("--patience", type=int, default=PATIENCE,
                   help=f"a run stops after this many validations in a row without a new best validation score "
                        f"(fairseq's --patience; default {PATIENCE})")
    p.add_argument("--metric", choices=training.stopping.METRICS, default=METRIC,
                   help=f"the validation score: BLEU of greedy decoding (fairseq's --eval-bleu) or the loss "
                        f"(default {METRIC})")
    p.add_argument("--systems", help=f"systems of the registry, comma-separated (default: {DEFAULT_SYSTEMS}; "
                                     f"--full: all: {','.join(registry.SYSTEMS)})")
    p.add_argument("--parser-rows", action="store_true",
                   help="also train the demo's own parser (mgsa-train-parser) and add the rows of systems that read "
                        "trees with its trees: gold-trained tested on parser trees, and trained and tested on them "
                        "(on with --full; by default systems read gold trees only)")
    p.add_argument("--seeds", default=SEEDS,
                   help=f"training seeds, comma-separated (default {SEEDS}): mean and sd over seeds, and the paired "
                        f"bootstrap on each seed pair and pooled")
    p.add_argument("--data-seed", type=int, default=1, help="seed of the generated corpus")
    p.add_argument("--jobs", type=int, default=JOBS,
                   help=f"models trained at once, with --threads threads each (default {JOBS}; results do not "
                        f"depend on it)")
    p.add_argument("--threads", type=int,
                   help="CPU threads of each training job (default: CPU cores / jobs); --jobs 1 --threads 1 runs on "
                        "one core, for a machine shared with other work")
    p.add_argument("--bootstrap-samples", type=int, default=1000)
    p.add_argument("--parser-epochs", type=int, default=3,
                   help="mgsa-train-parser --parser-epochs (its default, 20, is for a few hundred trees)")
    p.add_argument("--tagger-steps", type=int, default=200, help="mgsa-train-parser --tagger-steps")
    p.add_argument("--update-docs", action="store_true",
                   help="(maintainer) rewrite docs/demo.md's results section and docs/demo/*.png from this run")
    p.add_argument("--docs-dir", default=os.path.join(ROOT, "docs"), help="with --update-docs: the docs folder")
    a = p.parse_args(argv)
    # the options that shape the results, as the docs' "Last run" line shows them (not where files go)
    given = list(sys.argv[1:] if argv is None else argv)
    a.command_args = [x for i, x in enumerate(given) if x not in ("--update-docs", "--docs-dir", "--workdir")
                      and (i == 0 or given[i - 1] not in ("--docs-dir", "--workdir"))]
    if a.max_update is None:
        a.max_update = FULL_MAX_UPDATE if a.full else MAX_UPDATE
    for name in ("train_size", "test_size", "max_update", "validate_every", "patience", "jobs", "threads"):
        if getattr(a, name) is not None and getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(a, name)})")
    try:
        systems = registry.select(a.systems or ("" if a.full else DEFAULT_SYSTEMS))
    except ValueError as e:
        p.error(str(e))
    try:
        seeds = [int(x) for x in a.seeds.split(",") if x.strip()]
    except ValueError:
        p.error(f"--seeds {a.seeds!r}: comma-separated integers expected")
    if BASELINE not in [s.name for s in systems]:
        p.error(f"--systems must include the baseline {BASELINE}")
    if not seeds or len(set(seeds)) != len(seeds):
        p.error(f"--seeds {a.seeds!r}: at least one seed, each once")
    rows = {}
    for system in systems:
        rows.update(rows_of(system, a.parser_rows or a.full))
    try:
        run_demo(a, rows, seeds, training.Rule(a.patience, a.validate_every, a.max_update, a.metric))
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
    from mgsa_preprocess.parser_training.bracket_score import score_files
    from mgsa_preprocess.stanza_model import read_record

    parser_dir, data = os.path.join(work, "parser"), os.path.join(work, "data-bin-parser")
    shutil.rmtree(parser_dir, ignore_errors=True)
    print(f"[demo] 3/6 mgsa-train-parser on {a.train_size} gold training trees -> {parser_dir}", flush=True)
    run([sys.executable, "-m", "mgsa_preprocess.parser_training.train_parser", "--train", f"{raw}/train.src.tree",
         "--dev", f"{raw}/valid.src.tree", "--out", parser_dir, "--parser-epochs", a.parser_epochs,
         "--tagger-steps", a.tagger_steps, "--seed", a.data_seed,
         # the grammar's tags are learnt perfectly by the smaller tagger; the default (twice as wide, chosen
         # on the WSJ sample) would only slow the demo down
         "--tagger-hidden-size", "64", "--tagger-dropout", "0.5"], os.path.join(logs, "train_parser.log"))
    print(f"[demo] 3/6 mgsa-preprocess --parser stanza --stanza-dir {parser_dir} -> {data}", flush=True)
    shutil.rmtree(data, ignore_errors=True)
    t0 = time.time()
    preprocess(raw, data, os.path.join(logs, "preprocess_parser.log"), "--parser", "stanza", "--stanza-dir",
               parser_dir, "--srcdict", os.path.join(gold_data, "dict.src.txt"),
               "--tagdict", tag_dictionary_path(gold_data, "src"))
    record = read_record(parser_dir)
    test = score_files(f"{raw}/test.src.tree", os.path.join(data, "trees", "test.src.tree"))
    return data, {
        "test": test.as_dict(), "dev": record["dev"], "train_trees": record["train_trees"],
        "tagger_steps": a.tagger_steps, "parser_epochs": a.parser_epochs,
        "train_minutes": round(record["seconds"] / 60, 1),
        "parse_and_preprocess_minutes": round((time.time() - t0) / 60, 1),
        "megabytes": round(sum(record["bytes"].values()) / 1e6, 1),
    }


def corpus(a, raw):
    """The grammar's corpus in `raw`, and the attachment-ambiguous test sentences' line numbers
    (1-based) in raw/test.ambiguous."""
    print(f"[demo] 1/6 corpus: {a.train_size} training sentences with gold trees -> {raw}", flush=True)
    write_corpus(raw, (("train", a.train_size), ("valid", VALID_SIZE), ("test", a.test_size)), seed=a.data_seed)
    ambiguous = ambiguous_lines(os.path.join(raw, "test.src.tree"))
    with open(os.path.join(raw, "test.ambiguous"), "w") as f:
        f.write("".join(f"{i}\n" for i in ambiguous))
    print(f"[demo] 1/6 {len(ambiguous)} of the {a.test_size} test sentences are attachment-ambiguous "
          f"-> {raw}/test.ambiguous", flush=True)
    return ambiguous


def decode(a, rows, seeds, trained, data, logs):
    """fairseq-generate of every row's best checkpoint for every seed: (compare.Runs by row, refs)."""
    runs, refs = {}, None
    for name, row in rows.items():
        label, task = registry.get(row.system).label, registry.get(row.system).task
        trees = (row.train_trees, row.test_trees)
        hyps, decode_speeds = [], []
        models = [trained[(row.system, row.train_trees, seed)] for seed in seeds]
        for seed, model in zip(seeds, models):
            out = os.path.join(logs, f"generate.{name}" + (f".seed{seed}" if seed != seeds[0] else "") + ".txt")
            print(f"[demo] 5/6 fairseq-generate {name} (seed {seed})", flush=True)
            # --required-batch-size-multiple 1: fairseq drops a last batch smaller than the
            # multiple (default 8), which would silently skip test sentences. One at a
            # time, with every core: its speed is compared with the baseline's.
            run(["fairseq-generate", data[row.test_trees], "--user-dir", USER_DIR, "--task", task,
                 "--path", f"{model.save}/checkpoint_best.pt", "--gen-subset", "test", "--beam", "4",
                 "--max-tokens", "4096", "--required-batch-size-multiple", "1", "--cpu"], out)
            seed_hyps, refs = report.read_generate(out, a.test_size)
            hyps.append(seed_hyps)
            decode_speeds.append(compare.read_decoding_speed(out))
        runs[name] = training.runs_of(name, label + (f", {TREE_LABELS[trees]}" if row.train_trees else ""), hyps,
                                      seeds, models, decode_speeds)
    return runs, refs


def run_demo(a, rows, seeds, rule):
    start, load_at_start = time.time(), os.getloadavg()  # the machine's load: other work skews the minutes
    clock = {}  # the minutes of each step, for the table's notes: where the time goes

    def lap(step, since):
        clock[step] = round((time.time() - since) / 60, 1)
        return time.time()
    work = os.path.abspath(a.workdir)
    raw, logs = os.path.join(work, "raw"), os.path.join(work, "logs")
    data = {None: os.path.join(work, "data-bin"), "gold": os.path.join(work, "data-bin")}
    os.makedirs(logs, exist_ok=True)
    ambiguous = corpus(a, raw)

    print(f"[demo] 2/6 mgsa-preprocess --trees-suffix tree -> {data['gold']}", flush=True)
    shutil.rmtree(data["gold"], ignore_errors=True)
    preprocess(raw, data["gold"], os.path.join(logs, "preprocess.log"), "--trees-suffix", "tree")
    t = lap("corpus and preprocessing", start)

    parser = None
    if any("parser" in (row.train_trees, row.test_trees) for row in rows.values()):
        data["parser"], parser = train_parser(a, raw, work, data["gold"], logs)
        print(f"[demo] parser: labeled bracket F1 {parser['test']['f1']:.2f} on the test set "
              f"(trained in {parser['train_minutes']} min, {parser['megabytes']} MB)", flush=True)
        t = lap("parser (training, parsing, preprocessing)", t)

    # one model per system, training trees and seed; all of them trained `--jobs` at a time
    models = {}
    for row in rows.values():
        for seed in seeds:
            run_name = row.system + (f"_{row.train_trees}" if row.train_trees not in (None, "gold") else "") + \
                (f"_seed{seed}" if seed != seeds[0] else "")
            models.setdefault((row.system, row.train_trees, seed), run_name)
    print(f"[demo] 4/6 {len(models)} models: validation every {rule.validate_every} updates, a stop after "
          f"{rule.patience} without a new best validation {rule.metric}, the cap at {rule.max_update} updates", flush=True)
    trained = training.train_all(models, data, work, logs, rule, SMALL, a.jobs, a.threads)
    t = lap("training", t)
    runs, refs = decode(a, rows, seeds, trained, data, logs)
    t = lap("decoding", t)

    print("[demo] 6/6 scoring (mgsa-compare: sacrebleu, paired bootstrap against the baseline) and plots", flush=True)
    results = compare.compare(runs, refs, BASELINE, a.bootstrap_samples)
    results["stopping"] = rule.as_dict()
    others = sorted(set(range(1, len(refs) + 1)) - set(ambiguous))
    results["subsets"] = {name: compare.subset(runs, refs, lines, SUBSETS[name])
                          for name, lines in (("ambiguous", ambiguous), ("unambiguous", others))}
    lap("scoring", t)
    results["setup"] = {
        "train_sentences": a.train_size, "test_sentences": a.test_size, "max_update": a.max_update,
        "seeds": seeds, "data_seed": a.data_seed, "jobs": a.jobs, "threads": training.threads_per_job(a.jobs, a.threads), "dims": " ".join(SMALL),
        "minutes": round((time.time() - start) / 60, 1), "step_minutes": clock,
        "load_average": {"start": [round(x, 2) for x in load_at_start], "end": [round(x, 2) for x in os.getloadavg()]},
        "command": " ".join(["python examples/demo/run_demo.py", *a.command_args]),
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
