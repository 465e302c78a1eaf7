"""Independent iterations: a loop whose adjoint runs one iteration at a time.

Reverse mode runs a loop forward, pushing what its adjoint needs, and later runs the
adjoint loop backwards, popping it: the tape holds every iteration.  Where iterations
share nothing but sums (``total += ...``) and the adjoint seed of those sums is known
before the loop runs (``dtotal = _dret / n``), each iteration's adjoint can run right
after the iteration itself, in the same loop (Tapenade's "II-loop").  The tape then
holds one iteration, which stays in cache, and the adjoint's order over the iterations
no longer matters: its sums add up the same terms in another order.

This pass fuses such pairs in one variant's function body (after dead-code removal,
since what the value needs decides what must stay after the loop).  A forward loop and
its reversed loop are paired by ``notes.SWEEP``; everything between them moves before
the fused loop or after it, each statement only where no read or write it makes can see
the change of order.  Any doubt leaves the two loops as they were.

An iteration may write arrays it makes for itself (``dependence.iteration_arrays``: made
fresh in the iteration, not carried, sharing their buffer with nothing else; with the
kinds only): the forward loop's where the adjoint writes none of them and reads them only
for a shape (its buffer made like them), the reversed loop's where nothing outside it
names them.  Their writes reach no other iteration in either order.

So may arrays made once before the loops that carry nothing from trip to trip
(``_trip_local``, on ``dependence.overwritten`` and ``dependence.reset``): a scratch array
every forward trip writes in full before reading it (and every adjoint trip too, where it
reads it: refilled, ``ReadPolicy.refill``), or an adjoint buffer made zero that every
adjoint trip leaves zero; nothing else names them but for their shape.  GradBench gmm's
per-point loop fuses so (``xc``, ``main_term`` and their adjoints): its tape holds one
point.  Statements between the loops that write arrays the forward loop does not name
move before the fused loop (``_mid_movable``).
"""

from __future__ import annotations

import ast
import copy
import math
from collections.abc import Callable
from typing import Any

from ...rules.primitives import fills_with
from ..analysis import dataflow
from ..analysis.dependence import (
    beyond_shape,
    full_sizes,
    iteration_arrays,
    kept_apart_arrays,
    order_free,
    overwritten,
    reset,
)
from ..astutil import exposed_reads, resolve
from ..naming import names_in
from ..nodes import loaded_ids, this_loop, walk_stmts, with_blocks
from ..notes import (
    CHECKPOINTED,
    DECISION,
    HOISTED,
    ONE_TRIP_TAPES,
    PUSH,
    SWEEP,
    TAPED,
    TRIP_ROOM,
    checkpoint,
    is_prange,
)
from .emit import comment, comment_text
from .optimize import writes_names_only, writes_through_call


def fuse_loops(body: list[ast.stmt], tapes: set[str], shared: dict[str, str] | None = None,
               dependent: set[tuple[int, int]] | None = None,
               is_array: Callable[[str], bool | None] | None = None,
               env: dict[str, Any] | None = None) -> list[ast.stmt]:
    """``body`` with every pair of a forward loop and its reversed loop whose iterations
    are independent run as one loop (see the module docstring); ``tapes``: the names of the
    tapes and their cursors (pushed by an iteration, popped by its adjoint); ``shared``:
    adjoint -> the adjoint it is a view of; ``dependent``: the ``id`` pairs of loops found
    dependent by themselves, filled and read (the variants of one function share loops);
    ``is_array``: the kinds where known (None: arrays made in an iteration are not told
    apart from the elements read out of them, and such loops stay apart).
    ``env``: the namespace, through which the allocations of arrays every trip sets in
    full are found (``_trip_local``; None: no such array).
    The statements of ``body`` are not changed, only reordered into new loops."""
    out = list(body)
    tried: set = set()
    dependent = set() if dependent is None else dependent
    while True:
        pair = _next_pair(out, tried)
        if pair is None:
            return out
        tried.add(pair[2])
        fused = _fuse(out, pair[0], pair[1], tapes, shared or {}, dependent, is_array, env)
        if fused is not None:
            out = fused


def _next_pair(body: list[ast.stmt], tried: set) -> tuple[int, int, object] | None:
    """Positions of the first untried forward loop of ``body`` whose reversed loop comes
    later in ``body``, and their key; only where nothing else anywhere carries that key
    (copies of a loop made for a rerun)."""
    where: dict[object, list[tuple[int, str]]] = {}
    for k, s in enumerate(body):
        note = SWEEP.get(s)
        if note is not None:
            where.setdefault(note[0], []).append((k, note[1]))
    for key, places in where.items():
        if key in tried or [r for _, r in places] != ["forward", "reverse"]:
            continue
        if sum(SWEEP.get(s) is not None and SWEEP.get(s)[0] == key
               for s in walk_stmts(body)) == 2:
            return places[0][0], places[1][0], key
    return None


#: a body's dataflow, built when first asked (``_body_flow``)
FlowOf = Callable[[], dataflow.Dataflow]


