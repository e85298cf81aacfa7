"""A target's latency as a formula of the model's free dims (issue 22): the sum, over kernels, of
each kernel's slowest roof, plus the launches. This module fits it and words it;
``latency_ranges`` checks where it holds and fits the spill regimes.

Every kernel's FLOPs, DRAM bytes and on-chip bytes are exact polynomials (fitted like the
totals), and each roof's time is one of them over the roof's rate (and the kernel's efficiency).
In one dim, the largest of a kernel's terms is one polynomial per range of the dim, so the
latency is one polynomial per range, and the ranges say where each kernel's bound holds. In
several dims, each kernel's bound is stated as the inequality its terms give.

A kernel's efficiency follows its class, which its MACs, weights and outputs decide
(``kernels.reuse_class``), so it may change along the dims too (and on a target with a ``by_rows``
curve, its output rows: a curve in log(rows), so a kernel whose rows move it along the curve
between the samples is refused, and one held at a point of it has a formula that stops where its
rows reach another); a mixed-type kernel's compute is
each roof's FLOPs over that roof's peak. A kernel whose ops have a ``by_op`` figure
(``Target.op_efficiency``) runs its compute and on-chip roofs at that figure and its DRAM roof
at its class's: its terms are those roofs' times scaled by the ratio of the two, which must hold
at every sample (a formula is refused where its class, and so its figures, change with the dims).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING

from ..roofline.kernels import reuse_class
from ..roofline.placement import Bound
from ..roofline.targets import LOW_REUSE_MACS_PER_OUTPUT, LOW_REUSE_MACS_PER_WEIGHT
from .polynomials import (
    LARGE,
    Polynomial,
    common_factor,
    divided,
    envelope,
    evaluate,
    monomial_text,
    ordered,
    polynomial_text,
    si_text,
    span_text,
)

if TYPE_CHECKING:
    pass

BOUNDS = (Bound.COMPUTE, Bound.DRAM, Bound.ONCHIP)  # a kernel's roofs; on a tie, the first wins
BOUND_WORDS: dict[str, str] = {Bound.COMPUTE: "compute-bound", Bound.DRAM: "DRAM-bound", Bound.ONCHIP: "on-chip-bound"}
SHOWN_KERNELS = 6  # the kernels whose bound the text states: those with the largest shares


@dataclass
class KernelTerms:
    """Alike kernels (the same terms: one per layer): each roof's time in seconds at the full
    roofline, and the efficiency it runs at: one figure, or one per class when the kernel's
    class (:func:`kernels.reuse_class`) changes with the dims and the target gives the classes
    different efficiencies (a gemv at a short sequence, a gemm at a long one)."""

    name: str  # the first one's
    op_type: str
    count: int
    terms: dict[str, Polynomial]  # bound -> seconds at efficiency 1, as a polynomial with Fraction coefficients
    launch_s: Fraction
    efficiency: Fraction = Fraction(1)
    reuse: tuple[Polynomial, Polynomial, Polynomial] | None = None  # MACs, weights, outputs: the class decided by them
    class_efficiency: dict[str, Fraction] = field(default_factory=dict)  # class -> the target's efficiency

    def kernel_class(self, point: Sequence[int]) -> str | None:
        if self.reuse is None:
            return None
        return reuse_class(*(int(evaluate(p, point)) for p in self.reuse))

    def efficiency_at(self, point: Sequence[int]) -> Fraction:
        found = self.kernel_class(point)
        return self.class_efficiency[found] if found is not None else self.efficiency

    def seconds(self, point: Sequence[int]) -> Fraction:
        roof = max((evaluate(t, point) for t in self.terms.values()), default=Fraction(0))
        return self.launch_s + roof / self.efficiency_at(point)

    def bound(self, point: Sequence[int]) -> str:
        values = {b: evaluate(t, point) for b, t in self.terms.items()}
        return max(BOUNDS, key=lambda b: (values.get(b, -1), -BOUNDS.index(b))) if values else Bound.NONE

    def roof_time(self, point: Sequence[int], bound: str | None = None) -> Polynomial:
        """The time on its slowest roof (``bound``, by default the one at ``point``) over the
        efficiency of its class at ``point``, as a polynomial (launch aside)."""
        if not self.terms:
            return {}
        efficiency = self.efficiency_at(point)
        return {m: c / efficiency for m, c in self.terms[bound or self.bound(point)].items()}

    def class_cuts(self) -> set[int]:
        """Where the class may change, in one dim: at the roots of MACs - 8·weights and MACs -
        32·outputs (each cut and the value after it, for a tie that changes the class alone)."""
        if self.reuse is None:
            return set()
        macs, weights, outputs = self.reuse
        cuts: set[int] = set()
        for factor, other in ((LOW_REUSE_MACS_PER_WEIGHT, weights), (LOW_REUSE_MACS_PER_OUTPUT, outputs)):
            for piece in envelope([macs, {m: factor * c for m, c in other.items()}]):
                cuts.update((piece.start, piece.start + 1))
        return cuts


@dataclass
class Range:
    start: int
    end: int | None  # None: on and on
    polynomial: Polynomial  # the latency over the range, seconds
    bounds: Counter  # bound -> kernels bound by it there


@dataclass
class LatencyFormula:
    target: str
    dims: list[str]
    kernels: int = 0
    groups: list[KernelTerms] = field(default_factory=list)
    refuted: str | None = None
    ranges: list[Range] = field(default_factory=list)  # one dim only
    holds: str | None = None  # the condition the placement needs (nothing spills), in words
    holds_to: int | None = None  # the last value (every dim alike) it is known to hold at; None: no bound found
    kernel_names: list[str] = field(default_factory=list)  # in the model's order
    launches: int = 0  # kernels that pay the launch cost
    weights_on_chip_bytes: int = 0  # parameters kept on chip at the samples
    per_kernel: list[KernelTerms] = field(default_factory=list)  # in the model's order, before grouping
    spills: bool = False  # activations spill off chip at the fitted values (a stable spill plan)
    holds_from: int | None = None  # the first value (every dim alike) it holds at, when not 1
    holds_from_text: str | None = None
    stop_reason: str | None = None  # why it stops holding past holds_to
    beyond: LatencyFormula | None = None  # past a spill's start: the settled spill plan's formula
    # kernels whose fill of the target's parallel units changes with the dims (whole waves of
    # tiles, a step function): their compute is at the full roof, so the formula is a lower bound
    waves_left_out: list[str] = field(default_factory=list)

    def seconds(self, values: Mapping[str, int]) -> float | None:
        if self.refuted:
            return None
        point = tuple(values[d] for d in self.dims)
        return float(sum(g.count * g.seconds(point) for g in self.groups))

    def shares(self) -> dict[int, Fraction]:
        """Each group's largest share of the time on the roofs (launches aside): at every range's
        start and at large dims (one dim), or at every dim = 1, 11 and large (several)."""
        points = (
            [(r.start,) for r in self.ranges] + [(LARGE,)]
            if len(self.dims) == 1
            else [(1,) * len(self.dims), (11,) * len(self.dims), (LARGE,) * len(self.dims)]
        )
        share: dict[int, Fraction] = {}
        for point in points:
            roofs = [g.count * (g.seconds(point) - g.launch_s) for g in self.groups]  # launches are alike
            total = sum(roofs) or Fraction(1)
            for index, roof_s in enumerate(roofs):
                share[index] = max(share.get(index, Fraction(0)), roof_s / total)
        return share

    def dominant(self) -> list[KernelTerms]:
        """The kernels with a roof whose share of the latency is largest somewhere (up to
        :data:`SHOWN_KERNELS`, at least 5% each), in the model's order."""
        share = self.shares()
        best = [i for i in sorted(share, key=lambda i: -share[i]) if self.groups[i].terms and share[i] >= 0.05]
        return [self.groups[i] for i in sorted(best[:SHOWN_KERNELS])]

    def switching(self) -> list[KernelTerms]:
        """The kernels whose bound changes with the dims, largest share first."""
        share = self.shares()
        large = (LARGE,) * len(self.dims)
        end = self.holds_to if self.stop_reason else None
        changes = [
            i
            for i, g in enumerate(self.groups)
            if g.terms
            and (
                len(bound_pieces(g, self.holds_from or 1, end)) > 1
                if len(self.dims) == 1
                else g.bound((1,) * len(self.dims)) != g.bound(large)
            )
        ]
        return [self.groups[i] for i in sorted(changes, key=lambda i: -share[i])]

    def at_large_dims(self) -> Polynomial:
        """The latency with each kernel bound, and of the class, it is at large dims (several dims)."""
        large = (LARGE,) * len(self.dims)
        polynomial: Polynomial = {}
        for group in self.groups:
            add_into(polynomial, {(0,) * len(self.dims): group.launch_s}, group.count)
            add_into(polynomial, group.roof_time(large), group.count)
        return {m: c for m, c in polynomial.items() if c}

    def bound_text(self, group: KernelTerms) -> str:
        """:func:`bound_text` over the range the formula holds on."""
        return bound_text(group, self.dims, self.holds_from or 1, self.holds_to if self.stop_reason else None)

    def shown_ranges(self) -> list[tuple[str, str]]:
        """(``context 1 to 79``, the latency there to 3 figures) per range, adjacent ranges whose
        formulas read the same merged (the kernels that switch there are small)."""
        merged: list[list] = []
        for r in self.ranges:
            text = polynomial_text(r.polynomial, self.dims, "s")
            if merged and merged[-1][2] == text:
                merged[-1][1] = r.end
            else:
                merged.append([r.start, r.end, text])
        return [(span_text(self.dims[0], start, end), text) for start, end, text in merged]

    def to_dict(self) -> dict:
        if self.refuted:
            return {"target": self.target, "text": None, "refuted": self.refuted}

        def entry(polynomial: Polynomial) -> dict:
            return {
                "text": polynomial_text(polynomial, self.dims, "s"),
                "terms": [{"seconds": float(c), "powers": dict(zip(self.dims, m))} for m, c in ordered(polynomial)],
            }

        dominant = self.dominant()
        return {
            "target": self.target,
            "kernels": self.kernels,
            "holds": self.holds,
            "holds_from": self.holds_from,
            "holds_to": self.holds_to,
            # "bound": kernels' whole waves of tiles left out (waves_left_out), so at least this
            "kind": "bound" if self.waves_left_out else "exact",
            "waves_left_out": self.waves_left_out,
            "ranges": [
                {"from": r.start, "to": r.end, **entry(r.polynomial), "bounds": dict(r.bounds)} for r in self.ranges
            ],
            "at_large_dims": None if len(self.dims) == 1 else entry(self.at_large_dims()),
            "beyond": self.beyond.to_dict() if self.beyond is not None else None,
            "kernel_bounds": [
                {"kernel": g.name, "op": g.op_type, "count": g.count, "bound": self.bound_text(g)}
                for g in dominant + [g for g in self.switching() if g not in dominant]
            ],
        }


