"""mgsa-preprocess and mgsa-train-parser read every input through before any work (issue 45,
points 6 and 7): sides of unequal length (60 source lines, 59 target lines) binarized with exit 0
and failed later inside fairseq-train; a Latin-1 file was a UnicodeDecodeError traceback. Now one
line naming the file(s), nothing written, exit 1."""

import subprocess

import pytest

from mgsa_preprocess.cli import main as preprocess
from mgsa_preprocess.parser_training.train_parser import main as train_parser
from tests.paths import checkout_env, command

SUGGESTION = "convert the file to UTF-8, e.g. iconv -f latin1 -t utf-8"


def sentences(n, start=0):
    return [f"the dog{i} ran ." for i in range(start, start + n)]


def tree(words):
    return "(ROOT (S (NP (DT " + words[0] + ") (NN " + words[1] + ")) (VP (VBD " + words[2] + ")) (. .)))"


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def corpus(tmp_path, sizes=(("train", 60, 60), ("valid", 10, 10), ("test", 10, 10))):
    """raw/{split}.en, .de, .en.tree: (prefix dir, {split: (source lines, target lines)})."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for split, n_src, n_tgt in sizes:
        src = sentences(n_src)
        write(raw / f"{split}.en", src)
        write(raw / f"{split}.de", [f"der Hund{i} lief ." for i in range(n_tgt)])
        write(raw / f"{split}.en.tree", [tree(line.split()) for line in src])
    return raw


def run_preprocess(capsys, raw, tmp_path, *extra, style="none"):
    args = ["-s", "en", "-t", "de", "--trainpref", raw / "train", "--validpref", raw / "valid", "--testpref",
            raw / "test", "--destdir", tmp_path / "bin", "--subword-style", style, *extra]
    with pytest.raises(SystemExit) as e:
        preprocess([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return e.value.code, err.splitlines()


# --- point 6: sides of unequal length -----------------------------------------------------------

def test_60_source_and_59_target_lines_are_refused_before_any_work(tmp_path):
    """What the user ran, in a fresh process: one line naming both files and their counts."""
    raw = corpus(tmp_path, (("train", 60, 59),))
    proc = subprocess.run(command("mgsa-preprocess", "-s", "en", "-t", "de", "--trainpref", raw / "train",
                                  "--destdir", tmp_path / "bin", "--trees-suffix", "tree", "--subword-style", "none"),
                          capture_output=True, text=True, env=checkout_env(), timeout=300)
    assert proc.returncode == 1
    assert proc.stderr == (f"mgsa-preprocess: error: {raw}/train.en has 60 lines but {raw}/train.de has 59 lines: "
                           f"the train split's source and target need one line per sentence pair, in the same order\n")
    assert not (tmp_path / "bin").exists()


@pytest.mark.parametrize("split", ["train", "valid", "test"])
@pytest.mark.parametrize("parser", [False, True])
def test_every_split_is_counted_with_trees_or_with_the_parser(split, parser, tmp_path, capsys):
    sizes = [(s, 10, 10 - (s == split)) for s in ("train", "valid", "test")]
    raw = corpus(tmp_path, sizes)
    source = ["--parser", "stanza", "--stanza-dir", tmp_path / "no-models", "--stanza-download", "none"] if parser \
        else ["--trees-suffix", "tree"]
    code, err = run_preprocess(capsys, raw, tmp_path, *source)
    assert code == 1
    assert err == [f"mgsa-preprocess: error: {raw}/{split}.en has 10 lines but {raw}/{split}.de has 9 lines: the "
                   f"{split} split's source and target need one line per sentence pair, in the same order"]
    assert not (tmp_path / "bin").exists()


def test_fewer_trees_than_lines_stop_before_the_bpe_is_applied(tmp_path, capsys):
    """The count of trees was checked only after every split was segmented into --destdir."""
    raw = corpus(tmp_path)
    lines = (raw / "valid.en.tree").read_text().splitlines()
    write(raw / "valid.en.tree", lines[:-1])
    (tmp_path / "codes").write_text("#version: 0.2\nQ Z\n")
    code, err = run_preprocess(capsys, raw, tmp_path, "--trees-suffix", "tree", "--bpe-codes", tmp_path / "codes",
                               style="bpe")
    assert code == 1
    assert err == [f"mgsa-preprocess: error: {raw}/valid.en:10: {raw}/valid.en.tree has 9 trees but {raw}/valid.en "
                   f"has 10 lines: this line and the ones after it have no tree"]
    assert not (tmp_path / "bin").exists()


# --- point 7: a file that is not UTF-8 ----------------------------------------------------------

def latin1(path, line_no, word="caf\u00e9"):
    """Line `line_no` (1-based) of `path` gets `word` in Latin-1 as its second word; the error's column."""
    lines = path.read_bytes().split(b"\n")
    parts = lines[line_no - 1].split(b" ")
    column = len(parts[0]) + 2 + word.index("\u00e9")  # 1-based, every character before it ASCII
    parts[1] = word.encode("latin-1")
    lines[line_no - 1] = b" ".join(parts)
    path.write_bytes(b"\n".join(lines))
    return column


