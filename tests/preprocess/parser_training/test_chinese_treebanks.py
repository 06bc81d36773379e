"""mgsa-train-parser's Chinese treebank formats: the Penn Chinese Treebank as distributed (SGML
wrappers, empty elements, function tags) and the Sinica Treebank's ICG lines; and the segmentation
check. The samples are written here in each format's notation (no treebank text)."""

import json

import pytest

from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.parser_training.segment_check import compare
from mgsa_preprocess.parser_training.sinica import main as sinica_main
from mgsa_preprocess.parser_training.sinica import read_sinica, simplify_tag
from mgsa_preprocess.parser_training.train_parser import get_parser, read_inputs
from mgsa_preprocess.parser_training.treebank import read_treebank

CTB = """<DOC>
<DOCID>CHTB_9001.nw</DOCID>
<HEADER>
<DATE> 2003-04-05 09:30:00 </DATE>
</HEADER>
<BODY>
<HEADLINE>
<S ID=1>
( (IP-HLN (NP-SBJ (NR 甲市))
          (VP (VV 建成)
              (NP-OBJ (NN 新桥)))) )
</S>
</HEADLINE>
<TEXT>
<P>
<S ID=2>
( (IP (NP-SBJ-1 (DNP (NP (NR 甲市)) (DEG 的)) (NN 工人))
      (VP (ADVP (AD 已经))
          (VP (VV 完成) (AS 了)
              (NP-OBJ (CP (WHNP-2 (-NONE- *OP*))
                          (CP (IP (NP-SBJ (-NONE- *T*-2)) (VP (VV 计划))) (DEC 的)))
                      (NP (NN 工程)))))
      (PU 。)) )
</S>
<S ID=3> ( (IP (NP-SBJ (-NONE- *pro*)) (VP (VV 欢迎)) (PU ！)) ) </S>
</P>
</TEXT>
</BODY>
</DOC>
"""


def test_ctb_file_is_stripped_of_its_wrappers_and_normalised(tmp_path):
    path = tmp_path / "chtb_9001.fid"
    path.write_text(CTB, encoding="utf-8")
    trees, stats = read_treebank(str(path), keep_one_word=False, fmt="ctb")
    assert [t.text for t in trees] == [
        "(ROOT (IP (NR 甲市) (VP (VV 建成) (NN 新桥))))",
        "(ROOT (IP (NP (DNP (NR 甲市) (DEG 的)) (NN 工人)) (VP (AD 已经) (VP (VV 完成) (AS 了) "
        "(NP (CP (CP (VV 计划) (DEC 的))) (NN 工程)))) (PU 。)))",  # IP over one word: its tag
        "(ROOT (IP (VV 欢迎) (PU ！)))"]
    assert [t.line for t in trees] == [9, 17, 25]  # the lines of the file itself
    assert trees[1].words == ["甲市", "的", "工人", "已经", "完成", "了", "计划", "的", "工程", "。"]
    # every tag (all at depth 0; <S ID=3> and </S> share the tree's line), and DOCID's and DATE's text
    assert stats["sgml_tags_removed"] == CTB.count("<") and stats["metadata_lines_removed"] == 2
    # *OP*, *T*-2, *pro*; the constituents they leave empty: WHNP, NP-SBJ (twice), then the inner
    # CP is the only child left of the outer one... counted by the tree reader as every treebank
    assert stats["none_removed"] == 3 and stats["emptied_removed"] == 3
    # IP-HLN, NP-SBJ, NP-OBJ, NP-SBJ-1, NP-OBJ, WHNP-2, NP-SBJ (the trace's), NP-SBJ: stripped labels
    assert stats["function_tags_stripped"] == 8
    assert stats["outer_removed"] == 3


def test_ctb_errors_name_the_line(tmp_path):
    path = tmp_path / "a.fid"
    path.write_text(CTB, encoding="utf-8")
    with pytest.raises(PreprocessError, match=r"a\.fid:1: text outside any bracketed tree: '<DOC>' \(SGML markup: "
                                              r"mgsa-train-parser --treebank-format ctb"):
        read_treebank(str(path))  # the ptb reader says which format reads it
    path.write_text("<S ID=1>\nno tree here\n</S>\n", encoding="utf-8")
    with pytest.raises(PreprocessError, match=r"a\.fid:2: text outside any bracketed tree: 'no tree here'"):
        read_treebank(str(path), fmt="ctb")
    path.write_bytes("<S ID=1>\n( (IP (VV 欢迎)) )\n</S>\n".encode("gb2312"))
    with pytest.raises(PreprocessError, match=r"a\.fid:2: not UTF-8 .*CTB 5\.1 and earlier are GB2312: convert with "
                                              r"iconv -f gb18030 -t utf-8"):
        read_treebank(str(path), fmt="ctb")