def _body_flow(body: list[ast.stmt], shared: dict[str, str],
               is_array: Callable[[str], bool | None] | None,
               env: dict[str, Any] | None) -> FlowOf:
    """The dataflow of ``body``, built when first asked and then kept: the tests of one
    ``_fuse`` ask it of the same body, which none of them changes."""
    made: list[dataflow.Dataflow] = []

    def flow() -> dataflow.Dataflow:
        if not made:
            made.append(dataflow.Dataflow(body, shared, is_array=is_array, env=env))
        return made[0]

    return flow


def _adjoints_restart(rev: list[ast.stmt], before: list[ast.stmt], after: list[ast.stmt],
                      exposed_rev: set[str], w_f: set[str], w_r: set[str], r_f: set[str],
                      tapes: set[str]) -> bool:
    """Does every adjoint the reversed loop carries from one iteration to the next, or
    leaves to the statements ``after`` it, only sum or end each iteration as it started?"""
    summed = dataflow.sums(rev) - r_f - w_f
    ends, starts = _last_constants(rev, loops=True), _last_constants(before)
    # (an adjoint left as the iteration found it: no forward statement of it binds it)
    ends = {v: c for v, c in ends.items() if not (c.startswith(OR_START) and v in w_f)}
    # carried from one iteration to the next; read after the loop (it must end as the
    # adjoint loop left it)
    loose = (exposed_rev & w_r) | (exposed_reads(after) & (w_r - tapes))
    return all(v in summed or _ends_as_started(v, ends, starts) for v in loose)


def _fuse(body: list[ast.stmt], a: int, b: int, tapes: set[str], shared: dict[str, str],
          dependent: set[tuple[int, int]], is_array: Callable[[str], bool | None] | None = None,
          env: dict[str, Any] | None = None) -> list[ast.stmt] | None:
    """``body`` with ``body[a]`` (a forward loop) and ``body[b]`` (its reversed loop) fused,
    or ``None`` where their iterations may depend on each other."""
    fwd, rev = body[a], body[b]
    key = (id(fwd), id(rev))
    if key in dependent:
        return None
    i = fwd.target.id if isinstance(fwd, ast.For) and isinstance(fwd.target, ast.Name) else ""
    flow = _body_flow(body, shared, is_array, env)
    fwd_plain = plain_loop(fwd)  # (each a walk of the loop: asked once here)
    plain = fwd_plain and plain_loop(rev)
    local = _trip_local(body, a, b, shared, is_array, env, flow, plain)
    w_f = dataflow.binds_in(fwd.body) - local | {i}
    exposed_rev = exposed_reads(rev.body) - tapes - local - {i}
    # the adjoint of an iteration would read another's value; or something that moves
    # writes an array (an alias of it could see the new order)
    apart: set[str] = set()
    own = not (plain and fwd.target.id == rev.target.id) \
        or not _order_free(body, a, b, exposed_rev & w_f, tapes, shared, None, env)
    if own:  # the arrays of an iteration's own might make it so: asked last
        apart = _kept_apart(body, a, b, tapes, shared, is_array, env, flow, fwd_plain)
        if not _may_own(fwd.body, rev.body, exposed_rev & w_f, tapes | apart | local,
                        is_array, bool(apart or local)):
            dependent.add(key)
            return None
    w_r = dataflow.binds_in(rev.body) - local | {i}  # (after the tests above: most loops fail them)
    pre, mid, post = body[:a], body[a + 1:b], body[b + 1:]
    if not _mid_movable(body, mid, fwd, tapes, shared, is_array, env, flow):
        return None
    r_f = dataflow.reads_in(fwd.body) - local | loaded_ids(fwd.iter)
    if (w_r - tapes - {i}) & exposed_reads(fwd.body):
        return None  # the next iteration would read what the adjoint left
    hoist, stay = _split(mid, w_f, r_f)
    if not writes_names_only(stay, tapes):
        return None  # (an array written after the fused loop, not before the adjoint's)
    w_stay = dataflow.binds_in(stay)
    r_stay = dataflow.reads_in(stay)
    if w_stay & (dataflow.reads_in(rev.body) | w_r) or r_stay & (w_r - tapes):
        return None  # ran before the adjoint loop: it must neither see it nor feed it
    if not _adjoints_restart(rev.body, pre + hoist, stay + post, exposed_rev, w_f, w_r, r_f,
                             tapes):
        return None
    if own and not _order_free(body, a, b, exposed_rev & w_f, tapes, shared, is_array, env,
                               apart, local, flow):
        dependent.add(key)
        return None
    pos = SWEEP.get(fwd)[0]  # room for all trips of an inner loop: one iteration's will do
    loop = _fused_loop(fwd, rev, pos, tapes, shared, dependent, is_array, env)
    pre = _room_of_one_trip(pre, pos, loop.body)
    taped = "its tape holds one iteration" if dataflow.reads_in(loop.body) & tapes else \
        "nothing is taped"
    note = comment(f"iterations over {i} are independent: each runs its adjoint right "
                   f"after it ({taped})")
    return [*pre, *hoist, note, loop, *stay, *post]


