"""Dynamic dims (issue 21, item 2): a batch dim nobody gave is 1 and every output says so; any
other input dim left without a value exits 2 with the flags that bind it; --partial keeps the
partial analysis. MAC counts are worked out by hand in the comments."""

from __future__ import annotations

import json

import pytest
from conftest import make_model, run, zeros
from onnx import TensorProto, helper

from onnxroof import analyze
from onnxroof.core.errors import OptionError, UnboundDims

F32 = TensorProto.FLOAT


def conv_model(batch_dim="N"):
    """x [batch_dim, 3, 8, 8] -> Conv 3x3 pad 1 to 4 channels: 4 x 8 x 8 outputs x 27 MACs = 6,912 per image."""
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    return make_model(
        [node], [("x", F32, [batch_dim, 3, 8, 8])], [("y", F32, [batch_dim, 4, 8, 8])], [("w", zeros(4, 3, 3, 3))]
    )


def sequence_model():
    """x [batch, seq, 8] -> MatMul by 8 x 2: batch x seq x 16 MACs."""
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")
    return make_model(
        [node], [("x", F32, ["batch", "seq", 8])], [("y", F32, ["batch", "seq", 2])], [("w", zeros(8, 2))]
    )


def save(tmp_path, model, name="m"):
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(model.SerializeToString())
    return str(path)


def test_a_named_batch_dim_is_one_and_the_header_says_so(tmp_path, capsys):
    code, out, _ = run(capsys, "summary", save(tmp_path, conv_model()))
    assert code == 0
    assert "assumed: N=1 (a batch dim the inputs leave open; --dim N=N or --batch N to change)" in out
    macs_line = next(line for line in out.splitlines() if line.strip().startswith("MACs"))
    assert macs_line.endswith("(6,912)")


def test_the_batch_assumption_is_in_json_markdown_and_html(tmp_path, capsys):
    model = save(tmp_path, conv_model())
    code, out, _ = run(capsys, "summary", model, "--format", "json")
    document = json.loads(out)
    assert code == 0 and document["assumed_dims"] == {"N": 1} and document["totals"]["macs"] == 6912
    code, out, _ = run(capsys, "summary", model, "--format", "markdown")
    assert "assumed N=1" in out
    page = tmp_path / "r.html"
    code, _, _ = run(capsys, "report", model, "-o", str(page))
    assert code == 0 and "1 (assumed)" in page.read_text(encoding="utf-8")


def test_an_unnamed_leading_axis_is_a_batch_dim_that_batch_sets(tmp_path, capsys):
    # skl2onnx writes [None, 8]: named batch, assumed 1 (16 MACs), --batch 3 gives 3 x 16 = 48
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")
    model = save(tmp_path, make_model([node], [("x", F32, [None, 8])], [("y", F32, [None, 2])], [("w", zeros(8, 2))]))
    code, out, _ = run(capsys, "summary", model, "--format", "json")
    assert code == 0 and json.loads(out)["assumed_dims"] == {"batch": 1} and json.loads(out)["totals"]["macs"] == 16
    code, out, _ = run(capsys, "summary", model, "--batch", "3", "--format", "json")
    assert json.loads(out)["totals"]["macs"] == 48 and json.loads(out)["assumed_dims"] == {}


def test_any_other_unbound_dim_exits_2_with_the_flags_and_writes_nothing(tmp_path, capsys):
    model = save(tmp_path, sequence_model())
    code, out, err = run(capsys, "summary", model)
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "input dims without a value: seq (x axis 1) (batch=1 assumed); add: --dim seq=N" in line
    assert "--partial" in line
    page = tmp_path / "never.html"
    code, _, _ = run(capsys, "report", model, "-o", str(page))
    assert code == 2 and not page.exists()


def test_the_pasted_flag_runs(tmp_path, capsys):
    # seq=5: 1 x 5 x 16 = 80 MACs
    code, out, _ = run(capsys, "summary", save(tmp_path, sequence_model()), "--dim", "seq=5", "--format", "json")
    assert code == 0 and json.loads(out)["totals"]["macs"] == 80


