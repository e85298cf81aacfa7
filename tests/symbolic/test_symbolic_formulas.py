"""Cost as a formula of the model's dims (issue 22): exact polynomials recovered from the integer
analysis, in the model's own dim names. Expected formulas are derived by hand in the comments."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import make_model, run, zeros
from models import transformer_block
from onnx import TensorProto, helper

from onnxroof.symbolic.formulas import formulas
from onnxroof.symbolic.polynomials import polynomial_text

F32 = TensorProto.FLOAT
D = 16


def attention_like():
    """x [batch, seq, 16] -> q = x·Wq, k = x·Wk (16 x 16 each) -> scores = q·kᵀ [batch, seq, seq]
    -> Softmax -> out = scores·x. MACs: 2·16²·batch·seq (projections) + 16·batch·seq² (q·kᵀ) +
    16·batch·seq² (scores·x) = 512·batch·seq + 32·batch·seq²."""
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="/attn/q/MatMul"),
        helper.make_node("MatMul", ["x", "wk"], ["k"], name="/attn/k/MatMul"),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="/attn/Transpose"),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="/attn/scores/MatMul"),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="/attn/Softmax"),
        helper.make_node("MatMul", ["p", "x"], ["y"], name="/attn/out/MatMul"),
    ]
    return make_model(
        nodes,
        [("x", F32, ["batch", "seq", D])],
        [("y", F32, ["batch", "seq", D])],
        [("wq", zeros(D, D)), ("wk", zeros(D, D))],
    )


def test_attention_grows_as_sequence_squared_exactly():
    found = formulas(attention_like())
    assert found.dims == ["batch", "seq"]
    assert found.polynomials["macs"] == {(1, 2): 32, (1, 1): 512}
    assert found.text("macs") == "32·batch·seq² + 512·batch·seq"
    assert found.polynomials["params"] == {(0, 0): 2 * D * D}  # a constant
    # the formula reproduces the integer analysis away from the fitted points
    import onnxroof

    for batch, seq in ((1, 128), (4, 77)):
        assert (
            found.evaluate("macs", {"batch": batch, "seq": seq})
            == onnxroof.analyze(attention_like(), dims={"batch": batch, "seq": seq}).totals.macs
        )


def test_print_shows_the_formulas_as_summary_symbolic_does():
    found = formulas(attention_like())
    # the MACs worked out above: 32·batch·seq² + 512·batch·seq, on the line that names them
    assert any(
        line.startswith("  MACs") and line.endswith("= 32·batch·seq² + 512·batch·seq")
        for line in str(found).splitlines()
    )
    assert repr(found).startswith("<onnxroof.Formulas in batch, seq: macs") and "\n" not in repr(found)


def test_a_bound_dim_stays_bound():
    found = formulas(attention_like(), dims={"batch": 2})
    assert found.dims == ["seq"] and found.text("macs") == "64·seq² + 1,024·seq"


def test_a_data_dependent_size_is_stated_with_the_formula():
    # NonZero's output length depends on the data: the analysis costs it at its upper bound, and
    # the formulas say so rather than pass for what any input costs
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
        helper.make_node("Transpose", ["nz"], ["t"], name="t"),
    ]
    model = make_model(nodes, [("x", F32, ["n", 4])], [("t", TensorProto.INT64, None)])
    found = formulas(model)
    assert found.notes and "NonZero" in found.notes[0] and "upper bound" in found.notes[0]


def test_summary_symbolic_never_exits_2_for_free_dims(tmp_path, capsys):
    path = tmp_path / "a.onnx"
    path.write_bytes(attention_like().SerializeToString())
    code, out, _ = run(capsys, "summary", str(path), "--symbolic")
    assert code == 0 and "MACs" in out and "32·batch·seq² + 512·batch·seq" in out
    assert max(len(line) for line in out.splitlines()) <= 120
    code, out, _ = run(capsys, "summary", str(path), "--symbolic", "--format", "json")
    document = json.loads(out)
    assert (
        document["dims"] == ["batch", "seq"] and document["formulas"]["macs"]["text"] == "32·batch·seq² + 512·batch·seq"
    )


def test_summary_symbolic_binds_the_dims_the_flags_give(tmp_path, capsys):
    # --dim arrives as SYMBOL=VALUE text: batch = 2 doubles both terms (64·seq² + 1,024·seq)
    path = tmp_path / "a.onnx"
    path.write_bytes(attention_like().SerializeToString())
    code, out, _ = run(capsys, "summary", str(path), "--symbolic", "--dim", "batch=2")
    assert code == 0 and "Formulas in seq " in out and "64·seq² + 1,024·seq" in out


def test_polynomial_text_reads_highest_degree_first():
    assert polynomial_text({(0,): -3, (2,): 1, (1,): 4_096}, ["s"]) == "s² + 4,096·s - 3"
    assert polynomial_text({}, ["s"]) == "0"


def test_a_cost_beyond_the_fitted_degree_is_refuted_not_printed_wrong():
    # x [s, s, s] · y [s, s]: s⁴ MACs, one degree more than four samples per dim can fit; the
    # check at s = 11 disagrees, and the formula is withheld with the reason
    node = helper.make_node("MatMul", ["x", "y"], ["z"], name="mm")
    model = make_model([node], [("x", F32, ["s", "s", "s"]), ("y", F32, ["s", "s"])], [("z", F32, ["s", "s", "s"])])
    found = formulas(model)
    assert found.polynomials["macs"] is None
    assert "piecewise or data-dependent" in found.refuted["macs"] and "s=11" in found.refuted["macs"]
    assert found.text("macs").startswith("not a polynomial in s")
    assert found.polynomials["activation_bytes"] is not None  # 4·(s³ + s² + s³) is within reach


def test_a_decoder_phase_without_its_length_gives_the_formula_in_that_length():
    # tests/models.py's decoder block, one token against the cache: its attention grows by
    # one QKᵀ and one AV row per attended position, the rest is constant
    from models import decoder_block

    import onnxroof

    found = formulas(decoder_block(), phase="decode")
    assert found.dims == ["context"]
    polynomial = found.polynomials["macs"]
    assert polynomial is not None and set(polynomial) <= {(0,), (1,)}
    for context in (16, 100):
        assert (
            found.evaluate("macs", {"context": context})
            == onnxroof.analyze(decoder_block(), phase="decode", context=context).totals.macs
        )


def test_diff_symbolic_gives_the_change_term_by_term(tmp_path, capsys):
    # head adds a 16 x 16 projection after the attention: 256 MACs per token, batch·seq tokens
    base = attention_like()
    head = attention_like()
    head.graph.node.append(helper.make_node("MatMul", ["y", "wo"], ["z"], name="/head/MatMul"))
    head.graph.initializer.append(__import__("onnx").numpy_helper.from_array(np.zeros((D, D), np.float32), "wo"))
    head.graph.output[0].name = "z"
    for model, name in ((base, "base"), (head, "head")):
        (tmp_path / f"{name}.onnx").write_bytes(model.SerializeToString())
    code, out, _ = run(capsys, "diff", str(tmp_path / "base.onnx"), str(tmp_path / "head.onnx"), "--symbolic")
    assert code == 0 and "MACs" in out and "+= 256·batch·seq" in out and "parameters" in out and "+= 256" in out
    # with batch 1 on the slow target (no on-chip memory), the head's MatMul adds its own time:
    # max(512·seq FLOPs, 128·seq + 1,024 B) ns, DRAM-bound to seq = 2
    code, out, _ = run(
        capsys,
        "diff",
        str(tmp_path / "base.onnx"),
        str(tmp_path / "head.onnx"),
        "--symbolic",
        "--dim",
        "batch=1",
        "--target",
        slow_target(tmp_path),
    )
    assert code == 0 and "latency on test += 128 ns·seq + 1.02 µs for seq 1 to 2; 512 ns·seq for seq 3 on" in out


def test_the_reading_names_the_leading_term_and_where_it_takes_over():
    from onnxroof.symbolic.polynomials import reading

    # 32·batch·seq² passes 512·batch·seq at seq = 16
    assert (
        reading({(1, 2): 32, (1, 1): 512}, ["batch", "seq"])
        == "grows as batch·seq²; the seq² term is the larger from seq = 16 on"
    )
    assert reading({(0, 0): 7}, ["batch", "seq"]) == "constant"


def test_per_module_formulas_on_request(tmp_path, capsys):
    # the attention's modules from the node names: q and k projections 256·batch·seq each, the
    # scores and the output 16·batch·seq² each
    found = formulas(attention_like(), modules=2)
    assert found.polynomials["macs@attn/q"] == {(1, 1): 256}
    assert found.polynomials["macs@attn/scores"] == {(1, 2): 16}
    path = tmp_path / "a.onnx"
    path.write_bytes(attention_like().SerializeToString())
    code, out, _ = run(capsys, "summary", str(path), "--symbolic", "--by", "module")
    assert code == 0 and "MACs of attn/out" in out and "16·batch·seq²" in out


def test_a_two_layer_transformer_block_s_macs_formula_exactly():
    # per layer 12·d²·seq (q, k, v, o: 4·d²; FFN: 2·d·4d) + 2·d·seq² (scores and AV), per batch row;
    # L = 2, d = 8: 2·(768·seq + 16·seq²); the LM head 8·32·seq = 256·seq
    # MACs = batch·(1,536·seq + 32·seq²) + 256·batch·seq = 32·batch·seq² + 1,792·batch·seq
    found = formulas(transformer_block())
    assert found.text("macs") == "32·batch·seq² + 1,792·batch·seq"


def test_a_conv_net_s_per_pixel_polynomial():
    # Conv 3 -> 4 channels, 3x3, pad 1, over [batch, 3, height, width]: 4·3·9 = 108 MACs per pixel
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="/stem/Conv", pads=[1, 1, 1, 1])
    model = make_model(
        [node],
        [("x", F32, ["batch", 3, "height", "width"])],
        [("y", F32, ["batch", 4, "height", "width"])],
        [("w", zeros(4, 3, 3, 3))],
    )
    found = formulas(model)
    assert found.dims == ["batch", "height", "width"]
    assert found.text("macs") == "108·batch·height·width"


def test_the_report_can_carry_the_formulas_of_the_dims_it_binds(tmp_path, capsys):
    # the page's numbers at batch 1, seq 64; its formulas in batch and seq, as summary --symbolic's
    path = tmp_path / "a.onnx"
    path.write_bytes(attention_like().SerializeToString())
    page = tmp_path / "r.html"
    code, _, _ = run(capsys, "report", str(path), "--dim", "seq=64", "--formulas", "-o", str(page))
    html = page.read_text(encoding="utf-8")
    section = html[html.index('id="formulas"') :]
    section = section[: section.index("</section>")]
    assert code == 0 and "32·batch·seq² + 512·batch·seq" in section and "in batch, seq" in section
    code, _, _ = run(capsys, "report", str(path), "--dim", "seq=64", "-o", str(page))
    assert 'id="formulas"' not in page.read_text(encoding="utf-8")  # only on request


def test_the_report_s_formulas_carry_each_target_s_latency(tmp_path, capsys):
    # the one-MatMul model on the slow target: DRAM-bound for seq 1-2, compute-bound from 3
    # (test_latency_in_one_dim_is_one_polynomial_per_range_of_bounds derives it)
    path = tmp_path / "m.onnx"
    path.write_bytes(matmul_16(["seq"]).SerializeToString())
    page = tmp_path / "r.html"
    code, _, _ = run(
        capsys, "report", str(path), "--dim", "seq=64", "--formulas", "--target", slow_target(tmp_path), "-o", str(page)
    )
    html = page.read_text(encoding="utf-8")
    section = html[html.index('id="formulas"') :]
    section = section[: section.index("</section>")]
    assert code == 0 and "Latency on test" in section
    assert "seq 1 to 2" in section and "128 ns·seq + 1.02 µs" in section and "512 ns·seq" in section
    assert "DRAM-bound to seq = 2, compute-bound from 3 on" in section


def test_summary_formulas_adds_the_block_to_the_json_document(tmp_path, capsys):
    path = tmp_path / "a.onnx"
    path.write_bytes(attention_like().SerializeToString())
    code, out, _ = run(
        capsys, "summary", str(path), "--dim", "batch=1", "--dim", "seq=8", "--formulas", "--format", "json"
    )
    document = json.loads(out)
    assert code == 0 and document["totals"]["macs"] == 32 * 64 + 512 * 8  # the numbers at batch 1, seq 8
    assert document["formulas"]["dims"] == ["batch", "seq"]  # the formulas in the dims the model leaves free
    assert document["formulas"]["formulas"]["macs"]["text"] == "32·batch·seq² + 512·batch·seq"
    code, out, _ = run(capsys, "summary", str(path), "--dim", "batch=1", "--dim", "seq=8", "--formulas")
    assert code == 0 and "Formulas in batch, seq" in out and "32·batch·seq² + 512·batch·seq" in out


# --- latency formulas: the sum over kernels of each one's slowest roof -------------------------


def matmul_16(shape):
    """x [..., 16] · W [16, 16]: per row 2·16·16 = 512 FLOPs; x and y 64 B per row, W 1,024 B."""
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="/proj/MatMul")
    return make_model([node], [("x", F32, shape + [D])], [("y", F32, shape + [D])], [("w", zeros(D, D))])


def slow_target(tmp_path, extra: dict | None = None) -> str:
    """1 GFLOP/s fp32 and 1 GB/s DRAM: a FLOP and a byte take a nanosecond each."""
    from conftest import target_text

    path = tmp_path / "slow.toml"
    path.write_text(target_text({"peak_ops_per_s.fp32": 1e9, "dram.bandwidth_bytes_per_s": 1e9, **(extra or {})}))
    return str(path)


def onchip_target(tmp_path, size: int, extra: str = "", dram_bytes_per_s: float = 1e9) -> str:
    """The slow target with ``size`` bytes on chip at 1 TB/s (and ``extra`` tables)."""
    from conftest import target_text

    path = tmp_path / f"onchip{size}.toml"
    path.write_text(
        target_text(
            {
                "peak_ops_per_s.fp32": 1e9,
                "dram.bandwidth_bytes_per_s": dram_bytes_per_s,
                "onchip.size_bytes": size,
                "onchip.bandwidth_bytes_per_s": 1e12,
            },
            extra,
        )
    )
    return str(path)


def projection(residual: bool = False):
    """x [seq, 16] -> MatMul W [16, 16] -> a -> Relu -> b (the output), or with ``residual`` y = a + b."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["a"], name="/proj/MatMul"),
        helper.make_node("Relu", ["a"], ["b"], name="/act/Relu"),
    ]
    if residual:
        nodes.append(helper.make_node("Add", ["a", "b"], ["y"], name="/res/Add"))
    return make_model(
        nodes, [("x", F32, ["seq", D])], [("y" if residual else "b", F32, ["seq", D])], [("w", zeros(D, D))]
    )


