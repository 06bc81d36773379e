"""mgsa-compare with several references per sentence (issue 44 item 3, issue 45 point 5): every
reference is used, scores and the paired bootstrap equal sacrebleu's own multi-reference
computation (its command line), and the TSV, SGML and XML forms read to the same references as
plain files. The SGML and XML are written here from generated sentences."""

import json
import random
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import sacrebleu

from fairseq_mgsa.analysis import compare as cmp
from mgsa_preprocess.synthetic import generate

N = 48
DOCS = [(f"doc{d}", range(16 * d, 16 * d + 16)) for d in range(3)]  # three documents of 16 sentences


def variant(sentences, seed):
    """Another translation of each sentence: words dropped, swapped and replaced, as translators differ."""
    rng = random.Random(seed)
    out = []
    for s in sentences:
        words = s.split()
        words = [w for w in words if rng.random() > 0.15] or words[:1]
        if len(words) > 2 and rng.random() < 0.5:
            i = rng.randrange(len(words) - 1)
            words[i], words[i + 1] = words[i + 1], words[i]
        words = [f"w{rng.randrange(9)}" if rng.random() < 0.1 else w for w in words]
        out.append(" ".join(words))
    return out


@pytest.fixture(scope="module")
def refs():
    """Four references of N generated sentences; some with the characters markup escapes."""
    base = [t for _, t, _ in generate(N, 7)]
    four = [variant(base, k) for k in range(4)]
    four[0][3] += " R&D <5> \"q\" 'a'"
    four[2][17] = "AT&T & co"
    return four


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def run_main(args, capsys):
    with pytest.raises(SystemExit) as exit:
        cmp.main(args)
    return exit.value.code, capsys.readouterr().err.splitlines()


def sacrebleu_cli(*args):
    """sacrebleu's own command line: its stdout."""
    proc = subprocess.run([sys.executable, "-m", "sacrebleu", *args], capture_output=True, text=True, check=True)
    return proc.stdout


# --- issue 45 point 5: a second --ref is used -------------------------------------------------

def test_two_ref_files_are_both_used(refs, tmp_path, monkeypatch):
    """A system identical to r0 scores 100 with --ref r0 --ref r1 (on main: against r1 alone)."""
    monkeypatch.chdir(tmp_path)
    r0, r1 = write(tmp_path / "r0", refs[0]), write(tmp_path / "r1", refs[1])
    other = write(tmp_path / "other", refs[2])
    assert cmp.main(["--ref", r0, "--ref", r1, "--system", f"same={r0}", "--system", f"other={other}",
                     "--out", "out", "--bootstrap-samples", "20"]) == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    same = results["models"]["same"]
    assert same["bleu"] == [100.0] and same["chrf"] == [100.0] and same["exact_match"] == 100.0
    assert results["n_refs"] == 2 and results["references"] == [r0, r1]
    assert all("nrefs:2" in sig for sig in results["signature"].values())
    md = (tmp_path / "out" / "results.md").read_text()
    assert "BLEU (2 refs)" in md and f"2 references ({r0}, {r1})" in md
    # compare-mt reads one reference and says which, in the table's notes and in its own reports
    assert f"compare-mt's report takes one reference: the first, {r0}." in md
    assert (tmp_path / "out" / "compare-mt" / "report.txt").read_text().startswith(f"One reference: the first, {r0}.")
    assert f"One reference: the first, {r0}." in (tmp_path / "out" / "compare-mt" / "index.html").read_text()


# --- issue 44 item 3: sacrebleu's own multi-reference figures ---------------------------------

