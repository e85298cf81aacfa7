"""Chart geometry for the HTML report: whole charts laid out in Python, on the scales of
``scales.py``. Everything here is pure, so the templates only place strings.

- :func:`timeline_chart`: a whole step-by-step timeline (several series, horizontal reference
  lines such as on-chip capacities, hover columns) laid out in one box.
- :func:`roofline_chart`: a log-log roofline (compute roofs, bandwidth slopes, ridge points, one
  dot per point with its area proportional to a weight, an "∞" strip for points that move no DRAM
  bytes); :meth:`RooflineChart.place` puts any further mark (a model point, a sweep path, an
  arrow's end) on the same axes.
- ``xy_chart.py`` (beside it): lines through (x, y) points on linear, log or categorical axes (a sweep).
- :func:`place_labels`: a spot beside each point for its label, clear of the others.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .scales import Bucket, LinearScale, LogScale, Tick, area_points, downsample, partition, step_path, svg_number

__all__ = [
    "Box",
    "Marker",
    "SeriesGeometry",
    "ReferenceLine",
    "Column",
    "TimelineChart",
    "timeline_chart",
    "RooflinePoint",
    "PlacedPoint",
    "ComputeRoof",
    "Slope",
    "RooflineChart",
    "roofline_chart",
    "spread",
    "Label",
    "label_rect",
    "place_labels",
]


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
    ticks = (
        tuple(Tick(t.value, x(t.value), t.label) for t in step_axis.ticks(x_ticks) if float(t.value).is_integer())
        if steps
        else ()
    )
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
    columns = (
        tuple(
            Column(first, last, x(first - 0.5), x(last + 0.5) - x(first - 0.5))
            for first, last in partition(steps, max(1, int(plot.width / max(hover_width, 1.0))))
        )
        if steps
        else ()
    )
    return TimelineChart(
        width=width,
        height=height,
        plot=plot,
        steps=steps,
        x=x,
        y=y,
        x_ticks=ticks,
        y_ticks=tuple(y.ticks(y_ticks, y_kind)),
        series=tuple(geometries),
        references=lines,
        columns=columns,
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
    on_line: bool = False  # its label sits on its own line (roofs too close for room above or below)


@dataclass(frozen=True)
class Slope:
    """A bandwidth roof: FLOP/s = intensity x bytes/s, a 45-degree line in decades."""

    label: str
    value: float  # bytes/s
    path: str  # "" when it misses the plot
    label_x: float
    label_y: float
    angle: float  # degrees, for rotating its label along the line
    ends: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # x1, y1, x2, y2: where it enters and ends

    def label_at(self, t: float) -> tuple[float, float]:
        """Where its label starts, a share ``t`` of the way along the line, just above it."""
        x1, y1, x2, y2 = self.ends
        normal = math.radians(self.angle - 90)
        return x1 + (x2 - x1) * t + 7 * math.cos(normal), y1 + (y2 - y1) * t + 7 * math.sin(normal)

    def label_box(self, x: float, y: float, text: str, char_width: float = 6.2) -> Rect:
        """The axis-aligned box around its rotated label starting at (x, y)."""
        length, angle = len(text) * char_width, math.radians(self.angle)
        dx, dy = length * math.cos(angle), length * math.sin(angle)
        return (min(x, x + dx) - 2, min(y, y + dy) - 12, max(x, x + dx) + 2, max(y, y + dy) + 3)


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
    return lo / 10**extra, hi * 10**extra


SLOPE_LABEL_AT = 0.18  # where along a bandwidth slope its label starts (the second one's further up)
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
    everything = [(p.intensity, p.performance) for p in points] + [tuple(m) for m in marks]
    needs_strip = any(i is None for i, _ in everything)
    top, right, bottom, left = margin
    plot_right = width - right - (strip_width + 12 if needs_strip else 0)
    plot = Box(left, top, plot_right, height - bottom)
    strip = Box(plot_right + 12, top, plot_right + 12 + strip_width, height - bottom) if needs_strip else None

    ridges = [v / bandwidths[0][1] for _, v in roofs]  # where the DRAM slope meets each roof
    x_lo, x_hi, y_lo, y_hi = _roofline_domain(roofs, bandwidths, ridges, everything, pad, max_decades)
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
    chart = RooflineChart(
        width=width,
        height=height,
        plot=plot,
        x=x,
        y=y,
        x_ticks=tuple(x.ticks(12, "count")),
        y_ticks=tuple(y.ticks(12, "count")),
        x_minor=tuple(x(v) for v in x.minor_ticks()) if x_hi / x_lo <= 1e7 else (),
        y_minor=tuple(y(v) for v in y.minor_ticks()) if y_hi / y_lo <= 1e7 else (),
        roofs=_compute_roofs(roofs, ridges, x, y, plot),
        slopes=_slopes(bandwidths, max(v for _, v in roofs), x, y),
        points=(),
        strip=strip,
        max_radius=max_radius,
        min_radius=min_radius,
    )
    return replace(chart, points=_placed_points(chart, points))


def _roofline_domain(
    roofs: Sequence[tuple[str, float]],
    bandwidths: Sequence[tuple[str, float]],
    ridges: list[float],
    everything: list,
    pad: float,
    max_decades: tuple[float, float],
) -> tuple[float, float, float, float]:
    """x_lo, x_hi (FLOP/B), y_lo, y_hi (FLOP/s): every ridge, roof and point with a margin."""
    peaks = [v for _, v in roofs]
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
    return x_lo, x_hi, y_lo, y_hi


def _compute_roofs(
    roofs: Sequence[tuple[str, float]], ridges: list[float], x: LogScale, y: LogScale, plot: Box
) -> tuple[ComputeRoof, ...]:
    """The compute roofs, highest first; each from its ridge to the right edge."""
    x_lo, x_hi = x.domain
    ordered = sorted(zip(roofs, ridges), key=lambda item: -item[0][1])
    raw = [(label, peak, ridge, y(peak), x(min(max(ridge, x_lo), x_hi))) for (label, peak), ridge in ordered]
    rows = _roof_label_rows([ry for *_, ry, _ in raw], plot)
    return tuple(
        ComputeRoof(
            label=label,
            value=peak,
            ridge=ridge,
            y=ry,
            x1=rx,
            x2=plot.right,
            ridge_x=rx,
            ridge_y=ry,
            ridge_visible=x_lo <= ridge <= x_hi,
            label_x=plot.right - 4,
            label_y=ly,
            anchor="end",
            on_line=inline,
        )
        for (label, peak, ridge, ry, rx), (ly, inline) in zip(raw, rows)
    )


def _roof_label_rows(roof_ys: list[float], plot: Box) -> list[tuple[float, bool]]:
    """Each roof's label baseline (top roof first) and whether it sits on its own line.

    Labels are right-aligned at the right edge, just above their roof; one that would touch the
    roof (or label) above it goes just below its own line instead, and one that would cross the
    next roof there too (three roofs 2x apart: fp8, fp16, tf32) sits on its own line, which its
    halo hides behind the text."""
    rows = []
    occupied = plot.top - 2.0  # the lowest pixel taken by the roofs and labels above
    for index, ry in enumerate(roof_ys):
        next_ry = roof_ys[index + 1] if index + 1 < len(roof_ys) else plot.bottom
        below = max(ry + 5 + _LABEL_HEIGHT, occupied + 2 + _LABEL_HEIGHT)
        if ry - 6 - _LABEL_HEIGHT >= occupied + 1:
            label_y = ry - 6
            occupied = ry + 1
        elif below + 4 <= next_ry:
            label_y = below
            occupied = below + 5  # the descenders under the baseline
        else:
            label_y = max(ry + _LABEL_HEIGHT / 2, occupied + 2 + _LABEL_HEIGHT)
            occupied = label_y + 5
        rows.append((label_y, label_y - _LABEL_HEIGHT - 1 < ry < label_y + 4))
    return rows


def _slopes(bandwidths: Sequence[tuple[str, float]], top_peak: float, x: LogScale, y: LogScale) -> tuple[Slope, ...]:
    """The bandwidth slopes, each from where it enters the plot up to the highest roof."""
    (x_lo, x_hi), (y_lo, y_hi) = x.domain, y.domain
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
        slope = Slope(
            label,
            bandwidth,
            f"M{svg_number(x1)},{svg_number(y1)}L{svg_number(x2)},{svg_number(y2)}",
            0.0,
            0.0,
            angle,
            (x1, y1, x2, y2),
        )
        slopes.append(replace(slope, **dict(zip(("label_x", "label_y"), slope.label_at(SLOPE_LABEL_AT + 0.2 * index)))))
    return tuple(slopes)


def _placed_points(chart: RooflineChart, points: Sequence[RooflinePoint]) -> tuple[PlacedPoint, ...]:
    """The points on the chart, in order; those with no intensity spread across the strip."""
    placed = []
    unbounded = 0
    for point in points:
        placed.append(chart.place(point.intensity, point.performance, point.weight, unbounded))
        if point.intensity is None:
            unbounded += 1
    return tuple(placed)


# ---------------------------------------------------------------------------------------------
# Labels beside points


@dataclass(frozen=True)
class Label:
    x: float
    y: float  # the text's baseline
    anchor: str  # "start" | "end" (SVG text-anchor)


Rect = tuple[float, float, float, float]  # left, top, right, bottom


def label_rect(
    x: float, y: float, anchor: str, text: str, char_width: float = _CHAR_WIDTH, height: float = _LABEL_HEIGHT + 2
) -> Rect:
    """The box a label occupies (estimated from its length)."""
    width = len(text) * char_width
    left = x - width if anchor == "end" else x - width / 2 if anchor == "middle" else x
    return (left, y - height, left + width, y + 2)


def _overlaps(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(
    points: Sequence[tuple[float, float, str]],
    box: Box,
    obstacles: Sequence[Rect] = (),
    gap: float = 8.0,
    char_width: float = _CHAR_WIDTH,
) -> list[Label | None]:
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
            for dx, dy, anchor in (
                (gap, -gap * rise, "start"),
                (-gap, -gap * rise, "end"),
                (gap, gap * rise + _LABEL_HEIGHT, "start"),
                (-gap, gap * rise + _LABEL_HEIGHT, "end"),
            ):
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
