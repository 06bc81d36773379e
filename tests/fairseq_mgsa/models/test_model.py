"""The registered model: options, padding invariance of the encoder, checkpoint loading."""

import argparse
import io
import os

import pytest
import torch
from fairseq import options
from fairseq.data import Dictionary
from fairseq.tasks.translation import TranslationTask

import fairseq_mgsa  # noqa: F401  (registers the model)
from fairseq_mgsa import MGSAError
from fairseq_mgsa.models.mgsa_transformer import MGSATransformerModel, parse_mgsa_layers

USER_DIR = os.path.dirname(os.path.abspath(fairseq_mgsa.__file__))
TINY = ["--encoder-layers", "2", "--decoder-layers", "1", "--encoder-embed-dim", "16",
        "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]


def make_dict(n=20):
    d = Dictionary()
    for i in range(n):
        d.add_symbol(f"w{i}")
    return d


def build(extra, arch="mgsa_transformer", tiny=True):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, ["unused-data", "--user-dir", USER_DIR, "--arch", arch, *(TINY if tiny else []), *extra])
    d = make_dict()
    task = TranslationTask(args, d, d)
    return task.build_model(args), d


def test_architectures_have_the_papers_dimensions():
    base, _ = build([], tiny=False)
    big, _ = build([], arch="mgsa_transformer_big", tiny=False)
    assert isinstance(base, MGSATransformerModel)
    for model, dim, ffn, heads in ((base, 512, 2048, 8), (big, 1024, 4096, 16)):
        enc = model.encoder
        assert len(enc.layers) == 6 and len(model.decoder.layers) == 6
        assert enc.layers[0].self_attn.embed_dim == dim and enc.layers[0].fc1.out_features == ffn
        assert enc.layers[0].self_attn.num_heads == heads
        # MG-SA in layer 1 only, a quarter of the heads per granularity
        assert enc.mgsa_layer_ids == [0]
        assert enc.layers[0].self_attn.heads_per_granularity == heads // 4
        assert not hasattr(enc.layers[1].self_attn, "granularities")


@pytest.mark.parametrize("arch,dim,heads", [("mgsa_transformer_syntactic", 512, 8),
                                             ("mgsa_transformer_big_syntactic", 1024, 16),
                                             ("mgsa_transformer_iwslt_de_en_syntactic", 512, 4)])
def test_syntactic_architectures_are_the_papers_default(arch, dim, heads):
    def parse(*extra):
        return options.parse_args_and_arch(options.get_training_parser(),
                                           ["unused-data", "--user-dir", USER_DIR, "--arch", arch, *extra])

    args = parse()
    assert (args.encoder_embed_dim, args.encoder_attention_heads) == (dim, heads)
    assert (args.mgsa_layers, args.mgsa_granularities, args.mgsa_composition, args.mgsa_interaction) == \
        ("1", "word,syn1,syn2,syn3", "san", "onlstm")
    # an explicit option wins over the preset
    assert parse("--mgsa-interaction", "lstm").mgsa_interaction == "lstm"


def test_mgsa_layers_option():
    assert parse_mgsa_layers("1", 6) == [0]
    assert parse_mgsa_layers("1,2,3", 6) == [0, 1, 2]
    assert parse_mgsa_layers("all", 6) == list(range(6))
    with pytest.raises(ValueError, match="layer 7 is out of range, the encoder has layers 1..6"):
        parse_mgsa_layers("1,7", 6)
    with pytest.raises(ValueError, match="layer 0 is out of range"):
        parse_mgsa_layers("0", 6)
    with pytest.raises(ValueError, match="expected comma-separated layer numbers"):
        parse_mgsa_layers("first", 6)


@pytest.mark.parametrize("extra,error", [
    (["--mgsa-granularities", "word,fourgram"], "unknown MG-SA granularity 'fourgram'"),
    (["--mgsa-granularities", "word,ngram2,ngram3"], "4 heads cannot be split evenly over 3 granularities"),
    (["--mgsa-layers", "3"], "layer 3 is out of range, the encoder has layers 1..2"),
])
def test_bad_model_options_are_clear_errors_at_argument_parsing(extra, error):
    with pytest.raises(MGSAError, match=error):
        build(extra)