def test_latency_in_one_dim_is_one_polynomial_per_range_of_bounds(tmp_path):
    # no on-chip memory: every byte from DRAM. compute 512·seq ns; DRAM (64 + 64)·seq + 1,024 ns.
    # compute >= DRAM when 384·seq >= 1,024, seq >= 2.67: DRAM-bound for seq 1-2, compute-bound from 3
    from fractions import Fraction

    found = formulas(matmul_16(["seq"]), targets=[slow_target(tmp_path)])
    latency = found.latency[0]
    ns = Fraction(1, 10**9)
    assert [(r.start, r.end, r.polynomial) for r in latency.ranges] == [
        (1, 2, {(1,): 128 * ns, (0,): 1024 * ns}),
        (3, None, {(1,): 512 * ns}),
    ]
    from onnxroof.symbolic.latency_formulas import bound_text, latency_lines

    assert bound_text(latency.groups[0], ["seq"]) == "DRAM-bound to seq = 2, compute-bound from 3 on"
    text = "\n".join(latency_lines(latency))
    assert "seq 1 to 2: 128 ns·seq + 1.02 µs" in text and "seq 3 on: 512 ns·seq" in text
    assert latency.seconds({"seq": 1000}) == pytest.approx(512e-6)  # compute-bound: 512,000 FLOPs at 1 GFLOP/s
    ranges = found.to_dict()["latency"][0]["ranges"]
    assert ranges[1] == {
        "from": 3,
        "to": None,
        "text": "512 ns·seq",
        "bounds": {"compute": 1},
        "terms": [{"seconds": pytest.approx(512e-9), "powers": {"seq": 1}}],
    }


