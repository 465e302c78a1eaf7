"""Analyse: what carries a gradient, where values are redefined, how adjoints are held.

* activity: a variable is *active* if it depends on a ``wrt`` argument through
  differentiable operations (varied) and influences the output (useful);
* positions: every statement gets a preorder number and its enclosing loops, so the
  reverse pass can ask "may ``x`` be redefined after this statement?";
* adjoint modes: a *local* adjoint (one definition, every use later in the same
  block) is assigned on first touch and needs no zeroing; every other active
  variable gets a *buffer* adjoint, zeroed once before the adjoint sweep.
"""

from __future__ import annotations

import ast
import dataclasses
import operator
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from ...rules import is_non_differentiable, lookup
from ...rules.primitives import (
    attribute_function,
    copies_into,
    method_function,
    query_attrs,
)
from ..astutil import resolve
from ..naming import is_generated
from ..nodes import nodes_of, walk, walk_stmts
from ..notes import AUG, BLOCK, END, KIND, LOOP_SEQ, PARAM_OF, POS, checkpoint
from . import dataflow
from .effects import refuse_hidden_writes
from .kinds import UNKNOWN, Kind, list_tape_call
from .list_hint import list_refusal
from .regions import asserted_distinct, disjoint_regions
from .shapes import refuse_loop_shape_changes

BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.Pow: operator.pow, ast.FloorDiv: operator.floordiv,
          ast.Mod: operator.mod, ast.MatMult: operator.matmul}
UNARYOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def primitive_of(value: ast.expr, env: dict):
    """(primitive object, positional operand exprs, keyword dict) of a normalized RHS, or None.

    ``x.T`` is ``np.transpose(x)``; ``x.sum(...)`` is ``np.sum(x, ...)``.
    """
    if isinstance(value, ast.BinOp):
        return BINOPS.get(type(value.op)), [value.left, value.right], {}
    if isinstance(value, ast.UnaryOp) and type(value.op) in UNARYOPS:
        return UNARYOPS[type(value.op)], [value.operand], {}
    if isinstance(value, ast.Call):
        fn = resolve(value.func, env)
        args = list(value.args)
        if fn is None and isinstance(value.func, ast.Attribute):
            fn = method_function(value.func.attr)
            args = [value.func.value, *args]
            if fn is np.reshape and len(args) > 2:
                args = [args[0], ast.Tuple(elts=args[1:], ctx=ast.Load())]
        return fn, args, {k.arg: k.value for k in value.keywords}
    if isinstance(value, ast.Attribute) and attribute_function(value.attr) is not None:
        return attribute_function(value.attr), [value.value], {}
    if isinstance(value, ast.Subscript):
        return operator.getitem, [value.value, value.slice], {}
    return None


def operand_names(args: list[ast.expr]) -> list[str]:
    out = []
    for a in args:
        if isinstance(a, ast.Name):
            out.append(a.id)
        elif isinstance(a, (ast.Tuple, ast.List)):
            out += [e.id for e in a.elts if isinstance(e, ast.Name)]
    return out


def is_permutation(s: ast.stmt) -> bool:
    return (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Tuple)
            and isinstance(s.value, ast.Tuple)
            and all(isinstance(e, ast.Name) for e in s.targets[0].elts + s.value.elts))


