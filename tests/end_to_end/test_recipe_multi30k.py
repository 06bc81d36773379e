"""The Multi30k CPU recipe (examples/multi30k_en_de/), every step, on generated data (a file of
its own: tests/test_recipes.py holds the GPU recipes and is long already; the helpers are shared).

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
import subprocess
import sys
import zipfile

import pytest

from mgsa_preprocess.synthetic import write_corpus

from tests.end_to_end.test_recipes import EXAMPLES, TINY_MODEL, bash, count_lines, recipe_env  # noqa: E402

RECIPE = os.path.join(EXAMPLES, "multi30k_en_de")
# the rule as the recipes run it: the checkout's module (recipe_env puts the checkout first on PYTHONPATH)
STOPPING = ["-m", "fairseq_mgsa.analysis.compare.stopping"]
SIZES = (("train", 160), ("valid", 16), ("test", 20))
UPSTREAM = {"train": "train", "valid": "val", "test": "test_2016_flickr"}
TREEBANK_FILES, TREES_PER_FILE = 6, 20   # 120 trees: 80 train, 20 dev, 20 test
# the parser at its smallest: a test of the plumbing, not of parsing quality
TINY_PARSER = ("--tagger-steps 20 --tagger-minutes 1 --parser-epochs 2 --parser-minutes 1 --hidden-size 16 "
               "--wordvec-dim 8 --wordvec-epochs 1")
SYSTEMS = ["transformer", "mgsa_syntactic"]
PATIENCE, VALID_INTERVAL, MAX_UPDATE = 2, 2, 6


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
