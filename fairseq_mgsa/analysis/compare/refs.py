"""The references of a test set for mgsa-compare, one or several per sentence: plain files (one
reference a line, one file per reference), a file of tab-separated references, the SGML of
NIST and WMT (`<refset><doc><seg>`, one refset or sysid per reference; also IWSLT's .xml,
which has the same layout), and WMT's XML test sets since 2021 (`<dataset><collection><doc>`
with a `<src>` and one `<ref translator=...>` per reference).

Every reference ends as one list with one entry a test sentence, in the order of the
hypotheses: a plain file's line order; for SGML and XML the documents and segments of the
first reference read, the others matched to it by document and segment id (as NIST's mteval
matches them). Lines and segments with ids are never mixed: lines say nothing of their ids.
A missing reference for one sentence (an empty field of the TSV) is None,
which sacrebleu takes as "no reference from this one" (its variable number of references).

Anything else is a CompareError: one line naming the file, where in it, and what was expected.
"""

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from .runs import CompareError, read_lines, read_utf8

KINDS = {"plain": "--ref", "tsv": "--refs-tsv", "sgml": "--refs-sgml", "xml": "--refs-xml"}
MARKUP_START = re.compile(r"\s*<(\?xml|!DOCTYPE|refset|srcset|tstset|mteval|dataset)\b", re.I)


@dataclass
class Reference:
    """One reference of the test set: `lines[i]` translates sentence i (None: none for it)."""
    name: str                          # what messages call it: the file, and which of its references
    path: str
    lines: List[Optional[str]]
    ids: Optional[List[Tuple]] = None  # (document, segment) of each line, for SGML and XML


def clean(text: str) -> str:
    """A segment's text as sacrebleu reads these files: spaces at the ends removed, every run of
    white space inside (line breaks included) one space."""
    return re.sub(r"\s+", " ", text.strip())


# --- plain and tab-separated ------------------------------------------------------------------

def read_plain(path: str) -> List[Reference]:
    lines = read_lines(path, "references, one a line")
    head = next((line for line in lines if line.strip()), "")
    if MARKUP_START.match(head):
        start = head.strip() if len(head.strip()) <= 60 else head.strip()[:60] + "..."
        raise CompareError(f"{path}: an SGML or XML file (it starts with {start!r}), not one reference a "
                           f"line: read it with --refs-sgml (<refset><doc><seg>) or --refs-xml (WMT's <dataset>)")
    if lines and all("\t" in line for line in lines):
        raise CompareError(f"{path}: every line holds a tab: several references a line? read it with --refs-tsv "
                           f"(one reference a line expected with --ref)")
    return [Reference(path, path, lines)]


def read_tsv(path: str) -> List[Reference]:
    """Every line the same number of tab-separated fields, one per reference (sacrebleu's
    --num-refs format); an empty field: no reference from that column for that sentence."""
    lines = read_lines(path, "tab-separated references, one sentence a line")
    if not lines:
        return [Reference(path, path, [])]
    width = lines[0].count("\t") + 1
    columns: List[List[Optional[str]]] = [[] for _ in range(width)]
    for number, line in enumerate(lines, 1):
        fields = line.split("\t")
        if len(fields) != width:
            raise CompareError(f"{path}: line {number} has {len(fields)} tab-separated field"
                               f"{'s' if len(fields) > 1 else ''}, line 1 has {width} (one "
                               f"field per reference on every line expected; an empty field where a sentence has "
                               f"fewer references)")
        if not any(f.strip() for f in fields):
            raise CompareError(f"{path}: line {number}: no reference (every sentence needs one at least)")
        for column, f in zip(columns, fields):
            column.append(f if f.strip() else None)
    # a column empty on every line (a tab at the end of every line) is no reference: counted, it
    # would make "5 refs" of 4 and every sentence one that "has fewer"
    kept = [(i, column) for i, column in enumerate(columns) if any(f is not None for f in column)]
    if len(kept) == 1:
        return [Reference(path, path, kept[0][1])]
    return [Reference(f"{path} column {i + 1}", path, column) for i, column in kept]


# --- NIST and WMT SGML ------------------------------------------------------------------------
# Not XML: unquoted attribute values (id=1), upper-case tags, and raw "&" or "<" inside a segment
# are all found in the distributed files, so an XML parser refuses them. The tags that carry
# the structure are found by pattern instead; a segment's text runs to its </seg>, whatever it
# holds, so only the markup around the segments need be regular.

