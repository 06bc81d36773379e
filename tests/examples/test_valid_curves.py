"""examples/common/valid_curves.py: every run's curves in one figure and, per run, where it
stopped, how (the rule or the cap), and how flat its stopping score (BLEU or loss) was there; a
folder without a train.log is one line naming it."""

import os

import pytest

from tests.paths import EXAMPLES, load_script

SCRIPT = os.path.join(EXAMPLES, "common", "valid_curves.py")


@pytest.fixture(scope="module")
def curves():
    return load_script(SCRIPT, "valid_curves")


def write_run(folder, bleus, patience, stopped_early, losses=None):
    """A train.log of fairseq's lines: one validation every 150 updates with these BLEUs (stopping on
    BLEU), or, given `losses`, with these losses and no BLEU (stopping on loss)."""
    os.makedirs(folder)
    metric = "loss" if losses else "bleu"
    lines = [f"2026-11-28 08:00:00 | INFO | fairseq_cli.train | {{'checkpoint': {{'best_checkpoint_metric': "
             f"'{metric}', 'patience': {patience}}}}}"]
    for i, score in enumerate(losses or bleus, 1):
        figures = f"loss {score:.3f}" if losses else f"loss {6 - i * 0.1:.3f} | bleu {score}"
        lines.append(f"2026-11-28 08:0{i % 10}:00 | INFO | valid | epoch 00{i} | valid on 'valid' subset | "
                     f"{figures} | num_updates {150 * i}")
    if stopped_early:
        lines.append("2026-11-28 08:09:00 | INFO | fairseq_cli.train | early stop since valid performance hasn't "
                     f"improved for last {patience} runs")
    else:
        n = 150 * len(losses or bleus)
        lines.append(f"2026-11-28 08:09:00 | INFO | fairseq_cli.train | Stopping training due to num_updates: "
                     f"{n} >= max_update: {n}")
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
    assert rows["transformer_seed1"][1:] == ["900", "the rule", "6", "bleu", "30.00 @ 450", "+20.00", "29.90",
                                             "30.00", "5.400"]
    assert rows["hysan_seed1"][1:] == ["450", "**the cap**", "3", "bleu", "15.00 @ 450", "+10.00", "-", "15.00",
                                       "5.700"]


def test_a_run_stopping_on_loss_is_measured_in_loss(curves, tmp_path):
    # Multi30k's rule: validation loss. Lowest 4.0 at the 4th validation (update 600); over the 300
    # updates before it the best fell from 5.0 (the best up to update 300) to 4.0; after it the lowest
    # is 4.05. No BLEU: one panel, and the BLEU column is empty.
    losses = [6.0, 5.0, 4.6, 4.0, 4.2, 4.05, 4.3]
    write_run(str(tmp_path / "mgsa_syntactic_seed2"), None, 3, True, losses=losses)
    table = tmp_path / "c.md"
    curves.main([str(tmp_path / "mgsa_syntactic_seed2"), "--out", str(tmp_path / "c.png"), "--table", str(table),
                 "--window", "300"])
    row = [c.strip() for c in table.read_text().splitlines()[2].strip("|").split("|")]
    best = min(losses)
    before_window = min(s for i, s in enumerate(losses, 1) if 150 * i < 600 - 300)
    assert row == ["mgsa_syntactic_seed2", str(150 * len(losses)), "the rule", str(len(losses)), "loss",
                   f"{best:.3f} @ 600", f"+{before_window - best:.3f}", f"{min(losses[4:]):.3f}", "-",
                   f"{best:.3f}"]


def test_a_folder_without_a_log_is_one_line(curves, tmp_path):
    with pytest.raises(SystemExit) as e:
        curves.main([str(tmp_path), "--out", str(tmp_path / "c.png")])
    assert str(e.value) == f"valid_curves.py: error: {tmp_path}: no train.log there (expected a run's folder or its train.log)"
