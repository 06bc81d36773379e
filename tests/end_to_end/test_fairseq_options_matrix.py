"""Syntactic MG-SA once with each fairseq option a user is likely to combine with it
(issue 14): --eval-bleu checkpoints (resume, generate, checkpoint averaging),
--encoder-layerdrop, --checkpoint-activations, fairseq-interactive --buffer-size /
--batch-size, several data directories, --upsample-primary, --nbest, --gen-subset,
decoding from a directory with only the dictionaries, fairseq-generate without the task,
and the Python hub interface (from_pretrained(...).translate(...)).

One tiny model (d 16) trained once on the grammar corpus with gold trees; each test
runs the real command with its option and checks what the option promises.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
from subword_nmt.learn_bpe import learn_bpe

import fairseq_mgsa  # noqa: F401  (registers the plugin; its allow-list lets torch.load read checkpoints)
from mgsa_preprocess.synthetic import write_corpus

from tests.paths import ROOT

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long
USER_DIR = os.path.join(ROOT, "fairseq_mgsa")
N_TEST = 24
UPDATES = 40
TINY = ["--encoder-layers", "2", "--decoder-layers", "1", "--encoder-embed-dim", "16",
        "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]
EVAL_BLEU = ["--eval-bleu", "--eval-bleu-remove-bpe", "--eval-bleu-args", '{"beam": 1}',
             "--best-checkpoint-metric", "bleu", "--maximize-best-checkpoint-metric"]

# The same words, two trees: the PP attached to the verb phrase, or to the noun phrase.
PP_VERB = ("(ROOT (S (NP (NNP Anna)) (VP (VBD saw) (NP (DT the) (NN dog)) "
           "(PP (IN with) (NP (DT a) (NN telescope)))) (. .)))")
PP_NOUN = ("(ROOT (S (NP (NNP Anna)) (VP (VBD saw) (NP (NP (DT the) (NN dog)) "
           "(PP (IN with) (NP (DT a) (NN telescope))))) (. .)))")
# Words the vocabulary does not have: both lines are <unk> <unk> <unk> . , with other trees.
UNK_1 = "(ROOT (S (NP (NN Ω)) (VP (VBD Ж) (NP (NN Щ))) (. .)))"
UNK_2 = "(ROOT (S (NP (NP (NN Ψ)) (PP (IN Ξ) (NP (NN Λ)))) (. .)))"


def run(cmd, cwd, ok=True, input=None):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, input=input, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if ok:
        assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stderr[-4000:]}"
    return proc


def one_line_error(proc, message):
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("fairseq-mgsa error: ")]
    assert len(errors) == 1 and message in errors[0], proc.stderr[-3000:]
    return errors[0]


def preprocess(raw_prefix, destdir, codes, cwd, extra=()):
    run([sys.executable, "-m", "mgsa_preprocess.cli", "--source-lang", "src", "--target-lang", "tgt",
         "--trainpref", raw_prefix, "--trees-suffix", "tree", "--levels", "3", "--bpe-codes", codes,
         "--destdir", destdir, "--workers", "1", *extra], ROOT)


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("matrix")
    raw = tmp / "raw"
    write_corpus(str(raw), (("train", 240), ("valid", 20), ("test", N_TEST)), seed=5)
    with open(raw / "train.src") as src, open(raw / "train.tgt") as tgt, open(tmp / "codes", "w") as out:
        learn_bpe(list(src) + list(tgt), out, num_symbols=40)
    preprocess(raw / "train", tmp / "data-bin", tmp / "codes", tmp,
               ["--validpref", raw / "valid", "--testpref", raw / "test", "--joined-dictionary"])
    return tmp / "data-bin"


def train(data, save, max_update, cwd, extra=(), ok=True):
    return run(["fairseq-train", data, "--user-dir", USER_DIR, "--task", "mgsa_translation",
                "--arch", "mgsa_transformer_syntactic", *TINY, *extra,
                "--criterion", "label_smoothed_cross_entropy_with_phrase_tags", "--label-smoothing", "0.1",
                "--phrase-tag-weight", "0.5", "--optimizer", "adam", "--lr", "5e-3", "--max-tokens", "800",
                "--max-update", max_update, "--save-dir", save, "--no-progress-bar", "--log-interval", "1",
                "--no-epoch-checkpoints", "--cpu", "--seed", "3"], cwd, ok=ok)


def inner_losses(log):
    """(loss, tag_loss) of every update fairseq logged."""
    return re.findall(r"train_inner \| epoch \d+:\s+\d+ / \d+ loss=([\d.]+), nll_loss=[\d.]+, "
                      r"tag_loss=([\d.]+)", log)


@pytest.fixture(scope="module")
def trained(data_bin):
    """A run with --eval-bleu (BLEU as the best-checkpoint metric): its log and save dir."""
    save = data_bin.parent / "ckpt"
    proc = train(data_bin, save, UPDATES, data_bin.parent, EVAL_BLEU)
    assert re.search(r"valid on 'valid' subset .*\| bleu [\d.]+", proc.stdout)
    return proc.stdout, save


def generate(data, checkpoint, cwd, extra=(), task=("--task", "mgsa_translation"), ok=True):
    return run(["fairseq-generate", data, "--user-dir", USER_DIR, *task, "--path", checkpoint, "--beam", "2",
                "--batch-size", "8", "--required-batch-size-multiple", "1", "--remove-bpe", "--cpu", *extra],
               cwd, ok=ok)


def hypotheses(out, kind="H"):
    """{id: [(score, hypothesis) ...]} in the order printed."""
    hyps = {}
    for i, score, h in re.findall(rf"^{kind}-(\d+)\t(\S+)\t(.*)$", out, flags=re.M):
        hyps.setdefault(int(i), []).append((float(score), h))
    return hyps


# --- --eval-bleu: the checkpoint resumes, decodes and averages (torch >= 2.6 loads it) ----

def test_eval_bleu_checkpoint_resumes_generates_and_averages(data_bin, trained, tmp_path):
    _, save = trained
    state = torch.load(save / "checkpoint_last.pt")  # weights_only, with the plugin's allow-list
    bleu_meters = [m for pri, key, cls, m in state["extra_state"]["metrics"]["valid"] if key == "_bleu_counts"]
    assert bleu_meters and isinstance(bleu_meters[0]["sum"], np.ndarray)  # what torch refused before

    resumed = tmp_path / "resumed"
    shutil.copytree(save, resumed)
    log = train(data_bin, resumed, UPDATES + 2, tmp_path, EVAL_BLEU).stdout
    assert re.search(rf"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ {UPDATES} updates\)", log)
    assert int(re.findall(r"num_updates (\d+)", log)[-1]) == UPDATES + 2

    out = generate(data_bin, save / "checkpoint_best.pt", tmp_path).stdout
    assert sorted(hypotheses(out)) == list(range(N_TEST))

    averaged = tmp_path / "averaged.pt"
    run([sys.executable, os.path.join(ROOT, "examples", "common", "average_checkpoints.py"), "--inputs",
         save / "checkpoint_best.pt", resumed / "checkpoint_last.pt", "--output", averaged], tmp_path)
    out = generate(data_bin, averaged, tmp_path).stdout
    assert sorted(hypotheses(out)) == list(range(N_TEST))

    # the protection stays on for everything else a checkpoint could smuggle in
    torch.save({"x": np.float64(1.0)}, tmp_path / "other.pt")
    with pytest.raises(Exception, match="weights_only"):
        torch.load(tmp_path / "other.pt")


# --- training options ------------------------------------------------------------------

def test_encoder_layerdrop_trains(data_bin, tmp_path):
    """LayerDrop drops the MG-SA layer or the other one at random: training goes on."""
    log = train(data_bin, tmp_path / "ck", 8, tmp_path, ["--encoder-layerdrop", "0.5", "--no-save"]).stdout
    assert int(re.findall(r"num_updates (\d+)", log)[-1]) == 8


def test_checkpoint_activations_trains_as_without(data_bin, trained, tmp_path):
    """Recomputing activations in the backward pass changes nothing: the same losses
    (tag loss included) after every update as the run without the option."""
    log = train(data_bin, tmp_path / "ck", 4, tmp_path, ["--checkpoint-activations", "--no-save"]).stdout
    with_flag = inner_losses(log)
    assert len(with_flag) == 4
    assert with_flag == inner_losses(trained[0])[:4]


def test_several_data_directories_share_one_tag_dictionary(data_bin, tmp_path):
    """DATA1:DATA2 trains on DATA2 in epoch 2 when it was binarized with DATA1's
    dictionaries (--tagdict); a directory with its own tag order is refused."""
    raw = tmp_path / "raw2"
    write_corpus(str(raw), (("train", 60),), seed=7)
    data2 = tmp_path / "data2"
    preprocess(raw / "train", data2, data_bin.parent / "codes", tmp_path,
               ["--srcdict", data_bin / "dict.src.txt", "--tgtdict", data_bin / "dict.tgt.txt",
                "--tagdict", data_bin / "dict.src.tags.txt"])
    log = train(f"{data_bin}:{data2}", tmp_path / "ck", 20, tmp_path, ["--no-save"]).stdout
    assert re.search(rf"train: 3 phrase levels from {re.escape(str(data2))}/train\.src-tgt\.src\.syn\*", log)
    assert int(re.findall(r"num_updates (\d+)", log)[-1]) == 20

    # the same directory with a tag dictionary in another order (made without --tagdict)
    data3 = tmp_path / "data3"
    shutil.copytree(data2, data3)
    tags = (data3 / "dict.src.tags.txt").read_text().splitlines(keepends=True)
    (data3 / "dict.src.tags.txt").write_text("".join([tags[1], tags[0], *tags[2:]]))
    proc = train(f"{data_bin}:{data3}", tmp_path / "ck3", 2, tmp_path, ["--no-save"], ok=False)
    error = one_line_error(proc, "are different tag dictionaries")
    assert str(data3 / "dict.src.tags.txt") in error and str(data_bin / "dict.src.tags.txt") in error
    assert f"--tagdict {data_bin / 'dict.src.tags.txt'}" in error


def test_upsample_primary_with_two_train_shards(data_bin, tmp_path):
    """train and train1 in one directory, the first upsampled: the phrase files are
    concatenated with the same ratios as the token binaries (each sentence's phrases are
    checked against its tokens when it is read)."""
    data = tmp_path / "data"
    shutil.copytree(data_bin, data)
    for f in os.listdir(data_bin):
        if f.startswith("valid."):  # the valid split, renamed train1: 20 more sentences
            shutil.copy(data_bin / f, data / f.replace("valid.", "train1.", 1))
    log = train(data, tmp_path / "ck", 24, tmp_path, ["--upsample-primary", "2", "--no-save"]).stdout
    assert re.search(r"train1 src-tgt 20 examples", log)
    assert "train: 3 phrase levels" in log
    # 2 x 240 + 20 sentences in epoch 1, about 16 a batch: 24 updates stay in epoch 1
    assert int(re.findall(r"num_updates (\d+)", log)[-1]) == 24
    assert "epoch 002" not in log


# --- decoding options --------------------------------------------------------------------

def test_generate_nbest_on_another_subset(data_bin, trained, tmp_path):
    out = generate(data_bin, trained[1] / "checkpoint_last.pt", tmp_path, ["--gen-subset", "valid", "--nbest", "2"])
    hyps = hypotheses(out.stdout)
    assert sorted(hyps) == list(range(20)) and all(len(h) == 2 for h in hyps.values())
    refs = {int(i): r for i, r in re.findall(r"^T-(\d+)\t(.*)$", out.stdout, flags=re.M)}
    with open(data_bin.parent / "raw" / "valid.tgt") as f:
        assert [refs[i] for i in range(20)] == [line.strip() for line in f]


def test_generate_without_the_task_is_a_one_line_error(data_bin, trained, tmp_path):
    proc = generate(data_bin, trained[1] / "checkpoint_last.pt", tmp_path, task=(), ok=False)
    one_line_error(proc, "run it with --task mgsa_translation")


INTERACTIVE_INPUT = [PP_VERB if i % 2 == 0 else PP_NOUN for i in range(21)] + [PP_VERB, PP_VERB, UNK_1, UNK_2]


def interactive(data, checkpoint, cwd, extra=()):
    proc = run(["fairseq-interactive", data, "--user-dir", USER_DIR, "--task", "mgsa_translation",
                "-s", "src", "-t", "tgt", "--source-input", "trees", "--bpe", "subword_nmt",
                "--bpe-codes", data.parent / "codes", "--path", checkpoint, "--beam", "2", "--cpu", *extra],
               cwd, input="\n".join(INTERACTIVE_INPUT) + "\n")
    return hypotheses(proc.stdout, "D")


@pytest.fixture(scope="module")
def one_line_at_a_time(data_bin, trained):
    return interactive(data_bin, trained[1] / "checkpoint_last.pt", data_bin.parent, ["--buffer-size", "1"])


def assert_same_translations(a, b, tol=2e-6):
    assert sorted(a) == sorted(b)
    for i in a:
        assert [h for _, h in a[i]] == [h for _, h in b[i]], i
        assert a[i][0][0] == pytest.approx(b[i][0][0], abs=tol), i


@pytest.mark.parametrize("buffer_size,batch_size", [(25, 20), (4, 3)])
def test_interactive_batches_give_each_line_its_own_tree(data_bin, trained, one_line_at_a_time, tmp_path,
                                                         buffer_size, batch_size):
    """Lines with the same words and other trees (PP attachment, alternating), duplicate
    lines and lines of unknown words only: every buffer and batch size translates each
    line as --buffer-size 1 does (20 rows: fairseq's sort by length is not stable)."""
    ref = one_line_at_a_time
    # the tree matters to this model: the two attachments score differently, far beyond the tolerance
    assert abs(ref[0][0][0] - ref[1][0][0]) > 1e-5
    batched = interactive(data_bin, trained[1] / "checkpoint_last.pt", tmp_path,
                          ["--buffer-size", str(buffer_size), "--batch-size", str(batch_size)])
    assert_same_translations(batched, ref)


def test_interactive_from_a_directory_with_only_the_dictionaries(data_bin, trained, one_line_at_a_time, tmp_path):
    """The usual deployment copy: the checkpoint builds its tag classifier from its own
    configuration; decoding does not need the tag dictionary."""
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    for name in ("dict.src.txt", "dict.tgt.txt"):
        shutil.copy(data_bin / name, deploy / name)
    shutil.copy(data_bin.parent / "codes", tmp_path / "codes")
    assert_same_translations(interactive(deploy, trained[1] / "checkpoint_last.pt", tmp_path), one_line_at_a_time)


# --- Python: the hub interface ------------------------------------------------------------

FAKE_STANZA = '''"""Stands in for stanza: no model; the gold tree of each sentence, from GOLD."""
import enum


class DownloadMethod(enum.Enum):
    NONE = 0
    REUSE_RESOURCES = 1
    DOWNLOAD_RESOURCES = 2


GOLD = {}


class Sentence:
    def __init__(self, words):
        self.constituency = GOLD[tuple(words)]


class Document:
    def __init__(self, sentences):
        self.sentences = [Sentence(w) for w in sentences]


class Pipeline:
    def __init__(self, lang, processors=None, tokenize_pretokenized=False, **kwargs):
        assert processors == "tokenize,pos,constituency" and tokenize_pretokenized

    def __call__(self, sentences):
        return Document(sentences)
'''


def test_hub_interface_translates_text_and_trees(data_bin, trained, tmp_path, monkeypatch):
    """MGSATransformerModel.from_pretrained(...).translate(...): given trees, and text
    parsed by the configured parser (a stand-in stanza returning the gold trees), give
    fairseq-generate's translations of the test set."""
    from fairseq_mgsa import MGSATransformerModel

    (tmp_path / "fake_stanza.py").write_text(FAKE_STANZA)
    spec = importlib.util.spec_from_file_location("stanza", tmp_path / "fake_stanza.py")
    stanza = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stanza)
    # setitem, not delitem + import: monkeypatch then puts back the real stanza (or its absence)
    # and its submodules, so no later test on this worker imports the stand-in
    for name in [m for m in sys.modules if m.startswith("stanza.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "stanza", stanza)

    raw = data_bin.parent / "raw"
    lines = (raw / "test.src").read_text().splitlines()
    trees = (raw / "test.src.tree").read_text().splitlines()
    stanza.GOLD.update({tuple(line.split()): tree for line, tree in zip(lines, trees)})

    hub = MGSATransformerModel.from_pretrained(str(trained[1]), "checkpoint_last.pt", str(data_bin),
                                               bpe="subword_nmt", bpe_codes=str(data_bin.parent / "codes"))
    expected = {i: h[0][1] for i, h in hypotheses(generate(data_bin, trained[1] / "checkpoint_last.pt",
                                                             tmp_path).stdout).items()}
    assert hub.translate(trees, beam=2, source_input="trees") == [expected[i] for i in range(N_TEST)]
    assert hub.translate(lines, beam=2) == [expected[i] for i in range(N_TEST)]  # --source-input text
    assert hub.translate(lines[3], beam=2) == expected[3]
