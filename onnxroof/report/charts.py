"""Chart geometry for the HTML report, computed in Python: scales, round ticks, SVG paths.

Everything here is pure (numbers in; numbers, labels and SVG path data out) so the templates
only place strings. A scale maps a *domain* (data values) onto a *range* (pixels); a range may
run backwards, as a y axis does (``(bottom, top)``).

- :class:`LinearScale`: 1-2-5 ticks; ``kind="bytes"`` labels them in one IEC unit
  (``200 KiB``), ``kind="count"`` in one SI unit (``200 k``).
- :class:`LogScale`: decade ticks (powers of 10, SI labels) or, for bytes, powers of 2 with IEC
  labels (``1 KiB``, ``32 KiB``, ``1 MiB``); the roofline chart uses two of them.
- :func:`downsample` keeps each pixel column's maximum, so no peak is ever lost.
- :func:`step_path`, :func:`line_path`, :func:`area_points`: SVG path data.
- :func:`timeline_chart`: a whole step-by-step timeline (several series, horizontal reference
  lines such as on-chip capacities, hover columns) laid out in one box.
- :func:`roofline_chart`: a log-log roofline (compute roofs, bandwidth slopes, ridge points, one
  dot per point with its area proportional to a weight, an "∞" strip for points that move no DRAM
  bytes); :meth:`RooflineChart.place` puts any further mark (a model point, a sweep path, an
  arrow's end) on the same axes.
- :func:`xy_chart`: lines through (x, y) points on linear, log or categorical axes (a sweep).
- :func:`place_labels`: a spot beside each point for its label, clear of the others.

>>> y = LinearScale((0, 786_432), (300, 0)).nice(kind="bytes")
>>> y.domain, [t.label for t in y.ticks(kind="bytes")]
((0.0, 819200.0), ['0', '200 KiB', '400 KiB', '600 KiB', '800 KiB'])
>>> LogScale((1, 10_000), (0, 400))(100)
200.0
>>> [b.value for b in downsample([1, 9, 2, 3, 8, 1], 3)]
[9, 3, 8]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..units import iec, si

__all__ = [
    "KINDS", "Tick", "LinearScale", "LogScale", "Bucket", "downsample", "step_path", "line_path",
    "area_points", "svg_number", "Box", "Marker", "SeriesGeometry", "ReferenceLine", "Column", "TimelineChart",
    "timeline_chart", "RooflinePoint", "PlacedPoint", "ComputeRoof", "Slope", "RooflineChart", "roofline_chart",
    "XYSeries", "XYChart", "xy_chart", "spread", "Label", "label_rect", "place_labels",
]

KINDS = ("number", "count", "bytes")
_SI_PREFIXES = ("", "k", "M", "G", "T", "P")
_IEC_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_EPSILON = 1e-9
_QUOTIENT_TOLERANCE = 1e-12  # relative: far above a division's rounding error, far below a tick step


@dataclass(frozen=True)
class Tick:
    value: float  # in data units (bytes, steps, FLOP/B, ...)
    position: float  # pixel
    label: str


def _set_floats(scale) -> None:
    """A scale's domain and range as finite floats (the scales are frozen dataclasses)."""
    domain = (float(scale.domain[0]), float(scale.domain[1]))
    span = (float(scale.range[0]), float(scale.range[1]))
    if not all(math.isfinite(v) for v in (*domain, *span)):
        raise ValueError(f"a scale needs a finite domain and range, not {scale.domain} -> {scale.range}")
    object.__setattr__(scale, "domain", domain)
    object.__setattr__(scale, "range", span)


# ---------------------------------------------------------------------------------------------
# Linear


