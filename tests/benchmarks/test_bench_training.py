"""benchmarks/bench_training.py, run as a user runs it, at the tiny size on 2 systems with 2
timed updates: the JSON's figures and how its ratios are made, the decoding benchmark's fixed
hypothesis length, its FLOPs per token and paired per-batch times, the copy-throughput probe,
the history line, and the table regenerated between its markers."""

import json
import os
import statistics
import subprocess
import sys

import pytest

from tests.paths import ROOT, checkout_pythonpath
SYSTEMS = ("transformer", "mgsa_ngram")
TEST_SENTENCES = 8
DECODE_BATCH, ROUNDS = 4, 2
README = """# Title

## Benchmarks

Before.
<!-- bench-training:start (written by benchmarks/bench_training.py --readme) -->
old table
<!-- bench-training:end -->
After.
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    readme = tmp / "README.md"
    readme.write_text(README)
    out, history = tmp / "result.json", tmp / "history.jsonl"
    cmd = [sys.executable, "-m", "benchmarks.bench_training", "--arch-size", "tiny",
           "--systems", ",".join(SYSTEMS), "--updates", "2", "--warmup", "1", "--max-tokens", "1024",
           "--train-sentences", "300", "--decode-sentences", str(TEST_SENTENCES), "--decode-rounds", str(ROUNDS),
           "--decode-batch-size", str(DECODE_BATCH), "--threads", "1", "--out", str(out), "--history", str(history), "--readme", str(readme)]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=checkout_pythonpath())
    proc = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-5000:]
    return dict(result=json.loads(out.read_text()), history=history.read_text().splitlines(),
                readme=readme.read_text(), stdout=proc.stdout)


def test_every_system_has_its_figures(run):
    systems = run["result"]["systems"]
    assert list(systems) == list(SYSTEMS)
    for name, r in systems.items():
        for key in ("params", "updates_per_s", "tokens_per_s", "peak_mem_MB", "flops_per_update",
                    "flop_ratio", "time_ratio", "time_ratio_q1", "time_ratio_q3", "overhead_ratio", "speed_ratio"):
            assert isinstance(r[key], (int, float)) and r[key] > 0, (name, key, r.get(key))
        assert len(r["interleaved_update_s"]) == 2
        assert r["peak_mem_MB_in_process"] > 0  # the own run's; peak_mem_MB: a process of its own
        assert r["flops_per_update"] == r["flops_forward"] + r["flops_backward"]
        assert r["time_ratio_q1"] <= r["time_ratio"] <= r["time_ratio_q3"]
        config = run["result"]["config"]
        assert r["tokens_per_s"] == pytest.approx(
            r["updates_per_s"] * config["own_timed_tokens_src_tgt"] / config["own_updates"])
        assert r["tokens_per_s_interleaved"] == pytest.approx(
            config["timed_tokens_src_tgt"] / sum(r["interleaved_update_s"]))
    # n-gram MG-SA adds arithmetic (composition, phrase keys and values) and parameters
    assert systems["mgsa_ngram"]["flops_per_update"] > systems["transformer"]["flops_per_update"]
    assert systems["mgsa_ngram"]["param_overhead_M"] > 0


def test_ratios_against_the_baseline(run):
    base, ngram = (run["result"]["systems"][n] for n in SYSTEMS)
    assert base["flop_ratio"] == 1 and base["time_ratio"] == 1 and base["overhead_ratio"] == 1
    assert ngram["flop_ratio"] == pytest.approx(ngram["flops_per_update"] / base["flops_per_update"])
    paired = statistics.median(m / b for m, b in zip(ngram["interleaved_update_s"], base["interleaved_update_s"]))
    assert ngram["time_ratio"] == pytest.approx(paired)
    assert ngram["overhead_ratio"] == pytest.approx(ngram["time_ratio"] / ngram["flop_ratio"])


def test_decoding_runs_the_same_sentences_to_the_same_length(run):
    cfg = run["result"]["config"]["decode"]
    assert cfg["sentences"] == TEST_SENTENCES and cfg["beam"] == 4 and cfg["length"] >= 1
    for name, r in run["result"]["systems"].items():
        d = r["decode"]
        assert d["sentences"] == TEST_SENTENCES
        assert d["hypothesis_tokens"] == [cfg["length"]], name  # every hypothesis exactly that long
        # the rate from the times of every batch in every round
        assert d["sentences_per_s"] == pytest.approx(TEST_SENTENCES * ROUNDS / sum(d["decode_batch_s"]))
        base = run["result"]["systems"]["transformer"]["decode"]["decode_batch_s"]
        assert d["speed_ratio_median"] == pytest.approx(statistics.median(
            b / t for t, b in zip(d["decode_batch_s"], base)))
    assert run["result"]["systems"]["transformer"]["decode"]["speed_ratio_median"] == 1


def test_history_line_and_readme_table(run):
    line = json.loads(run["history"][-1])
    assert list(line["systems"]) == list(SYSTEMS) and line["arch_size"] == "tiny"
    assert line["systems"]["mgsa_ngram"]["overhead_ratio"] == pytest.approx(
        run["result"]["systems"]["mgsa_ngram"]["overhead_ratio"], abs=1e-4)
    readme = run["readme"]
    assert readme.startswith("# Title\n\n## Benchmarks\n\nBefore.\n") and readme.endswith("After.\n")
    assert "old table" not in readme
    table = readme.split("<!-- bench-training:start")[1].split("<!-- bench-training:end -->")[0]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith("| system")]
    assert [r.split(" | ")[0][2:] for r in rows] == ["Transformer (fairseq)", "MG-SA n-gram"]
    header = table.splitlines()[1]
    copy = run["result"]["device"]["copy_GBps"]
    assert f"copy throughput {copy['start']:.1f} / {copy['end']:.1f} GB/s" in header
    ngram, columns = run["result"]["systems"]["mgsa_ngram"], rows[1].split(" | ")
    assert len(columns) == 13
    assert columns[3] == f"{ngram['kernel_ops']:,d} ({ngram['kernel_op_ratio']:.3f})"
    assert columns[4] == str(ngram["host_syncs"])
    assert columns[10].startswith(f"{ngram['decode']['time_ratio']:.3f} [")  # decoding time ratio [95% CI]
    assert columns[11].startswith(f"{ngram['decode']['overhead_ratio']:.3f} [")
    assert line["copy_GBps"] == {k: copy[k] for k in ("start", "end")}
    assert line["systems"]["mgsa_ngram"]["host_syncs"] == ngram["host_syncs"]
    assert line["systems"]["mgsa_ngram"]["decode_overhead_ratio"] == pytest.approx(
        ngram["decode"]["overhead_ratio"], abs=1e-4)


def test_kernel_operators_and_host_syncs_per_update(run):
    systems = run["result"]["systems"]
    base, ngram = systems["transformer"], systems["mgsa_ngram"]
    for name, r in systems.items():
        ops = r["ops"]
        assert r["kernel_ops"] == ops["kernel_ops"] == sum(p["kernel_ops"] for p in ops["by_phase"].values()), name
        assert r["host_syncs"] == ops["host_syncs"] == sum(ops["syncs_by_kind"].values()) == sum(
            ops["sync_sites"].values()), name
        assert min(ops["by_phase"][p]["kernel_ops"] for p in ("forward", "backward", "optimizer")) > 0, name
        assert r["kernel_op_ratio"] == pytest.approx(r["kernel_ops"] / base["kernel_ops"])
    # n-gram MG-SA's extra attention and composition are operators the Transformer does not run
    assert ngram["kernel_ops"] > base["kernel_ops"] and base["kernel_op_ratio"] == 1
    # Adam with foreach: the same handful of operators whatever the parameters
    assert ngram["ops"]["by_phase"]["optimizer"] == base["ops"]["by_phase"]["optimizer"]
    checks = run["result"]["targets"]["checks"]["mgsa_ngram"]
    assert checks["kernel_ops"]["value"] == ngram["kernel_op_ratio"]
    assert checks["host_syncs"]["pass"] == (ngram["host_syncs"] <= base["host_syncs"])
    assert "kernel operators/update" in run["stdout"] and "host syncs/update" in run["stdout"]


def test_copy_throughput_probe_is_recorded(run):
    copy = run["result"]["device"]["copy_GBps"]
    assert copy["start"] > 0 and copy["end"] > 0 and "256 MB" in copy["probe"]
    assert "copy throughput (256 MB tensor copy, read + write)" in run["stdout"]


def test_decoding_flops_per_token_and_paired_decoding_times(run):
    systems, cfg = run["result"]["systems"], run["result"]["config"]["decode"]
    base = systems["transformer"]["decode"]
    batches = -(-TEST_SENTENCES // DECODE_BATCH)
    for name, r in systems.items():
        d = r["decode"]
        # every sentence's best hypothesis: `length` tokens and the end-of-sentence token
        assert d["decode_generated_tokens"] == TEST_SENTENCES * (cfg["length"] + 1)
        assert d["decode_flops_per_token"] == pytest.approx(d["decode_flops"] / d["decode_generated_tokens"])
        assert 0 < d["decode_encoder_flops_share"] < 1
        assert len(d["decode_batch_s"]) == ROUNDS * batches  # paired per (round, batch)
        assert d["flop_ratio"] == pytest.approx(d["decode_flops_per_token"] / base["decode_flops_per_token"])
        pairs = [m / b for m, b in zip(d["decode_batch_s"], base["decode_batch_s"])]
        assert d["time_ratio"] == pytest.approx(statistics.median(pairs))
        lo, hi = d["time_ratio_ci95"]
        assert min(pairs) <= lo <= d["time_ratio"] <= hi <= max(pairs)
        assert d["overhead_ratio"] == pytest.approx(d["time_ratio"] / d["flop_ratio"])
        assert d["overhead_ratio_ci95"] == pytest.approx([lo / d["flop_ratio"], hi / d["flop_ratio"]])
    assert base["flop_ratio"] == 1 and base["time_ratio"] == 1
    # MG-SA's n-gram granularities work in encoder layer 1: more FLOPs per generated token
    assert systems["mgsa_ngram"]["decode"]["flop_ratio"] > 1
    checks = run["result"]["targets"]["checks"]["mgsa_ngram"]
    assert checks["decode_time_per_flop"]["value"] == systems["mgsa_ngram"]["decode"]["overhead_ratio"]
    assert checks["time_per_flop"]["ci95"] == pytest.approx(systems["mgsa_ngram"]["overhead_ratio_ci95"])


def test_overhead_targets_are_decided_only_where_the_interval_clears_them():
    from benchmarks.training import report

    def check(value, ci):
        r = {"overhead_ratio": value, "overhead_ratio_ci95": ci, "mem_ratio": None, "param_overhead_M": None,
             "speed_ratio": None, "decode": {"overhead_ratio": value, "overhead_ratio_ci95": ci}}
        checks = report.check_targets({"transformer": {}, "hysan": r}, "tiny", "transformer")["hysan"]
        assert checks["decode_time_per_flop"]["pass"] == checks["time_per_flop"]["pass"]
        assert checks["decode_time_per_flop"]["decided"] == checks["time_per_flop"]["decided"]
        return checks["time_per_flop"]

    limit = report.TARGETS["overhead_ratio_max"]["hysan"]
    assert limit == report.TARGETS["decode_overhead_ratio_max"]["hysan"] == 1.15
    below = check(1.05, [1.0, 1.1])
    assert below["pass"] and below["decided"]
    above = check(1.25, [1.2, 1.3])
    assert above["pass"] is False and above["decided"]
    spanning = check(1.12, [1.05, 1.2])
    assert spanning["pass"] and spanning["decided"] is False
    assert "within noise" in report.targets_table({"hysan": {"time_per_flop": spanning}})


def test_docs_page_holds_the_table_markers(tmp_path):
    """--readme's default target: docs/benchmarks.md, rewritten between its markers."""
    from benchmarks import bench_training
    from benchmarks.training import report

    assert bench_training.get_parser().parse_args(["--readme"]).readme == os.path.join(ROOT, "docs", "benchmarks.md")
    page = tmp_path / "benchmarks.md"
    text = open(os.path.join(ROOT, "docs", "benchmarks.md"), encoding="utf-8").read()
    page.write_text(text)
    result = {"config": {"arch_size": "tiny", "updates": 1, "warmup": 0, "max_tokens": 8, "decode": None},
              "device": {"name": "cpu", "type": "cpu", "copy_GBps": {"start": 1.0, "end": 2.0}},
              "date": "2026-01-01", "command": "cmd", "out": "out.json",
              "systems": {"transformer": {"label": "T", "params_M": 1.0, "param_overhead_M": 0, "flops_per_update": 1e9,
                                          "flop_ratio": 1, "time_ratio": 1, "overhead_ratio": 1, "tokens_per_s": 5,
                                          "mem_ratio": 1}}}
    report.rewrite_readme(str(page), result)
    new = page.read_text()
    assert new.split(report.README_START)[0] == text.split(report.README_START)[0]
    # a result written before the operator counts: their columns empty
    assert "| T | 1.00M | 1.0G (1.000) | - (-) | - | 1.000 | 1.000 | 5 | 1.000 | - (-) | - | - | - (-) |" in new
    counted = {**result, "systems": {"transformer": {**result["systems"]["transformer"], "kernel_ops": 1083,
                                                     "kernel_op_ratio": 1, "host_syncs": 8}}}
    report.rewrite_readme(str(page), counted)
    assert "| T | 1.00M | 1.0G (1.000) | 1,083 (1.000) | 8 | 1.000 |" in page.read_text()
    report.rewrite_readme(str(page), result)

    # a GPU run's table goes between markers of its own: the CPU table stays
    gpu = {**result, "device": {"name": "NVIDIA H100", "type": "cuda", "memory_GiB": 79.2, "cuda": "13.0",
                                "copy_GBps": {"start": 3000.0, "end": 3000.0}},
           "config": {**result["config"], "amp_dtype": "fp16"},
           "systems": {"transformer": {**result["systems"]["transformer"], "label": "G"}}}
    report.rewrite_readme(str(page), gpu)
    both = page.read_text()
    cpu_table = new.split(report.README_START)[1].split(report.README_END)[0]
    assert both.split(report.README_START)[1].split(report.README_END)[0] == cpu_table
    gpu_table = both.split(report.CUDA_START)[1].split(report.CUDA_END)[0]
    assert "NVIDIA H100 (cuda, 79.2 GiB, CUDA 13.0, autocast fp16)" in gpu_table
    assert "| G | 1.00M |" in gpu_table and "| G |" not in cpu_table


def test_a_missing_data_directory_is_one_line_before_any_work(tmp_path, capsys):
    from benchmarks import bench_training

    with pytest.raises(SystemExit) as stop:
        bench_training.main(["--data", str(tmp_path / "missing"), "--out", str(tmp_path / "result.json")])
    assert stop.value.code == 2 and not (tmp_path / "result.json").exists()
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(f"--data {tmp_path / 'missing'}: no such directory")
