"""Pin every runtime to a fixed number of threads.

:func:`configure_env` must run before NumPy, Numba, JAX or PyTorch are imported
(environment variables are read at import time); :func:`configure_runtime` then
applies the same limit through the runtime APIs that exist after import.
"""

from __future__ import annotations

import os

_THREAD_VARS = (
    "NUMBA_NUM_THREADS",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def configure_env(threads: int) -> None:
    """Set thread-count environment variables (call before any heavy import)."""
    for var in _THREAD_VARS:
        os.environ[var] = str(threads)
    multi = "true" if threads > 1 else "false"
    os.environ["XLA_FLAGS"] = (
        f"--xla_cpu_multi_thread_eigen={multi} intra_op_parallelism_threads={threads}"
    )
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def configure_runtime(threads: int) -> dict[str, str]:
    """Apply the limit to already-imported runtimes; return a description for the report."""
    import numba

    numba.set_num_threads(threads)
    info = {"numba": str(numba.get_num_threads())}
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)
        info["blas"] = f"threadpoolctl({threads})"
    except ImportError:
        info["blas"] = f"env OPENBLAS/MKL/OMP_NUM_THREADS={threads}"
    info["xla_flags"] = os.environ.get("XLA_FLAGS", "")
    return info
