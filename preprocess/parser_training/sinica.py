"""The Sinica Treebank (NLTK's 10,000-tree sample, Information-based Case Grammar) as bracketed trees.

    python -m mgsa_preprocess.parser_training.sinica sinica_treebank/parsed --out sinica.tree [--report r.json]

One ICG tree a line, after an identifier, with the clause's final punctuation after ``#``:

    #4:4.[39030] S(theme:NP(Head:Nhaa:我們)|Head:V_11:是|range:NP(Head:Nab:鄰居))#，(COMMACATEGORY)

becomes (the words in Simplified characters, the tags reduced as below)

    (ROOT (S (NP (Nh 我们)) (SHI 是) (NP (Na 邻居)) (COMMACATEGORY ，)))

* Role labels (theme, Head, range, agent, DUMMY1, ...) are dropped: a bracketed tree has one label
  a node, and the phrase pipeline reads the phrase category, never the role.
* The punctuation after ``#`` becomes the clause's last word, tagged by its category
  (COMMACATEGORY, PERIODCATEGORY, ...; CKIP's own tags for punctuation), inside the top
  constituent, as the Penn treebanks keep a sentence's final mark inside its S (or IP): the
  mark then belongs to the clause's last phrase at no level, and the text the pipeline segments
  has the mark where the tree has it. A tree without a mark after ``#`` (11 of the sample's) gets none.
* Words: OpenCC's Traditional-to-Simplified conversion (``t2s``), word by word, so Sinica's
  segmentation is kept (the pipeline re-segments text with jieba: segment_check.py measures
  how often the two differ).
* POS tags (``--tags simplified``, the default): CKIP's fine tags (215 in the sample: Nab, VC31,
  P21, Dbb, VA4[+ASP], ...) reduced to the simplified CKIP tagset (about 45: Na, VC, P, D, ...;
  ``simplify_tag``), with the ``[+...]`` features dropped; ``--tags fine`` keeps them (features still
  dropped). A phrase category that is itself a word class (ICG writes coordinated words as
  ``Nab(DUMMY1:Nab:貓|Head:Caa:和|DUMMY2:Nab:狗)``) is reduced the same way.
* Phrase categories keep ICG's names (S, VP, NP, PP, GP, DM, and the DE phrases ``NP‧的``,
  ``VP‧地``, ``得‧VP`` ...): docs/preprocessing.md sets them beside CTB's labels.

Repairs, counted in the report: a leaf with two roles (``head:Head:Nac:鵝掌形``, 2 in the sample)
loses the extra one. Anything else that does not parse is an error naming the file and line.
"""

import argparse
import json
import os
import re
import sys
from collections import Counter
from typing import List, NamedTuple, Optional, Tuple

from ..errors import PreprocessError
from ..text_files import lines

_HEADER = re.compile(r"#[^\s\[]*\[[^\]]*\]\s")  # "#4:4.[39030] ", "#2:.[44369] ", "#2321:1001.1.[2364] "
_TAIL = re.compile(r"\s*(\S*?)\s*\(([A-Z]+CATEGORY)\)\s*$")  # "，(COMMACATEGORY)", " 。(PERIODCATEGORY)"
_SUBCLASS = re.compile(r"[a-z0-9]*")
_FEATURES = re.compile(r"\[[^\]}]*[\]}]")  # VA4[+ASP], Caa[P2], and the sample's one Caa[P2}

# fine CKIP tag prefix -> simplified tag, longest prefix first (CKIP's technical report 93-05's
# reduction of its tagset for the Sinica Corpus; V_11/V_12 是 is SHI, V_2 有 stays V_2)
_SIMPLE = [("V_1", "SHI"), ("V_2", "V_2"), ("Ncd", "Ncd"), ("Neqa", "Neqa"), ("Neqb", "Neqb"), ("Neu", "Neu"),
           ("Nes", "Nes"), ("Nep", "Nep"), ("Ng", "Ng"), ("Dfa", "Dfa"), ("Dfb", "Dfb"), ("Di", "Di"), ("Dk", "Dk"),
           ("Da", "Da"), ("DE", "DE"), ("DM", "DM"), ("Caa", "Caa"), ("Cab", "Cab"), ("Cb", "Cbb"),
           ("Na", "Na"), ("Nb", "Nb"), ("Nc", "Nc"), ("Nd", "Nd"), ("Nf", "Nf"), ("Nh", "Nh"), ("Nv", "Nv"),
           ("D", "D"), ("VA", "VA"), ("VB", "VB"), ("VC", "VC"), ("VD", "VD"), ("VE", "VE"), ("VF", "VF"),
           ("VG", "VG"), ("VH", "VH"), ("VI", "VI"), ("VJ", "VJ"), ("VK", "VK"), ("VL", "VL"), ("P", "P"), ("T", "T")]