@dataclass(frozen=True)
class LinearScale:
    """``domain`` -> ``range`` linearly. A zero-width domain maps everything to the range's middle."""

    domain: tuple[float, float]
    range: tuple[float, float]

    def __post_init__(self) -> None:
        _set_floats(self)

    def __call__(self, value: float) -> float:
        (d0, d1), (r0, r1) = self.domain, self.range
        if d0 == d1:
            return (r0 + r1) / 2
        return r0 + (float(value) - d0) / (d1 - d0) * (r1 - r0)

    def invert(self, pixel: float) -> float:
        (d0, d1), (r0, r1) = self.domain, self.range
        if r0 == r1:
            return (d0 + d1) / 2
        return d0 + (float(pixel) - r0) / (r1 - r0) * (d1 - d0)

    def _step(self, count: int, kind: str) -> tuple[float, int, int]:
        """(tick step in the label unit, unit exponent, decimals of the step) for about ``count``
        intervals."""
        _check_kind(kind)
        lo, hi = sorted(self.domain)
        exponent = _unit_exponent(max(abs(lo), abs(hi)), kind)
        step = _nice_step((hi - lo) / _unit(kind, exponent) / max(1, count))
        if kind == "bytes" and exponent == 0:
            step = max(step, 1.0)  # no fractions of a byte
        return step, exponent, max(0, -math.floor(math.log10(step) + _EPSILON))

    def ticks(self, count: int = 5, kind: str = "number") -> list[Tick]:
        """Round ticks (1, 2 or 5 x 10^k in one unit) inside the domain, about ``count`` intervals."""
        lo, hi = sorted(self.domain)
        if lo == hi:
            return [Tick(lo, self(lo), _linear_label(lo, 0, kind, 6))]
        step, exponent, decimals = self._step(count, kind)
        unit = _unit(kind, exponent)
        first, last = _ceil(lo / unit / step), _floor(hi / unit / step)
        ticks = []
        for k in range(first, last + 1):
            in_unit = round(k * step, decimals)
            value = in_unit * unit
            ticks.append(Tick(value, self(value), _linear_label(in_unit, exponent, kind, decimals)))
        return ticks

    def nice(self, count: int = 5, kind: str = "number") -> "LinearScale":
        """The same scale with its domain widened to round ticks, so the ticks cover the domain.

        Widening can move the labels to the next unit (1,200 KiB -> 1.5 MiB); it repeats until
        the domain settles."""
        scale = self
        for _ in range(4):
            lo, hi = sorted(scale.domain)
            if lo == hi:
                return scale
            step, exponent, decimals = scale._step(count, kind)
            unit = _unit(kind, exponent)
            low = round(_floor(lo / unit / step) * step, decimals) * unit
            high = round(_ceil(hi / unit / step) * step, decimals) * unit
            if high <= low:  # a span under the float tolerance: keep one whole step
                high = round(low / unit + step, decimals) * unit
            new = (high, low) if scale.domain[0] > scale.domain[1] else (low, high)
            if new == scale.domain:
                break
            scale = LinearScale(new, scale.range)
        return scale


# ---------------------------------------------------------------------------------------------
# Logarithmic


@dataclass(frozen=True)
class LogScale:
    """``domain`` -> ``range`` logarithmically; both domain ends must be positive.

    ``kind="bytes"`` ticks at powers of 2 labelled in IEC units (1 KiB, 32 KiB, 1 MiB, ...);
    other kinds tick at decades (powers of 10), with 2 and 5 in between when the domain spans
    less than two decades.
    """

    domain: tuple[float, float]
    range: tuple[float, float]

    def __post_init__(self) -> None:
        _set_floats(self)
        if self.domain[0] <= 0 or self.domain[1] <= 0:
            raise ValueError(f"a log scale's domain must be positive, not {self.domain}")

    def __call__(self, value: float) -> float:
        value = float(value)
        if not value > 0:
            raise ValueError(f"a log scale cannot place {value!r}: values must be positive")
        (d0, d1), (r0, r1) = self.domain, self.range
        if d0 == d1:
            return (r0 + r1) / 2
        low = math.log10(d0)
        return r0 + (math.log10(value) - low) / (math.log10(d1) - low) * (r1 - r0)

    def invert(self, pixel: float) -> float:
        (d0, d1), (r0, r1) = self.domain, self.range
        if r0 == r1 or d0 == d1:
            return math.sqrt(d0 * d1)
        low, high = math.log10(d0), math.log10(d1)
        return 10 ** (low + (float(pixel) - r0) / (r1 - r0) * (high - low))

    def _exponent_step(self, kind: str, count: int) -> int:
        """The tick step in exponents: of 2 for bytes (10 = one KiB -> MiB step), else of 10.
        The smallest step leaving at most ``count`` ticks (bytes prefer whole IEC units)."""
        lo, hi = sorted(self.domain)
        base = 2 if kind == "bytes" else 10
        first = _ceil(_log(lo, base))
        last = _floor(_log(hi, base))
        candidates = (1, 2, 5, 10, 20, 30, 40, 50) if kind == "bytes" else (1, 2, 3, 6, 9, 12, 15)
        for step in candidates:
            if sum(1 for e in range(first, last + 1) if e % step == 0) <= max(count, 2):
                return step
        return candidates[-1]

    def ticks(self, count: int = 6, kind: str = "count") -> list[Tick]:
        """Decades (or powers of 2 for bytes) inside the domain, about ``count`` of them at most."""
        _check_kind(kind)
        lo, hi = sorted(self.domain)
        if lo == hi:
            return [Tick(lo, self(lo), _log_label(lo, kind))]
        base = 2 if kind == "bytes" else 10
        step = self._exponent_step(kind, count)
        first = _ceil(_log(lo, base))
        last = _floor(_log(hi, base))
        values = [float(base) ** e for e in range(first, last + 1) if e % step == 0]
        if kind != "bytes" and len(values) < 3:
            # under two decades: 1-2-5 in between
            values = [
                _clean(m * 10.0 ** e)
                for e in range(first - 1, last + 1)
                for m in (1, 2, 5)
                if lo * (1 - _EPSILON) <= m * 10.0 ** e <= hi * (1 + _EPSILON)
            ]
        if len(values) < 2:
            # a narrow domain (less than a factor 2.5): round linear ticks, placed on this scale
            linear = LinearScale(self.domain, self.range).ticks(max(count, 2), "bytes" if kind == "bytes" else kind)
            ticks = [Tick(t.value, self(t.value), t.label) for t in linear if t.value > 0]
            # nothing round inside (1.5 B .. 1.9 B): label the two ends
            return ticks or [Tick(v, self(v), _log_label(v, kind)) for v in (lo, hi)]
        return [Tick(v, self(v), _log_label(v, kind)) for v in values]

    def minor_ticks(self, kind: str = "count") -> list[float]:
        """Gridline values between the labelled ticks: 2..9 x 10^k, or the powers of 2 between."""
        _check_kind(kind)
        lo, hi = sorted(self.domain)
        majors = {t.value for t in self.ticks(kind=kind)}
        if kind == "bytes":
            first, last = _ceil(math.log2(lo)), _floor(math.log2(hi))
            values = [2.0 ** e for e in range(first, last + 1)]
        else:
            first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
            values = [_clean(m * 10.0 ** e) for e in range(first, last + 1) for m in range(1, 10)]
        return [v for v in values if lo * (1 - _EPSILON) <= v <= hi * (1 + _EPSILON) and v not in majors]

    def nice(self, kind: str = "count") -> "LogScale":
        """The same scale widened to whole tick steps (decades, or the byte step's powers of 2)."""
        _check_kind(kind)
        lo, hi = sorted(self.domain)
        scale = self
        base = 2 if kind == "bytes" else 10
        for _ in range(3):
            step = scale._exponent_step(kind, 6) if lo != hi else 1
            low = _floor(_log(lo, base) / step) * step
            high = _ceil(_log(hi, base) / step) * step
            if high == low:
                high = low + step
            new = (float(base) ** low, float(base) ** high)
            if self.domain[0] > self.domain[1]:
                new = (new[1], new[0])
            if new == scale.domain:
                break
            scale = LogScale(new, self.range)
            lo, hi = sorted(scale.domain)
        return scale