SGML_TAG = re.compile(r"<\s*(/?)\s*(refset|srcset|tstset|doc|seg)\b((?:\"[^\"]*\"|'[^']*'|[^>\"'])*)>", re.I)
SEG_END = re.compile(r"<\s*/\s*seg\s*>", re.I)
ATTRIBUTE = re.compile(r"([\w:.-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))")
ENTITY = re.compile(r"&(?:(amp|lt|gt|quot|apos)|#(\d+)|#[xX]([0-9a-fA-F]+));")
NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


def attributes(text: str) -> dict:
    return {m.group(1).lower(): next(g for g in m.groups()[1:] if g is not None) for m in ATTRIBUTE.finditer(text)}


def unescape(text: str) -> str:
    """XML's five named entities and numeric character references; any other "&" stays as is
    (the files hold raw ones)."""
    def one(m):
        if m.group(1):
            return NAMED[m.group(1)]
        code = int(m.group(2)) if m.group(2) else int(m.group(3), 16)
        return chr(code) if 0 < code < 0x110000 else m.group(0)
    return ENTITY.sub(one, text)


class At:
    """A place in a file, "FILE: line N" in a message."""

    def __init__(self, path: str, text: str, pos: int):
        self.path, self.text, self.pos = path, text, pos

    def line(self) -> int:
        return self.text.count("\n", 0, self.pos) + 1

    def __str__(self):
        return f"{self.path}: line {self.line()}"


def read_sgml(path: str) -> List[Reference]:
    """Every reference of a `<refset><doc><seg>` file: one per refset and doc sysid (a file may
    hold one refset per reference, or one refset whose documents' sysids tell the references
    apart), each in its file order of documents and segments."""
    text = read_utf8(path, "SGML references: <refset><doc><seg id=...>")
    refs: dict = {}  # (refset number, sysid) -> (sysid, lines, ids, where each segment is)
    refset, doc, other, inside_other, count = None, None, None, False, 0
    pos = 0
    while True:
        m = SGML_TAG.search(text, pos)
        if not m:
            break
        pos = m.end()
        closing, tag, attrs = m.group(1), m.group(2).lower(), attributes(m.group(3))
        where = At(path, text, m.start())  # its line counted only for a message
        if tag in ("srcset", "tstset"):
            other, inside_other = other or tag, not closing
            continue
        if tag == "refset":
            count += not closing
            refset = None if closing else (count, attrs)
            continue
        if tag == "doc":
            doc = None if closing else attrs
            continue
        if closing:
            raise CompareError(f"{where}: </seg> without its <seg> (<seg id=...>text</seg> expected)")
        end = SEG_END.search(text, m.end())
        following = SGML_TAG.search(text, m.end())
        if not end or (following and following.start() < end.start()):
            raise CompareError(f"{where}: <seg> without its </seg> before the next tag "
                               f"(<seg id=...>text</seg> expected)")
        pos = end.end()
        if refset is None:
            if inside_other:
                continue  # a segment of the source or a system: not a reference
            raise CompareError(f"{where}: a <seg> outside any <refset> (references inside <refset> expected)")
        if doc is None or "docid" not in doc:
            raise CompareError(f"{where}: a <seg> outside a <doc docid=...> (<refset><doc docid=...><seg id=...> "
                               f"expected)")
        if "id" not in attrs:
            raise CompareError(f"{where}: <seg> without id (<seg id=...> expected: segments are matched by it)")
        sysid = doc.get("sysid") or refset[1].get("refid") or refset[1].get("sysid")
        key = (refset[0], sysid)
        refs.setdefault(key, (sysid, [], [], {}))
        _, lines, ids, seen = refs[key]
        segment = (doc["docid"], attrs["id"])
        if segment in seen:
            raise CompareError(f"{where}: document {segment[0]} has segment {segment[1]} twice (first at line "
                               f"{seen[segment].line()}; one segment per id in a reference expected)")
        seen[segment] = where
        lines.append(clean(unescape(text[m.end():end.start()])))
        ids.append(segment)
    if not refs:
        found = f" (a <{other}>: {'the source' if other == 'srcset' else 'a system output'}, " \
                f"not references)" if other else ""
        raise CompareError(f"{path}: no <refset> with segments{found} (NIST/WMT SGML references expected: "
                           f"<refset><doc docid=...><seg id=...>text</seg>)")
    return [Reference(sgml_name(path, key, refs), path, lines, ids) for key, (_, lines, ids, _) in refs.items()]


def sgml_name(path: str, key: Tuple[int, Optional[str]], refs: dict) -> str:
    """The file alone for its one reference; else its sysid, and its refset where sysids repeat."""
    if len(refs) == 1:
        return path
    number, sysid = key
    if sysid is None:
        return f"{path} refset {number}"
    if sum(k[1] == sysid for k in refs) > 1:
        return f"{path} refset {number} reference {sysid}"
    return f"{path} reference {sysid}"


