"""mgsa-probe: the paper's probing tasks (Table 5), one module per step:

    labels    the five tasks' labels read from bracketed trees; the seeded split
    encoders  the encoders probed: a trained checkpoint's, frozen (set-up 1), or a
              registered system's trained from scratch (set-up 2)
    train     batches, pooling, the MLP and its training with early stopping
    control   the partition-only control
    table     probing.md / probing.json in Table 5's layout
    cli       the command (`mgsa-probe`, `python -m fairseq_mgsa.analysis.probing`)
"""


def main(argv=None):
    """The command; imported lazily so that `probing.labels` does not pull in torch and fairseq.
    (Installs made before the sub-package name `fairseq_mgsa.analysis.probing:main`.)"""
    from .cli import main as cli_main

    return cli_main(argv)
