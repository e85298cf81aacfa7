"""The text output of ``onnxroof profile --trace``: the largest gaps between a measured per-layer
trace and the prediction, with their causes, then every runtime kernel beside its prediction
(:class:`onnxroof.measure.trace_compare.TraceComparison`; the JSON is
:func:`onnxroof.report.trace_json.trace_document`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.text import printable
from ...core.units import seconds
from .names import clip
from .table import inputs_line

if TYPE_CHECKING:
    from ...measure.trace_compare import KernelGap, TraceComparison

GAPS_SHOWN = 5


def render_trace_table(result: TraceComparison) -> str:
    lines = [*_header(result), "", *_gap_lines(result), "", *_kernel_lines(result), "", *_summary(result)]
    return "\n".join(map(printable, lines)) + "\n"  # names are the model's and the runtime's


def _header(result: TraceComparison) -> list[str]:
    analysis, target, measured = result.analysis, result.report.target, result.measured
    runs = f", {measured.mapping.runs} runs" if measured.mapping.runs > 1 else ""
    return [
        f"onnxroof profile --trace · {analysis.model.name} · inputs: {inputs_line(analysis)}",
        f"measured: {measured.source}{runs} · {', '.join(measured.files)}",
        f"predicted: target {target.name}: {target.description}",
    ]


def _ratio(gap: KernelGap) -> str:
    return "-" if gap.ratio is None else f"{gap.ratio:.2f}x"


def _gap_lines(result: TraceComparison) -> list[str]:
    lines = ["largest gaps (measured less predicted under the target's fusion policy):"]
    for rank, gap in enumerate(result.largest_gaps(GAPS_SHOWN), 1):
        nodes = f"{len(gap.nodes)} node{'s' if len(gap.nodes) != 1 else ''}" if gap.nodes else "no ONNX node"
        lines.append(
            f"  {rank}. {clip(gap.kernel, 60)} ({gap.op_type or '?'}, {nodes}): measured {seconds(gap.measured_s)}, "
            f"predicted {seconds(gap.by_rules_s)} ({_ratio(gap)}, {_signed(gap.gap_s)})"
        )
        lines.append(f"     {gap.cause}: {gap.why}")
    return lines


def _signed(value: float) -> str:
    return ("+" if value >= 0 else "-") + seconds(abs(value))


def _kernel_lines(result: TraceComparison) -> list[str]:
    header = ("kernel", "type", "nodes", "measured", "as run", "by policy", "meas/pred", "cause")
    rows = [header]
    for gap in result.kernels:
        rows.append(
            (
                clip(gap.kernel, 48),
                clip(gap.op_type or "-", 18),
                str(len(gap.nodes)),
                seconds(gap.measured_s),
                seconds(gap.predicted_s),
                seconds(gap.by_rules_s),
                _ratio(gap),
                str(gap.cause),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    right = {2, 3, 4, 5, 6}
    return [
        "  ".join(row[i].rjust(widths[i]) if i in right else row[i].ljust(widths[i]) for i in range(len(row))).rstrip()
        for row in rows
    ]


def _summary(result: TraceComparison) -> list[str]:
    measured = result.measured
    added = [k for k in result.kernels if not k.nodes]
    share = measured.mapped_share
    lines = [
        f"mapped: {share:.1%} of the measured time ({seconds(measured.mapped_s)} of {seconds(measured.measured_s)}) "
        f"is in kernels mapped to ONNX nodes"
        + (f"; {len(added)} kernel(s) with no ONNX node ({seconds(sum(k.measured_s for k in added))})" if added else "")
        if share is not None
        else "mapped: the trace measured no time",
        f"total: measured {seconds(result.measured_s)} · predicted {seconds(result.predicted_s)} as the runtime ran "
        f"it · {seconds(result.by_rules.latency_s)} under the target's fusion policy",
    ]
    if measured.mapping.not_seen:
        lines.append(
            f"note: no kernel covers {len(measured.mapping.not_seen)} node(s): "
            + ", ".join(measured.mapping.not_seen[:5])
            + (" ..." if len(measured.mapping.not_seen) > 5 else "")
        )
    lines += [f"note: {note}" for note in result.notes]
    return lines
