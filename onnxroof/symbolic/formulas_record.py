"""The formulas of one model's costs (:class:`Formulas`, what :func:`formulas.formulas` fits):
their text, their values at given dims, their JSON, and the terminal block ``summary --symbolic``
prints (:func:`formulas_lines`)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.text import printable
from .fit_steps import points_text
from .latency_formulas import LatencyFormula, latency_lines
from .latency_ranges import FAR
from .polynomials import Pieces, Polynomial, evaluate, ordered, polynomial_text, reading, span_text

if TYPE_CHECKING:
    from ..result import Analysis

SAMPLES = (2, 3, 5, 7)  # values per free dim: fits a degree of up to 3 in each (attention: seq^2)
CHECK = 11  # every free dim at this value: the one extra analysis that must agree
COLUMNS = 120  # the terminal width the formulas wrap to
PIECES_SHOWN = 4  # a piecewise peak's candidates listed, in several dims
LABELS = {
    "macs": "MACs",
    "flops": "FLOPs",
    "params": "parameters",
    "weight_bytes": "weight bytes read",
    "activation_bytes": "activation bytes",
    "peak_bytes": "peak activations (model order)",
    "kv_cache_bytes": "KV cache bytes",
}


@dataclass
class Formulas:
    """Each metric as a polynomial (monomial -> integer coefficient) in ``dims``, or None with the
    reason in ``refuted`` when the check disagreed. A peak that is the largest of several
    polynomials is in ``pieces`` instead (one per range of the one dim) or, in several dims, in
    ``candidates`` (those no other one dominates, the largest at large dims first)."""

    dims: list[str]
    polynomials: dict[str, Polynomial | None] = field(default_factory=dict)
    refuted: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the formulas assume (a data-dependent size's bound)
    pieces: dict[str, Pieces] = field(default_factory=dict)
    candidates: dict[str, list[Polynomial]] = field(default_factory=dict)
    latency: list[LatencyFormula] = field(default_factory=list)  # one per target asked for
    latency_changes: list[tuple[str, list | str]] = field(default_factory=list)  # diff: target -> ranges, or why not
    held: dict[str, int] = field(default_factory=dict)  # dims held fixed: they feed sizes non-polynomially
    limits: dict[str, str] = field(default_factory=dict)  # metric -> the range a formula holds over, when bounded
    # the first analysis of the grid that left nodes not counted: its warnings say why (an invalid
    # Conv), and the command line refuses as summary does when it counted nothing
    uncounted: Analysis | None = field(default=None, repr=False, compare=False)
    steps: dict[str, int] = field(default_factory=dict)  # dim -> the step its fit points are multiples of
    context: Analysis | None = field(default=None, repr=False, compare=False)  # the first fit's: the dims it assumed

    def __str__(self) -> str:
        """The text `summary --symbolic` prints: print(onnxroof.formulas(...)) shows the formulas."""
        return "\n".join(formulas_lines(self))

    def __repr__(self) -> str:
        metrics = ", ".join(m for m in self.polynomials if self.polynomials[m] is not None or m in self.pieces)
        return f"<onnxroof.Formulas in {', '.join(self.dims) or 'no free dim'}: {metrics}>"

    def text(self, metric: str) -> str:
        polynomial = self.polynomials.get(metric)
        if metric in self.pieces:
            return pieces_text(self.pieces[metric], self.dims)
        if metric in self.candidates:
            return candidates_text(self.candidates[metric], self.dims)
        if polynomial is None:
            return f"not a polynomial in {', '.join(self.dims)}: {self.refuted.get(metric, '')}"
        limit = f" ({self.limits[metric]})" if metric in self.limits else ""
        return polynomial_text(polynomial, self.dims) + limit

    def pieces_of(self, metric: str) -> Pieces | None:
        """The metric as ranges of the one dim (one range when it is one polynomial); None when
        it is no formula."""
        if metric in self.pieces:
            return self.pieces[metric]
        polynomial = self.polynomials.get(metric)
        return None if polynomial is None else [(1, None, polynomial)]

    def reading(self, metric: str) -> str | None:
        """The MACs' and the peak's :func:`reading`; a piecewise peak's is its last piece's (one
        dim) or its largest candidate's at large dims."""
        if metric not in ("macs", "peak_bytes"):
            return None
        polynomial: Polynomial | None
        if metric in self.pieces:
            polynomial = self.pieces[metric][-1][2]
        elif metric in self.candidates:
            polynomial = self.candidates[metric][0]
        else:
            polynomial = self.polynomials.get(metric)
        return reading(polynomial, self.dims) if polynomial is not None else None

    def evaluate(self, metric: str, values: Mapping[str, int]) -> int | None:
        point = tuple(values[d] for d in self.dims)  # (evaluate() types int | Fraction: the ignores below)
        if metric in self.pieces or metric in self.candidates:  # the largest of them is the value
            choices = [p for _, _, p in self.pieces[metric]] if metric in self.pieces else self.candidates[metric]
            return max(evaluate(p, point) for p in choices)  # type: ignore[return-value]
        polynomial = self.polynomials.get(metric)
        return None if polynomial is None else evaluate(polynomial, point)  # type: ignore[return-value]

    def to_dict(self) -> dict:
        def entry(metric: str) -> dict:
            if metric in self.pieces or metric in self.candidates:
                given = self.pieces.get(metric)
                pieces: list[tuple[int | None, int | None, Polynomial]] = (
                    list(given) if given else [(None, None, p) for p in self.candidates[metric]]
                )
                return {
                    "text": self.text(metric),
                    "largest_of": [
                        {"from": start, "to": end, "text": polynomial_text(p, self.dims), "terms": _terms(p, self.dims)}
                        for start, end, p in pieces
                    ],
                }
            polynomial = self.polynomials.get(metric)
            if polynomial is None:
                return {"text": None, "refuted": self.refuted[metric]}
            return {"text": self.text(metric), "terms": _terms(polynomial, self.dims), "holds": self.limits.get(metric)}

        return {
            "dims": self.dims,
            "held": self.held,
            "steps": self.steps,
            "notes": self.notes,
            "formulas": {metric: entry(metric) for metric in self.polynomials},
            "latency": [formula.to_dict() for formula in self.latency],
        }


