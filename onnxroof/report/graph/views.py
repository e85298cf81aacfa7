"""The graph view's entry points: every view of a model drawn (the report's graph section) and
the top view as a standalone SVG (``onnxroof graph``).

>>> from onnxroof import analyze
>>> from onnxroof.core.examples import build_example
>>> text = render_graph_svg(analyze(build_example("shallownet"), targets=["myriad-x"]))
>>> text.startswith("<svg") and text.count('class="gb gb-node"')  # Conv, Relu, Flatten, Gemm, Softmax
5
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.errors import UsageError
from .costs import target_costs
from .fold import BOX_BUDGET, folded_views, start_view
from .svg import DrawnView, draw_view, standalone_svg

if TYPE_CHECKING:
    from ...result import Analysis


def drawn_views(analysis: "Analysis", depth: int | None = None, budget: int = BOX_BUDGET) -> list[DrawnView]:
    """Every view of ``analysis``'s folded graph, laid out and drawn; the whole model's first."""
    costs = target_costs(analysis)
    modules: dict[str, int] = {}  # top-level module -> its colour, the same in every view
    return [draw_view(view, analysis, costs, modules) for view in folded_views(analysis, budget, depth)]


def render_graph_svg(analysis: "Analysis", depth: int | None = None, module: str | None = None) -> str:
    """The whole model's view (its start view: :func:`fold.start_view`; or ``module``'s: its path, ``encoder/layer.0``) as a standalone
    SVG, coloured by the bound on the first target. A module that is not one of the views (one
    folded into a run of alike blocks, a single node) raises :class:`UsageError` naming those
    that are. The nodes drawn are those a run executes (a control-flow body as a module under its
    node: ``Analysis.run_view``)."""
    analysis = analysis.run_view
    costs = target_costs(analysis)
    views = folded_views(analysis, BOX_BUDGET, depth)
    view = views[0] if depth is not None else start_view(views)
    if module is not None:
        wanted = module.strip("/")
        found = [v for v in views if v.title == wanted or v.title.startswith(wanted + " (")]
        if not found:
            names = ", ".join(v.title.split(" (")[0] for v in views[1:6]) or "none: the model has no folded module"
            raise UsageError(f"--module {module}: no view of that module; modules with a view: {names}"
                             + (", ..." if len(views) > 6 else ""))
        view = found[0]
    drawn = draw_view(view, analysis, costs, {})
    return standalone_svg(drawn, costs[0].name if costs else None)
