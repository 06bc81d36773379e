"""mgsa_preprocess.text_files: the one reader of the user's text files (issue 45, point 7). Line
counts against Python's own text mode (what fairseq-preprocess binarizes), the error's line and
column against the file's bytes, compressed files."""

import gzip

import pytest

from mgsa_preprocess import text_files
from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.text_files import check_text, lines


def python_text_mode_lines(path) -> int:
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


@pytest.mark.parametrize("data", [b"", b"a\n", b"a", b"a\nb", b"a\r\nb\r\n", b"a\rb\rc", b"a\r\n\r\nb", b"\n\n\n",
                                  "na\u00efve caf\u00e9\n\u4e2d\u6587\n".encode("utf-8"), b"x\r", b"\r\n"])
@pytest.mark.parametrize("chunk", [1, 2, 3, 1 << 20])
def test_line_counts_as_python_text_mode_counts_them(data, chunk, tmp_path, monkeypatch):
    """Chunks of 1-3 characters put a '\\r\\n' across a chunk's end (the reader must count it once)."""
    monkeypatch.setattr(text_files, "_CHUNK", chunk)
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    assert check_text(str(path)) == python_text_mode_lines(path)


def expected_error(path, raw_lines, bad_line):
    """The message, from the bytes: the first byte of the line that does not decode, its column in characters."""
    raw = raw_lines[bad_line - 1]
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        start = e.start
    column = len(raw[:start].decode("utf-8")) + 1
    return (f"{path}:{bad_line}: not UTF-8 (byte 0x{raw[start]:02X} at column {column}); convert the file to UTF-8, "
            f"e.g. iconv -f latin1 -t utf-8")


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_a_latin1_line_is_named_by_line_and_character_column(suffix, tmp_path, monkeypatch):
    """UTF-8 characters before the bad byte count one column each (the column an editor shows): é is the
    12th character of "naïve 中 café"."""
    monkeypatch.setattr(text_files, "_CHUNK", 4)  # the bad byte far beyond the first chunk
    raw_lines = ["one line\n".encode(), "na\u00efve \u4e2d ".encode("utf-8") + "caf\u00e9\n".encode("latin-1"),
                 b"three\n"]
    path = tmp_path / f"text{suffix}"
    data = b"".join(raw_lines)
    path.write_bytes(gzip.compress(data) if suffix else data)
    want = expected_error(path, raw_lines, 2)
    assert want.endswith("(byte 0xE9 at column 12); convert the file to UTF-8, e.g. iconv -f latin1 -t utf-8")
    with pytest.raises(PreprocessError) as e:
        check_text(str(path))
    assert str(e.value) == want
    with pytest.raises(PreprocessError) as e:
        list(lines(str(path)))
    assert str(e.value) == want


def test_a_missing_or_damaged_file_is_one_line(tmp_path):
    with pytest.raises(PreprocessError) as e:
        check_text(str(tmp_path / "none.txt"), "the source text")
    assert str(e.value) == f"{tmp_path / 'none.txt'}: cannot read the source text: No such file or directory"
    cut = tmp_path / "cut.gz"
    whole = gzip.compress(b"a line\n" * 5000)
    cut.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(PreprocessError) as e:
        check_text(str(cut))
    assert str(e.value).startswith(f"{cut}: the gzip file ends early, after line ")
