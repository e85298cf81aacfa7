"""The report's "Several devices" section (``--devices N``): per target, a row per (TP, PP) split
with its memory and time per device, a bar of each split's step time (scaled to the slowest), and
the answer in words, as the text summary gives it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.units import iec, seconds
from ...roofline.devices import plan_sentences
from ...roofline.verdicts import capacity_text
from ..text.devices import structure_line

if TYPE_CHECKING:
    from ...result import Analysis


def devices_context(analysis: Analysis) -> list[dict] | None:
    """One table per target; None without ``--devices`` (the page is then as before)."""
    if not analysis.parallel:
        return None
    tables = []
    for plan in analysis.parallel:
        slowest = max((c.latency_s for c in plan.choices), default=0.0)
        fewest = plan.fewest
        rows = [
            {
                "tensor": c.tensor,
                "pipeline": c.pipeline,
                "devices": c.devices,
                "weights": iec(c.weight_bytes),
                "kv": iec(c.kv_cache_bytes),
                "activations": iec(c.activation_bytes),
                "need": iec(c.need_bytes),
                "fits": {True: "yes", False: "no", None: "?"}[c.fits],
                "fits_key": {True: "yes", False: "no", None: "unknown"}[c.fits],
                "step": seconds(c.latency_s),
                "collective": seconds(c.collective_s),
                "sends": seconds(c.transfer_s),
                "collective_share": f"{c.collective_share:.0%}",
                "bubble": f"{c.bubble:.0%}",
                "per_s": f"{c.per_s:,.1f}",
                "bar": f"{100 * c.compute_s / slowest:.1f}%" if slowest else "0%",  # the kernels, then the links
                "bar_links": f"{100 * (c.collective_s + c.transfer_s) / slowest:.1f}%" if slowest else "0%",
                "bar_title": f"kernels {seconds(c.compute_s)} + all-reduces {seconds(c.collective_s)} + sends "
                f"{seconds(c.transfer_s)}",
                "fewest": fewest is c,
            }
            for c in plan.choices
        ]
        capacity = plan.choices[0].capacity_bytes if plan.choices else None
        tables.append(
            {
                "target": plan.target,
                "devices": plan.devices,
                "link": plan.link or "",
                "kind": plan.latency_kind,
                "unit": plan.per_step_unit,
                "structure": structure_line(plan),
                "rows": rows,
                "capacity": capacity_text(capacity) if capacity else "unknown",
                "sentences": plan_sentences(plan),
                "refused": [f"{degree} devices: {reason}" for degree, reason in sorted(plan.refused.items())],
                "notes": list(plan.notes),
            }
        )
    return tables
