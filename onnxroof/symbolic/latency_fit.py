"""Fitting a target's latency formula (issue 22) to its placements at the samples: each
kernel's FLOPs, DRAM and on-chip bytes fitted exactly as polynomials of the free dims, over its
roofs' rates; its launch, parallel fill and efficiency checked to be the same everywhere (or to
follow its class); alike kernels grouped, and in one dim the ranges where every kernel's bound
holds. ``latency_formulas`` holds the records and words them; ``latency_ranges`` checks where a
formula holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..roofline.kernels import REUSE_CLASSES
from ..roofline.placement import Bound
from ..roofline.targets import EFFICIENCY_CLASSES
from .latency_formulas import KernelTerms, LatencyFormula, Range, add_into, bound_pieces, point_text
from .polynomials import Polynomial, evaluate, fit

if TYPE_CHECKING:
    from ..roofline.placement import TargetReport


def fitted(
    target: str,
    dims: list[str],
    reports: Mapping[tuple[int, ...], TargetReport],
    samples: tuple[int, ...],
    check: tuple[int, ...],
) -> LatencyFormula:
    """The latency formula the placements ``reports`` (at every point of the grid of ``samples``
    per dim, and at ``check``) give: each kernel's work fitted exactly, alike kernels grouped,
    and in one dim the ranges; ``refuted`` says why not (a kernel that changes between the
    samples). ``latency_ranges`` checks where it holds."""
    result = LatencyFormula(target, dims)
    grid = [p for p in reports if p != check]
    names = {p: [k.name for k in r.nodes] for p, r in reports.items()}
    if len({tuple(n) for n in names.values()}) > 1:
        result.refuted = "the kernels differ between the dims' values (fusion decided by sizes)"
        return result
    spilled = [p for p, r in reports.items() if r.spill_bytes]
    result.spills = bool(spilled)
    fit_at = _Samples(dims, reports, grid, samples, check, spilled)
    try:
        kernels = [
            _kernel_terms(fit_at, position, name, result.waves_left_out) for position, name in enumerate(names[grid[0]])
        ]
    except _Refused as refused:
        result.refuted = str(refused)
        return result
    first = fit_at.first
    result.kernels = len(kernels)
    result.kernel_names = names[grid[0]]
    result.launches = sum(1 for k in first.nodes if k.placement.overhead_s)
    result.weights_on_chip_bytes = first.weights_on_chip_bytes
    result.per_kernel = kernels
    result.groups = _alike(kernels)
    if len(dims) == 1:
        result.ranges = _ranges(result.groups)
    return result


class _Refused(Exception):
    """Why the placements give no formula (``LatencyFormula.refuted``)."""


@dataclass(frozen=True)
class _Samples:
    """The placements a formula is fitted to: one per point of the grid, and one at ``check``."""

    dims: list[str]
    reports: Mapping[tuple[int, ...], TargetReport]
    grid: list[tuple[int, ...]]  # the points fitted
    samples: tuple[int, ...]  # each dim's values on the grid
    check: tuple[int, ...]  # the point a fit is checked at
    spilled: list[tuple[int, ...]]  # the points whose activations spill off chip

    @property
    def first(self) -> TargetReport:
        return self.reports[self.grid[0]]

    def fits(self, read: Callable[[Any], int], at: Mapping) -> Polynomial | None:
        """The polynomial through ``read`` of ``at[point]`` at the grid's points, if it also holds at ``check``."""
        polynomial = fit(self.grid, [read(at[p]) for p in self.grid], self.samples)
        if polynomial is None or evaluate(polynomial, self.check) != read(at[self.check]):
            return None
        return polynomial


def _kernel_terms(fit_at: _Samples, position: int, name: str, waves_left_out: list[str]) -> KernelTerms:
    """The kernel at ``position``: its roofs' times as polynomials, its launch and efficiency
    (adding its name to ``waves_left_out`` when its parallel fill changes with the dims)."""
    kernel_of = {p: r.nodes[position] for p, r in fit_at.reports.items()}
    placements = {p: k.placement for p, k in kernel_of.items()}
    launch = _launch(fit_at.dims, name, placements)
    efficiencies = {q.efficiency for q in placements.values()}
    _refuse_rows_curve(fit_at.first, position, name, placements, efficiencies)
    fill = _parallel_fill(name, placements, waves_left_out)
    terms = _roof_terms(fit_at, name, kernel_of, fill)
    by_op = {q.op_efficiency for q in placements.values()}
    if by_op != {None} and (len(by_op) > 1 or len(efficiencies) > 1):
        raise _Refused(f"kernel {name}: its by_op and class efficiencies change with the dims")
    varies = len(efficiencies) > 1
    kernel = KernelTerms(
        name,
        fit_at.first.nodes[position].op_type,
        1,
        terms,
        Fraction(launch) if terms or launch else Fraction(0),
        Fraction(efficiencies.pop()),
    )
    op_efficiency = by_op.pop()
    if op_efficiency is not None:  # the op's figure on the near roofs: their times over it, not the class's
        has_onchip = bool(fit_at.first.target.onchip_bytes_per_s)
        _scale_near_terms(terms, kernel.efficiency / Fraction(op_efficiency), has_onchip)
        return kernel
    _follow_class(fit_at, kernel, kernel_of, varies)
    return kernel


