"""Weight-free ONNX models of the networks the edge rows measure (edge-measurements.csv).

The same way as models.py: onnx.helper graphs, every weight external data that is never written,
BatchNormalization folded into the Conv bias (an eval-mode export), concrete shapes. Each builder's
docstring names the architecture's source. ``EDGE_CHECKS`` gives each model's published parameter
count and MACs (Hailo's zoo OPS are 2 x MACs) to print beside what onnxroof counts.
"""

from __future__ import annotations

import math

import onnx

from published.models import FLOAT, Check, Graph, _gelu_erf, _heads, _layer_norm, _merge, _relu6

# ---------------------------------------------------------------- layers


def _conv(
    g: Graph,
    x: str,
    cin: int,
    cout: int,
    k: int,
    stride: int = 1,
    group: int = 1,
    prefix: str = "",
    pad: int | None = None,
) -> str:
    """A Conv with its bias (BatchNormalization folded); ``pad`` for the unpadded Caffe-style stems."""
    if pad is None:
        return g.conv(x, cin, cout, k, stride, group, prefix)
    w, b = g.weight(f"{prefix}.weight", [cout, cin // group, k, k]), g.weight(f"{prefix}.bias", [cout])
    return g.op("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=group)


def _relu(g: Graph, x: str) -> str:
    return g.op("Relu", [x])


def _silu(g: Graph, x: str) -> str:
    """SiLU as PyTorch's exporter writes it: x * Sigmoid(x)."""
    return g.op("Mul", [x, g.op("Sigmoid", [x])])


def _hswish(g: Graph, x: str) -> str:
    return g.op("HardSwish", [x])


def _maxpool(g: Graph, x: str, k: int, stride: int, pad: int = 0, ceil: bool = False) -> str:
    return g.op("MaxPool", [x], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, ceil_mode=int(ceil))


def _classifier(g: Graph, x: str, cin: int, classes: int = 1000) -> None:
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    x = g.op("Gemm", [x, g.weight("fc.weight", [classes, cin]), g.weight("fc.bias", [classes])], transB=1)
    g.output(x, "logits")


def _divisible(value: float, divisor: int = 8) -> int:
    """The channel rounding of the MobileNet / EfficientNet reference code (never 10 % below)."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def _squeeze_excite(
    g: Graph, x: str, c: int, squeeze: int, prefix: str, gate: str = "Sigmoid", act: str = "Relu"
) -> str:
    s = g.conv(g.op("GlobalAveragePool", [x]), c, squeeze, 1, prefix=f"{prefix}.fc1")
    s = _relu(g, s) if act == "Relu" else _silu(g, s)
    return g.op("Mul", [x, g.op(gate, [g.conv(s, squeeze, c, 1, prefix=f"{prefix}.fc2")])])


# ---------------------------------------------------------------- CNN classifiers


def resnet(depth: int = 18, batch: int = 1, resolution: int = 224) -> onnx.ModelProto:
    """ResNet-18 / 34 (He et al. 2016, basic blocks), torchvision layout; Hailo's resnet_v1_18/34 and
    ncnn's resnet18 are this network."""
    blocks = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3)}[depth]
    g = Graph(f"resnet{depth}")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    x = _maxpool(g, _relu(g, g.conv(x, 3, 64, 7, 2, prefix="conv1")), 3, 2, 1)
    cin = 64
    for stage, (count, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
        for block in range(count):
            stride, p = (2 if block == 0 and stage > 0 else 1), f"layer{stage + 1}.{block}"
            y = _relu(g, g.conv(x, cin, width, 3, stride, prefix=f"{p}.conv1"))
            y = g.conv(y, width, width, 3, prefix=f"{p}.conv2")
            short = g.conv(x, cin, width, 1, stride, prefix=f"{p}.downsample") if stride > 1 or cin != width else x
            x, cin = _relu(g, g.op("Add", [y, short])), width
    _classifier(g, x, 512)
    return g.model()


def vgg16(batch: int = 1, resolution: int = 224) -> onnx.ModelProto:
    """VGG-16 (Simonyan and Zisserman 2015, configuration D): 13 3x3 convolutions, three FC layers."""
    g = Graph("vgg16")
    x, cin = g.input("input", FLOAT, [batch, 3, resolution, resolution]), 3
    for stage, (count, width) in enumerate(zip((2, 2, 3, 3, 3), (64, 128, 256, 512, 512))):
        for i in range(count):
            x, cin = _relu(g, g.conv(x, cin, width, 3, prefix=f"features.{stage}.{i}")), width
        x = _maxpool(g, x, 2, 2)
    x = g.op("Flatten", [x], axis=1)
    side = resolution // 32
    for i, (din, dout) in enumerate(((512 * side * side, 4096), (4096, 4096), (4096, 1000))):
        x = g.op("Gemm", [x, g.weight(f"fc{i}.weight", [dout, din]), g.weight(f"fc{i}.bias", [dout])], transB=1)
        x = _relu(g, x) if i < 2 else x
    g.output(x, "logits")
    return g.model()


def squeezenet_v11(batch: int = 1, resolution: int = 224) -> onnx.ModelProto:
    """SqueezeNet 1.1 (Iandola et al. 2016; the 1.1 revision of the authors' Caffe release, torchvision
    squeezenet1_1): an unpadded 3x3/2 stem, eight Fire modules, a 1x1 classifier conv and a global pool."""
    g = Graph("squeezenet1_1")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    x = _maxpool(g, _relu(g, _conv(g, x, 3, 64, 3, 2, prefix="stem", pad=0)), 3, 2, ceil=True)
    cin = 64
    for i, (squeeze, expand) in enumerate(
        ((16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256), (64, 256))
    ):
        s = _relu(g, g.conv(x, cin, squeeze, 1, prefix=f"fire{i}.squeeze"))
        e1 = _relu(g, g.conv(s, squeeze, expand, 1, prefix=f"fire{i}.expand1x1"))
        e3 = _relu(g, g.conv(s, squeeze, expand, 3, prefix=f"fire{i}.expand3x3"))
        x, cin = g.op("Concat", [e1, e3], axis=1), 2 * expand
        if i in (1, 3):
            x = _maxpool(g, x, 3, 2, ceil=True)
    x = _relu(g, g.conv(x, cin, 1000, 1, prefix="classifier"))
    g.output(g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1), "logits")
    return g.model()


INCEPTION_V1 = [  # (1x1, 3x3 reduce, 3x3, "5x5" reduce, "5x5", pool proj), torchvision googlenet
    (64, 96, 128, 16, 32, 32),
    (128, 128, 192, 32, 96, 64),
    "pool",
    (192, 96, 208, 16, 48, 64),
    (160, 112, 224, 24, 64, 64),
    (128, 128, 256, 24, 64, 64),
    (112, 144, 288, 32, 64, 64),
    (256, 160, 320, 32, 128, 128),
    "pool",
    (256, 160, 320, 32, 128, 128),
    (384, 192, 384, 48, 128, 128),
]


def inception_v1(batch: int = 1, resolution: int = 224) -> onnx.ModelProto:
    """Inception v1 / GoogLeNet (Szegedy et al. 2015) as torchvision and TF-slim build it: BatchNorm
    (folded) instead of LRN, the "5x5" branch as a 3x3, no auxiliary heads; Coral's, Hailo's and ncnn's
    inception_v1 / googlenet."""
    g = Graph("inception_v1")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    x = _maxpool(g, _relu(g, g.conv(x, 3, 64, 7, 2, prefix="conv1")), 3, 2, ceil=True)
    x = _relu(g, g.conv(x, 64, 64, 1, prefix="conv2"))
    x = _maxpool(g, _relu(g, g.conv(x, 64, 192, 3, prefix="conv3")), 3, 2, ceil=True)
    cin = 192
    for i, spec in enumerate(INCEPTION_V1):
        if spec == "pool":
            x = _maxpool(g, x, 3, 2, ceil=True)
            continue
        c1, r3, c3, r5, c5, pp = spec
        p = f"inception{i}"
        b1 = _relu(g, g.conv(x, cin, c1, 1, prefix=f"{p}.b1"))
        b2 = _relu(g, g.conv(_relu(g, g.conv(x, cin, r3, 1, prefix=f"{p}.b2a")), r3, c3, 3, prefix=f"{p}.b2b"))
        b3 = _relu(g, g.conv(_relu(g, g.conv(x, cin, r5, 1, prefix=f"{p}.b3a")), r5, c5, 3, prefix=f"{p}.b3b"))
        b4 = _relu(g, g.conv(_maxpool(g, x, 3, 1, 1, ceil=True), cin, pp, 1, prefix=f"{p}.b4"))
        x, cin = g.op("Concat", [b1, b2, b3, b4], axis=1), c1 + c3 + c5 + pp
    _classifier(g, x, cin)
    return g.model()


MOBILENET_V3_LARGE = [  # (kernel, expansion, out, squeeze-excite, hard-swish, stride): Howard et al. 2019, Table 1
    (3, 16, 16, False, False, 1),
    (3, 64, 24, False, False, 2),
    (3, 72, 24, False, False, 1),
    (5, 72, 40, True, False, 2),
    (5, 120, 40, True, False, 1),
    (5, 120, 40, True, False, 1),
    (3, 240, 80, False, True, 2),
    (3, 200, 80, False, True, 1),
    (3, 184, 80, False, True, 1),
    (3, 184, 80, False, True, 1),
    (3, 480, 112, True, True, 1),
    (3, 672, 112, True, True, 1),
    (5, 672, 160, True, True, 2),
    (5, 960, 160, True, True, 1),
    (5, 960, 160, True, True, 1),
]


def mobilenet_v3_large(batch: int = 1, resolution: int = 224) -> onnx.ModelProto:
    """MobileNet v3-Large 1.0 (Howard et al. 2019), torchvision layout: hard-swish, squeeze-excite with a
    hard-sigmoid gate (squeeze = expansion / 4 rounded to 8), a 960 conv, a 1280 FC and the classifier."""
    g = Graph("mobilenet_v3_large")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    x, cin = _hswish(g, g.conv(x, 3, 16, 3, 2, prefix="stem")), 16
    for i, (k, exp, out, se, hs, stride) in enumerate(MOBILENET_V3_LARGE):
        act = _hswish if hs else _relu
        y = x if exp == cin else act(g, g.conv(x, cin, exp, 1, prefix=f"b{i}.expand"))
        y = act(g, g.conv(y, exp, exp, k, stride, group=exp, prefix=f"b{i}.dw"))
        if se:
            y = _squeeze_excite(g, y, exp, _divisible(exp / 4), f"b{i}.se", gate="HardSigmoid")
        y = g.conv(y, exp, out, 1, prefix=f"b{i}.project")
        x, cin = (g.op("Add", [x, y]) if stride == 1 and cin == out else y), out
    x = g.op("Flatten", [g.op("GlobalAveragePool", [_hswish(g, g.conv(x, cin, 960, 1, prefix="last"))])], axis=1)
    x = _hswish(g, g.op("Gemm", [x, g.weight("fc1.weight", [1280, 960]), g.weight("fc1.bias", [1280])], transB=1))
    x = g.op("Gemm", [x, g.weight("fc2.weight", [1000, 1280]), g.weight("fc2.bias", [1000])], transB=1)
    g.output(x, "logits")
    return g.model()


EFFICIENTNET_B0_BLOCKS = [  # (kernel, expansion, out, repeats, stride): Tan and Le 2019, Table 1
    (3, 1, 16, 1, 1),
    (3, 6, 24, 2, 2),
    (5, 6, 40, 2, 2),
    (3, 6, 80, 3, 2),
    (5, 6, 112, 3, 1),
    (5, 6, 192, 4, 2),
    (3, 6, 320, 1, 1),
]
EFFICIENTNET_LITE = {0: (1.0, 1.0, 224), 1: (1.0, 1.1, 240), 2: (1.1, 1.2, 260), 3: (1.2, 1.4, 280), 4: (1.4, 1.8, 300)}


def efficientnet(lite: int | None = 0, batch: int = 1, resolution: int | None = None) -> onnx.ModelProto:
    """EfficientNet-Lite0..4 (tensorflow/tpu models/official/efficientnet/lite: ReLU6, no squeeze-excite,
    the stem (32) and head (1280) and the first and last stages' repeats not scaled) or, with
    ``lite=None``, EfficientNet-B0 (Tan and Le 2019: SiLU, squeeze-excite at 1/4 of the block's input)."""
    width, depth, default = EFFICIENTNET_LITE[lite] if lite is not None else (1.0, 1.0, 224)
    resolution = resolution or default
    act = (lambda t: _relu6(g, t)) if lite is not None else (lambda t: _silu(g, t))
    g = Graph(f"efficientnet_lite{lite}" if lite is not None else "efficientnet_b0")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    stem = 32 if lite is not None else _divisible(32 * width)
    x, cin, i = act(g.conv(x, 3, stem, 3, 2, prefix="stem")), stem, 0
    for stage, (k, e, out, repeats, stride) in enumerate(EFFICIENTNET_B0_BLOCKS):
        fixed = lite is not None and stage in (0, len(EFFICIENTNET_B0_BLOCKS) - 1)
        out, repeats = _divisible(out * width), repeats if fixed else math.ceil(depth * repeats)
        for j in range(repeats):
            s, hidden, y = (stride if j == 0 else 1), cin * e, x
            if e != 1:
                y = act(g.conv(y, cin, hidden, 1, prefix=f"b{i}.expand"))
            y = act(g.conv(y, hidden, hidden, k, s, group=hidden, prefix=f"b{i}.dw"))
            if lite is None:
                y = _squeeze_excite(g, y, hidden, max(1, cin // 4), f"b{i}.se", act="Silu")
            y = g.conv(y, hidden, out, 1, prefix=f"b{i}.project")
            x, cin, i = (g.op("Add", [x, y]) if s == 1 and cin == out else y), out, i + 1
    head = 1280 if lite is not None else _divisible(1280 * width)
    _classifier(g, act(g.conv(x, cin, head, 1, prefix="head")), head)
    return g.model()


EDGETPU_BLOCKS = [  # (kernel, expansion, in, out, repeats, stride, fused, skip): efficientnet_edgetpu_builder.py
    (3, 4, 24, 24, 1, 1, True, False),
    (3, 8, 24, 32, 2, 2, True, True),
    (3, 8, 32, 48, 4, 2, True, True),
    (5, 8, 48, 96, 5, 2, False, True),
    (5, 8, 96, 144, 4, 1, False, True),
    (5, 8, 144, 192, 2, 2, False, True),
]
EDGETPU_SIZES = {"S": (1.0, 1.0, 224), "M": (1.0, 1.1, 240), "L": (1.2, 1.4, 300)}


def efficientnet_edgetpu(size: str = "S", batch: int = 1, resolution: int | None = None) -> onnx.ModelProto:
    """EfficientNet-EdgeTPU S/M/L (Gupta and Tan 2019; tensorflow/tpu models/official/efficientnet/edgetpu):
    ReLU, no squeeze-excite, the first three stages "fused" (a k x k expansion conv in place of the 1x1 and
    the depthwise); the expansion is the block's nominal input width times its ratio (the first block's
    nominal input is 24 though the stem gives 32). Coral's and Hailo's efficientnet_s/m/l."""
    width, depth, default = EDGETPU_SIZES[size]
    resolution = resolution or default
    g = Graph(f"efficientnet_edgetpu_{size}")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    cin = _divisible(32 * width)
    x, i = _relu(g, g.conv(x, 3, cin, 3, 2, prefix="stem")), 0
    for k, e, nominal, out, repeats, stride, fused, skip in EDGETPU_BLOCKS:
        nominal, out = _divisible(nominal * width), _divisible(out * width)
        for j in range(math.ceil(depth * repeats)):
            s, hidden = (stride if j == 0 else 1), (nominal if j == 0 else out) * e
            if fused:
                y = _relu(g, g.conv(x, cin, hidden, k, s, prefix=f"b{i}.fused"))
            else:
                y = _relu(g, g.conv(x, cin, hidden, 1, prefix=f"b{i}.expand"))
                y = _relu(g, g.conv(y, hidden, hidden, k, s, group=hidden, prefix=f"b{i}.dw"))
            y = g.conv(y, hidden, out, 1, prefix=f"b{i}.project")
            x, cin, i = (g.op("Add", [x, y]) if skip and s == 1 and cin == out else y), out, i + 1
    head = _divisible(1280 * width)
    _classifier(g, _relu(g, g.conv(x, cin, head, 1, prefix="head")), head, classes=1001)
    return g.model()


VITS = {"tiny": (192, 3), "small": (384, 6), "base": (768, 12)}  # (width, heads), 12 layers, MLP 4x


def _batch_norm(g: Graph, x: str, d: int, prefix: str) -> str:
    """A BatchNorm over the channels at inference: a per-channel scale and shift (it folds into the layer
    before it), where the Hailo zoo's ``vit_*_bn`` networks put their LayerNorms' place."""
    return g.op("Add", [g.op("Mul", [x, g.weight(f"{prefix}.scale", [d])]), g.weight(f"{prefix}.shift", [d])])


def vit(
    size: str = "tiny", batch: int = 1, resolution: int = 224, norm: str = "layer", patch: int = 16
) -> onnx.ModelProto:
    """ViT-Ti/S/B 16 (Dosovitskiy et al. 2021; Ti and S as DeiT, Touvron et al. 2021, which the zoo's
    deit_tiny/small are): the layout of models.vit_base at another width. ``norm="batch"``: the
    zoo's ``_bn`` variants, BatchNorm in the LayerNorms' place (folded at inference). ``patch``: the
    patch side (32 for ViT-B/32, the graph ncnn's benchmark runs)."""
    normed = _batch_norm if norm == "batch" else _layer_norm
    d, heads = VITS[size]
    layers, ff, hd, tokens = 12, 4 * d, d // heads, (resolution // patch) ** 2 + 1
    g = Graph(f"vit_{size}_{patch}")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    x = g.op(
        "Conv",
        [x, g.weight("patch.weight", [d, 3, patch, patch]), g.weight("patch.bias", [d])],
        kernel_shape=[patch, patch],
        strides=[patch, patch],
    )
    x = g.op("Transpose", [g.op("Reshape", [x, g.ints([batch, d, tokens - 1])])], perm=[0, 2, 1])
    cls = g.op("Expand", [g.weight("cls_token", [1, 1, d]), g.ints([batch, 1, d])])
    x = g.op("Add", [g.op("Concat", [cls, x], axis=1), g.weight("pos_embed", [1, tokens, d])])
    scale = g.scalar(math.sqrt(hd))
    for i in range(layers):
        p, n = f"blocks.{i}", normed(g, x, d, f"blocks.{i}.norm1")
        q, k, v = (_heads(g, g.linear(n, d, d, f"{p}.{w}"), batch, tokens, heads, hd) for w in ("q", "k", "v"))
        a = g.op(
            "Softmax", [g.op("Div", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), scale])], axis=-1
        )
        x = g.op("Add", [x, g.linear(_merge(g, g.op("MatMul", [a, v]), batch, tokens, d), d, d, f"{p}.proj")])
        n = normed(g, x, d, f"{p}.norm2")
        x = g.op("Add", [x, g.linear(_gelu_erf(g, g.linear(n, d, ff, f"{p}.fc1")), ff, d, f"{p}.fc2")])
    x = normed(g, g.op("Gather", [x, g.ints([0])], axis=1), d, "norm")
    g.output(g.linear(x, d, 1000, "head"), "logits")
    return g.model()


def mlp(batch: int = 128, widths: tuple[int, ...] = (784, 512, 200, 10)) -> onnx.ModelProto:
    """The fully connected net of the NCS2 row (openvino issue 9784): Linear + ReLU layers on a flattened
    28x28 input, as PyTorch exports nn.Linear (MatMul + Add)."""
    g = Graph("mlp_" + "_".join(map(str, widths)))
    x = g.op("Flatten", [g.input("input", FLOAT, [batch, 1, 28, 28])], axis=1)
    for i, (din, dout) in enumerate(zip(widths, widths[1:])):
        x = g.linear(x, din, dout, f"layers.{2 * i}")
        x = _relu(g, x) if i < len(widths) - 2 else x
    g.output(x, "logits")
    return g.model()


def _hailo(ops_g: float, params_m: float, name: str) -> str:
    return f"Hailo model zoo {name}: {params_m} M params, {ops_g} G OPS = {ops_g / 2:g} G MACs"


EDGE_CHECKS = [
    Check(
        "ResNet-18, 224",
        lambda: resnet(18),
        11_689_512,
        1.814e9,
        "torchvision resnet18: 11,689,512 params, 1.81 GFLOPS (MACs); " + _hailo(3.64, 11.68, "resnet_v1_18"),
    ),
    Check(
        "ResNet-34, 224",
        lambda: resnet(34),
        21_797_672,
        3.664e9,
        "torchvision resnet34: 21,797,672 params, 3.66 GFLOPS (MACs); " + _hailo(7.34, 21.79, "resnet_v1_34"),
    ),
    Check("VGG-16, 224", vgg16, 138_357_544, 15.47e9, "torchvision vgg16: 138,357,544 params, 15.47 GFLOPS (MACs)"),
    Check(
        "SqueezeNet 1.1, 224",
        squeezenet_v11,
        1_235_496,
        0.35e9,
        "torchvision squeezenet1_1: 1,235,496 params, 0.35 GFLOPS (MACs); " + _hailo(0.78, 1.24, "squeezenet_v1.1"),
    ),
    Check(
        "Inception v1, 224",
        inception_v1,
        6_624_904,
        1.5e9,
        "torchvision googlenet: 6,624,904 params, 1.50 GFLOPS (MACs); " + _hailo(3.0, 6.62, "inception_v1"),
    ),
    Check(
        "MobileNet v3-Large, 224",
        mobilenet_v3_large,
        5_483_032,
        0.217e9,
        "torchvision mobilenet_v3_large: 5,483,032 params (BatchNorm weight and bias, folded here), 0.22 GFLOPS "
        "(MACs); Hailo's mobilenet_v3 (4.07 M, 2.0 G OPS) is another network (MobileNet-EdgeTPU's size)",
    ),
    Check(
        "EfficientNet-Lite0, 224", lambda: efficientnet(0), 4.63e6, 0.78e9 / 2, _hailo(0.78, 4.63, "efficientnet_lite0")
    ),
    Check(
        "EfficientNet-Lite4, 300",
        lambda: efficientnet(4),
        12.95e6,
        5.10e9 / 2,
        _hailo(5.10, 12.95, "efficientnet_lite4"),
    ),
    Check(
        "EfficientNet-EdgeTPU-S, 224",
        lambda: efficientnet_edgetpu("S"),
        5.41e6,
        4.72e9 / 2,
        _hailo(4.72, 5.41, "efficientnet_s") + "; params match, MACs 24 % under: the zoo's graph differs, "
        "cause not found (by hand, this layout is 1.79 G MACs)",
    ),
    Check(
        "EfficientNet-EdgeTPU-M, 240",
        lambda: efficientnet_edgetpu("M"),
        6.87e6,
        7.32e9 / 2,
        _hailo(7.32, 6.87, "efficientnet_m"),
    ),
    Check(
        "EfficientNet-B0, 224",
        lambda: efficientnet(None),
        5_288_548,
        0.386e9,
        "torchvision efficientnet_b0: 5,288,548 params, 0.39 GFLOPS (MACs)",
    ),
    Check("ViT-Ti/16 (DeiT-Ti), 224", lambda: vit("tiny"), 5.7e6, 2.57e9 / 2, _hailo(2.57, 5.3, "deit_tiny")),
    Check(
        "ViT-S/16 (DeiT-S), 224",
        lambda: vit("small"),
        22.05e6,
        9.4e9 / 2,
        "DeiT-S: 22 M params (Touvron et al. 2021); " + _hailo(9.4, 20.52, "deit_small"),
    ),
]
