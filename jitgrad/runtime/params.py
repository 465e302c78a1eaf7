"""The functional front of the runtime: ``Params``, ``Grads``, ``gradient``, ``forward``.

``gradient`` and ``forward`` never touch a leaf's ``.grad``: they collect the
gradients of one pass into fresh arrays, so they can be called (and their
pullbacks pulled) any number of times. ``update`` and ``zero_grad`` are the
in-place side: they change a leaf's data and its accumulated ``.grad``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from .backprop import BackpropError, Node, propagate, seed
from .tracked import Tracked, data, param

__all__ = ["Grads", "Params", "forward", "gradient", "update", "zero_grad"]


class Params:
    """An ordered set of tracked values, deduplicated by identity (not by value)."""

    def __init__(self, xs: Iterable[Any] = ()):
        self._items: list[Tracked] = []
        self._ids: set[int] = set()
        self.add(xs)

    def add(self, x: Any) -> Params:
        """Append ``x`` (or each tracked value inside a list, tuple or Params) if new."""
        if isinstance(x, (list, tuple, Params)):
            for v in x:
                self.add(v)
        elif not isinstance(x, Tracked):
            raise TypeError(f"Params holds tracked values; got {type(x).__name__} "
                            "(wrap it with jg.param first)")
        elif id(x) not in self._ids:
            self._ids.add(id(x))
            self._items.append(x)
        return self

    def __iter__(self) -> Iterator[Tracked]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> Tracked:
        return self._items[i]

    def __contains__(self, x: object) -> bool:
        return id(x) in self._ids

    def __repr__(self) -> str:
        return f"Params({[p.shape for p in self._items]})"

    def __reduce__(self):  # the identity set is rebuilt from the (pickled) values
        return Params, (list(self._items),)


class Grads(Mapping):
    """Gradients keyed by the parameter objects themselves: ``gs[W]``."""

    def __init__(self, pairs: Iterable[tuple[Tracked, Any]]):
        self._map = {id(p): (p, g) for p, g in pairs}

    def __getitem__(self, x: Any) -> Any:
        try:
            return self._map[id(x)][1]
        except KeyError:
            raise KeyError("this value is not one of the Params the gradient was taken "
                           "with respect to") from None

    def __contains__(self, x: object) -> bool:
        return id(x) in self._map

    def __iter__(self) -> Iterator[Tracked]:
        return (p for p, _ in self._map.values())

    def __len__(self) -> int:
        return len(self._map)

    def __reduce__(self):  # keyed by identity: rebuilt from the (pickled) pairs
        return Grads, (list(self._map.values()),)

    def __repr__(self) -> str:
        return f"Grads({len(self)} params)"


# --- one pass into fresh arrays --------------------------------------------------------


def _zero(x: Any) -> Any:
    return np.zeros_like(x) if isinstance(x, np.ndarray) else type(x)(0)


def _pull(y: Any, dy: Any, nodes: list[Node]) -> list[Any]:
    """Gradients of ``y`` (seeded with ``dy``) for ``nodes``; None where unreached."""
    if not isinstance(y, Tracked):
        seed(np.shape(y), dy)  # still check dy
        return [None] * len(nodes)
    out = propagate(y.node, seed(y.node.shape, dy), keep=nodes)
    return [out[id(n)][1] if id(n) in out else None for n in nodes]


def _check_loss(y: Any) -> None:
    v = data(y)
    if np.shape(v) != ():
        raise BackpropError(f"gradient needs a scalar loss, but the function returned shape "
                            f"{np.shape(v)}; use jg.forward(f, ...) and pass dy for "
                            "non-scalar outputs")
    if not np.isfinite(v):
        raise BackpropError(f"the loss is {v}: gradients of a non-finite loss are meaningless")


def _fill(grads: list[Any], xs: list[Tracked]) -> list[Any]:
    return [_zero(x.data) if g is None else g for g, x in zip(grads, xs, strict=True)]


def gradient(f: Callable[..., Any], *xs: Any) -> tuple[Any, ...] | Grads:
    """Compute now: ``gradient(f, x, y)`` -> ``(df/dx, df/dy)``; ``gradient(f, ps)`` -> Grads.

    With plain inputs each becomes a fresh leaf; with ``Params``, ``f()`` takes no
    arguments and unused parameters get zeros. The loss must be a finite scalar.
    """
    if not xs:
        raise TypeError("gradient(f, *xs) needs the inputs, or a jg.Params")
    if len(xs) == 1 and isinstance(xs[0], Params):
        ps = list(xs[0])
        y = f()
        _check_loss(y)
        return Grads(zip(ps, _fill(_pull(y, None, [p.node for p in ps]), ps), strict=True))
    leaves = [param(data(x)) for x in xs]
    y = f(*leaves)
    _check_loss(y)
    return tuple(_fill(_pull(y, None, [x.node for x in leaves]), leaves))


def forward(f: Callable[..., Any], *xs: Any) -> tuple[Any, Callable[..., Any]]:
    """Tracker's ``forward``: ``(y, pullback)``; ``pullback(dy)`` may be called repeatedly.

    ``pullback`` returns a tuple (one gradient per input), or ``Grads`` when ``xs`` is
    a single ``Params``; ``dy`` defaults to 1 for a scalar ``y``.
    """
    if len(xs) == 1 and isinstance(xs[0], Params):
        ps = list(xs[0])
        y = f()

        def pullback_params(dy: Any = None) -> Grads:
            return Grads(zip(ps, _fill(_pull(y, dy, [p.node for p in ps]), ps), strict=True))

        return data(y), pullback_params
    leaves = [param(data(x)) for x in xs]
    y = f(*leaves)

    def pullback(dy: Any = None) -> tuple[Any, ...]:
        return tuple(_fill(_pull(y, dy, [x.node for x in leaves]), leaves))

    return data(y), pullback


# --- in place ---------------------------------------------------------------------------


def _leaf(x: Any, who: str) -> Tracked:
    if not isinstance(x, Tracked) or not x.node.leaf:
        got = "a recorded intermediate" if isinstance(x, Tracked) else type(x).__name__
        raise TypeError(f"{who} needs a tracked leaf made by jg.param, got {got}")
    return x


def _clear(x: Tracked) -> None:
    g = x.node.grad
    if isinstance(g, np.ndarray):
        g[...] = 0
    else:
        x.node.grad = _zero(x.data)


def update(x: Tracked, delta: Any) -> Tracked:
    """Tracker's ``update!``: add ``delta`` to the leaf's data in place, then zero its grad."""
    _leaf(x, "update")
    d = data(delta)
    if isinstance(x.data, np.ndarray):
        if np.shape(d) != x.shape and np.broadcast_shapes(np.shape(d), x.shape) != x.shape:
            raise ValueError(f"update: delta of shape {np.shape(d)} does not fit {x.shape}")
        x.data += d
    else:
        if np.shape(d) != ():
            raise ValueError(f"update: delta of shape {np.shape(d)} for a scalar parameter")
        x.data = type(x.data)(x.data + d)
    _clear(x)
    return x


def zero_grad(params: Any) -> None:
    """Reset the accumulated ``.grad`` of each leaf in ``params`` (Params, list or one value)."""
    for p in Params([params] if isinstance(params, Tracked) else params):
        _clear(_leaf(p, "zero_grad"))
