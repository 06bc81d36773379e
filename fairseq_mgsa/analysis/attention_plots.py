"""Heat maps for mgsa-attention: a grid of labelled attention matrices in one PNG."""

import logging
from dataclasses import dataclass
from typing import List, Sequence

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
