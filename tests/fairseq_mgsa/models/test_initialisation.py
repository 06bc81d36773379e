"""Every model starts from the same parameters as it did when recorded: for a fixed seed, the
same parameter names, shapes and values (each parameter's sum and sum of squares) as the code
of the commit named in initial_parameters.json.

How the models put their method's layers in place (models/base.py) decides the order in which
the layers draw their initial values; a change there that changed the draws would change every
run's starting point, and the training curves recorded in docs/ with it. To record anew (only
when the initialisation is meant to change), from the root of a checkout:

    python -m tests.fairseq_mgsa.models.test_initialisation
"""

import json
import subprocess
from pathlib import Path

import pytest
import torch
from fairseq import options
from fairseq.data import Dictionary
from fairseq.tasks.translation import TranslationTask

from fairseq_mgsa import systems as registry

from tests.fairseq_runs import USER_DIR

RECORDED = Path(__file__).resolve().parent / "initial_parameters.json"
# every distinct system at the tiny size, and layer choices where the method's layers and
# fairseq's (or relative ones) alternate in one stack
EXTRA = {
    "pba_layer2_dec_cross": ("pba_heterogeneous_convkv", ("--pba-layers", "2", "--pba-roles", "dec,cross")),
    "hysan_relative_layers_1_3": ("hysan_relative", ("--hysan-encoder-layers", "1,3", "--hysan-decoder-layers", "2")),
    "mgsa_ngram_layers_2_3": ("mgsa_ngram", ("--mgsa-layers", "2,3")),
}
CASES = sorted([s.name for s in registry.distinct_models()] + list(EXTRA))


def build(case: str) -> torch.nn.Module:
    name, extra = EXTRA.get(case, (case, ()))
    args = options.parse_args_and_arch(options.get_training_parser(), [
        "unused-data", "--user-dir", USER_DIR, *registry.get(name).train_args("tiny"), *extra])
    words, tags = Dictionary(), Dictionary()
    for i in range(30):
        words.add_symbol(f"w{i}")
    for tag in ("NP", "VP", "PP"):
        tags.add_symbol(tag)
    task = TranslationTask(args, words, words)
    task.tag_dictionary = tags  # what mgsa_translation gives syntactic MG-SA
    torch.manual_seed(1)
    return task.build_model(args)


def summary(model) -> dict:
    return {k: [list(v.shape), float(v.double().sum()), float(v.double().pow(2).sum())]
            for k, v in model.state_dict().items()}


def recorded() -> dict:
    with open(RECORDED) as f:
        return json.load(f)["models"]


def test_every_case_was_recorded():
    assert sorted(recorded()) == CASES


@pytest.mark.parametrize("case", CASES)
def test_initial_parameters_are_those_recorded(case):
    now, before = summary(build(case)), recorded()[case]
    assert list(now) == list(before)  # names, in the state_dict's order
    for key, (shape, total, squares) in before.items():
        assert now[key][0] == shape, key
        assert now[key][1:] == pytest.approx([total, squares], rel=1e-6, abs=1e-6), key


if __name__ == "__main__":
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    models = {case: summary(build(case)) for case in CASES}
    with open(RECORDED, "w") as f:  # a parameter a line
        f.write('{"commit": %s, "models": {\n' % json.dumps(commit))
        f.write(",\n".join(json.dumps(case) + ": {\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}"
                                                                  for k, v in params.items()) + "}"
                            for case, params in models.items()))
        f.write("}}\n")
