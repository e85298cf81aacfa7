"""The report's graph section: the model drawn as a layered DAG, folded by its module tree
(``report/graph``), each box coloured by its kernel's bound on the selected target.

Every view is laid out here, in Python, and embedded as compact JSON (``report/graph/data.py``);
the page's script draws a view as SVG when it is opened (the whole model's first, a module's when
its box is clicked, and back from the breadcrumbs: the same picture again). The colourings (bound per target, share of
the time, top-level module) are style rules over the boxes' ``data-`` attributes, written
here from the same colour tables the SVG uses, so a change of colouring draws nothing again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from markupsafe import Markup

from ...core.units import iec
from ..bounds import BOUND_LABELS, BOUND_TITLES
from ..graph.data import page_data
from ..graph.scene import BOUND_COLOURS, MODULE_COLOURS, SHARE_COLOURS, SHARE_STEPS, UNPLACED
from .page import script_json

if TYPE_CHECKING:
    from ...compare.diff import ModelDiff
    from ...result import Analysis


def graph_context(analysis: Analysis) -> dict | None:
    """The views (as the script's JSON) and the style rules of the colourings; None for a graph
    with no node drawn."""
    live, peak = _peak_makers(analysis)
    data = page_data(analysis, live=live)
    if not any(box[0] in (0, 1) for box in data["views"][0]["boxes"]):
        return None
    return {**_context(data, None), "peak": peak}


def _peak_makers(analysis: Analysis) -> tuple[set[int], str]:
    """The rows of the nodes whose outputs are live at the memory peak (model order), and the
    button's words."""
    memory = analysis.memory
    if memory is None or not memory.model_order.peak_tensors:
        return set(), ""
    order = memory.model_order
    rows = {record.name: i for i, record in enumerate(analysis.nodes)}
    tensors = analysis.cost_graph.tensors
    live = {
        rows[tensors[name].producer]
        for name, _ in order.peak_tensors
        if name in tensors and tensors[name].producer in rows
    }
    return live, f"live at the memory peak ({iec(order.peak_bytes)}, step {order.peak_step})"


def diff_graph_context(diff: ModelDiff) -> dict | None:
    """The diff page's graph: the head's, its added and changed nodes marked, and the base's, its
    removed and changed nodes marked (a selector picks the side)."""
    head_rows = {r.name: i for i, r in enumerate(diff.head.nodes)}
    base_rows = {r.name: i for i, r in enumerate(diff.base.nodes)}
    head_marks = {
        head_rows[c.head.name]: c.kind
        for c in diff.nodes
        if c.head is not None and c.kind in ("added", "changed") and c.head.name in head_rows
    }
    base_marks = {
        base_rows[c.base.name]: c.kind
        for c in diff.nodes
        if c.base is not None and c.kind in ("removed", "changed") and c.base.name in base_rows
    }
    head = page_data(diff.head, marks=head_marks, with_text=True)
    if not any(box[0] in (0, 1) for box in head["views"][0]["boxes"]):
        return None
    same = diff.base is diff.head and base_marks == head_marks  # a model against itself: one drawing
    base = head if same else page_data(diff.base, marks=base_marks, with_text=True)
    return {**_context(head, base), "peak": ""}


def _context(data: dict, base: dict | None) -> dict:
    top = data["views"][0]
    targets = data["targets"]
    text = script_json(data)
    return {
        "targets": targets,
        "groups": data["groups"],  # what the colouring by group tells apart: "module" or "op type"
        "boxes": f"{len(top['boxes']):,}",
        # a module unfolded in place is no view of its own
        "views": sum(1 for view in data["views"] if "unfolds" not in view),
        "hidden": f"{data['hidden']:,}" if "hidden" in data else "",
        "json": Markup(text),
        # a model against itself: the one drawing's text twice, written once (tens of MB on a large model)
        "base_json": None if base is None else Markup(text if base is data else script_json(base)),
        "style": Markup(_colour_rules(len(targets))),
        "bounds": [
            {"key": b, "label": BOUND_LABELS[b], "title": BOUND_TITLES[b], "fill": fill, "stroke": stroke}
            for b, (fill, stroke) in BOUND_COLOURS.items()
            if b != "none"
        ]
        + [
            {
                "key": "unplaced",
                "label": "not placed",
                "title": "no kernel runs it on this target (not counted)",
                "fill": UNPLACED[0],
                "stroke": UNPLACED[1],
            }
        ],
        "shares": [{"label": _share_label(step), "fill": colour} for step, colour in enumerate(SHARE_COLOURS)],
    }


def _share_label(step: int) -> str:
    """The legend of a share step: "< 0.1%", "0.1–0.5%" ... "≥ 15%"."""
    if step == 0:
        return f"< {SHARE_STEPS[0]:.1%}"
    if step == len(SHARE_STEPS):
        return f"≥ {SHARE_STEPS[-1]:.0%}"
    return f"{SHARE_STEPS[step - 1]:.1%}–{SHARE_STEPS[step]:.1%}"


def _colour_rules(targets: int) -> str:
    """Style rules: a box's fill from its bound or share on the selected target, or its module;
    a target's fused-kernel outlines shown on that target only. Only colours and numbers: no
    text from the model goes in."""
    rules = []
    for number in range(targets):
        scope = f'.gv-wrap[data-target="{number}"]'
        for bound, (fill, stroke) in [*BOUND_COLOURS.items(), ("unplaced", UNPLACED)]:
            rules.append(
                f'{scope}[data-colour="bound"] .gb[data-b{number}="{bound}"]>rect{{fill:{fill};stroke:{stroke}}}'
            )
        for step, colour in enumerate(SHARE_COLOURS):
            rules.append(
                f'{scope}[data-colour="share"] .gb[data-h{number}="{step}"]>rect{{fill:{colour};stroke:#8a93a6}}'
            )
        rules.append(f'.gv-wrap:not([data-target="{number}"]) .gk[data-t="{number}"]{{display:none}}')
    for index, colour in enumerate(MODULE_COLOURS):
        rules.append(f'.gv-wrap[data-colour="module"] .gb[data-m="{index}"]>rect{{fill:{colour};stroke:#8a93a6}}')
    return "\n".join(rules)
