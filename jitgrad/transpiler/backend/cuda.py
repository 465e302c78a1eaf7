"""The CUDA lowering: from the IR to a kernel or a device function, without allocation.

The reverse-mode IR of one thread's part of a kernel (``front/kernel.py``) or of a
scalar function is lowered like the CPU's gradient variants (``lower.lower``), then
rewritten for the device:

- the copies of written arguments go (the host passes copies), and so do the zeroed
  adjoint buffers and the seed: gradient buffers and seeds are kernel parameters;
- an accumulation into the adjoint of an array that other threads read too
  (``x[i + 1]``, ``x[idx[i]]``) becomes ``cuda.atomic.add``; one read only at the
  thread's own index keeps a plain ``+=`` (the thread-privacy rule); a scalar ``wrt``
  is accumulated locally and added once per thread;
- tapes become ``cuda.local.array(capacity, dtype)``; the capacity is an expression the
  host evaluates from the arguments before the launch (a constant for device functions),
  a loop whose tape has no such bound is refused;
- NumPy's scalar spellings become ``math`` ones; jitgrad's helpers become expressions.

What is left is checked: no NumPy, no helper calls, no list tapes, no method calls.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...kernels import helpers
from ...rules.primitives import (
    allocates_shape,
    device_rewrite,
    device_spelling,
    fact,
    records,
    uninitialised,
    version,
    zeros_shaped_like,
)
from ..analysis.dependence import private_arrays
from ..astutil import resolve
from ..nodes import clone, own_expressions, walk_stmts
from ..notes import HOISTED
from . import device_rewrites as _device_rewrites  # noqa: F401  (declares the facts)
from . import emit, lower
from .optimize import dead_code


def _device_builtins() -> frozenset[str]:
    """The builtins device code may call by name (the table's plain ``device_as``)."""
    if _BUILTINS[0] != version():
        _BUILTINS[:] = [version(), frozenset(
            r.device_as for r in records() if r.device_as and "." not in r.device_as)]
    return _BUILTINS[1]


_BUILTINS: list = [-1, frozenset()]  # (table version, names) of the last answer


#: local arrays above this many bytes per thread are refused before a launch
LOCAL_BYTES = 512 * 1024


@dataclass
class Lowered:
    """A device function or adjoint kernel, before its tape capacities are known."""

    #: ``"kernel"`` or ``"device"``
    kind: str
    #: the function, with each tape's capacity a ``Name`` ``caps`` keys
    fn: ast.FunctionDef
    #: capacity placeholder -> (expression of the parameters the host evaluates, item bytes)
    caps: dict[str, tuple[ast.expr, int]] = field(default_factory=dict)
    #: per ``wrt`` name: (its gradient parameter, is it a scalar summed in a 1-element array)
    grads: dict[str, tuple[str, bool]] = field(default_factory=dict)
    #: per output: the parameter holding its cotangent
    seeds: dict[str, str] = field(default_factory=dict)
    #: the adjoint arrays accumulated with atomics, and those with plain ``+=``
    atomic: frozenset[str] = frozenset()
    private: frozenset[str] = frozenset()
    #: the outputs the adjoint kernel still writes (the host passes copies of these)
    writes: frozenset[str] = frozenset()
    #: checked tapes (their length is known only in the kernel): capacity placeholder ->
    #: its slot in the ``need`` parameter, where a thread that overflowed the capacity
    #: records the length it needed (the host then launches again with room for it)
    checked: dict[str, int] = field(default_factory=dict)
    #: the int64 array parameter of those lengths ("" when no tape is checked)
    need: str = ""

    def with_caps(self, values: dict[str, int]) -> ast.FunctionDef:
        """The function with each capacity placeholder replaced by its value."""
        from ..nodes import replace_names

        fn = clone(self.fn)
        replace_names(fn, lambda n: ast.Constant(value=int(values[n.id])) if n.id in values
                      else n)
        return fn


# --- checks on one thread's part, before differentiation --------------------------------


def check_device_code(parsed: Any, body: list[ast.stmt], env: dict, kinds: dict,
                      arrays_ok: frozenset[str]) -> None:
    """Refuse what device code cannot do: a call of a primitive not allowed on the device,
    a method call, an array made inside the function (``arrays_ok``: the parameters)."""
    for s in walk_stmts(body):
        if isinstance(s, (ast.Assign, ast.AugAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                for m in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(m, ast.Name) and m.id not in arrays_ok \
                            and kinds.get(m.id) is not None and kinds[m.id].is_array:
                        raise parsed.error(
                            f"'{parsed.user_name(m.id)}' is an array made inside device code "
                            "(a slice, view, copy or array arithmetic): device code cannot "
                            "allocate", s, "index the array parameters element by element")
        for n in own_expressions(s):
            if isinstance(n, ast.Call):
                _check_call(parsed, n, env, s)


def _check_call(parsed: Any, call: ast.Call, env: dict, s: ast.stmt) -> None:
    spelled = parsed.user_source(call.func)
    if isinstance(call.func, ast.Name) and call.func.id in _device_builtins() \
            and env.get(call.func.id) is getattr(__import__("builtins"), call.func.id):
        return
    fn = resolve(call.func, env)
    if fn is None:
        raise parsed.error(f"'{spelled}(...)' cannot be called in CUDA device code", s,
                           "device code calls math functions, NumPy's scalar math and "
                           "builtins on scalars only")
    rec = fact(fn)
    allowed = (rec is not None and rec.device) or getattr(fn, "__module__", None) == "math"
    if not allowed:
        raise parsed.error(f"{spelled} is not allowed in CUDA device code", s,
                           "device code cannot allocate or call library routines: use "
                           "math functions and arithmetic on scalars (the primitive "
                           "table's 'device' fact, docs/rules.md)")


# --- the lowering ----------------------------------------------------------------------


def lower_device(u: Any, cuda_names: dict[str, str]) -> Lowered:
    """The device function ``f(*params, dret) -> (value, grads)`` of a scalar function."""
    ir = u.ir
    fn = lower.lower(ir, "grad", f"{u.name}_device_grad")
    out = Lowered("device", fn)
    rw = _Rewriter(u, out, cuda_names, params=set(), kernel=False)
    fn.body = rw.block(fn.body, [])
    rw.check(fn)
    for cap, (e, _) in out.caps.items():
        if not isinstance(e, ast.Constant):
            raise rw.unbounded(cap)
    return out


def lower_kernel(u: Any, cuda_names: dict[str, str]) -> Lowered:
    """The adjoint kernel of one thread's part: the gradient-only variant, rewritten."""
    ir = u.ir
    shape = u.kernel
    fn = lower.lower(ir, "grad_only", f"{u.name}_adjoint")
    adjoints = u.namer.adjoints()
    user_params = [p for p in u.params if p not in shape.index]
    arrays = [p for p in user_params if u.kinds[p].is_array]
    private = private_arrays(u.body, arrays, shape.index)
    out = Lowered("kernel", fn)
    extra: list[str] = []
    for w in u.wrt:
        if u.kinds[w].is_array:
            out.grads[w] = (adjoints[w], False)
            extra.append(adjoints[w])
        else:
            total = u.namer.unique(f"{adjoints[w]}_sum")
            out.grads[w] = (total, True)
            extra.append(total)
    for o in shape.outputs:
        d = adjoints.get(o) or u.namer.adjoint(o)
        out.seeds[o] = d
        extra.append(d)
    out.private = frozenset(adjoints[a] for a in private if a in adjoints)
    rw = _Rewriter(u, out, cuda_names, params=set(user_params), kernel=True)
    rw.scan(fn.body, [])
    if rw.unbounded_tapes:
        out.need = u.namer.unique("_tape_need")
        extra.append(out.need)
    body = rw.block(fn.body, [])
    out.atomic = frozenset(rw.atomics)
    once = {out.seeds[o] for o in shape.outputs if _written_once(u.body, o)
            and not _loads(u.body, o)}
    body = _without_dead_writes(body, shape.outputs, once)
    body = dead_code(body + [ast.Return(value=None)])[:-1]
    if isinstance(shape.grid, ast.For):  # a grid-stride loop: each of the thread's elements
        loop = clone(shape.grid)
        loop.body = body or [ast.Pass()]
        fn.body = [loop]
    else:
        fn.body = [clone(shape.grid), *body]
    out.writes = frozenset(o for o in [*shape.outputs, *out.seeds.values()]
                           if _stores(fn.body, o))
    fn.args = emit.function_def(fn.name, [*user_params, *extra], []).args
    rw.check(fn)
    return out


class _Rewriter:
    """Rewrites the lowered CPU function's statements into device code (``lower_*``)."""

    def __init__(self, u: Any, out: Lowered, names: dict[str, str], params: set[str],
                 kernel: bool):
        self.u = u
        self.out = out
        self.names = names  # "cuda", "math", "numba" -> the global names generated code uses
        self.params = params
        self.kernel = kernel
        self.env = u.env
        adjoints = u.namer.adjoints()
        self.array_adjoints = {adjoints[p]: p for p in u.params
                               if p in adjoints and u.kinds[p].is_array}
        self.tapes: dict[str, str] = {}  # tape -> capacity placeholder
        self.reserve_loop: dict[str, ast.AST] = {}  # placeholder -> the loop it serves
        self.atomics: set[str] = set()
        self.defs = _single_defs(u.ir.body())
        self.unbounded_tapes: set[str] = set()  # the checked tapes (kernels only)
        self.need_var: dict[str, str] = {}  # checked tape -> the length it needs

    # --- statements ----------------------------------------------------------------

    def block(self, stmts: list[ast.stmt], loops: list[ast.AST]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for k, s in enumerate(stmts):
            if isinstance(s, (ast.For, ast.While)):
                s = clone(s)
                s.body = self.block(s.body, [*loops, s])
                if isinstance(s, ast.For):
                    s.iter = self.expr(s.iter)
                else:
                    s.test = self.expr(s.test)
                out.append(s)
                continue
            if isinstance(s, ast.If):
                s = clone(s)
                s.test = self.expr(s.test)
                s.body = self.block(s.body, loops)
                s.orelse = self.block(s.orelse, loops)
                out.append(s)
                continue
            new = self.simple(s, loops, stmts[k + 1:])
            out.extend(new)
        return out

    def simple(self, s: ast.stmt, loops: list[ast.AST], after: list[ast.stmt]) \
            -> list[ast.stmt]:
        """The device statements for one simple statement of the CPU code."""
        if isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Name):
            out = self._bind(s, s.targets[0].id, loops, after)
            if out is not None:
                return out
        if isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Subscript) \
                and isinstance(s.targets[0].value, ast.Name) \
                and s.targets[0].value.id in self.unbounded_tapes and self.kernel:
            tape = s.targets[0].value.id  # a push of a checked tape: only while it fits
            push = clone(s)
            push.value = self.expr(push.value)
            return [ast.If(test=ast.Compare(left=clone(s.targets[0].slice), ops=[ast.Lt()],
                                            comparators=[ast.Name(id=self.tapes[tape],
                                                                  ctx=ast.Load())]),
                           body=[push], orelse=[])]
        if isinstance(s, ast.AugAssign) and self.kernel:
            out = self._accumulate(s)
            if out is not None:
                return out
        if isinstance(s, ast.Return) and self.kernel:
            return self._kernel_return()
        s = clone(s)
        for f, v in ast.iter_fields(s):
            if isinstance(v, ast.expr):
                setattr(s, f, self.expr(v))
            elif isinstance(v, list):
                setattr(s, f, [self.expr(e) if isinstance(e, ast.expr) else e for e in v])
        return [s]

    def _bind(self, s: ast.Assign, t: str, loops: list[ast.AST], after: list[ast.stmt]) \
            -> list[ast.stmt] | None:
        """``t = ...`` where the device differs from the CPU (None: it does not)."""
        v = s.value
        fn = resolve(v.func, self.env) if isinstance(v, ast.Call) else None
        if uninitialised(fn) and allocates_shape(fn) and t not in self.tapes:
            # a typed tape's declaration (``np.empty(0, dtype)``)
            return self._declare_tape(t, v)
        if fn is helpers.tape_reserve:
            if HOISTED.get(s) is not None:
                return []  # a CPU allocation hint: the body's reservations count
            return self.reserve(t, v, loops, after)
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) \
                and v.value.id in self.unbounded_tapes and self.kernel:
            # a pop of a checked tape: in bounds even after an overflow (whose results
            # the host discards)
            tape = v.value.id
            last = ast.BinOp(left=ast.Name(id=self.tapes[tape], ctx=ast.Load()),
                             op=ast.Sub(), right=ast.Constant(value=1))
            at = ast.IfExp(test=ast.Compare(left=clone(v.slice), ops=[ast.Lt()],
                                            comparators=[ast.Name(id=self.tapes[tape],
                                                                  ctx=ast.Load())]),
                           body=clone(v.slice), orelse=last)
            return [_assign(t, ast.Subscript(value=ast.Name(id=tape, ctx=ast.Load()),
                                             slice=at, ctx=ast.Load()))]
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) \
                and v.func.attr == "copy" and isinstance(v.func.value, ast.Name) \
                and v.func.value.id == t and t in self.params:
            return []  # a copy of a written argument: the host passes a copy
        if self.kernel and t in self.array_adjoints and (
                _is_seed(v, self.u.namer.seed) or zeros_shaped_like(fn)):
            return []  # a gradient buffer or seed: a kernel parameter, set by the host
        return None

    def _declare_tape(self, t: str, v: ast.Call) -> list[ast.stmt]:
        """A typed tape as a thread-local array, its capacity a name the host sets."""
        dtype = v.args[1].attr if isinstance(v.args[1], ast.Attribute) else "float64"
        cap = self.u.namer.fresh(f"_cap{t}")
        self.tapes[t] = cap
        self.out.caps[cap] = (ast.Constant(value=0), np.dtype(dtype).itemsize)
        decl = [_assign(t, _call(_attr(self.names["cuda"], "local", "array"),
                                 [ast.Name(id=cap, ctx=ast.Load()),
                                  _attr(self.names["numba"], dtype)]))]
        if t in self.unbounded_tapes and self.kernel:
            var = self.u.namer.unique(f"{t}_need")
            self.need_var[t] = var
            self.out.checked[cap] = len(self.out.checked)
            decl.append(_assign(var, ast.Constant(value=0)))
        return decl

    def _accumulate(self, s: ast.AugAssign) -> list[ast.stmt] | None:
        """A kernel's ``d += ...`` into a gradient: dropped for the seed, an atomic add into
        a shared adjoint array (None: an ordinary statement)."""
        if isinstance(s.target, ast.Name) and s.target.id in self.array_adjoints \
                and _is_seed(s.value, self.u.namer.seed):
            return []
        if not (isinstance(s.target, ast.Subscript) and isinstance(s.target.value, ast.Name)
                and s.target.value.id in self.array_adjoints
                and s.target.value.id not in self.out.private
                and s.target.value.id not in self.out.seeds.values()):
            return None
        d = s.target.value.id
        value = self.expr(s.value)
        if isinstance(s.op, ast.Sub):
            value = ast.UnaryOp(op=ast.USub(), operand=value)
        elif not isinstance(s.op, ast.Add):
            raise self.error(f"cannot accumulate into '{d}' with {type(s.op).__name__}")
        self.atomics.add(d)
        return [ast.Expr(value=_call(_attr(self.names["cuda"], "atomic", "add"),
                                     [ast.Name(id=d, ctx=ast.Load()),
                                      self.expr(s.target.slice), value]))]

    def _kernel_return(self) -> list[ast.stmt]:
        """A kernel's end: each checked tape's need, and each scalar gradient's total."""
        out: list[ast.stmt] = []
        for t, var in self.need_var.items():
            cap = self.tapes[t]
            out.append(ast.If(test=ast.Compare(
                left=ast.Name(id=var, ctx=ast.Load()), ops=[ast.Gt()],
                comparators=[ast.Name(id=cap, ctx=ast.Load())]),
                body=[ast.Expr(value=_call(_attr(self.names["cuda"], "atomic", "max"), [
                    ast.Name(id=self.out.need, ctx=ast.Load()),
                    ast.Constant(value=self.out.checked[cap]),
                    ast.Name(id=var, ctx=ast.Load())]))], orelse=[]))
        for w, (total, scalar) in self.out.grads.items():
            if scalar:
                out.append(ast.Expr(value=_call(
                    _attr(self.names["cuda"], "atomic", "add"),
                    [ast.Name(id=total, ctx=ast.Load()), ast.Constant(value=0),
                     ast.Name(id=self.u.namer.adjoints()[w], ctx=ast.Load())])))
        return out

    def scan(self, stmts: list[ast.stmt], loops: list[ast.AST]) -> None:
        """Before the rewrite: the tapes of a kernel with a reservation the host cannot
        bound (they become checked tapes: every push and pop of theirs is guarded)."""
        for s in stmts:
            if isinstance(s, (ast.For, ast.While)):
                self.scan(s.body, [*loops, s])
            elif isinstance(s, ast.If):
                self.scan(s.body, loops)
                self.scan(s.orelse, loops)
            elif isinstance(s, ast.Assign) and isinstance(s.value, ast.Call) \
                    and HOISTED.get(s) is None \
                    and resolve(s.value.func, self.env) is helpers.tape_reserve \
                    and isinstance(s.targets[0], ast.Name) and _need(s.value) is not None \
                    and self.total(_need(s.value), loops) is None:
                self.unbounded_tapes.add(s.targets[0].id)

    def total(self, need: ast.BinOp, loops: list[ast.AST]) -> ast.expr | None:
        """What ``cursor + E`` reserves over every trip of the loops around it, as a host
        expression (None where the host cannot know it before the launch)."""
        total: ast.expr | None = self.host(need.right)
        if total is not None:  # a range that runs backwards reserves nothing
            total = ast.Call(func=ast.Name(id="max", ctx=ast.Load()),
                             args=[ast.Constant(value=0), total], keywords=[])
        for outer in loops:
            trips = self.trips(outer)
            total = None if total is None or trips is None else \
                ast.BinOp(left=total, op=ast.Mult(), right=trips)
        return total

    def reserve(self, tape: str, v: ast.Call, loops: list[ast.AST],
                after: list[ast.stmt]) -> list[ast.stmt]:
        """Count what ``tape = tape_reserve(tape, cursor, E)`` adds to ``tape``'s capacity:
        E for every trip of the loops around it; for a checked tape, the length it needs
        (``if cursor + E > _need: _need = cursor + E``)."""
        cap = self.tapes.get(tape)
        need = _need(v)
        if cap is None or need is None:
            raise self.error(f"an unexpected tape reservation for '{tape}'")
        if tape in self.unbounded_tapes and self.kernel:
            # (``max`` of ints would call a device function that needs a driver to type)
            var = self.need_var[tape]
            return [ast.If(test=ast.Compare(left=self.expr(need), ops=[ast.Gt()],
                                            comparators=[ast.Name(id=var, ctx=ast.Load())]),
                           body=[_assign(var, self.expr(need))], orelse=[])]
        serves = next((a for a in after if isinstance(a, ast.For)), None)
        loop = serves if serves is not None else (loops[-1] if loops else None)
        total = self.total(need, loops)
        if total is None:
            self.reserve_loop[cap] = loop
            raise self.unbounded(cap)
        old, size = self.out.caps[cap]
        self.out.caps[cap] = (_fold(ast.BinOp(left=old, op=ast.Add(), right=total)), size)
        if not self.kernel and not isinstance(self.out.caps[cap][0], ast.Constant):
            self.reserve_loop[cap] = loop
            raise self.unbounded(cap)
        return []

    def trips(self, loop: ast.AST) -> ast.expr | None:
        """The trip count of ``loop`` as a host expression (None: not known before launch)."""
        if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call) \
                or not (isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range"):
            return None
        args = [self.host(a) for a in loop.iter.args]
        if any(a is None for a in args):
            return None
        if len(args) == 1:
            return ast.Call(func=ast.Name(id="max", ctx=ast.Load()),
                            args=[ast.Constant(value=0), args[0]], keywords=[])
        if len(args) == 2:
            args.append(ast.Constant(value=1))
        return ast.Call(func=ast.Name(id="trip_count", ctx=ast.Load()), args=args, keywords=[])

    def host(self, e: ast.expr) -> ast.expr | None:
        """``e`` as an expression of the parameters alone (what the host knows before a
        launch: scalar parameters and array shapes), else None."""
        if isinstance(e, ast.Constant):
            return clone(e) if isinstance(e.value, int) and not isinstance(e.value, bool) \
                else None
        if isinstance(e, ast.Name):
            if e.id in self.params:
                k = self.u.kinds.get(e.id)
                return clone(e) if k is not None and not k.is_array and k.cls == "i" else None
            d = self.defs.get(e.id)
            return None if d is None else self.host(d)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult,
                                                          ast.FloorDiv)):
            a, b = self.host(e.left), self.host(e.right)
            return None if a is None or b is None else ast.BinOp(left=a, op=e.op, right=b)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            a = self.host(e.operand)
            return None if a is None else ast.UnaryOp(op=e.op, operand=a)
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) \
                and e.value.attr == "shape" and isinstance(e.value.value, ast.Name) \
                and e.value.value.id in self.params and isinstance(e.slice, ast.Constant):
            return clone(e)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) \
                and resolve(e.func, self.env) in (helpers.trip_count, len, min, max):
            args = [self.host(a) for a in e.args]
            if any(a is None for a in args) or e.keywords:
                return None
            name = "trip_count" if resolve(e.func, self.env) is helpers.trip_count \
                else e.func.id
            return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=[])
        return None

    # --- expressions ---------------------------------------------------------------

    def expr(self, e: ast.expr) -> ast.expr:
        """``e`` with NumPy's scalar spellings as ``math``'s and helpers inlined."""
        e = clone(e)
        return _Spellings(self).visit(e)

    # --- errors and the final check --------------------------------------------------

    def error(self, msg: str, node: ast.AST | None = None, hint: str = ""):
        return self.u.parsed.error(f"cannot lower {self.u.name} to CUDA: {msg}", node,
                                   hint or "see docs/cuda.md for what device code supports")

    def unbounded(self, cap: str):
        loop = self.reserve_loop.get(cap)
        if self.kernel:
            msg = ("this loop needs a tape whose length the host cannot know before the "
                   "launch (a while loop, or a trip count computed inside the kernel)")
            hint = ("make the loop a 'for ... in range(n)' with n a kernel parameter (or an "
                    "array's shape), or compute the values the adjoint needs without "
                    "overwriting them")
        else:
            msg = ("this loop needs a tape of a length not known when the device function "
                   "is compiled")
            hint = ("device functions take loops with a constant trip count "
                    "('for t in range(16)'); or differentiate the kernel calling it, whose "
                    "trip counts the host reads from the arguments")
        return self.u.parsed.error(f"cannot lower {self.u.name} to CUDA: {msg}", loop, hint)

    def check(self, fn: ast.FunctionDef) -> None:
        """Refuse device code that still holds host-only constructs (a jitgrad bug if any
        remains after the rewrite: it would not compile, or would allocate)."""
        allowed_attrs = {self.names["cuda"], self.names["math"], self.names["numba"]}
        for n in ast.walk(fn):
            bad = None
            if isinstance(n, (ast.List, ast.ListComp, ast.Dict, ast.Set)):
                bad = "a list or other container"
            elif isinstance(n, ast.Name) and self.env.get(n.id) is np:
                bad = "a use of NumPy"
            elif isinstance(n, ast.Name) and n.id == self.u.namer.seed and self.kernel:
                bad = "the seed used as an array"
            elif isinstance(n, (ast.Assign, ast.AugAssign)) and self.kernel and any(
                    isinstance(t, ast.Name) and t.id in self.array_adjoints
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])):
                bad = "a whole-array update of a gradient buffer"
            elif isinstance(n, ast.Call):
                f = n.func
                root = f
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(f, ast.Attribute) and not (isinstance(root, ast.Name)
                                                         and root.id in allowed_attrs):
                    bad = f"the method call {ast.unparse(f)}(...)"
                elif isinstance(f, ast.Name) and f.id not in _device_builtins():
                    bad = f"a call of {f.id}(...)"
            if bad is not None:
                raise self.error(f"the generated code holds {bad}, which device code cannot "
                                 "run", None, "report this to jitgrad with the function; "
                                 "meanwhile, simplify the line that needs it")


