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

from conftest import ROOT, read_phrase_file, reference_levels
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
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
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
    out = run([sys.executable, "-m", "mgsa_preprocess.train_parser", "--train", raw / "train.src.tree",
               "--dev", raw / "valid.src.tree", "--out", tmp / "parser", "--tagger-steps", "60",
               "--parser-epochs", "5", "--quiet"], tmp, offline_env(tmp))
    assert re.search(r"\[mgsa-train-parser\] done in \d+ s: dev labeled bracket F1", out), out
    return tmp, tmp / "parser"


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


def test_fairseq_interactive_parses_text_into_the_phrases_of_mgsa_preprocess(trained, preprocessed):
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

    env = offline_env(tmp)
    save = tmp / "ckpt"
    run(["fairseq-train", preprocessed, "--user-dir", USER_DIR, "--task", "mgsa_translation",
         "--arch", "mgsa_transformer_syntactic", *TINY, "--criterion", "label_smoothed_cross_entropy_with_phrase_tags",
         "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "800", "--max-update", "3", "--save-dir", save,
         "--no-progress-bar", "--cpu", "--seed", "3", "--no-epoch-checkpoints"], tmp, env)
    out = run(["fairseq-generate", preprocessed, "--user-dir", USER_DIR, "--task", "mgsa_translation",
               "--path", save / "checkpoint_last.pt", "--beam", "2", "--batch-size", "1",
               "--required-batch-size-multiple", "1", "--remove-bpe", "--cpu"], tmp, env)
    generated = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", out, flags=re.M))
    proc = subprocess.run(["fairseq-interactive", str(preprocessed), "--user-dir", USER_DIR, "--task",
                           "mgsa_translation", "--bpe", "subword_nmt", "--bpe-codes", str(tmp / "codes"), "--path",
                           str(save / "checkpoint_last.pt"), "--beam", "2", "--stanza-dir", str(parser_dir), "--cpu"],
                          cwd=tmp, env=env, input="\n".join(lines) + "\n", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    interactive = dict(re.findall(r"^D-(\d+)\t\S+\t(.*)$", proc.stdout, flags=re.M))
    assert len(generated) == len(lines) and interactive == generated
