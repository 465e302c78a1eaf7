"""The store-or-recompute planner: a value the adjoint needs, given again from what the
adjoint sweep still has, or stored.

``Planner.plan`` returns the decision record of one statement (``Captures``: each value
stored or recomputed, ``analysis.cost.decide``); ``tapes.py`` writes it out.
``Planner.recompute`` plans a value's recomputation (``analysis.cost.Plan``): it
is rebuilt from the one definition that reaches the read, from operands that provably
hold the values that definition saw (arrays not written since, restored or
loop-invariant scalars, the loop index), each intermediate value restored once under
its name; ``joint_plans`` prices the values one statement reads together; and a value
carried from one loop trip to the next is taped once, before its update
(``restored_next_trip``).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from ...rules.primitives import draws, query_attrs
from ...rules.registry import lookup
from ..analysis import dataflow
from ..analysis.analyse import Analysis, primitive_of
from ..analysis.cost import READ_COST, TAPE_COST, Decision, Plan, decide, op_cost
from ..astutil import resolve
from ..front.desugar import name
from ..nodes import clone, nodes_of, replace_names, walk, walk_stmts
from ..notes import BLOCK, CHECKPOINTED, END, POS, checkpoint
from .counters import Counters
from .policy import ReadPolicy, compose


@dataclass
class Capture:
    """What to do with one value an adjoint reads that may change before the adjoint runs:
    ``decision`` stores it (pushed on a tape) or recomputes it (``decision.plan``)."""

    name: str
    #: the statement's own output (pushed after it, not before)
    is_out: bool
    #: given back under its own name (earlier statements' adjoints reuse it), not a fresh one
    restores: bool
    decision: Decision
    #: stored instead where the loop first rebinds it, once per trip (``Planner.restore_at``)
    next_trip: bool = False
    #: the value stored earlier at the same statement that this one equals: its tape serves
    #: both (``ReadPolicy.same_value``)
    twin: str | None = None
    #: stored once per run of this loop, before it, instead (``ReadPolicy.hoisted``): the
    #: loop, and the invariant expression to push where the value is made in it
    hoist: tuple[ast.For, ast.expr | None] | None = None
    #: an array the adjoint reads only for its shape: a stand-in of that shape is stored,
    #: popped into a fresh name (``Planner.shape_only``)
    shape: bool = False


@dataclass
class Captures:
    """The planner's decision record for one statement: its values in order, and the one
    decision for the values recomputed together (None: each was decided on its own)."""

    values: list[Capture]
    joint: Decision | None = None


class Planner:
    """Store or recompute: which values a statement's adjoint needs again, and how each is
    given (see module docstring).  Its state: ``restore_at``, the values stored once per
    trip where a loop first rebinds them.  ``fwd_vars``: the names the forward sweep has
    defined so far (shared with the tapes and statements; by default the args and every
    name defined); ``policy``: what the adjoint reads again (``policy.ReadPolicy``)."""

    def __init__(self, an: Analysis, env: dict, args: list[str], body: list[ast.stmt],
                 has_break: Callable[[ast.stmt], bool], fwd_vars: set[str] | None = None,
                 policy: ReadPolicy | None = None, counters: bool = True):
        self.an, self.env, self.args = an, env, args
        self.has_break = has_break
        self.fwd_vars = set(args) | set(an.defs) if fwd_vars is None else fwd_vars
        self.policy = policy
        self.regions = any(checkpoint(x) for x in walk_stmts(body))  # checkpointed regions
        #: integer counters the adjoint steps back instead of storing (``counters.py``)
        self.counters = Counters.find(body, an, has_break) if counters else Counters()
        self.nonlinear_reads = nonlinear_reads(body, an)
        #: statement id -> the scalars taped before it, restored after its adjoint
        self.restore_at: dict[int, set[str]] = {}
        #: (id of a loop body, index in it, array) of the arrays stored once per trip of
        #: that loop after that statement, for element reads read again (``Plan.kept``)
        self.kept: set[tuple[int, int, str]] = set()

    def plan(self, s: ast.stmt, reads: set[str], outputs: set[str], restored: set[str],
             compound: bool, made: set[str], shaped: set[str] = frozenset()) -> Captures:
        """The values of ``reads`` (forward-sweep names, in order of definition) that the
        adjoint of ``s`` needs and that may change before it runs, each stored or
        recomputed (``analysis.cost.decide``; together where that is cheaper).

        ``made``: outputs of ``s`` that a later statement's adjoint restored.  ``restored``
        gains what the adjoint will have restored under its own name.  ``shaped``: the
        names the adjoint of ``s`` reads only for their shape (``shape_only``)."""
        wanted = self.wanted(s, reads, outputs, restored, compound, made)
        shapes = [self.shape_only(n, is_out) for n, is_out, _ in wanted
                  if not compound and n in shaped and self.an.kind(n).is_array
                  and self.an.kind(n).ndim is not None
                  and not self.result_read(n)
                  and decide(n, self.recompute(n, s, restored, post=is_out)).stored]
        wanted = [w for w in wanted if w[0] not in {c.name for c in shapes}]
        # counters indexing element reads: restored here, the reads are read again
        wanted[:0] = [(m, False, True) for m in self.index_restores(wanted, s, restored,
                                                                    compound)]
        # the first value's plan, planned once: on its own it is what joint planning starts
        # from (nothing planned before it), and what deciding it alone finds
        first = self.first_plan(wanted, s, restored, compound)
        joint = self.joint_plans(wanted, s, restored, compound, first)
        values: list[Capture] = []
        taped: list[str] = []  # the values stored here on tapes of their own, in order
        for k, (n, is_out, restores) in enumerate(wanted):
            if joint is not None:
                d = Decision(n, False, "", joint[0][n])
            else:
                d = decide(n, first[0] if k == 0 else self.recompute(
                    n, s, restored, post=is_out, steps=not compound and not is_out))
            if not d.stored:
                restored.update(m for m, _ in d.plan.steps)  # restored on the way
                self.kept |= d.plan.kept
                if restores:
                    restored.add(n)
                values.append(Capture(n, is_out, restores, d))
                continue
            values.append(self.stored(Capture(n, is_out, restores, d), s, restored, taped))
        return Captures(shapes + values, None if joint is None else joint[1])

    def result_read(self, n: str) -> bool:
        """Does the pullback of a call binding the active ``n`` read its result
        (``np.tanh``'s: ``dy * (1.0 - y * y)``, ``rule_reads_result``)?  Then ``n`` is
        stored whole once, for that adjoint and the reads of its shape alike (a stand-in
        as well would cost a push and save nothing)."""
        if n not in self.an.active:
            return False
        for d in self.an.defs.get(n, []):
            v = getattr(d, "value", None)
            prim = primitive_of(v, self.env) if isinstance(v, ast.Call) else None
            if prim is not None and rule_reads_result(prim[0]):
                return True
        return False

    @staticmethod
    def shape_only(n: str, is_out: bool) -> Capture:
        """The array ``n``, which the adjoint of a statement reads only for its shape (and
        dtype): a stand-in of that shape holding no memory is stored instead of ``n``, and
        popped into a fresh name, so that no other adjoint takes it for ``n``'s value
        (only where ``n`` would be stored: a view read again costs less).
        Preconditions: ``n`` is an array of known rank (the stand-in's type is a view of
        that rank), and every read of ``n`` in that adjoint is ``unbroadcast(g, n)``-like
        (the primitive table's ``shape_args``), ``n.shape``/``size``/``ndim``/``dtype``
        or ``len(n)`` (``shape_only.read_for_shape_only``); not a compound statement's."""
        why = f"{n} as a stand-in of its shape (nothing else is read)"
        return Capture(n, is_out, False, Decision(n, True, why), shape=True)

    def stored(self, c: Capture, s: ast.stmt, restored: set[str], taped: list[str]
               ) -> Capture:
        """How the stored value ``c`` is kept: restored once per trip where its loop first
        rebinds it, on the tape of a value stored at ``s`` that it equals, once per run of
        a loop it is invariant in (``ReadPolicy.hoisted``), or on a tape of its own
        (``taped`` then gains it, in the last two cases)."""
        n = c.name
        at = self.restored_next_trip(n, s) if c.restores else None
        if at is not None:  # the next trip's adjoint restores it where ``at`` rebinds it
            self.restore_at.setdefault(id(at), set()).add(n)
            c.next_trip = True
            return c
        c.twin = next((m for m in taped if self.policy is not None
                       and self.policy.same_value(m, n, s)), None)
        if c.twin is None:
            taped.append(n)
            if not (c.is_out or self.regions or self.policy is None):
                # once per run of that loop, popped before its adjoint
                c.hoist = self.policy.hoisted(n, s)
        if c.restores:
            restored.add(n)
        return c

    def wanted(self, s: ast.stmt, reads: set[str], outputs: set[str], restored: set[str],
               compound: bool, made: set[str]) -> list[tuple[str, bool, bool]]:
        """(name, ``s``'s own output, restored here) of each value read that something may
        redefine before the adjoint of ``s`` runs."""
        defined = dataflow.binds_in([s])
        wanted: list[tuple[str, bool, bool]] = []
        for n in sorted(reads, key=lambda n: (self.an.first_pos(n), n)):
            if self.an.recomputed_index(n, s) or (
                    not compound and n not in outputs and self.counters.stepped_back(n, s)):
                continue
            is_out = n in outputs
            if is_out and n in made:
                continue
            if is_out and n not in self.an.defs:
                # a rule's own value, made here: the next iteration makes it again
                need = bool(self.an.enclosing_loops(s))
            elif is_out:
                need = self.an.may_redefine_after(n, s, include_self=False)
            else:
                need = n in defined or self.an.may_redefine_after(n, s, include_self=compound)
                if need and n in restored and n not in defined and not compound:
                    need = False
            if need:
                wanted.append((n, is_out, not is_out and not compound and n not in defined))
        return wanted

    def restored_next_trip(self, n: str, s: ast.stmt) -> ast.stmt | None:
        """Where the scalar ``n``, read by ``s`` with the value it has at the end of a
        loop's iteration, can instead be restored once per iteration: at its first
        definition in the loop body, which then tapes its value before it (the value at the
        iteration's start, so the adjoint of the iteration before finds ``n`` as that
        iteration left it); None where that does not hold.

        It holds for a ``range`` loop in no other loop, with no ``break``, in a function
        without checkpointed regions, for a value carried from one trip to the next (made
        before the loop too, and read in the body before it is rebound), when ``n`` is not
        redefined after ``s`` (in the body
        or after the loop: the first reversed iteration finds ``n`` as the loop left it)
        and its first definition in the body is at the body's top level.
        """
        loops = self.an.enclosing_loops(s)
        if len(loops) != 1 or self.regions or not isinstance(loops[0], ast.For):
            return None
        loop = loops[0]
        k = self.an.kind(n)
        if k.is_array or k.ndim != 0 or CHECKPOINTED.get(loop) or self.has_break(loop) \
                or loop.target.id == n:
            return None
        defs = self.an.defs.get(n, [])
        pos = self.an.def_positions(n)  # ascending: the definitions in the loop and after
        at = POS.get(loop)
        k = bisect_right(pos, at)
        if k == len(pos) or pos[-1] > END.get(s):
            return None  # made before the loop only, or redefined after s
        if n not in self.args and not any(self.an.dominates(d, loop)
                                          for d in defs[:bisect_left(pos, at)]):
            return None  # not carried from one trip to the next: nothing to tape before
        first = defs[k]
        if not isinstance(first, ast.Assign) or BLOCK.get(first) != id(loop.body):
            return None
        if not self.an.used_within(n, at, POS.get(first)):
            return None  # the trip's start value is never read: one tape either way
        return first

    def needed_before(self, m: str, s: ast.stmt) -> bool:
        """Does the adjoint of a statement before ``s`` in its loop body (one that runs
        later in the adjoint sweep) read ``m``, as an operand of a product, quotient or
        call (whose pullbacks read their operands)?"""
        loops = self.an.enclosing_loops(s)
        return any(POS.get(t) < POS.get(s) and self.an.enclosing_loops(t) == loops
                   for t in self.nonlinear_reads.get(m, ()))

    def index_restores(self, wanted: list[tuple[str, bool, bool]], s: ast.stmt,
                       restored: set[str], compound: bool) -> list[str]:
        """Integer indices to restore at ``s`` so that the element reads the values
        ``wanted`` there are made of are read again instead of taped: ``n = a[.., m, ..]``
        (or a value made of such reads in the same block) with ``m`` rebound later (a
        counter) and ``a`` active (the adjoint of that read pops ``m`` anyway: it then finds
        it restored, so the tape of ``m`` moves and the values' tapes go), and nothing
        between the read and ``s`` rebinding ``m`` (``recompute``'s ``available``)."""
        if compound:
            return []
        out: list[str] = []
        bound = set(dataflow.binds(s, elements=True))
        taken = {w for w, _, _ in wanted}
        for d in self._reads_under([n for n, is_out, _ in wanted if not is_out], s):
            for m in sorted({x.id for x in walk(d.value.slice) if isinstance(x, ast.Name)}):
                k = self.an.kind(m)
                if k.is_array or k.cls not in ("i", "b") or m in restored or m in bound \
                        or m in out or m in taken or m not in self.fwd_vars \
                        or self.an.recomputed_index(m, s) or self.counters.stepped_back(m, s) \
                        or not self.an.may_redefine_after(m, d, include_self=False) \
                        or self.an.defined_between(m, d, s) \
                        or self.recompute(m, d, restored).expr is not None:
                    continue  # (the last: an index read again, as in k = idx[i])
                out.append(m)
        return out

    def _reads_under(self, names: list[str], s: ast.stmt, depth: int = 4) -> list[ast.stmt]:
        """The element reads ``v = a[...]`` of an active ``a`` that the values ``names``
        are made of: their single plain definitions in ``s``'s block, followed through the
        names they read up to ``depth`` definitions deep."""
        out: list[ast.stmt] = []
        seen: set[str] = set()
        todo = [(n, 0) for n in names]
        while todo:
            n, k = todo.pop()
            defs = self.an.defs.get(n, [])
            if n in seen or k > depth or len(defs) != 1 or dataflow.plain_binding(
                    defs[0]) != n or BLOCK.get(defs[0]) != BLOCK.get(s):
                continue
            seen.add(n)
            v = defs[0].value
            if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name):
                if v.value.id in self.an.active:
                    out.append(defs[0])
                continue
            todo += [(x.id, k + 1) for x in walk(v) if isinstance(x, ast.Name)]
        return out

    def first_plan(self, wanted: list[tuple[str, bool, bool]], s: ast.stmt,
                   restored: set[str], compound: bool
                   ) -> tuple[Plan, dict[str, ast.expr]] | None:
        """The plan of ``wanted[0]`` with nothing planned before it, and the intermediates
        it planned (``recompute``'s ``done``); None without values."""
        if not wanted:
            return None
        n, is_out, _ = wanted[0]
        done: dict[str, ast.expr] = {}
        return self.recompute(n, s, restored, post=is_out, steps=not compound and not is_out,
                              done=done), done

    def joint_plans(self, wanted: list[tuple[str, bool, bool]], s: ast.stmt,
                    restored: set[str], compound: bool,
                    first: tuple[Plan, dict[str, ast.expr]] | None
                    ) -> tuple[dict[str, Plan], Decision] | None:
        """Plans for all of ``wanted`` together, sharing their intermediate values, when
        each of them can be recomputed and the whole costs no more than the tapes it saves
        (``TAPE_COST`` each: the stages of a Runge-Kutta step, say); else None (each value
        is then decided on its own).  ``first``: ``first_plan``'s (planned together or
        alone, the first value's plan is the same)."""
        if len(wanted) < 2 or first is None or first[0].expr is None:
            return None
        done: dict[str, ast.expr] = first[1]
        plans: dict[str, Plan] = {}
        alone = 0.0  # what deciding each one on its own would cost
        for k, (n, is_out, restores) in enumerate(wanted):
            plan = first[0] if k == 0 else self.recompute(
                n, s, restored, post=is_out, steps=not compound and not is_out, done=done)
            if plan.expr is None:
                return None
            plans[n] = plan
            if restores:
                done[n] = name(n)  # the values planned after it read it restored
            own = plan if k == 0 else self.recompute(n, s, restored, post=is_out,
                                                     steps=not compound and not is_out)
            alone += TAPE_COST if own.expr is None else min(own.cost, TAPE_COST)
        whole = Plan(ast.Constant(value=None), [x for p in plans.values() for x in p.steps],
                     sum(p.cost for p in plans.values()),
                     set().union(*(p.leaves for p in plans.values())),
                     shared=any(p.shared for p in plans.values()))
        budget = TAPE_COST * len(wanted)
        if whole.cost > budget or whole.cost >= alone:
            return None  # too dear together, or no cheaper than deciding each alone
        names = ", ".join(n for n, _, _ in wanted)
        leaves = ", ".join(sorted(whole.leaves - {m for m, _ in whole.steps}))
        rest = ", the rest shared with earlier lines" if whole.shared else ""
        return plans, Decision(names, False, f"from {leaves} (cost {whole.cost:g} <= "
                               f"{len(wanted)} tapes {budget:g}{rest})", whole)

    def recompute(self, n: str, s: ast.stmt, restored: set[str] = frozenset(),
                  post: bool = False, steps: bool = False,
                  done: dict[str, ast.expr] | None = None) -> Plan:
        """How to give ``n`` again in the adjoint of ``s``, instead of a tape (a ``Plan``).

        The value wanted is ``n`` just before ``s``, or just after it when ``post`` (the
        statement's own output).  It is rebuilt from the one definition of ``n`` that
        reaches ``s`` (it dominates ``s`` in the same loop iteration), and only when every
        operand provably holds, in the adjoint of ``s``, the value it had at that
        definition: element reads of arrays that are never written again, integer
        arithmetic, plain scalar copies (cost 0, ``_Again.copy``), and operators and scalar
        calls the primitive table prices, of values that are themselves available or
        recomputed.  With ``steps``, each intermediate
        value with an operation is restored under its own name (``Plan.steps``: computed
        once, and later statements of the block reuse it); else it is inlined.
        """
        plan = Plan()
        plan.expr = self._again(n, s, restored, post, s, plan, 0, steps,
                                {} if done is None else done)
        return plan

    def _again(self, n: str, s: ast.stmt, restored, post: bool, at: ast.stmt, plan: Plan,
               depth: int, steps: bool, done: dict[str, ast.expr]) -> ast.expr | None:
        """``recompute``'s walk: ``n`` just before ``at`` (or after it, ``post``), charging
        ``plan``; ``done`` holds the intermediates already planned (each one once)."""
        if n in done:
            return clone(done[n])
        d = self._reaching(n, post, at, plan, depth)
        if d is None:
            return None
        return _Again(self, n, s, d, restored, plan, depth, steps, done).value()

    def _reaching(self, n: str, post: bool, at: ast.stmt, plan: Plan, depth: int
                  ) -> ast.Assign | None:
        """The one plain definition of ``n`` that reaches ``at`` in the same loop trip (or
        is ``at`` itself, ``post``); None (``plan.why`` says why) where there is none."""
        defs = self.an.defs.get(n, [])
        if len(defs) != 1 or not isinstance(defs[0], ast.Assign) \
                or not isinstance(defs[0].targets[0], ast.Name):
            plan.why = plan.why or (f"{n} is rebound later" if len(defs) > 1 else
                                    f"{n} is not a plain assignment")
            return None
        if depth > 12:
            plan.why = plan.why or "too long a chain to recompute"
            return None
        d = defs[0]
        if d is at:
            if not post:
                plan.why = plan.why or f"the value of {n} before the statement that makes it"
                return None
        elif not (self.an.enclosing_loops(d) == self.an.enclosing_loops(at)
                  and self.an.dominates(d, at)):
            later = POS.get(d) > POS.get(at) and isinstance(at, ast.Assign) \
                and isinstance(at.targets[0], ast.Name)
            plan.why = plan.why or (f"{n} changes after {at.targets[0].id} reads it" if later
                                    else f"{n} is made in another loop or branch")
            return None
        return d


class _Again:
    """One step of ``Planner.recompute``'s walk: the value ``n`` gets at its definition
    ``d``, rebuilt from operands that still hold what ``d`` saw in the adjoint of ``s``
    (charging ``plan``; deeper names through ``Planner._again``)."""

    def __init__(self, planner: Planner, n: str, s: ast.stmt, d: ast.Assign, restored,
                 plan: Plan, depth: int, steps: bool, done: dict[str, ast.expr]):
        self.planner, self.an, self.env = planner, planner.an, planner.env
        self.n, self.s, self.d, self.restored = n, s, d, restored
        self.plan, self.depth, self.steps, self.done = plan, depth, steps, done
        self.changed_by_d = set(dataflow.binds(d, elements=True))
        #: how much deeper ``d``'s operands are in the chain (a plain copy adds no link)
        self.link = 0 if isinstance(d.value, ast.Name) else 1

    def why(self, text: str) -> None:
        """Say why not (the first reason found is kept)."""
        self.plan.why = self.plan.why or text

    def deeper(self, m: str, steps: bool) -> ast.expr | None:
        """``m`` just before ``d``, one level down the walk."""
        return self.planner._again(m, self.s, self.restored, False, self.d, self.plan,
                                   self.depth + self.link, steps, self.done)

    def unchanged(self, m: str) -> bool:
        """Does ``m`` hold, in the adjoint of ``s``, the value it had at ``d``?"""
        return self.an.recomputed_index(m, self.s) or not self.an.may_redefine_after(
            m, self.d, include_self=False) or self.planner.counters.holds(m, self.d, self.s,
                                                                         self.an)

    def value(self) -> ast.expr | None:
        """The expression giving ``n`` again, or None (``plan.why``)."""
        n, v = self.n, self.d.value
        for m in nodes_of(v):
            if isinstance(m, ast.Name) and m.id in self.changed_by_d:
                self.why(f"{n} reads its own old value")
                return None
        if int_arith(v, self.an):
            return self.index_arith(v)
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name):
            return self.read(v)
        if self.an.kind(n).is_array:
            self.why(f"{n} is an array")
            return None
        if isinstance(v, ast.Name):
            return self.copy(v)
        return self.op(v)

    def copy(self, v: ast.Name) -> ast.expr | None:
        """The plain scalar copy ``n = m`` again, at cost 0: ``m`` itself where the adjoint
        of ``s`` still has it as ``d`` saw it (``available``: unchanged since, or restored
        to that value with nothing rebinding it between ``d`` and ``s``), else ``m``'s own
        recomputation from its one reaching definition (``operand``); None (stored) where
        neither holds, as for ``t = m; m = m * 2; ... t``.  Preconditions, checked by the
        caller ``value``: ``d`` is ``n``'s only, plain definition and reaches ``s`` in the
        same trip (``_reaching``), ``n`` is no array (a copy of an array name is an alias
        of it, not a value) and ``m`` is not ``n``."""
        return self.operand(v)

    def index_arith(self, v: ast.expr) -> ast.expr | None:
        """Integer arithmetic again: free (hoisted by the compiler), never taped, when its
        operands are unchanged (the arrays whose shape it queries not rebound)."""
        shaped = shape_operands(v)
        for m in walk(v):
            if isinstance(m, ast.Name) and m.id in self.env and m.id not in self.an.kinds:
                continue  # the function name in len(x)
            if isinstance(m, ast.Name) and m.id in shaped:
                if self.an.may_rebind_after(m.id, self.d):
                    self.why(f"{m.id} is rebound later (its shape may change)")
                    return None
                continue  # writes into it keep its shape
            if isinstance(m, ast.Name) and not self.unchanged(m.id):
                self.why(f"operand {m.id} of {self.n} is rebound later")
                return None
        self.plan.leaves |= {m.id for m in walk(v) if isinstance(m, ast.Name)
                             and m.id in self.an.kinds}
        return clone(v)

    def available(self, m: str) -> bool:
        """Does the adjoint of ``s`` still have ``m`` as ``d`` saw it (unchanged, or
        restored to it by a later statement)?"""
        if self.unchanged(m):
            return True
        d, s = self.d, self.s
        return (m in self.restored and BLOCK.get(d) == BLOCK.get(s)
                and not self.an.defined_between(m, d, s)
                and m not in dataflow.binds(s, elements=True))

    def read(self, v: ast.Subscript) -> ast.expr | None:
        """An element read again: its array unwritten since, its index available."""
        base = v.value.id
        group = self.an.aliases(base)
        if any(self.an.may_redefine_after(b, self.d, include_self=False) for b in group):
            policy = self.planner.policy
            view = policy.unwritten_view(base, self.d, self.s) if policy else None
            kept = None if view is not None or policy is None or self.planner.regions \
                else policy.kept(base, self.d, self.s)
            if view is None and kept is None:
                self.why(f"{base} is written later")
                return None
            if kept is not None:  # given back at the start of the trip's adjoint
                self.plan.kept.add((id(kept[0].body), kept[1], base))
                sub = ast.Subscript(value=name(base), slice=clone(v.slice), ctx=ast.Load())
            else:  # a view of an array nothing writes: its element, read from that array
                sub = compose(view[0], view[1], v.slice)
                base = view[0]
        else:
            sub = ast.Subscript(value=name(base), slice=clone(v.slice), ctx=ast.Load())
        for m in [m for m in walk(sub.slice) if isinstance(m, ast.Name)]:
            if self.available(m.id):
                continue  # the loop index, unchanged since, or restored to its value
            k = self.deeper(m.id, False)
            if k is None or not int_arith(k, self.an) and not isinstance(k, ast.Subscript):
                self.why(f"index {m.id} of {self.n} is rebound later")
                return None
            replace_names(sub, lambda x, m=m.id, k=k: clone(k) if x.id == m else x)
        self.plan.leaves.add(base)
        self.plan.charge(READ_COST, "")
        return sub

    def op(self, v: ast.expr) -> ast.expr | None:
        """A comparison, operator or priced scalar call again, from its operands."""
        plan, operand = self.plan, self.operand
        if isinstance(v, ast.Compare) and len(v.ops) == 1:  # a test, bool(a > b)
            plan.charge(1.0, "")
            a = operand(v.left)
            b = operand(v.comparators[0]) if a is not None else None
            return None if b is None else ast.Compare(left=a, ops=v.ops, comparators=[b])
        if isinstance(v, ast.Call) and draws(resolve(v.func, self.env)):
            self.why(f"{ast.unparse(v.func)} draws a random number: never drawn again")
            return None
        c, what = op_cost(v, self.env)
        if c is None or not isinstance(v, (ast.BinOp, ast.UnaryOp, ast.Call)) or (
                isinstance(v, ast.Call) and v.keywords):
            self.why(f"{what} has no cost in the primitive table" if what
                     else f"{self.n} is not an operation jitgrad redoes")
            return None
        plan.charge(c, what)
        if isinstance(v, ast.Call):
            args = [operand(a) for a in v.args]
            if any(a is None for a in args):
                return None
            return ast.Call(func=clone(v.func), args=args, keywords=[])
        if isinstance(v, ast.BinOp):
            a = operand(v.left)
            b = operand(v.right) if a is not None else None
            return None if b is None else ast.BinOp(left=a, op=v.op, right=b)
        a = operand(v.operand)
        return None if a is None else ast.UnaryOp(op=v.op, operand=a)

    def operand(self, m: ast.expr) -> ast.expr | None:
        """An operand of ``d``'s value again: a constant, an element read, a nested
        operation, or a name available or recomputed (restored as a step, with ``steps``)."""
        if isinstance(m, ast.Constant):
            return m
        if isinstance(m, ast.Subscript) and isinstance(m.value, ast.Name):
            return self.read(m)  # x[i] > 0, a test on an element
        if isinstance(m, (ast.Compare, ast.BinOp, ast.UnaryOp, ast.Call)):
            return self.op(m)  # nested: bool(i % 2 == 0), min(a + b, c)
        if not isinstance(m, ast.Name) or m.id in self.changed_by_d:
            self.why(f"{self.n} reads its own old value")
            return None
        if self.available(m.id):
            self.plan.leaves.add(m.id)
            return name(m.id)
        plan = self.plan
        spent = plan.cost
        e = self.deeper(m.id, self.steps)
        if e is None or not self.steps or not isinstance(e, (ast.BinOp, ast.UnaryOp,
                                                             ast.Call, ast.Compare)) \
                or int_arith(e, self.an):
            return e  # inlined: an element read, index arithmetic
        if m.id in dataflow.binds(self.s, elements=True):
            return e
        if self.planner.needed_before(m.id, self.s):
            # an earlier statement's adjoint needs it too, and finds it restored: it
            # costs here only what it costs beyond the tape it saves there
            plan.cost = spent + max(0.0, plan.cost - spent - TAPE_COST)
            plan.shared = True
        plan.steps.append((m.id, e))  # restored under its name: computed once
        self.done[m.id] = name(m.id)
        return name(m.id)


