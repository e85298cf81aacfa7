#!/usr/bin/env python3
"""Build the "tools" validation corpus: ONNX files made on this machine by onnxruntime's
quantizers and transformer optimizer, skl2onnx and jax2onnx, each with an independent count of
MACs and stored parameters in a JSON manifest beside it.

Nothing is downloaded from a model hub: every source model is defined below (PyTorch, JAX/flax,
scikit-learn) with random weights or fitted on random data.

    python benchmarks/corpus/build_tools.py [--out DIR] [--only ID,ID] [--parts torch,sklearn,jax]
    python benchmarks/corpus/build_tools.py --analyze-only      # re-run onnxroof on the manifests

Needs (a venv with --system-site-packages over onnx + onnxruntime): torch==2.13.0 (CPU),
transformers, onnxscript, skl2onnx, scikit-learn, jax, jaxlib, flax, jax2onnx; onnxroof (editable).
The independent counts use no onnxroof code: forward hooks on the PyTorch modules, analytic
formulas (transformers, JAX models, scikit-learn estimators), and the script's own reading of the
ONNX protobuf (``stored_params``). The last step runs ``onnxroof.analyze`` on every manifest and
writes ``onnxroof_results.json`` into DIR.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import math
import os
import platform
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from importlib import metadata
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np
import onnx

OUT_DEFAULT = "/work/corpus/tools"


def ver(*names: str) -> str:
    out = []
    for name in names:
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name} ?")
    return ", ".join(out)


@contextlib.contextmanager
def quiet():
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                yield
            finally:
                logging.disable(previous)


# --------------------------------------------------------------------------------------------
# Independent reading of an ONNX file (no onnxroof code)
# --------------------------------------------------------------------------------------------

INDEX_TYPES = {onnx.TensorProto.INT64, onnx.TensorProto.BOOL}


def _graphs(graph: onnx.GraphProto):
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _graphs(g)


def stored_params(path: str | Path) -> dict:
    """Elements of every initializer and Constant-node tensor that a node (or a graph output) reads.

    Returns the count used as ``params_stored`` (every float / int8 / uint8 / int32 / ... tensor,
    scalars included: quantization scales and zero points, int32 quantized biases) and a breakdown:
    int64/bool tensors (shapes, axes, indices) are excluded from params_stored and listed apart;
    scalars (<= 1 element) are listed apart too. Tensors are counted once by name."""
    model = onnx.load(str(path), load_external_data=False)
    by_dtype: Counter = Counter()
    weights = scalars = index = 0
    n_tensors = 0
    for graph in _graphs(model.graph):
        read = {name for node in graph.node for name in node.input if name} | {o.name for o in graph.output}
        # names read from inside subgraphs count as read too
        for sub in _graphs(graph):
            if sub is not graph:
                read |= {name for node in sub.node for name in node.input if name}
        tensors: dict[str, tuple[int, int]] = {}
        for init in graph.initializer:
            tensors[init.name] = (math.prod(init.dims), init.data_type)
        for node in graph.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                for attr in node.attribute:
                    if attr.name == "value":
                        tensors[node.output[0]] = (math.prod(attr.t.dims), attr.t.data_type)
                    elif attr.name in ("value_float", "value_int"):
                        tensors[node.output[0]] = (1, onnx.TensorProto.FLOAT if attr.name == "value_float"
                                                   else onnx.TensorProto.INT64)
                    elif attr.name in ("value_floats", "value_ints"):
                        n = len(attr.floats) if attr.name == "value_floats" else len(attr.ints)
                        tensors[node.output[0]] = (n, onnx.TensorProto.FLOAT if attr.name == "value_floats"
                                                   else onnx.TensorProto.INT64)
        for name, (elements, dtype) in tensors.items():
            if name not in read:
                continue
            n_tensors += 1
            if dtype in INDEX_TYPES:
                index += elements
                continue
            by_dtype[onnx.TensorProto.DataType.Name(dtype).lower()] += elements
            if elements <= 1:
                scalars += elements
            else:
                weights += elements
    return {"params_stored": weights + scalars, "weights": weights, "scalars": scalars,
            "int64_bool_excluded": index, "by_dtype": dict(by_dtype), "tensors": n_tensors}


def attribute_numbers(path: str | Path) -> dict:
    """Numbers stored in node attributes (ai.onnx.ml ops keep their model there), per op."""
    model = onnx.load(str(path), load_external_data=False)
    out: dict[str, dict[str, int]] = {}
    for node in model.graph.node:
        if node.domain != "ai.onnx.ml":
            continue
        per = out.setdefault(node.op_type, {})
        for attr in node.attribute:
            n = len(attr.floats) + len(attr.ints) + (math.prod(attr.t.dims) if attr.type == onnx.AttributeProto.TENSOR else 0)
            if n:
                per[attr.name] = per.get(attr.name, 0) + n
    return out


def ort_check(path: str | Path, bind: dict) -> str:
    """Run the file once in onnxruntime (CPU) at the manifest's binding: "ok <output shapes>" or the error."""
    import onnxruntime as ort
    try:
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        feeds = {}
        for inp in sess.get_inputs():
            shape = bind.get("input_shapes", {}).get(inp.name) or [
                d if isinstance(d, int) else bind.get("dims", {}).get(d, 1) for d in inp.shape]
            if "int" in inp.type:
                feeds[inp.name] = np.ones(shape, dtype=np.int64 if "int64" in inp.type else np.int32)
            else:
                feeds[inp.name] = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        outs = sess.run(None, feeds)
        return "ok " + " ".join(str(list(getattr(o, "shape", [len(o)]))) for o in outs)
    except Exception as exc:  # noqa: BLE001 -- recorded in the manifest
        return f"error {type(exc).__name__}: {str(exc)[:300]}"


