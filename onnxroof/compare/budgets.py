"""Budgets that gate CI: ``--fail-if "flops>+5%"``, ``"latency[myriad-x]>+2%"``,
``"peak_memory>2MiB"``, ``"params>5M"``.

A budget is ``METRIC[TARGET] OP LIMIT``. OP is one of ``> >= < <=``. LIMIT is absolute (a number
with an optional SI prefix for counts, IEC or SI for bytes, or s/ms/us for times) or, in
``onnxroof diff`` only, relative to the base model: a signed percentage (``+5%``).

>>> parse_budget("latency[myriad-x]>+2%")
Budget(metric='latency', target='myriad-x', op='>', limit=2.0, relative=True, text='latency[myriad-x]>+2%')
>>> parse_budget("peak_memory>2MiB").limit
2097152.0
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.errors import UsageError
from ..core.units import NUMBER_PATTERN, SUFFIX_SCALES, iec, joules, seconds, si

if TYPE_CHECKING:
    from ..result import Analysis

# metric -> (needs a target, how to read it from an Analysis (and the target's report))
MODEL_METRICS: dict[str, Callable[[Analysis], float]] = {
    "params": lambda a: a.totals.params,
    "param_bytes": lambda a: a.totals.param_bytes,
    "macs": lambda a: a.totals.macs,
    "mac_flops": lambda a: a.totals.mac_flops,
    "flops": lambda a: a.totals.flops,
    "peak_memory": lambda a: a.memory.model_order.peak_bytes,
    "best_peak_memory": lambda a: a.memory.best.schedule.peak_bytes,
    "unsupported": lambda a: sum(a.totals.unsupported.values()),
}
TARGET_METRICS: dict[str, Callable] = {
    "latency": lambda r: r.latency_s,
    "throughput": lambda r: r.throughput_per_s,
    "energy": lambda r: r.energy_j if r.energy_j is not None else float("nan"),
    "dram_bytes": lambda r: r.model_point.dram_bytes,
}
# how each metric's value reads in a message ("params is 11.7 M (11,680,912)"); counts otherwise
_UNITS = {
    "param_bytes": "bytes",
    "peak_memory": "bytes",
    "best_peak_memory": "bytes",
    "dram_bytes": "bytes",
    "latency": "seconds",
    "throughput": "per_second",
    "energy": "joules",
}
MAX_LIMIT = 1e300  # a budget's limit: any count, byte size or time a model can reach, far from float's end
_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_PATTERN = re.compile(
    r"^\s*(?P<metric>[a-z_]+)\s*(?:\[(?P<target>[^\]]+)\])?\s*(?P<op>>=|<=|>|<)\s*"
    r"(?P<sign>[+-])?" + NUMBER_PATTERN + r"\s*(?P<suffix>%|[A-Za-zµ]*)\s*$"
)


@dataclass(frozen=True)
class Budget:
    metric: str
    target: str | None
    op: str
    limit: float  # absolute value, or a percentage when relative
    relative: bool
    text: str

    def label(self) -> str:
        return f"{self.metric}[{self.target}]" if self.target else self.metric


@dataclass(frozen=True)
class BudgetResult:
    budget: Budget
    value: float  # the head's value (absolute budgets) or its change in percent (relative ones)
    broken: bool
    # a target metric on an analysis that left nodes out ("head: 2 node(s) not counted"): the value
    # is a bound (a latency at least it, a throughput at most it), and the verdict is said on it
    missing: str = ""

    def describe(self) -> str:
        """ "latency[l4]<1ms: latency[l4] is 5.06 µs -> ok"; on an incomplete analysis the value is
        said as the bound it is: "is ≥ 5.06 µs (a lower bound: head: 2 node(s) not counted)"."""
        shown = (
            f"{self.value:+.2f}%" if self.budget.relative else value_text(self.value, _UNITS.get(self.budget.metric))
        )
        if self.missing:
            at_most = self.budget.metric == "throughput"
            kind = "an upper bound" if at_most else "a lower bound"
            sign = "" if self.budget.relative else "≤ " if at_most else "≥ "
            shown = f"{sign}{shown} ({kind}: {self.missing})"
        return f"{self.budget.text}: {self.budget.label()} is {shown} -> {'BROKEN' if self.broken else 'ok'}"


def value_text(value: float, unit: str | None) -> str:
    """A metric's value with its unit and, where rounded, the exact figure.

    >>> value_text(11_680_912, None), value_text(2_097_152, "bytes"), value_text(0.0012, "seconds")
    ('11.7 M (11,680,912)', '2 MiB (2,097,152 B)', '1.2 ms')
    """
    if value != value:  # NaN: a target without the figure
        return "n/a"
    if unit == "bytes":
        return f"{iec(value)} ({value:,.0f} B)" if value >= 1024 else f"{value:,.0f} B"
    if unit == "seconds":
        return seconds(value)
    if unit == "per_second":
        return f"{value:,.1f}/s"
    if unit == "joules":
        return joules(value)
    return f"{si(value)} ({value:,.0f})" if abs(value) >= 1000 else f"{value:,.6g}"


def parse_budget(text: str) -> Budget:
    match = _PATTERN.match(text)
    if not match:
        raise UsageError(
            f"--fail-if {text!r}: expected METRIC[TARGET]OP LIMIT, e.g. 'flops>+5%', 'params>5M', "
            "'latency[myriad-x]>+2%', 'peak_memory>2MiB'"
        )
    metric, target, suffix = match["metric"], match["target"], match["suffix"]
    if metric in TARGET_METRICS and not target:
        raise UsageError(f"--fail-if {text!r}: {metric} is per target; write {metric}[TARGET]")
    if metric in MODEL_METRICS and target:
        raise UsageError(f"--fail-if {text!r}: {metric} is a model metric; drop [{target}]")
    if metric not in MODEL_METRICS and metric not in TARGET_METRICS:
        known = ", ".join([*MODEL_METRICS, *(f"{m}[TARGET]" for m in TARGET_METRICS)])
        raise UsageError(f"--fail-if {text!r}: unknown metric {metric!r}; choose from {known}")
    number = float(f"{match['number']}e{match['exp'] or 0}")  # too large: inf (refused below); too small: 0
    if match["sign"] == "-":
        number = -number
    relative = suffix == "%"
    if not relative:
        if suffix not in SUFFIX_SCALES:
            raise UsageError(f"--fail-if {text!r}: unknown unit {suffix!r} (use k M G, KiB MiB GiB, ms us, or %)")
        if match["sign"] == "+":
            raise UsageError(f"--fail-if {text!r}: a signed limit is relative and needs %, e.g. +5%")
        number *= SUFFIX_SCALES[suffix]
    if not math.isfinite(number) or abs(number) > MAX_LIMIT:
        raise UsageError(f"--fail-if {text!r}: the limit {number:g} is out of range: at most 1e300")
    return Budget(metric, target, match["op"], number, relative, text.strip())


def metric_value(analysis: Analysis, metric: str, target: str | None) -> float:
    if target is None:
        return float(MODEL_METRICS[metric](analysis))
    for report in analysis.targets:
        if report.target.name == target:
            return float(TARGET_METRICS[metric](report))
    raise UsageError(f"--fail-if {metric}[{target}]: that target was not analysed; add --target {target}")


def check_budgets(budgets: list[Budget], head: Analysis, base: Analysis | None = None) -> list[BudgetResult]:
    """Evaluate every budget on ``head`` (relative ones against ``base``)."""
    results = []
    for budget in budgets:
        value = metric_value(head, budget.metric, budget.target)
        if budget.relative:
            if base is None:
                raise UsageError(f"--fail-if {budget.text!r}: a relative budget needs a base model (onnxroof diff)")
            before = metric_value(base, budget.metric, budget.target)
            value = percent_change(before, value)
        results.append(
            BudgetResult(budget, value, bool(_OPS[budget.op](value, budget.limit)), _missing(budget, head, base))
        )
    return results


def _missing(budget: Budget, head: Analysis, base: Analysis | None) -> str:
    """What the analyses a target budget reads left out, by side ("head: 2 node(s) not counted"):
    then its value is a bound, not a figure; "" for a model metric or complete analyses."""
    if budget.target is None:
        return ""
    sides = [("head", head)] + ([("base", base)] if budget.relative and base is not None else [])
    parts = [f"{side}: {analysis.missing}" for side, analysis in sides if not analysis.complete]
    return "; ".join(parts) if budget.relative else "; ".join(part.split(": ", 1)[1] for part in parts)


def percent_change(before: float, after: float) -> float:
    """Change in percent; growing from zero is +inf, staying at zero is 0."""
    if before == 0:
        return 0.0 if after == 0 else float("inf") if after > 0 else float("-inf")
    return 100.0 * (after - before) / abs(before)
