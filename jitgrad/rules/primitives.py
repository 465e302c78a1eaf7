"""One record per primitive: everything jitgrad knows about a function it does not look inside.

A :class:`Primitive` holds a function's gradient rule (value and pullback), a slot for
its tangent rule, how its result's kind follows from its arguments, whether it returns
a view or a fresh array, whether it is cheap to recompute or allowed in device code,
and its other spellings (``x.sum()``, ``x.T``, ``np.add`` for ``+``).  The registry
(``grad_rule``, ``non_differentiable``) and the built-in table (``facts.py``) fill the
records; the transpiler's analyses and the runtime only read them, through ``fact``
and the small helpers below.  Nothing here imports the transpiler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RuleError

#: top-level modules that are not the user's code: never inlined, never compiled as helpers
LIBRARY_ROOTS = ("numpy", "math", "builtins", "numba", "scipy", "jitgrad")

#: top-level modules whose functions generated code calls as spelled (Numba compiles them)
_NUMBA_ROOTS = ("numpy", "math", "builtins", "_operator", "operator")


@dataclass(frozen=True)
class Result:
    """How a call's result kind (dtype class and ndim) follows from its arguments.

    ``how`` says which rule kind inference applies (``KindInference.call``):

    * ``"broadcast"``: elementwise over the broadcast arguments; the class is float
      (complex stays complex), or the arguments' own where ``cls="keep"`` (``np.floor``);
    * ``"same"``: the first argument's class, its ndim or ``ndim`` (an int, or a
      function of the first argument's ndim);
    * ``"fixed"``: class ``cls`` (``"b"``, ``"i"``, ``"f"``) and ndim ``ndim``;
    * ``"reduce"``: float, a scalar unless an ``axis=`` keyword keeps all but one axis;
    * ``"declared"``: ndim ``ndim(nd, **options)`` (see ``jitgrad.rules.results``), the
      arguments' class, float where ``cls="f"``, or the class of a ``dtype`` argument;
    * ``"arg"``: the kind of argument ``arg`` (``jg.hook``: its second);
    * ``"sequence"``: the joined kind of a tuple of arrays (argument ``arg``), ndim
      ``ndim(nd)`` of theirs;
    * ``"unknown"``: nothing can be said (kind inference refuses the value);
    * ``"helper"``: a split helper's (``front/split.py``): its own kind inference's;
    * a name of one of kind inference's own rules: ``"dot"``, ``"solve"``, ``"alloc"``
      (``np.zeros``...), ``"arange"``, ``"reshape"``, ``"cumsum"``, ``"where"``.
    """

    how: str
    cls: str | None = None
    ndim: int | Callable[..., Any] | None = None
    arg: int = 0


BROADCAST = Result("broadcast")
BROADCAST_KEEP = Result("broadcast", cls="keep")
SAME = Result("same")
REDUCE = Result("reduce")
UNKNOWN = Result("unknown")
INT = Result("fixed", "i", 0)
FLOAT = Result("fixed", "f", 0)
BOOL = Result("fixed", "b", 0)
SPECIAL = ("dot", "solve", "alloc", "arange", "reshape", "cumsum", "where")
RESULT_HOWS = ("broadcast", "same", "fixed", "reduce", "declared", "arg", "sequence",
               "unknown", "helper", *SPECIAL)


def fixed(cls: str, ndim: int) -> Result:
    """Always class ``cls`` and ``ndim`` dimensions (``np.eye``: ``fixed("f", 2)``)."""
    return Result("fixed", cls, ndim)


def declared(ndim_of: Callable[..., Any], float_result: bool = False) -> Result:
    """The ndim from ``ndim_of`` (``@grad_rule(f, ndim_of=..., float_result=...)``)."""
    return Result("declared", "f" if float_result else None, ndim_of)


def argument(k: int) -> Result:
    """The kind of the call's argument ``k`` (``@grad_rule(f, kind_of=k)``)."""
    return Result("arg", arg=k)


