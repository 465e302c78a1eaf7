"""The backend list (``jitgrad/transpiler/backend/passes.py``): checked when it is built, a
mis-ordered list fails at import, and every step is a stage ``jitgrad show`` prints."""

from __future__ import annotations

import ast
import math
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.transpiler import pipeline
from jitgrad.transpiler.backend import passes
from jitgrad.transpiler.backend.passes import BACKEND, FUSED, LIVE, TEXT, OrderError, check, step

NAMES = [p.name for p in BACKEND]


def _noop(s):
    pass


def _swapped(a: str, b: str) -> list[passes.BackendPass]:
    out = list(BACKEND)
    i, j = NAMES.index(a), NAMES.index(b)
    out[i], out[j] = out[j], out[i]
    return out


def test_the_list_in_order():
    assert NAMES == ["dead_code", "unit_seed", "dead_loops", "fuse", "dead_after_fuse",
                     "write_once", "elements", "shape_only", "moves", "workspace", "parallel",
                     "zero_skip", "ascending", "trip_memo", "tape_accessors", "outer_updates",
                     "view_updates", "bounds", "unsigned", "cached_calls",
                     "unparse"]
    assert check(BACKEND) is BACKEND
    for p in BACKEND:
        assert p.doc.strip() and p.requires <= passes.GIVEN | {
            f for q in BACKEND[:NAMES.index(p.name)] for f in q.provides}


def test_a_step_before_what_it_requires_is_refused():
    with pytest.raises(OrderError, match="'write_once' requires 'loops fused', which no "
                                         "step before it provides"):
        check(_swapped("fuse", "write_once"))


def test_a_step_after_what_invalidates_it_is_refused():
    """``fuse`` invalidates liveness: ``write_once`` right after it (without
    ``dead_after_fuse`` in between) is refused, naming the step that invalidated it."""
    steps = [p for p in BACKEND if p.name != "dead_after_fuse"]
    with pytest.raises(OrderError, match="'write_once' requires 'dead code removed', which "
                                         "'fuse' invalidates before it"):
        check(steps)
    # the workspace takes the zeroings write_once reads
    with pytest.raises(OrderError, match="'write_once' requires 'zeroings explicit', which "
                                         "'workspace' invalidates"):
        check([p for p in _swapped("write_once", "workspace") if p.name != "moves"])
    # and the zeroings the moves replace
    with pytest.raises(OrderError, match="'moves' requires 'zeroings explicit', which "
                                         "'workspace' invalidates"):
        check(_swapped("moves", "workspace"))


def test_a_tree_step_after_the_text_is_refused():
    late = [*BACKEND, step("late", _noop), step("print", _noop, [TEXT], on_text=True)]
    with pytest.raises(OrderError, match="'print' requires 'text', which 'late' "
                                         "invalidates"):
        check(late)
    with pytest.raises(OrderError, match="'tape_accessors' requires 'prange parallel', "
                                         "which no step before it provides"):
        check(_swapped("parallel", "tape_accessors"))
    with pytest.raises(OrderError, match="the backend list ends without 'text', which "
                                         "'late' invalidates"):
        check([*BACKEND, step("late", _noop)])


def test_a_recomputing_step_restores_the_fact():
    steps = [step("a", _noop, [], [LIVE, FUSED]), step("b", _noop, [], [], [LIVE]),
             step("c", _noop, [], [LIVE]), step("d", _noop, [LIVE, FUSED], [TEXT])]
    assert check(steps, given=(), wanted=[TEXT]) is steps
    with pytest.raises(OrderError, match="'d' requires 'dead code removed'"):
        check([s for s in steps if s.name != "c"], given=(), wanted=())
    with pytest.raises(OrderError, match="listed twice"):
        check([steps[0], steps[0]], given=(), wanted=())


def test_a_misordered_list_fails_at_import(monkeypatch):
    """The module itself, with two lines of its list swapped, does not import."""
    src = Path(passes.__file__).read_text()
    lines = src.splitlines(True)
    a = next(k for k, line in enumerate(lines) if line.startswith('    step("fuse"'))
    b = next(k for k, line in enumerate(lines) if line.startswith('    step("write_once"'))
    lines[a], lines[b] = lines[b], lines[a]
    name = "jitgrad.transpiler.backend._passes_misordered"
    mod = types.ModuleType(name)
    mod.__package__ = "jitgrad.transpiler.backend"
    monkeypatch.setitem(sys.modules, name, mod)
    code = compile("".join(lines), "<passes, misordered>", "exec")
    with pytest.raises(ValueError, match="'write_once' requires 'loops fused'"):
        exec(code, mod.__dict__)


