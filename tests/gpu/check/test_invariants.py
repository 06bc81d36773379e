"""The invariants phase: every system on the GPU in float16 and bfloat16 (invariants.py):
incremental decoding with beam reorders = the full forward, a sentence's scores the same however
it is padded, and one training step's gradients against the same step in float32."""

import json
import logging
import time

import pytest
import torch

from fairseq_mgsa import systems as registry

from . import invariants, records
from .runs import system_args
from .settings import settings, user_dir_path

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("system", [s.name for s in registry.distinct_models()])  # a depth variant: its original's modules
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_invariants(dtype, system, out, data, dry_run):
    s = settings(dry_run)
    device = torch.device("cpu" if s.cpu else "cuda")
    name = f"{dtype}/{system}"
    rec = {"kind": "invariant", "phase": "invariants", "name": name, "system": system, "dtype": dtype,
           "device": device.type}
    t0 = time.perf_counter()
    try:
        rec.update(invariants.check(system_args(system, "base", s.dims), data, user_dir_path(), device,
                                    invariants.DTYPES[dtype], s.invariant_sentences, s.invariant_steps))
        rec["status"] = "pass" if rec.pop("pass") else "FAIL"
    except Exception as e:  # a failure is a result: recorded, then the test fails on it
        logging.getLogger("gpu_check").exception("invariants of %s", name)
        rec.update({"status": "FAIL", "error": f"{type(e).__name__}: {e}"})
    rec["seconds"] = round(time.perf_counter() - t0, 1)
    records.append(out, rec)
    print(json.dumps(rec), flush=True)
    assert rec["status"] == "pass", rec