@dataclass
class Analysis:
    """Results the reverse pass reads."""

    kinds: dict[str, Kind]
    active: set[str]
    modes: dict[str, str]
    defs: dict[str, list[ast.stmt]] = field(default_factory=dict)
    written: set[str] = field(default_factory=set)
    #: the groups of names sharing a buffer written in place (``aliases``)
    sharing: dataflow.Groups = field(default_factory=dataflow.Groups)
    uses: dict[str, list[ast.stmt]] = field(default_factory=dict)
    returned: set[str] = field(default_factory=set)
    loops_of: dict[int, list[ast.stmt]] = field(default_factory=dict)
    top_defined: set[str] = field(default_factory=set)
    block_parent: dict[int, int | None] = field(default_factory=dict)
    inplace: dict[str, list[ast.stmt]] = field(default_factory=dict)
    #: arrays made and used only inside one loop body or branch -> that block's id
    block_local: dict[str, int] = field(default_factory=dict)
    #: array arguments written in place, directly or through a name sharing their buffer
    args_written: set[str] = field(default_factory=set)
    #: arrays updated with ``x op= e`` (Python writes their buffer in place)
    aug_written: set[str] = field(default_factory=set)
    #: views written in place whose adjoint is the same view of the base's adjoint:
    #: name -> (base, the statement making the view)
    views: dict[str, tuple[str, ast.stmt]] = field(default_factory=dict)
    #: views of a buffer nothing writes: an adjoint view saves a buffer and its sum, but
    #: where the conditions for one fail, a buffer of their own is exact too
    read_only_views: set[str] = field(default_factory=set)
    #: loops whose trips the reverse sweep replays one at a time, each right before its
    #: adjoint (``Binomial.loop(each_step=True)`` while it builds them): what runs after a
    #: statement in one, before its adjoint, is the rest of its trip (``may_redefine_after``)
    replayed: set[int] = field(default_factory=set)
    #: name -> positions of its ``defs`` (filled on first query; ``defs`` is final by then)
    _def_pos: dict[str, list[int]] = field(default_factory=dict, repr=False)
    #: name -> positions of its ``uses``, ascending (filled on first query)
    _use_pos: dict[str, list[int]] = field(default_factory=dict, repr=False)

    def freeze(self) -> None:
        """Make the results read-only: the mode passes and codegen read them, never write
        (a write is a ``TypeError``/``AttributeError`` at the offending line, not a fact
        that silently changes under a later pass)."""
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name.startswith("_"):
                continue  # memos
            if isinstance(v, set):
                setattr(self, f.name, frozenset(v))
            elif isinstance(v, dict):
                setattr(self, f.name, MappingProxyType(v))

    def aliases(self, n: str) -> frozenset[str]:
        """``n`` and the names that may share its buffer where that buffer is written in
        place (``Dataflow.written_buffers``: swaps, views and their bases)."""
        return self.sharing.of(n)

    def shared_writes(self, n: str) -> list[ast.stmt]:
        """In-place writes through the other names that share ``n``'s buffer."""
        return [d for m in self.aliases(n) if m != n for d in self.inplace.get(m, ())]

    def kind(self, n: str) -> Kind:
        return self.kinds.get(n, UNKNOWN)

    def first_pos(self, n: str) -> int:
        """Position of the first definition of ``n`` (-1 if none)."""
        pos = self.def_positions(n)
        return pos[0] if pos else -1

    def def_positions(self, n: str) -> list[int]:
        """The positions of ``n``'s definitions, ascending: ``defs`` lists are built in
        program order, so position queries bisect instead of scanning every definition."""
        pos = self._def_pos.get(n)
        if pos is None:
            pos = self._def_pos[n] = [POS.get(d) for d in self.defs.get(n, ())]
        return pos

    def use_positions(self, n: str) -> list[int]:
        """The positions of the statements reading ``n``, ascending (``def_positions``'
        counterpart: position queries bisect)."""
        pos = self._use_pos.get(n)
        if pos is None:
            pos = self._use_pos[n] = sorted(POS.get(u) for u in self.uses.get(n, ()))
        return pos

    def used_within(self, n: str, lo: int, hi: int) -> bool:
        """Does a statement at a position strictly between ``lo`` and ``hi`` read ``n``?"""
        pos = self.use_positions(n)
        k = bisect_right(pos, lo)
        return k < len(pos) and pos[k] < hi

    def enclosing_loops(self, s: ast.stmt) -> list[ast.stmt]:
        return self.loops_of.get(id(s), [])

    def _frame(self, s: ast.stmt) -> tuple[list[ast.stmt], int | None]:
        """The loops around ``s`` that can run again before its adjoint, and the end of the
        replayed loop around it (``replayed``: nothing after it runs in between), or None."""
        loops = self.enclosing_loops(s)
        for k, x in enumerate(loops):  # outermost first
            if id(x) in self.replayed:
                return loops[k + 1:], END.get(x)
        return loops, None

    def may_redefine_after(self, n: str, s: ast.stmt, include_self: bool) -> bool:
        """Can a definition of ``n`` execute after ``s`` (in the same call; in a replayed
        loop, before the adjoint of ``s``'s trip)?"""
        loops, end = self._frame(s)
        pos = self.def_positions(n)
        lo, hi = bisect_left(pos, POS.get(s)), bisect_right(pos, END.get(s))
        if hi < len(pos) and (end is None or pos[hi] <= end):
            return True  # a definition after s
        defs = self.defs.get(n, ())
        if any(self._redefines(d, s, include_self, loops, end) for d in defs[lo:hi]):
            return True  # s itself (or a statement nested in it)
        if loops and lo > 0 and pos[lo - 1] > POS.get(loops[0]):
            return True  # an earlier definition in a loop around s: runs again next trip
        # an array also changes when a name sharing its buffer is written in place
        return any(self._redefines(d, s, include_self, loops, end)
                   for d in self.shared_writes(n))

    def may_rebind_after(self, n: str, s: ast.stmt) -> bool:
        """Can an assignment binding the name ``n`` anew (not a write into its buffer, which
        keeps its shape) execute after ``s``?"""
        loops, end = self._frame(s)
        return any(self._redefines(d, s, False, loops, end) for d in self.defs.get(n, ())
                   if not (n in self.inplace and any(d is w for w in self.inplace[n])))

    def _redefines(self, d: ast.stmt, s: ast.stmt, include_self: bool,
                   loops: list[ast.stmt], end: int | None = None) -> bool:
        """Can the definition ``d`` execute after ``s`` (``loops``: those around ``s``;
        ``end``: where the replayed trip around ``s`` ends)?"""
        if end is not None and POS.get(d) > end:
            return False  # after the replayed loop: runs after the trip's adjoint
        if POS.get(d) > END.get(s):
            return True
        if POS.get(s) <= POS.get(d) <= END.get(s):
            return include_self or d is not s or bool(loops)
        return bool({id(x) for x in loops} & {id(x) for x in self.enclosing_loops(d)})

    def used_after(self, n: str, s: ast.stmt) -> bool:
        """May ``n`` be read after ``s`` (later statement, next iteration, or the return)?"""
        if n in self.returned:
            return True
        loops = {id(x) for x in self.enclosing_loops(s)}
        for u in self.uses.get(n, ()):
            if u is s:
                continue
            if POS.get(u) > END.get(s) or loops & {id(x) for x in self.enclosing_loops(u)}:
                return True
        return False

    def kind_of_index(self, e: ast.expr) -> bool:
        """Is ``e`` an integer scalar index (basic indexing, not an index array)?"""
        if isinstance(e, ast.Constant):
            return isinstance(e.value, int) and not isinstance(e.value, bool)
        k = self.kinds.get(e.id) if isinstance(e, ast.Name) else None
        if k is not None:
            return k.cls in ("i", "b") and k.ndim == 0
        return isinstance(e, (ast.BinOp, ast.UnaryOp)) and all(
            self.kind_of_index(n) for n in walk(e) if isinstance(n, (ast.Name, ast.Constant)))

    def inside(self, s: ast.stmt, block: int) -> bool:
        """Is ``s`` in the block ``block`` or nested in one of its statements?"""
        b = BLOCK.get(s)
        while b is not None:
            if b == block:
                return True
            b = self.block_parent.get(b)
        return False

    def dominates(self, d: ast.stmt, s: ast.stmt) -> bool:
        """Does every execution of ``s`` follow one of ``d`` (``d`` earlier, in ``s``'s
        block or in a block around it)?"""
        if POS.get(d) >= POS.get(s):
            return False
        b = BLOCK.get(s)
        while b is not None:
            if b == BLOCK.get(d):
                return True
            b = self.block_parent.get(b)
        return False

    def defined_between(self, n: str, a: ast.stmt, b: ast.stmt) -> bool:
        """Is ``n`` (re)defined, or its buffer written through another name, by a
        statement strictly between ``a`` and ``b``?"""
        pos = self.def_positions(n)
        k = bisect_right(pos, END.get(a))
        if k < len(pos) and pos[k] < POS.get(b):
            return True
        return any(END.get(a) < POS.get(d) < POS.get(b) for d in self.shared_writes(n))

    def recomputed_index(self, n: str, s: ast.stmt) -> bool:
        """``n`` is the index of a loop around ``s`` that nothing else redefines."""
        for loop in reversed(self.enclosing_loops(s)):
            if isinstance(loop, ast.For) and loop.target.id == n:
                pos = self.def_positions(n)  # no definition inside the loop (the loop's is at it)
                k = bisect_right(pos, POS.get(loop))
                return not (k < len(pos) and pos[k] <= END.get(loop))
        return False


