"""Every documented flag changes what the command line prints the way the README says (issue 18):
each case runs ``onnxroof`` through its entry point and fails when the flag is disconnected.
Expected numbers come from ../shared/docs/cost-model.md (ShallowNet) or are derived in comments."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from conftest import make_model, run
from onnx import TensorProto, helper, numpy_helper

from onnxroof.core.examples import build_example

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
SHALLOWNET_MAC_FLOPS, SHALLOWNET_PARAMS = 2_424_832, 328_586  # cost-model.md section 2


def totals(capsys, *argv) -> dict:
    code, out, err = run(capsys, "summary", *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)["totals"]


@pytest.fixture
def shallownet(tmp_path):
    path = tmp_path / "shallownet.onnx"
    onnx.save(build_example("shallownet"), path)
    return path


def test_dtype_int8_recosts_the_stored_bytes(capsys, shallownet):
    # 328,586 parameters: 4 B each as stored (fp32), 1 B each in int8
    assert totals(capsys, shallownet)["param_bytes"] == 4 * SHALLOWNET_PARAMS
    assert totals(capsys, shallownet, "--dtype", "int8")["param_bytes"] == SHALLOWNET_PARAMS


def test_batch_scales_the_compute_not_the_parameters(capsys, shallownet):
    batched = totals(capsys, shallownet, "--batch", "4")
    assert batched["mac_flops"] == 4 * SHALLOWNET_MAC_FLOPS and batched["params"] == SHALLOWNET_PARAMS


def test_in_place_lets_a_single_consumer_elementwise_op_overwrite_its_input(capsys, tmp_path):
    # x [1, 4] -> Tile -> a [1, 1024] (4 KiB) -> Relu b -> Relu c -> ReduceSum: without --in-place
    # a and b are live together (8,192 B); with it b and c overwrite a, and the peak is step 0's
    # x + a = 16 + 4,096 B
    model = make_model(
        [
            helper.make_node("Tile", ["x", "reps"], ["a"]),
            helper.make_node("Relu", ["a"], ["b"]),
            helper.make_node("Relu", ["b"], ["c"]),
            helper.make_node("ReduceSum", ["c"], ["y"], keepdims=0),
        ],
        [("x", F32, [1, 4])],
        [("y", F32, [])],
        [("reps", np.array([1, 256], np.int64))],
    )
    path = tmp_path / "chain.onnx"
    onnx.save(model, path)

    def peak(*flags):
        code, out, err = run(capsys, "summary", path, "--format", "json", *flags)
        assert code == 0, err
        return json.loads(out)["memory"]["peak_bytes"]

    assert peak() == 8192 and peak("--in-place") == 16 + 4096


def loop_with_a_computed_trip_count():
    """A Loop whose trip count is an input value: its body, MatMul [1, 8] x [8, 8], runs N times."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h", "w"], ["h_next"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", BOOL, []),
            helper.make_tensor_value_info("h", F32, [1, 8]),
        ],
        [helper.make_tensor_value_info("cond_out", BOOL, []), helper.make_tensor_value_info("h_next", F32, [1, 8])],
        [numpy_helper.from_array(np.zeros((8, 8), np.float32), "w")],
    )
    loop = helper.make_node("Loop", ["trips", "cond", "h0"], ["h_final"], body=body)
    return make_model([loop], [("trips", I64, []), ("cond", BOOL, []), ("h0", F32, [1, 8])], [("h_final", F32, [1, 8])])


def test_loop_trips_gives_a_computed_count(capsys, tmp_path):
    path = tmp_path / "loop.onnx"
    onnx.save(loop_with_a_computed_trip_count(), path)
    code, _, err = run(capsys, "summary", path, "--format", "json")  # the count is not in the model: nothing counted
    assert code == 2 and "nothing could be counted" in err and "--loop-trips N" in err
    assert totals(capsys, path, "--loop-trips", "5")["macs"] == 5 * 8 * 8  # 5 x [1, 8] x [8, 8]


