"""mgsa-compare's references in one order (issue 51 items 1 and 2): plain lines are never
scored against SGML segments in another document order (the mix is refused), SGML references
in different document orders score as sacrebleu scores the aligned references, and a TSV with a
tab at the end of every line has as many references as it has filled columns."""

import json

import sacrebleu

from fairseq_mgsa.analysis import compare as cmp

from .test_compare_refs import DOCS, escape, refs, run_main, variant, write  # noqa: F401 (refs: a fixture)


def sgml(references, orders):
    """One <refset> per reference, its documents in the order given (indices into DOCS)."""
    out = ["<mteval>"]
    for k, (ref, order) in enumerate(zip(references, orders)):
        out.append(f'<refset setid="t" srclang="zh" trglang="en" refid="ref{k}">')
        for d in order:
            docid, lines = DOCS[d]
            out.append(f'<doc docid="{docid}" sysid="ref{k}">')
            out += [f'<seg id="{j + 1}">{escape(ref[i])}</seg>' for j, i in enumerate(lines)]
            out.append("</doc>")
        out.append("</refset>")
    return "\n".join(out + ["</mteval>"]) + "\n"


def bleu_of(tmp_path):
    return json.loads((tmp_path / "out" / "results.json").read_text())


def test_plain_and_sgml_references_are_not_mixed(refs, tmp_path, capsys):
    """r0 one a line in document order 0,1,2; the SGML's references with their documents in the
    order 2,0,1: the plain lines carry no ids to match them by (on main: read in file order,
    misaligned, exit 0)."""
    r0 = write(tmp_path / "r0.txt", refs[0])
    path = tmp_path / "refs.sgm"
    path.write_text(sgml(refs[1:], [[2, 0, 1]] * 3), encoding="utf-8")
    hyp = write(tmp_path / "hyp", variant(refs[0], 5))
    for given, plain, marked in ((["--ref", r0, "--refs-sgml", str(path)], r0, f"{path} reference ref0"),
                                 (["--refs-sgml", str(path), "--ref", r0], r0, f"{path} reference ref0")):
        code, err = run_main(given + ["--system", f"a={hyp}", "--out", str(tmp_path / "out"), "--no-compare-mt"],
                             capsys)
        assert code == 2 and len(err) == 1, err
        assert err[0].startswith(f"mgsa-compare: error: {plain}: one reference a line, without the document and "
                                 f"segment ids that {marked} is matched by, so the two cannot be aligned")
        assert not (tmp_path / "out").exists()


def test_sgml_references_in_other_document_orders_score_as_the_aligned_ones(refs, tmp_path, monkeypatch):
    """Four SGML references, each listing the documents in another order: the hypotheses follow
    the first's order (2,0,1), and BLEU and chrF are sacrebleu's on the references aligned to it."""
    monkeypatch.chdir(tmp_path)
    orders = [[2, 0, 1], [0, 1, 2], [1, 2, 0], [2, 1, 0]]
    (tmp_path / "refs.sgm").write_text(sgml(refs, orders), encoding="utf-8")
    sentence_order = [i for d in orders[0] for i in DOCS[d][1]]
    aligned = [[ref[i] for i in sentence_order] for ref in refs]
    hyps = variant(aligned[3], 5)  # closest to the reference whose documents are in the order 2,1,0
    hyp = write(tmp_path / "hyp", hyps)
    assert cmp.main(["--refs-sgml", "refs.sgm", "--system", f"a={hyp}", "--out", "out", "--no-compare-mt",
                     "--bootstrap-samples", "10"]) == 0
    results = bleu_of(tmp_path)
    assert results["models"]["a"]["bleu"] == [round(sacrebleu.corpus_bleu(hyps, aligned).score, 2)]
    assert results["models"]["a"]["chrf"] == [round(sacrebleu.corpus_chrf(hyps, aligned).score, 2)]
    # and not the score of each reference taken in its own file order
    as_in_files = [[ref[i] for d in order for i in DOCS[d][1]] for ref, order in zip(refs, orders)]
    assert results["models"]["a"]["bleu"][0] > sacrebleu.corpus_bleu(hyps, as_in_files).score + 10


def test_a_tab_at_the_end_of_every_tsv_line_is_no_reference(refs, tmp_path, monkeypatch):
    """Four references, every line ending in a tab: 4 references, none missing, sacrebleu's BLEU
    and chrF with the four (on main: "BLEU (5 refs)", n_refs 5, every sentence "has fewer")."""
    monkeypatch.chdir(tmp_path)
    tsv = write(tmp_path / "refs.tsv", ["\t".join(row) + "\t" for row in zip(*refs)])
    hyps = variant(refs[2], 8)
    hyp = write(tmp_path / "hyp", hyps)
    assert cmp.main(["--refs-tsv", tsv, "--system", f"a={hyp}", "--out", "out", "--no-compare-mt",
                     "--bootstrap-samples", "10"]) == 0
    results = bleu_of(tmp_path)
    assert results["n_refs"] == 4 and results["sentences_with_fewer_references"] == 0
    assert results["references"] == [f"{tsv} column {k}" for k in (1, 2, 3, 4)]
    assert results["signature"]["BLEU"].startswith("nrefs:4|")
    assert results["models"]["a"]["bleu"] == [round(sacrebleu.corpus_bleu(hyps, refs).score, 2)]
    assert results["models"]["a"]["chrf"] == [round(sacrebleu.corpus_chrf(hyps, refs).score, 2)]
    md = (tmp_path / "out" / "results.md").read_text()
    assert "BLEU (4 refs)" in md and "have fewer" not in md