@dataclass
class Primitive:
    """Every fact about one primitive function.

    ``rule`` is its ``(value, pullback)`` rule (a ``registry.Rule``) or None; a primitive
    ``non_differentiable`` has outputs that carry no gradient; with neither, only the
    facts below are known (the transpiler refuses to differentiate through it).
    ``tangent`` is its forward-mode rule (none yet: forward mode comes later); ``linear``
    means its tangent is the primitive applied to the arguments' tangents (its other
    arguments, axes or indices, as they are), ``elementwise`` that it maps each element
    (after broadcasting) on its own.  ``view``: the result may share the first
    argument's buffer; ``allocates``: the result is a newly allocated array that nothing
    else reaches (``copies``: one holding a copy of the first argument).  ``mutates``: a
    method that changes the object it is called on (``x.sort()``, ``xs.pop()``).
    ``pure``: a call computes a value only (writes nothing it is given, draws nothing;
    ufuncs, ``math`` and primitives given a gradient rule by default), so it may be
    evaluated again elsewhere, or skipped; ``linear_in``: the positions of the arguments
    it is linear in, each on its own (``unbroadcast(g, x)``: ``(0,)``), so zero where
    any one of them is.  ``hides_writes``: a call whose result is dropped may write an
    array argument out of the reverse sweep's sight (``analysis.effects``); None, the
    default, means unless a gradient rule or ``non_differentiable`` covers the primitive
    (``print`` and the snapshot and slot helpers of generated code say False).
    ``reshapes``: the result is provably larger or smaller than an array among its
    arguments (``np.concatenate``, ``np.diff``).  ``shape_of``: the position of the
    argument whose shape the result has (``np.zeros_like``: 0, by default for a fresh
    array of the ``SAME`` kind); ``sums``: the result is the sum of its one argument's
    elements (``np.sum``); ``fill``: the value every element of a fresh array made from
    a shape or like an argument is (``np.zeros``, ``np.zeros_like``: 0.0);
    ``uninitialised``: a fresh array whose elements are whatever its memory held
    (``np.empty``, ``np.empty_like``: read before written, garbage); ``fresh``: the
    result shares no argument's buffer (a number, a ``range``; fresh arrays say
    ``allocates``); ``copies_into``: (destination, source), a call copies the source
    argument's elements into the destination argument's buffer (``restore_into(dst,
    src)``: ``(0, 1)``).  ``on_scalars``: compiled code may
    call it on scalars as on arrays, element by element (``backend/elements.py``; ufuncs
    and ``math`` by default, ``np.where``, ``abs``, generated code's masks).  ``cached_as``:
    the helper of ``kernels.helpers`` compiled generated code calls instead (only that
    call, cached on disk: ``"np_zeros_like"``).  ``shape_args``: the positions of the
    arguments it reads only for their shape and dtype (``unbroadcast(g, x)``: ``(1,)``).
    ``power``: a call ``fn(x)`` is ``x ** power`` (``np.sqrt``, ``math.sqrt``: 0.5), for
    the chains whose derivative one formula gives (``modes/fused.py``).
    ``cost``: what one scalar call costs to evaluate, in the units of
    ``TAPE_COST`` (an add 1, a division 4, ``sqrt`` 6, ``exp`` 20; None: unknown, never
    recomputed in the adjoint); ``cheap`` (a settable spelling of it): recomputing a
    scalar call costs no more than taping it;
    ``device``: allowed in CUDA device code, ``device_as`` how device code spells it
    (``"math.sin"`` for ``np.sin``, ``"abs"`` for ``np.abs``), ``device_rewrite`` how
    it writes one that is no renamed call: ``(args, names) -> ast.expr`` (``np.square``:
    ``x * x``; ``backend/device_rewrites.py``); ``ieee``: the plain-Python
    stand-in of a ``math`` function that gives inf/nan where ``math`` raises (generated
    code run with ``jit=False``); ``query``: depends only on its argument's
    shape or type.  ``random``: it draws from (or seeds) a global random generator, so
    that evaluating it again gives another value: never recomputed, and code that runs it
    again replays the generator's state (``kernels/rng.py``); ``size_arg``: the position
    of a NumPy draw's ``size`` argument (-1: the dimensions as arguments, ``np.random.rand``;
    None: kind inference does not know the draw).  ``methods`` and ``attrs``
    are the array methods (``x.sum()``) and attributes (``x.T``) that spell it;
    ``aliases`` are the other functions that share its rule (``np.add`` and
    ``operator.add``).
    """

    fn: Any
    rule: Any = None
    non_differentiable: bool = False
    tangent: Callable[..., Any] | None = None
    linear: bool = False
    elementwise: bool = False
    result: Result = UNKNOWN
    view: bool = False
    allocates: bool = False
    copies: bool = False
    mutates: bool = False
    pure: bool = False
    linear_in: tuple[int, ...] = ()
    hides_writes: bool | None = None
    reshapes: bool = False
    shape_of: int | None = None
    sums: bool = False
    fill: float | None = None
    uninitialised: bool = False
    fresh: bool = False
    copies_into: tuple[int, int] | None = None
    on_scalars: bool = False
    cached_as: str | None = None
    shape_args: tuple[int, ...] = ()
    power: float | None = None
    cost: float | None = None
    device: bool = False
    device_as: str | None = None
    device_rewrite: Callable[..., Any] | None = None
    ieee: Callable[..., Any] | None = None
    query: bool = False
    random: bool = False
    size_arg: int | None = None
    methods: tuple[str, ...] = ()
    attrs: tuple[str, ...] = ()
    aliases: tuple[Any, ...] = ()

    @property
    def cheap(self) -> bool:
        """Is recomputing a scalar call no dearer than a tape round trip?"""
        return self.cost is not None and self.cost <= TAPE_COST

    @cheap.setter
    def cheap(self, value: bool) -> None:
        if value and not self.cheap:
            self.cost = 1.0
        elif not value and self.cheap:
            self.cost = None


