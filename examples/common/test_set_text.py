"""A test set's source and references as plain text, one segment a line, for a recipe's RAW_DIR:
NIST's MT02-MT06 (SGML, or the XML LDC later distributed, four references each), WMT's SGML
(until 2020) and XML (since 2021), and IWSLT's .xml files (the same layout as the SGML).

    python examples/common/test_set_text.py --src SRC.sgm --refs REF.sgm [REF2.sgm ...] \\
        --out RAW_DIR/mt03 --src-lang zh --tgt-lang en

writes RAW_DIR/mt03.zh (the source), RAW_DIR/mt03.en (the first reference) and, for a test set
with several, RAW_DIR/mt03.en.ref1, .ref2, ... (the recipes score with every one of them:
examples/common/system_steps.sh). The references are read as mgsa-compare reads them
(fairseq_mgsa/analysis/compare/refs.py: every refset, and every document sysid within one, is a
reference; WMT's XML: one per translator), and may come in one file or in several. A file that
holds a source set only (`<srcset>`), as IWSLT's test archives give the English of the talks
whose Chinese is the source, counts as one reference. The order is the first reference's
documents and segments; the source and every other reference are matched to it by document and
segment id (as NIST's mteval matches them), so a file that lists its documents in another order
is still aligned. A segment's text: entities decoded, white space collapsed (as sacrebleu reads
these files). Anything missing or extra is one line naming the file and the segment. References
one a line (no ids) are not mixed with SGML or XML ones: nothing says which segment a line is.

Every file is read as UTF-8. A Chinese file in GBK/GB2312/GB18030 or Big5 (or one in UTF-16) is
refused with the command that converts it (`iconv -f gb18030 -t utf-8`, `iconv -f big5 -t utf-8`),
the encoding told from its bytes: converting it as Latin-1 would give mojibake every later step
accepts.
"""

import argparse
import importlib.util
import os
import re
import sys
import types


