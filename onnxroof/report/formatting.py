"""Number formatting that several renderers share: the text, Markdown and HTML pages show a
value, a change and its percentage the same way.

:func:`format_value` picks the unit's scale (IEC for bytes, s/ms/µs/ns for seconds, J/mJ/µJ/nJ
for joules, SI for counts); :func:`signed_change` and :func:`percent_text` word a
:class:`~onnxroof.compare.diff.Delta`, and :func:`verdict` marks whether it is better or worse.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..core import units
from ..core.units import iec, si
from ..roofline.band import BORROWED_LAUNCH_SHARE, launch_share, rests_on_borrowed_launch
from ..roofline.targets import LatencyKind

if TYPE_CHECKING:
    from ..compare.diff import Delta
    from ..roofline.placement import TargetReport

BETTER, WORSE, NEUTRAL, SAME = "🟢", "🔴", "🔷", "⚪"
BOUNDED = "⚠️"  # a side left nodes out: the change is a bound, neither better nor worse for sure
HIGHER_IS_BETTER = frozenset({"throughput_per_s"})
NEITHER = frozenset({"nodes"})  # more or fewer nodes is neither good nor bad in itself


def format_value(value: float | None, unit: str) -> str:
    """A value in its unit, scaled to three significant digits ("n/a" for none or NaN).

    >>> format_value(0.0042, "seconds"), format_value(2048, "bytes"), format_value(None, "joules")
    ('4.2 ms', '2 KiB', 'n/a')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if unit == "bytes":
        return iec(value)
    if unit == "seconds":
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
            if abs(value) >= scale or scale == 1e-9:
                return f"{value / scale:.3g} {name}"
    if unit == "joules":
        for scale, name in ((1, "J"), (1e-3, "mJ"), (1e-6, "µJ"), (1e-9, "nJ")):
            if abs(value) >= scale or scale == 1e-9:
                return f"{value / scale:.3g} {name}"
    if unit == "per_second":
        return f"{value:,.1f}/s"
    return si(value)


def signed_change(delta: Delta) -> str:
    """The change with its sign; "≥ " or "≤ " before it when a side is a bound, "n/a" when both are.

    >>> from types import SimpleNamespace as D
    >>> signed_change(D(change=-1e-6, unit="seconds", change_bound="≥"))
    '≥ −1 µs'
    """
    change = delta.change
    bound = getattr(delta, "change_bound", "")
    if change is None or bound == "?":
        return "n/a"
    if change == 0 and not bound:
        return "0"
    text = format_value(abs(change), delta.unit)
    return (f"{bound} " if bound else "") + ("+" if change > 0 else "−" if change < 0 else "") + text


def side_value(delta: Delta, side: str) -> str:
    """One side of a delta ("base" or "head"), "≥ "/"≤ " before it where that side's analysis left
    nodes out (its figure is a bound).

    >>> from types import SimpleNamespace as D
    >>> d = D(base=2e-6, head=1e-6, unit="seconds", base_missing="", head_missing="2 node(s) not counted")
    >>> side_value(d, "base"), side_value(d, "head")
    ('2 µs', '≥ 1 µs')
    """
    value = getattr(delta, side)
    text = format_value(value, delta.unit)
    if value is None or not getattr(delta, f"{side}_missing", ""):
        return text
    return ("≤ " if delta.unit == "per_second" else "≥ ") + text


def verdict(key: str, change: float) -> str:
    """The mark of a change: better (green), worse (red) or neither, for that metric: less is
    better for every cost, more for throughput.

    >>> verdict("params", -5), verdict("latency_s", 1), verdict("throughput_per_s", 1), verdict("nodes", 3)
    ('🟢', '🔴', '🟢', '🔷')
    """
    if change == 0:
        return SAME
    if key in NEITHER:
        return NEUTRAL
    return BETTER if (change > 0) == (key in HIGHER_IS_BETTER) else WORSE


def significant(delta: Delta, threshold: float) -> bool:
    """Whether a metric's change reaches ``threshold`` (a fraction: 0.02 for 2 %); a metric that
    appears or disappears always does.

    >>> from types import SimpleNamespace as D
    >>> significant(D(percent=1.3), 0.02), significant(D(percent=-2.5), 0.02), significant(D(percent=None), 0.02)
    (False, True, True)
    """
    percent = delta.percent
    return percent is None or math.isinf(percent) or abs(percent) >= 100 * threshold


