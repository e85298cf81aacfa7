"""report/html/memory_section.py: the memory section's cards, paragraph, peak rows and timeline,
for report_models.matmul_relu: 48 bytes live at step 0, 64 at step 1 (the peak, the Relu's y and z)."""

from __future__ import annotations

import pytest
from report_models import PEAK_BYTES, PEAK_STEP, matmul_relu

import onnxroof
from onnxroof.report.html.memory_section import memory_context


@pytest.fixture(scope="module")
def memory():
    return memory_context(onnxroof.analyze(matmul_relu()), [("chip", 1000)])


def test_the_cards_give_the_peak_its_step_and_node(memory):
    peak = memory["cards"][0]
    assert (peak["value"], peak["title"]) == ("64 B", f"{PEAK_BYTES} bytes live at step {PEAK_STEP} of the model order")
    assert (memory["peak_step"], memory["peak_node"]) == ("1", "relu")


def test_the_paragraph_says_what_the_peak_node_reads_and_writes(memory):
    assert memory["explanation"].startswith(
        "At step 1, relu (Relu) runs while matmul's output is still live: it reads matmul's output (32 B) "
        "and writes its own output (32 B). That is 64 bytes live in all."
    )
    # the Relu alone reads and writes 32 + 32 = 64 bytes: the peak is the largest-layer lower bound
    assert "No execution order can go lower: this node alone needs 64 B" in memory["explanation"]


def test_a_row_per_tensor_live_at_the_peak_with_its_share(memory):
    rows = {row["name"]: row for row in memory["rows"]}
    assert set(rows) == {"y", "z"}  # x was last read at step 0
    assert (rows["y"]["bytes"], rows["y"]["share"]) == ("32 B", "50.0%")  # 32 of 64 bytes
    assert memory["rest"] is None


def test_the_timeline_draws_a_capacity_that_fits_on_its_scale(memory):
    # a capacity over 4 x the data (1,000 > 4 x 64 = 256 bytes) would flatten it: listed, not drawn
    chart = memory["chart"]
    assert chart["off_scale"] == "chip (1000 B)" and chart["references"] == []
    assert memory["same_order"] is True
