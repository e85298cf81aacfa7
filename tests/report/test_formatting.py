"""report/formatting.py: the number wording the text, Markdown and HTML renderers share."""

import math
from types import SimpleNamespace

import pytest

from onnxroof.report.formatting import (
    BETTER,
    NEUTRAL,
    SAME,
    WORSE,
    count_text,
    format_value,
    percent_text,
    shape_text,
    share_percent,
    signed_change,
)


@pytest.mark.parametrize(
    "value, unit, text",
    [
        (None, "seconds", "n/a"),
        (math.nan, "count", "n/a"),
        (1.5, "seconds", "1.5 s"),
        (0.00125, "seconds", "1.25 ms"),  # 1.25e-3 s in milliseconds
        (2.5e-7, "seconds", "250 ns"),  # below a microsecond: nanoseconds, 0.25 µs = 250 ns
        (3e-6, "joules", "3 µJ"),
        (1536, "bytes", "1.5 KiB"),  # 1536 / 1024
        (1234.56, "per_second", "1,234.6/s"),
    ],
)
def test_a_value_is_worded_in_its_unit(value, unit, text):
    assert format_value(value, unit) == text


def test_a_change_carries_its_sign_and_its_mark():
    worse = SimpleNamespace(key="latency_s", unit="seconds", change=0.002, percent=25.0)
    better = SimpleNamespace(key="params", unit="count", change=-1, percent=-50.0)
    assert signed_change(worse) == "+2 ms" and percent_text(worse) == f"{WORSE} +25.0%"
    assert percent_text(better, symbols=False) == "−50.0%"  # a minus sign, not a hyphen
    assert percent_text(SimpleNamespace(key="nodes", percent=10.0)) == f"{NEUTRAL} +10.0%"
    assert percent_text(SimpleNamespace(key="flops", percent=0.0)) == f"{SAME} +0.0%"
    assert percent_text(SimpleNamespace(key="throughput_per_s", percent=5.0)).startswith(BETTER)
    assert percent_text(SimpleNamespace(key="flops", percent=math.inf), symbols=False) == "new"


def test_shares_counts_and_shapes():
    assert [share_percent(s) for s in (0, 0.0004, 0.5, 1)] == ["0%", "<0.1%", "50.0%", "100.0%"]
    assert count_text(1234567) == "1,234,567"
    assert shape_text([1, "seq", None, 64]) == "1×seq×?×64"
    assert shape_text([]) == "scalar" and shape_text(None) == "?"
