"""The graph view's scene: one view laid out and dressed, once, for every writer.

A scene holds what a view looks like — each box's place, size, text lines, bound and share step
per target and colour group; each edge's route, the shape label under its source and its size;
the fused kernels' outlines — worked out here from the fold (``fold.GraphView``) and the layout
(``layout.py``). Two writers serialise it and decide nothing: ``svg.py`` (``onnxroof graph``) as SVG
markup, ``data.py`` as the report page's JSON, which the page's script only paints, pans, zooms
and selects. The colours, the text metrics and the clipping of long names live here too, so a box
is as wide as its text in both.

>>> from onnxroof import analyze
>>> from onnxroof.core.examples import build_example
>>> from onnxroof.report.graph.costs import target_costs
>>> from onnxroof.report.graph.fold import folded_views
>>> analysis = analyze(build_example("shallownet"), targets=["myriad-x"])
>>> scene = build_scene(folded_views(analysis)[0], analysis, target_costs(analysis))
>>> [(box.item.kind, box.lines[0], box.bounds) for box in scene.boxes[1:3]]
[('node', 'Conv', ['compute']), ('node', 'Relu', ['compute'])]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...compare.modules import module_of
from ...core.text import printable
from ...core.units import iec, seconds
from ..formatting import shape_text
from .costs import TargetCosts, box_cost
from .layout import Layout, LayoutCache, PlacedBox, layered_layout

if TYPE_CHECKING:
    from ...cost.records import NodeRecord
    from ...result import Analysis
    from .fold import GraphEdge, GraphItem, GraphView

# the report's bound colours (partials/_styles.css.j2, .bound-*): (fill, outline and text)
BOUND_COLOURS = {
    "compute": ("#e3f4ea", "#1f7a4d"),
    "parallelism": ("#e4eefb", "#1f5aa6"),
    "dram": ("#fdeee3", "#a4490b"),
    "onchip": ("#f0e9fb", "#6b3fb0"),
    "overhead": ("#eef0f4", "#4a5366"),
    "none": ("#ffffff", "#9aa3b2"),
}
UNPLACED = ("#f6f7f9", "#b8bfcc")  # no target, or a node no kernel runs
STUB = ("#ffffff", "#9aa3b2")
SHARE_STEPS = (0.001, 0.005, 0.02, 0.05, 0.15)  # share of the latency: step 0 below the first ... 5 above the last
SHARE_COLOURS = ("#ffffff", "#fff3e0", "#ffd8a8", "#ffa94d", "#f76707", "#c92a2a")
MODULE_COLOURS = ("#dbe4ff", "#d3f9d8", "#ffe3e3", "#fff3bf", "#e5dbff", "#c5f6fa", "#ffdeeb", "#e9ecef")
CHAR_WIDTH = 6.7  # 11px monospace: 0.6 em a character, rounded up
LINE_HEIGHT = 13.0
PAD_X, PAD_Y = 7.0, 6.0
NAME_CHARS = 30  # a name longer than this is clipped in the middle
LABEL_CHARS = 14  # an edge's shape label: some 75 pixels, less than two boxes' spacing
ARROW = 6.0  # an arrow head's strokes, in pixels


@dataclass
class SceneBox:
    """One box as drawn: its place (top-left corner) and size, text and colourings."""

    item: GraphItem
    x: float
    y: float
    width: float
    height: float
    lines: list[str]  # printable, clipped: the first is the head line
    bounds: list[str]  # per target: its bound ("unplaced": no kernel there); empty for a stub
    shares: list[int]  # per target: its step of the share of the latency (:func:`share_step`)
    group: str  # what the colouring by group tells apart: its top-level module, else its op type

    @property
    def stacked(self) -> bool:
        """Drawn as a stack: it stands for the alike blocks of a run."""
        return self.item.repeats > 1


@dataclass
class SceneEdge:
    """One edge as drawn."""

    edge: GraphEdge
    source: int  # box positions in the scene
    target: int
    points: list[tuple[float, float]]  # its route, top to bottom
    label: str | None  # the shape written under its source box: the first edge from a box only
    label_at: tuple[float, float]


@dataclass
class Outline:
    """A fused kernel's dashed outline (or one piece of it) on one target."""

    target: int  # the target's number
    kernel: int  # the kernel's first node (its row in the node table)
    boxes: list[str]  # the keys of the boxes it goes round
    path: str  # an SVG path, closed


