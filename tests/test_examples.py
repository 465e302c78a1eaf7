"""Every script in examples/ runs to completion and prints what it promises; docs build.

The code blocks of README.md and docs/*.md are tests themselves (tests/doctools.py).

Each example runs in its own subprocess, as a user would run it
(``python examples/X.py``), and finishes in a few seconds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def run_example(name: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{name} exited {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def numbers_after(word: str, text: str) -> list[float]:
    """Every number printed right after ``word`` (e.g. the loss column)."""
    return [float(m) for m in re.findall(rf"{word}\s+([-+0-9.eE]+)", text)]


def assert_decreasing(values: list[float], factor: float) -> None:
    assert len(values) >= 3, values
    assert all(b <= a * (1 + 1e-9) for a, b in zip(values, values[1:], strict=False)), values
    assert values[-1] < values[0] / factor, values


def test_quickstart() -> None:
    out = run_example("quickstart.py")
    assert "energy   = 0.700000" in out
    assert "def energy_grad" in out and "range(_n - 1, -1, -1)" in out


def test_train_mlp() -> None:
    out = run_example("train_mlp.py")
    losses = numbers_after("loss", out)
    assert len(losses) >= 3 and losses[-1] < losses[0] / 2, out


def test_lorenz_fit() -> None:
    out = run_example("lorenz_fit.py")
    assert_decreasing(numbers_after("loss", out), factor=100)
    m = re.search(r"recovered sigma=([0-9.]+) rho=([0-9.]+) beta=([0-9.]+)", out)
    assert m, out
    sigma, rho, beta = map(float, m.groups())
    assert abs(sigma - 10.0) < 0.1 and abs(rho - 28.0) < 0.1 and abs(beta - 8 / 3) < 0.05, out


def test_inverse_heat() -> None:
    out = run_example("inverse_heat.py")
    assert_decreasing(numbers_after("misfit", out), factor=100)
    m = re.search(r"recovered initial field: relative error ([0-9.]+)", out)
    assert m and float(m.group(1)) < 0.2, out


def test_numba_function() -> None:
    out = run_example("numba_function.py")
    m = re.search(r"max \|force - finite differences\| = ([0-9.e+-]+)", out)
    assert m and float(m.group(1)) < 1e-5, out
    energies = numbers_after("energy", out.split("\n", 1)[1])
    assert energies[-1] < energies[0], out
    assert "still a Numba dispatcher: CPUDispatcher" in out


def test_custom_rule() -> None:
    out = run_example("custom_rule.py")
    m = re.search(r"gradient vs finite differences: max abs err ([0-9.e+-]+)", out)
    assert m and float(m.group(1)) < 1e-6, out
    assert_decreasing(numbers_after("loss", out.split("rule :")[0]), factor=4)
    assert "rule : loss 800.0  gradient [1.]" in out
    assert "naive: loss inf  gradient [nan]" in out


def test_dask_ensemble() -> None:
    pytest.importorskip("distributed")
    out = run_example("dask_ensemble.py")
    m = re.search(r"max \|difference\| vs one process ([0-9.e+-]+)", out)
    assert m and float(m.group(1)) < 1e-8, out
    assert "100% Completed" in out, out  # Dask's progress bar
    assert_decreasing(numbers_after("loss", out), factor=100)
    m = re.search(r"recovered sigma=([0-9.]+) rho=([0-9.]+) beta=([0-9.]+)", out)
    assert m, out
    sigma, rho, beta = map(float, m.groups())
    assert abs(sigma - 10.0) < 0.1 and abs(rho - 28.0) < 0.1 and abs(beta - 8 / 3) < 0.05, out


def _recovered_oscillator(out: str) -> None:
    losses = numbers_after("loss", out)
    assert len(losses) >= 3 and losses[-1] < losses[0] / 1e4, out
    m = re.search(r"recovered k=([0-9.]+) c=([0-9.]+)", out)
    assert m and abs(float(m.group(1)) - 4.0) < 0.01 and abs(float(m.group(2)) - 0.3) < 0.01, out


def test_torch_bridge() -> None:
    pytest.importorskip("torch")
    _recovered_oscillator(run_example("torch_bridge.py"))


def test_jax_bridge() -> None:
    pytest.importorskip("jax")
    out = run_example("jax_bridge.py")
    _recovered_oscillator(out)
    assert "4.0:0.00e+00" in out, out  # the vmapped loss vanishes at the truth


def test_docs_build_strict(tmp_path: Path) -> None:
    """The MkDocs site builds with no warnings (broken links, missing nav pages)."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                        "-d", str(tmp_path / "site")], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "WARNING" not in out, out


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_every_example_is_covered(name: str) -> None:
    assert f"test_{Path(name).stem}" in globals(), f"examples/{name} has no test here"

