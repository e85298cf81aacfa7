"""Exact polynomials in a model's dims (issue 22): fitting them to integer samples, writing them
for people, and the largest of several over a range of one dim.

A polynomial is a mapping from a monomial (the exponent of each dim, in a fixed order of dims)
to its coefficient: an ``int`` for counts, a ``Fraction`` for seconds (counts over a rate).

>>> fitted = fit([(2,), (3,), (5,), (7,)], [8, 15, 35, 63], (2, 3, 5, 7))
>>> fitted, polynomial_text(fitted, ["seq"])
({(1,): 2, (2,): 1}, 'seq² + 2·seq')
>>> pieces = envelope([{(1,): 3}, {(0,): 10}])
>>> [(p.start, p.end, p.index) for p in pieces]
[(1, 3, 1), (4, None, 0)]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

import numpy as np

LARGE = 1 << 20  # every dim at this value stands for "at large dims"
Monomial = tuple[int, ...]  # the exponent of each dim
Number = int | Fraction
Polynomial = dict[Monomial, Number]
Pieces = list[tuple[int, "int | None", Polynomial]]  # (start, end or None: on and on, polynomial), one dim


@cache
def _inverse_vandermonde(samples: tuple[int, ...]) -> tuple[tuple[Fraction, ...], ...]:
    """V⁻¹ for V[i][j] = samples[i] ** j, exactly: Lagrange's basis in powers of x."""
    size = len(samples)
    rows = [
        [Fraction(s) ** j for j in range(size)] + [Fraction(int(i == k)) for k in range(size)]
        for i, s in enumerate(samples)
    ]
    for column in range(size):
        pivot = next(r for r in range(column, size) if rows[r][column] != 0)
        rows[column], rows[pivot] = rows[pivot], rows[column]
        lead = rows[column][column]
        rows[column] = [x / lead for x in rows[column]]
        for r in range(size):
            if r != column and rows[r][column] != 0:
                factor = rows[r][column]
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[column])]
    inverse = [row[size:] for row in rows]  # solves V c = v as c = V⁻¹ v
    return tuple(tuple(row) for row in inverse)


def fit(points: Sequence[Monomial], values: Sequence[Number], samples: tuple[int, ...]) -> Polynomial | None:
    """The polynomial of degree below ``len(samples)`` in each dim through ``values`` at ``points``
    (the full grid ``samples`` x ... x ``samples``, in any order); None when its coefficients
    are not integers (for integer ``values``: no integer polynomial fits). One axis at a time,
    so k dims cost k·4ᵏ·4 products rather than a 4ᵏ-square solve."""
    dims = len(points[0]) if points else 0
    size = len(samples)
    position = {s: i for i, s in enumerate(samples)}
    grid = np.empty((size,) * dims, dtype=object)
    for point, value in zip(points, values):
        grid[tuple(position[v] for v in point)] = Fraction(value)
    inverse = np.array(_inverse_vandermonde(samples), dtype=object)
    for axis in range(dims):
        grid = np.moveaxis(np.tensordot(inverse, np.moveaxis(grid, axis, 0), axes=(1, 0)), 0, axis)
    integral = all(isinstance(v, int) for v in values)
    polynomial: Polynomial = {}
    for monomial in itertools.product(range(size), repeat=dims):
        coefficient = grid[monomial] if dims else Fraction(values[0])
        if coefficient:
            if integral and coefficient.denominator != 1:
                return None
            polynomial[monomial] = int(coefficient) if coefficient.denominator == 1 else coefficient
    return polynomial


def evaluate(polynomial: Mapping[Monomial, Number], point: Sequence[int]) -> Number:
    return sum(c * math.prod(v**e for v, e in zip(point, m)) for m, c in polynomial.items())


def ordered(polynomial: Mapping[Monomial, Number]) -> list[tuple[Monomial, Number]]:
    """Terms highest degree first (then by the first dim's exponent)."""
    return sorted(((m, c) for m, c in polynomial.items() if c), key=lambda mc: (-sum(mc[0]), [-e for e in mc[0]]))


_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_text(dim: str, exponent: int) -> str:
    """``seq²``; ``seq`` for the first power."""
    return dim + (str(exponent).translate(_SUPERSCRIPTS) if exponent > 1 else "")


def monomial_text(monomial: Monomial, dims: Sequence[str]) -> str:
    return "·".join(power_text(d, e) for d, e in zip(dims, monomial) if e)


