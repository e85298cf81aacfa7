"""Costs as formulas of the model's free dims (issue 22): ``summary --symbolic``.

Every cost rule is a product of dims, so each total is a polynomial in the input dims the user
left free. :func:`formulas` recovers it exactly without a computer-algebra library: it runs the
ordinary integer analysis on a grid of :data:`SAMPLES` values per free dim (degree up to
``len(SAMPLES) - 1`` in each), solves for the integer coefficients with exact fractions, and
checks the polynomial against one more analysis at :data:`CHECK` values. A total that the check
refutes (a data-dependent size, a piecewise peak) is reported as not a polynomial, never as a
wrong formula.

>>> from onnx import TensorProto, helper, numpy_helper
>>> import numpy as np
>>> node = helper.make_node("MatMul", ["x", "w"], ["y"])
>>> graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 4])],
...     [numpy_helper.from_array(np.zeros((8, 4), np.float32), "w")])
>>> found = formulas(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
>>> found.dims, found.text("macs")
(['batch', 'seq'], '32·batch·seq')
"""

from __future__ import annotations

import itertools
import math
import textwrap
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:
    from .result import Analysis

SAMPLES = (2, 3, 5, 7)  # values per free dim: fits a degree of up to 3 in each (attention: seq^2)
CHECK = 11  # every free dim at this value: the one extra analysis that must agree
MAX_DIMS = 3  # 4^3 = 64 analyses; beyond, bind some dims
COLUMNS = 120  # the terminal width the formulas wrap to
# ops whose output size follows from the data: the analysis costs them at their upper bound
DATA_DEPENDENT = frozenset({"NonZero", "Unique", "Compress", "NonMaxSuppression"})
METRICS: dict[str, Callable[["Analysis"], int]] = {
    "macs": lambda a: a.totals.macs,
    "flops": lambda a: a.totals.flops,
    "params": lambda a: a.totals.params,
    "weight_bytes": lambda a: a.totals.weight_bytes_read,
    "activation_bytes": lambda a: sum(r.input_bytes + r.output_bytes for r in a.nodes),
    "peak_bytes": lambda a: a.memory.model_order.peak_bytes,
}
LABELS = {"macs": "MACs", "flops": "FLOPs", "params": "parameters", "weight_bytes": "weight bytes read",
          "activation_bytes": "activation bytes", "peak_bytes": "peak activations (model order)"}

Monomial = tuple[int, ...]  # the exponent of each free dim


