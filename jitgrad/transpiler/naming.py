"""Every generated-name pattern in one place: adjoints ``dx``, tangents ``x_dot``,
temporaries, tapes, flags, and the predicates the passes ask of a name (no pass tests
a name's prefix itself)."""

from __future__ import annotations

import ast
import keyword

from .nodes import name_nodes


class Namer:
    """Hands out names that never collide with the user's (or each other)."""

    def __init__(self, taken: set[str] | None = None, free: set[str] | None = None):
        self.taken: set[str] = set(taken or ())
        #: names the code reads from its module (never bound in the generated function)
        self.free: set[str] = set(free or ())
        self.taken |= self.free
        self._adjoints: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        self._names_of: set[str] = set()
        self._tangents: dict[str, str] = {}
        #: every name this namer handed out (the predicates below ask this, never a
        #: user name's spelling: a user's ``_tape_x`` or ``_dt`` is no generated name)
        self.made: set[str] = set()
        self.origin: dict[str, str] = {}
        #: the generated gradients' parameters: the output cotangent and the kept buffers
        self.seed = self.unique(SEED)
        self.workspace = self.unique(WORKSPACE)

    def reserve(self, names) -> None:
        self.taken.update(names)

    def unique(self, base: str) -> str:
        """``base``, or ``base_``, ``base__``... where taken (a name kept recognisable)."""
        cand = base
        while cand in self.taken or keyword.iskeyword(cand):  # del_ for the adjoint of el
            cand += "_"
        self.taken.add(cand)
        self.made.add(cand)
        return cand

    def fresh(self, base: str) -> str:
        """A new unused name starting with ``base`` (``_t``, ``_t1``, ``_t2``...)."""
        n = self._counts.get(base, 0)
        while True:
            n += 1
            cand = base if (n == 1 and not base.endswith("_") and base[-1:].isalpha()
                            and base not in self.taken and base.startswith("_")) else f"{base}{n}"
            if cand not in self.taken:
                self._counts[base] = n
                self.taken.add(cand)
                self.made.add(cand)
                return cand

    def version(self, name: str) -> str:
        """A new name for a later value of the user's ``name`` (``x_1``, ``x_2``...)."""
        user = self.user_name(name)
        new = self.fresh(f"{user}_")
        self.origin[new] = user
        return new

    def user_name(self, name: str) -> str:
        """The user's own name behind a version name (``x_1`` -> ``x``)."""
        return self.origin.get(name, name)

    def temp(self) -> str:
        return self.fresh("_t")

    def adjoint(self, name: str) -> str:
        """The adjoint of ``name``: ``dx`` for ``x`` (``dx_`` if the user has a ``dx``)."""
        if name not in self._adjoints:
            base = "d" + name if not name.startswith("_") else "_d" + name.lstrip("_")
            self._adjoints[name] = self.unique(base)
        return self._adjoints[name]

    def adjoints(self) -> dict[str, str]:
        """Every name given an adjoint so far -> its adjoint's name."""
        return dict(self._adjoints)

    def tangents(self) -> dict[str, str]:
        """Every name given a tangent so far -> its tangent's name."""
        return dict(self._tangents)

    def tangent(self, name: str) -> str:
        """The tangent of ``name`` in forward mode: ``x_dot`` (``x_dot_`` if that is taken)."""
        if name not in self._tangents:
            self._tangents[name] = self.unique(name + "_dot")
        return self._tangents[name]

    def tangent_names(self) -> dict[str, str]:
        """The tangents named so far: value -> tangent (``x`` -> ``x_dot``)."""
        return dict(self._tangents)

    def tape(self, name: str) -> str:
        return self.fresh(f"_tape_{name.lstrip('_')}_")

    def global_name(self, env: dict, name: str, obj: object) -> str:
        """The module-level name generated code reaches ``obj`` by in ``env``: ``name``
        itself where free or already ``obj`` (and no local of the generated function), else
        the fresh ``_name`` it was given before, or a new one (one name, one compile)."""
        if name in env and env[name] is obj and not self.is_local(name):
            self.reserve([name])  # no later fresh name may take it
            self.free.add(name)
            return name
        if name not in env and name not in self.taken:
            env[name] = obj
            self.reserve([name])
            self.free.add(name)
            return name
        for k in sorted(self.free):  # given a fresh name before: the same one again
            if env.get(k) is obj and k.startswith("_") and name.lstrip("_") in k:
                return k
        alt = self.fresh("_" + name.lstrip("_"))
        env[alt] = obj
        self.free.add(alt)
        return alt

    def is_local(self, name: str) -> bool:
        """``name`` is (or may become) a variable of the generated function: seen in the
        code or handed out, and not a name it reads from its module."""
        return name in self.taken and name not in self.free

    def is_adjoint(self, name: str) -> bool:
        """Whether ``name`` holds an adjoint: a variable's (``dx``), a pullback temporary
        (``_dt``) or the output cotangent."""
        return name == self.seed or self.is_adjoint_temp(name) or name in self._adjoint_names()

    def is_temp(self, name: str) -> bool:
        """A temporary, tape or flag this namer made (``is_generated``, and made here)."""
        return name in self.made and is_generated(name)

    def is_adjoint_temp(self, name: str) -> bool:
        """A pullback temporary or generated name's adjoint this namer made."""
        return name in self.made and is_adjoint_temp(name)

    def _adjoint_names(self) -> set[str]:
        if len(self._names_of) != len(self._adjoints):
            self._names_of = set(self._adjoints.values())
        return self._names_of


#: the parameter holding the output cotangent in generated gradients (``Namer.seed``: this,
#: or ``_dret_`` where the user has a ``_dret``)
SEED = "_dret"
#: the parameter holding the reused buffers (tapes) of a generated gradient, returned grown
#: (``Namer.workspace``)
WORKSPACE = "_ws"


def is_generated(name: str) -> bool:
    """A name of the kind jitgrad makes (temporaries, tapes, flags start with ``_``); a
    user's name may have that spelling too: where a ``Namer`` is at hand, ask it
    (``Namer.is_temp``); these spellings serve displays and code jitgrad generated itself
    (hvp's forward pass over gradient code)."""
    return name.startswith("_")


def is_adjoint_temp(name: str) -> bool:
    """A pullback temporary (``_dt``, ``_dt2``) or the adjoint of a generated name."""
    return name.startswith("_d")


def is_tape(name: str) -> bool:
    """A tape array (``_tape_x_``)."""
    return name.startswith("_tape")


def fresh_in(base: str, taken: set[str], sep: str = "") -> str:
    """``base``, or ``base2``, ``base3``... (``sep`` between) where taken; added to ``taken``
    (for the backend's steps, which hold no ``Namer``)."""
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}{sep}{k}"
    taken.add(out)
    return out


def names_in(node: ast.AST) -> set[str]:
    """All identifiers (loaded or stored) under ``node``: names, parameters and function
    names (``nodes.name_nodes``)."""
    out = set()
    for n in name_nodes(node, owners=True):
        cls = n.__class__
        out.add(n.id if cls is ast.Name else n.arg if cls is ast.arg else n.name)  # type: ignore[attr-defined]
    return out

