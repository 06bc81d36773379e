"""Errors that the console command turns into a one-line message (no traceback)."""


class PreprocessError(Exception):
    """A user-facing input problem, located by file and line where known.

    All constructor arguments go to ``Exception.__init__`` so that the error
    pickles intact when raised inside a worker process.
    """

    def __init__(self, message: str, path: str = None, line: int = None):
        super().__init__(message, path, line)
        self.message, self.path, self.line = message, path, line

    def __str__(self):
        if self.path is None:
            return self.message
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


class BadTree(PreprocessError):
    """One tree is unusable (malformed, or its leaves are not the sentence's words).

    Unlike other errors, ``--lenient`` may replace the sentence's partition by a
    flat one instead of stopping. ``reason`` is a short key counted in the report.
    """

    def __init__(self, message: str, path: str = None, line: int = None, reason: str = "malformed tree"):
        Exception.__init__(self, message, path, line, reason)
        self.message, self.path, self.line, self.reason = message, path, line, reason
