"""Live activations, peak on-chip memory, and the execution order that lowers it
(cost-model.md section 4). :func:`analyze_memory` builds the buffer problem (``problem.py``),
measures the model's order and searches a better one (``schedule.py``); the roofline stage asks
``spill.py`` for the spills on each target.

>>> from onnxroof import analyze
>>> from onnxroof.core.examples import build_example
>>> report = analyze_memory(analyze(build_example("shallownet")).cost_graph)
>>> report.model_order.peak_bytes, report.largest_layer_bytes  # the conv output, read by Relu
(262144, 262144)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .problem import MemoryProblem, Schedule, build_problem, largest_layer_bytes, schedule_peak
from .schedule import EXACT_STATE_LIMIT, SearchResult, best_order_from

if TYPE_CHECKING:
    from ..cost.records import CostGraph


@dataclass
class MemoryReport:
    model_order: Schedule
    best: SearchResult
    concat_copy_peak_bytes: int  # the model-order peak if Concat copies its inputs
    largest_layer_bytes: int  # lower bound: the most one node touches
    largest_layer_node: str | None
    elementwise_in_place: bool
    # the buffers and dependencies behind these figures, for later stages (spill plans, the
    # report's timeline) to reuse rather than rebuild
    problem: MemoryProblem = field(repr=False, compare=False)


def analyze_memory(
    graph: CostGraph, *, elementwise_in_place: bool = False, state_limit: int = EXACT_STATE_LIMIT, search: bool = True
) -> MemoryReport:
    """Peak live activations under the model's order and the best order found (without
    ``search``, the model's order stands for it: the formulas' grid reads the model order only)."""
    problem = build_problem(graph, concat_in_place=True, elementwise_in_place=elementwise_in_place)
    model_order = schedule_peak(problem, problem.model_order)
    if problem.concat_slices:
        copying = build_problem(graph, concat_in_place=False, elementwise_in_place=elementwise_in_place)
        copy_peak = schedule_peak(copying, copying.model_order).peak_bytes
    else:
        copy_peak = model_order.peak_bytes  # no Concat input written in place: copying changes nothing
    lower_bound, node = largest_layer_bytes(problem)
    return MemoryReport(
        model_order=model_order,
        best=(
            best_order_from(problem, model_order, lower_bound, state_limit)
            if search
            else SearchResult(model_order, "model order", 0, "not searched")
        ),
        concat_copy_peak_bytes=copy_peak,
        largest_layer_bytes=lower_bound,
        largest_layer_node=node,
        elementwise_in_place=elementwise_in_place,
        problem=problem,
    )
