"""Heat maps for mgsa-attention: grids of labelled attention matrices, one PNG per figure.

A figure grows with its sentence so that every row and column keeps a legible label, up to
MAX_INCHES a side (MAX_INCHES * DPI pixels). A longer sentence is drawn in the capped size with one
label in k (its position before the token), and the figure's title says so: drawn in full, a
500-token sentence made a 14974 x 14447-pixel canvas (5.1 GB resident) and 1,100 tokens went
above 13 GB. The npz beside the figure holds every weight.
"""

import logging
import math
import os
import re
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

# quiet even when an imported library has set the root logger to DEBUG (font cache chatter)
logging.getLogger("matplotlib").setLevel(logging.WARNING)
import matplotlib  # noqa: E402

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


@dataclass
class Panel:
    matrix: np.ndarray  # rows (queries) x columns (keys), each row a distribution
    rows: Sequence[str]  # query labels
    columns: Sequence[str]  # key labels
    title: str


def short(label: str, width: int = 28) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


DPI = 110
LABEL_INCHES = 0.28  # room per row / column label in a figure drawn in full (7-pt labels)
CAPPED_LABEL_INCHES = 0.14  # a capped figure labels one row / column in k so that labels keep this room
MAX_INCHES = 36.0  # per side: at most 3960 x 3960 pixels, a 63 MB canvas
MARGIN_W, MARGIN_H = 1.8, 1.6  # inches of a panel outside its matrix: labels, colour bar, title


def layout(panels: List[Panel], columns: int) -> Tuple[int, int, float, float, bool]:
    """(grid rows, grid columns, figure width, figure height in inches, capped)."""
    columns = max(1, min(columns, len(panels)))
    rows = (len(panels) + columns - 1) // columns
    # a cell grows with the matrix so that every label stays legible
    cell_w = max(max(3.0, LABEL_INCHES * len(p.columns) + MARGIN_W) for p in panels)
    cell_h = max(max(3.0, LABEL_INCHES * len(p.rows) + MARGIN_H) for p in panels)
    width, height = columns * cell_w, rows * cell_h
    capped = width > MAX_INCHES or height > MAX_INCHES
    return rows, columns, min(width, MAX_INCHES), min(height, MAX_INCHES), capped


def label_step(count: int, room: float) -> int:
    """Label every k-th of `count` rows or columns sharing `room` inches."""
    if count * LABEL_INCHES <= room + 1e-9:
        return 1
    return max(1, math.ceil(count * CAPPED_LABEL_INCHES / max(room, 0.5)))


def tick_labels(labels: Sequence[str], step: int) -> Tuple[List[int], List[str]]:
    if step == 1:
        return list(range(len(labels))), [short(c) for c in labels]
    positions = list(range(0, len(labels), step))
    return positions, [f"{i} {short(labels[i])}" for i in positions]


def save_panels(path: str, panels: List[Panel], title: str, columns: int = 2,
                warnings: Sequence[str] = ()) -> Optional[str]:
    """One PNG: the panels in a grid of `columns`, each a heat map with its labels on both axes,
    `warnings` under the title (and in the PNG's Warning text). Returns the note a capped figure's
    title carries, or None."""
    rows, columns, width, height, capped = layout(panels, columns)
    fig, axes = plt.subplots(rows, columns, figsize=(width, height), squeeze=False)
    steps = []
    for ax, panel in zip(axes.flat, panels):
        image = ax.imshow(panel.matrix, cmap="viridis", vmin=0.0, vmax=max(float(panel.matrix.max()), 1e-9),
                          aspect="auto", interpolation="nearest")
        x_step = label_step(len(panel.columns), width / columns - MARGIN_W)
        y_step = label_step(len(panel.rows), height / rows - MARGIN_H)
        steps += [x_step, y_step]
        positions, labels = tick_labels(panel.columns, x_step)
        ax.set_xticks(positions)
        ax.set_xticklabels(labels, rotation=90, fontsize=7)
        positions, labels = tick_labels(panel.rows, y_step)
        ax.set_yticks(positions)
        ax.set_yticklabels(labels, fontsize=7)
        ax.set_xlabel("attended to (keys)", fontsize=7)
        ax.set_title(panel.title, fontsize=8)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.02)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    note = None
    if capped:
        longest = max(max(len(p.rows), len(p.columns)) for p in panels)
        note = (f"{longest} tokens: figure capped at {width:.0f} x {height:.0f} in ({MAX_INCHES:.0f} in a side), "
                + (f"1 label in {max(steps)} shown" if max(steps) > 1 else "every label shown")
                + " (the npz holds every weight)")
    lines = [title] + ([note] if note else []) + list(warnings)
    fig.suptitle("\n".join(lines), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 1 - min(0.3, max(0.03, (0.16 * len(lines) + 0.04) / height))))  # title lines
    metadata = {"Title": title, **({"Warning": "; ".join(lines[1:])} if len(lines) > 1 else {})}
    fig.savefig(path, dpi=DPI, metadata=metadata)
    plt.close(fig)
    return note


def head_panels(matrix: np.ndarray, rows, columns, title: str, per_head: bool, first_head: int = 0) -> List[Panel]:
    """matrix: h x rows x columns. One panel averaged over the heads, or one per head."""
    if per_head:
        return [Panel(m, rows, columns, f"{title}, head {first_head + i + 1}") for i, m in enumerate(matrix)]
    heads = f"heads {first_head + 1}-{first_head + len(matrix)} averaged" if len(matrix) > 1 else f"head {first_head + 1}"
    return [Panel(matrix.mean(axis=0), rows, columns, f"{title} ({heads})")]