def test_latency_in_two_dims_states_each_kernel_s_bound_as_an_inequality(tmp_path):
    # per (batch, seq) row as above: compute-bound where 512·b·s >= 128·b·s + 1,024, b·s >= 8/3
    found = formulas(matmul_16(["batch", "seq"]), targets=[slow_target(tmp_path, {"node_overhead_s": 1e-6})])
    from onnxroof.symbolic.latency_formulas import bound_text, latency_lines

    latency = found.latency[0]
    assert bound_text(latency.groups[0], ["batch", "seq"]) == "compute-bound where batch·seq ≥ 2.667, else DRAM-bound"
    # large dims: 512 ns per row, plus the one launch of 1 µs
    assert "at large dims (each kernel bound as there): 512 ns·batch·seq + 1 µs" in "\n".join(latency_lines(latency))
    large = found.to_dict()["latency"][0]["at_large_dims"]
    assert large["text"] == "512 ns·batch·seq + 1 µs" and large["terms"][0] == {
        "seconds": pytest.approx(512e-9),
        "powers": {"batch": 1, "seq": 1},
    }


def test_latency_formula_states_where_activations_start_to_spill(tmp_path):
    # x -> MatMul -> a -> Relu -> b, on chip 12,800 B: x and a (64·seq B each) are live at the
    # MatMul, a and b at the Relu, so nothing spills while 128·seq <= 12,800: to seq = 100. From
    # 101 on, a goes to DRAM and back, which the fitted formula does not have
    latency = formulas(projection(), targets=[onchip_target(tmp_path, 12_800)]).latency[0]
    assert latency.holds == "holds to seq = 100; from 101 on activations spill off chip"


