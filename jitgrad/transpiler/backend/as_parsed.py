"""A generated function's tree as ``ast.parse`` gives it back from the text ``emit.unparse``
prints, made from the tree itself.

Second order (``jg.hvp``) runs forward mode over reverse mode's gradient code.  It used to
print that code, parse the text and run the front end on it again; ``as_parsed`` makes the
tree that round trip gave, without the text: fresh plain ``ast`` nodes (no notes, no shared
nodes), comments dropped, binding targets ``Store`` and every other name ``Load``, a
negative number ``-c`` (the parser's ``UnaryOp``), and every node at the line of the text
(one statement a line, a comment too, ``elif`` where ``unparse`` collapses an ``else``).

``Printed.tree`` is None where it could not promise the same tree, and then the caller
prints and parses: a constant that prints as an expression (nan, a complex, a NumPy
scalar), a negative number where ``-`` would bind differently (``-1.0 ** x``), a name
that is not an identifier, a node outside the statements and expressions generated code
is made of (no ``Checkpoint`` region, ``Dict``, ``Starred``...), or what ``fence`` would
refuse (a loop's ``else``, an attribute or nested tuple target, ``**kwargs``), so the
tree it gives needs no fence.  ``Printed.lines`` (each statement's and comment's line)
is there either way.
"""

from __future__ import annotations

import ast
import keyword
import math
from dataclasses import dataclass, field

from .emit import comment_text, function_def

_STMTS = frozenset({ast.Assign, ast.AugAssign, ast.For, ast.While, ast.If, ast.Return,
                    ast.Expr, ast.Pass, ast.Break, ast.Continue})
_EXPRS = frozenset({ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Compare, ast.Call,
                    ast.Constant, ast.Attribute, ast.Subscript, ast.Name, ast.List, ast.Tuple,
                    ast.Slice, ast.keyword})
#: the fields of those nodes that hold lists (the parser gives ``[]`` where none is set)
_LISTS = frozenset({"args", "keywords", "ops", "comparators", "values", "elts", "targets",
                    "body", "orelse"})
_BLOCKS = ("body", "orelse")
#: where a negative constant ``-c`` would not parse back as the operand it is
_TIGHT = {ast.Attribute: ("value",), ast.Subscript: ("value",), ast.Call: ("func",)}
_LITERALS = (bool, type(None), str, bytes, type(...))


class _Unsure(Exception):
    """The text would not parse back to the tree ``as_parsed`` makes."""


@dataclass
class Printed:
    """``as_parsed``'s answer: the tree (None: print and parse instead) and, in preorder,
    each statement and comment of the original with its line in the text and the line it
    carries (its ``lineno``, else its enclosing statement's, as ``emit`` locates them)."""

    tree: ast.FunctionDef | None
    lines: list[tuple[int, ast.stmt, int | None]] = field(default_factory=list)


def as_parsed(name: str, params: list[str], body: list[ast.stmt]) -> Printed:
    """``ast.parse(emit.unparse(emit.function_def(name, params, body))).body[0]``, made
    from ``body`` (which it leaves as it is), with where each statement prints."""
    p = _Printer()
    fn = function_def(name, params, p.block(body))
    _locate(fn, 1, p.last)
    for a in fn.args.args:
        _locate(a, 1, 1)
    return Printed(fn if p.sure else None, p.lines)