def _number(body: list[ast.stmt], an: Analysis) -> None:
    counter = [0]

    def visit(stmts, loops, parent):
        an.block_parent[id(stmts)] = parent
        for s in stmts:
            POS.set(s, counter[0])
            BLOCK.set(s, id(stmts))
            counter[0] += 1
            an.loops_of[id(s)] = list(loops)
            inner = loops + [s] if isinstance(s, (ast.For, ast.While)) else loops
            for f in ("body", "orelse"):
                visit(getattr(s, f, []) or [], inner, id(stmts))
            END.set(s, counter[0] - 1)

    visit(body, [], None)


def flat_body(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """A block with checkpointed regions opened up (they run unconditionally)."""
    out = []
    for s in stmts:
        if checkpoint(s):
            out += flat_body(s.body)
        else:
            out.append(s)
    return out


def analyse(body: list[ast.stmt], env: dict, kinds: dict[str, Kind], args: list[str],
            wrt: list[str], returns: list[ast.expr], parsed,
            tangents: bool = False) -> Analysis:
    """Run activity, positions and adjoint-mode analyses over a normalized body
    (``tangents``: for forward mode, which makes a view's tangent where the view is made,
    so it needs none of the reverse sweep's conditions on where views are made)."""
    an = Analysis(kinds, set(), {})
    _number(body, an)
    stmts = list(walk_stmts(body))
    _check_kinds(stmts, an, env, parsed)
    _defs_and_uses(body, stmts, an, env)
    an.returned = {r.id for r in returns if isinstance(r, ast.Name)}
    flow = dataflow.Dataflow(body, is_array=lambda n: an.kind(n).is_array, env=env)
    varied = _activity(stmts, an, env, wrt, returns, flow)
    for s in stmts:
        for n in dataflow.binds(s, elements=True):
            if n in an.active and an.kind(n).cls == "c":
                raise parsed.error(f"'{parsed.user_name(n)}' is complex; jitgrad differentiates "
                                   "real (float) values only", s,
                                   "split the value into real and imaginary float parts")
    _check_views(flow, an, varied, env, parsed, args,
                 ({id(x) for x in body}, asserted_distinct(body)))
    _check_aliases_and_containers(stmts, an, varied, set(args), parsed)
    _modes(body, an, args, returns)
    _block_local(body, an, args)
    _settle_views(body, an, env, parsed, tangents)
    if not tangents:  # a tangent follows its value's shape; an adjoint buffer has one
        refuse_loop_shape_changes(body, an, env, parsed)
    refuse_hidden_writes(stmts, an, env, parsed, tangents)
    written = an.written | an.aug_written  # (through any name sharing their buffer)
    an.args_written = {a for a in args if an.kind(a).is_array and an.aliases(a) & written}
    an.freeze()
    return an


def _defs_and_uses(body: list[ast.stmt], stmts: list[ast.stmt], an: Analysis,
                   env: dict) -> None:
    """Per name: the statements binding it, writing it in place and reading it; the
    names bound at the top level; the arrays ``u -= e`` writes in place."""
    for s in stmts:  # ``u -= e`` on an array writes the buffer ``u`` names in place
        if AUG.get(s) and isinstance(s.value, ast.BinOp) \
                and isinstance(s.value.left, ast.Name) and an.kind(s.value.left.id).is_array:
            an.aug_written.add(s.value.left.id)
    for s in stmts:
        for n in dataflow.binds(s, elements=True):
            an.defs.setdefault(n, []).append(s)
        if isinstance(s, (ast.Assign, ast.AugAssign)):
            t = s.targets[0] if isinstance(s, ast.Assign) else s.target
            if isinstance(t, ast.Subscript):
                an.written.add(t.value.id)
                an.inplace.setdefault(t.value.id, []).append(s)
        elif isinstance(s, ast.Expr) and (copy := copy_args(s.value, env)):
            an.written.add(copy[0].id)  # (gradient code under hvp) an in-place copy
            an.inplace.setdefault(copy[0].id, []).append(s)
    for s in flat_body(body):
        an.top_defined.update(dataflow.binds(s, elements=True))
    for s in stmts:
        if isinstance(s, ast.For):
            parts = [s.iter]
        elif isinstance(s, (ast.If, ast.While)):
            parts = [s.test]
        else:
            parts = [s]
        for p in parts:
            for n in nodes_of(p):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    an.uses.setdefault(n.id, []).append(s)


def _activity(stmts: list[ast.stmt], an: Analysis, env: dict, wrt: list[str],
              returns: list[ast.expr], flow: dataflow.Dataflow) -> set[str]:
    """Set ``an.active``: the differentiable names that depend on ``wrt`` (varied, which
    is returned) and that the outputs depend on (useful)."""
    def diff(n: str) -> bool:
        return an.kind(n).differentiable

    # a view and its base are one buffer: what flows into either flows into both
    view_stmts = {id(s): base for _, base, s, swap in flow.moves() if not swap}
    flows = [f for s in stmts for f in _flows(s, env, view_stmts, an.kinds)]
    forward: dict[str, list[str]] = {}
    for tgt, srcs in flows:
        if diff(tgt):
            for x in srcs:
                forward.setdefault(x, []).append(tgt)
    varied = _reachable(set(wrt), forward)
    backward: dict[str, list[str]] = {}
    for tgt, srcs in flows:
        backward.setdefault(tgt, []).extend(srcs)
    useful = _reachable({r.id for r in returns if isinstance(r, ast.Name)}, backward)
    an.active = {n for n in varied & useful if diff(n)}
    return varied


_VIEW_WRITES = (ast.Subscript, ast.Attribute)  # basic indexing, .T: a view of the adjoint too


def _settle_views(body: list[ast.stmt], an: Analysis, env: dict, parsed,
                  tangents: bool = False) -> None:
    """Keep the written views whose adjoint can be the same view of the base's adjoint.

    The adjoint view is made where the reverse sweep starts (a view made once at the
    top level) or enters the view's block (a view local to a loop body or branch), so
    its index must still hold its value there, the base must not be rebound after it,
    and the view must be made once.  Anything else is refused at the view's line.
    ``tangents`` (forward mode): the tangent view is made by the same expression right
    where the view is (``t_dot = base_dot[...]``), and a rebound base rebinds its tangent
    at the same statement, so only the kind of view and the activity of both names
    matter.
    """
    for t, (base, s) in list(an.views.items()):
        v = s.value
        kind_ok = isinstance(v, (ast.Name, *_VIEW_WRITES)) or (
            isinstance(v, ast.Call) and primitive_of(v, env)[0] is np.transpose)
        if isinstance(v, ast.Subscript):
            kind_ok = _basic_index(v, an)
        where_ok = [d for d in an.defs.get(t, []) if not _writes_in_place(d)] == [s] and (
            BLOCK.get(s) == id(body) or t in an.block_local)
        rebound = any(POS.get(d) > POS.get(s) and not _writes_in_place(d)
                      for d in an.defs.get(base, []))
        if kind_ok and (tangents or where_ok and not rebound and _index_holds(base, s, an, env)) \
                and base in an.active and t in an.active:
            an.modes[t] = "view"
            continue
        if not ({t, base} & an.active) or t in an.read_only_views:
            del an.views[t]
            an.read_only_views.discard(t)
            continue
        ut, ub = parsed.user_name(t), parsed.user_name(base)
        if LOOP_SEQ.get(s):
            raise parsed.error(
                f"the loop iterates over '{ub}' while its body writes into '{ub}' in place "
                f"and rebinds it; jitgrad cannot follow which array each trip reads", s,
                f"loop over 'range(len({ub}))' and index the array you mean, or give the "
                "rebound array another name")
        what = (f"'{ut}' is a view of '{ub}' and is written in place" if t in an.inplace else
                f"'{ut}' is a view of '{ub}', which is written in place while '{ut}' is used")
        raise parsed.error(
            f"{what}; jitgrad follows writes through a view made once (at the top level, or "
            "afresh in each loop iteration or branch) by slicing or .T, of an array not "
            "rebound while the view is used",
            s, f"take a copy ('{ut} = {parsed.user_source(v)}.copy()') or write into '{ub}' "
            "directly")


def _writes_in_place(d: ast.stmt) -> bool:
    t = d.targets[0] if isinstance(d, ast.Assign) else getattr(d, "target", None)
    return isinstance(t, ast.Subscript)


def _block_local(body: list[ast.stmt], an: Analysis, args: list[str]) -> None:
    """Arrays bound only directly in one loop body or branch and used only inside it.

    Their adjoints are zeroed where the reverse sweep enters that block (each
    iteration, or the branch taken), so they never need a value outside it.
    """
    for n, m in an.modes.items():
        if m != "buffer" or n in args or n in an.top_defined or not an.kind(n).is_array:
            continue
        # (``n op= e`` in a nested loop, an accumulation into the block's array, updates
        # it: the block is where it is created)
        binds = [d for d in an.defs.get(n, []) if isinstance(d, ast.Assign)
                 and isinstance(d.targets[0], ast.Name) and not AUG.get(d)]
        blocks = {BLOCK.get(d) for d in binds}
        if len(blocks) != 1 or n in an.returned:
            continue
        block = blocks.pop()
        if all(an.inside(x, block) for x in [*an.defs.get(n, []), *an.uses.get(n, [])]):
            an.block_local[n] = block


def _check_kinds(stmts, an: Analysis, env: dict, parsed) -> None:
    """Refuse, at its line, a variable whose kind (scalar or array) cannot be known."""
    for s in stmts:
        if not isinstance(s, ast.Assign):
            continue
        t = s.targets[0]
        for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
            if isinstance(e, ast.Name) and an.kind(e.id).cls == "o":
                what = parsed.user_source(s.value)
                if isinstance(s.value, ast.List):
                    msg, hint = list_refusal(s, stmts, an.loops_of, an.kinds, parsed)
                    raise parsed.error(msg, s, hint)
                prim = primitive_of(s.value, env)
                if isinstance(s.value, ast.Call) and (prim is None or prim[0] is None or (
                        lookup(prim[0]) is None and not is_non_differentiable(prim[0]))):
                    raise parsed.error(
                        f"no gradient rule for '{ast.unparse(s.value.func)}', and jitgrad "
                        "cannot tell whether its result is a number or an array", s,
                        "register one with @jitgrad.grad_rule(func) (see docs/rules.md), or "
                        "compute this value outside the differentiated function")
                user = parsed.user_name(e.id)
                subject = f"'{user}' (from '{what}')" if not is_generated(user) else \
                    f"'{what}'"
                raise parsed.error(
                    f"cannot tell whether {subject} is a number or an array", s,
                    "jitgrad specialises the code on scalar and array kinds: compute this "
                    "value outside the function and pass it in, or use a math/NumPy call "
                    "jitgrad knows (see docs/supported.md)")
    # one name, a number in one place and an array in another (inside a loop or branch)
    scalar_at: dict[str, ast.stmt] = {}
    array_at: dict[str, ast.stmt] = {}
    for s in stmts:
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
            k = KIND.get(s.value)
            if k is not None and k.cls in ("b", "i", "f", "c") and k.ndim is not None:
                (array_at if k.ndim else scalar_at).setdefault(s.targets[0].id, s)
    for n in sorted(scalar_at.keys() & array_at.keys()):
        first, second = sorted((scalar_at[n], array_at[n]), key=lambda x: POS.get(x))
        user = parsed.user_name(n)
        raise parsed.error(
            f"'{user}' is a number here and an array elsewhere (line "
            f"{parsed.absolute_line(first)}); jitgrad needs one kind per variable", second,
            "use two names, one for the number and one for the array")


def _check_aliases_and_containers(stmts, an: Analysis, varied: set[str], args: set[str],
                                  parsed) -> None:
    """Refuse what the adjoint could not follow: containers of values, and arrays shared
    by two live names and updated with ``op=`` (kept as a rebinding, not a write).

    ``a = b`` on arrays written in place while both names live is an adjoint view
    (``_check_views``); otherwise it is a move (``b`` not read again) or a copy whose
    writes neither name sees while the other is used, and the adjoints add up.
    """
    for s in stmts:
        if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)):
            continue
        t, v = s.targets[0].id, s.value
        if isinstance(v, (ast.List, ast.Tuple)) and any(
                isinstance(e, ast.Name) and e.id in varied for e in v.elts):
            if isinstance(v, ast.Tuple):  # (one only unpacked or indexed is split: tuples.py)
                raise parsed.error(
                    f"the tuple '{parsed.user_name(t)}' of differentiated values is used in a "
                    "way jitgrad cannot split into its entries", s,
                    "a tuple may be unpacked (a, b = t), indexed with constants (t[0]), "
                    "copied, passed to helpers and returned alone (return t: outputs are "
                    "flat, not nested); index it with a constant, or keep the values in "
                    "separate variables or in an array")
            raise parsed.error("lists and tuples of differentiated values are not supported",
                               s, "keep the values in separate variables or in an array")
        group = an.aliases(t) | (an.aliases(v.id) if isinstance(v, ast.Name) else set())
        if isinstance(v, ast.Name) and v.id != t and an.kind(v.id).is_array \
                and an.modes.get(t) != "view" and t not in an.views \
                and (an.used_after(v.id, s) or v.id in args) \
                and (group | {v.id}) & an.aug_written:  # the generated code would rebind
            ut, uv = parsed.user_name(t), parsed.user_name(v.id)
            helper = PARAM_OF.get(s)
            if helper is not None:
                raise parsed.error(
                    f"helper '{helper}' changes its array parameter '{ut}' in place (with "
                    f"'{ut} op= ...') while '{uv}' is used again; jitgrad cannot follow "
                    "that aliasing through the call", s,
                    f"write through a slice in the helper ('{ut}[:] -= ...') so '{uv}' is "
                    "updated, or return the new array from the helper")
            raise parsed.error(
                f"'{ut} = {uv}' makes two names share one array that is written in place; "
                "jitgrad cannot follow that aliasing", s,
                f"copy it: '{ut} = {uv}.copy()' (or swap with '{ut}, {uv} = {uv}, {ut}')")


