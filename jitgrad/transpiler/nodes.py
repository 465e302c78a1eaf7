"""AST node utilities with no dependencies on the passes: a fast structural copy.

``copy.deepcopy`` of a syntax tree goes through the generic pickling protocol and
recurses once per Python frame level per node; ``clone`` copies only what a tree
holds (nodes, lists of nodes, plain attributes) and is several times faster, which
keeps transform time linear in the size of the function.
"""

from __future__ import annotations

import ast
from typing import TypeVar

T = TypeVar("T")


def clone(node: T) -> T:
    """A copy of ``node`` (a node or a list of nodes); extra ``_jg_*`` attributes come too."""
    if isinstance(node, list):
        return [clone(x) for x in node]  # type: ignore[return-value]
    if not isinstance(node, ast.AST):
        return node
    new = node.__class__.__new__(node.__class__)
    d = new.__dict__
    for k, v in node.__dict__.items():
        if isinstance(v, ast.AST):
            d[k] = clone(v)
        elif isinstance(v, list):
            d[k] = [clone(x) if isinstance(x, ast.AST) else x for x in v]
        elif isinstance(v, (set, dict)):
            d[k] = v.copy()
        else:
            d[k] = v
    return new
