"""The registered `pba_transformer` model: architectures and presets, option errors,
incremental decoding with beam reordering = the full forward, causality, source
padding side, and parameter counts of whole models against the formulas."""

import itertools

import pytest
import torch
from fairseq import options
from fairseq.models.transformer import TransformerModel

from fairseq_mgsa import MGSAError
from fairseq_mgsa.models.pba_transformer import PBATransformerModel
from fairseq_mgsa.modules.pba.attention import PhraseBasedAttention
from tests.fairseq_mgsa.models.test_model import USER_DIR, build
from tests.fairseq_mgsa.modules.pba.test_modules import extra_parameters

COMBOS = list(itertools.product(["convkv", "queryk"], ["homogeneous", "heterogeneous", "interleaved"]))
DEC2 = ["--decoder-layers", "2", "--dropout", "0.1", "--attention-dropout", "0.1"]


def parse(arch, *extra):
    return options.parse_args_and_arch(options.get_training_parser(),
                                       ["unused-data", "--user-dir", USER_DIR, "--arch", arch, *extra])


@pytest.mark.parametrize("size,dim,heads", [("", 512, 8), ("_big", 1024, 16), ("_iwslt_de_en", 512, 4)])
def test_architectures_and_presets(size, dim, heads):
    args = parse(f"pba_transformer{size}")
    assert (args.encoder_embed_dim, args.encoder_attention_heads) == (dim, heads)
    assert (args.pba_attention, args.pba_mode, args.pba_ngrams, args.pba_roles, args.pba_layers) == \
        ("convkv", "heterogeneous", "1,2", "enc,dec,cross", "all")
    args = parse(f"pba_transformer_interleaved_queryk{size}")
    assert (args.encoder_embed_dim, args.pba_attention, args.pba_mode) == (dim, "queryk", "interleaved")
    # an explicit option wins over the preset
    args = parse(f"pba_transformer_homogeneous_convkv{size}", "--pba-ngrams", "1,1,1,2")
    assert (args.pba_mode, args.pba_ngrams) == ("homogeneous", "1,1,1,2")


@pytest.mark.parametrize("extra,message", [
    (["--pba-mode", "interleaved", "--pba-ngrams", "1,2,3"], "the interleaved mode is defined for 1,2 only"),
    (["--pba-mode", "homogeneous", "--pba-ngrams", "1,2,3"], "4 heads cannot be split evenly over 3 head groups"),
    (["--pba-ngrams", "1,two"], "--pba-ngrams '1,two': expected comma-separated n-gram sizes"),
    (["--pba-roles", "enc,self"], "--pba-roles 'enc,self': expected a comma-separated subset of enc,dec,cross"),
    (["--pba-layers", "2", "--pba-roles", "dec,cross"], "layer 2 is out of range, the decoder has layers 1..1"),
    (["--pba-queryk-shared-key"], "applies to heterogeneous or interleaved QUERYK only"),
    (["--quant-noise-pq", "0.1"], "--quant-noise-pq is not supported by phrase-based attention"),
])
def test_bad_options_stop_at_argument_parsing(extra, message):
    with pytest.raises(MGSAError, match=message.replace("(", r"\(")):
        build(extra, arch="pba_transformer")


def test_roles_and_layers_select_the_attention_modules():
    model, _ = build(["--pba-roles", "dec", "--pba-layers", "2", *DEC2], arch="pba_transformer")
    assert isinstance(model, PBATransformerModel)
    assert not any(isinstance(m, PhraseBasedAttention) for m in model.encoder.modules())
    dec = model.decoder.layers
    assert not isinstance(dec[0].self_attn, PhraseBasedAttention)
    assert isinstance(dec[1].self_attn, PhraseBasedAttention) and dec[1].self_attn.role == "dec"
    assert not isinstance(dec[1].encoder_attn, PhraseBasedAttention)
    model, _ = build([], arch="pba_transformer")  # default: every layer and role
    roles = [m.role for m in model.modules() if isinstance(m, PhraseBasedAttention)]
    assert sorted(roles) == ["cross", "dec", "enc", "enc"]


