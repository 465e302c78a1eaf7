"""The ``jitgrad`` command line: ``show`` and ``check``, driven as a user would.

Most cases run ``python -m jitgrad`` in a subprocess (each pays the Numba import,
about a second); the per-stage and colour cases call ``cli.main`` in-process.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jitgrad import cli

REPO = Path(__file__).resolve().parents[1]

TARGETS = textwrap.dedent('''
    """Small targets for the CLI tests."""
    import math

    import numpy as np

    import jitgrad as jg


    def energy(x, k):
        e = 0.0
        for i in range(x.shape[0] - 1):
            d = x[i + 1] - x[i] - 1.0
            e += k * d * d
        return e


    def lorenz(p, T, k):
        x, y, z = 1.0, 1.0, 1.0
        for t in jg.checkpointed(range(T), snapshots=k):
            dx = p[0] * (y - x)
            dy = x * (p[1] - z) - y
            dz = x * y - p[2] * z
            x = x + 0.002 * dx
            y = y + 0.002 * dy
            z = z + 0.002 * dz
        return z


    @jg.differentiate(wrt=(0, 1))
    def decorated(x, a):
        s = 0.0
        for i in range(x.shape[0]):
            s += math.sin(a * x[i])
        return s


    def square(x):
        return x * x


    @jg.grad_rule(square)
    def _square_wrong(x):
        y = x * x
        def back(dy):
            return (dy * 3.0 * x,)  # deliberately wrong: should be 2 x
        return y, back


    def uses_wrong_rule(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += square(x[i])
        return s


    def unsupported(x):
        try:
            y = x * 2.0
        except ValueError:
            y = 0.0
        return y


    def make_args():
        return (np.linspace(0.0, 1.0, 4), 0.7)
''')


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cli")
    (d / "targets.py").write_text(TARGETS)
    return d


def run(workdir: Path, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="")
    return subprocess.run([sys.executable, "-m", "jitgrad", *argv], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=120)


# --- show ---------------------------------------------------------------------------------


def test_show_all_with_wrt(workdir: Path) -> None:
    r = run(workdir, "show", "targets.py:energy", "--wrt", "0,1")
    assert r.returncode == 0, r.stderr
    assert "def energy_grad" in r.stdout
    # the iterations share only the sum e: each one's adjoint runs right after it
    assert "iterations over i are independent" in r.stdout, r.stdout
    assert "dk" in r.stdout and "dx" in r.stdout
    assert "\x1b[" not in r.stdout  # not a terminal: no colour codes
    compile(r.stdout, "<show>", "exec")  # the output is valid Python


def test_show_adjoint_of_decorated_object(workdir: Path) -> None:
    # a @jg.differentiate object: its own wrt (0, 1) is used
    r = run(workdir, "show", "targets.py:decorated", "--stage", "adjoint")
    assert r.returncode == 0, r.stderr
    assert "def decorated_adjoint(_dret)" in r.stdout
    assert "da" in r.stdout and "dx" in r.stdout


def test_show_module_form_with_args(workdir: Path) -> None:
    r = run(workdir, "show", "targets:energy", "--stage", "forward",
            "--args", "(np.ones(3), 2.0)")
    assert r.returncode == 0, r.stderr
    assert "def energy_forward(x, k)" in r.stdout
    assert "example arguments" in r.stdout


def test_show_schedule_in_process(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    """``--schedule T``: each checkpointed loop's snapshots, recompute factor and tape."""
    code = cli.main(["show", f"{workdir / 'targets.py'}:lorenz", "--no-color",
                     "--args", "(np.array([10.0, 28.0, 2.5]), 100, 32)", "--schedule", "1e6"])
    out = capsys.readouterr().out
    assert code == 0
    assert "# schedule for 1000000 steps" in out and "snapshots=k = 32" in out
    assert "recompute factor 6.50" in out and "x (float64), y (float64), z (float64): 24 B" in out
    assert "tape: one step's at a time, 3 float64 (24 B)" in out
    code = cli.main(["show", f"{workdir / 'targets.py'}:lorenz", "--no-color",
                     "--schedule", "1000"])
    out = capsys.readouterr().out
    assert "snapshots=k: not known here (give --args), the default shown" in out
    assert "1000 steps, 44 snapshots" in out
    with pytest.raises(SystemExit):
        cli.main(["show", f"{workdir / 'targets.py'}:lorenz", "--schedule", "-3"])


@pytest.mark.parametrize("stage,marker", [("normalized", "def energy(x, k)"),
                                          ("forward", "def energy_forward(x, k)"),
                                          ("adjoint", "def energy_adjoint(_dret)"),
                                          ("all", "def energy_grad"),
                                          ("dead_code", "def energy_gradonly"),
                                          ("fuse", "iterations over i are independent")])
