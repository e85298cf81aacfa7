"""The graph view as the report page's compact JSON: each view's scene (``scene.py``) written
as arrays, the page's script only painting them.

A node's box carries its node-table row and its lines, not its tooltip: its figures are in the
page's node table data already (``#onnxroof-nodes``), and the page's script writes them. So a
node costs the page some eighty bytes here, and the views together stay linear in the graph.
Boxes and edges are arrays, not objects with named fields: a page holds up to
:data:`PAGE_BOXES` of them.

``start``: the view the page opens on (:func:`fold.start_view`). ``views[k]``: ``{"title",
"parent" (a view number, -1 for the top), "w", "h", "boxes", "edges", "fused"}``, with

- a box: ``[kind, x, y, width, height, ...]``; kind 0, a node: ``..., row, module colour, then
  per target its bound (a number into ``bounds``) and share step, [lines]``; kind 1, a folded
  module: ``..., view to open (-1: none drawn), module colour, per target bound and step, [lines],
  tooltip``; kinds 2 and 3, a tensor entering or leaving the view: ``..., [lines], tooltip``;
- an edge: ``[source box, target box, label, tooltip, label x, label y, path]``, the label (the
  shape written under the source box) and the tooltip numbers into ``strings`` (label -1: none),
  the path an SVG path (its route and arrow head);
- a fused kernel's outline: ``[target, SVG path]`` (a kernel in several pieces: one each);
- ``repeats``: ``[box, blocks]`` for the boxes drawn as a stack: a run's, and the node boxes of
  a run unfolded in place (each the same node of every block);
- ``variants``: ``[module box, view]``, the view that is this one with that module unfolded in
  place; such a view has ``unfolds`` (``[view, box]``) and ``inside`` (its boxes inside the
  unfolded module).

>>> from onnxroof import analyze
>>> from onnxroof.core.examples import build_example
>>> data = page_data(analyze(build_example("shallownet"), targets=["myriad-x"]))
>>> [box[0] for box in data["views"][0]["boxes"]]  # input, 5 nodes, output
[2, 0, 0, 0, 0, 0, 3]
>>> data["bounds"][data["views"][0]["boxes"][1][7]], data["views"][0]["boxes"][1][-1]  # the Conv on myriad-x
('compute', ['Conv', 'conv2d_0'])
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...compare.modules import has_scopes
from ...core.text import printable
from .costs import TargetCosts, box_text, target_costs
from .fold import BOX_BUDGET, folded_views, start_view
from .layout import LayoutCache
from .scene import (
    BOUND_COLOURS,
    LABEL_CHARS,
    MODULE_COLOURS,
    Scene,
    SceneBox,
    SceneEdge,
    arrow_head,
    build_scene,
    clip_middle,
    size_text,
)

if TYPE_CHECKING:
    from ...result import Analysis
    from .fold import GraphView

BOUNDS = [*BOUND_COLOURS, "unplaced"]
PAGE_BOXES = 20_000  # the page holds its views' levels while they hold at most this many boxes in all
NOT_DRAWN = (
    f"its view is not drawn: the page draws the views' levels while they hold at most {PAGE_BOXES:,} "
    "boxes (onnxroof graph --module PATH draws a named module's view)"
)
KINDS = {"node": 0, "module": 1, "input": 2, "output": 3}


def page_data(
    analysis: Analysis,
    budget: int = BOX_BUDGET,
    marks: dict[int, str] | None = None,
    with_text: bool = False,
    live: set[int] | None = None,
) -> dict:
    """Every view of the folded graph, laid out, as the page's script reads it. ``marks`` (node
    row -> "added", "removed" or "changed": a diff) mark the node's box, and a module's when a
    node inside it is marked, in each view's ``marks`` (``[box, mark]``). ``with_text`` (a page
    with no node table: the diff's) adds ``nodes``: row -> [op type, name, its tooltip]. ``live`` (the
    rows of the nodes that made the tensors live at the memory peak) gives each view its
    ``live`` boxes: those holding one of them."""
    every = folded_views(analysis, budget)
    views = _levels_within(every, PAGE_BOXES)
    writer = _PageWriter(analysis, target_costs(analysis), views)
    scoped = has_scopes(analysis)
    cache = LayoutCache()
    result = []
    texts: dict[int, list[str]] = {}
    for view in views:
        scene = build_scene(view, analysis, writer.costs, scoped, cache)
        entry = writer.view(scene)
        _marked(entry, view, marks, live)
        if with_text:
            texts.update(writer.node_texts(view))
        result.append(entry)
    data = {
        "views": result,
        "start": writer.number[start_view(views, budget).key],
        "strings": list(writer.strings),
        "bounds": BOUNDS,
        "targets": [c.name for c in writer.costs],
        "groups": "module" if scoped else "op type",
    }
    if with_text:
        data["nodes"] = texts
    if len(views) < len(every):
        data["hidden"] = len(every) - len(views)  # views left out: the page says so
    return data


class _PageWriter:
    """Writes scenes as the page's arrays, numbering views, strings and colour groups across the page."""

    def __init__(self, analysis: Analysis, costs: Sequence[TargetCosts], views: list[GraphView]):
        self.analysis = analysis
        self.costs = costs
        self.views = views
        self.number = {view.key: position for position, view in enumerate(views)}
        self.strings: dict[str, int] = {}
        self.groups: dict[str, int] = {}

    def text(self, value: str) -> int:
        return self.strings.setdefault(printable(value), len(self.strings))

    def view(self, scene: Scene) -> dict:
        view = scene.view
        entry = {
            "title": printable(view.title),
            "parent": self.number[view.parent] if view.parent is not None else -1,
            "w": math.ceil(scene.width),
            "h": math.ceil(scene.height),
            "boxes": [self.box(box) for box in scene.boxes],
            "edges": [self.edge(edge) for edge in scene.edges],
            "fused": [[outline.target, outline.path] for outline in scene.outlines],
        }
        variants = [[k, self.number[item.variant]] for k, item in enumerate(view.items) if item.variant in self.number]
        if variants:
            entry["variants"] = variants  # [module box, the view with it unfolded in place]
        repeats = [[k, box.item.repeats] for k, box in enumerate(scene.boxes) if box.stacked]
        if repeats:
            entry["repeats"] = repeats  # [box, blocks]: drawn as a stack
        if view.unfolds is not None:  # [the view, its box] this one unfolds, and the boxes inside that module
            parent_view = self.views[self.number[view.unfolds[0]]]
            position = {item.key: k for k, item in enumerate(view.items)}
            entry["unfolds"] = [
                self.number[view.unfolds[0]],
                next(k for k, item in enumerate(parent_view.items) if item.key == view.unfolds[1]),
            ]
            entry["inside"] = [position[key] for key in view.inside]
        return entry

    def box(self, box: SceneBox) -> list:
        item = box.item
        entry: list = [KINDS[item.kind], round(box.x), round(box.y), math.ceil(box.width), round(box.height)]
        if item.kind in ("node", "module"):
            opens = self.number.get(item.view, -1) if item.view else -1
            entry += [
                item.nodes[0] if item.kind == "node" else opens,
                self.groups.setdefault(box.group, len(self.groups)) % len(MODULE_COLOURS),
            ]
            for bound, step in zip(box.bounds, box.shares):
                entry += [BOUNDS.index(bound), step]
        entry.append(box.lines)
        if item.kind != "node":
            tooltip = box_text(item, self.analysis, self.costs)
            if item.kind == "module" and item.view and item.view not in self.number:
                tooltip += "\n" + NOT_DRAWN
            entry.append(tooltip)
        return entry

    def edge(self, drawn: SceneEdge) -> list:
        points = [(round(x), round(y)) for x, y in drawn.points]
        path = "M" + " L".join(f"{_js(x)} {_js(y)}" for x, y in points)
        path += " M{} {} L{} {} L{} {}".format(*(_js(v) for point in arrow_head(points) for v in point))
        label = self.text(drawn.label) if drawn.label is not None else -1
        tip = self.text(f"{clip_middle(drawn.edge.shape, LABEL_CHARS)}, {size_text(drawn.edge.bytes)}")
        return [drawn.source, drawn.target, label, tip, *(round(v) for v in drawn.label_at), path]

    def node_texts(self, view: GraphView) -> dict[int, list[str]]:
        """Each node box's [op type, name, tooltip]: the diff page has no node table to take them from."""
        texts = {}
        for item in view.items:
            if item.kind == "node":
                record = self.analysis.nodes[item.nodes[0]]
                texts[item.nodes[0]] = [
                    printable(record.op_type),
                    printable(record.name),
                    box_text(item, self.analysis, self.costs),
                ]
        return texts


def _js(value: float) -> str:
    """A number as JavaScript writes it (``String(x)``): integral values without ".0".

    >>> _js(52), _js(49.0), _js(48.5)
    ('52', '49', '48.5')
    """
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _marked(entry: dict, view: GraphView, marks: dict[int, str] | None, live: set[int] | None) -> None:
    """A diff's marks and the memory peak's makers on the view's boxes."""
    if marks:
        entry["marks"] = [
            [k, _mark(item.nodes, marks)]
            for k, item in enumerate(view.items)
            if item.kind in ("node", "module") and _mark(item.nodes, marks)
        ]
    if live:
        entry["live"] = [k for k, item in enumerate(view.items) if live.intersection(item.nodes)]


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


def _mark(nodes: list[int], marks: dict[int, str]) -> str:
    """A box's mark: its node's; a module's "changed" when any node inside is marked.

    >>> _mark([3], {3: "added"}), _mark([1, 2, 3], {3: "added"}), _mark([1], {3: "added"})
    ('added', 'changed', '')
    """
    found = {marks[n] for n in nodes if n in marks}
    if not found:
        return ""
    return found.pop() if len(nodes) == 1 else "changed"
