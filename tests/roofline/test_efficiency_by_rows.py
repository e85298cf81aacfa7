"""``efficiency.<class>.by_rows`` (and ``efficiency.<class>.<roof>.by_rows``): the fraction of the
roofline a convolution or matmul reaches follows its output rows, interpolated in log(rows)
between measured points. Expected values are worked out by hand in the comments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_model, target_text, zeros
from onnx import TensorProto, helper

from onnxroof import analyze
from onnxroof.cli.app import main
from onnxroof.core.errors import UsageError
from onnxroof.report.text.explain import explain_target_lines
from onnxroof.report.text.targets_list import render_targets_list
from onnxroof.roofline.targets import parse_target

F32 = TensorProto.FLOAT
CURVE = "by_rows = [[16, 0.5], [256, 1.0]]\n"  # 64 rows sit halfway in log(rows): 0.75


def figure(kernel_class: str, value: float, extra: str = "") -> str:
    return f'[efficiency.{kernel_class}]\nvalue = {value}\ntag = "measured"\nsource = "hand"\n{extra}'


def target_file(tmp_path, efficiency: str, name: str = "t") -> str:
    """1 TFLOP/s fp32 and int8, 1 TB/s DRAM, 1 GiB on chip at 1 TB/s, no launch cost."""
    path = tmp_path / f"{name}.toml"
    path.write_text(
        target_text(
            {
                "peak_ops_per_s.fp32": 1e12,
                "peak_ops_per_s.int8": 1e12,
                "dram.bandwidth_bytes_per_s": 1e12,
                "onchip.size_bytes": 1 << 30,
                "onchip.bandwidth_bytes_per_s": 1e12,
            },
            efficiency,
        )
    )
    return str(path)


def matmul(rows: int, depth: int = 64):
    """x [rows, depth] · W [depth, 64] (stored): a gemm from 8 rows (8 multiply-adds per weight)."""
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")
    return make_model([node], [("x", F32, [rows, depth])], [("y", F32, [rows, 64])], [("w", zeros(depth, 64))])


def test_a_gemm_s_efficiency_follows_its_output_rows_between_the_points(tmp_path):
    # 64 x 64 by 64 x 64: 2 x 64^3 = 524,288 FLOPs at 1 TFLOP/s = 0.524288 µs; its bytes (W, x and y,
    # 16,384 B each) take 49 ns on either memory level: compute-bound. 64 rows are the geometric
    # middle of 16 and 256: 0.5 + (1.0 - 0.5) / 2 = 0.75, so 0.524288 / 0.75 = 0.699051 µs
    path = target_file(tmp_path, figure("gemm", 0.9, CURVE))
    (kernel,) = analyze(matmul(64), targets=[path]).targets[0].nodes
    assert kernel.placement.kernel_class == "gemm" and kernel.placement.efficiency_rows == 64
    assert kernel.placement.efficiency == pytest.approx(0.75)
    assert kernel.placement.time_s == pytest.approx(0.524288e-6 / 0.75)
    # past the ends the end points hold: 8 rows at 0.5, 1,024 at 1.0
    assert analyze(matmul(8), targets=[path]).targets[0].nodes[0].placement.efficiency == pytest.approx(0.5)
    assert analyze(matmul(1024), targets=[path]).targets[0].nodes[0].placement.efficiency == pytest.approx(1.0)
    # without the overhead (the plain roofline) no curve applies
    plain = analyze(matmul(64), targets=[path], overhead=False).targets[0].nodes[0].placement
    assert plain.efficiency == 1.0 and plain.efficiency_rows is None


def test_a_convolution_s_rows_are_its_output_pixels(tmp_path):
    # Conv 16 -> 16 channels, 3x3, pad 1, over 8 x 8: 64 output pixels (rows) x 16 channels, 144
    # multiply-adds per output: a gemm at 64 rows, 0.75 as above
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    model = make_model([node], [("x", F32, [1, 16, 8, 8])], [("y", F32, [1, 16, 8, 8])], [("w", zeros(16, 16, 3, 3))])
    (kernel,) = analyze(model, targets=[target_file(tmp_path, figure("gemm", 0.9, CURVE))]).targets[0].nodes
    assert kernel.placement.efficiency_rows == 64 and kernel.placement.efficiency == pytest.approx(0.75)


def test_a_roof_s_figure_takes_its_own_curve_or_none(tmp_path):
    # the class's curve for fp32; the int8 figure's own curve on int8 (49 rows to 784: 196 rows are
    # halfway in log(rows), 0.25 + (0.4 - 0.25) / 2 = 0.325); an fp16 figure without a curve holds
    # at every row count
    int8 = (
        '[efficiency.gemm.int8]\nvalue = 0.4\ntag = "measured"\nsource = "hand"\nby_rows = [[49, 0.25], [784, 0.4]]\n'
    )
    fp16 = '[efficiency.gemm.fp16]\nvalue = 0.7\ntag = "measured"\nsource = "hand"\n'
    target = parse_target(Path(target_file(tmp_path, figure("gemm", 0.9, CURVE) + int8 + fp16)))
    assert target.efficiency_by_rows == {"gemm": ((16, 0.5), (256, 1.0)), "gemm.int8": ((49, 0.25), (784, 0.4))}
    assert target.efficiency_of("gemm", "fp32", rows=64) == pytest.approx(0.75)
    assert target.efficiency_of("gemm", "int8", rows=196) == pytest.approx(0.325)
    assert target.efficiency_of("gemm", "int8", rows=16) == pytest.approx(0.25)
    assert target.efficiency_of("gemm", "fp16", rows=16) == pytest.approx(0.7)
    # no work shape (rows unknown): the figure's value
    assert target.efficiency_of("gemm", "int8") == pytest.approx(0.4) and target.efficiency_of("gemm") == 0.9


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            figure("gemm", 0.9, "by_rows = [[16, 0.5], [16, 0.8]]\n"),
            r"'efficiency.gemm.by_rows' rows must increase \(16 then 16\)",
        ),
        (
            figure("gemm", 0.9, "by_rows = [[16, 1.5]]\n"),
            r"'efficiency.gemm.by_rows' point \[16, 1.5\]: rows at least 1, "
            r"fraction in \(0, 1\]",
        ),
        (
            figure("gemm", 0.9, "by_rows = [[1.5, 0.5]]\n"),
            r"'efficiency.gemm.by_rows' point \[1.5, 0.5\] must be \[whole "
            r"output rows, fraction\]",
        ),
        (
            figure("gemm", 0.9, "by_rows = []\n"),
            r"'efficiency.gemm.by_rows' must be a list of \[output rows, fraction\] points",
        ),
        (
            figure("gemm", 0.9, "by_rows = [[16, 0.5]]\nby_columns = [[10, 0.5]]\n"),
            r"'efficiency.gemm' gives both 'by_rows' and 'by_columns': give one curve per class",
        ),
        (
            figure("gemm", 0.9)
            + '[efficiency.gemm.int8]\nvalue = 0.4\ntag = "measured"\nsource = "hand"\nby_cols = 1\n',
            r"'efficiency.gemm.int8.by_cols' is not a field of a roof's figure \(value, tag, source, by_rows, by_columns\)",
        ),
        (
            figure("gemm", 0.9)
            + '[efficiency.gemm.int8]\nvalue = 0.4\ntag = "measured"\nsource = "hand"\nby_rows = [[0, 0.5]]\n',
            r"'efficiency.gemm.int8.by_rows' point \[0, 0.5\]: rows at least 1",
        ),
        (
            figure("gemm", 0.9, "by_row = [[16, 0.5]]\n"),
            r"'efficiency.gemm.by_row' is neither a roof .* nor 'by_columns', "
            r"'by_rows' or 'by_op'",
        ),
    ],
)
def test_the_rows_points_are_validated(tmp_path, extra, message):
    with pytest.raises(UsageError, match=message):
        parse_target(Path(target_file(tmp_path, extra, "bad")))


def test_explain_the_json_and_the_listing_show_the_rows_figure(tmp_path, capsys):
    path = target_file(tmp_path, figure("gemm", 0.9, CURVE))
    analysis = analyze(matmul(64), targets=[path])
    lines = explain_target_lines(analysis.targets[0], "proj")
    assert any(
        "efficiency 0.75 (gemm kernels of 64 output rows on this target, efficiency.gemm.by_rows)" in line
        for line in lines
    )
    assert "gemm by output rows: 16 50%, 256 100%" in render_targets_list([analysis.targets[0].target])
    model = tmp_path / "proj.onnx"
    model.write_bytes(matmul(64).SerializeToString())
    assert main(["summary", str(model), "--target", path, "--format", "json"]) == 0
    entry = json.loads(capsys.readouterr().out)["targets"][0]
    assert entry["efficiency_by_rows"] == {"gemm": [[16, 0.5], [256, 1.0]]}
    assert entry["nodes"][0]["efficiency_rows"] == 64 and entry["nodes"][0]["efficiency"] == pytest.approx(0.75)
