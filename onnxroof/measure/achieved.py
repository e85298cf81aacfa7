"""What onnxruntime's CPU kernels achieve on this machine, against the roofline of the roofs
`onnxroof calibrate` measured (issue 20): the cost of a kernel launch, onnxruntime's own copy
bandwidth, and per kernel class (``targets.EFFICIENCY_CLASSES``) the fraction of the roofline
its kernels reach.

Every figure is a *slope*: a session runs a chain of one op and a session runs a chain of
:data:`CHAIN` copies of it; the difference over ``CHAIN - 1`` is one op's time, free of
``session.run``'s fixed cost and of the reads of the model's input and the write of its output.
Each session is timed as the fastest of batches of runs, without onnxruntime's profiler (it adds
several µs to each small kernel).

The measurements built on them (the launch line, the hand-off, the copy bandwidth, the
efficiency per class) are in :mod:`onnxroof.measure.kernel_figures`; the ops whose kernels reach a
different fraction than their class's sizes in :mod:`onnxroof.measure.op_efficiency`; the gemm
sizes of fewer rows in :mod:`onnxroof.measure.rows_efficiency`.

Graph optimizations: ``all`` for the convolution and matmul chains (the NCHWc layout that
deployments run), none for the other chains, where they would only fold the chain away.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

# the quantized models the int8 figures are measured on: read through this module too
from .float_models import float_model, summed_fan_model
from .quantized_chains import qdq_chain_model, qdq_fan_model  # noqa: F401

if TYPE_CHECKING:
    from ..roofline.targets import Target

CHAIN = 9  # ops in the long chain of every slope (the short chain has one)
LAUNCH_CHAIN = 65  # tiny Adds in the launch measurement's long chain: its slope is small
COPY_ELEMENTS = 16 * 2**20  # float32 elements of the copy-bandwidth tensor: 64 MiB, beyond any L3
# class -> (label, op, shape, attributes) per size; shapes of the op's input
CASES: dict[str, tuple[tuple[str, str, tuple[int, ...], dict], ...]] = {
    "gemm": (
        ("MatMul 128x256 by 256x256", "MatMul", (128, 256), {}),
        ("MatMul 128x512 by 512x512", "MatMul", (128, 512), {}),
        ("Conv 3x3, 64 channels, 28x28", "Conv", (1, 64, 28, 28), {"pads": [1, 1, 1, 1]}),
    ),
    "depthwise": (
        ("depthwise Conv 3x3, 32 channels, 112x112", "Conv", (1, 32, 112, 112), {"pads": [1, 1, 1, 1], "group": 32}),
        ("depthwise Conv 3x3, 128 channels, 28x28", "Conv", (1, 128, 28, 28), {"pads": [1, 1, 1, 1], "group": 128}),
        ("depthwise Conv 3x3, 512 channels, 7x7", "Conv", (1, 512, 7, 7), {"pads": [1, 1, 1, 1], "group": 512}),
    ),
    "elementwise": (
        ("Add, 16 Ki floats", "Add", (16384,), {}),
        ("Add, 64 Ki floats", "Add", (65536,), {}),
        ("Add, 256 Ki floats", "Add", (262144,), {}),
    ),
    "reduction": (
        ("Softmax over 128, 1,536 rows", "Softmax", (1536, 128), {"axis": -1}),
        ("LayerNormalization over 768, 128 rows", "LayerNormalization", (128, 768), {"axis": -1}),
        ("MaxPool 3x3, 64 channels, 56x56", "MaxPool", (1, 64, 56, 56), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ),
    "data_movement": (
        ("Gather of 256 rows of 64 floats", "Gather", (256, 64), {"axis": 0}),
        ("Gather of 4,096 rows of 64 floats", "Gather", (4096, 64), {"axis": 0}),
        ("Gather of 1,024 rows of 256 floats", "Gather", (1024, 256), {"axis": 0}),
    ),
    "transpose": (
        ("Transpose 64x3136", "Transpose", (64, 3136), {"perm": [1, 0]}),
        ("Transpose 256x1024", "Transpose", (256, 1024), {"perm": [1, 0]}),
        ("Transpose 512x512", "Transpose", (512, 512), {"perm": [1, 0]}),
    ),
}
# gemv: (label, rows, depth, columns) of matrix-vector products, from 10 columns (ShallowNet's
# 32,768 x 10 Dense) to 1,024, each measured as a model runs it: weights that fit on chip stay in
# cache from one run to the next, larger ones come from DRAM (:func:`gemv_slope_s`)
GEMV_CASES: tuple[tuple[str, int, int, int], ...] = (
    ("MatMul 1x32768 by 32768x10", 1, 32768, 10),
    ("MatMul 1x4096 by 4096x32", 1, 4096, 32),
    ("MatMul 1x1024 by 1024x128", 1, 1024, 128),
    ("MatMul 2x384 by 384x384", 2, 384, 384),
    ("MatMul 1x512 by 512x512", 1, 512, 512),
    ("MatMul 1x1024 by 1024x1024", 1, 1024, 1024),
)
# ops small enough that the per-kernel costs show, large enough that onnxruntime's intra-op pool
# splits them over two threads (on the machine this was written on: from MatMul 48x48 and a
# 256-row Softmax up; an Add of up to 64 Ki floats stays on one thread)
HANDOFF_CASES: tuple[tuple[str, str, tuple[int, ...], dict], ...] = (
    ("MatMul 64x64 by 64x64", "MatMul", (64, 64), {}),
    ("MatMul 96x96 by 96x96", "MatMul", (96, 96), {}),
    ("Conv 3x3, 16 channels, 16x16", "Conv", (1, 16, 16, 16), {"pads": [1, 1, 1, 1]}),
)
# class -> roof -> sizes of fewer channels than the class's own, on its by_columns curve only (its
# figure stays its own sizes'): a depthwise kernel runs the channels across the vector lanes, so 3
# (a separable stem on an RGB image) fill a fraction of them (work.efficiency_columns)
FEW_CHANNEL_CASES: dict[str, dict[str, tuple[tuple[str, str, tuple[int, ...], dict], ...]]] = {
    "depthwise": {
        roof: tuple(
            (
                f"{prefix}depthwise Conv 3x3, {c} channels, 56x56",
                "Conv",
                (1, c, 56, 56),
                {"pads": [1, 1, 1, 1], "group": c},
            )
            for c in (3, 8)
        )
        for roof, prefix in (("fp32", ""), ("int8", "QDQ "))
    }
}
# the classes whose figure follows the output columns (efficiency.<class>.by_columns): each size's
# columns as the placement reads them (case_columns); gemv's sizes give theirs in GEMV_CASES
COLUMNS_CLASSES = ("gemv", "depthwise")
SIZES_IN_ORDER = ("gemm", "gemv", "depthwise", "elementwise", "reduction", "data_movement", "transpose")
# class -> roof -> sizes of the class's ops as a quantized model runs them: QDQ chains (int8
# activations and weights, per-tensor scales, as onnxruntime's static quantizer writes them),
# which onnxruntime turns into its integer kernels (QLinearConv, QLinearMatMul)
ROOF_CASES: dict[str, dict[str, tuple[tuple[str, str, tuple[int, ...], dict], ...]]] = {
    "gemm": {
        "int8": (
            ("QDQ Conv 3x3, 64 channels, 56x56", "Conv", (1, 64, 56, 56), {"pads": [1, 1, 1, 1]}),
            ("QDQ Conv 1x1, 256 channels, 28x28", "Conv", (1, 256, 28, 28), {"kernel": 1}),
            ("QDQ MatMul 128x512 by 512x512", "MatMul", (128, 512), {}),
        )
    },
    # onnxruntime's integer depthwise kernels are its own (on an EPYC 2x slower than fp32 at 32
    # channels, 6x at 3, docs/validation-findings.md): measured, by channels as the float ones
    "depthwise": {
        "int8": (
            (
                "QDQ depthwise Conv 3x3, 32 channels, 112x112",
                "Conv",
                (1, 32, 112, 112),
                {"pads": [1, 1, 1, 1], "group": 32},
            ),
            (
                "QDQ depthwise Conv 3x3, 128 channels, 28x28",
                "Conv",
                (1, 128, 28, 28),
                {"pads": [1, 1, 1, 1], "group": 128},
            ),
            ("QDQ depthwise Conv 3x3, 512 channels, 7x7", "Conv", (1, 512, 7, 7), {"pads": [1, 1, 1, 1], "group": 512}),
        )
    },
    # a batch-1 quantized Linear layer: onnxruntime's integer GEMM on one row reaches another share
    # of the int8 roof than its float gemv of the fp32 one; fans, not chains (roof_builder)
    "gemv": {
        "int8": (
            ("QDQ MatMul 1x32768 by 32768x10", "MatMul", (1, 32768), {"columns": 10}),
            ("QDQ MatMul 1x1024 by 1024x128", "MatMul", (1, 1024), {"columns": 128}),
            ("QDQ MatMul 1x1024 by 1024x1024", "MatMul", (1, 1024), {"columns": 1024}),
        )
    },
}

Timer = Callable[[], float]


class Runnable(Protocol):
    """What is timed: an onnxruntime InferenceSession, or a test's stand-in with its ``run``."""

    def run(self, outputs: list[str] | None, feeds: dict) -> object: ...


