"""Forward mode's machinery: the jvp code of a ``Differentiated`` function (generated,
compiled and kept in its specialisation cache, ``specialise.py``), its tangent-only
variant, and the gradient code ``hvp`` and ``hessian`` apply it to (forward over reverse,
``second_order.py``).

``api.py`` (``Differentiated.jvp``, ``source(mode="jvp")``) and the public functions of
``forward_api.py`` call it; it imports neither.
"""

from __future__ import annotations

import linecache
import time
from typing import Any

import numpy as np

from . import report
from .arguments import STRUCTURED, describe_kinds, guess_args, refuse_aliased, signature
from .errors import TransformError
from .second_order import gradient_function
from .transpiler.backend import jit as backend
from .transpiler.forward_pipeline import (
    JVP,
    VECTOR,
    generate_jvp,
    tangent_source,
    transform_jvp,
)


def check_wrt_kinds(d: Any, args: tuple) -> dict:
    """The argument kinds, after refusing what the generated code cannot take (arity,
    complex, float16, 0-d arrays, integer ``wrt`` arguments)."""
    d._prep()
    return d._kinds(args, "tangents")


def generated_jvp(d: Any, args: tuple) -> Any:
    """The compiled forward-mode code of ``d`` for these arguments' kinds (``d``'s
    ``"jvp"`` specialisations; a repeated call with the same argument types skips the
    checks, as ``_generated`` does)."""
    return d._specs.by_signature("jvp", signature(args), lambda: _generated_jvp_for(d, args))


def _generated_jvp_for(d: Any, args: tuple) -> Any:
    """``generated_jvp`` the long way: checks, kinds, and the cache keyed by kinds."""
    kinds = check_wrt_kinds(d, args)
    return d._specs.entry("jvp", tuple(sorted(kinds.items())), lambda: _build_jvp(d, kinds))


def _build_jvp(d: Any, kinds: dict) -> Any:
    """Transform and compile the forward-mode code of ``d`` for ``kinds``, timed."""
    what = f"{d.func.__qualname__}({describe_kinds(kinds)}) for forward mode"
    report.starting(f"transforming {what}")
    start = time.perf_counter()
    wrt = [d.params[i] for i in d.wrt_positions]
    gen = generate_jvp(d._prep(), wrt, kinds)
    u = gen.unit
    gen.compiled = _compile(d, u, {"jvp": u.sources["jvp"]}, u.names, u.workspaces)
    gen.transform_seconds = time.perf_counter() - start
    report.done(f"transformed {what} in {gen.transform_seconds:.2f} s")
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


class Columns:
    """A Jacobian's columns at these flat primals: ``seeds`` (the checked, converted
    tangents, one per ``wrt`` argument), ``call(seeds)`` running the jvp unchecked (the
    caller changes elements of ``seeds`` in place only, so their shapes and dtypes stay
    the checked ones), and ``vector()``: the vector code and the primals it takes before
    its seeds (``fixed``).  The primals are checked and the code found once."""

    def __init__(self, d: Any, gen: Any, args: tuple) -> None:
        k = len(args) - len(d.wrt_positions)
        self.d, self.gen, self.fixed, self.seeds = d, gen, args[:k], list(args[k:])

    def call(self, seeds: list[Any]) -> tuple[Any, Any]:
        return backend.call(self.gen.compiled, "jvp", (*self.fixed, *seeds))

    def vector(self) -> VectorCode:
        return vector_code(self.d, self.gen)


def jvp_columns(d: Any, primals: tuple, tangents: Any) -> Columns:
    """The ``Columns`` of ``d`` at these flat primals (``tangents``: zeros, checked)."""
    gen, args = _jvp_args(d, primals, tangents)
    return Columns(d, gen, args)


def _flat(d: Any, primals: Any, tangents: Any, kwargs: dict[str, Any] | None,
          what: str) -> tuple | None:
    """``(flat function, primals, tangents, None)`` for primals with tuples
    (``structured.py``: tangents in the structure of the ``wrt`` arguments), else None."""
    primals = d.bind(_primal_tuple(d, primals, what), kwargs)
    if not any(isinstance(a, tuple) for a in primals):
        return None
    f, fargs, _ = STRUCTURED["flat"](d, primals, "tangents")
    return f, fargs, STRUCTURED["flat_tangents"](d, primals, tangents, what), None


def tangent_of(d: Any, primals: Any, tangents: Any) -> Any:
    """``J @ tangents`` alone, by the tangent-only code (``tangent_code``)."""
    gen, args = _jvp_args(d, primals, tangents)
    return backend.call(tangent_code(d, gen), "tangent", args)[1]


