"""The shell recipes of examples/ (wmt14_en_de, iwslt14_de_en) run whole, on tiny data:

* every step after download runs, through each recipe's run_all.sh, on a tiny corpus from
  the project's grammar (preprocess/synthetic/) standing in for the downloaded files
  (SKIP_DOWNLOAD=1 RAW_DIR=...) with its gold trees (TREES_DIR=...: stanza's models cannot
  be downloaded here), BPE with 50 merges, tiny models for 6 updates on CPU; the outputs are
  checked: phrase files readable and matching the binarized source, checkpoints, the averaged
  checkpoint (the mean of the kept ones), one hypothesis per test line, the BLEU files;
* a second run skips every step (the log says so), and training resumes from its last
  checkpoint when MAX_UPDATE is raised, after which translation and scoring are redone;
* parsing without gold trees: shards (one alone first, as a SLURM array task would, then the
  rest two at a time) and their merge, with a stand-in for stanza, whose models cannot be
  downloaded here.

The scripts run one at a time, without a pipeline (downloads, bad input), are in
test_recipe_downloads.py; the Multi30k recipe in test_recipe_multi30k.py.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from fairseq_mgsa.systems import get
from mgsa_preprocess.synthetic import write_corpus

from tests.end_to_end.recipe_runs import (AVG_N, EXAMPLES, MAX_UPDATE, SAVE_EVERY, bash, count_lines, fake_stanza,
                                          recipe_env)

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long

SIZES = (("train", 200), ("valid", 20), ("test", 30))
N_TEST = dict(SIZES)["test"]

RECIPES = {
    # WMT: cased, hyphens split, compound-split BLEU; the MG-SA model of the paper only, base size.
    "wmt14_en_de": dict(src="en", tgt="de", systems=["mgsa_syntactic"], size="base", env={}),
    # IWSLT: lowercased after parsing, train and valid cleaned (MAX_LEN=15 drops some pairs,
    # so the kept gold trees must be selected); the baseline and MG-SA.
    "iwslt14_de_en": dict(src="de", tgt="en", systems=["transformer", "mgsa_syntactic"], size="iwslt",
                          env={"MAX_LEN": "15", "DIRECTION": "de-en"}),
}


@pytest.fixture(scope="module", params=sorted(RECIPES))
def recipe(request, tmp_path_factory):
    """Runs the recipe's run_all.sh twice on tiny data; returns what the tests look at."""
    name = request.param
    cfg = RECIPES[name]
    tmp = tmp_path_factory.mktemp(name)
    raw = tmp / "raw"
    write_corpus(str(raw), SIZES, seed=5, src=cfg["src"], tgt=cfg["tgt"])  # {split}.{src,tgt}, {split}.{src}.tree
    env = recipe_env(tmp / "work", raw, SYSTEMS=" ".join(cfg["systems"]), **cfg["env"])
    script = os.path.join(EXAMPLES, name, "run_all.sh")
    t0 = time.time()
    first = bash(script, env).stdout
    t1 = time.time()
    second = bash(script, env).stdout
    t2 = time.time()
    print(f"{name}: first run {t1 - t0:.1f}s, rerun {t2 - t1:.1f}s")
    return dict(name=name, work=tmp / "work", raw=raw, env=env, script=script, first=first, second=second,
                src=cfg["src"], tgt=cfg["tgt"], systems=cfg["systems"], size=cfg["size"])


