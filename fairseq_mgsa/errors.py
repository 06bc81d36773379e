"""Errors for expected user mistakes (bad options, phrase files that do not match the data).

fairseq's commands are not ours to wrap, so importing fairseq_mgsa (what --user-dir
does) installs an exception hook (fairseq_patches/excepthook.py) that prints these errors
as one line, without a Python traceback; every other exception keeps Python's usual report.

This module imports nothing of the plugin: every part of it raises MGSAError.
"""


class MGSAError(ValueError):
    """A mistake in the user's options or data, explained in its message."""
