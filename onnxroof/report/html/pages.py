"""The HTML reports: self-contained pages rendered from ``reports/templates/``.

This module only gathers the public renderers; each page has its own module:

- :func:`render_html` (``model_page.py``): one model (header, totals, a roofline per target,
  hotspots, memory, op types, the node table).
- :func:`render_diff_html` (``diff_page.py``): a base and a head model (deltas, both models on
  each roofline with arrows for the largest changes, overlaid memory timelines).
- :func:`render_compare_html` (``compare_page.py``): several models side by side (totals,
  whole-model points).
- :func:`render_sweep_html` (``sweep_page.py``): one model at every sweep point (the model
  point's path, latency and tokens/s against the swept value).
- :func:`render_profile_html` (``profile_page.py``): the model page on the target ``onnxroof
  profile`` measured on, with the measured nodes beside the predicted ones.

A page builds its context with every number already formatted (SI prefixes for counts, IEC for
bytes, the exact value in tooltips): the templates only place strings and compute nothing; chart
geometry comes from ``charts.py``. What several pages share is public in ``page.py`` (rendering,
:func:`script_json`, target cards, table cells), ``chart_context.py`` (roofline and timeline
contexts) and ``report/formatting.py`` (numbers). The pages import those, never this module.
"""

from __future__ import annotations

from ..formatting import shape_text
from .compare_page import render_compare_html
from .diff_page import render_diff_html
from .model_page import render_html
from .page import script_json
from .profile_page import render_profile_html
from .sweep_page import render_sweep_html

__all__ = [
    "render_html",
    "render_diff_html",
    "render_compare_html",
    "render_sweep_html",
    "render_profile_html",
    "script_json",
    "shape_text",
]