def add_into(total: Polynomial, polynomial: Polynomial, times: int) -> None:
    for monomial, coefficient in polynomial.items():
        total[monomial] = total.get(monomial, 0) + times * coefficient


def kernel_label(group: KernelTerms) -> str:
    """``/lm_head/MatMul (MatMul)``; ``45 like /layers.0/o/MatMul (MatMul)`` for alike kernels."""
    return (f"{group.count} like " if group.count > 1 else "") + f"{group.name} ({group.op_type})"


def bound_text(group: KernelTerms, dims: list[str], start: int = 1, end: int | None = None) -> str:
    """Where the kernel's bound holds: ``DRAM-bound to context = 1,234, compute-bound from 1,235``
    (one dim, over ``start``..``end``, the range the formula holds on), or the inequality between
    its two largest terms (several); and where its class changes, when that changes its efficiency."""
    return _bounds_text(group, dims, start, end) + _classes_text(group, dims)


def _classes_text(group: KernelTerms, dims: list[str]) -> str:
    if group.reuse is None or len(set(group.class_efficiency.values())) < 2:
        return ""
    if len(dims) == 1:
        cuts = sorted(group.class_cuts() | {1})
        spans: list[list] = []
        for start in cuts:
            found = group.kernel_class((start,))
            if spans and spans[-1][0] == found:
                continue
            spans.append([found, start])
        if len(spans) < 2:
            return ""
        parts = [
            f"{name} (efficiency {float(group.class_efficiency[name]):.3g}) "
            + (f"to {dims[0]} = {spans[i + 1][1] - 1:,}" if i + 1 < len(spans) else f"from {start:,} on")
            for i, (name, start) in enumerate(spans)
        ]
        return "; runs as " + ", ".join(parts)
    small, large = group.kernel_class((1,) * len(dims)), group.kernel_class((LARGE,) * len(dims))
    return f"; runs as {small} at every dim = 1, {large} at large dims" if small != large else ""