def _check_views(flow: dataflow.Dataflow, an: Analysis, varied: set[str], env: dict,
                 parsed, args: list[str], facts: tuple[set[int], frozenset]) -> None:
    """Group views with their bases (``flow``'s written buffers); refuse what the adjoints
    could not follow (``facts``: the top-level statements' ids, and the index pairs
    asserted distinct there)."""
    views = [(t, base, s) for t, base, s, swap in flow.moves() if not swap]
    _refuse_updated_views(views, an, parsed)
    # one buffer: a view sees the base's writes and the base the view's; tape copies of
    # either, never recompute from them
    an.written, an.sharing = flow.written_buffers(an.written)
    # a view whose buffer is written while the view is still used needs an adjoint that
    # is the same view of the base's adjoint: a write zeroes what both see
    for t, base, s in views:
        if not ({t, base} & (an.active | varied)):
            continue
        if isinstance(s.value, ast.Name) and not any(
                an.used_after(m, s) or m in args for m in an.aliases(base) - {t}):
            continue  # a move (nothing else reaches the buffer again): one adjoint suffices
        if t in an.inplace or _written_while_live(t, base, s, an, facts):
            an.views[t] = (base, s)  # settled (kept or refused) once modes are known
        elif _read_only_view(t, base, s, an, env, args, facts[0]):
            an.views[t] = (base, s)  # an adjoint view saves a buffer and its sum
            an.read_only_views.add(t)


