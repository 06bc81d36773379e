"""Checkpoints keep the options in the form the command line gave them, and load as before.

fairseq stores an argparse-configured model's options in the checkpoint as it read them:
`cfg["model"]` is an argparse.Namespace holding the command line's strings and numbers
(`mgsa_granularities="word,syn1,syn2,syn3"`), and checkpoints older than fairseq's hydra
configs hold that Namespace under "args" instead. The plugin parses its options into its
own types when it builds a model (modules/mgsa/granularities.py); those types must never reach
the checkpoint, and checkpoints written in either layout must still load and decode.

For every registered system at the tiny size, the test builds the model from the system's
options, writes the checkpoint by hand in each layout (as fairseq's trainer writes it: the
options as plain values, the model's weights), loads it through fairseq's checkpoint_utils
(torch.load with weights_only, as torch >= 2.6 loads) and decodes the valid split with
the loaded model and with the model it was written from: the hypotheses and their scores
must be the same."""

import argparse

import pytest
import torch
from fairseq import checkpoint_utils, options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from omegaconf import OmegaConf

from fairseq_mgsa import systems as registry

from tests.fairseq_runs import USER_DIR, make_data_bin

PLAIN = (str, int, float, bool, type(None))
LAYOUTS = ("cfg", "args")  # fairseq >= 0.10 (hydra configs), and the older argparse checkpoints
# a depth variant's checkpoint is its original's with other layers: its modules' state is checked there
CASES = [(s, layout) for s in registry.distinct_models() for layout in LAYOUTS]


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    return make_data_bin(tmp_path_factory.mktemp("corpus"), n_train=24)


def build(data_bin, system):
    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[
        str(data_bin), "--user-dir", USER_DIR, *system.train_args("tiny"), "--optimizer", "adam",
        "--lr", "1e-3", "--max-tokens", "200", "--cpu", "--seed", "1"])
    torch.manual_seed(1)
    task = tasks.setup_task(args)
    return args, task, task.build_model(args).eval()


def write_checkpoint(path, args, model, layout: str):
    """The checkpoint as fairseq's trainer writes it (Trainer.state_dict), without the optimizer."""
    state = {"args": None, "model": model.state_dict(), "criterion": None,
             "optimizer_history": [{"criterion_name": "LabelSmoothedCrossEntropyCriterion", "optimizer_name": "FairseqAdam",
                                    "lr_scheduler_state": {"best": None}, "num_updates": 0}],
             "task_state": {}, "extra_state": {"metrics": {}, "previous_training_time": 0.0}}
    if layout == "cfg":
        state["cfg"] = OmegaConf.to_container(convert_namespace_to_omegaconf(args), resolve=True, enum_to_str=True)
    else:
        state["args"] = argparse.Namespace(**vars(args))
    checkpoint_utils.torch_persistent_save(state, str(path))


def decode(task, model):
    """(tokens, positional scores) of every valid sentence's best hypothesis, by sentence id."""
    task.load_dataset("valid")
    itr = task.get_batch_iterator(task.dataset("valid"), max_sentences=8).next_epoch_itr(shuffle=False)
    generator = task.build_generator([model], argparse.Namespace(beam=2, max_len_b=8))
    out = {}
    with torch.no_grad():
        for batch in itr:
            for i, hypos in zip(batch["id"].tolist(), task.inference_step(generator, [model], batch)):
                out[i] = (hypos[0]["tokens"], hypos[0]["positional_scores"])
    return out


@pytest.mark.parametrize("system,layout", CASES, ids=[f"{s.name}-{layout}" for s, layout in CASES])
def test_checkpoint_in_the_command_line_form_loads_and_decodes_alike(data_bin, tmp_path, system, layout):
    args, task, model = build(data_bin, system)
    # the stored form: the plugin's options as the command line gave them, plain values only
    plugin_options = {k: v for k, v in vars(args).items() if k.split("_")[0] in ("mgsa", "pba", "hysan")}
    assert all(type(v) in PLAIN for v in plugin_options.values()), plugin_options
    if system.name.startswith("mgsa"):
        assert type(args.mgsa_granularities) is str
    path = tmp_path / "checkpoint.pt"
    write_checkpoint(path, args, model, layout)

    models, _, loaded_task = checkpoint_utils.load_model_ensemble_and_task([str(path)],
                                                                          arg_overrides={"data": str(data_bin)})
    loaded = models[0].eval()
    assert type(loaded) is type(model)
    assert getattr(loaded, "tree_levels", 0) == getattr(model, "tree_levels", 0)
    assert getattr(loaded_task, "required_levels", 0) == getattr(task, "required_levels", 0)
    expected, got = decode(task, model), decode(loaded_task, loaded)
    assert sorted(got) == sorted(expected) == list(range(16))
    for i in expected:
        assert torch.equal(got[i][0], expected[i][0]), i
        torch.testing.assert_close(got[i][1], expected[i][1], rtol=0, atol=0)