class _Spellings(ast.NodeTransformer):
    """NumPy scalar calls to ``math``/builtins; helper calls to expressions."""

    def __init__(self, rw: _Rewriter):
        self.rw = rw

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        """``np.pi``, ``np.inf``: NumPy's float constants as literals."""
        self.generic_visit(node)
        base = resolve(node.value, self.rw.env)
        if base is np and isinstance(getattr(np, node.attr, None), float):
            return ast.Constant(value=getattr(np, node.attr))
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        rw = self.rw
        fn = resolve(node.func, rw.env)
        args = node.args
        m = rw.names["math"]
        if fn is None or node.keywords:
            return node
        spelled = device_spelling(fn)
        if spelled is not None and spelled.startswith("math."):
            return _call(_attr(m, spelled[len("math."):]), args)
        if spelled is not None and spelled != getattr(fn, "__name__", None):
            return _call(ast.Name(id=spelled, ctx=ast.Load()), args)
        rewrite = device_rewrite(fn)
        if rewrite is not None:
            return rewrite(args, rw.names)
        if fn is helpers.trip_count:
            a, b, c = args
            up = ast.BinOp(left=ast.BinOp(left=ast.BinOp(left=b, op=ast.Sub(), right=a),
                                          op=ast.Add(), right=clone(c)),
                           op=ast.Sub(), right=ast.Constant(value=1))
            down = ast.BinOp(left=ast.BinOp(left=ast.BinOp(left=clone(a), op=ast.Sub(),
                                                           right=clone(b)),
                                            op=ast.Sub(), right=clone(c)),
                             op=ast.Sub(), right=ast.Constant(value=1))
            def nonneg(e: ast.expr) -> ast.expr:  # (no int max: see reserve)
                return ast.IfExp(test=_cmp(e, ast.Gt(), 0), body=clone(e),
                                 orelse=ast.Constant(value=0))

            return ast.IfExp(
                test=_cmp(c, ast.Gt(), 0),
                body=nonneg(ast.BinOp(left=up, op=ast.FloorDiv(), right=clone(c))),
                orelse=nonneg(ast.BinOp(left=down, op=ast.FloorDiv(),
                                        right=ast.UnaryOp(op=ast.USub(), operand=clone(c)))))
        if isinstance(fn, np.ufunc) or getattr(fn, "__module__", "") == "numpy":
            raise rw.error(f"np.{getattr(fn, '__name__', '?')} has no CUDA spelling")
        return node