def _terms(polynomial: Polynomial, dims: list[str]) -> list[dict]:
    # a fit at multiples of a step has fractional coefficients: a float (their denominators are powers of two)
    return [
        {"coefficient": c if isinstance(c, int) else float(c), "powers": dict(zip(dims, m))}
        for m, c in ordered(polynomial)
    ]


def pieces_text(pieces: Pieces, dims: list[str]) -> str:
    """``A for seq 1 to 86; B for seq 87 on``."""
    return "; ".join(f"{polynomial_text(p, dims)} for {span_text(dims[0], start, end)}" for start, end, p in pieces)


def candidates_text(candidates: list[Polynomial], dims: list[str]) -> str:
    """``the largest of: A; B`` (several dims)."""
    shown = [polynomial_text(p, dims) for p in candidates[:PIECES_SHOWN]]
    more = f" (and {len(candidates) - PIECES_SHOWN} more)" if len(candidates) > PIECES_SHOWN else ""
    return f"the largest of: {'; '.join(shown)}{more}"


def label(metric: str) -> str:
    return f"MACs of {metric.split('@', 1)[1]}" if metric.startswith("macs@") else LABELS[metric]


def formulas_lines(found: Formulas, change: bool = False) -> list[str]:
    """The terminal block: one metric per line, in the model's own dim names."""
    if not found.dims:
        return [
            "Formulas: no input dim is left free (the model fixes each, or a flag binds it): the costs are "
            "summary's numbers"
        ]
    held = "".join(f", {d} held at {v}" for d, v in found.held.items())
    points = points_text(found.dims, found.steps, SAMPLES, CHECK, FAR)
    lines = textwrap.wrap(
        f"{'Change in the formulas' if change else 'Formulas'} in {', '.join(found.dims)} (exact; {points}{held})",
        COLUMNS,
        subsequent_indent="  ",
        break_on_hyphens=False,
    )
    width = min(40, max(len(label(m)) for m in found.polynomials))
    for metric in found.polynomials:
        polynomial = found.polynomials[metric]
        if metric.startswith("macs@") and polynomial == {}:
            continue  # a module without multiply-adds: nothing to say
        indent = " " * (width + 6)  # under the formula, past "label  = "
        lines += textwrap.wrap(
            f"  {label(metric):{width}}  {'+=' if change else '='} {found.text(metric)}",
            COLUMNS,
            subsequent_indent=indent,
            break_on_hyphens=False,
        )
        if not change and (words := found.reading(metric)):
            lines += textwrap.wrap(f"({words})", COLUMNS, initial_indent=indent, subsequent_indent=indent)
    for formula in found.latency:
        lines += latency_lines(formula, COLUMNS)
    for target, ranges in found.latency_changes:
        text = (
            ranges
            if isinstance(ranges, str)
            else "; ".join(
                f"{polynomial_text(p, found.dims, 's')} for {span_text(found.dims[0], start, end)}"
                for start, end, p in ranges
            )
        )
        lines += textwrap.wrap(
            f"  latency on {target} += {text}", COLUMNS, subsequent_indent=" " * 6, break_on_hyphens=False
        )
    for note in found.notes:
        lines += textwrap.wrap(f"  note: {note}", COLUMNS, subsequent_indent="    ")
    return [printable(line) for line in lines]  # the dim and node names are the model's
