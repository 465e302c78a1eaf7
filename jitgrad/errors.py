"""The exception hierarchy: every error jitgrad raises derives from JitgradError."""

from __future__ import annotations

import os


class JitgradError(Exception):
    """Base class of all jitgrad errors."""


class TransformError(JitgradError):
    """Source that jitgrad cannot differentiate correctly.

    The message names the file, the line, the offending source line and a hint.
    """

    def __init__(self, msg: str, *, filename: str = "<unknown>", lineno: int | None = None,
                 source_line: str = "", hint: str = "", called_from: tuple[str, ...] = ()):
        self.msg = msg
        self.filename = filename
        self.lineno = lineno
        self.source_line = source_line
        self.hint = hint
        #: for a line inside an inlined helper: "f at file:line" for each call leading to
        #: it, innermost first
        self.called_from = tuple(called_from)
        shown = _relative(filename)
        where = f"{shown}:{lineno}" if lineno is not None else shown
        text = f"{where}: {msg}"
        if source_line:
            text += f"\n    {source_line.strip()}"
        for site in self.called_from:
            text += f"\n  called from {site}"
        if hint:
            text += f"\n  hint: {hint}"
        super().__init__(text)

    def via(self, site: str) -> TransformError:
        """This error, reached through one more helper call (``"f at file:line"``)."""
        return TransformError(self.msg, filename=self.filename, lineno=self.lineno,
                              source_line=self.source_line, hint=self.hint,
                              called_from=(*self.called_from, site))


def _relative(filename: str) -> str:
    """``filename`` relative to the working directory when it lies under it."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:  # another drive (Windows)
        return filename
    return rel if os.path.isabs(filename) and not rel.startswith(os.pardir) else filename


class RuleError(JitgradError):
    """A gradient rule is malformed or missing."""


class JitError(JitgradError):
    """Numba refused the generated code."""
