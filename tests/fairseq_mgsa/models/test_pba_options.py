"""PBA's options are parsed once when a model is built (modules/pba/options.py, PBAOptions) and
that one value reaches every layer of both stacks; the options the checkpoint keeps stay the
command line's strings."""

from fairseq import options
from fairseq.data import Dictionary
from fairseq.tasks.translation import TranslationTask

from fairseq_mgsa.models.pba_transformer import PBATransformerModel
from fairseq_mgsa.modules.pba.options import PBAOptions

from tests.fairseq_runs import TINY, USER_DIR


def test_options_are_parsed_once_per_model_and_shared(monkeypatch):
    args = options.parse_args_and_arch(options.get_training_parser(), [
        "unused-data", "--user-dir", USER_DIR, "--arch", "pba_transformer", *TINY, "--pba-ngrams", "1,2,3",
        "--pba-roles", "enc,cross", "--pba-layers", "1"])
    d = Dictionary()
    for i in range(10):
        d.add_symbol(f"w{i}")
    parsed = []
    parse = PBAOptions.parse.__func__
    monkeypatch.setattr(PBAOptions, "parse", classmethod(lambda cls, a: parsed.append(1) or parse(cls, a)))
    checked = []
    check = PBATransformerModel.check_args.__func__
    monkeypatch.setattr(PBATransformerModel, "check_args", classmethod(lambda cls, a: checked.append(1) or check(cls, a)))
    model = TranslationTask(args, d, d).build_model(args)
    # fairseq checks the options again through the architecture (check_args parses them to check
    # them); the model itself parses them once, for both stacks
    assert len(parsed) == 1 + len(checked)
    values = {id(layer.pba_options) for stack in (model.encoder, model.decoder) for layer in stack.layers
              if hasattr(layer, "pba_options")}
    assert len(values) == 1
    value = model.encoder.layers[0].pba_options
    assert (value.ngrams, value.roles, value.layers) == ((1, 2, 3), ("enc", "cross"), "1")
    assert model.decoder.layers[0].encoder_attn.ngrams == [1, 2, 3]
    # nothing of the parsed value left in the options a checkpoint keeps
    assert "method_options" not in vars(args) and not any(isinstance(v, PBAOptions) for v in vars(args).values())
