"""Heat maps for mgsa-attention: grids of labelled attention matrices, one PNG per figure."""

import logging
import os
import time
from dataclasses import dataclass
from typing import Dict, List, Sequence

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


def save_panels(path: str, panels: List[Panel], title: str, columns: int = 2) -> None:
    """One PNG: the panels in a grid of `columns`, each a heat map with its labels on both axes."""
    columns = max(1, min(columns, len(panels)))
    rows = (len(panels) + columns - 1) // columns
    # a cell grows with the matrix so that every label stays legible
    cell_w = [max(3.0, 0.28 * len(p.columns) + 1.8) for p in panels]
    cell_h = [max(3.0, 0.28 * len(p.rows) + 1.6) for p in panels]
    fig, axes = plt.subplots(rows, columns, figsize=(columns * max(cell_w), rows * max(cell_h)), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        image = ax.imshow(panel.matrix, cmap="viridis", vmin=0.0, vmax=max(float(panel.matrix.max()), 1e-9),
                          aspect="auto", interpolation="nearest")
        ax.set_xticks(range(len(panel.columns)))
        ax.set_xticklabels([short(c) for c in panel.columns], rotation=90, fontsize=7)
        ax.set_yticks(range(len(panel.rows)))
        ax.set_yticklabels([short(r) for r in panel.rows], fontsize=7)
        ax.set_xlabel("attended to (keys)", fontsize=7)
        ax.set_title(panel.title, fontsize=8)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.02)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.97))  # room for the title
    fig.savefig(path, dpi=110)
    plt.close(fig)


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


def figures(name: str, arrays: Dict[str, np.ndarray], labels: List[str], layer: int, out: str, per_head: bool,
            cross_attention: bool) -> Dict[str, float]:
    """Write the PNGs of one sentence from its matrices (the npz keys of attention_maps.py),
    `labels` naming the checkpoints; returns {file: seconds it took}."""
    written = {}

    def save(filename, panels, title, columns=2):
        start = time.perf_counter()
        save_panels(os.path.join(out, filename), panels, title, columns)
        written[filename] = round(time.perf_counter() - start, 3)

    self_panels = []
    for k, label in enumerate(labels):
        tokens = list(arrays[f"m{k}_tokens"])
        self_panels += head_panels(arrays[f"m{k}_enc{layer}"], tokens, tokens, f"{label}: encoder layer {layer}",
                                   per_head)
    save(f"{name}_self_layer{layer}.png", self_panels, f"{name}: encoder self-attention, layer {layer}",
         columns=len(labels) if not per_head else 4)

    for k, label in enumerate(labels):
        tokens = list(arrays[f"m{k}_tokens"])
        for key in sorted((a for a in arrays if a.startswith(f"m{k}_mgsa") and a.endswith("_groups")),
                          key=lambda a: int(a[len(f"m{k}_mgsa"):].split("_")[0])):
            l = int(key[len(f"m{k}_mgsa"):].split("_")[0])
            panels, first = [], 0
            for group in arrays[key]:
                matrix = arrays[f"m{k}_mgsa{l}_{group}"]  # h x T x memory
                g = group.split("_")[0]
                columns = tokens if g == "word" else span_labels(
                    tokens, arrays[f"m{k}_mgsa{l}_{group}_spans"], arrays[f"m{k}_mgsa{l}_{group}_tags"])
                panels += head_panels(matrix, tokens, columns, f"{g} heads", per_head, first)
                first += len(matrix)
            save(f"{name}_m{k}_mgsa_layer{l}.png", panels, f"{name}: {label}, inside MG-SA layer {l}: "
                 f"each head group over its memory (phrase columns: tag + words)", columns=4 if per_head else 2)
        for kind, title in (("pba", "phrase-based attention over n-grams (key: the n-gram ending there)"),
                            ("hysan", "HySAN branches")):
            keys = [a for a in arrays if a.startswith(f"m{k}_{kind}{layer}_")]  # the module's order
            if not keys:
                continue
            panels, first = [], 0
            # PBA homogeneous: each n-gram size has its own heads (numbered on); otherwise every
            # head attends over every block / branch
            own_heads = sum(len(arrays[key]) for key in keys) == len(arrays[f"m{k}_enc{layer}"])
            for key in keys:
                part = key.split("_", 2)[2]
                columns = tokens
                if part.startswith("ngram"):
                    size = int(part[5:])
                    columns = [" ".join(tokens[max(0, s - size + 1):s + 1]).replace("@@ ", "")
                               for s in range(len(tokens))]
                panels += head_panels(arrays[key], tokens, columns, part, per_head, first)
                first += len(arrays[key]) if own_heads else 0
            save(f"{name}_m{k}_{kind}_layer{layer}.png", panels, f"{name}: {label}, layer {layer}, {title}",
                 columns=4 if per_head else 2)

    if cross_attention:
        panels = []
        for k, label in enumerate(labels):
            last = max(int(a[len(f"m{k}_cross"):]) for a in arrays if a.startswith(f"m{k}_cross"))
            panels += head_panels(arrays[f"m{k}_cross{last}"], list(arrays[f"m{k}_target_tokens"]),
                                  list(arrays[f"m{k}_tokens"]), f"{label}: decoder layer {last}", per_head)
        save(f"{name}_cross.png", panels, f"{name}: cross-attention (rows: the model's translation)",
             columns=len(labels) if not per_head else 4)
    return written
