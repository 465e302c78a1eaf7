"""``has_aux=True``: the function returns ``(out, aux)`` and only ``out`` is differentiated.

The returns are checked in the user's source (each a pair, ``aux`` of one structure), and
a tuple ``aux`` is flattened so the passes see plain outputs (reverse mode seeds only
the first, ``reverse_passes.reverse_``); the API rebuilds ``aux`` from the values.

Before::                                   After::

    return loss, (pred, n)                     return loss, pred, n
"""

from __future__ import annotations

import ast

from .parse import Parsed

_HINT = ("return out, aux (aux: an array, a scalar or a tuple of them, written in the "
         "return), or drop has_aux=True")


def _returns(body: list[ast.stmt]) -> list[ast.Return]:
    return [n for s in body for n in ast.walk(s)
            if isinstance(n, ast.Return) and n.value is not None]


def aux_size(parsed: Parsed) -> int:
    """How many values ``aux`` holds (0: one value, not a tuple); a return that is not a
    pair ``out, aux`` is refused at its line."""
    fname = parsed.tree.name
    sizes: list[int] = []
    for r in _returns(parsed.tree.body):
        v = r.value
        if not (isinstance(v, ast.Tuple) and len(v.elts) == 2):
            what = (f"{len(v.elts)} values" if isinstance(v, ast.Tuple)
                    else "one value" if not isinstance(v, ast.Name)
                    else f"'{v.id}' (the pair must be written in the return)")
            raise parsed.error(f"has_aux=True: {fname} must return a pair (out, aux), as "
                               f"JAX's has_aux expects, but this return gives {what}", r, _HINT)
        out, aux = v.elts
        if isinstance(out, (ast.Tuple, ast.List)):
            raise parsed.error("has_aux=True: the differentiated output (the first of the "
                               "pair) must be one array or scalar, not a tuple", r, _HINT)
        size = len(aux.elts) if isinstance(aux, ast.Tuple) else 0
        if isinstance(aux, ast.Tuple) and any(isinstance(e, (ast.Tuple, ast.List))
                                              for e in aux.elts):
            raise parsed.error("has_aux=True: aux may be a tuple of arrays and scalars, not "
                               "of tuples", r, _HINT)
        if sizes and size != sizes[0]:
            raise parsed.error("has_aux=True: every return must give aux the same structure "
                               f"(a tuple of {sizes[0]} here {size} values)"
                               if sizes[0] and size else
                               "has_aux=True: every return must give aux the same structure "
                               "(a tuple in one return, one value in another)", r, _HINT)
        sizes.append(size)
    return sizes[0] if sizes else 0


def flatten_aux(body: list[ast.stmt]) -> None:
    """``return out, (a, b)`` becomes ``return out, a, b``, in place."""
    for r in _returns(body):
        v = r.value
        if isinstance(v, ast.Tuple) and len(v.elts) == 2 and isinstance(v.elts[1], ast.Tuple):
            v.elts = [v.elts[0], *v.elts[1].elts]
