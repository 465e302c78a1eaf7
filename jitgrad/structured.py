"""Tuple and namedtuple arguments (a JAX user's pytree of parameters).

A call with tuple arguments runs a flat version of the function: the transpiler's
``tuples`` pass gives it one parameter per entry (``transpiler/front/tuples.py``), and
the call passes the entries.  Gradients, tangents and Hessian-vector products come back
in the structure of the arguments they belong to: ``jg.grad(loss)((W, b), X)`` gives
``(dW, db)``, a namedtuple the same namedtuple type.  One flat function is kept per
structure (the types of the tuples, nested ones too) on the ``Differentiated`` it
belongs to.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .api import Differentiated
from .arguments import STRUCTURED
from .transpiler.analysis.kinds import of_value
from .transpiler.backend import cache as disk
from .transpiler.front.parse import parse_function
from .transpiler.front.tuples import leaf_names
from .transpiler.naming import names_in

#: a tuple argument's structure: None for an entry, else ``(type, entries)``
Tree = Any


def has_tuples(args: tuple) -> bool:
    """Does any argument need the flat version (a tuple or namedtuple)?"""
    return any(isinstance(a, tuple) for a in args)


def tree(v: Any) -> Tree:
    """The structure of one argument (its types, not its values)."""
    if isinstance(v, tuple):
        return type(v), tuple(tree(e) for e in v)
    return None


def leaves(v: Any) -> Iterator[Any]:
    """The entries of ``v``, depth first (``v`` itself if it is no tuple)."""
    if isinstance(v, tuple):
        for e in v:
            yield from leaves(e)
    else:
        yield v


def _shape(t: Tree) -> Any:
    """A ``Tree`` as the ``tuples`` pass takes it: entries and namedtuple field names."""
    if t is None:
        return None
    return tuple(_shape(e) for e in t[1]), getattr(t[0], "_fields", None)


def _count(t: Tree) -> int:
    return 1 if t is None else sum(_count(e) for e in t[1])


def rebuild(t: Tree, it: Iterator[Any]) -> Any:
    """Values taken from ``it`` in the structure ``t`` (a namedtuple's own type)."""
    if t is None:
        return next(it)
    vals = [rebuild(e, it) for e in t[1]]
    return t[0](vals) if t[0] is tuple else (
        t[0]._make(vals) if hasattr(t[0], "_make") else tuple(vals))


class Flat(Differentiated):
    """``parent``'s function with each tuple argument passed as its entries."""

    def __init__(self, parent: Differentiated, trees: tuple[Tree, ...]):
        super().__init__(parent._orig, wrt=parent.wrt, jit=parent.jit, cache=parent.cache,
                         has_aux=parent.has_aux, auto_checkpoint=parent.auto_checkpoint)
        self.parent, self.trees = parent, trees
        parsed = parse_function(parent.func)
        taken = names_in(parsed.tree) | set(parsed.free)
        params: list[str] = []
        self._tuples = {}
        wrt: list[int] = []
        for i, (p, t) in enumerate(zip(parent.params, trees, strict=True)):
            names = [p] if t is None else leaf_names(p, _shape(t), taken)
            if t is not None:
                self._tuples[p] = (_shape(t), names, i in parent.wrt_positions)
            if i in parent.wrt_positions:
                wrt.extend(range(len(params), len(params) + len(names)))
            params.extend(names)
        self.params, self._arity = params, len(params)
        self._positional = self._bindable = True
        self.wrt = self.wrt_positions = tuple(wrt)
        self.single = False
        if self._disk is not None:
            self._disk = disk.Store(self.func, self.jit, self.options, self.has_aux,
                                    extra=repr(self._tuples), checkpoint=self._checkpoint_key)
            self._disk.stats = parent._disk.stats  # (counted in the parent's cache_info)

    def unflatten(self, args: tuple) -> tuple:
        """The parent's arguments from the flat ones."""
        it = iter(args)
        return tuple(rebuild(t, it) for t in self.trees)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.parent(*self.unflatten(args))

    def _value(self, args: tuple) -> Any:
        return self.parent._value(self.unflatten(args))

    def _primal_fn(self) -> Any:
        return self.parent._primal_fn()

    def __repr__(self) -> str:
        return f"<jitgrad flat tuples of {self.parent!r}>"

    def __reduce__(self):
        return Flat, (self.parent, self.trees)


def flat(d: Differentiated, args: tuple, what: str = "gradients"
         ) -> tuple[Flat, tuple, tuple[Tree, ...]]:
    """The flat version of ``d`` for these (bound) arguments' structure, the flat
    arguments and the structure; a ``wrt`` tuple with an entry that cannot carry ``what``
    is refused."""
    if len(args) != len(d.params):
        d._check_args(args)
    trees = tuple(tree(a) for a in args)
    fargs: list[Any] = []
    for i, a in enumerate(args):
        if trees[i] is None:
            fargs.append(a)
            continue
        n = len(fargs)
        fargs.extend(leaves(a))
        if i in d.wrt_positions and not all(
                type(v) is float or (type(v) is np.ndarray and v.dtype.kind == "f")
                for v in fargs[n:]):
            _check_entries(d, i, a, what)
    f = d._bridges.get(("tuples", trees))
    if f is None:
        with d._lock:
            f = d._bridges.get(("tuples", trees))
            if f is None:
                f = d._bridges[("tuples", trees)] = Flat(d, trees)
    return f, tuple(fargs), trees


def _check_entries(d: Differentiated, i: int, arg: tuple, what: str) -> None:
    for path, v in _paths(arg, d.params[i]):
        k = of_value(v)
        if k.cls != "f":
            kind = "an integer" if k.cls in ("i", "b") else f"a {type(v).__name__}"
            raise TypeError(f"wrt argument {i} ('{d.params[i]}') of {d.func.__name__} is a "
                            f"tuple whose entry {path} is {kind}; only float scalars and "
                            f"float arrays carry {what} (pass e.g. float(x) or "
                            "x.astype(float), or move it to an argument not in wrt)")


def _paths(v: Any, base: str) -> Iterator[tuple[str, Any]]:
    if isinstance(v, tuple):
        for j, e in enumerate(v):
            yield from _paths(e, f"{base}[{j}]")
    else:
        yield base, v


def grads_like(d: Differentiated, trees: tuple[Tree, ...], flat_grads: Any) -> Any:
    """The flat version's gradients (one per entry of each ``wrt`` argument) in the
    structure ``trees`` of ``d``'s arguments."""
    it = iter(flat_grads if isinstance(flat_grads, tuple) else (flat_grads,))
    out = tuple(rebuild(trees[i], it) for i in d.wrt_positions)
    return out[0] if d.single else out


def flat_tangents(d: Differentiated, args: tuple, tangents: Any, what: str) -> tuple:
    """Tangents given in the structure of ``d``'s ``wrt`` arguments, as one per entry."""
    per = (tangents,) if d.single else tuple(tangents)
    if len(per) != len(d.wrt_positions):
        raise ValueError(f"{what} of {d.func.__name__}: {len(per)} tangents for "
                         f"{len(d.wrt_positions)} wrt arguments")
    out: list[Any] = []
    for t, i in zip(per, d.wrt_positions, strict=True):
        if tree(t) != tree(args[i]) and not (isinstance(args[i], tuple)
                                            and _same_shape(t, args[i])):
            raise ValueError(f"{what} of {d.func.__name__}: the tangent of argument {i} "
                             f"('{d.params[i]}') must have its structure "
                             f"({_describe(args[i])}), got {_describe(t)}")
        out.extend(leaves(t))
    return tuple(out)


def _same_shape(t: Any, a: Any) -> bool:
    """A plain tuple given for a namedtuple (or the reverse) of the same entries."""
    if isinstance(a, tuple):
        return isinstance(t, tuple) and len(t) == len(a) and all(
            _same_shape(x, y) for x, y in zip(t, a, strict=True))
    return not isinstance(t, tuple)


def _describe(v: Any) -> str:
    if isinstance(v, tuple):
        return f"{type(v).__name__}({', '.join(_describe(e) for e in v)})"
    return f"array{np.shape(v)}" if isinstance(v, np.ndarray) else type(v).__name__


def refuse(d: Differentiated, args: tuple, who: str) -> None:
    """Refuse tuple arguments where an entry point does not take them."""
    for i, a in enumerate(args):
        if isinstance(a, tuple):
            raise TypeError(f"jg.{who} of {d.func.__name__}: argument {i} ('{d.params[i]}') "
                            f"is a tuple, which {who} does not take; pass its entries as "
                            "separate arguments (grad, value_and_grad, vjp, jvp, hvp, "
                            "jacfwd and jacrev take tuples)")


def value_and_grad(d: Differentiated, args: tuple, want_value: bool) -> tuple[Any, Any]:
    """``d._value_and_grad`` for arguments with tuples: gradients in their structure."""
    f, fargs, trees = flat(d, args)
    value, g = f._value_and_grad(fargs, want_value)
    return value, grads_like(d, trees, g)


def vjp(d: Differentiated, args: tuple) -> tuple:
    """``d.vjp`` for arguments with tuples: the pullback's gradients in their structure."""
    f, fargs, trees = flat(d, args)
    out = f.vjp(*fargs)
    pb = out[1]

    def pullback(dy: Any) -> Any:
        return grads_like(d, trees, pb(dy))

    return (out[0], pullback, *out[2:])


STRUCTURED.update(flat=flat, flat_tangents=flat_tangents, value_and_grad=value_and_grad,
                  vjp=vjp)
