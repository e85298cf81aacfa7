"""Running the model with onnxruntime: the inputs it is given, onnxruntime's errors in one line
and, when onnxruntime is installed, a real run whose every kernel is mapped to the nodes."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from conftest import make_model
from onnx import TensorProto, helper

import onnxroof
from onnxroof.core.errors import UsageError
from onnxroof.core.examples import build_example
from onnxroof.measure.profile_run import import_onnxruntime, onnxruntime_error, profile_model, random_inputs
from onnxroof.report.profile_json import profile_document
from onnxroof.report.text.profile_table import render_profile_table
from onnxroof.roofline.targets import load_target

F32 = TensorProto.FLOAT


@pytest.fixture(scope="module")
def minigooglenet():
    return onnxroof.analyze(build_example("minigooglenet"))


def test_missing_onnxruntime_is_a_one_line_usage_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    with pytest.raises(UsageError, match=r"pip install onnxroof\[profile\]"):
        import_onnxruntime()


def test_onnxruntime_errors_name_the_op_and_node(minigooglenet):
    no_kernel = RuntimeError(
        "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation "
        "for Conv(11) node with name 'conv2d_3'"
    )
    message = str(onnxruntime_error(no_kernel, minigooglenet))
    assert "no CPU kernel for node 'conv2d_3' (Conv, opset 11, inputs float32" in message
    custom = RuntimeError(
        "[ONNXRuntimeError] : 1 : FAIL : Fatal error: my.domain:MyOp(-1) is not a registered function/op"
    )
    assert "op MyOp of domain my.domain" in str(onnxruntime_error(custom, minigooglenet))
    other = RuntimeError("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions for input: input\nmore")
    assert str(onnxruntime_error(other, minigooglenet)) == (
        "onnxruntime cannot run minigooglenet: Got invalid dimensions for input: input"
    )


def test_unbound_dims_cannot_be_run():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="r")], [("x", F32, ["batch", 4])], [("y", F32, ["batch", 4])]
    )
    with pytest.raises(UsageError, match="--dim batch="):
        random_inputs(onnxroof.analyze(model, partial=True))
    feeds = random_inputs(onnxroof.analyze(model, dims={"batch": 2}))
    assert feeds["x"].shape == (2, 4) and feeds["x"].dtype == np.float32


def test_integer_inputs_are_ones():
    model = make_model(
        [helper.make_node("Cast", ["ids"], ["y"], name="c", to=F32)],
        [("ids", TensorProto.INT64, [1, 5])],
        [("y", F32, [1, 5])],
    )
    feeds = random_inputs(onnxroof.analyze(model))
    assert feeds["ids"].dtype == np.int64 and (feeds["ids"] == 1).all()


@pytest.mark.parametrize("level", ["all", "basic", "disable"])
def test_profile_the_example_every_node_onnxruntime_ran_is_measured(tmp_path, level):
    pytest.importorskip("onnxruntime")
    model = build_example("minigooglenet")
    analysis = onnxroof.analyze(model)
    raw = tmp_path / "raw.json"
    result = profile_model(
        analysis, load_target("myriad-x"), runs=2, model=model, warmup=1, optimization=level, keep_profile=raw
    )
    ran = {
        e["name"][: -len("_kernel_time")]
        for e in json.loads(raw.read_text())
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")
    }
    kernels = {k.name: k for k in result.mapping.kernels}
    assert set(kernels) == ran
    for name in ran:
        if name.startswith("Reorder"):
            assert kernels[name].nodes == []  # layout conversions onnxruntime inserted
            continue
        assert kernels[name].nodes, f"kernel {name} was not mapped"
        for node in kernels[name].nodes:
            assert result.mapping.seconds[node] is not None and result.mapping.seconds[node] >= 0
    assert result.mapping.not_seen == []
    assert {n.name for n in result.nodes if n.measured_s is not None} == {r.name for r in analysis.nodes}
    assert all(n.predicted_s is not None for n in result.nodes)
    if level == "disable":
        assert all(len(k.nodes) == 1 for k in kernels.values())  # one kernel per node, nothing fused
    document = json.loads(json.dumps(profile_document(result)))
    assert document["schema"] == "onnxroof-profile/1" and document["onnxruntime"]["optimization"] == level
    assert document["totals"]["measured_s"] > 0 and document["totals"]["predicted_s"] > 0
    assert document["totals"]["wall_s"] > 0
    assert "prediction error" in render_profile_table(result)


def test_integer_nodes_onnxruntime_ran_in_a_float_kernel_are_placed_in_float32():
    # a QDQ model's convolution read as int8 (its inputs come out of DequantizeLinear): in an
    # onnxruntime QLinearConv it stays int8; in a plain Conv kernel (onnxruntime kept it in float,
    # dequantizing the weights at run time) it computes in float32; a float node is left alone
    from types import SimpleNamespace as S

    from onnxroof.measure.profile_run import float_computed
    from onnxroof.measure.profiling import KernelTime, ProfileMapping

    records = [
        S(name="conv_a", macs=10, dtype="int8"),
        S(name="conv_b", macs=10, dtype="int8"),
        S(name="dq", macs=0, dtype="float32"),
        S(name="conv_f", macs=10, dtype="float32"),
    ]
    analysis = S(cost_graph=S(records=records))
    kernels = [
        KernelTime("a_token", "QLinearConv", 1e-3, ["conv_a"]),
        KernelTime("b", "Conv", 1e-3, ["conv_b"]),
        KernelTime("dq", "DequantizeLinear", 1e-5, ["dq"]),
        KernelTime("f", "FusedConv", 1e-3, ["conv_f"]),
    ]
    mapping = ProfileMapping(
        {}, kernels, {"conv_a": "a_token", "conv_b": "b", "dq": "dq", "conv_f": "f"}, [], [], 1, None
    )
    assert float_computed(analysis, mapping) == {"conv_b": "float32"}


def test_a_kernel_onnxruntime_added_is_costed_from_the_bytes_its_profile_records():
    # fp32 100 GFLOP/s, DRAM 10 GB/s, 2 MiB on chip at 100 GB/s, 1 µs per kernel, transposes at 50%
    # and data movement at 25%:
    from onnxroof.measure.ort_events import kernel_sizes
    from onnxroof.measure.profile_run import unattributed_kernel_s
    from onnxroof.measure.profiling import KernelTime
    from onnxroof.roofline.targets import Figure, Target

    def f(value):
        return Figure(value, "measured", "hand")

    target = Target(
        "t",
        "",
        "",
        {"fp32": f(1e11)},
        f(1e10),
        onchip_bytes=f(2**21),
        onchip_bytes_per_s=f(1e11),
        node_overhead_s=f(1e-6),
        efficiency={"transpose": f(0.5), "data_movement": f(0.25)},
    )
    # a ReorderOutput of 1x32x32x32 floats reads and writes 131,072 B, on chip: 262,144 B at
    # 100 GB/s = 2.62144 µs, over 0.5 = 5.24288 µs, plus the launch: 6.24288 µs
    reorder = KernelTime("ReorderOutput", "ReorderOutput", 9e-6, sizes=(131072, 0, 131072))
    assert unattributed_kernel_s(reorder, target) == pytest.approx(6.24288e-6)
    # a target whose transpose class names the reorders in its by_op table (calibrate measures them,
    # op_efficiency.REORDER_CASE): they run at that figure, 2.62144 / 0.8 = 3.2768 µs + the launch
    from dataclasses import replace as replaced

    reorders = replaced(target, efficiency_by_op={"transpose": {"ReorderInput": 0.8, "ReorderOutput": 0.8}})
    assert unattributed_kernel_s(reorder, reorders) == pytest.approx(4.2768e-6)
    assert unattributed_kernel_s(
        KernelTime("t", "Transpose", 9e-6, sizes=(131072, 0, 131072)), reorders
    ) == pytest.approx(6.24288e-6)
    # a DequantizeLinear of 1 MiB of int8 weights into 4 MiB of floats: its output alone exceeds
    # the 2 MiB on chip, so all 5,242,880 B go through DRAM at 10 GB/s = 524.288 µs (the on-chip
    # pass at 100 GB/s takes a tenth); elementwise is not given (1.0); plus the launch: 525.288 µs
    dequantize = KernelTime("dq_copy", "DequantizeLinear", 1e-4, sizes=(0, 1048576, 4194304))
    assert unattributed_kernel_s(dequantize, target) == pytest.approx(525.288e-6)
    # no sizes recorded: the launch alone; another op is data movement: 2,048 B on chip = 20.48
    # ns over 0.25 = 81.92 ns, plus the launch
    assert unattributed_kernel_s(KernelTime("x", "Reshape", 1e-6), target) == pytest.approx(1e-6)
    assert unattributed_kernel_s(KernelTime("r", "Reshape", 1e-6, sizes=(1024, 0, 1024)), target) == pytest.approx(
        1.08192e-6
    )
    # split over the threads by onnxruntime: 2.5 µs more on a target that says so
    from dataclasses import replace

    two = replace(target, split_overhead_s=f(2.5e-6))
    split = KernelTime("ReorderOutput", "ReorderOutput", 9e-6, sizes=(131072, 0, 131072), split=True)
    assert unattributed_kernel_s(split, two) == pytest.approx(8.74288e-6)
    assert unattributed_kernel_s(reorder, two) == pytest.approx(6.24288e-6)
    # the sizes are read off the kernel's profile event
    events = [
        {
            "cat": "Node",
            "name": "ReorderOutput_kernel_time",
            "ts": 1,
            "dur": 9,
            "args": {"activation_size": "131072", "parameter_size": "0", "output_size": "131072"},
        },
        {"cat": "Node", "name": "ReorderOutput_fence_before", "ts": 0, "dur": 0, "args": {}},
    ]
    assert kernel_sizes(events) == {"ReorderOutput": (131072, 0, 131072)}
