"""mgsa-train-parser's input side (treebank -> stanza's training files) and the bracket scorer;
no training here (that is test_stanza_trained.py)."""

import re

import pytest

from mgsa_preprocess.parser_training.bracket_score import brackets, score_files, score_pairs
from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.parser_training.train_parser import main, read_treebank, write_conllu

# A Penn Treebank .mrg excerpt as it comes: multi-line, function tags, indices, empty elements, escapes.
PTB = """( (S
    (NP-SBJ-1 (NNP Bush) )
    (VP (VBD held)
      (NP (DT a) (NN talk) )
      (PP-LOC (IN with)
        (NP (NNP Sharon) (-LRB- -LRB-) (NN AT&amp;T) (-RRB- -RRB-) ))
      (S-ADV (NP-SBJ (-NONE- *-1) ) (VP (VBG smiling) )))
    (. .) ))

(ROOT (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))
"""


def test_treebank_is_normalised_as_mgsa_preprocess_reads_it(tmp_path):
    path = tmp_path / "train.mrg"
    path.write_text(PTB)
    trees, stats = read_treebank(str(path))
    assert [t.text for t in trees] == [
        "(ROOT (S (NNP Bush) (VP (VBD held) (NP (DT a) (NN talk)) (PP (IN with) (NP (NNP Sharon) (-LRB- -LRB-) "
        "(NN AT&T) (-RRB- -RRB-))) (VBG smiling)) (. .)))",
        "(ROOT (S (NP (DT The) (NN cat)) (VBD sat) (. .)))"]
    # the words as the pipeline is given them at parsing time (escapes undone), the tags per word
    assert trees[0][1] == ["Bush", "held", "a", "talk", "with", "Sharon", "(", "AT&T", ")", "smiling", "."]
    assert trees[0][2] == ["NNP", "VBD", "DT", "NN", "IN", "NNP", "-LRB-", "NN", "-RRB-", "VBG", "."]
    assert stats["none_removed"] == 1 and stats["emptied_removed"] == 1 and stats["empty_trees_skipped"] == 0
    write_conllu(trees[1:], str(tmp_path / "t.conllu"))
    assert (tmp_path / "t.conllu").read_text() == ("1\tThe\t_\tDT\tDT\t_\t0\troot\t_\t_\n"
                                                   "2\tcat\t_\tNN\tNN\t_\t1\tdep\t_\t_\n"
                                                   "3\tsat\t_\tVBD\tVBD\t_\t1\tdep\t_\t_\n"
                                                   "4\t.\t_\t.\t.\t_\t1\tdep\t_\t_\n\n")


def test_bracket_f1_by_hand():
    gold = ("(ROOT (S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (NP (DT a) (NN cat)) (PP (IN with) (NP (DT a) "
            "(NN hat))))) (. .)))")
    # the PP attached to the verb instead: S, NP(the dog), VP, NP(a cat), PP, NP(a hat) match;
    # NP(a cat with a hat) is missed
    pred = ("(ROOT (S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat)) (PP (IN with) (NP (DT a) "
            "(NN hat)))) (. .)))")
    assert sum(brackets(gold)[0].values()) == 7 and sum(brackets(pred)[0].values()) == 6
    s = score_pairs([(gold, pred), (gold, gold)])
    assert (s.matched, s.gold, s.predicted, s.exact) == (6 + 7, 14, 13, 1)
    assert s.f1 == pytest.approx(2 * 13 / (14 + 13))
    assert s.as_dict()["exact_match"] == 50.0


def test_scorer_errors_name_the_file(tmp_path):
    gold, pred = tmp_path / "gold", tmp_path / "pred"
    gold.write_text("(S (A a) (B b))\n(S (A c) (B d))\n")
    pred.write_text("(S (A a) (B b))\n")
    with pytest.raises(PreprocessError, match=r"pred: 1 trees for 2 gold trees"):
        score_files(str(gold), str(pred))
    pred.write_text("(S (A a) (B b))\n(S (A c) (B x))\n")
    with pytest.raises(PreprocessError, match=r"tree 2 has other words than gold tree 2"):
        score_files(str(gold), str(pred))


def test_bad_treebank_is_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "train.mrg"
    bad.write_text("(S (NP (DT a) (NN b))\n")
    for train, expected in ((tmp_path / "missing.mrg", "cannot read the treebank"),
                            (bad, "unbalanced bracket")):
        with pytest.raises(SystemExit) as e:
            main(["--train", str(train), "--dev", str(bad), "--out", str(tmp_path / "out"), "--quiet"])
        assert e.value.code == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"mgsa-train-parser: error: {train}") and expected in err[0]


