"""fairseq_patches/patience.py: a run resumed from checkpoint_last.pt stops on --patience at the
update where the same run left alone stops.

Both runs train fairseq's Transformer at learning rate 0 (no update changes a weight, so every
validation gives the first one's loss), validating every update with --patience 3: left alone it
stops at update 4 (update 1 sets the best, 2, 3 and 4 do not beat it). The interrupted run stops
at its cap after update 2, then is resumed with the cap raised: it must stop at update 4 too;
fairseq alone would count afresh from the resume and stop at update 6.
"""
import re
import subprocess

import pytest

from mgsa_preprocess.synthetic import write_corpus

from tests.paths import checkout_env
from tests.fairseq_runs import USER_DIR

TINY = ["--arch", "transformer", "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
        "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "2", "--decoder-attention-heads", "2", "--dropout", "0"]
RULE = ["--patience", "3", "--validate-interval-updates", "1", "--save-interval-updates", "1",
        "--validate-interval", "1000", "--save-interval", "1000", "--no-epoch-checkpoints"]


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("patience")
    write_corpus(str(tmp / "raw"), (("train", 48), ("valid", 8)), seed=5)
    subprocess.run(["fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt", "--trainpref",
                    str(tmp / "raw" / "train"), "--validpref", str(tmp / "raw" / "valid"), "--destdir", str(tmp / "bin"),
                    "--joined-dictionary", "--workers", "1"],
                   check=True, capture_output=True, env=checkout_env())
    return tmp


def train(tmp, save_dir, max_update, *extra):
    out = subprocess.run(["fairseq-train", str(tmp / "bin"), "--user-dir", USER_DIR, "--task", "translation",
                          *TINY, *RULE, "--optimizer", "adam", "--lr", "0", "--max-tokens", "400",
                          "--max-update", str(max_update), "--save-dir", str(tmp / save_dir), "--seed", "1",
                          "--num-workers", "0", "--no-progress-bar", *extra],
                         capture_output=True, text=True, env=checkout_env(), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout + out.stderr


def validations(log):
    return [int(u) for u in re.findall(r"valid on 'valid' subset .*?\| num_updates (\d+)", log)]


def test_a_resumed_run_stops_where_the_run_left_alone_stops(data_bin):
    alone = train(data_bin, "alone", 20)
    assert validations(alone) == [1, 2, 3, 4] and "early stop" in alone
    first = train(data_bin, "resumed", 2)
    assert validations(first) == [1, 2] and "early stop" not in first
    resumed = train(data_bin, "resumed", 20)
    assert validations(resumed) == [3, 4] and "early stop" in resumed


def test_reset_meters_starts_the_count_afresh_as_fairseq_does(data_bin):
    train(data_bin, "reset", 2)
    resumed = train(data_bin, "reset", 20, "--reset-meters")
    assert validations(resumed) == [3, 4, 5, 6] and "early stop" in resumed
