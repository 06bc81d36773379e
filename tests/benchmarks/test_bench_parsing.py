"""benchmarks/bench_parsing.py starts its workers as processes of their own: each must import the
benchmarks package from wherever it runs (a worker started as a script file did not)."""

import subprocess

from tests.paths import ROOT


def test_a_worker_process_starts(tmp_path, monkeypatch):
    from benchmarks import bench_parsing

    monkeypatch.chdir(tmp_path)  # not the checkout's root
    a = bench_parsing.get_parser().parse_args(["--model", str(tmp_path / "model"), "--input", str(tmp_path / "in")])
    cmd, env = bench_parsing.worker_command(a, 1, 32, 0, 10, str(tmp_path / "parsed.0"))
    proc = subprocess.run(cmd + ["--help"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "usage:" in proc.stdout, proc.stderr[-2000:]
    assert env["PYTHONPATH"].split(":")[0] == ROOT and env["OMP_NUM_THREADS"] == "1"