def batch(sentences, pad, left: bool):
    T = max(len(s) for s in sentences)
    out = torch.full((len(sentences), T), pad, dtype=torch.long)
    for b, s in enumerate(sentences):
        if left:
            out[b, T - len(s):] = torch.tensor(s)
        else:
            out[b, :len(s)] = torch.tensor(s)
    return out


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("composition,interaction", [("max", "none"), ("san", "onlstm"), ("lstm", "lstm")])
def test_encoder_output_is_the_same_alone_and_in_a_padded_batch(left, composition, interaction):
    model, d = build(["--mgsa-layers", "all", "--mgsa-composition", composition,
                      "--mgsa-interaction", interaction])
    model.eval()
    g = torch.Generator().manual_seed(0)
    sents = [torch.randint(4, len(d), (n,), generator=g).tolist() + [d.eos()] for n in (9, 4, 6, 1)]
    tokens = batch(sents, d.pad(), left)
    lengths = torch.tensor([len(s) for s in sents])
    with torch.no_grad():
        out = model.encoder(tokens, lengths)["encoder_out"][0]  # T x B x C
        for b, s in enumerate(sents):
            alone = model.encoder(torch.tensor([s]), torch.tensor([len(s)]))["encoder_out"][0][:, 0]
            real = tokens[b].ne(d.pad())
            torch.testing.assert_close(out[real.nonzero().squeeze(1), b], alone, atol=1e-5, rtol=1e-5)


def test_checkpoints_load_with_weights_only_and_protection_stays_on():
    buf = io.BytesIO()
    torch.save({"args": argparse.Namespace(arch="mgsa_transformer"), "model": {"w": torch.ones(2)}}, buf)
    buf.seek(0)
    state = torch.load(buf)  # torch >= 2.6: weights_only=True by default
    assert state["args"].arch == "mgsa_transformer"

    buf = io.BytesIO()
    torch.save({"x": argparse.ArgumentParser}, buf)  # any other class stays refused
    buf.seek(0)
    with pytest.raises(Exception, match="weights_only"):
        torch.load(buf)


def build_syntactic(extra=()):
    """A tiny syntactic model with a tag dictionary of 6 tags, as mgsa_translation builds it."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, ["unused-data", "--user-dir", USER_DIR, "--arch",
                                                "mgsa_transformer_syntactic", *TINY, *extra])
    d = make_dict()
    task = TranslationTask(args, d, d)
    task.tag_dictionary = Dictionary()
    for t in ["NP", "VP", "PP", "DT", "NN", "VBD"]:
        task.tag_dictionary.add_symbol(t)
    return task.build_model(args), d, task.tag_dictionary


def random_phrases(n_words, levels, g):
    """Nested random partitions of n_words words: level k+1 refines level k."""
    out, cuts = [], set()
    for _ in range(levels):
        cuts |= {int(c) for c in torch.randint(1, max(n_words, 2), (2,), generator=g) if 0 < c < n_words}
        bounds = [0, *sorted(cuts), n_words]
        out.append([b - a for a, b in zip(bounds, bounds[1:])])
    return out


@pytest.mark.parametrize("left", [True, False])
def test_syntactic_encoder_is_the_same_alone_and_in_a_padded_batch(left):
    model, d, tags = build_syntactic()
    model.eval()
    assert model.encoder.layers[0].self_attn.granularities == ["word", "syn1", "syn2", "syn3"]
    g = torch.Generator().manual_seed(1)
    sents = [torch.randint(4, len(d), (n,), generator=g).tolist() + [d.eos()] for n in (8, 3, 5, 1)]
    phrases = [random_phrases(len(s) - 1, 3, g) for s in sents]
    M = max(len(p) for ph in phrases for p in ph)

    def phrase_tensors(items):
        lengths = torch.zeros(3, len(items), M, dtype=torch.long)
        counts = torch.zeros(3, len(items), dtype=torch.long)
        for b, ph in enumerate(items):
            for k, lens in enumerate(ph):
                lengths[k, b, :len(lens)] = torch.tensor(lens)
                counts[k, b] = len(lens)
        return lengths, counts

    tokens = batch(sents, d.pad(), left)
    lengths, counts = phrase_tensors(phrases)
    with torch.no_grad():
        out = model.encoder(tokens, None, src_phrase_lengths=lengths, src_phrase_counts=counts)["encoder_out"][0]
        for b, s in enumerate(sents):
            l1, c1 = phrase_tensors([phrases[b]])
            alone = model.encoder(torch.tensor([s]), None, src_phrase_lengths=l1,
                                  src_phrase_counts=c1)["encoder_out"][0][:, 0]
            real = tokens[b].ne(d.pad()).nonzero().squeeze(1)
            torch.testing.assert_close(out[real, b], alone, atol=1e-5, rtol=1e-5)


def test_syntactic_granularity_without_phrase_data_is_a_clear_error():
    model, d, _ = build_syntactic()
    with pytest.raises(MGSAError, match="'syn1' needs the phrase files of mgsa-preprocess"):
        model.encoder(torch.tensor([[5, 6, d.eos()]]), None)
    with pytest.raises(MGSAError, match="'syn3' needs tree level 3, but the phrase files hold 2 levels"):
        model.encoder(torch.tensor([[5, 6, d.eos()]]), None,
                      src_phrase_lengths=torch.tensor([[[2]], [[2]]]), src_phrase_counts=torch.tensor([[1], [1]]))
