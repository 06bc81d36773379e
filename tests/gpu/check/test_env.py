"""The env phase: versions and the GPU, recorded first; the check cannot go on without fairseq."""

import json
import platform

import pytest
import torch

from . import records

pytestmark = pytest.mark.gpu


def test_environment(out, dry_run):
    cuda = torch.cuda.is_available()
    rec = {"kind": "env", "phase": "env", "dry_run": dry_run, "python": platform.python_version(),
           "torch": torch.__version__, "cuda_available": cuda, "cuda": torch.version.cuda,
           "host": platform.node()}
    try:
        import fairseq
        rec["fairseq"] = fairseq.__version__
    except Exception as e:  # the check cannot go on: say why
        rec["fairseq"] = f"import failed: {e}"
    if cuda:
        p = torch.cuda.get_device_properties(0)
        rec.update({"gpu": torch.cuda.get_device_name(0), "gpu_memory_GiB": round(p.total_memory / 2 ** 30, 1),
                    "capability": f"{p.major}.{p.minor}", "bf16_supported": torch.cuda.is_bf16_supported()})
    records.append(out, rec)
    print(json.dumps(rec))
    assert not rec["fairseq"].startswith("import failed"), rec["fairseq"]
