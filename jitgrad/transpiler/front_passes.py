"""The front end's passes: ``PREPARE`` (run once per function, whatever the argument
kinds) and the kind-dependent ones that open ``SPECIALISE`` (``kinds`` .. ``prange``; the
list itself is in ``pipeline.py``).  Each wraps the module that does the work
(``front/``, ``analysis/``) and shows its output with a before/after example in its
docstring (``example``, run by ``tests/test_passes.py``)."""

from __future__ import annotations

import ast

from .analysis.analyse import analyse
from .analysis.effects import first_draw
from .analysis.kinds import Kind, infer
from .analysis.regions import distinct_guards
from .backend.prange import loop_verdicts, refuse_parallel_draws, refuse_races
from .front.aux import flatten_aux
from .front.desugar import loops, rotations, single_exit
from .front.fence import fence
from .front.inline import fold_param_binds, inline
from .front.jam import jam
from .front.last_taken import last_taken
from .front.normalize import Normalizer, inplace_updates
from .front.numba_kernels import refuse_elementwise_arrays
from .front.parse import parse_function
from .front.small_arrays import scalarise
from .front.split import split_helpers
from .front.tuples import flatten_params
from .front.tuples import refuse_whole as refuse_whole_tuples
from .front.tuples import split as split_tuples
from .front.value_lists import refuse_list_entries, value_lists
from .front.versions import unshadowed_builtins, version_names
from .front.webs import split_webs
from .naming import Namer, is_generated, names_in
from .nodes import clone, walk_stmts
from .notes import DRAW
from .unit import Pass, Unit, show_body

# Each docstring's example is ``example(PASS, SOURCE)``: the unit after that pass.


def parse_(u: Unit) -> None:
    """Read the source, resolve free names (beniget), refuse unsupported syntax (fence).

    >>> print(example("parse", '''
    ... def f(x, y):
    ...     "doc"
    ...     return x * y + 1.0
    ... '''))
    def f(x, y):
        return x * y + 1.0
    """
    if u.parsed is None:  # (else parsed and fenced already: ``prepare``'s ``parsed``)
        u.parsed = parse_function(u.func)
        fence(u.parsed)
    adopt(u)