# ---------------------------------------------------------------------------------------------
# Tick helpers


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"tick kind must be one of {', '.join(KINDS)}, not {kind!r}")


def _log(value: float, base: int) -> float:
    return math.log2(value) if base == 2 else math.log10(value)


def _floor(quotient: float) -> int:
    """floor, forgiving the float error of a division (65536 / 0.001 = 65536000.000000004)."""
    return math.floor(quotient + _QUOTIENT_TOLERANCE * abs(quotient))


def _ceil(quotient: float) -> int:
    return math.ceil(quotient - _QUOTIENT_TOLERANCE * abs(quotient))


def _nice_step(raw: float) -> float:
    """The smallest 1, 2 or 5 x 10^k at least ``raw``."""
    if not raw > 0 or not math.isfinite(raw):
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 5, 10):
        if raw <= multiple * magnitude * (1 + _EPSILON):
            return _clean(multiple * magnitude)
    return _clean(10 * magnitude)


def _clean(value: float) -> float:
    """Drop float noise: 0.30000000000000004 -> 0.3."""
    return float(f"{value:.12g}")


def _unit_exponent(magnitude: float, kind: str) -> int:
    """The IEC (bytes) or SI (count) prefix the labels of an axis reaching ``magnitude`` use."""
    if kind == "number" or magnitude < 1:
        return 0
    base = 1024 if kind == "bytes" else 1000
    exponent = 0
    while exponent + 1 < len(_IEC_UNITS) and magnitude >= base ** (exponent + 1) * (1 - _EPSILON):
        exponent += 1
    return exponent


def _unit(kind: str, exponent: int) -> float:
    return float((1024 if kind == "bytes" else 1000) ** exponent) if kind != "number" else 1.0


def _fixed(value: float, decimals: int) -> str:
    """``value`` with thousands separators and at most ``decimals`` decimals, trailing zeros cut."""
    text = f"{value:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _linear_label(in_unit: float, exponent: int, kind: str, decimals: int) -> str:
    if in_unit == 0:
        return "0"
    text = _fixed(in_unit, decimals)
    if kind == "bytes":
        return f"{text} {_IEC_UNITS[exponent]}"
    if kind == "count" and _SI_PREFIXES[exponent]:
        return f"{text} {_SI_PREFIXES[exponent]}"
    return text


def _log_label(value: float, kind: str) -> str:
    if kind == "bytes":
        return iec(int(value)) if value >= 1 and float(value).is_integer() else iec(value) if value >= 1024 else f"{value:.3g} B"
    if kind == "count":
        return si(value)
    return f"{value:,.15g}"


# ---------------------------------------------------------------------------------------------
# Series


@dataclass(frozen=True)
class Bucket:
    """Consecutive steps drawn in one pixel column, at their maximum."""

    first: int
    last: int  # inclusive
    peak_step: int  # the first step holding the maximum
    value: float


def _partition(length: int, columns: int) -> Iterable[tuple[int, int]]:
    """``length`` steps split into ``min(length, columns)`` runs of near-equal size."""
    if length <= 0:
        return
    columns = max(1, min(int(columns), length))
    for column in range(columns):
        yield column * length // columns, (column + 1) * length // columns - 1


