"""Charts for report.html as plain geometry (pixel coordinates, tick labels); the page template
draws them as inline SVG, so every label goes through the template's escaping and the page
needs no plotting library or network. Each point keeps its raw value: the page shows it on
hover and tests compare it with the JSONL it came from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["LineChart", "BarChart", "line_chart", "bar_chart", "PALETTE"]

# Colour-blind-safe (Okabe-Ito) order: the first series of every chart looks the same.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
WIDTH, HEIGHT = 460, 260
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 24, 34  # margins around the plot area


@dataclass
class Point:
    x: float  # pixels
    y: float
    step: int | float  # the raw values
    value: float


@dataclass
class Series:
    name: str
    color: str
    points: list[Point]

    @property
    def polyline(self) -> str:
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)


@dataclass
class LineChart:
    title: str
    y_label: str
    series: list[Series]
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering [low, high].

    A range narrower than float rounding (two evaluations equal but for their last bit, as
    0.19375 and 0.19375000000000003) is drawn as one value with a unit around it: a step that
    small would not move ``low`` when added to it. Ticks are ``i * step``, never a running sum,
    so their number is bounded by ``count`` + 2."""
    if high - low <= 1e-9 * max(abs(low), abs(high), 1.0):
        high = low + 1.0
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first, last = math.floor(low / step), math.ceil(high / step - 1e-9)
    return [round(i * step, 10) for i in range(first, last + 1)]


def _label(value: float) -> str:
    return f"{value:.4g}"


def line_chart(
    title: str,
    y_label: str,
    series: Mapping[str, tuple[Sequence[int], Sequence[float]]],
    *,
    rate: bool = False,
) -> LineChart | None:
    """A chart of ``series`` (name -> (steps, values)), x = training step; ``rate``: the y axis
    is 0..1 (an all-zero success curve reads as zero, not as noise). None without data."""
    # A metric with no value at a step (NaN, e.g. turns to success when nothing succeeded) has
    # no point there.
    series = {
        name: ([x for x, y in kept], [y for _, y in kept])
        for name, (xs, ys) in series.items()
        if (kept := [(x, y) for x, y in zip(xs, ys, strict=True) if math.isfinite(y)])
    }
    if not series:
        return None
    xs = [x for steps, _ in series.values() for x in steps]
    ys = [y for _, values in series.values() for y in values]
    x_ticks = [t for t in _nice_ticks(min(xs), max(xs), 6) if float(t).is_integer()]  # steps are whole
    y_ticks = [0.0, 0.25, 0.5, 0.75, 1.0] if rate else _nice_ticks(min(ys), max(ys))
    x_low, x_high = min(x_ticks), max(x_ticks)
    y_low, y_high = min(y_ticks), max(y_ticks)
    if rate:
        y_low, y_high = min(y_low, min(ys)), max(y_high, max(ys))
    chart = LineChart(title, y_label, [], [], [])

    def px(x: float) -> float:
        return chart.left + (x - x_low) / ((x_high - x_low) or 1.0) * (chart.right - chart.left)

    def py(y: float) -> float:
        return chart.bottom - (y - y_low) / ((y_high - y_low) or 1.0) * (chart.bottom - chart.top)

    chart.x_ticks = [(px(t), _label(t)) for t in x_ticks]
    chart.y_ticks = [(py(t), _label(t)) for t in y_ticks]
    for i, (name, (steps, values)) in enumerate(series.items()):
        points = [Point(px(s), py(v), s, v) for s, v in zip(steps, values, strict=True)]
        chart.series.append(Series(name, PALETTE[i % len(PALETTE)], points))
    return chart


@dataclass
class Bar:
    group: str
    name: str
    color: str
    x: float
    y: float
    width: float
    height: float
    mean: float
    se: float | None
    error_top: float | None = None
    error_bottom: float | None = None


@dataclass
class BarChart:
    title: str
    y_label: str
    bars: list[Bar]
    groups: list[tuple[float, str]]  # (centre x, label)
    legend: list[tuple[str, str]]  # (name, colour)
    y_ticks: list[tuple[float, str]]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM
    notes: list[str] = field(default_factory=list)


def bar_chart(
    title: str,
    y_label: str,
    groups: Sequence[str],
    names: Sequence[str],
    values: Mapping[tuple[str, str], tuple[float, float | None]],
    *,
    rate: bool = False,
) -> BarChart | None:
    """Grouped bars: for each group (an env column), one bar per name (a team row) with its
    mean and a +-1 s.e. error bar (``values[(group, name)] = (mean, se)``; se None: no bar
    drawn). Missing or NaN means are left out. None without data."""
    finite = {k: v for k, v in values.items() if v[0] is not None and math.isfinite(v[0])}
    if not finite:
        return None
    highs = [m + (s or 0.0) for m, s in finite.values()]
    lows = [min(0.0, m - (s or 0.0)) for m, s in finite.values()]
    y_ticks = [0.0, 0.25, 0.5, 0.75, 1.0] if rate else _nice_ticks(min(lows), max(highs))
    y_low, y_high = min(y_ticks), max(max(y_ticks), max(highs))
    chart = BarChart(title, y_label, [], [], [], [])

    def py(y: float) -> float:
        return chart.bottom - (y - y_low) / ((y_high - y_low) or 1.0) * (chart.bottom - chart.top)

    chart.y_ticks = [(py(t), _label(t)) for t in y_ticks]
    slot = (chart.right - chart.left) / max(len(groups), 1)
    bar_width = slot * 0.8 / max(len(names), 1)
    colors = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}
    chart.legend = list(colors.items())
    for g, group in enumerate(groups):
        start = chart.left + g * slot + slot * 0.1
        chart.groups.append((chart.left + (g + 0.5) * slot, group))
        for n, name in enumerate(names):
            if (group, name) not in finite:
                continue
            mean, se = finite[(group, name)]
            top, base = py(max(mean, 0.0)), py(min(mean, 0.0))
            bar = Bar(
                group, name, colors[name], start + n * bar_width, top, bar_width * 0.9, base - top, mean, se
            )
            if se is not None and math.isfinite(se):
                bar.error_top, bar.error_bottom = py(mean + se), py(mean - se)
            chart.bars.append(bar)
    return chart
