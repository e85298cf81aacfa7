"""symbolic/latency_fit.py: the steps of fitting a latency formula, on placements made by hand
(only the fields each step reads)."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import pytest

from onnxroof.symbolic.latency_fit import _alike, _launch, _parallel_fill, _Refused, _Samples
from onnxroof.symbolic.latency_formulas import KernelTerms


def placed(**fields):
    return SimpleNamespace(**fields)


def test_a_kernels_work_is_fitted_exactly_and_checked_past_the_samples():
    # bytes = 6 s + 4 at s = 1, 2, 3, 4, checked at s = 7 (46): the fit is {s: 6, 1: 4}
    points = [(1,), (2,), (3,), (4,), (7,)]
    at = {p: 6 * p[0] + 4 for p in points}
    fit_at = _Samples(["s"], {}, points[:4], (1, 2, 3, 4), (7,), [])
    assert fit_at.fits(lambda bytes_: bytes_, at) == {(1,): 6, (0,): 4}
    at[(7,)] = 47  # off the line at the check: no formula
    assert fit_at.fits(lambda bytes_: bytes_, at) is None


def test_a_launch_that_comes_and_goes_with_the_dims_is_refused():
    same = {(1,): placed(overhead_s=5e-6), (2,): placed(overhead_s=5e-6)}
    assert _launch(["s"], "mm", same) == 5e-6
    differing = {(1,): placed(overhead_s=5e-6), (2,): placed(overhead_s=0.0)}
    with pytest.raises(_Refused, match="kernel mm launches at s = 1 but not at s = 2"):
        _launch(["s"], "mm", differing)


def test_a_parallel_fill_that_changes_is_left_out_at_the_full_roof():
    waves: list[str] = []
    assert _parallel_fill(
        "mm", {(1,): placed(parallel_fraction=0.5), (2,): placed(parallel_fraction=0.5)}, waves
    ) == Fraction(1, 2)
    assert waves == []
    assert _parallel_fill("mm", {(1,): placed(parallel_fraction=0.5), (2,): placed(parallel_fraction=0.75)}, waves) == 1
    assert waves == ["mm"]  # the formula is then a lower bound


def test_alike_kernels_are_grouped_one_per_layer():
    def kernel(name, seconds_per_s):
        return KernelTerms(name, "MatMul", 1, {"dram": {(1,): Fraction(seconds_per_s)}}, Fraction(0))

    groups = _alike([kernel("l0", 2), kernel("l1", 2), kernel("head", 3)])
    assert [(g.name, g.count) for g in groups] == [("l0", 2), ("head", 1)]