#: what pushing one double on a tape in a loop and popping it in the adjoint costs, in
#: the units of ``Primitive.cost`` (the store, the load and the cursor, and the memory
#: traffic of a tape too big for the caches); a value that costs more is stored
TAPE_COST = 16.0

#: the record fields that ``declare`` (and ``grad_rule``'s keywords) may set
SETTABLE = ("tangent", "linear", "elementwise", "result", "view", "allocates", "copies",
            "mutates", "pure", "linear_in", "hides_writes", "reshapes", "shape_of", "sums", "fill",
            "uninitialised", "fresh", "copies_into", "on_scalars", "cached_as", "shape_args",
            "power", "cheap", "cost", "device", "device_as", "device_rewrite", "ieee", "query",
            "random", "size_arg", "methods", "attrs")

_RECORDS: dict[int, Primitive] = {}
_version = 0
_BY_METHOD: dict[str, Primitive] = {}
_BY_ATTR: dict[str, Primitive] = {}


def _math_like(fn: Any) -> bool:
    return isinstance(fn, np.ufunc) or getattr(fn, "__module__", None) == "math"


def record(fn: Any) -> Primitive:
    """The record of ``fn``, created with the defaults if it has none yet.

    A ufunc or ``math`` function defaults to an elementwise, broadcasting, pure primitive
    called on scalars as on arrays (``math``'s scalar functions are allowed on the
    device); anything else starts with nothing known.
    """
    rec = _RECORDS.get(id(fn))
    if rec is None:
        ew = _math_like(fn)
        rec = Primitive(fn, elementwise=ew, result=BROADCAST if ew else UNKNOWN, pure=ew,
                        on_scalars=ew, device=getattr(fn, "__module__", None) == "math")
        _RECORDS[id(fn)] = rec
    return rec


def update(rec: Primitive, facts: dict[str, Any]) -> None:
    """Set fields of ``rec`` (checked names and values), indexing its spellings."""
    for key, value in facts.items():
        if key not in SETTABLE:
            raise RuleError(f"unknown primitive fact {key!r}; the facts are "
                             f"{', '.join(SETTABLE)}")
        if key == "result" and (not isinstance(value, Result) or value.how not in RESULT_HOWS):
            raise RuleError(f"result={value!r} is not a primitives.Result")
        if key == "cost" and value is not None and (
                not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0):
            raise RuleError(f"cost={value!r} is not a non-negative number (or None)")
        if key == "cost" and value is not None:
            value = float(value)
        if key in ("methods", "attrs"):
            value = (value,) if isinstance(value, str) else tuple(value)
            index = _BY_METHOD if key == "methods" else _BY_ATTR
            for name in value:
                index[name] = rec
        setattr(rec, key, value)