def tokens(rows, left_pad, pad=1, eos=2):
    L = max(len(r) for r in rows)
    out = torch.full((len(rows), L), pad)
    for i, r in enumerate(rows):
        r = torch.tensor(r)
        if left_pad:
            out[i, L - len(r):] = r
        else:
            out[i, :len(r)] = r
    return out


@pytest.fixture(scope="module")
def models():
    return {c: build(["--pba-attention", c[0], "--pba-mode", c[1], *DEC2], arch="pba_transformer")[0].eval()
            for c in COMBOS}


SRC = [[5, 6, 7, 8, 2], [9, 10, 2], [11, 5, 12, 6, 13, 2], [7, 2]]
PREV = torch.tensor([[2, 5, 9, 7, 14, 6], [2, 8, 8, 10, 3, 4], [2, 12, 13, 15, 16, 5], [2, 4, 6, 19, 11, 9]])


@pytest.mark.parametrize("combo", COMBOS)
def test_incremental_decoding_with_beam_reordering_equals_the_full_forward(models, combo):
    model = models[combo]
    src = tokens(SRC, left_pad=True)
    lengths = torch.tensor([len(r) for r in SRC])
    torch.manual_seed(0)
    with torch.no_grad():
        full, extra = model(src, lengths, PREV)
        enc = model.encoder(src, lengths)
        state, order = {}, torch.arange(len(SRC))
        for t in range(PREV.size(1)):
            out, step_extra = model.decoder(PREV[order, :t + 1], encoder_out=enc, incremental_state=state)
            assert torch.allclose(out[:, 0], full[order, t], atol=1e-5), (combo, t)
            assert torch.allclose(step_extra["attn"][0][:, 0], extra["attn"][0][order, t], atol=1e-6)
            # a beam reorder, hypotheses duplicated and dropped as beam search does
            new_order = torch.randint(0, len(SRC), (len(SRC),))
            model.decoder.reorder_incremental_state_scripting(state, new_order)
            enc = model.encoder.reorder_encoder_out(enc, new_order)
            order = order[new_order]


@pytest.mark.parametrize("combo", COMBOS)
def test_a_later_target_token_never_changes_earlier_outputs(models, combo):
    model = models[combo]
    src = tokens(SRC, left_pad=True)
    lengths = torch.tensor([len(r) for r in SRC])
    with torch.no_grad():
        full, _ = model(src, lengths, PREV)
        for t in range(PREV.size(1) - 1):
            changed = PREV.clone()
            changed[:, t + 1] = 17
            out, _ = model(src, lengths, changed)
            assert torch.equal(out[:, :t + 1], full[:, :t + 1]), (combo, t)
            assert not torch.allclose(out[:, t + 1], full[:, t + 1])


@pytest.mark.parametrize("combo", COMBOS)
def test_source_padding_side_does_not_change_the_translation_scores(models, combo):
    model = models[combo]
    lengths = torch.tensor([len(r) for r in SRC])
    with torch.no_grad():
        left, _ = model(tokens(SRC, left_pad=True), lengths, PREV)
        right, _ = model(tokens(SRC, left_pad=False), lengths, PREV)
        alone, _ = model(tokens(SRC[1:2], left_pad=True), lengths[1:2], PREV[1:2])
    assert torch.allclose(left, right, atol=1e-5)
    assert torch.allclose(left[1:2], alone, atol=1e-5)


@pytest.mark.parametrize("combo", COMBOS)
def test_model_parameters_follow_the_formulas(combo):
    """Whole model (6+6 layers, d 64, 8 heads) minus fairseq's transformer = 18 times the
    per-module formula of docs/peers.md (6 encoder self, 6 decoder self, 6 cross)."""
    size = ["--encoder-embed-dim", "64", "--decoder-embed-dim", "64", "--encoder-ffn-embed-dim", "64",
            "--decoder-ffn-embed-dim", "64"]
    attention, mode = combo
    pba, _ = build(["--pba-attention", attention, "--pba-mode", mode, *size], arch="pba_transformer", tiny=False)
    base, _ = build([*size], arch="transformer", tiny=False)
    assert isinstance(base, TransformerModel) and not isinstance(base, PBATransformerModel)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    expected = 6 * sum(extra_parameters(attention, mode, role, [1, 2], 64, 8) for role in ("enc", "dec", "cross"))
    assert count(pba) - count(base) == expected


