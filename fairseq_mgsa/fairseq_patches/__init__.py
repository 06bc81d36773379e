"""What the plugin changes in fairseq's and Python's behaviour, all installed by `install()`,
which importing fairseq_mgsa calls once (after fairseq is imported):

* checkpoint_loading.py: torch.load (weights_only by default from torch 2.6) reads the
  checkpoints fairseq writes;
* clean_exit.py: fairseq's batch-prefetching threads end before Python exits;
* bf16.py: `--bf16` trains in bfloat16 on the run's device instead of fairseq's TPU path;
* patience.py: fairseq's `--patience` count is kept in the checkpoints, so that a resumed run
  stops where the same run left alone would;
* excepthook.py: the plugin's errors, and fairseq's for --share-all-embeddings over separate
  dictionaries (shared_embeddings.py, which the plugin's models and task also check with),
  print as one line.

The modules import nothing from the rest of the plugin but errors.py, so nothing here imports
back into the code that depends on it.
"""


_installed = False


def install():
    """Installs every change once (a second call does nothing: the exit hook would run twice)."""
    global _installed
    if _installed:
        return
    _installed = True
    # checkpoint_loading installs itself when imported: examples/common/average_checkpoints.py
    # runs that file by path, without fairseq
    from . import bf16, checkpoint_loading, clean_exit, excepthook, patience  # noqa: F401

    excepthook.install_excepthook()
    clean_exit.install_exit_hook()
    bf16.install()
    patience.install()