@dataclass
class Formulas:
    """Each metric as a polynomial (monomial -> integer coefficient) in ``dims``, or None with the
    reason in ``refuted`` when the check disagreed."""

    dims: list[str]
    polynomials: dict[str, dict[Monomial, int] | None] = field(default_factory=dict)
    refuted: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the formulas assume (a data-dependent size's bound)

    def text(self, metric: str) -> str:
        polynomial = self.polynomials.get(metric)
        if polynomial is None:
            return f"not a polynomial in {', '.join(self.dims)}: {self.refuted.get(metric, '')}"
        return polynomial_text(polynomial, self.dims)

    def evaluate(self, metric: str, values: Mapping[str, int]) -> int | None:
        polynomial = self.polynomials.get(metric)
        if polynomial is None:
            return None
        return sum(c * math.prod(values[d] ** e for d, e in zip(self.dims, m)) for m, c in polynomial.items())

    def to_dict(self) -> dict:
        return {"dims": self.dims, "notes": self.notes, "formulas": {
            metric: ({"text": self.text(metric),
                      "terms": [{"coefficient": c, "powers": dict(zip(self.dims, m))} for m, c in _ordered(p)]}
                     if (p := self.polynomials.get(metric)) is not None else {"text": None, "refuted": self.refuted[metric]})
            for metric in self.polynomials}}


def _ordered(polynomial: dict[Monomial, int]) -> list[tuple[Monomial, int]]:
    return sorted(((m, c) for m, c in polynomial.items() if c), key=lambda mc: (-sum(mc[0]), [-e for e in mc[0]]))


_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_text(dim: str, exponent: int) -> str:
    """``seq²``; ``seq`` for the first power."""
    return dim + (str(exponent).translate(_SUPERSCRIPTS) if exponent > 1 else "")


def polynomial_text(polynomial: dict[Monomial, int], dims: list[str]) -> str:
    """Highest degree first, coefficients with thousands separators: ``12,288·seq² + 64·seq``.

    >>> polynomial_text({(2,): 12288, (1,): 64, (0,): 5}, ["seq"])
    '12,288·seq² + 64·seq + 5'
    """
    terms = []
    for monomial, coefficient in _ordered(polynomial):
        factors = [power_text(d, e) for d, e in zip(dims, monomial) if e]
        magnitude = abs(coefficient)
        body = "·".join(([f"{magnitude:,}"] if magnitude != 1 or not factors else []) + factors)
        terms.append(("- " if coefficient < 0 else "+ ") + body)
    if not terms:
        return "0"
    text = " ".join(terms)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


def free_dims(model: Any, **options: Any) -> list[str]:
    """The named input dims the options leave unbound (the dims a formula is in)."""
    from .analysis import analyze

    partial = analyze(model, partial=True, **options)
    unnamed = [d for d in partial.unresolved_dims if not d.symbol]
    if unnamed:
        from .errors import UsageError

        raise UsageError(f"--symbolic: {unnamed[0].input_name} axis {unnamed[0].axis} has no name to write a formula in; "
                         f"bind it with {unnamed[0].fix}")
    return list(dict.fromkeys(d.symbol for d in partial.unresolved_dims if d.symbol))


def formulas(model: Any, modules: int | None = None, **options: Any) -> Formulas:
    """Every metric of :data:`METRICS` as a polynomial in the free input dims of ``model`` (the
    dims ``options``, analyze()'s arguments, leave unbound); with ``modules`` (a depth), also
    each module's MACs down to that depth (``macs@encoder/layer.0``)."""
    from .analysis import analyze, dim_values
    from .errors import UsageError

    # a decoder's phase without its length: the formula is in that length (the export's own dim
    # names, one per cache, are tied by the phase)
    phase_length = {"decode": "context", "prefill": "seq"}.get(options.get("phase") or "")
    if phase_length and options.get(phase_length) is None:
        dims = [phase_length]
    else:
        phase_length = None
        dims = free_dims(model, **options)
    if len(dims) > MAX_DIMS:
        raise UsageError(f"--symbolic: {len(dims)} free dims ({', '.join(dims)}); bind all but {MAX_DIMS} with --dim")
    given = dim_values(options.pop("dims", None))

    sized_by_data: set[str] = set()  # ops whose output size the data decides, seen in any analysis

    def measure(values: tuple[int, ...]) -> dict[str, int]:
        if phase_length:
            analysis = analyze(model, dims=given or None, partial=True, **{**options, phase_length: values[0]})
        else:
            analysis = analyze(model, dims={**given, **dict(zip(dims, values))}, partial=True, **options)
        sized_by_data.update(r.op_type for r in analysis.nodes if r.op_type in DATA_DEPENDENT)
        if analysis.unresolved_dims or analysis.totals.not_counted:
            return {}
        found = {metric: read(analysis) for metric, read in METRICS.items()}
        if modules:
            found.update(_module_macs(analysis, modules))
        return found

    grid = list(itertools.product(SAMPLES, repeat=len(dims)))
    samples = [measure(point) for point in grid]
    check_point = (CHECK,) * len(dims)
    checked = measure(check_point)
    result = Formulas(dims)
    if sized_by_data:
        result.notes.append(f"the graph has sizes only the data decides ({', '.join(sorted(sized_by_data))}): the formulas take "
                            "each at its upper bound (every element selected), not what a given input costs")
    monomials = list(itertools.product(range(len(SAMPLES)), repeat=len(dims)))
    keys = list(METRICS) + [k for k in (samples[0] if samples else {}) if k not in METRICS]
    for metric in keys:
        if any(metric not in s for s in samples) or metric not in checked:
            result.polynomials[metric], result.refuted[metric] = None, "some nodes are not counted at these values"
            continue
        coefficients = _solve([[math.prod(v ** e for v, e in zip(point, m)) for m in monomials] for point in grid],
                              [s[metric] for s in samples])
        if any(c.denominator != 1 for c in coefficients):
            result.polynomials[metric], result.refuted[metric] = None, "the samples fit no integer polynomial"
            continue
        polynomial = {m: int(c) for m, c in zip(monomials, coefficients) if c}
        predicted = sum(c * math.prod(v ** e for v, e in zip(check_point, m)) for m, c in polynomial.items())
        if predicted != checked[metric]:
            result.polynomials[metric] = None
            result.refuted[metric] = (f"at {', '.join(f'{d}={CHECK}' for d in dims)} the analysis gives {checked[metric]:,}, "
                                      f"the fitted polynomial {predicted:,}: the cost is piecewise or data-dependent here")
            continue
        result.polynomials[metric] = polynomial
    return result


def _module_macs(analysis: "Analysis", depth: int) -> dict[str, int]:
    from .modules import descendants, has_scopes, module_tree

    if not has_scopes(analysis):
        return {}
    return {f"macs@{module.path}": module.macs for module in descendants(module_tree(analysis, depth))}


def label(metric: str) -> str:
    return f"MACs of {metric.split('@', 1)[1]}" if metric.startswith("macs@") else LABELS[metric]


def _solve(matrix: list[list[int]], values: list[int]) -> list[Fraction]:
    """Exact Gaussian elimination over the rationals (a square, invertible Vandermonde system)."""
    rows = [[Fraction(x) for x in row] + [Fraction(v)] for row, v in zip(matrix, values)]
    size = len(rows)
    for column in range(size):
        pivot = next(r for r in range(column, size) if rows[r][column] != 0)
        rows[column], rows[pivot] = rows[pivot], rows[column]
        lead = rows[column][column]
        rows[column] = [x / lead for x in rows[column]]
        for r in range(size):
            if r != column and rows[r][column] != 0:
                factor = rows[r][column]
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[column])]
    return [row[-1] for row in rows]


