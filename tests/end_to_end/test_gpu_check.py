"""scripts/gpu_check.sh --dry-run: the GPU check's phases on the CPU at the tiny dimensions, as CI
can run them: every registered system trained by fairseq in fp16 (its CPU path) and decoded in
fp16, the variants (bf16 in bfloat16), the invariants in float16 and bfloat16, the benchmark with
--fp16 and the realistic-batch one with bf16, the report; a check cut by a phase's time limit
keeps what it measured and says so; the total follows the phases' limits; bad options stop it
before any work.

The check's time limits are sized for a GPU (and a dry run on an idle CPU): a test that needs a
phase to end runs it under lifted limits, so that a busy machine (other jobs on the cores) does
not decide pass or fail; test_a_phase_over_its_limit_is_cut_and_reported_so checks the limits
themselves on a phase that cannot end in time on any machine."""

import json
import os
import re
import statistics
import subprocess
import sys
import time

import pytest

from fairseq_mgsa import systems as registry

from tests.paths import ROOT, checkout_pythonpath

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long

SCRIPT = os.path.join(ROOT, "scripts", "gpu_check.sh")


def run_check(*args, python=sys.executable):
    env = dict(os.environ, PYTHON=python, OMP_NUM_THREADS="1",
               PYTHONPATH=checkout_pythonpath())
    t0 = time.perf_counter()
    proc = subprocess.run(["bash", SCRIPT, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    return proc, time.perf_counter() - t0


def read_records(out):
    with open(os.path.join(out, "results.jsonl")) as f:
        return [json.loads(line) for line in f]


LIFT = 10  # times a dry-run phase's own limit (other jobs on 2 cores, load 4-7, cut the bench phase at its 150 s)


def lifted_limits():
    """{phase: LIFT times the limit the dry run's --plan gives it}, for every phase."""
    plan, _ = run_check("--dry-run", "--plan")
    limits = re.findall(r"(\w+) (\d+) s(?=[,;])", plan.stdout.split(": ", 1)[1])
    assert plan.returncode == 0 and limits, plan.stdout
    return {phase: LIFT * int(s) for phase, s in limits}


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("gpu_check") / "out")
    limits = lifted_limits()
    lift = [a for phase, s in limits.items() for a in ("--limit", f"{phase}={s}")]
    proc, seconds = run_check("--dry-run", "--out", out, *lift)
    print(f"gpu_check.sh --dry-run: {seconds:.0f} s")
    assert os.path.exists(os.path.join(out, "results.jsonl")), proc.stdout[-3000:]
    return dict(out=out, proc=proc, records=read_records(out), seconds=seconds, limits=limits)


def test_the_dry_run_passes_every_phase(dry_run):
    proc = dry_run["proc"]
    assert proc.returncode == 0, proc.stdout[-6000:]
    phases = {r["phase"]: r for r in dry_run["records"] if r["kind"] == "phase"}
    assert list(phases) == ["env", "data", "fp16", "variants", "invariants", "bench", "bench_big"]
    assert all(p["rc"] == 0 and not p["cut"] for p in phases.values()), phases
    # under the lifted limits: a busy machine does not decide
    assert {name: p["limit_s"] for name, p in phases.items()} == dry_run["limits"]
    # the summary table comes last, one row a phase
    last = proc.stdout.rstrip().splitlines()[-8:]
    assert last[0].split()[:5] == ["phase", "result", "seconds", "limit", "s"]
    assert [row.split()[0] for row in last[1:]] == list(phases)
    assert all(row.rstrip().endswith("pass") for row in last[1:]), last
    # each phase's time against 75% of its limit
    assert "75% of limit s" in last[0] and "time / 75% of limit" in last[0]
    for row in last[1:]:
        cells = re.split(r"\s{2,}", row.strip())
        p = phases[cells[0]]
        assert cells[2:6] == [str(p["seconds"]), str(p["limit_s"]), f"{0.75 * p['limit_s']:.1f}",
                              f"{100 * p['seconds'] / (0.75 * p['limit_s']):.1f}%"
                              + ("" if p["seconds"] <= 0.75 * p["limit_s"] else " (over)")], row
    with open(os.path.join(dry_run["out"], "summary.txt")) as f:
        assert f.read().rstrip().splitlines()[-8:] == last


def test_every_system_trains_and_decodes_in_fp16(dry_run):
    runs = {r["name"]: r for r in dry_run["records"] if r["kind"] == "run" and r["phase"] == "fp16"}
    # the depth variants run as their originals
    assert {n.split("/")[1] for n in runs} == {s.name for s in registry.distinct_models()}
    for name in (s.name for s in registry.distinct_models()):
        r = runs[f"fp16/{name}"]
        assert r["status"] == "pass" and r["problems"] == [], r
        assert r["ran_as"] == "fp16" and r["updates_done"] == r["updates"] == 8
        assert r["loss_last"] <= 0.9 * r["loss_first"]
        assert r["loss_scale_last"] is not None and r["overflow_skips"] >= 0  # fairseq's fp16 loss scaler ran
        assert r["hypotheses"] == r["test_lines"] == 16
        with open(os.path.join(dry_run["out"], r["log"])) as f:
            assert "--fp16" in f.readline()
    started = {r["name"] for r in dry_run["records"] if r["kind"] == "start"}
    assert started == {r["name"] for r in dry_run["records"] if r["kind"] == "run"}


def test_variants_and_what_they_ran_as_on_the_cpu(dry_run):
    runs = [r for r in dry_run["records"] if r["kind"] == "run" and r["phase"] == "variants"]
    assert sorted(r["name"] for r in runs) == ["bf16/mgsa_syntactic", "fp16/mgsa_syntactic@big",
                                               "memory-efficient-fp16/mgsa_syntactic"]
    by_precision = {(r["precision"], r["size"]): r for r in runs}
    bf16 = by_precision[("bf16", "base")]
    assert bf16["ran_as"].startswith("bf16") and bf16["bf16_device"] == "cpu"  # not fairseq's XLA path
    with open(os.path.join(dry_run["out"], bf16["log"])) as f:
        assert "--bf16" in f.readline()
    assert by_precision[("memory-efficient-fp16", "base")]["ran_as"] == "memory-efficient-fp16"
    assert by_precision[("fp16", "big")]["status"] == "pass"
    assert all(r["status"] == "pass" for r in by_precision.values())


def test_invariants_of_every_system_in_both_half_precisions(dry_run):
    inv = {(r["system"], r["dtype"]): r for r in dry_run["records"] if r["kind"] == "invariant"}
    assert set(inv) == {(s.name, d) for s in registry.distinct_models() for d in ("float16", "bfloat16")}
    for r in inv.values():
        assert r["status"] == "pass" and r["padding"] <= r["tolerance"] and r["incremental"] <= r["tolerance"], r
        assert r["backward"] <= r["backward_tolerance"] and r["backward_cosine"] >= 0.99, r


def test_benchmark_with_fp16_gives_the_ratios(dry_run):
    with open(os.path.join(dry_run["out"], "training_cpu_tiny.json")) as f:
        result = json.load(f)
    assert result["config"]["amp_dtype"] == "fp16"
    base, mgsa = result["systems"]["transformer"], result["systems"]["mgsa_syntactic"]
    assert base["time_ratio"] == base["flop_ratio"] == base["mem_ratio"] == 1
    for key in ("speed_ratio", "time_ratio", "flop_ratio", "overhead_ratio", "mem_ratio"):
        assert mgsa[key] > 0, key
    assert "mgsa_syntactic" in dry_run["proc"].stdout.split("bench:")[-1]


def test_realistic_batches_in_bf16_with_the_arithmetic_shares(dry_run):
    with open(os.path.join(dry_run["out"], "bench_big_cpu_tiny.json")) as f:
        result = json.load(f)
    c, rates = result["config"], result["device"]["arithmetic"]
    assert c["amp_dtype"] == "bf16" and rates["dtype"] == "bfloat16"
    # two grammar sentences a line: WMT-like lengths, not the grammar's ~13 tokens
    assert c["timed_tokens_src_tgt"] / 2 / c["timed_sentences"] > 20
    assert rates["nominal_TFLOPs"] is None and rates["matmul_TFLOPs"] > 0  # no data-sheet figure for a CPU
    for name in ("transformer", "mgsa_syntactic"):
        r = result["systems"][name]
        achieved = r["flops_per_update"] / statistics.median(r["interleaved_update_s"]) / 1e12
        assert r["achieved_TFLOPs"] == pytest.approx(achieved)
        assert r["matmul_share"] == pytest.approx(achieved / rates["matmul_TFLOPs"]) and r["peak_share"] is None
    report = dry_run["proc"].stdout.split("bench_big:")[-1]
    assert "of matmul" in report and "mgsa_syntactic" in report


def test_the_total_follows_the_limits(tmp_path):
    """--limit gives a phase its time even beyond the defaults' total (it was capped silently)."""
    out = str(tmp_path / "limits")
    proc, _ = run_check("--dry-run", "--out", out, "--phases", "env", "--limit", "env=600", "--limit", "data=900")
    assert "phases and time limits: env 600 s, data 900 s; at most 1500 s in all" in proc.stdout
    data = next(r for r in read_records(out) if r["kind"] == "phase" and r["phase"] == "data")
    assert data["limit_s"] == 900 and not data["cut"]
    # a phase with an underscore in its name too (bench_big's --limit was refused)
    plan, _ = run_check("--plan", "--limit", "fp16=300", "--limit", "bench_big=200")
    limits = dict(x.rsplit(" ", 2)[:2] for x in plan.stdout.split(": ", 1)[1].split(";")[0].split(", "))
    assert limits["fp16"] == "300" and limits["bench_big"] == "200" and len(limits) == 7
    assert f"at most {sum(map(int, limits.values()))} s in all" in plan.stdout


def test_the_gpu_plan_expects_every_phase_within_75_percent_of_its_limit():
    """The GPU's limits (scripts/gpu_check.sh) fit 9 minutes, and each phase's expected time
    (measured on the last H200 run) is within 75% of its limit."""
    plan, _ = run_check("--plan")
    first, second = plan.stdout.strip().splitlines()
    limits = {p: int(s) for p, s in re.findall(r"(\w+) (\d+) s(?=[,;])", first.split(": ", 1)[1])}
    expected = {p: (int(e), int(q)) for p, e, q in
                re.findall(r"(\w+) (\d+) s \(75% of its limit: (\d+) s\)", second)}
    assert list(limits) == list(expected) == ["env", "data", "fp16", "variants", "invariants", "bench", "bench_big"]
    assert sum(limits.values()) <= 540 and limits["env"] + limits["data"] + limits["fp16"] <= 180
    for phase, (e, q) in expected.items():
        assert q == limits[phase] * 3 // 4 and e <= 0.75 * limits[phase], (phase, e, limits[phase])
    assert "measured on an H200" in second and "bench_big not yet measured" in second
    assert f"about {sum(e for e, _ in expected.values())} s in all" in second


def test_a_cut_phase_keeps_what_it_measured(tmp_path):
    out = str(tmp_path / "cut")
    # env and data lifted: only fp16's limit is under test
    proc, _ = run_check("--dry-run", "--out", out, "--phases", "env,data,fp16", "--limit", "env=600",
                        "--limit", "data=900", "--limit", "fp16=20")
    assert proc.returncode != 0
    recs = read_records(out)
    fp16 = next(r for r in recs if r["kind"] == "phase" and r["phase"] == "fp16")
    assert fp16["cut"] and fp16["limit_s"] == 20
    done = [r for r in recs if r["kind"] == "run"]
    started = [r["name"] for r in recs if r["kind"] == "start"]
    assert len(done) < len(registry.distinct_models()) and len(started) == len(done) + 1
    report = proc.stdout
    assert "CUT by its time limit" in report
    row = next(line for line in report.splitlines() if line.startswith(started[-1] + " "))
    assert row.rstrip().endswith("cut")
    for r in done:  # the runs that ended before the cut are reported in full
        assert any(line.startswith(r["name"] + " ") and line.rstrip().endswith(r["status"])
                   for line in report.splitlines())


def test_a_phase_over_its_limit_is_cut_and_reported_so(tmp_path):
    """A phase that cannot end in time on any machine (PYTHON a program that only waits, the env
    phase's limit 1 s) is killed at its limit, recorded and reported as cut, and the check stops."""
    wait = tmp_path / "python"
    wait.write_text("#!/bin/sh\nexec sleep 120\n")
    wait.chmod(0o755)
    out = str(tmp_path / "cut")
    proc, seconds = run_check("--dry-run", "--out", out, "--limit", "env=1", python=str(wait))
    assert proc.returncode == 1 and seconds < 60, proc.stdout
    [env] = [r for r in read_records(out) if r["kind"] == "phase"]
    assert env["phase"] == "env" and env["cut"] and env["rc"] == 124 and env["limit_s"] == 1, env
    assert "[gpu-check] env: exit 124 in" in proc.stdout and "CUT by its time limit" in proc.stdout
    assert "the environment is not ready: stopping" in proc.stdout


@pytest.mark.parametrize("args,message", [
    (["--workers", "0"], "--workers: expected a positive integer, got '0'"),
    (["--limit", "fp16"], "--limit: expected PHASE=SECONDS"),
    (["--phases", "env,train"], "--phases: unknown phase 'train'"),
    (["--bogus"], "unknown option '--bogus'"),
])
def test_bad_options_stop_before_any_work(tmp_path, args, message):
    proc, _ = run_check("--out", str(tmp_path / "o"), *args)
    assert proc.returncode == 2 and message in proc.stdout
    assert not (tmp_path / "o").exists()


def test_an_earlier_check_is_not_overwritten(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "results.jsonl").write_text('{"kind": "env"}\n')
    proc, _ = run_check("--dry-run", "--out", str(out))
    assert proc.returncode == 2 and "holds the results of an earlier check" in proc.stdout
    assert (out / "results.jsonl").read_text() == '{"kind": "env"}\n'


def inner(update, loss, scale=128):
    stats = {"epoch": 1, "loss": str(loss), "num_updates": str(update), "loss_scale": str(scale)}
    return f"2026-01-01 00:00:00 | INFO | train_inner | {json.dumps(stats)}"


@pytest.mark.parametrize("lines,problem", [
    ([inner(10, 8.0), inner(20, 7.9)], "loss did not fall (8.000 -> 7.900)"),
    ([inner(10, 8.0), inner(20, "nan")], "loss not finite"),
    ([inner(10, 8.0), "x | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring gradient, "
      "setting loss scale to: 64.0", "NOTE: gradient overflow detected", "NOTE: gradient overflow detected",
      inner(20, 4.0, 64)], "3 fp16 overflow skips in 20 updates"),
    ([inner(10, 8.0)], "stopped at update 10 of 20"),
    ([inner(10, 8.0), "FloatingPointError: Minimum loss scale reached (0.0001).", inner(20, 4.0)],
     "minimum loss scale reached"),
])
def test_each_check_of_a_run_can_fail(lines, problem):
    from tests.gpu.check import runs

    fig = runs.training_figures(lines, 20)
    assert problem in runs.problems_of(fig, 20, hyps=16, n_test=16)


def test_a_missing_hypothesis_fails_the_run():
    from tests.gpu.check import runs

    fig = runs.training_figures([inner(10, 8.0), inner(20, 4.0)], 20)
    assert fig["overflow_skips"] == 0 and fig["loss_scale_last"] == 128
    assert runs.problems_of(fig, 20, hyps=16, n_test=16) == []
    assert runs.problems_of(fig, 20, hyps=15, n_test=16) == ["15 hypotheses for 16 test lines"]


def test_the_last_update_is_read_from_the_epoch_line():
    """64 updates logged every 10: the last per-interval line says 60, fairseq's end-of-epoch line
    64 (the first H200 run of these settings reported every run 'stopped at update 60 of 64')."""
    from tests.gpu.check import runs

    epoch = '2026-01-01 00:00:00 | INFO | train | {"epoch": 3, "train_loss": "5.0", "train_num_updates": "64"}'
    lines = [inner(10, 8.0), inner(60, 5.0), epoch]
    assert runs.training_figures(lines, 64)["updates_done"] == 64
    assert runs.problems_of(runs.training_figures(lines, 64), 64, hyps=16, n_test=16) == []
    assert "stopped at update 60 of 64" in runs.problems_of(runs.training_figures(lines[:2], 64), 64, hyps=16,
                                                            n_test=16)
