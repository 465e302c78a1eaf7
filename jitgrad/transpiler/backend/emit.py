"""Emit: unparse generated functions with ``ast.unparse``, exec them, compile with Numba.

Generated source is registered with ``linecache`` under a ``<jitgrad:...>`` file
name so tracebacks and Numba's messages can quote generated lines.

Generated code follows IEEE semantics at derivative singularities (``1 / 0`` is
inf, ``log(0)`` is -inf, ``0 / 0`` is nan; nothing raises) in both modes: compiled
with ``numba.njit(error_model="numpy")``, or, as plain Python, run on NumPy scalars
in a namespace whose ``math`` uses NumPy (``ieee_namespace``, ``ieee_call``).

The primal (``primal``, ``call_primal``) is the user's own function compiled with
Numba's defaults, with the plain-Python helpers it calls compiled alongside it.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import math
import re
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import JitError
from ...rules.primitives import ieee_twin, library_module
from ..notes import COMMENT

_COUNTER = itertools.count(1)


def function_def(fname: str, args: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    fn = ast.FunctionDef(name=fname, args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=a) for a in args], vararg=None, kwonlyargs=[],
        kw_defaults=[], kwarg=None, defaults=[]), body=body or [ast.Pass()],
        decorator_list=[], returns=None, type_params=[])
    return fn


_MARK = "__jitgrad_comment__: "


def comment(text: str) -> ast.stmt:
    """A statement that ``unparse`` prints as ``# text`` (links adjoints to user lines)."""
    node = ast.Expr(value=ast.Constant(value=_MARK + text))
    COMMENT.set(node, True)
    return node


def comment_text(node: ast.AST) -> str | None:
    """The text of a ``comment`` statement, else None."""
    v = getattr(node, "value", None) if isinstance(node, ast.Expr) else None
    if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.startswith(_MARK):
        return v.value[len(_MARK):]
    return None


#: fields of a statement that hold statements (or handlers, which hold statements)
BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def locate_statements(node: ast.AST, lineno: int = 1) -> None:
    """Give every statement under ``node`` a ``lineno`` (its parent's where it has none),
    as ``ast.fix_missing_locations`` would, without walking into expressions.

    ``ast.unparse`` reads only statements' line numbers (for type comments), so this is
    all it needs; visiting each expression node too was most of the cost of emitting."""
    todo = [(node, lineno)]
    while todo:
        n, line = todo.pop()
        if "lineno" in n._attributes:
            if not hasattr(n, "lineno"):
                n.lineno = line
            else:
                line = n.lineno
        for f in BLOCK_FIELDS:
            sub = getattr(n, f, None)
            if sub:
                todo.extend((c, line) for c in sub)


#: statements printed on one line of their own (their text depends only on their indentation)
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Pass, ast.Break,
           ast.Continue, ast.Return, ast.Raise, ast.Delete)
#: (id, indentation) -> (the statement, its text): see ``unparse``
Texts = dict[tuple[int, int], tuple[ast.stmt, str]]


def _unparser_base() -> type | None:
    """``ast.unparse``'s unparser class; None where this Python's is not the one expected."""
    base = getattr(ast, "_Unparser", None)
    if base is None:
        try:
            from _ast_unparse import Unparser as base  # Python 3.14 moved it
        except ImportError:
            return None
    needed = ("traverse", "visit", "fill", "visit_Expr", "get_raw_docstring")
    return base if all(hasattr(base, a) for a in needed) else None


def _comment_unparser(base: type) -> type:
    """``base`` printing each ``comment`` statement as the line ``# text`` (where
    ``ast.unparse`` prints a string statement: the text as the string's ``repr`` shows it,
    so it stays one line), and type comments without line numbers."""

    class CommentUnparser(base):
        def get_raw_docstring(self, node):
            body = getattr(node, "body", None)
            if body and comment_text(body[0]) is not None:
                return None  # (a comment first in a function is printed as one)
            return super().get_raw_docstring(node)

        def visit_Expr(self, node):
            text = comment_text(node)
            if text is None:
                return super().visit_Expr(node)
            self.fill("# " + repr(text)[1:-1])
            return None

        def get_type_comment(self, node):
            # the module has no type ignores: only the node's own comment (no line numbers
            # needed, so the statements need not be located first)
            comment = node.type_comment
            return None if comment is None else f" # type: {comment}"

    return CommentUnparser