def downsample(values: Sequence[float], columns: int) -> tuple[Bucket, ...]:
    """One bucket per step when they fit in ``columns``, else one per column holding its max."""
    buckets = []
    for first, last in _partition(len(values), columns):
        peak_step = max(range(first, last + 1), key=lambda i: (values[i], -i))
        buckets.append(Bucket(first, last, peak_step, values[peak_step]))
    return tuple(buckets)


def svg_number(value: float) -> str:
    """A pixel coordinate for SVG: one decimal, no trailing zero (``12.0`` -> ``12``)."""
    text = f"{value:.1f}"
    text = text[:-2] if text.endswith(".0") else text
    return "0" if text == "-0" else text


def step_path(buckets: Sequence[Bucket], x: LinearScale, y: LinearScale) -> str:
    """SVG path data of a step series: step ``i`` is level over ``[x(i - 0.5), x(i + 0.5)]``."""
    parts: list[str] = []
    previous = None
    for bucket in buckets:
        level = svg_number(y(bucket.value))
        if previous is None:
            parts.append(f"M{svg_number(x(bucket.first - 0.5))},{level}")
        elif level != previous:
            parts.append(f"V{level}")
        parts.append(f"H{svg_number(x(bucket.last + 0.5))}")
        previous = level
    return "".join(_merge_horizontals(parts))


def _merge_horizontals(parts: list[str]) -> list[str]:
    merged: list[str] = []
    for part in parts:
        if part.startswith("H") and merged and merged[-1].startswith("H"):
            merged[-1] = part
        else:
            merged.append(part)
    return merged


def area_points(buckets: Sequence[Bucket], x: LinearScale, y: LinearScale, baseline: float = 0.0) -> str:
    """The ``points`` of an SVG polygon filling a step series down to ``baseline``."""
    if not buckets:
        return ""
    points = []
    for bucket in buckets:
        level = svg_number(y(bucket.value))
        points.append(f"{svg_number(x(bucket.first - 0.5))},{level}")
        points.append(f"{svg_number(x(bucket.last + 0.5))},{level}")
    base = svg_number(y(baseline))
    points.append(f"{svg_number(x(buckets[-1].last + 0.5))},{base}")
    points.append(f"{svg_number(x(buckets[0].first - 0.5))},{base}")
    return " ".join(points)


def line_path(points: Iterable[tuple[float, float]], x: "LinearScale | LogScale", y: "LinearScale | LogScale") -> str:
    """SVG path data through data points, straight segments (a roofline, a polyline series)."""
    parts = []
    for index, (px, py) in enumerate(points):
        parts.append(f"{'M' if index == 0 else 'L'}{svg_number(x(px))},{svg_number(y(py))}")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# A whole timeline


@dataclass(frozen=True)
class Box:
    left: float
    top: float
    right: float
    bottom: float

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def height(self) -> float:
        return self.bottom - self.top


@dataclass(frozen=True)
class Marker:
    step: int
    value: float
    x: float  # the middle of the step
    y: float


@dataclass(frozen=True)
class SeriesGeometry:
    key: str
    path: str  # the ``d`` of the series' one <path>
    area: str  # the ``points`` of a polygon filling it down to 0
    buckets: tuple[Bucket, ...]
    peak: Marker | None  # the first step holding the series' maximum


@dataclass(frozen=True)
class ReferenceLine:
    label: str
    value: float
    y: float | None  # None: above the chart (more than ``reference_headroom`` x the data)


@dataclass(frozen=True)
class Column:
    """A hover target: steps ``first..last`` over ``[x, x + width]``."""

    first: int
    last: int
    x: float
    width: float


@dataclass(frozen=True)
class TimelineChart:
    width: float
    height: float
    plot: Box
    steps: int
    x: LinearScale  # step index -> pixel (step i is centred on x(i))
    y: LinearScale  # value -> pixel, niced from 0
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    series: tuple[SeriesGeometry, ...]
    references: tuple[ReferenceLine, ...]
    columns: tuple[Column, ...]


