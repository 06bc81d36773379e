"""How much of the device's arithmetic a system's update uses: FLOPs per update over its median
interleaved update time, as a share of the data sheet's dense peak for the dtype (where the device is
in the table below) and of a large matrix product measured at the start of the run (what this device
reaches on a Transformer's one operation, so a share of it compares across machines). Element-wise
work and Adam's step are in the time but not in the FLOPs: the share is a lower bound of the
arithmetic units' occupancy (what model-FLOPs utilisation usually names).
"""

import statistics

import torch

from benchmarks.timing import synced_seconds

# dense tensor-core TFLOP/s for float16 and bfloat16 (the same on these chips), NVIDIA's data
# sheets; the first substring found in torch.cuda.get_device_name decides (so the longer names first)
NOMINAL_TFLOPS_HALF = (
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.4),      # SXM5
    ("H200", 989.4),      # the H100's chip with more memory (GH200 too)
    ("A100", 312.0),
    ("L40S", 362.1),
    ("L40", 181.0),
    ("L4", 121.0),
)


def nominal_peak(device, dtype):
    """(TFLOP/s, where the figure comes from) of the device's data sheet for `dtype`, or (None, why)."""
    if device.type != "cuda":
        return None, "no data-sheet figure for a CPU"
    if dtype not in (torch.float16, torch.bfloat16):
        return None, f"no data-sheet figure kept for {dtype}"
    name = torch.cuda.get_device_name(device)
    for key, tflops in NOMINAL_TFLOPS_HALF:
        if key in name:
            return tflops, f"{key} data sheet, dense {str(dtype).split('.')[-1]}"
    return None, f"{name} is not in benchmarks/training/arithmetic.py's table"


def matmul_rate(device, dtype, n=None, repeats=10):
    """Measured TFLOP/s of an n x n x n matrix product in `dtype` on `device` (median of
    `repeats` after one untimed; n: 8192 on a GPU, 256 on a CPU, where float16 has slow kernels)."""
    n = n or (8192 if device.type == "cuda" else 256)
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    torch.matmul(a, b)
    times = [synced_seconds(lambda: torch.matmul(a, b), device) for _ in range(repeats)]
    del a, b
    return 2 * n ** 3 / statistics.median(times) / 1e12, f"{n}x{n}x{n} {str(dtype).split('.')[-1]} matmul, median of {repeats}"


def shares(results, device, dtype):
    """Adds achieved TFLOP/s and its shares of both rates to every system's results (those with
    FLOPs and interleaved times); returns the device's rates for the result JSON."""
    nominal, nominal_source = nominal_peak(device, dtype)
    measured, probe = matmul_rate(device, dtype)
    for r in results.values():
        times = r.get("interleaved_update_s")
        if not times or not r.get("flops_per_update"):
            continue
        achieved = r["flops_per_update"] / statistics.median(times) / 1e12
        r["achieved_TFLOPs"] = achieved
        r["peak_share"] = achieved / nominal if nominal else None
        r["matmul_share"] = achieved / measured
    return {"dtype": str(dtype).split(".")[-1], "nominal_TFLOPs": nominal, "nominal_source": nominal_source,
            "matmul_TFLOPs": measured, "matmul_probe": probe,
            "achieved": "FLOPs per update (FlopCounterMode) / median interleaved update time (synchronised)"}