def test_show_each_stage_in_process(workdir: Path, stage: str, marker: str,
                                    capsys: pytest.CaptureFixture) -> None:
    code = cli.main(["show", f"{workdir / 'targets.py'}:energy", "--wrt", "x,k",
                     "--stage", stage])
    out = capsys.readouterr().out
    assert code == 0
    assert marker in out
    if stage in ("adjoint", "all"):
        assert "dk" in out


def test_show_colour_on_terminal(workdir: Path, capsys: pytest.CaptureFixture,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pygments")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    target = f"{workdir / 'targets.py'}:energy"
    assert cli.main(["show", target]) == 0
    assert "\x1b[" in capsys.readouterr().out
    assert cli.main(["show", target, "--no-color"]) == 0
    assert "\x1b[" not in capsys.readouterr().out


# --- check --------------------------------------------------------------------------------


def test_check_pass(workdir: Path) -> None:
    r = run(workdir, "check", "targets.py:energy", "--wrt", "0,1",
            "--args", "(np.array([0.0, 0.9, 2.2, 2.8]), 2.0)")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any("0 x" in ln and "(4,)" in ln and "PASS" in ln for ln in lines), r.stdout
    assert any("1 k" in ln and "()" in ln and "PASS" in ln for ln in lines), r.stdout
    assert "PASS: all 2 gradients match" in r.stdout


def test_check_args_from_no_jit(workdir: Path) -> None:
    r = run(workdir, "check", "targets.py:decorated", "--args-from", "targets.py:make_args",
            "--no-jit", "--rtol", "1e-6", "--atol", "1e-7")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(no-jit)" in r.stdout and "PASS: all 2 gradients match" in r.stdout


def test_check_fail_with_wrong_rule(workdir: Path) -> None:
    r = run(workdir, "check", "targets.py:uses_wrong_rule", "--args", "np.array([1.0, 2.0])")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL" in r.stdout
    assert "x[1]: jitgrad 6 vs finite differences 4" in r.stdout  # worst element, x[1] = 2
    assert r.stderr == ""


# --- errors: exit 2, one message, no traceback ------------------------------------------------


@pytest.mark.parametrize("argv,message", [
    (["show", "missing.py:energy"], "no such file: missing.py"),
    (["show", "targets.py:nothere"], "has no function 'nothere'"),
    (["check", "targets.py:unsupported", "--args", "1.0"], "try/except is not supported"),
    (["check", "targets.py:energy", "--args", "(np.ones(3), "], "--args"),
], ids=["missing-file", "missing-function", "transform-error", "bad-args"])
def test_errors_exit_2(workdir: Path, argv: list[str], message: str) -> None:
    r = run(workdir, *argv)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout == ""
    if "unsupported" in argv[1]:  # TransformError: file, line, the source line and a hint
        assert "targets.py:" in r.stderr and "try:" in r.stderr and "hint:" in r.stderr


def test_traceback_flag(workdir: Path) -> None:
    r = run(workdir, "check", "targets.py:unsupported", "--args", "1.0", "--traceback")
    assert r.returncode == 2
    assert "Traceback" in r.stderr and "TransformError" in r.stderr


def test_usage_errors_in_process(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    target = f"{workdir / 'targets.py'}:energy"
    assert cli.main([]) == 2  # no command: help on stderr
    assert cli.main(["show", "no_colon_here"]) == 2
    assert cli.main(["check", target]) == 2  # no example arguments
    assert cli.main(["check", target, "--args", "(np.ones(3), 1.0, 2.0)"]) == 2
    assert cli.main(["show", target, "--wrt", "7"]) == 2
    err = capsys.readouterr().err
    assert "check needs example arguments" in err
    assert "takes 2 (x, k)" in err
    assert "--wrt 7" in err


def test_parse_wrt() -> None:
    assert cli.parse_wrt("0") == 0
    assert cli.parse_wrt("x") == "x"
    assert cli.parse_wrt("0,2") == (0, 2)
    assert cli.parse_wrt("x, k") == ("x", "k")
    assert cli.parse_wrt("1,") == (1,)


@pytest.mark.skipif(shutil.which("jitgrad") is None, reason="console script not installed")
def test_console_script(workdir: Path) -> None:
    r = subprocess.run(["jitgrad", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("jitgrad ")


def test_version_is_the_package_version() -> None:
    """``jitgrad --version`` prints the version pyproject takes from ``jitgrad.__version__``."""
    import tomllib

    import jitgrad

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml")
                            .read_text())
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "jitgrad.__version__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main(["--version"])
    assert out.getvalue().strip() == f"jitgrad {jitgrad.__version__}"
