"""Reading bracketed constituency trees and normalising them.

Input is Penn Treebank bracket notation as parsers and treebanks write it: one
tree per sentence, a tree may span several lines (the PTB's ``.mrg`` files), blank
lines between trees are ignored. Normalisation, done while reading:

* the outer bracket is removed when it is unlabeled or labeled ROOT/TOP and holds
  a single constituent: ``( (S ...) )`` and ``(ROOT (S ...))`` both give S;
* function tags and indices are stripped from labels: NP-SBJ-1 -> NP, NP=2 -> NP;
  labels that start with '-' are whole labels (-LRB-, -RRB-, -NONE-) and stay;
* empty elements ``(-NONE- *T*-1)`` are removed, and so is every constituent
  left without words by their removal (``(NP-SBJ (-NONE- *))``);
* a constituent over a single word is collapsed to that word's pre-terminal, so
  its tag is the word's POS tag (``(NP (NNP Bush))`` -> NNP over "Bush"); this is
  the "pre-terminal carried down unchanged" of the partition.

Leaves are compared with the sentence's words up to escapes (``-LRB-`` vs ``(``,
Moses' ``&amp;`` vs ``&``, PTB's ``\\/`` and quote marks), see ``canonical_token``.

Why not stanza's reader (``stanza.models.constituency.tree_reader.read_trees``)
here: errors must name the file and line of the offending tree, and the CPU path
has a budget of 10k sentences/s per process including partition and writing.
stanza's reader builds a full ``Tree`` object graph per tree, reports no line
numbers and is far below that budget. The tests use stanza's reader as an
independent oracle for this one (same structure after ``prune_none`` and
``simplify_labels``).
"""

import re
from typing import Iterable, Iterator, List, Optional, Tuple

from .errors import BadTree, PreprocessError

# A normalised node is a tuple (tag, start, end, children):
#   tag        label with function tags and indices stripped
#   start, end the node's word span [start, end)
#   children   list of nodes, or None for a node over exactly one word.
# Tuples rather than objects: the CPU budget is ~100 us per sentence.
Node = Tuple[str, int, int, Optional[list]]

ROOT_LABELS = frozenset(("", "ROOT", "TOP"))
NONE_LABEL = "-NONE-"

_TOKENS = re.compile(r"[()]|[^\s()]+")


def iter_tree_texts(lines: Iterable[str], path: str) -> Iterator[Tuple[int, str]]:
    """Yield ``(line number of the tree's first line, tree text)`` for each tree.

    Trees are delimited by bracket balance, counted per line (cheap: two
    ``str.count`` calls), so a multi-line tree is joined and blank lines between
    trees are skipped. Bracket imbalance is an error naming the line, because
    after it no tree could be matched to its sentence with any confidence.
    """
    depth = 0
    start = 0
    buf: List[str] = []
    lineno = 0
    for lineno, line in enumerate(lines, 1):
        if depth == 0:
            stripped = line.strip()
            if not stripped:
                continue
            if stripped[0] != "(":
                raise PreprocessError(f"text outside any bracketed tree: {stripped[:40]!r}"
                                      + (" (SGML markup: mgsa-train-parser --treebank-format ctb reads the Penn "
                                         "Chinese Treebank's files as distributed)" if stripped[0] == "<" else ""),
                                      path, lineno)
            depth = line.count("(") - line.count(")")
            if depth == 0:  # the common case: one tree on one line
                yield lineno, line
                continue
            start, buf = lineno, [line]
        else:
            buf.append(line)
            depth += line.count("(") - line.count(")")
        if depth < 0:
            raise PreprocessError("unbalanced bracket: ')' without a matching '('"
                                  + (f" in the tree that starts at line {start}" if start != lineno else ""),
                                  path, lineno)
        if depth == 0:
            yield start, "".join(buf)
    if depth > 0:
        raise PreprocessError(f"unbalanced bracket: this tree is never closed ({depth} '(' still open "
                              f"at the end of the file, line {lineno})", path, start)


_LABELS = {}  # raw label -> stripped label; labels repeat, so strip each once


