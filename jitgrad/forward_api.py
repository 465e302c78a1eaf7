"""Forward mode and second order: ``jvp``, ``jacfwd``, ``jacrev``, ``hessian``, ``hvp``.

``jvp`` runs one generated function holding the primal and its tangent statements
(``transpiler/modes/forward.py``), compiled with Numba under ``jit=True``.  ``jacfwd``
runs its vector form (``transpiler/modes/vector.py``: the primal once, the tangents of up
to ``VECTOR_WIDTH`` input elements at a time), or where that does not apply the jvp once
per input element; ``jacrev`` the existing reverse-mode pullback once per
output element.  ``hvp`` and ``hessian`` are forward-over-reverse: the forward pass is
applied to the generated gradient code (``second_order.py``), compiled as one function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import config, structured
from .api import GradFunction, _as_diff
from .arguments import pick_wrt
from .errors import JitError
from .forward_mode import (
    _flat,
    _primal_tuple,
    _second,
    _second_jvp,
    _seeds,
    jvp_columns,
    jvp_of,
    jvp_source,
)
from .kernels import rng
from .transpiler.front.nested import register_differentiator


def _diff(f: Any, wrt: Any, jit: bool) -> Any:
    """The ``Differentiated`` of ``f``; of a ``jg.grad`` result, a function calling it, its
    gradient code inlined (``transpiler/front/nested.py``): ``jg.jacfwd(jg.grad(f))`` is
    the Hessian."""
    if isinstance(f, GradFunction) and wrt is None:
        wrt = f.diff.wrt
    return _as_diff(f, wrt, jit, "cpu")


register_differentiator(_diff)  # a nested jg.jvp(f, ...) call's f (front/nested.py)


# --- public functions --------------------------------------------------------------------


def jvp(f: Callable, primals: tuple, tangents: Any, *, wrt: Any = None,
        jit: bool = True, **kwargs: Any) -> tuple[Any, Any]:
    """``(f(*primals, **kwargs), tangent)``: the Jacobian-vector product by forward mode
    (like ``jax.jvp``); ``tangents`` is one value per ``wrt`` argument (a tuple for a tuple
    wrt); ``primals`` may leave out arguments that have defaults."""
    return jvp_of(_diff(f, wrt, jit), primals, tangents, kwargs)


def _wrt_list(d: Any) -> list[int]:
    return list(d.wrt_positions)


def _nest(per_out: list[list[Any]], tuple_out: bool, single: bool) -> Any:
    rows = [r[0] if single else tuple(r) for r in per_out]
    return tuple(rows) if tuple_out else rows[0]


def _structured_jacobian(d: Any, jac: Callable, args: tuple, kwargs: dict[str, Any],
                         what: str) -> Any:
    """``jac(d, args)``, or for tuple arguments ``jac`` of the flat function with each
    output's blocks in the structure of the ``wrt`` arguments (as JAX nests them)."""
    args = d.bind(args, kwargs)
    if not any(isinstance(a, tuple) for a in args):
        return jac(d, args)
    f, fargs, trees = structured.flat(d, args, what)
    out = jac(f, fargs)  # (the flat function's wrt is a tuple: one block per entry)
    if isinstance(out, tuple) and out and isinstance(out[0], tuple):  # one row per output
        return tuple(structured.grads_like(d, trees, row) for row in out)
    return structured.grads_like(d, trees, out)


def jacfwd(f: Callable, wrt: Any = None, *, argnums: Any = None,
           jit: bool = True) -> Callable[..., Any]:
    """The Jacobian function by forward mode: shape ``out.shape + x.shape`` (tuples nest
    as in JAX: outputs outer, ``wrt`` inner); the primal once per ``VECTOR_WIDTH`` input
    elements (vector forward mode), or one jvp per input element where that does not
    apply (the reason is logged at INFO on ``logging.getLogger("jitgrad")``)."""
    d = _diff(f, pick_wrt(wrt, argnums, "jacfwd"), jit)

    def jac(*args: Any, **kwargs: Any) -> Any:
        return _structured_jacobian(d, jac_flat, args, kwargs, "tangents")

    def jac_flat(d: Any, args: tuple) -> Any:
        positions = _wrt_list(d)
        zeros = [np.zeros(np.shape(args[i])) if np.ndim(args[i]) else 0.0 for i in positions]
        columns = jvp_columns(d, args, zeros[0] if d.single else tuple(zeros))
        cols = _vector_columns(d, columns, args, positions)
        value, blocks = cols if cols is not None else _forward_columns(d, columns, args,
                                                                       positions)
        tuple_out = isinstance(value, tuple)
        outs = value if tuple_out else (value,)
        per_out = [[_block(blocks.get((o, k)), out).reshape(np.shape(out) + np.shape(args[i]))
                    for k, i in enumerate(positions)] for o, out in enumerate(outs)]
        return _nest(per_out, tuple_out, d.single)

    return jac


