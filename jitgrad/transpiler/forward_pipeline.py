"""Forward mode's passes, as data: the shared front end, then kinds, analyse, forward, lower.

``JVP`` reuses the kind-independent passes (``pipeline.PREPARE``: parse, single_exit,
inline, loops, normalize, versions) and the ``kinds`` and ``analyse`` passes of reverse
mode, then builds the ``Tangent`` record (``modes/forward.py``) and lowers it to one
function ``f_jvp(*params, *tangents) -> (value, tangent)``.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable

from .analysis.analyse import analyse
from .analysis.kinds import Kind
from .backend import emit, lower
from .backend.bounds import bounds_checks
from .backend.prange import Parallel
from .front.purity import builtins_unshadowed
from .front_passes import (
    SPECIALISE_FRONT,
    prange_,
    show_analysis,
    show_prange,
)
from .gradient_code import register_generate_jvp
from .modes.forward import forward
from .modes.vector import VectorRefused, fuse, vectorize
from .nodes import clone
from .pipeline import Generated, transform, written_args
from .unit import Pass, Unit


def analyse_tangent_(u: Unit) -> None:
    """``analyse`` for forward mode: a view's tangent is the same view of its base's
    tangent, made by the same statement, so views the reverse sweep cannot follow (a base
    rebound after its view, a view made again in a loop) are kept (``# ... view``).

    >>> print(example_jvp("analyse", '''
    ... def f(x, n):
    ...     y = x * 1.0
    ...     s = 0.0
    ...     for i in range(n):
    ...         z = y[1:]
    ...         y = y * x
    ...         z[0] = y[0] * 3.0
    ...         s += np.sum(z)
    ...     return s + np.sum(y)
    ... ''', args=(np.ones(3), 3)))
    # active: s, x, y, z; adjoints: s buffer, x buffer, y buffer, z view
    def f(x, n):
        y = x * 1.0
        s = 0.0
        for i in range(n):
            z = y[1:]
            y = y * x
            _t2 = y[0]
            _t = _t2 * 3.0
            z[0] = _t
            _t3 = np.sum(z)
            s = s + _t3
        _t5 = np.sum(y)
        _t4 = s + _t5
        return _t4
    """
    u.analysis = analyse(u.body, u.env, u.kinds, u.params, u.wrt, u.returns, u.parsed,
                         tangents=True)


def forward_(u: Unit) -> None:
    """Forward mode: tangent statements next to the primal's (the ``Tangent`` IR).

    >>> print(example_jvp("forward", '''
    ... def f(x, y):
    ...     return x * y + math.sin(x)
    ... '''))
    def f_jvp(x, y, x_dot, y_dot):
        _t2_dot = x_dot * y + y_dot * x
        _t2 = x * y
        _t3_dot = x_dot * np.cos(x)
        _t3 = math.sin(x)
        _t_dot = _t2_dot + _t3_dot
        _t = _t2 + _t3
        return (_t, _t_dot)
    """
    u.ir = forward(u.parsed, u.body, u.analysis, u.env, u.namer, u.params, u.wrt, u.returns,
                   u.name)


def show_tangent(u: Unit) -> str:
    """The Tangent IR as the jvp function, before dead code is removed."""
    return _shown(u.ir, f"{u.name}_jvp")


def _shown(ir, fname: str) -> str:
    """A Tangent IR as the function ``fname``, before dead code is removed."""
    ret = ast.Return(value=ast.Tuple(elts=[lower.result_expr(clone(list(ir.results))),
                                           lower.result_expr(clone(list(ir.tangents)))],
                                     ctx=ast.Load()))
    return emit.unparse(emit.function_def(fname, [*ir.params, *ir.seeds],
                                          clone(ir.body()) + [ret]))


def lower_jvp_(u: Unit) -> None:
    """The jvp function from the Tangent IR, without dead code.

    >>> print(example_jvp("lower_jvp", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         s = s * x + 1.0
    ...     return s
    ... ''', args=(0.5, 3)))
    def f_jvp_1(x, n, x_dot):
        s = 0.0
        s_dot = 0.0
        for i in range(n):
            _t_dot = s_dot * x + x_dot * s
            _t = s * x
            s_dot = _t_dot
            s = _t + 1.0
        return (s, s_dot)
    """
    u.names = {"jvp": u.namer.fresh(f"{u.name}_jvp_")}
    u.trees["jvp"] = tangent_tree(u, "jvp", u.names["jvp"], u.workspaces)
    u.sources["jvp"] = emit.unparse(u.trees["jvp"])


def tangent_source(u: Unit, variant: str, fname: str,
                   workspaces: dict[str, tuple[str, ...]]) -> str:
    """The source of forward mode's ``variant`` (``"jvp"``, or ``"tangent"``: no value)
    as ``fname`` (``tangent_tree``)."""
    return emit.unparse(tangent_tree(u, variant, fname, workspaces))


def tangent_tree(u: Unit, variant: str, fname: str,
                 workspaces: dict[str, tuple[str, ...]]) -> ast.FunctionDef:
    """Forward mode's ``variant`` as the function ``fname``, its kept tapes from a
    workspace (``lower.lower_tangent``), its prange loops parallel where their iterations
    are independent."""
    fn = lower.lower_tangent(u.ir, fname, workspaces, (u.env, u.namer), variant)
    return Parallel(u).function(fn) if u.parallel else fn


def bounds_jvp_(u: Unit) -> None:
    """Under ``jit=True`` (not ``parallel=True``), every array index of the jvp checked
    explicitly, as reverse mode's ``bounds`` step does (``backend/bounds.py``): the jvp is
    then compiled without Numba's per-access check.

    >>> print(example_jvp("bounds", '''
    ... def f(x, c):
    ...     s = 0.0
    ...     for i in range(1, x.shape[0]):
    ...         s += c * x[i - 1] * x[i - 1]
    ...     return s
    ... ''', args=(np.ones(3), 0.5), jit=True))
    def f_jvp_1(x, c, x_dot, c_dot):
        # every index is checked explicitly (below): compiled with boundscheck=False
        s = 0.0
        s_dot = 0.0
        _n = x.shape[0]
        # x_dot[i - 1], x[i - 1] checked once before the loop over i
        if _n - 1 > 0 and _n - 2 >= x_dot.shape[0]:
            raise IndexError('x_dot[i - 1], x[i - 1] out of range (line 4, loop over i)')
        for i in range(1, _n):
            _t3_dot = x_dot[i - 1]
            _t3 = x[i - 1]
            _t2_dot = c_dot * _t3 + _t3_dot * c
            _t2 = c * _t3
            _t4_dot = x_dot[i - 1]
            _t4 = x[i - 1]
            _t_dot = _t2_dot * _t4 + _t4_dot * _t2
            _t = _t2 * _t4
            s_dot = s_dot + _t_dot
            s = s + _t
        return (s, s_dot)
    """
    _checked(u, "jvp", lambda n: n)


def _checked(u: Unit, variant: str, kind_of: Callable[[Kind], Kind]) -> None:
    """``variant``'s tree with its indices checked (``bounds_checks``; the kinds of the
    tangents by ``kind_of`` of their values'), and its source again, where ``u.checked``."""
    fn = u.trees.get(variant)
    if not u.checked or fn is None:
        return
    known = dict(u.kinds)
    for n, t in u.namer.tangent_names().items():
        if n in known:
            known.setdefault(t, kind_of(known[n]))
    params = [a.arg for a in fn.args.args]
    body, _ = bounds_checks(fn.body, known.get, params, frozenset({u.namer.workspace}),
                            builtins_unshadowed(u.env, ("max", "range", "len")), u.env)
    u.sources[variant] = emit.unparse(emit.function_def(fn.name, params, body))


def vector_(u: Unit) -> None:
    """Vector forward mode (``modes/vector.py``): the tangent statements once per
    direction of ``_nd``, the primal once (what ``jacfwd`` runs); where it does not apply,
    the reason (``Unit.vector_refused``).

    >>> print(example_jvp("vector", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         s = s * x + math.sin(x)
    ...     return s
    ... ''', args=(0.5, 3)))
    def f_jvp_vector(x, n, x_dot):
        _nd = x_dot.shape[0]
        _t2_dot = np.zeros(_nd)
        _t_dot = np.zeros(_nd)
        s_dot = np.zeros(_nd)
        s = 0.0
        for _k in range(_nd):
            s_dot[_k] = 0.0
        for i in range(n):
            for _k in range(_nd):
                _t_dot[_k] = s_dot[_k] * x + x_dot[_k] * s
            _t = s * x
            _h = np.cos(x)
            for _k in range(_nd):
                _t2_dot[_k] = x_dot[_k] * _h
            _t2 = math.sin(x)
            for _k in range(_nd):
                s_dot[_k] = _t_dot[_k] + _t2_dot[_k]
            s = _t + _t2
        return (s, s_dot)
    """
    try:
        u.vector = vectorize(u.ir, u.analysis, u.namer, u.env, u.parallel)
        u.vector_refused = None
    except VectorRefused as e:
        u.vector, u.vector_refused = None, str(e)


def fuse_directions_(u: Unit) -> None:
    """The direction loops of each straight run fused, and the scalar tangents local to
    one fused loop made floats there (``modes/vector.fuse``).

    >>> print(example_jvp("fuse_directions", '''
    ... def f(x, y):
    ...     a = x * y
    ...     b = math.exp(a) * y
    ...     return a * b
    ... '''))
    def f_jvp_vector(x, y, x_dot, y_dot):
        _nd = x_dot.shape[0]
        _t2_dot = np.zeros(_nd)
        a = x * y
        _y = np.exp(a)
        _t = _y
        b = _t * y
        _t2 = a * b
        for _k in range(_nd):
            a_dot = x_dot[_k] * y + y_dot[_k] * x
            _t_dot = a_dot * _y
            b_dot = _t_dot * y + y_dot[_k] * _t
            _t2_dot[_k] = a_dot * b + b_dot * a
        return (_t2, _t2_dot)
    """
    if u.vector is not None:
        u.vector = fuse(u.vector)


def show_vector(u: Unit) -> str:
    """The vector Tangent IR as a function, or why vector forward mode does not apply."""
    if u.vector is None:
        return f"# vector forward mode does not apply: {u.vector_refused}\n"
    return _shown(u.vector.ir, f"{u.name}_jvp_vector")


def lower_vector_(u: Unit) -> None:
    """The vector jvp function ``f(*params, *seeds) -> (value, tangents)`` (each seed and
    tangent with a trailing axis of directions), without dead code; nothing where vector
    forward mode does not apply."""
    if u.vector is None:
        return
    u.names["vector"] = u.namer.fresh(f"{u.name}_jvp_vector_")
    ws: dict[str, tuple[str, ...]] = {}
    fn = lower.lower_tangent(u.vector.ir, u.names["vector"], ws, (u.env, u.namer))
    u.workspaces["vector"] = ws["jvp"]
    u.trees["vector"] = fn
    u.sources["vector"] = emit.unparse(fn)


def vector_bounds_(u: Unit) -> None:
    """The ``bounds`` pass on the vector jvp (a tangent has one more axis than its value:
    the directions, ``_nd`` long, so each ``[_k]`` of a direction loop is in range).

    >>> print(example_jvp("vector_bounds", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         s = s * x + math.sin(x)
    ...     return s
    ... ''', args=(0.5, 3), jit=True))
    def f_jvp_vector_1(x, n, x_dot):
        # every index is checked explicitly (below): compiled with boundscheck=False
        _nd = x_dot.shape[0]
        s_dot = np.zeros(_nd)
        s = 0.0
        # s_dot[_k] in range on every trip over _k (by the shapes)
        for _k in range(_nd):
            s_dot[_k] = 0.0
        # x_dot[_k], s_dot[_k] in range on every trip over i (by the shapes)
        for i in range(n):
            _t = s * x
            _h = np.cos(x)
            _t2 = math.sin(x)
            for _k in range(_nd):
                _t_dot = s_dot[_k] * x + x_dot[_k] * s
                _t2_dot = x_dot[_k] * _h
                s_dot[_k] = _t_dot + _t2_dot
            s = _t + _t2
        return (s, s_dot)
    """
    _checked(u, "vector", lambda k: Kind(k.cls, None if k.ndim is None else k.ndim + 1))


JVP: list[Pass] = [
    *SPECIALISE_FRONT,
    Pass("analyse", analyse_tangent_, show_analysis),
    Pass("prange", prange_, show_prange),
    Pass("forward", forward_, show_tangent),
    Pass("lower_jvp", lower_jvp_, lambda u: u.sources["jvp"]),
    Pass("bounds", bounds_jvp_, lambda u: u.sources["jvp"]),
]


#: vector forward mode, run on a unit ``JVP`` made (``jacfwd``: ``forward_mode.vector_code``)
VECTOR: list[Pass] = [
    Pass("vector", vector_, show_vector),
    Pass("fuse_directions", fuse_directions_, show_vector),
    Pass("lower_vector", lower_vector_,
         lambda u: u.sources.get("vector") or show_vector(u)),
    Pass("vector_bounds", vector_bounds_,
         lambda u: u.sources.get("vector") or show_vector(u)),
]


def transform_jvp(prep: Unit, wrt: list[str], arg_kinds: dict[str, Kind],
                  until: str | None = None) -> Unit:
    """Run forward mode's specialising passes on a copy of the prepared unit."""
    return transform(prep, wrt, arg_kinds, until, JVP + VECTOR if until in _VECTOR else JVP)


_VECTOR = {p.name for p in VECTOR}


def generate_jvp(prep: Unit, wrt: list[str], arg_kinds: dict[str, Kind]) -> Generated:
    """Forward mode's generated code for one specialisation, as the API keeps it."""
    u = transform_jvp(prep, wrt, arg_kinds)
    rk = [u.kinds.get(r.id) if isinstance(r, ast.Name) else None for r in u.returns]
    return Generated(u, rk, written=written_args(u))


def example_jvp(pass_name: str, source: str, args: tuple | None = None,
                jit: bool = False) -> str:
    """Like ``pipeline.example``, for forward mode's passes (floats are the ``wrt``)."""
    import linecache
    import math
    import textwrap

    import numpy as np

    from .analysis.kinds import of_value
    from .pipeline import prepare

    fname = f"<jitgrad-jvp-example-{next(_EXAMPLES)}>"
    text = textwrap.dedent(source).strip("\n") + "\n"
    linecache.cache[fname] = (len(text), None, text.splitlines(True), fname)
    ns: dict = {"np": np, "math": math}
    exec(compile(text, fname, "exec"), ns)
    func = ns[ast.parse(text).body[0].name]
    params = func.__code__.co_varnames[:func.__code__.co_argcount]
    values = args if args is not None else (1.0,) * len(params)
    kinds = {p: of_value(a) for p, a in zip(params, values, strict=True)}
    wrt = [p for p in params if kinds[p].cls == "f"]
    u = transform_jvp(prepare(func, jit=jit), wrt, kinds, until=pass_name)
    p = next(p for p in JVP + VECTOR if p.name == pass_name)
    return p.show(u).rstrip("\n")


_EXAMPLES = itertools.count(1)

register_generate_jvp(generate_jvp)  # nested jvp and hvp calls inline its code

__all__ = ["JVP", "VECTOR", "example_jvp", "generate_jvp", "transform_jvp"]
