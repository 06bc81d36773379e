"""mgsa-train-parser's per-epoch lines (preprocess/parser_training/stanza_offline.py), with a fake clock and
fake epoch / dev functions standing for stanza's: figures against a plain computation."""

import io

from mgsa_preprocess.parser_training.stanza_offline import EpochProgress, duration


def test_epoch_lines_times_and_estimate():
    now = [100.0]
    out = io.StringIO()
    progress = EpochProgress(4, stream=out, clock=lambda: now[0])
    train_s, dev_s, f1s = [50, 70, 60], [5, 6, 7], [0.5, 0.75, 0.6]

    def one_epoch(epoch, data):
        now[0] += train_s[epoch - 1]
        return f"stats {epoch} {data}"

    def dev_set(model):
        now[0] += dev_s[len(progress.rows)]
        return f1s[len(progress.rows)], None, None

    train, dev = progress.wrap_epoch(one_epoch), progress.wrap_dev(dev_set)
    assert dev("m") == (0.5, None, None) and out.getvalue() == ""  # dev scoring outside an epoch: no line
    now[0] = 100.0
    for epoch in (1, 2, 3):
        assert train(epoch, "d") == f"stats {epoch} d"  # results pass through unchanged
        dev("m")
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    elapsed = [sum(train_s[:k]) + sum(dev_s[:k]) for k in (1, 2, 3)]
    left = [e / k * (4 - k) for k, e in zip((1, 2, 3), elapsed)]
    assert lines[1] == (f"[mgsa-train-parser] parser epoch 2/4: dev F1 75.00 (best 75.00, epoch 2) | epoch "
                        f"{duration(76)} (train {duration(70)}, dev 6s) | elapsed {duration(elapsed[1])}, "
                        f"about {duration(left[1])} left")
    assert lines[2].startswith("[mgsa-train-parser] parser epoch 3/4: dev F1 60.00 (best 75.00, epoch 2)")
    assert [r["train_seconds"] for r in progress.rows] == train_s and [r["dev_f1"] for r in progress.rows] == [
        50.0, 75.0, 60.0]


def test_duration():
    assert [duration(s) for s in (0, 59.4, 61, 3599, 3600, 7322)] == ["0s", "59s", "1m01s", "59m59s", "1h00m",
                                                                       "2h02m"]
