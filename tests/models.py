"""Model builders shared by several test files: each file imports them from here, not from
another test file."""

from __future__ import annotations

import random

import numpy as np
import onnx
from conftest import make_model, zeros
from onnx import TensorProto, helper, numpy_helper

from onnxroof.memory.problem import MemoryProblem, build_problem
from onnxroof.pipeline import analyze
from onnxroof.roofline.targets import EFFICIENCY_CLASSES

F32, BOOL, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64

# Report escaping: a payload that must never reach a page as markup.
IMG_PAYLOAD = "<img src=x onerror=alert(1)>"


# Memory: a chain and two interleaved branches (memory/test_liveness.py works their peaks out by hand)


def chain_model():
    # x 1,000 floats -> Relu a (4,000 B) -> MatMul b (2,000 floats) -> Relu c -> MatMul d (500 floats)
    return make_model(
        [
            helper.make_node("Relu", ["x"], ["a"], name="relu_a"),
            helper.make_node("MatMul", ["a", "w1"], ["b"], name="matmul_b"),
            helper.make_node("Relu", ["b"], ["c"], name="relu_c"),
            helper.make_node("MatMul", ["c", "w2"], ["d"], name="matmul_d"),
        ],
        [("x", F32, [1, 1000])],
        [("d", F32, [1, 500])],
        [("w1", zeros(1000, 2000)), ("w2", zeros(2000, 500))],
    )


def interleaved_branches_model():
    # x (10 floats) -> A1 expands to L = 1,000 floats -> A2 shrinks to 1 float; the same for B; y = A2 + B2.
    # The model interleaves the branches (A1, B1, A2, B2): both large tensors are live together.
    nodes = [
        helper.make_node("MatMul", ["x", "wa1"], ["la"], name="A1"),
        helper.make_node("MatMul", ["x", "wb1"], ["lb"], name="B1"),
        helper.make_node("MatMul", ["la", "wa2"], ["sa"], name="A2"),
        helper.make_node("MatMul", ["lb", "wb2"], ["sb"], name="B2"),
        helper.make_node("Add", ["sa", "sb"], ["y"], name="join"),
    ]
    weights = [("wa1", zeros(10, 1000)), ("wb1", zeros(10, 1000)), ("wa2", zeros(1000, 1)), ("wb2", zeros(1000, 1))]
    return make_model(nodes, [("x", F32, [1, 10])], [("y", F32, [1, 1])], weights)


def random_dag(seed: int, size: int):
    """A random DAG of elementwise ops, Concats and Splits over [1, C] tensors of varied widths."""
    rng = random.Random(seed)
    tensors = [("x", 8)]
    nodes = []
    for index in range(size):
        kind = rng.choice(["unary", "unary", "binary", "concat", "wide"])
        picks = rng.sample(tensors, min(len(tensors), 3 if kind == "concat" else 2))
        name = f"t{index}"
        if kind == "unary":
            ((source, width),) = picks[:1]
            nodes.append(helper.make_node("Relu", [source], [name]))
        elif kind == "wide":  # a wider tensor, so sizes differ and ordering matters
            ((source, width),) = picks[:1]
            nodes.append(helper.make_node("Concat", [source, source], [name], axis=1))
            width *= 2
        elif kind == "binary" and len(picks) == 2 and picks[0][1] == picks[1][1]:
            nodes.append(helper.make_node("Add", [picks[0][0], picks[1][0]], [name]))
            width = picks[0][1]
        else:
            nodes.append(helper.make_node("Concat", [p[0] for p in picks], [name], axis=1))
            width = sum(p[1] for p in picks)
        tensors.append((name, width))
    consumed = {i for node in nodes for i in node.input}
    outputs = [(n, TensorProto.FLOAT, [1, w]) for n, w in tensors if n not in consumed]
    return make_model(nodes, [("x", TensorProto.FLOAT, [1, 8])], outputs)


VARIANTS = ({}, {"concat_in_place": False}, {"elementwise_in_place": True})


def random_dag_problems(seed: int, size: int) -> list[MemoryProblem]:
    """The buffer problems of one random DAG, one per in-place variant."""
    graph = analyze(random_dag(seed, size)).cost_graph
    return [build_problem(graph, **variant) for variant in VARIANTS]


# Control flow: If and Loop (ops/test_control_flow.py derives their counts)


def branch(name, nodes, output, initializers=()):
    return helper.make_graph(
        nodes,
        name,
        [],
        [helper.make_tensor_value_info(output, F32, [4, 16])],
        [numpy_helper.from_array(a, n) for n, a in initializers],
    )


