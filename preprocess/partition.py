"""The top-K levels of a normalised tree, as word spans with tags.

Level 1 is the list of children of the top constituent (the tree under ROOT);
level k+1 replaces every level-k node by its children, except a node over one
word, which is carried down unchanged. Each level therefore partitions the
sentence's words into contiguous phrases, in order, and refines the level above.
A sentence of one word gives that one phrase at every level; an empty tree gives
no phrase (the dataset adds the end-of-sentence phrase itself).
"""

from typing import List, Optional

from .trees import Node

# Tag of the phrases of a flat partition (``--lenient`` repairs). It is written
# as the tag dictionary's unknown symbol: the tree gave no tag to learn from.
UNKNOWN_TAG = "<unk>"


def partition(top: Optional[Node], levels: int) -> List[List[Node]]:
    """``levels`` lists of nodes ``(tag, start, end, children)``, one per level."""
    if top is None:
        return [[] for _ in range(levels)]
    if top[3] is None:
        return [[top] for _ in range(levels)]
    current = top[3]
    out = [current]
    for _ in range(levels - 1):
        nxt = []
        split = False
        for node in current:
            if node[3] is None:
                nxt.append(node)
            else:
                nxt.extend(node[3])
                split = True
        if not split:  # only one-word phrases left: every deeper level is the same
            out.extend([current] * (levels - len(out)))
            break
        current = nxt
        out.append(current)
    return out


def flat_partition(n_words: int, levels: int) -> List[List[Node]]:
    """Every word its own phrase with an unknown tag, at every level."""
    words = [(UNKNOWN_TAG, i, i + 1, None) for i in range(n_words)]
    return [words for _ in range(levels)]
