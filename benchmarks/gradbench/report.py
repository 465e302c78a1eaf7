"""The Markdown table of a run."""

from __future__ import annotations

from benchmarks.gradbench.runner import PEERS, TOOLS, EvalResult

HEADER = ("| eval | size | tool | objective | gradient | gradient / objective | "
          "jitgrad / tool | peak MiB | 1st call |\n|---|---|---|---|---|---|---|---|---|")


def _ms(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.2f} s"


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _mib(x: float | None, tool: str) -> str:
    """Peak MiB; a peer's call served from memory its allocator already holds raises no
    peak of the resident set."""
    if x is None:
        return "-"
    if x < 0.01:
        return "in pool" if tool in PEERS else "<0.01"
    return f"{x:.2f}"


def rows(r: EvalResult) -> list[str]:
    """Table rows of one eval: one per tool, then any refusal."""
    if r.refused and not r.tools:
        return [f"| {r.name} | - | jitgrad | refused (nested differentiation) | | | | | |"]
    out = []
    jit = r.tools.get("jitgrad")
    for name in TOOLS:
        t = r.tools.get(name)
        if t is None:
            continue
        if t.gradient_s is None:
            out.append(f"| {r.name} | {r.size} | {name} | {t.note or 'n/a'} | | | | | |")
            continue
        ratio = t.gradient_s / t.objective_s if t.objective_s else None
        vs = (jit.gradient_s / t.gradient_s if name != "jitgrad" and jit and jit.gradient_s
              else None)
        out.append(f"| {r.name} | {r.size} | {name} | {_ms(t.objective_s)} | "
                   f"{_ms(t.gradient_s)} | {_num(ratio, '.2f')} | {_num(vs, '.2f')} | "
                   f"{_mib(t.peak_mib, name)} | {_num(t.first_call_s, '.1f')} s |")
    return out


def table(results: list[EvalResult]) -> str:
    """The whole table plus the refusal messages under it."""
    lines = [HEADER]
    for r in results:
        lines += rows(r)
    notes = [f"- **{r.name}**: {r.refused.splitlines()[0]}" for r in results if r.refused]
    return "\n".join(lines) + ("\n\njitgrad refuses:\n" + "\n".join(notes) if notes else "")
