"""Lines through (x, y) points on linear, log or categorical axes (a sweep's latency and
tokens/s against the swept value), laid out in Python on the scales of ``scales.py``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .charts import Box
from .scales import LinearScale, LogScale, Tick, check_kind, fixed_decimals, svg_number

__all__ = ["XYSeries", "XYChart", "xy_chart"]


@dataclass(frozen=True)
class XYSeries:
    key: str
    path: str
    points: tuple[tuple[float, float] | None, ...]  # pixels, None where the value is missing


@dataclass(frozen=True)
class XYChart:
    width: float
    height: float
    plot: Box
    x_mode: str  # "linear" | "log" | "category"
    y_mode: str  # "linear" | "log"
    x: LinearScale | LogScale
    y: LinearScale | LogScale
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    series: tuple[XYSeries, ...]


@dataclass(frozen=True)
class _Axis:
    """An axis laid out: its mode, scale and ticks; ``pixels`` maps each x value to its pixel
    (None on a categorical axis, where a value's index is placed)."""

    mode: str
    scale: LinearScale | LogScale
    ticks: list[Tick]
    pixels: dict | None = None


def xy_chart(
    xs: Sequence[float | str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    width: float = 620,
    height: float = 300,
    margin: tuple[float, float, float, float] = (16, 20, 44, 70),
    y_kind: str = "number",
    log_ratio: float = 30.0,
    bounds: Sequence[Sequence[bool]] = (),
) -> XYChart:
    """Lay out series sharing the x values ``xs``; ``bounds`` (per series, per value) marks the
    values that are only bounds (an analysis that left nodes out): the line breaks at them, so no
    segment joins a bound to a figure.

    x is categorical (evenly spaced, labelled by the values) unless every value is a positive
    number, then logarithmic when they span ``log_ratio`` or more, else linear. y starts at 0 and
    is linear unless the values span ``log_ratio`` or more, then logarithmic. Missing values
    (None) break the line.
    """
    check_kind(y_kind)
    top, right, bottom, left = margin
    plot = Box(left, top, width - right, height - bottom)
    x_axis = _x_axis(xs, plot, log_ratio)
    y_axis = _y_axis(series, plot, y_kind, log_ratio)
    laid = []
    for number, (key, ys) in enumerate(series):
        pixels = _pixels(xs, ys, x_axis, y_axis)
        laid.append(XYSeries(key, _broken_path(pixels, bounds[number] if number < len(bounds) else ()), pixels))
    return XYChart(
        width,
        height,
        plot,
        x_axis.mode,
        y_axis.mode,
        x_axis.scale,
        y_axis.scale,
        tuple(x_axis.ticks),
        tuple(y_axis.ticks),
        tuple(laid),
    )


def _x_axis(xs: Sequence[float | str], plot: Box, log_ratio: float) -> _Axis:
    """Log or linear over distinct, increasing, positive numbers (inset 14 px), else categories."""
    numeric = bool(xs) and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in xs)
    ordered = numeric and len(set(xs)) == len(xs) and list(xs) == sorted(xs)
    if ordered and max(xs) / min(xs) >= log_ratio:
        scale: LinearScale | LogScale = LogScale((min(xs), max(xs)), (plot.left + 14, plot.right - 14))
        # the swept values themselves are the clearest ticks when there are few
        ticks = _value_ticks(xs, scale) if len(xs) <= 10 else scale.ticks(8, "count")
        return _Axis("log", scale, ticks, {v: scale(v) for v in xs})
    if ordered and len(xs) > 1:
        scale = LinearScale((min(xs), max(xs)), (plot.left + 14, plot.right - 14))
        ticks = _value_ticks(xs, scale) if len(xs) <= 10 else scale.ticks(8)
        return _Axis("linear", scale, ticks, {v: scale(v) for v in xs})
    scale = LinearScale((-0.5, max(len(xs), 1) - 0.5), (plot.left, plot.right))
    return _Axis("category", scale, [Tick(float(i), scale(i), str(v)) for i, v in enumerate(xs)])


def _value_ticks(xs: Sequence, scale: LinearScale | LogScale) -> list[Tick]:
    return [Tick(float(v), scale(v), fixed_decimals(float(v), 6)) for v in xs]


def _y_axis(series: Sequence[tuple[str, Sequence[float | None]]], plot: Box, y_kind: str, log_ratio: float) -> _Axis:
    """Log when every finite value is positive and they span ``log_ratio``, else linear from 0."""
    present = [v for _, ys in series for v in ys if v is not None and math.isfinite(v)]
    positive = [v for v in present if v > 0]
    if positive and len(positive) == len(present) and max(positive) / min(positive) >= log_ratio:
        scale: LinearScale | LogScale = LogScale((min(positive), max(positive)), (plot.bottom, plot.top)).nice()
        return _Axis("log", scale, scale.ticks(6, y_kind))
    top = max(present) if present and max(present) > 0 else 1
    scale = LinearScale((0, top), (plot.bottom, plot.top)).nice(5, y_kind)
    return _Axis("linear", scale, scale.ticks(5, y_kind))


def _pixels(
    xs: Sequence, ys: Sequence[float | None], x_axis: _Axis, y_axis: _Axis
) -> tuple[tuple[float, float] | None, ...]:
    """Each value's pixel; None where it is missing, not finite, or not positive on a log axis."""
    pixels: list[tuple[float, float] | None] = []
    for index, value in enumerate(ys):
        if value is None or not math.isfinite(value) or (y_axis.mode == "log" and value <= 0):
            pixels.append(None)
            continue
        px = x_axis.pixels[xs[index]] if x_axis.pixels is not None else x_axis.scale(index)
        pixels.append((px, y_axis.scale(value)))
    return tuple(pixels)


def _broken_path(pixels: Sequence[tuple[float, float] | None], bound: Sequence[bool]) -> str:
    """The line's ``d``: the pen lifts at a missing value and at a bound."""
    parts, pen = [], False
    for index, pixel in enumerate(pixels):
        if pixel is None or (index < len(bound) and bound[index]):
            pen = False
            continue
        parts.append(f"{'L' if pen else 'M'}{svg_number(pixel[0])},{svg_number(pixel[1])}")
        pen = True
    return "".join(parts)
