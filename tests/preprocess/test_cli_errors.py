"""mgsa-preprocess errors name the user's files and lines (never a file the tool
wrote, such as the BPE output under --destdir or the parser's trees) and are
printed on a line of their own, after the progress bars (which are on here)."""

import pytest

from mgsa_preprocess.binarize import PhraseJob, TagTable, write_split
from mgsa_preprocess.cli import main
from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.report import SplitReport

CODES = "#version: 0.2\nQ Z\n"  # a merge that never applies: every word becomes characters
TREES = ["(ROOT (S (NP (DT the) (NN dog)) (VP (VBD ran)) (. .)))",
         "(ROOT (S (NP (DT the) (NN cow)) (VP (VBD sat)) (. .)))"]


def run_cli(tmp_path, capsys, source, trees, *extra):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "train.en").write_text("".join(line + "\n" for line in source))
    (raw / "train.de").write_text("".join(f"w{i}\n" for i in range(len(source))))
    (raw / "train.en.tree").write_text("\n".join(trees) + "\n")
    (tmp_path / "codes").write_text(CODES)
    with pytest.raises(SystemExit) as e:
        main(["-s", "en", "-t", "de", "--trainpref", str(raw / "train"), "--destdir", str(tmp_path / "bin"),
              "--trees-suffix", "tree", *extra])
    assert e.value.code == 1
    err = capsys.readouterr().err
    return raw, err


def error_line(err):
    """The error must be a whole line of stderr (bars end with '\\r', never before the message)."""
    lines = [line for line in err.split("\n") if "mgsa-preprocess: error:" in line]
    assert len(lines) == 1, err
    assert lines[0].startswith("mgsa-preprocess: error: "), repr(lines[0])
    assert "Traceback" not in err
    return lines[0][len("mgsa-preprocess: error: "):]


def test_leaf_mismatch_with_bpe_codes_names_the_users_source_and_tree_file(tmp_path, capsys):
    raw, err = run_cli(tmp_path, capsys, ["the dog ran .", "the cat sat ."], TREES,
                       "--bpe-codes", str(tmp_path / "codes"))
    assert "\r" in err  # the bars did draw: the check below is not vacuous
    assert error_line(err) == (f"{raw}/train.en.tree:2: the tree's leaves differ from the words of "
                               f"{raw}/train.en:2 at word 2: leaf 'cow', word 'cat'")


def test_count_mismatch_with_bpe_codes_names_the_users_source(tmp_path, capsys):
    raw, err = run_cli(tmp_path, capsys, ["the dog ran .", "the cow sat .", "one more ."], TREES,
                       "--bpe-codes", str(tmp_path / "codes"))
    msg = error_line(err)
    assert msg == (f"{raw}/train.en:3: {raw}/train.en.tree has 2 trees but {raw}/train.en has 3 lines: "
                   f"this line and the ones after it have no tree")
    assert "/bin/" not in msg


def test_malformed_tree_names_the_tree_file_and_line(tmp_path, capsys):
    trees = [TREES[0], "(ROOT (S (NP (DT the) (NN cow)) sat (. .)))"]
    raw, err = run_cli(tmp_path, capsys, ["the dog ran .", "the cow sat ."], trees, "--bpe-codes",
                       str(tmp_path / "codes"), "--workers", "2")
    assert error_line(err).startswith(f"{raw}/train.en.tree:2: word 'sat' beside other constituents")


def test_segmentation_error_names_the_users_segmented_file(tmp_path, capsys):
    raw, err = run_cli(tmp_path, capsys, ["the dog ran .", "the co@@ w sat@@"], TREES)
    assert error_line(err) == f"{raw}/train.en:2: the last piece 'sat@@' ends with the BPE separator '@@'"


def test_a_parsers_tree_error_is_reported_at_the_source_line(tmp_path):
    """With --parser the trees are the tool's own: the error names the source line, not the tree file."""
    src = tmp_path / "seg.en"
    src.write_text("the dog ran .\nthe cat sat .\n")
    trees = tmp_path / "bin" / "trees" / "train.en.tree"
    trees.parent.mkdir(parents=True)
    trees.write_text("\n".join(TREES) + "\n")
    job = PhraseJob(src_path=str(src), tree_path=str(trees), levels=2, text_path="/user/train.en", parsed=True)
    with pytest.raises(PreprocessError) as e:
        write_split(job, str(tmp_path / "bin" / "train.en-de.en"), SplitReport("train", 2, job.src_path, job.tree_path),
                    TagTable(), progress=False, is_train=True)
    assert str(e.value) == ("/user/train.en:2: the parser's tree for this line is unusable: the tree's leaves differ "
                            "from the words of /user/train.en:2 at word 2: leaf 'cow', word 'cat'")
    assert not list((tmp_path / "bin").glob("*.syn*"))  # nothing that looks like a phrase file is left
