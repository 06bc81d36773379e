"""mgsa-compare's plots (matplotlib, files only): BLEU by n-gram order and validation loss."""

import logging

logging.getLogger("matplotlib").setLevel(logging.WARNING)  # its font manager's DEBUG lines, when fairseq set root to DEBUG
import matplotlib  # noqa: E402

matplotlib.use("Agg")  # files only, no screen
import matplotlib.pyplot as plt  # noqa: E402
from cycler import cycler  # noqa: E402

# solid lines in the 10 colours first, then dashed: one look per system, up to 20
LINES = cycler(linestyle=["-", "--"]) * cycler(color=plt.cm.tab10.colors)


def plot_ngram_orders(results: dict, path: str) -> None:
    """The paper's Figure 2: per n-gram order, (left) the precision gain p_n and (right) the
    BLEU-n gain over the baseline."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    orders = list(range(1, results["max_order"] + 1))
    for ax, key, ylabel in ((axes[0], "ngram_precision_gain", "n-gram precision gain (points)"),
                            (axes[1], "bleu_n_gain", "BLEU-n gain (BLEU up to n-grams)")):
        ax.set_prop_cycle(LINES)
        for name, m in results["models"].items():
            if name != results["baseline"]:
                ax.plot(orders, m[key], marker="o", label=m["label"])
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.set_xlabel("n-gram order n")
        ax.set_ylabel(ylabel)
        ax.set_xticks(orders)
    fig.suptitle(f"Gain over {results['models'][results['baseline']]['label']} by n-gram order "
                 f"(as the paper's Figure 2)")
    axes[1].legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)  # beside the plot: many systems
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_valid_curves(results: dict, path: str) -> None:
    fig, ax = plt.subplots(figsize=(10, 4.2))
    ax.set_prop_cycle(LINES)
    for m in results["models"].values():
        if m.get("valid_curve"):
            updates, nll = zip(*m["valid_curve"])
            ax.plot(updates, nll, marker=".", label=m["label"])
    ax.set_xlabel("updates")
    ax.set_ylabel("validation NLL (bits per token)")
    ax.set_yscale("log")
    ax.set_title("Validation loss (first seed)")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