def test_phrase_files_match_the_binarized_source(recipe):
    from fairseq.data import Dictionary, data_utils

    work, src, tgt = recipe["work"], recipe["src"], recipe["tgt"]
    data_bin = work / "data-bin"
    tags = Dictionary.load(str(data_bin / f"dict.{src}.tags.txt"))
    assert {"NP", "VP", "PP"} <= set(tags.symbols)
    for split, n_raw in SIZES:
        n = count_lines(work / "tok" / f"{split}.{src}")
        assert count_lines(work / "tok" / f"{split}.{src}.tree") == n
        if recipe["name"] == "iwslt14_de_en" and split == "train":
            assert n < n_raw  # cleaning dropped the pairs over MAX_LEN words
        elif split == "test":
            assert n == n_raw  # never cleaned
        else:
            assert n <= n_raw
        prefix = str(data_bin / f"{split}.{src}-{tgt}.{src}")
        tokens = data_utils.load_indexed_dataset(prefix, None)
        assert len(tokens) == n
        for level in (1, 2, 3):
            phrases = data_utils.load_indexed_dataset(f"{prefix}.syn{level}", None)
            assert phrases is not None, f"{prefix}.syn{level} not readable"
            assert len(phrases) == n
            for i in range(n):
                item = phrases[i].tolist()
                lengths, tag_ids = item[:len(item) // 2], item[len(item) // 2:]
                assert sum(lengths) == len(tokens[i]) - 1  # every subword but the end-of-sentence token
                assert all(0 <= t < len(tags) for t in tag_ids)
    if recipe["name"] == "iwslt14_de_en":  # lowercased text, and trees lowercased to match
        with open(work / "tok" / f"train.{src}.tree", encoding="utf-8") as f:
            tree = f.readline()
        assert "(NP" in tree and not re.search(r" [A-Z][a-z]+\)", tree)


def test_checkpoints_and_their_average(recipe):
    import torch

    def load(path):
        return torch.load(path, map_location="cpu", weights_only=False)

    for system in recipe["systems"]:
        # the registry's options of the system at the recipe's size
        assert f"training {system}: {system} = {' '.join(get(system).train_args(recipe['size']))};" in recipe["first"]
        ckpt = recipe["work"] / "checkpoints" / system
        last = load(ckpt / "checkpoint_last.pt")
        assert last["optimizer_history"][-1]["num_updates"] == MAX_UPDATE
        # the newest AVG_N checkpoints, the final model included: fairseq does not write
        # checkpoint_E_U.pt when update U ends an epoch, checkpoint_last.pt then stands for it
        by_updates = {int(re.findall(r"_(\d+)\.pt$", p)[0]): p for p in glob.glob(str(ckpt / "checkpoint_*_*.pt"))}
        assert by_updates and set(by_updates) <= set(range(SAVE_EVERY, MAX_UPDATE + 1, SAVE_EVERY))
        by_updates.setdefault(MAX_UPDATE, ckpt / "checkpoint_last.pt")
        newest = [by_updates[u] for u in sorted(by_updates)[-AVG_N:]]
        assert f"averaging {', '.join(os.path.basename(p) for p in newest)}" in recipe["first"]
        avg = load(ckpt / f"checkpoint_avg{AVG_N}.pt")["model"]
        states = [load(p)["model"] for p in newest]
        floats = [k for k, v in avg.items() if torch.is_floating_point(v)]
        assert floats
        for k in floats:
            assert torch.allclose(avg[k], sum(s[k].float() for s in states) / AVG_N, atol=1e-6), k


def test_one_hypothesis_per_test_line_and_bleu(recipe):
    n_ref = count_lines(recipe["work"] / "tok" / f"test.{recipe['tgt']}")
    assert n_ref == N_TEST
    for system in recipe["systems"]:
        out = recipe["work"] / "results" / system
        generated = (out / "generate-test.txt").read_text(encoding="utf-8")
        assert sorted(int(i) for i in re.findall(r"^H-(\d+)\t", generated, flags=re.M)) == list(range(N_TEST))
        assert count_lines(out / "hyp.tok") == N_TEST
        bleu = (out / "bleu.txt").read_text(encoding="utf-8")
        assert re.search(r"^tokenized BLEU.*: \d+\.\d\d ", bleu, flags=re.M), bleu
        assert re.search(r"^detokenized sacreBLEU.*: \d+\.\d\d ", bleu, flags=re.M), bleu
        if recipe["name"] == "wmt14_en_de":
            assert "compounds split" in bleu
        for kind in ("tok", "detok"):
            assert 0 <= json.loads((out / f"bleu.{kind}.json").read_text())["score"] <= 100
        assert f"run: {system} (system {system}, seed 1)" in recipe["first"].split("== ")[-1]  # run_all.sh's summary


def test_run_all_ends_with_the_compare_table(recipe):
    """With two systems or more, run_all.sh's last step is mgsa-compare's table (results/compare/)."""
    out = recipe["work"] / "results" / "compare"
    if len(recipe["systems"]) < 2:
        assert not out.exists() and "nothing to compare it with" in recipe["first"]
        return
    results = json.loads((out / "results.json").read_text())
    assert list(results["models"]) == recipe["systems"] and results["baseline"] == "transformer"
    assert results["test_sentences"] == N_TEST
    m = results["models"]["mgsa_syntactic"]
    assert m["label"] == get("mgsa_syntactic").label and m["params"] > results["models"]["transformer"]["params"]
    assert m["decode_speed_ratio"] > 0 and m["train_speed_ratio"] > 0 and m["verdict"]
    import sacrebleu  # the table's BLEU: sacrebleu's, lowercased, on the detokenized hypotheses
    refs = (recipe["raw"] / f"test.{recipe['tgt']}").read_text(encoding="utf-8").split("\n")[:-1]
    hyps = (recipe["work"] / "results" / "mgsa_syntactic" / "hyp.detok").read_text(encoding="utf-8").split("\n")[:-1]
    assert m["bleu"] == [round(sacrebleu.corpus_bleu(hyps, [refs], lowercase=True).score, 2)]
    table = recipe["first"].split("== ")[-1]
    assert "against the baseline" in table and get("mgsa_syntactic").label in table
    assert (out / "compare-mt" / "index.html").exists() and (out / "bleu_by_ngram_order.png").exists()


def test_compare_step_over_seeds(recipe, tmp_path):
    """SEEDS="1 2": run names get _seedN and the table gives mean ± sd over them (the seeds' runs
    are copies of the recipe's runs here: the step's plumbing, not training, is under test)."""
    if len(recipe["systems"]) < 2:
        pytest.skip("one system")
    work = tmp_path / "work"
    for system in recipe["systems"]:
        for seed in (1, 2):
            shutil.copytree(recipe["work"] / "results" / system, work / "results" / f"{system}_seed{seed}")
    env = dict(recipe["env"], WORKDIR=str(work), SEEDS="1 2", SYSTEMS=" ".join(recipe["systems"]))
    log = bash(os.path.join(EXAMPLES, recipe["name"], "09_compare.sh"), env).stdout
    results = json.loads((work / "results" / "compare" / "results.json").read_text())
    m = results["models"]["mgsa_syntactic"]
    assert len(m["bleu"]) == 2 and m["bleu_sd"] == 0.0 and len(m["seed_p_values"]) == 2
    assert f"{m['bleu_mean']:.2f} ± 0.00" in log
    # a run directory missing for a seed: one line naming the file
    shutil.rmtree(work / "results" / "transformer_seed2")
    proc = bash(os.path.join(EXAMPLES, recipe["name"], "09_compare.sh"), env, check=False)
    assert proc.returncode != 0
    assert proc.stdout.strip().splitlines()[-1] == (
        f"09_compare.sh: error: {work}/results/transformer_seed2/hyp.detok not found (or empty)")


def test_a_rerun_skips_every_step(recipe):
    log = recipe["second"]
    for step in ("02_tokenize", "03_parse", "04_bpe.50", "05_preprocess"):
        assert f"{step}: done already" in log, log[-3000:]
    for system in recipe["systems"]:
        assert f"06_train.{system}.{MAX_UPDATE}: done already" in log
        assert f"{system}/checkpoint_avg{AVG_N}.pt, itself newer than the last checkpoint" in log
    assert log.count("08_score: done already") == len(recipe["systems"])
    # the steps' own lines ("[06_train.sh] training ..."), not the table's notes, which step 9 prints again
    steps_lines = "\n".join(line for line in log.splitlines() if line.startswith("[0"))
    for busy in ("tokenizing ", "learning ", "training ", "translating "):
        assert busy not in steps_lines
    assert "fairseq_cli" not in log


@pytest.mark.parametrize("recipe", ["wmt14_en_de"], indirect=True)  # one recipe: the steps are shared
def test_training_resumes_when_max_update_is_raised(recipe, tmp_path):
    system = recipe["systems"][0]
    more = MAX_UPDATE + SAVE_EVERY
    work = tmp_path / "work"  # a copy (file times kept), so that the other tests see the first runs' outputs
    shutil.copytree(recipe["work"], work)
    log = bash(recipe["script"], dict(recipe["env"], WORKDIR=str(work), MAX_UPDATE=str(more), FROM_STEP="6")).stdout
    assert re.search(rf"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ {MAX_UPDATE} updates\)", log), log[-3000:]
    assert f"num_updates {more}" in log or f"num_updates={more}" in log
    assert re.search(rf"averaging checkpoint_\d+_{MAX_UPDATE}\.pt, checkpoint_(\d+_{more}|last)\.pt", log), log[-3000:]
    assert "translating the test set" in log and "08_score: done already" not in log
    out = work / "results" / system
    assert count_lines(out / "hyp.tok") == N_TEST
    assert os.path.getmtime(out / "bleu.txt") >= os.path.getmtime(out / "hyp.tok")


@pytest.mark.parametrize("recipe", ["wmt14_en_de"], indirect=True)
def test_systems_without_trees_skip_parsing_and_phrase_files(recipe, tmp_path):
    """SYSTEMS that read no trees (n-gram MG-SA): no parsing, binaries without phrase files,
    the same dictionary as mgsa-preprocess's, training on the translation task, decoding; and
    with binaries that have phrase files already, nothing is binarized again."""
    work = tmp_path / "work"
    shutil.copytree(recipe["work"] / "tok", work / "tok", ignore=shutil.ignore_patterns("*.tree"))
    shutil.copytree(recipe["work"] / "bpe", work / "bpe", ignore=shutil.ignore_patterns("text"))
    (work / ".done").mkdir()
    shutil.copy(recipe["work"] / ".done" / "04_bpe.50", work / ".done")
    env = dict(recipe["env"], WORKDIR=str(work), SYSTEMS="mgsa_ngram", FROM_STEP="3", MAX_UPDATE="2", TREES_DIR="")
    log = bash(recipe["script"], env).stdout
    assert "no system of 'mgsa_ngram' reads trees: nothing to parse" in log
    assert f"training mgsa_ngram: mgsa_ngram = {' '.join(get('mgsa_ngram').train_args('base'))};" in log
    assert "--task translation --arch mgsa_transformer" in log
    data_bin = work / "data-bin"
    assert (data_bin / "train.en-de.en.bin").exists() and not glob.glob(str(data_bin / "*.syn*"))
    assert (data_bin / "dict.en.txt").read_text() == (recipe["work"] / "data-bin" / "dict.en.txt").read_text()
    assert count_lines(work / "results" / "mgsa_ngram" / "hyp.tok") == N_TEST

    copy = tmp_path / "with_trees"  # the first run's binaries, phrase files included
    shutil.copytree(recipe["work"], copy)
    log = bash(os.path.join(EXAMPLES, "wmt14_en_de", "05_preprocess.sh"),
               dict(recipe["env"], WORKDIR=str(copy), SYSTEMS="transformer mgsa_ngram")).stdout
    assert "05_preprocess: done already, with phrase files" in log


@pytest.mark.parametrize("recipe", ["wmt14_en_de"], indirect=True)
def test_parsing_in_shards_then_merging(recipe, tmp_path):
    """03_parse.sh without gold trees: stanza (a stand-in: its models cannot be downloaded here)
    parses 3 shards, 2 jobs at a time, after one shard was parsed alone (SHARD_ID, as one task
    of a SLURM array does); the shards are merged into one tree per tokenized source line, and
    the stand-in checks that the recipe asks stanza for no download."""
    fake = fake_stanza(tmp_path / "fake")
    models = tmp_path / "stanza_resources"
    (models / "en" / "constituency").mkdir(parents=True)
    work = tmp_path / "work"
    shutil.copytree(recipe["work"] / "tok", work / "tok")
    for tree in glob.glob(str(work / "tok" / "*.tree")):  # the gold trees of the first run
        os.remove(tree)
    env = recipe_env(work, recipe["raw"], TREES_DIR="", STANZA_DIR=str(models), NUM_SHARDS="3", PARSE_JOBS="2")
    env["PYTHONPATH"] = str(fake) + os.pathsep + env["PYTHONPATH"]
    script = os.path.join(EXAMPLES, "wmt14_en_de", "03_parse.sh")

    log = bash(script, dict(env, SHARD_ID="2")).stdout
    assert "parsing shard 2 of 3 on CPU" in log
    assert len(glob.glob(str(work / "parse" / "trees" / "shards" / "*.tree.0002-of-0003"))) == 3  # train, valid, test
    assert not glob.glob(str(work / "tok" / "*.tree"))

    log = bash(script, env).stdout  # job 0: shards 0 and 2 (done), job 1: shard 1, at the same time
    assert "shard 2 of 3: parsed already" in log
    assert "parsing shard 0 of 3" in log and "parsing shard 1 of 3" in log
    for split, _ in SIZES:
        with open(work / "tok" / f"{split}.en", encoding="utf-8") as f:
            words = [line.split() for line in f]
        with open(work / "tok" / f"{split}.en.tree", encoding="utf-8") as f:
            leaves = [re.findall(r"\(NN ([^()\s]+)\)", line) for line in f]
        assert leaves == words
    assert "03_parse: done already" in bash(script, env).stdout

    # shards that claim to be done but were parsed from other text (copied from elsewhere, with
    # markers newer than the text): the merge says so, and how to redo them
    with open(work / "tok" / "train.en", "a", encoding="utf-8") as f:
        f.write("one more line\n")
    for marker in glob.glob(str(work / ".done" / "03_parse.shard*")):
        os.utime(marker, (time.time() + 5, time.time() + 5))
    proc = subprocess.run(["bash", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 1
    assert f"03_parse: redoing it: {work}/tok/train.en changed since" in proc.stderr  # issue 37, point 7
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("03_parse.sh: error: merging the parse shards: ") and "03_parse.shardI-of-3" in last, last

    # the text changed since its shards were parsed here (issue 37, point 7): the step and its
    # shards are redone, and the trees fit the new text
    for marker in glob.glob(str(work / ".done" / "03_parse.shard*")):
        os.utime(marker, (time.time() - 60, time.time() - 60))
    log = bash(script, env).stdout
    assert all(f"parsing shard {i} of 3" in log for i in range(3))
    with open(work / "tok" / "train.en.tree", encoding="utf-8") as f:
        assert re.findall(r"\(NN ([^()\s]+)\)", f.readlines()[-1]) == ["one", "more", "line"]


# --- issue 45, point 2: a run's settings decide "done" -----------------------------------------

@pytest.mark.parametrize("recipe", ["wmt14_en_de"], indirect=True)
def test_a_new_seed_trains_its_own_run(recipe, tmp_path):
    """What the user did: `SEEDS=1 run_all.sh`, then `SEEDS=2 run_all.sh` in the same WORKDIR. Step 06
    said "done already" and seed 1's model was scored as the seed-2 run. Now seed 2 is its own run
    (mgsa_syntactic_seed2), trained from its start with seed 2, and seed 1's run is left as it was."""
    system = recipe["systems"][0]
    work = tmp_path / "work"
    shutil.copytree(recipe["work"], work)
    first = work / "checkpoints" / system
    first_last = (first / "checkpoint_last.pt").read_bytes()
    log = bash(recipe["script"], dict(recipe["env"], WORKDIR=str(work), SEEDS="2")).stdout
    assert "done already" in log and f"06_train.{system}.{MAX_UPDATE}" not in log
    assert f"training {system}_seed2: " in log and "Loaded checkpoint" not in log
    ckpt = work / "checkpoints" / f"{system}_seed2"
    train_log = (ckpt / "train.log").read_text()
    assert "'seed': 2," in train_log and "'seed': 1," not in train_log
    assert f"No existing checkpoint found {ckpt}/checkpoint_last.pt" in train_log  # fairseq's own word: a start, not a resume

    import torch

    def model(path):
        return torch.load(path, map_location="cpu", weights_only=False)["model"]

    seed1, seed2 = model(first / "checkpoint_last.pt"), model(ckpt / "checkpoint_last.pt")
    assert any(not torch.equal(seed1[k], seed2[k]) for k in seed1 if torch.is_floating_point(seed1[k]))
    assert (first / "checkpoint_last.pt").read_bytes() == first_last  # seed 1's run untouched
    bleu = (work / "results" / f"{system}_seed2" / "bleu.txt").read_text()
    assert bleu.startswith(f"run: {system}_seed2 (system {system}, seed 2), test set: {N_TEST} sentences")


@pytest.mark.parametrize("recipe", ["wmt14_en_de"], indirect=True)
def test_another_setting_for_a_trained_run_is_refused_in_one_line(recipe, tmp_path):
    """A run trained, then one of its settings changed under the same run name (LR here; the seed
    of a step script run alone; SYSTEM_ARGS): the marker, which recorded MAX_UPDATE and the data only, said "done
    already"; without it fairseq resumed the old checkpoints. Now the step is redone and stops in one
    line naming what changed, before fairseq starts; the checkpoints are left as they were."""
    system = recipe["systems"][0]
    work = tmp_path / "work"
    shutil.copytree(recipe["work"], work)
    ckpt = work / "checkpoints" / system
    before = {p.name: p.stat().st_mtime_ns for p in ckpt.iterdir()}
    env = dict(recipe["env"], WORKDIR=str(work), SYSTEM=system)
    script = os.path.join(EXAMPLES, "wmt14_en_de", "06_train.sh")
    for given, changed in ((dict(LR="2e-3"), "LR=1e-3, now LR=2e-3"),
                           (dict(SEED="2", RUN_NAME=system), "SEED=1, now SEED=2"),
                           (dict(SYSTEM_ARGS="--mgsa-interaction lstm"), "SYSTEM_ARGS=, now SYSTEM_ARGS=--mgsa-interaction lstm")):
        proc = bash(script, dict(env, **given), check=False)
        assert proc.returncode == 1, proc.stdout[-3000:]
        if "LR" in given:  # the first: the marker then goes (a redo that failed leaves none)
            assert f"06_train.{system}.{MAX_UPDATE}: redoing it: made with {changed}" in proc.stdout
        assert proc.stdout.strip().splitlines()[-1] == (
            f"06_train.sh: error: the checkpoints in {ckpt} were trained with other settings ({changed}): resuming "
            f"them would not be that run; delete {ckpt} to train {system} afresh, or give the new run its own name "
            f"(run_all.sh: RUN_SUFFIX=...; a step script: RUN_NAME=...)")
        assert "fairseq_cli" not in proc.stdout
    assert {p.name: p.stat().st_mtime_ns for p in ckpt.iterdir()} == before
    # MAX_UPDATE lowered below the checkpoint's updates: fairseq would stop at once, the model of 6 updates
    # standing for a run of 4
    proc = bash(script, dict(env, MAX_UPDATE="4"), check=False)
    assert proc.returncode == 1 and proc.stdout.strip().splitlines()[-1] == (
        f"06_train.sh: error: {ckpt}/checkpoint_last.pt is at update {MAX_UPDATE}, past MAX_UPDATE=4: fairseq would "
        f"stop at once and step 07 would decode a model of {MAX_UPDATE} updates; raise MAX_UPDATE, or delete {ckpt} "
        f"to train {system} afresh")
    # the settings as they were: the checkpoints are resumed, at their last update
    log = bash(script, env).stdout
    assert re.search(rf"Loaded checkpoint .*{system}/checkpoint_last\.pt \(epoch \d+ @ {MAX_UPDATE} updates\)", log), log[-3000:]


@pytest.mark.parametrize("recipe", ["wmt14_en_de"], indirect=True)
def test_decoding_and_scoring_are_redone_when_their_settings_change(recipe, tmp_path):
    """Steps 07 and 08 were decided by file times alone: BEAM=3 kept the beam-2 hypotheses and
    COMPOUND_SPLIT=0 the compound-split BLEU, "done already". Now each records its settings and is
    redone, saying why, when they change."""
    system = recipe["systems"][0]
    work = tmp_path / "work"
    shutil.copytree(recipe["work"], work)
    out = work / "results" / system
    env = dict(recipe["env"], WORKDIR=str(work), FROM_STEP="7")
    log = bash(recipe["script"], dict(env, BEAM="3")).stdout
    assert f"07: decoding again: {out}/hyp.tok was made with BEAM=2, now BEAM=3" in log
    generated = (out / "generate-test.log").read_text()
    assert "'beam': 3" in generated
    assert "08: scoring again" not in log  # new hypotheses: redone by their time, settings unchanged
    assert "08_score: done already" not in log
    log = bash(recipe["script"], dict(env, BEAM="3", COMPOUND_SPLIT="0")).stdout
    assert "07_average_and_generate: done already" in log
    assert f"08: scoring again: {out}/bleu.txt was made with COMPOUND_SPLIT=1, now COMPOUND_SPLIT=0" in log
    assert "compounds split" not in (out / "bleu.txt").read_text()
