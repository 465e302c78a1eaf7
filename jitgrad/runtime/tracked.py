"""Tracked values: arrays and scalars that record every operation applied to them.

``param(x)`` makes a leaf. Operators, NumPy ufuncs (``__array_ufunc__``) and NumPy
functions (``__array_function__``) on tracked values look up the shared rule in
``jitgrad.rules`` at call time, run it on the plain data, and wrap the result in a
new ``Tracked`` whose :class:`~jitgrad.runtime.backprop.Node` holds the pullback.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from .. import rules as _rules  # noqa: F401  (registers the built-in rules)
from ..errors import RuleError
from ..rules.registry import is_non_differentiable, lookup
from .backprop import Node, shape_of

__all__ = ["Tracked", "apply", "data", "isleaf", "istracked", "param", "paused",
           "record", "recording", "track_call"]

# --- recording state ------------------------------------------------------------


class _State(threading.local):
    on = True                                # record nodes for ops on tracked values
    touched: dict[int, Node] | None = None   # while paused: nodes of tracked inputs read


_state = _State()


@contextmanager
def paused() -> Iterator[dict[int, Node]]:
    """Run without recording; yield the nodes of every tracked value an op reads."""
    prev = (_state.on, _state.touched)
    touched: dict[int, Node] = {}
    _state.on, _state.touched = False, touched
    try:
        yield touched
    finally:
        _state.on, _state.touched = prev
        if prev[1] is not None:
            prev[1].update(touched)


@contextmanager
def recording() -> Iterator[None]:
    """Record normally inside, even within :func:`paused` (checkpoint's recompute)."""
    prev = (_state.on, _state.touched)
    _state.on, _state.touched = True, None
    try:
        yield
    finally:
        _state.on, _state.touched = prev


# --- the tracked value ----------------------------------------------------------


def _binary(op: Callable[[Any, Any], Any]) -> tuple[Callable, Callable]:
    def forward(self, other):
        return apply(op, self, other)

    def reflected(self, other):
        return apply(op, other, self)

    return forward, reflected


class Tracked:
    """A value (``data``) plus the graph ``node`` that produced it.

    Works with plain NumPy: ``np.sin(W)``, ``W @ x``, ``W.sum()``, ``W[1:3]``, ``W.T``.
    Tracked values are immutable: build new arrays instead of writing into them.
    """

    __slots__ = ("data", "node", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, value: Any, node: Node):
        self.data = value
        self.node = node

    # --- inspection -------------------------------------------------------------
    @property
    def grad(self) -> Any:
        """The accumulated gradient of a leaf (None for a recorded intermediate)."""
        return self.node.grad if self.node.leaf else None

    @grad.setter
    def grad(self, value: Any) -> None:
        if not self.node.leaf:
            raise TypeError("only leaves (made by jg.param) hold a .grad")
        self.node.grad = value

    shape = property(lambda self: np.shape(self.data))
    ndim = property(lambda self: np.ndim(self.data))
    size = property(lambda self: np.size(self.data))
    dtype = property(lambda self: np.asarray(self.data).dtype)

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self) -> Iterator[Tracked]:
        for i in range(len(self.data)):
            yield self[i]

    def __repr__(self) -> str:
        kind = "leaf" if self.node.leaf else self.node.name
        return f"Tracked({self.data!r}, {kind})"

    def __format__(self, spec: str) -> str:
        return format(self.data, spec)

    def item(self) -> Any:
        """The value as a plain Python number (explicitly untracked)."""
        return np.asarray(self.data).item()

    # --- conversions that would silently drop the gradient ------------------------
    def __float__(self) -> float:
        raise TypeError("float() of a tracked value would drop its gradient (math.* functions "
                        "call it too): use the numpy function (np.sin), or jg.data(x) / "
                        "x.item() when you want the plain number")

    def __complex__(self) -> complex:
        raise TypeError("complex() of a tracked value would drop its gradient; use jg.data(x)")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("converting a tracked value with np.asarray/np.array would drop its "
                        "gradient; use jg.data(x) for the plain array")

    def __bool__(self) -> bool:
        return bool(self.data)

    def __int__(self) -> int:
        return int(self.data)

    def __index__(self) -> int:
        return operator.index(self.data)

    __hash__ = object.__hash__  # identity: Params and Grads key on the object

    # --- writes are refused ---------------------------------------------------------
    def __setitem__(self, index: Any, value: Any) -> None:
        raise TypeError("tracked values are immutable: writing into one (x[i] = ...) would "
                        "corrupt the gradients recorded through it. Build a new array "
                        "(np.where, np.concatenate), or change a leaf with jg.update(x, delta)")

    # --- operators ----------------------------------------------------------------
    __add__, __radd__ = _binary(operator.add)
    __sub__, __rsub__ = _binary(operator.sub)
    __mul__, __rmul__ = _binary(operator.mul)
    __truediv__, __rtruediv__ = _binary(operator.truediv)
    __floordiv__, __rfloordiv__ = _binary(operator.floordiv)
    __mod__, __rmod__ = _binary(operator.mod)
    __pow__, __rpow__ = _binary(operator.pow)
    __matmul__, __rmatmul__ = _binary(operator.matmul)
    __lt__ = _binary(operator.lt)[0]
    __le__ = _binary(operator.le)[0]
    __gt__ = _binary(operator.gt)[0]
    __ge__ = _binary(operator.ge)[0]
    __eq__ = _binary(operator.eq)[0]  # type: ignore[assignment]
    __ne__ = _binary(operator.ne)[0]  # type: ignore[assignment]

    def __neg__(self) -> Any:
        return apply(operator.neg, self)

    def __pos__(self) -> Any:
        return apply(operator.pos, self)

    def __abs__(self) -> Any:
        return apply(np.abs, self)

    def __getitem__(self, index: Any) -> Any:
        return apply(operator.getitem, self, index)

    # --- NumPy protocols ------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if "out" in kwargs:
            raise TypeError(f"numpy.{ufunc.__name__}(..., out=...) writes into an array; "
                            "tracked values cannot be written into, drop out=")
        if method != "__call__":
            raise RuleError(f"no gradient rule for numpy.{ufunc.__name__}.{method} on tracked "
                            "values; use a numpy function (e.g. np.sum) or jg.data(x)")
        if kwargs:
            raise TypeError(f"numpy.{ufunc.__name__} with keyword arguments {sorted(kwargs)} "
                            "is not supported on tracked values")
        return apply(ufunc, *inputs)

    def __array_function__(self, func: Callable, types: Any, args: tuple, kwargs: dict) -> Any:
        return apply(func, *args, **kwargs)

    # --- array methods (each is the numpy function of the same name) -----------------
    def sum(self, axis: Any = None, **kw: Any) -> Any:
        return apply(np.sum, self, axis=axis, **kw)

    def mean(self, axis: Any = None, **kw: Any) -> Any:
        return apply(np.mean, self, axis=axis, **kw)

    def prod(self, axis: Any = None, **kw: Any) -> Any:
        return apply(np.prod, self, axis=axis, **kw)

    def max(self, axis: Any = None, **kw: Any) -> Any:
        return apply(np.max, self, axis=axis, **kw)

    def min(self, axis: Any = None, **kw: Any) -> Any:
        return apply(np.min, self, axis=axis, **kw)

    def var(self, axis: Any = None, **kw: Any) -> Any:
        return apply(np.var, self, axis=axis, **kw)

    def std(self, axis: Any = None, **kw: Any) -> Any:
        return apply(np.std, self, axis=axis, **kw)

    def cumsum(self, axis: Any = None) -> Any:
        return apply(np.cumsum, self, axis=axis)

    def dot(self, other: Any) -> Any:
        return apply(np.dot, self, other)

    def clip(self, a_min: Any = None, a_max: Any = None) -> Any:
        return apply(np.clip, self, a_min, a_max)

    def reshape(self, *shape: Any) -> Any:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return apply(np.reshape, self, shape)

    def ravel(self) -> Any:
        return apply(np.ravel, self)

    flatten = ravel

    def transpose(self, *axes: Any) -> Any:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return apply(np.transpose, self, axes) if axes else apply(np.transpose, self)

    T = property(lambda self: apply(np.transpose, self))


