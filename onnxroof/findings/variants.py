"""The analysis again with one change: each variant is analysed once and shared by every target
and every finder, and one that cannot be analysed says why in one line."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import onnx

from ..core.errors import OnnxroofError
from ..options import AnalysisOptions
from ..pipeline import BACK_OPTIONS, Front, analyze_again, place_targets
from ..roofline.placement import place_model

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport
    from ..roofline.targets import Target


# The nodes a review may analyse again, in all: each variant it analyses (a batch x8 or x64, a
# narrower type, the fit's extrapolation) counts the model's nodes. A variant is a whole analysis;
# within this budget the findings cost at most about half of the command without them (process
# start and import included: issue 43's bar), so a 1,000-node model gets up to ten variants, a
# 5,000-node one two and a graph past it none. Re-placing (fusion, order, room on chip) is no analysis.
REANALYSE_NODES = 10_000


@dataclass
class Variant:
    """What the finders read of an analysis with one change: its targets' reports and its
    model-order peak. Its node, tensor and buffer records (a few KB per node, most of an
    analysis) are dropped as soon as it is placed: a review holds up to eight variants at once,
    and on a graph of 100,000 nodes each whole one would hold hundreds of MB."""

    targets: list[TargetReport] | None  # None: not placed yet (only its peak was asked for)
    peak_bytes: int  # the activations' peak in the model's order


class Reanalyser:
    """The model analysed again with some options changed, each from what the change leaves as it
    was: a change of the type only (``dtype``) costs again from the base's shapes (its
    :class:`~onnxroof.pipeline.Front`), any other (a batch, a context) prepares the model and infers
    its shapes again, from the model read once; ``unplaced`` stops before the targets (a peak
    needs none) and ``place`` places such an analysis on the base's targets afterwards."""

    def __init__(self, model: Any, options: AnalysisOptions, front: Front | None = None):
        self._model = model  # a path or a ModelProto, read on the first variant that needs it
        self._options = options
        self._front = front
        self._loaded: onnx.ModelProto | None = None

    def __call__(self, **changes: Any) -> Analysis:
        return analyze_again(self._start(changes), replace(self._options, **changes))

    def unplaced(self, **changes: Any) -> Analysis:
        return analyze_again(self._start(changes), replace(self._options, targets=(), **changes))

    def place(self, analysis: Analysis, targets: list[Target], **changes: Any) -> list[TargetReport]:
        return place_targets(analysis, targets, replace(self._options, **changes))

    def _start(self, changes: dict[str, Any]) -> Front | onnx.ModelProto:
        if self._front is not None and set(changes) <= BACK_OPTIONS:
            return self._front
        if self._loaded is None:
            from ..frontend.load import load_model

            self._loaded = self._model if not isinstance(self._model, (str, os.PathLike)) else load_model(self._model)
        return self._loaded