def if_branches() -> dict:
    """An If's branches on x [4, 8]: then x·W1 (8 x 16), else x·W2 + b2; each makes [4, 16]."""
    then_branch = branch("then", [helper.make_node("MatMul", ["x", "w1"], ["t"])], "t", [("w1", zeros(8, 16))])
    else_branch = branch(
        "else",
        [helper.make_node("MatMul", ["x", "w2"], ["e0"]), helper.make_node("Add", ["e0", "b2"], ["e"])],
        "e",
        [("w2", zeros(8, 16)), ("b2", zeros(16))],
    )
    return {"then_branch": then_branch, "else_branch": else_branch}


def if_model():
    node = helper.make_node("If", ["cond"], ["y"], **if_branches())
    return make_model([node], [("cond", BOOL, []), ("x", F32, [4, 8])], [("y", F32, [4, 16])])


def loop_model(constant_trips: bool):
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h", "w"], ["m"]),
            helper.make_node("Relu", ["m"], ["h_next"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", BOOL, []),
            helper.make_tensor_value_info("h", F32, [1, 8]),
        ],
        [helper.make_tensor_value_info("cond_out", BOOL, []), helper.make_tensor_value_info("h_next", F32, [1, 8])],
        [numpy_helper.from_array(zeros(8, 8), "w")],
    )
    node = helper.make_node("Loop", ["trips", "cond", "h0"], ["h_final"], body=body)
    inputs = [("cond", BOOL, []), ("h0", F32, [1, 8])]
    initializers = [("trips", np.array(5, np.int64))] if constant_trips else []
    if not constant_trips:
        inputs.append(("trips", I64, []))
    return make_model([node], inputs, [("h_final", F32, [1, 8])], initializers)


# Renderers: rows that look alike


