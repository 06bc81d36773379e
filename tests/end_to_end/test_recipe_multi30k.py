"""The Multi30k CPU recipe (examples/multi30k_en_de/), every step, on generated data (a file of
its own: test_recipe_runs.py runs the GPU recipes; the helpers, recipe_runs.py, are shared).

* 01_download.sh from a local mirror laid out as upstream (multi30k/dataset's gzipped
  train/val/test_2016_flickr files, NLTK's treebank.zip with treebank/combined/wsj_*.mrg), here
  holding the project's grammar corpus and its gold trees as the treebank;
* run_all.sh: tokenisation, the English parser trained on the treebank's split with word vectors
  from the tokenized English side (mgsa-train-parser, tiny settings), the English side parsed by
  it (stanza's real pipeline on that model), BPE, binaries, training of a tree-free and the
  syntactic system on the CPU preset's path (stopping rule on, one thread), decoding of the best
  checkpoint, scoring and the compare table; a rerun does nothing again;
* the tree-free binaries (05 before the parser exists) are byte for byte those of the tree data;
* the stopping rule: a run whose validation loss cannot improve (learning rate 0) stops after
  PATIENCE validations, and the rule's `summary` reads that from train.log; a run cut by the cap is marked.
"""

import filecmp
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

from mgsa_preprocess.synthetic import write_corpus

from tests.end_to_end.recipe_runs import EXAMPLES, TINY_MODEL, bash, count_lines, recipe_env  # noqa: E402
from tests.paths import ROOT as ROOT_DIR

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long

RECIPE = os.path.join(EXAMPLES, "multi30k_en_de")
# the rule as the recipes run it: the checkout's module (recipe_env puts the checkout first on PYTHONPATH)
STOPPING = ["-m", "fairseq_mgsa.analysis.compare.stopping"]
SIZES = (("train", 160), ("valid", 16), ("test", 20))
UPSTREAM = {"train": "train", "valid": "val", "test": "test_2016_flickr"}
TREEBANK_FILES, TREES_PER_FILE = 6, 20   # 120 trees: 80 train, 20 dev, 20 test
# the parser at its smallest: a test of the plumbing, not of parsing quality
# (2 epochs: the cap ends the parser before the patience rule may judge it, a warning 03 repeats)
TINY_PARSER = "--tagger-steps 20 --parser-epochs 2 --hidden-size 16 --wordvec-dim 8 --wordvec-epochs 1"
SYSTEMS = ["transformer", "mgsa_syntactic"]
PATIENCE, VALID_INTERVAL, MAX_UPDATE = 2, 2, 6