def adopt(u: Unit) -> None:
    """The unit's namer, parameters and body from its parsed function (``parse_``, and
    ``prepare_tree`` for generated code given as its tree)."""
    tree = u.parsed.tree
    if u.parsed.fenced_env is None:  # (``Parsed.again`` starts another unit from it)
        u.parsed.fenced_env = dict(u.parsed.env)
    u.namer = Namer(names_in(tree), u.parsed.free)
    u.parsed.origin = u.namer.origin  # messages name the user's variables, not generated ones
    u.env = u.parsed.env
    u.params = [a.arg for a in tree.args.args]
    body = clone(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    u.body, u.params, u.renamed = unshadowed_builtins(body, u.params, u.namer)


def single_exit_(u: Unit) -> None:
    """One exit: early returns become a flag and a held value; the returns go to the end.

    >>> print(example("single_exit", '''
    ... def f(x):
    ...     if x > 0.0:
    ...         return x * 2.0
    ...     return -x
    ... '''))
    def f(x):
        if x > 0.0:
            _ret = x * 2.0
        else:
            _ret = -x
        return _ret
    """
    if u.aux:
        flatten_aux(u.body)
    u.body, u.returns = single_exit(u.parsed, u.body, u.namer)


def inline_(u: Unit) -> None:
    """Calls of the user's own helper functions are replaced by their bodies (a jitgrad
    gradient called here, by its generated gradient code: ``with_nested``).

    >>> print(example("inline", '''
    ... def f(x):
    ...     return _sq(x) + 1.0
    ... ''', helpers='''
    ... def _sq(a):
    ...     b = a * a
    ...     return b
    ... '''))
    def f(x):
        b1 = x * x
        return b1 + 1.0
    """
    ret = ast.Return(value=ast.Tuple(elts=u.returns, ctx=ast.Load()))
    if u.prepared_with is PREPARE:
        u.splits = split_helpers(u.parsed, u.body + [ret])
    body, u.nested = inline(u.parsed, u.body + [ret], u.namer, u.sites,
                            u.splits if u.split else None)
    u.returns = list(body.pop().value.elts)  # helper calls in the returned values too
    u.body = body


def tuples_(u: Unit) -> None:
    """Tuple arguments become one parameter per entry, and local tuples that are only
    unpacked, indexed with constants or returned one variable per entry
    (``front/tuples.py``).

    >>> print(example("tuples", '''
    ... def f(x, v):
    ...     state = (x, v)
    ...     a, b = state
    ...     return a * b + state[1]
    ... '''))
    def f(x, v):
        state_0, state_1 = (x, v)
        a, b = (state_0, state_1)
        return a * b + state_1
    """
    tuples = u.tuples or {}
    if tuples:
        u.namer.reserve(n for v in tuples.values() for n in v[1])
        u.params, u.body = flatten_params(u.params, u.body, tuples, u.parsed.tree)
    u.body, u.returns = split_tuples(u.body, u.returns, u.params, u.namer, tuples)
    refuse_whole_tuples(u.body, u.returns, u.params, tuples, u.parsed)


def lists_(u: Unit) -> None:
    """Lists of numbers appended once per trip of one loop and read after it become
    preallocated arrays (``front/value_lists.py``).

    >>> print(example("lists", '''
    ... def f(x, q):
    ...     s = 0.0
    ...     xs = [s]
    ...     for k in range(len(x)):
    ...         s = s + q * (x[k] - s)
    ...         xs.append(s)
    ...     return np.sum(np.array(xs))
    ... ''', args=(np.ones(3), 0.5)))
    def f(x, q):
        s = 0.0
        _xs_entry = s
        xs = np.zeros(len(x) + 1)
        xs[0] = _xs_entry
        for k in range(len(x)):
            s = s + q * (x[k] - s)
            xs[k + 1] = s
        return np.sum(xs.copy())
    """
    if u.kernel is None:  # (a CUDA kernel allocates no arrays)
        u.body = value_lists(u.body, u.returns, u.env, u.namer)


def loops_(u: Unit) -> None:
    """Loops in one shape: ``for`` over ``range`` with a counted index, ``while`` flags.

    >>> print(example("loops", '''
    ... def f(x):
    ...     s = 0.0
    ...     for v in x:
    ...         s += v
    ...     return s
    ... '''))
    def f(x):
        s = 0.0
        for _i in range(len(x)):
            v = x[_i]
            s += v
        return s
    """
    u.body = loops(u.parsed, u.body, u.env, u.namer, u.returns)


def last_taken_(u: Unit) -> None:
    """A loop whose last taken branch decides its result (a running maximum) finds that
    iteration on copies, then assigns once after it: no tape of every test
    (``front/last_taken.py``).

    >>> print(example("last_taken", '''
    ... def f(x):
    ...     m = x[0]
    ...     for j in range(1, x.shape[0]):
    ...         if x[j] > m:
    ...             m = x[j]
    ...     return m
    ... '''))
    def f(x):
        m = x[0]
        _m = m
        _hit = False
        _j = 0
        for j in range(1, x.shape[0]):
            if x[j] > _m:
                _m = x[j]
                _hit = True
                _j = j
        if _hit:
            m = x[_j]
        return m
    """
    u.body = last_taken(u.body, u.env, u.namer, u.params)


def normalize_(u: Unit) -> None:
    """One operation per statement, on names and constants (three-address form).

    >>> print(example("normalize", '''
    ... def f(x, y):
    ...     return x * y + math.sin(x)
    ... '''))
    def f(x, y):
        _t2 = x * y
        _t3 = math.sin(x)
        _t = _t2 + _t3
        return _t
    """
    norm = Normalizer(u.parsed, u.env, u.namer)
    body = rotations(norm.block(u.body), u.returns)
    atoms = []
    for r in u.returns:
        if isinstance(r, (ast.Constant, ast.Name)):
            atoms.append(r)
        else:
            atoms.append(norm.atom(r, body))
    u.body, u.returns = body, atoms
    for s in walk_stmts(body):  # (one operation per statement: a draw is its own)
        if not hasattr(s, "body") and first_draw([s], u.env) is not None:
            DRAW.set(s, True)


def versions_(u: Unit) -> None:
    """A name rebound at the top level gets a new name per value (``x``, ``x_1``...).

    >>> print(example("versions", '''
    ... def f(x):
    ...     y = x * x
    ...     y = y * x
    ...     return y
    ... '''))
    def f(x):
        y = x * x
        y_1 = y * x
        return y_1
    """
    u.body, u.returns = version_names(u.body, u.returns, u.params, u.namer)


def webs_(u: Unit) -> None:
    """A name two loops use for unrelated values gets one name per value (``d``, ``d_1``).

    >>> print(example("webs", '''
    ... def f(x, a):
    ...     s = 0.0
    ...     for i in range(3):
    ...         d = x * a
    ...         s = s + np.sum(d)
    ...     for j in range(2):
    ...         d = x * s
    ...         s = s + np.sum(d)
    ...     return s
    ... '''))
    def f(x, a):
        s = 0.0
        for i in range(3):
            d = x * a
            _t = np.sum(d)
            s = s + _t
        for j in range(2):
            d_1 = x * s
            _t2 = np.sum(d_1)
            s = s + _t2
        return s
    """
    if not u.parsed.filename.startswith("<jitgrad:"):  # (second order's input is
        # jitgrad's own gradient code, whose names its conventions tie together)
        split_webs(u.body, u.returns, u.params, u.namer)


def kinds_(u: Unit) -> None:
    """The kind (scalar or array, ndim, int/float/bool) of every name, from the arguments'.

    >>> print(example("kinds", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         s = s + x[i]
    ...     return s
    ... ''', args=(np.ones(3), 3)))
    # kinds: i int, n int, s float, x float 1-d array
    def f(x, n):
        s = 0.0
        for i in range(n):
            _t = x[i]
            s = s + _t
        return s
    """
    u.kinds = infer(u.body, u.env, u.arg_kinds)
    refuse_elementwise_arrays(u.body, u.kinds, u.parsed)
    refuse_list_entries(u.body, u.kinds, u.parsed)
    u.body = fold_param_binds(u.body, u.kinds)
    u.body = inplace_updates(u.body, u.kinds, u.env, u.namer)


def small_arrays_(u: Unit) -> None:
    """Fixed-size arrays made in the body (``np.array`` of scalars, ``np.zeros(3)``, their
    elementwise arithmetic) become one scalar per element, where ``front/small_arrays.py``
    proves it safe: their forward and adjoint are scalar code.

    >>> print(example("small_arrays", '''
    ... def f(p, y0, n):
    ...     y = y0.copy()
    ...     for t in range(n):
    ...         k = np.array([y[1], -p * y[0]])
    ...         y = y + 0.1 * k
    ...     return np.sum(y * y)
    ... ''', args=(2.0, np.ones(2), 3)))
    def f(p, y0, n):
        y = y0.copy()
        _t8 = y.shape[0] != 2
        if _t8:
            raise ValueError("jitgrad keeps 'y' (line 2) as 2 scalars: it must have 2 elements")
        y_0 = y[0]
        y_1 = y[1]
        for t in range(n):
            _t = y_1
            _t3 = -p
            _t4 = y_0
            _t2 = _t3 * _t4
            k_0 = np.float64(_t)
            k_1 = np.float64(_t2)
            _t5_0 = 0.1 * k_0
            _t5_1 = 0.1 * k_1
            y_0 = y_0 + _t5_0
            y_1 = y_1 + _t5_1
        _t7_0 = y_0 * y_0
        _t7_1 = y_1 * y_1
        _t6 = _t7_0 + _t7_1
        return _t6
    """
    body = scalarise(u.body, u.returns, u.params, u.kinds, u.env, u.namer, u.arg_kinds)
    if body is not u.body:
        u.body = body
        u.kinds = infer(u.body, u.env, u.arg_kinds)


def jam_(u: Unit) -> None:
    """Unroll-and-jam: four outer iterations of a loop nest share one inner loop (four
    independent chains there to overlap), where ``front/jam.py`` proves the reordering
    changes nothing; the posts keep their order, so values are bit-identical.

    >>> print(example("jam", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         r = 1.0
    ...         for j in range(3):
    ...             r = r * x[j] + i
    ...         s += r
    ...     return s
    ... ''', args=(np.ones(3), 9)))
    def f(x, n):
        s = 0.0
        _jq = n // 4
        ...
        _js = n - _jr
        for i in range(_js):
            ...
        for _jk in range(_jq):
            _jo = _jk * 4
            i_1 = _js + _jo
            i_2 = i_1 + 1
            ...
            r_4 = 1.0
            for j_1 in range(3):
                _t2_1 = x[j_1]
                _t_1 = r_1 * _t2_1
                r_1 = _t_1 + i_1
                _t2_2 = x[j_1]
                ...
                r_4 = _t_4 + i_4
            s = s + r_1
            s = s + r_2
            s = s + r_3
            s = s + r_4
        return s
    """
    if u.kernel is None and not u.parsed.filename.startswith("<jitgrad:"):
        body = jam(u.body, u.returns, u.kinds, u.env, u.namer)  # (not second order's input)
        if body is not u.body:
            u.body = body
            u.kinds = infer(u.body, u.env, u.arg_kinds)


def show_kinds(u: Unit) -> str:
    """The body, headed by each user-visible name's kind."""
    names = sorted(n for n in u.kinds if not is_generated(n))
    head = "# kinds: " + ", ".join(f"{n} {_kind_text(u.kinds[n])}" for n in names)
    return head + "\n" + show_body(u)


def _kind_text(k: Kind) -> str:
    """``float``, ``int``, ``float 2-d array``: a kind as ``show`` names it."""
    cls = {"b": "bool", "i": "int", "f": "float", "c": "complex", "t": "tuple"}.get(k.cls, "?")
    if not k.is_array:
        return cls
    return f"{cls} {'?' if k.ndim is None else k.ndim}-d array"


def analyse_(u: Unit) -> None:
    """Activity, how each adjoint is held (buffer, local, view), positions, aliases.

    >>> print(example("analyse", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         s = s + x[i] * x[i]
    ...     return s
    ... ''', args=(np.ones(3), 3)))
    # active: s, x; adjoints: s buffer, x buffer
    def f(x, n):
        s = 0.0
        for i in range(n):
            _t2 = x[i]
            _t3 = x[i]
            _t = _t2 * _t3
            s = s + _t
        return s
    """
    if u.kernel is None:  # (numba.cuda compiles an assert away unless debugging)
        u.body = distinct_guards(u.body, u.kinds, u.params) + u.body
    u.analysis = analyse(u.body, u.env, u.kinds, u.params, u.wrt, u.returns, u.parsed)


def show_analysis(u: Unit) -> str:
    """The body, headed by the user-visible active names and how their adjoints are held."""
    an = u.analysis
    act = sorted(n for n in an.active if not is_generated(n))
    modes = ", ".join(f"{n} {an.modes[n]}" for n in act if n in an.modes)
    return f"# active: {', '.join(act)}; adjoints: {modes}\n" + show_body(u)


def prange_(u: Unit) -> None:
    """Under ``parallel=True``, a prange loop whose iterations race in the primal (an array
    written at another iteration's index, a value carried between iterations) is refused;
    the others are kept parallel in both sweeps where that is safe (see ``lower``).

    >>> print(example("prange", '''
    ... def f(x, k):
    ...     y = np.zeros(x.shape[0])
    ...     for i in prange(1, x.shape[0]):
    ...         y[i] = k * x[i - 1]
    ...     return np.sum(y)
    ... ''', args=(np.ones(3), 0.5), parallel=True))
    # prange loop over i: iterations independent
    def f(x, k):
        y = np.zeros(x.shape[0])
        _n = x.shape[0]
        for i in range(1, _n):
            _t2 = x[i - 1]
            _t = k * _t2
            y[i] = _t
        _t3 = np.sum(y)
        return _t3
    """
    if u.parallel:
        refuse_races(u)
        refuse_parallel_draws(u)


def show_prange(u: Unit) -> str:
    """The body, headed by what the check found of each prange loop."""
    head = "".join(f"# prange loop over {i}: {v}\n" for i, v in loop_verdicts(u))
    return head + show_body(u)



PREPARE: list[Pass] = [
    Pass("parse", parse_),
    Pass("single_exit", single_exit_),
    Pass("inline", inline_),
    Pass("tuples", tuples_),
    Pass("lists", lists_),
    Pass("loops", loops_),
    Pass("last_taken", last_taken_),
    Pass("normalize", normalize_),
    Pass("versions", versions_),
    Pass("webs", webs_),
]

#: the passes that open every specialisation (argument kinds known), reverse and forward
#: mode alike: the kinds, then the rewrites that need them
SPECIALISE_FRONT: list[Pass] = [
    Pass("kinds", kinds_, show_kinds),
    Pass("small_arrays", small_arrays_),
    Pass("jam", jam_),
]
