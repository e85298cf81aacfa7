"""Every bound a true bound (issue 45): no published measurement of an edge chip may run faster than
the bundled target's bound says it can. The rows are benchmarks/published/edge-measurements.csv and
the shared CSV's edge rows; each comparable row's network is built weight-free by the published
builders and analysed in process (each network once per target, dtype and batch: about 120 analyses
of a fraction of a second). A row compares at the precision it ran (ncnn's "fp32" runs fp16 on the
Pi 5's Cortex-A76: edge_rows.ran_dtype), a Hailo batch-8 row at batch 8 (8 frames per context load)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from onnxroof.pipeline import analyze
from onnxroof.roofline.targets import load_target

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from published import edge_rows  # noqa: E402

BOUND_TARGETS = ("hailo-8l", "jetson-orin-nano", "jetson-orin-nano-super", "raspberry-pi-5", "myriad-x", "apple-m2-gpu")


# fitted on their rows (benchmarks/published/fit_coral.py, fit_cpu_runtime.py, fit_dataflow.py)
FORECAST_TARGETS = (
    "hailo-8",
    "coral-edge-tpu",
    "raspberry-pi-5-onnxruntime",
    "jetson-orin-nano-super-tensorrt",
    "jetson-orin-nano-tensorrt",
)

# The acceptance for a target that stays a bound: within 3x of every published row (factor at most 3).
# Recorded per target, as measured; the farthest rows and their causes are in
# docs/validation-published.md's edge section and each target's description. A change either way
# must update them.
WITHIN_3X = {
    "hailo-8l": False,  # DeiT-Tiny 34x: the 8L splits even small networks into contexts
    "jetson-orin-nano": False,  # ncnn Vulkan 2.7-209x: compute shaders, no Tensor Cores (TensorRT: 1.9-10x)
    "jetson-orin-nano-super": True,  # onnxruntime CUDA, 1.7-2.4x
    "raspberry-pi-5": False,  # OpenVINO 2024 YOLOv8n 10.8x, 1-thread rows of a 4-core target up to 14x
    "myriad-x": False,  # the NCS2 MLP 192x (USB and request overhead); YOLOv8s-pose 3.3x
    "apple-m2-gpu": True,  # llama.cpp Metal, Llama 2 7B Q4_0: decode 1.38x, prefill 1.50x
}


def _rows_by_target() -> dict[str, list[edge_rows.Row]]:
    chosen: dict[str, list[edge_rows.Row]] = {name: [] for name in BOUND_TARGETS + FORECAST_TARGETS}
    for row in edge_rows.read_rows():
        if edge_rows.comparable(row) and row.target in chosen:
            chosen[row.target].append(row)
    return chosen


ROWS = _rows_by_target()


_ANALYSES: dict = {}  # one analysis per (network, resolution, batch, dtype, target) for every test


def _predicted(row: edge_rows.Row, cache: dict = _ANALYSES) -> float:
    """The bound for the row's figure: a rate (frames or samples per second) or a latency in ms."""
    key = (row.label, row.resolution, row.batch, row.dtype, row.target)
    if key not in cache:
        model = row.build(row.batch, row.resolution)
        cache[key] = analyze(
            model, targets=[row.target], dtype=row.dtype, batch=row.batch if row.batch > 1 else None
        ).targets[0]
    report = cache[key]
    return report.throughput_per_s if row.throughput else report.latency_s * 1e3


def _beyond_2x(rows: list[edge_rows.Row]) -> list[str]:
    """The rows a forecast misses by more than 2x either way (the acceptance: every row within 2x)."""
    far = []
    for row in rows:
        row.predicted = _predicted(row)
        if not 0.5 <= row.factor <= 2:
            far.append(f"{edge_rows.describe(row)}: predicted {row.predicted:.4g}, factor {row.factor:.2f}")
    return far


def test_the_rows_cover_every_bound_edge_target():
    # the fixture itself: each target has rows to hold it against (counts from edge_rows.py's table)
    assert {name: len(rows) > 0 for name, rows in ROWS.items()} == dict.fromkeys(BOUND_TARGETS + FORECAST_TARGETS, True)
    # the Super's 18 TensorRT rows go to the target of TensorRT's figures, its 5 onnxruntime CUDA rows stay
    assert len(ROWS["hailo-8"]) >= 80 and len(ROWS["jetson-orin-nano-super"]) == 5
    # the NCS2's two rows: the MLP and YOLOv8s-pose (built with ultralytics' Pose head)
    assert sorted(row.label for row in ROWS["myriad-x"]) == ["MLP 784-512-200-10", "YOLOv8s-pose"]
    assert set(WITHIN_3X) == set(BOUND_TARGETS)


@pytest.mark.parametrize("target", BOUND_TARGETS)
def test_no_published_row_beats_the_bound(target):
    assert load_target(target).latency_kind.value == "bound"
    beaten = []
    for row in ROWS[target]:
        row.predicted = _predicted(row)
        if row.factor < 1:  # measured faster than the bound allows
            beaten.append(f"{edge_rows.describe(row)}: predicted {row.predicted:.4g}, factor {row.factor:.2f}")
    assert beaten == []


