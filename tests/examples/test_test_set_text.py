"""examples/common/test_set_text.py (a test set's SGML or XML source and references -> the plain
files a recipe's RAW_DIR holds) and examples/common/test_sets_table.py (one table of several test
sets), on small files written here in NIST's, WMT's and IWSLT's layouts:

* NIST's four references in one SGML file (a refset each, one listing its documents in another
  order), or in four files, split into NAME.en, NAME.en.ref1-3 in the first reference's order, the
  source matched to it by document and segment id; mgsa-compare given the four split files scores
  as it does the SGML file itself, and as sacrebleu does with the four references;
* WMT's SGML (one reference) and XML (a <src> and a <ref> per translator), IWSLT's .xml, where the
  English of the talks (a <srcset>) is the reference of the Chinese;
* a source lacking a segment, or with one more: one line naming the file, the document and the segment;
* the table: a row per system, a column per test set, their average, verdict marks.
"""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import sacrebleu

from tests.fairseq_mgsa.analysis.compare.test_compare_refs import DOCS, nist_sgml, variant, wmt_xml
from tests.paths import EXAMPLES, checkout_env

TOOL = os.path.join(EXAMPLES, "common", "test_set_text.py")
TABLE = os.path.join(EXAMPLES, "common", "test_sets_table.py")
N = sum(len(lines) for _, lines in DOCS)
SOURCE = [f"中文句子{i}，第{i % 7}个。" for i in range(N)]


@pytest.fixture(scope="module")
def refs():
    base = [" ".join(f"w{(i * 7 + k) % 23}" for k in range(3 + i % 5)) for i in range(N)]
    four = [variant(base, k) for k in range(4)]
    four[0][3] += " R&D <5>"
    return four


def srcset(docs=DOCS, drop=None, extra=False):
    """The source as NIST distributes it: a <srcset> with the documents of DOCS (in this order)."""
    out = ['<srcset setid="t" srclang="zh">']
    for docid, lines in docs:
        out.append(f'<DOC docid="{docid}" genre=nw>')
        for j, i in enumerate(lines):
            if (docid, j + 1) != drop:
                out.append(f"<seg id={j + 1}> {SOURCE[i]} </seg>")
        if extra and docid == docs[-1][0]:
            out.append(f"<seg id={len(lines) + 1}>多余</seg>")
        out.append("</DOC>")
    return "\n".join(out + ["</srcset>"]) + "\n"


def run(*args):
    return subprocess.run([sys.executable, TOOL, *map(str, args)], env=checkout_env(), capture_output=True, text=True)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


@pytest.mark.parametrize("layout", ["one-file", "four-files"])
def test_nist_four_references_split_and_scored_with_all_four(refs, tmp_path, layout):
    src = tmp_path / "mt03.src.sgm"
    src.write_text(srcset(DOCS[::-1]), encoding="utf-8")  # the source's documents in another order
    whole = tmp_path / "mt03.ref.sgm"
    whole.write_text(nist_sgml(refs).split("</srcset>\n", 1)[1], encoding="utf-8")  # its four refsets
    if layout == "one-file":
        ref_files = [whole]
    else:  # one file per reference, as some LDC releases give them: each with its own refset
        body = whole.read_text(encoding="utf-8").split("</refset>\n")[:-1]
        ref_files = []
        for k, part in enumerate(body):
            f = tmp_path / f"mt03.ref{k}.sgm"
            f.write_text(part + "</refset>\n", encoding="utf-8")
            ref_files.append(f)
    out = tmp_path / "raw" / "mt03"
    proc = run("--src", src, "--refs", *ref_files, "--out", out, "--src-lang", "zh", "--tgt-lang", "en")
    assert proc.returncode == 0, proc.stderr
    assert "mt03: 48 segments, 4 references" in proc.stderr
    split = [read(f"{out}.en")] + [read(f"{out}.en.ref{k}") for k in (1, 2, 3)]
    assert split == refs  # in the first reference's order, R&D and <5> unescaped
    assert read(f"{out}.zh") == SOURCE  # matched by document and segment id
    assert not os.path.exists(f"{out}.en.ref4")

    # mgsa-compare with the four split files = with the SGML file = sacrebleu with the four
    from fairseq_mgsa.analysis import compare as cmp
    hyp = tmp_path / "hyp"
    hyp.write_text("".join(line + "\n" for line in variant(refs[2], 9)), encoding="utf-8")
    plain = sum((["--ref", f] for f in [f"{out}.en"] + [f"{out}.en.ref{k}" for k in (1, 2, 3)]), [])
    for name, given in (("split", plain), ("sgml", ["--refs-sgml", str(whole)])):
        assert cmp.main(given + ["--system", f"a={hyp}", "--out", str(tmp_path / name), "--no-compare-mt"]) == 0
    got = [json.loads((tmp_path / name / "results.json").read_text()) for name in ("split", "sgml")]
    assert got[0]["n_refs"] == got[1]["n_refs"] == 4
    expected = round(sacrebleu.corpus_bleu(read(hyp), refs).score, 2)
    assert got[0]["models"]["a"]["bleu"] == got[1]["models"]["a"]["bleu"] == [expected]


