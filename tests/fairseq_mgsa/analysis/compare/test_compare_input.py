"""mgsa-compare's input (issue 27, points 2, 7, 11): fairseq-generate's raw output read by id
or refused in one line, and every bad argument or file a one-line error before any scoring."""

import os
import random
import subprocess
import sys

import pytest
import sacrebleu

from fairseq_mgsa.analysis import compare as cmp
from mgsa_preprocess.synthetic import write_corpus

from tests.paths import ROOT, checkout_env


@pytest.fixture(scope="module")
def refs(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    write_corpus(str(raw), (("test", 40),), seed=3)
    return (raw / "test.tgt").read_text().split("\n")[:-1]


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def drop_words(refs, seed):
    rng = random.Random(seed)
    return [" ".join(w for w in r.split() if rng.random() > 0.2) for r in refs]


def run_main(args, capsys):
    """mgsa-compare in process: (exit status, stderr lines)."""
    with pytest.raises(SystemExit) as exit:
        cmp.main(args)
    return exit.value.code, capsys.readouterr().err.splitlines()


def fairseq_lines(hyps, prefix, order):
    """fairseq-generate's lines for `hyps`: PREFIX-<id>\\t<score>\\t<text>, in batch order."""
    return [f"{prefix}-{i}\t-0.{i + 1:04d}\t{hyps[i]}" for i in order]


# --- point 2: fairseq's raw output ------------------------------------------------------------

def test_fairseq_h_lines_are_sorted_by_id(refs, tmp_path, monkeypatch):
    hyps = drop_words(refs, 1)
    order = list(range(len(refs)))
    random.Random(0).shuffle(order)  # batch order, as `grep ^H- generate-test.txt` gives them
    ref = write(tmp_path / "ref.txt", refs)
    base = write(tmp_path / "base.txt", drop_words(refs, 2))
    h = write(tmp_path / "h.txt", fairseq_lines(hyps, "H", order))
    monkeypatch.chdir(tmp_path)
    assert cmp.main(["--ref", ref, "--system", f"b={base}", "--system", f"h={h}", "--out", "out",
                     "--no-compare-mt", "--bootstrap-samples", "10"]) == 0
    import json
    m = json.loads((tmp_path / "out" / "results.json").read_text())["models"]["h"]
    assert m["bleu"] == [round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2)]


def test_fairseq_generate_output_takes_the_detokenized_d_lines(refs, tmp_path):
    """The whole generate-test.txt: S-, T-, H-, D-, P- lines and fairseq's log lines; D- is the
    detokenized hypothesis (fairseq scores it), H- the tokenized one."""
    hyps = drop_words(refs, 3)
    order = list(range(len(refs)))[::-1]
    lines = ["2026-01-01 00:00:00 | INFO | fairseq_cli.generate | loading model(s)"]
    for i in order:
        lines += [f"S-{i}\tsource words", f"T-{i}\t{refs[i]}", f"H-{i}\t-0.5\t{hyps[i]} @@ tok",
                  f"D-{i}\t-0.5\t{hyps[i]}", f"P-{i}\t-0.1 -0.2"]
    lines.append("Generate test with beam=5: BLEU4 = 10.00, 50.0/20.0/10.0/5.0 (BP=1.000, ratio=1.000)")
    path = write(tmp_path / "generate-test.txt", lines)
    got, note = cmp.read_hyps(path, len(refs), "ref.txt")
    assert got == hyps and "D-" in note and path in note


@pytest.mark.parametrize("case", ["missing", "twice", "beyond"])
def test_fairseq_ids_must_cover_every_sentence_once(refs, tmp_path, case, capsys):
    n = len(refs)
    order = {"missing": [i for i in range(n) if i != 7],
             "twice": list(range(n)) + [7],
             "beyond": list(range(n)) + [n]}[case]
    ref = write(tmp_path / "ref.txt", refs)
    h = write(tmp_path / "h.txt", [f"H-{i}\t-0.5\t{refs[i % n]}" for i in order])
    code, err = run_main(["--ref", ref, "--system", f"a={ref}", "--system", f"b={h}", "--out",
                          str(tmp_path / "out")], capsys)
    expected = {
        "missing": f"{h}: fairseq-generate output (H- lines) without sentence id 7 "
                   f"(ids 0..{n - 1} expected, one each, for the {n} lines of {ref})",
        "twice": f"{h}: fairseq-generate output (H- lines) has sentence id 7 twice, at lines 8 and {n + 1} "
                 f"(one hypothesis a sentence expected: --nbest 1)",
        "beyond": f"{h}: line {n + 1}: fairseq-generate output (H- lines) has sentence id {n}, "
                  f"but {ref} has {n} lines (ids 0..{n - 1} expected)",
    }[case]
    assert code == 2 and err == [f"mgsa-compare: error: {expected}"]
    assert not (tmp_path / "out").exists()