def test_partial_with_nothing_countable_exits_2_with_the_reason(tmp_path, capsys):
    # every node depends on the dim left open: a run that counted nothing is no success (issue 31)
    code, out, err = run(capsys, "summary", save(tmp_path, sequence_model()), "--partial", "--format", "json")
    assert (code, out) == (2, "")
    assert "nothing could be counted: input dims not bound" in err and "--dim seq=1" in err


def test_compare_binds_a_dim_only_the_models_that_have_it(tmp_path, capsys):
    code, out, _ = run(
        capsys,
        "compare",
        save(tmp_path, sequence_model(), "a"),
        save(tmp_path, conv_model(), "b"),
        "--dim",
        "seq=5",
        "--format",
        "json",
    )
    assert code == 0
    assert [m["totals"]["mac_flops"] for m in json.loads(out)["models"]] == [2 * 80, 2 * 6912]


def test_the_api_names_its_own_arguments():
    with pytest.raises(UnboundDims) as caught:
        analyze(sequence_model())
    message = str(caught.value)
    assert "analyze(..., dims={'seq': N})" in message and "partial=True" in message and "--dim" not in message
    assert analyze(sequence_model(), partial=True).totals.macs == 0
    assert analyze(sequence_model(), dims={"seq": 5}).totals.macs == 80


def test_a_question_mark_names_no_dim(tmp_path, capsys):
    # Paddle2ONNX writes "?" for the batch and each image axis: they are not one shared dim. The
    # leading one is the batch (1), the others each need a value: --input-shape, not --dim ?=N
    model = save(tmp_path, conv_model("?"))
    code, out, _ = run(capsys, "summary", model, "--format", "json")
    assert code == 0 and json.loads(out)["totals"]["macs"] == 6912
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    image = save(
        tmp_path, make_model([node], [("x", F32, ["?", 3, "?", "?"])], [("y", F32, ["?", 3, "?", "?"])]), "img"
    )
    code, _, err = run(capsys, "summary", image)
    assert code == 2 and "x axis 2, x axis 3 (batch=1 assumed); add: --input-shape x:1,3,1,1" in err


# ---------------------------------------------------------------------------------------------
# Dims written as expressions (issue 31, item 3): optimum writes attention_mask as
# [batch_size, "past_sequence_length + sequence_length"]


def masked_step():
    """x [batch, sequence_length, 8] -> Relu; mask [batch, "past_sequence_length + sequence_length"] -> Cast."""
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Cast", ["mask"], ["m"], to=TensorProto.FLOAT)]
    return make_model(
        nodes,
        [
            ("x", TensorProto.FLOAT, ["batch", "sequence_length", 8]),
            ("mask", TensorProto.INT64, ["batch", "past_sequence_length + sequence_length"]),
        ],
        [("y", TensorProto.FLOAT, None), ("m", TensorProto.FLOAT, None)],
    )


def test_a_dim_written_as_an_expression_is_its_names_value():
    # past 127 + 1 new token: the mask is 128 wide, and the Cast reads 128 int64s and writes 128 floats
    analysis = analyze(masked_step(), dims={"past_sequence_length": 127, "sequence_length": 1})
    assert [i.shape for i in analysis.inputs] == [(1, 1, 8), (1, 128)] and analysis.complete
    cast = analysis.find_node(analysis.nodes[1].name)
    assert (cast.input_bytes, cast.output_bytes) == (128 * 8, 128 * 4)


def test_an_expression_asks_for_its_unbound_names_never_for_itself(capsys):
    with pytest.raises(UnboundDims) as raised:
        analyze(masked_step(), dims={"sequence_length": 1})
    message = str(raised.value)
    assert "past_sequence_length (mask axis 1)" in message and "dims={'past_sequence_length': N})" in message
    with pytest.raises(
        OptionError,
        match=r"a dim written as an expression takes its value from its names; give each "
        r"of them \(past_sequence_length, sequence_length\)",
    ):
        analyze(masked_step(), dims={"past_sequence_length + sequence_length": 128})


def test_an_empty_model_proto_is_refused():
    # issue 32: analyze(onnx.ModelProto()) returned a result of 0 nodes, as if a model were read
    import onnx

    from onnxroof.core.errors import ModelError

    with pytest.raises(ModelError, match="the ModelProto is empty"):
        analyze(onnx.ModelProto())
