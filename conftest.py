"""Pytest configuration for the whole checkout: the docs' code blocks are tests (Sybil).

Every ```python block of README.md and docs/*.md runs, page by page in order, in one
namespace per page (a page reads like a notebook); a block after ``<!-- skip: next -->``
is an excerpt and does not run.  Blocks that quote generated code or command output are
compared with what jitgrad prints today (tests/doctools.py).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "tests"))

import pytest  # noqa: E402
from doctools import doc_sybil  # noqa: E402

pytest_collect_file = doc_sybil().pytest()


def pytest_addoption(parser, pluginmanager) -> None:
    """Accept the ``-n``/``--dist`` of pyproject's addopts when pytest-xdist is absent or
    disabled (``pytest -p no:xdist``): the suite then runs in one process."""
    if pluginmanager.hasplugin("xdist"):
        return
    group = parser.getgroup("xdist", "stand-ins for pytest-xdist's options (not installed)")
    group._addoption("-n", "--numprocesses", dest="xdist_stub_numprocesses", default=None,
                    help="ignored: pytest-xdist is not active")
    group.addoption("--dist", dest="xdist_stub_dist", default="no",
                    help="ignored: pytest-xdist is not active")


#: test modules whose tests are handed to the xdist workers one by one: each test compiles
#: or starts its own (a fuzz chunk, an example script), so nothing is compiled twice, and
#: as one unit they would end the run on one worker while the other waits
SPREAD = {"tests/test_fuzz.py", "tests/test_examples.py"}

#: modules that check the same corpus functions' gradients under ``jit=True`` (through
#: ``gradcheck.shared_diff``): one group, so each is compiled once, on one worker
SHARED = {f"tests/{m}.py": "corpus" for m in ("test_loops", "test_straightline",
                                              "test_numpy_transpiled", "test_primal")}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items) -> None:
    """Keep each page's examples on one xdist worker, in order (``--dist loadgroup``), and
    each test module's tests too (as ``--dist loadfile``): what a module compiles (its
    fixtures, its functions' gradients, which ``jg.grad`` shares within a process) is then
    compiled once, not once on each worker (``SPREAD``: modules left to spread;
    ``SHARED``: modules grouped together)."""
    for item in items:
        if type(item).__name__ == "SybilItem":
            item.add_marker(pytest.mark.xdist_group(str(item.path.name)))
            continue
        module = item.nodeid.split("::", 1)[0]
        if module not in SPREAD and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(SHARED.get(module, module)))
