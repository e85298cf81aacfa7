"""A target file's figures: each a table ``{value, tag, source}``, validated as it is read (a
finite value in :data:`FIGURE_RANGE`, a known tag, a source), and the curves of points some
efficiency figures give, and the ``[efficiency]`` section they make (:func:`read_efficiency`).
``targets.py`` reads the file with them.

>>> read_figure({"x": {"value": 2e9, "tag": "vendor", "source": "datasheet"}}, "x", "x", "t.toml")
Figure(value=2000000000.0, tag='vendor', source='datasheet')
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, overload

from ..core.errors import UsageError

# "borrowed": no measurement of this target stands behind it; the figure is taken from other
# targets (benchmarks/fit_efficiency.py writes the median of a runtime's other targets' launch
# cost where this one has no batch-1 row). Every output that uses one says so
# (TargetReport.borrowed), and a forecast's error band does not cover a latency resting on it.
TAGS = ("vendor", "paper", "estimate", "measured", "borrowed")
BORROWED = "borrowed"
# every figure's value is finite and in this range: a pJ per op or a launch of ns at the bottom, a
# zetta-op/s at the top (no chip is near either end); beyond, the products and quotients of the
# model's counts would leave what a float holds
FIGURE_RANGE = (1e-12, 1e21)
MAX_POINT_COUNT = 2**63 - 1  # an efficiency curve's output rows or columns


@dataclass(frozen=True)
class Figure:
    value: float
    tag: str
    source: str


def read_section(data: dict, key: str, where: str, required: bool = True) -> dict:
    section = data.get(key)
    if section is None and not required:
        return {}
    if not isinstance(section, dict):
        raise UsageError(f"{where}: '[{key}]' is missing or not a table")
    return section


# a required figure is never None: callers that leave ``required`` at True get a Figure
@overload
def read_figure(table: dict, key: str, label: str, where: str, required: Literal[True] = True) -> Figure: ...
@overload
def read_figure(table: dict, key: str, label: str, where: str, required: bool) -> Figure | None: ...
def read_figure(table: dict, key: str, label: str, where: str, required: bool = True) -> Figure | None:
    entry = table.get(key)
    if entry is None:
        if required:
            raise UsageError(f"{where}: '{label}' is missing; give {{value, tag, source}}")
        return None
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: '{label}' must be a table {{value, tag, source}}, not {shown(entry)}")
    value = entry.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{where}: '{label}.value' must be a number, not {shown(value)}")
    if not value > 0:
        raise UsageError(f"{where}: '{label}.value' must be positive, not {shown(value)}")
    low, high = FIGURE_RANGE
    if not (low <= value <= high and math.isfinite(value)):  # (an int is compared exactly, however long)
        raise UsageError(
            f"{where}: '{label}.value' is {shown(value)}, out of range: a figure is finite, from {low:g} to {high:g}"
        )
    tag = entry.get("tag")
    if tag not in TAGS:
        raise UsageError(f"{where}: '{label}.tag' must be one of {', '.join(TAGS)}, not {shown(tag)}")
    source = entry.get("source")
    if not isinstance(source, str) or not source.strip():
        raise UsageError(f"{where}: '{label}.source' must say where the figure comes from")
    return Figure(float(value), tag, source)


def read_fraction(table: dict, key: str, label: str, where: str) -> Figure:
    figure = read_figure(table, key, label, where)
    if figure.value > 1:
        raise UsageError(f"{where}: '{label}.value' is a fraction of the roofline, at most 1, not {figure.value:g}")
    return figure


def read_points(points, label: str, where: str, unit: str) -> tuple[tuple[int, float], ...]:
    """``[[count, fraction], ...]`` (``unit``: output "columns" or "rows"): whole counts,
    increasing; fractions in (0, 1]."""
    if not isinstance(points, list) or not points:
        raise UsageError(f"{where}: '{label}' must be a list of [output {unit}, fraction] points, not {shown(points)}")
    parsed: list[tuple[int, float]] = []
    for point in points:
        if (
            not isinstance(point, list)
            or len(point) != 2
            or any(isinstance(v, bool) for v in point)
            or not isinstance(point[0], int)
            or not isinstance(point[1], (int, float))
        ):
            raise UsageError(f"{where}: '{label}' point {shown(point)} must be [whole output {unit}, fraction]")
        count, fraction = point
        if count < 1 or not 0 < fraction <= 1:
            raise UsageError(f"{where}: '{label}' point {shown(point)}: {unit} at least 1, fraction in (0, 1]")
        if count > MAX_POINT_COUNT:
            raise UsageError(f"{where}: '{label}' point {shown(point)}: {unit} at most 2^63 - 1")
        if parsed and count <= parsed[-1][0]:
            raise UsageError(f"{where}: '{label}' {unit} must increase ({parsed[-1][0]} then {count})")
        parsed.append((count, float(fraction)))
    return tuple(parsed)


def shown(value: object) -> str:
    """A value a message names: its repr, cut short (a file may hold a 400-digit number or arrays
    nested thousands deep, whose repr is long or cannot be made)."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # nested too deep; an int too long to print
        return f"a {type(value).__name__} too large to show"
    return text if len(text) <= 60 else text[:40] + f"... ({type(value).__name__} of {len(text):,} characters)"


