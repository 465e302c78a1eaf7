"""First-call latency: where a first gradient call's time goes, against the user's own
``@njit`` compile and JAX's first ``jit(grad)`` call.

Usage::

    python benchmarks/first_call.py [--only CASE ...] [--tools primal,jitgrad,second,jax]
                                    [--repeat K] [--json PATH]

Every measurement runs in a fresh Python process (after imports), K times; the table
shows medians.  Tools:

* ``jitgrad``: ``jg.grad(f, wrt)``'s first call, split into the transform (and its
  slowest passes), Numba's type inference and its lowering (Numba IR to LLVM IR, LLVM
  optimisation and machine code, of which LLVM's share is ``llvm``), and the size of
  the generated function;
* ``second``: ``jg.value_and_grad(f, wrt)``'s first call, then ``jg.grad(f, wrt)``'s
  (a second entry point on the same function);
* ``primal``: ``numba.njit(f)``'s first call (the user's own compile);
* ``jax``: ``jax.jit(jax.grad(loss))``'s first call (skipped where JAX is missing).

Cases: the six workloads (``benchmarks/workloads``) at their verification sizes, the
real-kernel shapes of ``first_call_cases.py``, and the GradBench evals whose output is a
gradient (``gb_gmm``...: ``benchmarks/gradbench``, the objective as written, at its test
size; JAX's version from ``gradbench/jaxtools.py``).  The load average is printed with
each case: on a shared machine, compare ratios taken in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOOLS = ("jitgrad", "second", "primal", "jax")

CHILD = r'''
import json, os, sys, time
sys.path[:0] = [{root!r}, {here!r}]
import numpy as np
from first_call import child
print("FIRST_CALL " + json.dumps(child({case!r}, {tool!r})))
'''


#: GradBench evals whose output is a gradient: eval name -> ``wrt`` of ``jg.grad``
GRADBENCH = {"gmm": (0, 1, 2, 3), "lstm": (0, 1), "ode": (0,), "lse": (0,), "llsq": (0,),
             "det": (0,)}


def case_names() -> list[str]:
    """The six workloads, the extra cases, then the GradBench evals."""
    from first_call_cases import CASES
    from workloads import WORKLOADS

    return [*WORKLOADS, *CASES, *(f"gb_{e}" for e in GRADBENCH)]


def _gradbench_case(name: str):
    """``load_case`` of ``gb_<eval>``: the eval's objective at its test size."""
    from benchmarks.gradbench import jaxtools
    from benchmarks.gradbench.evals import EVALS

    e = EVALS[name]
    args = e.args("test")

    def jax_thunk():
        jax = jaxtools._lib()
        jax.jit(lambda x: x + 1.0)(jax.numpy.ones(2)).block_until_ready()  # XLA up first
        return jaxtools.make(name, args)[1]

    return e.objective, args, GRADBENCH[name], jax_thunk


def load_case(name: str):
    """``(function, arguments, wrt, jax_grad_thunk_maker)`` of case ``name``."""
    import numpy as np
    from first_call_cases import CASES
    from workloads import WORKLOADS

    if name.startswith("gb_"):
        return _gradbench_case(name[3:])
    if name in WORKLOADS:
        w = WORKLOADS[name]
        args = w.args("verify")

        def jax_thunk():
            from harness.peers import JaxBackend

            b = JaxBackend(1)
            return b.grad_thunk(w.peer_loss(b, args), [args[i] for i in w.wrt])

        return w.primal, args, tuple(w.wrt), jax_thunk
    f, make, wrt, jax_fn = CASES[name]
    args = make(np.random.default_rng(0))

    def jax_thunk():
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        jax.jit(lambda x: x + 1.0)(jnp.ones(2)).block_until_ready()  # XLA up first

        def loss(*ws):
            full = list(args)
            for i, v in zip(wrt, ws, strict=True):
                full[i] = v
            return jax_fn(jnp, *full)

        fn = jax.jit(jax.grad(loss, argnums=tuple(range(len(wrt)))))
        xs = [jnp.asarray(np.asarray(args[i], dtype=np.float64)) for i in wrt]
        return lambda: jax.block_until_ready(fn(*xs))

    return f, args, wrt, jax_thunk


