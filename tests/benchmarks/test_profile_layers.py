"""benchmarks/profile_layers.py on tiny inputs, both methods, with --before the checkout itself: an
earlier checkout's module (here the same code under another package name) is built and measured
beside the current one, and its counts are the current one's."""

import json

import pytest

from tests.paths import ROOT


@pytest.fixture
def run(tmp_path):
    from benchmarks import profile_layers

    def run(*argv):
        out = tmp_path / "profile.json"
        profile_layers.main([*argv, "--iters", "2", "--before", ROOT, "--out", str(out)])
        return json.loads(out.read_text())
    return run


def test_the_mgsa_layer_beside_the_same_code_as_before(run):
    result = run("mgsa", "--models", "syntactic", "--batch-sizes", "2")
    row = result["results"]["syntactic"]["batch 2"]
    for part in ("layer", "self-attention"):
        figures = row[part]
        assert list(figures) == ["baseline", "after", "after, GPU layout", "before"]
        assert figures["before"]["ops"] == figures["after"]["ops"]
        # every granularity composed at once: fewer operations than granularity by granularity
        assert figures["after, GPU layout"]["ops"]["leaf aten ops"] < figures["after"]["ops"]["leaf aten ops"]
        assert figures["baseline"]["speed ratio vs baseline (paired median)"] == 1.0
    assert result["command"].startswith("python -m benchmarks.profile_layers mgsa")


def test_a_pba_preset_beside_the_same_code_as_before(run):
    result = run("pba", "--presets", "homogeneous_convkv", "--batch", "3", "--length", "6", "--sentences", "2",
                 "--beam", "2", "--step", "3", "--ops", "2")
    steps = result["results"]["homogeneous_convkv"]
    assert list(steps) == ["training enc", "training dec", "decoding step"]
    for figures in steps.values():
        assert list(figures) == ["fairseq MHA", "after", "before"]
        assert figures["fairseq MHA"]["flop ratio"] == 1.0 and figures["after"]["flop ratio"] > 1.0
        assert figures["before"]["flops"] == figures["after"]["flops"]
        assert figures["before"]["leaf aten ops"] == figures["after"]["leaf aten ops"]
        assert len(figures["after"]["top ops"]) == 2
