"""examples/tatoeba_zh_en/score_refs.py (step 08): every reference of a sentence counts, a missing one
(an empty field) is left out rather than scored as an empty reference, and with no field missing the
figures are sacrebleu's own command line's with one file per reference."""

import json
import os
import subprocess

import pytest

from tests.paths import EXAMPLES, load_script

SCRIPT = os.path.join(EXAMPLES, "tatoeba_zh_en", "score_refs.py")


@pytest.fixture(scope="module")
def score_refs():
    # in this process: the script imports fairseq_mgsa's reference reading (and so fairseq) once
    return load_script(SCRIPT, "tatoeba_score_refs")


@pytest.fixture
def score(score_refs, capsys):
    def score(refs_tsv, hyp):
        capsys.readouterr()
        score_refs.main(["--refs-tsv", str(refs_tsv), "--hyp", str(hyp), "--run", "r"])
        return parse(capsys.readouterr().out.splitlines())
    return score


def parse(out):
    return float(out[1].split(": ")[1].split(" ")[0]), float(out[2].split(": ")[1].split(" ")[0]), out[0]


def test_second_references_count_and_match_sacrebleu(tmp_path, score):
    first = ["the cat sat on the mat .", "he went home early today .", "i like green tea very much ."]
    second = ["a cat was sitting on the rug .", "he left for home early .", "green tea is what i like ."]
    tsv = tmp_path / "refs.tsv"
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in zip(first, second)))
    hyp = tmp_path / "hyp"
    hyp.write_text("".join(b + "\n" for b in second))   # the second translations, word for word
    bleu, chrf, head = score(tsv, hyp)
    assert bleu == 100.0 and chrf == 100.0
    assert head == "run: r, test set: 3 sentences, 6 references (3 sentences with 2 to 2)"
    mixed = tmp_path / "mixed"
    mixed.write_text("the cat sat on a rug .\nhe went home early .\ngreen tea i like .\n")
    for i, lines in enumerate((first, second)):
        (tmp_path / f"ref{i}").write_text("".join(line + "\n" for line in lines))
    cli = subprocess.run(["sacrebleu", str(tmp_path / "ref0"), str(tmp_path / "ref1"), "-i", str(mixed),
                          "-m", "bleu", "chrf", "-b", "-w", "2"], capture_output=True, text=True, check=True)
    assert json.loads(cli.stdout) == list(score(tsv, mixed)[:2])


def test_a_missing_reference_is_left_out(tmp_path, score):
    # sentence 2 has one translation: its empty second field is no reference. Scored as an empty
    # reference it would be the closest in length to the one-word hypothesis and change the brevity
    # penalty; left out, the score is that of the one reference given twice (sacrebleu's command line).
    refs = [("the cat sat on the mat .", "a cat was on the mat ."), ("he went home early today .", "")]
    tsv = tmp_path / "refs.tsv"
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in refs))
    hyp = tmp_path / "hyp"
    hyp.write_text("the cat sat on the mat .\nhome\n")
    bleu, chrf, head = score(tsv, hyp)
    assert head == "run: r, test set: 2 sentences, 3 references (1 sentences with 2 to 2)"
    for i in (0, 1):
        (tmp_path / f"ref{i}").write_text("".join((r[i] or r[0]) + "\n" for r in refs))
    cli = subprocess.run(["sacrebleu", str(tmp_path / "ref0"), str(tmp_path / "ref1"), "-i", str(hyp),
                          "-m", "bleu", "chrf", "-b", "-w", "2"], capture_output=True, text=True, check=True)
    assert json.loads(cli.stdout) == [bleu, chrf]
    (tmp_path / "ref1").write_text("".join(r[1] + "\n" for r in refs))   # the empty line as a reference
    cli = subprocess.run(["sacrebleu", str(tmp_path / "ref0"), str(tmp_path / "ref1"), "-i", str(hyp),
                          "-m", "bleu", "-b", "-w", "2"], capture_output=True, text=True, check=True)
    assert float(cli.stdout) != bleu