def jacrev(f: Callable, wrt: Any = None, *, argnums: Any = None,
           jit: bool = True) -> Callable[..., Any]:
    """The Jacobian function by reverse mode (one pullback per output element); same
    shapes as ``jacfwd``."""
    d = _diff(f, pick_wrt(wrt, argnums, "jacrev"), jit)

    def jac(*args: Any, **kwargs: Any) -> Any:
        return _structured_jacobian(d, jac_flat, args, kwargs, "gradients")

    def jac_flat(d: Any, args: tuple) -> Any:
        value, pullback = d.vjp(*args)
        tuple_out = isinstance(value, tuple)
        outs = value if tuple_out else (value,)
        positions = _wrt_list(d)
        per_out = []
        for o, out in enumerate(outs):
            rows: list[list[Any]] = [[] for _ in positions]
            for e in _units(out):
                seeds = [np.zeros(np.shape(v)) if np.ndim(v) else 0.0 for v in outs]
                seeds[o] = e
                g = pullback(tuple(seeds) if tuple_out else seeds[0])
                g = (g,) if d.single else g
                for k in range(len(positions)):
                    rows[k].append(g[k])
            row = []
            for k, i in enumerate(positions):
                m = _stacked(rows[k], axis=0)
                row.append(m.reshape(np.shape(out) + np.shape(args[i])))
            per_out.append(row)
        return _nest(per_out, tuple_out, d.single)

    return jac


def hvp(f: Callable, primals: tuple, tangents: Any, *, wrt: Any = None,
        jit: bool = True, **kwargs: Any) -> Any:
    """The Hessian-vector product ``H @ tangents`` of a scalar ``f`` (forward-over-reverse:
    forward mode applied to the generated gradient code); the structure of ``tangents``;
    ``primals`` may leave out arguments that have defaults."""
    return _second_order(_diff(f, wrt, jit), primals, tangents, kwargs, both=False)


def grad_and_hvp(f: Callable, primals: tuple, tangents: Any, *, wrt: Any = None,
                 jit: bool = True, **kwargs: Any) -> tuple[Any, Any]:
    """``(gradient, H @ tangents)`` of a scalar ``f`` from one forward-over-reverse pass,
    as ``jax.jvp(jax.grad(f), primals, tangents)``: the pass ``hvp`` runs computes the
    gradient too, so both cost about one ``hvp`` rather than a ``grad`` plus an ``hvp``."""
    return _second_order(_diff(f, wrt, jit), primals, tangents, kwargs, both=True)


def _second_order(d: Any, primals: tuple, tangents: Any, kwargs: dict[str, Any],
                  both: bool) -> Any:
    """``H @ tangents`` (``both``: ``(gradient, H @ tangents)``) by the tangent code of
    ``d``'s gradient code; tuple arguments in the structure of the ``wrt`` arguments."""
    primals = d.bind(_primal_tuple(d, primals, "hvp"), kwargs)
    flat = _flat(d, primals, tangents, None, "hvp")
    if flat is not None:  # tuple arguments: H @ v in the structure of the wrt arguments
        trees = tuple(structured.tree(a) for a in primals)
        out = _second_order(flat[0], flat[1], flat[2], {}, both)
        if both:
            return tuple(structured.grads_like(d, trees, o) for o in out)
        return structured.grads_like(d, trees, out)
    d._check_args(primals)
    seeds = _seeds(d, primals, tangents, "hvp")  # (checked against d's wrt, not d2's)
    d2 = _second(d, primals)
    out = _second_jvp(d, d2, primals, seeds[0] if d.single else tuple(seeds), both)
    outs = out if both else (out,)
    outs = tuple(t if d.single or isinstance(t, tuple) else (t,) for t in outs)
    return outs if both else outs[0]


