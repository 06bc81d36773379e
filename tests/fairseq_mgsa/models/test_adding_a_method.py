"""docs/models.md, "Adding a method": the example's code, taken from the page as written, makes a
working fourth method: its files load as the modules they name, the model builds from the
registry entry's options, keeps fairseq's layers where not chosen, and mgsa-attention records,
extracts and draws its attention with nothing in fairseq_mgsa/analysis/ changed."""

import re
import sys
import types
from pathlib import Path

import pytest
import torch
from fairseq import options
from fairseq.data import Dictionary
from fairseq.modules.transformer_layer import TransformerEncoderLayerBase
from fairseq.tasks.translation import TranslationTask

from fairseq_mgsa import systems as registry
from fairseq_mgsa.analysis.attention.extract import record, sentence_arrays
from fairseq_mgsa.analysis.attention.plots import figures

from tests.fairseq_runs import USER_DIR

DOC = Path(__file__).resolve().parents[3] / "docs" / "models.md"


def example_blocks():
    """The python blocks of the page's "Adding a method" section: (the file its first line names, code)."""
    text = DOC.read_text()
    section = text[text.index("### Adding a method"):]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    return [(re.match(r"# ([^\s:,]+)", code).group(1), code) for code in blocks]


@pytest.fixture(scope="module")
def window():
    """The example's files loaded as the modules their paths name; the registry entry."""
    blocks = example_blocks()
    assert [path for path, _ in blocks] == ["fairseq_mgsa/modules/window/attention.py",
                                            "fairseq_mgsa/modules/window/layers.py",
                                            "fairseq_mgsa/models/window_transformer.py", "fairseq_mgsa/systems.py"]
    added = []
    for path, code in blocks[:3]:
        name = path[:-3].replace("/", ".")
        package = name.rsplit(".", 1)[0]
        if package not in sys.modules:  # the method's folder
            sys.modules[package] = types.ModuleType(package)
            sys.modules[package].__path__ = []
            added.append(package)
        module = types.ModuleType(name)
        exec(compile(code, path, "exec"), module.__dict__)
        sys.modules[name] = module
        added.append(name)
    entry = eval(blocks[3][1].split("\n", 1)[1].strip().rstrip(","), vars(registry))
    yield sys.modules["fairseq_mgsa.modules.window.attention"].WindowAttention, entry
    for name in added:
        del sys.modules[name]


def build(entry, *extra):
    args = options.parse_args_and_arch(options.get_training_parser(), [
        "unused-data", "--user-dir", USER_DIR, *entry.train_args("tiny"), *extra])
    words = Dictionary()
    for w in ("a", "b", "c", "d", "e"):
        words.add_symbol(w)
    task = TranslationTask(args, words, words)
    torch.manual_seed(0)
    return task, task.build_model(args).eval()


def test_the_example_method_builds_and_is_drawn(window, tmp_path):
    WindowAttention, entry = window
    task, model = build(entry, "--window-layers", "1,3")
    kinds = [type(layer.self_attn) for layer in model.encoder.layers]
    assert kinds[0] is WindowAttention and kinds[2] is WindowAttention and kinds[1] is not WindowAttention
    assert type(model.encoder.layers[1]) is TransformerEncoderLayerBase  # fairseq's, unchosen

    d = task.source_dictionary
    src = torch.tensor([[d.index(w) for w in "abcde"] + [d.eos()],
                        [d.pad(), d.pad()] + [d.index(w) for w in "abc"] + [d.eos()]])
    batch = {"id": torch.tensor([0, 1]),
             "net_input": {"src_tokens": src, "src_lengths": src.ne(d.pad()).sum(1)}}
    with torch.no_grad():
        plain = model.encoder(src, src.ne(d.pad()).sum(1))["encoder_out"][0]
    recorder, _ = record(task, model, batch, cross=False)
    with torch.no_grad():  # asking for the weights changes nothing of the output
        again = model.encoder(src, src.ne(d.pad()).sum(1))["encoder_out"][0]
    torch.testing.assert_close(plain, again)
    arrays = sentence_arrays(task, batch, 1, recorder, None, 0)
    part = arrays["m0_window1_radius2"]  # H x T x T over the sentence's 4 tokens
    assert part.shape == (4, 4, 4)
    far = (torch.arange(4)[:, None] - torch.arange(4)[None, :]).abs() > 2
    assert part[:, far].max() < 1e-6 and abs(part.sum(-1) - 1).max() < 1e-5
    assert (arrays["m0_enc1"] == part).all()
    written, _ = figures("s", arrays, ["window"], 1, str(tmp_path), per_head=False, cross_attention=False)
    assert "s_m0_window_layer1.png" in written and (tmp_path / "s_m0_window_layer1.png").stat().st_size > 0


def test_a_bad_option_of_the_example_is_one_line(window):
    _, entry = window
    from fairseq_mgsa import MGSAError
    with pytest.raises(MGSAError, match=r"^--window-layers '7': layer 7 is out of range"):
        build(entry, "--window-layers", "7")
