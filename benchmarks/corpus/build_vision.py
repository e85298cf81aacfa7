#!/usr/bin/env python3
"""Build the "vision" validation corpus: timm image classifiers and ultralytics YOLO models,
built on this machine with random weights and exported by each library's own ONNX path.

Nothing is downloaded: timm models come from ``timm.create_model(name, pretrained=False)`` and
YOLO models from their yaml (``YOLO("yolov8n.yaml")``, no .pt file).

* timm: ``timm.utils.onnx.onnx_export`` (the helper behind timm's ``onnx_export.py``), which calls
  ``torch.onnx.export`` with the TorchScript exporter (``dynamo=False``, dynamic batch) or, with
  ``use_dynamo=True``, the torch.export-based exporter (``dynamo=True``, ``optimize=True``,
  ``dynamic_shapes`` on the batch). Batch 1 at the model's default input size (224 x 224).
* ultralytics: ``YOLO("<name>.yaml").export(format="onnx")``: its TorchScript export at a static
  1 x 3 x 640 x 640 (224 for the classifier) and then onnxslim (ultralytics' default
  ``simplify=True``).

Independent MACs, no onnxroof code: ``torch.utils.flop_counter.FlopCounterMode`` on the eager
model at batch 1 (FLOPs / 2), with scaled_dot_product_attention forced to its math backend
(FlopCounterMode has no formula for the CPU flash kernel, which would count attention as 0). For
YOLO the count runs on the very module and input ultralytics hands to ``torch.onnx.export`` (its
``torch2onnx`` is wrapped): fused Conv+BN, Detect in export mode. Cross-checks kept in each
manifest: forward hooks on Conv2d / ConvTranspose2d / Linear modules (+ FlopCounterMode's
attention matmuls), and for YOLO ultralytics' own GFLOPs (``get_flops``, thop, which counts
leaf modules only). Stored parameters: ``build_tools.stored_params``, the protobuf read.

    /work/venvs/corpus2/bin/python benchmarks/corpus/build_vision.py [--out DIR] [--only ID,ID]

Needs (a venv with --system-site-packages over onnx + onnxruntime): torch==2.13.0 (CPU),
torchvision==0.28.0, timm, ultralytics, onnxslim, onnxscript (for dynamo=True).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import platform
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("YOLO_OFFLINE", "True")  # no version check, no hub calls

sys.path.insert(0, str(Path(__file__).resolve().parent))
import onnx
from build_tools import Corpus, randomize, ver

OUT_DEFAULT = "/work/corpus/vision"
SEED = 0
SHIM_NOTE = ""  # set by main(): what torchvision_without_extension did, added to each manifest's notes


_TORCHVISION_SHIM = None


def torchvision_without_extension() -> str:
    """PyPI's torchvision 0.28 wheel is a CUDA build: beside a CPU-only torch its C++ extension
    does not load, and its ``_meta_registrations`` then fails on import ("operator
    torchvision::nms does not exist"), which breaks ``import timm`` and ``import ultralytics``.
    Declare the two op schemas it registers unguarded (nms, qnms) so the import goes through;
    nothing here calls them (no NMS in these exports), and a call would raise as torchvision's
    own ``_assert_has_ops`` does. Returns what was done, for the manifest."""
    global _TORCHVISION_SHIM
    import importlib.util

    import torch
    spec = importlib.util.find_spec("torchvision")
    if spec is None or _TORCHVISION_SHIM is not None:
        return "" if spec is None else "torchvision extension shim (see build_vision.torchvision_without_extension)"
    so = next(Path(spec.origin).parent.glob("_C*.so"), None)
    try:
        if so is None:
            raise OSError("no _C extension")
        torch.ops.load_library(str(so))
        _TORCHVISION_SHIM = ""
        return ""
    except (OSError, RuntimeError) as exc:
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _TORCHVISION_SHIM = lib  # keep the library alive
        reason = str(exc).strip().splitlines()[-1][-100:]
        return (f"torchvision's C++ extension does not load beside this torch ({type(exc).__name__}: ...{reason}); "
                "its nms/qnms schemas were declared so that it imports (no NMS is exported)")


# --------------------------------------------------------------------------------------------
# Independent MAC counts (no onnxroof code)
# --------------------------------------------------------------------------------------------


def flop_counter(model, inputs) -> dict:
    """FlopCounterMode over one forward, attention through SDPA's math backend (plain bmm)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode
    with torch.no_grad(), sdpa_kernel([SDPBackend.MATH]), FlopCounterMode(display=False) as fc:
        model(*inputs)
    by_op = {str(k): v // 2 for k, v in fc.get_flop_counts().get("Global", {}).items()}
    return {"macs": fc.get_total_flops() // 2, "by_op": by_op}


def module_hooks(model, inputs) -> Counter:
    """Conv2d N·Co·Ho·Wo·Ci/g·kh·kw; ConvTranspose2d N·Ci·Hi·Wi·Co/g·kh·kw; Linear out.numel()·in."""
    import torch
    from torch import nn
    counts: Counter = Counter()

    def conv(m, _i, out):
        counts["Conv2d"] += out.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]

    def deconv(m, inp, _o):
        counts["ConvTranspose2d"] += inp[0].numel() * (m.out_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]

    def linear(m, _i, out):
        counts["Linear"] += out.numel() * m.in_features

    hooks = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(conv))
        elif isinstance(m, nn.ConvTranspose2d):
            hooks.append(m.register_forward_hook(deconv))
        elif isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(linear))
    with torch.no_grad():
        model(*inputs)
    for h in hooks:
        h.remove()
    return counts


