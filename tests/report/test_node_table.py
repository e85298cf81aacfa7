"""report/html/node_table.py: the node table, as compact JSON (its rows) and the table's frame,
for report_models.matmul_relu on the hand target."""

from __future__ import annotations

import pytest
from report_models import MATMUL_S, RELU_S, hand_target, matmul_relu

import onnxroof
from onnxroof.report.html.node_table import PAGE_SIZE, node_data, node_table_context


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    return onnxroof.analyze(matmul_relu(), targets=[hand_target(tmp_path_factory.mktemp("targets"))])


def test_a_row_per_node_repeated_strings_as_indices(analysis):
    data = node_data(analysis)
    matmul, relu = data["rows"]
    # name, op, dtype, shape, status (indices), MACs, FLOPs, params, weight, input and output bytes
    assert matmul[:11] == ["matmul", 0, 0, 0, 0, 32, 64, 32, 128, 16, 32]
    assert relu[:11] == ["relu", 1, 0, 0, 0, 0, 8, 0, 0, 32, 32]
    assert data["ops"] == [["MatMul", "ai.onnx::MatMul (matmul)"], ["Relu", "ai.onnx::Relu (elementwise)"]]
    assert data["dtypes"] == ["float32"] and data["shapes"] == ["1×8"]  # both nodes write [1, 8]


def test_each_target_gives_the_kernels_time_and_dram_bytes(analysis):
    (target,) = node_data(analysis)["targets"]
    assert target["name"] == "hand" and target["dram"] == [176, 64]
    assert target["time"] == [pytest.approx(MATMUL_S), pytest.approx(RELU_S)]
    assert target["kernel"] == [None, None]  # one kernel per node


def test_the_frame_s_first_row_shows_the_bytes_sum_and_the_bound(analysis):
    context = node_table_context(analysis)
    assert context["total"] == "2" and context["pages"] == "1" and context["page_size"] == str(PAGE_SIZE)
    metrics = context["rows"][0]["metrics"]
    assert metrics[3]["title"] == "128 weight + 16 input + 32 output = 176 bytes"
    assert metrics[4]["text"] == "0.364"  # 64 FLOPs / 176 bytes
    assert metrics[-1]["text"] == "DRAM"