def version() -> int:
    """Registry generation; bumps on every registration so caches can notice."""
    return _version


def bump() -> None:
    global _version
    _version += 1  # the caches below notice


def declare(*fns: Any, **facts: Any) -> None:
    """Record ``facts`` (field=value) for each of ``fns``; the built-in table uses this."""
    for fn in fns:
        update(record(fn), facts)
    bump()


def fact(fn: Any) -> Primitive | None:
    """The record of ``fn``, or None if nothing is known about it."""
    return _RECORDS.get(id(fn))


def records() -> list[Primitive]:
    """Every record, in the order they were made."""
    return list(_RECORDS.values())


def result_of(fn: Any) -> Result:
    """How ``fn``'s result kind follows from its arguments (a default for unknown ones)."""
    rec = _RECORDS.get(id(fn))
    if rec is not None:
        return rec.result
    return BROADCAST if _math_like(fn) else UNKNOWN


def method_function(attr: str) -> Any:
    """The function an array method stands for (``x.sum()`` -> ``np.sum``), else None."""
    rec = _BY_METHOD.get(attr)
    return rec.fn if rec is not None else None


def attribute_function(attr: str) -> Any:
    """The function an array attribute stands for (``x.T`` -> ``np.transpose``), else None."""
    rec = _BY_ATTR.get(attr)
    return rec.fn if rec is not None and not rec.query else None


def query_attrs() -> frozenset[str]:
    """Array attributes that are plain queries of shape or type (``x.shape``, ``x.dtype``)."""
    return frozenset(a for a, rec in _BY_ATTR.items() if rec.query)


def returns_view(fn: Any) -> bool:
    rec = _RECORDS.get(id(fn))
    return rec is not None and rec.view


def cheap(fn: Any) -> bool:
    rec = _RECORDS.get(id(fn))
    return rec is not None and rec.cheap


def cost(fn: Any) -> float | None:
    """What one scalar call of ``fn`` costs (``Primitive.cost``), None where unknown."""
    rec = _RECORDS.get(id(fn))
    return None if rec is None else rec.cost


def draws(fn: Any) -> bool:
    """Does calling ``fn`` draw from (or seed) a global random generator?  The table's
    ``random`` fact, else any function of ``numpy.random`` or ``random`` (or a method of
    their generators)."""
    rec = _RECORDS.get(id(fn))
    if rec is not None and rec.random:
        return True
    owner = type(getattr(fn, "__self__", None)).__module__ or ""
    mod = getattr(fn, "__module__", None) or ""
    return any(m == "random" or m.startswith("numpy.random") for m in (mod, owner))


def names_with(field: str) -> frozenset[str]:
    """The names (and method spellings) of the functions whose record has ``field`` set:
    what code that sees only a call's spelling (``x.copy()``, ``xs.pop()``) can test."""
    cached = _NAMES.get(field)
    if cached is None or cached[0] != _version:
        names = set()
        for rec in _RECORDS.values():
            if getattr(rec, field):
                names.add(rec.fn.__name__)
                names.update(rec.methods)
        cached = _NAMES[field] = (_version, frozenset(names))
    return cached[1]


_NAMES: dict[str, tuple[int, frozenset[str]]] = {}  # field -> (version, names) last found


def allocating_names() -> frozenset[str]:
    """Names and method spellings of the functions whose results are fresh arrays."""
    return names_with("allocates")


def allocating(name: str) -> bool:
    """Is ``name`` (``np.zeros``'s, ``x.copy``'s) spelling a call that allocates a fresh array?"""
    return name in names_with("allocates")


def fresh(name: str) -> bool:
    """Is ``name`` the spelling of a call whose result shares no argument's buffer: a
    fresh array (``allocates``: ``np.zeros``, ``x.copy``) or a number (``fresh``: ``len``)?"""
    return name in names_with("allocates") or name in names_with("fresh")


