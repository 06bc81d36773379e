"""The real stanza pipeline, no stand-in: a tagger and parser trained here by mgsa-train-parser
on the grammar's trees, then mgsa-preprocess --parser stanza, sharded parsing and
fairseq-interactive on text, all loading that directory offline."""

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest
from fairseq.data import Dictionary, data_utils
from subword_nmt.learn_bpe import learn_bpe

from tests.paths import ROOT, checkout_pythonpath
from tests.preprocess.conftest import read_phrase_file, reference_levels
from mgsa_preprocess.cli import main
from mgsa_preprocess.synthetic import Node, write_corpus

USER_DIR = os.path.join(ROOT, "fairseq_mgsa")
SPLITS = ("train", "valid", "test")
TINY = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
        "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]


def offline_env(tmp):
    """Any download attempt fails: no stanza resources, and every proxy a closed port."""
    env = dict(os.environ, STANZA_RESOURCES_DIR=str(tmp / "no-stanza-resources"), OMP_NUM_THREADS="1",
               PYTHONPATH=checkout_pythonpath())
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env[var] = "http://127.0.0.1:9"
    env.pop("NO_PROXY", None), env.pop("no_proxy", None)
    return env


def run(cmd, cwd, env):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stderr[-4000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(work dir, parser dir): 300 training trees of the grammar, a small training budget."""
    tmp = tmp_path_factory.mktemp("stanza")
    raw = tmp / "raw"
    write_corpus(str(raw), (("train", 300), ("valid", 40), ("test", 30)), seed=11)
    out = run([sys.executable, "-m", "mgsa_preprocess.parser_training.train_parser", "--train", raw / "train.src.tree",
               "--dev", raw / "valid.src.tree", "--out", tmp / "parser", "--tagger-steps", "60",
               "--parser-epochs", "5", "--quiet"], tmp, offline_env(tmp))
    assert re.search(r"\[mgsa-train-parser\] done in \d+ s: dev labeled bracket F1", out), out
    (tmp / "train_parser.out").write_text(out)
    return tmp, tmp / "parser"


def test_quiet_run_shows_one_line_per_parser_epoch(trained):
    """--quiet, stdout a pipe: after the parser stage's line, one line per epoch in order, with
    the dev F1 the record keeps for that epoch, then the final stage."""
    from mgsa_preprocess.stanza_model import read_record

    tmp, parser_dir = trained
    lines = (tmp / "train_parser.out").read_text().splitlines()
    stage4 = next(i for i, line in enumerate(lines) if line.startswith("[mgsa-train-parser] 4/5"))
    epoch_re = re.compile(r"\[mgsa-train-parser\] parser epoch (\d+)/5: dev F1 (\d+\.\d\d) \(best (\d+\.\d\d), epoch "
                          r"(\d+)\) \| epoch \S+ \(train \S+, dev \S+\) \| elapsed \S+(, about \S+ left)?$")
    found = [epoch_re.match(line) for line in lines[stage4 + 1:stage4 + 6]]
    assert all(found), lines
    assert [int(m.group(1)) for m in found] == [1, 2, 3, 4, 5]
    assert lines[stage4 + 6].startswith("[mgsa-train-parser] 5/5")
    record = read_record(str(parser_dir))
    assert record["parser_batch_size"] == 10 and record["parser_epochs_planned"] == 5  # as given
    rows = record["parser_epochs"]
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4, 5]
    assert [float(m.group(2)) for m in found] == pytest.approx([r["dev_f1"] for r in rows], abs=0.006)
    best = [max(rows[:k], key=lambda r: r["dev_f1"]) for k in range(1, 6)]  # running best, first one on ties
    assert [(float(m.group(3)), int(m.group(4))) for m in found] == [(b["dev_f1"], b["epoch"]) for b in best]
    assert [m.group(5) is None for m in found] == [False] * 4 + [True]  # no estimate after the last epoch


def stanza_brackets(tree):
    """Reference labeled brackets of a stanza Tree, written plainly: every constituent over two
    or more words except ROOT, as (label, start, end)."""
    out = Counter()

    def walk(t, start):
        if t.is_preterminal():
            return 1
        width = 0
        for c in t.children:
            width += walk(c, start + width)
        if width > 1 and t.label != "ROOT":
            out[(t.label, start, start + width)] += 1
        return width

    walk(tree, 0)
    return out


def test_directory_loads_offline_and_its_dev_score_is_labeled_bracket_f1(trained):
    from stanza.models.constituency import tree_reader

    from mgsa_preprocess.stanza_model import FILES, load_pipeline, read_record

    tmp, parser_dir = trained
    record = read_record(str(parser_dir))
    assert sorted(os.listdir(parser_dir)) == sorted(list(FILES.values()) + ["mgsa_parser.json", "training"])
    assert record["train_trees"] == 300 and record["dev_trees"] == 40
    assert record["tagger_seconds"] > 0 and record["parser_seconds"] > 0
    assert all(record["bytes"][k] == os.path.getsize(parser_dir / FILES[k]) for k in ("pos", "constituency"))
    # the recorded dev F1, recomputed from the pipeline's own trees with the reference above
    gold = tree_reader.read_tree_file(str(tmp / "raw" / "valid.src.tree"))
    pipeline = load_pipeline(str(parser_dir))
    doc = pipeline([[w for w in g.leaf_labels()] for g in gold])
    matched = n_gold = n_pred = 0
    for g, s in zip(gold, doc.sentences):
        assert s.constituency.leaf_labels() == g.leaf_labels()
        gb, pb = stanza_brackets(g), stanza_brackets(s.constituency)
        matched += sum((gb & pb).values())
        n_gold, n_pred = n_gold + sum(gb.values()), n_pred + sum(pb.values())
    f1 = 2 * matched / (n_gold + n_pred)
    assert record["dev"]["f1"] == pytest.approx(100 * f1, abs=0.01)
    assert record["dev"]["f1"] > 80  # it learned the grammar (a random parser scores far below)
    assert record["dev"]["tag_accuracy"] > 90


def test_parsing_runs_on_one_torch_thread_and_restores_the_setting(trained):
    """StanzaParser parses with one torch thread (many times faster on a busy machine, see
    docs/benchmarks-parser.md) and gives the process its own setting back, also on error."""
    import torch

    from mgsa_preprocess.parse import StanzaParser

    tmp, parser_dir = trained
    parser = StanzaParser("xx", device="cpu", model_dir=str(parser_dir))
    seen, pipeline = [], parser.pipeline

    def recording(sentences):
        seen.append(torch.get_num_threads())
        return pipeline(sentences)

    parser.pipeline = recording
    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        trees = parser.parse([["Anna", "saw", "the", "dog", "."]])
        assert seen == [1] and torch.get_num_threads() == 2
        assert re.fullmatch(r"\(ROOT .*\)", trees[0]) and re.findall(r" ([^()\s]+)\)", trees[0]) == [
            "Anna", "saw", "the", "dog", "."]
        parser.pipeline = lambda sentences: 1 / 0
        with pytest.raises(ZeroDivisionError):
            parser.parse([["Anna"]])
        assert torch.get_num_threads() == 2
        parser.threads, parser.pipeline = None, recording  # None: torch's setting stays
        parser.parse([["Anna", "saw", "the", "dog", "."]])
        assert seen == [1, 2]
    finally:
        torch.set_num_threads(saved)


@pytest.fixture(scope="module")
def preprocessed(trained):
    """mgsa-preprocess --parser stanza with BPE codes, in a subprocess that cannot download."""
    tmp, parser_dir = trained
    raw = tmp / "raw"
    with open(raw / "train.src") as src, open(raw / "train.tgt") as tgt, open(tmp / "codes", "w") as out:
        learn_bpe(list(src) + list(tgt), out, num_symbols=40)
    run([sys.executable, "-m", "mgsa_preprocess.cli", "-s", "src", "-t", "tgt", "--trainpref", raw / "train",
         "--validpref", raw / "valid", "--testpref", raw / "test", "--parser", "stanza", "--stanza-dir", parser_dir,
         "--stanza-download", "download", "--bpe-codes", tmp / "codes", "--destdir", tmp / "data-bin",
         "--joined-dictionary", "--workers", "1", "--no-progress-bar"], tmp, offline_env(tmp))
    return tmp / "data-bin"


def as_node(tree):
    """stanza Tree -> the grammar's Node, for conftest.reference_levels."""
    if tree.is_preterminal():
        return Node(tree.label, tree.children[0].label)
    return Node(tree.label, [as_node(c) for c in tree.children])


def test_phrase_files_follow_the_trees_the_pipeline_returned(trained, preprocessed):
    from stanza.models.constituency import tree_reader

    from mgsa_preprocess.parse import StanzaParser, tree_path

    tmp, parser_dir = trained
    tag_dict = Dictionary.load(str(preprocessed / "dict.src.tags.txt"))
    parser = StanzaParser("ignored: the directory names its language", device="cpu", model_dir=str(parser_dir))
    for split in SPLITS:
        lines = (tmp / "raw" / f"{split}.src").read_text().splitlines()
        tree_file = tree_path(str(preprocessed), split, "src")
        written = open(tree_file).read().splitlines()
        assert written == parser.parse([line.split() for line in lines])  # the pipeline's trees, in order
        trees = tree_reader.read_tree_file(tree_file)
        segmented = (preprocessed / "bpe" / f"{split}.src").read_text().splitlines()
        prefix = str(preprocessed / f"{split}.src-tgt.src")
        for k in (1, 2, 3):
            items = read_phrase_file(prefix, k)
            assert len(items) == len(lines)
            for tree, seg, (lens, tags) in zip(trees, segmented, items):
                pieces, continued = [], False  # subwords per word: "@@" continues the word
                for piece in seg.split():
                    if continued:
                        pieces[-1] += 1
                    else:
                        pieces.append(1)
                    continued = piece.endswith("@@")
                want = reference_levels(as_node(tree), 3)[k - 1]
                assert lens == [sum(pieces[s:e]) for s, e, _ in want]
                # a tag the training trees never had (the parser's, on valid/test) is the dictionary's <unk>
                assert list(tags) == [tag_dict.index(t) for _, _, t in want]
    report = json.load(open(preprocessed / "mgsa_preprocess_report.json"))
    assert all(report["splits"][s]["repaired"] == {} for s in SPLITS)


def test_sharded_parsing_merges_to_the_unsharded_files(trained, preprocessed, tmp_path):
    tmp, parser_dir = trained
    raw = tmp / "raw"
    args = ["-s", "src", "-t", "tgt", "--trainpref", f"{raw}/train", "--validpref", f"{raw}/valid", "--testpref",
            f"{raw}/test", "--parser", "stanza", "--stanza-dir", str(parser_dir), "--bpe-codes", str(tmp / "codes"),
            "--destdir", str(tmp_path / "bin"), "--joined-dictionary", "--workers", "1", "--no-progress-bar"]
    for shard in (2, 0, 1):  # in any order, as array tasks finish
        main(args + ["--num-shards", "3", "--shard-id", str(shard)])
    main(args + ["--num-shards", "3"])
    # binaries and dictionaries (the logs and the report name their directories)
    names = sorted(f for f in os.listdir(preprocessed) if f.endswith((".bin", ".idx")) or f.startswith("dict."))
    assert any(".syn3." in n for n in names)
    for name in names:
        assert (tmp_path / "bin" / name).read_bytes() == (preprocessed / name).read_bytes(), name
    for split in SPLITS:
        tree = f"trees/{split}.src.tree"
        assert (tmp_path / "bin" / tree).read_text() == (preprocessed / tree).read_text()
    with open(tmp_path / "bin" / "trees" / "shards" / "test.src.tree.0001-of-0003.json") as f:
        assert json.load(f) == {"source": str(raw / "test.src"), "source_lines": 30, "start": 10, "end": 20,
                                "shard_id": 1, "num_shards": 3, "trees": 10}


def test_a_missing_model_file_is_a_one_line_error(trained, tmp_path, capsys):
    _, parser_dir = trained
    broken = tmp_path / "parser"
    shutil.copytree(parser_dir, broken, ignore=shutil.ignore_patterns("training"))
    os.remove(broken / "constituency.pt")
    raw = trained[0] / "raw"
    with pytest.raises(SystemExit) as e:
        main(["-s", "src", "-t", "tgt", "--trainpref", f"{raw}/test",
              "--parser", "stanza", "--stanza-dir", str(broken), "--destdir", str(tmp_path / "b"),
              "--no-progress-bar"])
    assert e.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"mgsa-preprocess: error: {broken / 'constituency.pt'}: constituency.pt is missing from the "
                   f"parser directory (rerun mgsa-train-parser)"]