def case_macs(op: str, shape: tuple[int, ...], attributes: dict, builder: Callable | None = None) -> int:
    """Multiply-adds of one link of a chain (``builder``: :func:`chain_model`, or
    :func:`qdq_chain_model`), as onnxroof's cost rules count them: one link analysed.

    >>> case_macs("MatMul", (128, 256), {}), case_macs("Conv", (1, 64, 28, 28), {"pads": [1, 1, 1, 1]})
    (8388608, 28901376)
    >>> case_macs("Conv", (1, 32, 112, 112), {"pads": [1, 1, 1, 1], "group": 32}), case_macs("Add", (16,), {})
    (3612672, 0)
    """
    from ..pipeline import analyze

    return analyze((builder or chain_model)(op, shape, attributes, 1)).totals.macs


def case_columns(op: str, shape: tuple[int, ...], attributes: dict, builder: Callable | None = None) -> int | None:
    """The output columns of one link of a chain as the placement reads them for a ``by_columns``
    curve (``work.efficiency_columns``: a depthwise convolution's channels)."""
    from ..pipeline import analyze
    from ..roofline.work import efficiency_columns

    return efficiency_columns([r for r in analyze((builder or chain_model)(op, shape, attributes, 1)).nodes if r.macs])


def per_kernel_seconds(one_s: float, many_s: float, kernels: int = CHAIN) -> float:
    """The slope between one run of a single op and one run of ``kernels`` of them.

    >>> round(per_kernel_seconds(one_s=20e-6, many_s=660e-6, kernels=65), 9)  # 640 µs over 64 more
    1e-05
    """
    return max(many_s - one_s, 0.0) / (kernels - 1)


