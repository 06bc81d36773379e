"""The WMT16 English-Russian recipe (examples/wmt16_en_ru/) on generated data, both directions:
the project's grammar with its target written in Cyrillic letters (preprocess/synthetic/,
cyrillic_target: a stand-in for Russian, generated), the Russian side detokenized as raw text is
("хундо." not "хундо ."), the English side with its gold trees (TREES_DIR).

* en-ru: run_all.sh whole with syntactic MG-SA (tiny model, a few updates on CPU): the Russian
  side tokenized by sacremoses back into exactly the generated tokens, Cyrillic BPE merges and
  dictionary entries, phrase files of the English source, hypotheses; and step 08 scoring the
  references as hypotheses gives BLEU 100 both ways, the detokenized text the raw text again;
* ru-en: a system that reads trees is refused before any step works, in one line naming the
  ways out; the data steps run tree-free (nothing parsed, no phrase files) and the whole run,
  both marked slow;
* 01_download.sh on archives laid out as statmt.org's (file:// URLs), the registered corpora
  from the user's folders, the direction's own newstest2014 files.
"""

import os
import re
import shutil
import subprocess

import pytest

from mgsa_preprocess.moses_ru import tokenize_line
from mgsa_preprocess.synthetic import cyrillic, generate, write_corpus

from tests.end_to_end.recipe_runs import EXAMPLES, RECIPE_VARS, bash, count_lines, recipe_env
from tests.paths import checkout_pythonpath
from tests.end_to_end.test_recipe_downloads import make_tgz, sgm
from tests.preprocess.russian_text import RUSSIAN

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long

RECIPE = os.path.join(EXAMPLES, "wmt16_en_ru")
SIZES = (("train", 120), ("valid", 12), ("test", 16))


def detokenized(line):
    """The Russian side as raw text has it: punctuation attached to the word before."""
    return re.sub(r" ([.,])", r"\1", line)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """raw/{split}.{en,ru} (Russian detokenized), raw/{split}.en.tree, and the Russian tokens generated."""
    gen = tmp_path_factory.mktemp("generated")
    write_corpus(str(gen), SIZES, seed=5, src="en", tgt="ru", cyrillic_target=True)
    raw = tmp_path_factory.mktemp("raw")
    tokens = {}
    for split, _ in SIZES:
        for name in (f"{split}.en", f"{split}.en.tree"):
            shutil.copy(gen / name, raw / name)
        tokens[split] = (gen / f"{split}.ru").read_text(encoding="utf-8").splitlines()
        lines = [detokenized(t) for t in tokens[split]]
        if split == "test":  # real Russian punctuation in the references (the test set is not cleaned)
            lines[:len(RUSSIAN)] = RUSSIAN
            tokens[split][:len(RUSSIAN)] = [tokenize_line(line, aggressive_dash_splits=True) for line in RUSSIAN]
        (raw / f"{split}.ru").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return raw, tokens


@pytest.fixture(scope="module")
def en_ru(corpus, tmp_path_factory):
    raw, tokens = corpus
    work = tmp_path_factory.mktemp("en_ru") / "work"
    env = recipe_env(work, raw, SYSTEMS="mgsa_syntactic", MAX_UPDATE="4", SAVE_INTERVAL_UPDATES="2")
    log = bash(os.path.join(RECIPE, "run_all.sh"), env).stdout
    return dict(work=work, env=env, log=log, raw=raw, tokens=tokens)


def has_cyrillic(text):
    return re.search("[\u0400-\u04ff]", text) is not None


