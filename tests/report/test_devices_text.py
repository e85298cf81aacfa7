"""report/text/devices.py: the text summary's "Several devices" section (named apart from
tests/roofline/test_devices.py, which tests the plan itself: pytest needs test names unique)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from models import transformer_block
from report_models import hand_target

import onnxroof
from onnxroof.report.text.devices import HEADER, device_plan_lines, structure_line


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    """tests/models.transformer_block: 2 layers of d = 8 (q, k, v, o: 4 x 64 weights; up and down:
    2 x 256) and an LM head of 8 x 32: 2 x 768 + 256 = 1,792 float32 weights, 7,168 bytes = 7 KiB.
    The hand target states no interconnect, so only one device is planned."""
    analysis = onnxroof.analyze(
        transformer_block(), devices=2, dims={"seq": 4}, targets=[hand_target(tmp_path_factory.mktemp("targets"))]
    )
    return analysis.parallel[0]


def test_the_section_names_the_target_the_blocks_split_and_a_row_per_split(plan):
    lines = device_plan_lines(plan)
    assert lines[0].startswith("Several devices on hand (up to 2;")
    assert lines[1] == "  " + structure_line(plan)
    assert lines[2].split() == list(" ".join(HEADER).split())
    assert lines[3].split()[:4] == ["1", "1", "7", "KiB"]  # TP 1, PP 1, 7 KiB of weights on the one device
    assert len([line for line in lines if line.startswith("  (per device;")]) == 1


def test_the_plan_s_notes_close_the_section(plan):
    assert device_plan_lines(plan)[-1].startswith("  ! hand states no interconnect")


def test_the_structure_line_counts_the_blocks_split_or_says_everything_is_replicated(plan):
    assert structure_line(plan).startswith("tensor parallelism: 2 attention and 2 MLP blocks split")
    assert structure_line(SimpleNamespace(recognised=False)) == (
        "tensor parallelism: no attention or MLP block found: every node replicated"
    )


def test_the_per_s_column_is_explained_with_its_formula(plan):
    # per s = m x inferences per step / ((m + PP - 1) x the slowest stage): 1 micro-batch here, and the
    # block (no KV cache: inferences) makes batch 1 = 1 inference per step (issue 47)
    text = " ".join(" ".join(device_plan_lines(plan)).split())
    assert (
        "per s: inferences a second with 1 micro-batch in flight, = 1 x 1 inferences / ((1 + PP - 1) x the "
        "slowest stage's time)"
    ) in text
    assert "at PP > 1 it is not 1 / step" in text
