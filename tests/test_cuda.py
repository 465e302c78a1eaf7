"""The CUDA target without a GPU: the simulator against finite differences (in a
subprocess: ``NUMBA_ENABLE_CUDASIM`` must be set before numba is imported), the generated
source (atomics exactly where a read is shared), every generated kernel and device
function compiled to PTX, and the refusals."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import jitgrad as jg

HERE = Path(__file__).parent
REPO = HERE.parent

import corpus_cuda as C  # noqa: E402
import corpus_cuda_bad as B  # noqa: E402

KERNELS = {name: (k, make, cfg) for name, k, make, cfg in C.CASES}
DEVICE = {name: (f, point) for name, f, point in C.DEVICE_CASES}


# --- the simulator ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def simulated():
    """Every corpus case run once under the simulator: name -> result."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, str(HERE / "cuda_sim.py")], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            res = json.loads(line)
            out[res["name"]] = res
    return out


@pytest.mark.parametrize("name", [*KERNELS, *DEVICE, "device_arrays", "device_float32"])
def test_simulator_matches_finite_differences(simulated, name):
    res = simulated[name]
    assert "error" not in res, res.get("error")
    assert res["err"] <= res["tol"] * max(1.0, res["scale"]), res
    assert res["unchanged"], "the user's arrays were written"
    assert res["repeat"], "two vjp calls disagree"
    assert res["dtypes"], "array gradients must keep the input's dtype"
    assert res["scalars"], "scalar gradients must be Python floats"


# --- the generated source -------------------------------------------------------------------


def _source(name):
    k, make, _ = KERNELS[name]
    return k.source(*make())


def test_atomics_exactly_where_a_read_is_shared():
    src = _source("stencil")  # x read at i and i + 1: shared; k a scalar
    assert "cuda.atomic.add(dx, i + 1," in src and "cuda.atomic.add(dx, i," in src
    assert "cuda.atomic.add(dk_sum, 0, dk)" in src
    assert src.count("cuda.atomic.add(dk_sum") == 1
    src = _source("private")  # x read only at i: plain +=
    assert "dx[i] +=" in src and "atomic" not in src
    src = _source("gather")  # x read through idx[i]: atomics
    assert "cuda.atomic.add(dx, idx[i]," in src
    src = _source("matvec")  # a[i, t]: thread i's row, private; v[t]: shared
    assert "da[i, t] +=" in src and "cuda.atomic.add(dv, t," in src
    assert "cuda.atomic.add(da" not in src
    src = _source("heat")  # 2-D: neighbours are shared
    assert "cuda.atomic.add(du, (i - 1, j)," in src or "cuda.atomic.add(du, (i - 1, j)" in src


def test_stencil_adjoint_kernel_text():
    src = _source("stencil")
    assert src.splitlines()[0] == "def stencil_adjoint(x, k, out, dx, dk_sum, dout):"
    assert "    i = cuda.grid(1)" in src
    assert "math.cos(_t7)" in src or "math.cos(" in src


@pytest.mark.parametrize("name", [*KERNELS, *DEVICE])
def test_device_code_has_no_numpy_and_no_allocation(name):
    if name in KERNELS:
        src = _source(name)
    else:
        f, point = DEVICE[name]
        src = f.source(*point)
    src = "\n".join(ln for ln in src.splitlines() if not ln.strip().startswith("#"))
    for banned in ("np.", "numpy", "zeros", "empty", ".copy(", "tape_reserve", "append(",
                   "_dret" if name in KERNELS else "np."):
        assert banned not in src, (banned, src)


def test_loop_tape_is_a_local_array_sized_by_the_host():
    k, make, _ = KERNELS["relax"]
    x, kk, steps, out = make()
    src = k.source(x, kk, steps, out)
    assert f"cuda.local.array({steps}, numba.float64)" in src
    src = k.source(x, kk, 9, out)
    assert "cuda.local.array(9, numba.float64)" in src


def test_nested_loop_tape_holds_every_trip():
    k, make, _ = KERNELS["nested"]
    src = k.source(*make())  # 3 x 4 trips
    assert "cuda.local.array(12, numba.float64)" in src, src
    assert "_tape_need" not in src


def test_checked_tapes_grow_after_an_overflow(simulated):
    assert simulated["per_thread_trips"]["regrown"], "the 40-trip thread overflowed nothing"
    assert not simulated["relax"]["regrown"]
    k, make, _ = KERNELS["while_loop"]
    src = k.source(*make())
    assert "cuda.local.array(16, numba.float64)" in src
    assert "if _tape_v_1n < 16:" in src or "< 16:" in src
    assert "cuda.atomic.max(_tape_need, 0," in src
    assert "_tape_v_1n if _tape_v_1n < 16 else 16 - 1]" in src  # pops stay in bounds


def test_device_function_signature_and_tape():
    src = C.looped.source(0.3, 0.8)
    assert src.splitlines()[0] == "def looped_device_grad(a, b, _dret):"
    assert "cuda.local.array(6, numba.float64)" in src
    assert "return (" in src


# --- PTX, without a GPU -----------------------------------------------------------------


def _nvvm_or_skip():
    try:
        from numba.cuda.cudadrv.nvvm import NVVM

        NVVM()
    except Exception as e:  # no toolkit: nothing to compile with
        pytest.skip(f"NVVM (the CUDA toolkit) not found: {e}")


