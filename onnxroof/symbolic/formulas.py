"""Costs as formulas of the model's free dims (issue 22): ``summary --symbolic``.

Every cost rule is a product of dims, so each total is a polynomial in the input dims the user
left free. :func:`formulas` recovers it exactly without a computer-algebra library: it runs the
ordinary integer analysis on a grid of :data:`SAMPLES` values per free dim (degree up to
``len(SAMPLES) - 1`` in each), solves for the integer coefficients with exact fractions, and
checks the polynomial against one more analysis at :data:`CHECK` values. A total that the check
refutes (a data-dependent size) is reported as not a polynomial, never as a wrong formula.

Beyond the grid: the peak is fitted step by step, as the largest of each step's live bytes
(one polynomial per range of a single dim); every formula is checked once more at
``latency_ranges.FAR`` per dim, past the sizes whose values the analysis computes, and one that
fails there is given with the last value it holds at. With targets, each target's latency is a
formula too (``latency_formulas``, ``latency_ranges``). A dim whose value feeds the sizes non-polynomially (a Range
with a step) is named and held at :data:`HELD` for the others' formulas.

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

import functools
import itertools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..ops import OpTrait, traits_of
from ..options import AnalysisOptions, check_progress
from .fit_steps import no_step_note, phase_batch_notes, probe, rescale
from .formulas_record import CHECK, SAMPLES, Formulas
from .latency_ranges import FAR, latency_formula
from .polynomials import LARGE, Polynomial, envelope, evaluate, fit, last_holding, undominated

if TYPE_CHECKING:
    from ..result import Analysis

MAX_DIMS = 3  # 4^3 = 64 analyses; beyond, bind some dims
HELD = 64  # the value a dim is held at when it feeds sizes non-polynomially, for the others' formulas
METRICS: dict[str, Callable[[Analysis], int | None]] = {
    "macs": lambda a: a.totals.macs,
    "flops": lambda a: a.totals.flops,
    "params": lambda a: a.totals.params,
    "weight_bytes": lambda a: a.totals.weight_bytes_read,
    "activation_bytes": lambda a: sum(r.input_bytes + r.output_bytes for r in a.nodes),
    "peak_bytes": lambda a: a.memory.model_order.peak_bytes,
    # a decoder's cache after this step, in the model's dtype (its presents)
    "kv_cache_bytes": lambda a: a.llm.kv_read_bytes if a.llm is not None and a.llm.kv_read_bytes else None,
}
BREAKDOWNS = ("module", "node", "op")  # what the MACs can be split by (``by``)


def free_dims(model: Any, options: AnalysisOptions) -> tuple[list[str], bool]:
    """The named input dims the options leave unbound (the dims a formula is in), and whether the
    model is a KV-cached decoder: one partial analysis, not placed on any target."""
    from ..pipeline import analyze

    counting = replace(options, targets=(), fusion=None, overhead=True)  # placing finds no dim
    partial = analyze(model, options=replace(counting, partial=True, search_order=False))
    unnamed = [d for d in partial.unresolved_dims if not d.symbol]
    if unnamed:
        from ..core.errors import UsageError

        raise UsageError(
            f"--symbolic: {unnamed[0].input_name} axis {unnamed[0].axis} has no name to write a formula "
            "in; "
            f"bind it with {unnamed[0].fix}"
        )
    return list(dict.fromkeys(d.symbol for d in partial.unresolved_dims if d.symbol)), partial.llm is not None


@dataclass
class _Sample:
    """What one analysis at one point of the grid gives the fits."""

    metrics: dict[str, int]
    steps: tuple[str, ...] = ()  # the model order
    live_bytes: tuple[int, ...] = ()  # at each of its steps
    node_costs: dict[str, tuple[int, int]] = field(default_factory=dict)  # node -> (MACs, bytes), model order
    placements: dict = field(default_factory=dict)  # target name -> TargetReport


def formulas(
    model: Any,
    modules: int | None = None,
    by: str | None = None,
    progress: Callable[[str], None] | None = None,
    options: AnalysisOptions | None = None,
    **arguments: Any,
) -> Formulas:
    """Every metric of :data:`METRICS` as a polynomial in the free input dims of ``model`` (the
    dims ``options``, or analyze()'s arguments given one by one, leave unbound), and each
    target's latency when they name targets. ``by`` (one of :data:`BREAKDOWNS`) adds the MACs of
    each module (down to the depth ``modules``), node or op type (``macs@encoder/layer.0``). A dim whose
    value feeds the sizes non-polynomially (a Resize by a computed scale) is named and held at
    :data:`HELD` for the others' formulas. ``progress`` hears each step (the grid, the checks
    past it, each target's latency)."""
    from ..pipeline import dim_values

    options = AnalysisOptions.given(options, arguments, "formulas")
    check_progress(progress)
    if modules and by is None:
        by = "module"
    dims, phase_length, options, decode_note = _dims_to_fit(model, options)
    given = dim_values(options.dims)
    options = replace(options, dims=None)  # each analysis of the grid gives them, with the free ones
    if isinstance(model, (str, os.PathLike)):
        from ..frontend.load import load_model

        # read and check the file once (its weights are parsed with it): the grid's analyses,
        # 17-100 of them, then copy the parsed model instead of reading it again
        model = load_model(model)
    steps: dict[str, int] | None = {d: 1 for d in dims}
    if dims and not phase_length:
        steps, uncounted = probe(model, dims, given, options)
        if steps is None:
            return _no_step(dims, uncounted)
    fitter = _Fitter(model, dims, given, phase_length, options, by, modules or 2, progress, steps)
    result = fitter.run()
    if decode_note:
        result.notes.insert(0, decode_note)
    if phase_length:
        result.notes += phase_batch_notes(model, options)
    if any(p is None for m, p in result.polynomials.items() if m not in result.pieces):
        held = fitter.non_polynomial_dims()
        if held and len(held) == len(dims):
            result.notes.insert(
                0,
                f"{', '.join(held)} feed{'s' if len(held) == 1 else ''} the sizes non-polynomially "
                f"({fitter.culprit_text()}): bind {'it' if len(held) == 1 else 'them'} with --dim",
            )
        elif held:
            return _held_fixed(fitter, held, given)
    return result


def _no_step(dims: list[str], uncounted: Analysis | None) -> Formulas:
    """No formula: no values of the dims count every node."""
    result = Formulas(dims, uncounted=uncounted, notes=[no_step_note(dims)], context=uncounted)
    for metric in METRICS:
        if metric != "kv_cache_bytes":
            result.polynomials[metric], result.refuted[metric] = None, "some nodes are not counted at these values"
    return result


def _dims_to_fit(model: Any, options: AnalysisOptions) -> tuple[list[str], str | None, AnalysisOptions, str | None]:
    """The dims the formulas are in, the decoder phase's length among them (or None), the options
    (a KV-cached decoder with too many free dims: its decode step's), and a note saying so."""
    from ..core.errors import UsageError

    # a decoder's phase without its length: the formula is in that length (the export's own dim
    # names, one per cache, are tied by the phase)
    phase_length = {"decode": "context", "prefill": "seq"}.get(options.phase or "")
    decoder = False
    if phase_length and getattr(options, phase_length) is None:
        dims = [phase_length]
    else:
        phase_length = None
        dims, decoder = free_dims(model, options)
    decode_note = None
    if len(dims) > MAX_DIMS and decoder and options.phase is None:
        # each cache's length is a dim of its own: one decode step ties them to the attended length
        options = replace(options, phase="decode")
        phase_length, dims = "context", ["context"]
        decode_note = (
            "a KV-cached decoder: the formulas are for one decode step, in the attended length (context); "
            "--phase prefill gives the prompt's, in seq"
        )
    if len(dims) > MAX_DIMS:
        raise UsageError(f"--symbolic: {len(dims)} free dims ({', '.join(dims)}); bind all but {MAX_DIMS} with --dim")
    return dims, phase_length, options, decode_note


def _held_fixed(fitter: _Fitter, held: list[str], given: dict[str, int]) -> Formulas:
    """The formulas in the dims that feed the sizes polynomially, the others held at :data:`HELD`."""
    kept = [d for d in fitter.dims if d not in held]
    again = _Fitter(
        fitter.model,
        kept,
        {**given, **{d: HELD for d in held}},
        None,
        fitter.options,
        fitter.by,
        fitter.depth,
        fitter.progress,
        {d: fitter.steps[d] for d in kept},
    ).run()
    again.held = {d: HELD for d in held}
    again.notes.insert(
        0,
        f"{', '.join(held)} feed{'s' if len(held) == 1 else ''} the sizes non-polynomially "
        f"({fitter.culprit_text()}): held at {HELD} for the formulas in the others; "
        f"give --dim {held[0]}=N for another value",
    )
    return again


class _Fitter:
    """The grid of analyses for one set of free dims, and the fits made from it."""

    def __init__(
        self,
        model: Any,
        dims: list[str],
        given: dict[str, int],
        phase_length: str | None,
        options: AnalysisOptions,
        by: str | None,
        depth: int,
        progress: Callable[[str], None] | None = None,
        steps: Mapping[str, int] | None = None,
    ):
        self.model, self.dims, self.given, self.phase_length = model, dims, given, phase_length
        # the grid is in dim / step: every point multiplies by the steps before it is analysed
        self.steps = {d: (steps or {}).get(d, 1) for d in dims}
        self.options, self.by, self.depth = options, by, depth
        self.progress = progress or (lambda step: None)
        self.sized_by_data: set[str] = set()  # ops whose output size the data decides, seen in any analysis
        self.grid = list(itertools.product(SAMPLES, repeat=len(dims)))
        self.check = (CHECK,) * len(dims)
        self._fitted_points = set(self.grid) | {self.check}
        self.samples: dict[tuple[int, ...], _Sample] = {}
        self.far = (FAR,) * len(dims)  # past the sizes whose values the analysis computes
        self.culprits: dict[str, str] = {}  # dim -> the first node whose cost is no polynomial in it
        self._analyses: dict[tuple[int, ...], Analysis] = {}  # beyond the grid: the far checks' (bisections)
        self.uncounted: Analysis | None = None  # the first analysis with nodes not counted
        self.context: Analysis | None = None  # the first analysis of the grid
        self.past_the_table: str | None = None  # a length past a table's rows, when a point reached one

    def analysis(self, values: tuple[int, ...]) -> Analysis:
        """The analysis at ``values``; those past the grid are kept (the bisections of every
        metric and target share them), the grid's are read once into their samples."""
        if values in self._analyses:
            return self._analyses[values]
        analysis = self._analyze(values)
        if values not in self._fitted_points:
            self._analyses[values] = analysis
        return analysis

    def _analyze(self, values: tuple[int, ...]) -> Analysis:
        from ..pipeline import analyze

        # the formulas read the model order's peak only: no search for a better order
        grid = replace(self.options, partial=True, search_order=False)
        if self.phase_length:
            length: dict[str, Any] = {self.phase_length: values[0]}
            return analyze(self.model, options=replace(grid, dims=self.given or None, **length))
        real = {d: v * self.steps[d] for d, v in zip(self.dims, values)}
        return analyze(self.model, options=replace(grid, dims={**self.given, **real}))

    def measure(self, values: tuple[int, ...]) -> _Sample:
        from ..frontend.table_bounds import PastTheTable

        try:
            analysis = self.analysis(values)
        except PastTheTable as exc:  # past a positional table: no point of the formulas (they stop before)
            self.past_the_table = self.past_the_table or str(exc).split(": ", 1)[-1].split("; give")[0]
            return _Sample({})
        self.context = self.context or analysis
        # ops whose output size follows from the data: the analysis costs them at their upper bound
        self.sized_by_data.update(
            r.op_type for r in analysis.nodes if OpTrait.DATA_DEPENDENT_SIZE in traits_of(r.domain, r.op_type)
        )
        if analysis.unresolved_dims or analysis.totals.not_counted:
            if analysis.totals.not_counted and self.uncounted is None and values in self._fitted_points:
                self.uncounted = analysis
            return _Sample({})
        found = {metric: value for metric, read in METRICS.items() if (value := read(analysis)) is not None}
        if self.by:
            found.update(_breakdown(analysis, self.by, self.depth))
        schedule = analysis.memory.model_order
        return _Sample(
            found,
            schedule.order,
            tuple(schedule.live_bytes),
            {r.name: (r.macs, r.input_bytes + r.output_bytes) for r in analysis.nodes},
            {report.target.name: report for report in analysis.targets},
        )

    def run(self) -> Formulas:
        self.progress(f"fitting formulas in {', '.join(self.dims) or 'no dim'}: {len(self.grid) + 1} analyses")
        for point in self.grid + [self.check]:
            self.samples[point] = self.measure(point)
        result = Formulas(self.dims, uncounted=self.uncounted, steps=self.steps, context=self.context)
        if self.sized_by_data:
            result.notes.append(
                f"the graph has sizes only the data decides ({', '.join(sorted(self.sized_by_data))}): "
                "the formulas take each at its upper bound (every element selected), not what a given "
                "input costs"
            )
        first = self.samples[self.grid[0]].metrics
        for metric in list(METRICS) + [k for k in first if k not in METRICS]:
            self._fit_metric(result, metric)
        peak = self._peak(result)
        if self.dims:
            self.progress("checking the formulas past the fitted values")
            self._check_far(result)
            if self.past_the_table:
                result.notes.append(self.past_the_table)
        strided = any(s > 1 for s in self.steps.values())
        if strided:
            self._in_dims(result)
            if self.samples[self.check].placements:
                result.notes.append(
                    "no latency formula at multiples of a step: place the model at one size with --dim and the targets"
                )
        for name in self.samples[self.check].placements if self.dims and not strided else ():
            self.progress(f"the latency formula on {name}")
            reports = {point: sample.placements[name] for point, sample in self.samples.items()}
            result.latency.append(
                latency_formula(
                    name,
                    self.dims,
                    reports,
                    SAMPLES,
                    self.check,
                    peak,
                    functools.partial(self._report_at, target=name) if self.dims else None,
                    self.progress,
                )
            )
        return result

    def _in_dims(self, result: Formulas) -> None:
        """The fits, made in dim / step, written in the dims."""
        steps = [self.steps[d] for d in self.dims]
        for metric, polynomial in result.polynomials.items():
            if polynomial is not None:
                result.polynomials[metric] = rescale(polynomial, steps)
        for metric, pieces in result.pieces.items():  # one dim
            result.pieces[metric] = [
                (start * steps[0], None if end is None else end * steps[0], rescale(p, steps))
                for start, end, p in pieces
            ]
        for metric, candidates in result.candidates.items():
            result.candidates[metric] = [rescale(p, steps) for p in candidates]

    def _report_at(self, point: tuple[int, ...], target: str):
        from ..frontend.table_bounds import PastTheTable

        try:
            analysis = self.analysis(point)
        except PastTheTable:
            return None
        if analysis.unresolved_dims or analysis.totals.not_counted:
            return None
        return next(r for r in analysis.targets if r.target.name == target)

    def _check_far(self, result: Formulas) -> None:
        """Each polynomial at :data:`FAR` per dim too: past the sizes whose values the analysis
        computes, and past caps (a Gather reads at most its table). Where it fails there, the
        formula is kept with the last value it holds at (bisection, every dim alike)."""
        far = self.measure(self.far).metrics

        def holds(value: int, metric: str) -> bool:
            found = self.measure((value,) * len(self.dims)).metrics
            return (
                metric in found
                and result.evaluate(metric, dict(zip(self.dims, (value,) * len(self.dims)))) == found[metric]
            )

        table = not far and self.past_the_table is not None  # the far point is past a table: where does it end?
        for metric in result.polynomials:
            if result.evaluate(metric, dict(zip(self.dims, self.far))) is None or (
                not table and (metric not in far or holds(FAR, metric))
            ):
                continue

            last = last_holding(CHECK, FAR, lambda value, metric=metric: holds(value, metric))
            if len(set(self.steps.values())) == 1:
                every = "" if len(self.dims) == 1 else " (every dim alike)"
                at = f"{' = '.join(self.dims)} = {last * self.steps[self.dims[0]]:,}{every}"
            else:
                at = ", ".join(f"{d} = {last * s:,}" for d, s in self.steps.items())
            result.limits[metric] = f"holds to {at}, not beyond" + (": the graph's table ends there" if table else "")

    def _fit_metric(self, result: Formulas, metric: str) -> None:
        if metric == "kv_cache_bytes" and all(metric not in s.metrics for s in self.samples.values()):
            return  # not a decoder
        if any(metric not in s.metrics for s in self.samples.values()):
            result.polynomials[metric], result.refuted[metric] = None, "some nodes are not counted at these values"
            return
        polynomial = fit(self.grid, [self.samples[p].metrics[metric] for p in self.grid], SAMPLES)
        if polynomial is None:
            result.polynomials[metric], result.refuted[metric] = None, "the samples fit no integer polynomial"
            return
        predicted, actual = evaluate(polynomial, self.check), self.samples[self.check].metrics[metric]
        if predicted != actual:
            result.polynomials[metric] = None
            result.refuted[metric] = (
                f"at {', '.join(f'{d}={CHECK}' for d in self.dims)} the analysis gives "
                f"{actual:,}, the fitted polynomial {predicted:,}: the cost is piecewise or "
                "data-dependent here"
            )
            return
        result.polynomials[metric] = polynomial

    def _peak(self, result: Formulas) -> list[Polynomial] | None:
        """The model-order peak as the largest of each step's live bytes (each a polynomial), so
        that a step which takes over past the fitted values is seen (GPT-2 decode: attention's
        scores overtake the MLP at some length). Returns the candidates (for the latency's
        no-spill range), None when a step's bytes are no polynomial."""
        if not self.dims or any(not s.metrics for s in self.samples.values()):
            return None
        orders = {s.steps for s in self.samples.values()}
        if len(orders) > 1:
            return None
        series = {
            tuple(self.samples[p].live_bytes[i] for p in self.grid + [self.check])
            for i in range(len(self.samples[self.check].live_bytes))
        }
        candidates: list[Polynomial] = []
        for values in series:
            polynomial = fit(self.grid, values[:-1], SAMPLES)
            if polynomial is None or evaluate(polynomial, self.check) != values[-1]:
                return None
            candidates.append(polynomial)
        kept = [candidates[i] for i in undominated(candidates)]
        pieces = (
            [(piece.start, piece.end, kept[piece.index]) for piece in envelope(kept)] if len(self.dims) == 1 else []
        )
        if len(kept) == 1 or len(pieces) == 1:  # one polynomial is the largest everywhere
            result.polynomials["peak_bytes"] = pieces[0][2] if pieces else kept[0]
            result.refuted.pop("peak_bytes", None)
            return kept
        result.polynomials["peak_bytes"] = None
        result.refuted["peak_bytes"] = "the largest of several polynomials"
        if pieces:
            result.pieces["peak_bytes"] = pieces
        else:
            result.candidates["peak_bytes"] = sorted(kept, key=lambda p: -evaluate(p, (LARGE,) * len(self.dims)))
        return kept

    def non_polynomial_dims(self) -> list[str]:
        """The dims along which some node's cost is no polynomial: the others at the first
        sample, the one dim over the samples, checked at :data:`CHECK` (one analysis per dim)."""
        blamed = []
        for axis, dim in enumerate(self.dims):
            line = [tuple(v if i == axis else SAMPLES[0] for i in range(len(self.dims))) for v in SAMPLES]
            beyond = tuple(CHECK if i == axis else SAMPLES[0] for i in range(len(self.dims)))
            extra = self.measure(beyond)
            if not extra.metrics:
                continue
            for name, cost in extra.node_costs.items():
                values = [self.samples[p].node_costs.get(name) for p in line]
                if any(v is None for v in values):
                    continue
                if any(_line_fails([v[k] for v in values if v is not None], cost[k]) for k in (0, 1)):
                    blamed.append(dim)
                    self.culprits[dim] = name
                    break
        return blamed

    def culprit_text(self) -> str:
        return "first at node " + ", ".join(
            f"{node} ({dim})" if len(self.culprits) > 1 else node for dim, node in self.culprits.items()
        )


def _line_fails(values: list[int], beyond: int) -> bool:
    polynomial = fit([(v,) for v in SAMPLES], values, SAMPLES)
    return polynomial is None or evaluate(polynomial, (CHECK,)) != beyond


def _breakdown(analysis: Analysis, by: str, depth: int) -> dict[str, int]:
    """MACs per module (down to ``depth``), per node or per op type, keyed ``macs@<name>``."""
    if by == "node":
        return {f"macs@{r.name}": r.macs for r in analysis.nodes if r.macs}
    if by == "op":
        ops: dict[str, int] = {}
        for r in analysis.nodes:
            ops[r.op_type] = ops.get(r.op_type, 0) + r.macs
        return {f"macs@{op}": macs for op, macs in ops.items() if macs}
    from ..compare.modules import descendants, has_scopes, module_tree

    if not has_scopes(analysis):
        return {}
    return {f"macs@{module.path}": module.macs for module in descendants(module_tree(analysis, depth))}
