"""The README's quick start is run as written: the block after "A whole run on a toy
corpus" goes to bash in a temporary directory, and must end with mgsa-compare's table for
both systems (fairseq's Transformer trained with its own task, decoded with
--task mgsa_translation, beside syntactic MG-SA)."""

import json
import os
import re
import subprocess

import pytest

from tests.paths import ROOT

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long


def quick_start_block():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    after = text.split("A whole run on a toy corpus", 1)[1]
    return re.search(r"```bash\n(.*?)```", after, re.S).group(1)


def test_the_quick_start_runs_as_written(tmp_path):
    script = quick_start_block()
    assert "mgsa-compare" in script and "fairseq-train" in script
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    results = json.loads((tmp_path / "compare" / "results.json").read_text())
    assert "transformer" in json.dumps(results) and "mgsa_syntactic" in json.dumps(results)
    test_lines = len((tmp_path / "toy" / "test.tgt").read_text().splitlines())
    for system in ("transformer", "mgsa_syntactic"):
        hyps = (tmp_path / f"hyp-{system}.txt").read_text().splitlines()
        assert len(hyps) == test_lines  # every test sentence translated, in order
    assert "BLEU" in proc.stdout
