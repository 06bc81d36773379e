"""Russian Moses tokens that detokenize back into the raw text (preprocess/moses_ru.py): the
En-Ru recipe's steps 02 and 08, on sentences in the typography of Russian news text
(tests/preprocess/russian_text.py); the expected tokens are written out by hand."""

import io
import subprocess
import sys

import pytest
from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe

from mgsa_preprocess.moses_ru import detokenize_line, join_marks, tokenize_line
from tests.paths import checkout_env
from tests.preprocess.russian_text import RUSSIAN


@pytest.mark.parametrize("line, tokens", [
    (RUSSIAN[0], "« Газпром » и „ Роснефть “ — крупнейшие компании России ."),
    (RUSSIAN[1], "О'Нил сказал : « Это ещё не конец … »"),
    (RUSSIAN[2], "Матч завершился со счётом 2:1 , встреча началась в 19:30 по московскому времени ."),
    (RUSSIAN[6], "« Ёлки @-@ палки » , — сказал он ."),
    (RUSSIAN[10], "Прогноз на 2015 г. : рост ВВП 0,5–1 % ( по оценке Минэкономразвития ) ."),
])
def test_tokens_are_moses_tokens_with_names_and_numbers_whole(line, tokens):
    assert tokenize_line(line, aggressive_dash_splits=True) == tokens


@pytest.mark.parametrize("line", RUSSIAN)
def test_tokenized_russian_detokenizes_to_the_raw_text(line):
    for aggressive in (False, True):
        assert detokenize_line(tokenize_line(line, aggressive)) == line


def test_the_round_trip_through_bpe_gives_the_raw_text_byte_for_byte():
    """tokenize, BPE (learnt on these lines, so words are cut into pieces), BPE removed as
    fairseq-generate's --remove-bpe does, detokenize: the raw lines again."""
    tokenized = [tokenize_line(line, True) for line in RUSSIAN]
    codes = io.StringIO()
    learn_bpe(io.StringIO("\n".join(tokenized * 3) + "\n"), codes, 60)
    codes.seek(0)
    bpe = BPE(codes)
    pieces = [bpe.process_line(line) for line in tokenized]
    assert sum(line.count("@@ ") for line in pieces) > 50  # the words really are cut
    back = [detokenize_line(line.replace("@@ ", "")) for line in pieces]
    assert "\n".join(back).encode("utf-8") == "\n".join(RUSSIAN).encode("utf-8")


def test_marks_join_the_words_they_belong_to():
    assert join_marks("« „ Спартак “ » , — …".split()) == ["«„Спартак“»", ",", "—…"]
    # “ closes after „ and opens otherwise (English-style quotes), ” closes
    assert join_marks("„ да “ и “ нет ”".split()) == ["„да“", "и", "“нет”"]
    assert join_marks("… и".split()) == ["…и"]  # at a line's start: the word after it


def test_command_line_in_order_with_workers(tmp_path):
    raw = "".join(line + "\n" for line in RUSSIAN * 40)
    env = checkout_env()
    tok = subprocess.run([sys.executable, "-m", "mgsa_preprocess.moses_ru", "tokenize", "-a", "-j", "2"],
                         input=raw.encode(), capture_output=True, env=env, timeout=120, check=True).stdout
    assert tok.decode().splitlines()[6] == "« Ёлки @-@ палки » , — сказал он ."
    back = subprocess.run([sys.executable, "-m", "mgsa_preprocess.moses_ru", "detokenize"],
                          input=tok, capture_output=True, env=env, timeout=120, check=True).stdout
    assert back == raw.encode()
