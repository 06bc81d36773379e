"""The Penn Chinese Treebank's files as distributed: bracketed trees inside SGML wrappers.

    <DOC>
    <DOCID>CHTB_0001.nw</DOCID>
    <HEADER> <DATE> 1998-01-02 </DATE> </HEADER>
    <BODY> <TEXT> <P>
    <S ID=1>
    ( (IP-HLN (NP-SBJ ...) (VP ...)) )
    </S>
    ...

`strip_sgml` gives the file's lines back with the markup outside the trees removed, one line out
for each line in (so errors still name the file's own lines): every tag at bracket depth 0
(<DOC>, <S ID=1>, </P>, ...), and the text of metadata elements (any element other than those a
tree stands in: S, SEG), such as DOCID, DATE, SPEAKER. Text outside the trees anywhere else stays,
for the tree reader to stop on with the line's number. Inside a tree nothing is touched: a word
such as `<` or `>` is a word. The trees are then normalised as every treebank is
(preprocess/trees.py: -NONE- elements and their traces removed, function tags and indices
stripped: IP-HLN -> IP, NP-SBJ-1 -> NP; the unlabeled outer bracket removed).

CTB 5.1's files are GB2312, later releases' UTF-8: a file that is not UTF-8 is an error that
says how to convert it.
"""

import re

from ..errors import PreprocessError
from ..text_files import lines

_PIECES = re.compile(r"<[^<>()]*>|\(|\)|[^<()]+|<")
_TAG = re.compile(r"<\s*(/?)\s*([A-Za-z_][\w.-]*)[^<>]*?(/?)\s*>")
TREE_ELEMENTS = frozenset(("S", "SEG"))  # the elements a tree stands in (text there must be a tree)


def strip_sgml(path: str, counts: dict):
    """The lines of a CTB file with its SGML markup outside the trees blanked; `counts` gets
    sgml_tags_removed and metadata_lines_removed."""
    counts.setdefault("sgml_tags_removed", 0)
    counts.setdefault("metadata_lines_removed", 0)
    depth = 0
    open_elements = []
    try:
        for n, line in lines(path, "the treebank"):
            out = []
            dropped_text = False
            for piece in _PIECES.findall(line):
                if depth == 0:
                    tag = _TAG.fullmatch(piece)
                    if tag:
                        closing, name, self_closing = tag.group(1), tag.group(2).upper(), tag.group(3)
                        counts["sgml_tags_removed"] += 1
                        if closing:
                            if name in open_elements:  # close it and anything left open inside it
                                del open_elements[len(open_elements) - 1 - open_elements[::-1].index(name):]
                        elif not self_closing:
                            open_elements.append(name)
                        out.append(" ")
                        continue
                    if piece.strip() and piece[0] not in "()" and open_elements \
                            and open_elements[-1] not in TREE_ELEMENTS:
                        dropped_text = True  # <DOCID>CHTB_0001.nw</DOCID>, a date, a speaker's name
                        out.append(" ")
                        continue
                if piece == "(":
                    depth += 1
                elif piece == ")":
                    depth -= 1
                out.append(piece)
            counts["metadata_lines_removed"] += dropped_text
            yield "".join(out) if any(p.strip() for p in out) else "\n"
    except PreprocessError as e:
        if e.message.startswith("not UTF-8"):
            raise PreprocessError(e.message.split("; ")[0] + "; CTB 5.1 and earlier are GB2312: convert with "
                                  "iconv -f gb18030 -t utf-8", e.path, e.line) from None
        raise
