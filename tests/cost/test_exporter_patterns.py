"""Patterns other exporters write, each counted by hand (issue 16): parameters are the stored
roots (cost-model.md section 3), digit-string dims are fixed dims, zero-length dims work."""

from __future__ import annotations

import numpy as np
from conftest import make_model, zeros
from onnx import TensorProto, helper, numpy_helper

import onnxroof
from onnxroof.cli import app as cli

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def test_gather_over_a_constant_index_range_counts_the_stored_table():
    # GPT-2's position table: wpe [1024, 768] read by a Gather over a constant index [0..127],
    # all folded; the gathered rows [128, 768] are added to the token embeddings
    nodes = [
        helper.make_node("Gather", ["wpe", "positions"], ["pos"]),
        helper.make_node("Add", ["tokens", "pos"], ["y"]),
    ]
    model = make_model(
        nodes,
        [("tokens", F32, [128, 768])],
        [("y", F32, [128, 768])],
        [("wpe", zeros(1024, 768)), ("positions", np.arange(128, dtype=np.int64))],
    )
    analysis = onnxroof.analyze(model)
    # the table is what the file stores; the index tensor is a setting (Gather's indices)
    assert analysis.totals.params == 1024 * 768
    assert analysis.totals.param_bytes == 1024 * 768 * 4
    add = analysis.nodes[-1]
    assert add.params == 1024 * 768
    assert add.weight_bytes == 128 * 768 * 4  # what the Add reads per run: the folded rows
    assert analysis.tensors["wpe"].kind == "parameter" and analysis.tensors["pos"].kind == "constant"


def test_constant_broadcast_add_of_two_stored_tensors_counts_both_once():
    # Swin: a relative-position bias [3, 49, 49] and a shift mask [4, 1, 49, 49] meet in a
    # constant broadcast Add -> [4, 3, 49, 49], which the attention scores then read
    nodes = [
        helper.make_node("Add", ["bias", "mask"], ["bias_and_mask"]),
        helper.make_node("Add", ["scores", "bias_and_mask"], ["y"]),
    ]
    model = make_model(
        nodes,
        [("scores", F32, [4, 3, 49, 49])],
        [("y", F32, [4, 3, 49, 49])],
        [("bias", zeros(3, 49, 49)), ("mask", zeros(4, 1, 49, 49))],
    )
    analysis = onnxroof.analyze(model)
    assert analysis.totals.params == 3 * 49 * 49 + 4 * 49 * 49  # 7,203 + 9,604, not 28,812
    assert analysis.nodes[0].status == "constant" and analysis.nodes[0].params == 0


def test_weights_rebuilt_in_both_if_branches_count_the_stored_weights_once():
    # an LSTM-style weight [8, 16] re-ordered by Slice + Concat inside each branch of an If
    def branch(name):
        return helper.make_graph(
            [
                helper.make_node("Slice", ["w", "s0", "s1", "axis"], [f"{name}_a"]),
                helper.make_node("Slice", ["w", "s1", "s2", "axis"], [f"{name}_b"]),
                helper.make_node("Concat", [f"{name}_b", f"{name}_a"], [f"{name}_w"], axis=1),
                helper.make_node("MatMul", ["x", f"{name}_w"], [f"{name}_y"]),
            ],
            name,
            [],
            [helper.make_tensor_value_info(f"{name}_y", F32, [2, 16])],
        )

    node = helper.make_node("If", ["cond"], ["y"], then_branch=branch("then"), else_branch=branch("else"))
    model = make_model(
        [node],
        [("cond", BOOL, []), ("x", F32, [2, 8])],
        [("y", F32, [2, 16])],
        [
            ("w", zeros(8, 16)),
            ("s0", np.array([0], np.int64)),
            ("s1", np.array([8], np.int64)),
            ("s2", np.array([16], np.int64)),
            ("axis", np.array([1], np.int64)),
        ],
    )
    analysis = onnxroof.analyze(model)
    assert analysis.totals.params == 8 * 16  # the stored weight, once; no branch's rebuilt copy
    assert analysis.nodes[0].macs == 2 * 8 * 16


