"""Probing labels (fairseq_mgsa/analysis/probing/labels.py) against trees written here,
labels worked out by hand; the split, TSS classes, majority baseline; bad input."""

import collections
import json
import random

import pytest

from fairseq_mgsa.analysis.probing.cli import main
from fairseq_mgsa.analysis.probing.labels import OTHER, Sentence, build_task, read_corpus, split_indices

# (tree text, words, voice, tense, TSS, SPC, POS)
TREES = [
    # passive, past; PTB outer bracket, function tags, a trace and its emptied NP; (NP-LGS (NNP Anna))
    # keeps Anna's SPC NP although the normalised tree collapses it
    ("( (S (NP-SBJ-1 (DT The) (NN letter)) (VP (VBD was) (VP (VBN written) (NP (-NONE- *-1)) "
     "(PP (IN by) (NP-LGS (NNP Anna))))) (. .)) )",
     "The letter was written by Anna .", "passive", "past", "NP VP .",
     "NP NP VP VP PP NP S", "DT NN VBD VBN IN NNP ."),
    # active, non-past (modal), over several lines
    ("(ROOT\n  (S (NP-SBJ (PRP She))\n     (VP (MD will)\n         (VP (VB read) (NP (DT the) (NN book))))\n"
     "     (. .)))",
     "She will read the book .", "active", "non-past", "NP VP .", "NP VP VP NP NP S", "PRP MD VB DT NN ."),
    # passive down an auxiliary chain (have -> been -> seen), non-past
    ("(ROOT (S (NP (NNS Dogs)) (VP (VBP have) (VP (VBN been) (VP (VBN seen)))) (. .)))",
     "Dogs have been seen .", "passive", "non-past", "NP VP .", "NP VP VP VP S", "NNS VBP VBN VBN ."),
    # past active, with a fronted PP (TSS) and "get" not used as passive (its complement is an NP)
    ("(ROOT (S (PP-LOC (IN On) (NP (NNP Monday))) (, ,) (NP-SBJ (NNP Boris)) (VP (VBD got) (NP (DT a) (NN dog))) "
     "(. .)))",
     "On Monday , Boris got a dog .", "active", "past", "PP , NP VP .", "PP NP S NP VP NP NP S",
     "IN NNP , NNP VBD DT NN ."),
    # no finite verb: a to-infinitive (no Tense); Voice active
    ("(ROOT (S (NP-SBJ (-NONE- *PRO*)) (VP (TO to) (VP (VB go) (ADVP (RB home))))))",
     "to go home", "active", None, "VP", "VP VP ADVP", "TO VB RB"),
    # no clause: a fragment has neither Voice nor Tense
    ("(ROOT (FRAG (NP (DT The) (NN end)) (. .)))", "The end .", None, None, "NP .", "NP NP FRAG", "DT NN ."),
    # "get"-passive, present
    ("(ROOT (S (NP (PRP It)) (VP (VBZ gets) (VP (VBN fixed))) (. .)))",
     "It gets fixed .", "passive", "non-past", "NP VP .", "NP VP VP S", "PRP VBZ VBN ."),
]


@pytest.fixture
def corpus_files(tmp_path):
    trees, text = tmp_path / "c.tree", tmp_path / "c.txt"
    trees.write_text("\n\n".join(t[0] for t in TREES) + "\n")
    text.write_text("".join(t[1] + "\n" for t in TREES))
    return trees, text


def test_labels_by_hand(corpus_files):
    trees, text = corpus_files
    sentences = read_corpus(str(trees), str(text))
    assert len(sentences) == len(TREES)
    for s, (_, words, voice, tense, tss, spc, pos) in zip(sentences, TREES):
        assert s.words == words.split()
        assert s.labels["voice"] == voice, words
        assert s.labels["tense"] == tense, words
        assert s.labels["tss"] == tss, words
        assert s.labels["spc"] == spc.split(), words
        assert s.labels["pos"] == pos.split(), words
    # without --text the words are the leaves (traces removed)
    assert [s.words for s in read_corpus(str(trees))] == [t[1].split() for t in TREES]


def test_split_is_seeded_partition():
    a, b = split_indices(1200, 3), split_indices(1200, 3)
    assert a == b and a != split_indices(1200, 4)
    assert [len(a[s]) for s in ("train", "valid", "test")] == [1000, 100, 100]
    assert sorted(a["train"] + a["valid"] + a["test"]) == list(range(1200))