def _fused_loop(fwd: ast.For, rev: ast.For, pos: object, tapes: set[str],
                shared: dict[str, str], dependent: set[tuple[int, int]],
                is_array: Callable[[str], bool | None] | None,
                env: dict[str, Any] | None) -> ast.For:
    """The loop running each iteration of ``fwd`` and then its adjoint from ``rev``: inner
    pairs fused, pushes popped in the same iteration passed on in variables (and their
    ``# stored`` comments gone); marked ``ONE_TRIP_TAPES``."""
    loop = ast.copy_location(ast.For(target=fwd.target, iter=fwd.iter,
                                     body=[*fwd.body, *_in_adjoint(rev.body, pos)],
                                     orelse=[]), fwd)
    loop.body = unheaded_decisions(forward_branch_pops(forward_pops(
        fuse_loops(loop.body, tapes, shared, dependent, is_array, env), tapes), tapes))
    ONE_TRIP_TAPES.set(loop, True)
    return loop


def _room_of_one_trip(pre: list[ast.stmt], pos: object, body: list[ast.stmt]
                      ) -> list[ast.stmt]:
    """``pre`` with the reservations made for all the trips of the loop at ``pos``, fused
    into a loop of ``body``, asking for one iteration's room: those for an inner loop's
    dropped (``HOISTED``, the inner reserve finds it), those of one entry per trip
    (``TRIP_ROOM``) for one entry where ``body`` pushes the tape at most once on any path
    (``_pushes``): each fused iteration pops what it pushed (its adjoint runs right after
    it), so the cursor never passes where it began plus one."""
    return [_one_trip_room(x) if TRIP_ROOM.get(x) == pos
            and _pushes(body, x.targets[0].id) <= 1 else x
            for x in pre if HOISTED.get(x) != pos]


def _pushes(body: list[ast.stmt], tape: str) -> float:
    """The most pushes onto ``tape`` (``tape[cur] = v``, ``TAPED``) one pass through
    ``body`` makes: a branch's the larger arm's, a loop's that pushes it unbounded."""
    n = 0.0
    for s in body:
        if isinstance(s, ast.If):
            n += max(_pushes(s.body, tape), _pushes(s.orelse, tape))
        elif isinstance(s, (ast.For, ast.While)):
            n += math.inf if _pushes(s.body, tape) else 0.0
        elif TAPED.get(s) and isinstance(s, ast.Assign) \
                and isinstance(s.targets[0], ast.Subscript) \
                and dataflow.base_name(s.targets[0]) == tape:
            n += 1.0
    return n


def _one_trip_room(x: ast.Assign) -> ast.Assign:
    """A copy of the reservation ``tape = tape_reserve(tape, cur, trips)`` asking for one
    entry (the tape 31843 entries long for GradBench ba's observations is one long).  A
    copy: the variants of a function share statements, and an unfused one needs the room."""
    call = x.value
    new = ast.copy_location(ast.Assign(targets=x.targets, value=ast.Call(
        func=call.func, args=[*call.args[:2], ast.Constant(value=1)], keywords=[])), x)
    PUSH.set(new, True)
    return new


def _in_adjoint(stmts: list[ast.stmt], pos: object) -> list[ast.stmt]:
    """``stmts`` (the reversed loop's body), each compound statement with no sweep note of
    its own marked as lying in the adjoint sweep (``SWEEP`` ``(("fused", pos), "adjoint")``,
    a key no pair has; true of it in every variant): the fused loop is no reversed loop,
    and ``zero_skip`` guards only loops of the adjoint sweep."""
    for s in stmts:
        if isinstance(s, (ast.For, ast.While, ast.If)) and SWEEP.get(s) is None:
            SWEEP.set(s, (("fused", pos), "adjoint"))
    return stmts


def _order_free(body: list[ast.stmt], a: int, b: int, read: set[str], tapes: set[str],
                shared: dict[str, str], is_array: Callable[[str], bool | None] | None,
                env: dict[str, Any] | None, apart: set[str] = frozenset(),
                local: set[str] = frozenset(), flow: FlowOf | None = None) -> bool:
    """Do the forward loop ``body[a]`` and its reversed loop ``body[b]`` touch nothing an
    iteration of the other may see in a new order: the adjoint reads nothing the forward
    loop binds (``read``: what it does), the forward loop writes names and tapes only,
    the reversed loop sums into arrays; both but for the arrays each iteration makes for
    itself (``_own_arrays``, found only where needed, with the kinds ``is_array``), and the
    forward loop but for the arrays only it names (``apart``: ``_kept_apart``), both but
    for the arrays every trip sets in full (``local``: ``_trip_local``); ``env``: the
    namespace; ``flow``: the body's dataflow, where ``_fuse`` keeps one (``_body_flow``)."""
    fwd, rev = body[a], body[b]

    def free(own_f: set[str], own_r: set[str]) -> bool:
        return not read - own_f and writes_names_only(fwd.body, tapes | own_f) \
            and order_free(rev.body, fwd.body, shared, lambda e: writes_through_call(e, tapes),
                           own_r, is_array, env).ok

    if is_array is None:
        return free(set(), set())
    own_f, own_r = _own_arrays(body, a, b, shared, is_array, env, flow)
    return free(own_f | apart | local, own_r | local)


