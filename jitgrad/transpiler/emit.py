"""Emit: unparse generated functions with ``ast.unparse``, exec them, compile with Numba.

Generated source is registered with ``linecache`` under a ``<jitgrad:...>`` file
name so tracebacks and Numba's messages can quote generated lines.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import re
from typing import Any

from ..errors import JitError

_COUNTER = itertools.count(1)


def function_def(fname: str, args: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    fn = ast.FunctionDef(name=fname, args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=a) for a in args], vararg=None, kwonlyargs=[],
        kw_defaults=[], kwarg=None, defaults=[]), body=body or [ast.Pass()],
        decorator_list=[], returns=None, type_params=[])
    return fn


_MARK = "__jitgrad_comment__: "
_MARK_LINE = re.compile(r"^(\s*)(['\"])" + re.escape(_MARK) + r"(.*)\2$", re.M)


def comment(text: str) -> ast.stmt:
    """A statement that ``unparse`` prints as ``# text`` (links adjoints to user lines)."""
    node = ast.Expr(value=ast.Constant(value=_MARK + text))
    node._jg_comment = True
    return node


def unparse(fn: ast.FunctionDef) -> str:
    mod = ast.Module(body=[fn], type_ignores=[])
    ast.fix_missing_locations(mod)
    src = ast.unparse(mod) + "\n"
    return _MARK_LINE.sub(lambda m: f"{m.group(1)}# {m.group(3)}", src)


def load(src: str, fname: str, namespace: dict[str, Any], qualname: str) -> Any:
    """Exec ``src`` into ``namespace`` and return the function ``fname``."""
    filename = f"<jitgrad:{qualname}:{next(_COUNTER)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    code = compile(src, filename, "exec")
    exec(code, namespace)
    fn = namespace[fname]
    fn._jg_filename = filename
    return fn


def njit(fn: Any) -> Any:
    import numba

    return numba.njit(fn)


def call_compiled(jitted: Any, src: str, args: tuple, hint: str = "") -> Any:
    """Call a Numba-compiled generated function, turning Numba failures into JitError."""
    from numba.core.errors import NumbaError

    try:
        return jitted(*args)
    except NumbaError as exc:
        text = str(exc)
        m = re.findall(r'File "<jitgrad:[^"]*>", line (\d+)', text)
        lines = src.splitlines()
        where = ""
        if m:
            n = int(m[-1])
            if 0 < n <= len(lines):
                where = f"\n  generated line {n}: {lines[n - 1].strip()}"
        first = text.strip().splitlines()
        summary = next((ln for ln in first if ln.strip() and "Failed in" not in ln), "")
        summary = re.sub(r"\x1b\[[0-9;]*m", "", summary).strip()
        extra = f"\n  note: {hint}" if hint else ""
        raise JitError(f"Numba could not compile the generated code: {summary}{where}{extra}\n"
                       "  hint: call with jit=False to run the same code as plain Python, "
                       "and see .source() for the generated code") from None