# ICG lines as the Sinica Treebank writes them (invented sentences): identifier, tree, '#', final mark
SINICA = [
    "#1:1.[101] S(agent:NP(Head:Nhaa:我們)|time:Dd:常常|Head:VC2:閱讀|goal:NP(quantifier:DM:這本|Head:Nab:書))"
    "#，(COMMACATEGORY)",
    "#2:.[102] VP(Head:VH11:開心)# 。(PERIODCATEGORY)",
    "#3:2.1.[103] NP(property:N‧的(head:Nhaa:他|Head:DE:的)|Head:Nab(DUMMY1:Nab:貓|Head:Caa:和|DUMMY2:Nab:狗))#",
    "#4:3.[104] S(theme:NP(Head:head:Nab:鳥)|Head:VA4[+ASP]:飛過)#！(EXCLANATIONCATEGORY)",
]


def test_sinica_lines_become_bracketed_trees(tmp_path):
    path = tmp_path / "parsed"
    path.write_text("\n".join(SINICA) + "\n\n", encoding="utf-8")
    trees, report = read_sinica(str(path))
    assert [t.tree for t in trees] == [
        "(ROOT (S (NP (Nh 我们)) (D 常常) (VC 阅读) (NP (DM 这本) (Na 书)) (COMMACATEGORY ，)))",
        "(ROOT (VP (VH 开心) (PERIODCATEGORY 。)))",  # a one-word clause: the mark joins it
        "(ROOT (NP (N‧的 (Nh 他) (DE 的)) (Na (Na 猫) (Caa 和) (Na 狗))))",  # no mark after '#'
        "(ROOT (S (NP (Na 鸟)) (VA 飞过) (EXCLANATIONCATEGORY ！)))"]
    assert trees[0].words == ["我们", "常常", "阅读", "这本", "书", "，"]
    assert report["trees"] == 4 and report["final_marks_attached"] == 3 and report["trees_without_final_mark"] == 1
    assert report["doubled_roles_dropped"] == 1 and report["words"] == 6 + 2 + 5 + 3
    fine, _ = read_sinica(str(path), tags="fine", script="keep")
    assert fine[3].tree == "(ROOT (S (NP (Nab 鳥)) (VA4 飛過) (EXCLANATIONCATEGORY ！)))"  # features dropped
    # read by mgsa-train-parser as a treebank file: the same trees, normalised as every treebank
    as_treebank, stats = read_treebank(str(path), keep_one_word=True, fmt="sinica")
    assert [t.text for t in as_treebank] == [t.tree for t in trees]
    assert stats["final_marks_attached"] == 3 and stats["doubled_roles_dropped"] == 1
    out = tmp_path / "sinica.tree"
    sinica_main([str(path), "--out", str(out), "--report", str(tmp_path / "r.json")])
    assert out.read_text(encoding="utf-8").splitlines() == [t.tree for t in trees]
    assert json.loads((tmp_path / "r.json").read_text())["trees"] == 4


