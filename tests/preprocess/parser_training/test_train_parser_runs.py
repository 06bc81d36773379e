"""mgsa-train-parser as a researcher reruns it (issue 37): stopping by steps, epochs and patience
with no wall-clock cap by default (the same model on a busy machine as on an idle one), a warning
when a cap cuts training while the dev score still rises (final line, record, and mgsa-preprocess
repeating it), the old model kept until a new one is complete, and bad inputs as one line naming
the file before anything is touched. Real (tiny) runs on the grammar's trees."""

import gzip
import json
import shutil
import subprocess
import sys

import pytest

from tests.paths import checkout_env
from mgsa_preprocess.parser_training.stopping import Plateau

ENV = checkout_env()  # this checkout's mgsa_preprocess, not an installed copy
SMALL = ["--hidden-size", "16", "--wordvec-dim", "8"]  # small layers: the defaults' stopping, quickly


def train_parser(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "mgsa_preprocess.parser_training.train_parser", *map(str, args), "--quiet"],
                          env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


@pytest.fixture(scope="module")
def treebank(tmp_path_factory):
    from mgsa_preprocess.synthetic import write_corpus

    tmp = tmp_path_factory.mktemp("treebank")
    write_corpus(str(tmp), (("train", 40), ("valid", 10), ("test", 10)), seed=3)
    return tmp