def test_quiet_silences_the_warnings(capsys, tmp_path):
    path = tmp_path / "free.onnx"
    onnx.save(
        make_model(
            [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["z"], ["w"])],
            [("x", F32, ["n", 4]), ("z", F32, [2, 4])],
            [("y", F32, ["n", 4]), ("w", F32, [2, 4])],
        ),
        path,
    )
    code, _, err = run(capsys, "summary", path, "--partial")
    assert code == 0 and "warning" in err and "--dim n=1" in err
    code, _, err = run(capsys, "summary", path, "--partial", "-q")
    assert code == 0 and err == ""


def test_diff_budget_on_a_relative_change_is_the_pr_gate(capsys):
    # ShallowNet -> its separable version: MAC-FLOPs fall, so "flops>+5%" holds; the other way round
    # they grow by far more than 5%, and the gate exits 1
    code, _, _ = run(capsys, "diff", "example:shallownet", "example:shallownet-separable", "--fail-if", "flops>+5%")
    assert code == 0
    code, _, err = run(capsys, "diff", "example:shallownet-separable", "example:shallownet", "--fail-if", "flops>+5%")
    assert code == 1 and "flops>+5%" in err


@pytest.mark.parametrize(
    "command",
    [
        ["diff", "example:shallownet", "example:shallownet-separable"],
        ["compare", "example:shallownet", "example:shallownet-separable"],
    ],
)
def test_diff_and_compare_write_html_when_asked(capsys, tmp_path, command):
    path = tmp_path / "page.html"
    code, _, err = run(capsys, *command, "--format", "html", "-o", path)
    assert code == 0, err
    text = path.read_text()
    assert text.lstrip().lower().startswith("<!doctype html") and "shallownet" in text


def test_report_with_a_sweep_writes_one_page_with_every_point(capsys, tmp_path):
    path = tmp_path / "sweep.html"
    code, _, err = run(capsys, "report", "--example", "shallownet", "--sweep", "batch=1,8", "-o", path)
    assert code == 0, err
    text = path.read_text()
    # the two points' FLOPs: 2,424,832 MAC-FLOPs + 32,768 Relu + 5 x 10 Softmax = 2,457,650 at
    # batch 1, and 8 times that at batch 8
    assert text.lstrip().lower().startswith("<!doctype html")
    assert "2,457,650 FLOPs" in text and f"{8 * 2_457_650:,} FLOPs" in text


def test_ops_lists_every_rule_with_its_formula(capsys):
    code, out, _ = run(capsys, "ops")
    assert code == 0
    # the Conv rule's formula as cost-model.md section 2 states it
    assert "Conv" in out and "Co" in out and "MatMulNBits" in out and "GroupQueryAttention" in out


def test_a_rule_that_raises_is_an_internal_error_exit_3(capsys, tmp_path, monkeypatch):
    from onnxroof.ops import base as registry

    monkeypatch.setattr(registry, "COST_RULES", dict(registry.COST_RULES))  # the plugin's rule goes with this test
    plugin = tmp_path / "broken_rule.py"
    plugin.write_text(
        "from onnxroof.ops import register\n\n"
        "def relu(node):\n    raise RuntimeError('this rule is broken')\n\n"
        "register('Relu', relu, family='elementwise')\n"
    )
    code, out, err = run(capsys, "summary", "--example", "shallownet", "--plugin", plugin)
    assert code == 3 and "internal error" in err and out == ""


def test_output_file_is_whole_or_untouched_when_rendering_fails_midway(capsys, tmp_path, monkeypatch):
    import onnxroof.cli.app as cli

    path = tmp_path / "report.html"
    path.write_text("the good report from before")

    def half_a_page(analysis):
        yield "<!DOCTYPE html><html>"
        raise RuntimeError("renderer broke halfway")

    monkeypatch.setattr(cli, "render_html", half_a_page, raising=False)
    import onnxroof.report.html.pages as html

    monkeypatch.setattr(html, "render_html", half_a_page)
    code, _, err = run(capsys, "report", "--example", "shallownet", "-o", path)
    assert code == 3 and "internal error" in err
    assert path.read_text() == "the good report from before"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left