# --- point 7: one line, no traceback ----------------------------------------------------------

def test_a_latin1_hypothesis_file_names_the_line_and_byte(refs, tmp_path, capsys):
    ref = write(tmp_path / "ref.txt", refs)
    bad = tmp_path / "latin1.txt"
    lines = [r.encode("utf-8") for r in refs]
    lines[2] = "caf\u00e9 au lait".encode("latin-1")
    bad.write_bytes(b"".join(x + b"\n" for x in lines))
    code, err = run_main(["--ref", ref, "--system", f"a={ref}", "--system", f"b={bad}",
                          "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and err == [
        f"mgsa-compare: error: {bad}:3: not UTF-8 (byte 0xE9 at column 4); convert the file to UTF-8, "
        f"e.g. iconv -f latin1 -t utf-8"]


def test_an_unknown_tokenizer_lists_the_valid_names(refs, tmp_path, capsys):
    ref = write(tmp_path / "ref.txt", refs)
    code, err = run_main(["--ref", ref, "--system", f"a={ref}", "--tokenize", "13A",
                          "--out", str(tmp_path / "out")], capsys)
    names = ", ".join(sacrebleu.metrics.bleu._TOKENIZERS)
    assert code == 2 and err[-1] == (f"mgsa-compare: error: argument --tokenize: unknown tokenizer '13A' "
                                     f"(sacrebleu's are: {names})")
    assert not (tmp_path / "out").exists()


def test_out_naming_a_file_stops_before_any_scoring(refs, tmp_path, capsys):
    ref = write(tmp_path / "ref.txt", refs)
    out = tmp_path / "results.txt"
    out.write_text("mine\n")
    # checked first: before the files are read (a missing one here), so long before the scoring
    code, err = run_main(["--ref", ref, "--system", f"a={ref}", "--system", f"b={tmp_path / 'none.txt'}",
                          "--out", str(out)], capsys)
    assert code == 2 and err == [f"mgsa-compare: error: --out {out}: a file is there (a directory expected: "
                                 f"mgsa-compare writes several files into it)"]
    assert out.read_text() == "mine\n"
    code, err = run_main(["--ref", ref, "--system", f"a={ref}", "--out", str(out / "sub" / "dir")], capsys)
    assert code == 2 and err == [f"mgsa-compare: error: --out {out / 'sub' / 'dir'}: {out} is a file "
                                 f"(a directory expected)"]


# --- point 11: the baseline and the number of resamples ---------------------------------------

def test_a_baseline_that_names_no_system_lists_the_systems(refs, tmp_path, capsys):
    ref = write(tmp_path / "ref.txt", refs)
    code, err = run_main(["--ref", ref, "--system", f"transformer={ref}", "--system", f"mgsa_ngram={ref}",
                          "--baseline", "transfromer", "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and err == ["mgsa-compare: error: --baseline transfromer names no --system "
                                 "(the systems: transformer, mgsa_ngram)"]


@pytest.mark.parametrize("n", ["0", "-5"])
def test_bootstrap_samples_must_be_positive(refs, tmp_path, capsys, n):
    ref = write(tmp_path / "ref.txt", refs)
    code, err = run_main(["--ref", ref, "--system", f"a={ref}", "--bootstrap-samples", n,
                          "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and err[-1] == (f"mgsa-compare: error: argument --bootstrap-samples: {n} is not a positive "
                                     f"number of resamples (default 1000)")


def test_the_recipe_passes_a_misspelled_baseline_on(refs, tmp_path):
    """examples/*/09_compare.sh: BASELINE naming no system of SYSTEMS is a one-line error (from the
    settings' check every step makes first, issue 37), not a silent switch to the first system;
    the default (transformer) absent from SYSTEMS falls back to the first system and says so."""
    raw, work = tmp_path / "raw", tmp_path / "work"
    raw.mkdir()
    write(raw / "test.en", refs)
    for name in ("mgsa_ngram", "hysan"):
        (work / "results" / name).mkdir(parents=True)
        write(work / "results" / name / "hyp.detok", drop_words(refs, len(name)))
    env = {k: v for k, v in checkout_env().items() if k not in ("BASELINE", "SEEDS", "RUN_SUFFIX")}
    env.update(WORKDIR=str(work), RAW_DIR=str(raw), DIRECTION="de-en", SYSTEMS="mgsa_ngram hysan")
    script = os.path.join(ROOT, "examples", "iwslt14_de_en", "09_compare.sh")
    proc = subprocess.run(["bash", script], env=dict(env, BASELINE="hysna"), capture_output=True, text=True)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        "09_compare.sh: error: BASELINE='hysna' is not one of SYSTEMS (mgsa_ngram hysan): step 09 compares every "
        "system with it"]
    proc = subprocess.run(["bash", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "BASELINE transformer is not among SYSTEMS (mgsa_ngram hysan): the baseline is mgsa_ngram" in proc.stderr


def test_a_missing_package_stops_before_any_file_is_read(refs, tmp_path):
    """Issue 26: compare-mt's report comes last; a package it needs that does not import (here
    `six`, which compare-mt does not declare) stops the command first, in one line."""
    ref = write(tmp_path / "ref.txt", refs)
    code = ("import sys, importlib.abc\n"
            "class Block(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name == 'six':\n"
            "            raise ModuleNotFoundError(\"No module named 'six'\", name='six')\n"
            "sys.meta_path.insert(0, Block())\n"
            "from fairseq_mgsa.analysis.compare import main\n"
            f"main(['--ref', {ref!r}, '--system', 'a={tmp_path / 'none.txt'}', '--out', {str(tmp_path / 'out')!r}])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env=checkout_env())
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1] == (
        "mgsa-compare: cannot start, a package it needs does not import: compare (ModuleNotFoundError: No module "
        "named 'six'). Install: pip install 'sacrebleu>=2.0' compare-mt six  (or bash scripts/install.sh)")
    assert not (tmp_path / "out").exists()


# --- issue 37, point 12: line ends and a byte order mark --------------------------------------

def test_references_with_windows_line_ends_or_a_bom_score_as_the_plain_file(refs, tmp_path, monkeypatch):
    """A reference saved with CRLF line ends kept a "\\r" on every line: a system identical to the
    references got exact match 0.0 instead of 100.0 (BLEU unchanged, so nothing looked wrong);
    a UTF-8 BOM cost the first line its match. Both are read as the plain file now."""
    import json

    plain = write(tmp_path / "ref.txt", refs)
    crlf = tmp_path / "ref.crlf.txt"
    crlf.write_bytes("".join(r + "\r\n" for r in refs).encode("utf-8"))
    bom = tmp_path / "ref.bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + "".join(r + "\n" for r in refs).encode("utf-8"))
    old_mac = tmp_path / "ref.cr.txt"  # a lone "\r" ends a line too (universal newlines)
    old_mac.write_bytes("".join(r + "\r" for r in refs).encode("utf-8"))
    for path in (crlf, bom, old_mac):
        assert cmp.read_lines(str(path)) == refs == cmp.read_lines(plain)
    base = write(tmp_path / "base.txt", drop_words(refs, 2))
    same = tmp_path / "same.txt"  # the hypotheses saved with CRLF and a BOM as well
    same.write_bytes(b"\xef\xbb\xbf" + "".join(r + "\r\n" for r in refs).encode("utf-8"))
    monkeypatch.chdir(tmp_path)
    for name, ref in (("crlf", crlf), ("bom", bom)):
        assert cmp.main(["--ref", str(ref), "--system", f"b={base}", "--system", f"same={same}", "--out", name,
                         "--no-compare-mt", "--bootstrap-samples", "10"]) == 0
        m = json.loads((tmp_path / name / "results.json").read_text())["models"]
        assert m["same"]["exact_match"] == 100.0
        assert m["same"]["bleu"] == [round(sacrebleu.corpus_bleu(refs, [refs]).score, 2)]
        assert m["b"]["bleu"] == [round(sacrebleu.corpus_bleu(drop_words(refs, 2), [refs]).score, 2)]