def test_latency_formula_states_where_resident_parameters_stop_fitting(tmp_path):
    # as above, with the parameters (W: 1,024 B) kept on chip while they fit beside the peak
    # activations: 1,024 + 128·seq <= 12,800 to seq = 92. From 93 W is read from DRAM every run
    # (and the 12,800 B hold the 128·seq of activations, so nothing spills up to 100). At 0.1 GB/s
    # the MatMul is DRAM-bound (x: 640·seq ns against 512·seq ns of compute), so W's 10.24 µs show
    target = onchip_target(tmp_path, 12_800, '[weights]\nresident = true\nsource = "hand"\n', dram_bytes_per_s=1e8)
    latency = formulas(projection(), targets=[target]).latency[0]
    assert latency.holds == (
        "holds to seq = 92; from 93 on the parameters no longer fit on chip beside the "
        "activations: read from DRAM every run"
    )


def test_latency_follows_a_kernel_s_class_where_its_efficiency_changes(tmp_path):
    # MACs 256·seq over 256 weights: gemv while 256·seq < 8·256, seq <= 7; from 8 depthwise, since
    # 256·seq < 32·16·seq outputs always. With gemv at 0.25 of the roofline and depthwise at 0.5:
    # seq 1-2 DRAM-bound: (128·seq + 1,024) ns / 0.25 = 512·seq + 4,096 ns
    # seq 3-7 compute-bound: 512·seq ns / 0.25 = 2,048·seq ns
    # seq 8 on compute-bound: 512·seq ns / 0.5 = 1,024·seq ns
    from fractions import Fraction

    from conftest import target_text

    from onnxroof.symbolic.latency_formulas import bound_text

    extra = (
        '[efficiency.depthwise]\nvalue = 0.5\ntag = "estimate"\nsource = "hand"\n'
        '[efficiency.gemv]\nvalue = 0.25\ntag = "estimate"\nsource = "hand"\n'
    )
    path = tmp_path / "eff.toml"
    path.write_text(target_text({"peak_ops_per_s.fp32": 1e9, "dram.bandwidth_bytes_per_s": 1e9}, extra))
    latency = formulas(matmul_16(["seq"]), targets=[str(path)]).latency[0]
    ns = Fraction(1, 10**9)
    assert latency.refuted is None
    assert [(r.start, r.end, r.polynomial) for r in latency.ranges] == [
        (1, 2, {(1,): 512 * ns, (0,): 4096 * ns}),
        (3, 7, {(1,): 2048 * ns}),
        (8, None, {(1,): 1024 * ns}),
    ]
    assert bound_text(latency.groups[0], ["seq"]) == (
        "DRAM-bound to seq = 2, compute-bound from 3 on; runs as gemv "
        "(efficiency 0.25) to seq = 7, depthwise (efficiency 0.5) from 8 on"
    )
    import onnxroof

    assert (
        latency.seconds({"seq": 100})
        == pytest.approx(102.4e-6)
        == pytest.approx(
            onnxroof.analyze(matmul_16(["seq"]), dims={"seq": 100}, targets=[str(path)]).targets[0].latency_s
        )
    )


