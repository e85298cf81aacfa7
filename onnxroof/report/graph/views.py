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
from .fold import BOX_BUDGET, GraphView, folded_views, start_view
from .svg import DrawnView, draw_view, standalone_svg

if TYPE_CHECKING:
    from ...result import Analysis


def drawn_views(analysis: Analysis, depth: int | None = None, budget: int = BOX_BUDGET) -> list[DrawnView]:
    """Every view of ``analysis``'s folded graph, laid out and drawn; the whole model's first."""
    costs = target_costs(analysis)
    modules: dict[str, int] = {}  # top-level module -> its colour, the same in every view
    return [draw_view(view, analysis, costs, modules) for view in folded_views(analysis, budget, depth)]


def render_graph_svg(analysis: Analysis, depth: int | None = None, module: str | None = None) -> str:
    """The whole model's view (its start view: :func:`fold.start_view`; or ``module``'s: its path,
    ``encoder/layer.0``) as a standalone SVG, coloured by the bound on the first target. A module
    that is not one of the views (one folded into a run of alike blocks, a single node) raises
    :class:`UsageError` naming those that are. The nodes drawn are those a run executes (a
    control-flow body as a module under its node: ``Analysis.run_view``)."""
    analysis = analysis.run_view
    costs = target_costs(analysis)
    views = folded_views(analysis, BOX_BUDGET, depth)
    view = views[0] if depth is not None else start_view(views)
    if module is not None:
        view = _module_view(views, module)
    drawn = draw_view(view, analysis, costs, {})
    return standalone_svg(drawn, costs[0].name if costs else None)


def _module_view(views: list[GraphView], module: str) -> GraphView:
    """The view that opens ``module`` (its path; a run's first block), else :class:`UsageError`
    naming up to five modules that have one, each once (a variant, the same view with one box
    unfolded in place, carries its view's title: not a module of its own)."""
    wanted = module.strip("/")
    opened = [v for v in views[1:] if v.unfolds is None]
    found = [v for v in opened if v.title == wanted or v.title.startswith(wanted + " (")]
    if found:
        return found[0]
    names = list(dict.fromkeys(v.title.split(" (")[0] for v in opened))
    listed = (
        ", ".join(names[:5]) + (", ..." if len(names) > 5 else "") if names else "none: the model has no folded module"
    )
    raise UsageError(f"--module {module}: no view of that module; modules with a view: {listed}")
