"""The JSON document of `onnxroof profile` (``schema: onnxroof-profile/1``): each node's
predicted and measured time, the kernels onnxruntime ran and the totals
(:class:`onnxroof.measure.profiling.ProfileResult`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..measure.profile_run import kernel_placements
from ..measure.profiling import NodeComparison, ProfileResult
from ..result.entries import tensor_entry

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.point import Placement

SCHEMA = "onnxroof-profile/1"


def _achieved(work: int, seconds: float | None) -> float | None:
    return work / seconds if seconds and work else None


def node_entry(n: NodeComparison, point: Placement | None, flops: int) -> dict:
    """One node's measured and predicted time in the JSON (``point``: its kernel's placement)."""
    return {
        "name": n.name,
        "op_type": n.op_type,
        "bound": n.bound,
        "predicted_s": n.predicted_s,
        "measured_s": n.measured_s,
        "ratio": n.ratio,
        "kernel": n.kernel,
        "kernel_op": n.kernel_op,
        "status": n.status,
        "flops": flops,
        "intensity": point.intensity if point else None,  # FLOP per DRAM byte of its kernel on the target
        "predicted_flops_per_s": _achieved(flops, n.predicted_s),
        "measured_flops_per_s": _achieved(flops, n.measured_s),
    }


def model_entry(analysis: Analysis) -> dict:
    """The model measured: its name, path and inputs."""
    return {
        "name": analysis.model.name,
        "path": analysis.model.path,
        "inputs": [tensor_entry(i) for i in analysis.inputs],
    }


def profile_document(result: ProfileResult) -> dict:
    """The JSON document (``schema: onnxroof-profile/1``)."""
    analysis, mapping, report = result.analysis, result.mapping, result.target
    target = report.target
    placements = kernel_placements(report)
    flops = {r.name: r.flops for r in analysis.nodes}

    total_flops = sum(n.placement.flops for n in report.nodes)
    return {
        "schema": SCHEMA,
        "model": model_entry(analysis),
        "target": {
            "name": target.name,
            "path": target.path,
            "description": target.description,
            "roofs": {
                roof: {"peak_flops_per_s": figure.value, "tag": figure.tag}
                for roof, figure in target.peak_ops_per_s.items()
            },
            "dram_bytes_per_s": target.dram_bytes_per_s.value,
            "onchip_bytes": target.onchip_bytes.value if target.onchip_bytes else None,
            "onchip_bytes_per_s": target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None,
        },
        "onnxruntime": {
            "version": result.ort_version,
            "provider": "CPUExecutionProvider",
            "optimization": result.optimization,
            "intra_op_threads": result.threads,
            "runs": mapping.runs,
            "warmup": result.warmup,
        },
        "totals": {
            "predicted_s": result.predicted_s,  # the kernels onnxruntime ran, costed on the target
            "predicted_by_rules_s": result.by_rules.latency_s
            if result.by_rules
            else None,  # the target's fusion policy
            "measured_s": result.measured_s,  # sum of the kernels' medians
            "measured_nodes_s": sum(mapping.seconds.values()),
            "unattributed_s": sum(k.seconds for k in mapping.unattributed),
            "run_s": mapping.run_seconds,  # median wall time of one profiled run, executor overhead included
            "wall_s": result.wall_s,  # median time of one run without the profiler
            "wall_fastest_s": result.wall_fastest_s,  # fastest run without the profiler (roofs are fastest runs too)
            "ratio": result.ratio,  # measured / predicted
            "error": result.error,  # (predicted - measured) / measured
            "flops": total_flops,
            "intensity": report.model_point.intensity,
            "predicted_flops_per_s": _achieved(total_flops, result.predicted_s),
            "measured_flops_per_s": _achieved(total_flops, result.measured_s),
        },
        "nodes": [node_entry(n, placements.get(n.name), flops[n.name]) for n in result.nodes],
        "kernels": [
            {
                "name": k.name,
                "op_type": k.op_type,
                "measured_s": k.seconds,
                "nodes": k.nodes,
                "shares_s": k.shares,
                "flops": sum(flops[n] for n in k.nodes),
                "measured_flops_per_s": _achieved(sum(flops[n] for n in k.nodes), k.seconds),
            }
            for k in mapping.kernels
        ],
        "unattributed": [{"name": k.name, "op_type": k.op_type, "measured_s": k.seconds} for k in mapping.unattributed],
        "removed": mapping.removed,
        "not_seen": mapping.not_seen,
        "notes": result.notes,
    }
