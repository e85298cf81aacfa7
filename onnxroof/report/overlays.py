"""What the viewer overlays (report/netron.py, report/model_explorer.py) read of an analysis, read in
one place each: the nodes' kernels on every target (:func:`placed_nodes`), each target's verdict
(:func:`verdicts`), and the key a viewer finds a node by (:func:`viewer_names`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..cost.records import NodeRecord
    from ..findings import Finding, Review
    from ..result import Analysis


@dataclass(frozen=True)
class NodeOnTarget:
    """One node on one target: the kernel that runs it and the node's part of that kernel's time."""

    kernel: str  # the kernel's name (its first node's)
    kernel_op: str  # "Conv+Relu" for a fused kernel
    kernel_s: float  # the kernel's time per run of the model
    time_s: float  # the node's part of it (split by FLOPs, by bytes for a node that does none)
    share: float  # time_s / the target's latency
    bound: str  # what bounds the kernel (roofline.point.Bound's value)


def placed_nodes(analysis: Analysis) -> dict[str, dict[str, NodeOnTarget]]:
    """target name -> node name -> its kernel there; the nodes no kernel runs (views, shape
    arithmetic, nodes not counted) are absent. The only reader of the placement in the overlays."""
    from ..roofline.placement import node_times

    times = node_times(analysis.targets)
    placed: dict[str, dict[str, NodeOnTarget]] = {}
    for report in analysis.targets:
        node_s, latency = times[report.target.name], report.latency_s
        placed[report.target.name] = {
            name: NodeOnTarget(
                kernel.name,
                kernel.op_type,
                kernel.placement.time_s,
                node_s.get(name, 0.0),
                node_s.get(name, 0.0) / latency if latency else 0.0,
                str(kernel.placement.bound),
            )
            for kernel in report.nodes
            for name in kernel.nodes
        }
    return placed


def verdicts(analysis: Analysis, review: Review) -> dict[str, Finding | None]:
    """target name -> its first finding in ``review`` (the change that saves the most), None when it
    has none. The only reader of the findings in the overlays."""
    findings = review.findings
    return {
        report.target.name: next((f for f in findings if f.target == report.target.name), None)
        for report in analysis.targets
    }


def viewer_names(records: list[NodeRecord]) -> dict[str, str]:
    """node name -> the name Netron and Model Explorer find it by: its own, when the model gave it
    one no other node has. The others are left out: core/nodes.node_names made their names up
    (``Op_index`` for a node without one, ``name#index`` for a repeat), and the viewers name them
    otherwise (Model Explorer) or not at all (Netron); a repeated name stands for several nodes.

    >>> from types import SimpleNamespace as N
    >>> records = [N(name=n, op_type="Relu", index=i) for i, n in enumerate(["a", "Relu_1", "a#2", "b"])]
    >>> viewer_names(records)
    {'b': 'b'}
    """
    made_up = {r.name for r in records if r.name == f"{r.op_type}_{r.index}"}
    repeated = set()
    for r in records:
        if r.name.endswith(f"#{r.index}"):
            made_up.add(r.name)
            repeated.add(r.name.split("#", 1)[0])
    return {r.name: r.name for r in records if r.name not in made_up and r.name.split("#", 1)[0] not in repeated}
