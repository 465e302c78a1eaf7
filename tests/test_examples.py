"""Every script in examples/ runs to completion and prints what it promises; docs build.

Each example runs in its own subprocess, as a user would run it
(``python examples/X.py``), and finishes in a few seconds.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
DOCS = REPO / "docs"


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


def test_docs_build_strict(tmp_path: Path) -> None:
    """The MkDocs site builds with no warnings (broken links, missing nav pages)."""
    pytest.importorskip("mkdocs")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                        "-d", str(tmp_path / "site")], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


# --- generated code quoted in the docs ----------------------------------------------------
#
# A block after ``<!-- source: NAME -->`` defines a function; a block after
# ``<!-- generated: NAME stage=STAGE [mode=MODE] args=EXPR -->`` must be exactly
# ``NAME.source(*(EXPR), stage=STAGE, mode=MODE)``.  When the transpiler's output changes, refresh
# the quoted code with:   python tests/test_examples.py --update-docs

_BLOCK = r"<!-- {kind}: (?P<head>[^>]*?) -->\n```python\n(?P<code>.*?)```"


def _doc_functions(text: str, where: Path) -> dict:
    sources = [m.group("code") for m in re.finditer(_BLOCK.format(kind="source"), text, re.S)]
    path = where / "doc_functions.py"
    path.write_text("import math\n\nimport numpy as np\n\nimport jitgrad as jg\n\n\n"
                    + "\n\n".join(sources))
    spec = importlib.util.spec_from_file_location(f"_doc_functions_{abs(hash(where))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


def _generated_blocks(text: str, where: Path) -> list[tuple[re.Match, str]]:
    """(match, the code jitgrad generates now) for every generated block of ``text``."""
    import numpy as np

    namespace = _doc_functions(text, where)
    out = []
    for m in re.finditer(_BLOCK.format(kind="generated"), text, re.S):
        name, stage, mode, args = re.fullmatch(r"(\w+) stage=(\w+)(?: mode=(\w+))? args=(.*)",
                                               m.group("head")).groups()
        example = eval(f"({args},)", {"np": np, "math": __import__("math")})
        out.append((m, namespace[name].source(*example, stage=stage, mode=mode or "vjp")
                    .rstrip("\n") + "\n"))
    return out


def _doc_pages() -> list[Path]:
    return [p for p in sorted(DOCS.glob("*.md")) if "<!-- generated:" in p.read_text()]


@pytest.mark.parametrize("page", _doc_pages(), ids=lambda p: p.name)
def test_docs_quote_current_generated_code(page: Path, tmp_path: Path) -> None:
    text = page.read_text()
    for m, now in _generated_blocks(text, tmp_path):
        assert m.group("code") == now, (
            f"docs/{page.name}: the code quoted after '<!-- generated: {m.group('head')} -->' "
            "is not what jitgrad generates now; run: python tests/test_examples.py --update-docs")


def update_docs() -> None:
    """Rewrite every generated block in docs/ with the code jitgrad generates now."""
    import tempfile

    for page in _doc_pages():
        text = page.read_text()
        with tempfile.TemporaryDirectory() as where:
            blocks = _generated_blocks(text, Path(where))
        for m, now in reversed(blocks):
            text = text[:m.start("code")] + now + text[m.end("code"):]
        page.write_text(text)
        print(f"updated {len(blocks)} block(s) in docs/{page.name}")


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_every_example_is_covered(name: str) -> None:
    assert f"test_{Path(name).stem}" in globals(), f"examples/{name} has no test here"


if __name__ == "__main__":
    if sys.argv[1:] == ["--update-docs"]:
        update_docs()
    else:
        sys.exit("usage: python tests/test_examples.py --update-docs")
