"""Chinese text that is not UTF-8 (issue 51 item 10): the error names the encoding the bytes look
to be in (GBK/GB18030, Big5, UTF-16) and the iconv command for it, in every reader of Chinese
text: text_files (mgsa-segment-zh, the Sinica converter, the treebank readers) and mgsa-compare's
(test_set_text.py). On main all said `iconv -f latin1 -t utf-8`, whose output is mojibake that
every later step accepts. Latin-1 text keeps its advice."""

import pytest

from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.parser_training.sinica import read_sinica
from mgsa_preprocess.segment_zh import main as segment_main
from mgsa_preprocess.text_files import likely_encoding, lines

SIMPLIFIED = ["我们是邻居。", "北京今天的天气很好，我们去公园散步吧。", "他说这本书非常有意思。"]
TRADITIONAL = ["我們是鄰居。", "台灣的天氣很好，我們去爬山吧。", "他說這本書非常有意思。"]
GBK = ("GBK/GB2312/GB18030", "gb18030")


@pytest.mark.parametrize("text, encoding, expected", [
    *[(t, "gbk", GBK) for t in SIMPLIFIED],
    *[(t, "gb18030", GBK) for t in SIMPLIFIED],
    *[(t, "big5", ("Big5", "big5")) for t in TRADITIONAL],
    *[(t, "cp950", ("Big5", "big5")) for t in TRADITIONAL],
    ("我们是邻居。", "utf-16", ("UTF-16", "utf-16")),
    ("Größe, café, élève, Ärger über Öl", "latin1", None),
    ("Crème brûlée à la française", "cp1252", None),
])
def test_the_likely_encoding(text, encoding, expected):
    assert likely_encoding(text.encode(encoding)) == expected


def bad_file(path, encoding, chinese, at=3):
    """Lines of UTF-8 Chinese, line `at` in `encoding`."""
    rows = [f"第{i}行的中文。\n".encode("utf-8") for i in range(1, 6)]
    rows[at - 1] = (chinese + "\n").encode(encoding)
    path.write_bytes(b"".join(rows))
    return str(path)


@pytest.mark.parametrize("encoding, chinese, name, iconv", [("gbk", SIMPLIFIED[1], "GBK/GB2312/GB18030", "gb18030"),
                                                            ("big5", TRADITIONAL[1], "Big5", "big5")])
def test_text_files_names_the_encoding(tmp_path, encoding, chinese, name, iconv):
    path = bad_file(tmp_path / "zh.txt", encoding, chinese)
    with pytest.raises(PreprocessError) as e:
        list(lines(path))
    first = chinese.encode(encoding)[0]
    assert str(e.value) == (f"{path}:3: not UTF-8 (byte 0x{first:02X} at column 1); it looks like {name}: "
                            f"convert it with iconv -f {iconv} -t utf-8")


def test_mgsa_segment_zh_on_gbk(tmp_path, capsys):
    path = bad_file(tmp_path / "train.raw.zh", "gbk", SIMPLIFIED[0], at=4)
    with pytest.raises(SystemExit) as e:
        segment_main(["--input", path, "--output", str(tmp_path / "train.zh"), "--quiet"])
    assert e.value.code == 1 and not (tmp_path / "train.zh").exists()
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"mgsa-segment-zh: error: {path}:4: not UTF-8 (byte 0xCE at column 1); it looks like GBK/GB2312/GB18030: "
        f"convert it with iconv -f gb18030 -t utf-8")


def test_the_sinica_converter_on_big5(tmp_path):
    path = tmp_path / "parsed"
    path.write_bytes("#1:1.[101] S(agent:NP(Head:Nhaa:我們)|Head:VC2:閱讀|goal:NP(Head:Nab:書))#。(PERIODCATEGORY)\n"
                     .encode("big5"))
    with pytest.raises(PreprocessError) as e:
        read_sinica(str(path), script="keep")
    assert str(e.value).endswith("it looks like Big5: convert it with iconv -f big5 -t utf-8")


def test_latin1_keeps_its_advice(tmp_path):
    path = tmp_path / "de.txt"
    path.write_bytes("Ein Satz.\nDie Größe des Öls.\n".encode("latin1"))
    with pytest.raises(PreprocessError) as e:
        list(lines(str(path)))
    assert str(e.value) == f"{path}:2: not UTF-8 (byte 0xF6 at column 7); convert the file to UTF-8, e.g. iconv " \
                           f"-f latin1 -t utf-8"
