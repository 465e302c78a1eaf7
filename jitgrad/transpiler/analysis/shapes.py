"""Arrays that provably change shape from one loop trip to the next.

The reverse sweep gives each array one adjoint buffer shaped like its value, and a
checkpointed loop's snapshots one slot per state array: a loop-carried array rebound to
a slice, a concatenation or a difference of itself (``u = u[1:] * 0.9``) breaks both, so
such a loop is refused at its line (``refuse_loop_shape_changes``).  What cannot be
proved here is caught at run time (``kernels.helpers.SHAPE_MISMATCH``): ``unbroadcast``
raises where an adjoint cannot have been broadcast from its value, and ``same_shape``
where a value restored from a tape has another shape than its adjoint buffer (an array
that grows by broadcasting, ``y = y * x`` from one element, whose adjoint would otherwise
be broadcast into the buffer).
"""

from __future__ import annotations

import ast

from ...rules.primitives import fact, reshapes
from ..astutil import resolve
from ..front.desugar import name
from ..nodes import walk, walk_stmts


def shape_changer(v: ast.expr, n: str, temps: dict[str, ast.expr], env: dict,
                   an, seen: frozenset = frozenset()) -> bool:
    """Is ``v`` provably of another shape than the array ``n`` it is computed from: a
    concatenation (``np.concatenate``, ``np.append``...) or difference of ``n``, a slice
    of ``n`` that drops elements (``n[1:]``, ``n[:-1]``, ``n[::2]``), or an elementwise
    operation of such a value with numbers (``temps``: the body's one-definition names,
    followed once each)."""
    def changed(e: ast.expr) -> bool:
        if isinstance(e, ast.Name):
            return e.id in temps and e.id not in seen and shape_changer(
                temps[e.id], n, temps, env, an, seen | {e.id})
        return shape_changer(e, n, temps, env, an, seen)

    def scalar(e: ast.expr) -> bool:
        return isinstance(e, ast.Constant) or isinstance(e, ast.Name) and \
            not an.kind(e.id).is_array and e.id in an.kinds

    if isinstance(v, ast.Call) and reshapes(resolve(v.func, env)):
        names = {x.id for x in walk(v) if isinstance(x, ast.Name)}
        return n in names or any(changed(name(m)) for m in names)
    if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id == n \
            and isinstance(v.slice, ast.Slice):
        lo, hi, st = v.slice.lower, v.slice.upper, v.slice.step

        def const_int(e):
            return e.value if isinstance(e, ast.Constant) and isinstance(e.value, int) else \
                -e.operand.value if isinstance(e, ast.UnaryOp) and isinstance(
                    e.op, ast.USub) and isinstance(e.operand, ast.Constant) else None
        return (const_int(lo) or 0) > 0 or (const_int(hi) or 0) < 0 or \
            (const_int(st) or 1) > 1
    if isinstance(v, ast.BinOp):
        return changed(v.left) and scalar(v.right) or changed(v.right) and scalar(v.left)
    if isinstance(v, ast.UnaryOp):
        return changed(v.operand)
    if isinstance(v, ast.Call) and len(v.args) == 1 and not v.keywords:
        rec = fact(resolve(v.func, env))
        return rec is not None and rec.elementwise and changed(v.args[0])
    return False


def loop_temps(body: list[ast.stmt], n: str | None) -> dict[str, ast.expr]:
    """The names ``body`` binds exactly once (other than ``n``), with their values."""
    temps: dict[str, ast.expr | None] = {}
    for st in walk_stmts(body):
        if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
            t = st.targets[0].id
            temps[t] = st.value if t not in temps else None
    return {t: v for t, v in temps.items() if v is not None and t != n}


def refuse_loop_shape_changes(body: list[ast.stmt], an, env: dict, parsed) -> None:
    """Refuse, at its line, a loop that rebinds an array it carries from trip to trip to a
    value of provably another shape (its adjoint has one shape)."""
    for loop in walk_stmts(body):
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        inside: set[int] | None = None
        temps: dict[str, ast.expr] | None = None
        for st in walk_stmts(loop.body):
            if not (isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name)):
                continue
            n = st.targets[0].id
            if not an.kind(n).is_array or n not in an.active:
                continue
            if inside is None:  # (once per loop, and only for loops that rebind arrays)
                inside = {id(x) for x in walk_stmts(loop.body)}
                temps = loop_temps(loop.body, None)
            if all(id(d) in inside for d in an.defs.get(n, [])):
                continue  # made afresh in each trip
            if shape_changer(st.value, n, temps, env, an, frozenset({n})):
                user = parsed.user_name(n)
                raise parsed.error(
                    f"'{user}' changes shape from one loop trip to the next (rebound to a "
                    "slice, concatenation or difference of itself); jitgrad's reverse "
                    "sweep gives each array one gradient shape", st,
                    f"keep '{user}' one shape (preallocate it and write into it), or give "
                    "each trip's array its own name")


__all__ = ["loop_temps", "refuse_loop_shape_changes", "shape_changer"]
