"""Registry of the six benchmark workloads (in report order)."""

from workloads import heat, lorenz, mlp, pairwise, rosenbrock, softmax_ce
from workloads.base import SCALES, Workload

WORKLOADS: dict[str, Workload] = {
    m.WORKLOAD.name: m.WORKLOAD for m in (rosenbrock, lorenz, heat, mlp, pairwise, softmax_ce)
}

__all__ = ["SCALES", "WORKLOADS", "Workload"]