class _Printer:
    """One walk over a body in ``ast.unparse``'s order, counting its lines."""

    def __init__(self) -> None:
        self.line = 1  # the ``def`` line
        self.last = 1  # the last line of the last statement printed (not a comment)
        self.sure = True
        self.lines: list[tuple[int, ast.stmt, int | None]] = []
        self._ops: dict[type, ast.AST] = {}

    def block(self, stmts: list[ast.stmt], carried: int | None = None) -> list[ast.stmt]:
        out = []
        for s in stmts:
            self.line += 1
            own = getattr(s, "lineno", None) or carried
            self.lines.append((self.line, s, own))
            text = comment_text(s)
            if text is None:
                out.append(self._stmt(s, own))
                self.last = out[-1].end_lineno
            elif "\n" in text or "\r" in text or text.endswith(("'", '"', "\\")):
                self.sure = False  # (it might not print as one comment line)
        if not out:
            self.sure = False
        return out

    def _stmt(self, s: ast.stmt, own: int | None) -> ast.stmt:
        cls = s.__class__
        line = self.line
        if cls not in _STMTS:
            self.sure = False
            cls = ast.Pass
        new = cls.__new__(cls)
        try:
            self._refuse_fenced(s)
            for f in cls._fields:
                if f not in _BLOCKS:
                    setattr(new, f, self._field(s, f, line, _targets(s, f)))
        except _Unsure:
            self.sure = False
        end = line
        if isinstance(s, (ast.For, ast.While, ast.If)):
            new.body = self.block(s.body, own)
            new.orelse = self._orelse(s, own) if s.orelse else []
            end = self.last
        return _locate(new, line, end)

    def _orelse(self, s: ast.stmt, own: int | None) -> list[ast.stmt]:
        """``s``'s ``else`` block; an ``if`` alone in an ``if``'s prints as ``elif``."""
        if not (isinstance(s, ast.If) and len(s.orelse) == 1 and isinstance(s.orelse[0], ast.If)):
            self.line += 1  # the ``else:`` line
        return self.block(s.orelse, own)

    @staticmethod
    def _refuse_fenced(s: ast.stmt) -> None:
        """What ``fence`` would refuse in generated code (the text route fences it)."""
        if isinstance(s, (ast.For, ast.While)) and s.orelse:
            raise _Unsure
        if isinstance(s, ast.For) and not isinstance(s.target, (ast.Name, ast.Tuple)):
            raise _Unsure
        targets = s.targets if isinstance(s, ast.Assign) else []
        if any(isinstance(t, (ast.Tuple, ast.List)) and not all(
                isinstance(e, (ast.Name, ast.Subscript)) for e in t.elts) for t in targets):
            raise _Unsure  # (a nested tuple target: the text route has fence look)

    def _field(self, node: ast.AST, f: str, line: int, store: bool) -> object:
        v = getattr(node, f, None)
        tight = f in _TIGHT.get(node.__class__, ()) or (
            f == "left" and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow))
        if isinstance(v, list):
            return [self._value(x, line, store, tight) for x in v]
        if v is None and f in _LISTS:
            return []
        return self._value(v, line, store, tight)

    def _value(self, v: object, line: int, store: bool, tight: bool) -> object:
        if not isinstance(v, ast.AST):
            return v
        cls = v.__class__
        if cls in _EXPRS:
            return self._expr(v, line, store, tight)
        if isinstance(v, (ast.operator, ast.unaryop, ast.cmpop, ast.boolop)) \
                and cls.__module__ == "ast":
            return self._ops.setdefault(cls, cls())  # (the parser's are shared too)
        raise _Unsure

    def _expr(self, e: ast.AST, line: int, store: bool, tight: bool) -> ast.AST:
        cls = e.__class__
        if cls is ast.Constant:
            return _constant(e.value, line, tight)
        if cls is ast.Name and (not e.id.isidentifier() or keyword.iskeyword(e.id)):
            raise _Unsure
        if cls is ast.keyword and e.arg is None:
            raise _Unsure  # (``**kwargs``: fence's)
        if cls is ast.Attribute and store:
            raise _Unsure  # (an attribute target: fence's)
        new = cls.__new__(cls)
        inner = store and cls in (ast.Tuple, ast.List)  # (a subscript's parts are read)
        for f in cls._fields:
            if f == "ctx":
                new.ctx = ast.Store() if store else ast.Load()
            else:
                setattr(new, f, self._field(e, f, line, inner))
        _locate(new, line, line)
        return new


def _targets(s: ast.stmt, f: str) -> bool:
    """Whether field ``f`` of ``s`` holds binding targets (their names ``Store``)."""
    return (f == "targets" and isinstance(s, ast.Assign)) or (
        f == "target" and isinstance(s, (ast.AugAssign, ast.For)))


def _constant(v: object, line: int, tight: bool) -> ast.expr:
    """``Constant(v)`` as the parser reads ``repr(v)``: ``-c`` a ``UnaryOp``."""
    if type(v) in _LITERALS:
        return _locate(ast.Constant(value=v), line, line)
    if type(v) is not int and (type(v) is not float or math.isnan(v)):
        raise _Unsure  # (a complex, nan, a NumPy scalar: printed as an expression)
    if v > 0 or (v == 0 and math.copysign(1.0, v) > 0):
        return _locate(ast.Constant(value=v), line, line)
    if tight:
        raise _Unsure
    return _locate(ast.UnaryOp(op=ast.USub(), operand=_locate(ast.Constant(value=-v), line,
                                                                line)), line, line)


def _locate(node: ast.AST, line: int, end: int) -> ast.AST:
    """Give ``node`` the parser's location attributes (columns 0: no pass reads them)."""
    node.lineno, node.end_lineno = line, end
    node.col_offset = node.end_col_offset = 0
    return node


__all__ = ["Printed", "as_parsed"]