def _sentence(tss, voice="active"):
    return Sentence(["w"], None, {"tss": tss, "voice": voice, "tense": None, "spc": ["NP"], "pos": ["NN"]})


def test_tss_top19_other_and_majority():
    rng = random.Random(0)
    # 25 sequences with distinct frequencies: the 19 most frequent of the training split are classes
    seqs = [f"NP VP{'.' * k}" for k in range(25)]
    sentences = [_sentence(s) for k, s in enumerate(seqs) for _ in range(60 - 2 * k)]
    rng.shuffle(sentences)
    splits = split_indices(len(sentences), 1)
    data = build_task("tss", sentences, splits, "x.tree")
    train = collections.Counter(sentences[i].labels["tss"] for i in splits["train"])
    top = sorted(train, key=lambda c: (-train[c], c))[:19]
    assert data.classes == sorted(top + [OTHER])
    # reference: every split's labels mapped by hand
    for split in ("train", "valid", "test"):
        expected = [sentences[i].labels["tss"] if sentences[i].labels["tss"] in top else OTHER for i in splits[split]]
        assert [data.classes[c] for c in data.labels[split]] == expected
    mapped = collections.Counter(c if c in top else OTHER for c in train.elements())
    majority = max(sorted(mapped), key=lambda c: mapped[c])  # OTHER: the 6 rarest sequences together
    assert majority == OTHER
    test = [sentences[i].labels["tss"] if sentences[i].labels["tss"] in top else OTHER for i in splits["test"]]
    assert data.majority() == (majority, 100.0 * test.count(majority) / len(test))


def test_sentences_without_label_are_counted(corpus_files):
    trees, text = corpus_files
    sentences = read_corpus(str(trees), str(text)) * 4
    splits = split_indices(len(sentences), 1, (2, 1, 1))
    data = build_task("tense", sentences, splits, str(trees))
    assert data.dropped == 2 * 4  # the infinitive and the fragment, four times
    assert sum(len(v) for v in data.ids.values()) == 5 * 4