def bash_args(script, env, *args):
    return subprocess.run(["bash", script, *map(str, args)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


def mirror(tmp_path):
    """The grammar corpus as multi30k/dataset's raw files, and its trees as NLTK's treebank.zip."""
    corpus, trees = tmp_path / "corpus", tmp_path / "treebank_src"
    write_corpus(str(corpus), SIZES, seed=3, src="en", tgt="de")
    write_corpus(str(trees), (("t", TREEBANK_FILES * TREES_PER_FILE),), seed=4, src="en", tgt="de")
    site = tmp_path / "mirror"
    site.mkdir()
    for split, name in UPSTREAM.items():
        for lang in ("en", "de"):
            with open(corpus / f"{split}.{lang}", "rb") as f, gzip.open(site / f"{name}.{lang}.gz", "wb") as g:
                g.write(f.read())
    lines = (trees / "t.en.tree").read_text(encoding="utf-8").splitlines()
    with zipfile.ZipFile(site / "treebank.zip", "w") as z:
        for i in range(TREEBANK_FILES):
            z.writestr(f"treebank/combined/wsj_{i + 1:04d}.mrg",
                       "\n".join(lines[i * TREES_PER_FILE:(i + 1) * TREES_PER_FILE]) + "\n")
    return corpus, site


def env_for(work, site, **extra):
    env = recipe_env(work, MULTI30K_URL=f"file://{site}", TREEBANK_URL=f"file://{site}/treebank.zip",
                     SYSTEMS=" ".join(SYSTEMS), SEEDS="1", PARSER_ARGS=TINY_PARSER, PARSER_DEV="20",
                     PARSER_TEST="20", PATIENCE=str(PATIENCE), VALID_INTERVAL=str(VALID_INTERVAL),
                     MAX_UPDATE=str(MAX_UPDATE), FAIRSEQ_EXTRA=TINY_MODEL, GEN_EXTRA="", RUN_JOBS="2",
                     **extra)
    del env["SKIP_DOWNLOAD"]
    return env


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("multi30k")
    corpus, site = mirror(tmp)
    work = tmp / "work"
    env = env_for(work, site)
    # the tree-free systems' data first, as before the parser exists
    text_bin = work / "data-bin-text"
    for step in ("01_download.sh", "02_tokenize.sh", "04_bpe.sh"):
        bash(os.path.join(RECIPE, step), env)
    first_text = bash(os.path.join(RECIPE, "05_preprocess.sh"),
                      dict(env, SYSTEMS="transformer", DATA_BIN=str(text_bin))).stdout
    first = bash(os.path.join(RECIPE, "run_all.sh"), env).stdout
    second = bash(os.path.join(RECIPE, "run_all.sh"), env).stdout
    return dict(work=work, corpus=corpus, site=site, env=env, first=first, second=second,
                first_text=first_text, text_bin=text_bin)


def test_download_writes_the_raw_splits_and_the_treebank(run):
    raw = run["work"] / "raw"
    for split, n in SIZES:
        for lang in ("en", "de"):
            assert (raw / f"{split}.{lang}").read_bytes() == (run["corpus"] / f"{split}.{lang}").read_bytes()
    combined = run["work"] / "treebank" / "treebank" / "combined"
    assert sorted(os.listdir(combined)) == [f"wsj_{i + 1:04d}.mrg" for i in range(TREEBANK_FILES)]
    assert "01_download: done already" in run["second"]


def test_parser_trained_on_the_split_with_word_vectors_from_the_english_side(run):
    work = run["work"]
    split = work / "treebank" / "split"
    assert [count_lines(split / f"{s}.mrg") for s in ("train", "dev", "test")] == [80, 20, 20]
    record = json.loads((work / "parser" / "mgsa_parser.json").read_text())
    assert record["train_trees"] == 80
    assert os.path.samefile(record["test"]["file"], split / "test.mrg")
    # the word vectors' text is the tokenized English training side: every word of it is in them
    assert os.path.samefile(record["wordvec"]["file"] if "file" in record["wordvec"] else record["wordvec"]["text"],
                            work / "tok" / "train.en")
    assert (work / "parser" / "test_f1.txt").read_text().startswith(f"parser {work}/parser: labeled-bracket F1 ")
    assert "using the parser trained already" in run["second"]


def test_trees_from_the_parser_fit_the_tokenized_english(run):
    tok = run["work"] / "tok"
    for split, n in SIZES:
        words = [line.split() for line in (tok / f"{split}.en").read_text(encoding="utf-8").splitlines()]
        trees = (tok / f"{split}.en.tree").read_text(encoding="utf-8").splitlines()
        assert len(trees) == len(words) == n
        for w, t in zip(words, trees):
            assert re.findall(r"\(\S+ ([^()\s]+)\)", t) == w


def test_tree_free_binaries_are_the_bytes_of_the_tree_data(run):
    assert "binarizing without phrase files" in run["first_text"]
    text, trees = run["text_bin"], run["work"] / "data-bin"
    names = sorted(os.path.basename(p) for p in map(str, text.iterdir()) if p.endswith((".bin", ".idx", ".txt"))
                   and "preprocess" not in p)
    assert "dict.en.txt" in names and "train.en-de.de.bin" in names and len(names) == 2 + 3 * 2 * 2
    match, mismatch, errors = filecmp.cmpfiles(text, trees, names, shallow=False)
    assert mismatch == [] and errors == [] and sorted(match) == names
    assert list(trees.glob("*.syn1.bin")) and not list(text.glob("*.syn*"))


def stopping_summary(log):
    out = subprocess.run([sys.executable, *STOPPING, "summary", str(log), "--json"], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def valid_losses(log):
    """(update, loss) of every validation: the test's own reading of fairseq's lines."""
    rows = []
    for line in log.read_text(encoding="utf-8").splitlines():
        if "| valid on 'valid' subset |" in line:
            loss = float(re.search(r"\| loss ([0-9.]+) \|", line).group(1))
            rows.append((int(re.search(r"\| num_updates (\d+)", line).group(1)), loss))
    return rows


def test_every_system_trained_decoded_scored_and_compared(run):
    work, first = run["work"], run["first"]
    for system in SYSTEMS:
        ckpt, out = work / "checkpoints" / system, work / "results" / system
        assert (ckpt / "checkpoint_best.pt").exists()
        assert f"translating the test set with {ckpt}/checkpoint_best.pt" in (work / "logs" / f"{system}.log").read_text()
        assert count_lines(out / "hyp.tok") == dict(SIZES)["test"]
        assert re.search(r"^detokenized sacreBLEU: \d+\.\d\d ", (out / "bleu.txt").read_text(), flags=re.M)
        # one thread a run, on the CPU, stopped on validation with the cap: fairseq's own options
        log = (ckpt / "train.log").read_text()
        assert "'cpu': True" in log and f"'patience': {PATIENCE}" in log and f"'max_update': {MAX_UPDATE}" in log
        # the cap (6 updates) comes before patience can act: marked as cut by the cap
        summary = stopping_summary(ckpt / "train.log")
        rows = valid_losses(ckpt / "train.log")
        assert [u for u, _ in rows] == list(range(VALID_INTERVAL, MAX_UPDATE + 1, VALID_INTERVAL))
        best = min(rows, key=lambda r: (r[1], r[0]))
        assert summary["stopped_by"] == "cap" and summary["stop_update"] == MAX_UPDATE
        assert summary["best_update"] == best[0] and summary["best_loss"] == pytest.approx(best[1], abs=1e-3)
        assert summary["improving_at_end"] == (best[0] == rows[-1][0])
        assert (out / "stopping.txt").read_text().startswith(f"{ckpt}/train.log: update {MAX_UPDATE}, ")
    results = json.loads((work / "results" / "compare" / "results.json").read_text())
    assert list(results["models"]) == SYSTEMS and results["baseline"] == "transformer"
    assert "runs: " not in first or "failed" not in first


def test_a_rerun_does_nothing_again(run):
    log = run["second"]
    for step in ("02_tokenize", "03_parse", f"04_bpe.{run['env']['BPE_MERGES']}", "05_preprocess"):
        assert f"{step}: done already" in log, log[-3000:]
    for busy in ("tokenizing ", "learning ", "training the English parser", "translating "):
        assert busy not in log


def test_a_run_whose_validation_cannot_improve_stops_on_patience(run, tmp_path):
    """Learning rate 0 from the first update: the validation loss never goes below its first
    value, so fairseq stops after PATIENCE more validations, well before the cap."""
    env = dict(run["env"], SYSTEM="transformer", RUN_NAME="frozen", LR="0", WARMUP_INIT_LR="0", MAX_UPDATE="40",
               CKPT_DIR=str(tmp_path / "frozen"))
    log = bash(os.path.join(RECIPE, "06_train.sh"), env).stdout
    assert "early stop since valid performance hasn't improved for last 2 runs" in log
    rows = valid_losses(tmp_path / "frozen" / "train.log")
    assert len(rows) == 1 + PATIENCE and len({loss for _, loss in rows}) == 1
    summary = stopping_summary(tmp_path / "frozen" / "train.log")
    assert summary["stopped_by"] == "patience" and summary["stop_update"] == (1 + PATIENCE) * VALID_INTERVAL < 40
    assert summary["best_update"] == VALID_INTERVAL and not summary["improving_at_end"]


def test_stopping_rule_options_and_bad_values():
    out = subprocess.run([sys.executable, *STOPPING, "args", "--patience", "4", "--valid-interval", "250",
                          "--max-update", "6000"], capture_output=True, text=True, check=True).stdout.split()
    assert out[out.index("--patience") + 1] == "4" and out[out.index("--validate-interval-updates") + 1] == "250"
    assert out[out.index("--save-interval-updates") + 1] == "250" and out[out.index("--max-update") + 1] == "6000"
    bad = subprocess.run([sys.executable, *STOPPING, "args", "--patience", "0", "--valid-interval", "250",
                          "--max-update", "6000"], capture_output=True, text=True)
    # fairseq prints one INFO line of its own at import (tensorboardX missing): the rule's error is the last line
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1] == (
        "python -m fairseq_mgsa.analysis.compare.stopping: error: patience, valid interval and max update must be at least 1 (got 0, 250, 6000)")


# --- issue 37 ----------------------------------------------------------------------------------

def test_03_repeats_the_parsers_warning(run):
    """Point 2: the tiny parser's 2 epochs end before the patience rule may judge it (a cap cut it
    while its dev F1 may still rise): mgsa-train-parser warns, its record keeps the warning, and
    03_parse.sh repeats it where the recipe's output shows it."""
    work = run["work"]
    record = json.loads((work / "parser" / "mgsa_parser.json").read_text())
    assert record["options"]["parser_minutes"] is None and record["options"]["tagger_minutes"] is None
    assert any(w.startswith("the epoch cap (2 epochs, --parser-epochs) stopped the parser") for w in record["warnings"])
    for w in record["warnings"]:
        assert f"03_parse.sh: warning: the parser in {work}/parser: {w}" in run["first"]
    assert (work / "logs" / "parser.log").read_text().strip().splitlines()[-1].endswith("; warning: "
                                                                                         + record["warnings"][-1])


def test_a_failed_run_stops_there_and_run_all_fails(run, tmp_path):
    """Point 1: with RUN_JOBS=2 each run's steps ran on the left of `||`, where bash ignores set -e:
    a training that failed was followed by decoding the stale checkpoint_best.pt of an earlier
    session and scoring it, and run_all.sh exited 0. Here the transformer's resume fails (its
    checkpoint_last.pt cannot be read), while the other run trains on to the new cap."""
    work = tmp_path / "work"
    shutil.copytree(run["work"], work)
    ckpt = work / "checkpoints" / "transformer"
    (ckpt / "checkpoint_last.pt").write_bytes(b"not a checkpoint")
    logs = {s: (work / "logs" / f"{s}.log").read_text() for s in SYSTEMS}
    bleu_time = (work / "results" / "transformer" / "bleu.txt").stat().st_mtime_ns
    env = dict(run["env"], WORKDIR=str(work), MAX_UPDATE=str(MAX_UPDATE + VALID_INTERVAL), FROM_STEP="6",
               RUN_JOBS="2")
    proc = bash(os.path.join(RECIPE, "run_all.sh"), env, check=False)
    assert proc.returncode == 1
    assert proc.stdout.strip().splitlines()[-1] == (
        f"run_all.sh: error: runs failed: transformer (see {work}/logs/RUN.log; rerun to resume them)")
    failed = (work / "logs" / "transformer.log").read_text()[len(logs["transformer"]):]
    assert "training transformer:" in failed and "Error" in failed  # fairseq-train could not resume
    assert not (work / ".done" / f"06_train.transformer.{MAX_UPDATE + VALID_INTERVAL}").exists()
    for later in ("translating the test set", "08_score", "hypotheses ->"):
        assert later not in failed  # steps 07 and 08 did not run after the failed 06
    assert (work / "results" / "transformer" / "bleu.txt").stat().st_mtime_ns == bleu_time
    assert "run: transformer (system transformer, seed 1)" not in proc.stdout.split("== ")[-1]  # its old BLEU not shown
    other = (work / "logs" / "mgsa_syntactic.log").read_text()[len(logs["mgsa_syntactic"]):]
    assert "translating the test set" in other and (work / "results" / "mgsa_syntactic" / "bleu.txt").exists()


@pytest.mark.slow  # a rerun of whole steps (1-2 minutes): the default suite's 20-minute budget
def test_parser_dir_may_be_an_existing_empty_folder(run, tmp_path):
    """Point 4: `mv PARSER_DIR.partial PARSER_DIR` put the new parser inside an existing folder,
    the step ended in a traceback and every rerun trained the parser again."""
    work = tmp_path / "work"
    shutil.copytree(run["work"], work, ignore=lambda d, names: ["parser"] if d == str(run["work"]) else [])
    parser_dir = tmp_path / "models" / "en-parser"
    parser_dir.mkdir(parents=True)
    env = dict(run["env"], WORKDIR=str(work), PARSER_DIR=str(parser_dir))
    log = bash(os.path.join(RECIPE, "03_parse.sh"), env).stdout
    assert "training the English parser" in log and f"-> {parser_dir} (log:" in log
    assert (parser_dir / "mgsa_parser.json").exists() and (parser_dir / "pos.pt").exists()
    assert not [p for p in os.listdir(parser_dir) if "partial" in p]
    assert (parser_dir / "test_f1.txt").read_text().startswith(f"parser {parser_dir}: labeled-bracket F1 ")
    again = bash(os.path.join(RECIPE, "03_parse.sh"), env).stdout
    assert f"using the parser trained already in {parser_dir}" in again and "03_parse: done already" in again
    # a record without its model (what the old mgsa-train-parser left after a failed rerun): trained
    # again, not "used as it is" and then failing on the missing file
    os.remove(parser_dir / "pos.pt")
    log = bash(os.path.join(RECIPE, "03_parse.sh"), env).stdout
    assert f"{parser_dir}/mgsa_parser.json is there but not pos.pt: training the parser again" in log
    assert (parser_dir / "pos.pt").exists() and f"03_parse: redoing it: {parser_dir}/mgsa_parser.json changed" in log


def test_another_bpe_merges_redoes_the_binaries_and_training_refuses_the_old_checkpoints(run, tmp_path):
    """Point 7: step 04's marker was keyed by BPE_MERGES but step 05's was not: the binaries of the
    old codes were kept and every later run trained on the old segmentation."""
    work = tmp_path / "work"
    shutil.copytree(run["work"], work)
    old_dict = (work / "data-bin" / "dict.en.txt").read_text()
    env = dict(run["env"], WORKDIR=str(work), BPE_MERGES="30")
    bash(os.path.join(RECIPE, "04_bpe.sh"), env)
    log = bash(os.path.join(RECIPE, "05_preprocess.sh"), env).stdout
    assert ("05_preprocess: redoing it: made with BPE_MERGES=50 LEVELS=3 LENIENT=0, now BPE_MERGES=30 LEVELS=3 "
            "LENIENT=0") in log
    assert (work / "data-bin" / "dict.en.txt").read_text() != old_dict
    # the text binarized is the text of the new codes: mgsa-preprocess's own BPE of it
    with open(work / "bpe" / "text" / "train.en", encoding="utf-8") as f:
        segmented = f.read().split()
    vocabulary = {line.split()[0] for line in (work / "data-bin" / "dict.en.txt").read_text().splitlines()}
    assert segmented and set(segmented) <= vocabulary
    # checkpoints of the old data: the run refuses to resume them, in one line
    ckpt = work / "checkpoints" / "transformer"
    proc = bash(os.path.join(RECIPE, "06_train.sh"), dict(env, SYSTEM="transformer"), check=False)
    assert proc.returncode == 1
    assert proc.stdout.strip().splitlines()[-1] == (
        f"06_train.sh: error: the data in {work}/data-bin changed since the checkpoints in {ckpt} were trained (its "
        f"dictionary or training text: BPE_MERGES, the corpus or its tokenisation): delete {ckpt} to train "
        f"transformer afresh")


@pytest.mark.slow  # a rerun of whole steps (1-2 minutes): the default suite's 20-minute budget
def test_another_test_set_redoes_what_reads_it(run, tmp_path):
    """Point 7: MULTI30K_TEST changed after step 01 kept the old test set. Now step 01 fetches the
    new one, the steps that read it are redone (only the test split is tokenized again), training
    is not (its data did not change), and the test set is translated and scored anew."""
    work, site = tmp_path / "work", tmp_path / "mirror"
    shutil.copytree(run["work"], work)
    shutil.copytree(run["site"], site)
    new = tmp_path / "new"
    write_corpus(str(new), (("test", 12),), seed=9, src="en", tgt="de")
    for lang in ("en", "de"):
        with open(new / f"test.{lang}", "rb") as f, gzip.open(site / f"test_2017_flickr.{lang}.gz", "wb") as g:
            g.write(f.read())
    train_time = (work / "raw" / "train.en").stat().st_mtime_ns
    run_log = work / "logs" / "transformer.log"  # steps 06-08 of the run (RUN_JOBS=2)
    before = run_log.read_text()
    env = dict(run["env"], WORKDIR=str(work), MULTI30K_URL=f"file://{site}", MULTI30K_TEST="test_2017_flickr",
               SYSTEMS="transformer")
    log = bash(os.path.join(RECIPE, "run_all.sh"), env).stdout
    assert ("01_download: redoing it: made with MULTI30K_TEST=test_2016_flickr PARSER=treebank, now "
            "MULTI30K_TEST=test_2017_flickr PARSER=treebank") in log
    assert (work / "raw" / "test.de").read_bytes() == (new / "test.de").read_bytes()
    assert (work / "raw" / "train.en").stat().st_mtime_ns == train_time  # unchanged: not rewritten
    assert f"tokenizing {work}/raw/test.en" in log and f"tokenizing {work}/raw/train.en" not in log
    steps = run_log.read_text()[len(before):]
    assert "06_train.transformer.6: done already" in steps and "translating the test set" in steps
    out = work / "results" / "transformer"
    assert count_lines(out / "hyp.tok") == 12
    import sacrebleu
    refs = (new / "test.de").read_text(encoding="utf-8").split("\n")[:-1]
    hyps = (out / "hyp.detok").read_text(encoding="utf-8").split("\n")[:-1]
    assert json.loads((out / "bleu.detok.json").read_text())["score"] == round(
        sacrebleu.corpus_bleu(hyps, [refs]).score, 2)


# --- issue 45 ----------------------------------------------------------------------------------

@pytest.mark.slow  # a rerun of whole steps (1-2 minutes): the default suite's 20-minute budget
def test_a_failure_mark_of_an_earlier_invocation_does_not_count(run, tmp_path):
    """Point 4, what the user did: a RUN_JOBS=2 invocation in which one run failed (the
    transformer's checkpoint_last.pt unreadable), the cause fixed (the checkpoint put back), and
    everything rerun with RUN_JOBS=1. Every run succeeded, yet run_all.sh printed `error: runs
    failed: transformer` from the first invocation's logs/transformer.failed and exited 1 before
    the table. The outcome now comes from this invocation's runs: exit 0 and the table."""
    work = tmp_path / "work"
    shutil.copytree(run["work"], work)
    ckpt = work / "checkpoints" / "transformer"
    good = (ckpt / "checkpoint_last.pt").read_bytes()
    (ckpt / "checkpoint_last.pt").write_bytes(b"not a checkpoint")
    env = dict(run["env"], WORKDIR=str(work), MAX_UPDATE=str(MAX_UPDATE + VALID_INTERVAL), FROM_STEP="6")
    proc = bash(os.path.join(RECIPE, "run_all.sh"), dict(env, RUN_JOBS="2"), check=False)
    assert proc.returncode == 1 and "runs failed: transformer" in proc.stdout.strip().splitlines()[-1]
    assert (work / "logs" / "transformer.failed").exists()

    (ckpt / "checkpoint_last.pt").write_bytes(good)  # the cause fixed
    proc = bash(os.path.join(RECIPE, "run_all.sh"), dict(env, RUN_JOBS="1"), check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "runs failed" not in proc.stdout and not (work / "logs" / "transformer.failed").exists()
    assert f"06_train.transformer.{MAX_UPDATE + VALID_INTERVAL}: done" in proc.stdout
    table = proc.stdout.split("== ")[-1]
    assert "run: transformer (system transformer, seed 1)" in table and "against the baseline" in table


def test_gpu_converge_gives_the_recipes_run_and_keeps_what_a_cut_leaves(run, tmp_path):
    """scripts/gpu_converge.sh on the recipe's data (the CPU preset's settings here): a run it
    trains, decodes and scores is the recipe's own, hypothesis for hypothesis; one the limit cuts
    is said to be cut, its training log packed, and the command exits 3."""
    script = os.path.join(ROOT_DIR, "scripts", "gpu_converge.sh")
    prepared = tmp_path / "lease"
    env = dict(run["env"], PRESET="cpu", TMPDIR=str(tmp_path))
    assert bash_args(script, env, "prepare", "multi30k_en_de", run["work"], prepared).returncode == 0
    done = bash_args(script, env, "run", "multi30k_en_de", prepared, tmp_path / "out", "--runs", "transformer:1")
    assert done.returncode == 0, done.stdout[-3000:]
    with tarfile.open(tmp_path / "out" / "runs.tgz") as tar:
        hyp = tar.extractfile("runs/transformer_seed1/hyp.detok").read().decode()
        names = set(tar.getnames())
    assert hyp == (run["work"] / "results" / "transformer" / "hyp.detok").read_text()
    assert {f"runs/transformer_seed1/{f}" for f in ("train.log", "stopping.txt", "bleu.txt", "run.log")} <= names
    line = (tmp_path / "out" / "summary.txt").read_text()
    assert re.match(r"transformer_seed1: finished; detokenized sacreBLEU \d+\.\d\d; .*update 6, ", line), line
    cut = bash_args(script, env, "run", "multi30k_en_de", prepared, tmp_path / "cut", "--runs", "hysan:1",
                    "--limit", "8")
    assert cut.returncode == 3, cut.stdout[-3000:]
    assert (tmp_path / "cut" / "summary.txt").read_text().startswith("hysan_seed1: cut by the limit of 8 s;")
    with tarfile.open(tmp_path / "cut" / "runs.tgz") as tar:
        assert "runs/hysan_seed1/run.log" in tar.getnames()
