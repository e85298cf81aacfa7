"""Where a latency formula holds (issue 22): checked past the samples (at ``FAR`` per dim, past
the sizes whose values the analysis computes) and below them, with bisection for the value
where it stops and why (activations spill, resident parameters no longer fit, a kernel's work
departs); and for a model whose spill plan changes at the fitted values, the formula of the
plan where it has settled, on grids :data:`REGIME_SCALES` times larger.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..frontend.evaluator import MAX_VALUE_ELEMENTS
from .latency_fit import fitted
from .latency_formulas import LatencyFormula
from .polynomials import Polynomial, evaluate, last_holding, shifted

if TYPE_CHECKING:
    from ..roofline.placement import TargetReport

FAR = MAX_VALUE_ELEMENTS + 3  # past the sizes whose values the analysis computes (a [1, seq] mask)
# the placement at a point of the dims (None: not all counted)
ReportAt = Callable[[tuple[int, ...]], "TargetReport | None"]


def latency_formula(
    target: str,
    dims: list[str],
    reports: Mapping[tuple[int, ...], TargetReport],
    samples: tuple[int, ...],
    check: tuple[int, ...],
    peak: Sequence[Polynomial] | None,
    report_at: ReportAt | None = None,
    progress: Callable[[str], None] = lambda step: None,
) -> LatencyFormula:
    """Fit the latency formula from ``reports`` (a placement on the target at every point of the
    grid of ``samples`` per dim, and at ``check``). ``peak``: the candidates whose largest is the
    peak live bytes (None when it is not known as a formula), for the range nothing spills over.
    ``report_at`` places the model at any point: the formula is checked at :data:`FAR` per dim,
    past the sizes below which the analysis computes tensors' values, and where it fails there
    the last value it holds at is found by bisection (every dim alike). Where the samples spill
    (a stable spill plan fits too), it is checked below them as well, and where it does not fit
    the samples, grids :data:`REGIME_SCALES` times larger are tried: the regime past the spill
    plan's changes, from the value found by bisection on."""
    result = fitted(target, dims, reports, samples, check)
    if result.refuted and result.spills and report_at is not None:
        return _spill_regime(target, dims, samples, check, report_at, progress) or result
    if result.refuted:
        return result
    if not result.spills:
        first = reports[next(iter(reports))]
        result.holds, result.holds_to = _holds(first, dims, peak)
    if report_at is not None:
        if result.spills:
            _check_from(result, report_at, 1, min(samples))
        _check_far(result, report_at, check[0])
        if result.stop_reason == "activations spill off chip":
            result.beyond = _spill_regime(target, dims, samples, check, report_at, progress)
    return result


# a spilling model's further grids, each tried in turn: 1,024-3,584 per dim (checked at 5,632),
# then 8,192-28,672, where a spill plan that changes at small sizes has settled (ResNet-50 QDQ:
# from batch 205 on a Raspberry Pi 5, past 2,560 with a 32 MiB cache)
REGIME_SCALES = (512, 4096)


def _spill_regime(
    target: str,
    dims: list[str],
    samples: tuple[int, ...],
    check: tuple[int, ...],
    report_at: ReportAt,
    progress: Callable[[str], None] = lambda step: None,
) -> LatencyFormula | None:
    """The formula of the spill plan at large dims, fitted on the grid and check of ``samples``
    and ``check`` scaled by each of :data:`REGIME_SCALES` in turn, and the value from which it
    holds (None when it fits on none of them)."""
    for scale in REGIME_SCALES:
        progress(f"the latency formula on {target}: the spill plan at {scale} times the fitted values")
        scaled = tuple(scale * v for v in samples)
        scaled_check = tuple(scale * v for v in check)
        points = list(itertools.product(scaled, repeat=len(dims))) + [scaled_check]
        reports = {point: report_at(point) for point in points}
        if any(r is None for r in reports.values()):
            return None
        # (type: ignore below) no report is None: returned above
        result = fitted(target, dims, reports, scaled, scaled_check)  # type: ignore[arg-type]
        if not result.refuted:
            _check_from(result, report_at, 1, min(scaled))
            _check_far(result, report_at, scaled_check[0], 2 * scaled_check[0])
            return result
    return None


def _agreement(result: LatencyFormula, report_at: ReportAt, value: int) -> tuple[bool, str]:
    """Whether the formula gives the placement's latency at every dim = ``value``, and if not, why."""
    point = (value,) * len(result.dims)
    report = report_at(point)
    if report is None:
        return False, "some nodes are not counted"
    predicted = result.seconds(dict(zip(result.dims, point)))
    if predicted is not None and math.isclose(predicted, report.latency_s, rel_tol=1e-9):
        return True, ""
    if result.waves_left_out and predicted is not None and _bounds_the_kernels(result, report, point):
        return True, ""  # a lower bound: the kernels whose waves it leaves out are at or under their time
    if bool(report.spill_bytes) != result.spills:
        return False, "activations spill off chip" if report.spill_bytes else "nothing spills off chip"
    if result.spills:
        return False, "the spill plan changes"
    if report.weights_on_chip_bytes != result.weights_on_chip_bytes:
        return False, "the parameters no longer fit on chip beside the activations: read from DRAM every run"
    launches = sum(1 for k in report.nodes if k.placement.overhead_s)
    if [k.name for k in report.nodes] != result.kernel_names or launches != result.launches:
        return False, (
            f"the kernels differ ({len(report.nodes)} kernels and {launches} launches, against "
            f"{result.kernels} and {result.launches} at the fitted values)"
        )
    changed = next(
        (
            name
            for name, kernel, placed in zip(result.kernel_names, result.per_kernel, report.nodes)
            if not math.isclose(float(kernel.seconds(point)), placed.placement.time_s, rel_tol=1e-9)
        ),
        None,
    )
    moved = next(
        (
            name
            for name, kernel, placed in zip(result.kernel_names, result.per_kernel, report.nodes)
            if placed.placement.efficiency_rows is not None
            and not math.isclose(float(kernel.efficiency_at(point)), placed.placement.efficiency, rel_tol=1e-9)
        ),
        None,
    )
    if moved is not None:  # its rows reached another point of its target's by_rows curve
        return False, f"kernel {moved}'s efficiency follows its output rows (a by_rows curve) to another figure"
    return False, f"kernel {changed}'s work is no longer its formula (a read capped at its table, say)"


