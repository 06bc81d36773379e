"""The fp16 and variants phases: fairseq-train then fairseq-generate of every registered system at
base size in fp16, and of syntactic MG-SA in bf16, with the memory-efficient fp16 optimizer and at
big size (runs.py: what is checked). scripts/gpu_check.sh runs a phase in N processes sharing the
GPU, process I taking every N-th run from the I-th (MGSA_GPU_CHECK_WORKER=I/N), and starts a
process again for the runs left when it exits 3: a CUDA error spoils a process's CUDA context."""

import logging

import pytest

from . import records
from .runs import phase_runs, run_one
from .settings import count_test_lines, settings, worker

pytestmark = pytest.mark.gpu


def this_workers(phase):
    i, n = worker()
    return phase_runs(phase)[i::n]


def check_run(run, out, data, dry_run):
    earlier = {r["name"]: r for r in records.read(out) if r.get("kind") == "run"}.get(run.name)
    if earlier is None:  # else: run before this worker's restart, its result stands
        from .settings import user_dir_path

        records.append(out, {"kind": "start", "phase": run.phase, "name": run.name})
        earlier = records.append(out, run_one(run, data, user_dir_path(), out, settings(dry_run, run.phase),
                                              count_test_lines(out)))
        logging.getLogger("gpu_check").info("%s %s %s", earlier["status"], run.name, "; ".join(earlier["problems"]))
        if earlier["device_error"]:
            pytest.exit(f"{run.name}: a device error; this process's CUDA context is spoilt", returncode=3)
    assert earlier["status"] == "pass", f"{run.name}: " + "; ".join(earlier["problems"])


@pytest.mark.parametrize("run", this_workers("fp16"), ids=lambda r: r.name)
def test_fp16(run, out, data, dry_run):
    check_run(run, out, data, dry_run)


@pytest.mark.parametrize("run", this_workers("variants"), ids=lambda r: r.name)
def test_variants(run, out, data, dry_run):
    check_run(run, out, data, dry_run)