def strip_label(label: str) -> str:
    """NP-SBJ-1 -> NP, NP=2 -> NP, S-TPC -> S; -LRB-, -NONE-, '-' and '=' unchanged."""
    tag = _LABELS.get(label)
    if tag is None:
        tag = label
        if len(label) > 1 and label[0] not in "-=":
            cut = min((i for i in (label.find("-"), label.find("=")) if i > 0), default=-1)
            if cut > 0:
                tag = label[:cut]
        _LABELS[label] = tag
    return tag


class TreeStats:
    """What normalisation did, summed over trees (reported)."""
    __slots__ = ("none_removed", "emptied_removed", "function_tags_stripped", "outer_removed")

    def __init__(self):
        self.none_removed = self.emptied_removed = self.function_tags_stripped = self.outer_removed = 0

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}


def parse_tree(text: str, path: str = None, line: int = None,
               stats: Optional[TreeStats] = None, keep_one_word: bool = False) -> Tuple[Optional[Node], List[str]]:
    """Parse and normalise one bracketed tree: ``(top constituent or None, leaves)``.

    The top constituent is what remains after removing the outer bracket; it is
    None for an empty tree (``()``, or a tree of empty elements only). Raises
    ``BadTree`` for a malformed but delimited tree (``--lenient`` may repair it)
    and ``PreprocessError`` for bracket imbalance or two trees in one text.
    ``keep_one_word``: constituents over one word are kept, with their pre-terminal as
    child, instead of being collapsed (mgsa-train-parser: a parser that learns them
    scores under evalb's convention; mgsa-preprocess collapses them when it reads its trees).
    """
    tokens = _TOKENS.findall(text)
    n = len(tokens)
    leaves: List[str] = []
    # Open constituents: [label, start word, children, word, had a child removed]
    stack: list = []
    root = None
    done = False
    none_removed = emptied = stripped = 0
    i = 0
    while i < n:
        tok = tokens[i]
        if tok == "(":
            if done:
                raise PreprocessError("text after the end of the tree (two trees on one line?)", path, line)
            if stack and stack[-1][3] is not None:
                raise BadTree(f"word {stack[-1][3]!r} beside a constituent in ({stack[-1][0]} ...)",
                              path, line, reason="malformed tree")
            nxt = tokens[i + 1] if i + 1 < n else ")"
            if nxt == "(" or nxt == ")":
                stack.append(["", len(leaves), [], None, False])
                i += 1
            else:
                stack.append([nxt, len(leaves), [], None, False])
                i += 2
            continue
        if tok == ")":
            if not stack:
                raise PreprocessError("unbalanced bracket: ')' without a matching '('", path, line)
            label, start, children, word, lost_child = stack.pop()
            if label == "" and stack:
                raise BadTree("unlabeled constituent inside the tree", path, line, reason="malformed tree")
            tag = strip_label(label)
            if tag != label:
                stripped += 1
            if word is not None:  # pre-terminal
                if tag == NONE_LABEL:
                    none_removed += 1
                    node = None
                else:
                    leaves.append(word)
                    node = (tag, start, start + 1, None)
            elif not children:
                if lost_child:
                    emptied += 1
                    node = None
                elif stack:
                    raise BadTree(f"empty constituent ({label})", path, line, reason="malformed tree")
                else:  # "()" or "(ROOT)": an explicitly empty tree
                    node = None
            elif len(leaves) - start == 1 and not keep_one_word:
                node = children[0]  # one word: carried as its pre-terminal
            else:
                node = (tag, start, len(leaves), children)
            if stack:
                if node is None:
                    stack[-1][4] = True
                else:
                    stack[-1][2].append(node)
            else:
                root, done = node, True
            i += 1
            continue
        # a word
        if not stack:
            raise PreprocessError(f"text outside the tree's brackets: {tok!r}", path, line)
        top = stack[-1]
        if top[2] or top[3] is not None:
            raise BadTree(f"word {tok!r} beside other constituents or words in ({top[0]} ...)",
                          path, line, reason="malformed tree")
        top[3] = tok
        i += 1
    if stack:
        raise PreprocessError("unbalanced bracket: the tree is not closed", path, line)
    if not done:
        raise PreprocessError("no tree found", path, line)
    outer = 0
    while root is not None and root[3] is not None and root[0] in ROOT_LABELS and len(root[3]) == 1:
        root = root[3][0]
        outer += 1
    if stats is not None:
        stats.none_removed += none_removed
        stats.emptied_removed += emptied
        stats.function_tags_stripped += stripped
        stats.outer_removed += outer
    return root, leaves


