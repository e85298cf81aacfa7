"""The fusion finding (issue 42): what a runtime or compiler that fuses more would save, never a
flag to set (which kernels a runtime fuses is the target's). Gains derived by hand in
test_launch.py: the 100-Add chain in one kernel saves 297.0112 µs on the 3 µs-launch target."""

from __future__ import annotations

import pytest
from conftest import launch_target
from test_launch import add_chain

import onnxroof


@pytest.mark.parametrize(
    "rules, title",
    [
        (
            "[]",
            "99 fewer kernels with epilogue, elementwise, normalization, horizontal, attention fusion, if the target's "
            "compiler fuses them (what it fuses is not published): up to 297 µs less (99%)",
        ),
        (
            '["epilogue"]',
            "99 fewer kernels with elementwise, normalization, horizontal, attention fusion, in a runtime or "
            "compiler that fuses more: 297 µs less (99%)",
        ),
    ],
)
def test_the_fusion_finding_names_no_flag_and_says_whose_fusion_it_is(tmp_path, rules, title):
    (fusion,) = [
        f
        for f in onnxroof.analyze(add_chain(), targets=[launch_target(tmp_path, rules)]).review()
        if f.kind == "fusion"
    ]
    assert fusion.title == title and fusion.change == ""
    assert fusion.gain_s == pytest.approx(297.0112e-6)