@pytest.mark.parametrize("name", [*KERNELS, *DEVICE])
def test_generated_code_compiles_to_ptx(name):
    _nvvm_or_skip()
    if name in KERNELS:
        k, make, _ = KERNELS[name]
        ptx = k.ptx(*make(), cc=(9, 0))
        src = k.source(*make())
        atomics = src.count("cuda.atomic.add")
        assert (atomics > 0) == ("atom.global.add" in ptx or "red.global.add" in ptx)
    else:
        f, point = DEVICE[name]
        ptx = f.ptx(*point, cc=(9, 0))
    assert ".version" in ptx and ".target sm_90" in ptx


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize("fn, wrt, make, fragment", B.BAD, ids=[b[0].__name__ for b in B.BAD])
def test_unsupported_cuda_code_is_refused(fn, wrt, make, fragment):
    d = jg.differentiate(fn, wrt=wrt, target="cuda")
    with pytest.raises(jg.TransformError) as e:
        d.source(*make())
    msg = str(e.value)
    assert fragment in msg, msg
    assert "corpus_cuda_bad.py:" in msg and "hint:" in msg, msg


def test_cpu_target_refuses_a_plain_kernel_at_once():
    d = jg.differentiate(B.barrier, wrt=0)
    with pytest.raises(jg.TransformError, match="target=\"cuda\""):
        d.grad(np.ones(4), np.zeros(4))


def test_cuda_target_choices():
    with pytest.raises(ValueError, match="target must be"):
        jg.differentiate(C.mixed.func, target="tpu")
    with pytest.raises(ValueError, match="target='cuda'"):
        jg.grad(C.mixed.func, target="cuda")


def test_cotangents_are_checked():
    k, make, cfg = KERNELS["stencil"]
    x, kk, out = make()
    with pytest.raises(ValueError, match="writes only 'out'"):
        k._launch_args((x, kk, out), {"nope": out})
    with pytest.raises(ValueError, match="shape"):
        k._launch_args((x, kk, out), {"out": np.zeros(3)})


def test_cuda_pass_examples():
    import doctest

    from jitgrad.transpiler import cuda_pipeline as P

    for p in P.CUDA_PREPARE + P.CUDA_SPECIALISE:
        if ">>>" not in p.doc or p.run.__module__ != P.__name__:
            continue
        test = doctest.DocTestParser().get_doctest(p.doc, {"example_cuda": P.example_cuda},
                                                   p.name, None, 0)
        runner = doctest.DocTestRunner()
        runner.run(test)
        assert runner.failures == 0, p.name


def test_an_output_passed_as_an_input_too_is_refused():
    k, make, cfg = KERNELS["private"]
    x, y, out = make()
    with pytest.raises(ValueError, match="same array"):
        k._launch_args((x, out, out), None)


def test_benchmark_runs_in_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "cuda.py"), "--scale", "tiny",
                        "--repeats", "1"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "jitgrad/hand" in r.stdout and "heat 2-D" in r.stdout, r.stdout


def test_benchmark_hand_kernels_compile_to_ptx():
    _nvvm_or_skip()
    import importlib.util

    import numba

    spec = importlib.util.spec_from_file_location("jitgrad_bench_cuda",
                                                  REPO / "benchmarks" / "cuda.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    f64, a1, a2 = numba.float64, numba.float64[:], numba.float64[:, :]
    from numba import cuda

    for k, sig in ((bench.stencil_hand, (a1, f64, a1, a1, a1)),
                   (bench.relax_hand, (a1, f64, numba.int64, a1, a1, a1)),
                   (bench.heat_hand, (a2, f64, a2, a2, a1))):
        ptx, _ = cuda.compile_ptx(k.py_func, sig, cc=(9, 0))
        assert ".target sm_90" in ptx


def _run_simulated(args: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          timeout=600, cwd=REPO)


def test_docs_page_runs_in_the_simulator():
    """docs/cuda.md, every block in order (Sybil, as for the other pages), its quoted
    adjoint kernel compared with today's."""
    r = _run_simulated([str(HERE / "doctools.py"), "--run", "docs/cuda.md"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "docs/cuda.md: every example ran" in r.stdout


def test_ptx_in_the_simulator_says_why_not():
    code = textwrap.dedent("""
        import math
        import numpy as np
        import jitgrad as jg

        @jg.differentiate(wrt=0, target="cuda")
        def f(a, b):
            return a * math.sin(b)

        try:
            f.ptx(1.0, 2.0)
        except jg.JitError as e:
            print("JitError:", e)
    """)
    r = _run_simulated(["-c", code])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "JitError: ptx() needs Numba's CUDA compiler" in r.stdout, r.stdout


def test_device_rewrites_are_table_facts():
    """NumPy's spellings device code has no function for are written as the table's
    ``device_rewrite`` expressions, however numpy is spelled, and a user primitive
    declared with one is written so too (``stepped``: ``non_differentiable(step, ...)``)."""
    from jitgrad.kernels import helpers
    from jitgrad.rules.primitives import device_rewrite

    assert all(device_rewrite(f) is not None
               for f in (np.float32, np.square, np.reciprocal, np.sign, C.step, helpers.guard,
                         helpers.pow_log, helpers.unbroadcast, helpers.zeros_like))
    assert device_rewrite(np.sin) is None and device_rewrite(abs) is None
    src = C.spelled.source(0.4, -0.7)
    assert "_t3 * _t3" in src and " = 1.0 / _t" in src
    assert "(1.0 if b > 0.0 else -1.0 if b < 0.0 else b * 0.0)" in src
    src = C.stepped.source(0.4, -0.7)
    assert "(1.0 if a > 0.0 else 0.0)" in src and "step(" not in src.split("#")[0]