def hessian(f: Callable, wrt: Any = None, *, argnums: Any = None,
            jit: bool = True) -> Callable[..., Any]:
    """The Hessian function of a scalar ``f`` (forward-over-reverse): shape
    ``x.shape + x.shape``; for a tuple ``wrt`` a tuple of tuples (``H[i][j]`` of shape
    ``x_i.shape + x_j.shape``), as JAX nests them."""
    d = _diff(f, pick_wrt(wrt, argnums, "hessian"), jit)

    def hess(*args: Any, **kwargs: Any) -> Any:
        args = d.bind(args, kwargs)
        structured.refuse(d, args, "hessian")
        d2 = _second(d, args)
        positions = _wrt_list(d)
        zeros = [np.zeros(np.shape(args[i])) if np.ndim(args[i]) else 0.0 for i in positions]
        cols: list[list[Any]] = [[] for _ in positions]
        drawn = rng.capture() if d._draws() else None  # every column draws the same
        for k, i in enumerate(positions):
            for e in _units(args[i]):
                seeds = list(zeros)
                seeds[k] = e
                if drawn is not None:
                    rng.restore(drawn)
                t = _second_jvp(d, d2, args, seeds[0] if d.single else tuple(seeds))
                cols[k].append(t if isinstance(t, tuple) else (t,))
        rows = []
        for a, ia in enumerate(positions):  # the gradient w.r.t. argument ia, outer
            row = []
            for k, ib in enumerate(positions):  # differentiated w.r.t. argument ib, inner
                m = _stacked([c[a] for c in cols[k]], axis=-1)
                row.append(m.reshape(np.shape(args[ia]) + np.shape(args[ib])))
            rows.append(row[0] if d.single else tuple(row))
        return rows[0] if d.single else tuple(rows)

    return hess


#: the most directions (input elements) one call of the vector jvp pushes
VECTOR_WIDTH = 64
#: ... fewer where the largest argument's elements times the directions would pass this
#: (tangent arrays are about as large as the arrays of the function, times the directions)
VECTOR_ELEMENTS = 1 << 22


def _vector_columns(d: Any, columns: Any, args: tuple, positions: list[int]
                    ) -> tuple[Any, dict[tuple[int, int], np.ndarray]] | None:
    """``(value, blocks)`` as ``_forward_columns`` gives them, by the vector jvp: the
    columns in chunks of ``_width`` directions, each a unit seed with a trailing axis
    (scalar ``wrt`` arguments: a vector); None where vector forward mode does not apply
    (or there is no column)."""
    sizes = [int(np.size(args[i])) for i in positions]
    total = sum(sizes)
    if not total or not config.vector_jacfwd:
        return None
    vec, fixed = columns.vector(), columns.fixed
    if vec.refused is not None:
        return None
    width = _width(total, args)
    starts = np.cumsum([0, *sizes])
    drawn = rng.capture() if d._draws() else None  # every chunk draws the same
    value, blocks = None, {}
    for c0 in range(0, total, width):
        c1 = min(total, c0 + width)
        seeds = [_unit_seeds(args[i], starts[k], c0, c1) for k, i in enumerate(positions)]
        if drawn is not None:
            rng.restore(drawn)
        try:
            value, tan = vec.call((*fixed, *seeds))
        except JitError as e:  # Numba refused the vector code: the columns one by one
            if c0:
                raise
            vec.refused = f"Numba refused the vector code: {e}"
            return None
        _place(blocks, tan if isinstance(value, tuple) else (tan,), starts, c0, c1, total)
    return value, blocks


