"""The JSON document of ``onnxroof profile --trace`` (``schema: onnxroof-trace/1``): the trace's
kernels beside the prediction, the largest gaps with their causes, each node's measured and
predicted time, and the share of the measured time mapped to ONNX nodes
(:class:`onnxroof.measure.trace_compare.TraceComparison`)."""

from __future__ import annotations

from ..measure.profile_run import kernel_placements
from ..measure.trace_compare import KernelGap, TraceComparison
from .profile_json import model_entry, node_entry

SCHEMA = "onnxroof-trace/1"
GAPS_LISTED = 10


def _kernel_entry(gap: KernelGap) -> dict:
    return {
        "name": gap.kernel,
        "op_type": gap.op_type,
        "nodes": gap.nodes,
        "measured_s": gap.measured_s,
        "predicted_s": gap.predicted_s,  # its nodes as one kernel, as the runtime ran them
        "predicted_by_rules_s": gap.by_rules_s,  # its nodes' times under the target's fusion policy
        "gap_s": gap.gap_s,  # measured - predicted_by_rules_s
        "ratio": gap.ratio,
        "cause": gap.cause,
        "why": gap.why,
        "unit": gap.unit,
        "precision": gap.precision,
    }


def trace_document(result: TraceComparison) -> dict:
    """The JSON document (``schema: onnxroof-trace/1``)."""
    analysis, measured, target = result.analysis, result.measured, result.report.target
    mapping = measured.mapping
    placements = kernel_placements(result.report)
    flops = {r.name: r.flops for r in analysis.nodes}
    return {
        "schema": SCHEMA,
        "model": model_entry(analysis),
        "target": {"name": target.name, "path": target.path, "description": target.description},
        "trace": {"format": measured.format, "source": measured.source, "files": measured.files, "runs": mapping.runs},
        "totals": {
            "measured_s": result.measured_s,
            "mapped_s": measured.mapped_s,
            "mapped_share": result.mapped_share,  # share of the measured time in kernels mapped to ONNX nodes
            "predicted_s": result.predicted_s,  # the runtime's kernels as it ran them
            "predicted_by_rules_s": result.by_rules.latency_s,  # the target's fusion policy
        },
        "largest_gaps": [_kernel_entry(g) for g in result.largest_gaps(GAPS_LISTED)],
        "kernels": [_kernel_entry(g) for g in result.kernels],
        "nodes": [node_entry(n, placements.get(n.name), flops[n.name]) for n in result.nodes],
        "removed": mapping.removed,
        "not_seen": mapping.not_seen,
        "notes": result.notes,
    }