def timeline_chart(
    series: Sequence[tuple[str, Sequence[float]]],
    references: Sequence[tuple[str, float]] = (),
    *,
    width: float = 1200,
    height: float = 300,
    margin: tuple[float, float, float, float] = (28, 24, 44, 72),  # top, right, bottom, left
    y_kind: str = "bytes",
    x_ticks: int = 10,
    y_ticks: int = 5,
    hover_width: float = 4.0,
    reference_headroom: float = 4.0,
) -> TimelineChart:
    """Lay out step series (``(key, values per step)``) and horizontal reference lines
    (``(label, value)``, e.g. each target's on-chip capacity) in a ``width`` x ``height`` box.

    The y axis starts at 0 and is widened to round ticks; a reference line more than
    ``reference_headroom`` times the largest value would flatten the series, so it is left off
    the plot (its ``y`` is None) for the caller to list instead. Each series is downsampled to
    one bucket per pixel column (its maximum); hover columns are at least ``hover_width`` wide.
    """
    top, right, bottom, left = margin
    plot = Box(left, top, width - right, height - bottom)
    steps = max((len(values) for _, values in series), default=0)
    x = LinearScale((-0.5, max(steps, 1) - 0.5), (plot.left, plot.right))
    data_max = max((max(values) for _, values in series if len(values)), default=0)
    shown = [(label, value) for label, value in references if data_max <= 0 or value <= reference_headroom * data_max]
    top_value = max([data_max, *(value for _, value in shown)])
    y = LinearScale((0, top_value if top_value > 0 else 1), (plot.bottom, plot.top)).nice(y_ticks, y_kind)
    step_axis = LinearScale((0, max(steps - 1, 0)), (x(0), x(max(steps - 1, 0))))
    ticks = tuple(
        Tick(t.value, x(t.value), t.label) for t in step_axis.ticks(x_ticks) if float(t.value).is_integer()
    ) if steps else ()
    geometries = []
    for key, values in series:
        buckets = downsample(values, max(1, int(plot.width)))
        peak = None
        if buckets:
            best = max(buckets, key=lambda b: (b.value, -b.peak_step))
            peak = Marker(best.peak_step, best.value, x(best.peak_step), y(best.value))
        geometries.append(SeriesGeometry(key, step_path(buckets, x, y), area_points(buckets, x, y), buckets, peak))
    lines = tuple(
        ReferenceLine(label, value, y(value) if (label, value) in shown else None) for label, value in references
    )
    columns = tuple(
        Column(first, last, x(first - 0.5), x(last + 0.5) - x(first - 0.5))
        for first, last in _partition(steps, max(1, int(plot.width / max(hover_width, 1.0))))
    ) if steps else ()
    return TimelineChart(
        width=width, height=height, plot=plot, steps=steps, x=x, y=y,
        x_ticks=ticks, y_ticks=tuple(y.ticks(y_ticks, y_kind)),
        series=tuple(geometries), references=lines, columns=columns,
    )



# ---------------------------------------------------------------------------------------------
# Roofline


@dataclass(frozen=True)
class RooflinePoint:
    """A point to place: FLOP per DRAM byte (None: the point moves no DRAM bytes), FLOP/s, and a
    weight in [0, 1] (a share of time) that sets the dot's area."""

    intensity: float | None
    performance: float
    weight: float = 0.0


@dataclass(frozen=True)
class PlacedPoint:
    x: float
    y: float
    r: float  # radius: area proportional to the weight
    clamped: bool  # outside the axes' domain: drawn on the nearest edge
    unbounded: bool  # no DRAM bytes: drawn in the "∞" strip right of the plot


@dataclass(frozen=True)
class ComputeRoof:
    """A horizontal compute roof from its ridge to the plot's right edge."""

    label: str
    value: float  # FLOP/s
    ridge: float  # FLOP/B where the DRAM slope meets it
    y: float
    x1: float  # the ridge's pixel (clipped to the plot)
    x2: float
    ridge_x: float
    ridge_y: float
    ridge_visible: bool
    label_x: float  # where its label goes, and its anchor ("start" | "end")
    label_y: float
    anchor: str


@dataclass(frozen=True)
class Slope:
    """A bandwidth roof: FLOP/s = intensity x bytes/s, a 45-degree line in decades."""

    label: str
    value: float  # bytes/s
    path: str  # "" when it misses the plot
    label_x: float
    label_y: float
    angle: float  # degrees, for rotating its label along the line


@dataclass(frozen=True)
class RooflineChart:
    width: float
    height: float
    plot: Box
    x: LogScale  # FLOP/B -> pixel
    y: LogScale  # FLOP/s -> pixel
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    x_minor: tuple[float, ...]  # pixels of the minor gridlines
    y_minor: tuple[float, ...]
    roofs: tuple[ComputeRoof, ...]  # highest first
    slopes: tuple[Slope, ...]
    points: tuple[PlacedPoint, ...]  # in the order given
    strip: Box | None  # the "∞" column for points with no DRAM bytes, when any
    max_radius: float
    min_radius: float

    def radius(self, weight: float) -> float:
        """Dot radius for a weight: area proportional to it, never below ``min_radius`` (hoverable)."""
        weight = min(max(float(weight), 0.0), 1.0)
        return max(self.min_radius, self.max_radius * math.sqrt(weight))

    def place(self, intensity: float | None, performance: float, weight: float = 0.0, index: int = 0) -> PlacedPoint:
        """Pixel position of a point; outside the domain it is clamped to the edge (and says so).

        A point with no intensity goes in the strip; ``index`` spreads such points across it."""
        r = self.radius(weight)
        clamped = False
        lo_y, hi_y = sorted(self.y.domain)
        perf = float(performance) if performance and performance > 0 else lo_y
        if perf < lo_y or perf > hi_y:
            clamped = True
            perf = min(max(perf, lo_y), hi_y)
        y = self.y(perf)
        if intensity is None:
            if self.strip is None:
                raise ValueError("this chart has no strip for points without DRAM bytes")
            # a golden-ratio sequence spreads stacked points across the strip, each kept inside it
            room = max(0.0, self.strip.width / 2 - r - 2)
            offset = ((index * 0.6180339887) % 1.0 - 0.5) * 2 * room
            return PlacedPoint(self.strip.left + self.strip.width / 2 + offset, y, r, clamped, True)
        lo_x, hi_x = sorted(self.x.domain)
        value = float(intensity) if intensity > 0 else lo_x
        if value < lo_x or value > hi_x:
            clamped = True
            value = min(max(value, lo_x), hi_x)
        return PlacedPoint(self.x(value), y, r, clamped, False)