@pytest.mark.parametrize("k", [2, 4])
def test_scores_and_paired_bootstrap_equal_sacrebleus(refs, tmp_path, monkeypatch, k):
    """BLEU and chrF of every seed as sacrebleu's command line gives them with the k reference
    files (to its last printed digit, -w 2), and the paired-bootstrap p of each seed pair and of
    the pooled seeds as its --paired-bs gives them (same seed, 12345, and resamples)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    paths = [write(tmp_path / f"ref{i}", refs[i]) for i in range(k)]
    base = [write(tmp_path / f"base{s}", variant(refs[0], 10 + s)) for s in (1, 2)]
    system = [write(tmp_path / f"sys{s}", variant(refs[1], 20 + s)) for s in (1, 2)]
    args = ["--system", f"base={','.join(base)}", "--system", f"sys={','.join(system)}", "--out", "out",
            "--bootstrap-samples", "100", "--no-compare-mt"]
    assert cmp.main(sum((["--ref", p] for p in paths), []) + args) == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    for name, files in (("base", base), ("sys", system)):
        for seed, hyp in enumerate(files):
            bleu, chrf = json.loads(sacrebleu_cli(*paths, "-i", hyp, "-m", "bleu", "chrf", "-b", "-w", "2"))
            assert results["models"][name]["bleu"][seed] == bleu and results["models"][name]["chrf"][seed] == chrf
    assert results["signature"]["BLEU"].startswith(f"nrefs:{k}|bs:100|seed:12345|")

    def p_values(ref_files, base_hyp, hyp):
        # -f text: its default away from a terminal is JSON, which sacrebleu 2.6 cannot write for this test
        out = sacrebleu_cli(*ref_files, "-i", base_hyp, hyp, "--paired-bs", "--paired-bs-n", "100",
                            "-m", "bleu", "chrf", "-f", "text")
        return [float(x) for x in re.findall(r"\(p = ([\d.]+)\)", out)]  # BLEU's, then chrF's

    m = results["models"]["sys"]
    for seed in range(2):
        assert p_values(paths, base[seed], system[seed])[0] == round(m["seed_p_values"][seed], 4)
    # pooled: the two seed pairs as one test set of 2N sentences, each reference repeated
    pooled = [write(tmp_path / f"pooled{i}", refs[i] * 2) for i in range(k)]
    cat = lambda files, name: write(tmp_path / name, sum((open(f).read().splitlines() for f in files), []))  # noqa
    assert p_values(pooled, cat(base, "base.cat"), cat(system, "sys.cat")) == \
        [round(m["bleu_p_value"], 4), round(m["chrf_p_value"], 4)]


def test_a_sentence_without_one_of_its_references(refs, tmp_path, monkeypatch):
    """An empty field of the TSV: no reference from that column for the sentence (None to
    sacrebleu, its variable number of references), said in the table's notes."""
    monkeypatch.chdir(tmp_path)
    rows = [[a, b] for a, b in zip(refs[0], refs[1])]
    rows[5][1] = rows[9][1] = ""
    tsv = write(tmp_path / "refs.tsv", ["\t".join(r) for r in rows])
    hyp = write(tmp_path / "hyp", variant(refs[1], 3))
    assert cmp.main(["--refs-tsv", tsv, "--system", f"a={hyp}", "--out", "out", "--no-compare-mt",
                     "--bootstrap-samples", "10"]) == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    second = [r[1] or None for r in rows]
    hyps = open(hyp).read().splitlines()
    assert results["models"]["a"]["bleu"] == [round(sacrebleu.BLEU().corpus_score(hyps, [refs[0], second]).score, 2)]
    assert results["sentences_with_fewer_references"] == 2 and "nrefs:var" in results["signature"]["BLEU"]
    assert "2 sentences have fewer" in (tmp_path / "out" / "results.md").read_text()


# --- the formats that hold several references -------------------------------------------------

def escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def nist_sgml(refs, one_refset=False):
    """NIST's layout as distributed: a refset per reference (or one whose docs' sysids tell them
    apart), upper-case DOC tags, unquoted ids, <p>/<hl> around segments, a segment broken over
    two lines, escaped and raw '&' (raw where no entity follows); the second reference's documents
    in another order (matched by id, as mteval does)."""
    out = ['<srcset setid="t" srclang="zh">', '<doc docid="doc0"><seg id=1>source, not a reference</seg></doc>',
           "</srcset>"]
    if one_refset:
        out.append('<refset setid="t" srclang="zh" trglang="en">')
    for k, ref in enumerate(refs):
        if not one_refset:
            out.append(f'<refset setid="t" srclang="zh" trglang="en" refid="ref{k}">')
        docs = DOCS[::-1] if k == 1 else DOCS
        for docid, lines in docs:
            out.append(f'<DOC docid="{docid}" sysid="ref{k}" genre=nw>' + ("\n<hl>" if k == 0 else "\n<p>"))
            for j, i in enumerate(lines):
                text = escape(ref[i]).replace("R&amp;D", "R&D")  # a raw '&', as the files hold
                if j == 2:
                    text = text.replace(" ", "\n  ", 1)
                out.append(f"<seg id={j + 1}> {text} </SEG>" if k == 0 else f'<seg id="{j + 1}">{text}</seg>')
            out.append(("</hl>" if k == 0 else "</p>") + "\n</DOC>")
        if not one_refset:
            out.append("</refset>")
    if one_refset:
        out.append("</refset>")
    return "\n".join(out) + "\n"