def simplify_tag(tag: str) -> str:
    """CKIP's fine tag -> the simplified tagset (unknown tags unchanged): Nab -> Na, VC31 -> VC,
    P21 -> P, Dbb -> D, V_11 -> SHI, Ncda -> Ncd. Phrase categories (S, NP, N, V, ADV, ...) and
    tags outside the table (A, I, Str, ...) come back unchanged."""
    for prefix, simple in _SIMPLE:
        # what follows the prefix is a sub-class: lower-case letters and digits (Nab, VC31, Dbaa, V_11)
        if tag.startswith(prefix) and _SUBCLASS.fullmatch(tag, len(prefix)):
            return simple
    return tag


class Converted(NamedTuple):
    tree: str  # one line, (ROOT ...)
    words: List[str]
    line: int


class _Reader:
    """Recursive descent over one ICG tree: node := [role ':'] (category '(' node ('|' node)* ')' | tag ':' word)."""

    def __init__(self, text: str, path: str, line: int, tags: str, t2s, counts: Counter):
        self.s, self.i, self.path, self.line = text, 0, path, line
        self.tags, self.t2s, self.counts = tags, t2s, counts

    def fail(self, what: str):
        shown = self.s[max(0, self.i - 20):self.i + 20]
        raise PreprocessError(f"Sinica (ICG) tree: {what} at character {self.i + 1} (...{shown}...)",
                              self.path, self.line)

    def name(self) -> str:
        j = self.i
        while j < len(self.s) and self.s[j] not in ":()|":
            j += 1
        out, self.i = self.s[self.i:j], j
        return out

    def label(self, raw: str) -> str:
        raw = _FEATURES.sub("", raw).strip()
        if not raw:
            self.fail("empty label")
        if self.tags == "simplified":
            raw = simplify_tag(raw)
        return raw.replace(" ", "_")

    def node(self, top: bool):
        """A node as (label, children) or (tag, word)."""
        first = self.name()
        if self.i >= len(self.s):
            self.fail("tree ends early")
        if not top:  # every child carries a role: drop it
            if self.s[self.i] != ":":
                self.fail(f"expected role:category after {first!r}")
            self.i += 1
            first = self.name()
        if self.i >= len(self.s):
            self.fail("tree ends early")
        if self.s[self.i] == "(":
            self.i += 1
            children = [self.node(False)]
            while self.i < len(self.s) and self.s[self.i] == "|":
                self.i += 1
                children.append(self.node(False))
            if self.i >= len(self.s) or self.s[self.i] != ")":
                self.fail("expected '|' or ')'")
            self.i += 1
            return self.label(first), children
        if self.s[self.i] != ":":
            self.fail(f"expected '(' or ':' after {first!r}")
        self.i += 1
        j = self.i
        while j < len(self.s) and self.s[j] not in "|)":
            j += 1
        word, self.i = self.s[self.i:j], j
        tag = first
        while ":" in word:  # head:Head:Nac:鵝掌形: a second role before the tag
            tag, word = word.split(":", 1)
            self.counts["doubled_roles_dropped"] += 1
        if not word.strip():
            self.fail("empty word")
        return self.label(tag), self.t2s(word.strip())


def _bracket(node, words: List[str]) -> str:
    label, rest = node
    if isinstance(rest, str):
        words.append(rest)
        return f"({label} {_escape(rest)})"
    return f"({label} " + " ".join(_bracket(c, words) for c in rest) + ")"


def _escape(word: str) -> str:
    # a leaf may not hold a bracket or a space in a bracketed tree; stanza's writer escapes
    # brackets the same way, and mgsa-preprocess undoes both (preprocess/trees.py)
    return word.replace("(", "-LRB-").replace(")", "-RRB-").replace(" ", "_")


def converter(script: str = "t2s"):
    """Word -> word in the target script: OpenCC's t2s, or unchanged for script 'keep'."""
    if script == "keep":
        return lambda w: w
    try:
        from opencc import OpenCC
    except ImportError:
        raise PreprocessError("Traditional-to-Simplified conversion needs opencc-python-reimplemented "
                              "(pip install opencc-python-reimplemented), or --script keep") from None
    cc = OpenCC(script)
    return cc.convert


