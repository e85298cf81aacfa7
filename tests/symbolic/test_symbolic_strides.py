"""Symbolic formulas of a strided CNN (issue 47): the fit points are multiples of the step the
graph needs (a Concat of an upsampled map with a finer one), the header says so, and a graph
that fixes a size gets a note naming the dims to bind. Formulas derived by hand in comments."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import onnx
from conftest import make_model, run, zeros
from onnx import TensorProto, helper

from onnxroof.symbolic.fit_steps import fit_steps, rescale
from onnxroof.symbolic.formulas import formulas
from onnxroof.symbolic.polynomials import count_text, polynomial_text

F32 = TensorProto.FLOAT
EXPORTS = Path(__file__).resolve().parents[1] / "data" / "exports"


def yolo_like():
    """images [batch, 3, height, width] -> three 3x3 stride-2 convs (pad 1: H/2, H/4, H/8) ->
    Resize x2 of the H/8 map, Concat with the H/4 map (sizes agree only when H is a multiple of 8,
    with the convs' rounding up) -> 3x3 conv to 4 channels. MACs per batch item, in H·W:
    c1 8·3·9/4 = 54, c2 16·8·9/16 = 72, c3 16·16·9/64 = 36, c4 4·32·9/16 = 72: 234·batch·H·W."""

    def conv(name, source, cin, cout, stride):
        return helper.make_node(
            "Conv",
            [source, f"{name}.w"],
            [name],
            name=name,
            kernel_shape=[3, 3],
            strides=[stride, stride],
            pads=[1, 1, 1, 1],
        )

    nodes = [
        conv("c1", "images", 3, 8, 2),
        conv("c2", "c1", 8, 16, 2),
        conv("c3", "c2", 16, 16, 2),
        helper.make_node("Resize", ["c3", "", "scales"], ["up"], name="up", mode="nearest"),
        helper.make_node("Concat", ["up", "c2"], ["cat"], name="cat", axis=1),
        conv("c4", "cat", 32, 4, 1),
    ]
    weights = [
        ("c1.w", zeros(8, 3, 3, 3)),
        ("c2.w", zeros(16, 8, 3, 3)),
        ("c3.w", zeros(16, 16, 3, 3)),
        ("c4.w", zeros(4, 32, 3, 3)),
        ("scales", np.array([1, 1, 2, 2], np.float32)),
    ]
    return make_model(
        nodes, [("images", F32, ["batch", 3, "height", "width"])], [("c4", F32, ["batch", 4, "h4", "w4"])], weights
    )


def test_steps_are_the_smallest_power_of_two_per_dim():
    assert fit_steps(lambda v: v["h"] % 32 == 0 and v["w"] % 16 == 0, ["n", "h", "w"]) == {"n": 1, "h": 32, "w": 16}
    assert fit_steps(lambda v: True, ["n"]) == {"n": 1}
    assert fit_steps(lambda v: v["h"] == 640, ["h"]) is None


def test_rescaled_coefficients_are_exact_fractions():
    # 256·t² with H = 32·t is 256/1024·H² = H²/4
    assert polynomial_text(rescale({(2,): 256}, (32,)), ["H"]) == "0.25·H²"
    assert count_text(rescale({(1,): 1}, (3,))[(1,)]) == "1/3"


def test_strided_cnn_formulas_fit_at_multiples_of_its_step():
    found = formulas(yolo_like())
    assert found.steps == {"batch": 1, "height": 8, "width": 8}
    assert found.text("macs") == "234·batch·height·width"
    assert found.evaluate("macs", {"batch": 1, "height": 640, "width": 640}) == 234 * 640 * 640
    # parameters: the conv weights 216 + 1,152 + 2,304 + 1,152 (the Resize scales are a size, not a weight)
    assert found.polynomials["params"] == {(0, 0, 0): 216 + 1152 + 2304 + 1152}


def test_symbolic_table_has_the_summary_header_and_says_where_it_fitted(capsys, tmp_path):
    path = tmp_path / "yolo_like.onnx"
    onnx.save(yolo_like(), path)
    code, out, err = run(capsys, "summary", path, "--symbolic")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("onnxroof ") and "yolo_like" in lines[0]
    assert lines[1] == "inputs: images batch x 3 x height x width float32"
    assert "height, width = 16, 24, 40, 56 and batch = 2, 3, 5, 7" in " ".join(out.split())
    assert "multiples of 8 of height, width" in " ".join(out.split())
    assert "MACs" in out and "= 234·batch·height·width" in out


def test_a_graph_fixed_to_one_size_names_the_dims_to_bind(capsys, tmp_path):
    # the real ultralytics export, static at 640: its anchor table and Reshapes fix the size
    with gzip.open(EXPORTS / "yolov8n-ultralytics.onnx.gz") as packed, open(tmp_path / "y.onnx", "wb") as plain:
        shutil.copyfileobj(packed, plain)
    model = onnx.load(tmp_path / "y.onnx", load_external_data=False)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[0].dim_param, dims[2].dim_param, dims[3].dim_param = "batch", "height", "width"
    del model.graph.value_info[:]
    onnx.save(model, tmp_path / "y.onnx")
    code, out, err = run(capsys, "summary", tmp_path / "y.onnx", "--symbolic")
    text = " ".join(out.split())
    assert "no values of batch, height, width count every node" in text
    assert "bind batch, height, width with --dim" in text
    assert "/model.22/" in err  # the warnings name the node that fixes the size


def test_a_decode_step_names_the_batch_it_holds(capsys, tmp_path):
    with (
        gzip.open(EXPORTS / "whisper-optimum-decoder-with-past.onnx.gz") as packed,
        open(tmp_path / "w.onnx", "wb") as plain,
    ):
        shutil.copyfileobj(packed, plain)
    code, out, err = run(
        capsys,
        "summary",
        tmp_path / "w.onnx",
        "--symbolic",
        "--phase",
        "decode",
        "--encoder-seq",
        "1500",
        "--batch",
        "4",
    )
    assert code == 0, err
    assert "batch_size = 4 (the phase's batch; --batch N for another)" in " ".join(out.split())
