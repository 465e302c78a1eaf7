"""Forward mode and second order: ``jvp``, ``jacfwd``, ``jacrev``, ``hessian``, ``hvp``.

``jvp`` runs one generated function holding the primal and its tangent statements
(``transpiler/modes/forward.py``), compiled with Numba under ``jit=True``.  ``jacfwd``
calls it once per input element, ``jacrev`` the existing reverse-mode pullback once per
output element.  ``hvp`` and ``hessian`` are forward-over-reverse: the forward pass is
applied to the generated gradient code (``second_order.py``), compiled as one function.
"""

from __future__ import annotations

import linecache
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import report, rules
from .api import (
    Differentiated,
    GradFunction,
    _as_diff,
    _guess_args,
    _signature,
    describe_kinds,
    pick_wrt,
    refuse_aliased,
)
from .errors import TransformError
from .kernels import rng
from .second_order import gradient_function
from .transpiler.backend import jit as backend
from .transpiler.forward_pipeline import JVP, generate_jvp, tangent_source, transform_jvp

_LOCK = threading.Lock()


def _diff(f: Any, wrt: Any, jit: bool) -> Any:
    if isinstance(f, GradFunction):  # would otherwise differentiate the function itself
        raise TypeError(f"{f.diff.func.__name__} is a jg.grad/jg.value_and_grad transform; "
                        "forward mode and jacobians take the function itself: use "
                        "jg.hvp(f, primals, v) or jg.hessian(f) for derivatives of the "
                        "gradient")
    return _as_diff(f, wrt, jit, "cpu")


def check_wrt_kinds(d: Any, args: tuple) -> dict:
    """The argument kinds, after refusing what the generated code cannot take (arity,
    complex, float16, 0-d arrays, integer ``wrt`` arguments)."""
    d._prep()
    return d._kinds(args, "tangents")


def generated_jvp(d: Any, args: tuple) -> Any:
    """The compiled forward-mode code of ``d`` for these arguments' kinds (cached on ``d``;
    a repeated call with the same argument types skips the checks, as ``_generated`` does)."""
    sig = _signature(args)
    by_sig = d.__dict__.setdefault("_jvp_by_signature", {})
    if sig is not None:
        hit = by_sig.get(sig)
        if hit is not None and hit[0] == rules.version():
            return hit[1]
    gen = _generated_jvp_for(d, args)
    if sig is not None:
        by_sig[sig] = (rules.version(), gen)
    return gen


def _generated_jvp_for(d: Any, args: tuple) -> Any:
    """``generated_jvp`` the long way: checks, kinds, and the cache keyed by kinds."""
    kinds = check_wrt_kinds(d, args)
    key = ("jvp", tuple(sorted(kinds.items())), rules.version())
    cache = d.__dict__.setdefault("_jvp_cache", {})
    with _LOCK:
        gen = cache.get(key)
        if gen is None:
            what = f"{d.func.__qualname__}({describe_kinds(kinds)}) for forward mode"
            report.starting(f"transforming {what}")
            start = time.perf_counter()
            wrt = [d.params[i] for i in d.wrt_positions]
            gen = generate_jvp(d._prep(), wrt, kinds)
            u = gen.unit
            gen.compiled = _compile(d, u, {"jvp": u.sources["jvp"]}, u.names, u.workspaces)
            gen.transform_seconds = time.perf_counter() - start
            report.done(f"transformed {what} in {gen.transform_seconds:.2f} s")
            cache[key] = gen
    return gen


def _compile(d: Any, u: Any, sources: dict[str, str], names: dict[str, str],
             workspaces: dict[str, tuple[str, ...]]) -> Any:
    """Forward-mode ``sources`` of unit ``u`` built as ``d``'s code is (jit, options)."""
    return backend.build(sources, names, u.env, d.func.__qualname__, d.jit, frozenset(),
                         workspaces=workspaces, options=d.options)


