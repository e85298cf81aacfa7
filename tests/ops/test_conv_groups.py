"""A convolution whose ``group`` does not fit its channels is invalid (onnxruntime refuses it):
not counted, with the reason, in every convolution rule through one check (issue 32, item 12).
Numbers worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import make_model
from onnx import TensorProto, helper

import onnxroof
from onnxroof.cli.app import main

F32, U8 = TensorProto.FLOAT, TensorProto.UINT8


def conv_model(op_type="Conv", x=(1, 3, 8, 8), w=(4, 3, 3, 3), dtype=F32, y=None, **attributes):
    node = helper.make_node(op_type, ["x", "w"], ["y"], name="conv", **attributes)
    weight = np.zeros(w, np.float32 if dtype == F32 else np.uint8)
    output_type = TensorProto.INT32 if op_type == "ConvInteger" else dtype
    return make_model([node], [("x", dtype, list(x))], [("y", output_type, y)], [("w", weight)])


def only_record(model):
    analysis = onnxroof.analyze(model)
    (record,) = analysis.nodes
    return analysis, record


def test_a_valid_conv_is_counted():
    # x [1, 3, 8, 8], w [4, 3, 3, 3], group 1: output [1, 4, 6, 6]; 4·36·3·9 = 3,888 MACs
    analysis, record = only_record(conv_model())
    assert record.status == "ok" and analysis.totals.macs == 3_888


@pytest.mark.parametrize(
    "group, reason",
    [
        (2, "the input's 3 channels are not divisible by group=2"),
        (0, "group=0: a convolution has at least 1 group"),
        (-1, "group=-1: a convolution has at least 1 group"),
    ],
)
def test_a_group_that_does_not_divide_the_channels_is_invalid(group, reason):
    analysis, record = only_record(conv_model(group=group))
    assert (record.status, record.reason, record.counted, record.macs) == ("invalid", reason, False, 0)
    assert analysis.totals.macs == 0 and analysis.totals.not_counted == {"Conv": 1}
    assert any(w.startswith("1 invalid node(s)") and reason in w for w in analysis.warnings)


def test_the_weight_must_hold_the_channels_per_group():
    # 4 channels in 2 groups: 2 per group, but the weight's axis 1 says 4
    _, record = only_record(conv_model(x=(1, 4, 8, 8), w=(4, 4, 3, 3), group=2))
    assert record.status == "invalid"
    assert record.reason == "the weight's 4 input channels (axis 1) are not the input's 4 channels / group=2 = 2"
    # 3 output channels in 2 groups
    _, record = only_record(conv_model(x=(1, 4, 8, 8), w=(3, 2, 3, 3), group=2))
    assert record.reason == "the weight's 3 output channels (axis 0) are not divisible by group=2"
    # a valid grouped conv: x [1, 4, 8, 8], w [4, 2, 3, 3], group 2: 4·36·2·9 = 2,592 MACs
    _, record = only_record(conv_model(x=(1, 4, 8, 8), w=(4, 2, 3, 3), group=2))
    assert record.status == "ok" and record.macs == 2_592


def test_conv_transpose_shares_the_check():
    _, record = only_record(conv_model("ConvTranspose", x=(1, 3, 4, 4), w=(3, 2, 3, 3), group=2))
    assert (record.status, record.reason) == ("invalid", "the input's 3 channels are not divisible by group=2")
    # its weight is [C, M/group, k, k]: C at axis 0
    _, record = only_record(conv_model("ConvTranspose", x=(1, 4, 4, 4), w=(2, 2, 3, 3), group=2))
    assert record.reason == "the weight's 2 input channels (axis 0) are not the input's 4"
    # valid: x [1, 4, 4, 4], w [4, 1, 3, 3], group 2: 4·16·1·9 = 576 MACs (each input element scattered once)
    _, record = only_record(conv_model("ConvTranspose", x=(1, 4, 4, 4), w=(4, 1, 3, 3), group=2))
    assert record.status == "ok" and record.macs == 576


def test_the_quantized_convolutions_share_the_check():
    _, record = only_record(conv_model("ConvInteger", dtype=U8, group=2))
    assert (record.status, record.reason) == ("invalid", "the input's 3 channels are not divisible by group=2")
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], group=0)
    scalars = [
        ("xs", np.float32(0.1)),
        ("xz", np.uint8(0)),
        ("ws", np.float32(0.1)),
        ("wz", np.uint8(0)),
        ("ys", np.float32(0.1)),
        ("yz", np.uint8(0)),
    ]
    model = make_model(
        [node], [("x", U8, [1, 3, 8, 8])], [("y", U8, None)], [("w", np.zeros((4, 3, 3, 3), np.uint8)), *scalars]
    )
    _, record = only_record(model)
    assert (record.status, record.reason) == ("invalid", "group=0: a convolution has at least 1 group")


def test_the_command_line_says_incomplete_or_refuses_a_model_of_nothing_else(tmp_path, capsys):
    path = tmp_path / "grouped.onnx"
    path.write_bytes(conv_model(group=2, y=[1, 4, 6, 6]).SerializeToString())
    assert main(["summary", str(path), "--format", "json"]) == 2  # nothing could be counted
    line = capsys.readouterr().err.strip().splitlines()[-1]  # after the warnings, the error
    assert (
        line.startswith("onnxroof: error: grouped: nothing could be counted")
        and "Conv conv: the input's 3 channels are not divisible by group=2; fix the export" in line
    )
    model = conv_model(group=2, y=[1, 4, 6, 6])
    model.graph.node.append(helper.make_node("Relu", ["x"], ["r"], name="relu"))
    model.graph.output.append(helper.make_tensor_value_info("r", F32, [1, 3, 8, 8]))
    path.write_bytes(model.SerializeToString())
    assert main(["summary", str(path), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["complete"] is False and document["totals"]["macs"] == 0
    assert document["totals"]["flops"] == 192  # the Relu: 1 FLOP on each of 3·8·8 elements
    assert [(n["status"], n["counted"]) for n in document["nodes"]] == [("invalid", False), ("ok", True)]


def test_a_kernel_shape_that_contradicts_the_weight_is_invalid():
    # shape inference sizes the output by the attribute (8 - 5 + 1 = 4); the weight's kernel is 3x3
    _, record = only_record(conv_model(kernel_shape=[5, 5], y=[1, 4, 4, 4]))
    assert (record.status, record.reason) == ("invalid", "kernel_shape=[5, 5] is not the weight's kernel 3x3")
    _, record = only_record(conv_model("ConvTranspose", x=(1, 3, 4, 4), w=(3, 2, 3, 3), kernel_shape=[2, 2]))
    assert (record.status, record.reason) == ("invalid", "kernel_shape=[2, 2] is not the weight's kernel 3x3")
    # the attribute as the weight has it: valid, 3,888 MACs as without it
    _, record = only_record(conv_model(kernel_shape=[3, 3]))
    assert record.status == "ok" and record.macs == 3_888


@pytest.mark.parametrize(
    "x, attributes, reason",
    [
        ((1, 3, 8, 8), {"group": 2}, "Conv conv: the input's 3 channels are not divisible by group=2"),
        (("n", 3, 8, 8), {"group": 2}, "Conv conv: the input's 3 channels are not divisible by group=2"),
        ((1, 3, 8, 8), {"kernel_shape": [5, 5]}, "Conv conv: kernel_shape=[5, 5] is not the weight's kernel 3x3"),
        ((1, 3, 8, 8), {"strides": [0, 0]}, "Attribute strides must only contain positive values"),
    ],
)
def test_symbolic_refuses_an_invalid_conv_as_summary_does(tmp_path, capsys, x, attributes, reason):
    # with a free dim (n) or none, the formulas' analyses count nothing: the same refusal, exit 2
    path = tmp_path / "bad.onnx"
    path.write_bytes(conv_model(x=x, y=["a", "b", "c", "d"], **attributes).SerializeToString())
    for flags in ([], ["--symbolic"]):
        if x[0] == "n" and not flags:
            flags = ["--dim", "n=2"]
        assert main(["summary", str(path), *flags]) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("onnxroof: error: bad: nothing could be counted: ") and reason in last


def test_symbolic_warns_of_an_invalid_conv_beside_counted_nodes(tmp_path, capsys):
    model = conv_model(x=("n", 3, 8, 8), y=["a", "b", "c", "d"], group=2)
    model.graph.node.append(helper.make_node("Relu", ["x"], ["r"], name="relu"))
    model.graph.output.append(helper.make_tensor_value_info("r", F32, ["n", 3, 8, 8]))
    path = tmp_path / "half.onnx"
    path.write_bytes(model.SerializeToString())
    assert main(["summary", str(path), "--symbolic"]) == 0
    out, err = capsys.readouterr()
    assert "onnxroof: warning: half: 1 invalid node(s), which no runtime runs, are not counted: Conv conv" in err
    assert "some nodes are not counted at these values" in out
    assert main(["summary", str(path), "--symbolic", "--strict"]) == 2
