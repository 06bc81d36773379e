"""The Chinese-English recipes' shared steps, run once, whole (examples/nist_zh_en, whose steps 02-09
wmt17_zh_en and iwslt17_zh_en run as they are: examples/common/), on generated data: the project's
grammar with a Chinese lexicon (mgsa_preprocess.synthetic --lang zh), laid out as LDC's NIST files.

* 01: the training pairs and MT02-MT04 as SGML with four references each (MT02's in one file, one
  reference listing its documents backwards; MT03's and MT04's in four files), every path in one
  paths.sh; the references split into RAW_DIR/NAME.en, NAME.en.ref1-3 in the first one's order;
* 02: the Chinese segmented once with the grammar's jieba dictionary: the words are the gold trees'
  leaves; a line with ASCII quotes, an ampersand and capitals keeps them (no Moses escape, no
  lowercasing), while the English side is Moses-tokenized;
* 03: a parser trained by mgsa-train-parser --lang zh on the grammar's gold trees (tiny), which
  then parses every split (stanza's pipeline on that model): one tree per line, leaves = the words;
* 04-05: separate BPE codes and dictionaries (no Chinese character in the English dictionary), the
  phrase files with Chinese labels; 06-08: the Transformer and syntactic MG-SA trained (the
  decoder's embeddings shared, not all), both test sets decoded and scored with the four references;
* 09: mgsa-compare on each test set with the four references (BLEU = sacrebleu's with the four) and
  the table of both test sets with their average; a rerun does nothing again.
"""

import json
import os
import re
import time

import pytest
import sacrebleu

from tests.end_to_end.recipe_runs import TINY_MODEL, bash, count_lines, recipe_env
from tests.end_to_end.zh_recipe_data import corpus, nist_layout, read, write
from tests.paths import EXAMPLES

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long

RECIPE = os.path.join(EXAMPLES, "nist_zh_en")
SYSTEMS = ["transformer", "mgsa_syntactic"]
SIZES = (("train", 200), ("valid", 16), ("mt03", 16), ("mt04", 16))
TINY_PARSER = "--tagger-steps 20 --parser-epochs 2 --hidden-size 16 --wordvec-dim 8 --wordvec-epochs 1"
MIXED = '他说 "AT&T" 的 R&D 很好，O\'Neil 同意。'   # ASCII quotes, '&', capitals inside Chinese


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nist_zh_en")
    gen = corpus(tmp / "gen", SIZES)
    # one more training pair whose Chinese holds what an English-only step would change
    for side, line in (("zh", MIXED), ("en", 'he said " AT & T " R & D is good .')):
        with open(os.path.join(gen, f"train.{side}"), "a", encoding="utf-8") as f:
            f.write(line + "\n")
    paths, four = nist_layout(gen, tmp / "ldc", [("MT02", "valid"), ("MT03", "mt03"), ("MT04", "mt04")])
    (tmp / "paths.sh").write_text(paths, encoding="utf-8")
    trees = read(os.path.join(gen, "train.zh.tree"))
    tb = {name: write(tmp / "treebank" / f"{name}.mrg", part)
          for name, part in (("train", trees[:160]), ("dev", trees[160:180]), ("test", trees[180:]))}
    env = recipe_env(tmp / "work", NIST_PATHS=str(tmp / "paths.sh"), TEST_SETS="mt03 mt04", SYSTEMS=" ".join(SYSTEMS),
                     PARSER="treebank", PARSER_TRAIN_TREES=tb["train"], PARSER_DEV_TREES=tb["dev"],
                     PARSER_TEST_TREES=tb["test"], PARSER_ARGS=TINY_PARSER, NUM_SHARDS="1",
                     ZH_USER_DICT=os.path.join(gen, "lexicon.dict"))
    del env["SKIP_DOWNLOAD"]
    script = os.path.join(RECIPE, "run_all.sh")
    t0 = time.time()
    first = bash(script, env).stdout
    t1 = time.time()
    second = bash(script, env).stdout
    print(f"nist_zh_en: first run {t1 - t0:.1f}s, rerun {time.time() - t1:.1f}s")
    return dict(work=tmp / "work", gen=gen, four=four, first=first, second=second, env=env)


def test_references_split_and_the_source_matched(run):
    raw = run["work"] / "raw"
    for name, split in (("MT02", "valid"), ("MT03", "mt03"), ("MT04", "mt04")):
        refs = [read(raw / f"{split}.en")] + [read(raw / f"{split}.en.ref{k}") for k in (1, 2, 3)]
        assert refs == run["four"][name]
        assert read(raw / f"{split}.zh") == read(os.path.join(run["gen"], f"{split}.zh"))
    assert count_lines(raw / "train.zh") == SIZES[0][1] + 1


def test_one_segmentation_the_trees_leaves_and_no_english_step_on_the_chinese(run):
    tok = run["work"] / "tok"
    words = read(tok / "train.zh")
    gold = [re.findall(r"\(\S+ ([^()\s]+)\)", t) for t in read(os.path.join(run["gen"], "train.zh.tree"))]
    assert [w.split() for w in words[:len(gold)]] == gold  # the segmentation is the trees' words
    mixed = words[-1]  # the segmenter's words, as they are: no Moses escape, no lowercasing
    from mgsa_preprocess.segment_zh import segment_line
    assert mixed == segment_line(MIXED, user_dict=os.path.join(run["gen"], "lexicon.dict"))
    assert {'"', "&", "'", "AT", "Neil"} <= set(mixed.split())
    assert "&amp;" not in mixed and "&quot;" not in mixed and "&apos;" not in mixed
    assert "&quot;" in read(tok / "train.en")[-1]  # the English is Moses-tokenized (escapes kept)
    # the parser's trees: one per line of every split, leaves = the segmented words
    for split in ("train", "valid", "mt03", "mt04"):
        lines = read(tok / f"{split}.zh")
        trees = read(tok / f"{split}.zh.tree")
        assert len(trees) == len(lines)
        for line, tree in zip(lines[:20], trees[:20]):
            assert re.findall(r"\(\S+ ([^()\s]+)\)", tree) == line.split()
    record = json.loads((run["work"] / "parser" / "mgsa_parser.json").read_text())
    assert record["lang"] == "zh"
    assert "labeled-bracket F1" in (run["work"] / "parser" / "test_f1.txt").read_text()