def _width(total: int, args: tuple) -> int:
    """The directions per vector jvp call (``VECTOR_WIDTH``, ``VECTOR_ELEMENTS``)."""
    largest = max([int(np.size(a)) for a in args if isinstance(a, np.ndarray)] or [1])
    return max(1, min(total, VECTOR_WIDTH, VECTOR_ELEMENTS // max(largest, 1)))


def _unit_seeds(arg: Any, start: int, c0: int, c1: int) -> np.ndarray:
    """The seed of one ``wrt`` argument (its elements are the directions ``start...``)
    for the directions ``c0:c1``: ``arg.shape + (c1 - c0,)``, 1.0 where they meet."""
    n = int(np.size(arg))
    dtype = arg.dtype if isinstance(arg, np.ndarray) and arg.dtype.kind == "f" else np.float64
    seed = np.zeros((n, c1 - c0), dtype)
    lo, hi = max(c0, start), min(c1, start + n)
    if lo < hi:
        seed[np.arange(lo - start, hi - start), np.arange(lo - c0, hi - c0)] = 1.0
    return seed.reshape(np.shape(arg) + (c1 - c0,))


def _place(blocks: dict[tuple[int, int], np.ndarray], tans: tuple, starts: np.ndarray,
           c0: int, c1: int, total: int) -> None:
    """The tangents of the directions ``c0:c1`` (``out.shape + (c1 - c0,)``) put in the
    blocks ``(output o, wrt k)``, columns last: in one chunk, views of them (copied
    where two outputs share one tangent array)."""
    seen: list[np.ndarray] = []
    for o, t in enumerate(tans):
        t = np.asarray(t)
        dtype = np.promote_types(t.dtype, np.float32)
        if c1 - c0 == total and not any(np.may_share_memory(t, u) for u in seen):
            seen.append(t)
            t = t.astype(dtype, copy=False)
            for k in range(len(starts) - 1):
                blocks[o, k] = t[..., starts[k]:starts[k + 1]]
            continue
        for k in range(len(starts) - 1):
            lo, hi = max(c0, starts[k]), min(c1, starts[k + 1])
            b = blocks.get((o, k))
            if b is None:
                b = blocks[o, k] = np.empty(t.shape[:-1] + (starts[k + 1] - starts[k],),
                                            dtype)
            if lo < hi:
                b[..., lo - starts[k]:hi - starts[k]] = t[..., lo - c0:hi - c0]


def _forward_columns(d: Any, columns: Any, args: tuple, positions: list[int]
                     ) -> tuple[Any, dict[tuple[int, int], np.ndarray]]:
    """``(value, blocks)``: one jvp per element of each ``wrt`` argument ``k``, its
    tangent of output ``o`` written into row ``j`` of ``blocks[o, k]`` (each tangent
    written contiguously; returned as a view with the columns last).  The seeds are
    checked once (``columns``, from ``jvp_columns``); each unit seed is one element set in
    place and reset after the tangent is copied out (it may be the tangent itself:
    ``return x``).  With no element to differentiate by, one call still gives the value
    that shapes the blocks."""
    drawn = rng.capture() if d._draws() else None  # every column draws the same
    seeds, call = columns.seeds, columns.call
    value = None if any(np.size(args[i]) for i in positions) else call(seeds)[0]
    blocks: dict[tuple[int, int], np.ndarray] = {}
    for k, i in enumerate(positions):
        n = int(np.size(args[i]))
        unit = seeds[k].reshape(-1) if isinstance(seeds[k], np.ndarray) else None
        for j in range(n):
            _unit_seed(seeds, k, unit, j, 1.0)
            if drawn is not None:
                rng.restore(drawn)
            value, tan = call(seeds)
            for o, t in enumerate(tan if isinstance(value, tuple) else (tan,)):
                b = blocks.get((o, k))
                if b is None:
                    dtype = np.promote_types(np.result_type(t), np.float32)
                    b = blocks[o, k] = np.empty((n, *np.shape(t)), dtype)
                b[j] = t
            _unit_seed(seeds, k, unit, j, 0.0)
    return value, {key: np.moveaxis(b, 0, -1) for key, b in blocks.items()}


def _unit_seed(seeds: list[Any], k: int, unit: np.ndarray | None, j: int, v: float) -> None:
    """Element ``j`` of seed ``k`` set to ``v``: through ``unit`` (the flat view of an array
    seed), or the scalar seed itself."""
    if unit is None:
        seeds[k] = v
    else:
        unit[j] = v


def _block(b: np.ndarray | None, out: Any) -> np.ndarray:
    """A Jacobian block, columns last (``_forward_columns`` and ``_vector_columns``), or
    the empty one of a ``wrt`` argument with no elements."""
    return np.zeros(np.shape(out) + (0,)) if b is None else b


def _units(x: Any) -> Iterator[Any]:
    """The unit seeds of ``x``'s elements, in order: arrays with one 1.0, or 1.0."""
    if not np.ndim(x):
        yield 1.0
        return
    for j in range(int(np.size(x))):
        e = np.zeros(np.shape(x))
        e.flat[j] = 1.0
        yield e


def _stacked(pieces: list[Any], axis: int) -> np.ndarray:
    """The pieces of a Jacobian (arrays or scalars) flattened and stacked, in the dtype
    they share, a float one at least (as JAX: float32 in, float32 out; complex stays)."""
    if not pieces:
        return np.zeros(0)
    dtype = np.promote_types(np.result_type(functools.reduce(np.result_type, pieces)),
                             np.float32)
    return np.stack([np.asarray(p, dtype=dtype).reshape(-1) for p in pieces], axis=axis)


__all__ = ["hessian", "hvp", "jacfwd", "jacrev", "jvp", "jvp_of", "jvp_source"]