def _text_unparser_class(base: type, fast: Callable[[ast.stmt], str | None]) -> type:
    """``base``, reusing the text of simple statements printed before at the same
    indentation (``fast`` prints the usual ones without a visitor per node)."""
    dispatch = ast.NodeVisitor.visit

    class TextUnparser(base):
        def __init__(self, texts: Texts):
            super().__init__()
            self._texts = texts

        def traverse(self, node):
            # the unparser's own traverse (a list item by item, else dispatch), with the
            # simple statements of a block (the only place they occur) printed once
            if node.__class__ is not list:
                return dispatch(self, node)
            texts = self._texts
            for item in node:
                if not isinstance(item, _SIMPLE):
                    self.traverse(item)
                    continue
                key = (id(item), self._indent)
                hit = texts.get(key)
                if hit is not None and hit[0] is item:
                    self._source.append(hit[1])
                    continue
                source = self._source
                start = len(source)
                self._precedences = {}  # as if printed on its own: the text fits every variant
                text = fast(item)
                if text is None:
                    dispatch(self, item)
                else:
                    self.fill(text)
                texts[key] = (item, "".join(source[start:]))
            return None

    return TextUnparser


def _prints_as_unparse(cls: type) -> bool:
    """Does the text unparser ``cls`` print a probe function as ``ast.unparse`` does (twice,
    the second time from the texts of the first)?"""
    probe = ast.parse("def f(a, b):\n    c = -(a + b) ** 2\n    for i in range(3):\n"
                      "        c += a[i, 1:] * (b if a else c)\n    return (c, None)\n"
                      "    d = a.x[i, 2] - (b - c) / -(2 ** -a) ** 0.5 + np.f(a[i + 1], -1)\n"
                      "    e = (a - b) * (c @ d) // a[b,] % ~b ** (c ** d) - (not a)\n")
    expected = ast.unparse(probe)
    for n in ast.walk(probe):  # as the passes make them: statements without locations
        if isinstance(n, ast.stmt):
            del n.lineno
    texts: Texts = {}
    try:
        return all(cls(texts).visit(probe) == expected for _ in range(2))
    except Exception:
        return False


def _text_unparser() -> Any:
    """``ast.unparse``'s unparser printing comments, reusing the text of simple statements
    printed before at the same indentation; None where this Python's unparser is not the
    one expected."""
    base = _unparser_base()
    if base is None:
        return None
    cls = _text_unparser_class(_comment_unparser(base), _fast_printer(base))
    return cls if _prints_as_unparse(cls) else None


def _fast_printer(base: type) -> Callable[[ast.stmt], str | None]:
    """``text(stmt)``: the text ``base`` (``ast.unparse``'s unparser) prints for the simple
    statement ``stmt`` after its indentation, for the usual assignments of generated code
    (``_FastPrinter``); None for any other statement (printed by the unparser itself).
    ``_text_unparser`` checks that both print the same; it prints nothing where the
    unparser's tables are not the ones expected."""
    try:
        return _FastPrinter(base)
    except (AttributeError, KeyError, TypeError):
        return lambda s: None


