"""Line charts as self-contained SVG files (no plotting library needed).

Good enough for the report's learning curves and accuracy-by-length plots:
one line per series, markers at the points, numeric or categorical x axis,
"nice" y ticks and a legend on the right.
"""
from __future__ import annotations

import math
from html import escape
from pathlib import Path

from ..io.atomic import write_text

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
WIDTH, HEIGHT = 760, 380
LEFT, RIGHT, TOP, BOTTOM = 60, 250, 36, 48


def nice_ticks(low: float, high: float, count: int = 5, integer: bool = False) -> list[float]:
    """About ``count`` round tick values covering ``[low, high]`` (whole numbers with ``integer``)."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    if integer:
        step = max(1, math.ceil(step))
    first = math.floor(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def line_chart(series: dict[str, list[tuple[float, float]]], path: str | Path, *, title: str,
               x_label: str, y_label: str, x_ticks: list[str] | None = None) -> Path:
    """Write the chart; with ``x_ticks`` the x values are indices into those labels."""
    points = [p for values in series.values() for p in values]
    if not points:
        raise ValueError("nothing to plot")
    xs = [x for x, _ in points] + ([0, len(x_ticks) - 1] if x_ticks else [])
    y_ticks = nice_ticks(min(y for _, y in points), max(y for _, y in points))
    x_low, x_high = min(xs), max(xs)
    if x_high == x_low:
        x_low, x_high = x_low - 1, x_high + 1
    y_low, y_high = y_ticks[0], y_ticks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (x - x_low) / (x_high - x_low) * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - (y - y_low) / (y_high - y_low) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{LEFT + plot_w / 2}" y="20" text-anchor="middle" font-size="13">{escape(title)}</text>',
           f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>']
    for tick in y_ticks:
        y = py(tick)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    if x_ticks:
        x_positions = [(i, label) for i, label in enumerate(x_ticks)]
    else:
        whole = all(float(x).is_integer() for x in xs)
        x_positions = [(t, f"{t:g}") for t in nice_ticks(x_low, x_high, integer=whole) if x_low <= t <= x_high]
    for value, label in x_positions:
        x = px(value)
        out.append(f'<line x1="{x:.1f}" y1="{TOP + plot_h}" x2="{x:.1f}" y2="{TOP + plot_h + 4}" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{escape(label)}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text x="14" y="{TOP + plot_h / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {TOP + plot_h / 2})">{escape(y_label)}</text>')
    for index, (name, values) in enumerate(series.items()):
        color = PALETTE[index % len(PALETTE)]
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(values))
        out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.8"/>')
        out += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}"/>' for x, y in values]
        legend_y = TOP + 8 + 16 * index
        out.append(f'<line x1="{WIDTH - RIGHT + 14}" y1="{legend_y}" x2="{WIDTH - RIGHT + 34}" y2="{legend_y}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 40}" y="{legend_y + 4}">{escape(name)}</text>')
    out.append("</svg>")
    path = Path(path)
    write_text(path, "\n".join(out) + "\n")
    return path
