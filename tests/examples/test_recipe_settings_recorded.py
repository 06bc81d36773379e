"""Every recipe's effective settings, as its training and decoding steps (06, 07) see them, against those
recorded in recipe_settings_recorded.json (issue 53: the recipes' shared settings moved to
examples/common/ with every recipe's values unchanged).

Each case sources a recipe's step script in a clean bash (no environment but PATH, HOME and the
case's own settings), with its last line, the step's work (`run_train`, `step_average_and_generate`),
replaced by a dump of every upper-case variable the recipe set: the values of defaults.sh, of
../common/preamble.sh and of the script's lines before the work (GPUS, UPDATE_FREQ, the --cpu flags). The cases: each recipe's
defaults, its other preset or model size, another direction, settings given by environment, on
no GPU and on two (CUDA_VISIBLE_DEVICES, which num_gpus reads before nvidia-smi).

The file holds each recipe's and step's first case in full and every other case as its changes
from it (null: a variable the case does not set). A deliberate change of a recipe's settings:
rerun this file with RECORD_RECIPE_SETTINGS=1 to rewrite it, and read its diff.
"""

import json
import os
import re
import subprocess

import pytest

from tests.paths import ROOT

RECORDED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipe_settings_recorded.json")
RECIPES = ("iwslt14_de_en", "iwslt17_zh_en", "multi30k_en_de", "nist_zh_en", "tatoeba_zh_en", "wmt14_en_de",
           "wmt16_en_ru", "wmt17_zh_en")
OTHER = {  # each recipe's other choices of its main switch
    "iwslt14_de_en": [{"PRESET": "gpu"}, {"DIRECTION": "en-de"}],
    "iwslt17_zh_en": [{"MODEL_SIZE": "base"}],
    "multi30k_en_de": [{"PRESET": "gpu"}],
    "nist_zh_en": [{"MODEL_SIZE": "big"}],
    "tatoeba_zh_en": [{"PRESET": "gpu"}],
    "wmt14_en_de": [{"MODEL_SIZE": "big"}],
    "wmt16_en_ru": [{"MODEL_SIZE": "big"}, {"DIRECTION": "ru-en"}],
    "wmt17_zh_en": [{"MODEL_SIZE": "base"}],
}
# settings given by environment, which must win over every default
GIVEN = {"LR": "1e-3", "DROPOUT": "0.2", "AVG_N": "7", "PATIENCE": "", "RUN_SUFFIX": "_given", "THREADS": "2",
         "UPDATE_FREQ": "3", "MAX_TOKENS": "1000", "WEIGHT_DECAY": "0.01", "SAVE_INTERVAL_UPDATES": "500"}
DUMP = r'''dump_settings() {
  local name
  for name in $(compgen -v | LC_ALL=C sort); do
    if [[ "$name" =~ ^[A-Z][A-Z0-9_]*$ ]] && { ! in_list "$name" "$BARE" || in_list "$name" "$GIVEN"; }; then
      declare -p "$name"
    fi
  done
}'''


STEPS = {"06": "run_train", "07": "step_average_and_generate"}  # each step script's last line, its work


def step_script(recipe, step):
    folder = os.path.join(ROOT, "examples", recipe)
    [name] = [n for n in os.listdir(folder) if n.startswith(step + "_") and n.endswith(".sh")]
    return os.path.join(folder, name)


def cases():
    for recipe in RECIPES:
        for step in STEPS:
            for env in [{}] + OTHER[recipe] + [GIVEN]:
                for gpus in ("", "0,1"):
                    name = ",".join([recipe, step] + [f"{k}={v}" for k, v in env.items()]
                                    + [f"CUDA_VISIBLE_DEVICES={gpus}"])
                    yield name, recipe, step, {**env, "CUDA_VISIBLE_DEVICES": gpus}


def dump_script(recipe, step):
    """The step's script with its own folder written in and the dump in place of its work."""
    path = step_script(recipe, step)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    here, work = '$(dirname "${BASH_SOURCE[0]}")', f"^{STEPS[step]}$"
    assert text.count(here) == 1 and len(re.findall(work, text, flags=re.M)) == 1, \
        f"{path}: expected one `source {here}/defaults.sh` and a last line `{STEPS[step]}`"
    text = text.replace(here, os.path.dirname(path))
    return re.sub(work, DUMP + "\ndump_settings", text, flags=re.M)


def settings(recipe, step, env, workdir):
    """{NAME: its `declare -p` line (its value, whether exported, whether an array)} of the recipe's
    step, paths under ROOT and `workdir` written <ROOT>, <CWD>."""
    # BARE: bash's own variables and the environment's; the settings given (GIVEN) are dumped too
    script = (f'GIVEN="{" ".join(env)}"; BARE="$(compgen -v | tr "\\n" " ") BARE GIVEN FUNCNAME PIPESTATUS"\n'
              + dump_script(recipe, step))
    clean = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), **env}
    proc = subprocess.run(["bash", "-c", script], env=clean, cwd=workdir, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.replace(ROOT, "<ROOT>").replace(str(workdir), "<CWD>")
    return {line.split()[2].split("=", 1)[0]: line for line in out.splitlines()}


def base_case(name):
    """The recipe's and step's first case (its defaults, no GPU): the file holds the others as changes from it."""
    recipe, step = name.split(",")[:2]
    return f"{recipe},{step},CUDA_VISIBLE_DEVICES="


def expected(recorded, name):
    base = recorded[base_case(name)]
    if name == base_case(name):
        return base
    out = {**base, **recorded[name]}
    return {k: v for k, v in out.items() if v is not None}


def test_the_dump_sees_a_setting_change(tmp_path):
    got = settings("wmt14_en_de", "06", {"CUDA_VISIBLE_DEVICES": "0,1"}, tmp_path)
    assert got["GPUS"] == 'declare -- GPUS="2"' and got["UPDATE_FREQ"] == 'declare -- UPDATE_FREQ="4"'
    assert got["LR"] == 'declare -- LR="7e-4"' and got["ARCH_SIZE"] == 'declare -- ARCH_SIZE="base"'
    assert "BARE" not in got and "PATH" not in got


@pytest.mark.skipif(os.environ.get("RECORD_RECIPE_SETTINGS") != "1", reason="records the file")
def test_record(tmp_path):
    got = {name: settings(recipe, step, env, tmp_path) for name, recipe, step, env in cases()}
    recorded = {}
    for name, values in got.items():
        base = got[base_case(name)]
        recorded[name] = values if name == base_case(name) else \
            {k: values.get(k) for k in sorted(set(values) | set(base)) if values.get(k) != base.get(k)}
    with open(RECORDED, "w", encoding="utf-8") as f:
        json.dump(recorded, f, indent=0, sort_keys=True)
        f.write("\n")


@pytest.mark.parametrize("name,recipe,step,env", list(cases()), ids=[c[0] for c in cases()])
def test_settings_are_the_recorded_ones(name, recipe, step, env, tmp_path):
    if os.environ.get("RECORD_RECIPE_SETTINGS") == "1":
        pytest.skip("recording")
    with open(RECORDED, encoding="utf-8") as f:
        recorded = json.load(f)
    assert settings(recipe, step, env, tmp_path) == expected(recorded, name)
