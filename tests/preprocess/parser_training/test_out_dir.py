"""mgsa-train-parser's --out (issue 45, point 1): `--out .` in the user's own folder deleted their
training/ (the treebank it was reading, their notes) and partial/ folders, exit 0. Now --out must
be new, empty, or a parser directory this command wrote; it must hold no input; and a rerun
replaces only the files its record lists as made. Each case snapshots every file of the user's
folder before and after."""

import json
import shutil
import subprocess

import pytest

from mgsa_preprocess import stanza_model as model_dir
from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.stanza_model import RECORD, read_record
from tests.paths import checkout_env, command
from tests.preprocess.conftest import TINY_PARSER


def snapshot(top):
    """{relative path: bytes} of every file, and every folder (None), under `top`."""
    return {str(p.relative_to(top)): (p.read_bytes() if p.is_file() else None) for p in sorted(top.rglob("*"))}


def train_parser(cwd, *args):
    return subprocess.run(command("mgsa-train-parser", *args, *TINY_PARSER), capture_output=True, text=True,
                          cwd=cwd, env=checkout_env(), timeout=600)


@pytest.fixture
def users_folder(tiny_parser, tmp_path):
    """The issue's folder: training/ with the treebank the command reads and the user's notes, and
    folders of their own (one named partial/)."""
    _, treebank = tiny_parser
    home = tmp_path / "home"
    (home / "training").mkdir(parents=True)
    for split in ("train", "valid"):
        shutil.copy(treebank / f"{split}.src.tree", home / "training" / f"{split}.mrg")
    (home / "training" / "notes.txt").write_text("where the treebank came from\n")
    (home / "thesis").mkdir()
    (home / "thesis" / "draft.tex").write_text("\\section{Parsing}\n")
    (home / "partial").mkdir()
    (home / "partial" / "half-done.txt").write_text("mine\n")
    return home


def test_out_dot_in_the_users_folder_is_refused_and_nothing_is_touched(users_folder):
    before = snapshot(users_folder)
    proc = train_parser(users_folder, "--train", "training/train.mrg", "--dev", "training/valid.mrg", "--out", ".")
    assert proc.returncode == 1
    assert proc.stderr == ("mgsa-train-parser: error: --out . holds the input training/train.mrg (--train): the model "
                           "directory is rewritten by every run; give --out a folder of its own (a new one, e.g. "
                           "parser/)\n")
    assert snapshot(users_folder) == before


@pytest.mark.parametrize("case", ["folder of the user's", "user's partial/ in a parser folder", "input in the parser folder",
                                  "parent of the input's folder"])
def test_a_folder_that_may_hold_the_users_files_is_refused(case, users_folder, tiny_parser):
    home = users_folder
    args = ["--train", "training/train.mrg", "--dev", "training/valid.mrg"]
    if case == "folder of the user's":
        out, expected = "thesis", ("thesis: --out holds files that mgsa-train-parser did not write (draft.tex): give a "
                                   "new or empty folder, or a parser directory this command wrote (one with "
                                   "mgsa_parser.json)")
    elif case == "user's partial/ in a parser folder":
        shutil.copytree(tiny_parser[0], home / "parser")
        (home / "parser" / "partial").mkdir()
        (home / "parser" / "partial" / "mine.txt").write_text("not the command's\n")
        out, expected = "parser", ("parser: --out holds a partial/ that mgsa-train-parser did not make (it builds the "
                                   "new model there): move it away, or give --out a new folder")
    elif case == "input in the parser folder":
        shutil.copytree(tiny_parser[0], home / "parser")
        args[1] = "parser/training/train.mrg"  # the working copy of the last run
        out, expected = "parser", ("--out parser holds the input parser/training/train.mrg (--train): the model "
                                   "directory is rewritten by every run; give --out a folder of its own (a new one, "
                                   "e.g. parser/)")
    else:
        (home / "training" / "treebank").mkdir()
        for name in ("train.mrg", "valid.mrg"):
            shutil.move(home / "training" / name, home / "training" / "treebank" / name)
        args = ["--train", "training/treebank/train.mrg", "--dev", "training/treebank/valid.mrg"]
        out, expected = "training", ("--out training holds the input training/treebank/train.mrg (--train): the "
                                     "model directory is rewritten by every run; give --out a folder of its own (a new "
                                     "one, e.g. parser/)")
    before = snapshot(home)
    proc = train_parser(home, *args, "--out", out)
    assert proc.returncode == 1
    assert proc.stderr == f"mgsa-train-parser: error: {expected}\n"
    assert snapshot(home) == before


