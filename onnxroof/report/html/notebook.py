"""What a notebook shows for an analysis (``Analysis._repr_html_``): the findings, the totals and
target cards and a roofline per target, from the model report's own partials, in an iframe whose
``srcdoc`` holds the page, so that its styles touch nothing of the notebook's."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...findings import Review
    from ...result import Analysis

TEMPLATE = "notebook.html.j2"
# the iframe's height: the page's parts, roughly, so that the findings and the first roofline show
HEADING_PX, FINDING_PX, CARDS_PX, TARGET_PX, ROOFLINE_PX = 60, 64, 150, 180, 560
MAX_HEIGHT_PX = 1400


def notebook_html(analysis: Analysis, review: Review | None = None) -> str:
    """The notebook's frame: the model page's findings (``review``'s), totals and rooflines."""
    from .model_page import model_page
    from .page import render_page

    page = render_page(TEMPLATE, model_page(analysis, review=review))
    shown = min(len(review.findings), 6) if review is not None else 0
    height = HEADING_PX + FINDING_PX * shown + CARDS_PX + (TARGET_PX + ROOFLINE_PX) * len(analysis.targets)
    return (
        f'<iframe title="onnxroof: {escape(analysis.model.label)}" srcdoc="{escape(page, quote=True)}" '
        f'style="width: 100%; height: {min(height, MAX_HEIGHT_PX)}px; border: 0"></iframe>'
    )
