"""mgsa-train-parser's stopping rules, word vectors learned from text, and the evalb-convention
scorer: rules and scorer against plain computations, then one real (tiny) training run."""

import json
import re
import subprocess
import sys
from collections import Counter

import pytest

from tests.paths import checkout_env
from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.parser_training.evalb import evalb_brackets, evalb_score_pairs
from mgsa_preprocess.parser_training.stanza_offline import EpochProgress
from mgsa_preprocess.parser_training.stopping import Plateau, StopTraining


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_plateau_stops_after_patience_evaluations_without_a_new_best():
    clock = Clock()
    rule = Plateau(patience=2, min_delta=0.1, clock=clock)
    stops = []
    for score in (50, 60, 60.05, 59, 70):  # 60.05: not 0.1 above the best
        clock.now += 10
        stops.append(rule.observe(score))
        if stops[-1]:
            break
    # 50 best; 60 best; 60.05 (1 since); 59 (2 since: stop); 70 never seen
    assert stops == [False, False, False, True]
    assert rule.best == 60 and rule.best_index == 1 and rule.scores == [50, 60, 60.05, 59]
    assert "in 2 evaluations" in rule.reason


def test_plateau_waits_for_min_evals_and_stops_at_the_time_cap():
    clock = Clock()
    rule = Plateau(patience=1, min_delta=0, min_evals=4, clock=clock)
    assert [rule.observe(s) for s in (80, 70, 70)] == [False, False, False]  # 2 without a new best, too early
    assert rule.observe(70) is True  # 4 evaluations: now it may stop
    clock, capped = Clock(), None
    rule = Plateau(patience=99, max_seconds=100, clock=clock)
    for i, step in enumerate((30, 30, 30), 1):  # 30 s intervals: after 60 s, one more ends at 90 <= 100
        clock.now += step
        if rule.observe(i):
            capped = i
            break
    assert capped == 3 and rule.reason.startswith("time cap: another evaluation interval (about 30s)")


def test_parser_epochs_stop_on_a_plateau_and_keep_their_rows():
    """The hooks around stanza's epoch and dev functions: once the rule fired after a dev score,
    the next epoch raises StopTraining before training (stanza saved the best epoch's model)."""
    import io

    out, clock = io.StringIO(), Clock()
    rule = Plateau(patience=2, min_delta=0.05, clock=clock)
    progress = EpochProgress(10, stream=out, clock=clock, rule=rule)
    f1s = [0.6, 0.7, 0.72, 0.719, 0.72, 0.9]
    trained = []

    def one_epoch(epoch):
        clock.now += 60
        trained.append(epoch)

    def dev_set():
        return f1s[len(progress.rows)], None, None

    train, dev = progress.wrap_epoch(one_epoch), progress.wrap_dev(dev_set)
    with pytest.raises(StopTraining, match="no dev score 0.05 above the best \\(72.00, evaluation 3\\)"):
        for epoch in range(1, 11):
            train(epoch)
            dev()
    assert trained == [1, 2, 3, 4, 5]  # 3 is the best; 4 and 5 bring nothing; 6 never starts
    assert [r["dev_f1"] for r in progress.rows] == [60.0, 70.0, 72.0, 71.9, 72.0]
    lines = out.getvalue().splitlines()
    assert len(lines) == 5 and lines[-1].endswith("| stopping: " + rule.reason) and "left" not in lines[-1]


# evalb's convention against trees scored by hand
GOLD = ("( (S (NP-SBJ (DT The) (NN cat) ) (VP (VBD sat) (PRT (RP down) ) (NP-TMP (-NONE- *T*-1) ) "
        "(PP-LOC (IN on) (NP (DT the) (NN mat) ) ) ) (, ,) (`` ``) (ADVP (RB quietly) ) (. .) ) )")
#  words kept: The cat sat down on the mat quietly (0-8); dropped: the trace, ",", "``", "."
#  brackets: NP(0,2) PRT=ADVP(3,4) PP(4,7) NP(5,7) VP(2,7) ADVP(7,8) S(0,8); NP-TMP is over the trace only
GOLD_BRACKETS = {("NP", 0, 2), ("ADVP", 3, 4), ("PP", 4, 7), ("NP", 5, 7), ("VP", 2, 7), ("ADVP", 7, 8), ("S", 0, 8)}
#  parsed: PP attached to the NP-less VP differently, ADVP for the particle, a wrong unary NP over "quietly",
#  and the comma inside the VP (punctuation moves change no span)
PARSED = ("(ROOT (S (NP (DT The) (NN cat)) (VP (VBD sat) (ADVP (RB down)) (PP (IN on) (NP (DT the) (NN mat))) "
          "(, ,)) (`` ``) (NP (RB quietly)) (. .)))")