_RESULT_READS: dict[int, bool] = {}


def rule_reads_result(fn) -> bool:
    """Does the pullback of ``fn``'s registered rule read the value the rule returns
    (``y = np.tanh(x)`` ... ``def back(dy): return (dy * (1.0 - y * y),)``
    ``return y, back``)?  False without a rule, or where its source cannot be read (a
    cost question only: the value is then stored as a stand-in and again whole)."""
    hit = _RESULT_READS.get(id(fn))
    if hit is None:
        rule = lookup(fn)
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(rule.impl))) if rule else None
        except (OSError, TypeError, SyntaxError):
            tree = None
        hit = False
        impl = tree.body[0] if tree is not None and tree.body else None
        if isinstance(impl, ast.FunctionDef):
            backs = [x for x in impl.body if isinstance(x, ast.FunctionDef)]
            outs = {r.value.elts[0].id for r in impl.body if isinstance(r, ast.Return)
                    and isinstance(r.value, ast.Tuple) and r.value.elts
                    and isinstance(r.value.elts[0], ast.Name)}
            hit = any(isinstance(m, ast.Name) and m.id in outs for b in backs for m in walk(b))
        _RESULT_READS[id(fn)] = hit
    return hit


def shape_query(v: ast.expr) -> bool:
    """``len(x)``, ``x.shape[k]``, ``x.size``: values that depend only on a shape (an
    attribute the table calls a query, ``query_attrs``, or an entry of one)."""
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "len" \
            and len(v.args) == 1 and isinstance(v.args[0], ast.Name):
        return True
    if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Constant):
        v = v.value
    return isinstance(v, ast.Attribute) and v.attr in query_attrs() \
        and isinstance(v.value, ast.Name)