# --- WMT's XML (2021 on) ----------------------------------------------------------------------

def parse_xml(path: str, what: str, expected: str):
    """The root element of the XML file `path`; UTF-8 and well-formed, or one line naming the file
    and where (expat's own message names neither file nor, in its words, what was expected)."""
    read_utf8(path, what)  # the UTF-8 check
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as e:
        line, column = e.position
        reason = str(e).split(":")[0]  # expat's words: "not well-formed (invalid token)", "junk after ..."
        reason = re.sub(r"^not well-formed \((.*)\)$", r"\1", reason)
        raise CompareError(f"{path}: line {line}, column {column + 1}: not well-formed XML ({reason}) "
                           f"({expected})") from None


def read_wmt_xml(path: str) -> List[Reference]:
    """Every translator's reference of a WMT XML test set, documents in file order (those with a
    `testsuite` attribute skipped, as sacrebleu does: they have no references), each document's
    segments in the order of its source's segment ids. Every document needs every translator's
    reference, with the source's segments."""
    root = parse_xml(path, "WMT XML references: <dataset><collection><doc><ref translator=...>",
                     "WMT's XML test set expected; SGML is read by --refs-sgml")
    if root.tag != "dataset":
        hint = " (the <refset><doc><seg> layout: read it with --refs-sgml)" \
            if root.tag in ("mteval", "refset") or root.find(".//refset") is not None else ""
        raise CompareError(f"{path}: its root element is <{root.tag}>, not WMT's <dataset>{hint}")
    translators: List[Optional[str]] = []
    docs = []
    for collection in root.findall("collection") or [root]:
        for doc in collection.findall("doc"):
            if "testsuite" in doc.attrib:
                continue
            docid = (collection.get("id"), doc.get("id"))
            by_translator = {}
            for ref in doc.findall("ref"):
                t = ref.get("translator")
                if t in by_translator:
                    raise CompareError(f"{path}: document {doc.get('id')} has two references by translator {t} "
                                       f"(one <ref> per translator expected)")
                by_translator[t] = ref
                translators += [] if t in translators else [t]
            docs.append((docid, doc, by_translator))
    if not docs:
        raise CompareError(f"{path}: no <doc> in its <collection>s (WMT's XML test set expected)")
    lines = {t: [] for t in translators}
    ids: List[Tuple] = []
    for docid, doc, by_translator in docs:
        label = f"document {docid[1]}" + (f" of collection {docid[0]}" if docid[0] else "")
        if not by_translator:
            raise CompareError(f"{path}: {label} has no <ref> (the test set with its references expected, "
                               f"not the source alone)")
        for t in translators:
            if t not in by_translator:
                raise CompareError(f"{path}: {label} has no reference by translator {t} (the references: "
                                   f"{', '.join(str(x) for x in translators)}; each must translate every document)")
        src = doc.find("src")
        order = segment_ids(path, label, "source", src) if src is not None else None
        segs = {t: segments(path, label, f"translator {t}'s reference", by_translator[t]) for t in translators}
        if order is None:
            order = sorted(segs[translators[0]], key=seg_key)
        for t in translators:
            missing = [s for s in order if s not in segs[t]]
            extra = [s for s in segs[t] if s not in order]
            if missing or extra:
                what = f"lacks segment {missing[0]}" if missing else f"has segment {extra[0]}, which its source lacks"
                raise CompareError(f"{path}: {label}: translator {t}'s reference {what} (one reference segment per "
                                   f"source segment expected, ids {order[0]}..{order[-1]})")
            lines[t] += [segs[t][s] for s in order]
        ids += [(docid, s) for s in order]
    return [Reference(f"{path} translator {t}" if t else path, path, lines[t], ids) for t in translators]


def seg_key(segment_id: str):
    """Numeric ids in numeric order (as sacrebleu sorts them), any others after, as text."""
    return (0, int(segment_id), "") if segment_id.isdigit() else (1, 0, segment_id)


def segment_ids(path: str, label: str, what: str, element) -> List[str]:
    return sorted(segments(path, label, what, element), key=seg_key)


def segments(path: str, label: str, what: str, element) -> dict:
    out = {}
    for seg in element.iter("seg"):
        i = seg.get("id")
        if i is None or i in out:
            raise CompareError(f"{path}: {label}: {what} has a <seg> " + ("without id" if i is None else
                               f"id {i} twice") + " (<seg id=...>, one per id, expected)")
        out[i] = clean("".join(seg.itertext()))
    return out