def convert_line(text: str, path: str, line: int, tags: str, t2s, counts: Counter) -> Optional[Converted]:
    """One line of the ICG file as a bracketed tree (None for a blank line)."""
    text = text.strip()
    if not text:
        return None
    m = _HEADER.match(text)
    if not m:
        raise PreprocessError(f"expected a Sinica (ICG) tree line, '#ID:N.[N] TREE#PUNCT', got {text[:40]!r}",
                              path, line)
    body = text[m.end():]
    cut = body.rfind("#")
    if cut < 0:
        raise PreprocessError("no '#' after the tree (the clause's end mark)", path, line)
    tree, tail = body[:cut], body[cut + 1:]
    punct = None
    if tail.strip():
        t = _TAIL.fullmatch(tail)
        if not t or not t.group(1):
            raise PreprocessError(f"expected a punctuation mark and its (...CATEGORY) after '#', got {tail[:30]!r}",
                                  path, line)
        punct = (t.group(2), t2s(t.group(1)))
    else:
        counts["trees_without_final_mark"] += 1
    reader = _Reader(tree, path, line, tags, t2s, counts)
    top = reader.node(True)
    if reader.i != len(tree):
        reader.fail("text after the tree")
    if punct is not None:
        if isinstance(top[1], str):  # a one-word clause: category over the tag
            top = (top[0], [top])
        top = (top[0], list(top[1]) + [punct])
        counts["final_marks_attached"] += 1
    words: List[str] = []
    out = f"(ROOT {_bracket(top, words)})"
    counts["trees"] += 1
    return Converted(out, words, line)


def read_sinica(path: str, tags: str = "simplified", script: str = "t2s") -> Tuple[List[Converted], dict]:
    """Every tree of an ICG file, converted; and counts of what the conversion did."""
    t2s = converter(script)
    counts: Counter = Counter()
    out = []
    for n, text in lines(path, "the Sinica treebank"):
        c = convert_line(text, path, n, tags, t2s, counts)
        if c is not None:
            out.append(c)
    if not out:
        raise PreprocessError("no tree in this file", path)
    counts["words"] = sum(len(c.words) for c in out)
    report = dict(sorted(counts.items()), tags=tags, script=script,
                  roles_dropped="every node's role label (theme, Head, agent, DUMMY1, ...)")
    return out, report


def output_problem(treebank: str, out: str, report: Optional[str]) -> Optional[str]:
    """What is wrong with --out or --report, checked before the treebank is read: a folder, the
    treebank itself (which writing would overwrite), or one file given for both; None if nothing."""
    outputs = [("--out", out)] + ([("--report", report)] if report else [])
    for option, path in outputs:
        if os.path.isdir(path):
            return f"{path}: {option} is a folder; give the name of the file to write"
        if os.path.abspath(path) == os.path.abspath(treebank) or (
                os.path.exists(path) and os.path.exists(treebank) and os.path.samefile(path, treebank)):
            return f"{path}: {option} is the treebank itself; writing there would overwrite it"
    if report and os.path.abspath(report) == os.path.abspath(out):
        return f"{out}: --out and --report name the same file"
    return None


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m mgsa_preprocess.parser_training.sinica",
                                description="Convert the Sinica Treebank (ICG format, NLTK's sample) into bracketed "
                                            "trees, one a line, words in Simplified characters.")
    p.add_argument("treebank", help="the ICG file (NLTK's sinica_treebank/parsed)")
    p.add_argument("--out", required=True, help="bracketed trees, one a line")
    p.add_argument("--tags", choices=("simplified", "fine"), default="simplified",
                   help="POS tags: CKIP's simplified tagset (default) or its fine tags")
    p.add_argument("--script", choices=("t2s", "keep"), default="t2s",
                   help="words: Traditional to Simplified (OpenCC t2s, default) or unchanged")
    p.add_argument("--report", help="write the conversion's counts here (JSON)")
    a = p.parse_args(argv)
    problem = output_problem(a.treebank, a.out, a.report)
    if problem:
        sys.exit(f"sinica: error: {problem}")
    try:
        trees, report = read_sinica(a.treebank, a.tags, a.script)
    except PreprocessError as e:
        sys.exit(f"sinica: error: {e}")
    with open(a.out, "w", encoding="utf-8") as f:
        f.writelines(t.tree + "\n" for t in trees)
    if a.report:
        with open(a.report, "w") as f:
            json.dump(report, f, indent=2, ensure_ascii=False)
    print(f"{a.treebank}: {report['trees']} trees, {report['words']} words -> {a.out} ({json.dumps(report, ensure_ascii=False)})")


if __name__ == "__main__":
    main()