def percent_text(delta: Delta, symbols: bool = True, threshold: float = 0.0) -> str:
    """The change in percent, with its mark (better, worse, neither) unless ``symbols`` is off; a
    change below ``threshold`` is marked as no change."""
    percent = delta.percent
    bound = getattr(delta, "change_bound", "")
    if percent is None:
        return "n/a"
    if bound == "?":  # both sides left nodes out: the change has no known direction
        return ("⚠️ " if symbols else "") + "n/a (both bounds)"
    mark = BOUNDED if bound else verdict(delta.key, percent) if significant(delta, threshold) else SAME
    symbol = "" if not symbols else mark + " "
    if math.isinf(percent):
        return f"{symbol}new"
    return f"{symbol}{bound + ' ' if bound else ''}{percent:+.1f}%".replace("-", "−")


def count_text(value: int) -> str:
    return f"{value:,}"


def share_percent(share: float) -> str:
    """A share of a whole as a percentage, one decimal; below 0.1% it says so.

    >>> share_percent(0.25), share_percent(0.0004), share_percent(0)
    ('25.0%', '<0.1%', '0%')
    """
    if share == 0:
        return "0%"
    if share < 0.001:
        return "<0.1%"
    return f"{share * 100:.1f}%"


def shape_text(shape: Iterable | None) -> str:
    """``[1, 3, 224, 224]`` -> ``1×3×224×224``; symbols stay names, unknown dims are ``?``."""
    if shape is None:
        return "?"
    dims = ["?" if d is None else str(d) for d in shape]
    return "×".join(dims) if dims else "scalar"


def as_bound(text: str, report: TargetReport, at_most: bool = False) -> str:
    """A latency (or with ``at_most``, a throughput) as what it is on the report's target: at
    peak figures, or with nodes not counted, a run takes at least the latency and reaches at most
    the throughput; a forecast carries its measured error band where the target states one.

    >>> from types import SimpleNamespace as Fake
    >>> bound = Fake(latency_kind="bound", band=None)
    >>> as_bound("13.4 µs", bound), as_bound("74,466.7", bound, at_most=True)
    ('≥ 13.4 µs', '≤ 74,466.7')
    >>> forecast = Fake(latency_kind="forecast", band=Fake(value=0.18))
    >>> as_bound("13.4 µs", forecast), as_bound("74,466.7", forecast, at_most=True)
    ('13.4 µs ±18%', '74,466.7 ±18%')
    """
    if report.latency_kind == LatencyKind.BOUND:
        return ("≤ " if at_most else "≥ ") + text
    band = report.band
    return f"{text} ±{band.value:.0%}" if band is not None else text


def rate_text(value: float, report: TargetReport) -> str:
    """A rate (inferences or tokens per second) with no more digits than the report's error band
    allows (:func:`units.rate`): a bound's, or a forecast's with no band, to three significant digits.

    >>> from types import SimpleNamespace as Fake
    >>> rate_text(90152.1, Fake(latency_kind="forecast", band=Fake(value=0.17)))
    '90,000'
    >>> rate_text(1234.56, Fake(latency_kind="forecast", band=Fake(value=0.06))), rate_text(74466.7, Fake(band=None))
    ('1,230', '74,500')
    """
    band = getattr(report, "band", None)
    bounded = band is None or report.latency_kind == LatencyKind.BOUND
    return units.rate(value, None if bounded else band.value)


def latency_kind_words(report: TargetReport) -> str:
    """Why a target's latency is a bound or a forecast, in one phrase (the bound's reasons are
    the report's own: :attr:`TargetReport.bound_reason`), with the figures it borrowed from other
    targets (:func:`borrowed_words`)."""
    borrowed = borrowed_words(report)
    if report.latency_kind == LatencyKind.BOUND:
        others = [words for words in (report.host_words, report.fallback_words) if words]
        host = "".join(f"; {words}" for words in others)
        if not report.complete:
            peaks = "; the target's figures are peaks" if report.peak_figures else ""
            return f"a lower bound (≥): {report.missing}, and they take time too{peaks}{host}" + (
                f"; {borrowed}" if borrowed else ""
            )
        if not report.peak_figures:  # its own figures measured: only the host's part, or another type's roof
            return f"a lower bound (≥): {'; '.join(others)}" + (f"; {borrowed}" if borrowed else "")
        chip = report.target.dataflow
        rows = (
            f"; a frame's rows stream in at {units.seconds(chip.row_s.value)} each at least (a floor under every "
            "published row)"
            if chip is not None and chip.row_s
            else ""
        )
        return (
            "a lower bound (≥): the target's figures are peaks, every kernel at its roofs"
            + rows
            + host
            + (f"; {borrowed}" if borrowed else "")
        )
    band, stated = report.band, report.target.error_band
    within = (
        f", within ±{band.value:.0%} ({band.source})"
        if band is not None
        else f": ±{stated.value:.0%} on its published rows"
        if stated is not None and rests_on_borrowed_launch(report)
        else ", its error not measured for this model's roofs"
        if stated is not None
        else ", its error not yet measured"
    )
    return f"a forecast from efficiencies measured on the target's runtime{within}" + (
        f"; {borrowed}" if borrowed else ""
    )