def wmt_xml(refs, missing=None):
    """WMT's XML test set: a collection of documents, each with its source and one <ref> per
    translator; the reference segments in shuffled order (the source's ids give the order); a
    testsuite document (no references: skipped)."""
    dataset = ET.Element("dataset", id="t")
    collection = ET.SubElement(dataset, "collection", id="general")
    rng = random.Random(0)
    for docid, lines in DOCS:
        doc = ET.SubElement(collection, "doc", id=docid, origlang="zh")
        src = ET.SubElement(ET.SubElement(doc, "src", lang="zh"), "p")
        for j, _ in enumerate(lines):
            ET.SubElement(src, "seg", id=str(j + 1)).text = f"source {j}"
        for k, ref in enumerate(refs):
            if (docid, k) == missing:
                continue
            p = ET.SubElement(ET.SubElement(doc, "ref", lang="en", translator="ABCD"[k]), "p")
            order = list(enumerate(lines))
            rng.shuffle(order)
            for j, i in order:
                ET.SubElement(p, "seg", id=str(j + 1)).text = ref[i]
    suite = ET.SubElement(collection, "doc", id="suite", origlang="zh", testsuite="x")
    ET.SubElement(ET.SubElement(ET.SubElement(suite, "src", lang="zh"), "p"), "seg", id="1").text = "test"
    return ET.tostring(dataset, encoding="unicode")


@pytest.mark.parametrize("form", ["tsv", "sgml", "sgml-one-refset", "xml"])
def test_tsv_sgml_and_xml_read_as_the_plain_files(refs, tmp_path, form):
    from fairseq_mgsa.analysis.compare.refs import read_references
    expected = read_references([("plain", write(tmp_path / f"r{k}", refs[k])) for k in range(4)])
    path = tmp_path / f"refs.{form}"
    if form == "tsv":
        write(path, ["\t".join(row) for row in zip(*refs)])
    elif form.startswith("sgml"):
        path.write_text(nist_sgml(refs, one_refset=form.endswith("one-refset")), encoding="utf-8")
    else:
        path.write_text(wmt_xml(refs), encoding="utf-8")
    got = read_references([(form.split("-")[0], str(path))])
    assert [r.lines for r in got] == [r.lines for r in expected] == refs
    names = {"tsv": [f"{path} column {k + 1}" for k in range(4)], "xml": [f"{path} translator {t}" for t in "ABCD"]}
    assert [r.name for r in got] == names.get(form, [f"{path} reference ref{k}" for k in range(4)])


def test_iwslt_xml_is_the_sgml_layout(refs, tmp_path, capsys):
    """IWSLT's .xml test sets: well-formed XML in the <refset><doc><seg> layout, with the talks'
    <url>, <talkid>, <description> around the segments: --refs-sgml reads them, --refs-xml
    points there."""
    from fairseq_mgsa.analysis.compare.refs import read_references
    mteval = ET.Element("mteval")
    refset = ET.SubElement(mteval, "refset", setid="tst", srclang="zh", trglang="en", refid="ref")
    for docid, lines in DOCS:
        doc = ET.SubElement(refset, "doc", docid=docid, genre="lectures")
        ET.SubElement(doc, "url").text = "http://example.org/talk"
        ET.SubElement(doc, "talkid").text = docid
        for j, i in enumerate(lines):
            ET.SubElement(doc, "seg", id=str(j + 1)).text = f" {refs[0][i]} "
    path = tmp_path / "tst.en.xml"
    path.write_text(ET.tostring(mteval, encoding="unicode"), encoding="utf-8")
    got = read_references([("sgml", str(path))])
    assert [r.lines for r in got] == [refs[0]] and got[0].name == str(path)
    code, err = run_main(["--refs-xml", str(path), "--system", f"a={path}", "--out", str(tmp_path / "out")], capsys)
    assert (code, err) == (2, [f"mgsa-compare: error: {path}: its root element is <mteval>, not WMT's <dataset> "
                               f"(the <refset><doc><seg> layout: read it with --refs-sgml)"])