def tangent_code(d: Any, gen: Any) -> Any:
    """The compiled ``"tangent"`` variant of ``d``'s forward-mode code ``gen``: no value,
    so none of the primal work only the value needs (built once, on first use)."""
    def make() -> Any:
        u = gen.unit
        names = {"tangent": u.namer.fresh(f"{u.name}_tangent_")}
        ws: dict[str, tuple[str, ...]] = {}
        src = tangent_source(u, "tangent", names["tangent"], ws)
        return _compile(d, u, {"tangent": src}, names, ws)

    return d._specs.derived("tangent", gen, (), make)


class VectorCode:
    """The compiled vector jvp of one specialisation (``modes/vector.py``), or why there
    is none (``refused``: ``jacfwd`` then runs one jvp per column)."""

    def __init__(self, compiled: Any, refused: str | None) -> None:
        self.compiled, self.refused = compiled, refused

    def call(self, args: tuple) -> tuple[Any, Any]:
        return backend.call(self.compiled, "vector", args)


def vector_code(d: Any, gen: Any) -> VectorCode:
    """The vector variant of ``d``'s forward-mode code ``gen`` (built once, on first use);
    a refusal is logged once, at INFO on ``logging.getLogger("jitgrad")``."""
    def make() -> VectorCode:
        u = gen.unit
        if u is None or u.ir is None:
            return _refused(d, "no forward-mode IR kept for this specialisation")
        with u.sources.WRITING:
            if u.vector is None and u.vector_refused is None:
                for p in VECTOR:
                    p.run(u)
        if u.vector is None:
            return _refused(d, u.vector_refused)
        ws: dict[str, tuple[str, ...]] = {"vector": u.workspaces.get("vector", ())}
        return VectorCode(_compile(d, u, {"vector": u.sources["vector"]}, u.names, ws), None)

    return d._specs.derived("vector", gen, (), make)


def _refused(d: Any, why: str | None) -> VectorCode:
    report.done(f"jacfwd of {d.func.__qualname__}: vector forward mode does not apply "
                f"({why}); one jvp per column")
    return VectorCode(None, why)


def jvp_source(d: Any, args: tuple, stage: str = "all") -> str:
    """The generated tangent code (``stage``: ``"all"`` or one of forward mode's passes)."""
    args = _example_args(d, args)
    if stage == "all":
        return generated_jvp(d, args).unit.sources["jvp"]
    names = [p.name for p in JVP + VECTOR]
    if stage not in names:
        raise ValueError(f"stage must be 'all' or one of {', '.join(names)} with mode='jvp'")
    kinds = check_wrt_kinds(d, args)
    u = transform_jvp(d._prep(), [d.params[i] for i in d.wrt_positions], kinds, until=stage)
    return next(p for p in JVP + VECTOR if p.name == stage).show(u).rstrip("\n") + "\n"


def _example_args(d: Any, args: tuple) -> tuple:
    """``args``, or arguments guessed from the source where none are given."""
    return d.bind(tuple(args)) if args else tuple(guess_args(d._prep(), d.params))


def hvp_source(d: Any, args: tuple) -> str:
    """The code ``jg.hvp`` runs for these arguments: the tangent-only forward mode of the
    gradient code (``_second``), with the seed ``_dret`` one."""
    args = _example_args(d, args)
    d2 = _second(d, args)
    try:
        return tangent_code(d2, generated_jvp(d2, (*args, 1.0))).sources["tangent"]
    except TransformError as e:
        raise _blamed(d, d2, e) from None


def _second(d: Any, args: tuple) -> Any:
    """The ``Differentiated`` gradient code of ``d`` at these kinds (same ``wrt``), whose
    jvp is the Hessian-vector product (cached on ``d``, per specialisation)."""
    gen = d._generated(args)
    refuse_aliased(d, gen, args)
    rk = gen.return_kinds
    if len(rk) != 1 or (rk[0] is not None and rk[0].ndim != 0):
        raise ValueError(f"hvp/hessian of {d.func.__name__} need a scalar output")

    def make() -> Any:
        d2 = gradient_function(d, args).differentiated(d)  # (not a structured.Flat)
        d2.options = dict(d.options)  # compiled as the user's function is (fastmath...)
        return d2

    return d._specs.derived("hvp", gen, (), make)


def _second_jvp(d: Any, d2: Any, primals: tuple, tangents: Any, both: bool = False) -> Any:
    """The jvp of the gradient code (``both``: ``(gradient, jvp)``, else the jvp alone); a
    refusal names the user's line (``_blamed``)."""
    try:
        if both:
            return jvp_of(d2, (*primals, 1.0), tangents)
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


__all__ = ["Columns", "VectorCode", "generated_jvp", "hvp_source", "jvp_columns", "jvp_of",
           "jvp_source", "tangent_code", "tangent_of", "vector_code"]
