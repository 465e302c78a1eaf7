"""The benchmark table as a grouped bar chart: gradient time / primal time per tool.

    python benchmarks/run.py --plot docs/img/benchmarks.png      # run, then draw
    python benchmarks/harness/plot.py RESULTS.json OUT.png       # draw saved results

One group of bars per workload, one bar per tool (the median of its timed runs over
the Numba primal's median), on a log scale; whiskers span the fastest and slowest
run.  matplotlib is a benchmark-only dependency (``pip install matplotlib``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

TOOLS = ("adjoint", "jitgrad", "jax", "torch", "autograd")
LABELS = {"adjoint": "hand-written Numba adjoint", "jitgrad": "jitgrad", "jax": "JAX (jit)",
          "torch": "PyTorch (eager)", "autograd": "autograd"}


def plot(results: dict[str, Any], path: Path) -> None:
    """Draw ``results`` (``run.py``'s JSON) to ``path`` (PNG, SVG, ... by its suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    wls = results["workloads"]
    tools = [t for t in TOOLS if any(w["timing"].get(t, {}).get("median_s") for w in wls)]
    width = 0.8 / max(1, len(tools))
    fig, ax = plt.subplots(figsize=(max(6.5, 1.6 + 1.5 * len(wls)), 4.2))
    for k, tool in enumerate(tools):
        xs, ys, lo, hi = [], [], [], []
        for j, w in enumerate(wls):
            t, p = w["timing"].get(tool, {}), w["timing"].get("primal", {}).get("median_s")
            if not t.get("median_s") or not p:
                continue
            samples = t.get("samples_s") or [t["median_s"]]
            y = t["median_s"] / p
            xs.append(j + (k - (len(tools) - 1) / 2) * width)
            ys.append(y)
            lo.append(y - min(samples) / p)
            hi.append(max(samples) / p - y)
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=LABELS.get(tool, tool))
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set_xticks(range(len(wls)), [w["name"] + "\n" + w["size"].replace(", ", "\n")
                                    for w in wls], fontsize=7)
    ax.set_ylim(top=ax.get_ylim()[1] * 3)  # room for the legend above the tallest bar
    ax.set_ylabel("gradient time / primal time (log)")
    meta = results["meta"]
    ax.set_title(f"Gradient cost per tool ({meta['scale']}, {meta['threads']} thread, "
                 f"median of {meta['repeats']}; lower is better)", fontsize=9)
    ax.legend(fontsize=7, ncol=len(tools), loc="upper left")
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    plot(json.loads(Path(argv[0]).read_text()), Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