def test_a_rerun_with_fewer_references_leaves_none_of_the_old(refs, tmp_path):
    src = tmp_path / "src.sgm"
    src.write_text(srcset(), encoding="utf-8")
    ref = tmp_path / "ref.sgm"
    ref.write_text(nist_sgml(refs).split("</srcset>\n", 1)[1], encoding="utf-8")
    out = tmp_path / "t"
    assert run("--src", src, "--refs", ref, "--out", out, "--src-lang", "zh", "--tgt-lang", "en").returncode == 0
    one = tmp_path / "one.sgm"
    one.write_text(nist_sgml(refs[:1]).split("</srcset>\n", 1)[1], encoding="utf-8")
    assert run("--src", src, "--refs", one, "--out", out, "--src-lang", "zh", "--tgt-lang", "en").returncode == 0
    assert read(f"{out}.en") == refs[0] and not os.path.exists(f"{out}.en.ref1")


def test_wmt_sgml_and_xml_and_iwslt_xml(refs, tmp_path):
    # WMT's SGML (newstest2017's layout): a srcset file and a refset file with one reference
    src = tmp_path / "newstest2017-zhen-src.zh.sgm"
    src.write_text(srcset(), encoding="utf-8")
    ref = tmp_path / "newstest2017-zhen-ref.en.sgm"
    ref.write_text(nist_sgml(refs[:1]).split("</srcset>\n", 1)[1], encoding="utf-8")
    assert run("--src", src, "--refs", ref, "--out", tmp_path / "sgml", "--src-lang", "zh", "--tgt-lang", "en").returncode == 0
    assert read(tmp_path / "sgml.en") == refs[0] and read(tmp_path / "sgml.zh") == SOURCE

    # WMT's XML: the source and every translator's reference in one file; the testsuite document skipped
    xml = tmp_path / "wmttest.zh-en.xml"
    xml.write_text(wmt_xml(refs[:2]), encoding="utf-8")
    assert run("--src", xml, "--refs", xml, "--out", tmp_path / "xml", "--src-lang", "zh", "--tgt-lang", "en").returncode == 0
    assert [read(tmp_path / "xml.en"), read(tmp_path / "xml.en.ref1")] == refs[:2]
    assert read(tmp_path / "xml.zh") == [f"source {j}" for _, lines in DOCS for j, _ in enumerate(lines)]

    # IWSLT's .xml: the Chinese talks (zh-en's source) and the English of the same talks (en-zh's
    # source, a <srcset> too), with the talks' metadata around the segments
    def talks(lang, texts, order):
        mteval = ET.Element("mteval")
        s = ET.SubElement(mteval, "srcset", setid="iwslt2017-tst2017", srclang=lang)
        for docid, lines in order:
            doc = ET.SubElement(s, "doc", docid=docid, genre="lectures")
            ET.SubElement(doc, "url").text = "http://example.org/talk"
            ET.SubElement(doc, "description").text = "TED Talk Subtitles and Transcript: ..."
            ET.SubElement(doc, "talkid").text = docid
            for j, i in enumerate(lines):
                ET.SubElement(doc, "seg", id=str(j + 1)).text = f"  {texts[i]}  "
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(mteval, encoding="unicode")
    zh, en = tmp_path / "IWSLT17.TED.tst2017.zh-en.zh.xml", tmp_path / "IWSLT17.TED.tst2017.en-zh.en.xml"
    zh.write_text(talks("chinese", SOURCE, DOCS[::-1]), encoding="utf-8")
    en.write_text(talks("english", refs[0], DOCS), encoding="utf-8")
    proc = run("--src", zh, "--refs", en, "--out", tmp_path / "tst2017", "--src-lang", "zh", "--tgt-lang", "en")
    assert proc.returncode == 0, proc.stderr
    assert read(tmp_path / "tst2017.en") == refs[0] and read(tmp_path / "tst2017.zh") == SOURCE