class Variants:
    """The base analysis and its variants: ``analysis(batch=8)`` re-runs the analysis with that
    option changed (placed on the targets when a report is asked for: ``peak_bytes`` needs none);
    ``placed(report, fusion=...)`` re-runs only the placement on one target."""

    def __init__(self, base: Analysis, reanalyse: Callable[..., Analysis]):
        self.base = base
        self._reanalyse = reanalyse
        self._runs: dict[tuple, Variant | str] = {}
        self._unplaced: dict[tuple, Analysis] = {}  # analysed, not yet placed: kept until a report is asked for
        self._analysed_nodes = 0  # the nodes analysed again so far, against REANALYSE_NODES

    def analysis(self, **changes: Any) -> Variant | str:
        """The analysis with ``changes`` (analyze()'s options), placed, or why it failed."""
        return self._variant(changes, placed=True)

    def peak_bytes(self, **changes: Any) -> int | str:
        """The model-order peak of the analysis with ``changes``, or why there is none."""
        found = self._variant(changes, placed=False)
        return found if isinstance(found, str) else found.peak_bytes

    def _variant(self, changes: dict[str, Any], placed: bool) -> Variant | str:
        key = tuple(sorted(changes.items()))
        if len(self.base.nodes) > REANALYSE_NODES:
            return (
                f"not analysed again: {len(self.base.nodes):,} nodes, over the {REANALYSE_NODES:,} up to which "
                "findings measure a change by analysing the model again"
            )
        # a Reanalyser places a variant only when a report is asked for; any other function places it at once
        lazy = self._reanalyse if isinstance(self._reanalyse, Reanalyser) else None
        try:
            if key not in self._runs:
                spent = self._analysed_nodes + len(self.base.nodes)
                if spent > REANALYSE_NODES:  # past the budget: said
                    return (
                        f"not analysed again: the findings have analysed {self._analysed_nodes:,} nodes again, "
                        f"and {len(self.base.nodes):,} more would pass the {REANALYSE_NODES:,} they may"
                    )
                self._analysed_nodes = spent
                found = lazy.unplaced(**changes) if lazy is not None else self._reanalyse(**changes)
                invalid = _invalid(self.base, found, changes.get("batch"))
                self._runs[key] = invalid or Variant(
                    None if lazy is not None else found.targets, found.memory.model_order.peak_bytes
                )
                if lazy is not None and not invalid:
                    self._unplaced[key] = found
            variant = self._runs[key]
            if placed and isinstance(variant, Variant) and variant.targets is None and lazy is not None:
                targets = [report.target for report in self.base.targets]
                variant.targets = lazy.place(self._unplaced.pop(key), targets, **changes)
        except OnnxroofError as error:
            self._runs[key] = str(error).splitlines()[0] if str(error) else type(error).__name__
        return self._runs[key]

    def report(self, target: Target, **changes: Any) -> TargetReport | str:
        """The target's report in the analysis with ``changes``, or why there is none."""
        found = self.analysis(**changes)
        if isinstance(found, str):
            return found
        return next((r for r in found.targets or () if r.target.name == target.name), f"{target.name} not analysed")

    def placed(self, report: TargetReport, target: Target | None = None, **changes: Any) -> TargetReport:
        """The base analysis placed again on ``report``'s target (or ``target``, a changed copy of
        it) with ``changes`` to :func:`place_model`'s arguments (fusion, order)."""
        return place_model(
            self.base.cost_graph, self.base.memory, target or report.target, report.dtype, report.batch, **changes
        )


def _invalid(base: Analysis, found: Analysis, batch: int | None = None) -> str:
    """Why a variant gives no number: it counts fewer nodes than the base, or leaves a dim
    unbound the base had bound (a gain would be the time of the nodes that still analysed); or,
    at another ``batch``, an output that carried the base's batch does not carry the new one (a
    shape constant's -1 took it in: the graph analysed is not the model at that batch)."""
    if found.uncounted_nodes > base.uncounted_nodes or (found.unresolved_dims and not base.unresolved_dims):
        return f"analysed incompletely, so no gain is measured: {found.incomplete_text()}"
    if batch is not None:
        base_batch = base.batch or 1
        shapes = {o.name: o.shape for o in found.outputs}
        for output in base.outputs:
            shape = shapes.get(output.name)
            if (
                output.shape
                and len(output.shape) >= 2
                and output.shape[0] == base_batch
                and shape
                and shape[0] != batch
            ):
                return (
                    f"at batch {batch} output {output.name} is {'x'.join(map(str, shape))}: the batch does not "
                    f"reach it, so the graph fixes its batch inside and no gain is measured"
                )
    return ""


def per_inference_s(report: TargetReport) -> float:
    """The latency of one inference: one run's over its batch."""
    return report.latency_s / max(report.batch, 1)


def changed_target(target: Target, **figures: float) -> Target:
    """A copy of ``target`` with some figures' values changed (what a what-if places on)."""
    return replace(target, **{name: replace(getattr(target, name), value=value) for name, value in figures.items()})


def ratio_text(base: float, new: float) -> str:
    """``1.9x less time``, or ``12% less time`` under 1.5x."""
    if new <= 0 or not math.isfinite(base / new):
        return "no time"
    ratio = base / new
    return f"{ratio:.1f}x less time" if ratio >= 1.5 else f"{1 - new / base:.0%} less time"