class _FastPrinter:
    """Prints an assignment to a name or element of names, numbers, arithmetic, element
    reads, attributes and calls with positional arguments, without a visitor per node:
    each ``expr`` method appends the text of ``e`` at precedence ``p`` to ``out`` and says
    whether it could (``seen``: the operator nodes printed, each once)."""

    _PLAIN = (int, float, bool, type(None))

    def __init__(self, base: type):
        binop, binop_prec, rassoc = base.binop, base.binop_precedence, base.binop_rassoc
        unop, unop_prec = base.unop, base.unop_precedence
        prec = vars(inspect.getmodule(base))["_Precedence"]
        self.test, self.atom, self.factor = prec.TEST, prec.ATOM, prec.FACTOR
        self.ops = {getattr(ast, k): (v, binop_prec[v], v in rassoc) for k, v in binop.items()}
        self.uops = {getattr(ast, k): (v, unop_prec[v]) for k, v in unop.items()}
        self.parts = {ast.BinOp: self.binop, ast.UnaryOp: self.unop, ast.Attribute: self.attr,
                      ast.Subscript: self.subscript, ast.Call: self.call}

    def __call__(self, s: ast.stmt) -> str | None:
        cls = s.__class__
        out: list[str] = []
        seen: set[int] = set()
        if cls is ast.Assign:
            if len(s.targets) != 1 or s.type_comment is not None \
                    or s.targets[0].__class__ not in (ast.Name, ast.Subscript) \
                    or not self.expr(s.targets[0], self.test, out, seen):
                return None
            out.append(" = ")
        elif cls is ast.AugAssign:
            op = self.ops.get(s.op.__class__)
            if op is None or s.target.__class__ not in (ast.Name, ast.Subscript) \
                    or not self.expr(s.target, self.test, out, seen):
                return None
            out.append(f" {op[0]}= ")
        else:
            return None
        return "".join(out) if self.expr(s.value, self.test, out, seen) else None

    def expr(self, e: ast.AST, p: Any, out: list[str], seen: set[int]) -> bool:
        cls = e.__class__
        if cls is ast.Name:
            out.append(e.id)
            return True
        if cls is ast.Constant:
            v = e.value
            if v.__class__ not in self._PLAIN or e.kind is not None:
                return False
            text = repr(v)
            if "inf" in text or "nan" in text:
                return False
            out.append(text)
            return True
        part = self.parts.get(cls)
        return part is not None and part(e, p, out, seen)

    def binop(self, e: ast.BinOp, p: Any, out: list[str], seen: set[int]) -> bool:
        op = self.ops.get(e.op.__class__)
        if op is None or id(e) in seen:  # (one node printed twice: the unparser's precedence)
            return False
        seen.add(id(e))
        sym, own, right_assoc = op
        parens = p > own
        if parens:
            out.append("(")
        left, right = (own.next(), own) if right_assoc else (own, own.next())
        if not self.expr(e.left, left, out, seen):
            return False
        out.append(f" {sym} ")
        if not self.expr(e.right, right, out, seen):
            return False
        if parens:
            out.append(")")
        return True

    def unop(self, e: ast.UnaryOp, p: Any, out: list[str], seen: set[int]) -> bool:
        op = self.uops.get(e.op.__class__)
        if op is None or id(e) in seen:
            return False
        seen.add(id(e))
        sym, own = op
        parens = p > own
        out.append("(" + sym if parens else sym)
        if own is not self.factor:
            out.append(" ")
        if not self.expr(e.operand, own, out, seen):
            return False
        if parens:
            out.append(")")
        return True

    def attr(self, e: ast.Attribute, p: Any, out: list[str], seen: set[int]) -> bool:
        if e.value.__class__ is ast.Constant or not self.expr(e.value, self.atom, out, seen):
            return False
        out.append("." + e.attr)
        return True

    def subscript(self, e: ast.Subscript, p: Any, out: list[str], seen: set[int]) -> bool:
        sl = e.slice
        parts = sl.elts if sl.__class__ is ast.Tuple else None
        if parts is not None and not parts or not self.expr(e.value, self.atom, out, seen):
            return False
        out.append("[")
        if not self.items(parts if parts is not None else (sl,), out, seen, ast.Slice):
            return False
        out.append(",]" if parts is not None and len(parts) == 1 else "]")
        return True

    def call(self, e: ast.Call, p: Any, out: list[str], seen: set[int]) -> bool:
        if e.keywords or not self.expr(e.func, self.atom, out, seen):
            return False
        out.append("(")
        if not self.items(e.args, out, seen):
            return False
        out.append(")")
        return True

    def items(self, items: Any, out: list[str], seen: set[int], also: type = ast.Starred) -> bool:
        """``items`` separated by commas (none a ``Starred`` or an ``also``)."""
        for k, x in enumerate(items):
            if x.__class__ is ast.Starred or x.__class__ is also:
                return False
            if k:
                out.append(", ")
            if not self.expr(x, self.test, out, seen):
                return False
        return True


