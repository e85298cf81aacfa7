"""onnxroof: how much compute, how many parameters, how many bytes, and where every layer of an
ONNX model sits on each target's roofline.

Pipeline (one way): load -> shapes -> graph (cost DAG) -> ops (registry) -> memory -> roofline
-> report. ``analyze`` returns the same data the CLI prints.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .core.version import __version__

__all__ = ["Analysis", "AnalysisOptions", "analyze", "formulas", "register", "__version__"]

if TYPE_CHECKING:
    from .options import AnalysisOptions
    from .findings import analyze
    from .result import Analysis
    from .symbolic.formulas import formulas
    from .ops import register

# The pipeline (onnx, networkx, every cost rule) is imported on first use of these names, not by
# `import onnxroof`: the CLI's quick commands (--help, targets) never need it.
_LAZY = {"Analysis": ".result", "AnalysisOptions": ".options", "analyze": ".findings", "formulas": ".symbolic.formulas", "register": ".ops"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value  # later lookups find it directly
    if name in ("analyze", "Analysis"):
        _wire_notebook_view()
    return value


def _wire_notebook_view() -> None:
    """An analysis shows in a notebook as the HTML report does (findings, cards, rooflines): the
    result layer cannot import the report, so the package's root, above every layer, links them."""
    from . import result
    from .report.html.notebook import notebook_html

    result.notebook_view = notebook_html
