"""Thread indices written out: ``cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x``.

Numba's own examples compute a kernel's index by hand, directly or through names::

    tx = cuda.threadIdx.x                    i = cuda.grid(1)
    bx = cuda.blockIdx.x            ->
    bw = cuda.blockDim.x
    i = tx + bx * bw

``grid_prefix`` finds such a prefix of the kernel body (either operand order, ``.y`` and
``.z`` for 2-D and 3-D) and gives back the ``cuda.grid(n)`` statement it is equal to.
``cuda_path`` says which ``numba.cuda`` name an expression spells (``kernel.py`` too).
"""

from __future__ import annotations

import ast
import types
from typing import Any


def is_cuda_module(obj: Any) -> bool:
    """``numba.cuda`` (or the simulator's, or numba-cuda's) module object."""
    return isinstance(obj, types.ModuleType) and obj.__name__.startswith(("numba.cuda",
                                                                          "numba_cuda"))


def cuda_path(e: ast.AST, env: dict[str, Any]) -> str | None:
    """``"grid"``, ``"atomic.add"``...: the dotted name ``e`` spells under ``numba.cuda``."""
    parts: list[str] = []
    while isinstance(e, ast.Attribute):
        parts.append(e.attr)
        e = e.value
    if isinstance(e, ast.Name) and parts and is_cuda_module(env.get(e.id)):
        return ".".join(reversed(parts))
    if isinstance(e, ast.Name) and not parts:
        obj = env.get(e.id)
        mod = getattr(obj, "__module__", None) or ""
        if mod.startswith(("numba.cuda", "numba_cuda")) and not is_cuda_module(obj):
            return getattr(obj, "__name__", e.id)
    return None


_PARTS = ("threadIdx", "blockIdx", "blockDim")
_AXES = ("x", "y", "z")


def _part(e: ast.expr, env: dict[str, Any], alias: dict[str, tuple[str, str]]) \
        -> tuple[str, str] | None:
    """``("threadIdx", "x")`` for ``cuda.threadIdx.x`` or a name bound to it."""
    if isinstance(e, ast.Name):
        return alias.get(e.id)
    path = cuda_path(e, env) if isinstance(e, ast.Attribute) else None
    if path is None or path.count(".") != 1:
        return None
    part, axis = path.split(".")
    return (part, axis) if part in _PARTS and axis in _AXES else None


def _index_axis(e: ast.expr, env: dict[str, Any], alias: dict) -> str | None:
    """The axis of ``threadIdx + blockIdx * blockDim`` (any operand order), else None."""
    if not (isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add)):
        return None
    for a, m in ((e.left, e.right), (e.right, e.left)):
        t = _part(a, env, alias)
        if t is None or t[0] != "threadIdx" or not (
                isinstance(m, ast.BinOp) and isinstance(m.op, ast.Mult)):
            continue
        pair = {_part(m.left, env, alias), _part(m.right, env, alias)}
        if pair == {("blockIdx", t[1]), ("blockDim", t[1])}:
            return t[1]
    return None


def _module_name(stmts: list[ast.stmt], env: dict[str, Any]) -> str | None:
    """The name the kernel reaches ``numba.cuda`` by (``cuda`` in ``cuda.threadIdx.x``)."""
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and is_cuda_module(env.get(n.id)):
                return n.id
    return None


