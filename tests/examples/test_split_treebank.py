"""examples/common/split_treebank.py: the treebank split in file order, deterministic."""

import os
import subprocess
import sys

from tests.paths import ROOT, checkout_env

SCRIPT = os.path.join(ROOT, "examples", "common", "split_treebank.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=checkout_env())


def test_split_in_file_order_one_tree_a_line(tmp_path):
    trees = tmp_path / "trees"
    trees.mkdir()
    # 7 trees over three .mrg files (multi-line, as the PTB writes them) and a README that is not read
    texts = [f"( (S (NP (NN w{i}) ) (VP (VBD ran) )\n    (. .) ))\n" for i in range(7)]
    (trees / "wsj_0002.mrg").write_text(texts[3] + "\n" + texts[4])
    (trees / "wsj_0001.mrg").write_text("".join(texts[:3]))
    (trees / "wsj_0003.mrg").write_text(texts[5] + texts[6])
    (trees / "README").write_text("not a tree\n")
    proc = run("--trees", trees, "--out", tmp_path / "split", "--dev", 2, "--test", 1)
    assert proc.returncode == 0, proc.stderr
    flat = [" ".join(t.split()) + "\n" for t in texts]
    parts = {n: (tmp_path / "split" / f"{n}.mrg").read_text() for n in ("train", "dev", "test")}
    assert parts == {"train": "".join(flat[:4]), "dev": "".join(flat[4:6]), "test": flat[6]}
    assert proc.stderr.strip().endswith("train.mrg 4, dev.mrg 2, test.mrg 1")
    # files given one by one are taken in the order given
    proc = run("--trees", trees / "wsj_0003.mrg", trees / "wsj_0001.mrg", "--out", tmp_path / "s2", "--dev", 1,
               "--test", 1)
    assert (tmp_path / "s2" / "train.mrg").read_text() == "".join(flat[5:7] + flat[:1])


def test_too_few_trees_is_a_one_line_error(tmp_path):
    (tmp_path / "a.mrg").write_text("(S (NN a))\n(S (NN b))\n")
    proc = run("--trees", tmp_path / "a.mrg", "--out", tmp_path / "out")
    assert proc.returncode == 1 and not (tmp_path / "out").exists()
    assert proc.stderr.strip() == ("split_treebank.py: error: 2 trees in 1 files: too few for 400 dev and 400 test "
                                   "trees and at least one training tree")


def test_a_latin1_treebank_is_one_line_naming_line_and_column(tmp_path):
    (tmp_path / "a.mrg").write_bytes(b"(S (NN a))\n(S (NN caf" + "\u00e9".encode("latin-1") + b"))\n")
    proc = run("--trees", tmp_path / "a.mrg", "--out", tmp_path / "out", "--dev", 1, "--test", 1)
    assert proc.returncode == 1 and not (tmp_path / "out").exists()
    assert proc.stderr == (f"split_treebank.py: error: {tmp_path / 'a.mrg'}:2: not UTF-8 (byte 0xE9 at column 11); "
                           f"convert the file to UTF-8, e.g. iconv -f latin1 -t utf-8\n")


def test_out_that_would_write_over_an_input_is_refused(tmp_path):
    """--trees split/ --out split/ (a second split of the first one's folder): train.mrg is an input."""
    (tmp_path / "split").mkdir()
    trees = "".join(f"(S (NN w{i}))\n" for i in range(5))
    (tmp_path / "split" / "train.mrg").write_text(trees)
    proc = run("--trees", tmp_path / "split", "--out", tmp_path / "split", "--dev", 1, "--test", 1)
    assert proc.returncode == 1
    assert proc.stderr == (f"split_treebank.py: error: {tmp_path / 'split' / 'train.mrg'}: --out would write "
                           f"train.mrg over this input: give --out another folder\n")
    assert [p.name for p in (tmp_path / "split").iterdir()] == ["train.mrg"]
    assert (tmp_path / "split" / "train.mrg").read_text() == trees


def test_ctb_files_with_their_sgml(tmp_path):
    trees = tmp_path / "bracketed"
    trees.mkdir()
    tree = "( (IP (NP-SBJ (NN 工人{i})) (VP (VV 欢迎)) (PU 。)) )"
    (trees / "chtb_0002.fid").write_text("<DOC>\n<DOCID>CHTB_0002</DOCID>\n<TEXT>\n<S ID=3>\n" + tree.format(i=3)
                                         + "\n</S>\n</TEXT>\n</DOC>\n", encoding="utf-8")
    (trees / "chtb_0001.fid").write_text("<DOC>\n<TEXT>\n" + "".join(f"<S ID={i}> {tree.format(i=i)} </S>\n"
                                                                     for i in range(3)) + "</TEXT>\n</DOC>\n",
                                         encoding="utf-8")
    proc = run("--trees", trees, "--out", tmp_path / "split", "--dev", 1, "--test", 1, "--treebank-format", "ctb")
    assert proc.returncode == 0, proc.stderr
    parts = {n: (tmp_path / "split" / f"{n}.mrg").read_text(encoding="utf-8") for n in ("train", "dev", "test")}
    assert parts == {"train": tree.format(i=0) + "\n" + tree.format(i=1) + "\n", "dev": tree.format(i=2) + "\n",
                     "test": tree.format(i=3) + "\n"}
    proc = run("--trees", trees / "chtb_0001.fid", "--out", tmp_path / "s2", "--dev", 1, "--test", 1)  # as ptb
    assert proc.returncode != 0 and "--treebank-format ctb" in proc.stderr and len(proc.stderr.splitlines()) == 1