@dataclass
class Scene:
    view: GraphView
    width: float
    height: float
    boxes: list[SceneBox]  # in the view's order
    order: list[int]  # the boxes' positions in drawing order (layer by layer)
    edges: list[SceneEdge]
    outlines: list[Outline]  # the fused kernels'


def clip_middle(text: str, width: int) -> str:
    """``text`` at most ``width`` characters, its middle replaced by "…" when longer.

    >>> clip_middle("encoder/layer.0/attention/self", 16)
    'encoder…ion/self'
    """
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def node_subtitle(op_type: str, name: str, shape: str | None = None) -> str:
    """A node box's second line: its name's last part, unless that only repeats the op type
    (``/model.0/conv/Conv``, ``Reshape_3``): then the last two modules its name carries (the
    view's title and the breadcrumbs say the rest, and a box stays narrow), else its output's
    shape (``shape``), else the name.

    >>> node_subtitle("Conv", "/model.0/conv/Conv"), node_subtitle("Conv", "Conv", "1×16×320×320")
    ('model.0/conv', '1×16×320×320')
    >>> node_subtitle("MatMul", "/encoder/layer.0/attention/self/query/MatMul_1")
    'self/query'
    >>> node_subtitle("MatMul", "node_linear")
    'node_linear'
    """
    head, _, tail = name.rstrip("/").rpartition("/")
    tail = tail or name
    if tail != op_type and not (tail.startswith(op_type + "_") and tail[len(op_type) + 1 :].isdigit()):
        return tail
    return "/".join([part for part in head.split("/") if part][-2:]) or shape or name


def box_lines(item: GraphItem, costs: Sequence[TargetCosts], shape: str | None = None) -> list[str]:
    """The text lines of a box: op type and name (:func:`node_subtitle`; ``shape``: a node's
    output shape); a module's name, repeat count, nodes and time (model text printable)."""
    label, name = printable(item.label), printable(item.name)
    if item.kind == "node":  # inside a run unfolded in place: the node of every block, "MatMul ×12"
        return [
            clip_middle(label, NAME_CHARS - 5) + (f" ×{item.repeats}" if item.repeats > 1 else ""),
            clip_middle(node_subtitle(label, name, shape), NAME_CHARS),
        ]
    if item.kind == "module":  # a run: one block's figures, as the module table shows them
        first = clip_middle(label, NAME_CHARS - 5) + (f" ×{item.repeats}" if item.repeats > 1 else "")
        nodes = len(item.nodes) // item.repeats
        third = f"{nodes:,} node{'s' if nodes != 1 else ''}"
        if costs:
            third += f" · {seconds(box_cost(item, costs[0]).time_s / item.repeats)}"
        return [first, clip_middle(name, NAME_CHARS), ("each block: " if item.repeats > 1 else "") + third]
    return [clip_middle(label, NAME_CHARS), clip_middle(name, NAME_CHARS)]


def box_size(lines: Sequence[str]) -> tuple[float, float]:
    """A box just wide enough for its longest line, at least 56 pixels.

    >>> box_size(["Conv", "conv2d_0"])  # 8 characters x 6.7 + 2 x 7
    (67.6, 38.0)
    """
    width = max(56.0, round(max(len(line) for line in lines) * CHAR_WIDTH + 2 * PAD_X, 1))
    return width, len(lines) * LINE_HEIGHT + 2 * PAD_Y


def share_step(share: float) -> int:
    """Which of the six share colours a share of the latency takes.

    >>> share_step(0.0), share_step(0.03), share_step(0.5)
    (0, 3, 5)
    """
    return sum(1 for step in SHARE_STEPS if share >= step)


def size_text(size: int | None) -> str:
    """A tensor's bytes as an edge's tooltip says them.

    >>> size_text(2048), size_text(None)
    ('2,048 bytes (2 KiB)', 'bytes unknown')
    """
    return f"{size:,} bytes ({iec(size)})" if size is not None else "bytes unknown"