def macs_source(fc: dict, hooks: Counter, what: str) -> str:
    attention = fc["by_op"].get("aten.bmm", 0)
    modules = sum(hooks.values())
    return (f"torch.utils.flop_counter.FlopCounterMode on {what}, FLOPs / 2, scaled_dot_product_attention through "
            f"its math backend: " + ", ".join(f"{k} {v:,}" for k, v in sorted(fc["by_op"].items()))
            + ". Cross-check: forward hooks on the modules (" + ", ".join(f"{k} {v:,}" for k, v in sorted(hooks.items()))
            + f") + FlopCounterMode's bmm (attention) {attention:,} = {modules + attention:,}")


def opset_of(path: Path) -> int:
    m = onnx.load(str(path), load_external_data=False)
    return next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 0)


# --------------------------------------------------------------------------------------------
# timm
# --------------------------------------------------------------------------------------------


def build_timm(corpus: Corpus, model_id: str, name: str, dynamo: bool, dynamic_size: bool = False) -> None:
    import timm
    import torch
    from timm.utils.onnx import onnx_export
    torch.manual_seed(SEED)
    model = timm.create_model(name, pretrained=False)
    randomize(model, SEED)
    model.eval()
    size = tuple(model.pretrained_cfg["input_size"])  # (3, 224, 224)
    x = torch.randn((1,) + size)
    fc = flop_counter(model, (x,))
    hooks = module_hooks(model, (x,))
    path = corpus.path(model_id)
    with contextlib.redirect_stdout(sys.stderr):
        onnx_export(model, str(path), example_input=x, batch_size=1, use_dynamo=dynamo, dynamic_size=dynamic_size,
                    check=True)
    for extra in path.parent.glob(path.name + ".data"):  # dynamo writes external data only above 2 GB
        raise RuntimeError(f"unexpected external data {extra}")
    opset = opset_of(path)
    how = ("torch.onnx.export(dynamo=True, optimize=True, dynamic_shapes=({0: 'batch'},), traced at batch 2)"
           if dynamo else f"torch.onnx.export(dynamo=False, dynamic_axes {'batch, height, width' if dynamic_size else 'batch'})")
    exporter = (f"timm.utils.onnx.onnx_export(timm.create_model('{name}', pretrained=False).eval(), f, "
                f"batch_size=1, use_dynamo={dynamo}{', dynamic_size=True' if dynamic_size else ''}) -> {how}, opset {opset} [{ver('timm', 'torch', 'onnxscript' if dynamo else 'onnx')}]")
    notes = (f"timm '{name}' with random weights (every float parameter and buffer drawn at random, seed {SEED}, "
             f"so BatchNorm folds into real biases), eval mode, input {list((1,) + size)}. "
             "FlopCounterMode and the module hooks ran on this eager model at batch 1." + (f" {SHIM_NOTE}." if SHIM_NOTE else ""))
    dims = {"batch": 1} | ({"height": size[1], "width": size[2]} if dynamic_size else {})
    corpus.manifest(model_id, exporter, {"dims": dims, "input_shapes": {}}, fc["macs"],
                    macs_source(fc, hooks, f"timm's eager {name} at batch 1 {list(size)}"),
                    sum(p.numel() for p in model.parameters()), notes,
                    extra={"cross_checks": {"flop_counter_by_op": fc["by_op"], "module_hooks": dict(hooks),
                                            "module_hooks_plus_bmm": sum(hooks.values()) + fc["by_op"].get("aten.bmm", 0)},
                           "command": f"python benchmarks/corpus/build_vision.py --only {model_id}"})