def test_a_piecewise_peak_is_one_polynomial_per_range():
    # x [seq, 16] -> MatMul W [16, 256] -> e [seq, 256] -> ReduceSum -> r [seq, 1] -> r·rᵀ [seq, seq]
    # -> ReduceSum -> y. Live bytes (fp32) at the first MatMul: x 64·seq + e 1,024·seq = 1,088·seq;
    # at r·rᵀ: r 4·seq + rᵀ 4·seq + the scores 4·seq² = 4·seq² + 8·seq. The quadratic step takes
    # over where 4·seq² + 8·seq > 1,088·seq: from seq = 271 (at 270 they tie)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["e"], name="wide"),
        helper.make_node("ReduceSum", ["e", "axes"], ["r"], name="narrow", keepdims=1),
        helper.make_node("Transpose", ["r"], ["rt"], name="t", perm=[1, 0]),
        helper.make_node("MatMul", ["r", "rt"], ["s"], name="outer"),
        helper.make_node("ReduceSum", ["s", "axes"], ["y"], name="sum", keepdims=1),
    ]
    model = make_model(
        nodes,
        [("x", F32, ["seq", D])],
        [("y", F32, ["seq", 1])],
        [("w", zeros(D, 256)), ("axes", np.array([1], np.int64))],
    )
    found = formulas(model)
    assert found.text("peak_bytes") == "1,088·seq for seq 1 to 269; 4·seq² + 8·seq for seq 270 on"
    assert found.evaluate("peak_bytes", {"seq": 1000}) == 4 * 1000**2 + 8 * 1000


