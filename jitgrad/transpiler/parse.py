"""Parse: from a Python function to its AST plus what its free names refer to.

The source is read with ``inspect``, parsed with gast (version-stable node
types), and converted to the standard ``ast`` the later passes work on.  Free
names are resolved with beniget's def-use chains against the function's
globals and closure cells.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

import beniget
import gast

from ..errors import TransformError


@dataclass
class Parsed:
    """A parsed function and what the transpiler needs to report and resolve."""

    func: Any
    tree: ast.FunctionDef
    env: dict[str, Any]
    filename: str
    first_line: int
    lines: list[str] = field(default_factory=list)

    def error(self, msg: str, node: ast.AST | None = None, hint: str = "") -> TransformError:
        """A TransformError pointing at ``node``'s line in the user's file."""
        lineno = None
        line = ""
        if node is not None and getattr(node, "lineno", None) is not None:
            lineno = node.lineno + self.first_line - 1
            idx = node.lineno - 1
            if 0 <= idx < len(self.lines):
                line = self.lines[idx]
        return TransformError(msg, filename=self.filename, lineno=lineno, source_line=line,
                              hint=hint)


class _QuietChains(beniget.DefUseChains):
    """beniget without its unbound-name warnings (free names are resolved by us)."""

    def warn(self, msg, node):  # noqa: D102
        pass


def python_function(func: Any) -> Any:
    """The plain Python function behind ``func`` (unwraps numba.njit dispatchers)."""
    py = getattr(func, "py_func", None)
    if py is not None:
        return py
    if inspect.isfunction(func):
        return func
    raise TypeError(f"jitgrad: expected a Python function or numba.njit function, got {func!r}")


def free_names(tree: ast.FunctionDef) -> set[str]:
    """Names the function reads but does not define (globals, closure, builtins)."""
    gmod = gast.ast_to_gast(ast.Module(body=[tree], type_ignores=[]))
    chains = _QuietChains()
    chains.visit(gmod)
    fn = gmod.body[0]
    local = {d.name() for d in chains.locals[fn]}
    out = set()
    for node in gast.walk(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and node.id not in local:
            out.add(node.id)
    return out


def parse_function(func: Any) -> Parsed:
    """Parse ``func`` and resolve its free names; raises TransformError if no source."""
    py = python_function(func)
    try:
        lines, first = inspect.getsourcelines(py)
    except (OSError, TypeError) as exc:
        raise TransformError(f"cannot read the source of {py.__qualname__}: {exc}",
                             filename=getattr(py.__code__, "co_filename", "<unknown>"),
                             hint="define the function in a .py file (not in an interactive "
                                  "session or exec) so jitgrad can read it") from None
    src = textwrap.dedent("".join(lines))
    mod = gast.gast_to_ast(gast.parse(src))
    fn = next((n for n in mod.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
              None)
    filename = inspect.getsourcefile(py) or py.__code__.co_filename
    parsed = Parsed(py, fn, {}, filename, first, [ln.rstrip("\n") for ln in lines])
    if fn is None:
        raise parsed.error(f"{py.__qualname__} is not a def function",
                           hint="lambdas cannot be differentiated; use def")
    fn.decorator_list = []
    env: dict[str, Any] = dict(py.__globals__)
    if py.__closure__:
        for name, cell in zip(py.__code__.co_freevars, py.__closure__, strict=True):
            try:
                env[name] = cell.cell_contents
            except ValueError:
                pass
    import builtins

    for name in free_names(fn):
        if name not in env and hasattr(builtins, name):
            env[name] = getattr(builtins, name)
    parsed.env = env
    return parsed