def _launch(dims: list[str], name: str, placements: Mapping) -> float:
    """The kernel's launch overhead: the same at every point, or refused."""
    launches = {q.overhead_s for q in placements.values()}
    if len(launches) > 1:
        with_launch = next(p for p in placements if placements[p].overhead_s)
        without = next(p for p in placements if not placements[p].overhead_s)
        raise _Refused(
            f"kernel {name} launches at {point_text(dims, with_launch)} but not at {point_text(dims, without)}"
        )
    return launches.pop()


def _refuse_rows_curve(
    first: TargetReport, position: int, name: str, placements: Mapping, efficiencies: set[float]
) -> None:
    """A curve in log(rows) is no polynomial: refuse, do not fit it."""
    rows = {q.efficiency_rows for q in placements.values()} - {None}
    if rows and len(efficiencies) > 1:
        curve = first.target.rows_curve(
            first.nodes[position].placement.kernel_class, first.nodes[position].placement.roof
        )
        raise _Refused(
            f"kernel {name}'s efficiency follows its output rows ({min(rows):,} to {max(rows):,} at "
            f"the fitted values) along efficiency.{curve}.by_rows, a curve in log(rows): no "
            "polynomial in the dims"
        )


def _parallel_fill(name: str, placements: Mapping, waves_left_out: list[str]) -> Fraction:
    """The share of the compute roof the kernel's tiles fill: the same everywhere, or 1."""
    fills = {q.parallel_fraction for q in placements.values()}
    if len(fills) > 1:  # whole waves of tiles: a step function of the sizes, no polynomial
        waves_left_out.append(name)  # at the full roof: the formula is a lower bound
        return Fraction(1)
    return Fraction(fills.pop())  # the same share everywhere: the compute roof is lower by it


def _roof_terms(fit_at: _Samples, name: str, kernel_of: Mapping, fill: Fraction) -> dict[str, Polynomial]:
    """bound -> the kernel's seconds on that roof at efficiency 1, each work fitted exactly."""
    target = fit_at.first.target
    rates: dict[str, Fraction | None] = {
        Bound.DRAM: Fraction(target.dram_bytes_per_s.value),
        Bound.ONCHIP: Fraction(target.onchip_bytes_per_s.value) if target.onchip_bytes_per_s else None,
    }
    # a mixed-type kernel (int8 with its fp32 dequantization) runs each roof's FLOPs at that
    # roof's peak: its compute time is the sum of each share over its peak
    roofs = sorted({r for k in kernel_of.values() for r in k.flops_by_roof})
    works: dict[tuple[str, str | None], Callable[[Any], int]] = {
        (Bound.COMPUTE, roof): _flops_on(roof) for roof in roofs
    }
    works[(Bound.DRAM, None)] = lambda k: k.placement.dram_bytes
    works[(Bound.ONCHIP, None)] = lambda k: k.placement.onchip_bytes
    terms: dict[str, Polynomial] = {}
    for (bound, roof), read in works.items():
        polynomial = fit_at.fits(read, kernel_of)
        if polynomial is None:
            work = f"FLOPs on the {roof} roof" if roof else f"{bound.replace('onchip', 'on-chip')} bytes"
            raise _Refused(
                f"activations spill off chip at {point_text(fit_at.dims, fit_at.spilled[0])}, and the "
                "spill plan changes between the fitted values"
                if fit_at.spilled and bound == Bound.DRAM
                else f"kernel {name}'s {work} are no polynomial in {', '.join(fit_at.dims)}"
            )
        rate = Fraction(target.peak_ops_per_s[roof].value) * fill if roof else rates[bound]
        if polynomial and rate:
            add_into(terms.setdefault(bound, {}), {m: Fraction(c) / rate for m, c in polynomial.items()}, 1)
    return terms


def _flops_on(roof: str) -> Callable[[Any], int]:
    return lambda kernel: kernel.flops_by_roof.get(roof, 0)


