"""The GPU check's tests run only under their runner, scripts/gpu_check.sh: it gives them the
check's output folder (MGSA_GPU_CHECK_OUT), runs the phases in order (the corpus of the data
phase is what the later ones train on) and each under its time limit. Elsewhere they skip,
saying so. Under the runner on a machine without CUDA they fail (the check would measure
nothing) unless rehearsing on the CPU (--dry-run: MGSA_GPU_TESTS_ON_CPU=1)."""

import logging
import os
import sys

import pytest
import torch

from ..conftest import REHEARSAL, gpu_or_skip, rehearsal
from . import settings as check_settings


SKIP = "a phase of the GPU check: run by scripts/gpu_check.sh (make gpu-check)"


@pytest.fixture(autouse=True)
def _gpu_only():  # replaces tests/gpu/conftest.py's: the check's own rule
    if check_settings.out_dir() is None:
        pytest.skip(SKIP)
    if not rehearsal() and not torch.cuda.is_available():
        pytest.fail(f"torch sees no CUDA device; --dry-run ({REHEARSAL}=1) runs the check on the CPU")
    gpu_or_skip()


@pytest.fixture(scope="session")
def out():
    """The check's output folder; fairseq's log lines at INFO reach the runs' captures."""
    path = check_settings.out_dir()
    if path is None:  # a session fixture is made before the autouse one above
        pytest.skip(SKIP)
    os.makedirs(path, exist_ok=True)
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO,
                        stream=sys.stdout, force=True)
    return path


@pytest.fixture(scope="session")
def dry_run() -> bool:
    return rehearsal()


@pytest.fixture(scope="session")
def data(out):
    """The data phase's binarized corpus."""
    path = check_settings.data_dir(out)
    if not os.path.isdir(path):
        pytest.fail(f"{path}: no corpus; the data phase makes it (scripts/gpu_check.sh runs it first)")
    return path