# --- public helpers -------------------------------------------------------------------


def istracked(x: Any) -> bool:
    """True if ``x`` records its operations (a ``param`` or a result computed from one)."""
    return isinstance(x, Tracked)


def isleaf(x: Any) -> bool:
    """True for untracked values and for tracked leaves made by ``param``."""
    return not isinstance(x, Tracked) or x.node.leaf


def data(x: Any) -> Any:
    """The plain value inside ``x`` (``x`` itself if untracked; maps over lists and tuples)."""
    if isinstance(x, Tracked):
        return x.data
    if isinstance(x, list):
        return [data(v) for v in x]
    if isinstance(x, tuple):
        return tuple(data(v) for v in x)
    return x


def param(x: Any) -> Tracked:
    """A tracked leaf holding a float copy of ``x`` (ints become float64), ``.grad`` zeroed.

    As in Tracker, ``param`` of a tracked value is a recorded identity, not a leaf.
    """
    if isinstance(x, Tracked):
        return record(x.data, lambda dy: (dy,), (x,), "param")
    arr = np.array(x, copy=True)
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)
    elif arr.dtype.kind not in "fc":
        raise TypeError(f"param needs numbers, got {type(x).__name__} of dtype {arr.dtype}")
    if isinstance(x, np.ndarray) or arr.ndim > 0:
        value, grad = arr, np.zeros_like(arr)
    elif isinstance(x, (bool, int, float)):
        value, grad = float(arr), 0.0
    else:  # a numpy scalar keeps its type
        value = arr[()]
        grad = type(value)(0)
    return Tracked(value, Node(None, (), np.shape(value), "param", grad=grad))