def efficiency(roof_s: float, measured_s: float, launch_s: float = 0.0) -> float:
    """The fraction of the roofline a kernel reached: its roofline time over what it took beyond
    the launch cost, at most 1.

    >>> efficiency(roof_s=40e-6, measured_s=100.5e-6, launch_s=0.5e-6)
    0.4
    >>> efficiency(roof_s=40e-6, measured_s=30e-6)  # faster than the roofline: the roofs are low
    1.0
    """
    beyond = measured_s - launch_s
    return 1.0 if beyond <= roof_s else roof_s / beyond


def class_efficiency(fractions: list[float]) -> float:
    """A class's figure: the geometric mean of its sizes' fractions (a ratio's natural mean).

    >>> round(class_efficiency([0.2, 0.8]), 6)
    0.4
    """
    return math.exp(sum(math.log(f) for f in fractions) / len(fractions))


@dataclass(frozen=True)
class Case:
    """One size of one class: what the op took, what the roofline says, and the fraction."""

    label: str
    measured_s: float  # one op (the slope)
    roof_s: float  # one op on the measured roofs
    fraction: float
    columns: int | None = None  # its output columns, where the class's figure follows them (COLUMNS_CLASSES)
    cached: bool | None = None  # whether its weights stayed on chip (gemv), None: not a question
    rows: int | None = None  # its product's output rows, on a class's by_rows curve (rows_efficiency); None: not on one
    curve_only: bool = False  # a size of FEW_CHANNEL_CASES: on the class's by_columns curve, not in its figure


# --- the chains --------------------------------------------------------------------------------


