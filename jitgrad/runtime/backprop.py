"""The graph and the reverse pass of the eager runtime (Tracker's ``back.jl``).

A :class:`Node` is one recorded call: its ``pullback`` and its ``parents`` (the
nodes of its tracked inputs). The value itself lives on the ``Tracked`` object that
owns the node, so the graph keeps only what pullbacks captured.

:func:`propagate` walks a graph iteratively (no recursion limit) in reverse
topological order: it counts, per pass, how many recorded uses each node has and
runs a node's pullback once all of them have sent their gradient. All per-pass
state lives in local dicts, so an exception in a pullback leaves the graph and
every ``.grad`` exactly as they were.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..errors import JitgradError, RuleError

__all__ = ["BackpropError", "Node", "back", "mark", "propagate", "seed", "shape_of"]

_ids = itertools.count()


class BackpropError(JitgradError, RuntimeError):
    """The reverse pass cannot run: a freed graph, a bad seed, a ``nobacksies``."""


class Node:
    """One recorded call: ``pullback(dy)`` returns one gradient per parent.

    A leaf (made by ``param``) has no pullback and owns the accumulated ``grad``.
    ``routes`` maps each parent to its entry in the pullback's tuple (see
    :func:`_call_pullback`).
    ``id`` grows with creation order; checkpoint uses it to tell its recomputed
    nodes from the ones that existed before.
    """

    __slots__ = ("pullback", "parents", "routes", "shape", "name", "id", "leaf", "grad",
                 "freed")

    def __init__(self, pullback: Callable[[Any], tuple] | None, parents: tuple[Node, ...],
                 shape: tuple[int, ...], name: str = "", grad: Any = None,
                 routes: tuple[int | tuple[int, int], ...] | None = None):
        self.pullback = pullback
        self.parents = parents
        self.routes = routes
        self.shape = shape
        self.name = name
        self.id = next(_ids)
        self.leaf = pullback is None
        self.grad = grad
        self.freed = False

    def __repr__(self) -> str:
        kind = "leaf" if self.leaf else ("freed" if self.freed else self.name)
        return f"<Node {kind} shape={self.shape}>"


def shape_of(x: Any) -> tuple[int, ...]:
    """``np.shape(x)``, fast for floats and arrays (it runs for every recorded op)."""
    if isinstance(x, float):
        return ()
    s = getattr(x, "shape", None)
    return s if isinstance(s, tuple) else np.shape(x)


def mark() -> int:
    """An id below that of every node created after this call."""
    return next(_ids)


def _accum(a: Any, b: Any) -> Any:
    """Sum two gradient contributions without writing into either (they may alias)."""
    return b if a is None else a + b


def _count_uses(root: Node, sink: Callable[[Node], bool]) -> dict[int, int]:
    """Per-pass reference counts: how many recorded edges reach each node from ``root``."""
    refs: dict[int, int] = {}
    stack = [root]
    seen = {id(root)}
    while stack:
        node = stack.pop()
        if node.freed:
            raise BackpropError(
                "this graph was already consumed by back(); rebuild it by running the "
                "forward computation again (or use jg.forward / jg.gradient, which can "
                "be pulled back several times)")
        if sink(node):
            continue
        for p in node.parents:
            refs[id(p)] = refs.get(id(p), 0) + 1
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    return refs


def _call_pullback(node: Node, dy: Any) -> list[Any]:
    """Run one pullback; return one gradient per parent, checked against its shape.

    ``node.routes[k]`` says where parent ``k``'s gradient sits in the pullback's tuple:
    an argument position, or ``(position, index)`` inside a list argument (None: the
    tuple lines up with the parents). Trailing option arguments may have no entry.
    """
    gs = node.pullback(dy)
    routes = node.routes
    try:
        if not isinstance(gs, (tuple, list)):
            raise TypeError
        if routes is None:
            if len(gs) != len(node.parents):
                raise IndexError
            picked = list(gs)
        else:
            picked = [gs[r] if isinstance(r, int) else
                      (None if gs[r[0]] is None else gs[r[0]][r[1]]) for r in routes]
    except (TypeError, IndexError):
        got = len(gs) if isinstance(gs, (tuple, list)) else type(gs).__name__
        raise RuleError(f"the pullback of {node.name} must return a tuple with one gradient "
                        f"per argument, got {got} for inputs at {routes}") from None
    for k, (p, g) in enumerate(zip(node.parents, picked, strict=True)):
        if g is not None and shape_of(g) != p.shape:
            raise RuleError(f"the pullback of {node.name} returned a gradient of shape "
                            f"{np.shape(g)} for input {k} of shape {p.shape}")
    return picked


def propagate(root: Node, dy: Any, *, sink: Callable[[Node], bool] | None = None,
              keep: Iterable[Node] = (), free: bool = False) -> dict[int, tuple[Node, Any]]:
    """Pull ``dy`` back from ``root``; return ``{id(node): (node, grad)}`` for sinks and ``keep``.

    Sinks (leaves by default) stop the walk and collect their total gradient; the
    nodes in ``keep`` report theirs as they pass. With ``free=True`` (``back``) the
    pullbacks and parents of walked nodes are dropped once the pass succeeded.
    """
    sink = sink or (lambda n: n.leaf)
    keep_ids = {id(n) for n in keep}
    refs = _count_uses(root, sink)
    grads: dict[int, Any] = {id(root): dy}
    out: dict[int, tuple[Node, Any]] = {}
    walked: list[Node] = []
    ready = [root]
    while ready:
        node = ready.pop()
        g = grads.pop(id(node), None)
        if id(node) in keep_ids and g is not None:
            out[id(node)] = (node, g)
        if sink(node):
            if g is not None:
                out[id(node)] = (node, g)
            continue
        walked.append(node)
        gs = _call_pullback(node, g) if g is not None else [None] * len(node.parents)
        for p, gp in zip(node.parents, gs, strict=True):
            if gp is not None:
                grads[id(p)] = _accum(grads.get(id(p)), gp)
            refs[id(p)] -= 1
            if refs[id(p)] == 0:
                ready.append(p)
    if free:
        for node in walked:
            node.pullback, node.parents, node.freed = None, (), True
    return out


def seed(y_shape: tuple[int, ...], dy: Any) -> Any:
    """The output gradient to start from: 1.0 for a scalar output, else ``dy`` as given."""
    if dy is None:
        if y_shape != ():
            raise BackpropError(f"the output has shape {y_shape}: pass dy, the gradient "
                                "of the output, e.g. back(y, np.ones_like(jg.data(y)))")
        return 1.0
    if isinstance(getattr(dy, "node", None), Node):
        dy = dy.data
    if np.shape(dy) != y_shape:
        raise BackpropError(f"dy has shape {np.shape(dy)} but the output has shape {y_shape}")
    return dy


def back(y: Any, dy: Any = None) -> None:
    """Accumulate the gradient of ``y`` into the ``.grad`` of every leaf it depends on.

    Tracker's ``back!``: ``dy`` defaults to 1 for a scalar ``y``. The graph is freed
    once the pass succeeds, so a second ``back`` over it raises :class:`BackpropError`.
    """
    node = getattr(y, "node", None)
    if not isinstance(node, Node):
        raise TypeError(f"back() needs a tracked value, got {type(y).__name__}")
    out = propagate(node, seed(node.shape, dy), free=True)
    for leaf, g in out.values():
        if isinstance(leaf.grad, np.ndarray) and leaf.grad.ndim > 0:
            leaf.grad += g
        else:
            leaf.grad = leaf.grad + g
