"""Webs: a name reused for unrelated values in different loops gets one name per value.

Two loops that each bind a temporary ``d`` (``d = x * a`` in one, ``d = x[:2] * s`` in
the other) use one name for two variables: no value of the first ``d`` reaches a read
in the second loop.  Read as one variable, ``d`` would be an array created inside a
loop and used after it, which the reverse pass refuses.  Here each *web* of the name
(definitions and the reads they reach, joined where a read is reached by several: the
def-use chains of beniget) gets its own name (``d``, ``d_1``), so each is local to its
loop.  A name whose definitions all reach common reads (a loop-carried accumulator)
keeps its one name.

Before::                       After::

    for i in range(3):             for i in range(3):
        d = x * a                      d = x * a
        s += np.sum(d * d)             s += np.sum(d * d)
    for j in range(2):             for j in range(2):
        d = x[:2] * s                  d_1 = x[:2] * s
        s += np.sum(d)                 s += np.sum(d_1)
"""

from __future__ import annotations

import ast
import copy

import beniget
import gast

from ..naming import Namer
from ..nodes import nodes_of, walk
from .inline import stored_names
from .parse import QuietChains

_COMPOUND = (ast.For, ast.While, ast.If, ast.With)


def split_webs(body: list[ast.stmt], returns: list[ast.expr], params: list[str],
               namer: Namer) -> None:
    """Rename, in place, each web but the first of every name bound inside two compound
    statements of one block (the only names that can have several webs worth splitting:
    a temporary reused by two loops)."""
    # (a parameter's other webs are kept whole; a loop index carries no gradient, and
    # one per loop would only rename it)
    names = _reused(body) - set(params) - _loop_indices(body)
    if not names:
        return
    for web in _webs(body, returns, params, names):
        new = namer.version(web[0].id)
        for node in web:
            node.id = new


def _reused(stmts: list[ast.stmt]) -> set[str]:
    """Names bound inside at least two compound statements of one block (any depth)."""
    out: set[str] = set()
    seen: set[str] = set()
    for s in stmts:
        if isinstance(s, _COMPOUND):
            here = stored_names([s])
            out |= here & seen
            seen |= here
            for f in ("body", "orelse"):
                out |= _reused(getattr(s, f, []) or [])
    return out


def _loop_indices(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for s in stmts for f in nodes_of(s) if isinstance(f, ast.For)
            for n in walk(f.target) if isinstance(n, ast.Name)}


def _webs(body: list[ast.stmt], returns: list[ast.expr], params: list[str],
          names: set[str]) -> list[list[ast.Name]]:
    """Every web of ``names`` except each name's first, as the ``ast.Name`` nodes it
    spans (the nodes are numbered through ``col_offset``, which gast copies)."""
    nodes = [n for s in [*body, *returns] for n in nodes_of(s) if isinstance(n, ast.Name)]
    saved = [{a: getattr(n, a) for a in ("col_offset", "lineno") if hasattr(n, a)}
             for n in nodes]
    for k, n in enumerate(nodes):  # a key gast copies onto its node
        n.col_offset, n.lineno = k, 1
    try:
        fn = ast.FunctionDef(name="_webs", args=_arguments(params), decorator_list=[],
                             body=[*_plain(body), ast.Return(value=ast.Tuple(elts=list(returns),
                                                                     ctx=ast.Load()))],
                             returns=None, type_params=[], lineno=1, col_offset=0)
        gmod = gast.ast_to_gast(ast.Module(body=[fn], type_ignores=[]))
        chains = QuietChains()
        chains.visit(gmod)
        parent = _union(chains, names)
    finally:
        for n, had in zip(nodes, saved, strict=True):  # as they were, absent ones too
            for a in ("col_offset", "lineno"):
                if a in had:
                    setattr(n, a, had[a])
                else:
                    delattr(n, a)
    return _later_webs(parent, nodes)


def _plain(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """``stmts`` with every node class gast knows (a checkpointed region, a subclass of
    ``ast.If``, as the ``if True:`` it runs as); the expressions are shared, not copied."""
    out: list[ast.stmt] = []
    for s in stmts:
        if any(isinstance(getattr(s, f, None), list) for f in ("body", "orelse")):
            s = copy.copy(s)
            if type(s) is not ast.If and isinstance(s, ast.If):
                s = ast.If(test=s.test, body=s.body, orelse=s.orelse)
            s.body = _plain(s.body)
            if hasattr(s, "orelse"):
                s.orelse = _plain(s.orelse)
        out.append(s)
    return out


def _arguments(params: list[str]) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params],
                         kwonlyargs=[], kw_defaults=[], defaults=[])


def _union(chains: beniget.DefUseChains, names: set[str]) -> dict[int, int]:
    """Union-find over the keys of ``names``' nodes: a definition with each read it
    reaches."""
    parent: dict[int, int] = {}

    def find(k: int) -> int:
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for node, d in chains.chains.items():
        if isinstance(node, gast.Name) and node.id in names:
            for u in d.users():
                if isinstance(u.node, gast.Name):
                    parent[find(u.node.col_offset)] = find(node.col_offset)
    return {k: find(k) for k in list(parent)}


def _later_webs(parent: dict[int, int], nodes: list[ast.Name]) -> list[list[ast.Name]]:
    """The nodes of each web but a name's first (the one reached first in ``nodes``)."""
    webs: dict[int, list[ast.Name]] = {}
    for k, n in enumerate(nodes):
        if k in parent:
            webs.setdefault(parent[k], []).append(n)
    firsts: set[str] = set()
    out: list[list[ast.Name]] = []
    for members in webs.values():  # (in the order of their first node)
        if members[0].id in firsts:
            out.append(members)
        firsts.add(members[0].id)
    return out


__all__ = ["split_webs"]