# --- recording ------------------------------------------------------------------------


def _slots(args: Sequence[Any]) -> list[tuple[int, int | None, Tracked]]:
    """Where the tracked values sit in ``args``: ``(position, index-in-sequence, value)``."""
    found = []
    for i, a in enumerate(args):
        if isinstance(a, Tracked):
            found.append((i, None, a))
        elif isinstance(a, (list, tuple)):
            found.extend((i, j, v) for j, v in enumerate(a) if isinstance(v, Tracked))
    return found


_NAMES: dict[int, tuple[Any, str]] = {}


def _name(fn: Any) -> str:
    """``numpy.sin``, ``operator.add``...: how errors and nodes name a primitive (cached)."""
    hit = _NAMES.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    if isinstance(fn, np.ufunc):
        name = f"numpy.{fn.__name__}"
    else:
        module = getattr(fn, "__module__", None) or ""
        module = {"_operator": "operator", "builtins": ""}.get(module, module)
        short = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
        name = f"{module}.{short}" if module else short
    _NAMES[id(fn)] = (fn, name)
    return name


def record(value: Any, pullback: Callable[[Any], Sequence[Any]], args: Sequence[Any],
           name: str = "call") -> Any:
    """Wrap ``value`` in a new node whose parents are the tracked values in ``args``.

    ``pullback(dy)`` returns one gradient per positional argument (a sequence of
    gradients for an argument that is a list of arrays; None for no gradient);
    trailing option arguments such as ``axis`` may have no entry.
    Returns ``value`` itself when nothing in ``args`` is tracked or recording is paused.
    """
    return _record(value, pullback, args, _slots(args), name)


def _record(value: Any, pullback: Callable[[Any], Sequence[Any]], args: Sequence[Any],
            slots: list[tuple[int, int | None, Tracked]], name: str) -> Any:
    if not slots:
        return value
    if not _state.on:
        if _state.touched is not None:
            _state.touched.update((id(t.node), t.node) for _, _, t in slots)
        return value
    if isinstance(value, Tracked):
        value = value.data
    if isinstance(value, (tuple, list)):
        raise RuleError(f"{name} returned a {type(value).__name__}; the runtime records "
                        "single-output calls only")
    routes = tuple(i if j is None else (i, j) for i, j, _ in slots)
    parents = tuple(t.node for _, _, t in slots)
    return Tracked(value, Node(pullback, parents, shape_of(value), name, routes=routes))


def apply(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` on tracked arguments through its registered rule, recording one node."""
    if any(isinstance(v, Tracked) for v in kwargs.values()):
        raise TypeError(f"{_name(fn)}: pass tracked values positionally, not as keywords")
    slots = _slots(args)
    if not slots:
        return fn(*args, **kwargs)
    plain = [data(a) for a in args]
    if is_non_differentiable(fn):
        return fn(*plain, **kwargs)
    rule = lookup(fn)
    name = _name(fn)
    if rule is None:
        raise RuleError(f"no gradient rule for {name}: register one with "
                        f"@jg.grad_rule({name}), or call it on jg.data(x) if no "
                        "gradient should flow through it")
    if not _state.on:
        return _record(fn(*plain, **kwargs), None, args, slots, name)  # type: ignore[arg-type]
    value, pullback = rule.impl(*plain, **kwargs)
    return _record(value, pullback, args, slots, name)


def track_call(vjp_all: Callable[..., tuple[Any, Callable]], args: Sequence[Any],
               name: str | None = None) -> Any:
    """Call ``vjp_all(*plain_args) -> (value, pullback)`` and record it as ONE node.

    The bridge for compiled ``@differentiate`` functions inside eager model code:
    ``pullback(dy)`` returns one gradient per positional argument (None where none).
    ``vjp_all`` receives the tracked values' own data, so it must not write into its
    arguments: ``Differentiated._vjp_all`` runs the user's function (and, in the
    pullback, the generated code) on copies, and returns the user's function's value.
    """
    args = tuple(args)
    label = name or getattr(vjp_all, "__name__", "call")
    slots = _slots(args)
    if not slots:
        return vjp_all(*args)[0]
    plain = [data(a) for a in args]
    value, pullback = vjp_all(*plain)
    return _record(value, pullback, args, slots, label)
