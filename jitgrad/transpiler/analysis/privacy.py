"""Privacy: which elements one CUDA thread has to itself.

``private_arrays``, the CUDA lowering's thread-privacy analysis: an element indexed by
the thread's own index, at the same position in every access of that array, is reached
by no other thread (an adjoint array whose primal is read only at the thread's own index
keeps a plain ``+=``).  Whether the iterations of a loop may run at once is
``dependence.independent``'s question.

Example (the grid index is ``i``)::

    y[i] = x[i] * w[i, 0]         x and w private (each read at the own index)
    z[i] = x[i + 1]               x shared now: x[i + 1] is thread i + 1's element
"""

from __future__ import annotations

import ast

from ..nodes import own_expressions, walk_stmts


def grid_positions(sl: ast.expr, index: tuple[str, ...]) -> tuple[int, ...] | None:
    """The component position of each grid index in the subscript ``sl`` (in ``index``
    order), None unless each appears exactly once as a whole component."""
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    if any(isinstance(e, ast.Slice) for e in elts):
        return None
    out = []
    for g in index:
        at = [k for k, e in enumerate(elts) if isinstance(e, ast.Name) and e.id == g]
        if len(at) != 1:
            return None
        out.append(at[0])
    return tuple(out)


def access_positions(body: list[ast.stmt], index: tuple[str, ...]) \
        -> dict[str, tuple[int, ...] | None]:
    """Per array subscripted in ``body``: where the indices of ``index`` sit in every access
    (``grid_positions``), None where two accesses disagree or one is not the own index."""
    places: dict[str, tuple[int, ...] | None] = {}
    for s in walk_stmts(body):
        for n in own_expressions(s):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name):
                where = grid_positions(n.slice, index)
                a = n.value.id
                if a not in places:
                    places[a] = where
                elif places[a] != where:
                    places[a] = None
    return places


def private_arrays(body: list[ast.stmt], arrays: list[str], index: tuple[str, ...]) \
        -> frozenset[str]:
    """The arrays of ``arrays`` whose every element one thread's part reads no other thread
    reads (their adjoints need no atomics): each read holds every grid index once as a
    whole component, at the same position in every read of that array (``x[i]``;
    ``a[i, t]``, thread ``i``'s row).  Any other read makes the array shared."""
    places = access_positions(body, index)
    return frozenset(a for a in arrays if places.get(a, ()) is not None)


__all__ = ["access_positions", "grid_positions", "private_arrays"]
