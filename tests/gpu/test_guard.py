"""The GPU tests' guard (tests/gpu/conftest.py's gpu_or_skip), on any machine: skipped without
CUDA, failed (not skipped) with CUDA under TRITON_INTERPRET=1 or MGSA_NO_TRITON=1, and the
CPU rehearsal switch refused where CUDA is present. Not a GPU test: the default suite runs it."""

import pytest
import torch
from _pytest.outcomes import Failed, Skipped

from tests.gpu.conftest import gpu_or_skip

SWITCHES = ("TRITON_INTERPRET", "MGSA_NO_TRITON", "MGSA_GPU_TESTS_ON_CPU")


@pytest.fixture
def machine(monkeypatch):
    """set(cuda, **env): a machine with or without CUDA and exactly these switches set."""
    def set_(cuda, **env):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
        for name in SWITCHES:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
    return set_


def test_without_cuda_it_skips_with_its_reason(machine):
    machine(False)
    with pytest.raises(Skipped, match="needs a CUDA GPU"):
        gpu_or_skip()
    machine(False, TRITON_INTERPRET="1")  # nothing to run the kernels on anyway: a skip
    with pytest.raises(Skipped, match="needs a CUDA GPU"):
        gpu_or_skip()


def test_with_cuda_it_runs(machine):
    machine(True)
    gpu_or_skip()  # neither skips nor fails
    machine(True, TRITON_INTERPRET="0", MGSA_NO_TRITON="0")
    gpu_or_skip()


@pytest.mark.parametrize("switch", ["TRITON_INTERPRET", "MGSA_NO_TRITON"])
def test_with_cuda_and_the_kernels_replaced_it_fails(machine, switch):
    machine(True, **{switch: "1"})
    with pytest.raises(Failed, match=f"{switch}=1"):
        gpu_or_skip()


def test_the_cpu_rehearsal(machine):
    machine(False, MGSA_GPU_TESTS_ON_CPU="1")
    gpu_or_skip()  # runs, on the CPU
    machine(True, MGSA_GPU_TESTS_ON_CPU="1")
    with pytest.raises(Failed, match="MGSA_GPU_TESTS_ON_CPU=1 on a machine with CUDA"):
        gpu_or_skip()


def test_the_guard_applies_to_every_gpu_test_file(machine):
    """The autouse fixture's file rule: every file of the folder but the guard's own."""
    from tests.gpu.conftest import is_guard_test

    assert is_guard_test("tests/gpu/test_guard.py")
    assert not is_guard_test("tests/gpu/test_attention_paths.py")
    assert not is_guard_test("tests/gpu/test_recurrence_kernels.py")
