"""onnxroof: how much compute, how many parameters, how many bytes, and where every layer of an
ONNX model sits on each target's roofline.

Pipeline (one way): load -> shapes -> graph (cost DAG) -> ops (registry) -> memory -> roofline
-> report. ``analyze`` returns the same data the CLI prints.
"""

__version__ = "0.1.0"

from .analysis import Analysis, analyze  # noqa: E402
from .ops import register  # noqa: E402

__all__ = ["Analysis", "analyze", "register", "__version__"]