def _may_own(fwd: list[ast.stmt], rev: list[ast.stmt], read: set[str], tapes: set[str],
             is_array: Callable[[str], bool | None] | None, apart: bool = False) -> bool:
    """Might arrays of an iteration's own be all that keeps two loops apart: the kinds
    known, all the adjoint ``rev`` reads of what the forward loop ``fwd`` binds (``read``)
    arrays, every array ``fwd`` writes elements of (but ``tapes``: the tapes and the arrays
    only it names) bound in it, and some loop writing elements of an array it binds (or
    ``apart``: arrays only the forward loop names)?"""
    if is_array is None or any(is_array(n) is not True for n in read):
        return False
    own = apart
    for body in (fwd, rev):
        bound = dataflow.binds_in(body, elements=False)
        written = _element_writes(body) - tapes
        if body is fwd and written - bound:
            return False
        own = own or bool(written & bound)
    return own


def _element_writes(body: list[ast.stmt]) -> set[str | None]:
    """The arrays ``body`` writes elements of (``a[i] = v``, ``a[i] += v``)."""
    return {dataflow.base_name(t) for s in walk_stmts(body)
            if s.__class__ in (ast.Assign, ast.AugAssign)
            for t in (s.targets if s.__class__ is ast.Assign else [s.target])
            if t.__class__ is ast.Subscript}


def _kept_apart(body: list[ast.stmt], a: int, b: int, tapes: set[str],
                shared: dict[str, str], is_array: Callable[[str], bool | None] | None,
                env: dict[str, Any] | None, flow: FlowOf | None = None,
                plain: bool | None = None) -> set[str]:
    """The arrays the forward loop ``body[a]`` writes elements of that neither its reversed
    loop ``body[b]`` nor a statement between them that would move before the fused loop
    (``_split``) names, nor any name that may share their buffer
    (``dependence.kept_apart_arrays``): fused, the forward iterations still write and read
    them in their own order, and what runs after them still sees them as they left them.
    Nothing without the kinds or where the forward loop is not plain (``plain``: whether
    it is, where the caller knows)."""
    if is_array is None or not (plain_loop(body[a]) if plain is None else plain):
        return set()
    fwd = body[a]
    written = {n for n in _element_writes(fwd.body) - tapes if n is not None}
    if not written:
        return set()
    w_f = dataflow.binds_in(fwd.body) | {fwd.target.id}
    hoist, _ = _split(body[a + 1:b], w_f, dataflow.reads_in(fwd.body) | loaded_ids(fwd.iter))
    elsewhere = set().union(*(names_in(s) for s in [*hoist, body[b]]))
    flow = flow or _body_flow(body, shared, is_array, env)
    return kept_apart_arrays(written, flow(), elsewhere)


def _mid_movable(body: list[ast.stmt], mid: list[ast.stmt], fwd: ast.stmt, tapes: set[str],
                 shared: dict[str, str], is_array: Callable[[str], bool | None] | None,
                 env: dict[str, Any] | None, flow: FlowOf | None = None) -> bool:
    """May the statements ``mid`` between the two loops move (``_split``): they write names
    and tapes only, or, with the kinds, also elements of arrays the forward loop ``fwd``
    names under no name that may share their buffer (``Dataflow.shares``), nor ``mid``
    under another name (those writes then only move before it: statements writing
    arrays must not stay after it, see ``_fuse``)."""
    if writes_names_only(mid, tapes):
        return True
    if is_array is None:
        return False
    written = {n for n in _element_writes(mid) - tapes if n is not None}
    if not writes_names_only(mid, tapes | written):
        return False
    shares = (flow or _body_flow(body, shared, is_array, env))().shares
    family = set().union(*(shares(n) for n in written))
    # (nor under another name in ``mid``: ``_split`` tells the order apart by names)
    return not family & names_in(fwd) \
        and not (family - written) & set().union(*(names_in(s) for s in mid))


