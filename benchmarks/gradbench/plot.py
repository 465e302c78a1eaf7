"""A bar chart of a run as SVG, written with the standard library only: per eval, one bar
per tool, its gradient time divided by jitgrad's, on a log scale."""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

from benchmarks.gradbench.runner import TOOLS, EvalResult

COLOURS = {"jitgrad": "#1f77b4", "hand": "#7f7f7f", "jax": "#2ca02c", "pytorch": "#d62728"}
BAR, GAP, LEFT, TOP, HEIGHT = 14, 18, 56, 40, 220


def ratios(results: list[EvalResult]) -> list[tuple[str, list[tuple[str, float, float]]]]:
    """Per eval with a timed jitgrad gradient: (tool, gradient seconds, ratio to jitgrad)."""
    out = []
    for r in results:
        jit = r.tools.get("jitgrad")
        if jit is None or not jit.gradient_s:
            continue
        bars = [(name, r.tools[name].gradient_s, r.tools[name].gradient_s / jit.gradient_s)
                for name in TOOLS if name in r.tools and r.tools[name].gradient_s]
        out.append((r.name, bars))
    return out


def _decades(groups) -> tuple[int, int]:
    """The log10 range of the axis: whole decades around every ratio and 1."""
    logs = [math.log10(x) for _, bars in groups for _, _, x in bars] + [0.0]
    lo, hi = math.floor(min(logs)), math.ceil(max(logs))
    return lo, max(hi, lo + 1)


def _axis(lo: int, hi: int, width: int, y) -> list[str]:
    out = []
    for e in range(lo, hi + 1):
        label = f"{10.0 ** e:g}x"
        dash = "" if e else ' stroke-dasharray="4 3"'
        out.append(f'<line x1="{LEFT}" x2="{width - 8}" y1="{y(e):.1f}" y2="{y(e):.1f}" '
                   f'stroke="#bbb"{dash}/>')
        out.append(f'<text x="{LEFT - 4}" y="{y(e) + 4:.1f}" text-anchor="end">{label}</text>')
    return out


def _legend(tools: list[str]) -> list[str]:
    out = []
    for i, name in enumerate(tools):
        x = LEFT + 90 * i
        out.append(f'<rect x="{x}" y="24" width="10" height="10" fill="{COLOURS[name]}"/>')
        out.append(f'<text x="{x + 14}" y="33">{name}</text>')
    return out


def svg(results: list[EvalResult], title: str = "") -> str:
    """The chart of ``results`` as an SVG document."""
    groups = ratios(results)
    lo, hi = _decades(groups)
    used = [t for t in TOOLS if any(t == b[0] for _, bars in groups for b in bars)]
    head = escape(title or "gradient time / jitgrad's (log scale; lower is faster)")
    width = max(LEFT + sum(len(b) * BAR + GAP for _, b in groups), LEFT + 90 * len(used),
                LEFT + 6.5 * len(head)) + 8
    base = TOP + HEIGHT

    def y(e: float) -> float:
        return base - (e - lo) / (hi - lo) * HEIGHT

    parts = _axis(lo, hi, width, y)
    x = LEFT + GAP / 2
    for name, bars in groups:
        for tool, seconds, ratio in bars:
            top = y(math.log10(ratio))
            parts.append(
                f'<rect class="bar" data-eval="{escape(name)}" data-tool="{tool}" x="{x:.1f}" '
                f'y="{top:.1f}" width="{BAR - 2}" height="{base - top:.1f}" '
                f'fill="{COLOURS.get(tool, "#000")}"><title>{escape(name)} {tool}: '
                f'{seconds * 1e3:.3g} ms, {ratio:.2f}x jitgrad</title></rect>')
            x += BAR
        parts.append(f'<text x="{x - len(bars) * BAR / 2:.1f}" y="{base + 16}" '
                     f'text-anchor="middle">{escape(name)}</text>')
        x += GAP
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{base + 28}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{LEFT}" y="14" font-size="12">{head}</text>',
        *_legend(used), *parts, "</svg>", ""])