def fresh_result(fn: Any) -> bool:
    """Does the result of ``fn`` share no argument's buffer: a fresh array (``allocates``)
    or a number (``fresh``)?  ``fresh`` for code that can tell what a call names."""
    rec = _RECORDS.get(id(fn))
    return rec is not None and (rec.allocates or rec.fresh)


def mutating(name: str) -> bool:
    """Is ``name`` the spelling of a method that changes its object (``sort``, ``pop``)?"""
    return name in names_with("mutates")


def allocates(fn: Any) -> bool:
    """Is the result of ``fn`` a newly allocated array (``np.zeros``, ``np.copy``)?"""
    rec = _RECORDS.get(id(fn))
    return rec is not None and rec.allocates


def copies(fn: Any) -> bool:
    """Is the result of ``fn`` a fresh copy of its first argument (``np.copy``)?"""
    rec = _RECORDS.get(id(fn))
    return rec is not None and rec.copies


def shape_of(fn: Any) -> int | None:
    """The position of the argument whose shape the result of ``fn`` has
    (``Primitive.shape_of``; 0 for a fresh array of the first argument's kind,
    ``np.zeros_like``), else None."""
    rec = _RECORDS.get(id(fn))
    if rec is None:
        return None
    if rec.shape_of is not None:
        return rec.shape_of
    return 0 if rec.allocates and rec.result == SAME else None


def shaped_like(fn: Any) -> bool:
    """Is the result of ``fn`` a fresh array of its first argument's shape and dtype
    (``np.zeros_like``, ``np.copy``)?"""
    return allocates(fn) and shape_of(fn) == 0


def allocates_shape(fn: Any) -> bool:
    """Is the result of ``fn`` a fresh array whose shape is its first argument
    (``np.zeros(shape)``, ``np.full(shape, v)``: allocating, of the ``"alloc"`` kind)?"""
    rec = _RECORDS.get(id(fn))
    return rec is not None and rec.allocates and rec.result.how == "alloc"


def fill_value(fn: Any) -> float | None:
    """The value of every element of the fresh array ``fn`` makes from a shape
    (``np.ones``: 1.0; ``allocates_shape``), None where unknown."""
    return _RECORDS[id(fn)].fill if allocates_shape(fn) else None


def reads_shape_of(fn: Any, k: int) -> bool:
    """Does a call of ``fn`` read its argument ``k`` only for its shape and dtype: a query
    (``len``, ``np.shape``), a fresh array of that argument's shape that copies nothing
    (``np.zeros_like``, ``np.empty_like``: ``shape_of``), or one of ``shape_args``?"""
    rec = _RECORDS.get(id(fn))
    if rec is None:
        return False
    return (rec.query and k == 0 or k in rec.shape_args
            or rec.allocates and not rec.copies and shape_of(fn) == k)


def fills_with(fn: Any) -> float | None:
    """The value every element of the fresh array ``fn`` makes is (``np.zeros``,
    ``np.zeros_like``: 0.0; ``Primitive.fill``), None where unknown."""
    rec = _RECORDS.get(id(fn))
    return rec.fill if rec is not None and rec.allocates else None


def uninitialised(fn: Any) -> bool:
    """Is the result of ``fn`` a fresh array whose elements are not set (``np.empty``,
    ``np.empty_like``: ``Primitive.uninitialised``)?"""
    rec = _RECORDS.get(id(fn))
    return rec is not None and rec.allocates and rec.uninitialised


def zeros_shaped_like(fn: Any) -> bool:
    """Is the result of ``fn`` a fresh array of zeros shaped like its first argument
    (``np.zeros_like``: ``fills_with`` 0.0 and ``shape_of`` 0)?"""
    return fills_with(fn) == 0.0 and shape_of(fn) == 0


def power(fn: Any) -> float | None:
    """The exponent ``p`` where a call ``fn(x)`` is ``x ** p`` (``np.sqrt``: 0.5;
    ``Primitive.power``), else None."""
    rec = _RECORDS.get(id(fn))
    return None if rec is None else rec.power