def compare_modules():
    """mgsa-compare's readers (refs.py, runs.py) without importing the fairseq_mgsa package, whose
    import loads fairseq (3 s a call here): a stand-in parent package over the same folder."""
    found = importlib.util.find_spec("fairseq_mgsa")  # locates, does not import
    if found is None or not found.origin:
        sys.exit("test_set_text.py: error: the fairseq_mgsa package is not installed (bash scripts/install.sh)")
    folder = os.path.join(os.path.dirname(found.origin), "analysis", "compare")
    package = types.ModuleType("_mgsa_compare")
    package.__path__ = [folder]
    sys.modules["_mgsa_compare"] = package
    modules = []
    for name in ("trainlog", "runs", "refs"):
        spec = importlib.util.spec_from_file_location(f"_mgsa_compare.{name}", os.path.join(folder, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        modules.append(module)
    return modules[1], modules[2]


runs, R = compare_modules()
CompareError, read_lines, read_utf8 = runs.CompareError, runs.read_lines, runs.read_utf8


def kind_of(path):
    """wmt-xml (<dataset>), sgml (<refset>/<srcset>/... in NIST's, WMT's or IWSLT's layout) or plain."""
    head = read_utf8(path, "a test set (SGML, XML or one segment a line)")[:2000]
    if re.search(r"<\s*dataset\b", head, re.I):
        return "wmt-xml"
    if R.MARKUP_START.match(head) or re.search(r"<\s*(refset|srcset|tstset)\b", head, re.I):
        return "sgml"
    return "plain"


def read_sets(path, wanted):
    """The segments of every <srcset>/<refset>/<tstset> in `wanted` of an SGML file: a list of
    (set number, [(docid, segid)], [text]) in file order."""
    text = read_utf8(path, "SGML: <srcset><doc docid=...><seg id=...>")
    sets, current, doc, pos, count = [], None, None, 0, 0
    while True:
        m = R.SGML_TAG.search(text, pos)
        if not m:
            break
        pos = m.end()
        closing, tag, attrs = m.group(1), m.group(2).lower(), R.attributes(m.group(3))
        if tag in ("srcset", "refset", "tstset"):
            count += not closing
            current = None if closing or tag not in wanted else (count, [], [], {})
            if current is not None:
                sets.append(current)
            continue
        if tag == "doc":
            doc = None if closing else attrs
            continue
        end = R.SEG_END.search(text, m.end())
        if closing or not end:
            raise CompareError(f"{R.At(path, text, m.start())}: <seg> without its </seg> (<seg id=...>text</seg> expected)")
        pos = end.end()
        if current is None:
            continue
        where = R.At(path, text, m.start())
        if doc is None or "docid" not in doc or "id" not in attrs:
            raise CompareError(f"{where}: a <seg id=...> inside a <doc docid=...> expected")
        segment = (doc["docid"], attrs["id"])
        if segment in current[3]:
            raise CompareError(f"{where}: document {segment[0]} has segment {segment[1]} twice")
        current[3][segment] = True
        current[1].append(segment)
        current[2].append(R.clean(R.unescape(text[m.end():end.start()])))
    return [(number, ids, lines) for number, ids, lines, _ in sets]


def read_source(path):
    """(ids or None, lines) of the source: an SGML <srcset>, a WMT XML's <src>, or plain lines."""
    kind = kind_of(path)
    if kind == "plain":
        return None, read_lines(path, "the source, one segment a line")
    if kind == "sgml":
        sets = read_sets(path, ("srcset",))
        if len(sets) != 1:
            raise CompareError(f"{path}: {len(sets)} <srcset>s (the source: one <srcset> expected)")
        return sets[0][1], sets[0][2]
    root = R.parse_xml(path, "WMT's XML test set: <dataset><collection><doc><src>", "WMT's XML test set expected")
    ids, lines = [], []
    for collection in root.findall("collection") or [root]:
        for doc in collection.findall("doc"):
            if "testsuite" in doc.attrib:
                continue  # as the references are read: no references there
            src = doc.find("src")
            if src is None:
                raise CompareError(f"{path}: document {doc.get('id')} has no <src> (WMT's XML test set expected)")
            segs = R.segments(path, f"document {doc.get('id')}", "the source", src)
            for s in sorted(segs, key=R.seg_key):
                ids.append(((collection.get("id"), doc.get("id")), s))
                lines.append(segs[s])
    return ids, lines


def read_refs(paths):
    """The references of every file, in order, as mgsa-compare reads them (a file holding a source
    set only: one reference), aligned to the first by document and segment id."""
    references = []
    for path in paths:
        kind = kind_of(path)
        if kind == "wmt-xml":
            references += R.read_wmt_xml(path)
        elif kind == "plain":
            references += R.read_plain(path)
        elif re.search(r"<\s*refset\b", read_utf8(path, "SGML references"), re.I):
            # read_sgml, not read_sets: one <refset> may hold every reference, told apart by each
            # document's sysid, so (document, segment) repeats within it
            references += R.read_sgml(path)
        else:
            sets = read_sets(path, ("srcset",))
            if len(sets) != 1:
                raise CompareError(f"{path}: no <refset>, and {len(sets)} <srcset>s (references, or the target "
                                   f"side of a parallel test set as one <srcset>, expected)")
            references.append(R.Reference(path, path, sets[0][2], sets[0][1]))
    R.refuse_unmatched_mix(references)  # a plain file's lines cannot be matched to SGML/XML segments
    R.align(references)
    first = references[0]
    for r in references[1:]:
        if len(r.lines) != len(first.lines):
            raise CompareError(f"{r.name}: {len(r.lines)} segments, but {first.name} has {len(first.lines)}")
    return references


def aligned_source(ids, lines, path, first):
    """The source in the order of the first reference."""
    if ids is None or first.ids is None:
        if len(lines) != len(first.lines):
            raise CompareError(f"{path}: {len(lines)} segments, but the reference {first.name} has "
                               f"{len(first.lines)} (one source segment per reference segment expected)")
        return lines
    by_id = dict(zip(ids, lines))
    for segment in first.ids:
        if segment not in by_id:
            doc = segment[0][1] if isinstance(segment[0], tuple) else segment[0]
            raise CompareError(f"{path}: no segment {segment[1]} of document {doc}, which {first.name} has (the "
                               f"source of the references' documents expected)")
    extra = next((s for s in ids if s not in set(first.ids)), None)
    if extra is not None:
        doc = extra[0][1] if isinstance(extra[0], tuple) else extra[0]
        raise CompareError(f"{path}: segment {extra[1]} of document {doc} has no reference in {first.name}")
    return [by_id[s] for s in first.ids]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", required=True, help="the source: SGML (<srcset>), WMT's XML, or one segment a line")
    p.add_argument("--refs", required=True, nargs="+", help="the references: one or several files, any of the forms")
    p.add_argument("--out", required=True, help="the prefix of the files written: OUT.SRC_LANG, OUT.TGT_LANG, OUT.TGT_LANG.refN")
    p.add_argument("--src-lang", required=True)
    p.add_argument("--tgt-lang", required=True)
    a = p.parse_args(argv)
    try:
        for path in [a.src] + a.refs:
            if not os.path.isfile(path):
                raise CompareError(f"{path}: no such file")
        references = read_refs(a.refs)
        ids, lines = read_source(a.src)
        source = aligned_source(ids, lines, a.src, references[0])
    except CompareError as e:
        sys.exit(f"test_set_text.py: error: {e}")
    outputs = [(f"{a.out}.{a.src_lang}", source)]
    outputs += [(f"{a.out}.{a.tgt_lang}" + (f".ref{i}" if i else ""), r.lines) for i, r in enumerate(references)]
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    stale = 1  # further references left by an earlier run with more of them would be read as this test set's
    while os.path.exists(f"{a.out}.{a.tgt_lang}.ref{len(references) - 1 + stale}"):
        os.remove(f"{a.out}.{a.tgt_lang}.ref{len(references) - 1 + stale}")
        stale += 1
    for path, text in outputs:
        with open(path + ".partial", "w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in text)
        os.replace(path + ".partial", path)
    print(f"test_set_text.py: {a.out}: {len(source)} segments, {len(references)} reference"
          f"{'s' if len(references) > 1 else ''} ({', '.join(r.name for r in references)})", file=sys.stderr)


if __name__ == "__main__":
    main()