def span_labels(tokens, spans, tags) -> List[str]:
    # a phrase's words, subwords joined (subword-nmt's "@@ " marks), after its tag
    words = [" ".join(tokens[s:e]).replace("@@ ", "") for s, e in spans.tolist()]
    return [w if tag in ("", w) else f"{tag} {w}" for w, tag in zip(words, tags)]


# the figure titles of the methods' parts (other methods' parts are drawn under their key prefix)
TITLES = {"mgsa": "inside MG-SA layer {l}: each head group over its memory (phrase columns: tag + words)",
          "pba": "layer {l}, phrase-based attention over n-grams (key: the n-gram ending there)",
          "hysan": "layer {l}, HySAN branches"}


def part_panels(arrays: Dict[str, np.ndarray], keys: List[str], tokens: List[str], per_head: bool, listed: bool,
                num_heads: int) -> List[Panel]:
    """The panels of one layer's parts (h x T x K each): columns the phrases (tag + words) where the
    part has spans, the n-grams ending at each token for an ngram<n> part, else the tokens."""
    panels, first = [], 0
    # own heads (numbered on): parts that split the heads between them (MG-SA's head groups, PBA
    # homogeneous); otherwise every head attends over every part (blocks, branches)
    own_heads = sum(len(arrays[key]) for key in keys) == num_heads
    for key in keys:
        part = key.split("_", 2)[2]
        columns = tokens
        if key + "_spans" in arrays:
            columns = span_labels(tokens, arrays[key + "_spans"], arrays[key + "_tags"])
        elif re.fullmatch(r"ngram\d+", part):
            size = int(part[5:])
            columns = [" ".join(tokens[max(0, s - size + 1):s + 1]).replace("@@ ", "") for s in range(len(tokens))]
        title = f"{part.split('_')[0]} heads" if listed else part
        panels += head_panels(arrays[key], tokens, columns, title, per_head, first)
        first += len(arrays[key]) if own_heads else 0
    return panels


def figures(name: str, arrays: Dict[str, np.ndarray], labels: List[str], layer: int, out: str, per_head: bool,
            cross_attention: bool, warnings: Sequence[str] = ()) -> Tuple[Dict[str, float], Dict[str, str]]:
    """Write the PNGs of one sentence from its matrices (the npz keys of extract.py), `labels`
    naming the checkpoints, `warnings` under every title; returns {file: seconds it took} and
    {file: the note of a capped figure}."""
    written, capped = {}, {}

    def save(filename, panels, title, columns=2):
        start = time.perf_counter()
        note = save_panels(os.path.join(out, filename), panels, title, columns, warnings)
        written[filename] = round(time.perf_counter() - start, 3)
        if note:
            capped[filename] = note

    self_panels = []
    for k, label in enumerate(labels):
        tokens = list(arrays[f"m{k}_tokens"])
        self_panels += head_panels(arrays[f"m{k}_enc{layer}"], tokens, tokens, f"{label}: encoder layer {layer}",
                                   per_head)
    save(f"{name}_self_layer{layer}.png", self_panels, f"{name}: encoder self-attention, layer {layer}",
         columns=len(labels) if not per_head else 4)

    for k, label in enumerate(labels):
        tokens = list(arrays[f"m{k}_tokens"])
        # a method's parts (modules/shared/extra_weights.py), found by their keys m<k>_<prefix><l>_<part>:
        # parts listed in head order (<prefix><l>_groups, MG-SA's) are drawn for every layer that
        # has them, the others for the layer drawn
        found = {}
        for key in arrays:
            m = re.match(rf"m{k}_([a-z]+)(\d+)_(.+)$", key)
            if m and m.group(3) not in ("spans", "tags") and not key.endswith(("_spans", "_tags")):
                found.setdefault((m.group(1), int(m.group(2))), []).append(key)
        for (kind, l), keys in sorted(found.items()):
            listed = f"m{k}_{kind}{l}_groups" in arrays
            if not listed and l != layer:
                continue
            if listed:
                keys = [f"m{k}_{kind}{l}_{group}" for group in arrays[f"m{k}_{kind}{l}_groups"]]
            title = TITLES[kind].format(l=l) if kind in TITLES else f"layer {l}, {kind}'s own weights"
            panels = part_panels(arrays, keys, tokens, per_head, listed, len(arrays[f"m{k}_enc{l}"]))
            save(f"{name}_m{k}_{kind}_layer{l}.png", panels, f"{name}: {label}, {title}", columns=4 if per_head else 2)
    if cross_attention:
        panels = []
        for k, label in enumerate(labels):
            last = max(int(a[len(f"m{k}_cross"):]) for a in arrays if a.startswith(f"m{k}_cross"))
            panels += head_panels(arrays[f"m{k}_cross{last}"], list(arrays[f"m{k}_target_tokens"]),
                                  list(arrays[f"m{k}_tokens"]), f"{label}: decoder layer {last}", per_head)
        save(f"{name}_cross.png", panels, f"{name}: cross-attention (rows: the model's translation)",
             columns=len(labels) if not per_head else 4)
    return written, capped