def _trip_local(body: list[ast.stmt], a: int, b: int, shared: dict[str, str],
                is_array: Callable[[str], bool | None] | None,
                env: dict[str, Any] | None, flow: FlowOf | None = None,
                plain: bool | None = None) -> set[str]:
    """The arrays made once before the forward loop ``body[a]`` that carry nothing from one
    trip of it, or of its reversed loop ``body[b]``, to the next: bound once in ``body``,
    before ``body[a]``, to a new array no other name shares (``Dataflow.shares``), named by
    no other statement of ``body`` but for its shape, and either every forward trip sets it
    in full before reading it (``dependence.overwritten``) and so does every reversed trip
    that reads more than its shape; or the forward loop uses only its shape, it is made
    zero (``np.zeros``, ``np.zeros_like``) and every reversed trip leaves it zero
    (``dependence.reset``).  Fused, each iteration still finds it as it would apart: set
    by itself, or zero.  Nothing without the kinds or the namespace ``env``, or where a
    loop is not plain (``plain``: whether both are, where the caller knows)."""
    if plain is None:
        plain = plain_loop(body[a]) and plain_loop(body[b])
    if is_array is None or not plain:
        return set()
    fwd, rev = body[a], body[b]
    made: dict[str, list[int]] = {}
    for k, s in enumerate(body):
        for n in dataflow.binds_in([s], elements=False):
            made.setdefault(n, []).append(k)
    made = {n: at for n, at in made.items()  # (the cheap tests first: most names fail them)
            if len(at) == 1 and at[0] < b and is_array(n) is True
            and dict(dataflow.fresh_binds(body[at[0]], env)).get(n)
            and dataflow.plain_binding(body[at[0]]) == n}
    if not made:
        return set()
    for k, s in enumerate(body):  # named elsewhere but for its shape: not trip-local
        if k not in (a, b) and not made.keys().isdisjoint(names_in(s)):
            used = beyond_shape([s], env)
            made = {n: at for n, at in made.items() if at[0] == k or n not in used}
            if not made:
                return set()
    df = (flow or _body_flow(body, shared, is_array, env))()
    sizes = full_sizes(df)
    used_f, used_r = beyond_shape(fwd.body, env), beyond_shape(rev.body, env)
    out: set[str] = set()
    for n, at in made.items():
        if not all(m == n or _new_values(m, body, is_array) for m in df.shares(n)):
            continue
        size = sizes.get(n)
        in_f, in_r = n in used_f, n in used_r
        if in_f and at[0] < a and overwritten(n, fwd.body, size, env) \
                and (not in_r or overwritten(n, rev.body, size, env)) \
                or not in_f and _zeros(body[at[0]], env) and reset(n, rev.body, size):
            out.add(n)
    return out


def _new_values(m: str, body: list[ast.stmt], is_array: Callable[[str], bool | None]
                ) -> bool:
    """Is ``m`` no array, or bound only to new values (``m = e``, ``e`` sharing no buffer:
    ``dataflow.may_alias``), so storing it into an element shares nothing (a scalar the
    adjoint makes without a kind: a refill's ``_t2_1 = _t3_1 - _t4_1``)?"""
    if is_array(m) is False:
        return True
    sts = [s for s in walk_stmts(body) if m in dataflow.binds(s)]
    return bool(sts) and all(dataflow.plain_binding(s) == m and not dataflow.may_alias(s.value)
                             for s in sts)


def _zeros(s: ast.Assign, env: dict[str, Any] | None) -> bool:
    """Is ``s`` ``v = f(...)`` with ``f`` a fresh array the table fills with 0.0
    (``fills_with``: ``np.zeros``, ``np.zeros_like``), found through the namespace ``env``?"""
    if env is None or not isinstance(s.value, ast.Call):
        return False
    return fills_with(resolve(s.value.func, env)) == 0.0


def _own_arrays(body: list[ast.stmt], a: int, b: int, shared: dict[str, str],
                is_array: Callable[[str], bool | None] | None, env: dict[str, Any] | None,
                flow: FlowOf | None = None) -> tuple[set[str], set[str]]:
    """The arrays each iteration of the forward loop ``body[a]`` makes for itself that its
    reversed loop ``body[b]`` neither writes nor reads but for their shape (the adjoint
    buffer made like them), and those each iteration of the reversed loop makes for itself
    that nothing outside it names (``dependence.iteration_arrays``): an iteration's
    writes into them reach no other iteration's, in either order.  (The adjoint reads
    the shape of its own iteration's array fused, the last iteration's apart: the same
    wherever the unfused code is right.)  Nothing without the kinds (``is_array``)."""
    if is_array is None:
        return set(), set()
    fwd, rev = body[a], body[b]
    df = (flow or _body_flow(body, shared, is_array, env))()
    in_rev = dataflow.binds_in(rev.body) | beyond_shape(rev.body, env)
    outside = set().union(*(names_in(s) for k, s in enumerate(body) if k != b))
    return (iteration_arrays(fwd.body, df, in_rev),
            iteration_arrays(rev.body, df, outside))


def forward_pops(stmts: list[ast.stmt], tapes: set[str]) -> list[ast.stmt]:
    """``stmts`` without a push of ``v`` onto a tape that is popped into ``w`` later in
    the same list: ``w = v`` in place of the pop, where ``v`` still holds that value and the
    tape is used nowhere else in ``stmts`` (a fused iteration pushes and pops at once); a
    typed tape's element, or a list tape's array object (the pop gives that object)."""
    out = list(stmts)
    # how many statements name each tape and cursor: a push (``tape[cur] = v; cur += 1``)
    # and its pop (``cur -= 1; w = tape[cur]``) name the tape twice and the cursor 4 times
    uses: dict[str, int] = {}
    for s in out:
        for n in (dataflow.reads_in([s]) | dataflow.binds_in([s])) & tapes:
            uses[n] = uses.get(n, 0) + 1
    k = 0
    while k < len(out) - 1:
        listed = _list_push(out[k], tapes)
        if listed is not None:
            out, k = _forward_list(out, k, listed, uses)
            continue
        push = _push(out, k, tapes)
        pop = None if push is None else _pop(out, k + 2, push)
        if pop is None:
            k += 1
            continue
        tape, cur, v = push
        w = out[pop + 1].targets[0].id
        between = out[k + 2:pop]
        if uses.get(tape) != 2 or uses.get(cur) != 4 or v in dataflow.binds_in(between):
            k += 1
            continue
        out = out[:k] + between + _passed_on(w, v, out[pop + 1]) + out[pop + 2:]
    return out