def _timed_passes() -> dict[str, float]:
    """Time every transpiler pass from now on: pass name -> seconds (summed)."""
    from jitgrad.transpiler import pipeline

    spent: dict[str, float] = {}
    import time

    for p in pipeline.PASSES:
        def run(u, _run=p.run, _name=p.name):
            t = time.perf_counter()
            try:
                _run(u)
            finally:
                spent[_name] = spent.get(_name, 0.0) + time.perf_counter() - t
        object.__setattr__(p, "run", run)
    return spent


def _outer_passes(events) -> dict[str, float]:
    """Seconds of Numba's outermost compiler passes (nested compiles of callees count in
    the pass of the outer function that triggered them), by pass name."""
    from numba.core.event import EventStatus

    out: dict[str, float] = {}
    stack: list[float] = []
    for ts, ev in events:
        if ev.status == EventStatus.START:
            stack.append(ts)
        else:
            start = stack.pop()
            if not stack:
                name = ev.data["name"].split(" [")[0]
                out[name] = out.get(name, 0.0) + ts - start
    return out


def child(case: str, tool: str) -> dict:
    """One measurement in this (fresh) process."""
    import time

    f, args, wrt, jax_thunk = load_case(case)
    if tool == "jax":
        try:
            import jax  # noqa: F401
        except ImportError:
            return {"skipped": "jax is not installed"}
        t, c = time.perf_counter(), time.process_time()
        jax_thunk()()
        return {"seconds": time.perf_counter() - t, "cpu": time.process_time() - c}
    if tool == "primal":
        import numba

        pf = numba.njit(f)
        t, c = time.perf_counter(), time.process_time()
        pf(*args)
        return {"seconds": time.perf_counter() - t, "cpu": time.process_time() - c}
    from numba.core import event

    import jitgrad as jg

    if tool == "second":
        vg, g = jg.value_and_grad(f, wrt=wrt), jg.grad(f, wrt=wrt)
        t0, c0 = time.perf_counter(), time.process_time()
        vg(*args)
        t1, c1 = time.perf_counter(), time.process_time()
        g(*args)
        t2, c2 = time.perf_counter(), time.process_time()
        return {"first": t1 - t0, "seconds": t2 - t1, "first_cpu": c1 - c0, "cpu": c2 - c1}
    spent = _timed_passes()
    g = jg.grad(f, wrt=wrt)
    with event.install_recorder("numba:run_pass") as rec:
        t, c = time.perf_counter(), time.process_time()
        g(*args)
        total, cpu = time.perf_counter() - t, time.process_time() - c
    info = g.cache_info()
    numba_passes = _outer_passes(rec.buffer)
    compiled = g.diff._last.compiled
    timers = [c.metadata.get("timers", {}) for d in compiled.jitted.values()
              for c in d.overloads.values()]
    src = g.diff._last.unit.sources["grad_only"]
    return {"seconds": total, "cpu": cpu, "transform": info["transform_seconds"],
            "compile": info["compile_seconds"], "passes": spent,
            "typing": numba_passes.get("nopython_type_inference", 0.0),
            "lowering": numba_passes.get("native_lowering", 0.0),
            "llvm": sum(tm.get("llvm_lock", 0.0) for tm in timers),
            "lines": len(src.splitlines()), "chars": len(src), "numba_passes": numba_passes}


def run_child(case: str, tool: str, timeout: float) -> dict:
    """``child(case, tool)`` in a fresh process."""
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    code = CHILD.format(root=str(ROOT), here=str(HERE), case=case, tool=tool)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("FIRST_CALL ")]
    if out.returncode or not line:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1][:120]}
    return json.loads(line[-1][len("FIRST_CALL "):])


def median_of(runs: list[dict]) -> dict:
    """Field-wise medians of the successful runs (the passes' too); the first error else."""
    ok = [r for r in runs if "error" not in r and "skipped" not in r]
    if not ok:
        return runs[0]
    out: dict = {}
    for k, v in ok[0].items():
        if isinstance(v, dict):
            out[k] = {p: statistics.median(r[k].get(p, 0.0) for r in ok) for p in v}
        else:
            out[k] = statistics.median(r[k] for r in ok)
    out["runs"] = len(ok)
    return out


