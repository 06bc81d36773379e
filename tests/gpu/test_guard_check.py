"""The GPU check's tests (tests/gpu/check/) and their runner's rule, on any machine: outside
scripts/gpu_check.sh they skip, saying so; under it (MGSA_GPU_CHECK_OUT set) without CUDA they
fail, unless rehearsing on the CPU (MGSA_GPU_TESTS_ON_CPU=1), when the env phase writes its
record into the check's folder. Not a GPU test: the default suite runs it."""

import json
import os
import subprocess
import sys

import pytest
import torch

from tests.paths import ROOT, checkout_pythonpath

ENV_TEST = os.path.join("tests", "gpu", "check", "test_env.py")


def run_env_phase(**env):
    clean = {k: v for k, v in os.environ.items() if k not in ("MGSA_GPU_CHECK_OUT", "MGSA_GPU_TESTS_ON_CPU")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-m", "gpu", "-p", "no:cacheprovider", "-rs", ENV_TEST],
                          cwd=ROOT, env={**clean, "PYTHONPATH": checkout_pythonpath(), "OMP_NUM_THREADS": "1", **env},
                          capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def test_outside_the_runner_the_check_skips_saying_so():
    rc, out = run_env_phase()
    assert rc == 0 and "1 skipped" in out and "run by scripts/gpu_check.sh (make gpu-check)" in out, out


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")
def test_under_the_runner_without_cuda_it_fails(tmp_path):
    rc, out = run_env_phase(MGSA_GPU_CHECK_OUT=str(tmp_path))
    assert rc == 1 and "torch sees no CUDA device" in out, out
    assert not (tmp_path / "results.jsonl").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the rehearsal is refused where CUDA is present")
def test_the_rehearsal_runs_the_phase_on_the_cpu(tmp_path):
    rc, out = run_env_phase(MGSA_GPU_CHECK_OUT=str(tmp_path), MGSA_GPU_TESTS_ON_CPU="1")
    assert rc == 0 and "1 passed" in out, out
    [record] = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert record["kind"] == "env" and record["dry_run"] is True and not record["fairseq"].startswith("import failed")
