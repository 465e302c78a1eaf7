"""The exception hierarchy: every error jitgrad raises derives from JitgradError."""

from __future__ import annotations


class JitgradError(Exception):
    """Base class of all jitgrad errors."""


class TransformError(JitgradError):
    """Source that jitgrad cannot differentiate correctly.

    The message names the file, the line, the offending source line and a hint.
    """

    def __init__(self, msg: str, *, filename: str = "<unknown>", lineno: int | None = None,
                 source_line: str = "", hint: str = ""):
        self.msg = msg
        self.filename = filename
        self.lineno = lineno
        self.source_line = source_line
        self.hint = hint
        where = f"{filename}:{lineno}" if lineno is not None else filename
        text = f"{where}: {msg}"
        if source_line:
            text += f"\n    {source_line.strip()}"
        if hint:
            text += f"\n  hint: {hint}"
        super().__init__(text)


class RuleError(JitgradError):
    """A gradient rule is malformed or missing."""


class JitError(JitgradError):
    """Numba refused the generated code."""