# --------------------------------------------------------------------------------------------
# ultralytics
# --------------------------------------------------------------------------------------------


def randomize_yolo(model, seed: int) -> None:
    """As build_tools.randomize, but the DFL's fixed arange weights (not learnt) are kept."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if t.is_floating_point() and ".dfl." not in name:
                v = torch.rand(t.shape, generator=gen) * 0.1
                t.copy_(v + 0.5 if name.endswith("running_var") else v - 0.05)


def build_yolo(corpus: Corpus, model_id: str, yaml_name: str, imgsz: int, dynamic: bool = False,
               nms: bool | None = None) -> None:
    import torch
    from ultralytics import YOLO
    from ultralytics.utils.export import engine
    from ultralytics.utils.torch_utils import get_flops

    torch.manual_seed(SEED)
    yolo = YOLO(yaml_name)
    randomize_yolo(yolo.model, SEED)
    seen: dict = {}
    original = engine.torch2onnx

    def counting_torch2onnx(model, im, output_file, *args, **kwargs):
        """The module and input ultralytics exports: count copies of them before the export runs
        (a copy: thop profiles smaller proxy images, which would re-shape the head's anchor cache)."""
        seen["fc"] = flop_counter(copy.deepcopy(model), (im,))
        seen["hooks"] = module_hooks(copy.deepcopy(model), (im,))
        seen["thop_gflops"] = get_flops(copy.deepcopy(model), list(im.shape[2:]))
        seen["params"] = sum(p.numel() for p in model.parameters())
        seen["input"] = list(im.shape)
        seen["opset"] = kwargs.get("opset", args[0] if args else None)
        return original(model, im, output_file, *args, **kwargs)

    work = Path(tempfile.mkdtemp(prefix="yolo-", dir=corpus.tmp))
    cwd = os.getcwd()
    engine.torch2onnx = counting_torch2onnx
    try:
        os.chdir(work)  # a yaml model exports to ./<name>.onnx
        with contextlib.redirect_stdout(sys.stderr):
            out = yolo.export(format="onnx", imgsz=imgsz, batch=1, dynamic=dynamic, nms=nms)
    finally:
        engine.torch2onnx = original
        os.chdir(cwd)
    shutil.move(str(work / out) if not os.path.isabs(out) else out, corpus.path(model_id))
    shutil.rmtree(work, ignore_errors=True)
    fc, hooks = seen["fc"], seen["hooks"]
    thop_macs = round(seen["thop_gflops"] * 1e9 / 2)
    exporter = (f"ultralytics YOLO('{yaml_name}').export(format='onnx', imgsz={imgsz}, batch=1"
                f"{', dynamic=True' if dynamic else ''}{f', nms={nms}' if nms is not None else ''}): torch.onnx.export(dynamo=False, opset {seen['opset']}, "
                f"{'dynamic_axes batch, height, width' if dynamic else 'static shapes'}) then onnxslim (simplify=True default) "
                f"[{ver('ultralytics', 'torch', 'onnxslim')}]")
    task = yolo.task
    head = ("NMS-free one-to-one head: TopK to max_det 300 boxes in the graph" if nms is False else
            "raw boxes + class scores for every anchor, NMS left to the caller" if task in ("detect", "segment")
            else "softmax probabilities")
    notes = (f"ultralytics {task} model built from '{yaml_name}' (no .pt weights), random weights (seed {SEED}, "
             f"DFL arange kept), exported at {seen['input']}; fused Conv+BN, head in export mode "
             f"({head}). "
             f"ultralytics' own GFLOPs (get_flops: thop on leaf modules, x2) = {seen['thop_gflops']:.4f}, "
             f"i.e. {thop_macs:,} MACs." + (f" {SHIM_NOTE}." if SHIM_NOTE else ""))
    dims = {"batch": 1, "height": imgsz, "width": imgsz} if dynamic else {}
    corpus.manifest(model_id, exporter, {"dims": dims, "input_shapes": {}}, fc["macs"],
                    macs_source(fc, hooks, f"the fused module ultralytics traced, input {seen['input']}"),
                    seen["params"], notes,
                    extra={"cross_checks": {"flop_counter_by_op": fc["by_op"], "module_hooks": dict(hooks),
                                            "module_hooks_plus_bmm": sum(hooks.values()) + fc["by_op"].get("aten.bmm", 0),
                                            "ultralytics_get_flops_gflops": seen["thop_gflops"],
                                            "ultralytics_get_flops_macs": thop_macs},
                           "command": f"python benchmarks/corpus/build_vision.py --only {model_id}"})


# --------------------------------------------------------------------------------------------

TIMM_CASES = [
    ("timm-resnet18", "resnet18", False),
    ("timm-efficientnet-b0", "efficientnet_b0", False),
    ("timm-mobilenetv3-small", "mobilenetv3_small_100", False),
    ("timm-convnext-atto", "convnext_atto", False),
    ("timm-vit-tiny", "vit_tiny_patch16_224", False),
    ("timm-vit-tiny-dynamo", "vit_tiny_patch16_224", True),
    ("timm-convnext-atto-dynamo", "convnext_atto", True),
    ("timm-efficientnet-b0-dynsize", "efficientnet_b0", False, True),  # timm's --dynamic-size: H and W symbolic
]
YOLO_CASES = [
    ("yolov8n-ultralytics", "yolov8n.yaml", 640),
    ("yolo11n-ultralytics", "yolo11n.yaml", 640),
    ("yolo11n-seg-ultralytics", "yolo11n-seg.yaml", 640),
    ("yolo11n-cls-ultralytics", "yolo11n-cls.yaml", 224),
    ("yolo26n-ultralytics", "yolo26n.yaml", 640, False, False),  # nms=False: NMS-free head, TopK in the graph
    ("yolov8n-dynamic-ultralytics", "yolov8n.yaml", 640, True),  # dynamic=True: anchors computed from H, W
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=OUT_DEFAULT)
    ap.add_argument("--only", default="", help="comma-separated model ids")
    ap.add_argument("--parts", default="timm,yolo")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    corpus = Corpus(out, set(filter(None, args.only.split(","))) or None)
    global SHIM_NOTE
    SHIM_NOTE = torchvision_without_extension()
    if SHIM_NOTE:
        print(SHIM_NOTE, flush=True)
    parts = set(args.parts.split(","))
    print(f"python {platform.python_version()}; {ver('onnx', 'onnxruntime', 'numpy', 'torch')}", flush=True)
    if "timm" in parts:
        for case in TIMM_CASES:
            corpus.run(case[0], build_timm, *case[1:])
    if "yolo" in parts:
        for case in YOLO_CASES:
            corpus.run(case[0], build_yolo, *case[1:])
    if corpus.failures:
        (out / "failures.json").write_text(json.dumps(corpus.failures, indent=1) + "\n")
        print("failures:", corpus.failures)
    elif not corpus.only:
        (out / "failures.json").unlink(missing_ok=True)  # a full run without failures clears an old list
    shutil.rmtree(corpus.tmp, ignore_errors=True)
    return 1 if corpus.failures else 0


if __name__ == "__main__":
    sys.exit(main())