def reading(polynomial: dict[Monomial, int], dims: list[str]) -> str:
    """What a formula says in words: its leading term, and from which value of the fastest-growing
    dim that term alone outweighs the rest (the other dims at 1).

    >>> reading({(1, 2): 32, (1, 1): 512}, ["batch", "seq"])
    'grows as batch·seq²; the seq² term is the larger from seq = 16 on'
    """
    terms = _ordered(polynomial)
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
        lead = coefficient * math.prod(v ** e for v, e in zip(at, top))
        rest = sum(abs(c) * math.prod(v ** e for v, e in zip(at, m)) for m, c in lower)
        if lead >= rest:
            return (f"grows as {factor}; the {power_text(dims[axis], top[axis])} term is the "
                    f"larger from {dims[axis]} = {value:,} on")
    return f"grows as {factor}"


def difference(base: Formulas, head: Formulas) -> Formulas:
    """head - base, term by term, where both are in the same dims (``diff --symbolic``)."""
    if base.dims != head.dims:
        from .errors import UsageError

        raise UsageError(f"diff --symbolic: the models' free dims differ ({', '.join(base.dims) or 'none'} against "
                         f"{', '.join(head.dims) or 'none'}); bind the ones one of them lacks with --dim")
    result = Formulas(head.dims, notes=base.notes + [n for n in head.notes if n not in base.notes])
    for metric in head.polynomials:
        b, h = base.polynomials.get(metric), head.polynomials.get(metric)
        if b is None or h is None:
            result.polynomials[metric] = None
            result.refuted[metric] = base.refuted.get(metric) or head.refuted.get(metric, "")
            continue
        result.polynomials[metric] = {m: h.get(m, 0) - b.get(m, 0) for m in b.keys() | h.keys() if h.get(m, 0) != b.get(m, 0)}
    return result


def formulas_lines(found: Formulas, change: bool = False) -> list[str]:
    """The terminal block: one metric per line, in the model's own dim names."""
    if not found.dims:
        return ["Formulas: every input dim is bound; the totals above are the numbers"]
    lines = [f"{'Change in the formulas' if change else 'Formulas'} in {', '.join(found.dims)} (exact; fitted at "
             f"{', '.join(map(str, SAMPLES))} per dim, checked at {CHECK})"]
    width = min(40, max(len(label(m)) for m in found.polynomials))
    for metric in found.polynomials:
        polynomial = found.polynomials[metric]
        if metric.startswith("macs@") and polynomial == {}:
            continue  # a module without multiply-adds: nothing to say
        indent = " " * (width + 6)  # under the formula, past "label  = "
        lines += textwrap.wrap(f"  {label(metric):{width}}  {'+=' if change else '='} {found.text(metric)}", COLUMNS,
                               subsequent_indent=indent, break_on_hyphens=False)
        if polynomial is not None and not change and metric in ("macs", "peak_bytes"):
            lines += textwrap.wrap(f"({reading(polynomial, found.dims)})", COLUMNS, initial_indent=indent,
                                   subsequent_indent=indent)
    lines += [f"  note: {note}" for note in found.notes]
    return lines
