"""What a kernel's launch costs onnxruntime when a run moves more data than the caches hold
(``cold_node_overhead_s``): the runtime's own state (each node's kernel object, its shapes, the
allocator's lists) and the kernels' code are evicted by the streamed bytes, so every small kernel
pays cache misses the launch measurement's chain of alike Adds (:func:`kernel_figures.measure_launch_line`,
everything hot) never sees.

Measured as an interaction: :data:`BLOCKS` blocks, each a one-row MatMul streaming a 4 MiB weight
of its own and then :data:`SMALL_CYCLE` (small kernels of seven kinds on one row of 1,024 floats,
as a decoder runs between its products), timed whole, without the small kernels, without the
MatMuls, and as one small kernel (the run's own cost), the four taking turns a batch of runs
each (:func:`achieved.fastest_runs_s`), in :data:`WINDOWS` windows. What the small kernels cost
beside the streaming beyond what they cost alone, per kernel, is added to the warm launch cost
(the median over the windows):

    cold = launch + (both - MatMuls only - small only + one kernel) / small kernels

On the machine this was written on (one core): 0.43-0.6 µs per kernel alone, 1.0-1.2 µs beside
the MatMuls; with seven Adds in the cycle instead, only 0.1-0.2 µs more (one op's code stays hot),
which is why the cycle mixes kinds.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

import numpy as np

from . import achieved
from .float_models import float_model

if TYPE_CHECKING:
    import onnx

WIDTH = 1024  # one row of floats; each MatMul's weight is WIDTH x WIDTH floats, 4 MiB
BLOCKS = 6
WINDOWS = 3  # separate measurements, the median taken
# the small kernels after each MatMul, by op (Where takes a Greater before it)
# (no Add or Mul next to a MatMul: onnxruntime would fuse it in)
SMALL_CYCLE = ("Reshape", "Add", "Mul", "Unsqueeze", "Squeeze", "LayerNormalization", "Where", "Softmax") * 2


def interleaved_model(blocks: int, matmuls: bool, small: bool):
    """``blocks`` times: a MatMul of the running row by a weight of its own (with ``matmuls``),
    then the :data:`SMALL_CYCLE` kernels on its output (with ``small``); a model of neither is one Add."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    initializers = [
        numpy_helper.from_array(np.array(v, dtype), name)
        for name, v, dtype in (
            ("one", [1.0], np.float32),
            ("half", [0.5], np.float32),
            ("row", [1, -1], np.int64),
            ("axis", [0], np.int64),
            ("scale", np.ones(WIDTH), np.float32),
            ("bias", np.zeros(WIDTH), np.float32),
        )
    ]
    nodes: list[onnx.NodeProto] = []
    previous = "x"

    def add(op: str, inputs: list[str], **attributes) -> None:
        nonlocal previous
        previous = f"t{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [previous], name=previous, **attributes))

    small_inputs = {
        "Add": ["one"],
        "Mul": ["half"],
        "Reshape": ["row"],
        "Unsqueeze": ["axis"],
        "Squeeze": ["axis"],
        "LayerNormalization": ["scale", "bias"],
        "Softmax": [],
    }
    for block in range(blocks):
        if matmuls:
            weight = f"w{block}"
            initializers.append(
                numpy_helper.from_array((0.01 * rng.standard_normal((WIDTH, WIDTH))).astype(np.float32), weight)
            )
            add("MatMul", [previous, weight])
        for op in SMALL_CYCLE if small else ():
            if op == "Where":
                value = previous
                add("Greater", [value, "one"])
                add("Where", [previous, value, "one"])
            else:
                add(
                    op,
                    [previous, *small_inputs[op]],
                    **({"axis": -1} if op in ("Softmax", "LayerNormalization") else {}),
                )
    if not nodes:
        add("Add", ["x", "one"])
    return float_model(nodes, "interleaved", (1, WIDTH), (1, WIDTH), initializers, output=previous)


def small_kernels() -> int:
    """The small kernels of one model's :data:`BLOCKS` blocks (a Where counts its Greater).

    >>> small_kernels()
    108
    """
    return BLOCKS * (len(SMALL_CYCLE) + SMALL_CYCLE.count("Where"))


def cold_seconds(
    launch_s: float, both_s: float, matmuls_s: float, small_s: float, base_s: float, kernels: int
) -> float:
    """The cold launch cost: the warm ``launch_s`` plus what ``kernels`` small kernels cost beside
    the streaming MatMuls beyond the MatMuls' and their own times, per kernel.

    >>> cold = cold_seconds(0.35e-6, both_s=1251e-6, matmuls_s=1074e-6, small_s=94e-6, base_s=4e-6, kernels=150)
    >>> round(cold * 1e6, 3)
    0.93
    """
    return launch_s + (both_s - matmuls_s - small_s + base_s) / kernels


def measure_cold_launch_s(launch_s: float, budget_s: float, threads: int | None = None) -> float | None:
    """Seconds per kernel launch when the run streams past the caches (see the module); None
    without onnxruntime, or when the small kernels cost no more beside the MatMuls."""
    if not achieved.onnxruntime_available():
        return None
    feeds = {"x": np.random.default_rng(1).standard_normal((1, WIDTH)).astype(np.float32)}
    runs = [
        (achieved.cpu_session(interleaved_model(BLOCKS, matmuls, small), threads, optimize=True), feeds)
        for matmuls, small in ((True, True), (True, False), (False, True), (False, False))
    ]

    # an interaction is a small difference of large times: the median of WINDOWS windows, each
    # timing the four models in turns, so one window the machine slowed cannot set it
    def window() -> float:
        both_s, matmuls_s, small_s, base_s = achieved.fastest_runs_s(runs, budget_s / WINDOWS)  # the runs' order
        return cold_seconds(launch_s, both_s, matmuls_s, small_s, base_s, small_kernels())

    cold_s = statistics.median(window() for _ in range(WINDOWS))
    return cold_s if cold_s > launch_s else None