@pytest.mark.parametrize("out, report, message", [
    ("parsed", None, "{d}/parsed: --out is the treebank itself; writing there would overwrite it"),
    ("./x/../parsed", None, "./x/../parsed: --out is the treebank itself; writing there would overwrite it"),
    ("folder", None, "{d}/folder: --out is a folder; give the name of the file to write"),
    ("t.tree", "parsed", "{d}/parsed: --report is the treebank itself; writing there would overwrite it"),
    ("t.tree", "folder", "{d}/folder: --report is a folder; give the name of the file to write"),
    ("t.tree", "t.tree", "{d}/t.tree: --out and --report name the same file"),
])
def test_sinica_outputs_are_checked_before_anything_is_written(tmp_path, monkeypatch, out, report, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "parsed").write_text("\n".join(SINICA) + "\n", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    paths = [out if out.startswith(".") else str(tmp_path / out)]
    argv = [str(tmp_path / "parsed"), "--out", paths[0]] + (["--report", str(tmp_path / report)] if report else [])
    with pytest.raises(SystemExit) as e:
        sinica_main(argv)
    assert e.value.code == "sinica: error: " + message.format(d=tmp_path)
    assert (tmp_path / "parsed").read_text(encoding="utf-8") == "\n".join(SINICA) + "\n"
    assert not (tmp_path / "t.tree").exists() and list((tmp_path / "folder").iterdir()) == []


@pytest.mark.parametrize("line, message", [
    ("S(agent:NP(Head:Nhaa:我們))#，(COMMACATEGORY)", r"p:2: expected a Sinica \(ICG\) tree line"),
    ("#5:5.[9] S(agent:NP(Head:Nhaa:我們)#，(COMMACATEGORY)", r"p:2: Sinica \(ICG\) tree: expected '\|' or '\)'"),
    ("#5:5.[9] S(NP(Head:Nhaa:我們))#，(COMMACATEGORY)", r"p:2: Sinica \(ICG\) tree: expected role:category after"),
    ("#5:5.[9] S(agent:NP(Head:Nhaa:我們))", r"p:2: no '#' after the tree"),
    ("#5:5.[9] S(agent:NP(Head:Nhaa:我們))#，", r"p:2: expected a punctuation mark and its \(\.\.\.CATEGORY\)"),
])
def test_a_bad_sinica_line_is_an_error_naming_the_line(tmp_path, line, message):
    path = tmp_path / "p"
    path.write_text(SINICA[0] + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(PreprocessError, match=message):
        read_sinica(str(path))


def test_simplified_tags():
    fine = {"Nab": "Na", "Naeb": "Na", "Nba": "Nb", "Ncb": "Nc", "Ncda": "Ncd", "Ndabd": "Nd", "Neu": "Neu",
            "Neqa": "Neqa", "Nes": "Nes", "Nep": "Nep", "Nfg": "Nf", "Ng": "Ng", "Nhaa": "Nh", "Nv4": "Nv",
            "Daa": "Da", "Dbb": "D", "Dd": "D", "Dfa": "Dfa", "Di": "Di", "Dk": "Dk", "DE": "DE", "DM": "DM",
            "Caa": "Caa", "Cab": "Cab", "Cbca": "Cbb", "V_11": "SHI", "V_12": "SHI", "V_2": "V_2", "VA4": "VA",
            "VC31": "VC", "VH11": "VH", "VK1": "VK", "P21": "P", "Ta": "T", "A": "A", "I": "I",
            # phrase categories are not word classes: unchanged
            "S": "S", "NP": "NP", "VP": "VP", "PP": "PP", "GP": "GP", "N": "N", "V": "V", "ADV": "ADV",
            "VP‧的": "VP‧的", "DM‧的": "DM‧的", "得‧VP": "得‧VP"}
    assert {t: simplify_tag(t) for t in fine} == fine


def test_train_parser_reads_each_format_and_checks_dev_labels(tmp_path, capsys):
    ctb = tmp_path / "train.fid"
    ctb.write_text(CTB, encoding="utf-8")
    dev = tmp_path / "dev.fid"
    dev.write_text("<S ID=1>\n( (IP (NP-SBJ (NN 工人)) (VP (VV 欢迎) (QP (CD 三))) (PU 。)) )\n</S>\n",
                   encoding="utf-8")
    a = get_parser().parse_args(["--train", str(ctb), "--dev", str(dev), "--out", str(tmp_path / "m"),
                                 "--treebank-format", "ctb", "--lang", "zh"])
    with pytest.raises(PreprocessError, match=r"dev\.fid:2: constituent label QP does not occur in the training "
                                              r"trees \(.*train\.fid has no QP\)"):
        read_inputs(a)
    assert f"sgml_tags_removed {CTB.count('<')}" in capsys.readouterr().out  # what the reading removed, said
    dev.write_text("<S ID=1>\n( (IP (NP-SBJ (NN 工人)) (VP (VV 欢迎) (NP (NN 新桥))) (PU 。)) )\n</S>\n",
                   encoding="utf-8")
    train_trees, dev_trees, dropped, normalisation = read_inputs(a)
    assert len(train_trees) == 3 and len(dev_trees) == 1 and dropped["trees"] == 0
    assert normalisation["train"]["sgml_tags_removed"] == CTB.count("<")
    assert normalisation["dev"]["function_tags_stripped"] == 1


def test_segment_check_against_a_count_by_hand():
    # treebank: [我们|常常|阅读], [这本|书]; segmenter: [我们|常常阅读], [这本|书]
    other = {"我们常常阅读": ["我们", "常常阅读"], "这本书": ["这本", "书"]}
    r = compare([["我们", "常常", "阅读"], ["这本", "书"]], lambda text: other[text])
    # identical: the second only; words as spans: (0,2) (2,4) (4,6) | (0,2) (2,3) against
    # (0,2) (2,6) | (0,2) (2,3): 3 in both, of 4 segmenter words and 5 treebank words
    assert r["identical_sentences"] == 1 and r["identical_percent"] == 50.0
    assert (r["words_in_both"], r["segmenter_words"], r["treebank_words"]) == (3, 4, 5)
    assert (r["word_precision"], r["word_recall"], r["word_f1"]) == (75.0, 60.0, round(200 * 0.75 * 0.6 / 1.35, 2))