@pytest.mark.parametrize("chip, runtime", sorted(edge_rows.RUNTIME_TARGETS))
def test_the_chips_bound_holds_for_the_rows_its_runtime_variant_takes(chip, runtime):
    # a row sent to a runtime's forecast (the Pi's onnxruntime rows, the Orin Nano Super's TensorRT rows)
    # still ran on the chip, so the chip's bound must hold for it too
    beaten = []
    for row in ROWS[edge_rows.RUNTIME_TARGETS[(chip, runtime)]]:
        row.target = chip  # analysed on the chip's bound, not on the variant's forecast
        try:
            row.predicted = _predicted(row)
        finally:
            row.target = edge_rows.RUNTIME_TARGETS[(chip, runtime)]
        if row.factor < 1:
            beaten.append(f"{edge_rows.describe(row)}: predicted {row.predicted:.4g}, factor {row.factor:.2f}")
    assert beaten == []


@pytest.mark.parametrize("target", BOUND_TARGETS)
def test_each_bounds_within_3x_status_is_the_recorded_one(target):
    # factor = measured time / the bound's time (or the bound's rate / the measured rate): 1 or more
    # for every row (the test above); at most 3 for every row is the acceptance for a bound
    far = []
    for row in ROWS[target]:
        row.predicted = _predicted(row)
        if row.factor > 3:
            far.append(f"{edge_rows.describe(row)}: factor {row.factor:.2f}")
    assert (far == []) is WITHIN_3X[target], far[:5]


def test_coral_forecast_is_within_2x_of_every_row_of_its_runtime():
    # the acceptance's "every row within 2x" on the runtime the forecast describes (Coral's table: the
    # C++ benchmark, model execution only); the edgetpu Python rows add the Python call and their
    # hosts' USB (a Pi 3's USB 2.0), which the target does not describe
    assert load_target("coral-edge-tpu").latency_kind.value == "forecast"
    table = [row for row in ROWS["coral-edge-tpu"] if edge_rows.runtime(row) == "Edge TPU C++"]
    assert len(table) == 20
    assert _beyond_2x(table) == []


def test_pi_onnxruntime_forecast_is_within_2x_of_every_row():
    # the onnxruntime rows of the Pi 5 go to the target whose figures describe that runtime
    assert load_target("raspberry-pi-5-onnxruntime").latency_kind.value == "forecast"
    assert len(ROWS["raspberry-pi-5-onnxruntime"]) == 10
    assert _beyond_2x(ROWS["raspberry-pi-5-onnxruntime"]) == []


def test_orin_nano_tensorrt_forecast_is_within_2x_of_every_row():
    # TensorRT is what Jetson users run: its 18 published rows on the Orin Nano in Super mode (15 YOLO11
    # rows of ultralytics' guide, 3 YOLOv8n rows of trtexec; FP32 engines on TF32, FP16, INT8)
    assert load_target("jetson-orin-nano-super-tensorrt").latency_kind.value == "forecast"
    rows = ROWS["jetson-orin-nano-super-tensorrt"]
    assert len(rows) == 18 and {edge_rows.runtime(row) for row in rows} == {"TensorRT"}
    assert _beyond_2x(rows) == []


def test_orin_nano_15w_tensorrt_forecast_is_within_2x_of_every_row():
    # the 15 W mode's TensorRT rows (trtutils on JetPack 5, before the Super modes: YOLOv8n/s/m and YOLOv9t/s/m
    # FP16 engines at 160-1280, end to end from Python) go to the 15 W TensorRT target, whose engine figures
    # were fitted on none of them (the Super-mode rows' launch cost, the AGX Orin's efficiencies) and whose
    # per-run cost was; the ncnn Vulkan rows stay with the 15 W bound
    assert load_target("jetson-orin-nano-tensorrt").latency_kind.value == "forecast"
    rows = ROWS["jetson-orin-nano-tensorrt"]
    assert len(rows) == 48 and {edge_rows.runtime(row) for row in rows} == {"TensorRT"}
    assert {edge_rows.runtime(row) for row in ROWS["jetson-orin-nano"]} == {"ncnn Vulkan"}
    assert _beyond_2x(rows) == []


def test_hailo8_forecast_is_within_2x_of_every_zoo_row():
    # the layer pipeline fitted on the zoo's rows (Dataflow Compiler v3.33): its 83 fps rows at batch 1
    # and 8 and the ResNet-50 hardware latency, each within 2x (held out by family, fit_dataflow.py)
    assert load_target("hailo-8").latency_kind.value == "forecast"
    rows = ROWS["hailo-8"]
    assert len(rows) == 84
    assert _beyond_2x(rows) == []


