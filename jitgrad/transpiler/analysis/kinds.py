"""Kinds: a small flow-insensitive type inference (scalar or array, int or float).

Seeded from the kinds of the actual arguments (generated code is specialised per
argument kinds), it tells the reverse pass which values carry adjoints (ints and
bools never do), which adjoints are arrays, and when ``unbroadcast`` is a no-op.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...kernels.revolve import ref_slots
from ...rules import lookup
from ...rules.primitives import RESULT_HOWS, Result, fact, method_function, result_of
from ...rules.results import RUNTIME
from ..astutil import resolve
from ..naming import is_tape
from ..notes import KIND

_ORDER = {"b": 0, "i": 1, "f": 2, "c": 3}


@dataclass(frozen=True)
class Kind:
    """``cls`` is b(ool), i(nt), f(loat), c(omplex), t(uple), l(ist: generated code's list
    of values, a tape ``_tape_x = []`` or a checkpointed loop's snapshot references
    ``ref_slots(x, k)``) or o(ther); ``ndim`` 0 = scalar."""

    cls: str
    ndim: int | None = 0

    @property
    def is_array(self) -> bool:
        return self.ndim is None or self.ndim > 0

    @property
    def differentiable(self) -> bool:
        return self.cls in ("f", "c", "o", "l")

    def __str__(self) -> str:
        return f"{self.cls}{'?' if self.ndim is None else self.ndim}"


UNKNOWN = Kind("o", None)
FLOAT = Kind("f", 0)
INT = Kind("i", 0)
BOOL = Kind("b", 0)
TUPLE = Kind("t", 0)
LIST = Kind("l", 0)


def join(a: Kind | None, b: Kind | None) -> Kind:
    if a is None:
        return b
    if b is None or a == b:
        return a
    if a.cls in _ORDER and b.cls in _ORDER:
        cls = max(a.cls, b.cls, key=_ORDER.__getitem__)
    elif a.cls == b.cls:
        cls = a.cls
    else:
        return UNKNOWN
    if a.ndim is None or b.ndim is None:
        nd = None  # an array of unknown rank joined with anything stays unknown
    elif a.ndim == b.ndim or b.ndim == 0:
        nd = a.ndim
    elif a.ndim == 0:
        nd = b.ndim
    else:
        nd = None
    return Kind(cls, nd)


def broadcast(a: Kind, b: Kind) -> Kind:
    """The kind of an elementwise operation of ``a`` and ``b`` (NumPy broadcasting)."""
    k = join(a, b)
    if k.cls != "o" and a.ndim is not None and b.ndim is not None:
        return Kind(k.cls, max(a.ndim, b.ndim))
    return k


def of_value(v: Any) -> Kind:
    """The kind of a runtime argument."""
    if isinstance(v, (bool, np.bool_)):
        return BOOL
    if isinstance(v, (int, np.integer)):
        return INT
    if isinstance(v, (float, np.floating)):
        return FLOAT
    if isinstance(v, (complex, np.complexfloating)):
        return Kind("c", 0)
    if isinstance(v, np.ndarray):
        k = v.dtype.kind
        cls = {"b": "b", "i": "i", "u": "i", "f": "f", "c": "c"}.get(k, "o")
        return Kind(cls, v.ndim)
    if isinstance(v, tuple):
        return TUPLE
    return UNKNOWN


def _entries(node: ast.expr, expr) -> Kind:
    """The kind of a call argument; a list or tuple literal counts as an array of its entries."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return expr(node)
    k = None
    for x in node.elts:
        k = join(k, _entries(x, expr))
    if k is None or k.cls not in _ORDER:
        return UNKNOWN
    return Kind(k.cls, None if k.ndim is None else k.ndim + 1)


