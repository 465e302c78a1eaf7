"""One specialisation cache per differentiated function (``jitgrad/specialise.py``): the
reverse, forward, second-order and CUDA entries live in it under distinct keys, clearing
drops them all, and what is made again gives the same values and gradients."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgrad as jg
from jitgrad.specialise import Specialisations

X = np.linspace(-0.8, 1.1, 5)
V = np.array([0.3, -1.0, 0.5, 2.0, -0.4])
A = 0.7


def f(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i]) * a + x[i] * x[i] * a * a
    return s


def _grad(x, a):
    """Closed form of f's gradient w.r.t. x."""
    return np.cos(x) * a + 2.0 * x * a * a


def _everything(d) -> tuple:
    """The gradient, jvp and hvp of ``d`` at (X, A), checked against central differences
    and the closed form."""
    g = d.grad(X, A)
    np.testing.assert_allclose(g, numeric_grad(f, (X, A), 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g, _grad(X, A), rtol=1e-12)
    value, t = d.jvp((X, A), V)
    assert value == pytest.approx(f(X, A), rel=1e-12)
    assert t == pytest.approx(float(_grad(X, A) @ V), rel=1e-12)
    h = jg.hvp(d, (X, A), V, jit=d.jit)
    eps = 1e-6
    fd = (d.grad(X + eps * V, A) - d.grad(X - eps * V, A)) / (2 * eps)
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, (-np.sin(X) * A + 2.0 * A * A) * V, rtol=1e-12)
    return g, t, h


def _modes(d) -> list[str]:
    return [k[0] for k in d._specs._entries]


@pytest.mark.parametrize("jit", [True, False])
def test_every_mode_in_one_cache(jit):
    d = jg.differentiate(f, wrt=0, jit=jit)
    _everything(d)
    modes = _modes(d)
    assert sorted(set(modes)) == ["gradient tree", "hvp", "jvp", "vjp"], modes
    assert modes.count("vjp") == 1 and modes.count("jvp") == 1 and modes.count("hvp") == 1
    (d2,) = d._specs.entries("hvp")  # hvp's: the gradient code's forward mode, its own
    assert sorted(_modes(d2)) == ["jvp", "tangent"]  # cache (an entry of d's)
    assert len(set(d._specs._entries)) == len(d._specs) == len(d._specs.entries())
    # no mode hangs a cache of its own on the function
    assert not [k for k in vars(d) if k.endswith("_cache") or k.startswith("_jvp")]
    info = d.cache_info()
    assert sorted(s["mode"] for s in info["specialisations"]) == ["jvp", "vjp"]


@pytest.mark.parametrize("jit", [True, False])
def test_clear_drops_every_mode_and_recompiles_the_same(jit):
    d = jg.differentiate(f, wrt=0, jit=jit)
    before = _everything(d)
    old = set(map(id, d._specs.entries()))
    d._specs.clear()
    assert len(d._specs) == 0 and d._specs.entries() == []
    assert d.cache_info()["specialisations"] == []
    after = _everything(d)  # made again: the same values, gradients and Hessian products
    for b, a in zip(before, after, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    assert not old & set(map(id, d._specs.entries("vjp", "jvp", "hvp")))
    assert sorted(_modes(d)) == ["gradient tree", "hvp", "jvp", "vjp"]


def test_release_workspaces_reaches_every_mode():
    d = jg.differentiate(f, wrt=0, jit=True)
    g, t, h = _everything(d)
    d.release_workspaces()
    np.testing.assert_allclose(_everything(d)[2], h, rtol=1e-13)


def test_entries_keyed_by_mode_and_rules_version(monkeypatch):
    """Each mode has its own key; a registered rule makes every entry stale (kept, not
    returned): the next call makes its own, as the prepared unit is made again."""
    from jitgrad import rules

    specs = Specialisations()
    made = []
    first = specs.entry("jvp", ("k",), lambda: made.append(1) or "a")
    assert specs.entry("jvp", ("k",), lambda: made.append(2) or "b") == first == "a"
    assert specs.entry("vjp", ("k",), lambda: "c") == "c"  # another mode: its own key
    assert made == [1] and len(specs) == 2
    assert specs.by_signature("vjp", ("sig",), lambda: "s") == "s"
    assert specs.by_signature("vjp", ("sig",), lambda: "again") == "s"
    monkeypatch.setattr(rules, "version", lambda: -5)
    assert specs.get("jvp", ("k",)) is None
    assert specs.entry("jvp", ("k",), lambda: "new") == "new"
    assert specs.by_signature("vjp", ("sig",), lambda: "again") == "again"
    assert len(specs) == 3 and sorted(specs.entries("jvp")) == ["a", "new"]


def test_derived_entries_follow_what_they_were_made_from():
    specs = Specialisations()
    base = object()
    assert specs.derived("tangent", base, (), lambda: "t") == "t"
    assert specs.derived("tangent", base, (), lambda: "other") == "t"
    assert specs.derived("tangent", base, (True,), lambda: "v") == "v"
    assert specs.find("tangent", base) == "t" and specs.find("tangent", object()) is None
    specs.clear()
    assert specs.find("tangent", base) is None and len(specs) == 0


def test_concurrent_modes_make_each_entry_once():
    d = jg.differentiate(f, wrt=0, jit=False)
    barrier = threading.Barrier(4)
    errors = []

    def work():
        barrier.wait()
        try:
            _everything(d)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [_modes(d).count(m) for m in ("vjp", "jvp", "hvp")] == [1, 1, 1]


def test_cuda_specialisations_in_the_same_cache():
    import corpus_cuda as C

    d = jg.differentiate(C.mixed.func, wrt=C.mixed.wrt, target="cuda")
    src = d.source(0.4, -0.7)
    assert sorted(_modes(d)) == ["cuda", "cuda build"]
    d._specs.clear()
    assert len(d._specs) == 0
    assert d.source(0.4, -0.7) == src
    assert sorted(_modes(d)) == ["cuda", "cuda build"]
