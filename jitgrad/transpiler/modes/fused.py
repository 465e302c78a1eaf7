"""Chains of primitives whose derivative one formula gives cheaper than the chain rule.

``t = c / r`` of ``r = sqrt(u)`` (a primitive whose ``power`` is 0.5: ``np.sqrt``,
``math.sqrt``; the inverse distance of particle codes): the chain rule
through ``r`` costs two divisions (``dr = -dt c / r^2``, then ``du = dr / (2 r)``); the
derivative of ``c u^-1/2`` is one, ``-0.5 c / (r u)``.  Forward and reverse mode both ask
``reciprocal_sqrt`` whether a statement is such a chain.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...rules.primitives import power
from ..analysis.analyse import Analysis
from ..astutil import resolve
from ..notes import BLOCK, POS


@dataclass(frozen=True)
class ReciprocalSqrt:
    """``t = c / r`` with ``r = sqrt(u)``: the names and the constant."""

    c: float
    r: str
    u: str


def reciprocal_sqrt(s: ast.Assign, tgt: str, an: Analysis, env: dict) -> ReciprocalSqrt | None:
    """The chain ``t = c / r``, ``r = sqrt(u)`` ending at ``s`` (which assigns ``tgt``).

    Only where ``u``, ``r`` and ``t`` are one float scalar definition each, in this order
    in one block, so that ``u`` and ``r`` still hold the values ``t`` was computed from
    wherever ``t``'s derivative is taken."""
    v = s.value
    if not (isinstance(v, ast.BinOp) and isinstance(v.op, ast.Div)
            and isinstance(v.left, ast.Constant) and type(v.left.value) in (int, float)
            and isinstance(v.right, ast.Name)):
        return None
    r = v.right.id
    rdef = an.defs.get(r, [])
    if len(rdef) != 1 or not (isinstance(rdef[0], ast.Assign)
                              and isinstance(rdef[0].value, ast.Call)
                              and len(rdef[0].value.args) == 1
                              and not rdef[0].value.keywords
                              and isinstance(rdef[0].value.args[0], ast.Name)
                              and power(resolve(rdef[0].value.func, env)) == 0.5):
        return None
    u = rdef[0].value.args[0].id
    udef = an.defs.get(u, [])
    chain = [*udef, rdef[0], s]
    if len(udef) != 1 or not all(an.kind(n).ndim == 0 and an.kind(n).cls == "f"
                                 for n in (u, r, tgt)) \
            or len({BLOCK.get(x) for x in chain}) != 1 \
            or not POS.get(udef[0]) < POS.get(rdef[0]) < POS.get(s) \
            or len(an.defs.get(tgt, [])) != 1:
        return None
    return ReciprocalSqrt(float(v.left.value), r, u)


__all__ = ["ReciprocalSqrt", "reciprocal_sqrt"]