def _bounds_the_kernels(result: LatencyFormula, report: TargetReport, point: tuple[int, ...]) -> bool:
    """Whether a formula that leaves some kernels' whole waves out gives every other kernel's time
    and at most the time of those, for the same kernels as at the fitted values."""
    if [k.name for k in report.nodes] != result.kernel_names or bool(report.spill_bytes) != result.spills:
        return False
    left_out = set(result.waves_left_out)
    for name, kernel, placed in zip(result.kernel_names, result.per_kernel, report.nodes):
        formula_s, placed_s = float(kernel.seconds(point)), placed.placement.time_s
        if not (
            math.isclose(formula_s, placed_s, rel_tol=1e-9) or (name in left_out and formula_s <= placed_s * (1 + 1e-9))
        ):
            return False
    return True


def _check_from(result: LatencyFormula, report_at: ReportAt, low: int, smallest_fitted: int) -> None:
    """Below the fitted values: from which value (every dim alike) the formula holds, given that
    it holds at ``smallest_fitted``; the ranges then start there."""
    if _agreement(result, report_at, low)[0]:
        return
    start = last_holding(low, smallest_fitted, lambda value: not _agreement(result, report_at, value)[0]) + 1
    reason = _agreement(result, report_at, start - 1)[1]
    every = "" if len(result.dims) == 1 else " (every dim alike)"
    result.holds_from = start
    result.holds_from_text = f"holds from {', '.join(result.dims)} = {start:,}{every} (below, {reason})"
    result.ranges = [replace(r, start=max(r.start, start)) for r in result.ranges if r.end is None or r.end >= start]


def _check_far(result: LatencyFormula, report_at: ReportAt, checked: int, far: int = FAR) -> None:
    """Past the fitted values: the formula at ``far`` per dim, and where it fails there, the last
    value it holds at (bisection from ``checked``, which it holds at), and why it stops."""
    holds, _ = _agreement(result, report_at, far)
    if holds:
        # a spilling formula had no bound yet; the peak's bound is conservative (the unfused peak)
        if (result.holds_to is not None and result.holds_to < far) or result.spills:
            result.holds_to = far
            result.holds = f"holds at least to {', '.join(result.dims)} = {far:,} (checked there)"
    else:
        low = last_holding(checked, far, lambda value: _agreement(result, report_at, value)[0])
        high = low + 1
        reason = _agreement(result, report_at, high)[1]
        every = "" if len(result.dims) == 1 else " (every dim alike)"
        result.holds_to, result.stop_reason = low, reason
        result.holds = f"holds to {', '.join(result.dims)} = {low:,}{every}; from {high:,} on {reason}"
        result.ranges = [
            replace(r, end=low if r.end is None else min(r.end, low)) for r in result.ranges if r.start <= low
        ]
    if result.holds_from_text:
        result.holds = f"{result.holds_from_text}; {result.holds}" if result.holds else result.holds_from_text


def _holds(report: TargetReport, dims: list[str], peak: Sequence[Polynomial] | None) -> tuple[str | None, int | None]:
    """The condition for nothing to spill: the peak live activations (and the parameters kept
    beside them) within the target's on-chip memory; in one dim, up to which value."""
    if not report.activations_on_chip or report.target.onchip_bytes is None:
        return None, None
    capacity = int(report.target.onchip_bytes.value)
    kept = report.weights_on_chip_bytes
    room = capacity - kept
    beside = " beside the parameters" if kept else ""
    if peak is None:
        return f"holds while the activations live at once fit in the {room:,} B on chip{beside}", None
    if len(dims) == 1:
        top = _last_within(peak, room)
        if top is None:
            return f"holds for every {dims[0]}: the activations always fit on chip{beside}", None
        return (
            f"holds at least while the activations fit in the {room:,} B on chip{beside}: to {dims[0]} = {top:,}"
        ), top
    return f"holds while the peak activations (the formula above) stay within the {room:,} B on chip{beside}", None


def _last_within(peak: Sequence[Polynomial], room: int) -> int | None:
    """The largest n with every candidate at n within ``room`` (None: never exceeded)."""

    def fits(n: int) -> bool:
        return all(evaluate(p, (n,)) <= room for p in peak)

    if all(all(c <= 0 for m, c in shifted(p).items() if sum(m)) for p in peak):
        return None  # none grows with the dim
    high = 2
    while fits(high):
        high *= 2
    return last_holding(1, high, fits) if fits(1) else 0
