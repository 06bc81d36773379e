"""benchmarks/recurrence_paths.py's dry run: every width, cell and shape a line with each path's
forward and backward time (on the CPU the loop kernel is left out: it needs a GPU)."""

import json

from benchmarks import recurrence_paths


def test_the_dry_run_writes_a_line_a_measurement(tmp_path):
    recurrence_paths.main(["--out", str(tmp_path), "--dry-run", "--dtypes", "fp32,bf16", "--reps", "1"])
    rows = [json.loads(line) for line in (tmp_path / "recurrence_paths.jsonl").read_text().splitlines()]
    assert {(r["D"], r["kind"], r["dtype"]) for r in rows} == {(D, k, d) for D in (8, 16) for k in ("onlstm", "lstm")
                                                               for d in ("fp32", "bf16")}
    for r in rows:
        assert not [k for k in r if k.endswith("_error")], r
        assert "git_commit" in r  # the code it measured, inside the result
        assert all(r[f"{p}_{d}_ms"] > 0 for p in ("cells", "torch") for d in ("fwd", "bwd")), r