def count_text(value: Number) -> str:
    """An exact count with thousands separators; a fraction (a fit at multiples of a step) as its
    exact decimal where its denominator has no factor but 2 and 5, else as n/d.

    >>> count_text(12288), count_text(Fraction(2169, 16)), count_text(Fraction(1, 3))
    ('12,288', '135.5625', '1/3')
    """
    if isinstance(value, int) or value.denominator == 1:
        return f"{int(value):,}"
    rest = value.denominator
    for factor in (2, 5):
        while rest % factor == 0:
            rest //= factor
    if rest != 1:
        return f"{value.numerator:,}/{value.denominator:,}"
    places = 0
    while (value * 10**places).denominator != 1:
        places += 1
    whole, fraction = divmod(value.numerator * 10**places // value.denominator, 10**places)
    return f"{whole:,}.{fraction:0{places}d}"


def polynomial_text(polynomial: Mapping[Monomial, Number], dims: Sequence[str], unit: str | None = None) -> str:
    """Highest degree first, integer coefficients with thousands separators: ``12,288·seq² + 64·seq``;
    with ``unit`` (``"s"``), each coefficient to 3 figures with its own SI prefix.

    >>> polynomial_text({(2,): 12288, (1,): 64, (0,): 5}, ["seq"])
    '12,288·seq² + 64·seq + 5'
    >>> polynomial_text({(1,): Fraction(1, 2_000_000_000), (0,): Fraction(3, 100_000)}, ["seq"], "s")
    '500 ps·seq + 30 µs'
    """
    terms = []
    for monomial, coefficient in ordered(polynomial):
        factors = monomial_text(monomial, dims)
        magnitude: Number = -coefficient if coefficient < 0 else coefficient
        if unit is not None:
            number = si_text(float(magnitude), unit)
        else:
            number = count_text(magnitude) if magnitude != 1 or not factors else ""
        body = "·".join(part for part in (number, factors) if part)
        terms.append(("- " if coefficient < 0 else "+ ") + body)
    if not terms:
        return f"0 {unit}" if unit else "0"
    text = " ".join(terms)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


_PREFIXES = [(1e-15, "f"), (1e-12, "p"), (1e-9, "n"), (1e-6, "µ"), (1e-3, "m"), (1.0, "")]


def si_text(value: float, unit: str) -> str:
    """``0.0000305`` s -> ``30.5 µs``, three significant figures.

    >>> si_text(3.05e-5, "s"), si_text(2.5, "s"), si_text(1.5e-17, "s")
    ('30.5 µs', '2.5 s', '0.015 fs')
    """
    scale, prefix = next(((s, p) for s, p in reversed(_PREFIXES) if value >= s), _PREFIXES[0])
    return f"{float(f'{value / scale:.3g}'):g} {prefix}{unit}"


def dominates(upper: Mapping[Monomial, Number], lower: Mapping[Monomial, Number]) -> bool:
    """Whether ``upper`` >= ``lower`` wherever every dim is at least 1, by a sufficient test:
    the difference, with each dim written 1 + t, has no negative coefficient."""
    difference = {m: upper.get(m, 0) - lower.get(m, 0) for m in set(upper) | set(lower)}
    return all(c >= 0 for c in shifted(difference).values())


def shifted(polynomial: Mapping[Monomial, Number]) -> Polynomial:
    """p(1 + t₁, ..., 1 + tₖ) as a polynomial in the t's (binomial expansion)."""
    result: Polynomial = {}
    for monomial, coefficient in polynomial.items():
        for lower in itertools.product(*(range(e + 1) for e in monomial)):
            weight = math.prod(math.comb(e, k) for e, k in zip(monomial, lower))
            result[lower] = result.get(lower, 0) + coefficient * weight
    return {m: c for m, c in result.items() if c}


def undominated(polynomials: Sequence[Mapping[Monomial, Number]]) -> list[int]:
    """The indices of the distinct polynomials no other one dominates (first of equal ones kept)."""
    distinct: dict[tuple, int] = {}
    for index, polynomial in enumerate(polynomials):
        distinct.setdefault(tuple(sorted((m, c) for m, c in polynomial.items() if c)), index)
    kept = list(distinct.values())
    return [i for i in kept if not any(j != i and dominates(polynomials[j], polynomials[i]) for j in kept)]


@dataclass(frozen=True)
class Piece:
    """Over ``start``..``end`` (None: on and on) of the one dim, polynomial ``index`` is the largest."""

    start: int
    end: int | None
    index: int


def envelope(polynomials: Sequence[Mapping[Monomial, Number]], start: int = 1) -> list[Piece]:
    """The largest of ``polynomials`` (in one dim) at every integer from ``start`` on, as pieces.
    The argmax can change only at a real root of a difference of two of them: those roots,
    rounded up, cut the range, and each cut is decided by exact evaluation."""
    candidates = undominated(polynomials)
    cuts = {start}
    for a, b in itertools.combinations(candidates, 2):
        cuts.update(math.ceil(r) for r in _real_roots(polynomials[a], polynomials[b]) if r > start)
    cuts_sorted = sorted(cuts)

    def best(at: int) -> int:
        # ties at the cut go to the one larger just after it
        return max(candidates, key=lambda i: (evaluate(polynomials[i], (at,)), evaluate(polynomials[i], (at + 1,)), -i))

    pieces: list[Piece] = []
    for position, cut in enumerate(cuts_sorted):
        winner = best(cut)
        end = cuts_sorted[position + 1] - 1 if position + 1 < len(cuts_sorted) else None
        if pieces and pieces[-1].index == winner:
            pieces[-1] = Piece(pieces[-1].start, end, winner)
        else:
            pieces.append(Piece(cut, end, winner))
    return pieces


def _real_roots(first: Mapping[Monomial, Number], second: Mapping[Monomial, Number]) -> list[float]:
    degree = max((m[0] for m in set(first) | set(second)), default=0)
    coefficients = [float(first.get((d,), 0) - second.get((d,), 0)) for d in range(degree, -1, -1)]
    while coefficients and coefficients[0] == 0:
        coefficients.pop(0)
    if len(coefficients) < 2:
        return []
    return [float(r.real) for r in np.roots(coefficients) if abs(r.imag) <= 1e-9 * max(1.0, abs(r))]


def common_factor(polynomial: Mapping[Monomial, Number]) -> Monomial:
    """The largest monomial that divides every term (dims are positive: it never changes a sign)."""
    terms = [m for m, c in polynomial.items() if c]
    if not terms:
        return ()
    return tuple(min(exponents) for exponents in zip(*terms))


def divided(polynomial: Mapping[Monomial, Number], factor: Monomial) -> Polynomial:
    return {tuple(e - f for e, f in zip(m, factor)): c for m, c in polynomial.items() if c}


def last_holding(low: int, high: int, holds) -> int:
    """The largest n in [low, high) with ``holds(n)``, given ``holds(low)`` and not ``holds(high)``
    (bisection: it assumes that once it fails it keeps failing).

    >>> last_holding(11, 4099, lambda n: n * n <= 5000)
    70
    """
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if holds(middle) else (low, middle)
    return low


def span_text(dim: str, start: int, end: int | None) -> str:
    """``seq 1 to 86``, ``seq 87 on``, ``seq 40`` (a range of one value).

    >>> span_text("seq", 1, 86), span_text("seq", 87, None), span_text("seq", 40, 40)
    ('seq 1 to 86', 'seq 87 on', 'seq 40')
    """
    if end is None:
        return f"{dim} {start:,} on"
    return f"{dim} {start:,}" if end == start else f"{dim} {start:,} to {end:,}"


def piecewise_difference(first: Pieces, second: Pieces) -> Pieces:
    """``second - first`` over the values both cover, one polynomial per range (adjacent equal
    ones merged).

    >>> piecewise_difference([(1, 7, {(1,): 2}), (8, None, {(1,): 5})], [(1, None, {(1,): 6})])
    [(1, 7, {(1,): 4}), (8, None, {(1,): 1})]
    """
    start = max(first[0][0], second[0][0])
    ends = [pieces[-1][1] for pieces in (first, second) if pieces[-1][1] is not None]
    end = min(ends) if ends else None
    cuts = sorted(
        c
        for c in {s for s, _, _ in first} | {s for s, _, _ in second} | {start}
        if c >= start and (end is None or c <= end)
    )

    def at(pieces: Pieces, value: int) -> Polynomial:
        return next(p for s, e, p in pieces if s <= value and (e is None or value <= e))

    result: Pieces = []
    for position, cut in enumerate(cuts):
        until = cuts[position + 1] - 1 if position + 1 < len(cuts) else end
        minuend, subtrahend = at(second, cut), at(first, cut)
        change = {m: minuend.get(m, 0) - subtrahend.get(m, 0) for m in minuend.keys() | subtrahend.keys()}
        change = {m: c for m, c in change.items() if c}
        if result and result[-1][2] == change:
            result[-1] = (result[-1][0], until, change)
        else:
            result.append((cut, until, change))
    return result


def reading(polynomial: Polynomial, dims: list[str]) -> str:
    """What a formula says in words: its leading term, and from which value of the fastest-growing
    dim that term alone outweighs the rest (the other dims at 1).

    >>> reading({(1, 2): 32, (1, 1): 512}, ["batch", "seq"])
    'grows as batch·seq²; the seq² term is the larger from seq = 16 on'
    """
    terms = ordered(polynomial)
    if not terms or sum(terms[0][0]) == 0:
        return "constant"
    top, coefficient = terms[0]
    factor = "·".join(power_text(d, e) for d, e in zip(dims, top) if e)
    lower = [(m, c) for m, c in terms[1:] if sum(m) < sum(top)]
    if not lower:
        return f"grows as {factor}"
    axis = max(range(len(dims)), key=lambda i: top[i])
    for value in range(1, 1 << 20):
        at = [1] * len(dims)
        at[axis] = value
        lead = coefficient * math.prod(v**e for v, e in zip(at, top))
        rest = sum(abs(c) * math.prod(v**e for v, e in zip(at, m)) for m, c in lower)
        if lead >= rest and value == 1:
            return f"grows as {factor}"
        if lead >= rest:
            return (
                f"grows as {factor}; the {power_text(dims[axis], top[axis])} term is the "
                f"larger from {dims[axis]} = {value:,} on"
            )
    return f"grows as {factor}"
