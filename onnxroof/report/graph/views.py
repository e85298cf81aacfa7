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

from ...compare.modules import run_label
from ...core.errors import UsageError
from ...core.text import printable
from .costs import target_costs
from .fold import BOX_BUDGET, GraphView, Module, alike_runs, folded_tree, folded_views, start_view
from .structure import SYNTHETIC
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
    ``encoder/layer.0``, any module of the module tree, a block of a run included:
    :func:`fold.module_view`) as a standalone SVG, coloured by the bound on the first target. A
    path that names no module raises :class:`UsageError` naming those there are. The nodes drawn
    are those a run executes (a control-flow body as a module under its node: ``Analysis.run_view``)."""
    analysis = analysis.run_view
    costs = target_costs(analysis)
    if module is not None:
        view = module_view(analysis, module)
    else:
        views = folded_views(analysis, BOX_BUDGET, depth)
        view = views[0] if depth is not None else start_view(views)
    drawn = draw_view(view, analysis, costs, {})
    return standalone_svg(drawn, costs[0].name if costs else None)


def module_view(analysis: Analysis, path: str, budget: int = BOX_BUDGET) -> GraphView:
    """The view of any module of the tree, by its path (``encoder/layer.3``: a block of a run
    too; a run's label, ``encoder/layer.0-11``, is its first block; the exporter's wrapper
    levels may be left out when the rest names one module), else :class:`UsageError` naming
    the modules under the deepest part of the path that exists."""
    root, builder = folded_tree(analysis, budget)
    wanted = tuple(part for part in path.strip().strip("/").split("/") if part)
    found = _find_module(root, wanted) if wanted else root
    if found is None:
        raise UsageError(f"--module {printable(path)}: no such module; {_near(root, wanted)}")
    return builder.view(found, None, None)


def _labels(module: Module) -> tuple[str, ...]:
    return tuple(part.split(SYNTHETIC)[-1] for part in module.path)


def _find_module(root: Module, wanted: tuple[str, ...]) -> Module | None:
    """The module whose path (its parts' labels) is ``wanted``, or ends with it when only one
    does; a run's label stands for its first block."""
    matches = []
    stack = [root]
    while stack:
        module = stack.pop()
        runs_here = alike_runs(module)
        for part, child in module.children.items():
            stack.append(child)
            run = runs_here.get(part)
            names = {_labels(child)}
            if run and len(run) > 1 and child is run[0]:
                names.add(_labels(child)[:-1] + (run_label(child.label, len(run)),))
            if any(name == wanted for name in names):
                return child
            if any(name[-len(wanted) :] == wanted for name in names):
                matches.append(child)
    return matches[0] if len(matches) == 1 else None


def _near(root: Module, wanted: tuple[str, ...]) -> str:
    """The modules under the deepest existing part of ``wanted``: what the error lists."""
    module = root
    for part in wanted:
        child = next((c for c in module.children.values() if c.label == part), None)
        if child is None:
            break
        module = child
    names = ["/".join(_labels(child)) for child in module.children.values()]
    where = f"under {'/'.join(_labels(module))}" if module.path else "at the top"
    listed = ", ".join(printable(n) for n in names[:6]) + (", ..." if len(names) > 6 else "")
    return f"modules {where}: {listed}" if names else f"{where} there is no module"