def test_tensor_behind_a_folded_chain_and_read_directly_is_one_parameter():
    # a tied embedding: the table read by a Gather of token ids and, transposed, by the LM head
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["h"]),
        helper.make_node("Transpose", ["table"], ["table_t"], perm=[1, 0]),
        helper.make_node("MatMul", ["h", "table_t"], ["logits"]),
    ]
    model = make_model(nodes, [("ids", I64, [1, 5])], [("logits", F32, [1, 5, 100])], [("table", zeros(100, 16))])
    analysis = onnxroof.analyze(model)
    assert analysis.totals.params == 100 * 16
    assert analysis.nodes[-1].macs == 5 * 16 * 100


def test_constant_of_shape_output_is_a_stored_root():
    # a mask filled by ConstantOfShape from a constant shape [4, 4], then read through Mul by a constant
    fill = helper.make_tensor("one", F32, [1], [1.0])
    nodes = [
        helper.make_node("ConstantOfShape", ["shape"], ["filled"], value=fill),
        helper.make_node("Mul", ["filled", "half"], ["mask"]),
        helper.make_node("Add", ["x", "mask"], ["y"]),
    ]
    model = make_model(
        nodes,
        [("x", F32, [4, 4])],
        [("y", F32, [4, 4])],
        [("shape", np.array([4, 4], np.int64)), ("half", np.array(0.5, np.float32))],
    )
    analysis = onnxroof.analyze(model)
    assert analysis.totals.params == 16 + 1  # the fill and the scalar it is scaled by


