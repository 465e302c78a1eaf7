"""Every fact one pass leaves on a syntax node for a later pass, declared in one place.

A pass that learns something about a statement or expression that a later pass needs
records it here, as a ``Note``: ``POS.set(s, 3)``, then ``POS.get(s)``.  No other
module reads or writes per-node facts (``tests/test_layout.py`` checks), so this file
is the list of what crosses pass boundaries, who writes each fact and what it means.

A note lives on the node (one attribute per note, ``_jg_<name>``), so ``nodes.clone``
copies it with the node and a rewritten statement can carry its notes over
(``carry``).  Checkpointed regions are not a note but a node type of their own,
``Checkpoint``.
"""

from __future__ import annotations

import ast
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Note(Generic[T]):
    """One kind of fact about a node: written by ``by``, read by later passes."""

    __slots__ = ("attr", "default", "by", "doc")

    def __init__(self, name: str, default: T, by: str, doc: str):
        self.attr = f"_jg_{name}"
        self.default = default
        self.by = by
        self.doc = doc

    def get(self, node: ast.AST) -> T:
        """The fact recorded on ``node``, or the default where none was."""
        return getattr(node, self.attr, self.default)

    def set(self, node: ast.AST, value: T) -> None:
        """Record the fact on ``node``."""
        setattr(node, self.attr, value)

    def has(self, node: ast.AST) -> bool:
        return hasattr(node, self.attr)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.attr[4:]!r}, by={self.by!r})"


class Required(Note[T]):
    """A note every node it is asked of must carry (a missing one is a bug, not a default:
    reading it raises ``AttributeError`` rather than guessing)."""

    __slots__ = ()

    def __init__(self, name: str, by: str, doc: str):
        super().__init__(name, None, by, doc)  # type: ignore[arg-type]

    def get(self, node: ast.AST) -> T:
        return getattr(node, self.attr)


# --- front end: facts for messages and for the analyses -----------------------------

PARAM_OF: Note[str | None] = Note(
    "param_of", None, "inline",
    "an assignment binding a helper's parameter: the helper's name (messages name it)")
INLINED: Note[tuple[str, int, str, tuple[str, ...]] | None] = Note(
    "inlined", None, "inline",
    "a node inlined from a helper (its lineno is the call's): (the helper's file, the "
    "node's line there, that line's text, the calls leading to it as 'f at file:line', "
    "innermost first); messages name it")
LOOP_SEQ: Note[bool] = Note(
    "loop_seq", False, "desugar",
    "the hidden copy of the array a `for v in x` loop iterates (refusals name the loop)")
PRE: Note[list[ast.stmt] | None] = Note(
    "pre", None, "desugar",
    "a `for` loop rewritten over range: the assignments to hoist before it")
BREAK_FLAG: Note[str | None] = Note(
    "break_flag", None, "desugar",
    "a loop whose non-trailing breaks became a flag: the flag's name (set False before it)")
CHECKPOINTED: Note[tuple[str, str, bool] | None] = Note(
    "checkpointed", None, "inline",
    "a `for t in jg.checkpointed(range(...), snapshots=k)` loop: (the variable holding k, -1 "
    "for None; k as written; whether it stands in another loop or region, as the one "
    "statement of a checkpointed region); reverse mode runs it on the binomial schedule")
PRANGE: Note[bool] = Note(
    "prange", False, "desugar (and the prange rewrite's loops over chunks)",
    "a `for` loop the user wrote over `numba.prange` (now over range): with parallel=True "
    "its forward and reverse loops are kept parallel where iterations are independent; "
    "ask `is_prange`")
DRAW: Note[bool] = Note(
    "draw", False, "normalize",
    "a statement that draws from (or seeds) a global random generator: dead-code "
    "elimination keeps it even where nothing reads its value (the draws after it would "
    "take its numbers)")
ELEMENTWISE: Note[str | None] = Note(
    "elementwise", None, "inline (numba_kernels)",
    "an assignment binding an argument of a @numba.vectorize ufunc whose scalar function is "
    "inlined: the ufunc's name (the kinds pass refuses an array there)")
AUG: Note[bool] = Note(
    "aug", False, "normalize",
    "an assignment that was `x op= e`: on an array Python updates x's buffer in place")

# --- analyses ------------------------------------------------------------------------

KIND: Note[Any] = Note(
    "kind", None, "kinds", "an expression's kind (scalar or array, ndim, dtype class)")
POS: Required[int] = Required(
    "pos", "analyse", "a statement's position in a preorder walk of the body")
END: Required[int] = Required(
    "end", "analyse", "the last position inside a statement (its own for a simple one)")
BLOCK: Required[int] = Required(
    "block", "analyse", "the statement list holding a statement (same value: same block)")

# --- reverse mode and the backend ----------------------------------------------------

PUSH: Note[bool] = Note(
    "push", False, "reverse (tapes)",
    "a tape push: dropped where a region's forward code runs without tapes")
TAPED: Note[bool] = Note(
    "taped", False, "reverse (tapes)",
    "a statement writing or reading an element of a typed tape (its push or its pop): the "
    "backend reads and writes those elements, and only those, through tape_get/tape_put")
SCALAR_RESULT: Note[bool] = Note(
    "scalar_result", False, "reverse",
    "an `unbroadcast(v, x)` call whose result is a scalar (optimize drops it for a scalar v)")
