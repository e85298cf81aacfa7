"""The report's module tree section: the modules the node names carry, each a collapsible row
with its sums (children add up to their parent), repeated blocks shown once with their count
(``layer.0-11 x12``). Absent when the names carry no scopes (the op-type table stands in).

The rows are a flat list in order, each saying how many of the open rows close after it, so
the template loops once and nests ``<details>`` without a recursive macro (a tree as deep as
the node names make it; :data:`~onnxroof.compare.modules.MAX_MODULE_DEPTH` bounds it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...compare.modules import ModuleCost, folded_note, has_scopes, module_tree, shown_rows
from ...core.units import iec, seconds, si

if TYPE_CHECKING:
    from ...result import Analysis

OPEN_LEVELS = 2  # the root and its children start open; deeper modules start folded


def modules_context(analysis: Analysis) -> dict | None:
    if not has_scopes(analysis):
        return None
    targets = [report.target.name for report in analysis.targets]
    root = module_tree(analysis)
    total = root.time_s
    rows = shown_rows(root)

    def entry(module: ModuleCost, count: int, label: str, level: int, closes: int) -> dict:
        return {
            "label": label,
            "path": module.path or "the whole model",
            "count": count,
            "open": level < OPEN_LEVELS,
            "level": level,
            "branch": bool(module.children),
            "closes": closes,
            "nodes": f"{module.nodes:,}",
            "macs": si(module.macs),
            "flops": si(module.flops),
            "params": si(module.params),
            "weights": iec(module.weight_bytes),
            "activations": iec(module.activation_bytes),
            "peak": iec(module.peak_bytes),
            "times": [
                {
                    "text": seconds(module.time_s.get(t, 0.0)),
                    "share": f"{module.time_s.get(t, 0.0) * count / total[t]:.1%}" if total.get(t) else "–",
                }
                for t in targets
            ],
        }

    # a row closes itself and the rows it ends: its level, less the next row's, plus one
    levels = [level for *_, level in rows] + [0]
    entries = [
        entry(module, count, "(model)" if level == 0 else label, level, level - levels[i + 1] + 1)
        for i, (module, count, label, level) in enumerate(rows)
    ]
    return {"targets": targets, "rows": entries, "folded": folded_note(root)}