def unheaded_decisions(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """``stmts`` without the ``# stored ...`` comments whose push ``forward_pops`` or
    ``forward_branch_pops`` took away (the value passed on in a variable is not stored): a
    decision comment heads its push, so one not followed by a push (past other comments)
    says what the code no longer does.  Blocks copied where they change (shared)."""
    out = [with_blocks(s, unheaded_decisions) for k, s in enumerate(stmts)
           if not _unheaded(stmts, k)]
    if len(out) == len(stmts) and all(a is b for a, b in zip(out, stmts, strict=True)):
        return stmts
    return out or [ast.Pass()]


def _unheaded(stmts: list[ast.stmt], k: int) -> bool:
    """Is ``stmts[k]`` a ``# stored ...`` comment no push follows (past comments)?"""
    text = comment_text(stmts[k]) if DECISION.get(stmts[k]) else None
    return text is not None and text.startswith("stored ") and not _heads_push(stmts, k + 1)


def _heads_push(stmts: list[ast.stmt], j: int) -> bool:
    """Is the first statement of ``stmts`` from ``j`` on, past comments, a tape push?"""
    while j < len(stmts) and comment_text(stmts[j]) is not None:
        j += 1
    return j < len(stmts) and bool(PUSH.get(stmts[j]))


#: where a statement sits: the blocks from the top list down, each with the place in it of
#: the statement holding the next (the last: the statement's own place)
Chain = list[tuple[list[ast.stmt], int]]


def forward_branch_pops(stmts: list[ast.stmt], tapes: set[str]) -> list[ast.stmt]:
    """``stmts`` (a fused iteration) without a push of ``v`` onto a typed tape in a branch
    and its pop into ``w`` in a later branch (or at the top level; ``forward_pops`` takes
    both at the top level): ``w = v`` in place of the pop.  GradBench ba's values made in
    ``if sqtheta != 0`` and read by that branch's adjoint were taped so, 38 tapes.

    Preconditions, each checked: the tape is pushed by one statement and popped by one,
    neither in a loop (``_site``; nothing else names it or its cursor: ``_named``), so each
    iteration pushes it at most once; a fused iteration pops what it pushed (``_fuse``), so
    the pop runs only after the push in the same iteration; and no statement from the push
    to the pop binds ``v`` (``_between``), so ``v`` still holds the value pushed."""
    out = stmts
    for tape in sorted(tapes & set(_named(stmts))):
        push, pop = _site(out, tape, _push), _site(out, tape, _pop_at)
        if push is None or pop is None or push[0][1] >= pop[0][1]:
            continue
        block, k = push[-1]
        tape_, cur, v = _push(block, k, tapes)
        pblock, m = pop[-1]
        w = pblock[m + 1].targets[0].id
        if _named(out).get(tape) != 2 or _named(out).get(cur) != 4 \
                or v in dataflow.binds_in(_between(out, push, pop)):
            continue
        out = _edited(_edited(out, pop, _passed_on(w, v, pblock[m + 1])), push, [])
    return out


def _edited(stmts: list[ast.stmt], chain: Chain, new: list[ast.stmt]) -> list[ast.stmt]:
    """``stmts`` with the two statements at the end of ``chain`` replaced by ``new``, each
    branch on the way copied (the variants of a function share statements: one that does
    not fuse this loop keeps its tape)."""
    k = chain[0][1]
    out = list(stmts)
    if len(chain) == 1:
        out[k:k + 2] = new
        return out or [ast.Pass()]
    branch = copy.copy(out[k])
    arm = "body" if chain[1][0] is out[k].body else "orelse"
    setattr(branch, arm, _edited(getattr(out[k], arm), chain[1:], new))
    out[k] = branch
    return out


def _named(stmts: list[ast.stmt]) -> dict[str, int]:
    """How many simple statements of ``stmts`` (nested ones included) name each name."""
    out: dict[str, int] = {}
    for s in walk_stmts(stmts):
        if not isinstance(s, (ast.If, ast.For, ast.While)):
            for n in names_in(s):
                out[n] = out.get(n, 0) + 1
    return out


def _site(stmts: list[ast.stmt], tape: str, found: Callable) -> Chain | None:
    """Where ``found(block, k, ...)`` holds of ``tape``'s push (``_push``) or pop
    (``_pop_at``) in ``stmts`` or a branch in it, never a loop; None where it is not."""
    for k, s in enumerate(stmts):
        hit = found(stmts, k, {tape}) if k + 1 < len(stmts) else None
        if hit is not None:
            return [(stmts, k)]
        if isinstance(s, ast.If):
            for b in (s.body, s.orelse):
                inner = _site(b, tape, found)
                if inner is not None:
                    return [(stmts, k), *inner]
    return None


def _pop_at(stmts: list[ast.stmt], k: int, tapes: set[str]) -> bool | None:
    """True where ``stmts[k:k + 2]`` is ``cur -= 1; w = tape[cur]`` of the one tape in
    ``tapes`` (its cursor read off the pop); else None."""
    t = stmts[k + 1]
    if not (isinstance(t, ast.Assign) and isinstance(t.value, ast.Subscript)
            and isinstance(t.value.value, ast.Name) and t.value.value.id in tapes
            and isinstance(t.value.slice, ast.Name)):
        return None
    return True if _pop(stmts, k, (t.value.value.id, t.value.slice.id, "")) == k else None


def _between(stmts: list[ast.stmt], push: Chain, pop: Chain) -> list[ast.stmt]:
    """The statements that may run from the push at ``push`` to the pop at ``pop`` (both
    in branches of ``stmts`` or at its top level, the push's top-level statement first)."""
    out = [x for block, k in push[1:] for x in block[k + 1:]]
    out += stmts[push[0][1] + 1:pop[0][1]]
    return out + [x for block, k in pop[1:] for x in block[:k]]


def _forward_list(out: list[ast.stmt], k: int, push: tuple[str, str], uses: dict[str, int]
                  ) -> tuple[list[ast.stmt], int]:
    """``out`` without the push ``out[k]`` of an array object ``v`` on list tape ``tape``
    and its pop ``w = tape.pop()`` later in ``out`` (``w = v`` in its place: the same
    object), where nothing else names the tape and nothing between rebinds ``v``; and where
    to look next."""
    tape, v = push
    pop = next((m for m in range(k + 1, len(out)) if _list_pop(out[m], tape)), None)
    if pop is None or uses.get(tape) != 2 or v in dataflow.binds_in(out[k + 1:pop]):
        return out, k + 1
    w = out[pop].targets[0].id
    return out[:k] + out[k + 1:pop] + _passed_on(w, v, out[pop]) + out[pop + 1:], k


def _passed_on(w: str, v: str, at: ast.stmt) -> list[ast.stmt]:
    """``w = v`` in place of the pop ``at`` (nothing where ``w`` is ``v``)."""
    return [] if w == v else [ast.copy_location(
        ast.Assign(targets=[ast.Name(id=w, ctx=ast.Store())],
                   value=ast.Name(id=v, ctx=ast.Load())), at)]


def _list_push(s: ast.stmt, tapes: set[str]) -> tuple[str, str] | None:
    """(tape, v) where ``s`` is ``tape.append(v)`` of a name ``v`` on a list tape."""
    if not (PUSH.get(s) and isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)):
        return None
    c = s.value
    if not (isinstance(c.func, ast.Attribute) and c.func.attr == "append"
            and isinstance(c.func.value, ast.Name) and c.func.value.id in tapes
            and len(c.args) == 1 and isinstance(c.args[0], ast.Name) and not c.keywords):
        return None
    return c.func.value.id, c.args[0].id


