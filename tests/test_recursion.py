"""Recursion is refused at the recursive call; for a tail call (or ``e * f(...)``,
``f(...) + e``) the hint is the loop that replaces it, and that loop differentiates
(issue 29 item 9)."""

import inspect
import textwrap

import corpus_recursion as R
import numpy as np
import pytest
from gradcheck import check_grad, function_from_source

import jitgrad as jg
from jitgrad.transpiler.front.recursion import GENERAL

JIT = [pytest.param(True, id="jit"), pytest.param(False, id="nojit")]


def line_of(func, text: str) -> int:
    lines, first = inspect.getsourcelines(func)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


def refusal(f, args, jit) -> jg.TransformError:
    with pytest.raises(jg.TransformError) as info:
        jg.grad(f, jit=jit)(*args)
    return info.value


HINTED = [  # function, arguments, its recursive call, the loop the hint gives
    (R.shrink, (0.7, 4), "return shrink(", ["while depth != 0:",
                                            "    a, depth = np.sin(a) * 1.1, depth - 1",
                                            "return a"]),
    (R.relax, (np.array([0.3, -0.8, 0.5]), 3), "return relax(",
     ["while n > 0:", "    x, n = 0.5 * x + 0.25 * x * x, n - 1", "return np.sum(x * x)"]),
    (R.jit_shrink, (0.7, 4), "return jit_shrink(", ["while depth != 0:",
                                                    "    a, depth = np.sin(a) * 1.1, depth - 1",
                                                    "return a"]),
    (R.power, (0.7, 3), "return a * power(", ["acc = 1.0", "while n != 0:", "    acc = acc * a",
                                              "    n = n - 1", "return acc * 1.0"]),
    (R.series, (0.7, 3), "return series(", ["acc = 0.0", "while k > 0:",
                                            "    acc = acc + np.sin(k * x) / k",
                                            "    k = k - 1", "return acc + 0.0"]),
]


@pytest.mark.parametrize("jit", JIT)
@pytest.mark.parametrize("f, args, call, loop", HINTED, ids=lambda v: getattr(v, "__name__", ""))
def test_tail_recursion_hint_is_the_loop(f, args, call, loop, jit, tmp_path):
    e = refusal(f, args, jit)
    py = getattr(f, "py_func", f)
    assert e.msg == f"recursion ({py.__name__} calls itself) is not supported"
    assert (e.filename, e.lineno) == (inspect.getsourcefile(py), line_of(py, call))
    assert e.source_line.strip().startswith(call)
    assert e.hint.splitlines()[1:] == [" " * 8 + ln for ln in loop]
    # the hint, applied, differentiates to the recursion's own value and gradient
    params = ", ".join(inspect.signature(py).parameters)
    body = textwrap.indent("\n".join(loop), "    ")
    fixed = function_from_source(tmp_path, f"fixed_{py.__name__}",
                                 f"import numpy as np\n\n\ndef f({params}):\n{body}\n")
    np.testing.assert_allclose(fixed(*args), py(*args), rtol=1e-14)
    check_grad(fixed, args, jit=jit)


@pytest.mark.parametrize("jit", JIT)
def test_other_recursion_gets_the_general_hint(jit):
    e = refusal(R.calls_fib, (0.7,), jit)
    assert e.msg == "recursion (fib calls itself) is not supported"
    assert e.lineno == line_of(R.fib, "return fib(")
    site = line_of(R.calls_fib, "fib(a, 3)")
    assert e.called_from == (f"calls_fib at {R.__file__}:{site}",)
    assert e.hint == GENERAL


@pytest.mark.parametrize("jit", JIT)
def test_mutual_recursion_names_the_cycle(jit):
    e = refusal(R.mutual, (0.7,), jit)
    assert e.msg == "recursion (ping calls pong calls ping) is not supported"
    assert e.lineno == line_of(R.pong, "return ping(")
    assert e.called_from == (f"ping at {R.__file__}:{line_of(R.ping, 'return pong(')}",
                             f"mutual at {R.__file__}:{line_of(R.mutual, 'ping(x, 3)')}")
    assert e.hint == GENERAL
