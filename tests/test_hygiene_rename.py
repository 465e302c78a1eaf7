"""Hygiene as a property: every corpus function and a set of fuzz programs, with every
local (and sometimes the numpy/math aliases) renamed to names jitgrad itself generates or
uses in templates (``tests/fuzz/rename.py``'s POOL: ``_dret``, ``_t3``, ``_tape_x``, the
binomial driver's ``N K J M A``...), must give the same value and gradient as the
original (and be refused where the original is).  Uncompiled for everything; compiled for
a few cases (slow)."""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import sys
import warnings

import numpy as np
import pytest
from fuzz.check import reseed, sample
from fuzz.gen import generate
from fuzz.rename import alpha_rename

import jitgrad as jg

_COUNTER = itertools.count()


def _corpus_cases() -> list[tuple[str, object, object, object]]:
    """(id, function, args factory, wrt) of every gradient corpus with CASES."""
    import corpus_forward
    import corpus_loops
    import corpus_soundness
    import test_numpy_transpiled
    import test_rule_coverage
    import test_straightline

    out = []
    for mod in (corpus_loops, corpus_soundness, corpus_forward, test_numpy_transpiled,
                test_rule_coverage):
        for k, (f, make, wrt) in enumerate(mod.CASES):
            out.append((f"{mod.__name__}:{k}:{f.__name__}", f, make, wrt))
    for k, (f, args) in enumerate(test_straightline.SCALAR_CASES):
        out.append((f"straight:{k}:{f.__name__}", f, (lambda a=args: a), (0, 1)))
    return out


CASES = _corpus_cases()


def _load(source: str, folder, stem: str):
    """``source`` imported as a module from a real file (jitgrad reads sources)."""
    name = f"hygren_{stem}_{next(_COUNTER)}"
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _copy(args: tuple) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _outcome(f, args: tuple, wrt, jit: bool):
    """(value, gradients) of jitgrad on ``f``, or the class of the error it raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = jg.value_and_grad(f, wrt=wrt, jit=jit)
            reseed(numba_too=jit)  # a program that draws draws the same numbers each time
            return g(*_copy(args))
    except (jg.TransformError, jg.RuleError) as exc:
        return type(exc)


def _same(got, want, what: str) -> None:
    if isinstance(want, type) or isinstance(got, type):
        assert got is want, f"{what}: renamed gives {got!r}, original {want!r}"
        return
    np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-12,
                               err_msg=f"{what}: value")
    g1 = got[1] if isinstance(want[1], tuple) else (got[1],)
    g0 = want[1] if isinstance(want[1], tuple) else (want[1],)
    assert len(g1) == len(g0), what
    for k, (a, b) in enumerate(zip(g1, g0, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12,
                                   err_msg=f"{what}: gradient {k}")


def _renamed_case(f, seed: int, folder):
    """``f`` from its module renamed with ``seed``, and that module's mapping for it."""
    src = inspect.getsource(sys.modules[f.__module__])
    new, maps = alpha_rename(src, seed)
    mod = _load(new, folder, f.__module__.replace(".", "_"))
    return getattr(mod, f.__name__), maps.get(f.__name__, {})


def _check_case(case, seeds, folder, jit: bool) -> None:
    key, f, make, wrt = case
    args = tuple(make())
    want = _outcome(f, args, wrt, jit)
    for seed in seeds:
        g, _ = _renamed_case(f, seed, folder)
        _same(_outcome(g, args, wrt, jit), want, f"{key} renamed with seed {seed}")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_corpus_renamed(case, tmp_path):
    """Each corpus case, its module renamed with two seeds (which seeds: by case, so the
    whole run covers many draws of the pool)."""
    k = CASES.index(case)
    _check_case(case, (2 * k, 2 * k + 1), tmp_path, jit=False)


FUZZ_SEED = 4242
FUZZ = list(range(40))


def _fuzz_outcome(mod, prog, mapping: dict[str, str], jit: bool):
    items = prog.wrt if isinstance(prog.wrt, tuple) else (prog.wrt,)
    wrt = tuple(mapping.get(w, w) if isinstance(w, str) else w for w in items)
    wrt = wrt if isinstance(prog.wrt, tuple) else wrt[0]
    return _outcome(mod.f, sample(prog, 0), wrt, jit)


@pytest.mark.parametrize("i", FUZZ)
def test_fuzz_program_renamed(i, tmp_path):
    """Fuzz programs (wrt may name parameters: renamed with them)."""
    prog = generate(FUZZ_SEED, i)
    orig = _load(prog.source, tmp_path, "fuzz")
    try:
        orig.f(*sample(prog, 0))
    except Exception:
        pytest.skip("the program fails at its sample point")
    want = _fuzz_outcome(orig, prog, {}, jit=False)
    for seed in (3 * i, 3 * i + 1, 3 * i + 2):
        new, maps = alpha_rename(prog.source, seed)
        mod = _load(new, tmp_path, "fuzz")
        got = _fuzz_outcome(mod, prog, maps.get("f", {}), jit=False)
        _same(got, want, f"fuzz {FUZZ_SEED}:{i} renamed with seed {seed}")


#: compiled: a few cases of loops, checkpointed loops, rules and whole-array code
_COMPILED = [c for c in CASES if c[1].__name__ in {
    "combo_rosenbrock", "for_break_data", "while_newton", "arr_cumulative",
    "combo_max_tracking"}]


@pytest.mark.slow
@pytest.mark.parametrize("case", _COMPILED, ids=[c[0] for c in _COMPILED])
def test_corpus_renamed_compiled(case, tmp_path):
    k = CASES.index(case)
    _check_case(case, (2 * k,), tmp_path, jit=True)