def burner():
    """A CPU-heavy process beside the training: the machine is busy."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


@pytest.fixture(scope="module")
def two_runs(treebank, tmp_path_factory):
    """The same command with the defaults' stopping (no time cap), once alone and once beside a
    CPU-heavy process; 3 parser epochs at most, so that the cap cuts the parser before the patience
    rule may judge it (from epoch 3 // 2 + 3 = 4): a cut while rising, warned of.
    {name: (stdout, record, model directory)}."""
    tmp = tmp_path_factory.mktemp("runs")
    runs = {}
    for name in ("alone", "busy"):
        busy = burner() if name == "busy" else None
        try:
            proc = train_parser("--train", treebank / "train.src.tree", "--dev", treebank / "valid.src.tree",
                                "--test", treebank / "test.src.tree", "--out", tmp / name, "--parser-epochs", "3",
                                *SMALL)
        finally:
            if busy:
                busy.kill()
                busy.wait()
        assert proc.returncode == 0, proc.stderr[-3000:]
        with open(tmp / name / "mgsa_parser.json") as f:
            runs[name] = proc.stdout, json.load(f), tmp / name
    return runs


def test_no_time_cap_by_default_and_the_same_model_on_a_busy_machine(two_runs):
    """Issue 37, point 2: the old defaults stopped the tagger after 7 and the parser after 20
    minutes, so a loaded machine got fewer epochs and a worse parser. Now both stop by steps,
    epochs and patience: the run beside a CPU-heavy process stops where the lone run does, with
    the same dev scores at every evaluation."""
    alone, busy = two_runs["alone"][1], two_runs["busy"][1]
    for record in (alone, busy):
        assert record["options"]["tagger_minutes"] is None and record["options"]["parser_minutes"] is None
        # the tagger's default step cap: ten evaluations, one per pass over the 40 sentences (2 steps)
        assert record["tagger"]["eval_interval"] == 2 and record["tagger"]["max_steps"] == 20
        assert not record["tagger"]["stopped"].startswith("time cap")
        assert record["parser_stopped"] == "epoch cap: 3 epochs (--parser-epochs)"
    assert [r["epoch"] for r in alone["parser_epochs"]] == [1, 2, 3]
    assert alone["tagger"]["dev_accuracy"] == busy["tagger"]["dev_accuracy"]
    assert alone["tagger"]["stopped"] == busy["tagger"]["stopped"]
    assert [r["dev_f1"] for r in alone["parser_epochs"]] == [r["dev_f1"] for r in busy["parser_epochs"]]
    assert alone["dev"]["f1"] == busy["dev"]["f1"] and alone["test"]["f1"] == busy["test"]["f1"]


def test_a_cap_that_cuts_training_while_dev_rises_is_a_warning(two_runs):
    """...in the final line and in the record: the parser's 3 epochs end before the patience rule
    (3 epochs without a new best, judged from epoch 4) could call it a plateau."""
    out, record, _ = two_runs["alone"]
    f1 = [r["dev_f1"] for r in record["parser_epochs"]]
    best = max(range(3), key=lambda i: (f1[i], -i))
    expected = (f"the epoch cap (3 epochs, --parser-epochs) stopped the parser after epoch 3 while its dev F1 still "
                f"rose (best {f1[best]:.2f} at epoch {best + 1}; patience 3, judged from epoch 4): more epochs may "
                f"give a better parser")
    assert record["warnings"][-1] == expected
    last = out.strip().splitlines()[-1]
    assert last.startswith("[mgsa-train-parser] done in ") and last.endswith("; warning: " + expected)
    assert last.count("; warning: ") == len(record["warnings"])


def test_cut_while_rising_against_the_rule_by_hand():
    rule = Plateau(patience=2, min_delta=0.1)
    for score in (50, 60, 59):  # best one evaluation ago: the rule would go on
        rule.observe(score)
    assert rule.cut_while_rising()
    rule.observe(59.5)  # two without a new best: the rule stops, a plateau
    assert rule.stopped_by == "patience" and not rule.cut_while_rising()
    early = Plateau(patience=1, min_delta=0.1, min_evals=5)
    for score in (50, 40, 30):  # falling, but before the rule may judge: cut early
        early.observe(score)
    assert early.cut_while_rising()
    capped = Plateau(patience=3, max_seconds=0.0)  # a time cap the user asked for, reached at once
    assert capped.observe(50) and capped.stopped_by == "time cap" and capped.cut_while_rising()


def test_mgsa_preprocess_repeats_the_warning(two_runs, treebank, tmp_path):
    _, record, model = two_runs["alone"]
    proc = subprocess.run([sys.executable, "-m", "mgsa_preprocess.cli", "-s", "src", "-t", "tgt",
                           "--trainpref", str(treebank / "test"), "--parser", "stanza", "--stanza-dir", str(model),
                           "--destdir", str(tmp_path / "bin"), "--no-progress-bar"],
                          env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    warned = [line for line in proc.stderr.splitlines() if line.startswith("mgsa-preprocess: warning: ")]
    assert warned == [f"mgsa-preprocess: warning: the parser in {model}: {w}" for w in record["warnings"]]


# --- point 3: nothing deleted before the inputs are checked; the old model kept until a new one is complete

def one_line_error(proc):
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr[-3000:]
    return lines[0]


def files_of(model):
    return {name: (model / name).read_bytes() for name in ("mgsa_parser.json", "pretrain.pt", "pos.pt",
                                                          "constituency.pt")}


def test_a_rerun_with_a_misspelled_input_keeps_the_trained_parser(two_runs, treebank, tmp_path):
    """The old command deleted pos.pt and constituency.pt before reading --train: the misspelled
    rerun stopped with one line, but the parser was gone while its record stayed."""
    model = tmp_path / "parser"
    shutil.copytree(two_runs["alone"][2], model)
    before = files_of(model)
    proc = train_parser("--train", treebank / "trian.src.tree", "--dev", treebank / "valid.src.tree", "--out", model,
                        *SMALL)
    assert one_line_error(proc) == (f"mgsa-train-parser: error: {treebank / 'trian.src.tree'}: cannot read the "
                                    f"treebank: No such file or directory")
    assert files_of(model) == before


def test_a_run_stopped_half_way_leaves_the_old_model_usable(two_runs, treebank, tmp_path):
    """A new model replaces the old one only once complete: a run killed while its tagger trains
    leaves the old files as they were (its own work in OUT/partial)."""
    from mgsa_preprocess.stanza_model import load_pipeline

    model = tmp_path / "parser"
    shutil.copytree(two_runs["alone"][2], model)
    before = files_of(model)
    proc = subprocess.Popen([sys.executable, "-m", "mgsa_preprocess.parser_training.train_parser", "--train",
                             str(treebank / "train.src.tree"), "--dev", str(treebank / "valid.src.tree"), "--out",
                             str(model), "--tagger-steps", "100000", "--tagger-patience", "100000", *SMALL],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for line in proc.stdout:
            if "tagger step" in line:  # training under way, in OUT/partial
                break
        assert (model / "partial" / "training").is_dir()
    finally:
        proc.kill()
        proc.wait()
    assert files_of(model) == before
    load_pipeline(str(model))  # the old parser loads as mgsa-preprocess loads it


# --- point 10: bad inputs, one line naming the file (and the line) -------------------------------

@pytest.mark.parametrize("case", ["not gzip", "truncated gzip", "bad vectors", "out is a file"])
def test_bad_word_vectors_and_out_are_one_line_naming_the_file(case, treebank, tmp_path):
    base = ["--train", treebank / "train.src.tree", "--dev", treebank / "valid.src.tree", "--out", tmp_path / "p"]
    text = (treebank / "train.src").read_text()
    if case == "not gzip":
        bad = tmp_path / "text.gz"
        bad.write_text(text)  # plain text under a .gz name
        expected = f"mgsa-train-parser: error: {bad}: cannot read the text for word vectors as a gzip file"
        args = base + ["--wordvec-text", bad]
    elif case == "truncated gzip":
        bad = tmp_path / "text.gz"
        whole = gzip.compress(text.encode() * 20)
        bad.write_bytes(whole[:len(whole) // 2])  # cut short, as by an interrupted copy
        expected = f"mgsa-train-parser: error: {bad}: the gzip file ends early, after line "
        args = base + ["--wordvec-text", bad]
    elif case == "bad vectors":
        bad = tmp_path / "vectors.txt"
        bad.write_text("3 4\nthe 0.1 0.2 0.3 0.4\ncat 0.1 0.2 x 0.4\ndog 0.1 0.2 0.3 0.4\n")
        expected = (f"mgsa-train-parser: error: {bad}:3: expected a word and 4 numbers (word2vec text format), "
                    f"got 'cat 0.1 0.2 x 0.4'")
        args = base + ["--wordvec", bad]
    else:
        bad = tmp_path / "p"
        bad.write_text("a file where the model directory should go\n")
        expected = f"mgsa-train-parser: error: {bad}: --out must name a directory (the model's), but this is a file"
        args = base
    line = one_line_error(train_parser(*args))
    assert line.startswith(expected), line
    assert not (tmp_path / "p").is_dir()  # nothing written
