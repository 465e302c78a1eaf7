import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(params=[True, False], ids=["jit", "nojit"])
def jit(request):
    return request.param


@pytest.fixture
def scratch_rules():
    """Rules registered in the test are gone afterwards (other tests, and the worker
    processes they start, see the registry as it was)."""
    from jitgrad.rules import primitives as P

    tables = (P._RECORDS, P._BY_METHOD, P._BY_ATTR)
    saved = [dict(t) for t in tables]
    fields = {id(r): dict(vars(r)) for r in P._RECORDS.values()}
    yield
    for t, s in zip(tables, saved, strict=True):
        t.clear()
        t.update(s)
    for r in P._RECORDS.values():
        vars(r).update(fields[id(r)])
    P.bump()
