"""Weight-free ONNX models of the networks in the published measurements.

Each builder writes the architecture out with onnx.helper, with exact shapes and the op structure
the common exporters write (PyTorch's exporter: BatchNormalization folded into the Conv bias, MatMul
plus Add for a Linear, LayerNormalization at opset 17, HF's RMSNorm as Pow/ReduceMean/Add/Sqrt/Div/Mul,
SiLU as Sigmoid*x, the KV cache as a Concat along the sequence axis). Every weight is declared as
EXTERNAL data that is never written: a TensorProto with data_location=EXTERNAL and a location,
offset and length, and no file behind it. onnxroof reads shapes only and never opens external data,
so nothing of a 70B model's parameters is ever materialised. Shapes are concrete: a builder is
called once per batch / sequence, which costs milliseconds.

`CHECKS` gives each model's published parameter count and MACs, with the source, so that
benchmarks/validate_published.py can print how close the built graph comes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import onnx
import onnx.shape_inference
from onnx import TensorProto, helper

OPSET = 17
FLOAT = TensorProto.FLOAT
MS = "com.microsoft"
NV = "mlperf.nvidia"  # NVIDIA's MLPerf harness plugins, as one op each (harness_ops.py costs them)


@dataclass
class Graph:
    """A graph under construction: nodes, never-written external weights, inputs and outputs."""

    name: str
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    initializers: list[TensorProto] = field(default_factory=list)
    inputs: list[onnx.ValueInfoProto] = field(default_factory=list)
    outputs: list[onnx.ValueInfoProto] = field(default_factory=list)
    offset_bytes: int = 0
    count: int = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def weight(self, name: str, dims: list[int]) -> str:
        """An fp32 weight stored as external data that does not exist: shapes only."""
        t = TensorProto()
        t.name, t.data_type = name, FLOAT
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        length = 4 * math.prod(dims)
        for key, value in (("location", "weights.bin"), ("offset", str(self.offset_bytes)), ("length", str(length))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        self.offset_bytes += length
        self.initializers.append(t)
        return name

    def ints(self, values: list[int]) -> str:
        """A small int64 constant (a Reshape's shape, a Slice's bounds): real data, a few bytes."""
        name = self.fresh("const")
        self.initializers.append(helper.make_tensor(name, TensorProto.INT64, [len(values)], values))
        return name

    def index(self, value: int) -> str:
        """A 0-D int64 constant (a Gather index that drops the axis, as the genai builder's)."""
        name = self.fresh("index")
        self.initializers.append(helper.make_tensor(name, TensorProto.INT64, [], [value]))
        return name

    def scalar(self, value: float) -> str:
        """A float scalar constant, one per value (an exporter shares them too)."""
        name = f"scalar_{value!r}"
        if not any(t.name == name for t in self.initializers):
            self.initializers.append(helper.make_tensor(name, FLOAT, [], [value]))
        return name

    def op(self, op_type: str, inputs: list[str], stem: str | None = None, outputs: int = 1, **attrs) -> str:
        names = [self.fresh(stem or op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=self.fresh(op_type), **attrs))
        return names[0]

    def input(self, name: str, elem: int, shape: list[int]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem, shape))
        return name

    def output(self, tensor: str, name: str | None = None, shape: list[int] | None = None) -> None:
        """A graph output; ``shape`` types it (float) where ONNX's inference cannot (after a
        com.microsoft op, which has no ONNX schema)."""
        if name and name != tensor:
            self.nodes.append(helper.make_node("Identity", [tensor], [name], name=self.fresh("Identity")))
            tensor = name
        if shape is not None:
            self.outputs.append(helper.make_tensor_value_info(tensor, FLOAT, shape))
            return
        out = onnx.ValueInfoProto()
        out.name = tensor  # typed in model(), from ONNX's shape inference
        self.outputs.append(out)

    def model(self) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.initializers)
        opsets = [helper.make_opsetid("", OPSET)]
        for domain in (MS, NV):
            if any(n.domain == domain for n in self.nodes):
                opsets.append(helper.make_opsetid(domain, 1))
        m = helper.make_model(graph, opset_imports=opsets, producer_name="published-models")
        m.ir_version = 8
        # the outputs' types and shapes as an exporter writes them: ONNX's own inference (shapes only;
        # the external data is never opened)
        inferred = onnx.shape_inference.infer_shapes(m)
        known = {v.name: v.type for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
        for out in m.graph.output:
            if not out.type.HasField("tensor_type"):
                out.type.CopyFrom(known[out.name])
        return m

    # layers as the exporters write them
    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1, prefix: str = "") -> str:
        """Conv with its BatchNormalization folded into the bias (PyTorch's eval-mode export)."""
        w = self.weight(f"{prefix}.weight", [cout, cin // group, k, k])
        b = self.weight(f"{prefix}.bias", [cout])
        pad = (k - 1) // 2
        return self.op("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=group)

    def shared_conv(self, x: str, cin: int, cout: int, k: int, prefix: str) -> str:
        """A Conv whose weights another Conv already declared (a head shared by the FPN levels)."""
        if not any(t.name == f"{prefix}.weight" for t in self.initializers):
            self.weight(f"{prefix}.weight", [cout, cin, k, k])
            self.weight(f"{prefix}.bias", [cout])
        pad = (k - 1) // 2
        return self.op("Conv", [x, f"{prefix}.weight", f"{prefix}.bias"], kernel_shape=[k, k], pads=[pad] * 4)

    def scalars(self, values: list[float]) -> str:
        name = self.fresh("floats")
        self.initializers.append(helper.make_tensor(name, FLOAT, [len(values)], values))
        return name

    def linear(self, x: str, din: int, dout: int, prefix: str, bias: bool = True) -> str:
        y = self.op("MatMul", [x, self.weight(f"{prefix}.weight", [din, dout])])
        return self.op("Add", [y, self.weight(f"{prefix}.bias", [dout])]) if bias else y


# ---------------------------------------------------------------- CNNs


def resnet50(batch: int = 1, resolution: int = 224, v15: bool = True, slim: bool = False,
             res2_fused: bool = False) -> onnx.ModelProto:
    """ResNet-50 (He et al. 2016), torchvision layout. v1.5 (MLPerf, torchvision) strides in the 3x3
    conv of a stage's first bottleneck; v1 (Keras ResNet50, Coral) in its first 1x1. ``slim``: TF-slim's
    resnet_v1_50 (Hailo's zoo), which strides in the 3x3 of the *last* unit of stages 1-3 and
    subsamples that unit's identity shortcut (a 1x1 max-pool of stride 2). ``res2_fused``: the first
    stage (res2, three bottlenecks at 56x56) as the one kernel NVIDIA's MLPerf harness runs it as
    (``RnRes2FullFusion_TRT``, :func:`_res2_full_fusion`)."""
    g = Graph(f"resnet50{'_slim' if slim else '_v1.5' if v15 else '_v1'}_{resolution}{'_res2fused' if res2_fused else ''}")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    x = g.op("Relu", [g.conv(x, 3, 64, 7, 2, prefix="conv1")])
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512))):
        if stage == 0 and res2_fused:
            x, cin = _res2_full_fusion(g, x, cin, width, blocks), 4 * width
            continue
        for block in range(blocks):
            if slim:
                stride = 2 if block == blocks - 1 and stage < 3 else 1
                s1, s3 = 1, stride
            else:
                stride = 2 if block == 0 and stage > 0 else 1
                s1, s3 = (1, stride) if v15 else (stride, 1)
            p = f"layer{stage + 1}.{block}"
            y = g.op("Relu", [g.conv(x, cin, width, 1, s1, prefix=f"{p}.conv1")])
            y = g.op("Relu", [g.conv(y, width, width, 3, s3, prefix=f"{p}.conv2")])
            y = g.conv(y, width, 4 * width, 1, prefix=f"{p}.conv3")
            if block == 0:
                short = g.conv(x, cin, 4 * width, 1, stride, prefix=f"{p}.downsample")
            elif stride > 1:
                short = g.op("MaxPool", [x], kernel_shape=[1, 1], strides=[stride, stride])
            else:
                short = x
            x = g.op("Relu", [g.op("Add", [y, short])])
            cin = 4 * width
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    x = g.op("Gemm", [x, g.weight("fc.weight", [1000, 2048]), g.weight("fc.bias", [1000])], transB=1)
    g.output(x, "logits", shape=[batch, 1000] if res2_fused else None)
    return g.model()