#  brackets: NP(0,2) ADVP(3,4) NP(5,7) PP(4,7) VP(2,7) NP(7,8) S(0,8): 6 of 7 match (NP(7,8) vs ADVP(7,8))


def test_evalb_brackets_by_hand():
    brackets, words = evalb_brackets(GOLD)
    assert words == ["The", "cat", "sat", "down", "on", "the", "mat", "quietly"]
    assert brackets == Counter(GOLD_BRACKETS)
    pred, _ = evalb_brackets(PARSED)
    assert sum(pred.values()) == 7 and sum((brackets & pred).values()) == 6
    # unary chains and repeated labels over one span are all counted: (NP (NP ...)) gives NP twice
    b, _ = evalb_brackets("(TOP (S (NP (NP (PRP it))) (VP (VBZ is))))")
    assert b == Counter({("NP", 0, 1): 2, ("VP", 1, 2): 1, ("S", 0, 2): 1})


def test_evalb_scores_by_hand_and_error_sentences():
    other = "(ROOT (S (NP (PRP He)) (VP (VBD left)) (. .)))"
    # a parse that tags the final '.' as NN keeps one more word: evalb's "length unmatch", left out
    mistagged = "(ROOT (S (NP (PRP He)) (VP (VBD left) (NN .))))"
    scores, errors = evalb_score_pairs([(GOLD, PARSED), (other, other), (other, mistagged)])
    assert errors == 1 and scores.sentences == 2
    assert (scores.matched, scores.gold, scores.predicted) == (6 + 3, 7 + 3, 7 + 3)
    assert scores.f1 == pytest.approx(2 * 9 / 20)
    with pytest.raises(PreprocessError, match="unbalanced brackets"):
        evalb_brackets("(S (NP (DT a) (NN b))")


