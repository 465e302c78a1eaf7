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
    from doctools import save_rules

    restore = save_rules()
    yield
    restore()