def look_alike_model():
    """a and b: same op, shape and numbers; c: same numbers on another shape (4x4 and 2x8 are both
    16 elements), with an escape character in its name; the last: unsupported, a 45-letter name."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="a"),
        helper.make_node("Relu", ["a"], ["b"], name="b"),
        helper.make_node("Relu", ["z"], ["c"], name="c\x1bz"),
        helper.make_node("Foo", ["b"], ["d"], name="n" * 45, domain="x.y"),
    ]
    model = make_model(nodes, [("x", F32, [2, 8]), ("z", F32, [4, 4])], [("c", F32, [4, 4]), ("d", F32, None)])
    model.opset_import.append(helper.make_opsetid("x.y", 1))
    return model


# KV-cached decoders (cost/test_llm.py)
D, HEADS, HEAD = 64, 4, 16  # hidden size, heads, head size


def decoder_block(heads: int = HEADS, head: int = HEAD):
    """One attention layer over a KV cache: q/k/v projections, heads split, the cache concatenated
    with the new keys and values (present = past + new), scores, softmax, context, output projection."""
    hidden = heads * head
    nodes, initializers = [], [(f"w{n}", zeros(hidden, hidden)) for n in "qkvo"]
    initializers += [("split", np.array([0, 0, heads, head], np.int64)), ("merge", np.array([0, 0, hidden], np.int64))]
    for n in "qkv":
        nodes += [
            helper.make_node("MatMul", ["inputs_embeds", f"w{n}"], [f"{n}_flat"]),
            helper.make_node("Reshape", [f"{n}_flat", "split"], [f"{n}_heads"]),
            helper.make_node("Transpose", [f"{n}_heads"], [f"{n}_new"], perm=[0, 2, 1, 3]),
        ]
    nodes += [
        helper.make_node("Concat", ["past_key_values.0.key", "k_new"], ["present.0.key"], axis=2),
        helper.make_node("Concat", ["past_key_values.0.value", "v_new"], ["present.0.value"], axis=2),
        helper.make_node("Transpose", ["present.0.key"], ["k_t"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q_new", "k_t"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "present.0.value"], ["context"]),
        helper.make_node("Transpose", ["context"], ["context_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["context_t", "merge"], ["context_flat"]),
        helper.make_node("MatMul", ["context_flat", "wo"], ["logits"]),
    ]
    cache = ["batch", heads, "past_sequence_length", head]
    present = ["batch", heads, "total_sequence_length", head]
    return make_model(
        nodes,
        [
            ("inputs_embeds", F32, ["batch", "sequence_length", hidden]),
            ("past_key_values.0.key", F32, cache),
            ("past_key_values.0.value", F32, cache),
        ],
        [
            ("logits", F32, ["batch", "sequence_length", hidden]),
            ("present.0.key", F32, present),
            ("present.0.value", F32, present),
        ],
        initializers,
    )


# Large layouts for the report (report/test_html.py, report/test_browser.py)


def zero_weights(name: str, shape, initializers: list) -> str:
    initializers.append(numpy_helper.from_array(np.zeros(shape, np.float32), name))
    return name


def transformer_like(
    layers: int = 18, seq: int = 128, dim: int = 256, heads: int = 4, ffn: int = 1024
) -> onnx.ModelProto:
    """A pre-norm encoder: 31 nodes a layer (LayerNorm, Q/K/V MatMuls, head reshapes and transposes,
    scaled softmax attention, output projection, sigmoid-GELU FFN, residual Adds); 18 layers: 558 nodes."""
    nodes, inits = [], []
    head = dim // heads
    inits.append(numpy_helper.from_array(np.array([1, seq, heads, head], np.int64), "heads_shape"))
    inits.append(numpy_helper.from_array(np.array([1, seq, dim], np.int64), "model_shape"))
    inits.append(numpy_helper.from_array(np.array(1 / head**0.5, np.float32), "scale"))
    inits.append(numpy_helper.from_array(np.array(1.702, np.float32), "gelu_k"))

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def linear(x, c_in, c_out, name):
        y = node("MatMul", [x, zero_weights(f"{name}.w", (c_in, c_out), inits)], f"{name}.matmul")
        return node("Add", [y, zero_weights(f"{name}.b", (c_out,), inits)], f"{name}.bias")

    def norm(x, name):
        return node(
            "LayerNormalization",
            [x, zero_weights(f"{name}.g", (dim,), inits), zero_weights(f"{name}.b", (dim,), inits)],
            name,
            axis=-1,
        )

    x = "tokens"
    for layer in range(layers):
        p = f"layer{layer}"
        h = norm(x, f"{p}.ln1")
        q, k, v = (linear(h, dim, dim, f"{p}.{n}") for n in "qkv")
        q, k, v = (node("Reshape", [t, "heads_shape"], f"{t}.heads") for t in (q, k, v))
        q = node("Transpose", [q], f"{p}.q.t", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"{p}.k.t", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"{p}.v.t", perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, k], f"{p}.scores"), "scale"], f"{p}.scaled")
        context = node("MatMul", [node("Softmax", [scores], f"{p}.softmax", axis=-1), v], f"{p}.context")
        context = node(
            "Reshape",
            [node("Transpose", [context], f"{p}.context.t", perm=[0, 2, 1, 3]), "model_shape"],
            f"{p}.context.merge",
        )
        x = node("Add", [x, linear(context, dim, dim, f"{p}.out")], f"{p}.residual1")
        h = linear(norm(x, f"{p}.ln2"), dim, ffn, f"{p}.ffn1")
        h = node(
            "Mul",
            [h, node("Sigmoid", [node("Mul", [h, "gelu_k"], f"{p}.gelu.scale")], f"{p}.gelu.sigmoid")],
            f"{p}.gelu",
        )
        x = node("Add", [x, linear(h, ffn, dim, f"{p}.ffn2")], f"{p}.residual2")
    graph = helper.make_graph(
        nodes,
        "transformer_like",
        [helper.make_tensor_value_info("tokens", TensorProto.FLOAT, [1, seq, dim])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, seq, dim])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnxroof tests")


def transformer_block(layers: int = 2, d: int = 8, vocab: int = 32):
    """x [batch, seq, d] through ``layers`` single-head blocks (q, k, v, o projections d x d; scores
    q·kᵀ; softmax; ·v; FFN d -> 4d -> d) and an LM head d x vocab."""
    nodes, weights, h = [], [], "x"
    for layer in range(layers):

        def proj(name, source, rows, columns):
            weights.append((f"w_{layer}_{name}", zeros(rows, columns)))
            nodes.append(
                helper.make_node(
                    "MatMul", [source, f"w_{layer}_{name}"], [f"{name}{layer}"], name=f"/layers.{layer}/{name}/MatMul"
                )
            )
            return f"{name}{layer}"

        q, k, v = proj("q", h, d, d), proj("k", h, d, d), proj("v", h, d, d)
        nodes += [
            helper.make_node("Transpose", [k], [f"kt{layer}"], perm=[0, 2, 1], name=f"/layers.{layer}/kt"),
            helper.make_node("MatMul", [q, f"kt{layer}"], [f"s{layer}"], name=f"/layers.{layer}/scores/MatMul"),
            helper.make_node("Softmax", [f"s{layer}"], [f"p{layer}"], axis=-1, name=f"/layers.{layer}/softmax"),
            helper.make_node("MatMul", [f"p{layer}", v], [f"a{layer}"], name=f"/layers.{layer}/av/MatMul"),
        ]
        o = proj("o", f"a{layer}", d, d)
        up = proj("up", o, d, 4 * d)
        h = proj("down", up, 4 * d, d)
    weights.append(("lm", zeros(d, vocab)))
    nodes.append(helper.make_node("MatMul", [h, "lm"], ["logits"], name="/lm_head/MatMul"))
    return make_model(nodes, [("x", F32, ["batch", "seq", d])], [("logits", F32, ["batch", "seq", vocab])], weights)


# Incomplete means a bound (issue 42, item 2): a batch fixed inside the graph


def fixed_batch_model(batch: int | str = "N") -> onnx.ModelProto:
    """x [batch, 128, 64] -> MatMul mm1 (64 x 64) -> Reshape to the constant [1, 128, 64] -> MatMul mm2.
    At batch 1 every node is counted: each MatMul 128 x 64 x 64 = 524,288 MACs (1,048,576 FLOPs),
    reading x 32,768 B + W 16,384 B and writing 32,768 B. At batch 8 the Reshape cannot fit
    8 x 128 x 64 elements into 1 x 128 x 64: it and mm2 behind it are not counted (2 nodes), and
    mm1 alone is 8 x 524,288 = 4,194,304 MACs (8,388,608 FLOPs; 262,144 + 16,384 + 262,144 B)."""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m"], name="mm1"),
        helper.make_node("Reshape", ["m", "shape"], ["r"], name="fix_batch"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2"),
    ]
    return make_model(
        nodes,
        [("x", F32, [batch, 128, 64])],
        [("y", F32, [batch, 128, 64])],
        [("w1", zeros(64, 64)), ("w2", zeros(64, 64)), ("shape", np.array([1, 128, 64], dtype=np.int64))],
        name="fixed",
    )


# 1 GFLOP/s fp32 and 1 TB/s DRAM, no fusion, no launch cost: a MatMul of the model above is
# compute-bound (1,048,576 FLOPs take 1.048576 ms; its 81,920 B, 81.92 ns)
HAND_PEAKS = {"peak_ops_per_s.fp32": 1e9, "dram.bandwidth_bytes_per_s": 1e12}
# every efficiency class measured at 0.5, and a measured ±18% band: a forecast, at half the peaks
HAND_MEASURED = (
    "".join(f'[efficiency.{name}]\nvalue = 0.5\ntag = "measured"\nsource = "hand"\n' for name in EFFICIENCY_CLASSES)
    + '[error_band]\nvalue = 0.18\ntag = "measured"\nsource = "12 published rows"\n'
)


def hand_targets(directory) -> tuple[str, str]:
    """(a peak-figure target "peak", a calibrated target "calibrated") written into ``directory``."""
    from conftest import target_text

    peak, calibrated = directory / "peak.toml", directory / "calibrated.toml"
    peak.write_text(target_text(HAND_PEAKS, name="peak"))
    calibrated.write_text(target_text(HAND_PEAKS, extra=HAND_MEASURED, name="calibrated"))
    return str(peak), str(calibrated)


# Options and findings: small models whose figures the tests work out by hand


def projection():
    """x [N, 4] @ w [4, 8]: 4 x 8 = 32 MACs per row of x."""
    return make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
        [("x", TensorProto.FLOAT, ["N", 4])],
        [("y", TensorProto.FLOAT, ["N", 8])],
        [("w", zeros(4, 8))],
    )


def convs():
    """x [1, 64, 32, 32] -> 3x3 conv (pad 1) -> 1x1 conv -> y, 64 channels throughout, no bias."""
    nodes = [
        helper.make_node("Conv", ["x", "w3"], ["a"], name="conv3x3", pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["a", "w1"], ["y"], name="conv1x1"),
    ]
    return make_model(
        nodes,
        [("x", F32, [1, 64, 32, 32])],
        [("y", F32, [1, 64, 32, 32])],
        [("w3", zeros(64, 64, 3, 3)), ("w1", zeros(64, 64, 1, 1))],
    )