def op_histogram(path: str | Path) -> dict:
    model = onnx.load(str(path), load_external_data=False)
    c = Counter((n.domain or "ai.onnx", n.op_type) for g in _graphs(model.graph) for n in g.node)
    return {f"{d}:{o}": k for (d, o), k in sorted(c.items())}


# --------------------------------------------------------------------------------------------
# Manifests
# --------------------------------------------------------------------------------------------


class Corpus:
    def __init__(self, out: Path, only: set[str] | None):
        self.out = out
        self.only = only
        self.tmp = out / "_sources"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.failures: dict[str, str] = {}

    def wanted(self, model_id: str) -> bool:
        return not self.only or model_id in self.only

    def path(self, model_id: str) -> Path:
        return self.out / f"{model_id}.onnx"

    def manifest(self, model_id: str, exporter: str, bind: dict, macs: int, macs_source: str,
                 params_framework: int | None, notes: str, params_stored: int | None = None,
                 params_stored_source: str | None = None, extra: dict | None = None) -> None:
        path = self.path(model_id)
        facts = stored_params(path)
        if params_stored is None:
            params_stored = facts["params_stored"]
            params_stored_source = (
                "build_tools.stored_params: elements of every initializer and Constant-node tensor read by a node, "
                "counted once by name, scalars included (quantization scales, zero points, float constants), "
                "int8/uint8/int32 included; int64/bool tensors (shapes, axes, indices) excluded "
                f"(breakdown: weights {facts['weights']}, scalars {facts['scalars']}, "
                f"int64/bool excluded {facts['int64_bool_excluded']}, by dtype {facts['by_dtype']})")
        doc = {
            "id": model_id,
            "file": str(path),
            "exporter": exporter,
            "bind": bind,
            "independent": {"macs": int(macs), "macs_source": macs_source, "params_stored": int(params_stored),
                            "params_stored_source": params_stored_source,
                            "params_framework": None if params_framework is None else int(params_framework)},
            "file_facts": facts,
            "ops": op_histogram(path),
            "onnxruntime_check": ort_check(path, bind),
            "notes": notes,
        }
        if extra:
            doc.update(extra)
        (self.out / f"{model_id}.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"  wrote {model_id}: macs {macs:,} params_stored {params_stored:,}", flush=True)

    def run(self, model_id: str, fn, *args) -> None:
        if not self.wanted(model_id):
            return
        t = time.time()
        print(f"[{model_id}]", flush=True)
        try:
            fn(self, model_id, *args)
        except Exception as exc:  # record and continue with the others
            self.failures[model_id] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            print(f"  FAILED {model_id}: {self.failures[model_id]}", flush=True)
            traceback.print_exc(limit=4)
        print(f"  ({time.time() - t:.1f}s)", flush=True)


# --------------------------------------------------------------------------------------------
# PyTorch source models (torchvision's ResNet-50 re-typed; torchvision is not installed)
# --------------------------------------------------------------------------------------------


def torch_models():
    import torch
    from torch import nn

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)  # V1.5: stride on 3x3
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(planes * 4)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample

        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            return self.relu(self.bn3(self.conv3(out)) + idt)

    class ResNet50(nn.Module):
        def __init__(self, num_classes=1000):
            super().__init__()
            self.inplanes = 64
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            self.layer1 = self._layer(64, 3)
            self.layer2 = self._layer(128, 4, 2)
            self.layer3 = self._layer(256, 6, 2)
            self.layer4 = self._layer(512, 3, 2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(2048, num_classes)

        def _layer(self, planes, blocks, stride=1):
            down = None
            if stride != 1 or self.inplanes != planes * 4:
                down = nn.Sequential(nn.Conv2d(self.inplanes, planes * 4, 1, stride=stride, bias=False),
                                     nn.BatchNorm2d(planes * 4))
            layers = [Bottleneck(self.inplanes, planes, stride, down)]
            self.inplanes = planes * 4
            layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    class SmallCNN(nn.Module):
        """conv3x3(3->16)-ReLU-MaxPool-conv3x3(16->32)-ReLU-MaxPool-conv1x1(32->64)-ReLU-GAP-Linear(64->10), 32x32 input."""

        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
            self.fc1 = nn.Linear(64, 32)
            self.fc2 = nn.Linear(32, 10)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(torch.flatten(self.features(x), 1))))

    class LSTMTagger(nn.Module):
        def __init__(self, vocab=5000, emb=128, hidden=256, tags=17):
            super().__init__()
            self.embedding = nn.Embedding(vocab, emb)
            self.lstm = nn.LSTM(emb, hidden, num_layers=1, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(2 * hidden, tags)

        def forward(self, ids):
            out, _ = self.lstm(self.embedding(ids))
            return self.fc(out)

    return ResNet50, SmallCNN, LSTMTagger


def hook_macs(model, inputs) -> Counter:
    """Forward hooks: Conv2d N·Co·Ho·Wo·Ci/g·kh·kw; Linear out.numel()·in; LSTM dirs·N·T·4H·(I+H)."""
    import torch
    from torch import nn
    counts: Counter = Counter()

    def conv(m, _i, out):
        counts["Conv2d"] += out.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]

    def linear(m, _i, out):
        counts["Linear"] += out.numel() * m.in_features

    def lstm(m, inp, _o):
        x = inp[0]
        n, t = (x.shape[0], x.shape[1]) if m.batch_first else (x.shape[1], x.shape[0])
        dirs = 2 if m.bidirectional else 1
        for layer in range(m.num_layers):
            i = m.input_size if layer == 0 else m.hidden_size * dirs
            counts["LSTM"] += dirs * n * t * 4 * m.hidden_size * (i + m.hidden_size)

    hooks = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(conv))
        elif isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(linear))
        elif isinstance(m, nn.LSTM):
            hooks.append(m.register_forward_hook(lstm))
    with torch.no_grad():
        model(*inputs)
    for h in hooks:
        h.remove()
    return counts


