"""Collect ONNX models shipped inside PyPI wheels into /work/corpus/pypi, with manifests.

Each model is copied as shipped (no re-export, no simplification) to /work/corpus/pypi/<id>.onnx and
described by /work/corpus/pypi/<id>.json (the schema benchmarks/validate_corpus.py reads). The
independent figures come from outside onnxroof:

* params_stored: count_stored_params below, reading the file with the onnx package only;
* macs: onnxsim 0.8's ModelInfo on the onnxsim-simplified model (it counts Conv, ConvTranspose, Gemm,
  MatMul and their integer twins, not RNNs) plus a hand term for each LSTM/GRU/RNN read off the
  file; for silero-vad, whose network sits in If branches chosen by the sample rate, a hand
  derivation of the branch that sr selects (onnxsim cannot fold those Ifs).

Run in a venv with onnxsim installed (pip install onnxsim); it downloads wheels with pip (no deps).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

OUT = Path("/work/corpus/pypi")
WHEELS = Path("/work/corpus/.cache/pypi-wheels")

MODELS: list[dict[str, Any]] = [
    dict(id="silero-vad-v5", package="silero-vad", version="6.2.3", member="silero_vad/data/silero_vad.onnx",
         shapes={"input": [1, 512], "state": [2, 1, 128]}, values={"sr": 16000}, macs="silero",
         notes="Voice activity, 16 and 8 kHz networks each inside a top-level If on sr == 16000; the LSTM sits in "
               "further Ifs on the batch size. 32 ms chunk at 16 kHz."),
    dict(id="silero-vad-16k-op15", package="silero-vad", version="6.2.3",
         member="silero_vad/data/silero_vad_16k_op15.onnx",
         shapes={"input": [1, 512], "state": [2, 1, 128]}, values={"sr": 16000}, macs="silero",
         notes="16 kHz-only opset-15 export: encoder at top level, LSTM and decoder inside Ifs on the batch size."),
    dict(id="silero-vad-op18-ifless", package="silero-vad", version="6.2.3",
         member="silero_vad/data/silero_vad_op18_ifless.onnx",
         shapes={"input": [1, 512], "state": [2, 1, 128]}, values={"sr": 16000}, macs="silero",
         notes="Opset-18 export with the LSTM cell as Gemm+Split+Sigmoid/Tanh; one If on sr == 16000 remains."),
    dict(id="ppocrv4-det", package="rapidocr-onnxruntime", version="1.4.4",
         member="rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", shapes={"x": [1, 3, 640, 640]},
         notes="PP-OCRv4 mobile text detection (DBNet, Paddle2ONNX); has 2 ConvTranspose."),
    dict(id="ppocrv4-rec", package="rapidocr-onnxruntime", version="1.4.4",
         member="rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", shapes={"x": [1, 3, 48, 320]},
         notes="PP-OCRv4 mobile text recognition (SVTR-LCNet, attention MatMuls)."),
    dict(id="ppocr-mobile-v2-cls", package="rapidocr", version="3.10.0",
         member="rapidocr/models/ch_ppocr_mobile_v2.0_cls_mobile.onnx", shapes={"x": [1, 3, 48, 192]},
         notes="Text-direction classifier; its input is declared [-1, 3, ?, ?] (a -1 dim)."),
    dict(id="ppocrv6-det-small", package="rapidocr", version="3.10.0", member="rapidocr/models/PP-OCRv6_det_small.onnx",
         shapes={"x": [1, 3, 640, 640]}, notes="PP-OCRv6 small detection; weights reached through Identity nodes."),
    dict(id="ppocrv6-rec-small", package="rapidocr", version="3.10.0", member="rapidocr/models/PP-OCRv6_rec_small.onnx",
         shapes={"x": [1, 3, 48, 320]}, notes="PP-OCRv6 small recognition; Erf-GELU, attention MatMuls."),
    dict(id="magika-standard-v3-3", package="magika", version="1.0.3", member="magika/models/standard_v3_3/model.onnx",
         shapes={"bytes": [1, 2048]}, wheel_glob="*manylinux*x86_64.whl",
         notes="File-type classifier (tf2onnx) over 2048 int32 byte features; one Conv, MatMuls."),
    dict(id="nudenet-320n", package="nudenet", version="3.4.2", member="nudenet/320n.onnx",
         shapes={"images": [1, 3, 320, 320]}, notes="YOLOv8n detector (pytorch 2.3 export), dims batch/height/width."),
    dict(id="ddddocr-common", package="ddddocr", version="1.6.1", member="ddddocr/common.onnx",
         shapes={"input1": [1, 1, 64, 256]}, notes="Captcha OCR: CNN + bidirectional LSTM + Gemm (pytorch 1.9)."),
    dict(id="ddddocr-common-old", package="ddddocr", version="1.6.1", member="ddddocr/common_old.onnx",
         shapes={"input1": [1, 1, 64, 256]},
         notes="Dynamically quantized twin of ddddocr-common: ConvInteger, MatMulInteger and com.microsoft "
               "DynamicQuantizeLSTM."),
    dict(id="ddddocr-det", package="ddddocr", version="1.6.1", member="ddddocr/common_det.onnx",
         shapes={"images": [1, 3, 416, 416]}, notes="Captcha character detector, YOLOv5-style (pytorch 1.9), static."),
]

# input positions that carry shapes, axes, indices or conditions rather than weights
SHAPE_INPUTS: dict[str, set[int]] = {
    "Reshape": {1}, "Expand": {1}, "Tile": {1}, "Slice": {1, 2, 3, 4}, "Pad": {1, 3}, "Resize": {1, 2, 3},
    "Upsample": {1}, "Squeeze": {1}, "Unsqueeze": {1}, "ReduceMean": {1}, "ReduceSum": {1}, "ReduceMax": {1},
    "ReduceMin": {1}, "ReduceProd": {1}, "ReduceL2": {1}, "ConstantOfShape": {0}, "Range": {0, 1, 2},
    "Split": {1}, "TopK": {1}, "OneHot": {1}, "If": {0}, "Loop": {0, 1}, "CumSum": {1}, "Shape": {0}, "Size": {0},
}
RNN_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1, "DynamicQuantizeLSTM": 4}


def subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    return [a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH] + \
        [g for a in node.attribute if a.type == onnx.AttributeProto.GRAPHS for g in a.graphs]


def all_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    out = []
    for node in graph.node:
        out.append(node)
        for g in subgraphs(node):
            out.extend(all_nodes(g))
    return out


def constant_tensors(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    """Every initializer and Constant-node value in the graph and its subgraphs, by name."""
    found = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            attr = node.attribute[0]
            value = onnx.helper.get_attribute_value(attr)
            found[node.output[0]] = numpy_helper.to_array(value) if attr.name == "value" else np.array(value)
        for g in subgraphs(node):
            found.update(constant_tensors(g))
    return found


def count_stored_params(model: onnx.ModelProto) -> tuple[int, int]:
    """(elements, tensors) of the stored constants that some node reads as data: initializers and
    Constant values anywhere (If/Loop bodies too), each name once; int64 tensors and constants read
    only as shapes/axes/indices/conditions are left out."""
    consts = constant_tensors(model.graph)
    counted: set[str] = set()
    for node in all_nodes(model.graph):
        skip = SHAPE_INPUTS.get(node.op_type, set()) if node.domain in ("", "ai.onnx") else set()
        for i, name in enumerate(node.input):
            if name in consts and i not in skip and consts[name].dtype != np.int64:
                counted.add(name)
    return sum(int(consts[n].size) for n in counted), len(counted)


def rnn_macs(model: onnx.ModelProto) -> tuple[int, list[str]]:
    """Hand MACs of every LSTM/GRU/RNN: seq * directions * gates * hidden * (input + hidden), the
    input and recurrent matmuls (onnxsim counts none of them). Shapes from ONNX shape inference."""
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {v.name: [d.dim_value or None for d in v.type.tensor_type.shape.dim]
              for v in list(inferred.graph.value_info) + list(inferred.graph.input)}
    consts = constant_tensors(model.graph)
    total, how = 0, []
    for node in all_nodes(model.graph):
        if node.op_type not in RNN_GATES:
            continue
        hidden = next(a.i for a in node.attribute if a.name == "hidden_size")
        w = consts[node.input[1]].shape  # [dirs, gates*H, I] (ONNX) or [dirs, I, 4H] (DynamicQuantizeLSTM)
        dirs, inp = w[0], (w[1] if node.op_type == "DynamicQuantizeLSTM" else w[2])
        seq = shapes.get(node.input[0], [None])[0]
        if seq is None:
            raise SystemExit(f"{node.name}: sequence length of {node.input[0]} unknown")
        macs = seq * dirs * RNN_GATES[node.op_type] * hidden * (inp + hidden)
        total += macs
        how.append(f"{node.op_type} seq {seq} x dirs {dirs} x {RNN_GATES[node.op_type]} gates x H {hidden} "
                   f"x (I {inp} + H {hidden}) = {macs:,}")
    return total, how


def onnxsim_macs(model: onnx.ModelProto, shapes: dict[str, list[int]]) -> tuple[int, str]:
    import onnxsim
    from onnxsim.model_info import ModelInfo

    simplified, _ = onnxsim.simplify(model, overwrite_input_shapes=shapes, check_n=0)
    macs = ModelInfo(simplified).macs
    rnn, how = rnn_macs(simplified)
    source = f"onnxsim {onnxsim.__version__} ModelInfo(simplified model).macs"
    if not isinstance(macs, (int, np.integer)):  # symbolic: a dim only an RNN's output fixes
        seq = [int(h.split()[2]) for h in how]
        macs = macs.subs({s: seq[0] for s in macs.free_symbols})
        source += f" (symbolic {ModelInfo(simplified).macs}; free dims set to the RNN sequence length {seq[0]})"
    if rnn:
        source += " + hand RNN term: " + "; ".join(how)
    return int(macs) + rnn, source


def silero_macs(model: onnx.ModelProto, samples: int, sr: int, state_shape: list[int]) -> tuple[int, str]:
    """Hand derivation for silero-vad: the graph holding the STFT conv for this sr (kernel 256 at
    16 kHz, 128 at 8 kHz), its Convs in order with lengths propagated from samples + reflect pad
    (kernel/4, silero's ReflectionPad1d((0, 64)) at 16 kHz), and the LSTM cell once per frame."""
    kernel = 256 if sr == 16000 else 128
    consts = constant_tensors(model.graph)

    def holds_stft(g: onnx.GraphProto) -> bool:
        return any(n.op_type == "Conv" and n.input[1] in consts and "forward_basis" in n.input[1]
                   and consts[n.input[1]].shape[-1] == kernel for n in g.node)

    graphs = [model.graph] + [g for n in all_nodes(model.graph) for g in subgraphs(n)]
    branch = next(g for g in graphs if holds_stft(g))
    hidden = state_shape[-1]  # silero's state input is [2, batch, H]
    length, channels, total, parts, cell_done = samples + kernel // 4, 0, 0, [], False
    for node in branch.node:
        has_cell = node.op_type in ("LSTM", "Gemm") or any(
            n.op_type == "LSTM" for g in subgraphs(node) for n in all_nodes(g))
        if node.op_type == "Conv":
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            cout, cin_g, k = consts[node.input[1]].shape
            pads, stride = attrs.get("pads", [0, 0]), attrs.get("strides", [1])[0]
            length = (length + pads[0] + pads[1] - k) // stride + 1
            total += cout * cin_g * k * length
            parts.append(f"Conv {cout}x{cin_g}x{k} L{length} {cout * cin_g * k * length:,}")
            channels = cout
        elif has_cell and not cell_done:
            # one LSTM cell step per frame, 4 gates x H x (I + H): an LSTM node (inside Ifs on the
            # batch size, alternatives counted once) or, in the ifless export, the first of two Gemms
            total += length * 4 * hidden * (channels + hidden)
            parts.append(f"LSTM cell {length * 4 * hidden * (channels + hidden):,}")
            cell_done = True
    return total, (f"hand derivation, {sr} Hz branch, {samples} samples + {kernel // 4} reflect pad: "
                   + " + ".join(parts) + f" (conv shapes read off the file; LSTM 4*H*(I+H) per frame, H={hidden})")


def wheel(package: str, version: str, pattern: str) -> Path:
    target = WHEELS / f"{package}-{version}"
    if not list(target.glob(pattern)):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(target),
                        f"{package}=={version}"], check=True)
    return next(target.glob(pattern))


