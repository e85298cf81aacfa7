"""report/html/devices_section.py: the "Several devices" tables (``--devices N``)."""

from __future__ import annotations

from models import transformer_block
from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.report.html.devices_section import devices_context


def test_one_table_per_target_a_row_per_split(tmp_path):
    # tests/models.transformer_block: 1,792 float32 weights = 7 KiB (see test_devices_text.py);
    # the hand target states no interconnect: one device, one split (TP 1, PP 1)
    analysis = onnxroof.analyze(transformer_block(), devices=2, dims={"seq": 4}, targets=[hand_target(tmp_path)])
    (table,) = devices_context(analysis)
    assert table["target"] == "hand"
    (row,) = table["rows"]
    assert (row["tensor"], row["pipeline"], row["weights"]) == (1, 1, "7 KiB")


def test_one_device_has_no_section():
    assert devices_context(onnxroof.analyze(matmul_relu())) is None