def _option(node: ast.expr, expr) -> Any:
    """A call argument as a rule's ``ndim_of`` sees it (see ``jitgrad.rules.results``)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_option(x, expr) for x in node.elts)
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        nd = expr(node.value).ndim
        if nd is not None:
            return (RUNTIME,) * nd
    return RUNTIME


def _dtype_class(obj: Any) -> str | None:
    """The kind class of a dtype argument (``np.float32``, ``int``...), None if unknown."""
    if obj is None:
        return None
    try:
        k = np.dtype(obj).kind
    except TypeError:
        return None
    return {"b": "b", "i": "i", "u": "i", "f": "f", "c": "c"}.get(k)


def list_tape_call(e: ast.expr, method: str, kinds: Any) -> str | None:
    """``X`` where ``e`` is ``X.append(v)`` (``method="append"``) or ``X.pop()`` on a list
    tape ``X`` (one whose kind in the mapping ``kinds`` is ``LIST``), else None."""
    if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
            and e.func.attr == method and isinstance(e.func.value, ast.Name)
            and kinds.get(e.func.value.id) == LIST and not e.keywords
            and len(e.args) == (method == "append")):
        return e.func.value.id
    return None


def ref_slots_of(e: ast.expr, env: dict) -> ast.expr | None:
    """``x`` where ``e`` is ``ref_slots(x, k)`` (a checkpointed loop's list of references,
    the arrays a rebound name holds at its snapshots; read and written as ``X[i]``)."""
    if (isinstance(e, ast.Call) and len(e.args) == 2 and not e.keywords
            and resolve(e.func, env) is ref_slots):
        return e.args[0]
    return None


def list_entry(e: ast.expr, kinds: Any) -> str | None:
    """``X`` where ``e`` is ``X[i]`` on a list ``X`` (kind ``LIST``: an entry, the object
    itself, never a view), else None."""
    if (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name)
            and kinds.get(e.value.id) == LIST):
        return e.value.id
    return None


def _constant_kind(v: object) -> Kind:
    """The kind of a literal: bool, int, float, else unknown."""
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INT
    if isinstance(v, float):
        return FLOAT
    return UNKNOWN


class KindInference:
    """Fixpoint over a normalized body; ``kinds[name]`` afterwards."""

    def __init__(self, env: dict, args: dict[str, Kind]):
        self.env = env
        self.kinds: dict[str, Kind] = dict(args)
        #: a list's values (what ``pop`` or ``X[i]`` gives back): the join of what is
        #: appended or stored
        self.elems: dict[str, Kind] = {}

    def keep(self, lst: str, e: ast.expr) -> None:
        """``e`` goes into the list ``lst``."""
        self.elems[lst] = join(self.elems.get(lst), self.expr(e))

    def run(self, body: list[ast.stmt]) -> dict[str, Kind]:
        for _ in range(20):
            before = dict(self.kinds)
            self.block(body)
            if before == self.kinds:
                break
        return self.kinds

    def set(self, n: str, k: Kind) -> None:
        self.kinds[n] = join(self.kinds.get(n), k)

    def block(self, stmts):
        for s in stmts:
            if isinstance(s, ast.Expr) and (tape := list_tape_call(s.value, "append",
                                                                   self.kinds)):
                self.keep(tape, s.value.args[0])
            elif isinstance(s, ast.Assign):
                t = s.targets[0]
                if isinstance(t, ast.Name) and is_tape(t.id) and isinstance(s.value, ast.List) \
                        and not s.value.elts:
                    self.set(t.id, LIST)
                elif isinstance(t, ast.Name) and (x := ref_slots_of(s.value, self.env)):
                    self.set(t.id, LIST)
                    self.keep(t.id, x)
                elif isinstance(t, ast.Subscript) and (lst := list_entry(t, self.kinds)):
                    self.keep(lst, s.value)
                elif isinstance(t, ast.Name) and (lst := list_tape_call(s.value, "pop",
                                                                        self.kinds)):
                    if lst in self.elems:  # (known once the appends were seen)
                        self.set(t.id, self.elems[lst])
                elif isinstance(t, ast.Name) and (lst := list_entry(s.value, self.kinds)):
                    k = self.expr(s.value)  # (notes the list's kind on its name)
                    if lst in self.elems:
                        self.set(t.id, k)
                elif isinstance(t, ast.Name):
                    self.set(t.id, self.expr(s.value))
                elif isinstance(t, ast.Tuple):
                    vk = self.expr(s.value) if not isinstance(s.value, ast.Tuple) else None
                    for i, e in enumerate(t.elts):
                        if isinstance(e, ast.Name):
                            if isinstance(s.value, ast.Tuple):
                                self.set(e.id, self.expr(s.value.elts[i]))
                            else:
                                self.set(e.id, INT if vk == TUPLE else UNKNOWN)
                elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    vk = self.expr(s.value)
                    base = self.kinds.get(t.value.id)
                    if base is not None and base.cls in ("b", "i") and vk.cls in ("f", "c"):
                        pass  # writing floats into an int array truncates; stays int
            elif isinstance(s, ast.For):
                self.set(s.target.id, INT)
                self.block(s.body)
            elif isinstance(s, (ast.If, ast.While)):
                self.block(s.body)
                self.block(s.orelse)

    def expr(self, e: ast.expr) -> Kind:
        k = self._expr(e)
        KIND.set(e, k)
        return k

    def _expr(self, e: ast.expr) -> Kind:
        """The kind of ``e`` (its parts' kinds recorded on the way: ``expr``)."""
        if isinstance(e, ast.Constant):
            return _constant_kind(e.value)
        if isinstance(e, ast.Name):
            if e.id in self.kinds:
                return self.kinds[e.id]
            return of_value(self.env[e.id]) if e.id in self.env else UNKNOWN
        if isinstance(e, ast.BinOp):
            return self._binop(e)
        if isinstance(e, ast.UnaryOp):
            k = self.expr(e.operand)
            return Kind("b", k.ndim) if isinstance(e.op, ast.Not) else k
        if isinstance(e, (ast.Compare, ast.BoolOp)):
            parts = [e.left, *e.comparators] if isinstance(e, ast.Compare) else e.values
            nd = 0
            for p in parts:
                pk = self.expr(p)
                nd = None if pk.ndim is None or nd is None else max(nd, pk.ndim)
            return Kind("b", nd)
        if isinstance(e, ast.Subscript):
            return self._subscript(e)
        if isinstance(e, ast.Attribute):
            return self._attribute(e)
        if isinstance(e, (ast.Tuple, ast.List)):
            for x in e.elts:
                self.expr(x)
            return TUPLE if isinstance(e, ast.Tuple) else UNKNOWN
        if isinstance(e, ast.Call):
            return self._random(e) or self.call(e)
        return UNKNOWN

    def _binop(self, e: ast.BinOp) -> Kind:
        """Broadcast operands; ``/`` of integers a float, ``@`` by ``_dot_ndim``, bool
        arithmetic an integer."""
        a, b = self.expr(e.left), self.expr(e.right)
        k = broadcast(a, b)
        if isinstance(e.op, ast.Div) and k.cls in ("b", "i"):
            k = Kind("f", k.ndim)
        if isinstance(e.op, ast.MatMult):
            return Kind(k.cls, self._dot_ndim(a, b))
        if k.cls == "b":
            k = Kind("i", k.ndim)
        return k

    def _subscript(self, e: ast.Subscript) -> Kind:
        """An element, a row or a slice: the base's dimensions less one per integer index,
        plus one per ``None`` (an index array's own dimensions add, less one)."""
        base = self.expr(e.value)
        if base.cls == "t":
            return INT
        if base == LIST:  # an entry of a list (``list_entry``)
            self.expr(e.slice)
            return self.elems.get(e.value.id, UNKNOWN) if isinstance(e.value, ast.Name) \
                else UNKNOWN
        if base.ndim is None:
            return Kind(base.cls, None)
        idx = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
        nd = base.ndim
        for ix in idx:
            if isinstance(ix, ast.Slice):
                continue
            if isinstance(ix, ast.Constant) and ix.value is None:
                nd += 1
                continue
            ik = self.expr(ix)
            if ik.ndim is None:
                return Kind(base.cls, None)
            if ik.ndim == 0:
                nd -= 1
            else:
                nd += ik.ndim - 1
        return Kind(base.cls, max(nd, 0))

    def _attribute(self, e: ast.Attribute) -> Kind:
        """A module constant (``math.pi``), a shape query, or ``.T``/``.real``/``.imag``."""
        obj = resolve(e, self.env)  # a module constant: math.pi, np.inf...
        if obj is not None and not callable(obj) and not isinstance(obj, type(math)):
            return of_value(obj)
        if e.attr == "shape":
            return TUPLE
        if e.attr in ("size", "ndim"):
            return INT
        base = self.expr(e.value)
        if e.attr in ("T", "real", "imag"):
            return Kind("f" if e.attr != "T" else base.cls, base.ndim)
        return UNKNOWN

    def _random(self, e: ast.Call) -> Kind | None:
        """``random.random()``, ``np.random.normal(...)``: a float, or an array with a size."""
        fn = resolve(e.func, self.env)
        mod = getattr(fn, "__module__", None) or ""
        owner = getattr(fn, "__self__", None)
        if not (mod == "random" or mod.startswith("numpy.random")
                or type(owner).__module__ in ("random", "numpy.random.mtrand")):
            return None
        for a in [*e.args, *(k.value for k in e.keywords)]:
            self.expr(a)
        name = getattr(fn, "__name__", "")
        if mod == "random" or type(owner).__module__ == "random":
            return INT if name in ("randint", "randrange", "getrandbits") else FLOAT
        # (another generator's method draws as numpy.random's function of its name does)
        rec = fact(getattr(np.random, name, None))
        if rec is None or rec.size_arg is None:
            return None
        size = next((k.value for k in e.keywords if k.arg == "size"), None)
        if size is None and rec.size_arg < 0:  # rand(d0, d1, ...): the dimensions
            return Kind("f", len(e.args)) if e.args else FLOAT
        if size is None and 0 <= rec.size_arg < len(e.args):
            size = e.args[rec.size_arg]
        cls = rec.result.cls if rec.result.how == "fixed" else "f"
        if size is None:
            return Kind(cls, 0)
        return Kind(cls, self._shape_ndim(size))

    @staticmethod
    def _dot_ndim(a: Kind, b: Kind) -> int | None:
        if a.ndim is None or b.ndim is None:
            return None
        if a.ndim == 0 or b.ndim == 0:
            return max(a.ndim, b.ndim)
        return a.ndim + b.ndim - 2

    def _shape_ndim(self, e: ast.expr) -> int | None:
        if isinstance(e, (ast.Tuple, ast.List)):
            return len(e.elts)
        if isinstance(e, ast.Attribute) and e.attr == "shape":
            return self.expr(e.value).ndim
        k = self.expr(e)
        return 1 if k.cls in ("i", "b") and k.ndim == 0 else None

    def call(self, e: ast.Call) -> Kind:
        args = [self.expr(a) for a in e.args]
        kw = {k.arg: k.value for k in e.keywords}
        for v in kw.values():
            self.expr(v)
        fn = resolve(e.func, self.env)
        nodes = list(e.args)
        if fn is None and isinstance(e.func, ast.Attribute):
            fn = method_function(e.func.attr)
            args = [self.expr(e.func.value), *args]
            nodes = [e.func.value, *nodes]
        if fn is None:
            return UNKNOWN
        r = result_of(fn)  # how the primitive's record says its result kind follows
        return _RESULTS[r.how](self, r, _Call(fn, e, args, kw, nodes))

    # --- one method per kind of result (``primitives.Result.how``) ---------------------

    def _arg(self, r: Result, c: _Call) -> Kind:
        return c.args[r.arg] if len(c.args) > r.arg else UNKNOWN

    def _declared(self, r: Result, c: _Call) -> Kind:
        # the rule declares its result's ndim (jitgrad/rules/results.py); the class
        # is that of the arguments, float for float_result, or the dtype argument's
        rule = lookup(c.fn)
        # a helper with only a tangent rule (rules/second_order.py) names its parameters there
        impl = rule.impl if rule is not None else getattr(getattr(fact(c.fn), "tangent", None),
                                                          "impl", None)
        if impl is None:
            return UNKNOWN
        kinds = [_entries(x, self.expr) for x in c.nodes]
        code = impl.__code__
        params = code.co_varnames[:code.co_argcount]
        bound = dict(zip(params, c.nodes, strict=False)) | c.kw
        opts = {p: _option(x, self.expr) for p, x in bound.items() if p != params[0]}
        try:
            nd = r.ndim(kinds[0].ndim if kinds else None, **opts)
        except TypeError:
            nd = None
        cls = None
        for k in kinds:
            if k.cls in _ORDER:
                cls = k.cls if cls is None else max(cls, k.cls, key=_ORDER.__getitem__)
        if r.cls == "f" and cls != "c":
            cls = "f"
        if "dtype" in bound:
            cls = _dtype_class(resolve(bound["dtype"], self.env)) or cls
        return Kind(cls or "o", nd)

    def _fixed(self, r: Result, c: _Call) -> Kind:
        return Kind(r.cls, r.ndim)

    def _same(self, r: Result, c: _Call) -> Kind:
        first = c.first
        if r.ndim is None:
            return first
        if not callable(r.ndim):
            return Kind(first.cls, r.ndim)
        return Kind(first.cls, None if first.ndim is None else r.ndim(first.ndim))

    def _reduce(self, r: Result, c: _Call) -> Kind:
        axis = c.kw.get("axis")
        if axis is None or (isinstance(axis, ast.Constant) and axis.value is None):
            return Kind(c.cls_f, 0)
        return Kind(c.cls_f, None if c.first.ndim is None else max(c.first.ndim - 1, 0))

    def _sequence(self, r: Result, c: _Call) -> Kind:
        e = c.node
        seq = e.args[r.arg] if len(e.args) > r.arg else None
        elts = seq.elts if isinstance(seq, ast.Tuple) else []
        k = None
        for x in elts:
            k = join(k, self.expr(x))
        k = k or UNKNOWN
        return Kind(k.cls, None if k.ndim is None else r.ndim(k.ndim))

    def _broadcast(self, r: Result, c: _Call) -> Kind:
        args = c.args
        k = c.first
        for a in args[1:]:
            k = join(k, a)
        if args and all(a.ndim is not None for a in args):  # broadcasting
            k = Kind(k.cls, max(a.ndim for a in args))
        if r.cls == "keep":
            return Kind(k.cls, k.ndim)
        return Kind(c.cls_f if k.cls != "o" else "o", k.ndim)

    def _unknown(self, r: Result, c: _Call) -> Kind:
        return UNKNOWN

    def _helper(self, r: Result, c: _Call) -> Kind:
        return c.fn.result_kind(tuple(c.args))  # a split helper (front/split.py)

    def _dot(self, r: Result, c: _Call) -> Kind:
        return Kind(c.cls_f, self._dot_ndim(c.first, c.args[1] if len(c.args) > 1 else UNKNOWN))

    def _solve(self, r: Result, c: _Call) -> Kind:
        return Kind("f", c.args[1].ndim if len(c.args) > 1 else None)

    def _alloc(self, r: Result, c: _Call) -> Kind:
        e, full = c.node, c.fn is np.full
        dt = c.kw.get("dtype", e.args[2] if full and len(e.args) > 2 else
                      (e.args[1] if len(e.args) > 1 and not full else None))
        cls = "f"
        if dt is not None:
            d = resolve(dt, self.env)
            if d in (int, np.int64, np.int32, np.intp):
                cls = "i"
            elif d in (bool, np.bool_):
                cls = "b"
        return Kind(cls, self._shape_ndim(e.args[0]) if e.args else None)

    def _arange(self, r: Result, c: _Call) -> Kind:
        return Kind("i" if all(a.cls == "i" for a in c.args) else "f", 1)

    def _reshape(self, r: Result, c: _Call) -> Kind:
        e, kw = c.node, c.kw
        shp = e.args[1] if len(e.args) > 1 else kw.get("shape") or kw.get("newshape")
        if isinstance(e.func, ast.Attribute) and resolve(e.func, self.env) is None:
            shp = e.args[0] if len(e.args) == 1 else ast.Tuple(elts=e.args, ctx=ast.Load())
        return Kind(c.first.cls, self._shape_ndim(shp) if shp is not None else None)

    def _cumsum(self, r: Result, c: _Call) -> Kind:
        return Kind(c.first.cls, 1 if "axis" not in c.kw else c.first.ndim)

    def _where(self, r: Result, c: _Call) -> Kind:
        args = c.args
        k = args[1] if len(args) > 1 else UNKNOWN
        for a in args:
            k = Kind(join(k, a).cls if a.cls != "b" else k.cls,
                     None if (k.ndim is None or a.ndim is None) else max(k.ndim, a.ndim))
        return k


@dataclass(frozen=True)
class _Call:
    """A call as the result-kind rules see it: ``args`` are the positional arguments'
    kinds (a method's object first), ``nodes`` their expressions, ``kw`` the keywords'."""

    fn: Any
    node: ast.Call
    args: list[Kind]
    kw: dict[str, ast.expr]
    nodes: list[ast.expr]

    @property
    def first(self) -> Kind:
        return self.args[0] if self.args else UNKNOWN

    @property
    def cls_f(self) -> str:
        return "f" if self.first.cls != "c" else "c"


_RESULTS = {how: getattr(KindInference, f"_{how}") for how in RESULT_HOWS}


def infer(body: list[ast.stmt], env: dict, args: dict[str, Kind]) -> dict[str, Kind]:
    """Kinds of every variable of a normalized body (expressions get a ``notes.KIND``)."""
    return KindInference(env, args).run(body)