def test_encoder_side_ngrams_are_computed_once_per_sentence(models, monkeypatch):
    model = models[("queryk", "interleaved")]
    calls = []
    for m in model.decoder.modules():
        if isinstance(m, PhraseBasedAttention) and m.role == "cross":
            original = m.keys_values
            monkeypatch.setattr(m, "keys_values", lambda x, real, f=original: calls.append(x.shape) or f(x, real))
    src = tokens(SRC, left_pad=True)
    with torch.no_grad():
        enc = model.encoder(src, torch.tensor([len(r) for r in SRC]))
        state = {}
        for t in range(PREV.size(1)):
            model.decoder(PREV[:, :t + 1], encoder_out=enc, incremental_state=state)
            model.decoder.reorder_incremental_state_scripting(state, torch.arange(len(SRC)).flip(0))
            enc = model.encoder.reorder_encoder_out(enc, torch.arange(len(SRC)).flip(0))
    assert len(calls) == len(model.decoder.layers)  # once per layer, at the first step


# The README's parameter table: base size, shared 37,000-token vocabulary (the paper's En-De).
README_TABLE = [  # (preset, options, layers, measured count in millions as printed)
    ("homogeneous_convkv", [], 6, 67.80), ("homogeneous_queryk", [], 6, 67.81),
    ("homogeneous_convkv", ["--pba-ngrams", "1,1,1,2,2,3,3,3"], 6, 72.52),
    ("heterogeneous_convkv", [], 6, 81.98), ("heterogeneous_convkv", ["--pba-ngrams", "1,2,3"], 6, 110.31),
    ("heterogeneous_convkv", ["--pba-ngrams", "1,2,3,4"], 6, 148.07),
    ("heterogeneous_queryk", [], 6, 86.71), ("heterogeneous_queryk", ["--pba-ngrams", "1,2,3"], 6, 119.79),
    ("heterogeneous_queryk", ["--pba-ngrams", "1,2,3,4"], 6, 162.31),
    ("heterogeneous_queryk", ["--pba-queryk-shared-key"], 6, 81.98),
    ("interleaved_convkv", [], 6, 97.71), ("interleaved_queryk", [], 6, 121.34),
    ("heterogeneous_convkv", ["--encoder-layers", "4", "--decoder-layers", "4"], 4, 60.96),
]


@pytest.mark.slow
def test_base_size_parameter_counts_of_the_readme_table():
    from fairseq.data import Dictionary
    from fairseq.tasks.translation import TranslationTask

    vocab = Dictionary()
    for i in range(37000 - len(vocab)):
        vocab.add_symbol(f"w{i}")

    def count(arch, extra):
        args = parse(arch, "--share-all-embeddings", *extra)
        model = TranslationTask(args, vocab, vocab).build_model(args)
        return sum(p.numel() for p in model.parameters()), args

    base, _ = count("transformer", [])
    base4, _ = count("transformer", ["--encoder-layers", "4", "--decoder-layers", "4"])
    assert round(base / 1e6, 2) == 63.08
    for preset, extra, layers, printed in README_TABLE:
        n, args = count(f"pba_transformer_{preset}", extra)
        assert round(n / 1e6, 2) == printed, (preset, extra)
        ngrams = [int(s) for s in args.pba_ngrams.split(",")]
        per_layer = sum(extra_parameters(args.pba_attention, args.pba_mode, role, ngrams, 512, 8,
                                         args.pba_queryk_shared_key) for role in ("enc", "dec", "cross"))
        assert n - (base if layers == 6 else base4) == layers * per_layer