def randomize(model, seed=0):
    """Distinct random values in every float parameter and buffer (BN stats too), so no two
    initializers are identical and BN folding produces real biases."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if t.is_floating_point():
                v = torch.rand(t.shape, generator=gen) * 0.1
                t.copy_(v + 0.5 if name.endswith("running_var") else v - 0.05)


def fw_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def hook_source(counts: Counter) -> str:
    return ("forward hooks on the PyTorch model: Conv2d N·Co·Ho·Wo·Ci/g·kh·kw, Linear in·out per row, "
            "LSTM dirs·N·T·4H·(I+H); " + ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items())))


TORCH_EXPORTER = None  # filled in lazily


def torch_exporter() -> str:
    return "torch.onnx.export (TorchScript, dynamo=False, opset 17) from " + ver("torch")


class RandomReader:
    """CalibrationDataReader over a few seeded random inputs."""

    def __init__(self, name: str, shape: tuple, n: int = 4, seed: int = 0):
        from onnxruntime.quantization import CalibrationDataReader  # noqa: F401  (the protocol)
        rng = np.random.default_rng(seed)
        self.data = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.data, None)

    def rewind(self):  # not needed by MinMax
        pass


def _reader_class():
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(RandomReader, CalibrationDataReader):
        pass
    return Reader


def export_conv(corpus: Corpus, which: str):
    """Export the fp32 source (cached in _sources) and return (path, framework params, MACs, source)."""
    import torch
    ResNet50, SmallCNN, _ = torch_models()
    torch.manual_seed(0)
    model, size = (ResNet50(), 224) if which == "resnet50" else (SmallCNN(), 32)
    randomize(model)
    model.eval()
    counts = hook_macs(model, (torch.randn(1, 3, size, size),))
    src = corpus.tmp / f"{which}-fp32.onnx"
    if not src.exists():
        with quiet():
            torch.onnx.export(model, (torch.randn(2, 3, size, size),), str(src), input_names=["input"],
                              output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                              opset_version=17, dynamo=False)
    return src, fw_params(model), sum(counts.values()), hook_source(counts), size


def build_static(corpus: Corpus, model_id: str, which: str, fmt: str, per_channel: bool):
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    src, fw, macs, how, size = export_conv(corpus, which)
    act = QuantType.QUInt8 if fmt == "QOperator" else QuantType.QInt8
    with quiet():
        quantize_static(str(src), str(corpus.path(model_id)), _reader_class()("input", (1, 3, size, size), n=4),
                        quant_format=QuantFormat.QOperator if fmt == "QOperator" else QuantFormat.QDQ,
                        per_channel=per_channel, activation_type=act, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
    corpus.manifest(
        model_id,
        f"onnxruntime.quantization.quantize_static(quant_format={fmt}, activation={act.name}, weight=QInt8, "
        f"per_channel={per_channel}, MinMax calibration on 4 random N(0,1) inputs of 1x3x{size}x{size}) [{ver('onnxruntime')}] "
        f"over {torch_exporter()}",
        {"dims": {"batch": 1}, "input_shapes": {}}, macs, how + " (quantization does not change MACs)", fw,
        f"source: {which} ({'torchvision ResNet-50 V1.5 re-typed' if which == 'resnet50' else 'SmallCNN: conv-bn-relu-pool x2, conv1x1, GAP, 2 Linear'}), "
        "random weights, eval mode; the TorchScript exporter folds BatchNorm into Conv (so stored fp32 params = "
        "framework params minus BN gamma/beta, plus one bias per folded conv). No quant_pre_process.")


def export_lstm(corpus: Corpus):
    import torch
    _, _, LSTMTagger = torch_models()
    torch.manual_seed(0)
    model = LSTMTagger()
    randomize(model)
    model.eval()
    batch, seq = 1, 32
    counts = hook_macs(model, (torch.zeros(batch, seq, dtype=torch.long),))
    src = corpus.tmp / "lstm-fp32.onnx"
    if not src.exists():
        with quiet():
            torch.onnx.export(model, (torch.randint(0, 5000, (2, 16)),), str(src), input_names=["ids"],
                              output_names=["tags"], dynamic_axes={"ids": {0: "batch", 1: "sequence"}},
                              opset_version=17, dynamo=False)
    return src, fw_params(model), sum(counts.values()), hook_source(counts)


def build_lstm_dynamic(corpus: Corpus, model_id: str):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    src, fw, macs, how = export_lstm(corpus)
    with quiet():
        quantize_dynamic(str(src), str(corpus.path(model_id)), weight_type=QuantType.QInt8)
    corpus.manifest(
        model_id, f"onnxruntime.quantization.quantize_dynamic(weight_type=QInt8, default op types) [{ver('onnxruntime')}] "
        f"over {torch_exporter()}",
        {"dims": {"batch": 1, "sequence": 32}, "input_shapes": {}}, macs, how + " at batch 1, sequence 32", fw,
        "LSTMTagger: Embedding(5000,128) -> bidirectional LSTM(128->256) -> Linear(512->17) on every step. "
        "quantize_dynamic turns LSTM into com.microsoft DynamicQuantizeLSTM (int8 W, R + scales/zero points), "
        "the Linear's MatMul into DynamicQuantizeLinear + MatMulInteger, and the embedding Gather into an int8 Gather.")


# --- transformers ----------------------------------------------------------------------------

BERT = dict(hidden_size=256, num_attention_heads=4, intermediate_size=1024, num_hidden_layers=2,
            vocab_size=30522, max_position_embeddings=512)
GPT2 = dict(n_embd=256, n_head=4, n_layer=2, vocab_size=50257, n_positions=1024)
SEQ = 128


def transformer_terms(batch, seq, d, d_ff, layers, vocab=0, pooler=False) -> dict:
    terms = {"qkvo projections 4·S·d²": layers * 4 * seq * d * d, "mlp 2·S·d·d_ff": layers * 2 * seq * d * d_ff,
             "scores+values 2·S²·d": layers * 2 * seq * seq * d}
    if vocab:
        terms["lm head S·d·V"] = seq * d * vocab
    if pooler:
        terms["pooler d²"] = d * d
    return {k: batch * v for k, v in terms.items()}


def terms_source(terms: dict) -> str:
    return ("analytic transformer count (per layer 4·S·d² + 2·S·d·d_ff + 2·S²·d; embeddings, norms, softmax, "
            "GELU, bias adds, masks are not MACs): " + ", ".join(f"{k} {v:,}" for k, v in terms.items()))


def export_hf(corpus: Corpus, kind: str):
    import torch
    from torch import nn

    class Wrap(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            if kind == "gpt2":
                return self.m(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
            out = self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state, out.pooler_output

    torch.manual_seed(0)
    if kind == "bert":
        from transformers import BertConfig, BertModel
        model = BertModel(BertConfig(**BERT, attn_implementation="eager"))
        terms = transformer_terms(1, SEQ, BERT["hidden_size"], BERT["intermediate_size"], BERT["num_hidden_layers"],
                                  pooler=True)
        names, outs = ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"]
        vocab = BERT["vocab_size"]
    else:
        from transformers import GPT2Config, GPT2LMHeadModel
        model = GPT2LMHeadModel(GPT2Config(**GPT2, attn_implementation="eager"))
        terms = transformer_terms(1, SEQ, GPT2["n_embd"], 4 * GPT2["n_embd"], GPT2["n_layer"], vocab=GPT2["vocab_size"])
        names, outs = ["input_ids", "attention_mask"], ["logits"]
        vocab = GPT2["vocab_size"]
    randomize(model)
    model.eval()
    wrap = Wrap(model)
    src = corpus.tmp / f"{kind}-fp32.onnx"
    if not src.exists():
        ids = torch.randint(0, vocab, (2, 64))
        args = (ids, torch.ones(2, 64, dtype=torch.long)) + ((torch.zeros(2, 64, dtype=torch.long),) if kind == "bert" else ())
        dyn = {n: {0: "batch", 1: "sequence"} for n in names}
        with quiet():
            torch.onnx.export(wrap, args, str(src), input_names=names, output_names=outs, dynamic_axes=dyn,
                              opset_version=17, dynamo=False)
    return src, fw_params(model), sum(terms.values()), terms_source(terms), terms


def transformers_exporter() -> str:
    return f"{torch_exporter()}, {ver('transformers')} (eager attention, random weights)"


def build_optimized(corpus: Corpus, model_id: str, kind: str):
    from onnxruntime.transformers.optimizer import optimize_model
    src, fw, macs, how, _ = export_hf(corpus, kind)
    cfg = BERT if kind == "bert" else {"num_attention_heads": GPT2["n_head"], "hidden_size": GPT2["n_embd"]}
    with quiet():
        opt = optimize_model(str(src), model_type=kind, num_heads=cfg["num_attention_heads"], hidden_size=cfg["hidden_size"])
        stats = opt.get_fused_operator_statistics()
        opt.save_model_to_file(str(corpus.path(model_id)))
    fused = {k: v for k, v in stats.items() if v}
    corpus.manifest(
        model_id, f"onnxruntime.transformers.optimizer.optimize_model(model_type='{kind}', num_heads={cfg['num_attention_heads']}, "
        f"hidden_size={cfg['hidden_size']}) [{ver('onnxruntime')}] over {transformers_exporter()}",
        {"dims": {"batch": 1, "sequence": SEQ}, "input_shapes": {}}, macs, how, fw,
        f"{kind} config {BERT if kind == 'bert' else GPT2}; optimizer fused-op statistics: {fused}. "
        + ("GPT-2's LM head is tied to wte: the framework count has it once." if kind == "gpt2" else ""),
        extra={"fused_operator_statistics": fused})


def build_bert_dynamic(corpus: Corpus, model_id: str, over_optimized: bool):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    src, fw, macs, how, _ = export_hf(corpus, "bert")
    note = ""
    if over_optimized:
        opt_path = corpus.path("bert-optimized")
        if not opt_path.exists():
            build_optimized(corpus, "bert-optimized", "bert")
        src = opt_path
        note = "input is bert-optimized (fused Attention etc.), so Attention becomes com.microsoft QAttention. "
    with quiet():
        quantize_dynamic(str(src), str(corpus.path(model_id)), weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT} if over_optimized else None)
    corpus.manifest(
        model_id, f"onnxruntime.quantization.quantize_dynamic(weight_type=QInt8, default op types"
        + (", extra_options DefaultTensorType=FLOAT (needed: the quantizer cannot type contrib-op outputs)" if over_optimized else "")
        + f") [{ver('onnxruntime')}] over "
        + ("optimize_model(bert) over " if over_optimized else "") + transformers_exporter(),
        {"dims": {"batch": 1, "sequence": SEQ}, "input_shapes": {}}, macs, how + " (quantization does not change MACs)", fw,
        note + f"BERT config {BERT}. MatMul with constant weight -> DynamicQuantizeLinear + MatMulInteger + Mul (rescale); "
        "the embedding Gathers are quantized too.")


def build_ort_fused(corpus: Corpus, model_id: str):
    """onnxruntime's own graph optimizer (extended level) over the dynamic-int8 BERT: MatMulInteger
    chains become com.microsoft DynamicQuantizeMatMul / MatMulIntegerToFloat."""
    import onnxruntime as ort
    base = corpus.path("bert-dynamic-int8")
    if not base.exists():
        build_bert_dynamic(corpus, "bert-dynamic-int8", False)
    _, fw, macs, how, _ = export_hf(corpus, "bert")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = str(corpus.path(model_id))
    with quiet():
        ort.InferenceSession(str(base), so, providers=["CPUExecutionProvider"])
    corpus.manifest(
        model_id, f"onnxruntime.InferenceSession(graph_optimization_level=ORT_ENABLE_EXTENDED, optimized_model_filepath) "
        f"[{ver('onnxruntime')}] over bert-dynamic-int8",
        {"dims": {"batch": 1, "sequence": SEQ}, "input_shapes": {}}, macs, how, fw,
        "onnxruntime's CPU graph optimizer fuses DynamicQuantizeLinear+MatMulInteger+Mul into DynamicQuantizeMatMul "
        "and the rest of BERT (Attention, SkipLayerNormalization, Gelu ...); contains CPU-EP-specific ops.")


# --------------------------------------------------------------------------------------------
# scikit-learn -> skl2onnx (ai.onnx.ml)
# --------------------------------------------------------------------------------------------

NF = 20


def sk_data(classes: int | None):
    from sklearn.datasets import make_classification, make_regression
    if classes:
        return make_classification(n_samples=400, n_features=NF, n_informative=10, n_classes=classes, random_state=0)
    return make_regression(n_samples=400, n_features=NF, noise=0.1, random_state=0)


def tree_numbers(trees, outputs_per_leaf: int):
    """(internal nodes = thresholds, leaves, sum of max depths, mean visited depth helper)."""
    internal = leaves = depth = 0
    for t in trees:
        t = t.tree_
        is_leaf = t.children_left == -1
        internal += int((~is_leaf).sum())
        leaves += int(is_leaf.sum())
        depth += int(t.max_depth)
    return internal, leaves, depth


def mean_visited_depth(trees, X) -> float:
    total = 0.0
    for t in trees:
        total += float(t.decision_path(X).sum(axis=1).mean() - 1)  # nodes on the path minus the leaf
    return total


def build_sklearn(corpus: Corpus, model_id: str):
    from skl2onnx import to_onnx
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    exporter = f"skl2onnx.to_onnx(target_opset={{'': 17, 'ai.onnx.ml': 3}}) [{ver('skl2onnx', 'scikit-learn')}]"
    bind = {"dims": {}, "input_shapes": {"X": [1, NF]}}
    if model_id == "sk-randomforest":
        X, y = sk_data(3)
        m = RandomForestClassifier(n_estimators=10, max_depth=6, random_state=0).fit(X, y)
        trees = m.estimators_
        internal, leaves, depth = tree_numbers(trees, 3)
        macs = depth
        macs_src = (f"trees: comparisons per sample, upper bound = sum of the {len(trees)} trees' max depths ({depth}); "
                    f"mean depth actually visited over the training data {mean_visited_depth(trees, X):.1f}; "
                    f"plus {len(trees)}x3 leaf-value adds (not MACs)")
        params = internal + leaves * 3
        psrc = (f"model numbers from sklearn: thresholds (one per internal node: {internal}) + leaf class values "
                f"({leaves} leaves x 3 classes = {leaves * 3}); feature ids, node ids and child links not counted")
        opts = {id(m): {"zipmap": False}}
        notes = "RandomForestClassifier(n_estimators=10, max_depth=6) on make_classification(400x20, 3 classes) -> TreeEnsembleClassifier"
    elif model_id == "sk-gbr":
        X, y = sk_data(None)
        m = GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0).fit(X, y)
        trees = [e[0] for e in m.estimators_]
        internal, leaves, depth = tree_numbers(trees, 1)
        macs = depth
        macs_src = (f"trees: comparisons per sample, upper bound = sum of max depths ({depth}); mean visited "
                    f"{mean_visited_depth(trees, X):.1f}; plus 20 leaf adds")
        params = internal + leaves + 1
        psrc = f"thresholds {internal} + leaf values {leaves} (learning rate folded in) + 1 base value"
        opts = None
        notes = "GradientBoostingRegressor(n_estimators=20, max_depth=3) on make_regression(400x20) -> TreeEnsembleRegressor"
    elif model_id == "sk-logreg":
        X, y = sk_data(3)
        m = LogisticRegression(max_iter=500).fit(X, y)
        macs, macs_src = NF * 3, "linear: n_features x n_classes = 20 x 3 per sample (softmax/argmax not MACs)"
        params, psrc = m.coef_.size + m.intercept_.size, "coef 3x20 + intercept 3"
        opts = {id(m): {"zipmap": False}}
        notes = "LogisticRegression (multinomial, 3 classes) -> LinearClassifier (+ Normalizer/softmax post-transform)"
    elif model_id == "sk-linreg":
        X, y = sk_data(None)
        m = LinearRegression().fit(X, y)
        macs, macs_src = NF, "linear: n_features x 1 = 20 per sample"
        params, psrc = m.coef_.size + 1, "coef 20 + intercept 1"
        opts = None
        notes = "LinearRegression -> LinearRegressor"
    elif model_id == "sk-scaler-logreg":
        X, y = sk_data(3)
        m = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(X, y)
        macs, macs_src = NF * 3, "StandardScaler is elementwise ((x-mean)·scale: 0 MACs, 40 FLOPs); LogisticRegression 20x3 MACs"
        lr = m[-1]
        params, psrc = 2 * NF + lr.coef_.size + lr.intercept_.size, "scaler mean 20 + scale 20; coef 3x20 + intercept 3"
        opts = {id(lr): {"zipmap": False}}
        notes = "Pipeline(StandardScaler, LogisticRegression) -> Scaler + LinearClassifier"
    elif model_id == "sk-svc":
        X, y = sk_data(3)
        m = SVC(kernel="rbf", gamma="scale").fit(X, y)
        nsv = m.support_vectors_.shape[0]
        macs = nsv * NF + 2 * nsv
        macs_src = (f"RBF kernel against {nsv} support vectors: n_SV x n_features = {nsv * NF} (squared distance) "
                    f"+ one-vs-one decisions (k-1) x n_SV = {2 * nsv} dual-coefficient MACs; exp not a MAC")
        params = m.support_vectors_.size + m.dual_coef_.size + m.intercept_.size
        psrc = f"support vectors {nsv}x20 + dual coefficients 2x{nsv} + 3 intercepts (kernel gamma etc. not counted)"
        opts = None
        notes = "SVC(rbf, 3 classes, one-vs-one) -> SVMClassifier"
    elif model_id == "sk-knn":
        X, y = sk_data(3)
        m = KNeighborsClassifier(n_neighbors=5).fit(X, y)
        n = X.shape[0]
        macs, macs_src = n * NF, f"brute-force distances to {n} training points: {n} x 20 per sample (TopK, vote not MACs)"
        params, psrc = n * NF + n, f"training points {n}x20 + their labels {n} (labels are int64 in the file)"
        opts = None
        notes = "KNeighborsClassifier(5) -> standard ops (distances via ReduceSumSquare/MatMul, TopK, ArrayFeatureExtractor...)"
    else:
        raise KeyError(model_id)
    with quiet():
        proto = to_onnx(m, X[:1].astype(np.float32), target_opset={"": 17, "ai.onnx.ml": 3}, options=opts)
    # name the input X (skl2onnx does already) with an unnamed batch dim: bind by input_shapes
    onnx.save(proto, str(corpus.path(model_id)))
    attrs = attribute_numbers(corpus.path(model_id))
    inits = stored_params(corpus.path(model_id))
    corpus.manifest(model_id, exporter, {"dims": {}, "input_shapes": {proto.graph.input[0].name: [1, NF]}}, macs,
                    macs_src, params, notes, params_stored=params, params_stored_source=psrc,
                    extra={"file_attribute_numbers": attrs, "file_initializers": inits})


# --------------------------------------------------------------------------------------------
# JAX / flax.nnx -> jax2onnx
# --------------------------------------------------------------------------------------------


def build_jax(corpus: Corpus, model_id: str):
    import jax
    from flax import nnx
    from jax2onnx import to_onnx
    rngs = nnx.Rngs(0)
    exporter = f"jax2onnx.to_onnx (opset 23) [{ver('jax2onnx', 'jax', 'jaxlib', 'flax')}]"
    if model_id == "jax-mlp":
        class MLP(nnx.Module):
            def __init__(self, rngs):
                self.l1, self.l2, self.l3 = nnx.Linear(784, 256, rngs=rngs), nnx.Linear(256, 128, rngs=rngs), nnx.Linear(128, 10, rngs=rngs)

            def __call__(self, x):
                return self.l3(nnx.relu(self.l2(nnx.relu(self.l1(x)))))
        m = MLP(rngs)
        inputs = [("B", 784)]
        macs = 784 * 256 + 256 * 128 + 128 * 10
        src = "analytic: Linear 784x256 + 256x128 + 128x10 per sample"
        notes = "flax.nnx MLP 784-256-128-10, ReLU"
    elif model_id == "jax-cnn":
        class CNN(nnx.Module):
            def __init__(self, rngs):
                self.c1 = nnx.Conv(1, 16, (3, 3), padding="SAME", rngs=rngs)
                self.c2 = nnx.Conv(16, 32, (3, 3), padding="SAME", rngs=rngs)
                self.fc = nnx.Linear(7 * 7 * 32, 10, rngs=rngs)

            def __call__(self, x):
                x = nnx.avg_pool(nnx.relu(self.c1(x)), window_shape=(2, 2), strides=(2, 2))
                x = nnx.avg_pool(nnx.relu(self.c2(x)), window_shape=(2, 2), strides=(2, 2))
                return self.fc(x.reshape(x.shape[0], -1))
        m = CNN(rngs)
        inputs = [("B", 28, 28, 1)]
        macs = 28 * 28 * 16 * 1 * 9 + 14 * 14 * 32 * 16 * 9 + 7 * 7 * 32 * 10
        src = "analytic: conv1 28·28·16·1·9 + conv2 14·14·32·16·9 + fc 1568·10 per sample (NHWC, SAME padding)"
        notes = "flax.nnx CNN on 28x28x1 NHWC: conv3x3(1->16)-relu-avgpool2, conv3x3(16->32)-relu-avgpool2, Linear(1568->10)"
    elif model_id == "jax-transformer-block":
        D, H, FF, S = 128, 4, 512, 32

        class Block(nnx.Module):
            def __init__(self, rngs):
                self.ln1, self.ln2 = nnx.LayerNorm(D, rngs=rngs), nnx.LayerNorm(D, rngs=rngs)
                self.attn = nnx.MultiHeadAttention(num_heads=H, in_features=D, qkv_features=D, decode=False, rngs=rngs)
                self.f1, self.f2 = nnx.Linear(D, FF, rngs=rngs), nnx.Linear(FF, D, rngs=rngs)

            def __call__(self, x):
                x = x + self.attn(self.ln1(x))
                return x + self.f2(nnx.gelu(self.f1(self.ln2(x))))
        m = Block(rngs)
        inputs = [("B", S, D)]
        macs = 4 * S * D * D + 2 * S * S * D + 2 * S * D * FF
        src = f"analytic per sample: qkvo 4·S·d² + scores/values 2·S²·d + mlp 2·S·d·d_ff with S={S}, d={D}, d_ff={FF}, 4 heads"
        notes = "flax.nnx pre-LN transformer block: LayerNorm, MultiHeadAttention(4 heads, no mask), LayerNorm, MLP(128-512-128, gelu)"
    else:
        raise KeyError(model_id)
    fw = sum(int(np.prod(x.shape)) for x in jax.tree_util.tree_leaves(nnx.state(m, nnx.Param)))
    with quiet():
        proto = to_onnx(m, inputs, model_name=model_id)
    onnx.save(proto, str(corpus.path(model_id)))
    dims = {}
    for inp in proto.graph.input:
        for d in inp.type.tensor_type.shape.dim:
            if d.dim_param:
                dims[d.dim_param] = 1
    corpus.manifest(model_id, exporter, {"dims": dims, "input_shapes": {}}, macs, src + " (batch 1)", fw, notes)


# --------------------------------------------------------------------------------------------
# onnxroof on every manifest
# --------------------------------------------------------------------------------------------


def add_contrib_shape_rules() -> None:
    """Diagnostic (--with-contrib-shape-rules): give the contrib ops met in this corpus output-shape
    rules in this process only (OpRule.shapes; onnxroof's files are not touched), to show that the
    MAC gaps of the ORT-quantized/optimized models come from missing shape rules alone."""
    import dataclasses
    from onnxroof import ops
    from onnxroof.ops import COST_RULES, rule_for, same_as_input
    MS, F = "com.microsoft", onnx.TensorProto.FLOAT
    def put(op, fn, domain=MS):
        r = rule_for(domain, op)
        if r is None: return
        COST_RULES[(domain, op)] = dataclasses.replace(r, shapes=fn)
    def inp(n, i): return n.inputs[i] if i < len(n.inputs) else None
    def gap(n):
        x = inp(n, 0); return [(x.dtype, x.shape[:2] + (1,) * (len(x.shape) - 2))]
    def qgemm(n):
        a, b = inp(n, 0), inp(n, 3)
        ta, tb = n.attr("transA", 0), n.attr("transB", 0)
        m = a.shape[1] if ta else a.shape[0]; k_n = b.shape[0] if tb else b.shape[1]
        y_zp = inp(n, 8)
        return [(y_zp.dtype if y_zp is not None else F, (m, k_n))]
    def embln(n):
        ids, word = inp(n, 0), inp(n, 2)
        return [(word.dtype, tuple(ids.shape) + (word.shape[1],)), (onnx.TensorProto.INT32, (ids.shape[0],))]
    def attention(n):
        x, bias = inp(n, 0), inp(n, 2)
        return [(x.dtype, tuple(x.shape[:2]) + (bias.shape[0] // 3,))]
    def qattention(n):
        x, bias = inp(n, 0), inp(n, 2)
        return [(F, tuple(x.shape[:2]) + (bias.shape[0] // 3,))]
    def mm(a_i, b_i, dt=None):
        def f(n):
            a, b = inp(n, a_i), inp(n, b_i)
            return [(dt or F, tuple(a.shape[:-1]) + (b.shape[-1],))]
        return f
    for op in ["QLinearAdd", "QLinearMul", "SkipLayerNormalization", "BiasGelu", "FastGelu", "Gelu"]:
        put(op, same_as_input(0))
    put("QLinearGlobalAveragePool", gap); put("QGemm", qgemm)
    put("EmbedLayerNormalization", embln); put("Attention", attention); put("QAttention", qattention)
    put("DynamicQuantizeMatMul", mm(0, 1)); put("MatMulIntegerToFloat", mm(0, 1))
    def fused(n):
        a, b = list(inp(n, 0).shape), list(inp(n, 1).shape)
        if n.attr("transA", 0): a[-1], a[-2] = a[-2], a[-1]
        if n.attr("transB", 0): b[-1], b[-2] = b[-2], b[-1]
        batch = a[:-2] if len(a) >= len(b) else b[:-2]
        return [(inp(n, 0).dtype, tuple(batch) + (a[-2], b[-1]))]
    put("FusedMatMul", fused)
    def qembln(n):
        ids, word = inp(n, 0), inp(n, 2)
        return [(F, tuple(ids.shape) + (word.shape[1],)), (onnx.TensorProto.INT32, (ids.shape[0],))]
    ops.register("QEmbedLayerNormalization", ops.zero_cost("experiment placeholder"), family="quantized", domain=MS, shapes=qembln)


def analyze_all(out: Path, name: str = "onnxroof_results.json") -> list[dict]:
    import onnxroof
    rows = []
    for mpath in sorted(out.glob("*.json")):
        if mpath.name.startswith("onnxroof_results") or mpath.name == "failures.json":
            continue
        man = json.loads(mpath.read_text())
        row = {"id": man["id"]}
        try:
            t = time.time()
            a = onnxroof.analyze(man["file"], dims=man["bind"].get("dims") or None,
                                 input_shapes=man["bind"].get("input_shapes") or None)
            row["seconds"] = round(time.time() - t, 2)
            ind = man["independent"]
            first_reason = {}
            for n in a.nodes:
                key = f"{n.domain or 'ai.onnx'}:{n.op_type}"
                if not n.counted and key not in first_reason:
                    first_reason[key] = f"{n.status}: {n.reason}"
            by_op: Counter = Counter()
            for n in a.nodes:
                if n.macs:
                    by_op[f"{n.domain or 'ai.onnx'}:{n.op_type}"] += n.macs
            row.update(macs=a.totals.macs, flops=a.totals.flops, ind_macs=ind["macs"], params=a.totals.params, ind_params=ind["params_stored"],
                       unsupported=a.totals.unsupported, not_counted=a.totals.not_counted, first_reason=first_reason,
                       warnings=a.warnings, macs_by_op=dict(by_op))
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    (out / name).write_text(json.dumps(rows, indent=1) + "\n")
    for r in rows:
        if "error" in r:
            print(f"{r['id']:28s} ERROR {r['error'][:200]}")
            continue
        dm = (r["macs"] - r["ind_macs"]) / r["ind_macs"] * 100 if r["ind_macs"] else float("nan")
        dp = (r["params"] - r["ind_params"]) / r["ind_params"] * 100 if r["ind_params"] else float("nan")
        print(f"{r['id']:28s} macs {r['macs']:>14,} vs {r['ind_macs']:>14,} ({dm:+.2f}%)  params {r['params']:>11,} vs "
              f"{r['ind_params']:>11,} ({dp:+.2f}%)  unsup {r['unsupported']} notc {r['not_counted']}")
    return rows


# --------------------------------------------------------------------------------------------


CASES = [
    ("resnet50-qoperator", build_static, "resnet50", "QOperator", False),
    ("resnet50-qdq", build_static, "resnet50", "QDQ", True),
    ("smallcnn-qoperator", build_static, "smallcnn", "QOperator", False),
    ("smallcnn-qdq", build_static, "smallcnn", "QDQ", False),
    ("lstm-dynamic-int8", build_lstm_dynamic),
    ("bert-optimized", build_optimized, "bert"),
    ("gpt2-optimized", build_optimized, "gpt2"),
    ("bert-dynamic-int8", build_bert_dynamic, False),
    ("bert-optimized-dynamic-int8", build_bert_dynamic, True),
    ("bert-dynamic-int8-ortfused", build_ort_fused),
]
SK_CASES = ["sk-randomforest", "sk-gbr", "sk-logreg", "sk-linreg", "sk-scaler-logreg", "sk-svc", "sk-knn"]
JAX_CASES = ["jax-mlp", "jax-cnn", "jax-transformer-block"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=OUT_DEFAULT)
    ap.add_argument("--only", default="", help="comma-separated model ids")
    ap.add_argument("--parts", default="torch,sklearn,jax")
    ap.add_argument("--analyze-only", action="store_true")
    ap.add_argument("--no-analyze", action="store_true")
    ap.add_argument("--with-contrib-shape-rules", action="store_true",
                    help="also analyse with in-process shape rules for the contrib ops (onnxroof_results_shape_rules.json)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.analyze_only:
        corpus = Corpus(out, set(filter(None, args.only.split(","))) or None)
        parts = set(args.parts.split(","))
        print(f"python {platform.python_version()}; {ver('onnx', 'onnxruntime', 'numpy')}", flush=True)
        if "torch" in parts:
            for case in CASES:
                corpus.run(case[0], case[1], *case[2:])
        if "sklearn" in parts:
            for mid in SK_CASES:
                corpus.run(mid, build_sklearn)
        if "jax" in parts:
            for mid in JAX_CASES:
                corpus.run(mid, build_jax)
        if corpus.failures:
            (out / "failures.json").write_text(json.dumps(corpus.failures, indent=1) + "\n")
            print("failures:", corpus.failures)
    if not args.no_analyze:
        analyze_all(out)
        if args.with_contrib_shape_rules:
            print("-- with in-process contrib shape rules:")
            add_contrib_shape_rules()
            analyze_all(out, "onnxroof_results_shape_rules.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
