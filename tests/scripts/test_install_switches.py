"""scripts/install.sh's switches (issue 37, point 11): FLOAT and EDITABLE are 0 (off, the default)
or 1 (on), as every switch of the project; FLOAT=0 had ignored the lock file and EDITABLE=0 made an
editable install (both were tested for being set). The script runs with a stand-in for Python that
records the pip command and its constraints instead of installing anything."""

import os
import subprocess

import pytest

from tests.paths import ROOT
LOCK = os.path.join(ROOT, "requirements", "lock-py3.11.txt")

FAKE_PYTHON = """#!/usr/bin/env bash
# a stand-in for Python 3.11 with torch installed: answers install.sh's questions, records pip's call
case "$1" in
  -c)
    case "$2" in
      *version_info*) echo 3.11 ;;
      *__version__*|*"version('torch')"*) echo 2.13.0 ;;
    esac ;;
  -m)
    echo "$*" >> "$RECORD.pip"
    cat "$PIP_CONSTRAINT" > "$RECORD.constraints" ;;
esac
"""


def install(tmp_path, **switches):
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    record = tmp_path / "record"
    env = {k: v for k, v in os.environ.items() if k not in ("FLOAT", "EDITABLE", "TORCH_SPEC")}
    env.update(PYTHON=str(fake), RECORD=str(record), **switches)
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "install.sh")], env=env, capture_output=True,
                          text=True)
    pip = (tmp_path / "record.pip").read_text().split() if (tmp_path / "record.pip").exists() else None
    constraints = (tmp_path / "record.constraints").read_text().splitlines() if pip else None
    return proc, pip, constraints


def locked():
    with open(LOCK) as f:
        return [line.strip() for line in f if "==" in line and not line.startswith("torch==")]


@pytest.mark.parametrize("switches", [{}, {"FLOAT": "0", "EDITABLE": "0"}, {"FLOAT": "", "EDITABLE": ""}])
def test_zero_or_unset_means_off(tmp_path, switches):
    proc, pip, constraints = install(tmp_path, **switches)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert pip == ["-m", "pip", "install", "-q", ".[test]"]  # not editable
    assert set(locked()) <= set(constraints) and "torch==2.13.0" in constraints  # the lock is used
    assert "FLOAT=1" not in proc.stdout


def test_one_means_on(tmp_path):
    proc, pip, constraints = install(tmp_path, FLOAT="1", EDITABLE="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert pip == ["-m", "pip", "install", "-q", "-e", ".[test]"]
    assert constraints == ["torch==2.13.0"]  # the installed torch only: the rest floats
    assert "[install] FLOAT=1: not using the lock file" in proc.stdout


@pytest.mark.parametrize("name", ["FLOAT", "EDITABLE"])
def test_another_value_is_one_line_before_any_install(tmp_path, name):
    proc, pip, _ = install(tmp_path, **{name: "yes"})
    assert proc.returncode == 1 and pip is None
    assert proc.stderr.strip().splitlines() == [f"install.sh: error: {name} must be 0 (off) or 1 (on) (got 'yes')"]
