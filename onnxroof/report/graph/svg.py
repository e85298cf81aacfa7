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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from markupsafe import escape

from ...core.text import page_text, printable
from ..bounds import BOUND_LABELS
from .costs import TargetCosts, box_text
from .scene import (
    BOUND_COLOURS,
    CHAR_WIDTH,
    LINE_HEIGHT,
    MODULE_COLOURS,
    PAD_X,
    PAD_Y,
    STUB,
    UNPLACED,
    SceneBox,
    arrow_head,
    build_scene,
    size_text,
)

if TYPE_CHECKING:
    from ...result import Analysis
    from .fold import GraphView


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


def draw_view(view: GraphView, analysis: Analysis, costs: Sequence[TargetCosts], modules: dict[str, int]) -> DrawnView:
    """``view`` as SVG markup: edges, their shape labels, then boxes (each a ``g`` with its
    tooltip); ``modules`` numbers the top-level modules for the colouring by module."""
    scene = build_scene(view, analysis, costs)
    parts = ['<g class="gv-edges">']
    labels = []
    for drawn in scene.edges:
        edge = drawn.edge
        path = "M" + " L".join(f"{x:.1f} {y:.1f}" for x, y in drawn.points)
        path += " M{:.1f} {:.1f} L{:.1f} {:.1f} L{:.1f} {:.1f}".format(
            *(v for point in arrow_head(drawn.points) for v in point)
        )
        more = f" and {edge.tensors - 1} more tensors" if edge.tensors > 1 else ""
        parts.append(
            f'<path class="ge" d="{path}"><title>{_markup(edge.tensor)}{more}: {_markup(edge.shape)}, '
            f"{size_text(edge.bytes)}</title></path>"
        )
        if drawn.label is not None:
            x, y = drawn.label_at
            labels.append(f'<text class="gl" x="{x:.1f}" y="{y:.1f}">{_markup(drawn.label)}</text>')
    parts.append("</g>")
    parts.append('<g class="gv-labels">' + "".join(labels) + "</g>")
    parts.extend(f'<path class="gk" data-t="{outline.target}" d="{outline.path}"/>' for outline in scene.outlines)
    parts.append('<g class="gv-boxes">')
    for position in scene.order:
        parts.append(_box(scene.boxes[position], analysis, costs, modules))
    parts.append("</g>")
    return DrawnView(view.key, view.title, view.parent, "".join(parts), scene.width, scene.height, len(scene.boxes))


def _box(box: SceneBox, analysis: Analysis, costs: Sequence[TargetCosts], modules: dict[str, int]) -> str:
    item = box.item
    attributes = [f'class="gb gb-{item.kind}"', f'data-key="{item.key}"']
    fill, stroke = STUB if item.kind in ("input", "output") else UNPLACED
    if item.kind in ("node", "module"):
        for number, (bound, step) in enumerate(zip(box.bounds, box.shares)):
            attributes.append(f'data-b{number}="{bound}" data-h{number}="{step}"')
        if box.bounds and box.bounds[0] != "unplaced":
            fill, stroke = BOUND_COLOURS.get(box.bounds[0], UNPLACED)
        attributes.append(f'data-m="{modules.setdefault(_top(box, analysis), len(modules)) % len(MODULE_COLOURS)}"')
        attributes.append(f'data-find="{_markup(f"{item.label} {item.name}".lower())}"')
    if item.kind == "node":
        attributes.append(f'data-gnode="{item.nodes[0]}"')
    if item.kind == "module" and item.view:
        attributes.append(f'data-view="{item.view}" tabindex="0" role="button"')
    frame = f'x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" height="{box.height:.1f}"'
    shape = f'<rect {frame} rx="{8 if item.kind == "module" else 3}" fill="{fill}" stroke="{stroke}"/>'
    if box.stacked:  # a stack: the blocks behind the first
        shape = (
            f'<rect class="gb-behind" x="{box.x + 4:.1f}" y="{box.y + 4:.1f}" width="{box.width:.1f}" '
            f'height="{box.height:.1f}" rx="8" fill="{fill}" stroke="{stroke}"/>'
        ) + shape
    words = []
    for number, line in enumerate(box.lines):
        cls = ' class="gt-head"' if number == 0 else ""
        words.append(
            f'<text{cls} x="{box.x + PAD_X:.1f}" y="{box.y + PAD_Y + LINE_HEIGHT * (number + 1) - 3:.1f}">'
            f"{_markup(line)}</text>"
        )
    title = _markup(box_text(item, analysis, costs), lines=True)
    return f"<g {' '.join(attributes)}>{shape}{''.join(words)}<title>{title}</title></g>"


def _top(box: SceneBox, analysis: Analysis) -> str:
    """The SVG's group for ``data-m``: the first part of a node's name, or of a module box's path.
    TODO(47): the page colours by the scene's ``group`` (``compare/modules.module_of``: the
    exporter's metadata first, op types when the names carry no modules); this older reading
    differs on dynamo exports and unscoped graphs, kept so that ``onnxroof graph``'s output stays
    the same in issue 44. It only numbers ``data-m``, which no style in the standalone file reads."""
    item = box.item
    if item.kind == "node":
        return analysis.nodes[item.nodes[0]].name.strip("/").split("/")[0]
    return item.name.split("/")[0]


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
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{drawn.height + legend_height:.0f}" '
        f'viewBox="0 0 {width:.1f} {drawn.height + legend_height:.1f}"><title>{title}</title>'
        f"<style>{STANDALONE_STYLE}</style>"
        f'<rect width="100%" height="100%" fill="#ffffff"/>{"".join(legend)}'
        f'<g transform="translate(0 {legend_height})">{drawn.body}</g></svg>\n'
    )