def test_an_sgml_reference_gives_the_plain_files_scores(refs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "refs.sgm").write_text(nist_sgml(refs), encoding="utf-8")
    hyp = write(tmp_path / "hyp", variant(refs[3], 5))
    plain = sum((["--ref", write(tmp_path / f"r{k}", refs[k])] for k in range(4)), [])
    for name, given in (("sgml", ["--refs-sgml", "refs.sgm"]), ("plain", plain)):
        assert cmp.main(given + ["--system", f"a={hyp}", "--out", name, "--no-compare-mt"]) == 0
    scores = [json.loads((tmp_path / name / "results.json").read_text())["models"]["a"] for name in ("sgml", "plain")]
    assert scores[0]["bleu"] == scores[1]["bleu"] and scores[0]["chrf"] == scores[1]["chrf"]


# --- bad references: one line, before any scoring ---------------------------------------------

def error_cases(refs, tmp_path):
    r0, r1 = write(tmp_path / "r0", refs[0]), write(tmp_path / "r1", refs[1][:-1])
    empty = write(tmp_path / "empty", [])
    sgml = tmp_path / "refs.sgm"
    sgml.write_text(nist_sgml(refs).replace('<DOC docid="doc2" sysid="ref3"', '<DOC docid="docX" sysid="ref3"'))
    xml = tmp_path / "refs.xml"
    xml.write_text(wmt_xml(refs, missing=("doc1", 2)))
    tsv = write(tmp_path / "refs.tsv", ["\t".join(row) for row in zip(*refs[:2])][:5] + ["only one field"])
    return {
        "shorter": (["--ref", r0, "--ref", r1],
                    f"{r1}: {N - 1} lines, but {r0} has {N} lines (every reference has one per test sentence, in the "
                    f"same order)"),
        "empty": (["--ref", r0, "--ref", empty], f"{empty}: empty (one reference a line expected)"),
        "comma": (["--ref", f"{r0},{r1}"], f"--ref {r0},{r1}: no such file; one file per --ref: --ref {r0} --ref {r1}"),
        "twice": (["--ref", r0, "--ref", r0], f"--ref {r0}: given twice (as --ref {r0}; each reference once)"),
        "sgml as --ref": (["--ref", str(sgml)], f"{sgml}: an SGML or XML file (it starts with '<srcset setid=\"t\" "
                                                f"srclang=\"zh\">'), not one reference a line: read it with --refs-sgml "
                                                f"(<refset><doc><seg>) or --refs-xml (WMT's <dataset>)"),
        "sgml document": (["--refs-sgml", str(sgml)],
                          f"{sgml} reference ref3: no document doc2, which {sgml} reference ref0 has (every reference "
                          f"translates every segment: matched by document and segment id)"),
        "xml translator": (["--refs-xml", str(xml)],
                           f"{xml}: document doc1 of collection general has no reference by translator C (the "
                           f"references: A, B, C, D; each must translate every document)"),
        "sgml as xml": (["--refs-xml", str(sgml)], f"{sgml}: line 2, column 27: not well-formed XML (invalid token) "
                                                   f"(WMT's XML test set expected; SGML is read by --refs-sgml)"),
        "tsv": (["--refs-tsv", tsv], f"{tsv}: line 6 has 1 tab-separated field, line 1 has 2 (one field per "
                                     f"reference on every line expected; an empty field where a sentence has fewer "
                                     f"references)"),
        "hypotheses": (["--ref", r0, "--ref", str(tmp_path / "r2")], None),
    }


@pytest.mark.parametrize("case", ["shorter", "empty", "comma", "twice", "sgml as --ref", "sgml document",
                                  "xml translator", "sgml as xml", "tsv", "hypotheses"])
def test_bad_references_are_one_line_before_any_scoring(refs, tmp_path, capsys, case):
    given, expected = error_cases(refs, tmp_path)[case]
    hyp = write(tmp_path / "hyp", refs[0][:-2])  # the hypotheses of another test set
    if case == "hypotheses":
        write(tmp_path / "r2", refs[2])
        expected = (f"{hyp}: {N - 2} lines, but the reference {tmp_path / 'r0'} (the first of 2 references) has {N} "
                    f"(ends at line {N - 2}; one hypothesis a line, in the reference's order, expected)")
    else:
        hyp = write(tmp_path / "hyp", refs[0])
    code, err = run_main(given + ["--system", f"a={hyp}", "--out", str(tmp_path / "out")], capsys)
    assert (code, err) == (2, [f"mgsa-compare: error: {expected}"])
    assert not (tmp_path / "out").exists()


def test_no_reference_option_is_an_argument_error(tmp_path, capsys):
    code, err = run_main(["--system", "a=x", "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and err[-1] == ("mgsa-compare: error: the references: one of --ref, --refs-tsv, --refs-sgml, "
                                     "--refs-xml is required")