def latin1_leaf(path, line_no):
    """The first noun of tree line `line_no` becomes "caf\xe9" (Latin-1); the error's column."""
    lines = path.read_bytes().split(b"\n")
    start = lines[line_no - 1].index(b"(NN ") + len(b"(NN ")
    end = lines[line_no - 1].index(b")", start)
    lines[line_no - 1] = lines[line_no - 1][:start] + "caf\u00e9".encode("latin-1") + lines[line_no - 1][end:]
    path.write_bytes(b"\n".join(lines))
    return start + 4  # 1-based, every character before it ASCII


@pytest.mark.parametrize("case", ["source, gold trees", "source, parser", "target", "tree file", "BPE codes"])
def test_a_latin1_input_of_mgsa_preprocess_is_one_line(case, tiny_parser, tmp_path, capsys):
    raw = corpus(tmp_path)
    extra = ["--trees-suffix", "tree"]
    if case == "source, gold trees":
        bad, line = raw / "valid.en", 4
    elif case == "source, parser":
        bad, line = raw / "train.en", 7
        extra = ["--parser", "stanza", "--stanza-dir", tiny_parser[0]]
    elif case == "target":
        bad, line = raw / "test.de", 10
    elif case == "tree file":
        bad, line = raw / "train.en.tree", 2
    else:
        bad, line = write(tmp_path / "codes", ["#version: 0.2", "d o", "r a"]), 3
        extra += ["--bpe-codes", bad]
    column = latin1_leaf(bad, line) if case == "tree file" else latin1(bad, line)
    code, err = run_preprocess(capsys, raw, tmp_path, *extra, style="bpe" if case == "BPE codes" else "none")
    assert code == 1
    assert err == [f"mgsa-preprocess: error: {bad}:{line}: not UTF-8 (byte 0xE9 at column {column}); {SUGGESTION}"]
    assert not (tmp_path / "bin").exists()


@pytest.mark.parametrize("option", ["--train", "--dev", "--test", "--wordvec-text"])
def test_a_latin1_input_of_mgsa_train_parser_is_one_line(option, tiny_parser, tmp_path, capsys):
    _, treebank = tiny_parser
    files = {"--train": tmp_path / "train.mrg", "--dev": tmp_path / "dev.mrg", "--test": tmp_path / "test.mrg"}
    for name, split in (("--train", "train"), ("--dev", "valid"), ("--test", "test")):
        files[name].write_bytes((treebank / f"{split}.src.tree").read_bytes())
    files["--wordvec-text"] = tmp_path / "text.txt"
    files["--wordvec-text"].write_bytes((treebank / "train.src").read_bytes())
    bad = files[option]
    line = 3
    if option == "--wordvec-text":
        column = latin1(bad, line)
    else:
        column = latin1_leaf(bad, line)
    with pytest.raises(SystemExit) as e:
        train_parser([str(a) for a in (*[x for k, f in files.items() for x in (k, f)], "--out", tmp_path / "parser",
                                       "--quiet")])
    assert e.value.code == 1
    assert capsys.readouterr().err == (f"mgsa-train-parser: error: {bad}:{line}: not UTF-8 (byte 0xE9 at column "
                                       f"{column}); {SUGGESTION}\n")
    assert not (tmp_path / "parser").exists()