def decoder_step(past_dim, head_dim="64"):
    """Keys of one attention head: past [1, past, 64] ++ new [1, seq, 64] along axis 1, then
    q · k^T -> scores [1, seq, past + seq]; dims written as exporters write them."""
    nodes = [
        helper.make_node("Concat", ["past", "k_new"], ["present"], axis=1),
        helper.make_node("Transpose", ["present"], ["k_t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "k_t"], ["scores"]),
    ]
    return make_model(
        nodes,
        [
            ("q", F32, [1, "seq", head_dim]),
            ("k_new", F32, [1, "seq", head_dim]),
            ("past", F32, [1, past_dim, head_dim]),
        ],
        [("scores", F32, [1, "seq", None]), ("present", F32, [1, None, head_dim])],
    )


def test_digit_string_dim_is_that_fixed_value():
    analysis = onnxroof.analyze(decoder_step("past"), dims={"seq": 3, "past": 5})
    assert analysis.complete
    assert [info.shape for info in analysis.inputs] == [(1, 3, 64), (1, 3, 64), (1, 5, 64)]
    assert analysis.totals.macs == 3 * 64 * 8  # 3 queries x 8 keys x 64
    # "64" is never an unbound symbol, nor suggested as a flag
    unbound = onnxroof.analyze(decoder_step("past"), dims={"seq": 3}, partial=True)
    assert [(d.input_name, d.symbol) for d in unbound.unresolved_dims] == [("past", "past")]
    assert "64" not in " ".join(unbound.warnings)


def test_kv_input_bound_to_length_zero_costs_a_prefill():
    analysis = onnxroof.analyze(decoder_step("past_sequence"), dims={"seq": 4, "past_sequence": 0})
    assert analysis.complete
    assert analysis.totals.macs == 4 * 64 * 4  # 4 queries x 4 keys (the past is empty) x 64
    assert analysis.tensors["past"].bytes == 0 and analysis.tensors["present"].bytes == 4 * 64 * 4


def test_zero_dims_through_the_command_line(tmp_path, capsys):
    import json

    path = tmp_path / "step.onnx"
    path.write_bytes(decoder_step("past_sequence").SerializeToString())
    code = cli.main(["summary", str(path), "--dim", "seq=4", "--dim", "past_sequence=0", "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["totals"]["macs"] == 4 * 64 * 4
    code = cli.main(["summary", str(path), "--input-shape", "past:1,0,64", "--dim", "seq=4", "--format", "json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["totals"]["macs"] == 4 * 64 * 4
    code = cli.main(["summary", str(path), "--dim", "past_sequence=-1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "non-negative integer" in err


def sample_rate_if_model():
    """Voice-activity style: the whole network inside an If on the sample rate. Each branch pads
    its input by a constant inside the branch, reshapes it by a computed shape and runs a MatMul:
    the shapes inside are known only once the partial evaluator runs in the branch."""

    def branch(name, pad, width):
        weight = numpy_helper.from_array(zeros(width, 8), f"{name}_w")
        pads = numpy_helper.from_array(np.array([0, pad, 0, pad], np.int64), f"{name}_pads")
        return helper.make_graph(
            [
                helper.make_node("Pad", ["audio", f"{name}_pads"], [f"{name}_padded"]),
                helper.make_node("Shape", [f"{name}_padded"], [f"{name}_shape"]),
                helper.make_node("Gather", [f"{name}_shape", "one"], [f"{name}_length"], axis=0),
                helper.make_node("Div", [f"{name}_length", f"{name}_width"], [f"{name}_frames"]),
                helper.make_node("Concat", ["minus_one", f"{name}_width_1d"], [f"{name}_frame_shape"], axis=0),
                helper.make_node("Reshape", [f"{name}_padded", f"{name}_frame_shape"], [f"{name}_framed"]),
                helper.make_node("MatMul", [f"{name}_framed", f"{name}_w"], [f"{name}_y"]),
            ],
            name,
            [],
            [helper.make_tensor_value_info(f"{name}_y", F32, [None, 8])],
            [
                weight,
                pads,
                numpy_helper.from_array(np.array(width, np.int64), f"{name}_width"),
                numpy_helper.from_array(np.array([width], np.int64), f"{name}_width_1d"),
            ],
        )

    nodes = [
        helper.make_node("Equal", ["sr", "sixteen_k"], ["is_16k"]),
        helper.make_node(
            "If", ["is_16k"], ["y"], then_branch=branch("wide", 32, 64), else_branch=branch("narrow", 16, 32)
        ),
    ]
    return make_model(
        nodes,
        [("audio", F32, ["batch", "samples"]), ("sr", I64, [])],
        [("y", F32, [None, 8])],
        [
            ("sixteen_k", np.array(16000, np.int64)),
            ("one", np.array(1, np.int64)),
            ("minus_one", np.array([-1], np.int64)),
        ],
    )


def test_if_on_a_known_condition_costs_the_taken_branch_with_shapes_evaluated_inside():
    # 16 kHz: 512 samples + 2 x 32 pad = 576 = 9 frames of 64; MatMul 9 x 64 x 8
    analysis = onnxroof.analyze(sample_rate_if_model(), dims={"batch": 1, "samples": 512}, values={"sr": 16000})
    record = analysis.nodes[-1]
    assert record.macs == 9 * 64 * 8 and "counted then" in record.formula
    assert analysis.complete
    # 8 kHz: 512 + 2 x 16 = 544 = 17 frames of 32; MatMul 17 x 32 x 8
    analysis = onnxroof.analyze(sample_rate_if_model(), dims={"batch": 1, "samples": 512}, values=["sr=8000"])
    assert analysis.nodes[-1].macs == 17 * 32 * 8 and "counted else" in analysis.nodes[-1].formula
    # both branches' weights are stored: 64 x 8 + 32 x 8; the pads, widths and the 16000 compared
    # with sr feed shape arithmetic only (settings), in the branch not taken too
    assert analysis.totals.params == 64 * 8 + 32 * 8


def test_if_with_an_unknown_condition_counts_the_costlier_branch_both_evaluated():
    analysis = onnxroof.analyze(sample_rate_if_model(), dims={"batch": 1, "samples": 512})
    record = analysis.nodes[-1]
    # then 9 x 64 x 8 = 4,608 MACs, else 17 x 32 x 8 = 4,352: the costlier is then
    assert record.macs == 9 * 64 * 8 and "costlier (then)" in record.formula
    assert record.subgraphs["else_branch"].macs == 17 * 32 * 8


def test_if_condition_known_from_a_bound_input_dim():
    # If (Shape(x)[0] == 1): then MatMul x [b, 8] x [8, 4], else MatMul x [b, 8] x [8, 16]
    def branch(name, width):
        return helper.make_graph(
            [helper.make_node("MatMul", ["x", f"{name}_w"], [f"{name}_y"])],
            name,
            [],
            [helper.make_tensor_value_info(f"{name}_y", F32, [None, width])],
            [numpy_helper.from_array(zeros(8, width), f"{name}_w")],
        )

    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Equal", ["batch", "one"], ["single"]),
        helper.make_node("If", ["single"], ["y"], then_branch=branch("one_row", 4), else_branch=branch("rows", 16)),
    ]
    model = make_model(
        nodes,
        [("x", F32, ["b", 8])],
        [("y", F32, [None, None])],
        [("zero", np.array(0, np.int64)), ("one", np.array(1, np.int64))],
    )
    assert onnxroof.analyze(model, dims={"b": 1}).nodes[-1].macs == 1 * 8 * 4
    assert onnxroof.analyze(model, dims={"b": 3}).nodes[-1].macs == 3 * 8 * 16


def test_bad_values_get_one_line_errors(tmp_path, capsys):
    path = tmp_path / "vad.onnx"
    path.write_bytes(sample_rate_if_model().SerializeToString())
    for flag, fragment in (
        ("sr", "expected NAME=V1,V2"),
        ("rate=16000", "no input 'rate'"),
        ("sr=1,2", "2 were given"),
    ):
        code = cli.main(["summary", str(path), "--dim", "batch=1", "--dim", "samples=512", "--value", flag])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and fragment in err, err


def test_minus_one_declared_dim_is_an_unknown_dim_to_bind():
    # Paddle2ONNX writes unknown dims as -1: [-1, 8] is bound like any free dim
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [("x", F32, [-1, 8])],
        [("y", F32, [-1, 4])],
        [("w", zeros(8, 4))],
    )
    path_model = model.SerializeToString()
    unbound = onnxroof.analyze(onnx_model(path_model), partial=True)
    assert [(d.input_name, d.axis) for d in unbound.unresolved_dims] == [("x", 0)]
    bound = onnxroof.analyze(onnx_model(path_model), input_shapes={"x": [5, 8]})
    assert bound.complete and bound.totals.macs == 5 * 8 * 4


def onnx_model(data: bytes):
    import onnx

    return onnx.load_from_string(data)


def test_matmul_nbits_counts_its_packed_4bit_zero_points_one_per_block():
    # K 64, N 8, block 32: B uint8 [8, 2, 16] holds 512 weights; 16 float scales; 16 zero points
    # packed two per byte in a uint8 [8]: 512 + 16 + 16 parameters
    node = helper.make_node(
        "MatMulNBits",
        ["a", "b", "scales", "zero_points"],
        ["y"],
        domain="com.microsoft",
        K=64,
        N=8,
        bits=4,
        block_size=32,
    )
    model = make_model(
        [node],
        [("a", F32, [1, 64])],
        [("y", F32, [1, 8])],
        [("b", zeros(8, 2, 16, dtype=np.uint8)), ("scales", zeros(16)), ("zero_points", zeros(8, dtype=np.uint8))],
    )
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    analysis = onnxroof.analyze(model)
    assert analysis.totals.macs == 64 * 8
    assert analysis.totals.params == 512 + 16 + 16
    assert analysis.totals.param_bytes == 256 + 16 * 4 + 8


def test_given_values_are_stated_with_the_inputs(tmp_path, capsys):
    import json

    path = tmp_path / "vad.onnx"
    path.write_bytes(sample_rate_if_model().SerializeToString())
    flags = [str(path), "--dim", "batch=1", "--dim", "samples=512", "--value", "sr=16000"]
    assert cli.main(["summary", *flags]) == 0
    assert "sr scalar int64 = 16000" in capsys.readouterr().out
    assert cli.main(["summary", *flags, "--format", "json"]) == 0
    inputs = json.loads(capsys.readouterr().out)["model"]["inputs"]
    assert [i.get("value") for i in inputs] == [None, [16000]]


def routed_experts(
    experts=4, tokens=8, top_k=2, hidden=8, width=4, fixed_by_reshape=True, deeper_last=False, classes=None
):
    """A Mixture-of-Experts layer as exporters write it: TopK picks top_k of the experts per token;
    expert e gathers the rows routed to it (NonZero of idx == e: a data-dependent count) and runs
    its MatMul [rows, hidden] x [hidden, width] (``deeper_last``: the last expert a second one,
    [rows, width] x [width, width]); the experts' outputs are concatenated, and a Reshape to
    [tokens, top_k, width] fixes the Concat's size: the counts add up to tokens x top_k. The router
    scores ``classes`` choices (default: one per expert)."""
    nodes = [helper.make_node("TopK", ["router", "k"], ["scores", "idx"], axis=1)]
    weights = [("deeper", zeros(width, width))]
    for e in range(experts):
        last = deeper_last and e == experts - 1
        nodes += [
            helper.make_node("Equal", ["idx", f"e{e}"], [f"mask{e}"]),
            helper.make_node("NonZero", [f"mask{e}"], [f"where{e}"]),
            helper.make_node("Gather", [f"where{e}", "zero"], [f"token{e}"], axis=0),
            helper.make_node("Gather", ["x", f"token{e}"], [f"rows{e}"], axis=0),
            helper.make_node("MatMul", [f"rows{e}", f"w{e}"], [f"h{e}" if last else f"y{e}"]),
            *([helper.make_node("MatMul", [f"h{e}", "deeper"], [f"y{e}"])] if last else []),
        ]
        weights += [(f"e{e}", np.array(e, np.int64)), (f"w{e}", zeros(hidden, width))]
    nodes.append(helper.make_node("Concat", [f"y{e}" for e in range(experts)], ["y"], axis=0))
    if fixed_by_reshape:
        nodes.append(helper.make_node("Reshape", ["y", "shape"], ["out"]))
    return make_model(
        nodes,
        [("x", F32, [tokens, hidden]), ("router", F32, [tokens, classes or experts])],
        [("out" if fixed_by_reshape else "y", F32, None)],
        [
            ("k", np.array([top_k], np.int64)),
            ("zero", np.array(0, np.int64)),
            ("shape", np.array([tokens, top_k, width], np.int64)),
            *weights,
        ],
    )


def test_four_experts_whose_rows_sum_to_a_known_concat_are_costed_exactly():
    analysis = onnxroof.analyze(routed_experts())
    # every token runs top_k = 2 experts: 8 x 2 = 16 rows in all, each row 8 x 4 MACs
    assert analysis.totals.macs == 8 * 2 * 8 * 4
    assert analysis.complete
    matmuls = [r for r in analysis.nodes if r.op_type == "MatMul"]
    assert all("data-dependent split, total exact" in r.formula for r in matmuls)
    assert any("16 rows in 4 pieces" in w and "exact" in w for w in analysis.warnings)


def test_pieces_of_a_split_by_computed_sizes_are_costed_with_its_total():
    # x [12, 8] split along rows by sizes the graph computes, each piece x [8, 4], concatenated
    pieces = [f"piece{i}" for i in range(3)]
    nodes = [
        helper.make_node("Cast", ["counts"], ["sizes"], to=TensorProto.INT64),
        helper.make_node("Split", ["x", "sizes"], pieces, axis=0),
        *[helper.make_node("MatMul", [p, "w"], [f"y{i}"]) for i, p in enumerate(pieces)],
        helper.make_node("Concat", [f"y{i}" for i in range(3)], ["y"], axis=0),
        helper.make_node("Relu", ["y"], ["out"]),
    ]
    model = make_model(nodes, [("x", F32, [12, 8]), ("counts", F32, [3])], [("out", F32, None)], [("w", zeros(8, 4))])
    analysis = onnxroof.analyze(model)
    assert analysis.complete
    assert analysis.totals.macs == 12 * 8 * 4
    assert analysis.nodes[-1].flops == 12 * 4  # the Relu after the Concat sees all 12 rows


def test_experts_that_differ_per_row_are_an_estimate():
    # the last expert runs a second MatMul: moving a row to it changes the total, so it is not exact
    analysis = onnxroof.analyze(routed_experts(deeper_last=True))
    matmuls = [r for r in analysis.nodes if r.op_type == "MatMul"]
    assert all("estimate" in r.formula for r in matmuls)
    # 16 rows split evenly, 4 per expert: 4 experts x 4 x 8 x 4, and 4 x 4 x 4 for the second MatMul
    assert analysis.totals.macs == 4 * 4 * 8 * 4 + 4 * 4 * 4


def test_experts_covering_every_routing_class_sum_to_tokens_times_top_k():
    # no Reshape fixes the Concat, but each of the 8 x 2 TopK indices is one of the 4 experts'
    # classes, and the experts' masks are idx == 0, 1, 2, 3: their rows add up to 16
    analysis = onnxroof.analyze(routed_experts(fixed_by_reshape=False))
    assert analysis.complete and analysis.totals.macs == 8 * 2 * 8 * 4


def test_data_dependent_rows_with_no_known_total_are_bounded_never_zero():
    # the router scores 5 classes and only 4 have an expert: the rows add up to at most 16
    analysis = onnxroof.analyze(routed_experts(fixed_by_reshape=False, classes=5))
    matmuls = [r for r in analysis.nodes if r.op_type == "MatMul"]
    assert all(r.status == "data_dependent" and not r.counted for r in matmuls)
    # NonZero over idx [8, 2] finds at most 16 rows: at most 16 x 8 x 4 MACs per expert
    assert all(f"at most {16 * 8 * 4:,} MACs" in r.reason for r in matmuls)
    assert not analysis.complete and analysis.totals.not_counted["MatMul"] == 4


def test_gather_block_quantized_counts_its_packed_zero_points_and_reads_its_rows_of_them():
    # table uint8 [100, 16] = 32 4-bit values per row, blocks of 16: scales [100, 2] float32 and
    # zero points packed two per byte, uint8 [100, 1]; 3 ids gather 3 rows
    node = helper.make_node(
        "GatherBlockQuantized",
        ["table", "ids", "scales", "zero_points"],
        ["y"],
        domain="com.microsoft",
        gather_axis=0,
        quantize_axis=1,
        block_size=16,
        bits=4,
    )
    model = make_model(
        [node],
        [("ids", I64, [3])],
        [("y", F32, None)],
        [
            ("table", zeros(100, 16, dtype=np.uint8)),
            ("scales", zeros(100, 2)),
            ("zero_points", zeros(100, 1, dtype=np.uint8)),
        ],
    )
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    (record,) = onnxroof.analyze(model).nodes
    assert record.params == 100 * 32 + 100 * 2 + 100 * 2  # values, scales, zero points (2 per byte)
    assert record.weight_bytes == 3 * 16 + 3 * 2 * 4 + 3 * 1  # the 3 rows of each
