"""The plugin's errors as one line on stderr, without a Python traceback.

fairseq's commands are not ours to wrap, so importing fairseq_mgsa (what --user-dir does)
installs this exception hook: an MGSAError (errors.py) prints as "fairseq-mgsa error: ...",
and so does fairseq's own ValueError for --share-all-embeddings over separate dictionaries
(shared_embeddings.py); every other exception keeps Python's usual report.
"""

import sys

from ..errors import MGSAError
from . import shared_embeddings


def _excepthook(exc_type, exc, tb, _previous=sys.excepthook):
    if issubclass(exc_type, MGSAError):
        print(f"fairseq-mgsa error: {exc}", file=sys.stderr)
    elif exc_type is ValueError and str(exc) == shared_embeddings.FAIRSEQ_MESSAGE:
        # fairseq's Transformer under fairseq's translation task: the same one line as the plugin's check
        print(f"fairseq-mgsa error: {shared_embeddings.message()}", file=sys.stderr)
    else:
        _previous(exc_type, exc, tb)


def install_excepthook():
    if sys.excepthook is not _excepthook:
        sys.excepthook = _excepthook
