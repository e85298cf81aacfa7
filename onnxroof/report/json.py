"""The JSON output text: the document written in chunks (``summary --format json``) and the
sweep's document (``report --sweep ... --format json``). The document itself is built by
:func:`onnxroof.result.to_document`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from json.encoder import encode_basestring_ascii as _string  # what json.dumps writes for a str
from typing import TYPE_CHECKING

from ..core.version import __version__
from ..result import Encoded, to_document
from ..result.entries import compact_json

if TYPE_CHECKING:
    from ..findings import Review
    from ..result import Analysis


def document(analysis: Analysis, review: Review | None = None, encoded: bool = False) -> dict:
    """The document (:func:`onnxroof.result.to_document`) with the review's findings, ranked, and
    each target's memory fit; without a review, none."""
    if review is None:
        return to_document(analysis, encoded)
    fits = [review.fit(report) for report in analysis.targets]
    return to_document(
        analysis,
        encoded,
        [finding.to_dict() for finding in review.findings],
        [fit.to_dict() if fit is not None else None for fit in fits],
    )


def compact_chunks(value: object) -> Iterator[str]:
    """``json.dumps(value, separators=(",", ":"))``, byte for byte, in chunks, for a document
    whose dicts (and lists of dicts) may hold :class:`Encoded` lists."""
    if isinstance(value, Encoded):
        yield from value.chunks()
    elif isinstance(value, dict) and value and all(type(key) is str for key in value):
        separator = "{"
        for key, item in value.items():
            yield f"{separator}{_string(key)}:"
            separator = ","
            yield from compact_chunks(item)
        yield "}"
    elif isinstance(value, list) and value and isinstance(value[0], dict):  # the targets; long lists are Encoded
        separator = "["
        for item in value:
            yield separator
            separator = ","
            yield from compact_chunks(item)
        yield "]"
    else:
        yield compact_json(value)


def document_json(
    analysis: Analysis, compact: bool, extra: dict | None = None, review: Review | None = None
) -> Iterable[str]:
    """The document as JSON text, in chunks to write one after the other: indented, or on one
    line for a big model (indenting makes Python's encoder ten times slower). ``extra``: more
    top-level entries (``formulas``); ``review``: the findings stage's (none without it)."""
    if compact:
        yield from compact_chunks({**document(analysis, review, encoded=True), **(extra or {})})
        yield "\n"
    else:
        # a document is plain values from an analysis, and no container in it holds itself: skip
        # the encoder's cycle check
        yield json.dumps({**document(analysis, review), **(extra or {})}, indent=2, check_circular=False) + "\n"


def grouped_document(analysis: Analysis, by: str, depth: int | None = None, review: Review | None = None) -> dict:
    """``summary --by module|op --format json``: the document without its node list, with the
    module tree (``modules``: each module's sums and children) or the op types (``ops``)."""
    from ..compare.modules import has_scopes, module_tree, op_breakdown

    grouped = document(analysis, review)
    grouped.pop("nodes", None)
    if by == "module" and has_scopes(analysis):
        grouped["modules"] = module_tree(analysis, depth).to_dict()
    else:
        if by == "module":
            grouped["notes"] = ["the node names carry no module scopes: grouped by op type"]
        grouped["ops"] = [entry.to_dict() for entry in op_breakdown(analysis)]
    return grouped


def sweep_document(points) -> dict:
    """One full document per sweep point, with the point's values."""
    return {
        "schema": "onnxroof-sweep/1",
        "version": __version__,
        "symbols": list(points[0].values) if points else [],
        "points": [{"values": point.values, "label": point.label, **to_document(point.analysis)} for point in points],
    }
