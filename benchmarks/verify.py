"""Check every hand-written Numba adjoint against central finite differences.

Usage: ``python benchmarks/verify.py [--only NAME]``. Exits non-zero on any mismatch.
Finite differences use the Numba-compiled primal at the small ``verify`` size.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness.threads import configure_env  # noqa: E402

configure_env(1)

import numba  # noqa: E402
from harness.checks import GradientMismatch, check_against_fd  # noqa: E402
from workloads import WORKLOADS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Run the finite-difference check for each selected workload."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    opts = parser.parse_args(argv)
    failures = 0
    for name, wl in WORKLOADS.items():
        if opts.only and name not in opts.only:
            continue
        args = wl.args("verify")
        primal = numba.njit(wl.primal)
        grads = wl.adjoint(*args)
        try:
            err = check_against_fd(primal, grads, args, wl.wrt)
            print(f"ok    {name:<11} adjoint vs central FD: max|diff|/max|grad| = {err:.2e}")
        except GradientMismatch as exc:
            failures += 1
            print(f"FAIL  {name:<11} {exc}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
