"""Shared by the tests that run the recipes' shell scripts (tests/end_to_end/test_recipe_*.py,
tests/examples/): the environment a script runs in (this checkout's packages, the caller's recipe
settings removed, tiny models for a few updates on the CPU) and running a script."""

import glob
import os
import re
import subprocess

from tests.paths import EXAMPLES, checkout_pythonpath

TINY_MODEL = ("--encoder-layers 2 --decoder-layers 1 --encoder-embed-dim 16 --decoder-embed-dim 16 "
              "--encoder-ffn-embed-dim 32 --decoder-ffn-embed-dim 32 --encoder-attention-heads 4 "
              "--decoder-attention-heads 4")
MAX_UPDATE, SAVE_EVERY, AVG_N = 6, 2, 2


def recipe_variables():
    """Every variable the recipes read (NAME=${NAME... at the top of a script): a caller's shell
    may have set some; the tests start without them."""
    names = {"CUDA_VISIBLE_DEVICES"}
    for script in glob.glob(os.path.join(EXAMPLES, "*", "*.sh")):
        with open(script, encoding="utf-8") as f:
            names.update(re.findall(r"^([A-Z][A-Z0-9_]*)=\$\{\1[:-]", f.read(), flags=re.M))
    return names


RECIPE_VARS = recipe_variables()


def recipe_env(workdir, raw=None, **extra):
    env = {k: v for k, v in os.environ.items() if k not in RECIPE_VARS}
    env.update(
        # this checkout's packages, not an installed copy
        PYTHONPATH=checkout_pythonpath(),
        OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="", WORKDIR=str(workdir),
        SKIP_DOWNLOAD="1", WORKERS="1", BPE_MERGES="50", GPUS="0", FP16="0",
        MAX_TOKENS="1000", UPDATE_FREQ="1", MAX_UPDATE=str(MAX_UPDATE), SAVE_INTERVAL_UPDATES=str(SAVE_EVERY),
        AVG_N=str(AVG_N), WARMUP="2", LR="1e-3", LOG_INTERVAL="1",
        FAIRSEQ_EXTRA=TINY_MODEL + " --cpu --no-progress-bar", GEN_EXTRA="--cpu", BEAM="2", GEN_MAX_TOKENS="2000",
    )
    if raw is not None:
        env.update(RAW_DIR=str(raw), TREES_DIR=str(raw))
    env.update(extra)
    return env


def bash(script, env, check=True):
    proc = subprocess.run(["bash", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check:
        assert proc.returncode == 0, f"{script} failed (exit {proc.returncode}):\n{proc.stdout[-6000:]}"
    return proc


def count_lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


FAKE_STANZA = '''"""Stands in for stanza in the recipe runs: no model, a fixed parse of the given words."""
import enum
import os


class DownloadMethod(enum.Enum):
    NONE = 0
    REUSE_RESOURCES = 1
    DOWNLOAD_RESOURCES = 2


class Sentence:
    def __init__(self, words):
        leaves = [f"(NN {w})" for w in words]
        self.constituency = (f"(ROOT (S (NP {leaves[0]}) (VP {' '.join(leaves[1:])})))" if len(words) > 1
                             else f"(ROOT (NP {leaves[0]}))")


class Document:
    def __init__(self, sentences):
        self.sentences = [Sentence(words) for words in sentences]


class Pipeline:
    def __init__(self, lang, processors=None, tokenize_pretokenized=False, download_method=None, dir=None, **kwargs):
        # what the recipe must ask for: pretokenized input, the models in STANZA_DIR, no download
        assert processors == "tokenize,pos,constituency" and tokenize_pretokenized
        assert download_method is DownloadMethod.NONE, download_method
        assert os.path.isdir(os.path.join(dir, lang, "constituency")), dir

    def __call__(self, sentences):
        return Document(sentences)
'''


def fake_stanza(folder):
    """`folder` holding a package `stanza` that stands in for stanza (FAKE_STANZA), whose models
    cannot be downloaded here; put it first on a script's PYTHONPATH."""
    os.makedirs(os.path.join(folder, "stanza"))
    with open(os.path.join(folder, "stanza", "__init__.py"), "w", encoding="utf-8") as f:
        f.write(FAKE_STANZA)
    return folder
