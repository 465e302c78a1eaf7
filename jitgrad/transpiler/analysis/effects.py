"""Calls that write into an array argument: refused, since the reverse sweep cannot see them.

The reverse sweep knows an array changes where it is assigned into (``y[i] = ...``,
``y[:] = ...``) or updated (``y += ...``): there it tapes what the write destroys, and
never recomputes a value from an element written later.  A call made for its effect
(``y.fill(0.5)``, ``y.sort()``, ``np.copyto(y, z)``, ``np.multiply(a, b, out=y)``) writes
the buffer out of its sight: the adjoint would read the new elements as the old ones and
pass no gradient through the write, a silently wrong gradient.  Such a call is refused at
its line when it may write an array (``refuse_hidden_writes``); a call of a primitive
whose result is dropped (``np.sum(y)``), ``print``, and the copies of generated gradient
code write none out of sight (the primitive table's ``hides_writes`` fact).  Forward mode
refuses it only where a tangent is at stake (the array, a name sharing its buffer or an
operand of the call is active): its tangent would keep the old values' tangent, while a
write into an inactive array changes only primal values, which the tangent code computes
in order.

>>> import numpy as np
>>> from jitgrad.transpiler.analysis.kinds import Kind
>>> an = type("An", (), {"kinds": {"y": Kind("f", 1), "a": Kind("f", 1)},
...                      "kind": lambda self, n: self.kinds[n]})()
>>> call = lambda src: ast.parse(src).body[0]
>>> hidden_write(call("y.fill(0.5)"), an, {"np": np})
'y'
>>> hidden_write(call("np.copyto(y, a)"), an, {"np": np})
'y'
>>> hidden_write(call("z = np.multiply(a, 2.0, out=y)"), an, {"np": np})
'y'
>>> hidden_write(call("np.sum(y)"), an, {"np": np}) is None
True
"""

from __future__ import annotations

import ast

from ...rules.primitives import draws, hides_writes, method_function
from ..astutil import resolve
from ..nodes import nodes_of, walk
from .kinds import list_tape_call


def hidden_write(s: ast.stmt, an, env: dict) -> str | None:
    """The array a call in ``s`` may write into, out of the assignments' sight: an
    ``out=`` argument of any call, or an array operand of a call whose result ``s``
    drops (an expression statement) whose function may hide a write (the primitive
    table's ``hides_writes`` fact); else None."""
    v = s.value if isinstance(s, (ast.Expr, ast.Assign)) else None
    if not isinstance(v, ast.Call):
        return None
    for k in v.keywords:
        if k.arg == "out" and isinstance(k.value, ast.Name) and an.kind(k.value.id).is_array:
            return k.value.id
    if not isinstance(s, ast.Expr) or list_tape_call(v, "append", an.kinds) is not None:
        return None
    fn = resolve(v.func, env)
    if fn is not None and not hides_writes(fn):
        return None
    operands = list(v.args)
    if fn is None and isinstance(v.func, ast.Attribute):  # a method: y.fill(0.5), y.sum()
        if method_function(v.func.attr) is not None:
            return None
        operands.insert(0, v.func.value)
    for a in operands:
        if isinstance(a, ast.Name) and an.kind(a.id).is_array:
            return a.id
    return None


def refuse_hidden_writes(stmts: list[ast.stmt], an, env: dict, parsed,
                         tangents: bool = False) -> None:
    """Raise a ``TransformError`` at the first statement whose call may write into an array
    (``hidden_write``); with ``tangents`` (forward mode), an ``out=`` anywhere (Numba
    compiles none) and other calls only where they may change a tangent (module
    docstring)."""
    for s in stmts:
        n = hidden_write(s, an, env)
        if n is None:
            continue
        if tangents and not any(k.arg == "out" for k in s.value.keywords) and not (
                an.aliases(n) | {m.id for m in walk(s.value) if isinstance(m, ast.Name)}) \
                & an.active:
            continue
        un = parsed.user_name(n)
        call = parsed.user_source(s.value.func)
        raise parsed.error(
            f"'{call}(...)' may change the array '{un}' in place; jitgrad follows only writes "
            f"by assignment ('{un}[...] = ...', '{un} += ...'), and would differentiate "
            f"as if '{un}' kept its old values", s,
            f"assign the new values instead ('{un}[:] = ...', or '{un} = ...' with a new "
            "array, e.g. 'y = a * b' rather than 'np.multiply(a, b, out=y)')")


def first_draw(stmts: list[ast.stmt], env: dict) -> ast.Call | None:
    """The first call in ``stmts`` that draws from (or seeds) a global random generator
    (``np.random.normal(...)``, ``random.random()``: the primitive table's ``random``
    fact), else None: code that runs ``stmts`` again must replay the generator's state."""
    for s in stmts:
        for v in nodes_of(s):
            if isinstance(v, ast.Call) and draws(resolve(v.func, env)):
                return v
    return None


__all__ = ["first_draw", "hidden_write", "refuse_hidden_writes"]