def test_ncnn_fp32_rows_compare_at_fp16_on_the_pi():
    # ncnn enables fp16 storage and arithmetic where the CPU has them (Armv8.2: the Cortex-A76), so a
    # page's "ncnn FP32" ran fp16; the Vulkan rows keep their own precision
    ran = {
        edge_rows.ran_dtype({"precision": "fp32", "software": software})
        for software in ("ncnn FP32 (CPU)", "ncnn (ARM NEON, fp32 requested)")
    }
    assert ran == {"fp16"}
    assert edge_rows.ran_dtype({"precision": "fp32", "software": "ncnn Vulkan on the Orin GPU"}) == "fp32"
    assert edge_rows.ran_dtype({"precision": "fp32", "software": "ONNX Runtime FP32 (CPU)"}) == "fp32"


def test_hailo_rows_build_the_yolos_as_the_zoos_hefs_end():
    # the zoo's yolov11*.yaml end nodes are the six /model.23/cv2.i.2 and cv3.i.2 convs, and its
    # yolov8*.alls put a sigmoid on the class convs and run the DFL, decoding and NMS on the host
    # (nms_postprocess engine=cpu): per level i (stride 8, 16, 32 at 640: 80, 40, 20 cells a side) a
    # box output of 4 x 16 DFL bins and a class output of 80, no Softmax left in YOLOv8, only
    # YOLO11n's one C2PSA attention softmax (depth 0.5 x 2 = 1 PSA block) in YOLO11
    for name, softmaxes in (("yolov8n", 0), ("yolov11n", 1)):
        model = edge_rows.HAILO[name][1](1, 640)
        shapes = {out.name: [d.dim_value for d in out.type.tensor_type.shape.dim] for out in model.graph.output}
        assert shapes == {
            **{f"box{i}": [1, 64, side, side] for i, side in enumerate((80, 40, 20))},
            **{f"cls{i}": [1, 80, side, side] for i, side in enumerate((80, 40, 20))},
        }
        assert sum(node.op_type == "Softmax" for node in model.graph.node) == softmaxes


@pytest.mark.parametrize("target", ["hailo-8", "hailo-8l"])
def test_the_hailo_row_floor_holds_each_family_when_set_from_the_others(target):
    # a bound's row_s is 0.8 x the fastest time per input row of the zoo's rows (a frame's time over
    # its input rows: 1 / fps / rows). Set from every family but one, the same rule must leave that
    # family's rows at or above it: held out by family, no row beats the floor (hailo-8's forecast
    # fits its row_s with the pipeline's other figures: the rule is checked on its rows all the same)
    from published.fit_dataflow import family

    per_row: dict[str, float] = {}
    for row in ROWS[target]:
        if row.throughput:
            seconds = 1 / row.measured / (row.resolution or 224)
            per_row[family(row)] = min(per_row.get(family(row), seconds), seconds)
    assert len(per_row) == 12
    for left_out, fastest in per_row.items():
        others = min(seconds for name, seconds in per_row.items() if name != left_out)
        assert 0.8 * others <= fastest, left_out
    # and the bound's figure is that rule on every family
    if load_target(target).latency_kind.value == "bound":
        assert load_target(target).dataflow.row_s.value == pytest.approx(0.8 * min(per_row.values()), rel=0.01)


def _params(model) -> int:
    return analyze(model, targets=["jetson-orin-nano"], dtype="fp16").totals.params


def test_yolov8_pose_adds_ultralytics_keypoint_branches():
    # Pose head (ultralytics head.py): per level (P3/P4/P5 with 128/256/512 channels in YOLOv8s) a branch
    # of two 3x3 convs to c4 = max(128 // 4, 17 x 3) = 51 channels and a 1x1 conv to 51 keypoint values,
    # each with a folded bias: 9 x 51 x (128 + 256 + 512) + 3 x (9 x 51 x 51 + 51 x 51) + 9 x 51 biases
    # = 411,264 + 78,030 + 459 = 489,753; one class instead of 80 drops 79 x (128 + 1) = 10,191 from
    # each level's class conv (c3 = max(128, 80) = 128 wide): 489,753 - 3 x 10,191 = 459,180
    from published.edge_yolo import yolov8

    assert _params(yolov8("s", pose=True)) - _params(yolov8("s")) == 459_180


def test_ncnn_vision_transformer_is_built_as_vit_b32_at_384():
    # benchncnn's vision_transformer.param: a 32x32 stride-32 patch Conv (0=768 1=32 3=32) and a pos_embed
    # of 145 = (384 / 32)^2 + 1 tokens
    label, build = edge_rows.NCNN["vision_transformer"]
    model = build(1, 384)
    shapes = {init.name: list(init.dims) for init in model.graph.initializer}
    assert label == "ViT-B/32" and shapes["pos_embed"] == [1, 145, 768] and shapes["patch.weight"] == [768, 3, 32, 32]


@pytest.mark.parametrize("scale, yaml_params", [("t", 2_128_720), ("s", 7_318_368), ("m", 20_216_160)])
def test_yolov9_is_ultralytics_gelan_with_its_repconvs_fused(scale, yaml_params):
    # ultralytics cfg/models/v9/yolov9{t,s,m}.yaml state the unfused counts (RepConv's 1x1 branch and the
    # BatchNorms' two figures a channel counted); the exported graph fuses them, a few percent fewer
    from published.edge_yolo import yolov9

    assert 0.97 * yaml_params < _params(yolov9(scale)) < yaml_params