TRAIN = """(ROOT (S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (NNP Anna))) (. .)))
( (S (NP-SBJ (WHADJP (JJ big))) (VP (VBD ran) (ADVP (-NONE- *T*-1))) (. .)) )
"""
DEV = """(ROOT (S (NP (DT a) (NN cat)) (VP (VBD saw) (NP (DT the) (NN dog))) (. .)))

(ROOT (S (NP (DT a) (NN cat))
         (VP (VBD ran) (WHADJP (WRB how) (JJ far))) (. .)))
(ROOT (S (ADVP (RB very) (RB fast)) (NP (DT a) (NN cat)) (VP (VBD ran)) (. .)))
(ROOT (S (NP (DT a) (NN cat)) (VP (VBD ran) (WHADJP (WRB how) (JJ far))) (. .)))
"""


def test_dev_label_missing_from_training_trees_stops_before_training(tmp_path, capsys):
    """WHADJP is in the training file only over one word (collapsed to JJ) and ADVP only over
    an empty element (removed): the error names the dev file, the first such tree's line, the
    label and what the normalisation did, before any model file is written."""
    (tmp_path / "train.mrg").write_text(TRAIN)
    (tmp_path / "dev.mrg").write_text(DEV)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        main(["--train", str(tmp_path / "train.mrg"), "--dev", str(tmp_path / "dev.mrg"), "--out", str(out),
              "--one-word-constituents", "collapse", "--quiet"])
    assert e.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"mgsa-train-parser: error: {tmp_path / 'dev.mrg'}:3: constituent label WHADJP ")
    assert "has WHADJP 1 times, but each over a single word or over empty elements only" in err[0]
    assert "3 of 4 dev trees have such labels (ADVP in 1, WHADJP in 2)" in err[0]
    assert "--unseen-dev-labels drop" in err[0]
    assert not (out / "pos.pt").exists() and not (out / "pretrain.pt").exists()


def test_one_word_constituents_kept_by_default(tmp_path, capsys):
    """The default keeps constituents over one word, so WHADJP over "big" is a training label:
    only ADVP (over an empty element only) is missing, and the message says just that."""
    (tmp_path / "train.mrg").write_text(TRAIN)
    (tmp_path / "dev.mrg").write_text(DEV)
    trees, _ = read_treebank(str(tmp_path / "train.mrg"), keep_one_word=True)
    assert trees[1].text == "(ROOT (S (NP (WHADJP (JJ big))) (VP (VBD ran)) (. .)))"
    assert trees[0].text == "(ROOT (S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (NNP Anna))) (. .)))"
    with pytest.raises(SystemExit):
        main(["--train", str(tmp_path / "train.mrg"), "--dev", str(tmp_path / "dev.mrg"),
              "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"mgsa-train-parser: error: {tmp_path / 'dev.mrg'}:5: constituent label ADVP ")
    assert "has ADVP 1 times, but each over empty elements only, which the normalisation removes" in err
    assert "1 of 4 dev trees have such labels (ADVP in 1)" in err


def test_unseen_dev_labels_drop_keeps_exactly_the_other_trees(tmp_path):
    from mgsa_preprocess.parser_training.treebank import check_dev_labels

    (tmp_path / "train.mrg").write_text(TRAIN)
    (tmp_path / "dev.mrg").write_text(DEV)
    train, _ = read_treebank(str(tmp_path / "train.mrg"))
    dev, _ = read_treebank(str(tmp_path / "dev.mrg"))
    assert [t.line for t in dev] == [1, 3, 5, 6]
    # reference: the labels written in each dev tree's text, against those of the training trees' texts
    label_sets = [set(re.findall(r"\((\S+) (?=\()", t.text)) for t in (train + dev)]
    known = set().union(*label_sets[:len(train)])
    expected = [t.text for t, labels in zip(dev, label_sets[len(train):]) if labels <= known]
    kept, dropped = check_dev_labels(train, dev, "train.mrg", "dev.mrg", drop=True)
    assert [t.text for t in kept] == expected == [dev[0].text]
    assert dropped == {"ADVP": 1, "WHADJP": 2}
    # order kept, nothing else touched
    kept_all, none = check_dev_labels(train, [dev[0], dev[0]], "train.mrg", "dev.mrg", drop=False)
    assert kept_all == [dev[0], dev[0]] and none == {}


def test_default_parser_epochs_are_at_most_about_6000_updates():
    from mgsa_preprocess.parser_training.train_parser import default_parser_epochs

    assert [default_parser_epochs(n, 10) for n in (40, 300, 2000, 2200, 3000, 3114, 40000)] == [
        30, 30, 30, 27, 20, 19, 4]
    for trees in range(100, 12000, 37):
        e = default_parser_epochs(trees, 10)
        updates = e * trees / 10
        assert 4 <= e <= 30
        if 4 < e < 30:  # as near 6,000 updates as whole epochs get
            assert abs(updates - 6000) <= trees / 10 / 2 + 1e-9