def test_en_ru_keeps_cyrillic_through_every_data_step(en_ru):
    work, tokens = en_ru["work"], en_ru["tokens"]
    for split, n in SIZES:
        # sacremoses -l ru splits the punctuation off Cyrillic words and leaves them as they are
        assert (work / "tok" / "full" / f"{split}.ru").read_text(encoding="utf-8").splitlines() == tokens[split]
        assert count_lines(work / "tok" / f"{split}.en.tree") == count_lines(work / "tok" / f"{split}.en") == n
    codes = (work / "bpe" / "codes.50").read_text(encoding="utf-8")
    assert any(has_cyrillic(line) for line in codes.splitlines()[1:])
    data_bin = work / "data-bin"
    words = [line.split()[0] for line in (data_bin / "dict.ru.txt").read_text(encoding="utf-8").splitlines()]
    joined = (data_bin / "dict.en.txt").read_text(encoding="utf-8")
    assert joined == (data_bin / "dict.ru.txt").read_text(encoding="utf-8")
    assert any(has_cyrillic(w) for w in words) and any(re.fullmatch("[a-z]+(@@)?", w) for w in words)  # joined
    for level in (1, 2, 3):  # the English source's phrase files
        assert (data_bin / f"train.en-ru.en.syn{level}.bin").exists()
    assert "mgsa_syntactic = --task mgsa_translation" in en_ru["log"]


def test_en_ru_trains_decodes_and_scores(en_ru):
    out = en_ru["work"] / "results" / "mgsa_syntactic"
    generated = (out / "generate-test.txt").read_text(encoding="utf-8")
    n_test = dict(SIZES)["test"]
    assert sorted(int(i) for i in re.findall(r"^H-(\d+)\t", generated, flags=re.M)) == list(range(n_test))
    bleu = (out / "bleu.txt").read_text(encoding="utf-8")
    assert "compounds split" not in bleu and re.search(r"^detokenized sacreBLEU.*: \d+\.\d\d ", bleu, flags=re.M)
    assert "averaging checkpoint_" in en_ru["log"]


def test_scoring_the_references_gives_100_and_detokenizes_cyrillic_back(en_ru, tmp_path):
    """Step 08 with the tokenized references as hypotheses: BLEU 100 tokenized and detokenized,
    so the Russian text (« » „ “ — – … ё, О'Нил, 2:1 in its first lines) came back byte for byte
    into the raw references, the text step 09 compares too."""
    work = tmp_path / "work"
    shutil.copytree(en_ru["work"], work, ignore=shutil.ignore_patterns("checkpoints", "data-bin"))
    out = work / "results" / "mgsa_syntactic"
    shutil.copy(work / "tok" / "test.ru", out / "hyp.tok")
    bash(os.path.join(RECIPE, "08_score.sh"), dict(en_ru["env"], WORKDIR=str(work), SYSTEM="mgsa_syntactic"))
    assert (out / "hyp.detok").read_bytes() == (en_ru["raw"] / "test.ru").read_bytes()
    bleu = (out / "bleu.txt").read_text(encoding="utf-8")
    assert re.search(r"^tokenized BLEU.*: 100\.00 ", bleu, flags=re.M), bleu
    assert re.search(r"^detokenized sacreBLEU.*: 100\.00 ", bleu, flags=re.M), bleu


def test_train_valid_and_test_russian_are_tokenized_alike(tmp_path):
    """Step 02 treats the Russian of every split alike (no punctuation normalisation by default):
    a sentence has the same tokens in train as in test, « » „ “ — – … kept, so that a model can
    learn to write what the references hold. NORM_SPLITS naming some splits only is refused up
    front; naming every split normalises them all alike."""
    raw, work = tmp_path / "raw", tmp_path / "work"
    raw.mkdir()
    for split in ("train", "valid", "test"):
        (raw / f"{split}.ru").write_text("".join(line + "\n" for line in RUSSIAN), encoding="utf-8")
        (raw / f"{split}.en").write_text("".join(f"the {split} sentence number {i} .\n" for i in range(len(RUSSIAN))))
    env = recipe_env(work, RAW_DIR=str(raw))
    bash(os.path.join(RECIPE, "02_tokenize.sh"), env)
    full = {split: (work / "tok" / "full" / f"{split}.ru").read_text(encoding="utf-8") for split in ("train", "valid", "test")}
    assert full["train"] == full["valid"] == full["test"]
    assert all(mark in full["train"] for mark in "«»„“—–…ё'")
    assert full["test"].splitlines()[0] == "« Газпром » и „ Роснефть “ — крупнейшие компании России ."

    some = bash(os.path.join(RECIPE, "02_tokenize.sh"), dict(env, NORM_SPLITS="train valid", WORKDIR=str(tmp_path / "w2")),
                check=False)
    assert some.returncode == 1 and some.stdout.strip().splitlines() == [
        "02_tokenize.sh: error: NORM_SPLITS='train valid' leaves out test: punctuation normalised in some splits only "
        "leaves the test set with marks that training never shows (the references' guillemets, low-high quotes and "
        "dashes are \" and - in training); set "
        "NORM_SPLITS empty (the default) or to every split: 'train valid test'"]
    assert not (tmp_path / "w2").exists()
    work = tmp_path / "all"
    bash(os.path.join(RECIPE, "02_tokenize.sh"), dict(env, NORM_SPLITS="train valid test", WORKDIR=str(work)))
    full = {split: (work / "tok" / "full" / f"{split}.ru").read_text(encoding="utf-8") for split in ("train", "test")}
    assert full["train"] == full["test"] and "«" not in full["test"] and '"' in full["test"]


