"""The on-disk cache key covers every kind of dependency of the generated code: each is
changed between two processes and the second must transform again and give the new,
correct value and gradient (closed forms), with ``jit=True`` and ``jit=False``.

Every case lives in its own module, and a change keeps every line where it was, so no
case's key changes for a reason other than the dependency under test."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import jitgrad as jg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
X0 = 1.5

#: another module the cases read (helpers and a constant); ``{A}``/``{B}`` change
OTHER = '''
K = {A}


def oh(a):
    return a * a * {A}


def ok(a):
    return a * a * {B}
'''

HEAD = "import numba\nimport numpy as np\n\nimport jitgrad as jg\nimport other_helpers\n" \
       "from other_helpers import oh\n\n"

PRIM = "@numba.njit\ndef prim(a):\n    return a * a\n\n\ndef fn(x):\n    return prim(x) + x\n"
RULE = """
@jg.grad_rule(prim)
def _rule(a):
    y = {forward}

    def back(dy):
        return ({pullback},)

    return y, back
"""


def _rule(forward: str = "prim(a)", pullback: str = "dy * {A} * a") -> str:
    return RULE.format(forward=forward, pullback=pullback)


#: name -> (module body with ``{A}``, (A of process 1, A of process 2), closed forms of the
#: value and the gradient at x as functions of (A, x))
CASES = {
    "function": ("def fn(x):\n    return x * x * {A}\n",
                 ("2.0", "3.0"), lambda a, x: a * x * x, lambda a, x: 2 * a * x),
    "helper": ("def h(a):\n    return a * a * {A}\n\n\ndef fn(x):\n    return h(x) + x\n",
               ("2.0", "3.0"), lambda a, x: a * x * x + x, lambda a, x: 2 * a * x + 1),
    "njit_helper": ("@numba.njit\ndef h(a):\n    return a * a * {A}\n\n\n"
                    "def fn(x):\n    return h(x) + x\n",
                    ("2.0", "3.0"), lambda a, x: a * x * x + x, lambda a, x: 2 * a * x + 1),
    "other_from": ("def fn(x):\n    return oh(x) + x\n",
                   ("2.0", "3.0"), lambda a, x: a * x * x + x, lambda a, x: 2 * a * x + 1),
    "other_attr": ("def fn(x):\n    return other_helpers.ok(x) + x\n",
                   ("2.0", "3.0"), lambda b, x: b * x * x + x, lambda b, x: 2 * b * x + 1),
    "other_const": ("def fn(x):\n    return other_helpers.K * x * x\n",
                    ("2.0", "3.0"), lambda a, x: a * x * x, lambda a, x: 2 * a * x),
    "constant": ("C = {A}\n\n\ndef fn(x):\n    return C * x * x\n",
                 ("2.0", "5.0"), lambda a, x: a * x * x, lambda a, x: 2 * a * x),
    "array": ("W = np.array([1.0, 2.0, {A}])\n\n\ndef fn(x):\n    s = 0.0\n"
              "    for i in range(3):\n        s += W[i] * x * x\n    return s\n",
              ("3.0", "7.0"), lambda a, x: (3 + a) * x * x, lambda a, x: 2 * (3 + a) * x),
    "closure": ("def make(c):\n    def fn(x):\n        return c * x * x\n    return fn\n\n\n"
                "fn = make({A})\n",
                ("2.0", "7.0"), lambda a, x: a * x * x, lambda a, x: 2 * a * x),
    # rules: the pullback deliberately differs from the primitive's derivative (2 a), so
    # the gradient says which rule ran; a plain primitive's rule computes the value itself
    # (jit=True code cannot call a plain Python function)
    "rule_plain": (PRIM.replace("@numba.njit\n", "") + _rule(forward="a * a"),
                   ("3.0", "5.0"), lambda a, x: x * x + x, lambda a, x: a * x + 1),
    "rule_njit": (PRIM + _rule(),
                  ("3.0", "5.0"), lambda a, x: x * x + x, lambda a, x: a * x + 1),
    "rule_library": ("def fn(x):\n    return np.sinh(x) + x\n\n\n@jg.grad_rule(np.sinh)\n"
                     "def _rule(a):\n    y = np.sinh(a)\n\n    def back(dy):\n"
                     "        return (dy * {A} * np.cosh(a),)\n\n    return y, back\n",
                     ("3.0", "5.0"), lambda a, x: np.sinh(x) + x,
                     lambda a, x: a * np.cosh(x) + 1),
    "rule_constant": ("S = {A}\n\n\n" + PRIM + _rule(pullback="dy * S * a"),
                      ("3.0", "5.0"), lambda a, x: x * x + x, lambda a, x: a * x + 1),
    "rule_helper": ("@numba.njit\ndef slope(a):\n    return {A} * a\n\n\n" + PRIM
                    + _rule(pullback="dy * slope(a)"),
                    ("3.0", "7.0"), lambda a, x: x * x + x, lambda a, x: a * x + 1),
    # a rule made by a factory reads its closure (not the module's k)
    "rule_closure": (PRIM + "\n\nk = 1.0\n\n\ndef register(k):"
                     + _rule(pullback="dy * k * a").replace("\n", "\n    ")
                     + "\n\nregister({A})\n",
                     ("3.0", "5.0"), lambda a, x: x * x + x, lambda a, x: a * x + 1),
    # a rule (gradient 3 a) that the second process does not register (2 a, the derivative)
    "rule_removed_plain": (PRIM.replace("@numba.njit\n", "") + "\n\nif {A}:"
                           + _rule(forward="a * a", pullback="dy * 3.0 * a")
                           .replace("\n", "\n    "),
                           ("True", "False"), lambda a, x: x * x + x,
                           lambda a, x: (3 if a == "True" else 2) * x + 1),
    "rule_removed_njit": (PRIM + "\n\nif {A}:" + _rule(pullback="dy * 3.0 * a")
                          .replace("\n", "\n    "),
                          ("True", "False"), lambda a, x: x * x + x,
                          lambda a, x: (3 if a == "True" else 2) * x + 1),
    # the user's numba.njit options: NumPy's error model gives inf at 0, Python's raises
    "options": ("@numba.njit(error_model={A})\ndef fn(x):\n    return 1.0 / x + x\n",
                ("'numpy'", "'python'"), lambda a, x: 1 / x + x, lambda a, x: 1 - 1 / x ** 2),
    "unchanged": ("def fn(x):\n    return x * x * x\n",
                  ("1.0", "1.0"), lambda a, x: x ** 3, lambda a, x: 3 * x * x),
}

SCRIPT = '''
import json, sys
sys.path.insert(0, {folder!r})
import importlib
import jitgrad as jg
out = {{}}
for name in {names!r}:
    fn = importlib.import_module("case_" + name).fn
    for jit in (True, False):
        d = jg.differentiate(fn, cache=True, jit=jit)
        res = out[name + ("/jit" if jit else "/nojit")] = {{}}
        try:
            v, g = d.value_and_grad({x0!r})
            res.update(value=float(v), grad=float(g), **d.cache_info())
            if name == "options" and jit:
                try:
                    res["at0"] = repr(d.value_and_grad(0.0))
                except ZeroDivisionError:
                    res["at0"] = "ZeroDivisionError"
        except Exception as e:
            res["error"] = repr(e)
print(json.dumps(out))
'''


def _write(folder, version: int) -> None:
    (folder / "other_helpers.py").write_text(OTHER.format(A=("2.0", "3.0")[version],
                                                          B=("2.0", "3.0")[version]))
    for name, (body, values, _, _) in CASES.items():
        text = HEAD + body.format(A=values[version])
        (folder / f"case_{name}.py").write_text(text)
    (folder / "run.py").write_text(SCRIPT.format(folder=str(folder), names=list(CASES), x0=X0))


def _run(folder) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, str(folder / "run.py")], capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check(results: dict, version: int, expect: dict[str, tuple[int, int]]) -> list[str]:
    """What is wrong in one process's results: values and gradients against the closed
    forms, and (hits, misses) per case (``expect``, by case name)."""
    bad = []
    for name, (_, values, value, grad) in CASES.items():
        a = values[version]
        a = float(a) if a[0].isdigit() else a
        for mode in ("jit", "nojit"):
            res = results[f"{name}/{mode}"]
            if "error" in res:
                bad.append(f"{name}/{mode}: {res['error']}")
                continue
            want = (value(a, X0), grad(a, X0))
            if res["value"] != pytest.approx(want[0], rel=1e-12) or \
                    res["grad"] != pytest.approx(want[1], rel=1e-12):
                bad.append(f"{name}/{mode}: value, gradient {res['value']}, {res['grad']} "
                           f"instead of {want[0]}, {want[1]}")
            got = (res["hits"], res["misses"])
            if got != expect[name]:
                bad.append(f"{name}/{mode}: (hits, misses) {got} instead of {expect[name]}")
    return bad


@pytest.mark.slow
def test_every_dependency_changed_between_processes_is_recomputed(tmp_path):
    _write(tmp_path, 0)
    first = _run(tmp_path)
    bad = _check(first, 0, {n: (0, 1) for n in CASES})
    assert bad == [], "\n".join(bad)  # every case is cacheable
    assert first["options/jit"]["at0"].startswith("(inf")

    _write(tmp_path, 1)
    second = _run(tmp_path)
    expect = {n: (0, 1) for n in CASES}
    expect["unchanged"] = (1, 0)  # no other change reaches it
    bad = _check(second, 1, expect)
    assert bad == [], "\n".join(bad)
    assert second["options/jit"]["at0"] == "ZeroDivisionError"

    third = _run(tmp_path)  # nothing changed: every key is stable across processes
    bad = _check(third, 1, {n: (1, 0) for n in CASES})
    assert bad == [], "\n".join(bad)


INPROC = '''
import numba


@numba.njit
def prim(a):
    return a * a


def fn(x):
    return prim(x) + x


def r3(a):
    y = prim(a)

    def back(dy):
        return (dy * 3.0 * a,)

    return y, back


def r5(a):
    y = prim(a)

    def back(dy):
        return (dy * 5.0 * a,)

    return y, back
'''


def test_a_rule_registered_after_the_first_call_is_used(tmp_path, monkeypatch, jit,
                                                        scratch_rules):
    (tmp_path / "cachekeys_inproc.py").write_text(INPROC)
    monkeypatch.syspath_prepend(str(tmp_path))
    import cachekeys_inproc as m

    try:
        d = jg.differentiate(m.fn, cache=True, jit=jit)
        got = [d.value_and_grad(X0)]  # no rule: the derivative, 2 x + 1
        jg.grad_rule(m.prim)(m.r3)
        got.append(d.value_and_grad(X0))
        jg.grad_rule(m.prim)(m.r5)  # a new rule for the same primitive replaces it
        got.append(d.value_and_grad(X0))
        got.append(jg.differentiate(m.fn, cache=True, jit=jit).value_and_grad(X0))
        assert d.cache_info()["misses"] == 3
        value = X0 * X0 + X0
        for (v, g), k in zip(got, (2.0, 3.0, 5.0, 5.0), strict=True):
            assert (v, g) == (pytest.approx(value, rel=1e-14), pytest.approx(k * X0 + 1.0,
                                                                               rel=1e-14))
    finally:
        sys.modules.pop("cachekeys_inproc", None)