def _read_only_view(t: str, base: str, s: ast.Assign, an: Analysis, env: dict,
                    args: list[str], top: set[int]) -> bool:
    """Can ``t = base[...]`` (basic indexing or ``.T``) of a buffer nothing writes, read
    by elements (its adjoint a buffer they add into, zeroed per trip and added back),
    have the same view of ``base``'s adjoint as its adjoint?  Where the view is made once
    (at the top level, or in a block that holds all of ``t``'s uses), ``base`` is an
    argument or bound once and not after ``s``, and the index still holds its value
    where the reverse sweep enters that block (``_index_holds``, as ``_settle_views``)."""
    v = s.value
    names = an.aliases(t) | an.aliases(base)
    if not {t, base} <= an.active or any(
            n in an.inplace or n in an.aug_written or n in an.written for n in names):
        return False
    if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name):
        if not _basic_index(v, an):
            return False
    elif not (isinstance(v, ast.Attribute) and v.attr == "T" and isinstance(v.value, ast.Name)):
        return False
    base_defs = an.defs.get(base, [])
    if an.defs.get(t, []) != [s] or not (base in args and not base_defs or len(base_defs) == 1
                                          and POS.get(base_defs[0]) < POS.get(s)):
        return False
    block = BLOCK.get(s)
    if id(s) not in top and not all(an.inside(x, block) for x in an.uses.get(t, [])):
        return False
    if not any(isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name)
               and x.value.id == t for u in an.uses.get(t, []) for x in walk(u)):
        return False  # used whole: its adjoint is a value added once, no buffer to save
    return _index_holds(base, s, an, env)