@pytest.mark.parametrize("case", ["missing", "extra"])
def test_a_source_that_does_not_match_is_one_line(refs, tmp_path, case):
    src = tmp_path / "src.sgm"
    src.write_text(srcset(drop=("doc1", 5)) if case == "missing" else srcset(extra=True), encoding="utf-8")
    ref = tmp_path / "ref.sgm"
    ref.write_text(nist_sgml(refs).split("</srcset>\n", 1)[1], encoding="utf-8")
    proc = run("--src", src, "--refs", ref, "--out", tmp_path / "t", "--src-lang", "zh", "--tgt-lang", "en")
    assert proc.returncode == 1 and not os.path.exists(tmp_path / "t.en")
    if case == "missing":
        expected = (f"test_set_text.py: error: {src}: no segment 5 of document doc1, which {ref} reference ref0 has "
                    f"(the source of the references' documents expected)")
    else:
        expected = f"test_set_text.py: error: {src}: segment 17 of document doc2 has no reference in {ref} reference ref0"
    assert proc.stderr.strip().splitlines() == [expected]


def test_the_table_of_several_test_sets(tmp_path):
    def results(name, base, mgsa, verdict):
        d = tmp_path / name
        d.mkdir()
        models = {"transformer": {"label": "Transformer (fairseq)", "bleu_mean": base, "bleu_sd": 0.1, "verdict": None},
                  "mgsa_syntactic": {"label": "MG-SA syntactic", "bleu_mean": mgsa, "bleu_sd": 0.2, "verdict": verdict}}
        (d / "results.json").write_text(json.dumps({"baseline": "transformer", "test_sentences": 919, "n_refs": 4,
                                                    "lowercase": False, "alpha": 0.05, "models": models}))
        return f"{name}={d}"
    out = tmp_path / "test_sets.md"
    proc = subprocess.run([sys.executable, TABLE, "--out", out, results("mt03", 41.88, 43.98, "ahead"),
                           results("mt04", 44.48, 44.40, "not significantly different")],
                          capture_output=True, text=True, env=checkout_env())
    assert proc.returncode == 0, proc.stderr
    table = out.read_text(encoding="utf-8")
    assert table in proc.stdout
    rows = table.splitlines()
    assert rows[0] == "| system | mt03 (919) | mt04 (919) | average |"
    assert rows[2] == f"| Transformer (fairseq) | 41.88 ± 0.10 | 44.48 ± 0.10 | {(41.88 + 44.48) / 2:.2f} |"
    assert rows[3] == f"| MG-SA syntactic | 43.98 ± 0.20 + | 44.40 ± 0.20 | {(43.98 + 44.40) / 2:.2f} |"
    assert "case-sensitive, 4 references a sentence" in table
    assert "- mgsa_syntactic: mt03: ahead; mt04: not significantly different" in table


# --- issue 51 ---------------------------------------------------------------------------------

