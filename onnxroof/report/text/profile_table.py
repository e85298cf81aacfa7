"""The text output of ``onnxroof profile``: a table of each node's predicted and measured times
(the HTML report is :func:`onnxroof.report.html.profile_page.render_profile_html`, the JSON
document :func:`onnxroof.measure.profiling.profile_document`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.text import printable
from ...core.units import seconds
from ...measure.profiling import Coverage
from .table import clip, inputs_line

if TYPE_CHECKING:
    from ...measure.profiling import NodeComparison, ProfileResult


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def render_profile_table(result: ProfileResult) -> str:
    lines = [*_header_lines(result), "", *_node_lines(result), "", *_summary_lines(result)]
    return "\n".join(map(printable, lines)) + "\n"  # names are the model's (and onnxruntime's, from them)


def _header_lines(result: ProfileResult) -> list[str]:
    """The model and its inputs, how it was measured, and the target it was predicted on."""
    analysis, target = result.analysis, result.target.target
    tags = sorted({f.tag for f in target.peak_ops_per_s.values()} | {target.dram_bytes_per_s.tag})
    threads = f"{result.threads} intra-op threads" if result.threads else "default threads"
    return [
        f"onnxroof profile · {analysis.model.name} · inputs: {inputs_line(analysis)}",
        f"measured: onnxruntime {result.ort_version} CPU, optimization {result.optimization}, {threads}, "
        f"median of {result.mapping.runs} runs after {result.warmup} warm-up",
        f"predicted: target {target.name} ({', '.join(tags)}): {target.description}",
    ]


def _coverage_note(n: NodeComparison) -> str:
    """How onnxruntime ran the node: in its own kernel, split with others, removed, or not seen."""
    if n.status == Coverage.SPLIT:
        if n.kernel != n.name:
            return f"in {n.kernel} ({n.kernel_op}), split"
        return f"{n.kernel_op}, split with fused nodes"
    if n.status == Coverage.OWN:
        return "" if n.kernel == n.name and n.kernel_op == n.op_type else f"as {n.kernel} ({n.kernel_op})"
    if n.status == Coverage.REMOVED:
        return "not run by onnxruntime (view or folded)"
    return "no kernel found for it"


def _node_lines(result: ProfileResult) -> list[str]:
    """The table, a row per node (the time columns right-aligned), then the kernels onnxruntime
    inserted."""
    header = ("name", "op", "bound", "predicted", "measured", "meas/pred", "")
    rows = [header]
    for n in result.nodes:
        rows.append(
            (
                clip(n.name, 36),
                printable(n.op_type),
                n.bound or "-",
                seconds(n.predicted_s),
                seconds(n.measured_s),
                _ratio(n.ratio),
                _coverage_note(n),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    right = {3, 4, 5}
    lines = []
    for row in rows:
        cells = [row[i].rjust(widths[i]) if i in right else row[i].ljust(widths[i]) for i in range(len(widths))]
        lines.append("  ".join(cells + [row[-1]]).rstrip())
    for kernel in result.mapping.unattributed:
        lines.append(
            f"  + {kernel.name} ({kernel.op_type}): {seconds(kernel.seconds)}, inserted by onnxruntime, no ONNX node"
        )
    return lines


def _summary_lines(result: ProfileResult) -> list[str]:
    """The totals predicted and measured, and the notes."""
    mapping = result.mapping
    # one line: which measurement the error is against (the kernels' sum, as the prediction is a sum of
    # kernel times), and the whole runs beside it, whose extra is the runtime's time between kernels
    runs = [
        f"{seconds(result.wall_s)} without the profiler" if result.wall_s else "",
        f"{seconds(mapping.run_seconds)} profiled" if mapping.run_seconds else "",
    ]
    whole = (
        f"; a whole run takes {', '.join(r for r in runs if r)} (the rest: time between kernels)" if any(runs) else ""
    )
    error = (
        f" · prediction error {result.error:+.0%} against that sum (measured/predicted {result.ratio:.2f}x)"
        if result.ratio is not None and result.error is not None
        else ""
    )
    lines = [
        f"predicted {seconds(result.predicted_s)} · measured {seconds(result.measured_s)} as the sum of kernel "
        f"medians (the prediction is a sum of kernel times){error}{whole}"
    ]
    shared = sum(1 for n in result.nodes if n.shared)
    if shared:
        lines.append(
            f"note: {shared} node(s) ran inside fused kernels; a fused kernel's time is split in proportion "
            "to its nodes' predicted times, so they share one ratio"
        )
    if mapping.not_seen:
        lines.append(
            f"note: no kernel covers {len(mapping.not_seen)} node(s): "
            + ", ".join(mapping.not_seen[:5])
            + (" ..." if len(mapping.not_seen) > 5 else "")
        )
    lines += [f"note: {note}" for note in result.notes + result.target.notes]
    return lines