def chain_model(op: str, shape: tuple[int, ...], attributes: dict, length: int):
    """``length`` ``op`` nodes in a chain on a float32 input of ``shape``, each of the same shape
    (a Gather takes the rows in reverse order)."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, initializers, previous = [], [], "x"
    if op == "LayerNormalization":
        initializers += [
            numpy_helper.from_array(np.ones(shape[-1], np.float32), "scale"),
            numpy_helper.from_array(np.zeros(shape[-1], np.float32), "bias"),
        ]
    if op == "Gather":
        initializers.append(numpy_helper.from_array(np.arange(shape[0] - 1, -1, -1, dtype=np.int64), "rows"))
    if op == "Mul":
        initializers.append(numpy_helper.from_array(np.array(0.5, np.float32), "half"))
    for index in range(length):
        output = "y" if index == length - 1 else f"t{index}"
        name = f"{op.lower()}_{index}"
        if op == "MatMul":
            initializers.append(
                numpy_helper.from_array(
                    (rng.standard_normal((shape[-1], shape[-1])) * 0.01).astype(np.float32), f"w{index}"
                )
            )
            nodes.append(helper.make_node("MatMul", [previous, f"w{index}"], [output], name=name))
        elif op == "Conv":
            channels, group = shape[1], attributes.get("group", 1)
            weight = rng.standard_normal((channels, channels // group, 3, 3)) * 0.01
            initializers.append(numpy_helper.from_array(weight.astype(np.float32), f"w{index}"))
            nodes.append(helper.make_node("Conv", [previous, f"w{index}"], [output], name=name, **attributes))
        elif op == "Add":
            nodes.append(helper.make_node("Add", [previous, "x"], [output], name=name))
        elif op == "Mul":
            nodes.append(helper.make_node("Mul", [previous, "half"], [output], name=name))
        elif op == "LayerNormalization":
            nodes.append(helper.make_node(op, [previous, "scale", "bias"], [output], name=name, **attributes))
        elif op == "Gather":
            nodes.append(helper.make_node("Gather", [previous, "rows"], [output], name=name, **attributes))
        else:
            nodes.append(helper.make_node(op, [previous], [output], name=name, **attributes))
        previous = output
    return float_model(nodes, f"{op.lower()}-chain", shape, shape, initializers)


def sizes(kernel_class: str, roof: str) -> tuple:
    """A class's sizes on ``roof`` (``CASES`` for fp32, else ``ROOF_CASES``), then its
    :data:`FEW_CHANNEL_CASES` (measured for its curve only)."""
    own = CASES.get(kernel_class, ()) if roof == "fp32" else ROOF_CASES.get(kernel_class, {}).get(roof, ())
    return tuple(own) + FEW_CHANNEL_CASES.get(kernel_class, {}).get(roof, ())


def roof_builder(kernel_class: str) -> Callable:
    """The quantized model a class's :data:`ROOF_CASES` are measured on: a fan of QDQ matmuls for
    gemv (``quantized_chains.qdq_fan_model``), else a chain (:func:`qdq_chain_model`)."""
    return qdq_fan_model if kernel_class == "gemv" else qdq_chain_model


def fan_model(rows: int, depth: int, columns: int, length: int, shared: bool = False):
    """``length`` MatMuls of one ``rows`` x ``depth`` input by ``depth`` x ``columns`` weights
    (one weight for all of them if ``shared``, else each its own), their outputs summed into one
    (a Sum of ``length`` small inputs, so that the run returns one output whatever the length)."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    initializers, nodes = [], []
    for index in range(length):
        weight = "w0" if shared else f"w{index}"
        if index == 0 or not shared:
            initializers.append(
                numpy_helper.from_array((rng.standard_normal((depth, columns)) * 0.01).astype(np.float32), weight)
            )
        nodes.append(helper.make_node("MatMul", ["x", weight], [f"p{index}"], name=f"matmul_{index}"))
    return summed_fan_model(nodes, "gemv-fan", (rows, depth), (rows, columns), initializers, length)


def gemv_fits(rows: int, depth: int, columns: int, target: Target) -> bool:
    """Whether a gemv's weights, input and output (float32) fit in ``target``'s on-chip memory,
    and it keeps weights there between runs: then its weights come from cache, as the placement
    reads a model's whose parameters fit."""
    size = 4 * (depth * columns + rows * (depth + columns))
    return bool(target.weights_resident and target.onchip_bytes and size <= target.onchip_bytes.value)