def recipe_settings(names, **env):
    """NAME=value of `names` after sourcing defaults.sh as the steps do (the environment's recipe settings removed)."""
    script = f"set -euo pipefail; source {RECIPE}/defaults.sh; " + "; ".join(f'echo "{v}=${{{v}}}"' for v in names)
    clean = {k: v for k, v in os.environ.items() if k not in RECIPE_VARS}
    proc = subprocess.run(["bash", "-c", script], env={**clean, "PYTHONPATH": checkout_pythonpath(), **env}, cwd="/tmp",
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout
    return dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)


@pytest.mark.parametrize("direction,size", [("en-ru", "base"), ("ru-en", "base"), ("en-ru", "big")])
def test_the_papers_settings_by_default(direction, size, tmp_path):
    """The paper's Table 1 setup: joint BPE 40,000, checkpoints every 10,000 updates and the last 5
    averaged, beam 5, length penalty 0.6, cased, no compound splitting; a Russian source's
    default systems read no trees; no punctuation normalised in any split."""
    got = recipe_settings(("SRC", "TGT", "WORKDIR", "BPE_MERGES", "SAVE_INTERVAL_UPDATES", "AVG_N", "BEAM", "LENPEN",
                           "LOWERCASE", "COMPOUND_SPLIT", "SYSTEMS", "SYSTEM", "ARCH_SIZE", "LR", "MAX_UPDATE",
                           "NORM_SPLITS"),
                          DIRECTION=direction, MODEL_SIZE=size)
    src, tgt = direction.split("-")
    systems = "transformer mgsa_ngram" if src == "ru" else "transformer mgsa_syntactic"
    assert got == dict(SRC=src, TGT=tgt, WORKDIR=f"/tmp/wmt16_{src}_{tgt}", BPE_MERGES="40000",
                       SAVE_INTERVAL_UPDATES="10000", AVG_N="5", BEAM="5", LENPEN="0.6", LOWERCASE="0",
                       COMPOUND_SPLIT="0", SYSTEMS=systems, SYSTEM=systems.split()[1], ARCH_SIZE=size,
                       LR={"base": "7e-4", "big": "5e-4"}[size], MAX_UPDATE={"base": "100000", "big": "300000"}[size],
                       NORM_SPLITS="")  # no split normalised: train and test alike


def test_ru_en_refuses_systems_that_read_trees_up_front(corpus, tmp_path):
    raw, _ = corpus
    work = tmp_path / "work"
    env = recipe_env(work, DIRECTION="ru-en", RAW_DIR=str(raw), SYSTEMS="transformer mgsa_syntactic")
    for script in ("run_all.sh", "02_tokenize.sh"):
        proc = bash(os.path.join(RECIPE, script), env, check=False)
        assert proc.returncode == 1
        assert proc.stdout.strip().splitlines() == [
            f"{script}: error: mgsa_syntactic read constituency trees of the source, and stanza has no Russian "
            "parser: give Russian trees (TREES_DIR=<folder of {train,valid,test}.ru.tree>) or a parser trained with "
            "mgsa-train-parser (STANZA_DIR=<its folder>), or systems without trees "
            "(SYSTEMS=\"transformer mgsa_ngram\": n-gram MG-SA)"]
    assert not work.exists()
    # the ways out pass the check: Russian trees given, or a trained parser's folder
    for given in (dict(TREES_DIR=str(tmp_path)), dict(STANZA_DIR=str(tmp_path / "parser"))):
        (tmp_path / "parser").mkdir(exist_ok=True)
        (tmp_path / "parser" / "mgsa_parser.json").write_text("{}")
        proc = bash(os.path.join(RECIPE, "04_bpe.sh"), dict(env, **given), check=False)
        assert "stanza has no Russian parser" not in proc.stdout
    bad = bash(os.path.join(RECIPE, "02_tokenize.sh"), dict(env, DIRECTION="ru-de"), check=False)
    assert bad.returncode == 1 and bad.stdout.strip().splitlines()[-1] == (
        "02_tokenize.sh: error: DIRECTION (or SRC/TGT) must be en-ru or ru-en (got ru-de)")


