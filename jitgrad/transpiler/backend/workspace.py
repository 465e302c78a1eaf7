"""The workspace protocol of generated functions, shared by the reverse mode's variants
(``lower.with_workspace``) and forward mode's (``jvp_workspace.tape_workspace``).

A function that keeps storage between calls takes it as its last parameter, ``_ws``
(one entry, or a tuple), unpacks it at its top, and returns it, grown, after its
results; ``backend.jit.call`` keeps what it returns per thread for the next call.
"""

from __future__ import annotations

import ast


def zeroing(store: str, target: str, helper: str, like: ast.expr) -> ast.Assign:
    """``store, target = helper(store, like)``: a zero array shaped like ``like`` in the
    kept storage ``store`` (``kernels.helpers.ws_zeros_like``)."""
    return ast.Assign(targets=[ast.Tuple(elts=[_name(store, True), _name(target, True)],
                                         ctx=ast.Store())],
                      value=ast.Call(func=_name(helper), args=[_name(store), like],
                                     keywords=[]))


def through_workspace(body: list[ast.stmt], taken: list[str], returned: list[str],
                      ws: str) -> list[ast.stmt]:
    """``body`` (ending in its return) starting with ``taken = ws`` (the workspace
    parameter, ``Namer.workspace``) and returning
    ``returned`` (the same entries, under the names they end with) after its results."""
    names = [_name(t, True) for t in taken]
    target = names[0] if len(names) == 1 else ast.Tuple(elts=names, ctx=ast.Store())
    value: ast.expr = _name(ws)
    if len(names) == 1:
        value = ast.Subscript(value=value, slice=ast.Constant(0), ctx=ast.Load())
    ret = body[-1]
    ws = ast.Tuple(elts=[_name(t) for t in returned], ctx=ast.Load())
    return [ast.Assign(targets=[target], value=value), *body[:-1],
            ast.Return(value=ast.Tuple(elts=[*ret.value.elts, ws], ctx=ast.Load()))]


def _name(n: str, store: bool = False) -> ast.Name:
    return ast.Name(id=n, ctx=ast.Store() if store else ast.Load())


__all__ = ["through_workspace", "zeroing"]