# Escapes that make a leaf differ from the word it stands for, scheme by scheme.
# Each scheme maps plain text to an escaped form; files may carry any
# composition of them in any order (a PTB tree of Moses-escaped text, Moses
# escapes over PTB-tokenised text, stanza's writer over either):
# * PTB brackets, whole tokens (-LRB-), and stanza's tree writer, which writes
#   '(' and ')' inside any token as -LRB-/-RRB- (Tree.__format__);
# * PTB quotes, whole tokens: " as `` or '', ' opening as `;
# * PTB \/ and \* inside tokens;
# * Moses' escape-special-chars (& | < > ' " [ ]) inside tokens;
# * Moses' aggressive hyphen splitting (tokenizer -a), whole token: - as @-@.
_BRACKETS = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "-LSB-": "[", "-RSB-": "]"}
_BRACKET_RE = re.compile("|".join(map(re.escape, _BRACKETS)))
_WHOLE_TOKENS = {"``": '"', "''": '"', "`": "'", "@-@": "-"}
_MOSES = {"&amp;": "&", "&#124;": "|", "&lt;": "<", "&gt;": ">", "&apos;": "'", "&quot;": '"',
          "&#91;": "[", "&#93;": "]"}
_MOSES_RE = re.compile("|".join(map(re.escape, _MOSES)))
_BACKSLASH_RE = re.compile(r"\\([/*])")
_MAYBE_ESCAPED = re.compile(r"[&\\`'@]|-[LR][RCS]B-")


def _unescape_once(tok: str) -> str:
    tok = _WHOLE_TOKENS.get(tok, tok)
    if "B-" in tok:
        tok = _BRACKET_RE.sub(lambda m: _BRACKETS[m.group()], tok)
    if "&" in tok:  # one left-to-right pass: '&amp;lt;' -> '&lt;'
        tok = _MOSES_RE.sub(lambda m: _MOSES[m.group()], tok)
    if "\\" in tok:
        tok = _BACKSLASH_RE.sub(r"\1", tok)
    return tok


def canonical_token(tok: str) -> str:
    """The plain text a leaf or a word stands for, for comparing the two.

    Escapes are undone until nothing changes: one scheme's output may be another
    scheme's input (``''`` Moses-escaped is ``&apos;&apos;``, which must become
    ``''`` and then ``"``), so a single pass in a fixed order misses compositions.
    The price: a token that literally contains an escape (``&amp;`` as text, not
    as an escape) compares equal to the character it escapes; nothing tells the
    two apart once either file may have been escaped any number of times.
    """
    if not _MAYBE_ESCAPED.search(tok):  # the common case: nothing to undo
        return tok
    while True:
        plain = _unescape_once(tok)
        if plain == tok:
            return tok
        tok = plain


def check_leaves(leaves: List[str], words: List[str], tree_path: str, tree_line: int,
                 src_path: str, src_line: int) -> int:
    """Raise ``BadTree`` unless the leaves are the words (up to escapes).

    Returns how many leaves matched only through an escape.
    """
    if leaves == words:
        return 0
    escaped = 0
    for i, (leaf, word) in enumerate(zip(leaves, words)):
        if leaf != word:
            if canonical_token(leaf) != canonical_token(word):
                raise BadTree(f"the tree's leaves differ from the words of {src_path}:{src_line} at word {i + 1}: "
                              f"leaf {leaf!r}, word {word!r}", tree_path, tree_line, reason="leaves differ from words")
            escaped += 1
    if len(leaves) != len(words):
        raise BadTree(f"the tree has {len(leaves)} leaves (after removing empty elements) but {src_path}:{src_line} "
                      f"has {len(words)} words", tree_path, tree_line, reason="leaves differ from words")
    return escaped
