"""Findings (issue 30): on each target, what to change, ranked by the time it saves, each gain
measured by analysing the model again with the change; and whether the model fits in the
device's memory.

:data:`FINDERS` maps a kind to a small function ``(analysis, report, variants) -> [Finding]``, one
module per kind, overridable like the op rules (assign a function, or delete a kind):

========== ================================================================ ====================
kind       finds                                                            measured by
========== ================================================================ ====================
launch     launches take >= 25 % of the time                                ``--batch`` x 8
precision  a narrower type the target has a roof for                        ``--dtype``
fusion     kernels a runtime fusing every rule set would merge              placing again
spill      activations spilled off chip                                     best order, half batch
weights    parameters streamed because they do not fit on chip              placing with room
intensity  MACs below the ridge: time that is bytes                         the kernels' roofs
largest    the largest kernel and module                                    (a pointer: no gain)
========== ================================================================ ====================

``capacity`` (the model does not fit in the device memory) comes first whenever it applies.

:func:`analyze` is ``onnxroof.analyze``: :func:`onnxroof.pipeline.analyze`, with the same
arguments, whose result makes its findings on first use (``print(analysis)``, the JSON document,
``analysis.review()``), since they cost a few analyses more.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from ..options import AnalysisOptions, check_call, check_progress
from ..pipeline import analyze as analyze_once
from ..pipeline import analyze_keeping_front, collector_paused, options_of
from ..roofline.verdicts import Finding, ranked
from .capacity import capacity, device_fit
from .fusion import fusion
from .intensity import intensity
from .largest import largest
from .launch import launch
from .memory import spill, weights
from .precision import precision
from .subnormal import subnormal
from .variants import REANALYSE_NODES, Reanalyser, Variants

if TYPE_CHECKING:
    import onnx

    from ..result import Analysis
    from ..roofline.placement import TargetReport

Finder = Callable[["Analysis", "TargetReport", Variants], list[Finding]]
FINDERS: dict[str, Finder] = {
    "launch": launch,
    "precision": precision,
    "fusion": fusion,
    "spill": spill,
    "weights": weights,
    "subnormal": subnormal,
    "intensity": intensity,
    "largest": largest,
}


def review(analysis: Analysis, reanalyse: Callable[..., Analysis]) -> list[Finding]:
    """Every target's fit and findings, set on its report; all of them, ranked. ``reanalyse``
    analyses the model again with some of analyze()'s options changed."""
    variants = Variants(analysis, reanalyse)
    incomplete = analysis.incomplete_text()
    for report in analysis.targets:
        report.fit = device_fit(analysis, report, variants)
        found = capacity(analysis, report, report.fit)
        for finder in FINDERS.values() if report.latency_s > 0 else ():  # no time: nothing to save
            found += finder(analysis, report, variants)
        report.findings = ranked([f.on_incomplete(incomplete) for f in found] if incomplete else found)
    return ranked([f for report in analysis.targets for f in report.findings])


@dataclass(frozen=True)
class Reviewer:
    """Makes an analysis's findings when they are first asked for, from the model as it was
    given (a path or a ModelProto) and the options it was analysed with; picklable, so an
    analysis made in a worker process keeps it. ``front`` (the base's prepared model and shapes,
    :class:`~onnxroof.pipeline.Front`) lets a change of type start from them; it is not pickled."""

    model: Any  # str | os.PathLike | onnx.ModelProto
    options: AnalysisOptions
    front: Any = field(default=None, compare=False)  # Front | None

    def __getstate__(self) -> dict:
        return {"model": self.model, "options": self.options, "front": None}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def __call__(self, analysis: Analysis) -> None:
        # variants read the model's order (the base gives the best one) and are checked already
        # (and one device: the variants measure single-device gains)
        options = replace(self.options, checker_in_child=False, search_order=False, devices=1)
        with collector_paused():  # as in analyze(): the variants and placings build many objects, no cycles
            review(analysis, Reanalyser(self.model, options, self.front))


@functools.wraps(analyze_once)
def analyze(model: str | os.PathLike | onnx.ModelProto, *args: Any, **arguments: Any) -> Analysis:
    # a call Python would refuse with a bare TypeError is refused naming the argument
    check_call("analyze", args, arguments, also=("progress", "options"))
    given = dict(arguments)
    options, progress = given.pop("options", None), given.pop("progress", None)
    check_progress(progress)
    options = options_of(options, given)
    analysis, front = analyze_keeping_front(model, options, progress)
    if analysis.targets:
        # past REANALYSE_NODES no variant is analysed: the front (the prepared model, its shapes) is not kept
        kept = front if len(analysis.nodes) <= REANALYSE_NODES else None
        analysis.reviewer = Reviewer(model, options, kept)
    return analysis