def shape_operands(v: ast.expr) -> set[str]:
    """The arrays whose shape ``v`` queries (``x`` in ``len(x) - 1``)."""
    out = set()
    for m in walk(v):
        if isinstance(m, ast.expr) and shape_query(m):
            base = m.args[0] if isinstance(m, ast.Call) else m.value
            base = base.value if isinstance(base, ast.Attribute) else base
            out.add(base.id)
    return out


def int_arith(v: ast.expr, an: Analysis) -> bool:
    """Cheap integer arithmetic on names, constants and shape queries (``len(x) - 1``):
    recomputed rather than taped."""
    if shape_query(v):
        return True
    if isinstance(v, ast.Name):
        return an.kind(v.id).cls in ("i", "b") and not an.kind(v.id).is_array
    if isinstance(v, ast.Constant):
        return isinstance(v.value, int)
    if isinstance(v, ast.BinOp):
        return int_arith(v.left, an) and int_arith(v.right, an)
    if isinstance(v, ast.UnaryOp):
        return int_arith(v.operand, an)
    return False

def nonlinear_reads(body: list[ast.stmt], an: Analysis) -> dict[str, list[ast.stmt]]:
    """Name -> the statements making an active value whose pullback reads that name: a
    factor of an active one, the operands of a quotient by an active value, of a power or
    a call (an estimate, for costs)."""
    out: dict[str, list[ast.stmt]] = {}
    for s in walk_stmts(body):
        if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
                and s.targets[0].id in an.active):
            continue
        v = s.value

        def active(e: ast.expr) -> bool:
            return isinstance(e, ast.Name) and e.id in an.active

        if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Mult):
            args = [a for a, other in ((v.left, v.right), (v.right, v.left)) if active(other)]
        elif isinstance(v, ast.BinOp) and isinstance(v.op, ast.Div):
            args = ([v.left] if active(v.right) else []) + (
                [v.right] if active(v.left) or active(v.right) else [])
        elif isinstance(v, ast.BinOp) and isinstance(v.op, ast.Pow):
            args = [v.left, v.right]
        elif isinstance(v, ast.Call):
            args = list(v.args)
        else:
            continue
        for a in args:
            if isinstance(a, ast.Name):
                out.setdefault(a.id, []).append(s)
    return out