def _follow_class(fit_at: _Samples, kernel: KernelTerms, kernel_of: Mapping, varies: bool) -> None:
    """Where the target's gemv, depthwise and gemm efficiencies differ, the efficiency follows the
    class the kernel's reuse decides, also past the samples (attention's AV is depthwise below 32
    attended positions). ``varies``: the kernel's efficiency is not the same at every point."""
    target = fit_at.first.target
    target_applies = all(
        k.placement.efficiency == target.efficiency_of(k.placement.kernel_class) for k in kernel_of.values()
    )
    by_reuse = len({target.efficiency_of(c) for c in REUSE_CLASSES}) > 1 and target_applies
    if varies or (by_reuse and all(k.reuse is not None for k in kernel_of.values())):
        refused = _class_efficiency(kernel, kernel_of, fit_at.grid, fit_at.check, fit_at.samples, target)
        if refused and varies:
            raise _Refused(f"kernel {kernel.name}: {refused}")
        if refused:
            kernel.reuse = None


def _scale_near_terms(terms: dict[str, Polynomial], ratio: Fraction, has_onchip: bool) -> None:
    """Scale the compute and on-chip terms (and DRAM's on a target with no on-chip level) by
    ``ratio`` (class efficiency / op efficiency), so that over the class's efficiency they give
    the time at the op's, as ``placement.roofline`` does."""
    for bound, polynomial in terms.items():
        if bound != Bound.DRAM or not has_onchip:
            terms[bound] = {m: c * ratio for m, c in polynomial.items()}


def _class_efficiency(
    kernel: KernelTerms, kernel_of: Mapping, grid: list, check: tuple, samples: tuple, target
) -> str | None:
    """Give ``kernel`` its class's efficiency as a function of the dims: fit the MACs, weights and
    outputs its class is decided by, and check that the class they give at every sample is the
    one the placement ran at. Returns why not, or None."""
    if any(kernel_of[p].reuse is None for p in grid + [check]):
        return "its efficiency changes with the dims, not by its class"
    if any(kernel_of[p].placement.efficiency_rows is not None for p in grid + [check]):
        return "its efficiency follows its output rows (a by_rows curve) as well as its class"
    reuse = []
    for index in range(3):
        polynomial = fit(grid, [kernel_of[p].reuse[index] for p in grid], samples)
        if polynomial is None or evaluate(polynomial, check) != kernel_of[check].reuse[index]:
            return "the figures its class is decided by are no polynomial"
        reuse.append(polynomial)
    kernel.reuse = (reuse[0], reuse[1], reuse[2])
    kernel.class_efficiency = {name: Fraction(target.efficiency_of(name)) for name in EFFICIENCY_CLASSES}
    for point in grid + [check]:
        if kernel.efficiency_at(point) != Fraction(kernel_of[point].placement.efficiency):
            return "its efficiency is not its class's"
    return None


def _alike(kernels: list[KernelTerms]) -> list[KernelTerms]:
    groups: dict[tuple, KernelTerms] = {}
    for kernel in kernels:
        reuse = tuple(tuple(sorted(p.items())) for p in kernel.reuse) if kernel.reuse else None
        key = (
            tuple(sorted((b, tuple(sorted(t.items()))) for b, t in kernel.terms.items())),
            kernel.launch_s,
            kernel.efficiency,
            reuse,
        )
        if key in groups:
            groups[key].count += 1
        else:
            groups[key] = replace(kernel, count=1)
    return list(groups.values())


def _ranges(groups: list[KernelTerms]) -> list[Range]:
    """One dim: cut the dim where any kernel's bound changes; over each range the latency is one
    polynomial."""
    cuts = {1}
    per_group = [bound_pieces(group) for group in groups]
    for group, pieces in zip(groups, per_group):
        cuts.update(p.start for p in pieces)
        cuts.update(group.class_cuts())
    ranges: list[Range] = []
    ordered_cuts = sorted(cuts)
    for position, start in enumerate(ordered_cuts):
        end = ordered_cuts[position + 1] - 1 if position + 1 < len(ordered_cuts) else None
        polynomial: Polynomial = {}
        counts: Counter = Counter()
        for group, pieces in zip(groups, per_group):  # each kernel's bound and class hold over the range
            add_into(polynomial, {(0,): group.launch_s}, group.count)
            if pieces:
                # the envelope's piece, not the bound at ``start``: at a tie it is the roof that holds after
                bound = list(group.terms)[next(p for p in reversed(pieces) if p.start <= start).index]
                add_into(polynomial, group.roof_time((start,), bound), group.count)
                counts[bound] += group.count
        ranges.append(Range(start, end, {m: c for m, c in polynomial.items() if c}, counts))
    return _merged(ranges)


def _merged(ranges: list[Range]) -> list[Range]:
    """Adjacent ranges with the same polynomial and bounds as one (a class cut that changed nothing)."""
    merged: list[Range] = []
    for r in ranges:
        if merged and merged[-1].polynomial == r.polynomial and merged[-1].bounds == r.bounds:
            merged[-1] = Range(merged[-1].start, r.end, r.polynomial, r.bounds)
        else:
            merged.append(r)
    return merged