HOISTED: Note[int | None] = Note(
    "hoisted", None, "reverse (loops)",
    "a tape reservation made before a loop for all its trips of an inner loop's: the "
    "loop's position; fusing the loop drops it (an iteration's room is enough), and the "
    "CUDA lowering, which sizes tapes from the reservations in the body, ignores it")
ONE_TRIP_TAPES: Note[bool] = Note(
    "one_trip_tapes", False, "backend (fuse)",
    "a fused loop (forward trip, then its adjoint): every tape its body pushes, its body "
    "pops in the same trip, so each trip starts its tapes' cursors where the last began")
TRIP_ROOM: Note[int | None] = Note(
    "trip_room", None, "reverse (loops)",
    "a tape reservation before a loop of one entry per trip, for the tape that loop's body "
    "pushes once a trip: the loop's position; fusing the loop asks for one entry instead "
    "(each fused iteration pops what it pushed, so the cursor is back where it began)")
SWEEP: Note[tuple[int, str] | None] = Note(
    "sweep", None, "reverse (loops)",
    "a loop of the forward sweep or its reversed loop in the adjoint sweep: (the user's "
    "loop's position, 'forward' or 'reverse'); lower runs the two as one loop where their "
    "iterations are independent (backend/fuse.py)")
CHECK: Note[bool] = Note(
    "check", False, "reverse (tapes)",
    "a `same_shape(y, dy)` call after a pop: it only reads its operands (optimize folds "
    "sums across it)")
ZEROING: Note[bool] = Note(
    "zeroing", False, "reverse",
    "the call of a zero adjoint the reverse pass made, `np.zeros_like(v)` (whatever the "
    "module's name): the workspace and written-once passes find zeroings by this mark, not "
    "by their spelling; a pass that makes it something else (`np.empty_like`) clears it")
BOUNDS_TEST: Note[bool] = Note(
    "bounds_test", False, "backend (bounds)",
    "an `if ...: raise IndexError(...)` the bounds step put before a statement or loop: "
    "it reads extents only; the unsigned step's proof (bounds.prove) passes over it")
COMMENT: Note[bool] = Note(
    "comment", False, "emit", "a statement that is a `# ...` comment in generated code")
SOURCE_LINE: Note[int | None] = Note(
    "source_line", None, "reverse",
    "a `# line N: ...` comment heading the adjoint statements of the user's line N: N "
    "(second order maps its generated lines to the user's by it, gradient_code.user_lines)")
DECISION: Note[bool] = Note(
    "decision", False, "reverse (tapes)",
    "a `# stored ...` / `# recomputed ...` comment: it heads the statements it is about, "
    "after the source-line comment it may follow")

NOTES = (PARAM_OF, INLINED, ELEMENTWISE, LOOP_SEQ, PRE, BREAK_FLAG, CHECKPOINTED, PRANGE, DRAW,
         AUG, KIND, POS, END, BLOCK, PUSH, TAPED, SCALAR_RESULT, HOISTED, TRIP_ROOM, SWEEP,
         CHECK, ZEROING,
         COMMENT, SOURCE_LINE, DECISION)

#: notes a statement rewritten into another keeps (what messages need to name the user's code,
#: and the loop a checkpointed schedule applies to)
_CARRIED = (PARAM_OF, INLINED, ELEMENTWISE, LOOP_SEQ, CHECKPOINTED, PRANGE, DRAW, SWEEP)


def carry(old: ast.AST, new: ast.AST) -> None:
    """Give ``new`` (a rewrite of ``old``) the message notes ``old`` has."""
    d = old.__dict__  # (a note lives in the node's dictionary: ``Note.has``)
    for note in _CARRIED:
        if note.attr in d:
            setattr(new, note.attr, d[note.attr])


class Checkpoint(ast.If):
    """A ``jg.checkpoint(f, ...)`` call inlined as a region: it runs as its body, once
    (``test`` is always ``True``); reverse mode runs it without tapes and reruns it in the
    reverse sweep.  Generic code sees an ``if True:``; the passes ask ``isinstance``."""

    @classmethod
    def region(cls, body: list[ast.stmt], where: ast.AST) -> Checkpoint:
        """A region holding ``body``, at ``where``'s location."""
        return ast.copy_location(cls(test=ast.Constant(value=True), body=body, orelse=[]),
                                 where)


def checkpoint(s: ast.AST) -> bool:
    """Whether ``s`` is a checkpointed region."""
    return isinstance(s, Checkpoint)


def is_prange(s: ast.AST) -> bool:
    """Whether ``s`` is a prange loop: one the user wrote over ``numba.prange``, its sweeps'
    loops, or a loop over chunks the prange rewrite made (each carries ``PRANGE``)."""
    return isinstance(s, ast.For) and bool(PRANGE.get(s))


__all__ = ["AUG", "BLOCK", "BOUNDS_TEST", "BREAK_FLAG", "CHECKPOINTED", "COMMENT", "DECISION",
           "END", "INLINED", "KIND", "LOOP_SEQ", "NOTES", "PARAM_OF", "POS", "PRANGE", "PRE",
           "PUSH", "SCALAR_RESULT", "SOURCE_LINE", "SWEEP", "TAPED", "CHECK", "ZEROING",
           "Checkpoint", "Note", "Required", "carry", "checkpoint", "is_prange"]
