"""A forecast's error band on one model: the target's measured band (``error_band``), claimed only
where its measurements stand for this model's latency: its time on the roofs those rows ran on,
and launches that are not borrowed from other targets (``Target.borrowed``)."""

from __future__ import annotations

from typing import Protocol

from .latency_bound import BAND_NOTE
from .targets import Figure, Target


class TargetRun(Protocol):
    """What the band is decided from: one model's run on a target (``placement.TargetReport``,
    which imports this module)."""

    target: Target
    latency_s: float
    nodes: list
    borrowed: dict[str, Figure]
    notes: list[str]


# more of the time than this on roofs the band was not measured on: no band. A quarter, since an
# export re-costed with --dtype keeps small kernels in fp32 (mask arithmetic, Erf: a tenth of an
# int8 BERT on l4) that the measured runs' fused kernels hide
UNCOVERED_SHARE = 0.25


# launches taking this much of the time or more: a latency that rests on a borrowed launch cost.
# benchmarks/fit_efficiency.py gives a target its own launch cost when its launches take a tenth
# of some row's time; a target without such a row borrows it, and its rows (which fixed the band)
# all had launches under a tenth
BORROWED_LAUNCH_SHARE = 0.1


def launch_share(report: TargetRun) -> float:
    """The share of the latency the kernels' launches take.

    >>> from types import SimpleNamespace as S
    >>> kernels = [S(placement=S(overhead_s=3e-6)), S(placement=S(overhead_s=1e-6))]
    >>> round(launch_share(S(latency_s=10e-6, nodes=kernels)), 6)
    0.4
    """
    launches = sum(n.placement.overhead_s for n in report.nodes)
    return launches / report.latency_s if report.latency_s else 0.0


def rests_on_borrowed_launch(report: TargetRun) -> bool:
    """Whether the latency rests on a launch cost borrowed from other targets: launches take
    ``BORROWED_LAUNCH_SHARE`` of it or more."""
    return "node_overhead_s" in report.borrowed and launch_share(report) >= BORROWED_LAUNCH_SHARE


def band_for(report: TargetRun) -> Figure | None:
    """The target's error band, if its measurements ran on the roofs that take this model's time
    (all but ``UNCOVERED_SHARE`` of it) and the latency does not rest on a borrowed launch cost
    (launches under ``BORROWED_LAUNCH_SHARE`` of it); else None, and a note says why."""
    target = report.target
    if target.error_band is not None and rests_on_borrowed_launch(report):
        borrowed = report.borrowed["node_overhead_s"]
        report.notes.append(
            f"{BAND_NOTE}±{target.error_band.value:.0%}) holds on this target's published rows; "
            f"the launch cost ({borrowed.value * 1e6:.3g} µs a kernel) is borrowed from other targets "
            f"and takes {launch_share(report):.0%} of this model's time: small models may differ more "
            "(a forecast without a measured band)"
        )
        return None
    if target.error_band is None or not target.error_band_roofs:
        return target.error_band
    outside = sum(n.placement.time_s for n in report.nodes if n.placement.roof not in target.error_band_roofs)
    share = outside / report.latency_s if report.latency_s else 0.0
    if share <= UNCOVERED_SHARE:
        return target.error_band
    roofs = sorted({n.placement.roof for n in report.nodes if n.placement.roof not in target.error_band_roofs})
    report.notes.append(
        f"{BAND_NOTE}±{target.error_band.value:.0%}) was measured on {', '.join(target.error_band_roofs)} "
        f"kernels; {share:.0%} of this model's time runs on {', '.join(roofs)}, which no measurement "
        "covered: a forecast without a measured band"
    )
    return None
