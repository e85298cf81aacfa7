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
stage      a layer pipeline's slowest (or heaviest) stage                   re-timing at half its work
contexts   a layer pipeline's parameters reloaded in several contexts      ``--batch`` x 8
fallback   an Edge TPU's op that falls back to the CPU and cuts the graph   placing with it mapped
largest    the largest kernel and module                                    (a pointer: no gain)
========== ================================================================ ====================

On a layer pipeline (a dataflow target) the per-kernel roofline kinds (:data:`PIPELINE_SKIPS`)
do not run: its time is its stages'.

``capacity`` (the model does not fit in the device memory) comes first whenever it applies.

The stage: :func:`review` takes an analysis and a way to analyse its model again with some of
analyze()'s options changed, and returns a :class:`Review` (per target: the memory fit and the
findings, ranked); it writes nothing into the analysis. The commands call it once, before
rendering, and pass the review to every output that shows findings; ``onnxroof.review(analysis)``
does it for an analysis made by ``onnxroof.analyze``. :func:`analyze_for_review` is the analysis
the command line and ``onnxroof.analyze`` make: the pipeline's, and the :class:`Source` that
analysing the model again starts from.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..options import AnalysisOptions
from ..pipeline import analyze_keeping_front, collector_paused
from .capacity import capacity, device_fit
from .fallback import fallback
from .fusion import fusion
from .intensity import intensity
from .largest import largest
from .launch import launch
from .memory import spill, weights
from .pipeline import PIPELINE_SKIPS, contexts, stage
from .precision import precision
from .records import NO_REVIEW, DeviceFit, Finding, Review, TargetReview, ranked
from .subnormal import subnormal
from .variants import REANALYSE_NODES, Reanalyser, Variants

if TYPE_CHECKING:
    import onnx

    from ..result import Analysis
    from ..roofline.placement import TargetReport

__all__ = [
    "FINDERS",
    "NO_REVIEW",
    "DeviceFit",
    "Finding",
    "Review",
    "Source",
    "TargetReview",
    "analyze_for_review",
    "review",
]

Finder = Callable[["Analysis", "TargetReport", Variants], list[Finding]]
FINDERS: dict[str, Finder] = {
    "launch": launch,
    "precision": precision,
    "fusion": fusion,
    "spill": spill,
    "weights": weights,
    "subnormal": subnormal,
    "intensity": intensity,
    "stage": stage,
    "contexts": contexts,
    "fallback": fallback,
    "largest": largest,
}


def review(analysis: Analysis, reanalyse: Callable[..., Analysis]) -> Review:
    """Every target's fit and findings (ranked), the analysis left as it was. ``reanalyse``
    analyses the model again with some of analyze()'s options changed (a :class:`Reanalyser`,
    :meth:`Source.reanalyser`, or any ``(**changes) -> Analysis``)."""
    variants = Variants(analysis, reanalyse)
    with collector_paused():  # as in analyze(): the variants and placings build many objects, no cycles
        return Review(tuple(_target_review(analysis, report, variants) for report in analysis.targets))


def _target_review(analysis: Analysis, report: TargetReport, variants: Variants) -> TargetReview:
    fit = device_fit(analysis, report, variants)
    found = capacity(analysis, report, fit)
    skipped = PIPELINE_SKIPS if report.dataflow is not None else frozenset()
    for kind, finder in FINDERS.items() if report.latency_s > 0 else ():  # no time: nothing to save
        if kind not in skipped:
            found += finder(analysis, report, variants)
    blocking = [f for f in found if f.blocking]
    if blocking:  # the target cannot run the model's type: any other gain would be measured in a type it does not run
        found = blocking
    incomplete = analysis.incomplete_text()
    if incomplete:
        found = [f.on_incomplete(incomplete) for f in found]
    return TargetReview(report, fit, tuple(ranked(found)))


@dataclass(frozen=True)
class Source:
    """What analysing a model again starts from: the model as it was given (a path or a
    ModelProto) and the options it was analysed with; picklable, so an analysis made in a worker
    process can be reviewed in the parent. ``front`` (the base's prepared model and shapes,
    :class:`~onnxroof.pipeline.Front`) lets a change of type start from them; it is not pickled."""

    model: Any  # str | os.PathLike | onnx.ModelProto
    options: AnalysisOptions
    front: Any = field(default=None, compare=False)  # Front | None

    def __getstate__(self) -> dict:
        return {"model": self.model, "options": self.options, "front": None}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def without_front(self) -> Source:
        """This source without the base's front (a review made: the prepared model is no more needed)."""
        return replace(self, front=None)

    def reanalyser(self) -> Reanalyser:
        """The model analysed again as a review's variants are: from the model's order (the base
        gives the best one), checked already, on one device (the variants measure single-device gains)."""
        options = replace(self.options, checker_in_child=False, search_order=False, devices=1)
        return Reanalyser(self.model, options, self.front)


def analyze_for_review(
    model: str | os.PathLike | onnx.ModelProto, options: AnalysisOptions, progress: Callable[[str], None] | None = None
) -> tuple[Analysis, Source | None]:
    """The pipeline's analysis of ``model`` and the :class:`Source` a review analyses it again from
    (None without targets: nothing to review)."""
    # past REANALYSE_NODES no variant is analysed: the front (the prepared model, its shapes) is not kept
    analysis, front = analyze_keeping_front(model, options, progress, front_up_to=REANALYSE_NODES)
    if not analysis.targets:
        return analysis, None
    return analysis, Source(model, options, front)