def collect(spec: dict[str, Any]) -> dict[str, Any]:
    whl = wheel(spec["package"], spec["version"], spec.get("wheel_glob", "*.whl"))
    dest = OUT / f"{spec['id']}.onnx"
    with zipfile.ZipFile(whl) as z, z.open(spec["member"]) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out)
    model = onnx.load(str(dest))
    params, tensors = count_stored_params(model)
    if spec.get("macs") == "silero":
        macs, macs_source = silero_macs(model, spec["shapes"]["input"][1], spec["values"]["sr"],
                                         spec["shapes"]["state"])
    else:
        macs, macs_source = onnxsim_macs(model, spec["shapes"])
    producer = f"{model.producer_name or 'unnamed producer'} {model.producer_version}".strip()
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
    return {
        "id": spec["id"], "file": str(dest),
        "exporter": f"shipped in {spec['package']} {spec['version']} ({producer} per the file)",
        "source": f"{whl.name}:{spec['member']}",
        "bind": {"dims": {}, "input_shapes": spec["shapes"], "values": spec.get("values", {})},
        "independent": {
            "macs": macs, "macs_source": macs_source,
            "params_stored": params,
            "params_stored_source": f"benchmarks/corpus/collect_pypi.py count_stored_params: {tensors} tensors, "
                                    "initializers + Constant values (subgraphs too) read as data by some node, "
                                    "each name once; int64 and shape/axes/index-only constants excluded",
        },
        "notes": f"{spec['notes']} Opsets: {opsets}.",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated ids (default: all)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = set(args.models.split(",")) if args.models else None
    for spec in MODELS:
        if wanted and spec["id"] not in wanted:
            continue
        manifest = collect(spec)
        (OUT / f"{spec['id']}.json").write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"{spec['id']:24} macs {manifest['independent']['macs']:>15,}  "
              f"params {manifest['independent']['params_stored']:>12,}")


if __name__ == "__main__":
    main()