def spread(positions: Sequence[float], gap: float, low: float, high: float) -> list[float]:
    """Move label positions apart to at least ``gap`` pixels, keeping them in ``[low, high]`` and
    in their order; each moves as little as the others allow."""
    if not positions:
        return []
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    placed = [min(max(positions[i], low), high) for i in order]
    for k in range(1, len(placed)):  # push down (larger) from the top
        placed[k] = max(placed[k], placed[k - 1] + gap)
    overflow = placed[-1] - high
    if overflow > 0:  # then back up from the bottom edge
        placed[-1] = high
        for k in range(len(placed) - 2, -1, -1):
            placed[k] = min(placed[k], placed[k + 1] - gap)
    result = [0.0] * len(positions)
    for k, i in enumerate(order):
        result[i] = placed[k]
    return result


def _widen(lo: float, hi: float, pixels: float, length: float) -> tuple[float, float]:
    """A log domain widened by ``pixels`` at each end of an axis ``length`` pixels long."""
    decades = math.log10(hi / lo)
    if length <= 2 * pixels:
        return lo, hi
    extra = decades * pixels / (length - 2 * pixels)
    return lo / 10 ** extra, hi * 10 ** extra


_CHAR_WIDTH = 6.4  # a label's width per character at the charts' 11.5 px font (estimate for layout)
_LABEL_HEIGHT = 10.0  # a label's cap height at that font, in pixels


