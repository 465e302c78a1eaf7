"""The backend's passes find what the reverse pass made by its marks (``notes.ZEROING``) and
facts by the primitive table, not by spelling: a function written with ``import numpy as
onp`` gets the same optimised code (written-once gradients, workspace zeroings, shape
stand-ins, gather form) as with ``import numpy as np``, text for text but the alias, and
the same value and gradient."""

from __future__ import annotations

import inspect
import re
import textwrap
import warnings

import corpus_loops
import corpus_soundness
import numpy as np
import pytest
import test_numpy_transpiled
from gradcheck import check_grad, function_from_source

import jitgrad as jg

#: corpus functions whose code goes through those passes (golden: empty_like, ws_zeros_like,
#: "only its shape is read later", the gather form's edges)
CASES = [(corpus_loops, "arr_write_local"), (corpus_loops, "arr_matvec_loop"),
         (corpus_soundness, "rows_updated_through_views"), (test_numpy_transpiled, "softmax_ce")]


def _case(mod, fname):
    return next((f, make, wrt) for f, make, wrt in mod.CASES if f.__name__ == fname)


def _aliased(tmp_path, f, alias: str, np_is: str = ""):
    """``f`` written in a module of its own that imports numpy as ``alias`` (and binds ``np``
    to ``np_is`` where given)."""
    src = re.sub(r"\bnp\.", f"{alias}.", textwrap.dedent(inspect.getsource(f)))
    head = f"import math\nimport numpy as {alias}\nimport jitgrad as jg\n"
    if np_is:
        head += f"np = {np_is!r}\n"
    return function_from_source(tmp_path, f"alias_{alias}{'_np' if np_is else ''}_"
                                f"{f.__name__}", head + "\n\n" + src, f.__name__)


def _source(f, args, wrt) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return jg.grad(f, wrt=wrt, jit=False).source(*args)


def _without_lines(src: str) -> str:
    return re.sub(r"# line \d+:", "# line:", src)


@pytest.mark.parametrize("mod, fname", CASES, ids=[c[1] for c in CASES])
def test_numpy_alias_gets_the_same_code(tmp_path, mod, fname):
    f, make, wrt = _case(mod, fname)
    g = _aliased(tmp_path, f, "onp")
    plain, aliased = _source(f, make(), wrt), _source(g, make(), wrt)
    assert "onp." in aliased or "onp" not in inspect.getsource(g)
    assert _without_lines(re.sub(r"\bonp\b", "np", aliased)) == _without_lines(plain)


@pytest.mark.parametrize("mod, fname", CASES[:2], ids=[c[1] for c in CASES[:2]])
def test_numpy_alias_when_np_names_something_else(tmp_path, mod, fname):
    """The user's own ``np`` (not numpy): generated code reaches numpy as ``_np``, and the
    passes still apply."""
    f, make, wrt = _case(mod, fname)
    g = _aliased(tmp_path, f, "onp", np_is="not numpy")
    plain, aliased = _source(f, make(), wrt), _source(g, make(), wrt)
    assert "_np." in aliased
    assert _without_lines(re.sub(r"\bonp\b|\b_np\d*\b", "np", aliased)) == _without_lines(plain)


@pytest.mark.parametrize("jit", [False, True])
def test_numpy_alias_value_and_gradient(tmp_path, jit):
    f, make, wrt = _case(corpus_loops, "arr_write_local")
    g = _aliased(tmp_path, f, "onp")
    args = make()
    check_grad(g, args, wrt=wrt, jit=jit)
    value, grad = jg.value_and_grad(g, wrt=wrt, jit=jit)(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    np.testing.assert_allclose(grad, jg.grad(f, wrt=wrt, jit=False)(*args), rtol=1e-12)
