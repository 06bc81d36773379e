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