def _basic_index(v: ast.Subscript, an: Analysis) -> bool:
    """Is ``v`` basic indexing (slices and integer scalars): a view, not a copy?"""
    idx = v.slice.elts if isinstance(v.slice, ast.Tuple) else [v.slice]
    return all(isinstance(e, ast.Slice) or an.kind_of_index(e) for e in idx)


def _index_holds(base: str, s: ast.Assign, an: Analysis, env: dict) -> bool:
    """Do the names of the view ``s`` makes of ``base`` (its index) still hold their
    values where the reverse sweep enters its block (globals, loop indices, names not
    bound again after ``s``)?"""
    names = {n.id for n in walk(s.value) if isinstance(n, ast.Name)} - {base}
    return all(m in env and m not in an.kinds or an.recomputed_index(m, s)
               or not an.may_redefine_after(m, s, include_self=False) for m in names)


def _refuse_updated_views(views: list[tuple[str, str, ast.Assign]], an: Analysis,
                          parsed) -> None:
    """Refuse a view updated with ``op=``, or whose base is while the view is still used
    (Python rebinds the name: the other no longer sees the values)."""
    for t, base, s in views:
        v = s.value
        if t in an.aug_written:
            ut, ub = parsed.user_name(t), parsed.user_name(base)
            raise parsed.error(
                f"'{ut}' is a view of '{ub}' and is updated in place ('{ut} op= ...'); "
                "jitgrad cannot follow writes through views", s,
                f"take a copy ('{ut} = {parsed.user_source(v)}.copy()') or update '{ub}' directly")
        if base in an.aug_written:
            for d in an.defs.get(base, []):
                if AUG.get(d) and an.used_after(t, d) and (
                        POS.get(s) < POS.get(d) or an.enclosing_loops(d)):
                    ut, ub = parsed.user_name(t), parsed.user_name(base)
                    raise parsed.error(
                        f"'{ut}' is a view of '{ub}', which is updated in place ('{ub} op= "
                        f"...') while '{ut}' is still used; jitgrad cannot follow writes "
                        "seen through views", s,
                        f"take a copy ('{ut} = {parsed.user_source(v)}.copy()') or write "
                        f"'{ub} = {ub} op ...' to make a new array")