def _res2_full_fusion(g: Graph, x: str, cin: int, width: int, blocks: int) -> str:
    """ResNet-50's first stage as NVIDIA's MLPerf harness runs it on GPUs: ``fuse_res2_mega`` in
    closed/NVIDIA/code/resnet50/tensorrt/rn50_graphsurgeon.py (mlcommons/inference_results_v4.0;
    the same in v3.0-v4.1) replaces the stage's 22 layers, for int8 on SM 7.5-9.0, with one
    plugin layer, ``RnRes2FullFusion_TRT`` ("fuses all the res2* layers into one CUDA kernel",
    the benchmark's README): one node taking the stage's input and every weight and bias (the
    downsample first, then each bottleneck's three convolutions), with the same parameters."""
    inputs = [x, g.weight("layer1.0.downsample.weight", [4 * width, cin, 1, 1]),
              g.weight("layer1.0.downsample.bias", [4 * width])]
    for block in range(blocks):
        for index, (c_in, c_out, k) in enumerate(((cin if block == 0 else 4 * width, width, 1), (width, width, 3),
                                                  (width, 4 * width, 1))):
            prefix = f"layer1.{block}.conv{index + 1}"
            inputs += [g.weight(f"{prefix}.weight", [c_out, c_in, k, k]), g.weight(f"{prefix}.bias", [c_out])]
    return g.op("RnRes2FullFusion_TRT", inputs, stem="res2", domain=NV)


def _relu6(g: Graph, t: str) -> str:
    return g.op("Clip", [t, g.scalar(0.0), g.scalar(6.0)])  # torch's ReLU6 export


def _mobilenet_v1_features(g: Graph, x: str, taps: tuple[int, ...] = ()) -> tuple[str, list[tuple[str, int]]]:
    """The 3x3 stem and the 13 depthwise-separable blocks; also the outputs of the blocks in ``taps``."""
    x = _relu6(g, g.conv(x, 3, 32, 3, 2, prefix="stem"))
    cin, maps = 32, []
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for i, (cout, stride) in enumerate(plan):
        x = _relu6(g, g.conv(x, cin, cin, 3, stride, group=cin, prefix=f"dw{i}"))
        x = _relu6(g, g.conv(x, cin, cout, 1, prefix=f"pw{i}"))
        cin = cout
        if i in taps:
            maps.append((x, cout))
    return x, maps