def test_new_empty_and_stopped_run_folders_are_accepted(tmp_path):
    inputs = {"--train": str(tmp_path / "tb" / "train.mrg")}
    assert model_dir.check_out_dir(str(tmp_path / "new"), inputs) == []
    (tmp_path / "empty").mkdir()
    assert model_dir.check_out_dir(str(tmp_path / "empty"), inputs) == []
    stopped = tmp_path / "stopped"
    model_dir.staging_dir(str(stopped))  # what a run stopped before its model was complete leaves
    assert model_dir.check_out_dir(str(stopped), inputs) == []
    (stopped / "partial" / "training" / "train.mrg").write_text("(S (X x))\n")
    assert sorted(p.name for p in (stopped / "partial").iterdir()) == [model_dir.STAGING_MARK, "training"]
    model_dir.staging_dir(str(stopped))  # the next run empties it
    assert [p.name for p in (stopped / "partial" / "training").iterdir()] == []


def test_a_rerun_replaces_only_the_files_it_made(tiny_parser, tmp_path):
    """The user's files beside the model (and in its training/ folder) stay; the record lists what
    the run made, which is what the folder holds besides the user's files."""
    parser, treebank = tiny_parser
    home = tmp_path / "home"
    shutil.copytree(parser, home / "parser")
    (home / "parser" / "README").write_text("trained for the thesis\n")
    (home / "parser" / "training" / "mine.txt").write_text("a note among the working copies\n")
    old = read_record(str(home / "parser"))
    users = {"README", "training/mine.txt"}
    proc = train_parser(home, "--train", treebank / "train.src.tree", "--dev", treebank / "valid.src.tree",
                        "--out", "parser", "--seed", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = snapshot(home / "parser")
    assert after["README"] == b"trained for the thesis\n"
    assert after["training/mine.txt"] == b"a note among the working copies\n"
    record = read_record(str(home / "parser"))
    assert record["options"]["seed"] == 2 and old["options"]["seed"] == 1  # the new model's record
    files = {k for k, v in after.items() if v is not None}
    assert set(record["made"]) == files - users
    assert {RECORD, "pretrain.pt", "pos.pt", "constituency.pt", "resources.json", "training/train.mrg"} <= files
    assert "partial" not in after


def test_a_parser_folder_from_before_the_record_listed_its_files(tiny_parser, tmp_path):
    """A record without `made` (earlier versions): the layout those versions wrote is replaced,
    the user's file in training/ stays, their old partial/ (always the command's then) goes."""
    parser, treebank = tiny_parser
    home = tmp_path / "home"
    shutil.copytree(parser, home / "parser")
    record = json.loads((home / "parser" / RECORD).read_text())
    del record["made"]
    (home / "parser" / RECORD).write_text(json.dumps(record))
    (home / "parser" / "training" / "mine.txt").write_text("mine\n")
    (home / "parser" / "partial").mkdir()
    (home / "parser" / "partial" / "pos.pt").write_bytes(b"a stopped run's file")
    assert "training/train.mrg" in model_dir.made_files(record)
    proc = train_parser(home, "--train", treebank / "train.src.tree", "--dev", treebank / "valid.src.tree",
                        "--out", "parser")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (home / "parser" / "training" / "mine.txt").read_text() == "mine\n"
    assert not (home / "parser" / "partial").exists()
    assert "made" in read_record(str(home / "parser"))


def test_install_stops_before_replacing_anything_when_a_new_file_would_overwrite_the_users(tmp_path):
    """A file the new model makes, where the old model made none but the user put one: the old
    model and the user's file stay, the new model waits in partial/."""
    out = tmp_path / "parser"
    new = model_dir.staging_dir(str(out))
    for name in ("pretrain.pt", "pos.pt", "constituency.pt", "training/train.mrg", "training/dev.pred.conllu"):
        (out / "partial" / name).write_text("new " + name)
    old_made = [RECORD, "pos.pt"]
    (out / RECORD).write_text(json.dumps({"lang": "xx", "made": old_made}))
    (out / "pos.pt").write_text("old pos.pt")
    (out / "training").mkdir()
    (out / "training" / "dev.pred.conllu").write_text("the user's own")
    before = snapshot(out)
    with pytest.raises(PreprocessError) as e:
        model_dir.install_model(new, str(out), {"lang": "xx"}, old_made)
    assert str(e.value) == (f"{out}/training/dev.pred.conllu: the new model is complete in {new}, but "
                            f"training/dev.pred.conllu in the model directory is not a file of the old model: move it "
                            f"away and run the command again")
    after = snapshot(out)
    assert {k: v for k, v in after.items() if not k.startswith("partial")} == \
        {k: v for k, v in before.items() if not k.startswith("partial")}
