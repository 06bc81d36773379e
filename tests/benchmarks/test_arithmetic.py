"""benchmarks/training/arithmetic.py: the data-sheet peak by device name, the measured matrix
product's rate, and each system's achieved rate and shares, against a computation written here."""

import statistics

import pytest
import torch

from benchmarks.training import arithmetic

CUDA = torch.device("cuda")


@pytest.mark.parametrize("name,tflops", [
    ("NVIDIA H100 80GB HBM3", 989.4), ("NVIDIA H100 PCIe", 756.0), ("NVIDIA H100 NVL", 835.0),
    ("NVIDIA H200", 989.4), ("NVIDIA GH200 480GB", 989.4), ("NVIDIA A100-SXM4-80GB", 312.0),
    ("NVIDIA L4", 121.0), ("NVIDIA L40S", 362.1), ("NVIDIA L40", 181.0), ("Tesla V100-SXM2-16GB", None),
])
def test_the_data_sheet_peak_by_device_name(monkeypatch, name, tflops):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    for dtype in (torch.bfloat16, torch.float16):
        value, source = arithmetic.nominal_peak(CUDA, dtype)
        assert value == tflops and (source.endswith(str(dtype).split(".")[-1]) if tflops else name in source)
    assert arithmetic.nominal_peak(CUDA, torch.float32)[0] is None
    assert arithmetic.nominal_peak(torch.device("cpu"), torch.bfloat16)[0] is None


def test_shares_are_flops_over_the_median_time_over_each_rate(monkeypatch):
    monkeypatch.setattr(arithmetic, "matmul_rate", lambda device, dtype: (2.0, "probe"))
    monkeypatch.setattr(arithmetic, "nominal_peak", lambda device, dtype: (10.0, "sheet"))
    results = {"a": {"flops_per_update": 3e12, "interleaved_update_s": [1.0, 2.0, 4.0]},
               "b": {"flops_per_update": 1e12, "interleaved_update_s": [0.5, 0.5]},
               "c": {"flops_per_update": 1e12}}  # no interleaved times: left alone
    rates = arithmetic.shares(results, torch.device("cpu"), torch.bfloat16)
    assert rates["matmul_TFLOPs"] == 2.0 and rates["nominal_TFLOPs"] == 10.0 and rates["dtype"] == "bfloat16"
    for r in (results["a"], results["b"]):
        achieved = r["flops_per_update"] / statistics.median(r["interleaved_update_s"]) / 1e12
        assert r["achieved_TFLOPs"] == pytest.approx(achieved)
        assert r["matmul_share"] == pytest.approx(achieved / 2.0) and r["peak_share"] == pytest.approx(achieved / 10.0)
    assert "achieved_TFLOPs" not in results["c"]


def test_the_measured_matmul_rate_is_its_flops_over_its_time():
    rate, probe = arithmetic.matmul_rate(torch.device("cpu"), torch.float32, n=64, repeats=3)
    assert rate > 0 and probe == "64x64x64 float32 matmul, median of 3"