# --- all of them ------------------------------------------------------------------------------

READERS = {"plain": read_plain, "tsv": read_tsv, "sgml": read_sgml, "xml": read_wmt_xml}


def align(references: List[Reference]) -> None:
    """The references with segment ids (SGML, XML) in the order of the first of them, matched by
    (document, segment): every one must have exactly its segments."""
    marked = [r for r in references if r.ids is not None]
    if len(marked) < 2:
        return
    first = marked[0]
    docs, segments_of_first = {d for d, _ in first.ids}, set(first.ids)
    for r in marked[1:]:
        where = dict(zip(r.ids, range(len(r.ids))))
        for segment in first.ids:
            if segment not in where:
                what = f"no document {segment[0]}" if segment[0] not in {d for d, _ in r.ids} else \
                    f"no segment {segment[1]} in document {segment[0]}"
                raise CompareError(f"{r.name}: {what}, which {first.name} has (every reference translates every "
                                   f"segment: matched by document and segment id)")
        extra = next((s for s in r.ids if s not in segments_of_first), None)
        if extra is not None:
            what = f"document {extra[0]}" if extra[0] not in docs else f"segment {extra[1]} of document {extra[0]}"
            raise CompareError(f"{r.name}: has {what}, which {first.name} lacks (every reference translates the same "
                               f"segments: matched by document and segment id)")
        r.lines = [r.lines[where[s]] for s in first.ids]
        r.ids = list(first.ids)


def refuse_unmatched_mix(references: List[Reference]) -> None:
    """Lines (--ref, --refs-tsv) and segments with ids (--refs-sgml, --refs-xml) cannot be put in
    one order: a plain file says nothing of which document and segment each line is, and an SGML
    file's documents need not be in the order the plain file follows (read in file order, the
    two were silently misaligned: BLEU 29 instead of 67)."""
    plain = next((r for r in references if r.ids is None), None)
    marked = next((r for r in references if r.ids is not None), None)
    if plain is not None and marked is not None:
        raise CompareError(f"{plain.name}: one reference a line, without the document and segment ids that "
                           f"{marked.name} is matched by, so the two cannot be aligned (its documents may be in "
                           f"another order); give every reference in one form: all as --refs-sgml/--refs-xml, or "
                           f"all as lines in one order (examples/common/test_set_text.py writes them from SGML or "
                           f"XML, with the source in their order)")


def read_references(specs: Sequence[Tuple[str, str]]) -> List[Reference]:
    """(kind, path) as given on the command line -> the references, in that order, each with one
    entry per test sentence; an empty reference, a file given twice, or references of different
    lengths are refused."""
    if not specs:
        raise CompareError("no references: --ref FILE (repeat it for each), --refs-tsv, --refs-sgml or --refs-xml")
    given = {}
    for kind, path in specs:
        key = os.path.realpath(path)
        if key in given:
            raise CompareError(f"{KINDS[kind]} {path}: given twice (as {given[key]}; each reference once)")
        given[key] = f"{KINDS[kind]} {path}"
        if kind == "plain" and "," in path and not os.path.exists(path):
            parts = path.split(",")
            if all(os.path.isfile(p) for p in parts):
                raise CompareError(f"--ref {path}: no such file; one file per --ref: --ref " + " --ref ".join(parts))
    references = [r for kind, path in specs for r in READERS[kind](path)]
    refuse_unmatched_mix(references)
    for r in references:
        if not r.lines:
            raise CompareError(f"{r.name}: empty (one reference a line expected)" if r.ids is None else
                               f"{r.name}: no segments (reference segments expected)")
    align(references)
    first = references[0]
    for r in references[1:]:
        if len(r.lines) != len(first.lines):
            unit = lambda x: "segments" if x.ids is not None else "lines"  # noqa: E731
            raise CompareError(f"{r.name}: {len(r.lines)} {unit(r)}, but {first.name} has {len(first.lines)} "
                               f"{unit(first)} (every reference has one per test sentence, in the same order)")
    return references


def label(references: List[Reference]) -> str:
    """What the hypotheses' messages call the references: the file of one, the first of several."""
    if len(references) == 1:
        return references[0].name
    return f"{references[0].name} (the first of {len(references)} references)"


def one_for_each(streams: List[List[Optional[str]]]) -> Tuple[List[str], int]:
    """For an analysis that takes one reference: the first reference, and where a sentence has
    none from it, its first one; (the lines, how many sentences took another than the first)."""
    lines = [next((r for r in refs if r is not None), "") for refs in zip(*streams)]
    return lines, sum(s is None for s in streams[0])