def run_cli(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err
    return code, err.strip().splitlines()[-1] if err.strip() else ""


def test_line_count_mismatch_is_one_line(tmp_path, corpus_files, capsys):
    trees, text = corpus_files
    text.write_text("".join(t[1] + "\n" for t in TREES[:-1]))
    code, last = run_cli(capsys, ["--trees", str(trees), "--text", str(text), "--out", str(tmp_path / "o")])
    assert code == 2
    assert last == (f"mgsa-probe: error: {trees}: {len(TREES)} trees, but {text} has {len(TREES) - 1} lines: "
                    f"one tree per sentence is expected, in the same order")
    assert not (tmp_path / "o").exists()


def test_leaves_differ_names_file_and_line(tmp_path, corpus_files, capsys):
    trees, text = corpus_files
    lines = [t[1] for t in TREES]
    lines[1] = lines[1].replace("book", "letter")
    text.write_text("".join(x + "\n" for x in lines))
    code, last = run_cli(capsys, ["--trees", str(trees), "--text", str(text), "--out", str(tmp_path / "o")])
    assert code == 2 and last.startswith(f"mgsa-probe: error: {trees}:3: ") and "'book'" in last


def test_task_with_one_class_is_one_line(tmp_path, capsys):
    trees = tmp_path / "active.tree"
    trees.write_text("(ROOT (S (NP (NNP Anna)) (VP (VBD saw) (NP (DT a) (NN dog))) (. .)))\n"
                     "(ROOT (S (NP (NNP Boris)) (VP (VBZ sees) (NP (DT a) (NN cat))) (. .)))\n" * 12)
    code, last = run_cli(capsys, ["--trees", str(trees), "--tasks", "tense,voice", "--out", str(tmp_path / "o"),
                                  "--scratch-systems", "none"])
    assert code == 2
    assert last.startswith(f"mgsa-probe: error: {trees}: task Voice has one class ('active') in all ")
    assert not (tmp_path / "o").exists()


def test_grammar_gives_every_task_two_classes(tmp_path):
    from mgsa_preprocess.synthetic import write_corpus

    write_corpus(str(tmp_path), (("train", 300),), seed=3)
    sentences = read_corpus(str(tmp_path / "train.src.tree"), str(tmp_path / "train.src"))
    splits = split_indices(len(sentences), 1)
    classes = {t: build_task(t, sentences, splits, "g").classes for t in ("voice", "tense", "tss", "spc", "pos")}
    assert classes["voice"] == ["active", "passive"] and classes["tense"] == ["non-past", "past"]
    assert {"NP VP .", "PP , NP VP .", "ADVP NP VP ."} <= set(classes["tss"])
    assert {"VBD", "VBZ", "VBN"} <= set(classes["pos"])


def test_passive_translation_is_verb_final_in_both_vps():
    from mgsa_preprocess.synthetic import Node, translate

    np_ = Node("NP", [Node("DT", "the"), Node("NN", "dog")])
    agent = Node("PP", [Node("IN", "by"), Node("NP", [Node("NNP", "Anna")])])
    pp = Node("PP", [Node("IN", "with"), Node("NP", [Node("DT", "a"), Node("NN", "book")])])
    vp = Node("VP", [Node("VBZ", "is"), Node("VP", [Node("VBN", "seen"), agent, pp])])
    tree = Node("S", [Node("PP", [Node("IN", "near"), Node("NP", [Node("DT", "a"), Node("NN", "hill")])]),
                      Node(",", ","), np_, vp, Node(".", ".")])
    # clause-level PP keeps its place and takes the VP word; inner VP: by-PP, PP, participle; then "is"
    assert " ".join(translate(tree)) == "apud en monto , da hundo far Ana kun en libro vidita estas ."


def test_too_few_trees_for_the_split_is_one_line(tmp_path, capsys):
    trees = tmp_path / "small.tree"
    trees.write_text("".join(t[0].replace("\n", " ") + "\n" for t in (TREES + TREES)[:11]))
    # reference: 10:1:1 gives valid and test n // 12 sentences each: none below 12
    assert [len(split_indices(n, 1)["test"]) for n in (11, 12)] == [0, 1] == [n // 12 for n in (11, 12)]
    for scratch in ("none", "transformer"):  # before: exit 0 with majority 0.00 / a crash in max()
        code, last = run_cli(capsys, ["--trees", str(trees), "--out", str(tmp_path / "o"), "--tasks", "tense,pos",
                                      "--scratch-systems", scratch])
        assert code == 2
        assert last == (f"mgsa-probe: error: {trees}: 11 trees split 10:1:1 give train 11, valid 0, test 0: every "
                        f"split needs a sentence, which takes 12 trees at least with --split 10:1:1")
    code, last = run_cli(capsys, ["--trees", str(trees), "--out", str(tmp_path / "o"), "--split", "2:1:1",
                                  "--tasks", "pos", "--scratch-systems", "none", "--epochs", "1"])
    assert code == 0 and last == ""  # 2:1:1 cuts 11 trees 7/2/2
    assert json.loads((tmp_path / "o" / "probing.json").read_text())["data"]["split_sizes"] == \
        {"train": 7, "valid": 2, "test": 2}


def test_task_without_labels_in_a_split_is_one_line():
    # the test split holds only the infinitive and the fragment, which have no Tense
    sentences = read_corpus_from(TREES)
    splits = {"train": [0, 1, 2, 3], "valid": [6], "test": [4, 5]}
    with pytest.raises(Exception) as e:  # before: accepted, majority 0.00 and a crash in training
        build_task("tense", sentences, splits, "c.tree")
    assert str(e.value) == ("c.tree: task Tense: none of the 2 sentences of the test split has a label (no finite "
                            "main verb): give more trees or leave the task out with --tasks")
    assert build_task("pos", sentences, splits, "c.tree").ids["test"] == [4, 5]


def read_corpus_from(trees):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/c.tree"
        with open(path, "w") as f:
            f.write("\n".join(t[0] for t in trees) + "\n")
        return read_corpus(path)


def test_not_utf8_names_file_and_line(tmp_path, corpus_files, capsys):
    trees, text = corpus_files
    latin = tmp_path / "latin.tree"
    raw = trees.read_bytes().split(b"\n")
    k = next(i for i, line in enumerate(raw) if b"book" in line)  # the multi-line tree's 4th line
    raw[k] = raw[k].replace(b"book", b"b\xf6ok")
    latin.write_bytes(b"\n".join(raw))
    column = raw[k].index(b"\xf6") + 1  # every character before it ASCII
    code, last = run_cli(capsys, ["--trees", str(latin), "--out", str(tmp_path / "o")])
    assert code == 2  # before: a UnicodeDecodeError traceback naming neither file nor line
    assert last == (f"mgsa-probe: error: {latin}:{k + 1}: not UTF-8 (byte 0xF6 at column {column}); convert the "
                    f"file to UTF-8, e.g. iconv -f latin1 -t utf-8")
    bad_text = tmp_path / "latin.txt"
    bad_text.write_bytes(text.read_bytes().replace(b"Boris", b"B\xf6ris"))
    code, last = run_cli(capsys, ["--trees", str(trees), "--text", str(bad_text), "--out", str(tmp_path / "o")])
    column = TREES[3][1].index("Boris") + 2
    assert code == 2
    assert last == (f"mgsa-probe: error: {bad_text}:4: not UTF-8 (byte 0xF6 at column {column}); convert the file "
                    f"to UTF-8, e.g. iconv -f latin1 -t utf-8")
    assert not (tmp_path / "o").exists()


def test_not_a_checkpoint_is_one_line(tmp_path, corpus_files, capsys):
    trees, _ = corpus_files
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    many = tmp_path / "many.tree"
    many.write_text("\n".join(t[0] for t in TREES * 2) + "\n")
    code, last = run_cli(capsys, ["--trees", str(many), "--out", str(tmp_path / "o"), "--tasks", "pos",
                                  "--checkpoint", f"X={notes}", "--scratch-systems", "none"])
    assert code == 2  # before: a KeyError traceback from torch.load
    assert last == (f"mgsa-probe: error: {notes}: not a fairseq checkpoint (--checkpoint X): it cannot be loaded as "
                    f"one (KeyError: 101)")
    code, last = run_cli(capsys, ["--trees", str(many), "--out", str(tmp_path / "o"), "--tasks", "pos",
                                  "--checkpoint", f"X={tmp_path}", "--scratch-systems", "none"])
    assert last == (f"mgsa-probe: error: {tmp_path}: a directory, not a checkpoint (--checkpoint X): give a .pt file "
                    f"in it, e.g. checkpoint_best.pt")
    assert not (tmp_path / "o").exists()


def test_unknown_rate_warning_and_refusal():
    from types import SimpleNamespace

    from fairseq.data import Dictionary

    from fairseq_mgsa.analysis.probing.encoders import check_unknown
    from fairseq_mgsa.analysis.probing.labels import ProbeError
    from fairseq_mgsa.analysis.probing.table import markdown

    words, pieces = Dictionary(), Dictionary()
    for w in ("the", "dog", "saw"):
        words.add_symbol(w)
    for w in ("the", "d@@", "og", "s@@", "aw"):
        pieces.add_symbol(w)

    def frozen(dictionary, unknown, total):
        return SimpleNamespace(unknown=unknown, total=total, src_dict=dictionary, bpe_separator="@@",
                               option="--checkpoint X", path="x.pt")

    assert check_unknown(frozen(pieces, 5, 100), bpe_given=False) is None  # 5% is not above the limit
    with pytest.raises(ProbeError) as e:
        check_unknown(frozen(pieces, 59, 100), bpe_given=False)
    assert str(e.value) == ("x.pt: 59.0% of the probing text's tokens are <unk> in its dictionary (59 of 100): the "
                            "dictionary holds subwords (2 of its 9 entries are BPE pieces, e.g. ending in '@@') and no "
                            "--bpe was given; give the BPE it was trained with, e.g. --bpe subword_nmt --bpe-codes "
                            "CODES (--checkpoint X)")
    # a word-level dictionary, or the BPE given: a warning, on the terminal and in the table
    for dictionary, bpe in ((words, False), (pieces, True)):
        warning = check_unknown(frozen(dictionary, 12, 100), bpe_given=bpe)
        assert warning == ("--checkpoint X (x.pt): 12.0% of the probing text's tokens are <unk> in its dictionary "
                           "(12 of 100), above 5%: its row mostly probes what the encoder makes of <unk>; check "
                           "--bpe/--bpe-codes and --data")
    table = markdown({"tasks": ["pos"], "majority": {"pos": 50.0}, "rows": {}, "warnings": [warning]})
    assert f"**Warning:** {warning}" in table.splitlines()