def test_every_step_is_a_stage():
    assert set(NAMES) <= set(pipeline.STAGES)
    assert not set(NAMES) & {p.name for p in pipeline.PASSES}


def total(x, k):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(k * x[i])
    return s


def test_source_of_each_step():
    """``f.source(stage=NAME)``: the variant after that step; the last step's is the
    compiled function's source, and each parses."""
    d = jg.differentiate(total, wrt=(0, 1), jit=False)
    args = (np.linspace(0.1, 0.5, 4), 0.3)
    shown = {n: d.source(*args, stage=n) for n in NAMES}
    assert shown["unparse"] == shown["tape_accessors"] == d.source(*args)
    assert "_tape" in shown["fuse"] and "_tape" not in shown["dead_after_fuse"]
    assert "iterations over i are independent" in shown["fuse"]
    assert shown["dead_code"].startswith("def total_gradonly_")
    assert "ds = 1.0" in shown["unit_seed"] and "ds = _dret" in shown["dead_code"]
    for text in shown.values():
        ast.parse(text)


def test_each_step_shown_by_the_command_line(capsys):
    """``jitgrad show FILE:FUNC --stage NAME`` prints each step's function (in-process)."""
    from jitgrad import cli

    target = f"{Path(__file__).resolve()}:total"
    for n in NAMES:
        assert cli.main(["show", target, "--no-jit", "--no-color", "--wrt", "x,k",
                         "--stage", n, "--args", "np.ones(3), 0.5"]) == 0, n
        out = capsys.readouterr().out
        assert f"stage {n}" in out and "def total_grad" in out, n


def test_each_step_tested_on_its_own():
    """Every step of the list is run alone on hand-written IR in ``test_backend_steps.py``
    (``irtext.after(NAME, ...)``) and has a before/after example (``tests/test_passes.py``)."""
    text = (Path(__file__).parent / "test_backend_steps.py").read_text()
    for p in BACKEND:
        assert f'after("{p.name}"' in text, f"no test runs the step {p.name!r} on its own"
        assert ">>> print(example(" in p.doc, f"the step {p.name!r} has no example"


def test_last_step_is_the_compiled_source_under_jit():
    """Under ``jit=True`` with float64 arguments the steps run as when the function is
    compiled (``cached_calls`` included) even where no element loop is made: the last
    step's function is the compiled one."""
    d = jg.differentiate(total, wrt=(0, 1), jit=True)
    args = (np.linspace(0.1, 0.5, 4), 0.3)
    assert "np_empty_like(x)" in d.source(*args)
    assert d.source(*args, stage="unparse") == d.source(*args)
    assert "np_empty_like(x)" in d.source(stage="cached_calls")  # (the last specialisation)


def test_backend_stage_walks_every_step():
    """``stage="backend"``: each step in turn, what it changed in the variant it shows."""
    d = jg.differentiate(total, wrt=(0, 1), jit=False)
    text = d.source(np.linspace(0.1, 0.5, 4), 0.3, stage="backend")
    heads = [line for line in text.splitlines() if line.startswith("=== ")]
    assert [h.split()[1] for h in heads if "before" not in h] == NAMES
    assert "=== grad before fuse ===" in heads
    assert "-    ds = _dret\n+    ds = 1.0" in text  # (unit_seed, in grad_only)
    assert "+    dx = np.empty_like(x)" in text  # (write_once)
    parts = re.split(r"^=== (.+) ===\n", text, flags=re.M)[1:]
    changed = {head.split()[0] for head, body in zip(parts[::2], parts[1::2], strict=True)
               if "before" not in head and body != "(no change)\n"}
    assert changed == {"dead_code", "unit_seed", "fuse", "dead_after_fuse", "write_once"}


def test_the_docs_table_lists_the_steps_in_order():
    """docs/how-it-works.md's table of the backend has one row per step, in the list's
    order (its listing and worked example are checked as the docs are run)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "how-it-works.md").read_text()
    rows = re.findall(r"^\| \*\*(\w+)\*\* \|", page, flags=re.M)
    assert rows == NAMES
