"""Memory on chip: activations that spill off chip (and what the lowest-peak execution order or
a smaller batch saves, each placed or analysed again), and parameters a target that keeps them
on chip must stream every run because they do not fit (and what that costs, placed again with
room for them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.units import iec, seconds
from .records import Finding
from .variants import Variants, changed_target, per_inference_s
from .wording import fewer_parameter_bytes

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport


def spill(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    """Activations spilled off chip per run, and the best of: the lowest-peak order, half the batch."""
    if not report.spill_bytes:
        return []
    base_s = per_inference_s(report)
    memory = analysis.memory
    options: list[tuple[str, int, float, str]] = []  # (what, spilled bytes, seconds per inference, change)
    best = memory.best.schedule
    if best.order != memory.model_order.order and best.peak_bytes < memory.model_order.peak_bytes:
        ordered = variants.placed(report, order=best.order)
        options.append(
            (
                f"the lowest-peak order ({memory.best.method}, peak {iec(best.peak_bytes)})",
                ordered.spill_bytes,
                per_inference_s(ordered),
                "--emit-order FILE",
            )
        )
    if report.batch > 1:
        half = report.batch // 2
        smaller = variants.report(report.target, batch=half)
        if not isinstance(smaller, str):
            options.append((f"batch {half}", smaller.spill_bytes, per_inference_s(smaller), f"--batch {half}"))
    title = f"{iec(report.spill_bytes)} of activations spill off chip every run"
    evidence: dict = {
        "spill_bytes": report.spill_bytes,
        "spilled": list(report.spilled),
        "onchip_bytes": int(report.target.onchip_bytes.value) if report.target.onchip_bytes else None,
        "peak_bytes": memory.model_order.peak_bytes,
        "options": [{"what": w, "spill_bytes": b, "per_inference_s": s, "change": c} for w, b, s, c in options],
    }
    helpful = [o for o in options if o[2] < base_s]
    if not helpful:
        detail = (
            "; ".join(f"{w}: still {iec(b)} spilled" for w, b, _, _ in options)
            or "the model's order is already the lowest-peak one found"
        )
        return [
            Finding(
                "spill",
                report.target.name,
                title,
                detail,
                nodes=tuple(report.spilled),
                latency_s=base_s,
                gain_bytes=0,
                evidence=evidence,
            )
        ]
    what, spilled, new_s, change = min(helpful, key=lambda o: o[2])
    detail = f"with {what}: {iec(spilled)} spilled, {seconds(new_s)} per inference against {seconds(base_s)}" + (
        "; write the order with --emit-order" if change.startswith("--emit-order") else ""
    )
    return [
        Finding(
            "spill",
            report.target.name,
            title + f": {what} saves {seconds(base_s - new_s)}",
            detail,
            nodes=tuple(report.spilled),
            gain_s=base_s - new_s,
            gain_bytes=report.spill_bytes - spilled,
            latency_s=base_s,
            change=change,
            evidence=evidence,
        )
    ]


def weights(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    """Parameters streamed every run on a target that keeps them on chip when they fit."""
    target = report.target
    if not target.weights_resident or not target.onchip_bytes:
        return []
    records = {r.name: r for r in analysis.run_view.nodes}  # the nodes the kernels run
    # the kernels the target runs itself (not its host's, past an Edge TPU's cut)
    parameter_bytes = sum(records[n].weight_bytes for k in report.own_nodes for n in k.nodes if n in records)
    streamed = parameter_bytes - report.weights_on_chip_bytes
    if streamed <= 0:
        return []
    roomy = variants.placed(report, target=changed_target(target, onchip_bytes=target.onchip_bytes.value + streamed))
    base_s, new_s = per_inference_s(report), per_inference_s(roomy)
    title = (
        f"{iec(streamed)} of the {iec(parameter_bytes)} of parameters do not fit on chip and are read from DRAM "
        f"every run: {seconds(base_s - new_s)} of the time"
    )
    detail = (
        f"{iec(int(target.onchip_bytes.value))} on chip hold the peak activations and "
        f"{iec(report.weights_on_chip_bytes)} "
        "of parameters; with room for them all the model would take "
        f"{seconds(new_s)}: {fewer_parameter_bytes(analysis)} keeps more"
    )
    return [
        Finding(
            "weights",
            target.name,
            title,
            detail,
            gain_s=base_s - new_s,
            gain_bytes=streamed,
            latency_s=base_s,
            evidence={
                "parameter_bytes": parameter_bytes,
                "kept_bytes": report.weights_on_chip_bytes,
                "streamed_bytes": streamed,
                "latency_s_with_room": roomy.latency_s,
            },
        )
    ]
