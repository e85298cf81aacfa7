"""The values a graph accepts for its free dims (issue 47): a stride-32 CNN counts every node only
at multiples of 32 of its height and width (a Concat of an upsampled map with a finer one
needs the sizes to halve exactly), so the formulas are fitted at multiples of a step per dim.

The step is probed, not derived: the smallest power of two ``s`` (up to :data:`MAX_STEP`) whose
multiples the fit uses (:data:`MULTIPLES`) all count every node, first for every dim alike, then
per dim with the others at the common step (a batch needs none). The costs at multiples of a
step are a polynomial in dim / step with integer coefficients; :func:`rescale` writes it in the
dim itself (fractions, exact).

>>> fit_steps(lambda values: values["height"] % 32 == 0, ["batch", "height"])
{'batch': 1, 'height': 32}
>>> rescale({(1, 2): 12, (0, 0): 5}, (1, 4))
{(1, 2): Fraction(3, 4), (0, 0): 5}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .polynomials import Number, Polynomial

if TYPE_CHECKING:
    from ..options import AnalysisOptions
    from ..result import Analysis

MAX_STEP = 64  # the largest step tried: a stride-64 backbone is rare; beyond, the user binds the dims
MULTIPLES = (3, 5, 7, 11, 2)  # the fit's multiples of a step, odd ones first (they fail first)
STEPS = tuple(1 << k for k in range(MAX_STEP.bit_length()))  # 1, 2, 4, ..., MAX_STEP


def fit_steps(counts: Callable[[dict[str, int]], bool], dims: Sequence[str]) -> dict[str, int] | None:
    """The step per dim (``counts(values)``: every node is counted at these dim values); None
    when no common step up to :data:`MAX_STEP` counts every node."""

    def every_dim(step: int, changed: Sequence[str] = dims, others: int = 1) -> bool:
        # every multiple the fit uses: with a convolution's rounding up, 3·s can pass where 5·s fails
        return all(counts({d: v * (step if d in changed else others) for d in dims}) for v in MULTIPLES)

    if every_dim(1):
        return {d: 1 for d in dims}
    common = next((step for step in STEPS[1:] if every_dim(step)), None)
    if common is None:
        return None
    if len(dims) == 1:
        return {dims[0]: common}
    return {d: next(step for step in STEPS if step == common or every_dim(step, [d], common)) for d in dims}


def rescale(polynomial: Polynomial, steps: Sequence[int]) -> Polynomial:
    """A polynomial in dim / step (per dim) written in the dims: each coefficient over the steps'
    powers of its monomial, an int where it divides."""
    scaled: dict[tuple[int, ...], Number] = {}
    for monomial, coefficient in polynomial.items():
        value = Fraction(coefficient) / math.prod(s**e for s, e in zip(steps, monomial))
        scaled[monomial] = int(value) if value.denominator == 1 else value
    return scaled


def points_text(
    dims: Sequence[str], steps: Mapping[str, int], samples: Sequence[int], check: int, far: int | None = None
) -> str:
    """Where the formulas were fitted: ``fitted at 2, 3, 5, 7 per dim, checked at 11 and 4,099``
    (``far``: the check past the sizes whose values the analysis computes), or per step
    ``fitted at height, width = 64, 96, 160, 224 and batch = 2, 3, 5, 7 (the graph counts every node
    at multiples of 32 of height, width only), checked at height, width = 352 and batch = 11``."""
    if all(steps.get(d, 1) == 1 for d in dims):
        return f"fitted at {', '.join(map(str, samples))} per dim, checked at {check}" + (
            f" and {far:,}" if far else ""
        )
    by_step: dict[int, list[str]] = {}
    for d in dims:
        by_step.setdefault(steps.get(d, 1), []).append(d)
    groups = sorted(by_step.items(), reverse=True)
    fitted = " and ".join(f"{', '.join(names)} = {', '.join(f'{s * v:,}' for v in samples)}" for s, names in groups)
    checked = " and ".join(f"{', '.join(names)} = {s * check:,}" for s, names in groups)
    why = "; ".join(f"multiples of {s} of {', '.join(names)}" for s, names in groups if s > 1)
    return f"fitted at {fitted} (the graph counts every node at {why} only), checked at {checked}"


def probe_steps(
    analyze_at: Callable[[dict[str, int]], Analysis], dims: Sequence[str]
) -> tuple[dict[str, int] | None, Analysis | None]:
    """:func:`fit_steps` with ``analyze_at`` (the dims' values -> an analysis), and the last
    analysis that left nodes not counted (at the largest step tried: its warnings name the node
    that fixes a size), to vet when no step works."""
    failed: list[Analysis] = []

    def counts(values: dict[str, int]) -> bool:
        analysis = analyze_at(values)
        fine = not analysis.unresolved_dims and not analysis.totals.not_counted
        if not fine:
            failed[:] = [analysis]
        return fine

    return fit_steps(counts, dims), (failed[0] if failed else None)


def no_step_note(dims: Sequence[str]) -> str:
    """What to do when no multiple of any step counts every node: the graph fixes a size."""
    names = ", ".join(dims)
    return (
        f"no values of {names} count every node (tried multiples of 1 to {MAX_STEP} per dim; the warnings name "
        f"the node that fails): an invalid node, or a size the graph fixes (a Reshape or an anchor table made "
        f"for one input size); bind {names} with --dim, or re-export with dynamic shapes"
    )


def phase_batch_notes(model: Any, options: AnalysisOptions) -> list[str]:
    """A decoder's phase binds its batch dim (1 unless --batch): the formulas say so, as they
    name every other dim."""
    from ..cost.llm import detect_decoder

    layout = detect_decoder(model)
    batch = [symbol for symbol, role in (layout.roles if layout else {}).items() if role == "batch"]
    if not batch:
        return []
    rows = options.batch or 1
    return [
        f"{', '.join(batch)} = {rows} (the phase's batch{'' if options.batch else ', by default'}; --batch N "
        "for another)"
    ]


def probe(model: Any, dims: list[str], given: dict[str, int], options: AnalysisOptions):
    """The step per dim the fit points are multiples of (``fit_steps``): one analysis when the
    first probe counts every node, a few more for a strided CNN."""
    from ..pipeline import analyze

    probing = replace(options, partial=True, search_order=False, targets=())
    return probe_steps(lambda values: analyze(model, options=replace(probing, dims={**given, **values})), dims)
