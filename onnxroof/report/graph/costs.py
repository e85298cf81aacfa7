"""What a box of the graph view costs on each target, and what bounds it.

A node's box takes its **kernel's** bound on the target (a Relu fused into a Conv's kernel is
as compute-bound as that kernel: the summary's JSON lists the bound per kernel), and its share
of the kernel's time split by FLOPs (``roofline/placement.node_times``, the split the module
table and a profile make). A folded module takes the bound that holds for most of its time.
A node no target runs (not counted) has no bound there: ``None``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...compare.modules import FOLDED_NOTE
from ...core.text import printable
from ...core.units import iec, seconds, si
from ...roofline.placement import node_times
from ..bounds import bound_label

if TYPE_CHECKING:
    from ...result import Analysis
    from .fold import GraphItem


@dataclass
class TargetCosts:
    """Per node of the model, on one target."""

    name: str
    latency_s: float
    time_s: list[float]  # node index -> its share of its kernel's time
    bound: list[str | None]  # node index -> its kernel's bound (None: not placed)
    kernel: list[str | None]  # node index -> "Conv+Relu (conv2d_0)": the kernel it runs in
    kernel_members: list[tuple[int, ...]]  # node index -> the nodes of its kernel


@dataclass
class BoxCost:
    """One box's figures on one target."""

    time_s: float
    share: float  # of the latency (all the blocks of a run)
    bound: str | None  # the kernel's bound, or the bound most of a module's time is under
    bound_time: dict[str, float]  # bound -> seconds of the box under it


def target_costs(analysis: Analysis) -> list[TargetCosts]:
    """Each target's per-node time, bound and kernel."""
    index = {record.name: i for i, record in enumerate(analysis.nodes)}
    count = len(analysis.nodes)
    times = node_times(analysis.targets)
    result = []
    for report in analysis.targets:
        per_node = times[report.target.name]
        time = [per_node.get(record.name, 0.0) for record in analysis.nodes]
        bound: list[str | None] = [None] * count
        kernel: list[str | None] = [None] * count
        members: list[tuple[int, ...]] = [()] * count
        for placed in report.nodes:
            inside = tuple(index[name] for name in placed.nodes if name in index)
            for position in inside:
                bound[position] = str(placed.placement.bound)
                kernel[position] = f"{placed.op_type} ({placed.name})" if len(placed.nodes) > 1 else placed.op_type
                members[position] = inside
        result.append(TargetCosts(report.target.name, report.latency_s, time, bound, kernel, members))
    return result


def box_cost(item: GraphItem, costs: TargetCosts) -> BoxCost:
    """A box on one target: a node's kernel bound; a module's time summed by bound.

    >>> from types import SimpleNamespace as S
    >>> costs = TargetCosts("t", 4.0, [1.0, 2.0, 1.0], ["dram", "compute", "dram"], [None] * 3, [()] * 3)
    >>> box = box_cost(S(kind="module", nodes=[0, 1, 2]), costs)
    >>> box.bound, box.share, box.bound_time  # DRAM 2 s against compute 2 s: the tie goes to the first seen
    ('dram', 1.0, {'dram': 2.0, 'compute': 2.0})
    """
    if item.kind == "node" and len(item.nodes) == 1:  # the common case, a node's own box: no sums
        index = item.nodes[0]
        total, bound = 0.0 + costs.time_s[index], costs.bound[index]
        return BoxCost(
            total, total / costs.latency_s if costs.latency_s else 0.0, bound, {} if bound is None else {bound: total}
        )
    spent: dict[str, float] = defaultdict(float)
    total = 0.0
    for index in item.nodes:
        total += costs.time_s[index]
        if costs.bound[index] is not None:
            spent[costs.bound[index]] += costs.time_s[index]  # type: ignore[index]
    if item.kind == "node":
        bound = costs.bound[item.nodes[0]]
    else:
        placed = [b for b in spent if b != "none"] or list(spent)
        bound = max(placed, key=lambda b: spent[b]) if placed else None
    return BoxCost(total, total / costs.latency_s if costs.latency_s else 0.0, bound, dict(spent))


def box_text(item: GraphItem, analysis: Analysis, targets: Sequence[TargetCosts]) -> str:
    """The box's tooltip and detail panel: what it is, its counts, its time and bound per target
    (for a node, ``explain``'s key figures)."""
    records = analysis.nodes
    if item.kind in ("input", "output"):
        where = "enters" if item.kind == "input" else "leaves"
        return f"{printable(item.label)}\n{printable(item.name)}: a tensor that {where} this view"
    macs = sum(records[i].macs for i in item.nodes)
    flops = sum(records[i].flops for i in item.nodes)
    params = sum(records[i].params for i in item.nodes)
    weights = sum(records[i].weight_bytes for i in item.nodes)
    moved = sum(records[i].input_bytes + records[i].output_bytes for i in item.nodes)
    if item.kind == "node":
        record = records[item.nodes[0]]
        lines = [
            printable(f"{record.op_type} {record.name}"),
            f"status: {record.status}" + (f" ({printable(record.reason)})" if record.reason else ""),
        ]
        if record.formula:
            lines.append(f"FLOPs = {printable(record.formula)}")
        if item.repeats > 1:
            lines.append(f"the same node in each of {item.repeats} alike blocks: the figures below are theirs summed")
    else:
        blocks = (
            f" ({item.repeats} alike blocks: the figures below are their sum, the box's one block's)"
            if item.repeats > 1
            else ""
        )
        lines = [printable(f"{item.label} {item.name}".strip()) + blocks, f"{len(item.nodes):,} nodes"]
        if item.folded:
            lines.append(FOLDED_NOTE)
    lines.append(f"MACs {si(macs)} · FLOPs {si(flops)} · params {si(params)}")
    lines.append(f"bytes: weights {iec(weights)} · activations in+out {iec(moved)}")
    for costs in targets:
        box = box_cost(item, costs)
        if item.kind == "node":
            kernel = costs.kernel[item.nodes[0]]
            if kernel is None:
                lines.append(f"{costs.name}: not placed (not counted, or no kernel)")
                continue
            lines.append(
                f"{costs.name}: {seconds(box.time_s)} ({box.share:.1%} of the latency), "
                f"{bound_label(box.bound or 'none')}-bound, kernel {printable(kernel)}"
            )
        else:
            split = ", ".join(
                f"{bound_label(b)} {t / box.time_s:.0%}"
                for b, t in sorted(box.bound_time.items(), key=lambda kv: -kv[1])
                if box.time_s and t
            )
            lines.append(
                f"{costs.name}: {seconds(box.time_s)} ({box.share:.1%} of the latency)"
                + (f"; time {split}" if split else "")
            )
    return "\n".join(lines)
