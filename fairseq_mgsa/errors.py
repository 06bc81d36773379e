"""Errors for expected user mistakes (bad options, phrase files that do not match the data).

fairseq's commands are not ours to wrap, so importing fairseq_mgsa (what --user-dir
does) installs an exception hook that prints these errors as one line, without a
Python traceback; every other exception keeps Python's usual report.
"""

import sys


class MGSAError(ValueError):
    """A mistake in the user's options or data, explained in its message."""


def _excepthook(exc_type, exc, tb, _previous=sys.excepthook):
    from . import shared_embeddings

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
