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
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM


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


class _Scale:
    """Where data values land in the plot area: x from ``x_low`` to ``x_high`` left to
    right, y from ``y_low`` to ``y_high`` bottom to top."""

    def __init__(self, x_low: float, x_high: float, y_low: float, y_high: float):
        self.x_low, self.x_high, self.y_low, self.y_high = x_low, x_high, y_low, y_high

    def x(self, value: float) -> float:
        """The horizontal pixel of an x value."""
        return LEFT + (value - self.x_low) / (self.x_high - self.x_low) * PLOT_W

    def y(self, value: float) -> float:
        """The vertical pixel of a y value."""
        return TOP + PLOT_H - (value - self.y_low) / (self.y_high - self.y_low) * PLOT_H


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
    scale = _Scale(x_low, x_high, y_ticks[0], y_ticks[-1])
    out = _frame(title)
    out += _y_axis(y_ticks, scale)
    out += _x_axis(_x_positions(xs, x_ticks, scale), scale)
    out += _axis_labels(x_label, y_label)
    for index, (name, values) in enumerate(series.items()):
        out += _series(index, name, values, scale)
    out.append("</svg>")
    path = Path(path)
    write_text(path, "\n".join(out) + "\n")
    return path


def _frame(title: str) -> list[str]:
    """The opening of the SVG: white background, the title and the plot area's border."""
    return [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">'),
            f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
            f'<text x="{LEFT + PLOT_W / 2}" y="20" text-anchor="middle" font-size="13">{escape(title)}</text>',
            f'<rect x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}" fill="none" stroke="#333"/>']


def _y_axis(y_ticks: list[float], scale: _Scale) -> list[str]:
    """A grid line and a label at each y tick."""
    out = []
    for tick in y_ticks:
        y = scale.y(tick)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + PLOT_W}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    return out


def _x_positions(xs: list[float], x_ticks: list[str] | None, scale: _Scale) -> list[tuple[float, str]]:
    """The x ticks as (value, label): every label of ``x_ticks``, else round values
    within the x range (whole numbers when every x value is one)."""
    if x_ticks:
        return [(i, label) for i, label in enumerate(x_ticks)]
    whole = all(float(x).is_integer() for x in xs)
    return [(t, f"{t:g}") for t in nice_ticks(scale.x_low, scale.x_high, integer=whole)
            if scale.x_low <= t <= scale.x_high]


def _x_axis(x_positions: list[tuple[float, str]], scale: _Scale) -> list[str]:
    """A tick mark and a label at each x position, below the plot area."""
    out = []
    for value, label in x_positions:
        x = scale.x(value)
        out.append(f'<line x1="{x:.1f}" y1="{TOP + PLOT_H}" x2="{x:.1f}" y2="{TOP + PLOT_H + 4}" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + PLOT_H + 16}" text-anchor="middle">{escape(label)}</text>')
    return out


def _axis_labels(x_label: str, y_label: str) -> list[str]:
    """The names of the axes: x below the plot area, y rotated on its left."""
    return [f'<text x="{LEFT + PLOT_W / 2}" y="{HEIGHT - 10}" text-anchor="middle">{escape(x_label)}</text>',
            (f'<text x="14" y="{TOP + PLOT_H / 2}" text-anchor="middle" '
             f'transform="rotate(-90 14 {TOP + PLOT_H / 2})">{escape(y_label)}</text>')]


def _series(index: int, name: str, values: list[tuple[float, float]], scale: _Scale) -> list[str]:
    """Series number ``index``: its line, a marker at each point and its legend entry."""
    color = PALETTE[index % len(PALETTE)]
    coords = " ".join(f"{scale.x(x):.1f},{scale.y(y):.1f}" for x, y in sorted(values))
    out = [f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.8"/>']
    out += [f'<circle cx="{scale.x(x):.1f}" cy="{scale.y(y):.1f}" r="2.5" fill="{color}"/>' for x, y in values]
    legend_y = TOP + 8 + 16 * index
    out.append(f'<line x1="{WIDTH - RIGHT + 14}" y1="{legend_y}" x2="{WIDTH - RIGHT + 34}" y2="{legend_y}" '
               f'stroke="{color}" stroke-width="2"/>')
    out.append(f'<text x="{WIDTH - RIGHT + 40}" y="{legend_y + 4}">{escape(name)}</text>')
    return out