def _list_pop(s: ast.stmt, tape: str) -> bool:
    """Is ``s`` ``w = tape.pop()``?"""
    return (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Call)
            and isinstance(s.value.func, ast.Attribute) and s.value.func.attr == "pop"
            and isinstance(s.value.func.value, ast.Name) and s.value.func.value.id == tape
            and not s.value.args and not s.value.keywords)


def _push(stmts: list[ast.stmt], k: int, tapes: set[str]) -> tuple[str, str, str] | None:
    """(tape, cursor, value) where ``stmts[k:k + 2]`` is ``tape[cur] = v; cur += 1``."""
    s, t = stmts[k], stmts[k + 1]
    if not (PUSH.get(s) and isinstance(s, ast.Assign) and isinstance(s.value, ast.Name)
            and isinstance(s.targets[0], ast.Subscript)):
        return None
    sub = s.targets[0]
    if not (isinstance(sub.value, ast.Name) and sub.value.id in tapes
            and isinstance(sub.slice, ast.Name)):
        return None
    cur = sub.slice.id
    if not (isinstance(t, ast.AugAssign) and isinstance(t.op, ast.Add)
            and isinstance(t.target, ast.Name) and t.target.id == cur):
        return None
    return sub.value.id, cur, s.value.id


def _pop(stmts: list[ast.stmt], start: int, push: tuple[str, str, str]) -> int | None:
    """Where ``cur -= 1; w = tape[cur]`` pops ``push``'s tape at the top level of
    ``stmts`` (from ``start``), if it does."""
    tape, cur, _ = push
    for m in range(start, len(stmts) - 1):
        s, t = stmts[m], stmts[m + 1]
        if (isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Sub)
                and isinstance(s.target, ast.Name) and s.target.id == cur
                and isinstance(t, ast.Assign) and isinstance(t.targets[0], ast.Name)
                and isinstance(t.value, ast.Subscript) and isinstance(t.value.value, ast.Name)
                and t.value.value.id == tape and isinstance(t.value.slice, ast.Name)
                and t.value.slice.id == cur):
            return m
    return None