def _written_while_live(t: str, base: str, s: ast.stmt, an: Analysis,
                        facts: tuple[set[int], frozenset]) -> bool:
    """Can a write into the buffer run between ``t = <view of base>`` (``s``) and a use
    that would see it: of ``t``; for a write through another name than ``base``, of
    ``base``, and where ``t`` is read, of any name sharing the buffer but the writer (a
    view of ``t`` written reaches the array ``base`` views only through ``t``'s adjoint:
    ``t = p[0:3]; q = t; w = q[0:2]; w[0] = ...`` changes ``p``)?
    ``facts``: for ``regions.disjoint_regions``."""
    loops_s = {id(x) for x in an.enclosing_loops(s)}

    def same(name: str, x: ast.stmt) -> bool:
        return _may_name_the_same(name, s, x, an)

    group = an.aliases(t) | {base}
    writes = [(n, w) for n in group - {base} for w in an.inplace.get(n, [])
              if n != t or same(n, w)] + [(base, w) for w in an.inplace.get(base, [])
                                           if same(base, w)]
    uses = {m: [u for u in an.uses.get(m, []) if same(m, u)] for m in group}
    for n, w in writes:
        # a write through the base itself changes what 't' reads only where the regions
        # overlap, and only matters to a later read of 't' (one adjoint for each name, as
        # for a copy, is exact otherwise); a write through 't' or another alias reaches
        # the later reads of the others (the base, what it views) through the shared adjoint
        if n == base and disjoint_regions(s, w, base, an.kinds, an.defs, *facts):
            continue
        live = {t} if n == base else group - {n} | {t} if uses[t] else {t, base}
        if live & an.returned and POS.get(w) > END.get(s):
            return True
        loops_w = {id(x) for x in an.enclosing_loops(w)}
        for u in (x for m in live for x in uses[m]):
            if END.get(s) < POS.get(w) < POS.get(u):
                return True
            if (loops_w & {id(x) for x in an.enclosing_loops(u)}) - loops_s:
                return True  # w in one trip of a loop, u in the next, s before the loop
    return False


def _may_name_the_same(n: str, s: ast.stmt, x: ast.stmt, an: Analysis) -> bool:
    """May ``n`` still name, when ``x`` runs, the object it named right after ``s``?

    Not where a rebinding ``d`` of ``n`` runs before every execution of ``x`` (``d``
    dominates ``x``) and ``s`` cannot run between the two: ``s`` comes before ``d``, or
    after ``x`` and in no loop around ``x`` that ``d`` is outside of (a loop body copied
    twice into the generated code rebinds its names in each copy).  A rebinding in a
    branch, or later in a loop body (the first trip runs ``x`` before it), may not run.
    """
    def between(d: ast.stmt) -> bool:
        if POS.get(s) <= POS.get(d):
            return False
        if POS.get(s) < POS.get(x) or isinstance(x, ast.While) and POS.get(x) < POS.get(s) \
                <= END.get(x):  # (a while's test runs after its body)
            return True
        outside_d = {id(loop) for loop in an.enclosing_loops(x)} - {
            id(loop) for loop in an.enclosing_loops(d)}
        return any(id(loop) in outside_d for loop in an.enclosing_loops(s))

    return not any(d is not s and an.dominates(d, x) and not between(d)
                   for d in an.defs.get(n, []) if not _writes_in_place(d))