_UNPARSERS: Any = None  # (comment unparser, text unparser): not looked for yet


def _unparsers() -> tuple[Any, Any]:
    """The unparser printing comments, and the one reusing texts too (None: not here)."""
    global _UNPARSERS
    if _UNPARSERS is None:
        base = _unparser_base()
        _UNPARSERS = (None if base is None else _comment_unparser(base), _text_unparser())
    return _UNPARSERS


def unparse(fn: ast.FunctionDef, texts: Texts | None = None) -> str:
    """The source of the generated function ``fn``, its ``comment`` statements printed as
    comments.

    ``texts``: kept between the functions of one specialisation, which share most simple
    statements; each is printed once per indentation, as ``ast.unparse`` prints it on
    its own (the same text as in the whole function: the passes share no expression
    nodes between statements but names and constants, whose text has no parentheses)."""
    mod = ast.Module(body=[fn], type_ignores=[])
    comments, text = _unparsers()
    if texts is not None and text is not None:
        return text(texts).visit(mod) + "\n"
    if comments is not None:
        return comments().visit(mod) + "\n"
    locate_statements(mod)  # (no unparser to extend here: comments print as strings)
    return ast.unparse(mod) + "\n"


def load(src: str, fname: str, namespace: dict[str, Any], qualname: str) -> Any:
    """Exec ``src`` into ``namespace`` and return the function ``fname``."""
    filename = f"<jitgrad:{qualname}:{next(_COUNTER)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    code = compile(src, filename, "exec")
    exec(code, namespace)
    return namespace[fname]


def stand_in(fname: str, params: list[str], qualname: str, make: Callable[[], Any]) -> Any:
    """A function ``fname`` of ``params`` that calls the function ``make()`` returns (made
    on its first call): generated code that is differentiated again, seldom run.  Its
    code's file is a ``<jitgrad:...>`` name, as ``load``'s, with no source behind it."""
    made: list[Any] = []

    def made_once() -> Any:
        if not made:
            made.append(make())
        return made[0]

    args = ", ".join(params)
    src = f"def {fname}({args}):\n    return _made()({args})\n"
    namespace: dict[str, Any] = {"_made": made_once}
    exec(compile(src, f"<jitgrad:{qualname}:{next(_COUNTER)}>", "exec"), namespace)
    return namespace[fname]


#: the user's ``numba.njit`` options that the generated code is compiled with too
CARRIED_OPTIONS = ("fastmath", "parallel", "error_model", "boundscheck", "nogil")


def user_options(func: Any) -> dict[str, Any]:
    """The options of ``CARRIED_OPTIONS`` the user set on their ``numba.njit`` dispatcher
    ``func`` (``fastmath=True``, ``parallel=True``...); empty for a plain function."""
    opts = getattr(func, "targetoptions", None)
    if not isinstance(opts, dict):
        return {}
    return {k: opts[k] for k in CARRIED_OPTIONS if opts.get(k) is not None}


def user_caches(func: Any) -> bool:
    """Did the user ask Numba to cache ``func`` on disk (``@numba.njit(cache=True)``)?
    Then its gradients use the on-disk cache too (``cache.py``)."""
    if hasattr(func, "diff"):  # a jg.grad result: its function's choice
        func = func.diff
    if hasattr(func, "cache") and hasattr(func, "wrt"):  # a jg.differentiate object
        return bool(func.cache)
    c = getattr(func, "_cache", None)
    return c is not None and type(c).__name__ != "NullCache"


