#!/usr/bin/env python3
"""The edge rows against onnxroof today: per target, how many rows have a model the project can build,
and (with --run) how far the installed onnxroof's prediction is from each measured figure.

The rows are the shared published-measurements.csv's edge rows (the base) and edge-measurements.csv.
Each comparable row is built with edge_models.py / edge_yolo.py / models.py into a temporary folder
(weights are never-written external data) and run through ``onnxroof summary MODEL --target T --dtype D
--format json`` (the installed onnxroof script, main's). The factor printed is measured time over
predicted time (for a throughput row, predicted over measured rate): how many times slower the chip
runs than onnxroof says; a true lower bound gives factors of 1 or more.

    python3 benchmarks/published/edge_rows.py [--run] [--rows] [--target NAME]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import onnx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from published import models as base  # noqa: E402
from published.edge_models import (  # noqa: E402
    efficientnet,
    efficientnet_edgetpu,
    inception_v1,
    mlp,
    mobilenet_v3_large,
    resnet,
    squeezenet_v11,
    vgg16,  # noqa: E402
    vit,
)
from published.edge_yolo import yolo11, yolov8, yolov9, yolox  # noqa: E402

SHARED = HERE.parents[2] / "shared" / "data" / "published-measurements.csv"
if not SHARED.exists():  # a worktree beside the main checkout: /work/wt-x/benchmarks/published
    SHARED = Path("/work/shared/data/published-measurements.csv")
EDGE = HERE / "edge-measurements.csv"
ROOT = HERE.parents[1]  # the checkout this script sits in: its onnxroof is the one analysed

# (exact target or prefix, bundled target or None): the first match decides
TARGETS = [
    ("Hailo-8L", "hailo-8l"),
    ("Hailo-8", "hailo-8"),
    ("Coral Edge TPU", "coral-edge-tpu"),
    ("Jetson Orin Nano (8GB Super", "jetson-orin-nano-super"),
    ("Jetson Orin Nano", "jetson-orin-nano"),
    ("Jetson Orin NX", None),
    ("Raspberry Pi 5", "raspberry-pi-5"),
    ("Myriad X", "myriad-x"),
    ("Apple M2 (10-core", "apple-m2-gpu"),
    ("Apple M2 Max", None),
]
# (bundled target, runtime) -> the variant whose figures describe that runtime on that chip
RUNTIME_TARGETS = {
    ("raspberry-pi-5", "onnxruntime"): "raspberry-pi-5-onnxruntime",
    ("jetson-orin-nano-super", "TensorRT"): "jetson-orin-nano-super-tensorrt",
    ("jetson-orin-nano", "TensorRT"): "jetson-orin-nano-tensorrt",
}
Build = Callable[[int, int], onnx.ModelProto]  # (batch, resolution) -> model

HAILO: dict[str, tuple[str, Build]] = {
    "resnet_v1_18": ("ResNet-18", lambda b, r: resnet(18, b, r)),
    "resnet_v1_34": ("ResNet-34", lambda b, r: resnet(34, b, r)),
    "resnet_v1_50": ("ResNet-50 v1 TF-slim", lambda b, r: base.resnet50(b, r, v15=False, slim=True)),
    "squeezenet_v1.1": ("SqueezeNet 1.1", lambda b, r: squeezenet_v11(b, r)),
    "inception_v1": ("Inception v1", lambda b, r: inception_v1(b, r)),
    "mobilenet_v1": ("MobileNet v1", lambda b, r: base.mobilenet_v1(b, r)),
    "mobilenet_v2_1.0": ("MobileNet v2", lambda b, r: base.mobilenet_v2(b, r)),
    "ssd_mobilenet_v1": ("SSD MobileNet v1", lambda b, r: base.ssd_mobilenet_v1(b, r)),
    "ssd_mobilenet_v2": ("SSD MobileNet v2", lambda b, r: base.ssd_mobilenet_v2(b, r)),
    **{f"efficientnet_lite{i}": (f"EfficientNet-Lite{i}", lambda b, r, i=i: efficientnet(i, b, r)) for i in range(5)},
    **{
        f"{name}_{size}": (f"ViT-{size[0].upper()}/16", lambda b, r, s=size: vit(s, b, r))
        for name in ("vit", "deit")
        for size in ("tiny", "small", "base")
    },
    # the zoo's _bn variants put BatchNorms (folded at inference) where the LayerNorms were
    **{
        f"vit_{size}_bn": (f"ViT-{size[0].upper()}/16 BN", lambda b, r, s=size: vit(s, b, r, norm="batch"))
        for size in ("tiny", "small", "base")
    },
    # as the zoo's HEFs run them: ending at the Detect head's last convs (DFL, decoding and NMS on the host)
    **{f"yolov8{s}": (f"YOLOv8{s} (HEF)", lambda b, r, s=s: yolov8(s, b, r, hailo=True)) for s in "nsmlx"},
    **{f"yolov11{s}": (f"YOLO11{s} (HEF)", lambda b, r, s=s: yolo11(s, b, r, hailo=True)) for s in "nsmlx"},
    "yolox_tiny": ("YOLOX-Tiny", lambda b, r: yolox("tiny", b, r)),
    **{
        f"efficientnet_{z}": (
            f"EfficientNet-EdgeTPU-{z.upper()}",
            lambda b, r, z=z: efficientnet_edgetpu(z.upper(), b, r),
        )
        for z in "sml"
    },
    **{
        f"yolox_{s}_leaky": (f"YOLOX-{s.upper()} LeakyReLU", lambda b, r, s=s: yolox(s, b, r, leaky=True)) for s in "sl"
    },
}
NCNN: dict[str, tuple[str, Build]] = {  # benchncnn's param graphs as the standard networks they are
    "resnet18": HAILO["resnet_v1_18"],
    "squeezenet": HAILO["squeezenet_v1.1"],
    "googlenet": HAILO["inception_v1"],
    "mobilenet": HAILO["mobilenet_v1"],
    "mobilenet_v2": HAILO["mobilenet_v2_1.0"],
    "mobilenet_v3": ("MobileNet v3-Large", lambda b, r: mobilenet_v3_large(b, r)),
    "resnet50": ("ResNet-50 v1", lambda b, r: base.resnet50(b, r, v15=False)),
    "vgg16": ("VGG-16", lambda b, r: vgg16(b, r)),
    "efficientnet_b0": ("EfficientNet-B0", lambda b, r: efficientnet(None, b, r)),
    "mobilenet_ssd": ("SSD MobileNet v1 (21 classes)", lambda b, r: base.ssd_mobilenet_v1(b, r, classes=21)),
    # benchmark/vision_transformer.param: a 32x32/32 patch Conv and 145 position embeddings at 384 (12 x 12
    # patches and the class token), 12 layers 768 wide with 12 heads: ViT-B/32, not B/16
    "vision_transformer": ("ViT-B/32", lambda b, r: vit("base", b, r, patch=32)),
}
GENERIC: list[tuple[str, tuple[str, Build]]] = [  # (model name prefix, lower case): the Coral, shared and issue rows
    # llama.cpp's llama-bench (discussion 4167): tg128 is 128 decode steps from an empty context (one step
    # analysed at the middle, 64 cached positions), pp512 one prefill of 512 tokens; Llama 2 7B has
    # LLaMA 7B's shapes
    (
        "llama 2 7b (llama.cpp tg128)",
        ("Llama 2 7B decode", lambda b, r: base.decoder(base.DECODERS["llama-7b"], 1, 1, 64)),
    ),
    (
        "llama 2 7b (llama.cpp pp512)",
        ("Llama 2 7B prefill", lambda b, r: base.decoder(base.DECODERS["llama-7b"], 1, 512, 0)),
    ),
    ("resnet-50 v1 (resnet_v1_50)", HAILO["resnet_v1_50"]),
    ("resnet-50 v1", ("ResNet-50 v1", lambda b, r: base.resnet50(b, r, v15=False))),
    ("ssd mobilenet v1", ("SSD MobileNet v1", lambda b, r: base.ssd_mobilenet_v1(b, 300))),
    ("ssd mobilenet v2 face", ("", None)),  # 320x320 face model: not built
    ("ssd mobilenet v2", ("SSD MobileNet v2", lambda b, r: base.ssd_mobilenet_v2(b, 300))),
    ("mobilenet v1", HAILO["mobilenet_v1"]),
    ("mobilenet v2", HAILO["mobilenet_v2_1.0"]),
    ("inception v1", HAILO["inception_v1"]),
    ("vgg16", NCNN["vgg16"]),
    *(
        (
            f"efficientnet-edgetpu-{z}",
            (f"EfficientNet-EdgeTPU-{z.upper()}", lambda b, r, z=z: efficientnet_edgetpu(z.upper(), b)),
        )
        for z in "sml"
    ),
    ("squeezenet", ("SqueezeNet 1.1 (version assumed)", lambda b, r: squeezenet_v11(b, r))),
    ("vit-base (vit_base_bn)", HAILO["vit_base_bn"]),
    ("vit-base", ("ViT-B/16", lambda b, r: base.vit_base(b, r))),
    ("mlp 784-512-200-10", ("MLP 784-512-200-10", lambda b, r: mlp(b))),
    *(
        (f"yolox-{s}", (f"YOLOX-{s}", lambda b, r, s=s: yolox(s, b, r or (416 if s in ("nano", "tiny") else 640))))
        for s in ("nano", "tiny", "s", "m", "l", "x")
    ),
]


@dataclass
class Row:
    data: dict
    origin: str  # "shared" or "edge"
    target: str | None = None
    label: str = ""
    build: Build | None = None
    dtype: str | None = None
    batch: int = 1
    resolution: int = 224
    predicted: float | None = None

    @property
    def measured(self) -> float:
        return float(self.data["value"])

    @property
    def throughput(self) -> bool:
        return self.data["unit"] in ("frames/s", "samples/s")

    @property
    def factor(self) -> float | None:
        """How many times slower the chip runs than predicted (>= 1 where the prediction is a bound)."""
        if not self.predicted:
            return None
        return self.predicted / self.measured if self.throughput else self.measured / self.predicted


def family(row: dict) -> str:
    """The source a row comes from, in a few words."""
    s = row["source"]
    for key, name in (
        ("hailo_model_zoo", "Hailo model zoo"),
        ("coral.ai", "Coral benchmark table"),
        ("google-coral/edgetpu", "Coral edgetpu reference"),
        ("ultralytics", "ultralytics docs"),
        ("Tencent/ncnn", "ncnn benchncnn"),
        ("mlcommons", "MLPerf"),
        ("openvino", "OpenVINO issues"),
        ("llama.cpp", "llama.cpp benchmark thread"),
    ):
        if key in s:
            return name
    return "third-party page"


def bundled(target: str) -> tuple[bool, str | None]:
    for prefix, name in TARGETS:
        if target == prefix or target.startswith(prefix):
            return True, name
    return False, None


def model_of(row: dict) -> tuple[str, Build | None]:
    name = row["model"].strip()
    low = name.lower()
    if name in HAILO:
        return HAILO[name]
    if low.endswith("(ncnn benchmark)"):
        return NCNN.get(low.split()[0].removesuffix("_int8"), ("", None))
    if low.endswith("(ultralytics)"):
        tag = low.split()[0]
        if tag.startswith("yolov8") and tag.endswith("-pose") and tag[-6] in "nsmlx":
            return f"YOLOv8{tag[-6]}-pose", lambda b, r, s=tag[-6]: yolov8(s, b, r, pose=True)
        if tag.startswith("yolov9") and tag[-1] in "tsm":
            return f"YOLOv9{tag[-1]}", lambda b, r, s=tag[-1]: yolov9(s, b, r)
        if tag.startswith("yolo11") and tag[-1] in "nsmlx":
            return f"YOLO11{tag[-1]}", lambda b, r, s=tag[-1]: yolo11(s, b, r)
        if tag.startswith("yolov8") and tag[-1] in "nsmlx":
            return f"YOLOv8{tag[-1]}", lambda b, r, s=tag[-1]: yolov8(s, b, r)
        return "", None
    return next((spec for prefix, spec in GENERIC if low.startswith(prefix)), ("", None))


def dtype_of(precision: str) -> str | None:
    p = precision.lower()
    return next((d for d in ("int8", "int4", "fp16", "fp32") if p.startswith(d)), None)


def ran_dtype(data: dict) -> str | None:
    """The precision a row's arithmetic ran at, which is not always the one its page names: ncnn on an
    Armv8.2 CPU runs "fp32" graphs with fp16 storage and arithmetic by default (ncnn's Option
    use_fp16_storage / use_fp16_arithmetic are on where the CPU has them, as the Pi 5's Cortex-A76 has),
    so its fp32 rows are compared with the fp16 roof."""
    stated = dtype_of(data["precision"])
    software = data["software"].lower()
    if stated == "fp32" and "ncnn" in software and "vulkan" not in software:
        return "fp16"
    return stated


def resolution_of(text: str) -> int:
    """The input side a row states, or 0 where it states none (the builder's default then)."""
    head = text.split("x")[0].strip().strip("[")
    return int(head) if head.isdigit() else 0


def decide(data: dict, origin: str) -> Row:
    row = Row(data, origin)
    known, row.target = bundled(data["target"])
    row.label, row.build = model_of(data)
    # the target of that runtime's figures, where one is fitted (the chip's own target stays its bound)
    row.target = RUNTIME_TARGETS.get((row.target, runtime(row)), row.target)
    row.dtype = ran_dtype(data)
    batch = data["batch"].split()[0]
    # Hailo's "batch 8" runs 8 frames through each context before switching to the next, so a context's
    # parameters cross the host link once per 8 frames: analysed at batch 8, the rate is 8 / its latency
    # (at batch 1 the parameters that do not stay on chip would be counted once per frame: no bound)
    row.batch = int(batch) if batch.isdigit() else 1
    row.resolution = resolution_of(data["seq_or_resolution"])
    return row


def read_rows() -> list[Row]:
    rows = []
    for path, origin in ((SHARED, "shared"), (EDGE, "edge")):
        if not path.exists():  # the shared CSV lives beside the checkout, not in it
            continue
        with open(path, newline="") as f:
            for data in csv.DictReader(line for line in f if not line.startswith("#")):
                if origin == "edge" or bundled(data["target"])[0]:
                    rows.append(decide(data, origin))
    return rows


def comparable(row: Row) -> bool:
    return bool(row.target and row.build and row.dtype and row.data["unit"] in ("ms", "frames/s", "samples/s"))


def predict(rows: list[Row], folder: Path) -> None:
    """Each distinct (model, resolution, batch, target, dtype) once, through the installed CLI."""
    cache: dict[tuple, dict] = {}
    for row in rows:
        key = (row.label, row.resolution, row.batch, row.target, row.dtype)
        if key not in cache:
            path = folder / "model.onnx"
            onnx.save(row.build(row.batch, row.resolution), str(path))
            batch = ["--batch", str(row.batch)] if row.batch > 1 else []  # a dataflow chip's frames per context
            command = [
                sys.executable,
                "-m",
                "onnxroof.cli",
                "summary",
                str(path),
                "--target",
                row.target,
                "--dtype",
                row.dtype,
                "--format",
                "json",
                "--no-findings",
                *batch,
            ]
            done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
            cache[key] = json.loads(done.stdout)["targets"][0] if done.returncode == 0 else {}
            if done.returncode:
                print(f"onnxroof failed on {key}: {done.stderr.strip()[:200]}", file=sys.stderr)
        report = cache[key]
        if report.get("latency_s"):  # a rate is the target's throughput (batch / latency, or a dataflow chip's fps)
            row.predicted = report["throughput_per_s"] if row.throughput else report["latency_s"] * 1e3


def counts_table(rows: list[Row]) -> str:
    lines = [
        "| chip (CSV target) | rows | sources | bundled target | rows with a buildable model | comparable |",
        "|---|---|---|---|---|---|",
    ]
    by_chip: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_chip[chip_name(row.data["target"])].append(row)
    for chip, group in sorted(by_chip.items(), key=lambda kv: -len(kv[1])):
        sources = Counter(f"{family(r.data)}{' (shared)' if r.origin == 'shared' else ''}" for r in group)
        lines.append(
            f"| {chip} | {len(group)} | "
            + "; ".join(f"{k} {v}" for k, v in sources.most_common())
            + f" | {group[0].target or '–'} | {sum(1 for r in group if r.build)} | "
            f"{sum(1 for r in group if comparable(r))} |"
        )
    return "\n".join(lines)


def chip_name(target: str) -> str:
    return target.split(" (")[0]


def runtime(row: Row) -> str:
    """The runtime a row measured, in a word or two (found in its software column)."""
    software = row.data["software"].lower()
    for needle, name in (
        ("edge tpu runtime", "Edge TPU C++"),
        ("ncnn vulkan", "ncnn Vulkan"),
        ("ncnn", "ncnn"),
        ("onnx runtime", "onnxruntime"),
        ("onnxruntime", "onnxruntime"),
        ("tensorrt", "TensorRT"),
        ("openvino", "OpenVINO"),
        ("tflite", "TFLite"),
        ("mnn", "MNN"),
        ("hailo", "HailoRT"),
        ("edgetpu python", "edgetpu Python"),
        ("pycoral", "edgetpu Python"),
    ):
        if needle in software:
            return name
    return row.data["software"].split(",")[0][:30]


def summary_table(rows: list[Row], by: Callable[[Row], str]) -> str:
    lines = [
        "| target | group | rows compared | median factor | lowest factor (row) | highest factor (row) | "
        "rows beating the bound |",
        "|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if row.factor is not None:
            groups[(row.target, by(row))].append(row)
            groups[(row.target, "all")].append(row)
    for (target, group_name), group in sorted(groups.items()):
        group.sort(key=lambda r: r.factor)
        low, high = group[0], group[-1]
        lines.append(
            f"| {target} | {group_name} | {len(group)} | {statistics.median(r.factor for r in group):.2f} | "
            f"{low.factor:.2f} ({describe(low)}) | {high.factor:.2f} ({describe(high)}) | "
            f"{sum(1 for r in group if r.factor < 1)} |"
        )
    return "\n".join(lines)


def describe(row: Row) -> str:
    d = row.data
    precision = d["precision"].split(" (")[0]
    return f"{d['model']}, {precision}, {d['metric']} {d['value']} {d['unit']}, {d['software'][:40]}"


def rows_table(rows: list[Row]) -> str:
    lines = [
        "| target | model (built as) | dtype | batch analysed | metric | measured | predicted | factor | runtime |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in sorted((r for r in rows if r.factor is not None), key=lambda r: (r.target, r.label, r.batch)):
        d, side = row.data, row.resolution or "default"
        lines.append(
            f"| {d['target']} | {d['model']} ({row.label} {side}) | {row.dtype} | {row.batch} | "
            f"{d['metric']} | {d['value']} {d['unit']} | {row.predicted:.4g} | {row.factor:.2f} "
            f"| {runtime(row)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="predict every comparable row with the installed onnxroof")
    parser.add_argument("--rows", action="store_true", help="with --run, one line per compared row")
    parser.add_argument("--target", help="only the rows of this bundled target")
    args = parser.parse_args()
    rows = read_rows()
    print(counts_table(rows))
    if not args.run:
        return
    chosen = [r for r in rows if comparable(r) and (not args.target or r.target == args.target)]
    with tempfile.TemporaryDirectory() as folder:
        predict(chosen, Path(folder))
    print()
    print(summary_table(chosen, lambda r: r.data["metric"]))
    print()
    print(summary_table(chosen, runtime))
    if args.rows:
        print()
        print(rows_table(chosen))


if __name__ == "__main__":
    main()