def beam_search_steps(model, beam, steps, shrink_at, seed):
    """Beam search's use of the decoder without its scoring: B sentences x `beam` hypotheses
    (rows sentence-major), every step a random reorder within each sentence's beam (hypotheses
    duplicated and dropped), and at `shrink_at` the first sentence finishes (fewer rows).
    Yields (incremental output, full-forward output) of the newest position at every step."""
    g = torch.Generator().manual_seed(seed)
    src = tokens(SRC, left_pad=True)
    enc = model.encoder(src, torch.tensor([len(r) for r in SRC]))
    rows = torch.arange(len(SRC)).repeat_interleave(beam)  # as fairseq's sequence generator expands
    enc = model.encoder.reorder_encoder_out(enc, rows)
    prefix = torch.full((len(rows), 1), 2)
    state = {}
    for t in range(steps):
        out, extra = model.decoder(prefix, encoder_out=enc, incremental_state=state)
        full, full_extra = model.decoder(prefix, encoder_out=enc)
        yield out[:, 0], full[:, -1], extra["attn"][0][:, 0], full_extra["attn"][0][:, -1], state
        sentences = prefix.size(0) // beam
        keep = torch.arange(1 if t == shrink_at else 0, sentences)  # the first sentence finished
        new_order = (keep[:, None] * beam + torch.randint(0, beam, (len(keep), beam), generator=g)).view(-1)
        model.decoder.reorder_incremental_state_scripting(state, new_order)
        enc = model.encoder.reorder_encoder_out(enc, new_order)
        prefix = torch.cat([prefix[new_order], torch.randint(4, 20, (len(new_order), 1), generator=g)], 1)


@pytest.mark.parametrize("combo", COMBOS)
def test_encoder_side_state_once_per_sentence_under_beam_search(models, combo):
    """set_beam_size (fairseq-generate): the cross attention keeps the encoder-side n-grams once per
    sentence, untouched by reorders within a beam and cut when a sentence finishes; the interleaved
    mode's query window stays per hypothesis. Outputs and attention = the full forward throughout."""
    model, beam = models[combo], 3
    model.set_beam_size(beam)
    try:
        with torch.no_grad():
            previous = None
            for t, (out, full, attn, full_attn, state) in enumerate(
                    beam_search_steps(model, beam, steps=6, shrink_at=2, seed=sum(map(ord, "".join(combo))))):
                assert torch.allclose(out, full, atol=1e-5), (combo, t)
                assert torch.allclose(attn, full_attn, atol=1e-6), (combo, t)
                cross = [m for m in model.decoder.modules() if isinstance(m, PhraseBasedAttention) and m.role == "cross"]
                for m in cross:
                    buf = m._get_input_buffer(state)
                    assert buf["k1"].size(0) * beam == out.size(0)  # one row per sentence
                    if combo[1] == "interleaved":
                        assert buf["window"].size(0) == out.size(0)  # one row per hypothesis
                # a reorder within the beams leaves the encoder-side tensors as they are (no copy)
                k1 = cross[0]._get_input_buffer(state)["k1"]
                if previous is not None and t != 3:
                    assert k1 is previous
                previous = k1
    finally:
        model.set_beam_size(1)


def test_beam_search_of_fairseq_gives_the_same_translations_with_the_shared_encoder_state(models):
    """fairseq's SequenceGenerator calls set_beam_size; hypotheses and scores are those of the
    per-hypothesis state (set_beam_size disabled), finished sentences and all."""
    from fairseq.sequence_generator import SequenceGenerator
    from tests.fairseq_mgsa.models.test_model import make_dict

    d = make_dict()
    src = tokens(SRC, left_pad=True)
    sample = {"net_input": {"src_tokens": src, "src_lengths": torch.tensor([len(r) for r in SRC])}}
    for combo in [("queryk", "interleaved"), ("convkv", "heterogeneous")]:
        model = models[combo]
        results = []
        for shared in (True, False):
            gen = SequenceGenerator([model], d, beam_size=4, max_len_b=8, min_len=1)
            if not shared:
                gen.model.set_decoder_beam_size = lambda beam: None
            with torch.no_grad():
                results.append(gen.generate([model], sample))
        model.set_beam_size(1)
        for a, b in zip(*results):
            for ha, hb in zip(a, b):
                assert torch.equal(ha["tokens"], hb["tokens"]), combo
                assert torch.allclose(ha["score"], hb["score"], atol=1e-5), combo
