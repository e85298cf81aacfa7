"""The graph view drawn as SVG: one view's boxes, edges and labels, for the report's graph
section and for ``onnxroof graph`` (a standalone file with its legend).

Each box is filled with the colour of its bound on the first target (the report's colours for
compute, parallelism, DRAM, on-chip, overhead) and carries, as ``data-`` attributes, its bound on
every target (``data-b0``, ``data-b1`` ...), its share of the time in six steps (``data-h0`` ...)
and its top-level module (``data-m``): the page's style sheet recolours the boxes from those
when the reader picks another target or colouring, without drawing again. Labels are monospace
so their width is known here, and every box is as wide as its longest line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from markupsafe import escape

from ...core.text import page_text, printable
from ...core.units import iec, seconds
from ..bounds import BOUND_LABELS
from .costs import TargetCosts, box_cost, box_text
from .layout import Layout, LayoutCache, layered_layout

if TYPE_CHECKING:
    from ...result import Analysis
    from .fold import GraphItem, GraphView

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


@dataclass
class DrawnView:
    """One view laid out and drawn: its SVG body (no ``<svg>`` element) and its size."""

    key: str
    title: str
    parent: str | None
    body: str
    width: float
    height: float
    boxes: int


def _markup(text: object, lines: bool = False) -> str:
    r"""Model-supplied text in SVG: printable first (control characters, U+2028, lone surrogates as
    '?': XML allows none of them, and ``-o -`` must not send escapes to a terminal), then escaped;
    with ``lines`` (a tooltip) its newlines and tabs stay (:func:`~onnxroof.core.text.page_text`).

    >>> _markup('a\x00<b>&"\u2028\x1b\n'), _markup('a\x7f\nb', lines=True)
    ('a?&lt;b&gt;&amp;&#34;???', 'a?\nb')
    """
    return str(escape(page_text(str(text)) if lines else printable(text)))


def clip_middle(text: str, width: int) -> str:
    """``text`` at most ``width`` characters, its middle replaced by "…" when longer.

    >>> clip_middle("encoder/layer.0/attention/self", 16)
    'encoder…ion/self'
    """
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def box_lines(item: "GraphItem", costs: Sequence[TargetCosts]) -> list[str]:
    """The text lines of a box: op type and name; a module's name, repeat count, nodes and time
    (model text printable: the SVG and the page's graph data draw these lines)."""
    label, name = printable(item.label), printable(item.name)
    if item.kind == "node":  # inside a run unfolded in place: the node of every block, "MatMul ×12"
        return [clip_middle(label, NAME_CHARS - 5) + (f" ×{item.repeats}" if item.repeats > 1 else ""),
                clip_middle(name.rsplit("/", 1)[-1] or name, NAME_CHARS)]
    if item.kind == "module":
        first = clip_middle(label, NAME_CHARS - 5) + (f" ×{item.repeats}" if item.repeats > 1 else "")
        third = f"{len(item.nodes):,} nodes"
        if costs:
            third += f" · {seconds(box_cost(item, costs[0]).time_s)}"
        return [first, clip_middle(name, NAME_CHARS), third]
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


def lay_out(view: "GraphView", costs: Sequence[TargetCosts], cache: LayoutCache | None = None
            ) -> tuple[Layout, dict[str, list[str]]]:
    """The view's layout and each box's text lines (``cache``: the layouts of views alike in shape)."""
    lines = {item.key: box_lines(item, costs) for item in view.items}
    sizes = {key: box_size(text) for key, text in lines.items()}
    edges = [(edge.source, edge.target) for edge in view.edges]
    return (cache.layout(sizes, edges) if cache is not None else layered_layout(sizes, edges)), lines


def draw_view(view: "GraphView", analysis: "Analysis", costs: Sequence[TargetCosts],
              modules: dict[str, int]) -> DrawnView:
    """``view`` as SVG markup: edges, their shape labels, then boxes (each a ``g`` with its
    tooltip); ``modules`` numbers the top-level modules for the colouring by module."""
    layout, lines = lay_out(view, costs)
    items = {item.key: item for item in view.items}
    parts = ['<g class="gv-edges">']
    labelled: set[str] = set()
    labels = []
    for route, edge in zip(_routes_in_edge_order(layout, view), view.edges):
        path = "M" + " L".join(f"{x:.1f} {y:.1f}" for x, y in route.points) + _arrow_head(route.points)
        size = f"{edge.bytes:,} bytes ({iec(edge.bytes)})" if edge.bytes is not None else "bytes unknown"
        more = f" and {edge.tensors - 1} more tensors" if edge.tensors > 1 else ""
        parts.append(f'<path class="ge" d="{path}"><title>{_markup(edge.tensor)}{more}: {_markup(edge.shape)}, '
                     f'{size}</title></path>')
        if edge.source not in labelled:  # one label under each box: its first tensor's shape (the others' on hover)
            labelled.add(edge.source)
            x, y = layout.label_at(route)
            labels.append(f'<text class="gl" x="{x:.1f}" y="{y:.1f}">{_markup(clip_middle(edge.shape, LABEL_CHARS))}</text>')
    parts.append("</g>")
    parts.append('<g class="gv-labels">' + "".join(labels) + "</g>")
    parts.extend(_fused_outlines(view, layout, costs))
    parts.append('<g class="gv-boxes">')
    for key, box in layout.boxes.items():
        parts.append(_box(items[key], box, lines[key], analysis, costs, modules))
    parts.append("</g>")
    return DrawnView(view.key, view.title, view.parent, "".join(parts), layout.width, layout.height, len(layout.boxes))


def _arrow_head(points: list[tuple[float, float]], length: float = 6.0) -> str:
    """Two short strokes back from the route's end, along its last segment (no marker: the page
    refers to nothing, not even a fragment of itself).

    >>> _arrow_head([(0.0, 0.0), (0.0, 10.0)])  # pointing down at (0, 10)
    ' M-3.0 4.0 L0.0 10.0 L3.0 4.0'
    """
    (x0, y0), (x1, y1) = points[-2], points[-1]
    span = math.hypot(x1 - x0, y1 - y0) or 1.0
    ux, uy = (x1 - x0) / span, (y1 - y0) / span
    bx, by = x1 - ux * length, y1 - uy * length
    px, py = -uy * length / 2, ux * length / 2
    return f" M{bx + px:.1f} {by + py:.1f} L{x1:.1f} {y1:.1f} L{bx - px:.1f} {by - py:.1f}"


def _routes_in_edge_order(layout: Layout, view: "GraphView"):
    by_ends = {(route.source, route.target): route for route in layout.routes}
    return [by_ends[(edge.source, edge.target)] for edge in view.edges]


def _box(item: "GraphItem", box, text: list[str], analysis: "Analysis", costs: Sequence[TargetCosts],
         modules: dict[str, int]) -> str:
    attributes = [f'class="gb gb-{item.kind}"', f'data-key="{item.key}"']
    fill, stroke = STUB if item.kind in ("input", "output") else UNPLACED
    if item.kind in ("node", "module"):
        for number, target in enumerate(costs):
            cost = box_cost(item, target)
            attributes.append(f'data-b{number}="{cost.bound or "unplaced"}" data-h{number}="{share_step(cost.share)}"')
            if number == 0 and cost.bound is not None:
                fill, stroke = BOUND_COLOURS.get(cost.bound, UNPLACED)
        top = analysis.nodes[item.nodes[0]].name.strip("/").split("/")[0] if item.kind == "node" else item.name.split("/")[0]
        attributes.append(f'data-m="{modules.setdefault(top, len(modules)) % len(MODULE_COLOURS)}"')
        search = f"{item.label} {item.name}".lower()
        attributes.append(f'data-find="{_markup(search)}"')
    if item.kind == "node":
        attributes.append(f'data-gnode="{item.nodes[0]}"')
    if item.kind == "module" and item.view:
        attributes.append(f'data-view="{item.view}" tabindex="0" role="button"')
    shape = f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" height="{box.height:.1f}" rx="{8 if item.kind == "module" else 3}" fill="{fill}" stroke="{stroke}"/>'
    if item.repeats > 1:  # a stack: the blocks behind the first
        shape = (f'<rect class="gb-behind" x="{box.x + 4:.1f}" y="{box.y + 4:.1f}" width="{box.width:.1f}" '
                 f'height="{box.height:.1f}" rx="8" fill="{fill}" stroke="{stroke}"/>') + shape
    words = []
    for number, line in enumerate(text):
        cls = ' class="gt-head"' if number == 0 else ""
        words.append(f'<text{cls} x="{box.x + PAD_X:.1f}" y="{box.y + PAD_Y + LINE_HEIGHT * (number + 1) - 3:.1f}">'
                     f"{_markup(line)}</text>")
    title = _markup(box_text(item, analysis, costs), lines=True)
    return f'<g {" ".join(attributes)}>{shape}{"".join(words)}<title>{title}</title></g>'


def fused_outlines(view: "GraphView", layout: Layout, costs: Sequence[TargetCosts]) -> list[tuple[int, float, float, float, float]]:
    """(target number, x, y, width, height): a rectangle around the boxes of each kernel that fuses
    several nodes of the view, on each target, where that rectangle holds no other box. The view's
    node boxes are grouped by kernel in one pass, so a kernel of 100,000 nodes costs its boxes in
    this view, not its length once per box."""
    nodes = [(item.nodes[0], item.key) for item in view.items if item.kind == "node"]
    outlines = []
    for number, target in enumerate(costs):
        by_kernel: dict[int, list[str]] = {}  # a fused kernel (its first node) -> its boxes here, in view order
        for index, key in nodes:
            members = target.kernel_members[index]
            if len(members) > 1:
                by_kernel.setdefault(members[0], []).append(key)
        for keys in by_kernel.values():
            if len(keys) < 2:
                continue
            boxes = [layout.boxes[k] for k in keys]
            left, top = min(b.x for b in boxes) - 4, min(b.y for b in boxes) - 4
            right, bottom = max(b.x + b.width for b in boxes) + 4, max(b.y + b.height for b in boxes) + 4
            own = set(keys)
            if not any(k not in own and b.x < right and b.x + b.width > left and b.y < bottom and b.y + b.height > top
                       for k, b in layout.boxes.items()):
                outlines.append((number, left, top, right - left, bottom - top))
    return outlines


def _fused_outlines(view: "GraphView", layout: Layout, costs: Sequence[TargetCosts]) -> list[str]:
    return [f'<rect class="gk" data-t="{number}" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="6"/>'
            for number, x, y, w, h in fused_outlines(view, layout, costs)]


STANDALONE_STYLE = (
    "text{font:11px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;fill:#1d2433}"
    ".gt-head{font-weight:700}.gl{font-size:9px;fill:#6b7385;paint-order:stroke;stroke:#fff;stroke-width:3px}"
    ".ge{fill:none;stroke:#8a93a6;stroke-width:1.2}"
    ".gk{fill:none;stroke:#4a5366;stroke-dasharray:4 3}"
)


def standalone_svg(drawn: DrawnView, target: str | None) -> str:
    """One drawn view as a standalone SVG file, with a legend of the bound colours on top."""
    legend_height = 30.0
    width = max(drawn.width, 640.0)
    legend = []
    x = 12.0
    caption = f"bound on {target}:" if target else "no target: no bound"
    legend.append(f'<text x="{x}" y="19">{_markup(caption)}</text>')
    x += len(caption) * CHAR_WIDTH + 10
    if target:
        for bound, (fill, stroke) in BOUND_COLOURS.items():
            if bound == "none":
                continue
            legend.append(f'<rect x="{x:.1f}" y="8" width="14" height="14" rx="3" fill="{fill}" stroke="{stroke}"/>')
            legend.append(f'<text x="{x + 18:.1f}" y="19">{_markup(BOUND_LABELS[bound])}</text>')
            x += 18 + len(BOUND_LABELS[bound]) * CHAR_WIDTH + 14
    title = _markup(drawn.title)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{drawn.height + legend_height:.0f}" '
            f'viewBox="0 0 {width:.1f} {drawn.height + legend_height:.1f}"><title>{title}</title>'
            f"<style>{STANDALONE_STYLE}</style>"
            f'<rect width="100%" height="100%" fill="#ffffff"/>{"".join(legend)}'
            f'<g transform="translate(0 {legend_height})">{drawn.body}</g></svg>\n')