def ru_en_env(corpus, work):
    raw, _ = corpus
    return recipe_env(work, DIRECTION="ru-en", RAW_DIR=str(raw), SYSTEMS="mgsa_ngram", MAX_UPDATE="2",
                      SAVE_INTERVAL_UPDATES="2")


@pytest.mark.slow  # 25-48 s: over the default suite's budget; the refusal above stays in it
def test_ru_en_data_steps_without_trees(corpus, en_ru, tmp_path):
    """Steps 02-05 with the Russian source. The Moses tokenisation of each raw file is that of
    the en-ru run (the same files, each in its own language): its files and their markers are
    taken over, as a WORKDIR copied would keep them, so step 02 only cleans the pairs again."""
    raw, tokens = corpus
    work = tmp_path / "work"
    shutil.copytree(en_ru["work"] / "tok" / "full", work / "tok" / "full")
    (work / ".done").mkdir()
    for marker in (en_ru["work"] / ".done").glob("02_tokenize.*.*"):
        shutil.copy2(marker, work / ".done")
    env = ru_en_env(corpus, work)
    log = "".join(bash(os.path.join(RECIPE, s), env).stdout for s in ("02_tokenize.sh", "03_parse.sh", "04_bpe.sh",
                                                                       "05_preprocess.sh"))
    assert "02_tokenize: redoing it" not in log and "tokenizing " not in log  # the en-ru run's files
    assert "no system of 'mgsa_ngram' reads trees: nothing to parse" in log
    assert "binarizing without phrase files" in log
    assert (work / "tok" / "train.ru").read_text(encoding="utf-8").splitlines() == tokens["train"]
    assert not list((work / "tok").glob("*.tree"))
    data_bin = work / "data-bin"
    assert (data_bin / "train.ru-en.ru.bin").exists() and not list(data_bin.glob("*.syn*"))
    words = [line.split()[0] for line in (data_bin / "dict.ru.txt").read_text(encoding="utf-8").splitlines()]
    assert any(has_cyrillic(w) for w in words)


@pytest.mark.slow
def test_ru_en_whole_run(corpus, tmp_path):
    work = tmp_path / "work"
    log = bash(os.path.join(RECIPE, "run_all.sh"), ru_en_env(corpus, work)).stdout
    assert "training mgsa_ngram: mgsa_ngram = --task translation --arch mgsa_transformer" in log
    out = work / "results" / "mgsa_ngram"
    assert count_lines(out / "hyp.tok") == dict(SIZES)["test"]
    assert re.search(r"^detokenized sacreBLEU.*: \d+\.\d\d ", (out / "bleu.txt").read_text(), flags=re.M)


