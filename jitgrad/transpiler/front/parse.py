"""Parse: from a Python function to its AST plus what its free names refer to.

The source is read with ``inspect``, parsed with gast (version-stable node
types), and converted to the standard ``ast`` the later passes work on.  Free
names are resolved with beniget's def-use chains against the function's
globals and closure cells.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any

import beniget
import gast

from ...errors import TransformError
from ..nodes import children, clone
from ..notes import INLINED


@dataclass
class Parsed:
    """A parsed function and what the transpiler needs to report and resolve."""

    func: Any
    tree: ast.FunctionDef
    env: dict[str, Any]
    filename: str
    first_line: int
    lines: list[str] = field(default_factory=list)
    #: generated name -> the user's name it stands for (versions, inlined locals)
    origin: dict[str, str] = field(default_factory=dict)
    #: names the function reads but does not define (``free_names``, found once)
    free: set[str] = field(default_factory=set)
    #: ``env`` as parsing and fencing left it, before a unit's passes added to it (``again``)
    fenced_env: dict[str, Any] | None = None

    def again(self) -> Parsed:
        """This parse for another unit of the same function (``pipeline.split_unit``,
        ``with_nested``), not parsed or fenced again: the tree and lines shared (no pass
        writes them), its own origins and its own copy of the namespace as fenced."""
        env = self.env if self.fenced_env is None else self.fenced_env
        return dataclasses.replace(self, env=dict(env), origin={})

    def user_name(self, name: str) -> str:
        """The name the user wrote for a (possibly renamed) variable."""
        return self.origin.get(name, name)

    def absolute_line(self, node: ast.AST) -> int | None:
        """``node``'s line in the user's file (line numbers are the file's from parse on)."""
        return getattr(node, "lineno", None)

    def source_line(self, line: int) -> str:
        """The text of the user's file line ``line`` within this function ("" outside it)."""
        idx = line - self.first_line
        return self.lines[idx] if 0 <= idx < len(self.lines) else ""

    def user_source(self, e: ast.AST) -> str:
        """``e`` as source text, with the names the user wrote."""
        return ast.unparse(_UserNames(self.origin).visit(clone(e)))

    def error(self, msg: str, node: ast.AST | None = None, hint: str = "") -> TransformError:
        """A TransformError pointing at ``node``'s line in the user's file."""
        origin = None if node is None else INLINED.get(node)
        if origin is not None:  # a helper's line: name it, and the calls leading to it
            file, lineno, line, sites = origin
            return TransformError(msg, filename=file, lineno=lineno, source_line=line,
                                  hint=hint, called_from=sites)
        lineno = None if node is None else self.absolute_line(node)
        line = "" if lineno is None else self.source_line(lineno)
        return TransformError(msg, filename=self.filename, lineno=lineno, source_line=line,
                              hint=hint)


class _UserNames(ast.NodeTransformer):
    def __init__(self, origin: dict[str, str]):
        self.origin = origin

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.origin.get(node.id, node.id)
        return node


class QuietChains(beniget.DefUseChains):
    """beniget without its unbound-name warnings (free names are resolved by us)."""

    def warn(self, msg, node):  # noqa: D102
        pass


def python_function(func: Any, cuda: bool = False) -> Any:
    """The plain Python function behind ``func`` (unwraps numba.njit dispatchers, and
    ``numba.cuda.jit`` ones where ``cuda``: the CPU target refuses those).

    Only Numba's own ``py_func`` is followed: a ``functools.wraps`` wrapper is the
    function the user passed, and is read as itself (never its ``__wrapped__``).
    """
    if is_cuda_dispatcher(func) and cuda:
        return func.py_func
    if is_cuda_dispatcher(func):
        py = getattr(func, "py_func", None)
        code = getattr(py, "__code__", None)
        raise TransformError(
            f"{getattr(func, '__name__', func)!r} is a CUDA kernel or device function "
            "(numba.cuda.jit); the CPU target differentiates CPU code only",
            filename=getattr(code, "co_filename", "<unknown>"),
            lineno=getattr(code, "co_firstlineno", None),
            hint="differentiate it for the GPU with jg.differentiate(f, wrt=..., "
                 "target=\"cuda\") (docs/cuda.md)")
    py = getattr(func, "py_func", None)
    if py is not None and type(func).__module__.split(".")[0] == "numba":
        func = py
    if inspect.isfunction(func):
        return func
    raise TypeError(f"jitgrad differentiates Python functions whose source it can read "
                    f"(def functions, or @numba.njit ones); {_describe_callable(func)} is "
                    "not one: differentiate your own function that calls it instead")


def is_cuda_dispatcher(obj: Any) -> bool:
    """True for ``numba.cuda.jit`` kernels and device functions (the simulator's too),
    checked by type name only, so CUDA is never initialised."""
    mod = type(obj).__module__ or ""
    return mod.startswith(("numba.cuda", "numba_cuda"))


def _describe_callable(obj: Any) -> str:
    """``numpy.sum (a numpy._ArrayFunctionDispatcher)``: how errors name a non-function."""
    kind = type(obj)
    kind_name = f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" \
        else kind.__qualname__
    if isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        kind_name = "built-in function, compiled code with no Python source"
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    mod = getattr(obj, "__module__", None)
    if name and isinstance(name, str):
        full = f"{mod}.{name}" if isinstance(mod, str) and mod != "builtins" else name
        return f"{full} (a {kind_name})"
    return f"a {kind_name} object"


#: node classes of a function without inner scopes or unusual bindings: in one made of
#: these only, the names it defines are its parameters and the names it stores
_PLAIN = frozenset({
    ast.Assign, ast.AugAssign, ast.For, ast.While, ast.If, ast.Return, ast.Expr, ast.Pass,
    ast.Break, ast.Continue, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Dict,
    ast.Set, ast.Compare, ast.Call, ast.FormattedValue, ast.JoinedStr, ast.Constant,
    ast.Attribute, ast.Subscript, ast.Starred, ast.Name, ast.List, ast.Tuple, ast.Slice,
    ast.keyword, ast.arguments, ast.arg, ast.Load, ast.Store})


def _plain_free_names(tree: ast.FunctionDef) -> set[str] | None:
    """``free_names`` of a function made of ``_PLAIN`` nodes only (what beniget finds for
    it, without its def-use chains); None for any other function."""
    loads: set[str] = set()
    local: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    a = tree.args
    for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
        if arg is not None:
            local.add(arg.arg)
    todo.append(a)
    todo.extend(tree.decorator_list)
    if tree.returns is not None:
        todo.append(tree.returns)
    for n in _walk_all(todo):
        cls = n.__class__
        if cls not in _PLAIN and not issubclass(cls, (ast.operator, ast.unaryop, ast.cmpop,
                                                      ast.boolop)):
            return None
        if cls is ast.Name:
            if n.ctx.__class__ is ast.Load:
                loads.add(n.id)
            else:
                local.add(n.id)
    return loads - local


def _walk_all(nodes: list[ast.AST]) -> list[ast.AST]:
    """Every node under ``nodes`` (any order)."""
    out: list[ast.AST] = []
    todo = list(nodes)
    while todo:
        n = todo.pop()
        out.append(n)
        todo.extend(children(n))
    return out


def free_names(tree: ast.FunctionDef) -> set[str]:
    """Names the function reads but does not define (globals, closure, builtins)."""
    plain = _plain_free_names(tree)
    return plain if plain is not None else chains_free_names(tree)


def chains_free_names(tree: ast.FunctionDef) -> set[str]:
    """``free_names`` from beniget's def-use chains (any function)."""
    gmod = gast.ast_to_gast(ast.Module(body=[tree], type_ignores=[]))
    chains = QuietChains()
    chains.visit(gmod)
    fn = gmod.body[0]
    local = {d.name() for d in chains.locals[fn]}
    out = set()
    for node in gast.walk(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and node.id not in local:
            out.add(node.id)
    return out


def parse_function(func: Any) -> Parsed:
    """Parse ``func`` and resolve its free names; raises TransformError if no source.

    The source is read from the function's own code object, so a decorator made
    with ``functools.wraps`` is read as the wrapper it is, not as ``__wrapped__``.
    """
    py = python_function(func, cuda=True)
    code = py.__code__
    filename = inspect.getsourcefile(code) or code.co_filename
    if py.__name__ == "<lambda>" or code.co_name == "<lambda>":
        import linecache

        line = linecache.getline(code.co_filename, code.co_firstlineno)
        raise TransformError("lambdas cannot be differentiated; use def", filename=filename,
                             lineno=code.co_firstlineno, source_line=line,
                             hint="define the function with def (at module level or in a "
                                  "file) and pass that")
    try:
        lines, first = inspect.getsourcelines(code)
    except (OSError, TypeError) as exc:
        raise TransformError(f"cannot read the source of {py.__qualname__}: {exc}",
                             filename=getattr(code, "co_filename", "<unknown>"),
                             hint="define the function in a .py file (not in an interactive "
                                  "session or exec) so jitgrad can read it") from None
    src = textwrap.dedent("".join(lines))
    try:
        # what a gast round trip gave back, without its two conversions; blank lines first
        # give every node its line in the user's file (``ast.increment_lineno``'s walk)
        mod = ast.parse("\n" * (first - 1) + src)
    except SyntaxError as exc:
        raise TransformError(f"cannot parse the source of {py.__qualname__}: {exc.msg}",
                             filename=filename, lineno=first,
                             source_line=lines[0] if lines else "",
                             hint="define the function with a plain def statement "
                                  "jitgrad can read on its own") from None
    fn = next((n for n in mod.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
              None)
    parsed = Parsed(py, fn, {}, filename, first, [ln.rstrip("\n") for ln in lines])
    if fn is None or fn.name != code.co_name:
        raise parsed.error(f"{py.__qualname__} is not a def function jitgrad can read",
                           hint="lambdas cannot be differentiated; use def")
    fn.decorator_list = []
    # defaults are values (``__defaults__``, evaluated when the def ran): the API binds them
    # into the call's arguments, inlining into a helper's call; not code of the function
    fn.args.defaults = []
    env: dict[str, Any] = dict(py.__globals__)
    if py.__closure__:
        for name, cell in zip(py.__code__.co_freevars, py.__closure__, strict=True):
            try:
                env[name] = cell.cell_contents
            except ValueError:
                pass
    import builtins

    parsed.free = free_names(fn)
    for name in parsed.free:
        if name not in env and hasattr(builtins, name):
            env[name] = getattr(builtins, name)
    parsed.env = env
    return parsed
