"""The pass list: every pass and backend step has a before/after example, and every
example holds."""

import doctest

import pytest

from jitgrad.transpiler import pipeline
from jitgrad.transpiler.backend.passes import BACKEND
from jitgrad.transpiler.pipeline import PASSES

STEPS = [*PASSES, *BACKEND]


@pytest.mark.parametrize("p", STEPS, ids=[p.name for p in STEPS])
def test_pass_example(p):
    assert ">>> print(example(" in p.doc, f"pass {p.name} has no before/after example"
    finder = doctest.DocTestFinder(recurse=False)
    globs = {"example": pipeline.example, "np": __import__("numpy")}
    tests = finder.find(p.run, p.name, globs=globs)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    for t in tests:
        runner.run(t)
    res = runner.summarize(verbose=False)
    assert res.attempted >= 1 and res.failed == 0


def test_pass_names_unique_and_stages():
    names = [p.name for p in STEPS]
    assert len(set(names)) == len(names)
    assert set(names) <= set(pipeline.STAGES)
