import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(params=[True, False], ids=["jit", "nojit"])
def jit(request):
    return request.param
