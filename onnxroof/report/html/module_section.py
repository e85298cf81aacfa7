"""The report's module tree section: the modules the node names carry, each a collapsible row
with its sums (children add up to their parent), repeated blocks shown once with their count
(``layer.0-11 x12``). Absent when the names carry no scopes (the op-type table stands in)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...compare.modules import ModuleCost, has_scopes, module_tree, repeated_runs
from ...core.units import iec, seconds, si

if TYPE_CHECKING:
    from ...result import Analysis

OPEN_LEVELS = 2  # the root and its children start open; deeper modules start folded


def modules_context(analysis: "Analysis") -> dict | None:
    if not has_scopes(analysis):
        return None
    targets = [report.target.name for report in analysis.targets]
    root = module_tree(analysis)

    def entry(module: ModuleCost, count: int, label: str, level: int) -> dict:
        total = root.time_s
        return {
            "label": label, "path": module.path or "the whole model", "count": count, "open": level < OPEN_LEVELS,
            "nodes": f"{module.nodes:,}", "macs": si(module.macs), "flops": si(module.flops),
            "params": si(module.params), "weights": iec(module.weight_bytes),
            "activations": iec(module.activation_bytes), "peak": iec(module.peak_bytes),
            "times": [{"text": seconds(module.time_s.get(t, 0.0)),
                       "share": f"{module.time_s.get(t, 0.0) * count / total[t]:.1%}" if total.get(t) else "–"}
                      for t in targets],
            "children": [entry(child, n, text, level + 1) for child, n, text in repeated_runs(module.children)],
        }

    return {"targets": targets, "root": entry(root, 1, "(model)", 0)}