def sums(fn: Any) -> bool:
    """Is the result of ``fn`` the sum of its one argument's elements (``np.sum``)?"""
    rec = _RECORDS.get(id(fn))
    return rec is not None and rec.sums


def copies_into(fn: Any) -> tuple[int, int] | None:
    """(destination, source): the positions of the arguments a call of ``fn`` copies
    from source to destination buffer (``restore_into(dst, src)``: ``(0, 1)``), else None."""
    rec = _RECORDS.get(id(fn))
    return None if rec is None else rec.copies_into


def pure(fn: Any) -> bool:
    """Does a call of ``fn`` only compute a value (``Primitive.pure``; unrecorded ufuncs
    and ``math`` functions do), drawing nothing (``draws``)?"""
    rec = _RECORDS.get(id(fn))
    return (rec.pure if rec is not None else _math_like(fn)) and not draws(fn)


def hides_writes(fn: Any) -> bool:
    """May a call of ``fn`` whose result is dropped write an array argument out of the
    reverse sweep's sight (``Primitive.hides_writes``)?  Unknown functions may; so do
    recorded ones that say so, or have neither a gradient rule nor ``non_differentiable``."""
    rec = _RECORDS.get(id(fn))
    if rec is None:
        return True
    if rec.hides_writes is not None:
        return rec.hides_writes
    return rec.rule is None and not rec.non_differentiable


def linear_in(fn: Any) -> tuple[int, ...]:
    """The arguments ``fn`` is linear in, each on its own (``Primitive.linear_in``): its
    result is zero where any one of them is; none for an unknown function."""
    rec = _RECORDS.get(id(fn))
    return () if rec is None else rec.linear_in


def reshapes(fn: Any) -> bool:
    rec = _RECORDS.get(id(fn))
    return rec is not None and rec.reshapes


def shape_args(fn: Any) -> tuple[int, ...]:
    """The arguments ``fn`` reads only for their shape and dtype (``unbroadcast(g, x)``:
    ``(1,)``); none for an unknown function."""
    rec = _RECORDS.get(id(fn))
    return () if rec is None else rec.shape_args


def on_scalars(fn: Any) -> bool:
    """Does compiled code call ``fn`` on scalars as on arrays (``Primitive.on_scalars``;
    unrecorded ufuncs and ``math`` functions do)?"""
    rec = _RECORDS.get(id(fn))
    return rec.on_scalars if rec is not None else _math_like(fn)


def cached_twin(fn: Any) -> str | None:
    """The name of the cached helper compiled code calls for ``fn`` (``cached_as``), or None."""
    rec = _RECORDS.get(id(fn))
    return None if rec is None else rec.cached_as


def device_spelling(fn: Any) -> str | None:
    """How device code spells ``fn`` (``"math.sin"``, ``"abs"``), None where as written."""
    rec = _RECORDS.get(id(fn))
    return None if rec is None else rec.device_as


def device_rewrite(fn: Any) -> Callable[..., Any] | None:
    """How device code writes a call of ``fn`` that is no renamed call: a function of the
    call's arguments and device code's module names to an expression
    (``Primitive.device_rewrite``; ``np.square``: ``x * x``), else None."""
    rec = _RECORDS.get(id(fn))
    return None if rec is None else rec.device_rewrite


def ieee_twin(fn: Any) -> Any:
    """The plain-Python IEEE stand-in of the ``math`` function ``fn``, or None."""
    rec = _RECORDS.get(id(fn))
    return None if rec is None else rec.ieee


def is_library(fn: Any) -> bool:
    """Generated code calls ``fn`` as spelled: a ufunc or a NumPy, ``math`` or builtin
    function Numba compiles (not ``np.matmul``: Numba has ``@`` and ``np.dot`` only)."""
    if fn is np.matmul:
        return False
    mod = (getattr(fn, "__module__", None) or "").split(".")[0]
    return isinstance(fn, np.ufunc) or mod in _NUMBA_ROOTS


def library_module(name: str) -> bool:
    """Is the module named ``name`` part of a library (``numpy.linalg``), not the user's code?"""
    return name.split(".")[0] in LIBRARY_ROOTS
