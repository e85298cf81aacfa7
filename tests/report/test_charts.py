"""Chart geometry (onnxroof/report/charts.py): known values land on known pixels, ticks are round
and cover the domain, downsampling never loses a peak, empty and one-step series still draw."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxroof.report.html.charts import (
    Box,
    RooflinePoint,
    label_rect,
    place_labels,
    roofline_chart,
    spread,
    timeline_chart,
)
from onnxroof.report.html.scales import Bucket, LinearScale, LogScale, area_points, downsample, line_path, step_path
from onnxroof.report.html.xy_chart import xy_chart

# ---------------------------------------------------------------------------------------------
# Linear scale


def test_linear_known_value_lands_on_known_pixel():
    assert LinearScale((0, 100), (0, 500))(20) == 100
    # a y axis runs backwards: 0 at the bottom (300 px), 800 at the top (0 px)
    y = LinearScale((0, 800), (300, 0))
    assert y(0) == 300 and y(800) == 0 and y(200) == 225
    assert y.invert(225) == 200
    assert LinearScale((-50, 50), (100, 200))(0) == 150


def test_linear_zero_width_domain_maps_to_the_middle():
    scale = LinearScale((7, 7), (0, 100))
    assert scale(7) == 50
    assert [t.value for t in scale.ticks()] == [7]


def test_linear_rejects_non_finite():
    with pytest.raises(ValueError):
        LinearScale((0, math.inf), (0, 1))


def test_byte_ticks_use_one_iec_unit():
    scale = LinearScale((0, 786_432), (300, 0)).nice(kind="bytes")  # MiniGoogLeNet's peak
    assert scale.domain == (0, 800 * 1024)
    ticks = scale.ticks(kind="bytes")
    assert [t.label for t in ticks] == ["0", "200 KiB", "400 KiB", "600 KiB", "800 KiB"]
    assert [t.value for t in ticks] == [k * 200 * 1024 for k in range(5)]
    assert [t.position for t in ticks] == [300, 225, 150, 75, 0]
    # widening past 1,024 KiB moves the labels to MiB
    mib = LinearScale((0, 1.2 * 2**20), (0, 1)).nice(kind="bytes")
    assert [t.label for t in mib.ticks(kind="bytes")] == ["0", "0.5 MiB", "1 MiB", "1.5 MiB"]
    # never a fraction of a byte
    assert [t.label for t in LinearScale((0, 3), (0, 1)).ticks(kind="bytes")] == ["0", "1 B", "2 B", "3 B"]


def test_count_and_number_ticks():
    assert [t.label for t in LinearScale((0, 73), (0, 1)).ticks(10)] == [str(v) for v in range(0, 80, 10)]
    labels = [t.label for t in LinearScale((0, 2500), (0, 1)).ticks(5)]
    assert labels == ["0", "500", "1,000", "1,500", "2,000", "2,500"]
    labels = [t.label for t in LinearScale((0, 2.5e6), (0, 1)).ticks(5, "count")]
    assert labels == ["0", "0.5 M", "1 M", "1.5 M", "2 M", "2.5 M"]
    with pytest.raises(ValueError):
        LinearScale((0, 1), (0, 1)).ticks(kind="furlongs")


@settings(max_examples=300, deadline=None)
@given(
    lo=st.floats(-1e9, 1e9, allow_nan=False),
    relative=st.floats(1e-6, 1e6),
    count=st.integers(2, 12),
    kind=st.sampled_from(["number", "count", "bytes"]),
)
def test_ticks_are_round_and_cover_the_niced_domain(lo, relative, count, kind):
    span = max(abs(lo), 1e-3) * relative  # a chart's data spans at least a millionth of its size
    hi = lo + span
    scale = LinearScale((lo, hi), (0, 1000)).nice(count, kind)
    ticks = scale.ticks(count, kind)
    assert len(ticks) >= 2
    # cover: the niced domain starts and ends on a tick, and contains the data
    assert ticks[0].value == pytest.approx(scale.domain[0], rel=1e-9, abs=1e-9 * span)
    assert ticks[-1].value == pytest.approx(scale.domain[1], rel=1e-9, abs=1e-9 * span)
    assert scale.domain[0] <= lo + 1e-9 * span and scale.domain[1] >= hi - 1e-9 * span
    # round: one step, 1, 2 or 5 x 10^k in the label unit
    steps = [b.value - a.value for a, b in zip(ticks, ticks[1:])]
    magnitude = max(abs(ticks[0].value), abs(ticks[-1].value))
    assert all(s == pytest.approx(steps[0], abs=1e-9 * magnitude + 1e-12) for s in steps)
    unit = _label_unit(ticks, kind)
    mantissa = steps[0] / unit / 10 ** math.floor(math.log10(steps[0] / unit) + 1e-12)
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 1e-6, (steps[0], unit, [t.label for t in ticks])
    assert len(ticks) <= 2 * count + 2
    # ticks land on their own pixels
    for tick in ticks:
        assert tick.position == pytest.approx(scale(tick.value))


def _label_unit(ticks, kind) -> float:
    if kind == "number":
        return 1.0
    units = {
        "B": 1,
        "KiB": 2**10,
        "MiB": 2**20,
        "GiB": 2**30,
        "TiB": 2**40,
        "PiB": 2**50,
        "k": 1e3,
        "M": 1e6,
        "G": 1e9,
        "T": 1e12,
        "P": 1e15,
    }
    for tick in ticks:
        parts = tick.label.split(" ")
        if len(parts) == 2:
            return float(units[parts[1]])
    return 1.0


# ---------------------------------------------------------------------------------------------
# Log scale


def test_log_known_value_lands_on_known_pixel():
    x = LogScale((1, 10_000), (0, 400))
    assert x(1) == 0 and x(10_000) == 400
    assert x(100) == 200  # two of four decades: halfway
    assert x(10) == pytest.approx(100)
    assert x.invert(200) == pytest.approx(100)
    # a y axis, backwards, starting below 1: 0.1 at 300 px, 1,000 at 0 px
    y = LogScale((0.1, 1000), (300, 0))
    assert y(10) == pytest.approx(150)
    assert y(1) == pytest.approx(225)
    assert y.invert(75) == pytest.approx(100)
    # the roofline ridge point of a 44.8 GFLOP/s, 4 GB/s target sits at 11.2 FLOP/B
    ridge = LogScale((0.01, 1000), (0, 500))(11.2)
    assert ridge == pytest.approx(500 * (math.log10(11.2) + 2) / 5)


def test_log_rejects_non_positive():
    with pytest.raises(ValueError):
        LogScale((0, 10), (0, 1))
    with pytest.raises(ValueError):
        LogScale((1, 10), (0, 1))(0)
    with pytest.raises(ValueError):
        LogScale((1, 10), (0, 1))(-3)


def test_log_decade_ticks_with_si_labels():
    ticks = LogScale((0.1, 1000), (0, 800)).ticks()
    assert [t.label for t in ticks] == ["0.1", "1", "10", "100", "1 k"]
    assert [t.position for t in ticks] == pytest.approx([0, 200, 400, 600, 800])
    wide = LogScale((1, 1e12), (0, 1)).ticks(6)
    assert [t.label for t in wide] == ["1", "1 k", "1 M", "1 G", "1 T"]  # every third decade
    narrow = LogScale((3, 17), (0, 1)).ticks()
    assert [t.value for t in narrow] == [5, 10]  # under two decades: 1-2-5


def test_log_byte_ticks_are_powers_of_two_with_iec_labels():
    ticks = LogScale((1, 2**30), (0, 300)).ticks(kind="bytes")
    assert [t.label for t in ticks] == ["1 B", "1 KiB", "1 MiB", "1 GiB"]
    assert [t.position for t in ticks] == pytest.approx([0, 100, 200, 300])
    assert all(math.log2(t.value).is_integer() for t in LogScale((100, 50_000), (0, 1)).ticks(kind="bytes"))


def test_log_nice_and_minor_ticks():
    scale = LogScale((3, 170), (0, 1)).nice()
    assert scale.domain == (1, 1000)
    minors = LogScale((1, 100), (0, 1)).minor_ticks()
    assert minors[:3] == [2, 3, 4] and 10 not in minors and 100 not in minors and len(minors) == 16
    assert LogScale((100, 50_000), (0, 1)).nice(kind="bytes").domain == (64, 65536)


@settings(max_examples=200, deadline=None)
@given(lo=st.floats(1e-6, 1e12), factor=st.floats(1.01, 1e9))
def test_log_ticks_inside_domain_and_monotonic(lo, factor):
    hi = lo * factor
    scale = LogScale((lo, hi), (0, 1000))
    for kind in ("count", "bytes"):
        ticks = scale.ticks(kind=kind)
        assert ticks, (lo, hi, kind)
        values = [t.value for t in ticks]
        assert values == sorted(values) and len(set(values)) == len(values)
        assert all(lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9) for v in values)
        assert all(-1e-6 <= t.position <= 1000 + 1e-6 for t in ticks)


# ---------------------------------------------------------------------------------------------
# Series


def test_downsampling_keeps_the_maximum():
    values = [1] * 10_000
    values[7_777] = 99
    buckets = downsample(values, 500)
    assert len(buckets) == 500
    spike = [b for b in buckets if b.value == 99]
    assert len(spike) == 1 and spike[0].peak_step == 7_777 and spike[0].first <= 7_777 <= spike[0].last
    # the buckets tile the steps in order
    assert buckets[0].first == 0 and buckets[-1].last == 9_999
    assert all(a.last + 1 == b.first for a, b in zip(buckets, buckets[1:]))


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(0, 10**9), min_size=1, max_size=400), columns=st.integers(1, 120))
def test_every_bucket_holds_its_steps_maximum(values, columns):
    buckets = downsample(values, columns)
    assert len(buckets) == min(len(values), columns)
    assert max(b.value for b in buckets) == max(values)
    for bucket in buckets:
        assert bucket.value == max(values[bucket.first : bucket.last + 1]) == values[bucket.peak_step]


def test_no_downsampling_when_the_steps_fit():
    assert downsample([3, 1, 2], 100) == (Bucket(0, 0, 0, 3), Bucket(1, 1, 1, 1), Bucket(2, 2, 2, 2))


def test_step_path_of_a_known_series():
    x = LinearScale((-0.5, 2.5), (0, 300))  # step i spans [100 i, 100 i + 100]
    y = LinearScale((0, 10), (100, 0))
    buckets = downsample([5, 5, 10], 10)
    assert step_path(buckets, x, y) == "M0,50H200V0H300"
    assert area_points(buckets, x, y) == "0,50 100,50 100,50 200,50 200,0 300,0 300,100 0,100"


def test_line_path_on_log_scales():
    x, y = LogScale((1, 100), (0, 200)), LogScale((1, 100), (200, 0))
    assert line_path([(1, 1), (10, 10), (100, 10)], x, y) == "M0,200L100,100L200,100"


def test_empty_series():
    assert downsample([], 10) == ()
    assert step_path((), LinearScale((0, 1), (0, 1)), LinearScale((0, 1), (0, 1))) == ""
    chart = timeline_chart([("model", []), ("best", [])])
    assert chart.steps == 0 and chart.columns == () and chart.x_ticks == ()
    assert [s.path for s in chart.series] == ["", ""]
    assert all(s.peak is None for s in chart.series)
    assert chart.y.domain == (0, 1) and chart.y_ticks  # an empty chart still has an axis


def test_single_point_series():
    chart = timeline_chart([("model", [4096])], width=400, height=200, margin=(10, 10, 30, 50))
    (series,) = chart.series
    assert series.peak.step == 0 and series.peak.value == 4096
    assert series.peak.x == pytest.approx((50 + 390) / 2)  # one step fills the plot, centred
    assert re.fullmatch(r"M50,[\d.]+H390", series.path)
    assert [t.label for t in chart.x_ticks] == ["0"]
    assert len(chart.columns) == 1 and chart.columns[0].width == pytest.approx(340)


def test_timeline_chart_downsamples_without_losing_the_peak():
    values = [(i * 7919) % 1000 for i in range(20_000)]
    values[12_345] = 50_000
    chart = timeline_chart([("model", values)], width=1000, height=300)
    (series,) = chart.series
    assert len(series.buckets) == int(chart.plot.width)
    assert series.peak.step == 12_345 and series.peak.value == 50_000
    levels = [float(v) for v in re.findall(r"(?:V|,)(-?[\d.]+)", series.path)]
    assert min(levels) == pytest.approx(chart.y(50_000), abs=0.05)  # the spike is drawn, at full height
    assert len(chart.columns) <= chart.plot.width / 4 + 1
    assert chart.columns[0].first == 0 and chart.columns[-1].last == 19_999


def test_reference_lines_within_and_above_the_scale():
    data = [100, 800, 300]
    chart = timeline_chart([("model", data)], [("SRAM", 1000), ("DRAM cache", 1_000_000)], height=300)
    sram, dram = chart.references
    assert sram.y == pytest.approx(chart.y(1000)) and chart.y.domain[1] >= 1000  # drawn, the scale makes room
    assert dram.y is None  # 1,250 x the data: left off the plot
    assert chart.y.domain[1] < 1_000_000


def test_two_series_share_one_x_axis():
    chart = timeline_chart([("model", [1, 5, 2, 2]), ("best", [1, 2, 3, 2])])
    model, best = chart.series
    assert (model.peak.step, model.peak.value) == (1, 5)
    assert (best.peak.step, best.peak.value) == (2, 3)
    assert chart.x(0) == pytest.approx(chart.plot.left + chart.plot.width / 8)
    assert [t.value for t in chart.x_ticks] == [0, 1, 2, 3]


# ---------------------------------------------------------------------------------------------
# Roofline


def _fixed_roofline(points=(), marks=(), roofs=(("fp32", 1e11),), bandwidths=(("DRAM", 1e10),)):
    # plot box 100..1000 x 10..510 px; x 0.1..1,000 FLOP/B (4 decades), y 1e8..1e12 FLOP/s (4 decades)
    return roofline_chart(
        list(roofs),
        list(bandwidths),
        list(points),
        list(marks),
        width=1100,
        height=520,
        margin=(10, 100, 10, 100),
        strip_width=50,
        x_domain=(0.1, 1000),
        y_domain=(1e8, 1e12),
    )


def test_roofline_known_point_lands_on_known_pixel():
    chart = _fixed_roofline([RooflinePoint(10, 1e10, 0.25)], roofs=[("fp32", 1e11)])
    assert (chart.plot.left, chart.plot.right, chart.plot.top, chart.plot.bottom) == (100, 1000, 10, 510)
    (point,) = chart.points
    # 10 FLOP/B is 2 of 4 decades along x; 1e10 FLOP/s is 2 of 4 decades up from the bottom
    assert point.x == pytest.approx(550) and point.y == pytest.approx(260)
    assert not point.clamped and not point.unbounded
    # area proportional to the weight: a quarter of the time is half the full radius
    assert point.r == pytest.approx(chart.max_radius / 2)
    assert chart.place(1000, 1e12) == chart.place(1000, 1e12, 0.0) and chart.place(1000, 1e12).x == pytest.approx(1000)
    assert chart.place(0.1, 1e8).y == pytest.approx(510)


def test_roofline_ridge_and_roofs():
    chart = _fixed_roofline(roofs=[("fp32", 1e11), ("fp16", 4e11)])
    fp16, fp32 = chart.roofs  # highest first
    assert (fp16.label, fp32.label) == ("fp16", "fp32")
    # the ridge: peak / DRAM bandwidth = 10 FLOP/B for fp32, 40 for fp16
    assert fp32.ridge == 10 and fp16.ridge == 40
    assert fp32.ridge_x == pytest.approx(550) and fp32.ridge_y == pytest.approx(chart.y(1e11)) == fp32.y
    assert fp32.x1 == pytest.approx(550) and fp32.x2 == 1000
    # the DRAM slope runs from where it enters the plot up to the highest roof's ridge
    (slope,) = chart.slopes
    points = [tuple(map(float, p.split(","))) for p in re.findall(r"[\d.]+,[\d.]+", slope.path)]
    assert points[0] == pytest.approx((chart.x(0.1), chart.y(1e9)), abs=0.06)
    assert points[-1] == pytest.approx((chart.x(40), chart.y(4e11)), abs=0.06)
    assert slope.angle < 0  # rising to the right (SVG y grows downwards)


def test_roofline_labels_of_close_roofs_do_not_collide():
    # 990 TFLOP/s and 1.98 POP/s: a factor 2 apart, closer than a label's height on a 9-decade axis
    chart = roofline_chart(
        [("fp16", 990e12), ("int8", 1979e12), ("fp32", 67e12)], [("DRAM", 3.35e12)], [RooflinePoint(0.5, 1e7, 0.1)]
    )
    int8, fp16, fp32 = chart.roofs
    boxes = [(r.label_y - 10, r.label_y) for r in chart.roofs]
    for (top_a, bottom_a), (top_b, bottom_b) in zip(boxes, boxes[1:]):
        assert bottom_a <= top_b or bottom_b <= top_a  # no two labels overlap
    for roof in chart.roofs:  # and no label crosses its own roof line
        assert roof.label_y <= roof.y - 1 or roof.label_y - 10 >= roof.y + 1
    assert chart.x.domain[1] >= int8.ridge  # every ridge is on the plot


def test_a_label_with_no_room_above_or_below_sits_on_its_own_line_and_crosses_no_other():
    # H100's four roofs: 1.98 POP/s, 990 and 495 TFLOP/s (each 2x apart: about 16 px on this axis of
    # points down to 1 GFLOP/s, less than a label's 10 px with its margins above and below its
    # line) and 67 TFLOP/s
    chart = roofline_chart(
        [("fp8", 1979e12), ("fp16", 990e12), ("tf32", 495e12), ("fp32", 67e12)],
        [("DRAM", 3.35e12)],
        [RooflinePoint(0.5, 1e9, 0.1), RooflinePoint(500, 1e13, 0.1)],
    )
    boxes = [(r.label_y - 10, r.label_y + 3) for r in chart.roofs]  # cap height, descenders
    for (top_a, bottom_a), (top_b, bottom_b) in zip(boxes, boxes[1:]):
        assert bottom_a <= top_b or bottom_b <= top_a  # no two labels overlap
    for roof, (top, bottom) in zip(chart.roofs, boxes):
        crossed = [other.label for other in chart.roofs if top < other.y < bottom]
        assert crossed == ([roof.label] if roof.on_line else []), roof.label
    assert any(roof.on_line for roof in chart.roofs)  # these roofs are that close


def test_roofline_points_without_dram_bytes_go_in_the_strip():
    chart = _fixed_roofline([RooflinePoint(None, 1e10, 0.0), RooflinePoint(None, 1e10, 1.0), RooflinePoint(5, 1e9)])
    assert chart.strip is not None and chart.strip.left > chart.plot.right
    small, big, finite = chart.points
    for point in (small, big):
        assert point.unbounded and point.y == pytest.approx(260)
    assert chart.strip.left <= small.x - small.r and small.x + small.r <= chart.strip.right  # inside the strip
    assert big.x == pytest.approx(chart.strip.left + chart.strip.width / 2)  # too wide for it: centred
    assert not finite.unbounded
    assert _fixed_roofline([RooflinePoint(5, 1e9)]).strip is None  # no such point: no strip


def test_roofline_clamps_points_outside_the_axes():
    chart = _fixed_roofline([RooflinePoint(1e6, 1e14), RooflinePoint(1e-5, 10)])
    high, low = chart.points
    assert high.clamped and (high.x, high.y) == (pytest.approx(1000), pytest.approx(10))
    assert low.clamped and (low.x, low.y) == (pytest.approx(100), pytest.approx(510))


def test_roofline_axes_cover_points_ridges_and_marks():
    chart = roofline_chart(
        [("int8", 4e12)],
        [("DRAM", 5e8), ("on-chip", 1e11)],
        [RooflinePoint(0.02, 3e6, 0.5), RooflinePoint(700, 2e12, 0.5)],
        [(1e5, 1e9)],
    )
    (x_lo, x_hi), (y_lo, y_hi) = chart.x.domain, sorted(chart.y.domain)
    assert x_lo < 0.02 and x_hi > 1e5 and x_hi > 4e12 / 5e8  # the points, the mark and the ridge (8,000)
    assert y_lo < 3e6 and y_hi > 4e12
    assert 4e12 / 1e11 > x_lo  # the on-chip slope meets the roof on the plot
    assert all(s.path for s in chart.slopes)
    # no dot hangs off the plot
    for point in chart.points:
        assert chart.plot.left <= point.x - point.r and point.x + point.r <= chart.plot.right
        assert chart.plot.top <= point.y - point.r and point.y + point.r <= chart.plot.bottom


def test_roofline_dot_radius():
    chart = _fixed_roofline()
    assert chart.radius(1.0) == chart.max_radius
    assert chart.radius(0.25) == pytest.approx(chart.max_radius / 2)
    assert chart.radius(0.0) == chart.min_radius == chart.radius(-1)  # tiny nodes stay hoverable
    assert chart.radius(4.0) == chart.max_radius


def test_roofline_rejects_missing_roofs():
    with pytest.raises(ValueError):
        roofline_chart([], [("DRAM", 1e9)])
    with pytest.raises(ValueError):
        roofline_chart([("fp32", 1e9)], [("DRAM", 0)])


@settings(max_examples=100, deadline=None)
@given(
    peak=st.floats(1e6, 1e16),
    bandwidth=st.floats(1e6, 1e13),
    points=st.lists(st.tuples(st.one_of(st.none(), st.floats(1e-4, 1e5)), st.floats(1e-3, 1.0)), max_size=30),
)
def test_roofline_dots_on_or_below_the_roof(peak, bandwidth, points):
    """A node's achieved rate never tops the roof, so its dot's centre is never above it."""
    placed = [RooflinePoint(i, min(peak, (i or math.inf) * bandwidth) * f, f) for i, f in points]
    chart = roofline_chart([("fp32", peak)], [("DRAM", bandwidth)], placed)
    for spec, point in zip(placed, chart.points):
        if point.clamped:
            continue
        roof_y = chart.y(min(peak, spec.intensity * bandwidth)) if spec.intensity is not None else chart.y(peak)
        assert point.y >= roof_y - 1e-6


# ---------------------------------------------------------------------------------------------
# Lines, labels


def test_xy_chart_axes():
    log = xy_chart([1, 8, 64, 512], [("a", [1e-3, 2e-3, 9e-3, 7e-2])])
    assert log.x_mode == "log" and log.y_mode == "log"
    assert [t.label for t in log.x_ticks] == ["1", "8", "64", "512"]  # the swept values label the axis
    xs = [p[0] for p in log.series[0].points]
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1])  # equal ratios, equal steps
    linear = xy_chart([1, 2, 3], [("a", [5, 6, 7])])
    assert linear.x_mode == "linear" and linear.y_mode == "linear" and linear.y.domain[0] == 0
    category = xy_chart(["fp32", "fp16", "int8"], [("a", [3, None, 1])])
    assert category.x_mode == "category" and [t.label for t in category.x_ticks] == ["fp32", "fp16", "int8"]
    (series,) = category.series
    assert series.points[1] is None and series.path.count("M") == 2  # a missing value breaks the line


def test_xy_chart_breaks_its_line_at_a_bound():
    # four points, the second a bound (an incomplete analysis): it keeps its pixel (drawn hollow),
    # but no segment reaches it: a lone move to the first point, then a segment from the third to the fourth
    chart = xy_chart([1, 2, 3, 4], [("a", [5, 6, 7, 8]), ("b", [5, 6, 7, 8])], bounds=[[False, True, False, False]])
    bounded, plain = chart.series
    assert bounded.points[1] is not None
    assert bounded.path.count("M") == 2 and bounded.path.count("L") == 1
    assert plain.path.count("M") == 1 and plain.path.count("L") == 3  # no bounds given: one unbroken line


def test_spread_keeps_order_and_gap():
    assert spread([10, 12, 50], 14, 0, 100) == [10, 24, 50]
    assert spread([95, 96], 14, 0, 100) == [86, 100]
    assert spread([], 14, 0, 100) == []


def test_place_labels_avoid_each_other():
    box = Box(0, 0, 400, 300)
    points = [(200, 150, "batch=1"), (204, 152, "batch=4"), (208, 150, "batch=16"), (60, 290, ""), (390, 10, "edge")]
    labels = place_labels(points, box)
    assert labels[3] is None  # no text, no label
    rects = [
        label_rect(spot.x, spot.y, spot.anchor, text) for spot, (_, _, text) in zip(labels, points) if spot is not None
    ]
    assert len(rects) == 4
    for k, a in enumerate(rects):
        assert box.left <= a[0] and a[2] <= box.right and box.top <= a[1] and a[3] <= box.bottom
        for b in rects[k + 1 :]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])


def test_no_whole_model_label_crosses_a_roof_line():
    # the label of the whole-model point was placed clear of labels and dots but not of the roofs'
    # lines: on 9 of 120 charts (the examples on every bundled target, as stored and in int8) it
    # ran across one, as on hailo-8
    import onnxroof
    from onnxroof.core.examples import EXAMPLES, build_example
    from onnxroof.report.html.charts import label_rect
    from onnxroof.report.html.model_roofline import roofline_context
    from onnxroof.roofline.targets import bundled_targets

    placed = 0
    for example in EXAMPLES:
        for dtype in ("model", "int8"):
            analysis = onnxroof.analyze(build_example(example), targets=list(bundled_targets()), dtype=dtype)
            for number, report in enumerate(analysis.targets):
                context = roofline_context(analysis, report, number, {})
                for mark in (m for m in context["marks"] if m.get("label")):
                    placed += 1
                    left, top, right, bottom = label_rect(
                        float(mark["label_x"]), float(mark["label_y"]), mark["anchor"], mark["label"], 7.3
                    )
                    for roof in context["roofs"]:
                        x1, y, x2 = map(float, re.match(r"M([-\d.]+),([-\d.]+)H([-\d.]+)", roof["d"]).groups())
                        assert not (left < x2 and x1 < right and top < y < bottom), (example, dtype, report.target.name)
    assert placed >= 100  # every chart's whole-model point keeps its label


def test_a_slope_label_moves_off_a_ridge_label():
    # on h100-sxm at the report's size, the DRAM label's usual spot (a fifth of the way up the
    # slope) lies on the fp32 ridge's label: it moves along the line to a clear spot
    from onnxroof.report.html.chart_context import ROOFLINE_SIZE, bandwidth_roofs, roof_groups, roofline_frame
    from onnxroof.report.html.charts import _overlaps
    from onnxroof.roofline.targets import load_target

    target = load_target("h100-sxm")
    # kernels from 4 to 300,000 FLOP/B (a BERT's Gathers to its masks) stretch the x axis
    chart = roofline_chart(
        [(label, peak) for label, peak, _ in roof_groups(target)],
        bandwidth_roofs(target),
        [],
        [(4.0, 1e10), (3e5, 1e10)],
        width=ROOFLINE_SIZE[0],
        height=ROOFLINE_SIZE[1],
    )
    context = roofline_frame(target, chart, "r")
    ridges = [
        label_rect(
            float(r["ridge"]["label_x"]), float(r["ridge"]["label_y"]), r["ridge"]["anchor"], r["ridge"]["label"]
        )
        for r in context["roofs"]
        if r["ridge"]
    ]
    (dram, *_), (slope, *_) = context["slopes"], chart.slopes
    placed = slope.label_box(float(dram["label_x"]), float(dram["label_y"]), dram["label"])
    assert ridges and not any(_overlaps(placed, ridge) for ridge in ridges)
    usual = slope.label_box(slope.label_x, slope.label_y, dram["label"])
    assert any(_overlaps(usual, ridge) for ridge in ridges)  # the case this guards: it did overlap


def test_a_slope_label_moves_off_a_dot_on_the_slope():
    # a kernel sitting on the DRAM slope where its label usually goes (Coral's Gemm): the label
    # moves along the line until its box clears the dot's
    from onnxroof.report.html.chart_context import ROOFLINE_SIZE, bandwidth_roofs, roof_groups, roofline_frame
    from onnxroof.report.html.charts import RooflinePoint, _overlaps
    from onnxroof.roofline.targets import load_target

    target = load_target("coral-edge-tpu")
    roofs, bandwidths = [(label, peak) for label, peak, _ in roof_groups(target)], bandwidth_roofs(target)
    bare = roofline_chart(
        roofs, bandwidths, [], [(0.3, 1e8), (3e4, 1e9)], width=ROOFLINE_SIZE[0], height=ROOFLINE_SIZE[1]
    )
    slope = bare.slopes[0]
    # the dot: on the slope (performance = intensity x 500 MB/s) at the label's usual start
    at = bare.x.invert(slope.label_x)
    dot = RooflinePoint(at, at * bandwidths[0][1], 0.05)
    chart = roofline_chart(
        roofs, bandwidths, [dot], [(0.3, 1e8), (3e4, 1e9)], width=ROOFLINE_SIZE[0], height=ROOFLINE_SIZE[1]
    )
    (placed_dot,) = chart.points
    dot_box = (
        placed_dot.x - placed_dot.r,
        placed_dot.y - placed_dot.r,
        placed_dot.x + placed_dot.r,
        placed_dot.y + placed_dot.r,
    )
    dram = roofline_frame(target, chart, "r")["slopes"][0]
    usual = chart.slopes[0].label_box(chart.slopes[0].label_x, chart.slopes[0].label_y, dram["label"])
    assert _overlaps(usual, dot_box)  # the case this guards
    assert not _overlaps(
        chart.slopes[0].label_box(float(dram["label_x"]), float(dram["label_y"]), dram["label"]), dot_box
    )