def read_efficiency(data: dict, where: str, classes: Iterable[str], roofs: Iterable[str]) -> dict:
    """``efficiency``, ``efficiency_on_roof``, ``efficiency_by_columns``, ``efficiency_by_op`` and
    ``efficiency_by_rows`` for the Target, from its ``[efficiency]``: one figure per kernel class of
    ``classes`` (``targets.EFFICIENCY_CLASSES``), refined per roof of ``roofs``."""
    classes, roofs = tuple(classes), tuple(roofs)
    section = read_section(data, "efficiency", where, required=False)
    figures: dict[str, Figure] = {}
    on_roof: dict[str, dict[str, Figure]] = {}
    by_columns: dict[str, tuple[tuple[int, float], ...]] = {}
    by_op: dict[str, dict[str, float]] = {}
    by_rows: dict[str, tuple[tuple[int, float], ...]] = {}
    for key in section:
        if key not in classes:
            raise UsageError(f"{where}: 'efficiency.{key}' is not a kernel class ({', '.join(classes)})")
        figures[key] = read_fraction(section, key, f"efficiency.{key}", where)
        entry = section[key]
        if "by_rows" in entry and "by_columns" in entry:
            raise UsageError(
                f"{where}: 'efficiency.{key}' gives both 'by_rows' and 'by_columns': give one curve per class"
            )
        for extra in entry:
            if extra in ("value", "tag", "source"):
                continue
            if extra in roofs:
                label = f"efficiency.{key}.{extra}"
                on_roof.setdefault(key, {})[extra] = read_fraction(entry, extra, label, where)
                for inner in entry[extra]:
                    if inner not in ("value", "tag", "source", "by_rows", "by_columns"):
                        raise UsageError(
                            f"{where}: '{label}.{inner}' is not a field of a roof's figure "
                            "(value, tag, source, by_rows, by_columns)"
                        )
                if "by_rows" in entry[extra] and "by_columns" in entry[extra]:
                    raise UsageError(
                        f"{where}: '{label}' gives both 'by_rows' and 'by_columns': give one curve per figure"
                    )
                if "by_rows" in entry[extra]:
                    by_rows[f"{key}.{extra}"] = read_points(entry[extra]["by_rows"], f"{label}.by_rows", where, "rows")
                if "by_columns" in entry[extra]:
                    by_columns[f"{key}.{extra}"] = read_points(
                        entry[extra]["by_columns"], f"{label}.by_columns", where, "columns"
                    )
            elif extra == "by_columns":
                by_columns[key] = read_points(entry[extra], f"efficiency.{key}.by_columns", where, "columns")
            elif extra == "by_rows":
                by_rows[key] = read_points(entry[extra], f"efficiency.{key}.by_rows", where, "rows")
            elif extra == "by_op":
                by_op[key] = _by_op(entry[extra], f"efficiency.{key}.by_op", where)
            else:
                raise UsageError(
                    f"{where}: 'efficiency.{key}.{extra}' is neither a roof ({', '.join(roofs)}) nor "
                    "'by_columns', 'by_rows' or 'by_op'"
                )
    return {
        "efficiency": figures,
        "efficiency_on_roof": on_roof,
        "efficiency_by_columns": by_columns,
        "efficiency_by_op": by_op,
        "efficiency_by_rows": by_rows,
    }


def _by_op(table, label: str, where: str) -> dict[str, float]:
    """``{ OpType = fraction, ... }``: op type names, fractions in (0, 1]."""
    if not isinstance(table, dict) or not table:
        raise UsageError(
            f"{where}: '{label}' must be an inline table of op type = fraction "
            f"({{ Erf = 0.16, Tanh = 0.25 }}), not {shown(table)}"
        )
    for op, fraction in table.items():
        if not op.isidentifier():
            raise UsageError(
                f"{where}: '{label}.{op}' is not an op type: name it as the model does (Erf, QuantizeLinear)"
            )
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
            raise UsageError(
                f"{where}: '{label}.{op}' must be a fraction of the roofline in (0, 1], not {shown(fraction)}"
            )
    return {op: float(fraction) for op, fraction in table.items()}


def interpolate_log(points: tuple[tuple[int, float], ...], x: float) -> float:
    """The value at ``x`` of ``points`` ((x, value), x increasing): linear in log(x) between two
    points, the end point's value past either end.

    >>> interpolate_log(((10, 0.2), (1000, 0.8)), 100), interpolate_log(((10, 0.2), (1000, 0.8)), 1)
    (0.5, 0.2)
    """
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1:
            share = math.log(x / x0) / math.log(x1 / x0)
            return y0 + share * (y1 - y0)
    return points[-1][1]
