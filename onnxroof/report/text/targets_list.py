"""``onnxroof targets``: every target with its roofs, ridge points, efficiencies and latency kind."""

from __future__ import annotations

import textwrap

from ...core.units import iec, intensity, seconds, si
from ...roofline.targets import LatencyKind
from ...roofline.verdicts import capacity_text
from .table import TERMINAL_COLUMNS


def render_targets_list(targets) -> str:
    """`onnxroof targets`: every target with its roofs and ridge points."""
    lines = []
    for target in targets:
        onchip = f", on chip {iec(target.onchip_bytes.value)}" if target.onchip_bytes else ""
        device = f", device memory {capacity_text(int(target.dram_size_bytes.value))}" if target.dram_size_bytes else ""
        lines += textwrap.wrap(
            f"{target.name:18} DRAM {si(target.dram_bytes_per_s.value, 'B/s')}{onchip}{device}",
            TERMINAL_COLUMNS,
            subsequent_indent=" " * 21,
        )  # a name may be 64 characters long
        lines += textwrap.wrap(
            target.description, TERMINAL_COLUMNS, initial_indent=" " * 21, subsequent_indent=" " * 21
        )
        for roof, figure in target.peak_ops_per_s.items():
            lines.append(
                f"{'':18}   {roof:5} {si(figure.value, 'OP/s'):>12}  "
                f"ridge {intensity(target.ridge(roof))} FLOP/B  [{figure.tag}]"
            )
        overhead = (
            f", launch {seconds(target.node_overhead_s.value)} per kernel"
            + (" (borrowed from other targets)" if target.node_overhead_s.tag == "borrowed" else "")
            if target.node_overhead_s
            else ""
        )
        if target.cold_node_overhead_s:
            overhead += f" ({seconds(target.cold_node_overhead_s.value)} cold)"
        if target.run_overhead_s:
            overhead += f", {seconds(target.run_overhead_s.value)} per run"
        lines += textwrap.wrap(
            f"fusion: {', '.join(target.fusion) or 'none (one kernel per node)'}{overhead}",
            TERMINAL_COLUMNS,
            initial_indent=" " * 21,
            subsequent_indent=" " * 29,
        )
        lines += _efficiency_list_lines(target) + _latency_list_lines(target)
        if target.fp32_math_roof != "fp32":
            lines.append(f"{'':18}   float32 products run on the {target.fp32_math_roof} roof (the runtime's default)")
        lines.append(
            f"{'':18}   energy: "
            + (
                f"dynamic + static ({target.static_power_w.value:g} W static)"
                if target.static_power_w
                else "dynamic only (no static power stated)"
            )
        )
    return "\n".join(lines) + "\n"


def _efficiency_list_lines(target) -> list[str]:
    """`onnxroof targets`: a target's efficiencies, classes of one figure together, then its
    ``by_op`` tables and its curves by output columns and rows."""
    lines: list[str] = []
    by_value: dict[str, list[str]] = {}  # classes with the same efficiency, listed together
    for name, figure in target.efficiency.items():
        by_value.setdefault(f"{figure.value:.0%}", []).append(name)
    achieved = "; ".join(f"{', '.join(names)} {value}" for value, names in by_value.items())
    chip = target.dataflow
    if not achieved and chip is not None and chip.units is not None:  # a fitted layer pipeline's own figures
        share = f" at {chip.efficiency.value:.0%} of their peak" if chip.efficiency else ""
        achieved = f"a layer pipeline's: {chip.units.value:g} compute and as many streaming units{share}"
    lines += textwrap.wrap(
        f"efficiency: {achieved or 'none given (every kernel at the roofline: peak figures)'}",
        TERMINAL_COLUMNS,
        initial_indent=" " * 21,
        subsequent_indent=" " * 33,
    )
    for name, table in target.efficiency_by_op.items():  # the ops whose kernels run at a figure of their own
        ops = ", ".join(f"{op} {fraction:.0%}" for op, fraction in sorted(table.items(), key=lambda item: item[1]))
        lines += textwrap.wrap(
            f"{name} by op: {ops}", TERMINAL_COLUMNS, initial_indent=" " * 33, subsequent_indent=" " * 35
        )
    curves = [  # few columns (channels), or products of few rows, run below the class's figure
        *(
            (name, "columns", ", ".join(f"{columns:,} {fraction * 100:.2g}%" for columns, fraction in points))
            for name, points in target.efficiency_by_columns.items()
        ),
        *(
            (name, "rows", ", ".join(f"{rows:,} {fraction:.0%}" for rows, fraction in points))
            for name, points in target.efficiency_by_rows.items()
        ),
    ]
    for name, axis, curve in curves:
        lines += textwrap.wrap(
            f"{name.replace('.', ' ')} by output {axis}: {curve}",
            TERMINAL_COLUMNS,
            initial_indent=" " * 33,
            subsequent_indent=" " * 35,
        )
    return lines


def _latency_list_lines(target) -> list[str]:
    """`onnxroof targets`: whether a target's latencies are bounds or forecasts, and their band."""
    lines: list[str] = []
    band = ""
    if target.error_band and target.latency_kind == LatencyKind.FORECAST:
        on = f" on {', '.join(target.error_band_roofs)} kernels" if target.error_band_roofs else ""
        band = f", within ±{target.error_band.value:.0%}{on}"
        if "node_overhead_s" in target.borrowed:  # the band's rows had launches under a tenth of their time
            band += ", not where launches take a tenth of the time (their cost is borrowed)"
    lines += textwrap.wrap(
        f"latency: {'a lower bound (peak figures)' if target.latency_kind == LatencyKind.BOUND else 'a forecast'}"
        f"{band}",
        TERMINAL_COLUMNS,
        initial_indent=" " * 21,
        subsequent_indent=" " * 30,
    )
    return lines