def options_key(options: dict[str, Any] | None) -> str:
    """A stable text of ``options`` (for cache keys)."""
    return repr(sorted((k, repr(v)) for k, v in (options or {}).items()))


def is_parallel(options: dict[str, Any] | None) -> bool:
    """Do ``options`` ask Numba for ``prange`` loops (``parallel=True``, or a dict of
    parallel passes whose ``prange`` is not off)?"""
    p = (options or {}).get("parallel")
    if isinstance(p, dict):
        return bool(p.get("prange", True))
    return bool(p)


def njit(fn: Any, cache: bool = False, options: dict[str, Any] | None = None,
         checked: bool = False) -> Any:
    """Compile generated code: NumPy's error model, so ``x / 0.0`` is inf, not an exception,
    and bounds checks, so arguments of mismatched shapes raise IndexError (as without jit)
    instead of the adjoint writing past the end of an array: Numba's, unless ``checked``
    (the code checks every index itself, ``backend/bounds.py``).  ``cache``: Numba's
    on-disk cache (for functions loaded from a file, see ``cache.py``).  ``options``: the
    user's own (``user_options``), which take precedence (``fastmath``, ``boundscheck``...)."""
    import numba

    opts: dict[str, Any] = {"error_model": "numpy", "boundscheck": not checked}
    opts.update(options or {})
    if "parallel" in opts and not uses_prange(fn):
        # every prange loop of this variant runs serially (the reason is a comment in it):
        # Numba would warn that parallel=True found nothing to do, and its parfors of array
        # expressions size an array popped from a list tape in a loop as empty (numba 0.68;
        # ``np.zeros_like(a)`` then ``a = tape.pop()`` in one loop body), failing or
        # reading past its end
        del opts["parallel"]
    return numba.njit(cache=cache, **opts)(fn)


def uses_prange(fn: Any) -> bool:
    """Does the generated function ``fn`` read ``numba.prange`` (has a parallel loop)?"""
    import numba

    code = getattr(fn, "__code__", None)
    glob = getattr(fn, "__globals__", {})
    return code is None or "prange" in code.co_names or any(
        glob.get(n) is numba.prange for n in code.co_names)


def _numba_summary(text: str) -> str:
    """The first meaningful line of a Numba error message, without colour codes."""
    first = text.strip().splitlines()
    summary = next((ln for ln in first if ln.strip() and "Failed in" not in ln), "")
    return re.sub(r"\x1b\[[0-9;]*m", "", summary).strip()


#: ``# line 12: y = x * x``, the comment before the adjoint of a user's line
_COMMENT_LINE = re.compile(r"\s*# line (\d+): (.*)")


def call_compiled(jitted: Any, src: str, args: tuple, hint: str = "") -> Any:
    """Call a Numba-compiled generated function, turning Numba failures into JitError."""
    try:
        return jitted(*args)
    except Exception as exc:  # (the import costs a call's time: only on failure)
        from numba.core.errors import NumbaError

        if not isinstance(exc, NumbaError) and _compiled_for(jitted, args):
            raise  # the compiled code raised it (a bounds check, a shape check): the user's
        text = str(exc) if isinstance(exc, NumbaError) else f"{type(exc).__name__}: {exc}"
        code = jitted.py_func.__code__  # exec'd (<jitgrad:...>) or a cached module's file
        m = re.findall(r'File "' + re.escape(code.co_filename) + r'", line (\d+)', text)
        lines = src.splitlines()
        where = ""
        if m:
            n = int(m[-1]) - code.co_firstlineno + 1
            if 0 < n <= len(lines):
                where = f"\n  generated line {n}: {lines[n - 1].strip()}"
                where += next((f"\n  in the gradient code of your line {m[1]}: {m[2]}"
                               for ln in reversed(lines[:n])
                               if (m := _COMMENT_LINE.match(ln))), "")
        summary = _numba_summary(text)
        extra = f"\n  note: {hint}" if hint else ""
        raise JitError(f"Numba could not compile the generated code: {summary}{where}{extra}\n"
                       "  hint: call with jit=False to run the same code as plain Python, "
                       "and see .source() for the generated code") from None


