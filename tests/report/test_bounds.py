"""report/bounds.py: a kernel's bound and the latency's shares in the words every output uses."""

from __future__ import annotations

from onnxroof.report.bounds import BOUND_TITLES, bound_label, bound_line, time_by_bound


def test_the_shares_are_listed_largest_first_and_those_under_half_a_percent_left_out():
    # 0.004 rounds to 0%: below the 0.5% cut, so it is not listed
    assert time_by_bound({"overhead": 0.25, "dram": 0.746, "compute": 0.004}) == "DRAM 75%, overhead 25%"


def test_no_share_at_all_is_no_time():
    assert time_by_bound({}) == "no time"
    assert time_by_bound({"compute": 0.0}) == "no time"


def test_a_bound_the_words_do_not_know_is_shown_as_it_is():
    assert bound_label("dram") == "DRAM"
    assert bound_label("warp-drive") == "warp-drive"


def test_the_model_line_names_the_point_s_bound_then_the_shares():
    line = bound_line("compute", {"compute": 0.5, "dram": 0.5})
    assert line == "whole model compute-bound; time: compute 50%, DRAM 50%"


def test_every_bound_the_roofline_names_has_a_title():
    assert set(BOUND_TITLES) == {"compute", "dram", "onchip", "parallelism", "overhead", "none"}


def test_a_point_s_bound_the_time_does_not_follow_is_no_contradiction():
    # every kernel launch-bound (overhead 100%) while the whole model's FLOPs over its bytes is
    # past the ridge: the time's bound is named first, the point's region after (issue 47)
    line = bound_line("compute", {"overhead": 1.0})
    assert line.startswith("time overhead-bound: overhead 100%;")
    assert "compute-bound" not in line and "in the compute region" in line
