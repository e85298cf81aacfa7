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

    def scalar(self, value: float) -> str:
        name = self.fresh("scalar")
        self.initializers.append(helper.make_tensor(name, FLOAT, [], [value]))
        return name

    def op(self, op_type: str, inputs: list[str], stem: str | None = None, outputs: int = 1, **attrs) -> str:
        names = [self.fresh(stem or op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=self.fresh(op_type), **attrs))
        return names[0]

    def input(self, name: str, elem: int, shape: list[int]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem, shape))
        return name

    def output(self, tensor: str, name: str | None = None) -> None:
        if name and name != tensor:
            self.nodes.append(helper.make_node("Identity", [tensor], [name], name=self.fresh("Identity")))
            tensor = name
        out = onnx.ValueInfoProto()
        out.name = tensor  # typed in model(), from ONNX's shape inference
        self.outputs.append(out)

    def model(self) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.initializers)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="published-models")
        m.ir_version = 8
        # the outputs' types and shapes as an exporter writes them: ONNX's own inference (shapes only;
        # the external data is never opened)
        inferred = onnx.shape_inference.infer_shapes(m)
        known = {v.name: v.type for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
        for out in m.graph.output:
            out.type.CopyFrom(known[out.name])
        return m

    # layers as the exporters write them
    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1, prefix: str = "") -> str:
        """Conv with its BatchNormalization folded into the bias (PyTorch's eval-mode export)."""
        w = self.weight(f"{prefix}.weight", [cout, cin // group, k, k])
        b = self.weight(f"{prefix}.bias", [cout])
        pad = (k - 1) // 2
        return self.op("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=group)

    def linear(self, x: str, din: int, dout: int, prefix: str, bias: bool = True) -> str:
        y = self.op("MatMul", [x, self.weight(f"{prefix}.weight", [din, dout])])
        return self.op("Add", [y, self.weight(f"{prefix}.bias", [dout])]) if bias else y


# ---------------------------------------------------------------- CNNs


def resnet50(batch: int = 1, resolution: int = 224, v15: bool = True) -> onnx.ModelProto:
    """ResNet-50 (He et al. 2016), torchvision layout. v1.5 (MLPerf, torchvision) strides in the 3x3
    conv of a downsampling bottleneck; v1 (TF-slim resnet_v1_50, Coral, Hailo) in the first 1x1."""
    g = Graph(f"resnet50{'_v1.5' if v15 else '_v1'}_{resolution}")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    x = g.op("Relu", [g.conv(x, 3, 64, 7, 2, prefix="conv1")])
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512))):
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            p = f"layer{stage + 1}.{block}"
            s1, s3 = (1, stride) if v15 else (stride, 1)
            y = g.op("Relu", [g.conv(x, cin, width, 1, s1, prefix=f"{p}.conv1")])
            y = g.op("Relu", [g.conv(y, width, width, 3, s3, prefix=f"{p}.conv2")])
            y = g.conv(y, width, 4 * width, 1, prefix=f"{p}.conv3")
            short = g.conv(x, cin, 4 * width, 1, stride, prefix=f"{p}.downsample") if block == 0 else x
            x = g.op("Relu", [g.op("Add", [y, short])])
            cin = 4 * width
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    x = g.op("Gemm", [x, g.weight("fc.weight", [1000, 2048]), g.weight("fc.bias", [1000])], transB=1)
    g.output(x, "logits")
    return g.model()


def mobilenet_v1(batch: int = 1, resolution: int = 224) -> onnx.ModelProto:
    """MobileNet v1 1.0 (Howard et al. 2017): a 3x3 stem, 13 depthwise-separable blocks, ReLU6."""
    g = Graph("mobilenet_v1")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    six, zero = g.scalar(6.0), g.scalar(0.0)
    relu6 = lambda t: g.op("Clip", [t, zero, six])  # noqa: E731  torch's ReLU6 export
    x = relu6(g.conv(x, 3, 32, 3, 2, prefix="stem"))
    cin = 32
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for i, (cout, stride) in enumerate(plan):
        x = relu6(g.conv(x, cin, cin, 3, stride, group=cin, prefix=f"dw{i}"))
        x = relu6(g.conv(x, cin, cout, 1, prefix=f"pw{i}"))
        cin = cout
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    x = g.op("Gemm", [x, g.weight("fc.weight", [1001, 1024]), g.weight("fc.bias", [1001])], transB=1)
    g.output(x, "logits")
    return g.model()


def mobilenet_v2(batch: int = 1, resolution: int = 224) -> onnx.ModelProto:
    """MobileNet v2 1.0 (Sandler et al. 2018), torchvision layout: inverted residuals, ReLU6."""
    g = Graph("mobilenet_v2")
    x = g.input("input", FLOAT, [batch, 3, resolution, resolution])
    six, zero = g.scalar(6.0), g.scalar(0.0)
    relu6 = lambda t: g.op("Clip", [t, zero, six])  # noqa: E731
    x = relu6(g.conv(x, 3, 32, 3, 2, prefix="stem"))
    cin, i = 32, 0
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for j in range(n):
            stride, hidden, y = (s if j == 0 else 1), cin * t, x
            if t != 1:
                y = relu6(g.conv(y, cin, hidden, 1, prefix=f"b{i}.expand"))
            y = relu6(g.conv(y, hidden, hidden, 3, stride, group=hidden, prefix=f"b{i}.dw"))
            y = g.conv(y, hidden, c, 1, prefix=f"b{i}.project")
            x = g.op("Add", [x, y]) if stride == 1 and cin == c else y
            cin, i = c, i + 1
    x = relu6(g.conv(x, cin, 1280, 1, prefix="head"))
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    x = g.op("Gemm", [x, g.weight("fc.weight", [1000, 1280]), g.weight("fc.bias", [1000])], transB=1)
    g.output(x, "logits")
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


