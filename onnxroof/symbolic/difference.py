"""``diff --symbolic``: the change in each formula, head - base, term by term (issue 22), and in
each target's latency as ranges of the one dim."""

from __future__ import annotations

from .formulas_record import Formulas
from .latency_formulas import LatencyFormula
from .polynomials import piecewise_difference


def difference(base: Formulas, head: Formulas) -> Formulas:
    """head - base, term by term, where both are in the same dims (``diff --symbolic``)."""
    if base.dims != head.dims:
        from ..core.errors import UsageError

        raise UsageError(
            f"diff --symbolic: the models' free dims differ ({', '.join(base.dims) or 'none'} against "
            f"{', '.join(head.dims) or 'none'}); bind the ones one of them lacks with --dim"
        )
    result = Formulas(head.dims, notes=base.notes + [n for n in head.notes if n not in base.notes], steps=head.steps)
    for metric in head.polynomials:
        b, h = base.polynomials.get(metric), head.polynomials.get(metric)
        if (
            len(head.dims) == 1
            and (metric in base.pieces or metric in head.pieces)
            and None not in (base.pieces_of(metric), head.pieces_of(metric))
        ):
            result.polynomials[metric] = None
            result.pieces[metric] = piecewise_difference(base.pieces_of(metric), head.pieces_of(metric))  # type: ignore[arg-type]
            continue
        if b is None or h is None:
            result.polynomials[metric] = None
            result.refuted[metric] = base.refuted.get(metric) or head.refuted.get(metric, "")
            continue
        result.polynomials[metric] = {
            m: h.get(m, 0) - b.get(m, 0) for m in b.keys() | h.keys() if h.get(m, 0) != b.get(m, 0)
        }
    for b_latency, h_latency in zip(base.latency, head.latency):  # the same targets, in order
        result.latency_changes.append((h_latency.target, _latency_change(b_latency, h_latency)))
    return result


def _latency_change(base: LatencyFormula, head: LatencyFormula) -> list | str:
    """head - base as ranges of the one dim, over the values both formulas hold on; or why not."""
    if base.refuted or head.refuted:
        return f"no formula for {'the base' if base.refuted else 'the head'}: {base.refuted or head.refuted}"
    if len(head.dims) != 1:
        return "a change in several dims is given per model: run summary --symbolic on each"
    pieces = []
    for formula in (base, head):
        ranges = [(r.start, r.end, r.polynomial) for r in formula.ranges]
        if formula.holds_to is not None and formula.stop_reason:
            ranges = [(s_, min(e, formula.holds_to) if e is not None else formula.holds_to, p) for s_, e, p in ranges]
        pieces.append(ranges)
    return piecewise_difference(pieces[0], pieces[1])