def _c(r: dict | None) -> str:
    """CPU seconds (wall seconds) of a measurement; n/a for an error or a skip."""
    if r is None:
        return "-"
    if "error" in r or "skipped" in r:
        return "n/a"
    return f"{r['cpu']:.2f} ({r['seconds']:.1f})" if "cpu" in r else f"({r['seconds']:.1f})"


def _ratio(a: dict | None, b: dict | None, kb: str = "seconds") -> str:
    """``a``'s seconds over ``b``'s ``kb``: CPU seconds where both have them (less
    disturbed by a loaded machine than wall time), else wall seconds."""
    if a is None or b is None or "seconds" not in a or kb not in b:
        return "-"
    cpu_b = "first_cpu" if kb == "first" else "cpu"
    x, y = (a["cpu"], b[cpu_b]) if "cpu" in a and cpu_b in b else (a["seconds"], b[kb])
    return f"{x / y:.1f}x" if y > 0 else "-"


def _share(j: dict, key: str) -> str:
    """``j[key]`` as a share of the first call's wall time (shares hold under load)."""
    return f"{100 * j[key] / j['seconds']:.0f}%"


def table(results: dict[str, dict[str, dict]]) -> str:
    """The Markdown first-call table: seconds as CPU (wall), the stages as shares of the
    first call, ratios of the medians (``_ratio``)."""
    rows = ["| case | jitgrad 1st call | transform | Numba typing | lowering (LLVM) | lines "
            "| njit primal | vs primal | JAX jit(grad) | vs JAX | 2nd entry | 2nd / 1st |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for case, r in results.items():
        j, p, x, s = (r.get(t) for t in ("jitgrad", "primal", "jax", "second"))
        ok = j is not None and "transform" in j
        parts = [_share(j, k) for k in ("transform", "typing")] if ok else ["-", "-"]
        low = f"{_share(j, 'lowering')} ({_share(j, 'llvm')})" if ok else "-"
        lines = str(int(j["lines"])) if ok else "-"
        rows.append(f"| {case} | {_c(j)} | {' | '.join(parts)} | {low} | {lines} | {_c(p)} "
                    f"| {_ratio(j, p)} | {_c(x)} | {_ratio(j, x)} | {_c(s)} "
                    f"| {_ratio(s, s, 'first')} |")
    return "\n".join(rows)


def pass_table(results: dict[str, dict[str, dict]], top: int = 3) -> str:
    """The slowest transpiler passes of each case's transform."""
    rows = ["| case | slowest passes (s) |", "|---|---|"]
    for case, r in results.items():
        j = r.get("jitgrad")
        if j and "passes" in j:
            worst = sorted(j["passes"].items(), key=lambda kv: -kv[1])[:top]
            rows.append(f"| {case} | " + ", ".join(f"{k} {v:.2f}" for k, v in worst) + " |")
    return "\n".join(rows)


def main() -> None:
    sys.path[:0] = [str(ROOT), str(HERE)]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", help="case name (repeatable)")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--json", help="write every run here")
    a = ap.parse_args()
    tools = [t for t in a.tools.split(",") if t]
    results: dict[str, dict[str, dict]] = {}
    raw: dict[str, dict[str, list]] = {}
    for case in a.only or case_names():
        load = os.getloadavg()[0]
        raw[case] = {t: [run_child(case, t, a.timeout) for _ in range(a.repeat)]
                     for t in tools}
        results[case] = {t: median_of(runs) for t, runs in raw[case].items()}
        print(f"{case}: load {load:.1f} -> {os.getloadavg()[0]:.1f}: "
              f"{json.dumps(results[case])}", file=sys.stderr, flush=True)
    print(table(results))
    print()
    print(pass_table(results))
    if a.json:
        Path(a.json).write_text(json.dumps({"median": results, "runs": raw}, indent=1))


if __name__ == "__main__":
    main()
