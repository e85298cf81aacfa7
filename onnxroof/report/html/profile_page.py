"""The HTML output of ``onnxroof profile``: the model page on the profiled target, with the
measured nodes on its roofline and the "Predicted vs measured" section (``profile_section.py``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .model_page import render_html

if TYPE_CHECKING:
    from ...measure.profiling import ProfileResult


def render_profile_html(result: ProfileResult) -> str:
    """The HTML report of the model on the profile's target, with the measured series."""
    analysis = result.analysis
    if not any(report is result.target for report in analysis.targets):
        analysis = replace(analysis, targets=[*analysis.targets, result.target])
    return render_html(analysis, profile=result)