def every_other_column():
    """x [batch, n] -> Range(0, n, 2) -> Gather the even columns -> Relu: ceil(n / 2) columns, no
    polynomial in n."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "one"], ["n"], name="n", axis=0),
        helper.make_node("Range", ["zero", "n", "two"], ["idx"], name="/every_other/Range"),
        helper.make_node("Gather", ["x", "idx"], ["y"], name="/every_other/Gather", axis=1),
        helper.make_node("Relu", ["y"], ["z"], name="relu"),
    ]
    return make_model(
        nodes,
        [("x", F32, ["batch", "n"])],
        [("z", F32, ["batch", None])],
        [("one", np.array(1, np.int64)), ("zero", np.array(0, np.int64)), ("two", np.array(2, np.int64))],
    )


def test_a_dim_that_feeds_sizes_non_polynomially_is_named_and_held():
    found = formulas(every_other_column())
    # n is held at 64: 32 even columns. FLOPs: the Relu's 32 per batch row. Activation bytes per
    # batch row: the Gather reads x's 64 floats (256 B) and writes 32 (128 B); the Relu reads and
    # writes 32 each (256 B): 640·batch
    assert found.dims == ["batch"] and found.held == {"n": 64}
    assert found.text("flops") == "32·batch"
    assert found.polynomials["activation_bytes"][(1,)] == 640
    assert "n feeds the sizes non-polynomially (first at node /every_other/Range)" in found.notes[0]


def test_a_lone_non_polynomial_dim_is_named_with_the_fix():
    found = formulas(every_other_column(), dims={"batch": 1})
    assert found.polynomials["flops"] is None  # ceil(n / 2)
    assert found.notes[0].startswith("n feeds the sizes non-polynomially") and "bind it with --dim" in found.notes[0]


def test_a_12_layer_model_s_formulas_fit_120_columns(tmp_path, capsys):
    # 12 layers of d = 64 with a long-named free dim, per module and with two targets' latency:
    # MACs = 12·(12·64²·seq + 2·64·seq²) + 64·32·seq per batch row = 1,536·b·s² + 591,872·b·s
    path = tmp_path / "m.onnx"
    model = transformer_block(layers=12, d=64)
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "sequence_length"
    model.graph.output[0].type.tensor_type.shape.dim[1].dim_param = "sequence_length"
    path.write_bytes(model.SerializeToString())
    code, out, _ = run(
        capsys,
        "summary",
        str(path),
        "--symbolic",
        "--by",
        "module",
        "--dim",
        "batch=1",
        "--target",
        "h100-sxm",
        "--target",
        "raspberry-pi-5",
    )
    assert code == 0 and "1,536·sequence_length² + 591,872·sequence_length" in out
    assert "latency on h100-sxm" in out and "latency on raspberry-pi-5" in out
    assert max(len(line) for line in out.splitlines()) <= 120


def test_a_decoder_with_more_free_dims_than_fit_gets_its_decode_formulas():
    # the value cache's length named apart from the key cache's (as the transformers exporter
    # names each cache): batch, sequence_length and two past lengths, 4 free dims. One decode step
    # ties them to the attended length: QKᵀ and AV take heads x head MACs per attended position
    # each, the four projections hidden² for the one token
    from models import HEAD, HEADS, decoder_block

    model = decoder_block()
    model.graph.input[2].type.tensor_type.shape.dim[2].dim_param = "past_value_length"
    found = formulas(model)
    hidden = HEADS * HEAD
    assert found.dims == ["context"] and "one decode step" in found.notes[0]
    assert found.polynomials["macs"] == {(1,): 2 * HEADS * HEAD, (0,): 4 * hidden * hidden}


def test_latency_follows_a_class_change_past_the_fitted_values(tmp_path):
    # probs [seq, seq] · v [seq, 16]: 16·seq² MACs, no weights, 16·seq outputs, so seq MACs per
    # output: depthwise (under 32) at every fitted value, gemm from seq = 32 on. With depthwise at
    # half the roofline, the formula must follow the class beyond the samples
    from conftest import target_text

    from onnxroof.symbolic.latency_formulas import bound_text

    node = helper.make_node("MatMul", ["p", "v"], ["y"], name="/av/MatMul")
    model = make_model([node], [("p", F32, ["seq", "seq"]), ("v", F32, ["seq", D])], [("y", F32, ["seq", D])])
    path = tmp_path / "eff.toml"
    path.write_text(
        target_text(
            {"peak_ops_per_s.fp32": 1e9, "dram.bandwidth_bytes_per_s": 1e9},
            '[efficiency.depthwise]\nvalue = 0.5\ntag = "estimate"\nsource = "hand"\n',
        )
    )
    latency = formulas(model, targets=[str(path)]).latency[0]
    assert "runs as depthwise (efficiency 0.5) to seq = 31, gemm (efficiency 1) from 32 on" in bound_text(
        latency.groups[0], ["seq"]
    )
    # compute-bound at 64: 2·16·64² FLOPs at 1 GFLOP/s and the full roofline
    assert latency.seconds({"seq": 64}) == pytest.approx(2 * 16 * 64**2 * 1e-9)


def test_a_spilling_model_gets_the_formula_of_its_settled_spill_plan(tmp_path):
    # x -> MatMul -> a -> Relu -> b; y = a + b, with 1,000 B on chip. Every node's own tensors
    # take 128·seq B or more (two [seq, 16] fp32), so from seq = 8 (1,024 B) each streams all of
    # them from DRAM; below, the plan keeps some on chip and changes with seq (the fitted values
    # 2-11 straddle it). Past it, per row: MatMul compute-bound 512 ns (its DRAM 128 ns + W), Relu
    # DRAM-bound 128 ns, Add 192 ns: 832·seq ns, and W's 1,024 ns are under the MatMul's compute
    from fractions import Fraction

    latency = formulas(projection(residual=True), targets=[onchip_target(tmp_path, 1_000)]).latency[0]
    assert [(r.start, r.end, r.polynomial) for r in latency.ranges] == [(8, None, {(1,): Fraction(832, 10**9)})]
    assert latency.holds.startswith("holds from seq = 8 (below, the spill plan changes)")


def test_a_stable_spill_fits_the_first_grid(tmp_path):
    # 16 B on chip: every tensor streams at every seq. MatMul: W 1,024 + x 64·seq + a 64·seq B
    # against 512·seq FLOPs; Relu: 128·seq B. DRAM-bound MatMul to seq = 2: 256·seq + 1,024 ns;
    # from 3: 512 + 128 = 640·seq ns
    from fractions import Fraction

    latency = formulas(projection(), targets=[onchip_target(tmp_path, 16)]).latency[0]
    ns = Fraction(1, 10**9)
    assert [(r.start, r.end, r.polynomial) for r in latency.ranges] == [
        (1, 2, {(1,): 256 * ns, (0,): 1024 * ns}),
        (3, None, {(1,): 640 * ns}),
    ]
    assert latency.holds == "holds at least to seq = 4,099 (checked there)"


def test_past_a_spill_the_settled_spill_plan_has_its_own_formula(tmp_path):
    # the MatMul -> Relu -> Add model with 12,800 B on chip. Nothing spills while the Add's a, b
    # and y (192·seq B) fit: to seq = 66. There, DRAM holds W, x and y only: MatMul max(512·seq,
    # 1,024 + 64·seq) ns, Relu 16·seq ns of compute, Add its output's 64·seq ns: 144·seq + 1,024 ns
    # to seq = 2, 592·seq ns from 3. Every node streams all it touches once two [seq, 16] tensors
    # (128·seq B) pass 12,800: from seq = 101, 832·seq ns (the test above)
    from fractions import Fraction

    latency = formulas(projection(residual=True), targets=[onchip_target(tmp_path, 12_800)]).latency[0]
    ns = Fraction(1, 10**9)
    assert [(r.start, r.end, r.polynomial) for r in latency.ranges] == [
        (1, 2, {(1,): 144 * ns, (0,): 1024 * ns}),
        (3, 66, {(1,): 592 * ns}),
    ]
    assert latency.holds == "holds to seq = 66; from 67 on activations spill off chip"
    assert [(r.start, r.end, r.polynomial) for r in latency.beyond.ranges] == [(101, None, {(1,): 832 * ns})]
    from onnxroof.symbolic.latency_formulas import latency_lines

    assert "past it, once the spill plan settles:" in "\n".join(latency_lines(latency))


def test_progress_hears_each_step(tmp_path):
    steps: list[str] = []
    formulas(attention_like(), progress=steps.append, targets=[slow_target(tmp_path)])
    assert steps[0] == "fitting formulas in batch, seq: 17 analyses"  # 4 x 4 and the check
    assert "checking the formulas past the fitted values" in steps and steps[-1] == "the latency formula on test"


def test_whole_waves_of_tiles_leave_a_lower_bound_formula(tmp_path):
    # x [seq, 16] x W [16, 16]: 512·seq FLOPs at 1 GFLOP/s. One unit of 64 x 8 tiles on the fp32 roof:
    # the output's seq x 16 fills seq / (64·ceil(seq / 64)) of its tiles, a step function of seq, so
    # the formula takes the kernel at the full roof, 512 ns·seq, and says it is a lower bound: at
    # seq = 100, the placement takes 51,200 FLOPs / (1e9 x 100/128) = 65.536 µs, the formula 51.2 µs.
    from conftest import target_text

    import onnxroof
    from onnxroof.symbolic.latency_formulas import latency_lines

    figure = 'tag = "estimate"\nsource = "hand"'
    tiles = (
        f'[parallel]\nkind = "tiles"\n[parallel.units]\nvalue = 1\n{figure}\n'
        f"[parallel.tile_rows.fp32]\nvalue = 64\n{figure}\n[parallel.tile_cols.fp32]\nvalue = 8\n{figure}\n"
    )
    path = tmp_path / "tiles.toml"
    path.write_text(target_text({"peak_ops_per_s.fp32": 1e9, "dram.bandwidth_bytes_per_s": 1e18}, tiles))
    latency = formulas(matmul_16(["seq"]), targets=[str(path)]).latency[0]
    assert latency.refuted is None and latency.waves_left_out == ["/proj/MatMul"]
    assert latency.seconds({"seq": 100}) == pytest.approx(51.2e-6, rel=1e-6)
    placed = onnxroof.analyze(matmul_16(["seq"]), dims={"seq": 100}, targets=[str(path)]).targets[0]
    assert placed.latency_s == pytest.approx(65.536e-6, rel=1e-6)
    text = " ".join(" ".join(latency_lines(latency)).split())  # the line is wrapped to the terminal
    assert "at least this: 1 kernel(s) fill a share of the parallel units" in text and "seq 1 on: 512 ns·seq" in text
    assert latency.to_dict()["kind"] == "bound"


def erf_16(shape):
    """x [..., 16] -> Erf -> y: 16 FLOPs per row (one per element), x and y 64 B per row."""
    return make_model(
        [helper.make_node("Erf", ["x"], ["y"], name="/act/Erf")], [("x", F32, shape + [D])], [("y", F32, shape + [D])]
    )


@pytest.mark.parametrize(
    "erf, polynomial_ns, bound",
    [
        # per row: compute 16 ns at the roofline, DRAM 128 ns (x in, y out), on chip 0.128 ns. The class
        # at 0.5 takes DRAM to 256 ns; Erf at 1/8 takes compute to 128 ns: DRAM-bound, 256·seq ns
        ("0.125", 256, "DRAM-bound throughout"),
        # Erf at 1/32: compute 512 ns, over DRAM's 256: compute-bound, 512·seq ns (figures exact in binary)
        ("0.03125", 512, "compute-bound throughout"),
    ],
)
def test_a_kernel_s_op_figure_gives_an_exact_latency_formula(tmp_path, erf, polynomial_ns, bound):
    from fractions import Fraction

    import onnxroof
    from onnxroof.symbolic.latency_formulas import bound_text

    extra = f'[efficiency.elementwise]\nvalue = 0.5\ntag = "estimate"\nsource = "hand"\nby_op = {{ Erf = {erf} }}\n'
    target = onchip_target(tmp_path, 1 << 30, extra)
    latency = formulas(erf_16(["seq"]), targets=[target]).latency[0]
    assert latency.refuted is None
    assert [(r.start, r.end, r.polynomial) for r in latency.ranges] == [
        (1, None, {(1,): Fraction(polynomial_ns, 10**9)})
    ]
    assert bound_text(latency.groups[0], ["seq"]) == bound
    assert latency.seconds({"seq": 100}) == pytest.approx(
        onnxroof.analyze(erf_16(["seq"]), dims={"seq": 100}, targets=[target]).targets[0].latency_s
    )


def test_a_kernel_whose_op_figure_comes_and_goes_with_its_class_is_refused(tmp_path):
    # matmul_16: a gemv to seq = 7, depthwise from 8 (see above); a figure for MatMul in gemv
    # kernels only applies at some of the fitted values: no formula, and the reason says why
    from conftest import target_text

    extra = (
        '[efficiency.gemv]\nvalue = 0.5\ntag = "estimate"\nsource = "hand"\nby_op = { MatMul = 0.25 }\n'
        '[efficiency.depthwise]\nvalue = 0.5\ntag = "estimate"\nsource = "hand"\n'
    )
    path = tmp_path / "eff.toml"
    path.write_text(target_text({"peak_ops_per_s.fp32": 1e9, "dram.bandwidth_bytes_per_s": 1e9}, extra))
    latency = formulas(matmul_16(["seq"]), targets=[str(path)]).latency[0]
    assert latency.refuted == "kernel /proj/MatMul: its by_op and class efficiencies change with the dims"


def self_scores(shape):
    """x [seq, 64] · xᵀ [64, seq] -> s [seq, seq]: activation by activation (no weights: never a
    gemv), 64 multiply-adds per output (a gemm), seq output rows; 2·64·seq² FLOPs."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0], name="/t/Transpose"),
        helper.make_node("MatMul", ["x", "xt"], ["s"], name="/scores/MatMul"),
    ]
    return make_model(nodes, [("x", F32, shape + [64])], [("s", F32, shape + shape)])


