"""Loading never reads weight data: models with absent external data files still analyse."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import make_model
from onnx import TensorProto, helper
from onnx.external_data_helper import convert_model_to_external_data

import onnxroof
from onnxroof.core.errors import ModelError
from onnxroof.frontend import load


def test_external_data_absent_still_counts_params(tmp_path):
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [("x", TensorProto.FLOAT, [2, 300])],
        [("y", TensorProto.FLOAT, [2, 200])],
        [("w", np.ones((300, 200), np.float32))],
    )
    convert_model_to_external_data(model, all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    (tmp_path / "weights.bin").unlink()
    result = onnxroof.analyze(path)
    assert result.totals.params == 300 * 200
    assert result.totals.param_bytes == 300 * 200 * 4
    assert result.totals.macs == 2 * 300 * 200
    assert result.model.file_bytes == path.stat().st_size < 1000  # the weights were never in the file


def test_analyze_leaves_the_callers_model_untouched():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [("x", TensorProto.FLOAT, ["n", 4])],
        [("y", TensorProto.FLOAT, ["n", 4])],
    )
    result = onnxroof.analyze(model, dims={"n": 3})
    assert result.nodes[0].flops == 12
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "n"


def test_a_model_in_memory_out_of_topological_order_is_refused():
    # the stages walk the nodes in the model's order, as ONNX requires; a model built in code that
    # lists a consumer before its producer gets the loader's one-line verdict, not a wrong DAG
    model = make_model(
        [helper.make_node("Relu", ["a"], ["y"], name="second"), helper.make_node("Relu", ["x"], ["a"], name="first")],
        [("x", TensorProto.FLOAT, [1, 8])],
        [("y", TensorProto.FLOAT, [1, 8])],
    )
    with pytest.raises(ModelError, match="'second' reads 'a' before node 'first' produces it.*topological order"):
        onnxroof.analyze(model)


def test_onnxruntime_optimized_default_domain_op_passes_the_checker(tmp_path):
    # onnxruntime's optimizer writes SimplifiedLayerNormalization into the default domain, where
    # onnx has no schema for it; such files must still load and be costed.
    model = make_model(
        [helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-6)],
        [("x", TensorProto.FLOAT, [2, 8])],
        [("y", TensorProto.FLOAT, [2, 8])],
        [("scale", np.ones(8, np.float32))],
    )
    path = tmp_path / "optimized.onnx"
    onnx.save(model, path)
    result = onnxroof.analyze(path)
    (record,) = result.nodes
    assert record.status == "ok" and record.params == 8


def _heavy_model(extra_nodes=(), weight=None):
    """A MatMul with a 4,500 x 1,000 float weight inline: 18 MB, over the limit past which the
    checker is shown weights as empty tensors."""
    weight = np.ones((4500, 1000), np.float32) if weight is None else weight
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"]), *extra_nodes]
    model = make_model(
        nodes, [("x", TensorProto.FLOAT, [1, 4500])], [("y", TensorProto.FLOAT, [1, 1000])], [("W", weight)]
    )
    return model


def test_heavy_inline_weights_are_counted_and_still_checked(tmp_path):
    from onnxroof.frontend.load import load_model

    path = tmp_path / "heavy.onnx"
    onnx.save(_heavy_model(), path)
    analysis = onnxroof.analyze(str(path))
    assert analysis.totals.params == 4500 * 1000 and analysis.totals.macs == 4500 * 1000
    # the checker still judges the graph: an attribute Relu does not have
    bad = _heavy_model([helper.make_node("Relu", ["y"], ["z"], bogus=1)])
    onnx.save(bad, path)
    with pytest.raises(ModelError) as refused:
        load_model(path)
    assert "fails the ONNX checker" in str(refused.value) and "bogus" in str(refused.value)
    # ... and a large tensor with no data at all beside the heavy one, which a stand-in must not hide
    empty = _heavy_model([helper.make_node("MatMul", ["y", "V"], ["v"])])
    empty.graph.initializer.append(onnx.TensorProto(name="V", data_type=TensorProto.FLOAT, dims=[1000, 5000]))
    empty.graph.output.append(helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 5000]))
    onnx.save(empty, path)
    with pytest.raises(ModelError, match="one and only one value field"):
        load_model(path)


def _fails_the_checker(tmp_path):
    """A Relu with an attribute Relu does not have: only the ONNX checker refuses it."""
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"], bogus=1)],
        [("x", TensorProto.FLOAT, ["n", 8])],
        [("y", TensorProto.FLOAT, ["n", 8])],
    )
    path = tmp_path / "bogus.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.skipif(not load._may_fork(), reason="the checker runs in a child only where the process may fork")
def test_the_checker_in_a_child_gives_the_same_verdict(tmp_path):
    path = _fails_the_checker(tmp_path)
    with pytest.raises(ModelError) as in_process:
        load.load_model(path)
    model, checking = load.open_model(path, checker_in_child=True)
    assert checking._child is not None  # judged in a child process
    with pytest.raises(ModelError) as in_child:
        checking.wait()
    assert str(in_child.value) == str(in_process.value)
    assert "fails the ONNX checker" in str(in_child.value) and "bogus" in str(in_child.value)
    # its verdict comes before a mistake in the flags, as when the checker ran first
    with pytest.raises(ModelError, match="bogus"):
        onnxroof.analyze(path, input_shapes={"nope": [1, 8]}, checker_in_child=True)


@pytest.mark.skipif(not load._may_fork(), reason="the checker runs in a child only where the process may fork")
def test_a_checker_crash_takes_only_the_child_down(tmp_path, monkeypatch):
    import faulthandler
    import os
    import signal

    def crash(model, contents):
        faulthandler.disable()  # pytest's handler would print the child's stack
        os.kill(os.getpid(), signal.SIGSEGV)

    path = tmp_path / "fine.onnx"
    onnx.save(
        make_model(
            [helper.make_node("Relu", ["x"], ["y"])],
            [("x", TensorProto.FLOAT, [1, 8])],
            [("y", TensorProto.FLOAT, [1, 8])],
        ),
        path,
    )
    # the child inherits this stand-in for the checker, which dies as a C++ crash would
    monkeypatch.setattr(load, "_checker_verdict", crash)
    with pytest.raises(ModelError, match=r"fails the ONNX checker \(it crashed \(SIGSEGV\)"):
        onnxroof.analyze(path, checker_in_child=True)


def test_the_program_reports_the_checkers_verdict_in_one_line(tmp_path):
    import subprocess
    import sys

    path = _fails_the_checker(tmp_path)
    program = [
        sys.executable,
        "-c",
        "from onnxroof.cli.app import main; main()",
        "summary",
        str(path),
        "-o",
        str(tmp_path / "out.json"),
        "--format",
        "json",
    ]
    result = subprocess.run(program, capture_output=True, text=True)
    assert result.returncode == 2 and not (tmp_path / "out.json").exists()
    (line,) = result.stderr.splitlines()
    assert line.startswith("onnxroof: error: ") and "fails the ONNX checker" in line and "bogus" in line


def test_a_git_lfs_pointer_is_one_line_that_says_run_git_lfs_pull(tmp_path):
    # issue 47: a model in Git LFS checked out without it is a 3-line pointer file (the LFS spec's
    # format), not a corrupt protobuf; onnxroof says what it is and the fix
    path = tmp_path / "detector.onnx"
    path.write_text(
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
    )
    with pytest.raises(ModelError) as caught:
        load.load_model(path)
    assert str(caught.value) == (
        f"{path}: not an ONNX model: the file is a Git LFS pointer, not the model "
        "(checked out without Git LFS): run git lfs pull (in a GitHub workflow: "
        "actions/checkout with lfs: true)"
    )
