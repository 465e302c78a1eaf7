"""Random Numba-style programs in jitgrad's supported subset.

``generate(seed, index, attempt)`` returns a ``Program``: module source text with a
``def f(x, a, n)`` (plus helper functions it calls), the shape of ``x``, the value
of ``n`` and the ``wrt`` to differentiate with.  Everything is drawn from
``random.Random(f"{seed}:{index}:{attempt}")``, so a program is reproducible from
those three numbers alone (string seeds do not depend on PYTHONHASHSEED).

The generator knows every array's concrete shape and every loop index's concrete
range, so element reads and writes are always in bounds; values are kept bounded
(tanh, small constants, positive arguments to log and sqrt) and loops have
data-independent or capped trip counts.  Branch conditions may still sit near a
boundary for some inputs: the checker detects that with two finite-difference
steps and resamples.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass, field

from .long_loops import long_loop
from .rename import alpha_rename

HEADER = "import math\n\nimport numpy as np\n"

FLOATS = ["s", "t", "z", "p", "q", "w", "b", "c", "d", "r", "y0", "acc"]
ARRAYS = ["u", "v", "h", "y", "g", "buf"]
VIEWS = ["rv", "sv", "wv"]
ITERS = ["val", "xv", "el"]
LISTS = ["xs", "hist"]
INTS = ["i", "j", "k", "m"]
COUNTERS = ["it", "cnt"]
CONSTS = ["0.5", "1.5", "0.3", "-0.7", "2.0", "0.25", "1.1", "-0.4", "0.9"]
LONG_LOOPS = 0.04  # the fraction of programs with a long checkpointed loop
RENAMED = 0.25  # the fraction of programs alpha-renamed (rename.py)


@dataclass
class Program:
    """A generated module and the arguments it is differentiated with."""

    source: str
    shape: tuple
    n: int
    wrt: object
    seed: int = 0
    index: int = 0
    attempt: int = 0
    #: the names of f's parameters (other than x, a, n in an alpha-renamed program)
    params: tuple = ("x", "a", "n")
    #: the source before alpha-renaming: the reference the checker compares with
    original: str | None = None

    @property
    def wrt_positions(self) -> tuple:
        items = self.wrt if isinstance(self.wrt, tuple) else (self.wrt,)
        return tuple(self.params.index(w) if isinstance(w, str) else w for w in items)

    def describe(self) -> str:
        renamed = f" renamed {', '.join(self.params)}" if self.original else ""
        return (f"seed={self.seed} index={self.index} attempt={self.attempt} "
                f"x.shape={self.shape} n={self.n} wrt={self.wrt!r}{renamed}")

    def with_source(self, source: str) -> Program:
        """This program's shape, n and wrt with another source (its own reference)."""
        return Program(source, self.shape, self.n, self.wrt, self.seed, self.index,
                       self.attempt, self.params)


@dataclass
class Arr:
    shape: tuple
    kind: str  # 'arg' | 'local' (C-contiguous, owns its data) | 'view' | 'alias'


@dataclass
class Scope:
    floats: list = field(default_factory=list)
    arrays: dict = field(default_factory=dict)
    ints: dict = field(default_factory=dict)  # name -> (lo, hi) of the values it takes
    frozen: list = field(default_factory=list)

    def copy(self) -> Scope:
        return Scope(list(self.floats), dict(self.arrays), dict(self.ints), list(self.frozen))

    def add_float(self, name: str) -> None:
        if name not in self.floats:
            self.floats.append(name)

    def assignable_floats(self) -> list:
        return [f for f in self.floats if f not in self.frozen]


@dataclass
class Ctx:
    depth: int = 0
    in_loop: bool = False
    allow_continue: bool = False
    in_helper: bool = False


def _terminal(line: str) -> bool:
    """An unconditional break/continue/return at the block's own level."""
    return line in ("break", "continue") or line.startswith("return ")


def _ind(lines: list, n: int = 1) -> list:
    return ["    " * n + ln for ln in lines]


class Module:
    """State shared by the functions of one generated module."""

    def __init__(self, rnd: random.Random, shape: tuple, n: int):
        self.r = rnd
        self.shape = shape
        self.n = n
        #: a second stream for checkpointed loops, so programs without one are unchanged
        self.ck = random.Random(f"ck:{rnd.getstate()[1][:4]}")
        #: a third stream for calls made for their effect (``st_effect``), in one program
        #: in twenty, so programs without one are unchanged
        self.fx = random.Random(f"fx:{rnd.getstate()[1][:4]}")
        self.effects = self.fx.random() < 0.05
        #: a fourth stream for loops whose last taken branch decides a value (``st_select``),
        #: in one program in six, so programs without one are unchanged
        self.sel = random.Random(f"sel:{rnd.getstate()[1][:4]}")
        self.selects = self.sel.random() < 0.17
        #: a fifth stream for row loops over a matrix argument (``st_rows``), in every second
        #: program whose ``x`` is a matrix, so programs without one are unchanged
        self.rw = random.Random(f"rw:{rnd.getstate()[1][:4]}")
        self.rows = len(shape) == 2 and self.rw.random() < 0.5
        #: a sixth stream for loops over zip / .flat / np.ndindex / literal tuples and
        #: per-iteration accumulator arrays (``st_iterable``, ``st_accum``), in one program
        #: in four, so programs without one are unchanged
        self.it = random.Random(f"it:{rnd.getstate()[1][:4]}")
        self.iters = self.it.random() < 0.25
        #: a seventh stream for long checkpointed loops (``long_loops.py``), in a fraction
        #: ``LONG_LOOPS`` of programs, half of them with random draws inside, so programs
        #: without one are unchanged
        self.lp = random.Random(f"lp:{rnd.getstate()[1][:4]}")
        self.long_left = self.lp.choice([1, 1, 2]) if self.lp.random() < LONG_LOOPS else 0
        self.draws = self.lp.random() < 0.5
        self.long_outs: list = []  # expressions of their results, for the return
        #: an eighth stream for pair loops over a matrix's rows (``st_pairs``: a helper
        #: called with two rows, or their difference inline), in two programs in five whose
        #: ``x`` is a matrix, so programs without one are unchanged
        self.pr = random.Random(f"pr:{rnd.getstate()[1][:4]}")
        self.pairs = len(shape) == 2 and self.pr.random() < 0.4
        self.pairs_done = False
        self.uses_numba = False
        #: a ninth stream for lists of numbers appended once per trip of a range loop and
        #: read after it (``st_list``), in one program in six, so programs without one are
        #: unchanged
        self.ls = random.Random(f"ls:{rnd.getstate()[1][:4]}")
        self.lists = self.ls.random() < 0.17
        self.lists_done = False
        self.uses_jg = False
        self.helpers: list = []  # (name, kind, shape, source)
        self.max_helpers = rnd.choice([0, 1, 2, 2, 3])

    def helper_names(self, kind: str, shape=None) -> list:
        return [h[0] for h in self.helpers if h[1] == kind and (shape is None or h[2] == shape)]