def test_one_refset_with_every_reference_told_apart_by_sysid(refs, tmp_path):
    """Item 9: one <refset>, each document's sysid naming its reference (the second one's
    documents in another order): four references, as mgsa-compare --refs-sgml reads the file (on
    main: "document doc0 has segment 1 twice")."""
    src = tmp_path / "src.sgm"
    src.write_text(srcset(DOCS[::-1]), encoding="utf-8")
    ref = tmp_path / "ref.sgm"
    ref.write_text(nist_sgml(refs, one_refset=True).split("</srcset>\n", 1)[1], encoding="utf-8")
    out = tmp_path / "t"
    proc = run("--src", src, "--refs", ref, "--out", out, "--src-lang", "zh", "--tgt-lang", "en")
    assert proc.returncode == 0, proc.stderr
    assert [read(f"{out}.en")] + [read(f"{out}.en.ref{k}") for k in (1, 2, 3)] == refs
    assert read(f"{out}.zh") == SOURCE


def test_a_malformed_wmt_xml_source_is_named(refs, tmp_path):
    """Item 15: expat's message with the file's name and what was expected (on main: "not
    well-formed (invalid token): line 3, column 33", no file)."""
    ref = tmp_path / "ref.xml"
    ref.write_text(wmt_xml(refs[:1]), encoding="utf-8")
    src = tmp_path / "src.xml"
    src.write_text('<dataset id="t">\n<collection id="general">\n<doc id="d1"><src lang="zh"><p><seg id="1">R&D'
                   '</seg></p></src></doc>\n</collection>\n</dataset>\n', encoding="utf-8")
    proc = run("--src", src, "--refs", ref, "--out", tmp_path / "t", "--src-lang", "zh", "--tgt-lang", "en")
    assert proc.returncode == 1 and not os.path.exists(tmp_path / "t.en")
    assert proc.stderr.strip().splitlines() == [f"test_set_text.py: error: {src}: line 3, column 47: not "
                                                f"well-formed XML (invalid token) (WMT's XML test set expected)"]


def test_plain_and_sgml_references_are_not_mixed(refs, tmp_path):
    """Item 1, here: a reference one a line has no ids to match the SGML's segments by."""
    src = tmp_path / "src.sgm"
    src.write_text(srcset(), encoding="utf-8")
    plain = tmp_path / "ref0.txt"
    plain.write_text("".join(line + "\n" for line in refs[0]), encoding="utf-8")
    ref = tmp_path / "ref.sgm"
    ref.write_text(nist_sgml(refs[1:2]).split("</srcset>\n", 1)[1], encoding="utf-8")
    proc = run("--src", src, "--refs", plain, ref, "--out", tmp_path / "t", "--src-lang", "zh", "--tgt-lang", "en")
    assert proc.returncode == 1 and not os.path.exists(tmp_path / "t.en")
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"test_set_text.py: error: {plain}: one reference a line, without "
                                                   f"the document and segment ids that {ref} is matched by")


@pytest.mark.parametrize("encoding, name, iconv", [("gbk", "GBK/GB2312/GB18030", "gb18030"), ("big5", "Big5", "big5"),
                                                   ("utf-16", "UTF-16", "utf-16")])
def test_a_chinese_source_not_in_utf8_gets_its_own_iconv(refs, tmp_path, encoding, name, iconv):
    """Item 10: the advice names the encoding the bytes are in (on main: iconv -f latin1, whose
    output is mojibake every later step accepts)."""
    src = tmp_path / "src.sgm"
    text = srcset().replace("中文句子", "我们是邻居")
    src.write_bytes((text.replace("我们是邻居", "我們是鄰居").replace("个", "個") if encoding == "big5" else text)
                    .encode(encoding))
    ref = tmp_path / "ref.sgm"
    ref.write_text(nist_sgml(refs[:1]).split("</srcset>\n", 1)[1], encoding="utf-8")
    proc = run("--src", src, "--refs", ref, "--out", tmp_path / "t", "--src-lang", "zh", "--tgt-lang", "en")
    assert proc.returncode == 1 and not os.path.exists(tmp_path / "t.zh")
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"test_set_text.py: error: {src}:") and \
        lines[0].endswith(f"it looks like {name}: convert it with iconv -f {iconv} -t utf-8"), lines