@pytest.fixture(scope="module")
def checkpoint(trained, preprocessed):
    """(checkpoint dir, {test id: fairseq-generate's hypothesis}): a tiny syntactic model, 3 updates."""
    tmp = trained[0]
    env = offline_env(tmp)
    save = tmp / "ckpt"
    run(["fairseq-train", preprocessed, "--user-dir", USER_DIR, "--task", "mgsa_translation",
         "--arch", "mgsa_transformer_syntactic", *TINY, "--criterion", "label_smoothed_cross_entropy_with_phrase_tags",
         "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "800", "--max-update", "3", "--save-dir", save,
         "--no-progress-bar", "--cpu", "--seed", "3", "--no-epoch-checkpoints"], tmp, env)
    out = run(["fairseq-generate", preprocessed, "--user-dir", USER_DIR, "--task", "mgsa_translation",
               "--path", save / "checkpoint_last.pt", "--beam", "2", "--batch-size", "1",
               "--required-batch-size-multiple", "1", "--remove-bpe", "--cpu"], tmp, env)
    return save, dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", out, flags=re.M))


def test_fairseq_interactive_parses_text_into_the_phrases_of_mgsa_preprocess(trained, preprocessed, checkpoint):
    """The annotator fairseq-interactive uses, with the real parser, gives the tokens and phrase
    files of mgsa-preprocess for the same lines; then the command itself, offline, translates
    text exactly as fairseq-generate translates the preprocessed test set."""
    from argparse import Namespace

    from fairseq.data.encoders.subword_nmt_bpe import SubwordNMTBPE

    from fairseq_mgsa.data.inference_phrases import PhraseAnnotator
    from mgsa_preprocess.parse import StanzaParser

    tmp, parser_dir = trained
    src_dict = Dictionary.load(str(preprocessed / "dict.src.txt"))
    tag_dict = Dictionary.load(str(preprocessed / "dict.src.tags.txt"))
    bpe = SubwordNMTBPE(Namespace(bpe_codes=str(tmp / "codes"), bpe_separator="@@"))
    lines = (tmp / "raw" / "test.src").read_text().splitlines()
    annotator = PhraseAnnotator(src_dict, tag_dict, 3, "text", bpe=bpe,
                                parser_factory=lambda: StanzaParser("src", model_dir=str(parser_dir)))
    tokens, phrases = annotator(lines)
    ref_tokens = data_utils.load_indexed_dataset(str(preprocessed / "test.src-tgt.src"), None)
    ref_levels = [data_utils.load_indexed_dataset(str(preprocessed / f"test.src-tgt.src.syn{k}"), None)
                  for k in (1, 2, 3)]
    for i in range(len(lines)):
        assert tokens[i].tolist() == ref_tokens[i].tolist()
        for k, (lengths, tags) in enumerate(phrases[i]):
            assert lengths.tolist() + tags.tolist() == ref_levels[k][i].tolist()

    save, generated = checkpoint
    env = offline_env(tmp)
    proc = subprocess.run(["fairseq-interactive", str(preprocessed), "--user-dir", USER_DIR, "--task",
                           "mgsa_translation", "--bpe", "subword_nmt", "--bpe-codes", str(tmp / "codes"), "--path",
                           str(save / "checkpoint_last.pt"), "--beam", "2", "--stanza-dir", str(parser_dir), "--cpu"],
                          cwd=tmp, env=env, input="\n".join(lines) + "\n", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    interactive = dict(re.findall(r"^D-(\d+)\t\S+\t(.*)$", proc.stdout, flags=re.M))
    assert len(generated) == len(lines) and interactive == generated


def test_empty_lines_of_text_are_translated_and_the_input_goes_on(trained, preprocessed, checkpoint):
    """Issue 20.5: an empty or whitespace-only line is not given to stanza (which cannot parse
    it) but translated as the empty sentence, as fairseq does; every later line is translated
    as fairseq-generate translates it. The hub interface the same."""
    from fairseq_mgsa import MGSATransformerModel

    tmp, parser_dir = trained
    save, generated = checkpoint
    test = (tmp / "raw" / "test.src").read_text().splitlines()
    lines = [test[0], "", test[1], "   ", test[2]]
    proc = subprocess.run(["fairseq-interactive", str(preprocessed), "--user-dir", USER_DIR, "--task",
                           "mgsa_translation", "--bpe", "subword_nmt", "--bpe-codes", str(tmp / "codes"), "--path",
                           str(save / "checkpoint_last.pt"), "--beam", "2", "--stanza-dir", str(parser_dir), "--cpu"],
                          cwd=tmp, env=offline_env(tmp), input="\n".join(lines) + "\n", capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sources = dict(re.findall(r"^S-(\d+)\t(.*)$", proc.stdout, flags=re.M))
    interactive = dict(re.findall(r"^D-(\d+)\t\S+\t(.*)$", proc.stdout, flags=re.M))
    assert sorted(map(int, interactive)) == list(range(len(lines)))
    assert sources["1"] == sources["3"] == "" and interactive["1"] == interactive["3"]
    assert [interactive[i] for i in ("0", "2", "4")] == [generated[i] for i in ("0", "1", "2")]

    hub = MGSATransformerModel.from_pretrained(str(save), "checkpoint_last.pt", str(preprocessed), bpe="subword_nmt",
                                               bpe_codes=str(tmp / "codes"), stanza_dir=str(parser_dir))
    # one line at a time, as fairseq-interactive decodes them (a batch pads: this barely trained
    # model's near-tied beams may then differ)
    assert [hub.translate(line, beam=2) for line in lines] == [interactive[str(i)] for i in range(len(lines))]
    assert len(hub.translate(lines, beam=2)) == len(lines)  # the empty lines batched among the others
