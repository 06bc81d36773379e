"""examples/tatoeba_zh_en/valid_curves.py: every run's curves in one figure and, per run, where it
stopped, how (the rule or the cap), and how flat its validation BLEU was there; a folder without a
train.log is one line naming it."""

import importlib.util
import os

import pytest

from tests.paths import EXAMPLES

SCRIPT = os.path.join(EXAMPLES, "tatoeba_zh_en", "valid_curves.py")


@pytest.fixture(scope="module")
def curves():
    spec = importlib.util.spec_from_file_location("tatoeba_valid_curves", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_run(folder, bleus, patience, stopped_early):
    """A train.log of fairseq's lines: one validation every 150 updates with these BLEUs."""
    os.makedirs(folder)
    lines = [f"2026-11-28 08:00:00 | INFO | fairseq_cli.train | {{'checkpoint': {{'best_checkpoint_metric': 'bleu', "
             f"'patience': {patience}}}}}"]
    for i, b in enumerate(bleus, 1):
        lines.append(f"2026-11-28 08:0{i % 10}:00 | INFO | valid | epoch 00{i} | valid on 'valid' subset | "
                     f"loss {6 - i * 0.1:.3f} | bleu {b} | num_updates {150 * i}")
    if stopped_early:
        lines.append("2026-11-28 08:09:00 | INFO | fairseq_cli.train | early stop since valid performance hasn't "
                     f"improved for last {patience} runs")
    else:
        lines.append(f"2026-11-28 08:09:00 | INFO | fairseq_cli.train | Stopping training due to num_updates: "
                     f"{150 * len(bleus)} >= max_update: {150 * len(bleus)}")
    lines.append("2026-11-28 08:09:01 | INFO | fairseq_cli.train | done training in 540.0 seconds")
    with open(os.path.join(folder, "train.log"), "w") as f:
        f.write("\n".join(lines) + "\n")


def test_each_runs_stop_and_flatness(curves, tmp_path):
    # flat: the best (30) came 3 validations in, then three without a new best; 10 -> 29 -> 30 over
    # the 300 updates before it; capped: still rising when the cap cut it
    write_run(str(tmp_path / "transformer_seed1"), [10, 29, 30, 29.5, 28, 29.9], 3, True)
    write_run(str(tmp_path / "hysan_seed1"), [5, 10, 15], 3, False)
    png, table = tmp_path / "c.png", tmp_path / "c.md"
    curves.main([str(tmp_path / "transformer_seed1"), str(tmp_path / "hysan_seed1" / "train.log"),
                 "--out", str(png), "--table", str(table), "--window", "300"])
    assert png.stat().st_size > 0
    rows = {r.split(" | ")[0].strip("| "): [c.strip() for c in r.strip("|\n").split("|")]
            for r in table.read_text().splitlines()[2:]}
    assert rows["transformer_seed1"][1:] == ["900", "the rule", "6", "30.00 @ 450", "+20.00", "29.90", "5.400"]
    assert rows["hysan_seed1"][1:] == ["450", "**the cap**", "3", "15.00 @ 450", "+10.00", "-", "5.700"]


def test_a_folder_without_a_log_is_one_line(curves, tmp_path):
    with pytest.raises(SystemExit) as e:
        curves.main([str(tmp_path), "--out", str(tmp_path / "c.png")])
    assert str(e.value) == f"valid_curves.py: error: {tmp_path}: no train.log there (expected a run's folder or its train.log)"