class FuncGen:
    """Generates the statements of one function."""

    def __init__(self, mod: Module, in_helper: bool = False):
        self.mod = mod
        self.r = mod.r
        self.in_helper = in_helper
        self.kinds: dict = {}  # name -> 'f' | ('a', shape) | 'i'
        self.views_used: list = []
        self.returned = False  # an early return so far (``st_list`` mostly avoids them)

    # --- small random helpers ----------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, seq):
        return self.r.choice(list(seq))

    def wpick(self, options: list):
        """Pick from ``[(weight, value), ...]`` (weights > 0)."""
        total = sum(w for w, _ in options)
        x = self.r.random() * total
        for w, v in options:
            x -= w
            if x < 0:
                return v
        return options[-1][1]

    def const(self) -> str:
        return self.pick(CONSTS)

    # --- names ----------------------------------------------------------------------

    def new_float_name(self, sc: Scope) -> str:
        free = [f for f in FLOATS if f not in sc.floats and self.kinds.get(f, "f") == "f"]
        if free and (self.chance(0.6) or not sc.assignable_floats()):
            name = self.pick(free[:6] if self.chance(0.7) else free)
        elif sc.assignable_floats():
            name = self.pick(sc.assignable_floats())
        else:
            name = self.pick(FLOATS)
        self.kinds[name] = "f"
        return name

    def float_target(self, sc: Scope) -> str:
        """An existing float (reassignment, shadowing) or a fresh one."""
        cands = sc.assignable_floats()
        if cands and self.chance(0.55):
            return self.pick(cands)
        return self.new_float_name(sc)

    def new_array_name(self, sc: Scope, shape: tuple) -> str | None:
        cands = []
        for a in ARRAYS:
            k = self.kinds.get(a)
            if a in sc.frozen:
                continue
            if k is None or k == ("a", shape):
                if a in sc.arrays and sc.arrays[a].kind != "local":
                    continue
                cands.append(a)
        if not cands:
            return None
        name = self.pick(cands[:3] if self.chance(0.6) else cands)
        self.kinds[name] = ("a", shape)
        return name

    def int_name(self, sc: Scope, pool=INTS) -> str | None:
        cands = [i for i in pool if i not in sc.frozen and i not in sc.ints
                 and self.kinds.get(i, "i") == "i"]
        if not cands:
            return None
        name = cands[0] if self.chance(0.6) else self.pick(cands)
        self.kinds[name] = "i"
        return name

    # --- shapes -----------------------------------------------------------------------

    def local_shapes(self) -> list:
        shp = self.mod.shape
        out = [shp, shp, (self.mod.n,)]
        if len(shp) == 2:
            out += [(shp[1],), (shp[0],), (shp[0] * shp[1],), (shp[1], shp[0])]
        return out

    def size_text(self, sc: Scope, shape: tuple) -> str:
        """How to write ``np.zeros(<size>)`` for ``shape``."""
        opts = []
        if shape == self.mod.shape and "x" in sc.arrays:
            opts += ["x.shape"] + (["len(x)"] if len(shape) == 1 else [])
        if shape == (self.mod.n,) and not self.in_helper:
            opts += ["n", "n"]
        for name, arr in sc.arrays.items():
            if arr.shape == shape and len(shape) == 1 and name != "x":
                opts.append(f"len({name})")
        opts.append(str(shape[0]) if len(shape) == 1 else str(tuple(shape)))
        return self.pick(opts)

    def arrays_of(self, sc: Scope, shape=None, kinds=None, ndim=None) -> list:
        return [n for n, a in sc.arrays.items()
                if (shape is None or a.shape == shape) and (kinds is None or a.kind in kinds)
                and (ndim is None or len(a.shape) == ndim)]

    # --- indices ----------------------------------------------------------------------

    def idx1(self, sc: Scope, m: int, arr_name: str | None = None) -> str:
        """An integer index expression valid for a dimension of length ``m``."""
        lentext = f"len({arr_name})" if arr_name and self.chance(0.5) else str(m)
        opts = [(3, str(self.r.randrange(m)))]
        if self.chance(0.3):
            opts.append((1, str(-self.r.randrange(1, m + 1))))
        for name, rng in sc.ints.items():
            if rng is None:
                continue
            lo, hi = rng
            if lo > hi:
                continue
            if 0 <= lo and hi <= m - 1:
                opts.append((6, name))
                opts.append((1, f"{lentext} - 1 - {name}"))
            if 1 <= lo and hi - 1 <= m - 1:
                opts.append((3, f"{name} - 1"))
            if lo + 1 >= 0 and hi + 1 <= m - 1:
                opts.append((2, f"{name} + 1"))
            if lo >= 0:
                opts.append((1, f"{name} % {lentext}"))
                opts.append((1, f"({name} + 1) % {m}"))
        return self.wpick(opts)

    def index(self, sc: Scope, name: str) -> str:
        shape = sc.arrays[name].shape
        return ", ".join(self.idx1(sc, m, name if len(shape) == 1 else None) for m in shape)

    # --- scalar expressions --------------------------------------------------------------

    def satom(self, sc: Scope) -> str:
        opts = [(2, "const")]
        if sc.floats:
            opts.append((8, "name"))
        if sc.arrays:
            opts.append((5, "elem"))
        ints = [i for i, rg in sc.ints.items()]
        if ints:
            opts.append((1, "int"))
        if self.chance(0.04):
            opts.append((3, "pi"))
        kind = self.wpick(opts)
        if kind == "name":
            return self.pick(sc.floats)
        if kind == "elem":
            name = self.pick(list(sc.arrays))
            return f"{name}[{self.index(sc, name)}]"
        if kind == "int":
            i = self.pick(ints)
            return self.pick([f"({i} + 1.0)", f"{i} * 0.25", f"0.5 * {i}"])
        if kind == "pi":
            return self.pick(["math.pi", "np.pi", "math.e", "(math.pi * 0.25)", "(math.e - 2.0)"])
        return self.const()

    def sexpr(self, sc: Scope, d: int = 2) -> str:
        if d <= 0 or self.chance(0.25):
            return self.satom(sc)
        opts = [(10, "bin"), (2, "div"), (6, "unary"), (2, "exp"), (1.5, "log"),
                (1.5, "sqrt"), (1.5, "pow"), (1, "abs"), (1.5, "maxmin"), (1, "ifexp"),
                (0.5, "const")]
        if sc.arrays:
            opts.append((4, "reduce"))
        if self.mod.helper_names("scalar"):
            opts.append((2, "call"))
        elif len(self.mod.helpers) < self.mod.max_helpers and not self.in_helper:
            opts.append((1, "newcall"))
        kind = self.wpick(opts)
        A = lambda: self.sexpr(sc, d - 1)  # noqa: E731
        if kind == "bin":
            op = self.wpick([(3, "+"), (2, "-"), (3, "*")])
            return f"({A()} {op} {A()})"
        if kind == "div":
            return self.pick([f"({A()} / (1.5 + math.cos({A()})))",
                              f"({A()} / (1.0 + {A()} * {A()}))",
                              f"({A()} / 2.0)"])
        if kind == "unary":
            f = self.pick(["-", "math.sin", "math.cos", "math.tanh", "np.tanh", "np.sin",
                           "math.tanh"])
            return f"(-{A()})" if f == "-" else f"{f}({A()})"
        if kind == "exp":
            e = A()
            return self.pick([f"math.exp(-{e} * {e})", f"math.exp(0.5 * math.tanh({e}))",
                              f"np.exp(0.3 * {e})", f"math.exp({self.satom(sc)} * 0.2)"])
        if kind == "log":
            e = A()
            return self.pick([f"math.log(1.0 + {e} * {e})", f"np.log(2.0 + math.sin({e}))",
                              f"math.log(1.5 + math.tanh({e}))"])
        if kind == "sqrt":
            e = A()
            return self.pick([f"math.sqrt(1.0 + {e} * {e})", f"np.sqrt({e} * {e} + 0.5)"])
        if kind == "pow":
            e = A()
            return self.pick([f"{self.paren(e)} ** 2", f"{self.paren(e)} ** 3",
                              f"(1.0 + {e} * {e}) ** 0.5", f"(1.0 + {e} * {e}) ** 1.5"])
        if kind == "abs":
            return f"abs({A()})"
        if kind == "maxmin":
            f = self.pick(["max", "min"])
            k = self.pick([2, 2, 3])
            return f"{f}({', '.join(A() for _ in range(k))})"
        if kind == "ifexp":
            return f"({A()} if {self.cond(sc)} else {A()})"
        if kind == "reduce":
            return self.reduce(sc, d - 1)
        if kind == "call":
            h = self.pick(self.mod.helper_names("scalar"))
            return f"{h}({A()}, {A()})"
        if kind == "newcall":
            h = self.make_scalar_helper()
            return f"{h}({A()}, {A()})"
        return self.pick(["math.pi", "np.pi", "math.e"])

    @staticmethod
    def paren(e: str) -> str:
        return e if e.isidentifier() or (e.startswith("(") and e.endswith(")")) else f"({e})"

    def reduce(self, sc: Scope, d: int) -> str:
        name = self.pick(list(sc.arrays))
        shape = sc.arrays[name].shape
        one = len(shape) == 1
        opts = [(4, "sum"), (2, "method"), (1, "mean"), (0.7, "max")]
        if one:
            opts += [(2, "dot"), (1, "shiftdot"), (1, "cumsum"), (1, "rev")]
        if one and shape[0] < 2:
            opts = [o for o in opts if o[1] != "shiftdot"]
        kind = self.wpick(opts)
        E = self.aexpr(sc, shape, d)[0] if self.chance(0.5) else name
        if kind == "sum":
            return f"np.sum({E})"
        if kind == "method":
            return f"{self.paren(E)}.sum()"
        if kind == "mean":
            return f"np.mean({E})"
        if kind == "max":
            return f"{self.pick(['np.max', 'np.min'])}({E})"
        if kind == "dot":
            return f"np.dot({E}, {self.aexpr(sc, shape, d)[0]})"
        if kind == "shiftdot":
            return f"np.dot({name}[:-1], {name}[1:])"
        if kind == "cumsum":
            return f"np.sum(np.cumsum({E}))"
        return f"np.sum({name}[::-1] * {self.aexpr(sc, shape, d)[0]})"

    def cond(self, sc: Scope) -> str:
        opts = [(6, "cmp"), (1, "and"), (1, "not"), (1, "chain"), (1, "absc")]
        if sc.ints:
            opts.append((2, "int"))
        kind = self.wpick(opts)
        c = self.pick(["0.0", "0.2", "-0.3", "0.5", "0.1", "-0.1", "1.0"])
        E = lambda: self.sexpr(sc, 1)  # noqa: E731
        if kind == "cmp":
            return f"{E()} {self.pick(['>', '<', '>=', '<='])} {c}"
        if kind == "and":
            return f"{E()} > {c} {self.pick(['and', 'or'])} {E()} < 0.4"
        if kind == "not":
            return f"not {E()} > {c}"
        if kind == "chain":
            return f"-0.5 < {E()} < 0.6"
        if kind == "absc":
            return f"abs({E()}) < 0.5"
        i = self.pick(list(sc.ints))
        return self.pick([f"{i} % 2 == 0", f"{i} > 1", f"{i} == 2", f"{i} != 1"])

    # --- array expressions -------------------------------------------------------------

    def abase(self, sc: Scope, shape: tuple) -> list:
        """(text, fresh) candidates naming an array of ``shape`` without computing."""
        out = [(n, False) for n in self.arrays_of(sc, shape)]
        for n, a in sc.arrays.items():
            s = a.shape
            contig = a.kind in ("arg", "local")
            if len(shape) == 2:
                if s == (shape[1], shape[0]) and len(s) == 2:
                    out.append((f"{n}.T", False))
                if contig and len(s) == 1 and s[0] == shape[0] * shape[1]:
                    out.append((f"{n}.reshape({shape[0]}, {shape[1]})", False))
            else:
                m = shape[0]
                if len(s) == 1 and s[0] == m:
                    out.append((self.pick([f"{n}[::-1]", f"{n}[::-1]", f"{n}.T"]), False))
                if len(s) == 2 and contig and s[0] * s[1] == m:
                    out.append((f"{n}.ravel()", False))
                if len(s) == 2 and s[1] == m:
                    out.append((f"{n}[{self.idx1(sc, s[0])}]", False))
                if len(s) == 2 and s[0] == m:
                    out.append((f"{n}[:, {self.idx1(sc, s[1])}]", False))
                if len(s) == 1 and s[0] == m + 1:
                    out.append((self.pick([f"{n}[1:]", f"{n}[:-1]"]), False))
        return out

    def aexpr(self, sc: Scope, shape: tuple, d: int = 1) -> tuple:
        """(text, fresh): an array expression of ``shape``; fresh = a new C-contiguous array."""
        base = self.abase(sc, shape)
        if not base:
            return (f"(np.zeros({self.size_text(sc, shape)}) + {self.satom(sc)})", True)
        if d <= 0 or self.chance(0.3):
            return self.pick(base[:3] if self.chance(0.5) else base)
        E = lambda: self.aexpr(sc, shape, d - 1)[0]  # noqa: E731
        kind = self.wpick([(3, "fn"), (3, "scale"), (3, "bin"), (1, "max"), (1, "cumsum")])
        if kind == "fn":
            e = E()
            return (self.pick([f"np.sin({e})", f"np.tanh({e})", f"np.cos({e})",
                               f"np.exp(-{self.paren(e)} * {self.paren(e)})",
                               f"np.sqrt(1.0 + {self.paren(e)} * {self.paren(e)})",
                               f"np.log(1.0 + {self.paren(e)} * {self.paren(e)})"]), True)
        if kind == "scale":
            return (self.pick([f"{self.paren(E())} * {self.satom(sc)}",
                               f"{self.satom(sc)} * {self.paren(E())} + {self.paren(E())}"]), True)
        if kind == "bin":
            return (f"({E()} {self.pick(['+', '-', '*'])} {E()})", True)
        if kind == "max":
            return (self.pick([f"np.maximum({E()}, {E()})", f"np.maximum({E()}, 0.1)",
                               f"np.minimum({E()}, 0.5)"]), True)
        if len(shape) == 1:
            return (f"np.cumsum({E()}) * 0.25", True)
        return (f"np.tanh({E()})", True)

    # --- statements ----------------------------------------------------------------------

    def block(self, sc: Scope, budget: int, ctx: Ctx) -> list:
        """At least one statement, about ``budget`` of them."""
        lines: list = []
        used = 0
        while used < max(1, budget):
            before = len(lines)
            lines += self.stmt(sc, budget - used, ctx)
            used += max(1, len(lines) - before)
            if lines and _terminal(lines[-1]):
                break
        return lines

    def stmt(self, sc: Scope, budget: int, ctx: Ctx) -> list:
        if self.mod.effects and sc.arrays and self.mod.fx.random() < 0.15:
            return self.st_effect(sc)
        if self.mod.selects and ctx.depth < 3 and self.mod.sel.random() < 0.15:
            out = self.st_select(sc, ctx)
            if out:
                return out
        if self.mod.rows and ctx.depth < 2 and self.mod.rw.random() < 0.25:
            out = self.st_rows(sc, ctx)
            if out:
                return out
        if self.mod.iters and ctx.depth < 3 and budget >= 2 and self.mod.it.random() < 0.25:
            out = self.st_accum(sc, budget, ctx) if ctx.in_loop and self.mod.it.random() < 0.6 \
                else self.st_iterable(sc, budget, ctx)
            if out:
                return out
        if self.mod.lists and ctx.depth == 0 and not ctx.in_helper and budget >= 2 \
                and self.mod.ls.random() < 0.2:
            out = self.st_list(sc)
            if out:
                return out
        if self.mod.pairs and ctx.depth < 2 and self.mod.pr.random() < 0.2:
            out = self.st_pairs(sc, ctx)
            if out:
                return out
        if self.mod.long_left and ctx.depth == 0 and not ctx.in_helper and \
                self.mod.lp.random() < 0.25:
            out = self.st_long(sc)
            if out:
                return out
        opts = [(20, self.st_assign), (6, self.st_selfupd), (8, self.st_aug),
                (5, self.st_tuple), (4, self.st_cfold)]
        has_arr = bool(sc.arrays)
        if has_arr:
            opts += [(10, self.st_elem_write), (5, self.st_arr_whole), (3, self.st_slice_write),
                     (1.5, self.st_view_write), (0.6, self.st_alias)]
        if len(self.local_arrays(sc)) < 3 or self.chance(0.2):
            opts.append((6, self.st_arr_new))
        if self.swappable_pairs(sc):
            opts.append((3, self.st_swap_buf))
        if ctx.depth < 2 and budget >= 3:
            opts.append((3, self.st_buffers))
        if ctx.depth < 3 and budget >= 2:
            opts += [(9, self.st_for), (3, self.st_selfloop), (2.5, self.st_while),
                     (8, self.st_if), (2.5, self.st_counter)]
            if any(len(sc.arrays[a].shape) == 1 for a in sc.arrays):
                opts.append((4, self.st_for_iter))
            if not ctx.in_helper:
                opts.append((1.5, self.st_while_true))
        if ctx.in_loop:
            opts.append((3, self.st_break))
        opts.append((1.5 if ctx.depth else 1, self.st_early_return))
        if not ctx.in_helper and has_arr and (self.mod.helpers or
                                              len(self.mod.helpers) < self.mod.max_helpers):
            opts.append((3, self.st_array_helper))
        for _ in range(5):
            fn = self.wpick(opts)
            out = fn(sc, budget, ctx)
            if out:
                return out
        return self.st_assign(sc, budget, ctx)

    def st_long(self, sc: Scope) -> list:
        """A long checkpointed loop (``long_loops.py``), its names registered in ``sc``."""
        lo = long_loop(self, sc, self.mod.draws)
        if lo is None:
            return []
        self.mod.long_left -= 1
        for nm in lo.floats:
            self.kinds[nm] = "f"
            sc.add_float(nm)
        self.kinds[lo.index] = "i"
        if lo.array is not None:
            self.kinds[lo.array] = ("a", (self.mod.shape[0],))
            sc.arrays[lo.array] = Arr((self.mod.shape[0],), "local")
        self.mod.long_outs.append(lo.result)
        return lo.lines

    def st_effect(self, sc: Scope) -> list:
        """A call made for its effect, drawn from the effect stream only: a write into a
        local array out of the assignments' sight, which jitgrad must refuse at its line
        (``u.fill(c)``, ``u.sort()``: what Numba compiles of them), or a pure call whose
        result is dropped (``np.sum(u)``), which changes nothing."""
        fx = self.mod.fx
        local = [a for a in self.local_arrays(sc) if a not in sc.frozen]
        kind = fx.choice(["fill", "fill", "sort", "pure", "pure"])
        if kind == "pure" or not local:
            return [f"np.sum({fx.choice(sorted(sc.arrays))})"]
        U = fx.choice(local)
        if kind == "sort" and len(sc.arrays[U].shape) == 1:
            return [f"{U}.sort()"]
        return [f"{U}.fill({fx.choice(CONSTS)})"]

    def st_select(self, sc: Scope, ctx: Ctx) -> list:
        """A loop whose whole body is one ``if`` assigning names from values that read
        none of them, the test comparing against one (a running maximum, an argmin with a
        second value): what ``front/last_taken.py`` rewrites.  Drawn from the select stream;
        the values from the main one."""
        sel = self.mod.sel
        cands = [f for f in sc.assignable_floats()]
        IV = self.int_name(sc)
        if not cands or IV is None or not sc.arrays:
            return []
        M = sel.choice(cands)
        text, vals = self.range_expr(sc)
        body_sc = sc.copy()
        body_sc.ints[IV] = (min(vals), max(vals)) if len(vals) else (1, 0)
        body_sc.frozen.append(IV)
        val_sc = body_sc.copy()
        val_sc.floats = [f for f in val_sc.floats if f != M]
        lines: list = []
        second = None
        if sel.random() < 0.4:  # a second value, bound before the loop
            free = [f for f in FLOATS if f not in sc.floats and self.kinds.get(f, "f") == "f"]
            if free:
                second = sel.choice(free[:4])
                self.kinds[second] = "f"
                lines.append(f"{second} = {self.const()}")
                val_sc.floats = [f for f in val_sc.floats if f != second]
        if sel.random() < 0.7:  # an element at the loop index (mostly), maybe transformed
            A = sel.choice(sorted(val_sc.arrays))
            e = f"{A}[{self.index(val_sc, A)}]"
            e = sel.choice([e, e, f"math.sin({e})", f"({e} * {self.satom(val_sc)})",
                            f"({e} - {self.sexpr(val_sc, 1)})"])
        else:
            e = self.sexpr(val_sc, sel.choice([0, 1, 1, 2]))
        op = sel.choice([">", "<", ">=", "<="])
        test = f"{e} {op} {M}"
        if sel.random() < 0.2:
            test = f"{test} and {self.cond(val_sc)}"
        value = e if sel.random() < 0.7 else self.sexpr(val_sc, 1)
        body = [f"{M} = {value}"]
        if second is not None:
            body.append(f"{second} = {self.sexpr(val_sc, 1)}")
            sc.add_float(second)
        if sel.random() < 0.5:
            body.reverse()
        text = self.maybe_checkpointed(text) if not ctx.in_helper else text
        return lines + [f"for {IV} in {text}:", f"    if {test}:"] + _ind(body, 2)

    def st_rows(self, sc: Scope, ctx: Ctx) -> list:
        """A loop over the rows of the matrix ``x`` with an inner loop over a row's columns
        summing into a float, and now and then an element of the row before or after it
        (a label column, the inner loop's last index), the next row, a strided or partial
        range: what ``backend/write_once.py`` rewrites, or must leave alone.  Drawn from the
        rows stream; the other values from the main one."""
        rw = self.mod.rw
        if "x" not in sc.arrays or sc.arrays["x"].kind != "arg" or ctx.in_helper:
            return []
        a, b = sc.arrays["x"].shape
        cands = sc.assignable_floats()
        IR = self.int_name(sc)
        if not cands or IR is None:
            return []
        outer = rw.choice([("range(x.shape[0])", range(a)), (f"range({a})", range(a)),
                           ("range(1, x.shape[0])", range(1, a)),
                           ("range(x.shape[0] - 1, -1, -1)", range(a - 1, -1, -1)),
                           ("range(0, x.shape[0], 2)", range(0, a, 2)),
                           ("range(x.shape[0] - 1)", range(a - 1))])
        row_sc = sc.copy()
        row_sc.ints[IR] = (min(outer[1]), max(outer[1])) if len(outer[1]) else (1, 0)
        row_sc.frozen.append(IR)
        JC = self.int_name(row_sc)
        if JC is None:
            return []
        inner = rw.choice([("range(x.shape[1])", range(b)), (f"range({b})", range(b)),
                           ("range(1, x.shape[1])", range(1, b)),
                           ("range(x.shape[1] - 1, -1, -1)", range(b - 1, -1, -1)),
                           ("range(x.shape[1] - 1)", range(b - 1))])
        col_sc = row_sc.copy()
        col_sc.ints[JC] = (min(inner[1]), max(inner[1])) if len(inner[1]) else (1, 0)
        col_sc.frozen.append(JC)
        val_sc = col_sc.copy()  # other values: not elements of x (other rows)
        val_sc.arrays = {k: v for k, v in val_sc.arrays.items() if k != "x"}
        T = rw.choice(cands)
        e = f"x[{IR}, {JC}]"
        if len(outer[1]) and max(outer[1]) + 1 < a and rw.random() < 0.15:
            e = f"{e} * x[{IR} + 1, {JC}]"  # the next row (refused)
        e = rw.choice([e, f"math.sin({e})", f"{e} * {self.satom(val_sc)}",
                       f"np.exp({e} - {self.satom(val_sc)})", f"{e} * {e}"])
        body = [f"{T} += {e}"]
        if rw.random() < 0.3:
            body.append(f"{T} = {T} * {rw.choice(['0.5', '0.9', 'a'])}")
        col = rw.choice([str(rw.randrange(b)), f"{IR} % {b}"])
        val_sc.ints.pop(JC, None)
        pre = [f"{T} += x[{IR}, {col}] * {self.satom(val_sc)}"] if rw.random() < 0.4 else []
        post = []
        if rw.random() < 0.4:
            last = JC if len(inner[1]) and rw.random() < 0.4 else col
            post = [f"{T} += x[{IR}, {last}] * {rw.choice(['2.0', 'a'])}"]
            if rw.random() < 0.3:
                post = [f"if x[{IR}, 0] > 0.0:"] + _ind(post)
        return [f"for {IR} in {outer[0]}:"] + _ind(
            pre + [f"for {JC} in {inner[0]}:"] + _ind(body) + post)

    def st_pairs(self, sc: Scope, ctx: Ctx) -> list:
        """A loop over the pairs of a matrix's rows summing a smooth function of two rows,
        through a helper called with the rows (``e += dist(x[i], x[j])``, the
        Lennard-Jones loop) or inline (``d = x[i] - x[j]``) (issue 29 item 2).  Drawn from
        the pairs stream; the other values from the main one."""
        pr = self.mod.pr
        mats = [m for m in self.arrays_of(sc, ndim=2) if sc.arrays[m].kind in ("arg", "local")]
        targets = sc.assignable_floats()
        IR = self.int_name(sc)
        if not mats or not targets or IR is None or ctx.in_helper:
            return []
        X = pr.choice(mats)
        rows, cols = sc.arrays[X].shape
        row_sc = sc.copy()
        row_sc.ints[IR] = (0, rows - 1)
        row_sc.frozen.append(IR)
        JR = self.int_name(row_sc)
        if JR is None:
            return []
        outer = pr.choice([f"range({X}.shape[0])", f"range({rows})", f"range({X}.shape[0] - 1)"])
        if pr.random() < 0.25:
            self.mod.uses_numba = True
            outer = outer.replace("range", "numba.prange", 1)
        inner = pr.choice([f"range({IR} + 1, {X}.shape[0])", f"range({IR} + 1, {rows})",
                           f"range({IR})", f"range({X}.shape[0])"])
        pa, pb = f"{X}[{IR}]", f"{X}[{JR}]"
        if pr.random() < 0.3:
            pa, pb = pb, pa
        T = pr.choice(targets)
        scale = pr.choice(["", "", f" * {self.satom(sc)}"])
        # (a name another pair loop made is refused, '... first created inside a loop ...
        # used after it': mostly a fresh one, now and then probe that)
        fresh = [d for d in ("dr", "dq") if d not in self.kinds]
        D = next((d for d in ("dr", "dq") if self.kinds.get(d, ("a", (cols,))) == ("a", (cols,))),
                 None) if not fresh or pr.random() < 0.2 else fresh[0]
        if pr.random() < 0.6 or D is None:
            name, extra = self.pair_helper(cols)
            body = [f"{T} += {name}({pa}, {pb}{extra}){scale}"]
        else:
            self.kinds[D] = ("a", (cols,))
            body = [f"{D} = {pa} - {pb}", f"{T} += {self.pair_term(D)}{scale}"]
        if inner == f"range({X}.shape[0])":
            body = [f"if {JR} != {IR}:"] + _ind(body)
        self.mod.pairs_done = True
        return [f"for {IR} in {outer}:"] + _ind([f"for {JR} in {inner}:"] + _ind(body))

    def st_list(self, sc: Scope) -> list:
        """A list of numbers appended once per trip of a range loop and read after it
        (``xs = [s]``, ``for k in range(n): s = ...; xs.append(s)``, then ``xs[-1]``,
        ``len(xs)``, a loop over it, ``np.array(xs)``) (issue 29 item 8).  Drawn from the
        lists stream; the values from the main one."""
        ls = self.mod.ls
        if (self.returned or self.mod.lists_done) and ls.random() < 0.8:
            return []  # (a list after an early return is refused: now and then, probe it)
        L = next((nm for nm in LISTS if nm not in self.kinds and nm not in sc.floats), None)
        targets = sc.assignable_floats()
        IV = self.int_name(sc)
        if L is None or not targets or IV is None:
            return []
        self.kinds[L] = "list"
        T = ls.choice(targets)
        init = ls.choice([[T], [T], [], [T, self.const()]])
        rows, n = self.mod.shape[0], self.mod.n
        text, vals = ls.choice([("range(n)", range(n)), ("range(1, n)", range(1, n)),
                                ("range(3)", range(3)), ("range(x.shape[0])", range(rows)),
                                ("range(2, 5)", range(2, 5))])
        body_sc = sc.copy()
        body_sc.ints[IV] = (min(vals), max(vals))
        body_sc.frozen.append(IV)
        e = self.sexpr(body_sc, 1)
        body = [f"{T} = " + ls.choice([f"math.tanh({T} * {self.const()} + {e})",
                                       f"{T} * 0.9 + {e}", f"math.sin({T}) + {e}"])]
        if ls.random() < 0.3:
            body.append(f"{ls.choice(targets)} += {T} * {self.satom(body_sc)}")
        entry = ls.choice([T, T, f"{T} * {T}", f"math.tanh({T})"])
        body.insert(ls.choice([0, len(body)]), f"{L}.append({entry})")
        m = len(init) + len(vals)
        self.mod.lists_done = True
        return ([f"{L} = [{', '.join(init)}]", f"for {IV} in {text}:"] + _ind(body)
                + self.list_reads(sc, L, m))

    def list_reads(self, sc: Scope, L: str, m: int) -> list:
        """One or two reads of the list ``L`` of ``m`` numbers into floats of ``sc``."""
        ls = self.mod.ls
        out: list = []
        for _ in range(ls.choice([1, 1, 2])):
            F = ls.choice(sc.assignable_floats())
            c = self.const()
            forms = [f"{F} = {F} * (1.0 + 0.1 * len({L}))",
                     f"{F} = {F} + np.sum(np.array({L}) * {c})"]
            if m:
                k = ls.randrange(-m, m)
                forms += [f"{F} = {F} + {L}[{k}] * {c}", f"{F} = {F} + {L}[-1]",
                          f"{F} = {F} + {L}[len({L}) - 1] * {L}[0]"]
            IV = self.int_name(sc)
            if IV is not None:
                forms.append(f"for {IV} in range(len({L})):\n    {F} += {L}[{IV}] * {c}")
            out += ls.choice(forms).split("\n")
        return out

    def pair_term(self, D: str) -> str:
        """A bounded smooth function of the row difference ``D`` (the pairs stream)."""
        sq = f"np.sum({D} * {D})"
        return self.mod.pr.choice([sq, f"1.0 / (1.0 + {sq})", f"np.exp(-{sq})",
                                   f"math.sqrt({sq} + 0.1)", f"np.sum(np.tanh({D})) * 0.5"])

    def pair_helper(self, cols: int) -> tuple:
        """A helper of two rows (reused, or new to the module): its name and the text of
        any argument after the rows."""
        pr = self.mod.pr
        have = [h for h in self.mod.helpers if h[1] == "pair" and h[2] == (cols,)]
        if have and pr.random() < 0.7:
            name, _, _, src = pr.choice(have)
            return name, (", a" if "cc" in src.splitlines()[0] else "")
        name = f"dist{len(self.mod.helpers)}"
        params = "pa, pb, cc" if pr.random() < 0.3 else "pa, pb"
        if pr.random() < 0.3:  # the Numba example's element loop
            body = ["acc = 0.0", "for k in range(len(pa)):",
                    "    acc += (pa[k] - pb[k]) * (pa[k] - pb[k])", "return acc"]
        else:
            body = ["d = pa - pb", f"return {self.pair_term('d')}"]
        if "cc" in params:
            body[-1] = body[-1].replace("return ", "return cc * ", 1)
        src = "\n".join([f"def {name}({params}):"] + _ind(body))
        self.mod.helpers.append((name, "pair", (cols,), src))
        return name, (", a" if "cc" in params else "")

    def local_arrays(self, sc: Scope) -> list:
        return self.arrays_of(sc, kinds=("local",))

    def swappable_pairs(self, sc: Scope) -> list:
        loc = self.local_arrays(sc)
        return [(p, q) for i, p in enumerate(loc) for q in loc[i + 1:]
                if sc.arrays[p].shape == sc.arrays[q].shape
                and p not in sc.frozen and q not in sc.frozen]

    def st_assign(self, sc, budget, ctx) -> list:
        e = self.sexpr(sc, self.pick([1, 2, 2, 3]))
        name = self.float_target(sc)
        if self.chance(0.3) and name in sc.floats:
            e = self.pick([f"math.tanh({e})", f"0.5 * {self.paren(e)}"])
        sc.add_float(name)
        return [f"{name} = {e}"]

    def st_selfupd(self, sc, budget, ctx) -> list:
        cands = sc.assignable_floats()
        if not cands:
            return []
        N = self.pick(cands)
        kind = self.pick(["sq", "poly", "tanh", "three", "chain", "three"])
        if kind == "sq":
            return [f"{N} = {N} * {N}"]
        if kind == "poly":
            return [f"{N} = {N} * ({N} + 1.0)"]
        if kind == "tanh":
            return [f"{N} = math.tanh({N}) + {N} * 0.5"]
        if kind == "three":
            T = self.new_float_name(sc)
            if T == N:
                return []
            S = self.float_target(sc)
            sc.add_float(T)
            sc.add_float(S)
            return [f"{T} = {N}", f"{N} = {N} * {N}", f"{S} = {N} * {T}"]
        others = [f for f in cands if f != N]
        if not others:
            return []
        X = self.pick(others)
        return [f"{N} = {N} + {X}", f"{X} = {N} * {X}", f"{N} = {X} - {N}"]

    def st_aug(self, sc, budget, ctx) -> list:
        cands = sc.assignable_floats()
        if not cands:
            return []
        N = self.pick(cands)
        op = self.wpick([(4, "+="), (2, "-="), (1, "*="), (1, "/=")])
        if op == "*=":
            damp = f"(0.5 + 0.25 * math.tanh({self.sexpr(sc, 1)}))"
            return [f"{N} *= {self.pick(['0.9', damp, '1.1'])}"]
        if op == "/=":
            return [f"{N} /= (1.5 + math.cos({self.sexpr(sc, 1)}))"]
        return [f"{N} {op} {self.sexpr(sc, 2)}"]

    def st_tuple(self, sc, budget, ctx) -> list:
        cands = sc.assignable_floats()
        if len(cands) < 2:
            return []
        P, Q = self.r.sample(cands, 2)
        kind = self.pick(["swap", "swap", "nonperm", "nonperm2", "shift", "three"])
        if kind == "swap":
            return [f"{P}, {Q} = {Q}, {P}"]
        if kind == "nonperm":
            return [f"{P}, {Q} = {Q}, {P} * 2.0"]
        if kind == "nonperm2":
            return [f"{P}, {Q} = {Q}, {self.sexpr(sc, 1)}"]
        if kind == "shift":
            R = self.new_float_name(sc)
            if R in (P, Q):
                return []
            sc.add_float(R)
            return [f"{P}, {R} = {Q}, {P}"]
        if len(cands) < 3:
            return [f"{P}, {Q} = {Q}, {P}"]
        R = self.pick([c for c in cands if c not in (P, Q)])
        return [f"{P}, {Q}, {R} = {Q}, {R}, {P}"]

    def st_cfold(self, sc, budget, ctx) -> list:
        S = self.float_target(sc)
        sc.add_float(S)
        c = self.pick(["0.0", "1.0", "0.5"])
        body = f"{S} = {self.sexpr(sc, 2)}"
        if self.chance(0.5):
            return [f"{S} = {c}", f"if {S} > 1.5:", "    " + body]
        return [f"{S} = {c}", f"if {S} < 2.0:", "    " + body, "else:",
                f"    {S} = {self.sexpr(sc, 1)}"]

    def write_target(self, sc: Scope, allow_views: bool = False) -> str | None:
        kinds = ("local", "arg", "view", "alias") if allow_views else ("local", "arg")
        cands = [a for a in self.arrays_of(sc, kinds=kinds) if a not in sc.frozen]
        local = [a for a in cands if sc.arrays[a].kind == "local"]
        if local and self.chance(0.6):
            return self.pick(local)
        return self.pick(cands) if cands else None

    def st_elem_write(self, sc, budget, ctx) -> list:
        U = self.write_target(sc)
        if U is None:
            return []
        ix = self.index(sc, U)
        if sc.arrays[U].kind == "arg" and self.chance(0.3):
            return [f"{U}[{ix}] = {U}[{ix}] * {U}[{ix}]"]
        op = self.wpick([(5, "="), (3, "+="), (2, "-="), (1, "*=")])
        if op == "*=":
            damp = f"math.tanh({self.satom(sc)})"
            return [f"{U}[{ix}] *= {self.pick(['0.5', '1.2', damp])}"]
        e = self.sexpr(sc, self.pick([1, 2, 2]))
        if op == "=" and self.chance(0.3):
            e = f"{U}[{ix}] * 0.5 + {self.paren(e)}"
        return [f"{U}[{ix}] {op} {e}"]

    def st_arr_new(self, sc, budget, ctx) -> list:
        shape = self.pick(self.local_shapes())
        name = self.new_array_name(sc, shape)
        if name is None:
            return []
        kind = self.wpick([(3, "zeros"), (1, "ones"), (1, "zeros_like"), (3, "copy"),
                           (4, "expr"), (1, "empty")])
        xs = shape == self.mod.shape and "x" in sc.arrays
        lines = []
        if kind == "zeros_like" and xs:
            e = self.pick(["np.zeros_like(x)", "np.ones_like(x) * 0.5"])
        elif kind == "copy":
            base = self.abase(sc, shape)
            e = f"{self.paren(self.pick(base)[0])}.copy()" if base else \
                f"np.zeros({self.size_text(sc, shape)})"
        elif kind == "expr":
            text, fresh = self.aexpr(sc, shape, 2)
            e = text if fresh else f"{self.paren(text)}.copy()"
        elif kind == "empty" and len(shape) == 1:
            src = self.arrays_of(sc, shape)
            IV = self.int_name(sc)
            if IV is None:
                return []
            e = f"np.empty_like({src[0]})" if src else f"np.empty({self.size_text(sc, shape)})"
            body_sc = sc.copy()
            body_sc.ints[IV] = (0, shape[0] - 1)
            body_sc.frozen.append(IV)
            body_sc.arrays.pop(name, None)  # the fill must not read the unfilled array
            fill = self.sexpr(body_sc, 1)
            lines = [f"for {IV} in range({shape[0]}):", f"    {name}[{IV}] = {fill}"]
        else:
            f = "np.ones" if kind == "ones" else "np.zeros"
            e = f"{f}({self.size_text(sc, shape)})"
        sc.arrays[name] = Arr(shape, "local")
        return [f"{name} = {e}"] + lines

    def st_arr_whole(self, sc, budget, ctx) -> list:
        U = self.write_target(sc)
        if U is None:
            return []
        shape = sc.arrays[U].shape
        kind = self.wpick([(3, "rebind"), (3, "aug"), (1, "scale")])
        if kind == "rebind" and sc.arrays[U].kind == "local":
            text, fresh = self.aexpr(sc, shape, 2)
            if not fresh:
                text = f"{self.paren(text)} * {self.satom(sc)}"
            return [f"{U} = {text}"]
        if kind == "aug":
            op = self.pick(["-=", "+="])
            c = self.pick(["0.1", "0.3", self.satom(sc)])
            text, fresh = self.aexpr(sc, shape, 1)
            if not fresh:  # 'u -= u[::-1]' overlaps: Numba and NumPy disagree, not our business
                text = f"{self.paren(text)} * {c}"
            rhs = self.pick([f"{U} * {c}", text])
            return [f"{U} {op} {rhs}"]
        return [f"{U} *= {self.pick(['0.5', '0.9', 'math.tanh(' + self.satom(sc) + ')'])}"]

    def st_slice_write(self, sc, budget, ctx) -> list:
        U = self.write_target(sc)
        if U is None:
            return []
        shape = sc.arrays[U].shape
        e = self.sexpr(sc, 1)
        if len(shape) == 2:
            R, C = shape
            return [self.pick([f"{U}[{self.idx1(sc, R)}] = {e}",
                               f"{U}[{self.idx1(sc, R)}, :] = {e}",
                               f"{U}[:, {self.idx1(sc, C)}] = {e}"])]
        m = shape[0]
        if m >= 3:
            lo = self.r.randrange(0, m - 1)
            hi = self.r.randrange(lo + 1, m + 1)
            return [self.pick([f"{U}[{lo}:{hi}] = {e}", f"{U}[{self.idx1(sc, m, U)}] = {e}"])]
        return [f"{U}[{self.idx1(sc, m, U)}] = {e}"]

    def st_view_write(self, sc, budget, ctx) -> list:
        names = [v for v in VIEWS if v not in self.views_used]
        if not names:
            return []
        V = names[0]
        src = [a for a in sc.arrays if sc.arrays[a].kind in ("arg", "local")]
        if not src:
            return []
        A = self.pick(src)
        shape = sc.arrays[A].shape
        if len(shape) == 2:
            R, C = shape
            text, vshape = self.pick([(f"{A}[{self.idx1(sc, R)}]", (C,)),
                                      (f"{A}.T", (C, R)), (f"{A}.reshape({R * C})", (R * C,)),
                                      (f"{A}.ravel()", (R * C,))])
        else:
            m = shape[0]
            if m < 2:
                return []
            text, vshape = self.pick([(f"{A}[0:2]", (2,)), (f"{A}[::-1]", (m,)),
                                      (f"{A}[1:]", (m - 1,))])
        self.views_used.append(V)
        self.kinds[V] = ("a", vshape)
        sc.arrays[V] = Arr(vshape, "view")
        ix = ", ".join(str(self.r.randrange(k)) for k in vshape)
        return [f"{V} = {text}", f"{V}[{ix}] = {self.sexpr(sc, 1)}"]

    def st_alias(self, sc, budget, ctx) -> list:
        src = [a for a in sc.arrays if sc.arrays[a].kind == "local" and a not in sc.frozen]
        names = [v for v in VIEWS if v not in self.views_used]
        if not src or not names:
            return []
        A = self.pick(src)
        W = names[0]
        self.views_used.append(W)
        shape = sc.arrays[A].shape
        self.kinds[W] = ("a", shape)
        sc.arrays[W] = Arr(shape, "alias")
        ix = self.index(sc, A)
        return [f"{W} = {A}", f"{A}[{ix}] = {self.sexpr(sc, 1)}"]

    def st_swap_buf(self, sc, budget, ctx) -> list:
        pairs = self.swappable_pairs(sc)
        if not pairs:
            return []
        U, V = self.pick(pairs)
        after = []
        if self.chance(0.7):
            ix = self.index(sc, U)
            after = [f"{U}[{ix}] = {self.sexpr(sc, 1)}"]
        if self.chance(0.6):
            return [f"{U}, {V} = {V}, {U}"] + after
        if "tmp" in self.kinds and self.kinds["tmp"] != ("a", sc.arrays[U].shape):
            return [f"{U}, {V} = {V}, {U}"] + after
        self.kinds["tmp"] = ("a", sc.arrays[U].shape)
        return ["tmp = " + U, f"{U} = {V}", f"{V} = tmp"] + after

    def st_buffers(self, sc, budget, ctx) -> list:
        """Two buffers updated from each other and swapped each step (a stencil)."""
        shapes = [s for s in self.local_shapes() if len(s) == 1 and s[0] >= 2]
        if not shapes:
            return []
        shape = self.pick(shapes)
        U = self.new_array_name(sc, shape)
        V = self.new_array_name(sc, shape)
        K = self.int_name(sc)
        if None in (U, V, K) or U == V:
            return []
        body_sc = sc.copy()
        body_sc.arrays[U] = Arr(shape, "local")
        body_sc.arrays[V] = Arr(shape, "local")
        body_sc.frozen += [U, V, K]
        body_sc.ints[K] = (0, 3)
        IV = self.int_name(body_sc)
        if IV is None:
            return []
        inner = body_sc.copy()
        inner.ints[IV] = (0, shape[0] - 1)
        inner.frozen.append(IV)
        m = shape[0]
        rhs = self.pick([f"0.5 * {U}[{IV}] + 0.25 * math.sin({U}[({IV} + 1) % {m}])",
                         f"{U}[{IV}] + 0.2 * ({U}[({IV} + 1) % {m}] - {U}[{IV}])",
                         f"math.tanh({U}[{IV}] + {self.sexpr(inner, 1)})"])
        init = self.aexpr(sc, shape, 1)
        init_text = init[0] if init[1] else f"{self.paren(init[0])}.copy()"
        if self.chance(0.4) and self.kinds.get("tmp", ("a", shape)) == ("a", shape):
            self.kinds["tmp"] = ("a", shape)
            swap = ["tmp = " + U, f"{U} = {V}", f"{V} = tmp"]
        else:
            swap = [f"{U}, {V} = {V}, {U}"]
        body = [f"for {IV} in range(len({U})):", f"    {V}[{IV}] = {rhs}"] + swap
        if self.chance(0.5):
            body.append(f"{U}[{self.idx1(body_sc, m, U)}] = {self.sexpr(body_sc, 1)}")
        sc.arrays[U] = Arr(shape, "local")
        sc.arrays[V] = Arr(shape, "local")
        steps = self.pick(["n", "3", "2"] if not self.in_helper else ["3", "2"])
        after = []
        if sc.assignable_floats() and self.chance(0.7):
            after = [f"{self.pick(sc.assignable_floats())} += 0.1 * np.sum({U})"]
        return [f"{U} = {init_text}", f"{V} = np.zeros_like({U})",
                f"for {K} in {self.maybe_checkpointed(f'range({steps})')}:"] + _ind(body) + after

    def maybe_checkpointed(self, rng: str) -> str:
        """``rng``, or now and then (the checkpointed stream) ``jg.checkpointed(rng, ...)``:
        a time loop whose state holds arrays (buffers, an array rebound each step), so that
        the binomial schedule's snapshot slots meet the gradient and ``hvp`` checks."""
        if self.mod.ck.random() >= 0.3:
            return rng
        self.mod.uses_jg = True
        k = self.mod.ck.choice(["1", "2", "None"] if self.in_helper else ["1", "2", "None", "n"])
        return f"jg.checkpointed({rng}, snapshots={k})"

    def range_expr(self, sc: Scope) -> tuple:
        """(text, concrete values)."""
        opts = []
        n = self.mod.n
        for name, arr in sc.arrays.items():
            s = arr.shape
            if len(s) == 1:
                m = s[0]
                L = f"len({name})"
                opts += [(f"range({L})", range(m)), (f"range(1, {L})", range(1, m)),
                         (f"range({L} - 1, -1, -1)", range(m - 1, -1, -1)),
                         (f"range(0, {L}, 2)", range(0, m, 2)),
                         (f"range({L} - 1)", range(m - 1))]
            else:
                opts += [(f"range({name}.shape[0])", range(s[0])),
                         (f"range({name}.shape[1])", range(s[1]))]
        if not self.in_helper:
            opts += [("range(n)", range(n)), ("range(1, n)", range(1, n))]
        opts += [("range(3)", range(3)), ("range(2, 5)", range(2, 5)), ("range(4)", range(4))]
        return self.pick(opts)

    def st_for(self, sc, budget, ctx) -> list:
        IV = self.int_name(sc)
        if IV is None:
            return []
        text, vals = self.range_expr(sc)
        body_sc = sc.copy()
        body_sc.ints[IV] = (min(vals), max(vals)) if len(vals) else (1, 0)
        body_sc.frozen.append(IV)
        nb = self.r.randint(1, min(5, budget - 1))
        body = self.block(body_sc, nb, Ctx(ctx.depth + 1, True, True, ctx.in_helper))
        leaves = any(ln.strip() == "break" or ln.strip().startswith("return")
                     for ln in body)
        if not leaves and self.mod.ck.random() < 0.25:  # the loop's reverse by segments
            k = self.mod.ck.choice(["1", "2", "3", "None"] + ([] if self.in_helper else ["n"]))
            text = f"jg.checkpointed({text}, snapshots={k})"
            self.mod.uses_jg = True
        return [f"for {IV} in {text}:"] + _ind(body)

    def st_for_iter(self, sc, budget, ctx) -> list:
        arrs = [a for a in sc.arrays if len(sc.arrays[a].shape) == 1]
        U = self.pick(arrs)
        V = next((v for v in ITERS if v not in sc.frozen and v not in sc.floats), None)
        if V is None:
            return []
        self.kinds[V] = "f"
        body_sc = sc.copy()
        body_sc.add_float(V)
        body_sc.frozen.append(V)
        nb = self.r.randint(1, min(4, budget - 1))
        kind = self.wpick([(3, "plain"), (2, "enum"), (1.5, "rebind")])
        if kind == "rebind" and sc.arrays[U].kind == "local" and U not in sc.frozen:
            rhs = self.pick([f"{U} * {V}", f"np.tanh({U} * {V} + 0.5)", f"{U} * (1.0 + 0.5 * {V})"])
            body = [f"{U} = {rhs}"]
            if self.chance(0.5):
                body += self.block(body_sc, 1, Ctx(ctx.depth + 1, True, True, ctx.in_helper))
            return [f"for {V} in {U}:"] + _ind(body)
        if kind == "enum":
            IV = self.int_name(sc)
            if IV is None:
                return []
            body_sc.ints[IV] = (0, sc.arrays[U].shape[0] - 1)
            body_sc.frozen.append(IV)
            body = self.block(body_sc, nb, Ctx(ctx.depth + 1, True, True, ctx.in_helper))
            return [f"for {IV}, {V} in enumerate({U}):"] + _ind(body)
        body = self.block(body_sc, nb, Ctx(ctx.depth + 1, True, True, ctx.in_helper))
        return [f"for {V} in {U}:"] + _ind(body)

    def st_iterable(self, sc, budget, ctx) -> list:
        """``for a, b in zip(u, v)``, ``for e in u.flat``, ``for i, j in np.ndindex(u.shape)``,
        ``for e in (0.5, s)``: the loop forms the front end rewrites (issue 29 item 1)."""
        form = "ndindex" if self.arrays_of(sc, ndim=2) and self.mod.it.random() < 0.5 else \
            self.mod.it.choice(["zip", "flat", "ndindex", "literal"])
        free = [v for v in ITERS if v not in sc.frozen and v not in sc.floats
                and self.kinds.get(v, "f") == "f"]
        body_sc = sc.copy()
        if form == "ndindex":
            arrs = self.arrays_of(sc, ndim=2)
            IA = self.int_name(sc)
            body_sc.frozen.append(IA)
            JA = self.int_name(body_sc) if IA else None
            if not arrs or JA is None:
                return []
            U = self.pick(arrs)
            body_sc.ints.update({IA: (0, sc.arrays[U].shape[0] - 1),
                                 JA: (0, sc.arrays[U].shape[1] - 1)})
            body_sc.frozen.append(JA)
            head, names = f"for {IA}, {JA} in np.ndindex({U}.shape):", []
        elif form == "zip":
            arrs = self.arrays_of(sc, ndim=1)
            if not arrs or len(free) < 2:
                return []
            names = free[:2]
            head = f"for {names[0]}, {names[1]} in zip({self.pick(arrs)}, {self.pick(arrs)}):"
        elif form == "flat":
            if not sc.arrays or not free:
                return []
            U = self.pick(list(sc.arrays))
            body_sc.frozen.append(U)  # (a body writing U is refused, by design)
            names, head = free[:1], f"for {free[0]} in {U}.flat:"
        else:
            if not free:
                return []
            elts = [self.pick(CONSTS) for _ in range(self.r.randint(1, 3))]
            if sc.floats and self.chance(0.5):
                elts.append(self.pick(sc.floats))
            names, head = free[:1], f"for {free[0]} in ({', '.join(elts)},):"
        for v in names:
            self.kinds[v] = "f"
            body_sc.add_float(v)
            body_sc.frozen.append(v)
        nb = self.r.randint(1, min(4, budget - 1))
        return [head] + _ind(self.block(body_sc, nb, Ctx(ctx.depth + 1, True, True,
                                                         ctx.in_helper)))

    def st_accum(self, sc, budget, ctx) -> list:
        """A per-iteration accumulator: ``h = np.zeros(m)`` in a loop body, ``h += ...`` in
        an inner loop, read after it (issue 29 item 4)."""
        shape = self.pick([s for s in self.local_shapes() if len(s) == 1] or [(3,)])
        A = self.new_array_name(sc, shape)
        IV = self.int_name(sc)
        targets = sc.assignable_floats()
        if A is None or IV is None or not targets:
            return []
        sc.arrays.pop(A, None)  # (not readable in its own update)
        text, vals = self.range_expr(sc)
        body_sc = sc.copy()
        body_sc.ints[IV] = (min(vals), max(vals)) if len(vals) else (1, 0)
        body_sc.frozen.append(IV)
        term, _ = self.aexpr(body_sc, shape, 1)
        op = self.pick(["+=", "+=", "-="])
        F = self.pick(targets)
        read = self.pick([f"np.sum({A} * {A})", f"{A}[0] * {A}[-1]", f"np.sum({A}) * 0.5"])
        sc.arrays[A] = Arr(shape, "local")
        return [f"{A} = np.zeros({shape[0]})", f"for {IV} in {text}:",
                f"    {A} {op} {self.paren(term)} * {self.satom(body_sc)}",
                f"{F} = {F} + {read}"]

    def st_selfloop(self, sc, budget, ctx) -> list:
        arr = [a for a in self.local_arrays(sc) if a not in sc.frozen]
        if arr and self.chance(0.3):
            Y = self.pick(arr)
            rule = self.pick([f"np.tanh({Y})", f"np.exp(-{Y} * {Y})", f"np.sin({Y}) * 0.9",
                              f"np.sqrt(1.0 + {Y} * {Y}) - 0.5"])
        else:
            Y = self.float_target(sc)
            if Y not in sc.floats:
                return []
            rule = self.pick([f"math.tanh({Y})", f"math.exp(-{Y} * {Y})",
                              f"math.sqrt(1.0 + {Y} * {Y})", f"math.tanh({Y}) * 1.5 + 0.1",
                              f"math.sin({Y}) + 0.5 * {Y}"])
        K = self.pick(["3", "4", "2", "n"] if not self.in_helper else ["3", "4"])
        if self.chance(0.7):
            IV = self.int_name(sc)
            if IV is None:
                return []
            rng = self.maybe_checkpointed(f"range({K})") if Y in arr else f"range({K})"
            return [f"for {IV} in {rng}:", f"    {Y} = {rule}"]
        C = self.int_name(sc, COUNTERS)
        if C is None:
            return []
        return [f"{C} = 0", f"while {C} < {K}:", f"    {Y} = {rule}", f"    {C} += 1"]

    def st_while(self, sc, budget, ctx) -> list:
        C = self.int_name(sc, COUNTERS)
        if C is None:
            return []
        K = self.r.randint(2, 5)
        top = self.chance(0.5)
        body_sc = sc.copy()
        body_sc.ints[C] = (1, K) if top else (0, K - 1)
        body_sc.frozen.append(C)
        cond = f"{C} < {K}"
        if self.chance(0.25) and sc.floats:
            cond += f" and abs({self.pick(sc.floats)}) < 5.0"
        nb = self.r.randint(1, min(4, budget - 1))
        body = self.block(body_sc, nb, Ctx(ctx.depth + 1, True, top, ctx.in_helper))
        if top:
            body = [f"{C} += 1"] + body
        else:
            if _terminal(body[-1]):
                body = body[:-1] or ["pass"]
            body = body + [f"{C} += 1"]
        return [f"{C} = 0", f"while {cond}:"] + _ind(body)

    def st_counter(self, sc, budget, ctx) -> list:
        """A counter stepped in a ``for`` loop (at its top or end, maybe under an ``if``)
        and read in its body: the adjoint steps it back (``modes/counters.py``); inside
        another loop it is reset per outer trip, as gmm's packed triangle is."""
        C = self.int_name(sc, COUNTERS)
        IV = self.int_name(sc) if C is not None else None
        if IV is None:
            return []
        K, c0, step = self.r.randint(2, 5), self.r.randint(0, 1), self.pick([1, 1, 2])
        top, under_if = self.chance(0.5), self.chance(0.25)
        body_sc = sc.copy()
        body_sc.ints[IV] = (0, K - 1)
        body_sc.ints[C] = (c0, c0 + step * K) if under_if else \
            (c0 + step, c0 + step * K) if top else (c0, c0 + step * (K - 1))
        body_sc.frozen += [C, IV]
        nb = self.r.randint(1, min(4, budget - 1))
        body = self.block(body_sc, nb, Ctx(ctx.depth + 1, True, True, ctx.in_helper))
        flat = [a for a in sc.arrays if len(sc.arrays[a].shape) == 1]
        targets = sc.assignable_floats()
        if flat and targets and not _terminal(body[-1]):  # a read at the counter
            A, F = self.pick(flat), self.pick(targets)
            read = f"{F} = {F} + {A}[{C} % {sc.arrays[A].shape[0]}] * {self.satom(body_sc)}"
            body = [read] + body if self.chance(0.5) else body + [read]
        inc = [f"if {self.cond(body_sc)}:", f"    {C} += {step}"] if under_if else \
            [f"{C} += {step}"]
        if top:
            body = inc + body
        else:
            if _terminal(body[-1]):
                body = body[:-1] or ["pass"]
            body = body + inc
        return [f"{C} = {c0}", f"for {IV} in range({K}):"] + _ind(body)

    def st_while_true(self, sc, budget, ctx) -> list:
        C = self.int_name(sc, COUNTERS)
        if C is None:
            return []
        Z = self.float_target(sc)
        init = [] if Z in sc.floats and self.chance(0.6) else [f"{Z} = {self.sexpr(sc, 1)}"]
        sc.add_float(Z)
        ZN = self.new_float_name(sc)
        D = self.new_float_name(sc)
        if len({Z, ZN, D}) < 3:
            return []
        body_sc = sc.copy()
        body_sc.add_float(ZN)
        body_sc.add_float(D)
        body_sc.ints[C] = (1, 21)
        body_sc.frozen += [C, Z, ZN, D]
        step = self.pick([f"0.5 * math.cos({Z}) + 0.3 * {self.satom(sc)}",
                          f"0.5 * math.tanh({Z} + {self.satom(sc)})",
                          f"0.5 * ({Z} + 0.6 / (1.0 + {Z} * {Z}))"])
        body = [f"{C} += 1", f"{ZN} = {step}", f"{D} = {ZN} - {Z}", f"{Z} = {ZN}"]
        # the exit test comes before anything that may ``continue``: the loop must end
        body += [f"if abs({D}) < 1e-3 or {C} > 20:", "    break"]
        if self.chance(0.5):
            extra = self.block(body_sc, 1, Ctx(ctx.depth + 1, True, True, ctx.in_helper))
            if not _terminal(extra[-1]):
                body += extra
        return init + [f"{C} = 0", "while True:"] + _ind(body)

    def st_if(self, sc, budget, ctx) -> list:
        nb = max(1, budget - 1)
        lines = [f"if {self.cond(sc)}:"]
        lines += _ind(self.block(sc.copy(), self.r.randint(1, min(4, nb)), self.sub(ctx)))
        if self.chance(0.3):
            lines += [f"elif {self.cond(sc)}:"]
            lines += _ind(self.block(sc.copy(), self.r.randint(1, min(3, nb)), self.sub(ctx)))
        if self.chance(0.6):
            lines += ["else:"]
            lines += _ind(self.block(sc.copy(), self.r.randint(1, min(3, nb)), self.sub(ctx)))
        return lines

    @staticmethod
    def sub(ctx: Ctx) -> Ctx:
        return Ctx(ctx.depth + 1, ctx.in_loop, ctx.allow_continue, ctx.in_helper)

    def st_break(self, sc, budget, ctx) -> list:
        what = "continue" if ctx.allow_continue and self.chance(0.4) else "break"
        return [f"if {self.cond(sc)}:", f"    {what}"]

    def st_early_return(self, sc, budget, ctx) -> list:
        if not sc.floats and not sc.arrays:
            return []
        self.returned = True
        return [f"if {self.cond(sc)}:", f"    return {self.return_expr(sc)}"]

    def return_expr(self, sc: Scope) -> str:
        terms = []
        fl = list(sc.floats)
        self.r.shuffle(fl)
        for f in fl[: self.r.randint(1, 4)]:
            terms.append(self.pick([f, f, f"0.5 * {f}", f"{f} * {f}"]))
        arrs = list(sc.arrays)
        self.r.shuffle(arrs)
        for a in arrs[: self.r.choice([0, 1, 1, 2])]:
            terms.append(self.pick([f"np.sum({a})", f"0.3 * np.sum({a} * {a})",
                                    f"{a}[{self.index(sc, a)}]"]))
        if not terms:
            terms = [self.sexpr(sc, 2)]
        return " + ".join(terms)

    # --- helpers -------------------------------------------------------------------------------

    def make_scalar_helper(self) -> str:
        mod = self.mod
        name = f"hs{len(mod.helpers)}"
        g = FuncGen(mod, in_helper=True)
        sc = Scope(floats=["p1", "q1"])
        g.kinds.update(p1="f", q1="f")
        body = g.block(sc, self.r.randint(1, 4), Ctx(1, False, False, True))
        if not body[-1].startswith("return "):
            body.append(f"return {g.return_expr(sc)}")
        src = "\n".join([f"def {name}(p1, q1):"] + _ind(body))
        mod.helpers.append((name, "scalar", None, src))
        return name

    def make_array_helper(self, shape: tuple) -> str:
        mod = self.mod
        k = len(mod.helpers)
        g = FuncGen(mod, in_helper=True)
        kind = self.pick(["fill", "fill", "update", "update_loop", "returns"])
        if kind == "update":
            name = f"hu{k}"
            body = [self.pick(["uu -= uu * cc", "uu += np.tanh(uu) * cc", "uu *= cc"])]
            src = "\n".join([f"def {name}(uu, cc):"] + _ind(body))
            mod.helpers.append((name, "update", shape, src))
            return name
        sc = Scope(floats=["cc"], arrays={"out": Arr(shape, "arg"), "vv": Arr(shape, "arg")})
        g.kinds.update(cc="f", out=("a", shape), vv=("a", shape))
        if kind == "update_loop":
            name = f"hu{k}"
            sc.arrays.pop("vv")
            sc.arrays = {"uu": Arr(shape, "arg")}
            g.kinds["uu"] = ("a", shape)
        else:
            name = f"h{'f' if kind == 'fill' else 'r'}{k}"
        idx = ["i0", "i1"][: len(shape)]
        body_sc = sc.copy()
        for ax, i in enumerate(idx):
            body_sc.ints[i] = (0, shape[ax] - 1)
            body_sc.frozen.append(i)
            g.kinds[i] = "i"
        tgt = "uu" if kind == "update_loop" else "out"
        ix = ", ".join(idx)
        stmts = [f"{tgt}[{ix}] {self.pick(['=', '-=', '+='])} {g.sexpr(body_sc, 2)}"]
        if self.chance(0.4):
            stmts.append(f"{tgt}[{ix}] = {g.sexpr(body_sc, 1)}")
        lines = stmts
        for ax in reversed(range(len(shape))):
            rng = f"range(len({tgt}))" if ax == 0 else f"range({tgt}.shape[{ax}])"
            lines = [f"for {idx[ax]} in {rng}:"] + _ind(lines)
        if kind == "returns":
            lines.append("return out")
        params = "uu, cc" if kind == "update_loop" else "out, vv, cc"
        src = "\n".join([f"def {name}({params}):"] + _ind(lines))
        mod.helpers.append((name, "update" if kind == "update_loop" else kind, shape, src))
        return name

    def st_array_helper(self, sc, budget, ctx) -> list:
        targets = [a for a in sc.arrays if sc.arrays[a].kind in ("local", "arg")
                   and a not in sc.frozen]
        if not targets:
            return []
        U = self.pick(targets)
        shape = sc.arrays[U].shape
        have = [h for h in self.mod.helpers if h[2] == shape and h[1] != "pair"]
        if have and (self.chance(0.7) or len(self.mod.helpers) >= self.mod.max_helpers):
            name, kind = self.pick(have)[:2]
        elif len(self.mod.helpers) < self.mod.max_helpers:
            name = self.make_array_helper(shape)
            kind = self.mod.helpers[-1][1]
        else:
            return []
        c = self.sexpr(sc, 1)
        if kind == "update":
            return [f"{name}({U}, {c})"]
        V = self.pick(self.arrays_of(sc, shape))
        if kind == "fill":
            return [f"{name}({U}, {V}, {c})"]
        # returns the array it filled: y = h(out, ...) with out not read again
        Y = self.new_array_name(sc, shape)
        if Y is None or sc.arrays.get(U, Arr((), "")).kind != "local" or Y == U:
            return [f"{name}({U}, {V}, {c})"]
        sz = self.size_text(sc, shape)
        tmpname = next((t for t in ARRAYS if t not in sc.arrays and t != Y
                        and self.kinds.get(t) in (None, ("a", shape))), None)
        if tmpname is None:
            return [f"{name}({U}, {V}, {c})"]
        self.kinds[tmpname] = ("a", shape)
        sc.arrays[Y] = Arr(shape, "local")
        return [f"{tmpname} = np.zeros({sz})", f"{Y} = {name}({tmpname}, {V}, {c})"]


