"""The largest single kernel and the largest module (below the wrappers every node sits in),
with their shares of the time: where a change pays most. A pointer, not a change: no gain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..compare.modules import ModuleCost, has_scopes, module_tree
from ..core.units import seconds
from ..roofline.verdicts import BOUND_LABELS, Finding
from .variants import Variants, per_inference_s

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

MIN_SHARE = 0.05  # a module or kernel under this share of the time is not worth naming


def largest(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    if not report.nodes or not report.latency_s:
        return []
    top = max(report.nodes, key=lambda k: k.placement.time_s)
    share = top.placement.time_s / report.latency_s
    parts = []
    evidence: dict = {"kernel": top.name, "kernel_op": top.op_type, "kernel_time_s": top.placement.time_s,
                      "kernel_share": share}
    if share >= MIN_SHARE:
        parts.append(f"kernel {top.name} ({top.op_type}) takes {share:.0%} ({seconds(top.placement.time_s)}), "
                     f"{BOUND_LABELS[top.placement.bound]}-bound")
    module = _largest_module(analysis, report) if has_scopes(analysis) else None
    modules: tuple[str, ...] = ()
    if module is not None:
        module_share = module.time_s.get(report.target.name, 0.0) / report.latency_s
        if module_share >= MIN_SHARE:
            parts.append(f"module {module.path} takes {module_share:.0%}")
            modules = (module.path,)
            evidence |= {"module": module.path, "module_share": module_share}
    if not parts:
        return []
    return [Finding("largest", report.target.name, "; ".join(parts), nodes=tuple(top.nodes), modules=modules,
                    latency_s=per_inference_s(report), evidence=evidence)]


def _largest_module(analysis: Analysis, report: TargetReport) -> ModuleCost | None:
    """The child with the most time of the first module that has several (a model's single
    wrapper scopes skipped)."""
    module = module_tree(analysis)
    while len(module.children) == 1:
        module = module.children[0]
    if not module.children:
        return None
    return max(module.children, key=lambda m: m.time_s.get(report.target.name, 0.0))
