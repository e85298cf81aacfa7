"""``onnxroof explain``: how one node's numbers were computed, and where it runs on each target."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from ...core.text import printable
from ...core.units import seconds
from ..bounds import bound_label
from .names import clip
from .table import TERMINAL_COLUMNS, shape_text

if TYPE_CHECKING:
    from ...cost.records import NodeRecord
    from ...result import Analysis


def render_explain(analysis: Analysis, record: NodeRecord) -> str:
    """How one node's numbers were computed: shapes in, the rule, the rule with its numbers."""
    from ...ops import rule_for

    rule = rule_for(record.domain, record.op_type)
    tensors = analysis.tensors
    width = min(60, max(len(n) for n in (*record.inputs, *record.outputs, "tensor")))
    lines = [
        f"node    {clip(record.name, 200)}  ({printable(record.op_type)}, {printable(record.domain or 'ai.onnx')}; "
        f"family {record.family})",
        f"status  {record.status}" + (f": {printable(record.reason)}" if record.reason else ""),
        f"dtype   {record.dtype}",
        "inputs",
    ]
    for name, shape, dtype in zip(record.inputs, record.input_shapes, record.input_dtypes):
        if name:
            kind = tensors[name].kind if name in tensors else ""
            lines.append(f"  {clip(name, width):{width}}  {shape_text(shape):>18}  {dtype:8}  {kind}")
    lines.append("outputs")
    for name, shape, dtype in zip(record.outputs, record.output_shapes, record.output_dtypes):
        lines.append(f"  {clip(name, width):{width}}  {shape_text(shape):>18}  {dtype}")
    lines += [
        f"rule    {rule.formula if rule else 'none: the op is unsupported, nothing is counted'}",
        f"applied {printable(record.formula or '-')}",
        f"MACs {record.macs:,} · MAC-FLOPs {record.mac_flops:,} · FLOPs {record.flops:,}"
        f" (other element ops {record.flops - record.mac_flops:,})",
        f"params {record.params:,} (stored) · weight bytes read {record.weight_bytes:,}"
        f" · input bytes {record.input_bytes:,} · output bytes {record.output_bytes:,}",
    ]
    if record.intensity is not None:
        lines.append(
            f"intensity {record.intensity:.4g} FLOP/B = {record.flops:,} / ({record.weight_bytes:,} + "
            f"{record.input_bytes:,} + {record.output_bytes:,})"
        )
    elif record.view:
        lines.append("intensity -  (a view: moves no bytes)")
    for attribute, subgraph in record.subgraphs.items():
        placed = (
            f"; placed as kernels{f' x {subgraph.runs:,}' if subgraph.runs > 1 else ''}: {subgraph.runs_reason}"
            if subgraph.runs
            else "; not run, not placed"
        )
        lines.append(
            f"subgraph {attribute}: {len(subgraph.records)} nodes, {subgraph.flops:,} FLOPs, "
            f"{subgraph.params:,} params{printable(placed)}"
        )
    in_place = analysis.memory.problem.in_place_concats
    for report in analysis.targets:
        lines += explain_target_lines(report, record.name, in_place)
    return "\n".join(lines) + "\n"


def explain_target_lines(report, node: str, in_place: frozenset[str] = frozenset()) -> list[str]:
    """Where ``node`` runs on one target: its kernel (the nodes fused with it), bytes and time per
    memory level, the efficiency applied, the launch cost, the time and the bound. ``in_place``:
    the Concats whose inputs the memory stage writes into their buffer (no kernel)."""
    from ...roofline.terms import explain_term_lines  # here: terms reads the op registry, which `targets` skips

    kernel = next((k for k in report.nodes if node in k.nodes), None)
    name = printable(report.target.name)
    if kernel is None:
        return [f"target {name}: not run (a folded constant or shape arithmetic: no kernel)"]
    if node in in_place and not kernel.placement.time_s:
        return [f"target {name}: not run (its inputs are written into its buffer in place: no kernel, no launch)"]
    point = kernel.placement
    fused = (
        f"kernel {printable(kernel.name)} ({printable(kernel.op_type)}: {len(kernel.nodes)} nodes fused under "
        f"{', '.join(report.fusion)})"
        if len(kernel.nodes) > 1
        else "its own kernel"
    )
    lines = [
        f"target {name}: {fused}",
        *(
            [f"  runs     x {kernel.runs:,} per run of the model (a loop's body): the figures below are all of them"]
            if kernel.runs > 1
            else []
        ),
        *explain_term_lines(report, kernel),  # compute, DRAM, on chip, efficiency, launch, stall, subnormal
    ]
    if report.dataflow is not None:  # a layer pipeline: its time is its stage's, the roofs' terms above are not
        lines.append(
            f"  time     {seconds(point.time_s)}, its part of a frame's pipeline stages (the stages run at once; "
            "the host link's bytes are the pipeline's)"
        )
    elif report.edge_tpu_cut is not None and kernel.name in _host_kernels(report):
        host = report.edge_tpu_cut.host
        lines.append(f"  time     {seconds(point.time_s)} on {host} (past the Edge TPU's graph cut)")
    else:
        lines.append(f"  time     {seconds(point.time_s)}, {bound_label(point.bound)}-bound")
    if len(kernel.nodes) > 1:
        # every name whole: a clip of the list merged two of them
        lines += textwrap.wrap(
            f"  nodes    {', '.join(map(printable, kernel.nodes))}",
            TERMINAL_COLUMNS,
            subsequent_indent=" " * 11,
            break_on_hyphens=False,
            break_long_words=False,
        )
    return lines


def _host_kernels(report) -> set[str]:
    """The kernels an Edge TPU's host runs: the last ``host_kernels`` of the run."""
    cut = report.edge_tpu_cut
    return {k.name for k in report.nodes[len(report.nodes) - cut.host_kernels :]} if cut.host_kernels else set()