def _tangent_like(t: Any, p: Any, d: Any, i: int, what: str = "jvp") -> Any:
    """``t`` as a tangent of the primal ``p`` (argument ``i`` of ``d``): same shape,
    ``p``'s float dtype."""
    if type(t) is float and not isinstance(p, np.ndarray):
        return t
    if type(t) is np.ndarray and type(p) is np.ndarray and t.dtype == p.dtype \
            and t.shape == p.shape and p.dtype.kind == "f":
        return t  # the common case, without the checks below
    what = f"{what} of {d.func.__name__}, argument {i} ('{d.params[i]}')"
    expected = f"one tangent per wrt argument ({_wrt_names(d)})"
    if isinstance(p, np.ndarray):
        try:
            ta = np.asarray(t)
        except ValueError:  # a ragged tuple (tangents for several arguments, say)
            raise ValueError(f"{what}: the tangent is a {type(t).__name__} that is not an "
                             f"array of the primal's shape {p.shape} ({expected})") from None
        if ta.dtype.kind not in "fiub" or ta.shape != p.shape:
            raise ValueError(f"{what}: tangent has shape {ta.shape}"
                             f"{'' if ta.dtype.kind in 'fiub' else ' and dtype ' + str(ta.dtype)}"
                             f", the primal has shape {p.shape} ({expected})")
        # no copy: the generated code copies the tangents of arguments it writes
        return np.asarray(ta, dtype=p.dtype if p.dtype.kind == "f" else np.float64)
    if isinstance(t, (tuple, list)) or np.ndim(t) != 0 \
            or isinstance(t, (complex, np.complexfloating)):
        got = (f"a {type(t).__name__} of {len(t)}" if isinstance(t, (tuple, list)) else
               f"an array of shape {np.shape(t)}" if np.ndim(t) else "complex")
        raise ValueError(f"{what}: the primal is a scalar, the tangent is {got} ({expected})")
    return float(t)


def _wrt_names(d: Any) -> str:
    """``wrt=(0, 1): x, a``: how messages say which tangents ``d`` takes."""
    return f"wrt={d.wrt!r}: {', '.join(repr(d.params[i]) for i in d.wrt_positions)}"


def _tangents(d: Any, primals: tuple, tangents: Any, what: str = "jvp") -> tuple:
    """One tangent per ``wrt`` argument of ``d`` (a single value for a single ``wrt``; a
    1-tuple of one shaped like the primal is taken too, as JAX spells it)."""
    positions = d.wrt_positions
    if d.single:
        if isinstance(tangents, (tuple, list)) and len(tangents) == 1 \
                and len(primals) > positions[0] \
                and np.shape(tangents[0]) == np.shape(primals[positions[0]]):
            return (tangents[0],)
        return (tangents,)
    if type(tangents) is tuple:
        tans = tangents
    elif isinstance(tangents, list):
        tans = tuple(tangents)
    else:
        raise ValueError(f"{what} of {d.func.__name__}: wrt={d.wrt!r} is a tuple, so "
                         f"tangents must be a tuple of {len(positions)} ({_wrt_names(d)}), "
                         f"got one {type(tangents).__name__}")
    if len(tans) != len(positions):
        raise ValueError(f"{what} of {d.func.__name__}: {len(tans)} tangents for "
                         f"{len(positions)} wrt arguments ({_wrt_names(d)})")
    return tans


def _primal_tuple(d: Any, primals: Any, what: str = "jvp") -> tuple:
    if type(primals) is tuple:
        return primals
    if not isinstance(primals, (tuple, list)):
        raise TypeError(f"{what} of {d.func.__name__}: primals must be a tuple of all "
                        f"{len(d.params)} positional arguments ({', '.join(d.params)}), "
                        f"got {type(primals).__name__}")
    return tuple(primals)


def _seeds(d: Any, primals: tuple, tangents: Any, what: str = "jvp") -> list:
    """The tangents, checked against ``d``'s ``wrt`` and the primals' shapes."""
    tans = _tangents(d, primals, tangents, what)
    return [_tangent_like(t, primals[i], d, i, what)
            for t, i in zip(tans, d.wrt_positions, strict=True)]


def _jvp_args(d: Any, primals: Any, tangents: Any,
              kwargs: dict[str, Any] | None = None) -> tuple[Any, tuple]:
    """The forward-mode code for the primals' kinds and its arguments
    ``(*primals, *seeds)``, after the checks (the primals' first)."""
    primals = d.bind(_primal_tuple(d, primals), kwargs)
    _tangents(d, primals, tangents)
    gen = generated_jvp(d, primals)
    refuse_aliased(d, gen, primals)
    return gen, (*primals, *_seeds(d, primals, tangents))