def arrow_head(points: Sequence[tuple[float, float]], length: float = ARROW) -> list[tuple[float, float]]:
    """Two short strokes back from the route's end, along its last segment: (one end, the tip,
    the other end).

    >>> arrow_head([(0.0, 0.0), (0.0, 10.0)])  # pointing down at (0, 10)
    [(-3.0, 4.0), (0.0, 10.0), (3.0, 4.0)]
    """
    (x0, y0), (x1, y1) = points[-2], points[-1]
    span = math.hypot(x1 - x0, y1 - y0) or 1.0
    ux, uy = (x1 - x0) / span, (y1 - y0) / span
    bx, by = x1 - ux * length, y1 - uy * length
    px, py = -uy * length / 2, ux * length / 2
    return [(bx + px, by + py), (x1, y1), (bx - px, by - py)]


def lay_out(
    view: GraphView,
    costs: Sequence[TargetCosts],
    cache: LayoutCache | None = None,
    records: Sequence[NodeRecord] | None = None,
) -> tuple[Layout, dict[str, list[str]]]:
    """The view's layout and each box's text lines (``cache``: the layouts of views alike in shape;
    ``records``: the node table, whose output shapes name a node its name does not)."""
    lines = {item.key: box_lines(item, costs, _shape(item, records)) for item in view.items}
    sizes = {key: box_size(text) for key, text in lines.items()}
    edges = [(edge.source, edge.target) for edge in view.edges]
    return (cache.layout(sizes, edges) if cache is not None else layered_layout(sizes, edges)), lines


def _shape(item: GraphItem, records: Sequence[NodeRecord] | None) -> str | None:
    """A node box's first output shape, written once per shape (``shape_text``)."""
    if records is None or item.kind != "node":
        return None
    shapes = records[item.nodes[0]].output_shapes
    return shape_text(shapes[0]) if shapes else None


def build_scene(
    view: GraphView,
    analysis: Analysis,
    costs: Sequence[TargetCosts],
    scoped: bool = True,
    cache: LayoutCache | None = None,
) -> Scene:
    """``view`` laid out and dressed. ``scoped`` (the names carry modules: ``compare/modules.
    has_scopes``) makes the colour groups top-level modules, else op types."""
    layout, lines = lay_out(view, costs, cache, analysis.nodes)
    position = {item.key: k for k, item in enumerate(view.items)}
    boxes = [_scene_box(item, layout, lines[item.key], analysis, costs, scoped) for item in view.items]
    edges = []
    labelled: set[str] = set()
    routes = {(route.source, route.target): route for route in layout.routes}
    for edge in view.edges:
        route = routes[(edge.source, edge.target)]
        label = None
        if edge.source not in labelled:  # one label under each box: its first tensor's shape (the others' on hover)
            labelled.add(edge.source)
            label = clip_middle(edge.shape, LABEL_CHARS)
        edges.append(
            SceneEdge(edge, position[edge.source], position[edge.target], route.points, label, layout.label_at(route))
        )
    return Scene(
        view,
        layout.width,
        layout.height,
        boxes,
        [position[key] for key in layout.boxes],
        edges,
        fused_outlines(view, layout, costs),
    )


def _scene_box(
    item: GraphItem, layout: Layout, lines: list[str], analysis: Analysis, costs: Sequence[TargetCosts], scoped: bool
) -> SceneBox:
    placed = layout.boxes[item.key]
    bounds, shares, group = [], [], ""
    if item.kind in ("node", "module"):
        for target in costs:
            cost = box_cost(item, target)
            bounds.append(cost.bound or "unplaced")
            shares.append(share_step(cost.share))
        record = analysis.nodes[item.nodes[0]]  # a module box: its first node's
        if scoped:
            path = module_of(record)
            group = path[0] if path else ""
        else:
            group = record.op_type
    return SceneBox(item, placed.x, placed.y, placed.width, placed.height, lines, bounds, shares, group)