def borrowed_words(report: TargetReport) -> str:
    """The figures of the run taken from other targets (``TargetReport.borrowed``), in words; ""
    when none.

    >>> from types import SimpleNamespace as S
    >>> run = S(borrowed={"node_overhead_s": S(value=7.374e-6)}, latency_s=10e-6,
    ...         nodes=[S(placement=S(overhead_s=7.374e-6))])
    >>> import textwrap
    >>> print(textwrap.fill(borrowed_words(run), 100))
    the launch cost (7.37 µs a kernel, 74% of this time) is borrowed from other targets, not measured on
    this one: small models may differ more
    >>> borrowed_words(S(borrowed={}))
    ''
    """
    parts = []
    for key, figure in report.borrowed.items():
        if key == "node_overhead_s":
            share = launch_share(report)
            parts.append(
                f"the launch cost ({figure.value * 1e6:.3g} µs a kernel, {share:.0%} of this time) is borrowed "
                "from other targets, not measured on this one"
                + (": small models may differ more" if share >= BORROWED_LAUNCH_SHARE else "")
            )
        else:
            parts.append(f"{key} ({figure.value:.4g}) is borrowed from other targets")
    return "; ".join(parts)


def borrowed_mark(report: TargetReport) -> str:
    """A short mark beside a latency that uses a borrowed figure: " (launch cost borrowed)", "" when none.

    >>> from types import SimpleNamespace as S
    >>> borrowed_mark(S(borrowed={"node_overhead_s": None})), borrowed_mark(S(borrowed={}))
    (' (launch cost borrowed)', '')
    """
    if not report.borrowed:
        return ""
    names = ["launch cost" if key == "node_overhead_s" else key for key in report.borrowed]
    return f" ({', '.join(names)} borrowed)"


def energy_words(report: TargetReport) -> str:
    """What the energy counts: "dynamic energy" (the work alone: the target states no static
    power) or "dynamic + static energy" (its static power x the latency added).

    >>> from types import SimpleNamespace as S
    >>> energy_words(S(energy_kind="dynamic")), energy_words(S(energy_kind="dynamic + static"))
    ('dynamic energy', 'dynamic + static energy')
    """
    return f"{report.energy_kind} energy"


def latency_kind_short(report: TargetReport) -> str:
    """The kind in a few words, for a card or a table cell: "lower bound · 2 node(s) not counted",
    "lower bound" (peak figures), "forecast"."""
    if report.latency_kind != LatencyKind.BOUND:
        return "forecast"
    return f"lower bound · {report.missing}" if not report.complete else "lower bound"


def side_time(value_s: float, kind: str | None, side: str) -> str:
    """A node's time on one side of a diff: "–" on the side where it does not exist (the base of
    an added node, the head of a removed one), its time otherwise.

    >>> side_time(0.0, "added", "base"), side_time(2e-6, "added", "head"), side_time(0.0, "removed", "head")
    ('–', '2 µs', '–')
    """
    missing = (side == "base" and kind == "added") or (side == "head" and kind == "removed")
    return "–" if missing else format_value(value_s, "seconds")


def edge_lines(report: TargetReport) -> list[tuple[str, str]]:
    """A chip's own execution model, as every output says it: a layer pipeline's frames per second
    and latency apart, its contexts and what sets its frame rate ("pipeline"); an Edge TPU's ops
    that fall back to the CPU and where the graph is cut ("graph cut"). (label, words) pairs."""
    lines = []
    timing = getattr(report, "dataflow", None)
    if timing is not None and timing.frames_per_s:
        lines.append(("pipeline", report.pipeline_words))
    cut = getattr(report, "edge_tpu_cut", None)
    if cut is not None:
        lines.append(("graph cut", cut.words()))
    return lines