def plain_loop(s: ast.stmt) -> bool:
    """A ``for`` over ``range`` without ``else``, ``break``, ``continue`` or ``return`` of
    its own, neither it nor a loop in it a ``prange`` loop or a checkpointed one, and
    holding no checkpointed region (their lowerings have sweeps of their own)."""
    return (isinstance(s, ast.For) and isinstance(s.target, ast.Name) and not s.orelse
            and isinstance(s.iter, ast.Call) and isinstance(s.iter.func, ast.Name)
            and s.iter.func.id == "range" and not is_prange(s) and not CHECKPOINTED.get(s)
            and _plain_body(s.body, True))


def _plain_body(body: list[ast.stmt], own: bool) -> bool:
    """``plain_loop``'s conditions on a loop's body, in one walk: no ``return``, prange
    loop, checkpointed loop or region anywhere in it; with ``own`` (the statements of the
    loop itself, not of loops nested in it), no ``break`` or ``continue`` either."""
    for x in body:
        cls = x.__class__
        if cls is ast.Return or ((cls is ast.Break or cls is ast.Continue) and own) \
                or checkpoint(x) or is_prange(x) or CHECKPOINTED.get(x):
            return False
        inner = own and cls is not ast.For and cls is not ast.While
        for f in ("body", "orelse"):
            sub = getattr(x, f, None)
            if sub.__class__ is list and sub and not _plain_body(sub, inner):
                return False
    return True


def _split(mid: list[ast.stmt], w_f: set[str], r_f: set[str]
           ) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """The statements between the two loops: those that can run before the fused loop
    (they read nothing the forward loop writes and write nothing it uses; the adjoint seeds
    and the zeroed adjoints), and those that must run after it, in their order."""
    hoist: list[ast.stmt] = []
    stay: list[ast.stmt] = []
    w_stay: set[str] = set()
    r_stay: set[str] = set()
    for s in mid:
        reads, defs = dataflow.reads_in([s]), dataflow.binds_in([s])
        if reads & (w_f | w_stay) or defs & (r_f | w_f | r_stay | w_stay):
            stay.append(s)
            w_stay |= defs
            r_stay |= reads
        else:
            hoist.append(s)
    return hoist, stay


def _last_constants(stmts: list[ast.stmt], loops: bool = False) -> dict[str, str]:
    """Name -> the constant of the last top-level statement of ``stmts`` binding it, where
    that statement is ``v = <constant>`` (as ``ast.dump`` text), or an ``if`` both of whose
    branches end so with the same constant: the value ``v`` holds after ``stmts``.  Names
    whose last binding is anything else are left out.  ``loops``: also a ``for`` loop
    whose body ends so (``_loop_constants``), marked :data:`OR_START` where ``v`` may
    instead still hold the value it had before ``stmts``."""
    out: dict[str, str] = {}
    bound: set[str] = set()
    for s in stmts:
        if (isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Constant)):
            out[s.targets[0].id] = ast.dump(s.value)
            bound.add(s.targets[0].id)
            continue
        both = {}
        if isinstance(s, ast.If):  # the same constant left on both paths (``if``, ``else``)
            yes, no = _last_constants(s.body, loops), _last_constants(s.orelse, loops)
            both = {v: c for v, c in yes.items() if no.get(v) == c}
        elif loops and isinstance(s, ast.For):
            both = _loop_constants(s)
        both = {v: c for v, c in ((v, _resolved(v, c, out, bound)) for v, c in both.items())
                if c is not None}
        binds = dataflow.binds_in([s])
        for n in binds:
            out.pop(n, None)
        bound |= binds
        out.update(both)
    return out


#: marks a constant ``v`` is left with, or else the value it had before (``_last_constants``)
OR_START = "or-start:"


def _loop_constants(loop: ast.For) -> dict[str, str]:
    """The names a ``for`` loop leaves holding a constant or as they were: each trip ends
    with ``v = c`` (no ``break``, ``continue`` or ``return`` of its own, no ``else``), so
    ``v`` is ``c`` after a trip and as before the loop after none (``OR_START + c``)."""
    if loop.orelse or any(isinstance(n, (ast.Break, ast.Continue)) for n in this_loop(loop.body)) \
            or any(isinstance(n, ast.Return) for n in ast.walk(loop)):
        return {}
    return {v: c if c.startswith(OR_START) else OR_START + c
            for v, c in _last_constants(loop.body, True).items()}


def _resolved(v: str, c: str, before: dict[str, str], bound: set[str]) -> str | None:
    """What a block that leaves ``v`` as ``c`` leaves it as in the statements around: where
    ``c`` is ``OR_START + k`` (``k``, or as before the block), ``k`` if the statements bound
    it to ``k`` before (``before``, ``bound``), still ``OR_START + k`` if they did not bind
    it, else nothing known (None)."""
    if not c.startswith(OR_START):
        return c
    if v not in bound:
        return c
    k = c[len(OR_START):]
    return before[v] if before.get(v) in (k, c) else None


def _ends_as_started(v: str, ends: dict[str, str], starts: dict[str, str]) -> bool:
    """Does an iteration leave ``v`` holding the constant it started with (``starts``: what
    runs before the loop, ``ends``: what an iteration leaves, ``_last_constants``)?"""
    s, e = starts.get(v), ends.get(v)
    return s is not None and not s.startswith(OR_START) and e in (s, OR_START + s)


__all__ = ["forward_pops", "fuse_loops"]