def generate(seed: int, index: int, attempt: int = 0) -> Program:
    rnd = random.Random(f"jitgrad-fuzz:{seed}:{index}:{attempt}")
    if rnd.random() < 0.75:
        shape = (rnd.randint(3, 6),)
    else:
        shape = (rnd.randint(2, 4), rnd.randint(2, 4))
    n = rnd.randint(2, 4)
    wrt = rnd.choice([(0, 1), (0, 1), (0, 1), (0, 1), ("x", "a"), (1,), 1, (0,), 0, (1, 0)])
    mod = Module(rnd, shape, n)
    g = FuncGen(mod)
    sc = Scope(floats=["a"], arrays={"x": Arr(shape, "arg")}, ints={})
    g.kinds.update(a="f", x=("a", shape), n="i")
    budget = rnd.randint(4, 22)
    body = []
    if rnd.random() < 0.7:  # most programs start from a scalar accumulator
        body.append(f"s = {rnd.choice(['0.0', 'a', 'x[0]' if len(shape) == 1 else 'x[0, 0]'])}")
        sc.add_float("s")
        g.kinds["s"] = "f"
    if rnd.random() < 0.5:  # and often from a local array
        body += g.st_arr_new(sc, budget, Ctx())
    body += g.block(sc, budget, Ctx())
    if mod.long_left and not mod.long_outs and not _terminal(body[-1]):
        body += g.st_long(sc)  # the program was drawn to have one
    if mod.lists and not mod.lists_done and not _terminal(body[-1]):
        body += g.st_list(sc)  # the program was drawn to have one
    if mod.pairs and not mod.pairs_done and not _terminal(body[-1]):
        body += g.st_pairs(sc, Ctx())  # the program was drawn to have one
    last_rows = mod.rows and not _terminal(body[-1]) and mod.rw.random() < 0.6
    if last_rows:  # a last loop over rows: the adjoint's first (the rows stream)
        body += g.st_rows(sc, Ctx())
    last = body[-1]
    if not last.startswith("return "):
        if last_rows and mod.rw.random() < 0.7:  # returning floats: the loop writes dx first
            body.append("return " + " + ".join(f"{f} * {f}" for f in sc.floats))
        else:
            body.append(f"return {g.return_expr(sc)}")
    if mod.long_outs:  # the long loops' results reach the value
        body[-1] += " + 0.5 * (" + " + ".join(mod.long_outs) + ")"
    fsrc = "\n".join(["def f(x, a, n):"] + _ind(body))
    header = HEADER + ("\nimport jitgrad as jg\n" if mod.uses_jg else "") \
        + ("\nimport numba\n" if mod.uses_numba else "")
    parts = [header] + [h[3] for h in mod.helpers] + [fsrc]
    src = "\n\n\n".join(p.rstrip("\n") for p in parts) + "\n"
    src = ast.unparse(ast.parse(src))  # normalise parentheses and spacing
    src = src.replace("import numpy as np\n", "import numpy as np\n\n", 1) + "\n"
    return maybe_renamed(Program(src, shape, n, wrt, seed, index, attempt))


def maybe_renamed(prog: Program) -> Program:
    """``prog`` alpha-renamed (``rename.py``) in a fraction ``RENAMED`` of programs, drawn
    from a stream of its own; ``wrt`` names and ``params`` follow f's renaming."""
    al = random.Random(f"alpha:{prog.seed}:{prog.index}:{prog.attempt}")
    if al.random() >= RENAMED:
        return prog
    src, maps = alpha_rename(prog.source, al.randrange(2 ** 31))
    fmap = maps.get("f", {})
    ren = lambda w: fmap.get(w, w) if isinstance(w, str) else w  # noqa: E731
    wrt = tuple(ren(w) for w in prog.wrt) if isinstance(prog.wrt, tuple) else ren(prog.wrt)
    return Program(src, prog.shape, prog.n, wrt, prog.seed, prog.index, prog.attempt,
                   tuple(fmap.get(p, p) for p in prog.params), original=prog.source)


if __name__ == "__main__":
    import sys

    s = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    for i in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
        p = generate(s, i)
        print("#", p.describe())
        print(p.source)
