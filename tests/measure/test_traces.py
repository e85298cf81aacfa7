"""Measured per-layer traces read back onto ONNX nodes (`profile --trace`): the hand-written
fixtures in tests/data/traces/ (TensorRT, OpenVINO and RKNN, for the resnet18 and BERT test
exports; their times are round numbers so the shares below are added up by hand) and the real
onnxruntime profile recorded once in tests/measure/data/. No test times anything."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from measurements import PROFILES, expected_median, recorded_profile

import onnxroof
from onnxroof.core.errors import UsageError
from onnxroof.core.examples import build_example
from onnxroof.measure.trace_compare import GapCause, compare_trace
from onnxroof.measure.trace_rknn import read_rknn
from onnxroof.measure.traces import detect_format, read_trace
from onnxroof.roofline.targets import load_target

DATA = Path(__file__).resolve().parents[1] / "data"
TRACES = DATA / "traces"


def _export(tmp_path_factory, name: str):
    path = tmp_path_factory.mktemp(name) / f"{name}.onnx"
    path.write_bytes(gzip.decompress((DATA / "exports" / f"{name}.onnx.gz").read_bytes()))
    return onnxroof.analyze(str(path))


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory):
    return _export(tmp_path_factory, "timm-resnet18")


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return _export(tmp_path_factory, "bert-static-small")


TRT_RESNET = [TRACES / "resnet18-trt-profile.json", TRACES / "resnet18-trt-layers.json"]
TRT_BERT = [TRACES / "bert-trt-profile.json", TRACES / "bert-trt-layers.json"]


# --- the acceptance: >= 95% of the measured time mapped, on a CNN and a transformer -------------


def test_tensorrt_resnet18_maps_every_fused_layer_to_its_nodes(resnet18):
    trace = read_trace(TRT_RESNET, resnet18)
    assert trace.format == "tensorrt"
    # 25 layers, 0.720 ms a run; the input reformat (0.010) and the reshape before the FC (0.002)
    # are TensorRT's own: 0.708 of 0.720 ms is mapped
    assert trace.measured_s == pytest.approx(0.720e-3)
    assert trace.mapped_share == pytest.approx(0.708 / 0.720) and trace.mapped_share >= 0.95
    kernels = {k.name: k for k in trace.mapping.kernels}
    p = "/layer1/layer1.0"
    assert kernels[f"{p}/conv2/Conv + {p}/Add + {p}/act2/Relu"].nodes == [
        f"{p}/conv2/Conv",
        f"{p}/Add",
        f"{p}/act2/Relu",
    ]
    assert kernels["/fc/Gemm"].nodes == ["/fc/Gemm"]
    assert kernels["reshape_before_/fc/Gemm"].nodes == []
    # every node is in a layer but the Flatten, a view TensorRT folded away
    assert trace.mapping.removed == ["/global_pool/flatten/Flatten"] and trace.mapping.not_seen == []


def test_tensorrt_names_alone_map_the_same_without_layer_information(resnet18):
    trace = read_trace(TRT_RESNET[:1], resnet18)
    assert trace.mapped_share == pytest.approx(0.708 / 0.720)
    assert trace.mapping.kernel_of["/layer4/layer4.1/act2/Relu"].startswith("/layer4/layer4.1/conv2/Conv + ")


def test_tensorrt_bert_maps_foreign_node_ranges_and_a_kernel_placed_by_its_tensors(bert):
    trace = read_trace(TRT_BERT, bert)
    # 15 layers, 0.600 ms; only the output reformat (0.009) has no ONNX node
    assert trace.mapped_share == pytest.approx(0.591 / 0.600) and trace.mapped_share >= 0.95
    kernels = {k.name: k for k in trace.mapping.kernels}
    order = [r.name for r in bert.nodes]
    # ForeignNode[node_MatMul_38...node_view_3]: the nodes 11 to 33 of the model's order
    assert kernels["{ForeignNode[node_MatMul_38...node_view_3]}"].nodes == order[11:34]
    assert kernels["PWN(node_linear_4, node_gelu)"].nodes == ["node_linear_4", "node_gelu"]
    assert kernels["node_MatMul_162 + PWN(node_linear_10, node_gelu_1)"].nodes == [
        "node_MatMul_162",
        "node_linear_10",
        "node_gelu_1",
    ]
    # the anonymous Myelin kernel reads layer_norm_2 and writes view_7: layer 1's attention,
    # its Q/K/V projections to the output transpose (the Reshapes between are views, removed)
    attention = kernels["__myl_MhaFusedKernel_0"].nodes
    assert attention[0] == "node_MatMul_103" and attention[-1] == "node_transpose_7"
    assert {"node_Softmax_153", "node_MatMul_151", "node_scaled_dot_product_attention_1"} <= set(attention)
    assert trace.mapping.not_seen == []


def test_openvino_resnet18_reads_the_median_over_requests(resnet18):
    trace = read_trace(TRACES / "resnet18-openvino-detailed.csv", resnet18)
    assert trace.format == "openvino" and trace.mapping.runs == 2
    kernels = {k.name: k for k in trace.mapping.kernels}
    # /conv1/Conv took 0.900 and 1.000 ms in the two requests: their median is 0.950 ms; its ReLU
    # was fused (OPTIMIZED_OUT) and joins it
    assert kernels["/conv1/Conv"].seconds == pytest.approx(0.950e-3)
    assert kernels["/conv1/Conv"].nodes == ["/conv1/Conv", "/act1/Relu"]
    # a layer named after its output tensor is its producer's
    assert kernels["/maxpool/MaxPool_output_0"].nodes == ["/maxpool/MaxPool"]
    # request 1 sums to 9.100 ms; with the median first conv, 9.150 ms, of which the input
    # Reorder (0.050 ms) is the plugin's own
    assert trace.measured_s == pytest.approx(9.150e-3)
    assert trace.mapped_share == pytest.approx(9.100 / 9.150) and trace.mapped_share >= 0.95


def test_openvino_bert_maps_fused_attention_and_a_layer_named_after_its_output(bert):
    trace = read_trace(TRACES / "bert-openvino-detailed.csv", bert)
    kernels = {k.name: k for k in trace.mapping.kernels}
    assert trace.measured_s == pytest.approx(1.958e-3)
    assert trace.mapped_share == pytest.approx(1.948 / 1.958) and trace.mapped_share >= 0.95  # the output Reorder
    assert kernels["node_MatMul_38"].nodes == ["node_MatMul_38", "node_linear"]  # FullyConnected with its bias
    assert kernels["logits"].nodes == ["node_layer_norm_4"]
    sdpa = kernels["node_scaled_dot_product_attention_1"].nodes
    assert {"node_MatMul_151", "node_Add_152", "node_Softmax_153"} <= set(sdpa)


def test_rknn_table_reads_units_and_maps_fusions(resnet18):
    trace = read_trace(TRACES / "resnet18-rknn-perf.txt", resnet18)
    assert trace.format == "rknn"
    # 7110 µs a frame; the input (7) and output (13) operators have no ONNX node
    assert trace.measured_s == pytest.approx(7110e-6)
    assert trace.mapped_share == pytest.approx(7090 / 7110)
    kernels = {k.name: k for k in trace.mapping.kernels}
    p = "/layer2/layer2.1"
    assert kernels[f"12:Conv:{p}/conv2/Conv"].nodes == [f"{p}/conv2/Conv", f"{p}/Add", f"{p}/act2/Relu"]
    pool = trace.layers["23:GlobalAveragePool:/global_pool/pool/GlobalAveragePool"]
    assert (pool.unit, pool.precision) == ("CPU", "INT8")


def test_a_real_onnxruntime_profile_reads_through_the_same_entry(tmp_path):
    analysis = onnxroof.analyze(build_example("minigooglenet"))
    trace = read_trace(PROFILES / "minigooglenet-ort-all.json", analysis)
    assert trace.format == "onnxruntime"
    # every kernel's median over all four recorded runs, from the raw events; the one layout
    # reorder onnxruntime added (ReorderOutput) is the only time not mapped
    document = dict(recorded_profile("all"), warmup=0)
    reorder = expected_median(document, "ReorderOutput")
    assert trace.mapped_share == pytest.approx(1 - reorder / trace.measured_s)
    assert trace.mapped_share >= 0.95


# --- the comparison --------------------------------------------------------------------------


def test_gaps_name_their_causes(resnet18):
    result = compare_trace(resnet18, load_target("hailo-8"), [TRACES / "resnet18-rknn-perf.txt"])
    gaps = {g.kernel: g for g in result.kernels}
    assert gaps["23:GlobalAveragePool:/global_pool/pool/GlobalAveragePool"].cause == GapCause.FALLBACK
    assert gaps["1:InputOperator:input0"].cause == GapCause.ADDED
    largest = result.largest_gaps(3)
    assert abs(largest[0].gap_s) >= abs(largest[1].gap_s) >= abs(largest[2].gap_s)
    # each gap is measured less the prediction under the target's own fusion policy
    for gap in result.kernels:
        assert gap.gap_s == pytest.approx(gap.measured_s - gap.by_rules_s)


def test_a_fusion_the_target_does_not_make_is_named(resnet18):
    # TensorRT ran each downsample Conv alone; the target's policy fuses it into its block's conv2 + Add
    result = compare_trace(resnet18, load_target("l4"), TRT_RESNET)
    fusions = [g for g in result.kernels if g.cause == GapCause.FUSION]
    assert "/layer4/layer4.0/downsample/downsample.0/Conv" in {g.kernel for g in fusions}
    for gap in fusions:  # the cause's rule: the as-run prediction is closer, by at least half the gap
        assert abs(gap.measured_s - gap.predicted_s) < abs(gap.gap_s)
        assert abs(gap.by_rules_s - gap.predicted_s) >= 0.5 * abs(gap.gap_s)


# --- formats and errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("resnet18-trt-profile.json", "tensorrt"),
        ("resnet18-trt-layers.json", "tensorrt"),
        ("bert-openvino-detailed.csv", "openvino"),
        ("resnet18-rknn-perf.txt", "rknn"),
    ],
)
def test_the_format_is_detected_from_the_content(name, expected):
    assert detect_format([TRACES / name]) == expected


def test_a_foreign_file_is_a_one_line_error(tmp_path):
    path = tmp_path / "notes.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(UsageError, match="not a profile onnxroof reads") as error:
        detect_format([path])
    assert "\n" not in str(error.value)


def test_a_layer_information_alone_asks_for_the_profile(resnet18):
    with pytest.raises(UsageError, match="give the profile too"):
        read_trace(TRT_RESNET[1:], resnet18)


def test_an_rknn_table_inside_a_log_and_in_the_older_columns(tmp_path):
    prefix = "D RKNN: [15:13:15.945] "
    lines = [
        "ID   OpType           DataType Target InputShape            OutputShape     DDR Cycles     NPU Cycles     "
        "Total Cycles   Time(us)       MacUsage(%)    Task Number    RW(KB)         FullName",
        "1    InputOperator    INT8     CPU    \\                     (1,3,224,224)   0              0              "
        "0              4              \\              0              147.00         InputOperator:input",
        "2    ConvClip         INT8     NPU    (1,3,224,224),(32)    (1,32,112,112)  0              0              "
        "0              250            \\              0              540.38         Conv:conv0",
    ]
    path = tmp_path / "perf.log"
    path.write_text("\n".join(prefix + line for line in lines) + "\n")
    trace = read_rknn(path)
    assert [(layer.name, layer.seconds) for layer in trace.layers] == [
        ("1:InputOperator:input", pytest.approx(4e-6)),
        ("2:Conv:conv0", pytest.approx(250e-6)),
    ]
    assert trace.layers[1].nodes == ("conv0",) and trace.layers[0].added


def test_openvino_json_and_sorted_csv_read_as_the_csv(tmp_path):
    from onnxroof.measure.trace_openvino import read_openvino

    nodes = [
        {
            "name": "conv",
            "status": "EXECUTED",
            "node_type": "Convolution",
            "exec_type": "jit_avx2_FP32",
            "real_time": 0.5,
        },
        {"name": "relu", "status": "OPTIMIZED_OUT", "node_type": "Eltwise", "exec_type": "undef", "real_time": 0.0},
    ]
    path = tmp_path / "benchmark_detailed_counters_report.json"
    path.write_text(json.dumps({"report_type": "detailed", "detailed_performance": [{"nodes": nodes}]}))
    (layer,) = read_openvino(path).layers
    assert (layer.name, layer.seconds, layer.precision) == ("conv", pytest.approx(0.5e-3), "FP32")
    sorted_csv = tmp_path / "sorted.csv"
    sorted_csv.write_text(
        "layerName;execStatus;layerType;execType;realTime (ms);cpuTime (ms); %\n"
        "conv;EXECUTED;Convolution;ref_any_I8;0.250000;0.250000;100\n"
        "Total;;;;0.25;0.25;100\n"
    )
    (layer,) = read_openvino(sorted_csv).layers
    assert (layer.seconds, layer.precision, layer.reference) == (pytest.approx(0.25e-3), "INT8", True)


def test_a_tensorrt_profile_with_total_times_only_divides_by_the_count(tmp_path):
    from onnxroof.measure.trace_tensorrt import read_tensorrt

    path = tmp_path / "prof.json"
    path.write_text(json.dumps([{"count": 200}, {"name": "a + b", "timeMs": 50.0, "percentage": 100.0}]))
    (layer,) = read_tensorrt([path]).layers
    assert layer.seconds == pytest.approx(50.0 / 200 * 1e-3) and layer.nodes == ("a", "b")


def test_another_models_trace_is_a_one_line_error(bert):
    with pytest.raises(UsageError, match="is it another model's trace") as error:
        read_trace(TRACES / "resnet18-openvino-detailed.csv", bert)
    assert "\n" not in str(error.value)


def test_older_tensorrt_names_merged_layers_and_reformatters(tmp_path):
    from onnxroof.measure.trace_tensorrt import read_tensorrt

    # names as TensorRT 7 wrote them: layers merged side by side with " || ", reformatters by suffix
    profile = [
        {"count": 10},
        {"name": "conv1 + relu1 input reformatter 0", "timeMs": 1.0, "averageMs": 0.1, "percentage": 10.0},
        {"name": "a/1x1 + a/relu_1x1 || a/3x3_reduce + a/relu_3x3_reduce", "timeMs": 9.0, "averageMs": 0.9},
    ]
    path = tmp_path / "prof.json"
    path.write_text(json.dumps(profile))
    reformat, merged = read_tensorrt([path]).layers
    assert reformat.added and reformat.nodes == ()
    assert merged.nodes == ("a/1x1", "a/relu_1x1", "a/3x3_reduce", "a/relu_3x3_reduce")


def test_openvino_2019_csv_has_every_request_in_one_row(tmp_path):
    from onnxroof.measure.trace_openvino import read_openvino

    path = tmp_path / "benchmark_detailed_counters_report.csv"
    path.write_text(
        "Configuration setup;;;;;;;;\n"
        "config option;CLI parameter;value;;;;;;\n"
        "target device; -d;CPU;;;;;;\n\n"
        "Performance counters;;;;;;;;\n"
        "layer name;exec status;layer type;exec type;realTime_iter0;cpuTime_iter0;realTime_iter1;cpuTime_iter1;"
        "realTime_iter2;cpuTime_iter2\n"
        "conv1;EXECUTED;Convolution;jit_avx2_FP32;0.300000;0.300000;0.100000;0.100000;0.200000;0.200000\n"
        "relu1;OPTIMIZED_OUT;ReLU;undef;0.000000;0.000000;0.000000;0.000000;0.000000;0.000000\n\n"
        "Statistics;;;;;;;;\n"
        "metric;iter0;iter1;iter2;;;;;\n"
        "latencies;1.1;1.2;1.3;;;;;\n"
    )
    trace = read_openvino(path)
    (layer,) = trace.layers
    # three requests in one row: 0.3, 0.1 and 0.2 ms, their median 0.2 ms
    assert trace.runs == 3 and layer.seconds == pytest.approx(0.2e-3) and layer.name == "conv1"
    assert detect_format([path]) == "openvino"
