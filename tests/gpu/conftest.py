"""The GPU tests (`pytest -m gpu`): what they need and when they run.

Every test in this folder but the guard's own (test_guard*.py) goes through `gpu_or_skip`:
skipped, with its reason, on a machine without CUDA; failed, not skipped, where CUDA is
present but the kernels under test would not be what runs (TRITON_INTERPRET=1 runs Triton's
interpreter, MGSA_NO_TRITON=1 the torch fallback): a GPU run that passes must have run them.

Rehearsal: MGSA_GPU_TESTS_ON_CPU=1 runs the same tests on the CPU (the `device` fixture is
the CPU, `small` is True so that a test may shrink its sizes), to catch a test's own mistakes
before the one GPU run. A machine with CUDA refuses the switch (the run would pass on the
CPU and say nothing of the GPU).
"""

import os

# cuBLAS is deterministic only with a fixed workspace (the determinism tests); it must be set
# before the first cuBLAS handle is made, so at import, before any test runs
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import pytest  # noqa: E402
import torch  # noqa: E402

REHEARSAL = "MGSA_GPU_TESTS_ON_CPU"
NOT_THE_KERNELS = ("TRITON_INTERPRET", "MGSA_NO_TRITON")  # each, set to 1, replaces the GPU kernels


def rehearsal() -> bool:
    """True when the GPU tests run on the CPU (MGSA_GPU_TESTS_ON_CPU=1)."""
    return os.environ.get(REHEARSAL) == "1"


def gpu_or_skip():
    """Skip without CUDA (unless rehearsing on the CPU); fail where CUDA is present but the
    test would not run the GPU's kernels (the module docstring)."""
    cuda = torch.cuda.is_available()
    if rehearsal():
        if cuda:
            pytest.fail(f"{REHEARSAL}=1 on a machine with CUDA: the GPU tests would run on the CPU; unset it")
        return
    if not cuda:
        pytest.skip("needs a CUDA GPU")
    set_ = [f"{name}=1" for name in NOT_THE_KERNELS if os.environ.get(name) == "1"]
    if set_:
        pytest.fail(f"CUDA is present but {' and '.join(set_)} is set: the GPU tests would not run the GPU's "
                    f"kernels (Triton's interpreter or the torch fallback would); unset it")


def is_guard_test(path) -> bool:
    return os.path.basename(str(path)).startswith("test_guard")


@pytest.fixture(autouse=True)
def _gpu_only(request):
    if not is_guard_test(request.node.path):
        gpu_or_skip()


@pytest.fixture
def device() -> torch.device:
    return torch.device("cpu" if rehearsal() else "cuda")


@pytest.fixture
def small() -> bool:
    """True when rehearsing on the CPU: a test may shrink its sizes (never its checks)."""
    return rehearsal()


@pytest.fixture
def no_tf32():
    """float32 products in float32 (TF32 would round their operands to 10 bits)."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