def fused_outlines(view: GraphView, layout: Layout, costs: Sequence[TargetCosts]) -> list[Outline]:
    """The dashed outlines of the kernels that fuse several boxes of the view, on each target:
    a kernel of ``summary --format json`` (``TargetReport.nodes``) is outlined where two or more
    boxes hold its nodes and nothing else (a folded module that holds several kernels outlines
    none: its own view does). A box of a run unfolded in place stands for the same node of every
    block: its first block's node says its kernel. The view's boxes are grouped by kernel in one
    pass, so a kernel of 100,000 nodes costs its boxes in this view, not its length once per box."""
    outlines = []
    for number, target in enumerate(costs):
        by_kernel: dict[int, list[str]] = {}  # a fused kernel (its first node) -> its boxes here, in view order
        for item in view.items:
            if item.kind not in ("node", "module"):
                continue
            nodes = item.nodes[: max(1, len(item.nodes) // item.repeats)]  # one block's
            kernels = {
                target.kernel_members[index][0] if len(target.kernel_members[index]) > 1 else -1 for index in nodes
            }
            if len(kernels) == 1 and -1 not in kernels:
                by_kernel.setdefault(kernels.pop(), []).append(item.key)
        for kernel, keys in by_kernel.items():
            if len(keys) > 1:
                outlines.extend(Outline(number, kernel, piece, path) for piece, path in _outline_pieces(layout, keys))
    return outlines


def _outline_pieces(layout: Layout, keys: list[str]) -> list[tuple[list[str], str]]:
    """The boxes ``keys`` (one kernel's) in as few outlines as hold no other box: (their boxes,
    an SVG path). An outline goes round the boxes layer by layer, 4 pixels out (a chain down
    several layers is one shape that narrows and widens with it); a layer where another box
    stands between two of the kernel's, or a gap of layers where one stands in the way, starts
    a new outline; such a layer's boxes are outlined one by one."""
    own = set(keys)
    rows: dict[int, list[PlacedBox]] = {}
    for key in keys:
        box = layout.boxes[key]
        rows.setdefault(box.layer, []).append(box)
    others: dict[int, list[PlacedBox]] = {}
    for key, box in layout.boxes.items():
        if key not in own and box.layer in rows or key not in own and rows and min(rows) < box.layer < max(rows):
            others.setdefault(box.layer, []).append(box)
    pieces: list[tuple[list[str], str]] = []
    spans: list[tuple[int, float, float, float, float, list[str]]] = []  # layer, left, right, top, bottom, boxes

    def close() -> None:
        if spans:
            pieces.append(([key for span in spans for key in span[5]], _span_path(spans)))
            spans.clear()

    for layer in sorted(rows):
        boxes = sorted(rows[layer], key=lambda b: b.x)
        left, right = boxes[0].x - 4, max(b.x + b.width for b in boxes) + 4
        top, bottom = min(b.y for b in boxes) - 4, max(b.y + b.height for b in boxes) + 4
        if any(b.x < right and b.x + b.width > left for b in others.get(layer, ())):
            close()  # another box stands between: each of this layer's boxes alone
            for b in boxes:
                spans.append((layer, b.x - 4, b.x + b.width + 4, b.y - 4, b.y + b.height + 4, [b.key]))
                close()
            continue
        if spans:
            low, high = min(spans[-1][1], left), max(spans[-1][2], right)
            between = (b for gap in range(spans[-1][0] + 1, layer) for b in others.get(gap, ()))
            if any(b.x < high and b.x + b.width > low for b in between):
                close()
        spans.append((layer, left, right, top, bottom, [b.key for b in boxes]))
    close()
    return pieces


def _span_path(spans: Sequence[tuple[int, float, float, float, float, list[str]]]) -> str:
    """The closed SVG path round the spans (left, right, top, bottom), top to bottom: down their
    left sides, up their right sides.

    >>> _span_path([(0, 0, 10, 0, 5, []), (1, 2, 8, 9, 14, [])])
    'M0.0 0.0 L0.0 5.0 L2.0 9.0 L2.0 14.0 L8.0 14.0 L8.0 9.0 L10.0 5.0 L10.0 0.0 Z'
    """
    down = [(left, y) for _, left, _, top, bottom, _ in spans for y in (top, bottom)]
    up = [(right, y) for _, _, right, top, bottom, _ in reversed(spans) for y in (bottom, top)]
    return "M" + " L".join(f"{x:.1f} {y:.1f}" for x, y in down + up) + " Z"
