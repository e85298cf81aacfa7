"""report/html/chart_context.py: charts turned into the templates' strings: colours, roof groups,
a kernel's tooltip, marks."""

from __future__ import annotations

from conftest import target_text
from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.report.html.chart_context import (
    PALETTE,
    achieved_rate,
    bandwidth_roofs,
    diamond_path,
    kernel_dot_title,
    main_op,
    op_palette,
    ops_unit,
    roof_groups,
)
from onnxroof.roofline.targets import load_target


def test_a_fused_kernel_is_coloured_by_its_first_op():
    assert main_op("Conv+Relu") == "Conv" and main_op("MatMul") == "MatMul"


def test_the_op_with_most_flops_gets_the_first_colour():
    nodes = onnxroof.analyze(matmul_relu()).nodes  # MatMul 64 FLOPs, Relu 8
    assert op_palette(nodes) == {"MatMul": PALETTE[0], "Relu": PALETTE[1]}


def test_equal_peaks_share_one_roof_and_int_roofs_count_ops(tmp_path):
    path = tmp_path / "two.toml"
    path.write_text(
        target_text(
            {
                "peak_ops_per_s.fp32": 1e9,
                "peak_ops_per_s.fp16": 2e9,
                "peak_ops_per_s.bf16": 2e9,
                "dram.bandwidth_bytes_per_s": 1e9,
            }
        )
    )
    target = load_target(str(path))
    assert sorted(roof_groups(target), key=lambda group: group[1]) == [
        ("fp32", 1e9, ["fp32"]),
        ("fp16 · bf16", 2e9, ["fp16", "bf16"]),
    ]
    assert bandwidth_roofs(target) == [("DRAM", 1e9)]  # no on-chip bandwidth given
    assert ops_unit(["int8"]) == "OP/s" and ops_unit(["int8", "fp16"]) == "FLOP/s"


def test_a_kernel_s_tooltip_gives_its_bytes_time_and_share(tmp_path):
    report = onnxroof.analyze(matmul_relu(), targets=[hand_target(tmp_path)]).targets[0]
    matmul = next(kernel for kernel in report.nodes if kernel.name == "matmul")
    title = kernel_dot_title(matmul, report.latency_s).splitlines()
    # 128 + 16 + 32 bytes at 1 GB/s: 176 ns of 240
    assert "DRAM bytes: 176 B (176)" in title
    assert title[5].startswith("time: 176 ns") and title[5].endswith("73.3% of the latency")
    assert title[-1] == "bound: DRAM"


def test_a_rate_and_a_diamond():
    assert achieved_rate(72, 240e-9) == 72 / 240e-9 and achieved_rate(72, 0) == 0.0
    assert diamond_path(10, 20, 5) == "M10,15L15,20L10,25L5,20Z"
