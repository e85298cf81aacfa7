"""The target file `onnxroof calibrate` writes (schema onnxroof-target/1): the roofs a
calibration measured (:mod:`onnxroof.measure.calibration`), every figure tagged ``measured`` with
a source that says how, where and when it was measured."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..measure import achieved, cold_launch, dram_stall, rows_efficiency, subnormal
from ..measure.achieved import LAUNCH_CHAIN
from ..measure.machine import size_text
from ..measure.op_efficiency import MATERIAL_DIFFERENCE, OP_SHAPE, by_op_figures
from ..measure.roof_kernels import CLEAN, blas_variables
from ..measure.roofs import Calibration
from ..roofline.figures import FIGURE_RANGE
from ..roofline.target_schema import section_header
from ..roofline.targets import EFFICIENCY_CLASSES, SCHEMA, Target, parse_target


def render_target(calibration: Calibration, name: str = "this-machine", with_efficiency: bool = True) -> str:
    """The target file (schema onnxroof-target/1), every figure tagged ``measured`` (without
    ``with_efficiency``: the roofs alone). Each one-figure section is written under its field's
    path in the schema (``roofline/target_schema.py``)."""
    c = calibration
    fp32 = c.peak("float32")
    if fp32 is None:
        raise ValueError("no fp32 matmul was measured")
    int8 = c.peak("int8")
    where = (
        f"onnxroof calibrate {c.date} on {c.cpu} ({c.cores}; {c.threads} thread(s)"
        + (f"; load average {c.load_average:.2f} at the start" if c.load_average is not None else "")
        + ")"
    )
    dram, dram_source = _dram_figure(c, where)
    description = f"{c.cpu}, {c.cores}: roofs measured by onnxroof calibrate on {c.date}" + (
        f" with {c.blas_threads} thread(s)" if c.blas_threads else ""
    )
    lines = [
        *_comment_lines(c, int8 is not None),
        f'schema = "{SCHEMA}"',
        f"name = {_toml_string(name)}",
        f"description = {_toml_string(description)}",
        *_section("peak_ops_per_s", fp32.rate.per_second, _peak_source(c, where, fp32), dtype="fp32"),
        *_section("dram_bytes_per_s", dram, dram_source),
    ]
    if int8 is not None:
        lines += _section("peak_ops_per_s", int8.rate.per_second, _int8_source(c, where, int8, fp32), dtype="int8")
    for attribute, value, written, source in _overhead_figures(c):
        if written:
            lines += _section(attribute, value or 0.0, source(c, where))
    lines += _onchip_lines(c, where)
    if with_efficiency and c.efficiency:
        lines += _efficiency_lines(c, where)
    if c.levels().onchip_bytes:
        lines += [
            "",
            "[weights]",
            "resident = true",
            "source = "
            + _toml_string(
                "a CPU's caches keep the parameters from one run to the next when they "
                "fit beside the activations; onnxroof profile measures such warm, "
                "repeated runs"
            ),
        ]
    if c.launch_overhead_s:
        lines += [
            "",
            "[fusion]",
            f"rules = {json.dumps(list(HOST_FUSION_RULES))}",
            "source = " + _toml_string(HOST_FUSION_SOURCE),
        ]
    return "\n".join(lines) + "\n"


def _section(attribute: str, value: float, source: str, dtype: str | None = None) -> list[str]:
    """One figure's table, under its field's path in the schema (``dtype``: a roof's figure)."""
    return ["", section_header(attribute, dtype), *_figure_lines(value, source)]


def _comment_lines(c: Calibration, has_int8: bool) -> list[str]:
    """The file's head: the sweep, the matmuls the schema has no roof for, the calibration's notes."""
    lines = [
        "# Measured by `onnxroof calibrate` on this machine: re-run it rather than edit the figures.",
        "# Sweep (working set -> best GB/s): "
        + ", ".join(f"{size_text(size)} {bw / 1e9:.1f}" for size, bw in c.bandwidth_points()),
    ]
    for point in c.matmul:
        if point.dtype == "float64":
            lines.append(
                f"# fp64 matmul n={point.n}: {point.rate.per_second / 1e9:.1f} GFLOP/s (the schema has no fp64 roof)"
            )
        elif point.dtype == "float16":
            lines.append(
                f"# fp16 matmul n={point.n}: {point.rate.per_second / 1e9:.2f} GFLOP/s in numpy "
                "(a generic loop, not BLAS): not written as a roof; fp16 nodes fall back to the fp32 roof"
                + ("" if has_int8 else ", and int8 nodes too (no int8 roof: onnxruntime is not installed)")
            )
    return lines + [f"# note: {note}" for note in c.notes]


def _peak_source(c: Calibration, where: str, fp32) -> str:
    """How the fp32 roof was measured: each method's rate per size, the best, and how the others compare."""
    best: dict[tuple[str, int], float] = {}
    for p in c.matmul:
        if p.dtype == "float32":
            best[(p.method, p.n)] = max(best.get((p.method, p.n), 0.0), p.rate.per_second)

    def sizes(method: str) -> str:
        return ", ".join(f"n={n}: {rate / 1e9:.1f}" for (m, n), rate in sorted(best.items()) if m == method)

    blas = c.blas + (f", {c.blas_threads} thread(s)" if c.blas_threads else ", its default threads")
    source = (
        f"{where}: float32 n x n matmuls, FLOPs = 2 n^3, fastest of repeated runs in {c.rounds} "
        f"rounds per size; numpy {c.numpy_version} ({blas}) GFLOP/s {sizes('numpy')}"
    )
    if any(m == "onnxruntime" for m, _ in best):
        source += f"; onnxruntime's MatMul ({c.threads} thread(s)) GFLOP/s {sizes('onnxruntime')}"
    if any(m == CLEAN for m, _ in best):
        source += f"; numpy in a child process without {', '.join(blas_variables())} GFLOP/s {sizes(CLEAN)}"
    source += f"; the roof is the best: {fp32.method} at n={fp32.n}"
    slower: dict[str, float] = {}  # every other method's best
    for (method, _), rate in best.items():
        if method != fp32.method:
            slower[method] = max(slower.get(method, 0.0), rate)
    if slower and min(slower.values()) >= 0.9 * fp32.rate.per_second:
        source += " (the methods agree within 10%)"
    for method, rate in sorted(slower.items()):
        if rate < 0.9 * fp32.rate.per_second:
            variables = [f"{v}={os.environ[v]}" for v in blas_variables()] if method == "numpy" else []
            source += (
                f" ({method} reaches {rate / fp32.rate.per_second:.0%} of it: its GEMM is built or configured "
                "for less" + (f"; {', '.join(variables)} is set here" if variables else "") + ")"
            )
    return source


def _stream_source(c: Calibration, where: str) -> str:
    return (
        f"{where}: STREAM-style sweep (copy 2x8, add 3x8, triad 3x8 bytes per float64 element, "
        f"no write-allocate), {c.threads} thread(s) on their own arrays, fastest of repeated passes "
        f"in {c.rounds} rounds, best kernel per working set"
    )


def _dram_figure(c: Calibration, where: str) -> tuple[float, str]:
    """The DRAM roof and its source: the STREAM sweep's, or onnxruntime's own copy where it is faster."""
    levels = c.levels()
    source = (
        f"{_stream_source(c, where)}; best over working sets {size_text(levels.dram_sizes[0])}"
        f"..{size_text(levels.dram_sizes[1])}"
    )
    dram = levels.dram_bytes_per_s
    if c.copy_bytes_per_s:
        copy = (
            f"onnxruntime's Mul by a scalar over {size_text(4 * achieved.COPY_ELEMENTS)} of float32 (8 B per "
            f"element, a slope over chains of 1 and 5) {c.copy_bytes_per_s / 1e9:.1f} GB/s"
        )
        if c.copy_bytes_per_s > dram:
            source = f"{where}: {copy}, the best; the STREAM sweep reached {levels.dram_bytes_per_s / 1e9:.1f} GB/s"
            dram = c.copy_bytes_per_s
        else:
            source += (
                f"; {copy}, {c.copy_bytes_per_s / dram:.0%} of it (its elementwise kernels stream less "
                "well than STREAM: efficiency.elementwise carries that)"
            )
    return dram, source


def _int8_source(c: Calibration, where: str, int8, fp32) -> str:
    int8_best: dict[int, float] = {}
    for p in c.matmul:
        if p.dtype == "int8":
            int8_best[p.n] = max(int8_best.get(p.n, 0.0), p.rate.per_second)
    return (
        f"{where}: onnxruntime's MatMulInteger ({c.threads} thread(s)), n x n uint8 activations by "
        f"int8 weights into int32 (the pair onnxruntime's quantizers give a CPU model, its integer "
        f"GEMM's native one), ops = 2 n^3 as onnxroof counts a quantized product, fastest of repeated "
        f"runs in {c.rounds} rounds per size; GOP/s "
        + ", ".join(f"n={n}: {rate / 1e9:.1f}" for n, rate in sorted(int8_best.items()))
        + f"; the roof is the best, at n={int8.n} ({int8.rate.per_second / fp32.rate.per_second:.1f}x "
        "the fp32 roof)"
    )


def _launch_source(c: Calibration, where: str) -> str:
    return (
        f"{where}: onnxruntime's CPU run time per extra kernel, without its profiler: the slope "
        f"from a chain of 1 to {LAUNCH_CHAIN} Add nodes on a 16-float tensor, the two timed in turns, "
        "fastest of batches of runs about 5 ms long (onnxruntime's profiler adds several µs to "
        "each small kernel it times)"
    )


def _run_source(c: Calibration, where: str) -> str:
    return (
        f"{where}: onnxruntime's cost per run beyond its kernels (binding the inputs and outputs, "
        "the call from Python): a one-Add model's run on 16 floats less the launch above, the "
        "intercept of the launch's line; fastest of batches of runs"
    )


def _cold_source(c: Calibration, where: str) -> str:
    return (
        f"{where}: onnxruntime's run time per kernel when the run moves more data than the caches "
        f"hold: the launch above plus what {cold_launch.small_kernels()} small kernels of seven kinds "
        f"on 1x{cold_launch.WIDTH} floats cost beside {cold_launch.BLOCKS} one-row MatMuls streaming "
        f"a 4 MiB weight each, beyond the MatMuls alone and themselves alone, per kernel; the four "
        f"timed in turns, fastest of batches of runs, median of {cold_launch.WINDOWS} windows"
    )


def _stall_source(c: Calibration, where: str) -> str:
    cases = ", ".join(f"{rows}x{width} by {width}x{width}" for rows, width in dram_stall.CASES)
    return (
        f"{where}: the share of a compute-bound product's DRAM time its compute does not hide: "
        f"chains of {dram_stall.FAN} MatMuls ({cases}) with a weight of their own each less with "
        "one weight shared (on chip), over the DRAM roof's time for the weights; median of the "
        "three, each capped at 1; the two chains timed in turns, fastest of batches of runs"
    )


def _split_source(c: Calibration, where: str) -> str:
    cases = ", ".join(
        f"{label} (1 thread {one * 1e6:.3g} µs, {c.threads} threads {many * 1e6:.3g} µs)"
        for label, one, many in c.handoff_cases
    )
    return (
        f"{where}: what a kernel onnxruntime's intra-op pool splits over the {c.threads} threads "
        f"costs beyond the launch and its share of the work (the 16-float Add of the launch never "
        f"leaves the calling thread): the median over {cases} of the time on {c.threads} threads less "
        f"the launch and less the one-thread time beyond the launch over {c.threads}"
    )


def _subnormal_source(c: Calibration, where: str) -> str:
    return (
        f"{where}: what onnxruntime's CPU softmax spends per exp that underflows to a subnormal "
        f"float: an Add of a mask and a Softmax over {'x'.join(map(str, subnormal.SCORES))}, "
        f"with a causal mask of float32's lowest value less with a mask of zeros (the two timed in "
        f"turns, fastest of batches of runs), over the {subnormal.hidden_elements():,} positions "
        f"the causal mask hides"
    )


def _overhead_figures(c: Calibration) -> list[tuple[str, float | None, bool, Callable[[Calibration, str], str]]]:
    """(Target attribute, the figure, whether it was measured, how its source reads), in the file's order."""
    return [
        ("node_overhead_s", c.launch_overhead_s, bool(c.launch_overhead_s), _launch_source),
        ("run_overhead_s", c.run_overhead_s, bool(c.run_overhead_s), _run_source),
        ("cold_node_overhead_s", c.cold_launch_s, bool(c.cold_launch_s), _cold_source),
        ("dram_stall", c.dram_stall, bool(c.dram_stall), _stall_source),
        ("split_overhead_s", c.handoff_s, c.handoff_s is not None, _split_source),
        ("subnormal_s_per_element", c.subnormal_s, bool(c.subnormal_s), _subnormal_source),
    ]


def _onchip_lines(c: Calibration, where: str) -> list[str]:
    levels = c.levels()
    if not (levels.onchip_bytes and levels.onchip_bytes_per_s and levels.onchip_sizes):
        return []
    lo, hi = levels.onchip_sizes
    return [
        *_section(
            "onchip_bytes",
            levels.onchip_bytes,
            f"{where}: the working set where the sweep drops through the geometric mean of the last "
            f"cache plateau's and DRAM's bandwidth, interpolated in log size between the sweep's points "
            f"on either side" + (f" (the OS reports {c.caches})" if c.caches else ""),
        ),
        *_section(
            "onchip_bytes_per_s",
            levels.onchip_bytes_per_s,
            f"{_stream_source(c, where)}; best over the last cache plateau, working sets "
            f"{size_text(lo)}..{size_text(hi)}",
        ),
    ]


def _efficiency_lines(c: Calibration, where: str) -> list[str]:
    """The measured efficiency sections: per class, then per roof of the class."""
    lines = [
        "",
        "# The fraction of the roofline onnxruntime's kernels reach per kernel class: a kernel's roofline",
        "# time is divided by it (onnxroof.measure.achieved; --no-overhead leaves it out).",
    ]
    for kernel_class, cases in c.efficiency.items():
        lines += _class_lines(c, where, kernel_class, cases)
        for roof, roof_cases in c.efficiency_on_roof.get(kernel_class, {}).items():
            lines += _roof_lines(c, where, kernel_class, roof, roof_cases)
    return lines


def _class_lines(c: Calibration, where: str, kernel_class: str, cases: list) -> list[str]:
    sizes_text = "; ".join(
        f"{case.label}{_weights_text(case)}{_curve_only(case)}: {case.measured_s * 1e6:.3g} "
        f"µs against {case.roof_s * 1e6:.3g} µs, {case.fraction:.0%}"
        for case in cases
    )
    points = achieved.columns_points(cases)
    value = round(achieved.class_efficiency([case.fraction for case in cases if not case.curve_only]), 4)
    ops = [m for m in c.efficiency_by_op if m.case.kernel_class == kernel_class]
    by_op = by_op_figures(value, ops)
    curve = c.efficiency_by_rows.get(kernel_class, [])
    lines = [
        "",
        f"[efficiency.{kernel_class}]",
        *_figure_lines(
            value,
            f"{where}: onnxruntime ({c.threads} thread(s), no profiler) on "
            f"{EFFICIENCY_CLASSES[kernel_class]}: the roofline time on the roofs above "
            f"over the time beyond the launch cost, geometric mean of "
            f"{sizes_text}{_columns_text(points)}{_by_op_text(ops, by_op)}{_rows_text(curve)}",
        ),
    ]
    lines += _columns_lines(points) + _rows_lines(curve)
    if by_op:
        lines.append("by_op = { " + ", ".join(f"{op} = {fraction:.4g}" for op, fraction in by_op.items()) + " }")
    return lines


def _roof_lines(c: Calibration, where: str, kernel_class: str, roof: str, roof_cases: list) -> list[str]:
    roof_text = "; ".join(
        f"{case.label}{_curve_only(case)}: {case.measured_s * 1e6:.3g} µs against "
        f"{case.roof_s * 1e6:.3g} µs, {case.fraction:.0%}"
        for case in roof_cases
    )
    roof_curve = c.efficiency_by_rows.get(f"{kernel_class}.{roof}", [])
    roof_points = achieved.columns_points(roof_cases)
    return [
        "",
        f"[efficiency.{kernel_class}.{roof}]",
        *_figure_lines(
            round(achieved.class_efficiency([case.fraction for case in roof_cases if not case.curve_only]), 4),
            f"{where}: onnxruntime ({c.threads} thread(s), no profiler) on its {roof} "
            f"kernels of the class, as a statically quantized (QDQ) model runs them (each "
            f"link of the chain one kernel: the op with its quantize and dequantize): the "
            f"roofline time on the {roof} roof over the time beyond the launch cost, "
            f"geometric mean of {roof_text}{_columns_text(roof_points)}"
            f"{_rows_text(roof_curve)}",
        ),
        *_columns_lines(roof_points),
        *_rows_lines(roof_curve),
    ]


def _by_op_text(measurements: list, by_op: dict[str, float]) -> str:
    """What the class's ``by_op`` table comes from: each op's chain, and which ops it leaves out."""
    if not measurements:
        return ""
    elements = OP_SHAPE[0] * OP_SHAPE[1]
    each = "; ".join(
        f"{m.case.label}: {m.measured_s * 1e6:.3g} µs against {m.roof_s * 1e6:.3g} µs, {m.fraction:.0%}"
        for m in measurements
    )
    left = [m.case.label for m in measurements if not any(op in by_op for op in m.case.ops)]
    not_written = f" ({', '.join(left)}: within {MATERIAL_DIFFERENCE:.0%} of the class's figure, not written)"
    return (
        f"; by_op: per op, a chain of {elements:,} floats on chip (its figure divides the compute and on-chip "
        f"roofs of the kernels running it, the DRAM roof keeps the class's): {each}" + (not_written if left else "")
    )


def _columns_text(points: tuple[tuple[int, float], ...]) -> str:
    """What a ``by_columns`` curve comes from (nothing when it has fewer than two column counts)."""
    if len(points) < 2:
        return ""
    return (
        "; by_columns: per output-column count (a matmul's columns, a convolution's output channels, a depthwise "
        "convolution's channels), the geometric mean of its sizes' fractions (a kernel between two counts is "
        "interpolated in log(columns))"
    )


def _columns_lines(points: tuple[tuple[int, float], ...]) -> list[str]:
    if len(points) < 2:
        return []
    return ["by_columns = [" + ", ".join(f"[{columns}, {fraction:.4g}]" for columns, fraction in points) + "]"]


def _rows_text(curve: list[achieved.Case]) -> str:
    """What a ``by_rows`` curve comes from: each of its sizes at its rows (nothing when it has no
    curve: fewer than two row counts)."""
    if len(rows_efficiency.rows_points(curve)) < 2:
        return ""
    each = "; ".join(
        f"{case.label} ({case.rows:,} rows): {case.measured_s * 1e6:.3g} µs against "
        f"{case.roof_s * 1e6:.3g} µs, {case.fraction:.0%}"
        for case in curve
    )
    return (
        f"; by_rows: per output-row count (a matmul's rows, a convolution's output pixels), the geometric mean "
        f"of its sizes' fractions, a kernel between two counts interpolated in log(rows): {each}"
    )


def _rows_lines(curve: list[achieved.Case]) -> list[str]:
    points = rows_efficiency.rows_points(curve)
    if len(points) < 2:
        return []
    return ["by_rows = [" + ", ".join(f"[{rows}, {fraction:.4g}]" for rows, fraction in points) + "]"]


def _curve_only(case: achieved.Case) -> str:
    return " (on the by_columns curve only)" if case.curve_only else ""


def _weights_text(case: achieved.Case) -> str:
    if case.cached is None:
        return ""
    return " (weights on chip, kept between runs)" if case.cached else " (weights from DRAM)"


HOST_FUSION_RULES = ("epilogue", "normalization")  # what onnxruntime's CPU optimizations fuse, as FUSION_RULES
HOST_FUSION_SOURCE = (
    "onnxruntime's CPU graph optimizations at its default level (onnxruntime.ai/docs/performance/model-optimizations/"
    "graph-optimizations.html): BatchNormalization and Add folded into the Conv before it, Conv/Gemm + activation, "
    "MatMul + Add into Gemm, LayerNormalization and GELU fusions; it fuses no general elementwise chain, and attention "
    "only in models its transformer optimizer rewrote offline"
)


def _figure_lines(value: float, source: str) -> list[str]:
    # a measurement outside what a target file accepts (on a loaded machine a difference of two
    # timings can come out near 0) is written at the range's end, and the source says so
    low, high = FIGURE_RANGE
    if not low <= value <= high:
        written = min(max(value, low), high)
        source += (
            f"; measured {value:.4g}, outside the range a figure may take ({low:g} to {high:g}): written as {written:g}"
        )
        value = written
    if float(value).is_integer() and value < 2**53:
        number = str(int(value))
    else:  # a fraction as it reads (0.8063), a rate or a time in exponent form
        number = f"{value:.4g}" if 1e-3 <= value < 1e3 else f"{value:.6e}"
    return [f"value = {number}", 'tag = "measured"', f"source = {_toml_string(source)}"]


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes (\\" \\\\ \\n \\uXXXX) are valid TOML."""
    return json.dumps(text, ensure_ascii=True)


def calibrated_target(calibration: Calibration, name: str = "this-machine", with_efficiency: bool = True) -> Target:
    """The calibration as a Target, through the same validation a file gets."""
    with tempfile.TemporaryDirectory(prefix="onnxroof-calibrate-") as directory:
        path = Path(directory) / "target.toml"  # not the name: it is the file's text, not its path
        path.write_text(render_target(calibration, name, with_efficiency), encoding="utf-8")
        target = parse_target(path)
    return target