def test_download_from_a_local_mirror(tmp_path):
    """01_download.sh on archives laid out as statmt.org's: Common Crawl, News Commentary v11,
    Wiki Headlines ("Russian ||| English"), newstest2013, newstest2014's files of the direction;
    Yandex's and the UN corpus from the user's folders, or left out with a warning."""
    pairs = generate(44, seed=9)
    en, ru = [p[0] for p in pairs], [cyrillic(p[1]) for p in pairs]

    def corpus(name, lo, hi):
        return {f"{name}.en": "".join(x + "\n" for x in en[lo:hi]), f"{name}.ru": "".join(x + "\n" for x in ru[lo:hi])}

    mirror = tmp_path / "mirror"
    make_tgz(mirror / "wmt13" / "training-parallel-commoncrawl.tgz", corpus("commoncrawl.ru-en", 0, 6))
    make_tgz(mirror / "wmt16" / "translation-task" / "training-parallel-nc-v11.tgz",
             corpus("training-parallel-nc-v11/news-commentary-v11.ru-en", 6, 10))
    make_tgz(mirror / "wmt15" / "wiki-titles.tgz",
             {"wiki/ru-en/wiki.ru-en": "".join(f"{r} ||| {e}\n" for r, e in zip(ru[10:14], en[10:14]))})
    make_tgz(mirror / "wmt16" / "translation-task" / "dev.tgz", corpus("dev/newstest2013", 14, 18))
    # the src and ref files of one language differ here, so the direction's own are told apart
    make_tgz(mirror / "wmt14" / "test-full.tgz", {
        "test-full/newstest2014-ruen-src.en.sgm": sgm(en[18:22]),
        "test-full/newstest2014-ruen-ref.ru.sgm": sgm(ru[18:22]),
        "test-full/newstest2014-ruen-src.ru.sgm": sgm(ru[22:26]),
        "test-full/newstest2014-ruen-ref.en.sgm": sgm(en[22:26])})
    yandex, un = tmp_path / "1mcorpus", tmp_path / "un"
    for folder, stem, lo, hi in ((yandex, "corpus.en_ru.1m", 26, 30), (un, "UNv1.0.en-ru", 30, 44)):
        folder.mkdir()
        for name, text in corpus(stem, lo, hi).items():
            (folder / name).write_text(text, encoding="utf-8")
    script = os.path.join(RECIPE, "01_download.sh")
    urls = dict(STATMT=f"file://{mirror}", DATA_STATMT=f"file://{mirror}", TREES_DIR=str(tmp_path))

    work = tmp_path / "work"
    env = recipe_env(work, **urls, YANDEX_DIR=str(yandex), UN_DIR=str(un))
    del env["SKIP_DOWNLOAD"]
    log = bash(script, env).stdout
    assert "raw corpus in" in log and "32 train, 4 valid, 4 test pairs" in log and "warning" not in log
    raw = work / "raw"
    train = list(range(0, 14)) + list(range(26, 44))  # Common Crawl, NC, Wiki Headlines, Yandex, UN
    assert (raw / "train.en").read_text(encoding="utf-8").splitlines() == [en[i] for i in train]
    assert (raw / "train.ru").read_text(encoding="utf-8").splitlines() == [ru[i] for i in train]
    assert (raw / "valid.ru").read_text(encoding="utf-8").splitlines() == ru[14:18]
    assert (raw / "test.en").read_text(encoding="utf-8").splitlines() == en[18:22]  # en-ru: src.en, ref.ru
    assert (raw / "test.ru").read_text(encoding="utf-8").splitlines() == ru[18:22]

    work = tmp_path / "ru_en"
    env = recipe_env(work, **urls, DIRECTION="ru-en", SYSTEMS="transformer")
    del env["SKIP_DOWNLOAD"]
    log = bash(script, env).stdout
    assert "warning: YANDEX_DIR not set" in log and "warning: UN_DIR not set" in log
    assert "14 train, 4 valid, 4 test pairs" in log
    assert (work / "raw" / "test.ru").read_text(encoding="utf-8").splitlines() == ru[22:26]  # ru-en: src.ru, ref.en
    assert (work / "raw" / "test.en").read_text(encoding="utf-8").splitlines() == en[22:26]
    # a registered corpus named but not there: one line naming the file, before any download
    proc = bash(script, dict(env, WORKDIR=str(tmp_path / "third"), YANDEX_DIR=str(tmp_path / "nowhere")), check=False)
    assert proc.returncode == 1 and proc.stdout.strip().splitlines()[-1] == (
        f"01_download.sh: error: {tmp_path}/nowhere/corpus.en_ru.1m.en not found (or empty)")
    assert not (tmp_path / "third" / "orig").exists()
