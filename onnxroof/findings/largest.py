"""The largest single kernel and the largest module, with their shares of the time: where a
change pays most. A pointer, not a change: no gain.

The module is found by going down the module tree: from the root, into the module that takes at
least half the time, until the level where the largest module takes less than half (or has no
modules below it). A single wrapper (100 %) is gone through the same way. The finding lists only
that module's nodes, the slowest first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..compare.modules import OWN_NODES, ModuleCost, has_scopes, module_of, module_tree
from ..core.units import seconds
from ..roofline.placement import node_times
from ..roofline.verdicts import BOUND_LABELS
from .records import Finding
from .variants import Variants, per_inference_s

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

MIN_SHARE = 0.05  # a module or kernel under this share of the time is not worth naming
DOMINANT = 0.5  # a module with at least this share is gone into


def largest(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    if not report.nodes or not report.latency_s:
        return []
    top = max(report.nodes, key=lambda k: k.placement.time_s)
    share = top.placement.time_s / report.latency_s
    parts = []
    evidence: dict = {
        "kernel": top.name,
        "kernel_op": top.op_type,
        "kernel_time_s": top.placement.time_s,
        "kernel_share": share,
    }
    if share >= MIN_SHARE:
        parts.append(
            f"kernel {top.name} ({top.op_type}) takes {share:.0%} ({seconds(top.placement.time_s)}), "
            f"{BOUND_LABELS[top.placement.bound]}-bound"
        )
    nodes: tuple[str, ...] = tuple(top.nodes)
    module = largest_module(module_tree(analysis), report.target.name) if has_scopes(analysis) else None
    modules: tuple[str, ...] = ()
    if module is not None:
        module_share = module.time_s.get(report.target.name, 0.0) / report.latency_s
        if module_share >= MIN_SHARE:
            shown = module.path.replace(f"/{OWN_NODES}", f" {OWN_NODES}")  # "a/b (its own nodes)"
            parts.append(f"module {shown} takes {module_share:.0%}")
            modules = (module.path,)
            nodes = _module_nodes(analysis, report, module)
            evidence |= {"module": module.path, "module_share": module_share}
    if not parts:
        return []
    return [
        Finding(
            "largest",
            report.target.name,
            "; ".join(parts),
            nodes=nodes,
            modules=modules,
            latency_s=per_inference_s(report),
            evidence=evidence,
        )
    ]


def largest_module(root: ModuleCost, target: str) -> ModuleCost | None:
    """Down the tree through the modules that take at least half of their level's time, to the
    largest module of the first level where none does (or a module with none below it)."""
    total = root.time_s.get(target, 0.0)
    module = root
    while module.children:
        heaviest = max(module.children, key=lambda m: m.time_s.get(target, 0.0))
        if heaviest.time_s.get(target, 0.0) < DOMINANT * total or not heaviest.children:
            return heaviest
        module = heaviest
    return None


def _module_nodes(analysis: Analysis, report: TargetReport, module: ModuleCost) -> tuple[str, ...]:
    """The module's nodes, slowest first (an own-nodes row's: those at its parent's path itself)."""
    prefix = module.parts
    own = module.name == OWN_NODES
    nodes = analysis.run_view.nodes  # the nodes a run executes, as the module tree reads them
    times = node_times([report]).get(report.target.name, {})
    inside = [r.name for r in nodes if (module_of(r) == prefix[:-1] if own else module_of(r)[: len(prefix)] == prefix)]
    return tuple(sorted(inside, key=lambda name: -times.get(name, 0.0)))