def mobilenet_v1(batch: int = 1, resolution: int = 224) -> onnx.ModelProto:
    """MobileNet v1 1.0 (Howard et al. 2017): a 3x3 stem, 13 depthwise-separable blocks, ReLU6."""
    g = Graph("mobilenet_v1")
    x, _ = _mobilenet_v1_features(g, g.input("input", FLOAT, [batch, 3, resolution, resolution]))
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    x = g.op("Gemm", [x, g.weight("fc.weight", [1001, 1024]), g.weight("fc.bias", [1001])], transB=1)
    g.output(x, "logits")
    return g.model()


def _mobilenet_v2_features(g: Graph, x: str, tap_expansion: int | None = None) -> tuple[str, list[tuple[str, int]]]:
    """The stem, the 17 inverted residuals and the 1280-wide 1x1 (torchvision layout); also the
    expansion output of block ``tap_expansion`` and the last layer's output."""
    x = _relu6(g, g.conv(x, 3, 32, 3, 2, prefix="stem"))
    cin, i, maps = 32, 0, []
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for j in range(n):
            stride, hidden, y = (s if j == 0 else 1), cin * t, x
            if t != 1:
                y = _relu6(g, g.conv(y, cin, hidden, 1, prefix=f"b{i}.expand"))
                if i == tap_expansion:
                    maps.append((y, hidden))
            y = _relu6(g, g.conv(y, hidden, hidden, 3, stride, group=hidden, prefix=f"b{i}.dw"))
            y = g.conv(y, hidden, c, 1, prefix=f"b{i}.project")
            x = g.op("Add", [x, y]) if stride == 1 and cin == c else y
            cin, i = c, i + 1
    x = _relu6(g, g.conv(x, cin, 1280, 1, prefix="head"))
    return x, maps + [(x, 1280)]


def mobilenet_v2(batch: int = 1, resolution: int = 224) -> onnx.ModelProto:
    """MobileNet v2 1.0 (Sandler et al. 2018), torchvision layout: inverted residuals, ReLU6."""
    g = Graph("mobilenet_v2")
    x, _ = _mobilenet_v2_features(g, g.input("input", FLOAT, [batch, 3, resolution, resolution]))
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    x = g.op("Gemm", [x, g.weight("fc.weight", [1000, 1280]), g.weight("fc.bias", [1000])], transB=1)
    g.output(x, "logits")
    return g.model()