def gemv_roof_s(rows: int, depth: int, columns: int, target: Target) -> float:
    """The roofline seconds of one ``rows`` x ``depth`` by ``depth`` x ``columns`` float32 matmul
    inside a model on ``target``: 2 rows depth columns FLOPs; its weights, input and output on chip
    (when the target gives on-chip memory), the weights also from DRAM unless they fit
    (:func:`gemv_fits`). No efficiency, no launch cost.

    >>> from onnxroof.roofline.targets import Figure, Target
    >>> t = Target("t", "", "", {"fp32": Figure(1e11, "measured", "x")}, Figure(1e10, "measured", "x"),
    ...            onchip_bytes=Figure(2**21, "measured", "x"), onchip_bytes_per_s=Figure(1e11, "measured", "x"),
    ...            weights_resident=True)
    >>> round(gemv_roof_s(1, 512, 512, t) * 1e6, 4)  # on chip: 4 x (262,144 + 1,024) B at 100 GB/s
    10.5267
    >>> round(gemv_roof_s(1, 1024, 1024, t) * 1e6, 4)  # 4 MiB does not fit: 4,194,304 B from DRAM at 10 GB/s
    419.4304
    """
    from ..roofline.placement import roofline

    weights, activations = 4 * depth * columns, 4 * rows * (depth + columns)
    onchip = weights + activations if target.onchip_bytes_per_s else 0
    dram = 0 if gemv_fits(rows, depth, columns, target) else weights + (0 if onchip else activations)
    _, peak = target.roof("float32")
    onchip_bw = target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None
    return roofline(2 * rows * depth * columns, dram, peak, target.dram_bytes_per_s.value, onchip, onchip_bw).time_s


def gemv_slope_s(
    rows: int, depth: int, columns: int, threads: int | None, budget_s: float, cached: bool, length: int = CHAIN
) -> float:
    """onnxruntime's seconds for one gemv (no profiler), as a model runs it. ``cached``: a model of
    one gemv (its output through a one-input Sum) against a model of one Add on 16 floats, both
    run over and over: the weights are read once per run and kept in cache from one run to the
    next, as far as the runtime's own traffic between runs lets them stay; the difference is the
    gemv's time with one launch (the Sum's). Else the slope over fans of 1 and ``length`` gemvs on
    weights of their own, which come from DRAM."""
    feeds = {"x": np.random.default_rng(1).standard_normal((rows, depth)).astype(np.float32)}
    if cached:
        gemv, empty = fastest_runs_s(
            [
                (cpu_session(fan_model(rows, depth, columns, 1, False), threads, True), feeds),
                (cpu_session(chain_model("Add", (16,), {}, 1), threads, False), {"x": np.ones(16, np.float32)}),
            ],
            budget_s,
        )
        return max(gemv - empty, 0.0)
    one, many = fastest_runs_s(
        [(cpu_session(fan_model(rows, depth, columns, n, False), threads, True), feeds) for n in (1, length)], budget_s
    )
    return per_kernel_seconds(one, many, length)


def columns_points(cases: list[Case]) -> tuple[tuple[int, float], ...]:
    """The ``by_columns`` points of a class's cases: per output-column count, the geometric mean
    of its cases' fractions (4 significant digits: a 3-channel int8 depthwise kernel reaches 0.003),
    columns increasing.

    >>> columns_points([Case("a", 1, 1, 0.2, 10), Case("b", 1, 1, 0.8, 512), Case("c", 1, 1, 0.5, 10)])
    ((10, 0.3162), (512, 0.8))
    >>> columns_points([Case("a", 1, 1, 0.0033412, 3)])
    ((3, 0.003341),)
    """
    by_columns: dict[int, list[float]] = {}
    for case in cases:
        if case.columns:
            by_columns.setdefault(case.columns, []).append(case.fraction)
    return tuple(
        (columns, float(f"{class_efficiency(fractions):.4g}")) for columns, fractions in sorted(by_columns.items())
    )


