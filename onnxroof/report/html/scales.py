"""Chart scales and SVG path data for the HTML report, computed in Python.

Everything here is pure (numbers in; numbers, labels and SVG path data out). A scale maps a
*domain* (data values) onto a *range* (pixels); a range may run backwards, as a y axis does
(``(bottom, top)``). The charts built on these are in ``charts.py``.

- :class:`LinearScale`: 1-2-5 ticks; ``kind="bytes"`` labels them in one IEC unit
  (``200 KiB``), ``kind="count"`` in one SI unit (``200 k``).
- :class:`LogScale`: decade ticks (powers of 10, SI labels) or, for bytes, powers of 2 with IEC
  labels (``1 KiB``, ``32 KiB``, ``1 MiB``); the roofline chart uses two of them.
- :func:`downsample` keeps each pixel column's maximum, so no peak is ever lost.
- :func:`step_path`, :func:`line_path`, :func:`area_points`: SVG path data.

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ...core.units import iec, si

__all__ = [
    "KINDS",
    "Tick",
    "LinearScale",
    "LogScale",
    "Bucket",
    "downsample",
    "step_path",
    "line_path",
    "area_points",
    "svg_number",
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
        check_kind(kind)
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

    def nice(self, count: int = 5, kind: str = "number") -> LinearScale:
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
        check_kind(kind)
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
                _clean(m * 10.0**e)
                for e in range(first - 1, last + 1)
                for m in (1, 2, 5)
                if lo * (1 - _EPSILON) <= m * 10.0**e <= hi * (1 + _EPSILON)
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
        check_kind(kind)
        lo, hi = sorted(self.domain)
        majors = {t.value for t in self.ticks(kind=kind)}
        if kind == "bytes":
            first, last = _ceil(math.log2(lo)), _floor(math.log2(hi))
            values = [2.0**e for e in range(first, last + 1)]
        else:
            first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
            values = [_clean(m * 10.0**e) for e in range(first, last + 1) for m in range(1, 10)]
        return [v for v in values if lo * (1 - _EPSILON) <= v <= hi * (1 + _EPSILON) and v not in majors]

    def nice(self, kind: str = "count") -> LogScale:
        """The same scale widened to whole tick steps (decades, or the byte step's powers of 2)."""
        check_kind(kind)
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


def check_kind(kind: str) -> None:
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


def fixed_decimals(value: float, decimals: int) -> str:
    """``value`` with thousands separators and at most ``decimals`` decimals, trailing zeros cut."""
    text = f"{value:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _linear_label(in_unit: float, exponent: int, kind: str, decimals: int) -> str:
    if in_unit == 0:
        return "0"
    text = fixed_decimals(in_unit, decimals)
    if kind == "bytes":
        return f"{text} {_IEC_UNITS[exponent]}"
    if kind == "count" and _SI_PREFIXES[exponent]:
        return f"{text} {_SI_PREFIXES[exponent]}"
    return text


def _log_label(value: float, kind: str) -> str:
    if kind == "bytes":
        return (
            iec(int(value))
            if value >= 1 and float(value).is_integer()
            else iec(value)
            if value >= 1024
            else f"{value:.3g} B"
        )
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


def partition(length: int, columns: int) -> Iterable[tuple[int, int]]:
    """``length`` steps split into ``min(length, columns)`` runs of near-equal size."""
    if length <= 0:
        return
    columns = max(1, min(int(columns), length))
    for column in range(columns):
        yield column * length // columns, (column + 1) * length // columns - 1


def downsample(values: Sequence[float], columns: int) -> tuple[Bucket, ...]:
    """One bucket per step when they fit in ``columns``, else one per column holding its max."""
    buckets = []
    for first, last in partition(len(values), columns):
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


def line_path(points: Iterable[tuple[float, float]], x: LinearScale | LogScale, y: LinearScale | LogScale) -> str:
    """SVG path data through data points, straight segments (a roofline, a polyline series)."""
    parts = []
    for index, (px, py) in enumerate(points):
        parts.append(f"{'M' if index == 0 else 'L'}{svg_number(x(px))},{svg_number(y(py))}")
    return "".join(parts)