def bound_pieces(group: KernelTerms, start: int = 1, end: int | None = None) -> list:
    """The ranges of one dim over which each of the kernel's roofs is the slowest, within
    ``start``..``end`` (``Piece.index`` into its terms, in order)."""
    if not group.terms:
        return []
    return [
        replace(p, start=max(p.start, start), end=p.end if end is None else min(p.end or end, end))
        for p in envelope(list(group.terms.values()))
        if (p.end is None or p.end >= start) and (end is None or p.start <= end)
    ]


def _bounds_text(group: KernelTerms, dims: list[str], start: int = 1, end: int | None = None) -> str:
    bounds = list(group.terms)
    if not bounds:
        return "launch only"
    if len(dims) == 1:
        pieces = bound_pieces(group, start, end)
        if len(pieces) == 1:
            return f"{BOUND_WORDS[bounds[pieces[0].index]]} throughout"
        parts = []
        for piece in pieces:
            words = BOUND_WORDS[bounds[piece.index]]
            if piece is pieces[0]:
                parts.append(f"{words} to {dims[0]} = {piece.end:,}")
            elif piece.end is None:
                parts.append(f"{words} from {piece.start:,} on")
            elif piece.end == piece.start:
                parts.append(f"{words} at {piece.start:,}")
            else:
                parts.append(f"{words} from {piece.start:,} to {piece.end:,}")
        return ", ".join(parts)
    small, large = group.bound((1,) * len(dims)), group.bound((LARGE,) * len(dims))
    if small == large:
        return f"{BOUND_WORDS[large]} (at every dim = 1 and at large dims)"
    where = _inequality(group.terms[large], group.terms[small], dims)
    return f"{BOUND_WORDS[large]} where {where}, else {BOUND_WORDS[small]}"


