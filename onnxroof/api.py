"""The Python API's analysis: ``onnxroof.analyze`` and ``onnxroof.review``.

The package's root sits above every layer, so this module joins what the layers keep apart: the
pipeline's :class:`~onnxroof.result.Analysis`, the findings stage (``onnxroof.findings.review``,
which needs the model to analyse it again) and the report's views of both (``print()``, the
notebook's HTML, the JSON document). ``onnxroof.analyze`` returns a :class:`ReviewableAnalysis`:
the analysis with the :class:`~onnxroof.findings.Source` its model can be analysed again from; its
review is made on first use (``onnxroof.review(analysis)``, ``print``, the notebook, ``to_dict``),
since it costs a few analyses more, and is the same :class:`~onnxroof.findings.Review` after.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .findings import NO_REVIEW, Finding, Review, Source, analyze_for_review
from .findings import review as findings_review
from .options import AnalysisOptions, check_call, check_progress
from .pipeline import analyze as analyze_once
from .pipeline import options_of
from .result import Analysis

if TYPE_CHECKING:
    import onnx


@dataclass(repr=False)
class ReviewableAnalysis(Analysis):
    """An analysis made by ``onnxroof.analyze``: the pipeline's, and where its model can be
    analysed again from (``source``; None without targets: nothing to review)."""

    source: Source | None = field(default=None, compare=False)

    @cached_property
    def _review(self) -> Review:
        # made once: each review analyses the model again a few times
        if self.source is None:
            return NO_REVIEW
        made = findings_review(self, self.source.reanalyser())
        self.source = self.source.without_front()  # the prepared model and its shapes, freed once they served
        return made

    def review(self) -> list[Finding]:
        """Every target's findings, ranked: ``onnxroof.review(analysis).findings``, kept for the
        scripts that call it (use ``onnxroof.review``, which also gives each target's memory fit)."""
        return self._review.findings

    @property
    def findings(self) -> list[Finding]:
        return self._review.findings

    def findings_to_pandas(self):
        """The findings as a pandas DataFrame, one row each, ranked (``onnxroof.review(analysis).to_pandas()``)."""
        return self._review.to_pandas()

    def __str__(self) -> str:
        from .findings.wording import summary_findings_lines, summary_fits

        return self.summary_text(
            summary_fits(self._review, self.targets), summary_findings_lines(self._review, self.targets)
        )

    def _repr_html_(self) -> str:
        """What a notebook shows: the findings, the totals and each target's card and roofline."""
        from .report.html.notebook import notebook_html

        return notebook_html(self, self._review)

    def to_dict(self) -> dict:
        """The JSON document (schema onnxroof/1) that ``summary --format json`` prints, with the findings."""
        from .report.json import document

        return document(self, self._review)


def review(analysis: Analysis) -> Review:
    """The findings stage's review of an analysis made by :func:`analyze`: each target's memory
    fit and findings (what to change, each gain measured by analysing the model again with the
    change), made on the first call. An analysis made otherwise (the pipeline alone, a sweep's
    point) or without targets has none (:data:`~onnxroof.findings.NO_REVIEW`)."""
    return analysis._review if isinstance(analysis, ReviewableAnalysis) else NO_REVIEW


@functools.wraps(analyze_once)
def analyze(model: str | os.PathLike | onnx.ModelProto, *args: Any, **arguments: Any) -> ReviewableAnalysis:
    # a call Python would refuse with a bare TypeError is refused naming the argument
    check_call("analyze", args, arguments, also=("progress", "options"))
    given = dict(arguments)
    options, progress = given.pop("options", None), given.pop("progress", None)
    check_progress(progress)
    return reviewable(model, options_of(options, given), progress)


def reviewable(
    model: str | os.PathLike | onnx.ModelProto,
    options: AnalysisOptions,
    progress: Callable[[str], None] | None = None,
    findings: bool = True,
) -> ReviewableAnalysis:
    """:func:`analyze` with its options typed (the command line's); without ``findings``
    (``--no-findings``) it keeps no :class:`~onnxroof.findings.Source`: it has no review, and the
    prepared model is freed at once."""
    analysis, source = analyze_for_review(model, options, progress)
    return ReviewableAnalysis(
        **{f.name: getattr(analysis, f.name) for f in fields(Analysis)}, source=source if findings else None
    )
