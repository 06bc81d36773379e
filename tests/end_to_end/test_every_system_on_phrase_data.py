"""Issue 20.1: every system of the registry trains and decodes on one mgsa-preprocess data
directory (with phrase files), with --task mgsa_translation and, for the systems that do
not read trees, --task translation: the phrases go only to a model that reads them.

fairseq-train and fairseq-generate run in process (one fairseq import for all), with
the TINY dimensions and 2 updates each."""

import os

import pytest
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq_cli import generate as fairseq_generate
from fairseq_cli import train as fairseq_train

from fairseq_mgsa import systems as registry

from tests.fairseq_runs import TINY, USER_DIR, make_data_bin

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long

RUNS = [(s, task) for s in registry.distinct_models()  # a depth variant: TINY's layers make it its original
        for task in ([s.task] if s.needs_trees else ["mgsa_translation", "translation"])]


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    return make_data_bin(tmp_path_factory.mktemp("corpus"), n_train=24)


def train(data_bin, save_dir, system, task):
    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[
        str(data_bin), "--user-dir", USER_DIR, *system.train_args("base"), "--task", task, *TINY,
        "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "200", "--max-update", "2",
        "--save-dir", str(save_dir), "--no-epoch-checkpoints", "--no-progress-bar", "--cpu", "--seed", "1",
        "--num-workers", "0", "--log-format", "simple"])
    fairseq_train.main(convert_namespace_to_omegaconf(args))


def generate(data_bin, save_dir, task, results="gen"):
    args = options.parse_args_and_arch(options.get_generation_parser(), input_args=[
        str(data_bin), "--user-dir", USER_DIR, "--task", task, "--path", str(save_dir / "checkpoint_last.pt"),
        "--gen-subset", "valid", "--beam", "2", "--max-len-b", "8", "--batch-size", "8", "--cpu",
        "--results-path", str(save_dir / results), "--no-progress-bar"])
    fairseq_generate.main(args)
    with open(save_dir / results / "generate-valid.txt") as f:
        return f.read()


@pytest.mark.parametrize("system,task", RUNS, ids=[f"{s.name}-{t}" for s, t in RUNS])
def test_system_trains_and_decodes_on_phrase_file_data(data_bin, tmp_path, system, task):
    assert os.path.exists(os.path.join(data_bin, "train.src-tgt.src.syn1.bin"))  # phrase files are there
    train(data_bin, tmp_path, system, task)
    out = generate(data_bin, tmp_path, task)
    # every valid sentence decoded once
    ids = sorted(int(line.split("\t")[0][2:]) for line in out.splitlines() if line.startswith("H-"))
    assert ids == list(range(16)), out[-2000:]
    if task == "translation":
        # the same model decoded with the phrase task (the phrases not given to it): the same output
        assert generate(data_bin, tmp_path, "mgsa_translation", "gen-mgsa") == out


def test_models_declare_whether_they_read_phrases_through_wrappers(tmp_path):
    """The task asks the model itself, also behind fairseq's DDP wrappers (whose forward takes
    **kwargs): only syntactic-capable MG-SA reads the phrase fields."""
    import torch
    from fairseq.data import Dictionary
    from fairseq.distributed import ModuleProxyWrapper
    from fairseq.tasks import TASK_REGISTRY

    from fairseq_mgsa.tasks.mgsa_translation import reads_phrases

    class DDPLike(torch.nn.Module):  # what torch's DistributedDataParallel looks like to the task
        def __init__(self, module):
            super().__init__()
            self.module = module

        def forward(self, *args, **kwargs):
            return self.module(*args, **kwargs)

    d = Dictionary()
    for i in range(10):
        d.add_symbol(f"w{i}")
    for system in registry.SYSTEMS.values():
        args = options.parse_args_and_arch(options.get_training_parser(), input_args=[
            str(tmp_path), "--user-dir", USER_DIR, *system.train_args("base"), *TINY])
        model = TASK_REGISTRY[system.task](args, d, d).build_model(args)
        expected = system.archs["base"].startswith("mgsa_transformer")
        assert reads_phrases(model) == reads_phrases(ModuleProxyWrapper(DDPLike(model))) == expected, system.name
