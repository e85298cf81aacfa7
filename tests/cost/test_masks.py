"""A causal mask's hidden positions (cost/masks.py), found from the graph's structure, and what a
target that measured the subnormal slow path charges for them (issue 29: the host's GPT-2
prefill, whose masked Softmax took 6x its unmasked time)."""

import numpy as np
import pytest
from conftest import make_model, target_text
from onnx import TensorProto, helper

import onnxroof

F = TensorProto.FLOAT
LOWEST = float(np.finfo(np.float32).min)


def attention(queries: int, keys: int, heads: int = 2, mask: str = "causal", fill: float = LOWEST, cast: bool = False):
    """Scores q[1,h,q,8] x k[1,h,8,k], plus a mask, then Softmax over the keys.
    mask="causal": key j hidden from query i when j > i + (keys - queries), built as the
    exporters do: Range over the keys and the queries, LessOrEqual, Where(visible, 0, fill).
    mask="padding": (1 - attention_mask) x fill, BERT's. ``cast``: the masked scores cast to
    float before the Softmax (T5's)."""
    nodes = [helper.make_node("MatMul", ["q", "k"], ["scores"], name="qk")]
    inits = [
        ("zero", np.array(0, np.int64)),
        ("one", np.array(1, np.int64)),
        ("nk", np.array(keys, np.int64)),
        ("past", np.array(keys - queries, np.int64)),
        ("nq_end", np.array(keys, np.int64)),
        ("fill", np.array(fill, np.float32)),
        ("nothing", np.array(0.0, np.float32)),
        ("one_f", np.array(1.0, np.float32)),
        ("axis0", np.array([0], np.int64)),
        ("axis1", np.array([1], np.int64)),
    ]
    inputs = [("q", F, [1, heads, queries, 8]), ("k", F, [1, heads, 8, keys])]
    if mask == "causal":
        nodes += [
            helper.make_node("Range", ["zero", "nk", "one"], ["cols"], name="cols"),
            helper.make_node("Range", ["past", "nq_end", "one"], ["rows_flat"], name="rows"),
            helper.make_node("Unsqueeze", ["rows_flat", "axis1"], ["rows"], name="rows_col"),
            helper.make_node("LessOrEqual", ["cols", "rows"], ["visible"], name="visible"),
            helper.make_node("Where", ["visible", "nothing", "fill"], ["mask"], name="mask"),
        ]
    else:
        inputs.append(("attention_mask", F, [1, 1, 1, keys]))
        nodes += [
            helper.make_node("Sub", ["one_f", "attention_mask"], ["inverted"], name="invert"),
            helper.make_node("Mul", ["inverted", "fill"], ["mask"], name="mask"),
        ]
    nodes.append(helper.make_node("Add", ["scores", "mask"], ["masked"], name="add_mask"))
    if cast:
        nodes.append(helper.make_node("Cast", ["masked"], ["masked_float"], name="upcast", to=F))
    nodes.append(helper.make_node("Softmax", ["masked_float" if cast else "masked"], ["p"], name="softmax", axis=-1))
    return make_model(nodes, inputs, [("p", F, [1, heads, queries, keys])], inits)


def hidden(model) -> int:
    return next(r for r in onnxroof.analyze(model).cost_graph.records if r.name == "softmax").subnormal_elements


def test_a_prefill_s_causal_mask_hides_the_upper_triangle_of_each_head():
    # 4 queries, 4 keys: 4 x 3 / 2 = 6 hidden per head, 2 heads
    assert hidden(attention(4, 4)) == 12
    # after 3 cached tokens, 2 new ones hide only the pair's triangle: 2 x 1 / 2 = 1 per head
    assert hidden(attention(2, 5)) == 2
    # T5 casts the masked scores before the Softmax
    assert hidden(attention(4, 4, cast=True)) == 12


def test_no_position_is_hidden_in_decode_by_padding_or_by_a_mild_mask():
    assert hidden(attention(1, 5)) == 0  # one new token sees every cached one
    assert hidden(attention(4, 4, mask="padding")) == 0  # which positions padding hides is data
    assert hidden(attention(4, 4, fill=-80.0)) == 0  # exp(-80) is a normal float32 (FLT_MIN = exp(-87.3))
    assert hidden(attention(4, 4, fill=-88.0)) == 12


@pytest.mark.parametrize("per_element_s", [1e-9, None])
def test_a_target_charges_each_hidden_position_its_measured_cost(tmp_path, per_element_s):
    figures = {"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e11}
    if per_element_s:
        figures["subnormal_s_per_element"] = per_element_s
    path = tmp_path / "cpu.toml"
    path.write_text(target_text(figures))
    report = onnxroof.analyze(attention(4, 4), targets=[str(path)]).targets[0]
    softmax = next(k for k in report.nodes if "softmax" in k.nodes).placement
    # without the term: the Softmax over 2 x 4 x 4 floats reads and writes 128 B each: 256 B / 1e11
    # B/s = 2.56 ns, its 160 FLOPs take 0.16 ns; with it, 12 hidden x 1 ns more
    assert softmax.time_s == pytest.approx(2.56e-9 + (12e-9 if per_element_s else 0.0))
    assert softmax.subnormal_s == pytest.approx(12e-9 if per_element_s else 0.0)