def decoder(cfg: DecoderConfig, batch: int, new_tokens: int, past: int, last_logits_only: bool = True) -> onnx.ModelProto:
    """One step of a KV-cached decoder: ``new_tokens`` tokens (the prompt for prefill, 1 for decode)
    attending ``past`` cached positions plus themselves. Past keys/values are inputs
    ``past_key_values.{i}.key|value`` [B, kv heads, past, head] concatenated with the new ones into
    ``present.{i}.key|value`` outputs; prefill (past = 0) has no past inputs. ``last_logits_only``
    applies the LM head to the last position only, as TensorRT-LLM does (gather_last_token_logits)."""
    d, hd, h, kvh = cfg.hidden, cfg.head_dim, cfg.heads, cfg.kv_heads
    rdim = cfg.rotary_dim or hd
    total = past + new_tokens
    g = Graph(f"{cfg.name}_b{batch}_s{new_tokens}_p{past}")
    ids = g.input("input_ids", TensorProto.INT64, [batch, new_tokens])
    cos = g.input("rotary_cos", FLOAT, [batch, 1, new_tokens, rdim])  # per-position tables, computed by the host
    sin = g.input("rotary_sin", FLOAT, [batch, 1, new_tokens, rdim])
    mask = g.input("attention_bias", FLOAT, [batch, 1, new_tokens, total])  # causal mask as an additive bias
    x = g.op("Gather", [g.weight("embed_tokens.weight", [cfg.vocab, d]), ids])
    scale = g.scalar(math.sqrt(hd))
    llama = cfg.style == "llama"
    for i in range(cfg.layers):
        p = f"layers.{i}"
        normed = _rms_norm(g, x, d, f"{p}.input_norm") if llama else _layer_norm(g, x, d, f"{p}.ln_1")
        q = _heads(g, g.linear(normed, d, h * hd, f"{p}.q_proj", bias=False), batch, new_tokens, h, hd)
        k = _heads(g, g.linear(normed, d, kvh * hd, f"{p}.k_proj", bias=False), batch, new_tokens, kvh, hd)
        v = _heads(g, g.linear(normed, d, kvh * hd, f"{p}.v_proj", bias=False), batch, new_tokens, kvh, hd)
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
    if last_logits_only and new_tokens > 1:
        x = g.op("Slice", [x, g.ints([new_tokens - 1]), g.ints([new_tokens]), g.ints([1])])
    g.output(g.linear(x, d, cfg.vocab, "lm_head", bias=not llama), "logits")
    return g.model()


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
    params: float
    macs: float | None
    source: str


CHECKS = [
    Check("ResNet-50 v1.5, 224x224", lambda: resnet50(1, 224), 25.557e6, 4.09e9,
          "torchvision resnet50: 25,557,032 params (BN weights+biases included), 4.09 GMACs (torchvision model docs: 4.09 GFLOPS, counted as MACs)"),
    Check("ResNet-50 v1, 299x299", lambda: resnet50(1, 299, v15=False), 25.557e6, 3.8e9 * (299 / 224) ** 2,
          "same parameters; MACs: He et al. 2016 Table 1, 3.8 G 'FLOPs' (multiply-adds) at 224, x (299/224)^2"),
    Check("MobileNet v1 1.0, 224", lambda: mobilenet_v1(1, 224), 4.2e6, 569e6,
          "Howard et al. 2017, Table 8: 569 M mult-adds, 4.2 M parameters"),
    Check("MobileNet v2 1.0, 224", lambda: mobilenet_v2(1, 224), 3.4e6, 300e6,
          "Sandler et al. 2018, Table 4: 300 M MACs, 3.4 M parameters"),
    Check("BERT-large, seq 384", lambda: bert_large(1, 384), 335e6,
          24 * (384 * (4 * 1024**2 + 2 * 1024 * 4096) + 2 * 384**2 * 1024) + 384 * 1024 * 2,
          "Devlin et al. 2019: 340 M (the HF uncased model counts 335 M with the pooler; the QA head has no pooler: -1.05 M); "
          "MACs analytic: 24 x (S x (4d^2 + 2 d ff) + 2 S^2 d) + the span head, S=384, d=1024, ff=4096"),
    Check("LLaMA-7B, decode", lambda: decoder(DECODERS["llama-7b"], 1, 1, 127), 6.738e9,
          6_738_415_616 - 32000 * 4096 - 65 * 4096 + 2 * 128 * 4096 * 32,
          "Touvron et al. 2023: 6.7 B (HF checkpoint 6,738,415,616); MACs of one decoded token at context 128: "
          "the parameters less the embedding table and the 65 norm vectors, plus 2 x 128 x 4096 per layer of attention"),
    Check("Llama-2-13B, decode", lambda: decoder(DECODERS["llama-2-13b"], 1, 1, 127), 13.016e9, None,
          "HF Llama-2-13b: 13,015,864,320 params"),
    Check("Llama-2-70B, decode", lambda: decoder(DECODERS["llama-2-70b"], 1, 1, 127), 68.977e9, None,
          "HF Llama-2-70b: 68,976,648,192 params"),
    Check("GPT-J-6B, decode", lambda: decoder(DECODERS["gpt-j-6b"], 1, 1, 127), 6.053e9, None,
          "EleutherAI GPT-J-6B model card: 6,053,381,344 params"),
]
