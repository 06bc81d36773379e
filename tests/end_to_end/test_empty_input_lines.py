"""Issue 20.5: an empty (or whitespace-only) input line is the empty sentence, translated as
fairseq translates it (its only phrase the end of sentence), and every later line is
translated: fairseq-interactive and the hub interface, on pre-parsed trees here (text
through the real stanza parser: tests/preprocess/test_stanza_trained.py)."""

import re
import subprocess

import pytest
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq_cli import train as fairseq_train

from fairseq_mgsa import MGSATransformerModel
from fairseq_mgsa import systems as registry

from tests.fairseq_runs import TINY, USER_DIR, env, make_data_bin

EMPTY_LINES = ["", "   ", "\t"]


@pytest.fixture(scope="module")
def syntactic(tmp_path_factory):
    """(data-bin, checkpoint dir, two test trees): a tiny syntactic MG-SA, 2 updates."""
    tmp = tmp_path_factory.mktemp("empty-lines")
    data_bin = make_data_bin(tmp, n_train=24)
    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[
        str(data_bin), "--user-dir", USER_DIR, *registry.get("mgsa_syntactic").train_args("base"), *TINY,
        "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "200", "--max-update", "2",
        "--save-dir", str(tmp / "ckpt"), "--no-epoch-checkpoints", "--no-progress-bar", "--cpu", "--seed", "1",
        "--num-workers", "0", "--disable-validation"])
    fairseq_train.main(convert_namespace_to_omegaconf(args))
    with open(tmp / "raw" / "valid.src.tree") as f:
        trees = f.read().splitlines()[:2]
    return data_bin, tmp / "ckpt", trees


def test_hub_interface_translates_empty_lines_as_the_empty_sentence(syntactic):
    data_bin, save, (a, b) = syntactic
    hub = MGSATransformerModel.from_pretrained(str(save), "checkpoint_last.pt", str(data_bin), bpe="subword_nmt",
                                               bpe_codes=str(data_bin.parent / "codes"), source_input="trees")
    alone = [hub.translate(s, beam=2, source_input="trees") for s in (a, "", b)]
    # the empty sentence alone is a batch without any phrase (M = 0); in a batch, a row of none
    mixed = hub.translate([a, *EMPTY_LINES, b], beam=2, source_input="trees")
    assert mixed == [alone[0], *[alone[1]] * len(EMPTY_LINES), alone[2]]
    assert all(hub.translate(e, beam=2, source_input="trees") == alone[1] for e in EMPTY_LINES)


def test_interactive_translates_empty_lines_and_goes_on(syntactic, tmp_path):
    data_bin, save, (a, b) = syntactic
    lines = [a, "", b, "  ", a]
    proc = subprocess.run(["fairseq-interactive", str(data_bin), "--user-dir", USER_DIR, "--task",
                           "mgsa_translation", "--source-input", "trees", "--bpe", "subword_nmt", "--bpe-codes",
                           str(data_bin.parent / "codes"), "--path", str(save / "checkpoint_last.pt"), "--beam", "2",
                           "--cpu"], cwd=tmp_path, input="\n".join(lines) + "\n", capture_output=True, text=True,
                          env=env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    sources = dict(re.findall(r"^S-(\d+)\t(.*)$", proc.stdout, flags=re.M))
    hyps = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", proc.stdout, flags=re.M))
    assert sorted(map(int, hyps)) == list(range(len(lines))), proc.stdout
    assert sources["1"] == sources["3"] == ""  # the end of sentence only, as fairseq shows it
    assert hyps["1"] == hyps["3"] and hyps["0"] == hyps["4"]