def _inequality(larger: Polynomial, smaller: Polynomial, dims: list[str]) -> str:
    """``larger >= smaller`` simplified: the common monomial divided out, the positive terms on the
    left scaled to a leading 1: ``batch·seq ≥ 156``."""
    difference = {m: larger.get(m, 0) - smaller.get(m, 0) for m in set(larger) | set(smaller)}
    difference = divided(difference, common_factor(difference))
    left = {m: c for m, c in difference.items() if c > 0}
    right = {m: -c for m, c in difference.items() if c < 0}
    lead = max(left.items(), key=lambda mc: (sum(mc[0]), mc[1]))[1]
    scale = lambda p: {m: c / lead for m, c in p.items()}  # noqa: E731
    return f"{_real_text(scale(left), dims)} ≥ {_real_text(scale(right), dims)}"


def _real_text(polynomial: Polynomial, dims: list[str]) -> str:
    terms = []
    for monomial, coefficient in sorted(polynomial.items(), key=lambda mc: -sum(mc[0])):
        number = f"{float(coefficient):.4g}"
        factors = monomial_text(monomial, dims)
        terms.append(factors if factors and number == "1" else "·".join(p for p in (number, factors) if p))
    return " + ".join(terms) or "0"


def point_text(dims: list[str], point: tuple[int, ...]) -> str:
    return ", ".join(f"{d} = {v}" for d, v in zip(dims, point))


def latency_lines(formula: LatencyFormula, columns: int = 120) -> list[str]:
    """The terminal block of one target: the latency over each range of the dim (ranges whose
    formulas agree to 3 figures are merged: the kernels that switch there are small), the
    dominant kernels' bounds, the kernels whose bound changes, and the range it holds over."""
    import textwrap

    def wrap(text: str) -> list[str]:
        return textwrap.wrap(text, columns, subsequent_indent="      ", break_on_hyphens=False)

    dims = formula.dims
    if formula.refuted:
        return wrap(f"  latency on {formula.target}: not a formula: {formula.refuted}")
    launch = next((g.launch_s for g in formula.groups if g.launch_s), None)
    lines = wrap(
        f"  latency on {formula.target}: the sum over its {formula.kernels} kernels of each one's slowest roof"
        + (f", {formula.launches} launches of {si_text(float(launch), 's')} included" if launch else "")
        + " (3 figures)"
        + (
            f"; at least this: {len(formula.waves_left_out)} kernel(s) fill a share of the parallel units "
            "that changes with the dims (whole waves of tiles), left out"
            if formula.waves_left_out
            else ""
        )
    )
    if len(dims) == 1:
        for span, text in formula.shown_ranges():
            lines += wrap(f"    {span}: {text}")
    else:
        large = polynomial_text(formula.at_large_dims(), dims, "s")
        lines += wrap(f"    at large dims (each kernel bound as there): {large}")
    dominant = formula.dominant()
    for group in dominant:
        lines += wrap(f"    {kernel_label(group)}: {formula.bound_text(group)}")
    switching = [g for g in formula.switching() if g not in dominant]
    for group in switching[: SHOWN_KERNELS - 2]:
        lines += wrap(f"    {kernel_label(group)}, small: {formula.bound_text(group)}")
    if len(switching) > SHOWN_KERNELS - 2:
        lines.append(f"    and {len(switching) - SHOWN_KERNELS + 2} more small kernels whose bound changes")
    if formula.holds:
        lines += wrap(f"    {formula.holds}")
    if formula.beyond is not None:
        beyond = formula.beyond
        lines.append("    past it, once the spill plan settles:")
        if len(dims) == 1:
            for span, text in beyond.shown_ranges():
                lines += wrap(f"      {span}: {text}")
        else:
            lines += wrap(f"      at large dims: {polynomial_text(beyond.at_large_dims(), dims, 's')}")
        lines += wrap(f"      {beyond.holds}")
    return lines