def _written_once(body: list[ast.stmt], name: str) -> bool:
    """Is the array ``name`` written by one statement of ``body``, outside loops (so its
    adjoint reads each seed element once)?"""
    count = 0
    inside = False
    for s in walk_stmts(body):
        if isinstance(s, (ast.For, ast.While)) and _stores(s.body, name):
            inside = True
        t = s.targets if isinstance(s, ast.Assign) else [s.target] \
            if isinstance(s, ast.AugAssign) else []
        count += sum(isinstance(m, ast.Subscript) and isinstance(m.value, ast.Name)
                     and m.value.id == name for x in t
                     for m in (x.elts if isinstance(x, ast.Tuple) else [x]))
    return count == 1 and not inside


def _without_dead_writes(body: list[ast.stmt], outputs: tuple[str, ...],
                         seeds: set[str]) -> list[ast.stmt]:
    """``body`` without the element writes of outputs it never reads back (re-running the
    forward part needs only what the adjoint reads), nor the zeroing of ``seeds`` (each
    element read once: seeds are read, never written)."""
    read = set()
    for s in walk_stmts(body):
        for n in own_expressions(s):
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) \
                    and isinstance(n.value, ast.Name):
                read.add(n.value.id)
    dead = set(outputs) - read

    def keep(s: ast.stmt) -> bool:
        t = s.targets[0] if isinstance(s, ast.Assign) and len(s.targets) == 1 else \
            s.target if isinstance(s, ast.AugAssign) else None
        if not (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)):
            return True
        if t.value.id in seeds:  # only the zeroing after the one read goes
            return not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant))
        return t.value.id not in dead

    out = []
    for s in body:
        if not keep(s):
            continue
        for f in ("body", "orelse"):
            if getattr(s, f, None):
                setattr(s, f, _without_dead_writes(getattr(s, f), outputs, seeds)
                        or [ast.Pass()])
        out.append(s)
    return out


