"""The graph view as the report page's compact JSON: every view laid out, numbers only.

A node's box carries its node-table row, not its text: its op type, name and figures are in the
page's node table data already (``#onnxroof-nodes``), and the page's script writes them. So a
node costs the page some sixty bytes here, and the views together stay linear in the graph.

``start``: the view the page opens on (:func:`fold.start_view`). ``views[k]``: ``{"title", "parent" (a view number, -1 for the top), "w", "h", "boxes", "edges",
"fused"}``, with

- a box: ``[kind, x, y, width, height, ...]``; kind 0, a node: ``..., row, module colour, then
  per target its bound (a number into ``bounds``) and share step``; kind 1, a folded module:
  ``..., view to open, module colour, per target bound and step, [lines], tooltip``; kinds 2
  and 3, a tensor entering or leaving the view: ``..., [lines], tooltip``;
- an edge: ``[source box, target box, shape, bytes (-1: unknown), label x, label y, x0, y0, x1,
  y1, ...]`` (its route), the shape a number into ``strings``, or ``-1 - number`` when another
  edge from the same box carries the label under it;
- a fused kernel's outline: ``[target, x, y, width, height]``;
- ``repeats``: ``[node box, blocks]`` for the node boxes of a run unfolded in place (each the
  same node of every block);
- ``variants``: ``[module box, view]``, the view that is this one with that module unfolded in
  place; such a view has ``unfolds`` (``[view, box]``) and ``inside`` (its boxes inside the
  unfolded module).

>>> from onnxroof import analyze
>>> from onnxroof.core.examples import build_example
>>> data = page_data(analyze(build_example("shallownet"), targets=["myriad-x"]))
>>> [box[0] for box in data["views"][0]["boxes"]]  # input, 5 nodes, output
[2, 0, 0, 0, 0, 0, 3]
>>> data["bounds"][data["views"][0]["boxes"][1][7]]  # the Conv on myriad-x
'compute'
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING

from ...compare.modules import has_scopes, module_of
from ...core.text import printable
from .costs import box_cost, box_text, target_costs
from .fold import BOX_BUDGET, folded_views, start_view
from .layout import LayoutCache
from .svg import BOUND_COLOURS, LABEL_CHARS, MODULE_COLOURS, clip_middle, fused_outlines, lay_out, share_step

if TYPE_CHECKING:
    from ...cost.records import NodeRecord
    from ...result import Analysis
    from .fold import GraphView

BOUNDS = [*BOUND_COLOURS, "unplaced"]
PAGE_BOXES = 20_000  # the page holds its views' levels while they hold at most this many boxes in all
NOT_DRAWN = (f"its view is not drawn: the page draws the views' levels while they hold at most {PAGE_BOXES:,} "
             "boxes (onnxroof graph --module draws any module's view)")
KINDS = {"node": 0, "module": 1, "input": 2, "output": 3}


def page_data(analysis: "Analysis", budget: int = BOX_BUDGET, marks: dict[int, str] | None = None,
              with_text: bool = False, live: set[int] | None = None) -> dict:
    """Every view of the folded graph, laid out, as the page's script reads it. ``marks`` (node
    row -> "added", "removed" or "changed": a diff) mark the node's box, and a module's when a
    node inside it is marked, in each view's ``marks`` (``[box, mark]``). ``with_text`` (a page
    with no node table: the diff's) adds ``nodes``: row -> [op type, name, its tooltip]. ``live`` (the
    rows of the nodes that made the tensors live at the memory peak) gives each view its
    ``live`` boxes: those holding one of them."""
    costs = target_costs(analysis)
    every = folded_views(analysis, budget)
    views = _levels_within(every, PAGE_BOXES)
    scoped = has_scopes(analysis)
    number = {view.key: position for position, view in enumerate(views)}
    strings: dict[str, int] = {}
    modules: dict[str, int] = {}

    def text(value: str) -> int:
        return strings.setdefault(printable(value), len(strings))

    def colour(top: str) -> int:
        return modules.setdefault(top, len(modules)) % len(MODULE_COLOURS)

    result = []
    texts: dict[int, list[str]] = {}
    cache = LayoutCache()
    for view in views:
        layout, lines = lay_out(view, costs, cache)
        position = {item.key: k for k, item in enumerate(view.items)}
        boxes = []
        for item in view.items:
            placed = layout.boxes[item.key]
            box: list = [KINDS[item.kind], round(placed.x), round(placed.y), math.ceil(placed.width), round(placed.height)]
            if item.kind in ("node", "module"):
                box += [item.nodes[0] if item.kind == "node" else number.get(item.view, -1) if item.view else -1,
                        colour(_group(analysis.nodes[item.nodes[0]], scoped))]
                for target in costs:
                    cost = box_cost(item, target)
                    box += [BOUNDS.index(cost.bound or "unplaced"), share_step(cost.share)]
            if item.kind != "node":
                tooltip = box_text(item, analysis, costs)
                if item.kind == "module" and item.view and item.view not in number:
                    tooltip += "\n" + NOT_DRAWN
                box += [lines[item.key], tooltip]
            boxes.append(box)
        edges = []
        labelled: set[str] = set()
        routes = {(route.source, route.target): route for route in layout.routes}
        for edge in view.edges:
            route = routes[(edge.source, edge.target)]
            label = text(clip_middle(edge.shape, LABEL_CHARS))
            if edge.source in labelled:  # one label under each box: its first tensor's shape (the others' on hover)
                label = -label - 1  # the shape for the tooltip, no label drawn
            labelled.add(edge.source)
            edges.append([position[edge.source], position[edge.target], label,
                          -1 if edge.bytes is None else edge.bytes, *(round(v) for v in layout.label_at(route)),
                          *(round(v) for point in route.points for v in point)])
        fused = [[t, round(x), round(y), round(w), round(h)] for t, x, y, w, h in fused_outlines(view, layout, costs)]
        entry = {"title": printable(view.title), "parent": number[view.parent] if view.parent is not None else -1,
                 "w": math.ceil(layout.width), "h": math.ceil(layout.height), "boxes": boxes, "edges": edges,
                 "fused": fused}
        variants = [[k, number[item.variant]] for k, item in enumerate(view.items) if item.variant in number]
        if variants:
            entry["variants"] = variants  # [module box, the view with it unfolded in place]
        repeats = [[k, item.repeats] for k, item in enumerate(view.items) if item.kind == "node" and item.repeats > 1]
        if repeats:
            entry["repeats"] = repeats  # [node box, blocks]: the node of every block of a run unfolded in place
        if view.unfolds is not None:  # [the view, its box] this one unfolds, and the boxes inside that module
            parent_view = views[number[view.unfolds[0]]]
            entry["unfolds"] = [number[view.unfolds[0]],
                                next(k for k, item in enumerate(parent_view.items) if item.key == view.unfolds[1])]
            entry["inside"] = [position[key] for key in view.inside]
        if marks:
            entry["marks"] = [[k, _mark(item.nodes, marks)] for k, item in enumerate(view.items)
                              if item.kind in ("node", "module") and _mark(item.nodes, marks)]
        if live:
            entry["live"] = [k for k, item in enumerate(view.items) if live.intersection(item.nodes)]
        if with_text:
            for item in view.items:
                if item.kind == "node":
                    record = analysis.nodes[item.nodes[0]]
                    texts[item.nodes[0]] = [printable(record.op_type), printable(record.name), box_text(item, analysis, costs)]
        result.append(entry)
    data = {"views": result, "start": number[start_view(views, budget).key], "strings": list(strings),
            "bounds": BOUNDS, "targets": [c.name for c in costs],
            "groups": "module" if scoped else "op type"}
    if with_text:
        data["nodes"] = texts
    if len(views) < len(every):
        data["hidden"] = len(every) - len(views)  # views left out: the page says so
    return data


def _levels_within(views: list[GraphView], most: int) -> list[GraphView]:
    """``views`` (parents first) level by level — the whole model's, the views its modules open,
    theirs ... (a module unfolded in place: its view's level) — while they hold at most ``most``
    boxes in all; the whole model's level always. A graph of tens of thousands of nodes drawn
    down to its last box would make a page of tens of megabytes that no one reads box by box."""
    level: dict[str, int] = {}
    boxes: dict[int, int] = defaultdict(int)
    for view in views:
        if view.unfolds is not None:
            level[view.key] = level[view.unfolds[0]]
        else:
            level[view.key] = 0 if view.parent is None else level[view.parent] + 1
        boxes[level[view.key]] += len(view.items)
    deepest, total = 0, boxes[0]
    while deepest + 1 in boxes and total + boxes[deepest + 1] <= most:
        deepest += 1
        total += boxes[deepest]
    if deepest + 1 not in boxes:
        return views
    return [view for view in views if level[view.key] <= deepest]


def _group(record: "NodeRecord", scoped: bool) -> str:
    """What the colouring by group tells apart: the top-level module (``encoder``) when the names
    carry modules, else the op type (a module box: its first node's)."""
    if not scoped:
        return record.op_type
    path = module_of(record)
    return path[0] if path else ""


def _mark(nodes: list[int], marks: dict[int, str]) -> str:
    """A box's mark: its node's; a module's "changed" when any node inside is marked.

    >>> _mark([3], {3: "added"}), _mark([1, 2, 3], {3: "added"}), _mark([1], {3: "added"})
    ('added', 'changed', '')
    """
    found = {marks[n] for n in nodes if n in marks}
    if not found:
        return ""
    return found.pop() if len(nodes) == 1 else "changed"
