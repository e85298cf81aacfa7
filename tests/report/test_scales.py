"""report/html/scales.py: the pieces test_charts.py does not reach on their own: number text,
partitions, SVG numbers and paths (the scales themselves are tested there)."""

from __future__ import annotations

import pytest

from onnxroof.report.html.scales import (
    Bucket,
    LinearScale,
    LogScale,
    area_points,
    check_kind,
    fixed_decimals,
    line_path,
    partition,
    step_path,
    svg_number,
)


def test_fixed_decimals_cuts_trailing_zeros_and_keeps_separators():
    assert fixed_decimals(1234.5, 3) == "1,234.5"
    assert fixed_decimals(2.0, 6) == "2" and fixed_decimals(-0.0001, 2) == "0"


def test_svg_numbers_have_one_decimal_at_most():
    assert svg_number(12.0) == "12" and svg_number(12.34) == "12.3" and svg_number(-0.01) == "0"


def test_a_partition_splits_steps_into_near_equal_runs():
    # 10 steps in 3 columns: 10 // 3 boundaries at 0, 3, 6 (the last run takes 4)
    assert list(partition(10, 3)) == [(0, 2), (3, 5), (6, 9)]
    assert list(partition(2, 5)) == [(0, 0), (1, 1)]  # never more columns than steps
    assert list(partition(0, 5)) == []


def test_a_step_path_goes_level_over_each_step_and_vertical_between():
    x = LinearScale((-0.5, 1.5), (0, 20))  # step i over [10 i, 10 i + 10]
    y = LinearScale((0, 10), (100, 0))  # value v at 100 - 10 v
    buckets = (Bucket(0, 0, 0, 2.0), Bucket(1, 1, 1, 5.0))
    assert step_path(buckets, x, y) == "M0,80H10V50H20"
    assert area_points(buckets, x, y) == "0,80 10,80 10,50 20,50 20,100 0,100"


def test_a_line_path_joins_the_points_on_a_log_axis():
    x = LogScale((1, 100), (0, 200))  # a decade per 100 px
    y = LinearScale((0, 1), (10, 0))
    assert line_path([(1, 0), (10, 1)], x, y) == "M0,10L100,0"


def test_an_unknown_label_kind_is_refused():
    check_kind("bytes")
    with pytest.raises(ValueError):
        check_kind("furlongs")
