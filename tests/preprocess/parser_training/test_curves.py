"""The curves of mgsa-train-parser runs (preprocess/parser_training/curves.py), read from the model
directory of a real (tiny) run: the figures are the record's, --append keeps the other runs, a
directory without a record is one line before anything is written."""

import json
import subprocess
import sys

import pytest

from mgsa_preprocess.parser_training import curves
from tests.paths import checkout_env

ENV = checkout_env()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from mgsa_preprocess.synthetic import write_corpus

    tmp = tmp_path_factory.mktemp("curves")
    write_corpus(str(tmp), (("train", 40), ("valid", 10), ("test", 10)), seed=3)
    proc = subprocess.run([sys.executable, "-m", "mgsa_preprocess.parser_training.train_parser",
                           "--train", str(tmp / "train.src.tree"), "--dev", str(tmp / "valid.src.tree"),
                           "--test", str(tmp / "test.src.tree"), "--out", str(tmp / "model"), "--parser-epochs", "2",
                           "--hidden-size", "16", "--wordvec-dim", "8", "--quiet"],
                          env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp / "model" / "mgsa_parser.json") as f:
        return tmp / "model", json.load(f)


def test_the_curves_are_the_records_figures(model, tmp_path):
    directory, record = model
    assert record["tagger"]["dev_accuracy"] and record["parser_epochs"]
    curves.main(["--run", f"A={directory}", "--out", str(tmp_path / "c.json"), "--plot", str(tmp_path / "c.png")])
    [run] = json.loads((tmp_path / "c.json").read_text())["runs"]
    assert run["name"] == "A" and run["dev"] == record["dev"] and run["test"] == record["test"]
    assert [a for _, a in run["tagger_curve_minutes_accuracy"]] == record["tagger"]["dev_accuracy"]
    assert [f1 for _, f1 in run["parser_curve_minutes_dev_f1"]] == [e["dev_f1"] for e in record["parser_epochs"]]
    minutes = [m for m, _ in run["tagger_curve_minutes_accuracy"] + run["parser_curve_minutes_dev_f1"]]
    assert minutes == sorted(minutes) and minutes[-1] <= run["minutes"] + 0.1
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_append_keeps_the_other_runs_and_replaces_one_given_again(model, tmp_path):
    out = str(tmp_path / "c.json")
    curves.main(["--run", f"A={model[0]}", "--run", f"B={model[0]}", "--out", out])
    curves.main(["--run", f"A={model[0]}", "--out", out, "--append"])
    assert [r["name"] for r in json.loads(open(out).read())["runs"]] == ["B", "A"]
    curves.main(["--run", f"C={model[0]}", "--out", out])
    assert [r["name"] for r in json.loads(open(out).read())["runs"]] == ["C"]


def test_a_directory_without_a_record_is_one_line_before_anything_is_written(tmp_path):
    out = tmp_path / "c.json"
    proc = subprocess.run([sys.executable, "-m", "mgsa_preprocess.parser_training.curves",
                           "--run", f"A={tmp_path / 'missing'}", "--out", str(out)], env=ENV, capture_output=True,
                          text=True)
    assert proc.returncode == 2 and not out.exists()
    assert proc.stderr.strip().splitlines()[-1].endswith(f"(no {tmp_path / 'missing' / 'mgsa_parser.json'})")
