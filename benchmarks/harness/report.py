"""Render benchmark results as Markdown tables and JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.tools import GRADIENT_TOOLS

PEERS = ("jax", "torch", "autograd")
COMPILE_TOOLS = ("primal", "jitgrad", "jax")
MEMORY_TOOLS = ("primal", "adjoint", "jitgrad")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 10 else f"{seconds:.3g} s"


class _Notes:
    """Collects skip reasons as numbered footnotes."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def ref(self, text: str) -> str:
        if text not in self.items:
            self.items.append(text)
        return f"[{self.items.index(text) + 1}]"


def _time_cell(entry: dict[str, Any] | None, notes: _Notes) -> str:
    if not entry:
        return "-"
    if entry.get("median_s") is None:
        return "skip " + notes.ref(entry.get("message", "skipped"))
    ratio = entry.get("ratio_to_primal")
    head = f"{ratio:.2f}x " if ratio is not None else ""
    return f"{head}({_ms(entry['median_s'])})"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def markdown(results: dict[str, Any]) -> str:
    """Three tables (ratios, jitgrad comparisons, compile time and memory) plus notes."""
    meta, wls = results["meta"], results["workloads"]
    tools = [t for t in GRADIENT_TOOLS if t in meta["tools"]]
    notes = _Notes()
    out = [f"## jitgrad benchmarks ({meta['scale']}, {meta['threads']} thread(s), "
           f"median of {meta['repeats']})", "",
           "Gradient time / Numba primal time (gradient median in parentheses):", ""]
    rows = []
    for w in wls:
        t = w["timing"]
        primal = _ms(t["primal"]["median_s"]) if t.get("primal", {}).get("median_s") else "-"
        rows.append([w["name"], w["size"], primal] + [_time_cell(t.get(k), notes) for k in tools])
    out += _table(["workload", "size", "primal"] + tools, rows)

    others = [t for t in tools if t != "jitgrad"]
    out += ["", "jitgrad gradient time / other tool's gradient time (< 1: jitgrad faster):", ""]
    rows = [[w["name"]] + [_ratio(w["jitgrad_vs"].get(k)) for k in others] for w in wls]
    out += _table(["workload"] + [f"vs {k}" for k in others], rows)

    out += ["", "First call at the verification size (compile + tiny run, s) and peak memory "
            "of one call at the timed size (MiB; bytes allocated, traced, for the Numba tools "
            "and autograd, peak RSS increase for JAX and PyTorch):", ""]
    rows = []
    for w in wls:
        first = [_seconds(w["verify"].get(k, {}).get("first_call_s")) for k in COMPILE_TOOLS]
        mem = [_mem(w["peak_rss_mib"].get(k), notes) for k in MEMORY_TOOLS]
        rows.append([w["name"]] + first + mem)
    out += _table(["workload"] + [f"1st call {k}" for k in COMPILE_TOOLS]
                  + [f"peak mem {k}" for k in MEMORY_TOOLS], rows)

    out += ["", "Peers: " + "; ".join(f"{w['name']}: {w['peer_note']}" for w in wls)]
    out += ["Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())]
    if notes.items:
        out += [""] + [f"[{i + 1}] {text}" for i, text in enumerate(notes.items)]
    return "\n".join(out) + "\n"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _seconds(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _mem(x: float | str | None, notes: _Notes) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return "n/a " + notes.ref(x.removeprefix("n/a: "))
    return f"{x:.1f}"


def write_json(results: dict[str, Any], path: Path) -> None:
    """Write the full results (all samples included)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=float) + "\n")