def grid_prefix(body: list[ast.stmt], env: dict[str, Any]) -> tuple[ast.stmt, int] | None:
    """The ``cuda.grid(n)`` statement the first statements of ``body`` compute, and how
    many statements that is; None where they are not thread indices written out."""
    alias: dict[str, tuple[str, str]] = {}
    index: dict[str, str] = {}  # thread-index name -> axis
    k = 0
    for s in body:
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)):
            break
        t = s.targets[0].id
        part = _part(s.value, env, {})
        axis = None if part else _index_axis(s.value, env, alias)
        if part is None and axis is None or t in alias or t in index:
            break
        if part:
            alias[t] = part
        else:
            index[t] = axis
        k += 1
    axes = sorted(index.values())
    if not index or axes != list(_AXES[:len(axes)]):
        return None
    rest = body[k:]
    if any(isinstance(n, ast.Name) and n.id in alias for s in rest for n in ast.walk(s)):
        return None  # a thread's place in its block used elsewhere: refused as it is
    cuda = _module_name(body[:k], env)
    if cuda is None:
        return None
    names = sorted(index, key=index.get)
    target = ast.Name(id=names[0], ctx=ast.Store()) if len(names) == 1 else ast.Tuple(
        elts=[ast.Name(id=n, ctx=ast.Store()) for n in names], ctx=ast.Store())
    call = ast.Call(func=ast.Attribute(value=ast.Name(id=cuda, ctx=ast.Load()), attr="grid",
                                       ctx=ast.Load()), args=[ast.Constant(value=len(names))],
                    keywords=[])
    grid = ast.Assign(targets=[target], value=call)
    for n in ast.walk(grid):
        ast.copy_location(n, body[k - 1])
    return grid, k


def _is_gridsize(e: ast.expr, env: dict[str, Any]) -> bool:
    """``cuda.gridsize(1)``, or ``cuda.blockDim.x * cuda.gridDim.x`` in either order."""
    if isinstance(e, ast.Call):
        return cuda_path(e.func, env) == "gridsize" and len(e.args) == 1 and not e.keywords \
            and isinstance(e.args[0], ast.Constant) and e.args[0].value == 1
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
        return {cuda_path(e.left, env), cuda_path(e.right, env)} == {"blockDim.x", "gridDim.x"}
    return False


def _is_grid1(e: ast.expr, env: dict[str, Any]) -> bool:
    """``cuda.grid(1)``, or ``cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x``."""
    if _index_axis(e, env, {}) == "x":
        return True
    return isinstance(e, ast.Call) and cuda_path(e.func, env) == "grid" and len(e.args) == 1 \
        and isinstance(e.args[0], ast.Constant) and e.args[0].value == 1 and not e.keywords


def stride_loop(body: list[ast.stmt], env: dict[str, Any]) -> tuple[ast.For, ast.If] | None:
    """A grid-stride loop, ``for i in range(cuda.grid(1), n, cuda.gridsize(1)): ...`` (the
    start and the stride may be names bound just before it): the loop header the adjoint
    kernel runs (with ``cuda.grid``/``cuda.gridsize`` in it) and one element's part,
    ``if i < n: ...``.  None where ``body`` is not one."""
    names: dict[str, str] = {}
    k = 0
    while k < len(body) - 1:
        s = body[k]
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)):
            return None
        kind = "start" if _is_grid1(s.value, env) else "stride" if _is_gridsize(
            s.value, env) else None
        if kind is None or kind in names.values():
            return None
        names[s.targets[0].id] = kind
        k += 1
    loop = body[-1] if body else None
    if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)
            and isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name)
            and env.get(loop.iter.func.id) is range and len(loop.iter.args) == 3
            and not loop.iter.keywords):
        return None
    start, stop, step = loop.iter.args

    def role(e: ast.expr, kind: str) -> ast.expr | None:
        if isinstance(e, ast.Name) and names.get(e.id) == kind:
            return next(b.value for b in body[:k] if b.targets[0].id == e.id)
        return e if (_is_grid1(e, env) if kind == "start" else _is_gridsize(e, env)) else None

    first, stride = role(start, "start"), role(step, "stride")
    used = {n.id for n in ast.walk(ast.Module(body=loop.body, type_ignores=[]))
            if isinstance(n, ast.Name)} | {n.id for n in ast.walk(stop) if isinstance(n, ast.Name)}
    if first is None or stride is None or used & set(names):
        return None
    header = ast.For(target=loop.target, iter=ast.Call(func=loop.iter.func, args=[
        first, stop, stride], keywords=[]), body=[], orelse=[])
    test = ast.Compare(left=ast.Name(id=loop.target.id, ctx=ast.Load()), ops=[ast.Lt()],
                       comparators=[stop])
    guard = ast.If(test=test, body=loop.body, orelse=[])
    for n in (header, header.iter, guard, test, test.left):
        ast.copy_location(n, loop)
    return header, guard