def _loads(body: list[ast.stmt], name: str) -> bool:
    return any(isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
               and isinstance(n.value, ast.Name) and n.value.id == name
               for s in walk_stmts(body) for n in own_expressions(s))


def _stores(body: list[ast.stmt], name: str) -> bool:
    return any(isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
               and isinstance(n.value, ast.Name) and n.value.id == name
               for s in walk_stmts(body) for n in own_expressions(s))


def _single_defs(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """Names assigned exactly once (and never a loop variable) -> the value assigned."""
    count: dict[str, int] = {}
    value: dict[str, ast.expr] = {}
    for s in walk_stmts(body):
        targets: list[ast.AST] = []
        if isinstance(s, ast.Assign):
            targets = list(s.targets)
        elif isinstance(s, ast.AugAssign):
            targets = [s.target, s.target]
        elif isinstance(s, ast.For):
            targets = [s.target, s.target]
        for t in targets:
            for m in ast.walk(t):
                if isinstance(m, ast.Name):
                    count[m.id] = count.get(m.id, 0) + 1
                    if isinstance(s, ast.Assign) and t is m:
                        value[m.id] = s.value
    return {n: v for n, v in value.items() if count.get(n) == 1}


def _fold(e: ast.expr) -> ast.expr:
    """``e`` as a constant where it holds no names."""
    if not any(isinstance(n, (ast.Name, ast.Attribute)) and not (
            isinstance(n, ast.Name) and n.id in ("max", "trip_count")) for n in ast.walk(e)):
        try:
            return ast.Constant(value=int(evaluate(e, {})))
        except Exception:
            return e
    return e


def evaluate(e: ast.expr, values: dict[str, Any]) -> Any:
    """Evaluate a capacity expression (``Lowered.caps``) with the parameters' values."""
    code = compile(ast.fix_missing_locations(ast.Expression(body=clone(e))), "<jitgrad-cap>",
                   "eval")
    return eval(code, {"__builtins__": {}, "max": max, "min": min, "len": len,
                       "trip_count": helpers.trip_count}, dict(values))


def _is_seed(e: ast.expr, seed: str) -> bool:
    while isinstance(e, (ast.Subscript, ast.Call, ast.Attribute)):
        e = e.value if not isinstance(e, ast.Call) else e.func
    return isinstance(e, ast.Name) and e.id == seed


def _assign(t: str, v: ast.expr) -> ast.stmt:
    return ast.Assign(targets=[ast.Name(id=t, ctx=ast.Store())], value=v)


def _attr(base: str, *attrs: str) -> ast.expr:
    e: ast.expr = ast.Name(id=base, ctx=ast.Load())
    for a in attrs:
        e = ast.Attribute(value=e, attr=a, ctx=ast.Load())
    return e


def _call(f: ast.expr, args: list[ast.expr]) -> ast.Call:
    return ast.Call(func=f, args=list(args), keywords=[])


def _cmp(a: ast.expr, op: ast.cmpop, b: float) -> ast.expr:
    return ast.Compare(left=a, ops=[op], comparators=[ast.Constant(value=b)])


#: the modules device code names, by the name it prefers for each
DEVICE_MODULES = ("cuda", "math", "numba")


def module_names(u: Any) -> dict[str, str]:
    """The global names the device code reaches ``numba.cuda``, ``math`` and ``numba`` by
    (``cuda`` itself unless the user's globals bind it to something else)."""
    import numba
    from numba import cuda

    objs = {"cuda": cuda, "math": math, "numba": numba}
    return {k: u.namer.global_name(u.env, k, objs[k]) for k in DEVICE_MODULES}


__all__ = ["LOCAL_BYTES", "Lowered", "check_device_code", "evaluate",
           "lower_device", "lower_kernel", "module_names", "private_arrays"]


def _need(v: ast.Call) -> ast.BinOp | None:
    """``cursor + E`` of ``tape_reserve(tape, cursor, E)``: the room a reservation asks for."""
    if len(v.args) == 3 and not v.keywords:
        return ast.BinOp(left=v.args[1], op=ast.Add(), right=v.args[2])
    return None
