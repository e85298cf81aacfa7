"""onnxroof: how much compute, how many parameters, how many bytes, and where every layer of an
ONNX model sits on each target's roofline.

Pipeline (one way): load -> shapes -> graph (cost DAG) -> ops (registry) -> memory -> roofline
-> report. ``analyze`` returns the same data the CLI prints.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .core.version import __version__

__all__ = ["Analysis", "AnalysisOptions", "analyze", "formulas", "register", "review", "__version__"]

if TYPE_CHECKING:
    from .api import analyze, review
    from .ops import register
    from .options import AnalysisOptions
    from .result import Analysis
    from .symbolic.formulas import formulas

# The pipeline (onnx, networkx, every cost rule) is imported on first use of these names, not by
# `import onnxroof`: the CLI's quick commands (--help, targets) never need it.
_LAZY = {
    "Analysis": ".result",
    "AnalysisOptions": ".options",
    "analyze": ".api",
    "formulas": ".symbolic.formulas",
    "register": ".ops",
    "review": ".api",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value  # later lookups find it directly
    return value
