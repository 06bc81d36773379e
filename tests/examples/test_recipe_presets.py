"""The recipes' presets (PRESET in examples/*/defaults.sh): the values each preset gives the
training steps, a setting given by environment winning over the preset, and a bad PRESET
stopping with one line before any work."""

import os
import subprocess

import pytest

from tests.paths import ROOT
SHOWN = ("ARCH_SIZE", "MAX_TOKENS", "LR", "WARMUP", "DROPOUT", "MAX_UPDATE", "PATIENCE", "VALID_INTERVAL",
         "DECODE_CHECKPOINT", "THREADS", "RUN_JOBS")


def settings(recipe, **env):
    """The variables of SHOWN after sourcing the recipe's defaults.sh, as the steps do."""
    script = (f"set -euo pipefail; source {ROOT}/examples/{recipe}/defaults.sh; "
              + "; ".join(f'echo "{v}=${{{v}}}"' for v in SHOWN))
    clean = {k: v for k, v in os.environ.items() if k not in SHOWN + ("PRESET",)}
    proc = subprocess.run(["bash", "-c", script], env={**clean, **env}, cwd="/tmp", stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    return proc, dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)


@pytest.mark.parametrize("recipe,preset,expected", [
    ("multi30k_en_de", None, dict(ARCH_SIZE="cpu", MAX_TOKENS="2048", LR="2e-3", WARMUP="400", DROPOUT="0.1",
                                  MAX_UPDATE="2400", PATIENCE="3", VALID_INTERVAL="200", DECODE_CHECKPOINT="best",
                                  THREADS="1", RUN_JOBS="2")),
    ("multi30k_en_de", "gpu", dict(ARCH_SIZE="iwslt", MAX_TOKENS="4096", LR="5e-4", WARMUP="2000", DROPOUT="0.3",
                                   MAX_UPDATE="10000", PATIENCE="5", VALID_INTERVAL="250", DECODE_CHECKPOINT="best",
                                   THREADS="", RUN_JOBS="3")),
    # the rule that lets every Tatoeba run converge on a CPU (docs/tatoeba.md): 10 validations of 150
    # updates without a new best, the cap far above where runs stop
    ("tatoeba_zh_en", None, dict(ARCH_SIZE="cpu", MAX_TOKENS="2048", LR="2e-3", WARMUP="200", DROPOUT="0.1",
                                 MAX_UPDATE="20000", PATIENCE="10", VALID_INTERVAL="150", DECODE_CHECKPOINT="best",
                                 THREADS="1", RUN_JOBS="1")),
    ("iwslt14_de_en", None, dict(ARCH_SIZE="iwslt", MAX_TOKENS="4096", LR="5e-4", WARMUP="4000", DROPOUT="0.3",
                                 MAX_UPDATE="50000", PATIENCE="", DECODE_CHECKPOINT="average", RUN_JOBS="1")),
    ("iwslt14_de_en", "gpu", dict(ARCH_SIZE="iwslt", MAX_TOKENS="4096", LR="5e-4", WARMUP="4000", DROPOUT="0.3",
                                  MAX_UPDATE="50000", PATIENCE="5", VALID_INTERVAL="1000", DECODE_CHECKPOINT="best",
                                  RUN_JOBS="2")),
])
def test_each_preset_gives_its_settings(recipe, preset, expected):
    proc, got = settings(recipe, **({"PRESET": preset} if preset else {}))
    assert proc.returncode == 0, proc.stdout
    assert {k: got[k] for k in expected} == expected


def test_a_setting_from_the_environment_wins_over_the_preset():
    _, got = settings("multi30k_en_de", PRESET="gpu", LR="1e-3", PATIENCE="")
    assert got["LR"] == "1e-3" and got["PATIENCE"] == "" and got["ARCH_SIZE"] == "iwslt"


@pytest.mark.parametrize("recipe,allowed", [("multi30k_en_de", "cpu or gpu"), ("iwslt14_de_en", "fairseq or gpu")])
def test_a_bad_preset_is_one_line(recipe, allowed):
    proc, _ = settings(recipe, PRESET="h100")
    assert proc.returncode == 2
    assert proc.stdout.strip() == f"PRESET='h100': expected {allowed} (examples/{recipe}/README.md)"
