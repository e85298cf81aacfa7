"""The model page's node table: compact JSON (rendered in pages by the script) and its first page.

The rows live once, as compact JSON (``#onnxroof-nodes``, repeated strings as indices), and the
page's script renders them :data:`PAGE_SIZE` at a time; the first page is also rendered here, so
the page reads without JavaScript. Past :data:`FORMULAS_MAX_NODES` nodes the per-node formulas
are left out.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

from ...core.text import printable
from ...cost.records import NodeStatus
from ..bounds import BOUND_LABELS, BOUND_TITLES
from ..formatting import count_text, format_value, shape_text
from .page import metric_cell

if TYPE_CHECKING:
    from ...cost.records import NodeRecord
    from ...result import Analysis
    from ...roofline.placement import Placement, TargetReport

PAGE_SIZE = 200  # node-table rows per page
FORMULAS_MAX_NODES = 2_000  # larger graphs leave the per-node formulas out of the page (`onnxroof explain`)
STATUS_LABELS = {
    NodeStatus.OK: "counted",
    NodeStatus.CONSTANT: "folded",
    NodeStatus.UNSUPPORTED: "unsupported",
    NodeStatus.UNKNOWN_SHAPE: "unknown shape",
    NodeStatus.UNKNOWN_VALUE: "unknown value",
    NodeStatus.DATA_DEPENDENT: "data-dependent",
    NodeStatus.INVALID: "invalid",
}
# The node table's columns after #, name, op, type and shape: (key, header, sort type).
NODE_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("macs", "MACs", "MACs", "count"),
    ("flops", "FLOPs", "FLOPs", "count"),
    ("params", "Params", "parameters", "count"),
    ("bytes", "Bytes", "bytes", "bytes"),
    ("intensity", "FLOP/B", "FLOP/B", "ratio"),  # the intensity: FLOP per byte
)


def node_data(analysis: Analysis) -> dict:
    """The node table as compact JSON: one array per node, repeated strings as indices."""
    nodes = analysis.nodes
    ops, dtypes, shapes, statuses = _Interner(), _Interner(), _Interner(), _Interner()
    with_formulas = len(nodes) <= FORMULAS_MAX_NODES
    rows = []
    for node in nodes:
        # model text as the page shows it: control characters as '?' (the JSON keeps them exactly)
        shape = printable("; ".join(shape_text(s) for s in node.output_shapes) or "-")
        op = ops((printable(node.op_type), printable(f"{node.domain or 'ai.onnx'}::{node.op_type} ({node.family})")))
        rows.append(
            [
                printable(node.name),
                op,
                dtypes(node.dtype),
                shapes(shape),
                statuses(node.status),
                node.macs,
                node.flops,
                node.params,
                node.weight_bytes,
                node.input_bytes,
                node.output_bytes,
                printable(node.formula or "") if with_formulas else "",
                printable(node.reason or ""),
            ]
        )
    index = {node.name: position for position, node in enumerate(nodes)}
    return {
        "columns": [
            "name",
            "op",
            "dtype",
            "shape",
            "status",
            "macs",
            "flops",
            "params",
            "weight_bytes",
            "input_bytes",
            "output_bytes",
            "formula",
            "reason",
        ],
        "ops": [list(op) for op in ops.values],
        "dtypes": dtypes.values,
        "shapes": shapes.values,
        "statuses": [[s, STATUS_LABELS.get(s, s)] for s in statuses.values],
        "bounds": [[b, BOUND_LABELS[b], BOUND_TITLES[b]] for b in BOUND_LABELS],
        "targets": [_target_columns(report, index) for report in analysis.targets],
        "formulas": with_formulas,
        "page_size": PAGE_SIZE,
        "rows": rows,
    }


def _target_columns(report: TargetReport, index: dict[str, int]) -> dict:
    """A target's columns of the node table: each kernel's time, DRAM bytes and bound on the row
    of its first node, and for a fused node the row of its kernel."""
    bounds = list(BOUND_LABELS)
    count = len(index)
    time: list[float | None] = [None] * count
    dram: list[int | None] = [None] * count
    bound: list[int | None] = [None] * count
    kernel: list[int | None] = [None] * count  # a fused node: the row of its kernel's first node
    for placed in report.nodes:
        position = index.get(placed.name)
        if position is None:
            continue
        p = placed.placement
        time[position] = _round(p.time_s)
        dram[position] = p.dram_bytes
        bound[position] = bounds.index(p.bound) if p.bound in bounds else None
        for member in placed.nodes[1:]:
            if member in index:
                kernel[index[member]] = position
    return {
        "name": report.target.name,
        "latency_s": report.latency_s,
        "time": time,
        "dram": dram,
        "bound": bound,
        "kernel": kernel,
    }


class _Interner:
    """Strings -> small integers, in order of first use."""

    def __init__(self) -> None:
        self.values: list = []
        self._index: dict = {}

    def __call__(self, value) -> int:
        if value not in self._index:
            self._index[value] = len(self.values)
            self.values.append(value)
        return self._index[value]


def _round(value: float | None) -> float | None:
    """Six significant digits: plenty for a page, half the characters of a full float."""
    return None if value is None else float(f"{value:.6g}")


def node_table_context(analysis: Analysis) -> dict:
    nodes = analysis.nodes
    targets = [r.target.name for r in analysis.targets]
    placements = [{k.name: k.placement for k in r.nodes} for r in analysis.targets]
    fused = [{member: k.name for k in r.nodes for member in k.nodes[1:]} for r in analysis.targets]
    first = nodes[:PAGE_SIZE]
    bound_options = []
    for number, report in enumerate(analysis.targets):
        present = Counter(k.placement.bound for k in report.nodes)
        for bound in BOUND_LABELS:
            if present.get(bound):
                bound_options.append(
                    {
                        "value": f"{number}:{bound}",
                        "label": f"{report.target.name}: {BOUND_LABELS[bound]} ({present[bound]:,})",
                    }
                )
    pages = max(1, math.ceil(len(nodes) / PAGE_SIZE))
    return {
        "columns": [{"key": key, "label": label} for key, label, _, _ in NODE_COLUMNS],
        "targets": targets,
        "rows": [
            _row_context(
                position, node, [p.get(node.name) for p in placements], targets, [f.get(node.name) for f in fused]
            )
            for position, node in enumerate(first)
        ],
        "op_options": [
            {"value": op, "label": f"{op} ({count:,})"}
            for op, count in sorted(Counter(n.op_type for n in nodes).items(), key=lambda kv: kv[0].lower())
        ],
        "bound_options": bound_options,
        "paged": len(nodes) > PAGE_SIZE,
        "page_size": count_text(PAGE_SIZE),
        "pages": count_text(pages),
        "shown": f"1–{len(first):,}" if first else "0",
        "total": count_text(len(nodes)),
    }


def _row_context(
    position: int, node: NodeRecord, placements: list[Placement | None], targets: list[str], kernels: list[str | None]
) -> dict:
    """One row of the node table; ``position`` is the node's place in execution order. The
    script renders the same markup from the compact JSON (keep the two in step)."""
    counted = node.counted
    status = node.status
    metrics = []
    total_bytes = node.weight_bytes + node.input_bytes + node.output_bytes
    for key, _, unit, kind in NODE_COLUMNS:
        if not counted:
            metrics.append({"text": "—", "title": f"not counted: {node.reason}", "value": "", "cls": "na"})
            continue
        if key == "bytes":
            metric = metric_cell(total_bytes, kind, unit)
            metric["title"] = (
                f"{node.weight_bytes:,} weight + {node.input_bytes:,} input + "
                f"{node.output_bytes:,} output = {total_bytes:,} bytes"
            )
        else:
            metric = metric_cell(getattr(node, key), kind, unit)
        if key == "flops" and node.formula:
            metric["title"] = f"{metric['title']}\n{node.formula}"
        metrics.append(metric)
    for placement, target, kernel in zip(placements, targets, kernels):
        if placement is None and kernel is not None:
            metrics.append(
                {
                    "text": "fused",
                    "title": f"runs inside the kernel of {kernel} on {target}: that row has the kernel's time",
                    "value": "",
                    "cls": "na fused",
                }
            )
            metrics.append({"text": "—", "title": "", "value": "", "cls": "na", "badge": True})
            continue
        if placement is None:
            metrics.append({"text": "—", "title": f"not placed on {target}: not counted", "value": "", "cls": "na"})
            metrics.append({"text": "—", "title": "", "value": "", "cls": "na", "badge": True})
            continue
        time_s = placement.time_s
        metrics.append(
            {
                "text": format_value(_round(time_s), "seconds"),
                "title": f"{_round(time_s):.6g} s on {target} · {placement.dram_bytes:,} DRAM bytes",
                "value": repr(_round(time_s)),
                "cls": "zero" if time_s == 0 else "",
            }
        )
        bound = placement.bound
        metrics.append(
            {
                "text": BOUND_LABELS.get(bound, bound),
                "title": BOUND_TITLES.get(bound, bound),
                "value": bound,
                "cls": f"bound bound-{bound}",
                "badge": True,
            }
        )
    shape = "; ".join(shape_text(s) for s in node.output_shapes) or "-"
    return {
        "index": str(position),
        "number": str(position),  # 0-based, as the terminal table, the CSV and the model's node list number them
        "name": node.name,
        "op_type": node.op_type,
        "op_title": f"{node.domain or 'ai.onnx'}::{node.op_type} ({node.family})",
        "dtype": node.dtype,
        "shape": shape,
        "status": status,
        "status_label": STATUS_LABELS.get(status, status),
        "status_title": node.reason or ("costed by its rule" if status == NodeStatus.OK else status),
        "counted": counted,
        "metrics": metrics,
    }