def jvp_of(d: Any, primals: Any, tangents: Any,
           kwargs: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """``(f(*primals, **kwargs), J @ tangents)`` for the ``Differentiated`` function ``d``."""
    flat = _flat(d, primals, tangents, kwargs, "jvp")
    if flat is not None:  # tuple arguments: their entries' tangents
        return jvp_of(*flat)
    gen, args = _jvp_args(d, primals, tangents, kwargs)
    # the generated prologue copies the arguments it writes (and their tangents)
    return backend.call(gen.compiled, "jvp", args)


def _flat(d: Any, primals: Any, tangents: Any, kwargs: dict[str, Any] | None,
          what: str) -> tuple | None:
    """``(flat function, primals, tangents, None)`` for primals with tuples
    (``structured.py``: tangents in the structure of the ``wrt`` arguments), else None."""
    primals = d.bind(_primal_tuple(d, primals, what), kwargs)
    if not any(isinstance(a, tuple) for a in primals):
        return None
    from . import structured

    f, fargs, _ = structured.flat(d, primals, "tangents")
    return f, fargs, structured.flat_tangents(d, primals, tangents, what), None


def tangent_of(d: Any, primals: Any, tangents: Any) -> Any:
    """``J @ tangents`` alone, by the tangent-only code (``tangent_code``)."""
    gen, args = _jvp_args(d, primals, tangents)
    return backend.call(tangent_code(d, gen), "tangent", args)[1]


def tangent_code(d: Any, gen: Any) -> Any:
    """The compiled ``"tangent"`` variant of ``d``'s forward-mode code ``gen``: no value,
    so none of the primal work only the value needs (built once, on first use)."""
    compiled = gen.__dict__.get("tangent")
    if compiled is None:
        with _LOCK:
            compiled = gen.__dict__.get("tangent")
            if compiled is None:
                u = gen.unit
                names = {"tangent": u.namer.fresh(f"{u.name}_tangent_")}
                ws: dict[str, tuple[str, ...]] = {}
                src = tangent_source(u, "tangent", names["tangent"], ws)
                compiled = _compile(d, u, {"tangent": src}, names, ws)
                gen.tangent = compiled
    return compiled


def jvp_source(d: Any, args: tuple, stage: str = "all") -> str:
    """The generated tangent code (``stage``: ``"all"`` or one of forward mode's passes)."""
    args = _example_args(d, args)
    if stage == "all":
        return generated_jvp(d, args).unit.sources["jvp"]
    names = [p.name for p in JVP]
    if stage not in names:
        raise ValueError(f"stage must be 'all' or one of {', '.join(names)} with mode='jvp'")
    kinds = check_wrt_kinds(d, args)
    u = transform_jvp(d._prep(), [d.params[i] for i in d.wrt_positions], kinds, until=stage)
    return next(p for p in JVP if p.name == stage).show(u).rstrip("\n") + "\n"


def _example_args(d: Any, args: tuple) -> tuple:
    """``args``, or arguments guessed from the source where none are given."""
    return d.bind(tuple(args)) if args else tuple(_guess_args(d._prep(), d.params))


def hvp_source(d: Any, args: tuple) -> str:
    """The code ``jg.hvp`` runs for these arguments: the tangent-only forward mode of the
    gradient code (``_second``), with the seed ``_dret`` one."""
    args = _example_args(d, args)
    d2 = _second(d, args)
    try:
        return tangent_code(d2, generated_jvp(d2, (*args, 1.0))).sources["tangent"]
    except TransformError as e:
        raise _blamed(d, d2, e) from None


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
    from .structured import flat, grads_like

    f, fargs, trees = flat(d, args, what)
    out = jac(f, fargs)  # (the flat function's wrt is a tuple: one block per entry)
    if isinstance(out, tuple) and out and isinstance(out[0], tuple):  # one row per output
        return tuple(grads_like(d, trees, row) for row in out)
    return grads_like(d, trees, out)


def jacfwd(f: Callable, wrt: Any = None, *, argnums: Any = None,
           jit: bool = True) -> Callable[..., Any]:
    """The Jacobian function by forward mode: shape ``out.shape + x.shape`` (tuples nest
    as in JAX: outputs outer, ``wrt`` inner); one jvp per input element."""
    d = _diff(f, pick_wrt(wrt, argnums, "jacfwd"), jit)

    def jac(*args: Any, **kwargs: Any) -> Any:
        return _structured_jacobian(d, jac_flat, args, kwargs, "tangents")

    def jac_flat(d: Any, args: tuple) -> Any:
        positions = _wrt_list(d)
        zeros = [np.zeros_like(np.asarray(args[i], dtype=float)) if np.ndim(args[i]) else 0.0
                 for i in positions]
        cols: list[list[Any]] = [[] for _ in positions]
        value = None
        drawn = rng.capture() if d._draws() else None  # every column draws the same
        for k, i in enumerate(positions):
            x = args[i]
            for j in range(int(np.size(x))):
                seeds = list(zeros)
                if np.ndim(x):
                    e = np.zeros(np.shape(x))
                    e.flat[j] = 1.0
                    seeds[k] = e
                else:
                    seeds[k] = 1.0
                if drawn is not None:
                    rng.restore(drawn)
                value, tan = jvp_of(d, args, seeds[0] if d.single else tuple(seeds))
                cols[k].append(tan)
        tuple_out = isinstance(value, tuple)
        outs = value if tuple_out else (value,)
        per_out = []
        for o, out in enumerate(outs):
            row = []
            for k, i in enumerate(positions):
                col = [c[o] if tuple_out else c for c in cols[k]]
                m = np.stack([np.asarray(c, dtype=float).reshape(-1) for c in col], axis=-1)
                row.append(m.reshape(np.shape(out) + np.shape(args[i])))
            per_out.append(row)
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
            for j in range(int(np.size(out))):
                seeds = [np.zeros(np.shape(v)) if np.ndim(v) else 0.0 for v in outs]
                if np.ndim(out):
                    e = np.zeros(np.shape(out))
                    e.flat[j] = 1.0
                    seeds[o] = e
                else:
                    seeds[o] = 1.0
                g = pullback(tuple(seeds) if tuple_out else seeds[0])
                g = (g,) if d.single else g
                for k in range(len(positions)):
                    rows[k].append(g[k])
            row = []
            for k, i in enumerate(positions):
                m = np.stack([np.asarray(r, dtype=float).reshape(-1) for r in rows[k]])
                row.append(m.reshape(np.shape(out) + np.shape(args[i])))
            per_out.append(row)
        return _nest(per_out, tuple_out, d.single)

    return jac


__all__ = ["hessian", "hvp", "jacfwd", "jacrev", "jvp", "jvp_of", "jvp_source"]


def _second(d: Any, args: tuple) -> Any:
    """The ``Differentiated`` gradient code of ``d`` at these kinds (same ``wrt``), whose
    jvp is the Hessian-vector product (cached on ``d``, per specialisation)."""
    gen = d._generated(args)
    refuse_aliased(d, gen, args)
    cache = d.__dict__.setdefault("_second_cache", {})
    hit = cache.get(id(gen))
    if hit is not None and hit[0] is gen:
        return hit[1]
    rk = gen.return_kinds
    if len(rk) != 1 or (rk[0] is not None and rk[0].ndim != 0):
        raise ValueError(f"hvp/hessian of {d.func.__name__} need a scalar output")
    d2 = Differentiated(gradient_function(d, args), wrt=d.wrt, jit=d.jit)
    d2.options = dict(d.options)  # compiled as the user's function is (fastmath...)
    cache[id(gen)] = (gen, d2)
    return d2


def _second_jvp(d: Any, d2: Any, primals: tuple, tangents: Any) -> Any:
    """The jvp of the gradient code; a refusal names the user's line (``_blamed``)."""
    try:
        return tangent_of(d2, (*primals, 1.0), tangents)
    except TransformError as e:
        raise _blamed(d, d2, e) from None


def _blamed(d: Any, d2: Any, e: TransformError) -> TransformError:
    """Forward mode's refusal ``e`` of ``d``'s gradient code ``d2``, at the user's line
    whose gradient code it is about (the generated line quoted in the message)."""
    where = {"filename": e.filename, "lineno": e.lineno, "source_line": e.source_line}
    what, generated = "", ""
    if e.filename.startswith("<jitgrad:"):
        code = d.func.__code__
        line = getattr(d2.func, "user_lines", {}).get(e.lineno)
        what = " of this line" if line is not None else ""
        line = code.co_firstlineno if line is None else line
        where = {"filename": code.co_filename, "lineno": line,
                 "source_line": linecache.getline(code.co_filename, line)}
        generated = f" (in its generated line '{e.source_line.strip()}')"
    return TransformError(
        f"hvp/hessian of {d.func.__name__}: forward mode cannot differentiate the "
        f"gradient code{what}: {e.msg}{generated}", **where,
        hint="d.source() shows the gradient code (d = jg.differentiate(f)); jacfwd of a "
             "hand-written gradient or finite differences of jg.grad are the "
             "alternatives")


def hvp(f: Callable, primals: tuple, tangents: Any, *, wrt: Any = None,
        jit: bool = True, **kwargs: Any) -> Any:
    """The Hessian-vector product ``H @ tangents`` of a scalar ``f`` (forward-over-reverse:
    forward mode applied to the generated gradient code); the structure of ``tangents``;
    ``primals`` may leave out arguments that have defaults."""
    d = _diff(f, wrt, jit)
    primals = d.bind(_primal_tuple(d, primals, "hvp"), kwargs)
    flat = _flat(d, primals, tangents, None, "hvp")
    if flat is not None:  # tuple arguments: H @ v in the structure of the wrt arguments
        from .structured import grads_like, tree

        return grads_like(d, tuple(tree(a) for a in primals),
                          hvp(flat[0], flat[1], flat[2], jit=jit))
    d._check_args(primals)
    seeds = _seeds(d, primals, tangents, "hvp")  # (checked against d's wrt, not d2's)
    d2 = _second(d, primals)
    t = _second_jvp(d, d2, primals, seeds[0] if d.single else tuple(seeds))
    return t if d.single or isinstance(t, tuple) else (t,)


def hessian(f: Callable, wrt: Any = None, *, argnums: Any = None,
            jit: bool = True) -> Callable[..., Any]:
    """The Hessian function of a scalar ``f`` (forward-over-reverse): shape
    ``x.shape + x.shape``; for a tuple ``wrt`` a tuple of tuples (``H[i][j]`` of shape
    ``x_i.shape + x_j.shape``), as JAX nests them."""
    d = _diff(f, pick_wrt(wrt, argnums, "hessian"), jit)

    def hess(*args: Any, **kwargs: Any) -> Any:
        args = d.bind(args, kwargs)
        from .structured import refuse

        refuse(d, args, "hessian")
        d2 = _second(d, args)
        positions = _wrt_list(d)
        zeros = [np.zeros(np.shape(args[i])) if np.ndim(args[i]) else 0.0 for i in positions]
        cols: list[list[Any]] = [[] for _ in positions]
        drawn = rng.capture() if d._draws() else None  # every column draws the same
        for k, i in enumerate(positions):
            for j in range(int(np.size(args[i]))):
                seeds = list(zeros)
                if np.ndim(args[i]):
                    e = np.zeros(np.shape(args[i]))
                    e.flat[j] = 1.0
                    seeds[k] = e
                else:
                    seeds[k] = 1.0
                if drawn is not None:
                    rng.restore(drawn)
                t = _second_jvp(d, d2, args, seeds[0] if d.single else tuple(seeds))
                cols[k].append(t if isinstance(t, tuple) else (t,))
        rows = []
        for a, ia in enumerate(positions):  # the gradient w.r.t. argument ia, outer
            row = []
            for k, ib in enumerate(positions):  # differentiated w.r.t. argument ib, inner
                m = np.stack([np.asarray(c[a], dtype=float).reshape(-1) for c in cols[k]],
                             axis=-1)
                row.append(m.reshape(np.shape(args[ia]) + np.shape(args[ib])))
            rows.append(row[0] if d.single else tuple(row))
        return rows[0] if d.single else tuple(rows)

    return hess