def cpu_session(model, threads: int | None, optimize: bool):
    """An onnxruntime CPU session of ``model`` on ``threads`` (None: its default), with its graph
    optimizations or none (a chain measured as written)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def fastest_run_s(session, feeds: dict, budget_s: float, timer: Timer = time.perf_counter) -> float:
    """Seconds of one run: the fastest of batches of runs (each batch about 5 ms) in ``budget_s``."""
    return fastest_runs_s([(session, feeds)], budget_s, timer)[0]


def fastest_runs_s(
    runs: Sequence[tuple[Runnable, dict]], budget_s: float, timer: Timer = time.perf_counter, rewarm_s: float = 0.0
) -> list[float]:
    """Seconds of one run of each (session, feeds) in ``runs``: the fastest of batches of runs (each
    batch about 5 ms), the sessions taking turns a batch each for ``budget_s`` in all.

    Taking turns is what makes their differences (a chain of 9 less a chain of 1) hold: on a shared
    machine the pace drifts by tens of percent within seconds, and sessions timed one after the
    other would each see a different machine. With ``rewarm_s`` each turn starts with untimed runs
    of its session for at least that long (one run at least): a model of 5 ms or more is timed one
    run per turn, and that run would otherwise find the caches as the other session left them (its
    weights evicted; a 4 ms CNN here takes 4-5 runs of its own to get back to its pace), where a
    model run over and over, as a server runs it and as the prediction has it (``[weights]
    resident``), finds them as its own last runs left them.

    >>> ticks = iter(range(10**6))
    >>> class Session:
    ...     def __init__(self, cost): self.cost = cost
    ...     def run(self, outputs, feeds):
    ...         for _ in range(self.cost): next(ticks)
    >>> fastest_runs_s([(Session(1), {}), (Session(3), {})], 0.0, timer=lambda: next(ticks))
    [2.0, 4.0]
    """
    batches = []
    for session, feeds in runs:
        for _ in range(3):  # warm up: the first runs allocate
            session.run(None, feeds)
        start = timer()
        session.run(None, feeds)
        batches.append(max(1, int(5e-3 / max(timer() - start, 1e-7))))
    best = [math.inf] * len(runs)
    deadline = time.monotonic() + budget_s
    for attempt in range(1000):
        for index, ((session, feeds), batch) in enumerate(zip(runs, batches)):
            if rewarm_s > 0:
                start = timer()
                session.run(None, feeds)
                while timer() - start < rewarm_s:
                    session.run(None, feeds)
            start = timer()
            for _ in range(batch):
                session.run(None, feeds)
            best[index] = min(best[index], (timer() - start) / batch)
        if attempt >= 2 and time.monotonic() > deadline:
            break
    return best


def chain_slope_s(
    op: str, shape: tuple[int, ...], attributes: dict, threads: int | None, budget_s: float, **chain: Any
) -> float:
    """onnxruntime's seconds for one more ``op`` in a chain (no profiler): the slope between
    :func:`chain_times_s`'s two chains; ``chain`` are its ``length``, ``builder`` and ``near_one``."""
    one_s, many_s = chain_times_s(op, shape, attributes, threads, budget_s, **chain)
    return per_kernel_seconds(one_s, many_s, chain.get("length", CHAIN))


def chain_times_s(
    op: str,
    shape: tuple[int, ...],
    attributes: dict,
    threads: int | None,
    budget_s: float,
    length: int = CHAIN,
    builder: Callable = chain_model,
    near_one: bool = False,
) -> list[float]:
    """onnxruntime's seconds for a run of the chain of 1 ``op`` and of the chain of ``length``,
    timed in turns (:func:`fastest_runs_s`); ``builder`` makes the chain (:func:`chain_model`,
    or :func:`qdq_chain_model` for the quantized one). The input is drawn from a standard normal
    distribution, or with ``near_one`` from 1 + 0.01 x one: positive and near 1, so that a chain
    of square roots, divisions by it or squares stays finite and never reaches the denormal
    floats that slow a CPU's arithmetic down."""
    values = np.random.default_rng(1).standard_normal(shape)
    feeds = {"x": (1 + 0.01 * values if near_one else values).astype(np.float32)}
    optimize = op in ("MatMul", "Conv")
    return fastest_runs_s(
        [(cpu_session(builder(op, shape, attributes, n), threads, optimize), feeds) for n in (1, length)], budget_s
    )


def roof_slope_s(
    op: str,
    shape: tuple[int, ...],
    attributes: dict,
    target: Target,
    length: int = CHAIN,
    builder: Callable = chain_model,
    fusion: str = "none",
    dtype: str = "model",
) -> float:
    """onnxroof's roofline seconds for one more ``op`` in the same chain on ``target`` (one kernel
    per node unless ``fusion`` says otherwise, no launch cost, peak figures); ``dtype`` re-costs it
    (a quantized chain as ``--dtype int8`` costs an int8 kernel: int8 in and out, where its
    dequantized float tensors would count 4 bytes an element)."""
    from ..options import AnalysisOptions
    from ..pipeline import analyze

    at_the_roof = AnalysisOptions(targets=(target,), fusion=fusion, overhead=False, dtype=dtype)

    def latency(n: int) -> float:
        return analyze(builder(op, shape, attributes, n), options=at_the_roof).targets[0].latency_s

    return per_kernel_seconds(latency(1), latency(length), length)


def onnxruntime_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True