def _compiled_for(jitted: Any, args: tuple) -> bool:
    """Whether ``jitted`` holds compiled code for these arguments' types: an exception
    other than Numba's is then the code's own, not a failure to compile it (Numba lets a
    few of its own escape as ``NotImplementedError`` and the like)."""
    try:
        sig = tuple(jitted.typeof_pyval(a) for a in args)
    except Exception:
        return True  # cannot tell: let the exception through as it is
    return sig in getattr(jitted, "overloads", {sig: None})


# --- the primal: the user's own function, compiled as the user would compile it ----------

def _is_helper(obj: Any) -> bool:
    """A plain Python function of the user's (Numba compiles it only if it is njit too)."""
    if not inspect.isfunction(obj):
        return False
    mod = getattr(obj, "__module__", None) or ""
    return not library_module(mod)


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def primal(func: Any) -> Any:
    """``numba.njit(func)`` with Numba's defaults, as the user would compile it.

    Plain-Python helpers that ``func`` calls through a global or closure name, or as
    ``module.helper`` (the ones jitgrad inlines into gradients), are compiled with
    ``numba.njit`` too, in a copy of the globals, so a function whose helpers are not
    decorated still runs compiled.  The user's modules are not modified.  Compilation
    happens at the first call (``call_primal``).
    """
    _register_primal_overloads()
    return _njit_with_helpers(func, {})


def _njit_with_helpers(fn: Any, memo: dict[int, tuple[Any, Any]]) -> Any:
    import numba

    hit = memo.get(id(fn))
    if hit is not None:
        return hit[1]
    g = fn.__globals__
    names = _code_names(fn.__code__)
    subs = {n: g[n] for n in names if n in g and _is_helper(g[n])}
    mods = {n: g[n] for n in names if n in g and _is_user_module(g[n])
            and any(_is_helper(getattr(g[n], a, None)) for a in names)}
    cells = fn.__closure__ or ()
    contents = []
    for cell in cells:
        try:
            contents.append(cell.cell_contents)
        except ValueError:  # an empty cell
            contents.append(_EMPTY)
    csubs = {i: v for i, v in enumerate(contents) if _is_helper(v)}
    if not subs and not csubs and not mods:
        disp = numba.njit(fn)
        memo[id(fn)] = (fn, disp)
        return disp
    new_globals = dict(g)
    new_cells = tuple(types.CellType() if v is _EMPTY else types.CellType(v) for v in contents)
    clone = types.FunctionType(fn.__code__, new_globals, fn.__name__, fn.__defaults__,
                               new_cells or None)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__qualname__ = fn.__qualname__
    clone.__module__ = fn.__module__
    clone.__doc__ = fn.__doc__
    disp = numba.njit(clone)
    memo[id(fn)] = (fn, disp)  # before the helpers: recursion finds it
    for n, h in subs.items():
        new_globals[n] = _njit_with_helpers(h, memo)
    for i, h in csubs.items():
        new_cells[i].cell_contents = _njit_with_helpers(h, memo)
    for n, m in mods.items():  # helpers called as module.helper(...): a module twin
        twin = types.ModuleType(m.__name__, m.__doc__)
        twin.__dict__.update(m.__dict__)
        for a in names:
            if _is_helper(getattr(m, a, None)):
                setattr(twin, a, _njit_with_helpers(getattr(m, a), memo))
        new_globals[n] = twin
    return disp


def _is_user_module(obj: Any) -> bool:
    return isinstance(obj, types.ModuleType) and \
        not library_module(obj.__name__)


_EMPTY = object()
_OVERLOADS_DONE = False


