"""Words and small wrongs a new user hit (issue 47): a flag is never ignored, a name never lost,
one number formatter, no digits beyond the error band, one unit for a decode step."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from types import SimpleNamespace as Fake

import onnx
import pytest
from conftest import make_model, run, zeros
from onnx import TensorProto, helper

from onnxroof.core.units import intensity
from onnxroof.report.formatting import rate_text
from onnxroof.report.text.table import apart_clips

F32 = TensorProto.FLOAT
EXPORTS = Path(__file__).resolve().parents[1] / "data" / "exports"


def unzip(name: str, folder: Path) -> Path:
    path = folder / name
    with gzip.open(EXPORTS / f"{name}.gz") as packed, open(path, "wb") as plain:
        shutil.copyfileobj(packed, plain)
    return path


@pytest.fixture
def matmul_file(tmp_path):
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    path = tmp_path / "mm.onnx"
    onnx.save(
        make_model([node], [("x", F32, ["batch", "seq", 8])], [("y", F32, ["batch", "seq", 4])], [("w", zeros(8, 4))]),
        path,
    )
    return path


def test_diff_symbolic_refuses_a_format_it_cannot_write(capsys, matmul_file):
    code, out, err = run(capsys, "diff", matmul_file, matmul_file, "--symbolic", "--format", "html")
    assert code == 2 and out == ""
    assert err.strip() == (
        "onnxroof: error: diff --symbolic prints a table or JSON, not html: use --format table or json"
    )


def test_batch_and_an_input_shape_that_disagree_are_refused(capsys, matmul_file):
    code, out, err = run(capsys, "summary", matmul_file, "--batch", "4", "--input-shape", "x:2,3,8")
    assert code == 2
    assert "--batch 4 and --input-shape x:2,3,8 (batch 2) disagree" in err
    # agreeing flags are fine: batch 4 x seq 3 x 8 -> 4 outputs each = 4·3·8·4 = 384 MACs
    code, out, err = run(capsys, "summary", matmul_file, "--batch", "4", "--input-shape", "x:4,3,8")
    assert code == 0 and "(384)" in out


def test_explain_lists_every_node_of_its_kernel_whole(capsys, tmp_path):
    path = unzip("bert-static-small.onnx", tmp_path)
    code, out, err = run(capsys, "explain", path, "node_Softmax_90", "--target", "l4")
    assert code == 0, err
    lines = out.splitlines()
    fused = next(line for line in lines if " nodes fused under " in line)
    count = int(fused.split(": ")[-1].split(" nodes fused")[0].split("(")[-1].split(": ")[-1])
    start = next(i for i, line in enumerate(lines) if line.startswith("  nodes    "))
    listed = " ".join(lines[start:]).replace("  nodes    ", "").split(", ")
    assert len([n for n in listed if n.strip()]) == count
    assert "node_scaled_dot_product_attention" in out and "…" not in " ".join(lines[start:])


def test_look_alike_names_keep_the_part_that_differs():
    names = ["/model/layers.10/self_attn/q_proj/MatMul", "/model/layers.11/self_attn/q_proj/MatMul"]
    clipped = apart_clips(names, 20)
    assert len(set(clipped)) == 2 and all(len(c) <= 20 for c in clipped)
    assert "layers.10" in clipped[0] and "layers.11" in clipped[1]
    assert clipped[0].endswith("MatMul")


def test_a_rate_has_no_digits_past_its_error_band():
    # ±17% of 90,152.1 is 15,326: the ten-thousands digit is the last one known
    assert rate_text(90152.1, Fake(latency_kind="forecast", band=Fake(value=0.17))) == "90,000"
    # a bound (no band): three significant digits, as the latency beside it ("≥ 11.1 µs")
    assert rate_text(90152.1, Fake(latency_kind="bound", band=None)) == "90,200"


def test_ridges_are_written_as_every_intensity():
    # tpu-v1: 92 TOP/s int8 over 34 GB/s = 2,705.9 FLOP/B; the same formatter everywhere
    assert intensity(8000.0) == "8,000"


def test_targets_and_the_model_point_write_a_ridge_alike(capsys, tmp_path):
    code, out, err = run(capsys, "targets")
    assert "e+0" not in out
    path = unzip("timm-resnet18.onnx", tmp_path)
    code, out, err = run(capsys, "summary", path, "--target", "coral-edge-tpu", "-q")
    point = next(line for line in out.splitlines() if "model point:" in line)
    assert "e+0" not in point and "(ridge " in point


def test_one_launch_bound_kernel_is_singular(capsys, tmp_path):
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    path = tmp_path / "relu.onnx"
    onnx.save(make_model([node], [("x", F32, [1, 8])], [("y", F32, [1, 8])]), path)
    code, out, err = run(capsys, "summary", path, "--target", "l4", "-q")
    assert "1 kernel x " in out and "1 kernels" not in out


def test_a_decode_step_s_rate_is_in_tokens_per_second_everywhere(capsys, tmp_path):
    path = unzip("whisper-optimum-decoder-with-past.onnx", tmp_path)
    code, out, err = run(
        capsys, "summary", path, "--phase", "decode", "--context", "64", "--encoder-seq", "1500", "--target", "l4", "-q"
    )
    assert code == 0, err
    headline = next(line for line in out.splitlines() if line.startswith("  latency "))
    assert "tokens/s" in headline and "inferences/s" not in out


def test_a_length_past_the_positional_table_is_refused(capsys, tmp_path):
    # Whisper's decoder reads its positions from a 448-row table: decode at context 2,048 reads
    # row 2,047; at context 448, row 447, the last
    path = unzip("whisper-optimum-decoder-with-past.onnx", tmp_path)
    common = ("--phase", "decode", "--encoder-seq", "1500", "-q")
    code, out, err = run(capsys, "summary", path, "--context", "2048", *common)
    assert code == 2 and out == ""
    assert "reads row 2,047 of the 448-row table" in err and "give --context 448 or less" in err
    code, out, err = run(capsys, "summary", path, "--context", "448", *common)
    assert code == 0, err


def test_the_formulas_of_a_bounded_length_say_where_they_stop(capsys, tmp_path):
    path = unzip("whisper-optimum-decoder-with-past.onnx", tmp_path)
    code, out, err = run(capsys, "summary", path, "--symbolic", "--phase", "decode", "--encoder-seq", "1500", "-q")
    assert code == 0, err
    text = " ".join(out.split())
    # the cache: 2 layers x (key + value) x 4 heads x 16 x 4 B = 1,024 B per position
    assert "KV cache bytes = 1,024·context (holds to context = 448, not beyond: the graph's table ends there)" in text
