"""A Chinese source through mgsa-preprocess: nothing English-only (Moses or Penn Treebank escapes
undone, lowercasing) reaches its words, in the text that BPE splits and fairseq binarizes or in
the words the parser is given; its own BPE codes and dictionary, apart from the English target's."""

import json

import pytest

from mgsa_preprocess import cli, parse
from mgsa_preprocess.cli import main

# segmented Chinese lines (as mgsa-segment-zh writes them) whose tokens an English pipeline would
# change: a backtick (PTB's opening quote), ampersand entities, Latin capitals, full-width letters
LINES = ["他 说 ` 好 ' 吗 ？", "AT &amp; T 的 GPU 很 快 。", "ＧＰＵ 和 Ｂｅｒｔ ： “ 大 ” 。", "我们 用 &quot; 北京 &quot; 。"]
TARGETS = ["he said ` good ' ?", "AT & T GPU is fast .", "GPU and Bert : big .", "we use \" Beijing \" ."]


class RecordingParser:
    """Stands in for a Chinese stanza model: records the words it is given, returns a flat tree."""
    device = "cpu"
    warnings = []

    def __init__(self):
        self.sentences = []

    def parse(self, sentences):
        self.sentences += sentences
        return ["(ROOT (IP " + " ".join(f"(NN {w})" for w in words) + "))" for words in sentences]


@pytest.mark.parametrize("lang, escapes_undone", [("zh", False), ("zh-hant", False), ("zh_CN", False),
                                                   ("en", True), (None, True)])
def test_only_a_non_chinese_parser_gets_escapes_undone(lang, escapes_undone):
    assert parse.undoes_escapes(lang) == escapes_undone


def test_chinese_words_reach_the_parser_and_the_binaries_as_they_are(tmp_path, monkeypatch):
    from fairseq.data import Dictionary, data_utils
    from subword_nmt.learn_bpe import learn_bpe

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "train.zh").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    (raw / "train.en").write_text("\n".join(TARGETS) + "\n", encoding="utf-8")
    for lang, text in (("zh", LINES), ("en", TARGETS)):
        with open(tmp_path / f"codes.{lang}", "w", encoding="utf-8") as out:
            learn_bpe(text, out, num_symbols=12)
    parser = RecordingParser()
    monkeypatch.setattr(cli, "_make_parser", lambda args: parser)
    dest = tmp_path / "bin"
    main(["-s", "zh", "-t", "en", "--trainpref", str(raw / "train"), "--destdir", str(dest), "--parser", "stanza",
          "--bpe-codes", str(tmp_path / "codes.zh"), "--tgt-bpe-codes", str(tmp_path / "codes.en"),
          "--workers", "1", "--no-progress-bar"])
    # the parser was given the segmented words themselves (on main: ` -> ', &amp; -> &, &quot; -> ")
    assert parser.sentences == [line.split() for line in LINES]
    # what BPE wrote is the source split into pieces, nothing else changed, and fairseq binarized it
    bpe_text = (dest / "bpe" / "train.zh").read_text(encoding="utf-8").splitlines()
    assert [line.replace("@@ ", "") for line in bpe_text] == LINES
    src_dict = Dictionary.load(str(dest / "dict.zh.txt"))
    data = data_utils.load_indexed_dataset(str(dest / "train.zh-en.zh"), src_dict, "mmap")
    assert [src_dict.string(data[i]) for i in range(len(LINES))] == bpe_text
    # one dictionary per language, each from its own side
    tgt_dict = Dictionary.load(str(dest / "dict.en.txt"))
    def han(d):
        return {c for s in d.symbols for c in s if "\u4e00" <= c <= "\u9fff"}

    assert han(src_dict) == {c for line in LINES for c in line if "\u4e00" <= c <= "\u9fff"} and not han(tgt_dict)
    report = json.load(open(dest / "mgsa_preprocess_report.json"))
    assert report["splits"]["train"]["normalisation"]["leaves_matched_through_escapes"] == 0
