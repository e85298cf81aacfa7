"""The model `onnxroof calibrate` times for ``cold_node_overhead_s``: what it runs is what the
figure's source says (the timing itself is the calibration's business)."""

from __future__ import annotations

from collections import Counter

import onnx
import pytest

from onnxroof.measure import cold_launch


def test_the_interleaved_model_puts_the_small_kernels_between_streaming_matmuls():
    model = cold_launch.interleaved_model(cold_launch.BLOCKS, matmuls=True, small=True)
    onnx.checker.check_model(model, full_check=True)
    ops = Counter(node.op_type for node in model.graph.node)
    # 6 blocks of a MatMul and 2 x 8 small kernels, a Where with its Greater: 6 x 18 = 108 small
    assert ops["MatMul"] == 6 and sum(ops.values()) - ops["MatMul"] == cold_launch.small_kernels() == 108
    weights = [i for i in model.graph.initializer if i.name.startswith("w")]
    assert len(weights) == 6 and all(tuple(w.dims) == (1024, 1024) for w in weights)  # 4 MiB each


def test_onnxruntime_runs_every_small_kernel_it_is_given(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    for matmuls in (True, False):
        options = ort.SessionOptions()
        options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
        options.log_severity_level = 3
        model = cold_launch.interleaved_model(1, matmuls=matmuls, small=True)
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        # nothing removed or fused (a Mul by one, an Add next to a MatMul would be)
        assert len(onnx.load(tmp_path / "optimized.onnx").graph.node) == len(model.graph.node)