def test_separate_vocabularies_and_embeddings(run):
    work = run["work"]
    assert (work / "bpe" / "codes.zh.50").exists() and (work / "bpe" / "codes.en.50").exists()
    src = (work / "data-bin" / "dict.zh.txt").read_text(encoding="utf-8")
    tgt = (work / "data-bin" / "dict.en.txt").read_text(encoding="utf-8")
    assert re.search(r"[\u4e00-\u9fff]", src) and not re.search(r"[\u4e00-\u9fff]", tgt)
    # the tag dictionary: the labels of the parser's trees, which are the Chinese treebank's (a parser
    # this tiny may give few of them)
    tags = set((work / "data-bin" / "dict.zh.tags.txt").read_text().split()[::2])
    treebank = {label for t in read(os.path.join(run["gen"], "train.zh.tree")) for label in re.findall(r"\((\S+)", t)}
    assert tags and tags <= treebank and "NP" in tags
    for system in SYSTEMS:
        train_log = (work / "checkpoints" / system / "train.log").read_text()
        assert "share_decoder_input_output_embed=True" in train_log  # fairseq's model Namespace, as logged
        assert "share_all_embeddings=False" in train_log


def test_every_test_set_scored_and_compared_with_the_four_references(run):
    work, raw = run["work"], run["work"] / "raw"
    for name, subset in (("mt03", "test"), ("mt04", "test1")):
        refs = [read(raw / f"{name}.en")] + [read(raw / f"{name}.en.ref{k}") for k in (1, 2, 3)]
        for system in SYSTEMS:
            out = work / "results" / system / name
            assert count_lines(out / "hyp.tok") == dict(SIZES)[name]
            assert f"'gen_subset': '{subset}'" in (out / "generate-test.log").read_text()
            bleu = (out / "bleu.txt").read_text()
            assert f"test set {name}: {dict(SIZES)[name]} sentences, 4 references" in bleu
            assert "nrefs:4|case:mixed" in bleu
            detok = json.loads((out / "bleu.detok.json").read_text())["score"]
            assert detok == round(sacrebleu.corpus_bleu(read(out / "hyp.detok"), refs).score, 2)
        results = json.loads((work / "results" / "compare" / name / "results.json").read_text())
        assert results["n_refs"] == 4 and list(results["models"]) == SYSTEMS
        m = results["models"]["mgsa_syntactic"]
        hyps = read(work / "results" / "mgsa_syntactic" / name / "hyp.detok")
        assert m["bleu"] == [round(sacrebleu.corpus_bleu(hyps, refs).score, 2)]
        assert m["params"] and m["train_speed_ratio"]  # the run's train.log found from results/RUN/TEST
    table = (work / "results" / "compare" / "test_sets.md").read_text(encoding="utf-8")
    assert table in run["first"]
    rows = table.splitlines()
    assert rows[0] == "| system | mt03 (16) | mt04 (16) | average |"
    for system, row in zip(SYSTEMS, rows[2:4]):
        scores = [json.loads((work / "results" / "compare" / n / "results.json").read_text())["models"][system]["bleu_mean"]
                  for n in ("mt03", "mt04")]
        assert row.endswith(f"| {sum(scores) / 2:.2f} |")
    assert "4 references a sentence" in table


def test_a_rerun_does_nothing_again(run):
    log = run["second"]
    for step in ("01_download", "02_tokenize", "03_parse", "04_bpe.separate.50", "05_preprocess"):
        assert f"{step}: done already" in log, log[-3000:]
    assert "using the parser trained already" in log
    steps_lines = "\n".join(line for line in log.splitlines() if line.startswith("[0"))
    for busy in ("segmenting ", "tokenizing ", "learning ", "training ", "translating "):
        assert busy not in steps_lines
    assert log.count("08_score: done already") == 2 * len(SYSTEMS)


@pytest.mark.slow  # about 45 s on 2 cores: over the default suite's budget
def test_systems_without_trees_get_the_same_separate_dictionaries(run, tmp_path):
    """WMT17's default systems (transformer, hysan) read no trees: step 05 binarizes with
    fairseq-preprocess, each side's own BPE and dictionary, the same dictionaries as with trees."""
    import shutil
    work = tmp_path / "work"
    shutil.copytree(run["work"] / "tok", work / "tok", ignore=shutil.ignore_patterns("*.tree"))
    shutil.copytree(run["work"] / "bpe", work / "bpe", ignore=shutil.ignore_patterns("text"))
    (work / ".done").mkdir()
    shutil.copy(run["work"] / ".done" / "04_bpe.separate.50", work / ".done")
    env = dict(run["env"], WORKDIR=str(work), SYSTEMS="transformer hysan")
    log = bash(os.path.join(RECIPE, "05_preprocess.sh"), env).stdout
    assert "no system of 'transformer hysan' reads trees: binarizing without phrase files" in log
    for lang in ("zh", "en"):
        assert (work / "data-bin" / f"dict.{lang}.txt").read_text() == (run["work"] / "data-bin" / f"dict.{lang}.txt").read_text()
    assert (work / "data-bin" / "test1.zh-en.zh.bin").exists() and not list((work / "data-bin").glob("*.syn*"))