def _register_primal_overloads() -> None:
    """``jg.hook``, ``jg.nobacksies``, ``jg.checkpoint`` and ``jg.checkpointed`` inside a
    compiled primal: the value they pass through (they only change how gradients flow)."""
    global _OVERLOADS_DONE
    if _OVERLOADS_DONE:
        return
    _OVERLOADS_DONE = True
    from numba.extending import overload

    from ...markers import checkpoint, checkpointed, hook, nobacksies

    @overload(checkpointed)
    def _ol_checkpointed(r, snapshots=None):
        return lambda r, snapshots=None: r

    @overload(hook)
    def _ol_hook(fn, x):
        return lambda fn, x: x

    @overload(nobacksies)
    def _ol_nobacksies(msg, x):
        return lambda msg, x: x

    @overload(checkpoint)
    def _ol_checkpoint(f, *args):
        def impl(f, *args):
            return f(*args)
        return impl


def call_primal(jitted: Any, func: Any, args: tuple) -> Any:
    """Call the compiled primal; a Numba failure becomes a JitError about ``func``."""
    try:
        return jitted(*args)
    except Exception as exc:
        from numba.core.errors import NumbaError

        if not isinstance(exc, NumbaError):
            raise
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
        code = func.__code__
        where = f"{code.co_filename}:{code.co_firstlineno}"
        spots = [(f, int(n)) for f, n in re.findall(r'File "([^"]+)", line (\d+)', text)
                 if not f.startswith("<")]
        line = ""
        if spots:
            f, n = spots[-1]
            src = linecache.getline(f, n).strip()
            if src:
                line = f"\n  {f}:{n}: {src}"
        raise JitError(
            f"Numba could not compile {func.__qualname__} ({where}) for these arguments: "
            f"{_numba_summary(text)}{line}\n"
            "  hint: calling a jit=True differentiated function runs your own function as "
            "Numba compiles it (your @numba.njit dispatcher, else numba.njit(f) with the "
            "plain-Python helpers it calls); make that code Numba-compilable, or pass "
            "jit=False to run it as plain Python") from None


# --- IEEE semantics for generated code run as plain Python (jit=False) -------------------


class _IEEEMath(types.ModuleType):
    """``math`` whose float functions give inf/nan (NumPy semantics) instead of raising:
    each the stand-in its record holds (the primitive table's ``ieee`` fact)."""

    def __getattr__(self, name: str) -> Any:
        fn = getattr(math, name)
        twin = ieee_twin(fn)
        out = fn if twin is None else twin
        setattr(self, name, out)  # (found once: the next read is the module's own)
        return out


IEEE_MATH = _IEEEMath("math", "math with IEEE results (jitgrad's jit=False generated code)")


def ieee_namespace(ns: dict[str, Any]) -> None:
    """Make ``ns`` (the globals of generated code run as Python) follow IEEE semantics:
    the ``math`` module and ``math`` functions bound to names use NumPy, and ``float``
    is NumPy's float64 (a ``float`` subclass, so ``float(x)`` stays IEEE)."""
    for k, v in list(ns.items()):
        if v is math:
            ns[k] = IEEE_MATH
        elif isinstance(v, types.BuiltinFunctionType) and getattr(v, "__module__", "") == "math" \
                and ieee_twin(v) is not None:
            ns[k] = ieee_twin(v)
    ns["float"] = np.float64  # float(x) stays a NumPy scalar; dtype=float still works
    if "math" not in ns:  # rule templates may name math without the user importing it
        ns["math"] = IEEE_MATH


def ieee_value(v: Any) -> Any:
    """A Python float argument as NumPy float64 (1.0 / 0 is then inf, not an exception)."""
    if type(v) is float:
        return np.float64(v)
    if type(v) is tuple:
        return tuple(ieee_value(e) for e in v)
    return v


def ieee_call(fn: Any, args: tuple) -> Any:
    """Run generated Python code with IEEE semantics and no floating-point warnings."""
    with np.errstate(all="ignore"):
        return fn(*(ieee_value(a) for a in args))
