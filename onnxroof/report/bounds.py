"""What bounds a kernel, in the same words in every output (summary, Markdown, compare, sweep,
diff, HTML). The roofline stage names the bound of each kernel and of the whole-model point:
``compute``, ``parallelism``, ``dram``, ``onchip``, ``overhead`` or ``none``; a target's ``time_share`` gives the
share of the latency each bound takes. Outputs state both: the point's bound and the shares.

>>> time_by_bound({"compute": 0.73, "overhead": 0.27, "none": 0.0})
'compute 73%, overhead 27%'
>>> bound_line("dram", {"dram": 0.73, "overhead": 0.27})
'whole model DRAM-bound; time: DRAM 73%, overhead 27%'
>>> bound_line("compute", {"overhead": 1.0})
'time overhead-bound: overhead 100%; the whole-model point (its FLOPs over its DRAM bytes) is in the compute region'
"""

from __future__ import annotations

from collections.abc import Mapping

from ..roofline.verdicts import BOUND_LABELS  # noqa: F401  (the renderers take the words from here)

BOUND_TITLES = {
    "compute": "compute-bound: FLOPs ÷ the roof's peak is the longest time",
    "dram": "DRAM-bound: DRAM bytes ÷ DRAM bandwidth is the longest time",
    "onchip": "on-chip-bound: on-chip bytes ÷ on-chip bandwidth is the longest time",
    "parallelism": "parallelism-bound: FLOPs ÷ (the roof's peak x the share of the parallel units its work fills, "
    "in whole waves of tiles) is the longest time",
    "overhead": "overhead-bound: the target's fixed cost per kernel (a launch) is longer than the work",
    "none": "no work on this target",
}


def bound_label(bound: str) -> str:
    return BOUND_LABELS.get(bound, bound)


def time_by_bound(time_share: Mapping[str, float]) -> str:
    """The shares of the latency per bound, largest first (those under 0.5% left out)."""
    shares = sorted(((b, s) for b, s in time_share.items() if s >= 0.005), key=lambda item: -item[1])
    return ", ".join(f"{bound_label(b)} {s:.0%}" for b, s in shares) or "no time"


def bound_line(model_bound: str, time_share: Mapping[str, float]) -> str:
    """The whole-model point's bound and where the time goes; where the kernels' time goes to
    another bound than the point's (each kernel launch-bound, the whole model's FLOPs over its
    bytes compute-bound), the time's bound first and the point's region after, never a
    contradiction."""
    top = max(time_share.items(), key=lambda item: item[1], default=(model_bound, 0.0))
    if top[1] <= time_share.get(model_bound, 0.0):
        return f"whole model {bound_label(model_bound)}-bound; time: {time_by_bound(time_share)}"
    return (
        f"time {bound_label(top[0])}-bound: {time_by_bound(time_share)}; the whole-model point (its FLOPs over "
        f"its DRAM bytes) is in the {bound_label(model_bound)} region"
    )