def _reachable(start: set[str], edges: dict[str, list[str]]) -> set[str]:
    """``start`` and every name reachable from it along ``edges`` (each name expanded once,
    not a re-scan of the body until nothing changes)."""
    seen = set(start)
    todo = list(seen)
    while todo:
        for m in edges.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def _flows(s: ast.stmt, env: dict, view_stmts: Mapping[int, str] = MappingProxyType({}),
           kinds: Mapping[str, Kind] = MappingProxyType({})):
    """(target, differentiable sources) pairs of one statement (``kinds``: where the list
    tapes are found: ``X.append(v)`` flows from ``v`` into ``X``, ``v = X.pop()`` back)."""
    if isinstance(s, ast.Expr) and list_tape_call(s.value, "append", kinds):
        return [(s.value.func.value.id, _sources(s.value.args[0], env))]
    if isinstance(s, ast.Expr) and (copy := copy_args(s.value, env)):
        return [(copy[0].id, _sources(copy[1], env))]  # copies src's elements into dst
    if isinstance(s, ast.Assign):
        t = s.targets[0]
        v = s.value
        if isinstance(t, ast.Name) and list_tape_call(v, "pop", kinds):
            return [(t.id, [v.func.value.id])]
        if id(s) in view_stmts:
            return [(t.id, [view_stmts[id(s)]]), (view_stmts[id(s)], [t.id])]
        if is_permutation(s):
            return [(a.id, [b.id]) for a, b in zip(t.elts, v.elts, strict=True)]
        if isinstance(t, ast.Name):
            return [(t.id, _sources(v, env))]
        if isinstance(t, ast.Subscript):
            return [(t.value.id, _sources(v, env))]
        return []
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Subscript):
        return [(s.target.value.id, _sources(s.value, env))]
    return []


def copy_args(e: ast.expr, env: dict) -> tuple[ast.Name, ast.expr] | None:
    """``(dst, src)`` where ``e`` copies ``src``'s elements into ``dst``'s buffer (the
    table's ``copies_into``; gradient code: ``restore_into(dst, src)`` writes a snapshot
    back, ``store_slot(dst, i, src)`` keeps one in a checkpointed loop's slot ``i``,
    ``load_slot(dst, src, i)`` writes it back), else None."""
    if not (isinstance(e, ast.Call) and not e.keywords):
        return None
    at = copies_into(resolve(e.func, env))
    if at is None or len(e.args) <= max(at) or not isinstance(e.args[at[0]], ast.Name):
        return None
    return e.args[at[0]], e.args[at[1]]


def _sources(v: ast.expr, env: dict) -> list[str]:
    if isinstance(v, ast.Name):
        return [v.id]
    if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name):
        return [v.value.id]
    if isinstance(v, ast.Attribute) and v.attr in query_attrs():
        return []
    prim = primitive_of(v, env)
    if prim is None:
        return []
    fn, args, _ = prim
    if fn is not None and is_non_differentiable(fn):
        return []
    names = operand_names(args)
    if fn is None or lookup(fn) is None:
        return names  # unknown: treated as differentiable; the reverse pass will refuse it
    return names


def _modes(body: list[ast.stmt], an: Analysis, args: list[str], returns) -> None:
    uses: dict[str, list[tuple[int, int]]] = {}  # name -> (block id, position)
    defs_at: dict[str, list[tuple[int, int]]] = {}
    buffer: set[str] = set()

    def visit(stmts, depth):
        bid = id(stmts)
        for i, s in enumerate(stmts):
            if isinstance(s, (ast.Assign, ast.AugAssign)):
                t = s.targets[0] if isinstance(s, ast.Assign) else s.target
                if isinstance(t, ast.Subscript):
                    buffer.add(t.value.id)
                if isinstance(s.value, ast.Subscript) and isinstance(s.value.value, ast.Name):
                    buffer.add(s.value.value.id)
                if is_permutation(s) or isinstance(s, ast.AugAssign):
                    for n in nodes_of(s):
                        if isinstance(n, ast.Name):
                            buffer.add(n.id)
                for n in nodes_of(s.value):
                    if isinstance(n, ast.Name):
                        uses.setdefault(n.id, []).append((bid, i))
                if isinstance(t, ast.Name):
                    defs_at.setdefault(t.id, []).append((bid, i))
            for f in ("body", "orelse"):
                sub = getattr(s, f, None)
                if sub:
                    visit(sub, depth + 1)

    visit(body, 0)
    # a view's adjoint is a view of its base's adjoint: both are buffers, never locals
    buffer |= set(an.views) | {b for b, _ in an.views.values()}
    for r in returns:
        if isinstance(r, ast.Name):
            uses.setdefault(r.id, []).append((id(body), len(body)))
    for n in an.active:
        d = defs_at.get(n, [])
        if (n in args or n in buffer or len(an.defs.get(n, [])) != 1 or len(d) != 1):
            an.modes[n] = "buffer"
            continue
        bid, pos = d[0]
        if all(ub == bid and up > pos for ub, up in uses.get(n, [])):
            an.modes[n] = "local"
        else:
            an.modes[n] = "buffer"