def roofline_chart(
    roofs: Sequence[tuple[str, float]],
    bandwidths: Sequence[tuple[str, float]],
    points: Sequence[RooflinePoint] = (),
    marks: Sequence[tuple[float | None, float]] = (),
    *,
    width: float = 1240,
    height: float = 460,
    margin: tuple[float, float, float, float] = (20, 24, 46, 78),  # top, right, bottom, left
    strip_width: float = 54,
    max_radius: float = 40.0,
    min_radius: float = 3.0,
    max_decades: tuple[float, float] = (9, 9),  # x, y: a wider data span is clamped to the edge
    pad: float = 2.0,
    x_domain: tuple[float, float] | None = None,  # fixed axes (tests, side-by-side charts)
    y_domain: tuple[float, float] | None = None,
) -> RooflineChart:
    """Lay out a log-log roofline in a ``width`` x ``height`` box.

    ``roofs`` are compute roofs ``(label, FLOP/s)``; ``bandwidths`` are ``(label, bytes/s)``
    slopes, the first being DRAM (its meeting with each roof is that roof's ridge point).
    ``points`` become dots (area proportional to their weight); ``marks`` only widen the axes so
    that later :meth:`RooflineChart.place` calls (model points, sweep paths) land inside them.
    The axes cover every ridge, roof and point with a margin of a factor ``pad``; a point with
    no intensity is drawn in a strip right of the plot, labelled "∞".
    """
    if not roofs or not bandwidths:
        raise ValueError("a roofline needs at least one compute roof and one bandwidth")
    if any(not (v > 0 and math.isfinite(v)) for _, v in (*roofs, *bandwidths)):
        raise ValueError("roofs and bandwidths must be positive and finite")
    dram = bandwidths[0][1]
    everything = [(p.intensity, p.performance) for p in points] + [tuple(m) for m in marks]
    needs_strip = any(i is None for i, _ in everything)
    top, right, bottom, left = margin
    plot_right = width - right - (strip_width + 12 if needs_strip else 0)
    plot = Box(left, top, plot_right, height - bottom)
    strip = Box(plot_right + 12, top, plot_right + 12 + strip_width, height - bottom) if needs_strip else None

    peaks = [v for _, v in roofs]
    ridges = [v / dram for v in peaks]
    intensities = [i for i, _ in everything if i is not None and i > 0 and math.isfinite(i)]
    # every ridge, and where each further slope meets the top roof, so that every line shows
    xs = intensities + ridges + [max(peaks) / b for _, b in bandwidths[1:]]
    # a margin of a factor of pad (about a third of a decade) around the data, ridges and roofs;
    # the axes end there rather than at whole decades, which could leave most of the plot empty
    # past the last ridge, room for the roofs' labels (about a decade of the top roof shows)
    # (and past the last point: the roofs' labels are right-aligned there)
    x_hi = max(max(xs) * pad, max(intensities, default=0) * pad * 2, max(ridges) * 8)
    x_lo = max(min(xs) / pad, x_hi / 10 ** max_decades[0])
    performances = [p for _, p in everything if p and p > 0 and math.isfinite(p)]
    y_hi = max(peaks + performances) * pad * 1.2
    y_lo = max(min(performances + [min(peaks)]) / pad, y_hi / 10 ** max_decades[1])
    # room for the largest dot's radius on every side, so no dot hangs off the plot
    largest = max((max(min_radius, max_radius * math.sqrt(min(max(p.weight, 0.0), 1.0))) for p in points), default=0.0)
    if largest:
        x_lo, x_hi = _widen(x_lo, x_hi, largest + 2, plot.width)
        y_lo, y_hi = _widen(y_lo, y_hi, largest + 2, plot.height)
    if x_domain is not None:
        x_lo, x_hi = x_domain
    if y_domain is not None:
        y_lo, y_hi = y_domain
    x = LogScale((x_lo, x_hi), (plot.left, plot.right))
    y = LogScale((y_lo, y_hi), (plot.bottom, plot.top))
    x_ticks = tuple(x.ticks(12, "count"))
    y_ticks = tuple(y.ticks(12, "count"))
    x_minor = tuple(x(v) for v in x.minor_ticks()) if x_hi / x_lo <= 1e7 else ()
    y_minor = tuple(y(v) for v in y.minor_ticks()) if y_hi / y_lo <= 1e7 else ()

    # compute roofs, highest first; each from its ridge to the right edge
    ordered = sorted(zip(roofs, ridges), key=lambda item: -item[0][1])
    top_peak = ordered[0][0][1]
    raw = []
    for (label, peak), ridge in ordered:
        ry = y(peak)
        rx = x(min(max(ridge, x_lo), x_hi))
        raw.append((label, peak, ridge, ry, rx))
    # labels right-aligned at the right edge, just above their roof; one that would touch the
    # roof (or label) above it goes just below its own line instead
    label_ys = []
    occupied = plot.top - 2.0  # the lowest pixel taken by the roofs and labels above
    for _, _, _, ry, _ in raw:
        if ry - 6 - _LABEL_HEIGHT >= occupied + 1:
            label_ys.append(ry - 6)
            occupied = ry + 1
        else:
            label_ys.append(ry + 5 + _LABEL_HEIGHT)
            occupied = ry + 7 + _LABEL_HEIGHT
    compute = []
    for (label, peak, ridge, ry, rx), ly in zip(raw, label_ys):
        compute.append(ComputeRoof(
            label=label, value=peak, ridge=ridge, y=ry, x1=rx, x2=plot.right,
            ridge_x=rx, ridge_y=ry, ridge_visible=x_lo <= ridge <= x_hi,
            label_x=plot.right - 4, label_y=ly, anchor="end",
        ))

    slopes = []
    for index, (label, bandwidth) in enumerate(bandwidths):
        start = max(x_lo, y_lo / bandwidth)  # where the slope enters the plot
        end = min(x_hi, top_peak / bandwidth, y_hi / bandwidth)  # up to the highest roof
        if start >= end:
            slopes.append(Slope(label, bandwidth, "", 0.0, 0.0, 0.0))
            continue
        x1, y1, x2, y2 = x(start), y(start * bandwidth), x(end), y(end * bandwidth)
        angle = math.degrees(math.atan2(y2 - y1, x2 - x1))
        # the label sits along the line, a fifth of the way up (further for the second slope)
        t = 0.18 + 0.2 * index
        lx, ly = x1 + (x2 - x1) * t, y1 + (y2 - y1) * t
        normal = math.radians(angle - 90)
        slopes.append(Slope(label, bandwidth, f"M{svg_number(x1)},{svg_number(y1)}L{svg_number(x2)},{svg_number(y2)}",
                            lx + 7 * math.cos(normal), ly + 7 * math.sin(normal), angle))

    chart = RooflineChart(
        width=width, height=height, plot=plot, x=x, y=y, x_ticks=x_ticks, y_ticks=y_ticks,
        x_minor=x_minor, y_minor=y_minor, roofs=tuple(compute), slopes=tuple(slopes), points=(), strip=strip,
        max_radius=max_radius, min_radius=min_radius,
    )
    placed = []
    unbounded = 0
    for point in points:
        placed.append(chart.place(point.intensity, point.performance, point.weight, unbounded))
        if point.intensity is None:
            unbounded += 1
    return RooflineChart(**{**chart.__dict__, "points": tuple(placed)})


# ---------------------------------------------------------------------------------------------
# Lines through (x, y) points


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
    x: "LinearScale | LogScale"
    y: "LinearScale | LogScale"
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    series: tuple[XYSeries, ...]