def retinanet_resnext50_fpn(batch: int = 1, resolution: int = 800, classes: int = 264) -> onnx.ModelProto:
    """MLPerf's RetinaNet (OpenImages, 264 classes): torchvision's RetinaNet with a ResNeXt50-32x4d
    backbone, an FPN on C3-C5 with P6/P7 from P5, and the two 4-conv heads (9 anchors) applied to
    every level. Box decoding and NMS (a TensorRT plugin in NVIDIA's submission) are not in the graph."""
    g = Graph("retinanet_resnext50_fpn")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    x = g.op("Relu", [g.conv(x, 3, 64, 7, 2, prefix="conv1")])
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin, feats = 64, []
    for stage, (blocks, planes) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512))):
        width = planes * 2  # torchvision: int(planes * 4 / 64) * 32 groups
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            p = f"layer{stage + 1}.{block}"
            y = g.op("Relu", [g.conv(x, cin, width, 1, prefix=f"{p}.conv1")])
            y = g.op("Relu", [g.conv(y, width, width, 3, stride, group=32, prefix=f"{p}.conv2")])
            y = g.conv(y, width, 4 * planes, 1, prefix=f"{p}.conv3")
            short = g.conv(x, cin, 4 * planes, 1, stride, prefix=f"{p}.downsample") if block == 0 else x
            x = g.op("Relu", [g.op("Add", [y, short])])
            cin = 4 * planes
        if stage > 0:
            feats.append((x, cin))
    inner = [g.conv(f, c, 256, 1, prefix=f"fpn.inner{i}") for i, (f, c) in enumerate(feats)]
    top = inner[-1]
    outs = [g.conv(top, 256, 256, 3, prefix="fpn.layer2")]
    for i in (1, 0):
        top = g.op("Add", [inner[i], g.op("Resize", [top, "", g.scalars([1.0, 1.0, 2.0, 2.0])], mode="nearest")])
        outs.insert(0, g.conv(top, 256, 256, 3, prefix=f"fpn.layer{i}"))
    p6 = g.conv(outs[-1], 256, 256, 3, 2, prefix="fpn.p6")
    p7 = g.conv(g.op("Relu", [p6]), 256, 256, 3, 2, prefix="fpn.p7")
    levels = outs + [p6, p7]
    for head, width in (("cls", 9 * classes), ("bbox", 9 * 4)):
        per_level = []
        for li, f in enumerate(levels):
            y = f
            for j in range(4):  # the head's weights are shared by the levels: declared once
                y = g.op("Relu", [g.shared_conv(y, 256, 256, 3, prefix=f"{head}.conv{j}")])
            y = g.shared_conv(y, 256, width, 3, prefix=f"{head}.out")
            per_level.append(g.op("Reshape", [g.op("Transpose", [y], perm=[0, 2, 3, 1]),
                                              g.ints([batch, -1, width // 9])]))
        g.output(g.op("Concat", per_level, axis=1), f"{head}_logits")
    return g.model()


def _ssd_head(g: Graph, maps: list[tuple[str, int]], anchors: list[int], classes: int, batch: int, kernel: int) -> None:
    """SSD box predictors (TF Object Detection API): per feature map a conv for the boxes and one for
    the class scores, flattened and concatenated. Anchor decoding and NMS are not in the graph."""
    for head, per in (("box", 4), ("class", classes)):
        outs = []
        for i, ((f, c), a) in enumerate(zip(maps, anchors)):
            y = g.conv(f, c, a * per, kernel, prefix=f"{head}_predictor{i}")
            outs.append(g.op("Reshape", [g.op("Transpose", [y], perm=[0, 2, 3, 1]), g.ints([batch, -1, per])]))
        g.output(g.op("Concat", outs, axis=1), f"{head}_encodings")


def _ssd_extras(g: Graph, x: str, cin: int, maps: list[tuple[str, int]]) -> None:
    """The four extra feature maps: 1x1 to half depth, then 3x3 stride 2 (TF OD API SSD)."""
    for j, (mid, out) in enumerate([(256, 512), (128, 256), (128, 256), (64, 128)]):
        x = _relu6(g, g.conv(_relu6(g, g.conv(x, cin, mid, 1, prefix=f"extra{j}.1x1")), mid, out, 3, 2, prefix=f"extra{j}.3x3"))
        cin = out
        maps.append((x, out))


def ssd_mobilenet_v1(batch: int = 1, resolution: int = 300, classes: int = 91) -> onnx.ModelProto:
    """SSD MobileNet v1 (TF OD API ssd_mobilenet_v1_coco): MobileNet v1 features at conv11 (19x19, 512)
    and conv13 (10x10, 1024), four extra 1x1 + 3x3/2 blocks, 3 then 6 anchors per cell, 1x1 predictors."""
    g = Graph("ssd_mobilenet_v1")
    x, maps = _mobilenet_v1_features(g, g.input("input", FLOAT, [batch, 3, resolution, resolution]), taps=(10, 12))
    _ssd_extras(g, x, 1024, maps)
    _ssd_head(g, maps, [3, 6, 6, 6, 6, 6], classes, batch, 1)
    return g.model()


def ssd_mobilenet_v2(batch: int = 1, resolution: int = 300, classes: int = 91) -> onnx.ModelProto:
    """SSD MobileNet v2 (TF OD API ssd_mobilenet_v2_coco): MobileNet v2 features at block 13's expansion
    (19x19, 576) and the 1280-wide last layer (10x10), four extra 1x1 + 3x3/2 blocks, 1x1 predictors."""
    g = Graph("ssd_mobilenet_v2")
    x, maps = _mobilenet_v2_features(g, g.input("input", FLOAT, [batch, 3, resolution, resolution]), tap_expansion=13)
    _ssd_extras(g, x, 1280, maps)
    _ssd_head(g, maps, [3, 6, 6, 6, 6, 6], classes, batch, 1)
    return g.model()


# ---------------------------------------------------------------- transformers


def _layer_norm(g: Graph, x: str, d: int, prefix: str) -> str:
    return g.op("LayerNormalization", [x, g.weight(f"{prefix}.weight", [d]), g.weight(f"{prefix}.bias", [d])],
                axis=-1, epsilon=1e-12)


def _heads(g: Graph, x: str, batch: int, seq: int, heads: int, head_dim: int) -> str:
    """[B, S, H*hd] -> [B, H, S, hd]."""
    return g.op("Transpose", [g.op("Reshape", [x, g.ints([batch, seq, heads, head_dim])])], perm=[0, 2, 1, 3])


def _merge(g: Graph, x: str, batch: int, seq: int, width: int) -> str:
    return g.op("Reshape", [g.op("Transpose", [x], perm=[0, 2, 1, 3]), g.ints([batch, seq, width])])


def _gelu_erf(g: Graph, x: str) -> str:
    """torch's exact GELU as the exporter writes it below opset 20: x * 0.5 * (1 + erf(x / sqrt 2))."""
    e = g.op("Erf", [g.op("Div", [x, g.scalar(math.sqrt(2.0))])])
    return g.op("Mul", [g.op("Mul", [x, g.op("Add", [e, g.scalar(1.0)])]), g.scalar(0.5)])


def bert_large(batch: int = 1, seq: int = 384) -> onnx.ModelProto:
    """BERT-large uncased for SQuAD (MLPerf bert-99): 24 layers, hidden 1024, 16 heads, FFN 4096,
    vocab 30522, a 2-logit span head (no pooler: the QA model does not use it)."""
    layers, d, heads, ff, vocab = 24, 1024, 16, 4096, 30522
    hd = d // heads
    g = Graph("bert_large_squad")
    ids = g.input("input_ids", TensorProto.INT64, [batch, seq])
    types = g.input("token_type_ids", TensorProto.INT64, [batch, seq])
    mask = g.input("attention_bias", FLOAT, [batch, 1, 1, seq])  # the additive mask, as HF computes it
    positions = g.ints(list(range(seq)))
    x = g.op("Add", [g.op("Gather", [g.weight("embeddings.word", [vocab, d]), ids]),
                     g.op("Gather", [g.weight("embeddings.token_type", [2, d]), types])])
    x = g.op("Add", [x, g.op("Gather", [g.weight("embeddings.position", [512, d]), positions])])
    x = _layer_norm(g, x, d, "embeddings.ln")
    scale = g.scalar(math.sqrt(hd))
    for i in range(layers):
        p = f"layer{i}"
        q, k, v = (_heads(g, g.linear(x, d, d, f"{p}.{n}"), batch, seq, heads, hd) for n in ("q", "k", "v"))
        s = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        a = g.op("Softmax", [g.op("Add", [g.op("Div", [s, scale]), mask])], axis=-1)
        o = g.linear(_merge(g, g.op("MatMul", [a, v]), batch, seq, d), d, d, f"{p}.o")
        x = _layer_norm(g, g.op("Add", [o, x]), d, f"{p}.ln1")
        h = g.linear(_gelu_erf(g, g.linear(x, d, ff, f"{p}.ffn_in")), ff, d, f"{p}.ffn_out")
        x = _layer_norm(g, g.op("Add", [h, x]), d, f"{p}.ln2")
    g.output(g.linear(x, d, 2, "qa_outputs"), "span_logits")
    return g.model()


def vit_base(batch: int = 1, resolution: int = 224) -> onnx.ModelProto:
    """ViT-B/16 (Dosovitskiy et al. 2021): a 16x16/16 patch Conv, a class token, 12 pre-norm encoder
    layers (768 wide, 12 heads, MLP 3072, exact GELU), the class token's LayerNorm and a 1000-way head."""
    layers, d, heads, ff, patch = 12, 768, 12, 3072, 16
    hd, tokens = d // heads, (resolution // patch) ** 2 + 1
    g = Graph("vit_base_16")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    x = g.op("Conv", [x, g.weight("patch.weight", [d, 3, patch, patch]), g.weight("patch.bias", [d])],
             kernel_shape=[patch, patch], strides=[patch, patch])
    x = g.op("Transpose", [g.op("Reshape", [x, g.ints([batch, d, tokens - 1])])], perm=[0, 2, 1])
    cls = g.op("Expand", [g.weight("cls_token", [1, 1, d]), g.ints([batch, 1, d])])
    x = g.op("Add", [g.op("Concat", [cls, x], axis=1), g.weight("pos_embed", [1, tokens, d])])
    scale = g.scalar(math.sqrt(hd))
    for i in range(layers):
        p = f"blocks.{i}"
        n = _layer_norm(g, x, d, f"{p}.norm1")
        q, k, v = (_heads(g, g.linear(n, d, d, f"{p}.{w}"), batch, tokens, heads, hd) for w in ("q", "k", "v"))
        a = g.op("Softmax", [g.op("Div", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), scale])], axis=-1)
        x = g.op("Add", [x, g.linear(_merge(g, g.op("MatMul", [a, v]), batch, tokens, d), d, d, f"{p}.proj")])
        n = _layer_norm(g, x, d, f"{p}.norm2")
        x = g.op("Add", [x, g.linear(_gelu_erf(g, g.linear(n, d, ff, f"{p}.fc1")), ff, d, f"{p}.fc2")])
    x = _layer_norm(g, g.op("Gather", [x, g.ints([0])], axis=1), d, "norm")
    g.output(g.linear(x, d, 1000, "head"), "logits")
    return g.model()


@dataclass(frozen=True)
class DecoderConfig:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    style: str  # "llama": RMSNorm, SwiGLU, no biases; "gptj": parallel attention+MLP, one LayerNorm, GELU
    rotary_dim: int | None = None  # None: the whole head

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


DECODERS = {
    # Touvron et al. 2023 (LLaMA), Table 2 and the HF config: 4096 hidden, 32 layers, 32 heads, 11008 FFN
    "llama-7b": DecoderConfig("llama-7b", 32, 4096, 32, 32, 11008, 32000, "llama"),
    # Llama 2 (Touvron et al. 2023b) HF configs: 13B 40 x 5120, 40 heads, 13824; 70B 80 x 8192, GQA 8 kv heads, 28672
    "llama-2-13b": DecoderConfig("llama-2-13b", 40, 5120, 40, 40, 13824, 32000, "llama"),
    "llama-2-70b": DecoderConfig("llama-2-70b", 80, 8192, 64, 8, 28672, 32000, "llama"),
    # EleutherAI GPT-J-6B HF config: 28 layers, n_embd 4096, 16 heads (head 256), rotary_dim 64, n_inner 16384, vocab 50400
    "gpt-j-6b": DecoderConfig("gpt-j-6b", 28, 4096, 16, 16, 16384, 50400, "gptj", rotary_dim=64),
}


def _rms_norm(g: Graph, x: str, d: int, prefix: str) -> str:
    """HF LlamaRMSNorm as exported: x / sqrt(mean(x^2) + eps) * weight."""
    ms = g.op("ReduceMean", [g.op("Pow", [x, g.scalar(2.0)])], axes=[-1], keepdims=1)
    r = g.op("Sqrt", [g.op("Add", [ms, g.scalar(1e-6)])])
    return g.op("Mul", [g.weight(f"{prefix}.weight", [d]), g.op("Div", [x, r])])


def _rotary(g: Graph, x: str, cos: str, sin: str, head_dim: int, rotary_dim: int) -> str:
    """x*cos + rotate_half(x)*sin on the first rotary_dim channels of each head (all of them in LLaMA)."""
    rot, rest = x, None
    if rotary_dim < head_dim:
        rot = g.op("Slice", [x, g.ints([0]), g.ints([rotary_dim]), g.ints([-1])])
        rest = g.op("Slice", [x, g.ints([rotary_dim]), g.ints([head_dim]), g.ints([-1])])
    half = rotary_dim // 2
    x1 = g.op("Slice", [rot, g.ints([0]), g.ints([half]), g.ints([-1])])
    x2 = g.op("Slice", [rot, g.ints([half]), g.ints([rotary_dim]), g.ints([-1])])
    rotated = g.op("Concat", [g.op("Neg", [x2]), x1], axis=-1)
    y = g.op("Add", [g.op("Mul", [rot, cos]), g.op("Mul", [rotated, sin])])
    return g.op("Concat", [y, rest], axis=-1) if rest else y


CACHES = ("concat", "in_place")


def decoder(cfg: DecoderConfig, batch: int, new_tokens: int, past: int, last_logits_only: bool = True,
            cache: str = "concat", max_len: int | None = None) -> onnx.ModelProto:
    """One step of a KV-cached decoder: ``new_tokens`` tokens (the prompt for prefill, 1 for decode)
    attending ``past`` cached positions plus themselves. ``last_logits_only`` applies the LM head to
    the last position only, as TensorRT-LLM does (gather_last_token_logits).

    ``cache="concat"`` (HF / torch.onnx): past keys/values are inputs ``past_key_values.{i}.key|value``
    [B, kv heads, past, head] concatenated with the new ones into ``present.{i}.key|value`` outputs,
    and attention is MatMul / Softmax / MatMul on them; prefill (past = 0) has no past inputs.

    ``cache="in_place"`` (onnxruntime-genai's builder with past_present_share_buffer): each layer's
    attention is one com.microsoft GroupQueryAttention (query, key, value [B, S, heads x head];
    past_key, past_value; seqlens_k and total_sequence_length from the 2-D attention_mask as the
    builder computes them, ReduceSum - 1 and Shape[1]; cos_cache, sin_cache [max_len, rotary / 2],
    stored, one row a position of the buffer, where the builder's have max_position_embeddings
    rows; do_rotary), and past and present are one buffer [B, kv heads, ``max_len``, head] (default
    past + new_tokens) that the op updates in place: present has the past's shape, prefill included
    (the buffer is allocated at the max length before the prompt). Projections, norms and MLP are
    the same nodes in both."""
    if cache not in CACHES:
        raise ValueError(f"cache {cache!r}: choose one of {', '.join(CACHES)}")
    d, hd, h, kvh = cfg.hidden, cfg.head_dim, cfg.heads, cfg.kv_heads
    rdim = cfg.rotary_dim or hd
    total = past + new_tokens
    in_place = cache == "in_place"
    buffer = max_len if max_len is not None else total
    if in_place and buffer < total:
        raise ValueError(f"max_len {buffer} is shorter than past + new_tokens = {total}")
    suffix = f"_inplace{buffer}" if in_place else ""
    g = Graph(f"{cfg.name}_b{batch}_s{new_tokens}_p{past}{suffix}")
    ids = g.input("input_ids", TensorProto.INT64, [batch, new_tokens])
    if in_place:
        # onnxruntime-genai's GQA inputs from its 2-D mask: seqlens_k = ReduceSum(mask) - 1 (int32),
        # total_sequence_length = Shape(mask)[1] (int32); the rotary tables are stored, one row a position
        mask = g.input("attention_mask", TensorProto.INT64, [batch, total])
        summed = g.op("ReduceSum", [mask, g.ints([1])], keepdims=1)
        seqlens_k = g.op("Cast", [g.op("Sub", [summed, g.ints([1])])], to=TensorProto.INT32)
        total_len = g.op("Cast", [g.op("Gather", [g.op("Shape", [mask]), g.index(1)], axis=0)], to=TensorProto.INT32)
        cos = g.weight("cos_cache", [buffer, rdim // 2])
        sin = g.weight("sin_cache", [buffer, rdim // 2])
    else:
        cos = g.input("rotary_cos", FLOAT, [batch, 1, new_tokens, rdim])  # per-position tables, computed by the host
        sin = g.input("rotary_sin", FLOAT, [batch, 1, new_tokens, rdim])
        mask = g.input("attention_bias", FLOAT, [batch, 1, new_tokens, total])  # causal mask as an additive bias
    x = g.op("Gather", [g.weight("embed_tokens.weight", [cfg.vocab, d]), ids])
    scale = g.scalar(math.sqrt(hd))
    llama = cfg.style == "llama"

    def heads(t: str, n: int) -> str:
        return t if in_place else _heads(g, t, batch, new_tokens, n, hd)

    for i in range(cfg.layers):
        p = f"layers.{i}"
        normed = _rms_norm(g, x, d, f"{p}.input_norm") if llama else _layer_norm(g, x, d, f"{p}.ln_1")
        # GroupQueryAttention takes [B, S, heads x head]; the MatMul attention [B, heads, S, head]
        q = heads(g.linear(normed, d, h * hd, f"{p}.q_proj", bias=False), h)
        k = heads(g.linear(normed, d, kvh * hd, f"{p}.k_proj", bias=False), kvh)
        v = heads(g.linear(normed, d, kvh * hd, f"{p}.v_proj", bias=False), kvh)
        if in_place:
            pasts = [g.input(f"past_key_values.{i}.{name}", FLOAT, [batch, kvh, buffer, hd]) for name in ("key", "value")]
            presents = [f"present.{i}.key", f"present.{i}.value"]
            out = g.fresh("gqa")
            g.nodes.append(helper.make_node(
                "GroupQueryAttention", [q, k, v, *pasts, seqlens_k, total_len, cos, sin], [out, *presents],
                name=g.fresh("GroupQueryAttention"), domain=MS, num_heads=h, kv_num_heads=kvh, scale=1 / math.sqrt(hd),
                do_rotary=1, rotary_interleaved=0 if llama else 1))  # GPT-J rotates interleaved pairs
            for name in presents:
                g.output(name, shape=[batch, kvh, buffer, hd])
            attn = g.linear(out, h * hd, d, f"{p}.o_proj", bias=False)
        else:
            q, k = _rotary(g, q, cos, sin, hd, rdim), _rotary(g, k, cos, sin, hd, rdim)
            caches = []
            for name, t in (("key", k), ("value", v)):
                if past:
                    cached = g.input(f"past_key_values.{i}.{name}", FLOAT, [batch, kvh, past, hd])
                    t = g.op("Concat", [cached, t], axis=2)
                g.output(t, f"present.{i}.{name}")
                caches.append(f"present.{i}.{name}")
            k, v = caches
            if kvh != h:  # GQA as HF's repeat_kv exports: Unsqueeze, Expand, Reshape
                rep = h // kvh
                k, v = (g.op("Reshape", [g.op("Expand", [g.op("Unsqueeze", [t, g.ints([2])]),
                                                         g.ints([batch, kvh, rep, total, hd])]),
                                         g.ints([batch, h, total, hd])]) for t in (k, v))
            s = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
            a = g.op("Softmax", [g.op("Add", [g.op("Div", [s, scale]), mask])], axis=-1)
            attn = g.linear(_merge(g, g.op("MatMul", [a, v]), batch, new_tokens, h * hd), h * hd, d, f"{p}.o_proj", bias=False)
        if llama:
            x = g.op("Add", [x, attn])
            m = _rms_norm(g, x, d, f"{p}.post_norm")
            gate = g.linear(m, d, cfg.ffn, f"{p}.gate_proj", bias=False)
            up = g.linear(m, d, cfg.ffn, f"{p}.up_proj", bias=False)
            act = g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate])]), up])
            x = g.op("Add", [x, g.linear(act, cfg.ffn, d, f"{p}.down_proj", bias=False)])
        else:  # GPT-J: attention and MLP read the same LayerNorm output, both added to the residual
            fc = g.linear(normed, d, cfg.ffn, f"{p}.fc_in")
            # gelu_new (tanh form) as exported: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))
            inner = g.op("Mul", [g.op("Add", [fc, g.op("Mul", [g.op("Pow", [fc, g.scalar(3.0)]), g.scalar(0.044715)])]),
                                 g.scalar(math.sqrt(2 / math.pi))])
            act = g.op("Mul", [g.op("Mul", [fc, g.scalar(0.5)]), g.op("Add", [g.op("Tanh", [inner]), g.scalar(1.0)])])
            x = g.op("Add", [g.op("Add", [attn, g.linear(act, cfg.ffn, d, f"{p}.fc_out")]), x])
    x = _rms_norm(g, x, d, "norm") if llama else _layer_norm(g, x, d, "ln_f")
    rows = new_tokens
    if last_logits_only and new_tokens > 1:
        x = g.op("Slice", [x, g.ints([new_tokens - 1]), g.ints([new_tokens]), g.ints([1])])
        rows = 1
    # typed by hand in_place: ONNX's inference stops at the com.microsoft op
    g.output(g.linear(x, d, cfg.vocab, "lm_head", bias=not llama), "logits",
             shape=[batch, rows, cfg.vocab] if in_place else None)
    return g.model()


def decoder_macs(cfg: DecoderConfig, new_tokens: int, total: int, last_logits_only: bool = True) -> int:
    """The analytic MACs of one ``decoder`` step: the projections and the MLP per new token, the
    new x total attention rectangle (QK^T and AV), the LM head on the last position (or all)."""
    d, hd = cfg.hidden, cfg.head_dim
    proj = d * (cfg.heads + 2 * cfg.kv_heads) * hd + cfg.heads * hd * d
    mlp = (3 if cfg.style == "llama" else 2) * d * cfg.ffn
    attn = 2 * total * cfg.heads * hd
    head_rows = 1 if last_logits_only else new_tokens
    return cfg.layers * new_tokens * (proj + mlp + attn) + head_rows * d * cfg.vocab


def decoder_param_count(cfg: DecoderConfig) -> int:
    """The analytic parameter count of ``decoder``'s weights (embeddings and head untied)."""
    d, hd = cfg.hidden, cfg.head_dim
    attn = d * cfg.heads * hd + 2 * d * cfg.kv_heads * hd + cfg.heads * hd * d
    if cfg.style == "llama":
        per_layer = attn + 3 * d * cfg.ffn + 2 * d
        return cfg.layers * per_layer + 2 * cfg.vocab * d + d
    per_layer = attn + 2 * d * cfg.ffn + cfg.ffn + d + 2 * d
    return cfg.layers * per_layer + cfg.vocab * d + (d * cfg.vocab + cfg.vocab) + 2 * d


@dataclass(frozen=True)
class Check:
    """A published or analytic figure for a built model, to print beside what onnxroof counts."""

    label: str
    build: object  # () -> ModelProto
    params: float | None
    macs: float | None
    source: str


def _decode_check(key: str, params: float, source: str) -> Check:
    cfg = DECODERS[key]
    return Check(f"{cfg.name}, one decode step at context 128", lambda: decoder(cfg, 1, 1, 127), params,
                 decoder_macs(cfg, 1, 128), source + "; MACs: decoder_macs() by hand, projections + MLP + "
                 "2 x 128 x heads x head per layer + the LM head")


CHECKS = [
    Check("ResNet-50 v1.5, 224x224", lambda: resnet50(1, 224), 25_557_032, 4.09e9,
          "torchvision resnet50: 25,557,032 params counting each BatchNormalization's weight and bias (folded into "
          "one Conv bias per channel here: -0.10 %), 4.09 GMACs (torchvision docs: 4.09 'GFLOPS', counted as MACs)"),
    Check("ResNet-50 v1, 224x224 (built at 299x299 for Coral: 7.21 G MACs)", lambda: resnet50(1, 224, v15=False),
          25_557_032, 4.09e9 - 3 * 56 * 56 * 256 * 128 * 3 // 4,
          "He et al. 2016: 3.8 G multiply-adds; by hand: torchvision's v1.5 4.09 G less the three downsampling "
          "1x1 convs that stride in v1 (each 56^2 x 256 x 128 x 3/4 = 77.07 M fewer)"),
    Check("ResNet-50 v1 TF-slim, 224x224 (Hailo)", lambda: resnet50(1, 224, v15=False, slim=True), 25_557_032, 6.98e9 / 2,
          "Hailo model zoo resnet_v1_50: 6.98 G OPS per frame = 3.49 G MACs"),
    Check("MobileNet v1 1.0, 224", lambda: mobilenet_v1(1, 224), 4.2e6, 569e6,
          "Howard et al. 2017, Table 8: 569 M mult-adds, 4.2 M parameters (1,001 classes as in the TF release)"),
    Check("MobileNet v2 1.0, 224", lambda: mobilenet_v2(1, 224), 3_504_872, 300e6,
          "torchvision mobilenet_v2: 3,504,872 params with BatchNormalization weight and bias (folded here), "
          "Sandler et al. 2018, Table 4: 300 M MACs"),
    Check("BERT-large, seq 384", lambda: bert_large(1, 384), 335e6,
          24 * (384 * (4 * 1024**2 + 2 * 1024 * 4096) + 2 * 384**2 * 1024) + 384 * 1024 * 2,
          "HF bert-large-uncased: 335 M with the pooler (Devlin et al. 2019 round it to 340 M); the SQuAD model has "
          "no pooler (-1.05 M); MACs by hand: 24 x (S (4 d^2 + 2 d ff) + 2 S^2 d) + the span head, S 384, d 1024, ff 4096"),
    Check("ViT-B/16, 224", lambda: vit_base(1, 224), 86.6e6, 35.188e9 / 2,
          "Dosovitskiy et al. 2021, Table 1: ViT-Base 86 M params (timm's model card: 86.6 M); Hailo model zoo "
          "vit_base_bn: 35.188 G OPS = 17.594 G MACs (BatchNorm for LayerNorm: the same MACs)"),
    Check("RetinaNet ResNeXt50-FPN, 800x800, 264 classes", lambda: retinanet_resnext50_fpn(1, 800), None, None,
          "no independent figure read; the backbone is the ResNeXt50-32x4d of torchvision, the FPN and heads "
          "torchvision's RetinaNet"),
    Check("SSD MobileNet v1, 300x300", lambda: ssd_mobilenet_v1(1, 300), 6.8e6, 2.5e9 / 2,
          "Hailo model zoo ssd_mobilenet_v1: 6.79 M params, 2.5 G OPS = 1.25 G MACs"),
    Check("SSD MobileNet v2, 300x300", lambda: ssd_mobilenet_v2(1, 300), 4.46e6, 1.52e9 / 2,
          "Hailo model zoo ssd_mobilenet_v2: 4.46 M params, 1.52 G OPS = 0.76 G MACs; the parameters differ: "
          "Hailo's graph is lighter in the extra layers or predictors than the TF OD API layout built here"),
    _decode_check("llama-7b", 6_738_415_616, "HF LLaMA-7B checkpoint: 6,738,415,616 params (Touvron et al. 2023: 6.7 B)"),
    _decode_check("llama-2-13b", 13_015_864_320, "HF Llama-2-13b: 13,015,864,320 params"),
    _decode_check("llama-2-70b", 68_976_648_192, "HF Llama-2-70b: 68,976,648,192 params"),
    _decode_check("gpt-j-6b", 6_050_882_784, "by hand from the HF config (untied head with bias): 6,050,882,784; "
                  "the model card's 6,053,381,344 is 0.04 % more"),
]