def rows_target(tmp_path, points: str) -> str:
    from conftest import target_text

    path = tmp_path / "rows.toml"
    extra = f'[efficiency.gemm]\nvalue = 0.9\ntag = "estimate"\nsource = "hand"\nby_rows = {points}\n'
    path.write_text(target_text({"peak_ops_per_s.fp32": 1e9, "dram.bandwidth_bytes_per_s": 1e9}, extra))
    return str(path)


def test_a_kernel_whose_rows_move_it_along_a_by_rows_curve_is_refused(tmp_path):
    # the scores' rows are seq: 2, 3, 5, 7 and 11 give fractions from 0.5 to 1.0 along the curve,
    # a curve in log(seq): no polynomial, and the reason says so
    latency = formulas(self_scores(["seq"]), targets=[rows_target(tmp_path, "[[2, 0.5], [8, 1.0]]")]).latency[0]
    assert latency.refuted == (
        "kernel /scores/MatMul's efficiency follows its output rows (2 to 11 at the fitted "
        "values) along efficiency.gemm.by_rows, a curve in log(rows): no polynomial in the dims"
    )


def test_a_kernel_held_at_a_by_rows_point_has_a_formula_that_stops_where_its_rows_move(tmp_path):
    # seq 2 to 11 are all below the first point (16 rows): the scores run at 0.5 throughout, an
    # exact formula; from seq = 17 the rows move along the curve, and the formula says it stops there
    import onnxroof

    target = rows_target(tmp_path, "[[16, 0.5], [256, 1.0]]")
    latency = formulas(self_scores(["seq"]), targets=[target]).latency[0]
    assert latency.refuted is None and latency.holds_to == 16
    assert "from 17 on kernel /scores/MatMul's efficiency follows its output rows (a by_rows curve)" in latency.holds
    for seq in (5, 16):
        placed = onnxroof.analyze(self_scores(["seq"]), dims={"seq": seq}, targets=[target]).targets[0]
        assert latency.seconds({"seq": seq}) == pytest.approx(placed.latency_s, rel=1e-12)
