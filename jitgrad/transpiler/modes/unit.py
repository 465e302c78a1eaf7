"""What every component of the reverse pass reads: the function, its analysis, the
generated module's globals and the namer (``Unit``), under short names (``Part``)."""

from __future__ import annotations

import ast

from ...kernels import helpers
from ..analysis.analyse import Analysis
from ..front.desugar import const, name
from ..front.parse import Parsed
from ..naming import Namer
from ..nodes import this_loop


class Unit:
    """The inputs of the reverse pass (read, never replaced) and the names it makes."""

    def __init__(self, parsed: Parsed, an: Analysis, env: dict, namer: Namer,
                 args: list[str], wrt: list[str], returns: list[ast.expr]):
        self.parsed, self.an, self.env, self.namer = parsed, an, env, namer
        self.args, self.wrt, self.returns = args, wrt, returns
        self._breaks: dict[int, bool] = {}

    def global_name(self, n: str, obj) -> str:
        """Make ``obj`` reachable in the generated module, preferably as ``n``."""
        return self.namer.global_name(self.env, n, obj)

    def adj(self, n: str) -> str:
        """The name of ``n``'s adjoint."""
        return self.namer.adjoint(n)

    def is_active(self, e) -> bool:
        """Is ``e`` a name that carries a gradient?"""
        return isinstance(e, ast.Name) and e.id in self.an.active

    def zero(self, n: str, like: str | None = None) -> ast.expr:
        """A zero adjoint for variable ``n``, shaped like ``like`` (default ``n``)."""
        k = self.an.kind(n)
        if not k.is_array:
            return const(0.0)
        like = like or n
        if k.ndim is not None and k.cls == "f":
            np_name = self.global_name("np", __import__("numpy"))
            return ast.Call(func=ast.Attribute(value=name(np_name), attr="zeros_like",
                                               ctx=ast.Load()), args=[name(like)], keywords=[])
        zl = self.global_name("zeros_like", helpers.zeros_like)
        return ast.Call(func=name(zl), args=[name(like)], keywords=[])

    def has_break(self, loop: ast.stmt) -> bool:
        """Does ``loop`` itself (not a loop inside it) contain a ``break``?"""
        if id(loop) not in self._breaks:
            self._breaks[id(loop)] = any(isinstance(n, ast.Break) for n in this_loop(loop.body))
        return self._breaks[id(loop)]


class Part:
    """A component of the reverse pass: the unit's inputs under short names (its own state
    is set by the subclass)."""

    def __init__(self, unit: Unit):
        self.unit = unit
        self.parsed, self.an, self.env, self.namer = unit.parsed, unit.an, unit.env, unit.namer
        self.args = unit.args
        self.global_name, self.adj, self.is_active = unit.global_name, unit.adj, unit.is_active
        self.zero, self.has_break = unit.zero, unit.has_break
