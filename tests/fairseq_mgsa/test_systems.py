"""The registry of systems (fairseq_mgsa/systems.py): every entry builds with fairseq at every
size, its command line gives what the recipes read, and it stands alone (no fairseq import)."""

import os
import subprocess
import sys

import pytest

from fairseq_mgsa import systems

from tests.paths import ROOT
SCRIPT = os.path.join(ROOT, "fairseq_mgsa", "systems.py")


def cli(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


@pytest.mark.parametrize("size", systems.SIZES)
def test_every_system_parses_with_fairseq_at_every_size(size, tmp_path):
    from fairseq import options
    from fairseq.models import ARCH_MODEL_REGISTRY

    for s in systems.SYSTEMS.values():
        assert s.arch(size) in ARCH_MODEL_REGISTRY, (s.name, size)
        parser = options.get_training_parser()
        args = options.parse_args_and_arch(parser, input_args=[
            str(tmp_path), "--user-dir", os.path.join(ROOT, "fairseq_mgsa"), *s.train_args(size)])
        assert (args.task, args.arch, args.criterion) == (s.task, s.arch(size), s.criterion)
        if size in ("tiny", "cpu"):
            assert args.encoder_layers == (systems.scaled_layers(3, s.depth) if s.depth else 3)
            assert (args.encoder_embed_dim, args.encoder_ffn_embed_dim) == (128, 256 if size == "tiny" else 512) \
                or s.name == "transformer_matched"
        opts = list(s.model_args) + ["--end"]
        for opt, value in zip(opts, opts[1:]):  # each option with its value (a flag: True) reaches fairseq
            if opt.startswith("--"):
                expected = True if value.startswith("--") else value
                assert str(getattr(args, opt[2:].replace("-", "_"))) == str(expected), (s.name, opt)


def test_the_paper_default_and_the_baseline():
    syntactic = systems.get("mgsa_syntactic")
    assert syntactic.needs_trees and syntactic.task == "mgsa_translation"
    assert syntactic.arch("big") == "mgsa_transformer_big_syntactic"
    assert syntactic.criterion == "label_smoothed_cross_entropy_with_phrase_tags"
    assert systems.get(systems.BASELINE).arch("big") == "transformer_vaswani_wmt_en_de_big"
    assert [s.name for s in systems.select("transformer, mgsa_ngram")] == ["transformer", "mgsa_ngram"]
    assert systems.select("") == list(systems.SYSTEMS.values())
    with pytest.raises(systems.UnknownSystem, match="unknown system 'nope'; registered: transformer"):
        systems.get("nope")
    with pytest.raises(ValueError, match="phrase files are read by the mgsa_translation task"):
        systems.System("x", "X", systems.sized("mgsa_transformer"), needs_trees=True)


def test_command_line_without_fairseq():
    proc = cli("args", "mgsa_syntactic", "--size", "iwslt", "--lines")
    assert proc.returncode == 0 and proc.stdout.splitlines() == systems.get("mgsa_syntactic").train_args("iwslt")
    assert cli("args", "mgsa_ngram_onlstm").stdout.strip() == (
        "--task translation --arch mgsa_transformer --mgsa-interaction onlstm "
        "--criterion label_smoothed_cross_entropy")
    assert cli("needs-trees", "transformer", "mgsa_ngram").stdout == "no\n"
    assert cli("needs-trees", "transformer", "mgsa_syntactic").stdout == "yes\n"
    assert cli("get", "mgsa_syntactic", "task").stdout == "mgsa_translation\n"
    assert cli("names").stdout.split() == list(systems.SYSTEMS)
    assert cli("names", "--distinct").stdout.split() == [s.name for s in systems.distinct_models()]
    bad = cli("needs-trees", "transformer", "nope")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [
        f"python -m fairseq_mgsa.systems: error: unknown system 'nope'; registered: {', '.join(systems.SYSTEMS)}"]
    # read as a script, the registry imports neither fairseq nor torch
    proc = subprocess.run([sys.executable, "-c", f"import runpy, sys; runpy.run_path({SCRIPT!r}); "
                           "print('fairseq' in sys.modules, 'torch' in sys.modules)"], capture_output=True, text=True)
    assert proc.stdout.strip() == "False False"


@pytest.mark.parametrize("size", ["tiny", "cpu", "base", "big"])
def test_parameter_matched_baseline_within_5_percent_of_its_peer(size):
    """Counted from built models (meta device) without the token embeddings (a lookup: the
    matched model's are wider, by the dictionary's size times the added width)."""
    from fairseq_mgsa.analysis.compare.matched import PEER, count_params, matched_args, model_args

    matched, peer = systems.get("transformer_matched"), systems.get(PEER)
    n_matched = count_params(model_args(matched.train_args(size)), vocab=32000)[1]
    n_peer = count_params(model_args(peer.train_args(size)), vocab=32000)[1]
    n_base = count_params(model_args(systems.get("transformer").train_args(size)), vocab=32000)[1]
    assert abs(n_matched - n_peer) <= 0.05 * n_peer and n_base < 0.8 * n_peer  # the peer is larger: matching matters
    # the registry's dimensions are what matched_args finds from built models
    base_args = systems.get("transformer").train_args(size)
    assert matched_args(base_args, peer.train_args(size)) == list(matched.size_args[size])
    # the Transformer's shape, scaled: the head dimension and about the FFN ratio kept
    from fairseq import options
    from tests.fairseq_runs import USER_DIR
    b, m = (options.parse_args_and_arch(options.get_training_parser(), ["d", "--user-dir", USER_DIR, *model_args(a)])
            for a in (base_args, matched.train_args(size)))
    assert m.encoder_embed_dim > b.encoder_embed_dim and m.encoder_layers == b.encoder_layers
    assert m.encoder_embed_dim // m.encoder_attention_heads == b.encoder_embed_dim // b.encoder_attention_heads
    ratio = lambda a: a.encoder_ffn_embed_dim / a.encoder_embed_dim  # noqa: E731
    assert ratio(b) <= ratio(m) <= 1.7 * ratio(b)  # tiny: 2 -> 3.3, the head dimension's steps being coarse there


def test_parameter_matched_baseline_at_other_dimensions():
    """matched_args for other dimensions (as the demo's): within 5% of the peer, built."""
    from fairseq_mgsa.analysis.compare.matched import PEER, count_params, matched_args, model_args

    dims = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "64", "--decoder-embed-dim", "64",
            "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128",
            "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]
    base = ["--arch", "transformer", *dims]
    peer = ["--arch", systems.get(PEER).arch("base"), *dims]
    opts = matched_args(base, peer)
    n_matched, n_peer = count_params(base + opts, vocab=100)[0], count_params(peer, vocab=100)[0]
    assert abs(n_matched - n_peer) <= 0.05 * n_peer and int(opts[1]) > 64


DEPTH = {"transformer_10layer": ("transformer", 10), "pba_heterogeneous_convkv_4layer": ("pba_heterogeneous_convkv", 4)}


def test_depth_variants_are_registered_as_such():
    assert {s.name: (s.depth_of, s.depth) for s in systems.SYSTEMS.values() if s.depth} == DEPTH
    assert [s.name for s in systems.distinct_models()] == [n for n in systems.SYSTEMS if n not in DEPTH]
    for name, (plain, _) in DEPTH.items():  # the same system but for its layers
        s, p = systems.get(name), systems.get(plain)
        assert (s.archs, s.task, s.criterion, s.criterion_args, s.model_args, s.size_args, s.needs_trees) == (
            p.archs, p.task, p.criterion, p.criterion_args, p.model_args, p.size_args, p.needs_trees)
    for bad in (dict(depth=4), dict(depth_of="transformer"), dict(depth=-2, depth_of="transformer")):
        with pytest.raises(ValueError, match="a depth variant gives its depth"):
            systems.System("x", "X", systems.sized("mgsa_transformer"), **bad)


@pytest.mark.parametrize("name", sorted(DEPTH))
def test_depth_variants_build_with_the_layers_their_entry_gives(name):
    """The phrase-based attention paper's depth baselines: the same system as their 6-layer
    counterpart but for the layers, which the built models have in both stacks: `depth` at base,
    big and iwslt, its share (depth / 6) of the layers at the small sizes and other dimensions."""
    from fairseq_mgsa.analysis.compare.matched import count_params, model_args
    from tests.fairseq_runs import USER_DIR
    from fairseq import options
    import torch
    from fairseq.data import Dictionary
    from fairseq.tasks.translation import TranslationTask

    s, (plain_name, depth) = systems.get(name), DEPTH[name]
    plain = systems.get(plain_name)
    d = Dictionary()
    for size, layers in (("tiny", round(3 * depth / 6)), ("cpu", round(3 * depth / 6)), ("base", depth),
                         ("big", depth), ("iwslt", depth)):
        args = options.parse_args_and_arch(options.get_training_parser(), [
            "unused-data", "--user-dir", USER_DIR, *model_args(s.train_args(size)), "--share-all-embeddings"])
        with torch.device("meta"):
            model = TranslationTask(args, d, d).build_model(args)
        assert (len(model.encoder.layers), len(model.decoder.layers)) == (layers, layers), size
        # everything else as the 6-layer system: its options and these layers build the same model
        layer_opts = ["--encoder-layers", str(layers), "--decoder-layers", str(layers)]
        built = count_params(model_args(s.train_args(size)))
        assert built == count_params(model_args(plain.train_args(size)) + layer_opts)
    assert systems.scaled_layers(2, depth) == {10: 3, 4: 1}[depth]  # the demo's 2 layers


def transformer_layer_params(d, ffn, decoder):
    """A post-norm Transformer layer by hand: self-attention (and cross-attention in the decoder),
    each 4 d x d projections with biases, a layer norm after each sub-layer, the FFN."""
    attention = 4 * (d * d + d)
    ffn_params = d * ffn + ffn + ffn * d + d
    norms = (3 if decoder else 2) * 2 * d
    return (2 if decoder else 1) * attention + ffn_params + norms


def test_depth_variants_parameter_counts_as_documented():
    """Base size, a shared 37,000-token vocabulary (the paper's En-De setup): the counts that
    docs/peers.md and the README print beside the paper's (91M, 60M), from built models; the
    10-layer Transformer is the 6-layer one plus 4 encoder and 4 decoder layers counted by hand
    (the paper's 91M fits 10+10 layers; 10 encoder layers over 6 decoder layers would be 75.69M)."""
    from fairseq_mgsa.analysis.compare.matched import count_params, model_args

    def count(name, extra=()):
        return count_params(model_args(systems.get(name).train_args("base")) + list(extra), vocab=37000 - 4)[0]

    base, deep = count("transformer"), count("transformer_10layer")
    assert deep - base == 4 * (transformer_layer_params(512, 2048, False) + transformer_layer_params(512, 2048, True))
    assert round(deep / 1e6, 2) == 92.51 and round(count("transformer", ["--encoder-layers", "10"]) / 1e6, 2) == 75.69
    assert round(count("pba_heterogeneous_convkv_4layer") / 1e6, 2) == 60.96
    assert round(count("pba_heterogeneous_convkv") / 1e6, 2) == 81.98
