"""report/html/xy_chart.py: lines through (x, y) points (a sweep), laid out in pixels."""

from __future__ import annotations

from onnxroof.report.html.xy_chart import xy_chart


def test_few_increasing_numbers_spanning_under_30x_are_a_linear_axis_ticked_at_each_value():
    # plot 70 .. 600 (620 - 20), inset 14 px: 1 at 84, 3 at 586, 2 half way at 335
    chart = xy_chart([1, 2, 3], [("a", [1.0, 2.0, 3.0])])
    assert chart.x_mode == "linear" and [(t.position, t.label) for t in chart.x_ticks] == [
        (84, "1"),
        (335, "2"),
        (586, "3"),
    ]


def test_values_spanning_30x_or_more_are_log():
    chart = xy_chart([1, 10, 100], [("a", [1.0, 30.0, 900.0])])
    assert (chart.x_mode, chart.y_mode) == ("log", "log")
    # log x from 1 to 100 over 84 .. 586: 10 in the middle
    assert [point[0] for point in chart.series[0].points] == [84, 335, 586]


def test_strings_are_categories_and_a_missing_value_breaks_the_line():
    chart = xy_chart(["fp32", "fp16", "int8"], [("a", [3.0, None, 1.0])])
    assert chart.x_mode == "category" and [t.label for t in chart.x_ticks] == ["fp32", "fp16", "int8"]
    assert chart.series[0].points[1] is None
    assert chart.series[0].path.count("M") == 2 and "L" not in chart.series[0].path  # two lone points


def test_a_bound_breaks_the_line_but_keeps_its_point():
    chart = xy_chart([1, 2, 3], [("a", [1.0, 2.0, 3.0])], bounds=[[False, True, False]])
    assert chart.series[0].points[1] is not None
    assert chart.series[0].path.count("M") == 2 and "L" not in chart.series[0].path
