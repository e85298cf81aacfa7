"""What one exp that underflows to a subnormal float costs onnxruntime's CPU softmax
(``subnormal_s_per_element``, :mod:`onnxroof.cost.masks`): an Add of a mask and a Softmax over
:data:`SCORES` (a 4-head, 128-token prefill's attention scores), timed once with a mask of zeros
and once with a causal mask of float32's lowest value (what transformers' exporters write); the
difference over the positions the causal mask hides. The two runs move the same bytes and do
the same arithmetic, so the difference is the slow path alone.
"""

from __future__ import annotations

import numpy as np

from . import achieved
from .float_models import float_model

SCORES = (1, 4, 128, 128)  # batch, heads, queries, keys


def masked_softmax_model(mask: np.ndarray):
    """y = Softmax(x + mask) over the last axis, ``mask`` [1, 1, queries, keys] an initializer."""
    from onnx import helper, numpy_helper

    nodes = [
        helper.make_node("Add", ["x", "mask"], ["masked"], name="add_mask"),
        helper.make_node("Softmax", ["masked"], ["y"], name="softmax", axis=-1),
    ]
    return float_model(nodes, "masked-softmax", SCORES, SCORES, [numpy_helper.from_array(mask, "mask")])


def hidden_elements() -> int:
    """The positions a causal mask hides in :data:`SCORES`: heads x q (q - 1) / 2.

    >>> hidden_elements()
    32512
    """
    _, heads, queries, _ = SCORES
    return heads * queries * (queries - 1) // 2


def measure_subnormal_s(budget_s: float, threads: int | None = None) -> float | None:
    """Seconds per hidden position of a causal mask: (masked run - zero-mask run) / the hidden
    positions, the two timed in turns over ``budget_s`` (:func:`achieved.fastest_runs_s`); None without
    onnxruntime, or when the masked run is not slower (a CPU or runtime that flushes subnormals)."""
    if not achieved.onnxruntime_available():
        return None
    queries, keys = SCORES[-2:]
    causal = np.triu(np.full((queries, keys), np.finfo(np.float32).min, np.float32), 1)[None, None]
    scores = {"x": np.random.default_rng(0).standard_normal(SCORES).astype(np.float32)}
    plain_s, masked_s = achieved.fastest_runs_s(
        [
            (achieved.cpu_session(masked_softmax_model(mask), threads, optimize=True), scores)
            for mask in (np.zeros_like(causal), causal)
        ],
        budget_s,
    )
    slow_s = (masked_s - plain_s) / hidden_elements()
    return slow_s if slow_s > 0 else None