def xy_chart(
    xs: Sequence[float | str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    width: float = 620,
    height: float = 300,
    margin: tuple[float, float, float, float] = (16, 20, 44, 70),
    y_kind: str = "number",
    log_ratio: float = 30.0,
) -> XYChart:
    """Lay out series sharing the x values ``xs``.

    x is categorical (evenly spaced, labelled by the values) unless every value is a positive
    number, then logarithmic when they span ``log_ratio`` or more, else linear. y starts at 0 and
    is linear unless the values span ``log_ratio`` or more, then logarithmic. Missing values
    (None) break the line.
    """
    _check_kind(y_kind)
    top, right, bottom, left = margin
    plot = Box(left, top, width - right, height - bottom)
    numeric = bool(xs) and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in xs)
    if numeric and len(set(xs)) == len(xs) and list(xs) == sorted(xs) and max(xs) / min(xs) >= log_ratio:
        x_mode = "log"
        x_scale: LinearScale | LogScale = LogScale((min(xs), max(xs)), (plot.left + 14, plot.right - 14))
        ticks_x = x_scale.ticks(8, "count")
        values = {v: x_scale(v) for v in xs}
        # the swept values themselves are the clearest ticks when there are few
        if len(xs) <= 10:
            ticks_x = [Tick(float(v), x_scale(v), _fixed(float(v), 6)) for v in xs]
    elif numeric and len(set(xs)) == len(xs) and list(xs) == sorted(xs) and len(xs) > 1:
        x_mode = "linear"
        x_scale = LinearScale((min(xs), max(xs)), (plot.left + 14, plot.right - 14))
        ticks_x = [Tick(float(v), x_scale(v), _fixed(float(v), 6)) for v in xs] if len(xs) <= 10 else x_scale.ticks(8)
        values = {v: x_scale(v) for v in xs}
    else:
        x_mode = "category"
        x_scale = LinearScale((-0.5, max(len(xs), 1) - 0.5), (plot.left, plot.right))
        ticks_x = [Tick(float(i), x_scale(i), str(v)) for i, v in enumerate(xs)]
        values = None
    present = [v for _, ys in series for v in ys if v is not None and math.isfinite(v)]
    positive = [v for v in present if v > 0]
    if positive and len(positive) == len(present) and max(positive) / min(positive) >= log_ratio:
        y_mode = "log"
        y_scale: LinearScale | LogScale = LogScale((min(positive), max(positive)), (plot.bottom, plot.top)).nice()
        ticks_y = y_scale.ticks(6, y_kind)
    else:
        y_mode = "linear"
        y_scale = LinearScale((0, max(present) if present and max(present) > 0 else 1), (plot.bottom, plot.top)).nice(5, y_kind)
        ticks_y = y_scale.ticks(5, y_kind)
    laid = []
    for key, ys in series:
        pixels: list[tuple[float, float] | None] = []
        for index, value in enumerate(ys):
            if value is None or not math.isfinite(value) or (y_mode == "log" and value <= 0):
                pixels.append(None)
                continue
            px = values[xs[index]] if values is not None else x_scale(index)
            pixels.append((px, y_scale(value)))
        parts, pen = [], False
        for pixel in pixels:
            if pixel is None:
                pen = False
                continue
            parts.append(f"{'L' if pen else 'M'}{svg_number(pixel[0])},{svg_number(pixel[1])}")
            pen = True
        laid.append(XYSeries(key, "".join(parts), tuple(pixels)))
    return XYChart(width, height, plot, x_mode, y_mode, x_scale, y_scale, tuple(ticks_x), tuple(ticks_y), tuple(laid))


# ---------------------------------------------------------------------------------------------
# Labels beside points


@dataclass(frozen=True)
class Label:
    x: float
    y: float  # the text's baseline
    anchor: str  # "start" | "end" (SVG text-anchor)


Rect = tuple[float, float, float, float]  # left, top, right, bottom


def label_rect(x: float, y: float, anchor: str, text: str, char_width: float = _CHAR_WIDTH,
               height: float = _LABEL_HEIGHT + 2) -> Rect:
    """The box a label occupies (estimated from its length)."""
    width = len(text) * char_width
    left = x - width if anchor == "end" else x - width / 2 if anchor == "middle" else x
    return (left, y - height, left + width, y + 2)


def _overlaps(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(points: Sequence[tuple[float, float, str]], box: Box, obstacles: Sequence[Rect] = (),
                 gap: float = 8.0, char_width: float = _CHAR_WIDTH) -> list[Label | None]:
    """A spot for each point's label where it overlaps no other label, point or obstacle.

    Tried in turn: above right, above left, below right, below left, then the same further out.
    A label that fits nowhere is None (its point keeps its tooltip). Points are (x, y, text);
    an empty text gets no label."""
    taken: list[Rect] = list(obstacles) + [(x - 6, y - 6, x + 6, y + 6) for x, y, _ in points]
    placed: list[Label | None] = []
    for x, y, text in points:
        if not text:
            placed.append(None)
            continue
        own = (x - 6, y - 6, x + 6, y + 6)
        found = None
        for rise in (1, 2.6, 4.2):
            for dx, dy, anchor in ((gap, -gap * rise, "start"), (-gap, -gap * rise, "end"),
                                   (gap, gap * rise + _LABEL_HEIGHT, "start"), (-gap, gap * rise + _LABEL_HEIGHT, "end")):
                label = Label(x + dx, y + dy, anchor)
                rect = label_rect(label.x, label.y, anchor, text, char_width)
                if rect[0] < box.left or rect[2] > box.right or rect[1] < box.top or rect[3] > box.bottom:
                    continue
                if any(_overlaps(rect, other) for other in taken if other != own):
                    continue
                found = (label, rect)
                break
            if found:
                break
        if found is None:
            placed.append(None)
            continue
        placed.append(found[0])
        taken.append(found[1])
    return placed
