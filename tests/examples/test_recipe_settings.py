"""The recipes' settings and raw files as a new user gives them (issue 37, points 5, 6, 8, 9):
every setting a later step reads is checked by every step before it works (so a typo in SEEDS
stops step 01, not the training after hours of data steps), in one line; a misspelled system in
MULTI_SEED_SYSTEMS is an error as in SYSTEMS; raw files without a final newline are counted
right; stanza's models unreachable are one line, not four tracebacks. Fast: no training."""

import os
import subprocess
import sys

import pytest

from mgsa_preprocess.synthetic import write_corpus

from tests.end_to_end.test_recipe_multi30k import RECIPE as MULTI30K, env_for, mirror
from tests.end_to_end.recipe_runs import EXAMPLES, bash, recipe_env


@pytest.fixture
def raw(tmp_path):
    raw = tmp_path / "raw"
    write_corpus(str(raw), (("train", 12), ("valid", 3), ("test", 4)), seed=6, src="en", tgt="de")
    return raw


def stderr_lines(proc):
    return proc.stderr.strip().splitlines()


def run(script, env):
    return subprocess.run(["bash", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


REGISTERED = ("transformer, transformer_matched, mgsa_ngram, mgsa_ngram_onlstm, mgsa_syntactic, "
              "pba_heterogeneous_convkv, pba_heterogeneous_queryk, pba_homogeneous_convkv, pba_interleaved_queryk, "
              "hysan, transformer_10layer, pba_heterogeneous_convkv_4layer, transformer_relative, hysan_relative")


@pytest.mark.parametrize("name,value,message", [
    ("SEEDS", "1,2,3", "must be seed numbers separated by spaces, e.g. SEEDS=\"1 2 3\" ('1,2,3' is not one)"),
    ("PATIENCE", "three", "must be a whole number of at least 1 (or empty)"),
    ("MAX_UPDATE", "0", "must be a whole number of at least 1"),
    ("ARCH_SIZE", "small", "must be one of the registry's sizes: tiny, cpu, base, big, iwslt"),
    ("STOP_METRIC", "bleu4", "must be one of loss, bleu"),
    ("DROPOUT", "1.5", "must be at least 0 and below 1"),
    ("DECODE_CHECKPOINT", "last", "must be one of average, best"),
    ("MULTI_SEED_SYSTEMS", "transformer mgsa-syntactic", f"names no registered system: mgsa-syntactic (registered: "
                                                         f"{REGISTERED}; python -m fairseq_mgsa.systems lists them)"),
    # issue 45, point 9: each of these passed the check and meant nothing (or a traceback hours later)
    ("SEEDS", "1 1", "names seed 1 more than once: each seed is one training run"),
    ("SEEDS", "3 1 03", "names seed 3 more than once: each seed is one training run"),
    ("SEEDS", "1 4294967296", "must be seed numbers of at most 4294967295 (fairseq seeds numpy with them; "
                              "'4294967296' is not one)"),
    ("SEED", "4294967296", "must be at most 4294967295 (fairseq seeds numpy with it)"),
    ("LR", "nan", "must be a finite number"),
    ("DROPOUT", "nan", "must be a finite number"),
    ("LR", "inf", "must be a finite number"),
    ("LENPEN", "-inf", "must be a finite number"),
    ("WEIGHT_DECAY", "NaN", "must be a finite number"),
    ("LR", "-1e-3", "must be at least 0"),
    ("LR", "fast", "must be a number"),
    ("WARMUP", "0", "must be a whole number of at least 1"),  # fairseq's inverse_sqrt divides by it
    ("NEWS_COMMENTARY", "v10", "must be one of v9, v12"),
    ("MULTI_SEED_SYSTEMS", "transformer mgsa_ngram_onlstm",
     "names mgsa_ngram_onlstm, not in SYSTEMS (transformer transformer_matched mgsa_ngram mgsa_syntactic "
     "pba_interleaved_queryk hysan): only the systems of SYSTEMS are trained; add it to SYSTEMS or leave it out"),
])
def test_a_bad_setting_stops_step_01_in_one_line(raw, tmp_path, name, value, message):
    """Points 5 and 6: each of these was first read at step 06 (or never: MULTI_SEED_SYSTEMS's
    typo trained the paper's system with one seed). Step 01 of the Multi30k recipe, with its raw
    files given, now stops at once, before reading them."""
    env = recipe_env(tmp_path / "work", raw, **{name: value})
    proc = run(os.path.join(MULTI30K, "01_download.sh"), env)
    assert proc.returncode == 1 and stderr_lines(proc) == [f"01_download.sh: error: {name}='{value}' {message}"]
    assert not (tmp_path / "work").exists()  # nothing done


def test_run_all_stops_before_step_01_naming_every_bad_setting(raw, tmp_path):
    env = recipe_env(tmp_path / "work", raw, SEEDS="1,2", PATIENCE="x", SYSTEMS="transformer mgsa_syntactic")
    proc = run(os.path.join(EXAMPLES, "iwslt14_de_en", "run_all.sh"), dict(env, DIRECTION="en-de"))
    assert proc.returncode == 1
    assert stderr_lines(proc) == ["run_all.sh: error: PATIENCE='x' must be a whole number of at least 1 (or empty); "
                                  "SEEDS='1,2' must be seed numbers separated by spaces, e.g. SEEDS=\"1 2 3\" ('1,2' "
                                  "is not one)"]
    assert not (tmp_path / "work").exists()


def test_the_default_multi_seed_systems_may_name_systems_left_out(raw, tmp_path):
    """Multi30k's default MULTI_SEED_SYSTEMS (transformer mgsa_syntactic) with SYSTEMS lacking
    mgsa_syntactic is the recipe's choice, not the user's mistake: it passes, in step 01 and in
    the steps run_all.sh starts (which must not see it as given: run_all.sh does not export it).
    FROM_STEP=9: run_all.sh goes straight to step 09, which passes the check and then misses the
    runs' logs (nothing was trained)."""
    env = recipe_env(tmp_path / "work", raw, SYSTEMS="transformer hysan")
    proc = run(os.path.join(MULTI30K, "01_download.sh"), env)
    assert proc.returncode == 0, proc.stderr
    proc = run(os.path.join(MULTI30K, "run_all.sh"), dict(env, FROM_STEP="9"))
    assert proc.returncode == 1 and "MULTI_SEED_SYSTEMS" not in proc.stderr
    assert stderr_lines(proc)[-1] == f"09_compare.sh: error: {tmp_path}/work/results/transformer_seed1/hyp.detok not found (or empty)"


@pytest.mark.parametrize("given,message", [
    # issue 45, point 3: SYSTEM and SEED passed the check, then run_all.sh trained its default systems with seeds 1-3
    (dict(SYSTEM="mgsa_ngram", SEED="7"),
     "SYSTEM='mgsa_ngram' picks the system of one step script; run_all.sh trains every system of SYSTEMS: set "
     "SYSTEMS='mgsa_ngram'; SEED='7' is the seed of one step script; run_all.sh trains with each seed of SEEDS: set "
     "SEEDS='7'"),
    (dict(RUN_NAME="try2", CKPT_DIR="/tmp/ckpt"),
     "RUN_NAME='try2' names one step script's run; run_all.sh names its runs SYSTEM, RUN_SUFFIX, _seedN: set "
     "RUN_SUFFIX; CKPT_DIR='/tmp/ckpt' is one step script's checkpoint folder; run_all.sh gives each run "
     "WORKDIR/checkpoints/RUN: leave it unset"),
    (dict(SHARD_ID="0"), "SHARD_ID='0' makes 03_parse.sh parse one shard and stop: run 03_parse.sh alone with it"),
])
def test_run_all_refuses_the_step_scripts_own_settings(raw, tmp_path, given, message):
    """What the user did: `SYSTEM=mgsa_ngram SEED=7 run_all.sh`. run_all.sh sets these for each of
    its runs, so it refuses them before any work, naming the setting meant instead."""
    env = recipe_env(tmp_path / "work", raw, **given)
    proc = run(os.path.join(MULTI30K, "run_all.sh"), env)
    assert proc.returncode == 1 and stderr_lines(proc) == [f"run_all.sh: error: {message}"]
    assert not (tmp_path / "work").exists()  # nothing done


def test_another_raw_dir_redoes_the_tokenisation(raw, tmp_path):
    """Issue 45, point 2 (the data steps' markers): step 02's marker compared the settings and the
    input files' times, not which files: RAW_DIR pointed at another corpus whose files are older
    than the marker left the old corpus's tokens as "done already"."""
    env = recipe_env(tmp_path / "work", raw)
    bash(os.path.join(EXAMPLES, "wmt14_en_de", "02_tokenize.sh"), env)
    other = tmp_path / "other"
    write_corpus(str(other), (("train", 10), ("valid", 3), ("test", 4)), seed=11, src="en", tgt="de")
    for f in other.iterdir():
        os.utime(f, (1e9, 1e9))  # older than the marker
    log = bash(os.path.join(EXAMPLES, "wmt14_en_de", "02_tokenize.sh"), dict(env, RAW_DIR=str(other))).stdout
    assert f"02_tokenize: redoing it: made from {raw}/train.en, now {other}/train.en" in log
    assert f"tokenizing {other}/train.en" in log
    assert len((tmp_path / "work" / "tok" / "train.en").read_text(encoding="utf-8").splitlines()) == 10


def test_good_settings_pass(raw, tmp_path):
    env = recipe_env(tmp_path / "work", raw, SEEDS="1 2 3", PATIENCE="", MULTI_SEED_SYSTEMS="transformer hysan",
                     STOP_METRIC="bleu", ARCH_SIZE="cpu")
    proc = run(os.path.join(MULTI30K, "01_download.sh"), env)
    assert proc.returncode == 0, proc.stderr
    assert "raw corpus in " in proc.stderr


def test_raw_files_without_a_final_newline_are_counted_whole(raw, tmp_path):
    """Point 8: `wc -l` counted a last line without its newline out: SKIP_DOWNLOAD=1 called the two
    sides unequal, and step 02 said raw/train.en had one line fewer than its tokenized copy."""
    for name in ("train.en", "test.de"):
        text = (raw / name).read_text(encoding="utf-8")
        (raw / name).write_text(text.rstrip("\n"), encoding="utf-8")
    env = recipe_env(tmp_path / "work", raw)
    log = bash(os.path.join(EXAMPLES, "wmt14_en_de", "01_download.sh"), env).stdout
    assert "raw corpus in " in log and ": 12 train, 3 valid, 4 test pairs" in log
    bash(os.path.join(EXAMPLES, "wmt14_en_de", "02_tokenize.sh"), env)
    tok = tmp_path / "work" / "tok"
    for split, n in (("train", 12), ("test", 4)):
        for lang in ("en", "de"):
            lines = (tok / "full" / f"{split}.{lang}").read_text(encoding="utf-8").split("\n")
            assert len(lines) == n + 1 and lines[-1] == "" and all(lines[:-1])  # n lines, each ended


def test_stanza_models_unreachable_is_one_line(tmp_path):
    """Point 9: 01_download.sh with PARSER=stanza and no network printed four chained tracebacks
    (urllib3, requests) before its line. The corpus comes from a local mirror here; stanza's model
    hub is an unresolvable host."""
    _, site = mirror(tmp_path)
    env = env_for(tmp_path / "work", site, PARSER="stanza", STANZA_RESOURCES_URL="http://mirror.invalid/stanza",
                  STANZA_DIR=str(tmp_path / "stanza"))
    proc = run(os.path.join(MULTI30K, "01_download.sh"), env)
    assert proc.returncode == 1
    errors = [line for line in stderr_lines(proc) if not line.startswith("[01_download.sh]")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert errors[0].startswith("01_download.sh: error: could not fetch stanza's models for 'en' (the model hub needs "
                                "network): ")
    assert errors[0].endswith(f"(log: {tmp_path / 'stanza'}/download.log)")
    assert "Traceback" in (tmp_path / "stanza" / "download.log").read_text()  # the details are kept


RECIPES = sorted(d for d in os.listdir(EXAMPLES)
                 if d != "common" and os.path.isfile(os.path.join(EXAMPLES, d, "run_all.sh")))


@pytest.mark.parametrize("recipe", RECIPES)
def test_help_prints_the_scripts_header_and_an_argument_is_refused(recipe, tmp_path):
    """Settings are environment variables: `run_all.sh --help` prints the script's own header
    and stops; `run_all.sh SYSTEMS=x` (an argument) is refused before any step makes a file."""
    script = os.path.join(EXAMPLES, recipe, "run_all.sh")
    with open(script, encoding="utf-8") as f:
        header = [line[2:].rstrip("\n") for line in f.readlines()[1:] if line.startswith("# ")][:2]
    env = dict(os.environ, WORKDIR=str(tmp_path / "work"))
    shown = subprocess.run(["bash", script, "--help"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[:2] == header
    refused = subprocess.run(["bash", script, "SYSTEMS=transformer"], env=env, cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert refused.returncode == 2
    assert stderr_lines(refused) == [
        f"run_all.sh: takes no arguments (got: SYSTEMS=transformer): every setting is an environment variable, "
        f"e.g. SYSTEMS=\"transformer mgsa_syntactic\" bash {script} (--help: the script's own settings)"]
    assert os.listdir(tmp_path) == []