def test_word2vec_text_format_is_what_stanza_reads(tmp_path):
    from gensim.models import KeyedVectors
    from stanza.models.common.pretrain import Pretrain

    from mgsa_preprocess.parser_training.word_vectors import train_word2vec, write_pretrain

    text = tmp_path / "text.txt"
    text.write_text("The Cat sat on the mat &apos;s edge .\n\nA dog sat .\n" * 20)
    stats = train_word2vec(str(text), [["Zebra", "sat"]], str(tmp_path / "v.txt"), 8, 2, 1)
    kv = KeyedVectors.load_word2vec_format(str(tmp_path / "v.txt"))
    # lowercased, escapes undone, the trees' words added
    assert sorted(kv.index_to_key) == sorted(["the", "cat", "sat", "on", "mat", "'s", "edge", ".", "a", "dog", "zebra"])
    assert stats["sentences"] == 41 and stats["vocab"] == 11
    assert write_pretrain(str(tmp_path / "v.txt"), str(tmp_path / "p.pt")) == 11 + 4  # stanza's 4 special entries
    pt = Pretrain(str(tmp_path / "p.pt"))
    for w in kv.index_to_key:
        assert pt.emb[pt.vocab.unit2id(w)].tolist() == pytest.approx(kv[w].tolist(), abs=1e-4)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A real run on the grammar's trees (which a tagger learns perfectly: a plateau for sure),
    word vectors learned from a text with a word no tree has."""
    from mgsa_preprocess.synthetic import write_corpus

    tmp = tmp_path_factory.mktemp("plateau")
    write_corpus(str(tmp / "raw"), (("train", 40), ("valid", 10), ("test", 10)), seed=3)
    text = tmp / "text.txt"
    text.write_text((tmp / "raw" / "train.src").read_text() + "the zyzzyva watched a farmer .\n" * 5)
    env = checkout_env()  # this checkout's mgsa_preprocess, not an installed copy
    proc = subprocess.run([sys.executable, "-m", "mgsa_preprocess.parser_training.train_parser", "--train", tmp / "raw" / "train.src.tree",
                           "--dev", tmp / "raw" / "valid.src.tree", "--out", tmp / "parser", "--wordvec-text", text,
                           "--wordvec-dim", "16", "--hidden-size", "16", "--tagger-hidden-size", "24",
                           "--tagger-dropout", "0.25", "--tagger-eval-interval", "3",
                           "--tagger-patience", "2", "--tagger-steps", "300", "--parser-epochs", "12",
                           "--parser-patience", "1", "--quiet"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp / "parser" / "mgsa_parser.json") as f:
        return tmp, proc.stdout, json.load(f)


def test_real_tagger_stops_on_its_plateau(trained):
    _, out, record = trained
    acc = record["tagger"]["dev_accuracy"]
    lines = re.findall(r"tagger step (\d+) \(at most 300\): dev tag accuracy (\d+\.\d\d)", out)
    assert [float(a) for _, a in lines] == pytest.approx(acc, abs=0.006)
    assert [int(s) for s, _ in lines] == [3 * k for k in range(1, len(acc) + 1)]
    assert record["tagger"]["stopped"].startswith("no dev score") and 3 * len(acc) < 300
    best = max(range(len(acc)), key=lambda i: (acc[i], -i))  # first best
    assert len(acc) - 1 - best == 2 and all(a < acc[best] + 0.05 for a in acc[best + 1:])
    assert record["dev"]["tag_accuracy"] == pytest.approx(acc[best], abs=0.01)  # the best model was kept


def test_real_parser_stops_on_its_plateau(trained):
    _, out, record = trained
    f1 = [r["dev_f1"] for r in record["parser_epochs"]]
    assert record["parser_stopped"].startswith("no dev score") and len(f1) < 12
    assert len(f1) >= 12 // 2 + 1  # not before stanza's optimizer switch plus the patience
    best = max(range(len(f1)), key=lambda i: (f1[i], -i))
    assert f1[-1] < f1[best] + 0.05 and record["parser_best_epoch"] == best + 1
    assert record["dev"]["f1"] == pytest.approx(f1[best], abs=0.01)  # the best epoch's model was kept
    assert "| stopping: no dev score" in out.splitlines()[-3]


def test_vectors_learned_from_the_text_are_read_by_the_parser(trained):
    from stanza.models.common.pretrain import Pretrain

    from mgsa_preprocess.stanza_model import load_pipeline

    tmp, _, record = trained
    assert record["wordvec"]["method"].startswith("gensim word2vec") and record["wordvec"]["dim"] == 16
    pt = Pretrain(str(tmp / "parser" / "pretrain.pt"))
    model = load_pipeline(str(tmp / "parser")).processors["constituency"]._model
    i = model.emb_vocab.unit2id("zyzzyva")  # in the text only, not in any tree
    assert i == pt.vocab.unit2id("zyzzyva") and i != model.emb_vocab.unit2id("<no such word>")
    assert model.embedding.weight[i].tolist() == pytest.approx(pt.emb[i].tolist())
    assert any(abs(x) > 1e-3 for x in pt.emb[i].tolist())  # a learned vector, not a blank row


def test_bracket_score_command_has_the_evalb_convention(tmp_path, capsys):
    from mgsa_preprocess.parser_training.bracket_score import main

    (tmp_path / "gold").write_text(GOLD + "\n")
    (tmp_path / "parsed").write_text(PARSED + "\n")
    main([str(tmp_path / "gold"), str(tmp_path / "parsed"), "--evalb"])
    out = capsys.readouterr().out.split()
    assert out[:2] == ["f1", str(round(100 * 6 / 7, 2))] and out[-2:] == ["error_sentences", "0"]


def test_tagger_size_and_dropout_are_the_taggers_own(trained):
    import torch

    tmp, _, record = trained
    config = torch.load(tmp / "parser" / "pos.pt", map_location="cpu", weights_only=False)["config"]
    assert (config["hidden_dim"], config["char_hidden_dim"], config["dropout"]) == (24, 24, 0.25)
    assert record["options"]["hidden_size"] == 16  # the parser keeps --hidden-size
    parser = torch.load(tmp / "parser" / "constituency.pt", map_location="cpu", weights_only=False)
    assert parser["params"]["config"]["hidden_size"] == 16


def test_tagger_defaults_twice_the_hidden_size_and_dropout_a_quarter():
    from mgsa_preprocess.parser_training.train_parser import get_parser, tagger_hidden_size

    base = ["--train", "t", "--dev", "d", "--out", "o"]
    a = get_parser().parse_args(base)
    assert (tagger_hidden_size(a), a.tagger_dropout, a.hidden_size) == (128, 0.25, 64)
    assert tagger_hidden_size(get_parser().parse_args(base + ["--hidden-size", "16"])) == 32
    assert tagger_hidden_size(get_parser().parse_args(base + ["--hidden-size", "16", "--tagger-hidden-size", "24"])) == 24
