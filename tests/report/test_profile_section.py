"""report/html/profile_section.py: "Predicted vs measured" on the model page, from
report_models.hand_profile: the MatMul measured at 352 ns against 176 predicted, the Relu at its
64 ns, 432 ns measured in all (with a 16 ns copy onnxruntime inserted)."""

from __future__ import annotations

import pytest
from report_models import hand_profile

from onnxroof.report.html.profile_section import error_text, measured_dots, profile_context, profiled_target, ratio_text


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    return hand_profile(tmp_path_factory.mktemp("targets"))


def test_the_profiled_target_is_found_in_the_analysis(profile):
    assert profiled_target(profile.analysis, profile) == 0


def test_ratios_and_errors_as_text():
    assert ratio_text(2.0) == "2.00x" and ratio_text(None) == "—"
    assert error_text(-0.444) == "-44%" and error_text(None) == "—"


def test_a_measured_dot_per_node_the_largest_share_first(profile):
    index = {n.name: i for i, n in enumerate(profile.analysis.nodes)}
    matmul, relu = measured_dots(profile, profile.target, index)
    # 64 FLOPs in 352 ns; 352 of the 432 measured ns
    assert matmul["op"] == "MatMul" and matmul["performance"] == pytest.approx(64 / 352e-9)
    assert matmul["weight"] == pytest.approx(352 / 432)
    assert relu["performance"] == pytest.approx(8 / 64e-9)
    assert "measured/predicted: 2.00x" in matmul["title"]


def test_the_section_ranks_the_nodes_by_measured_time(profile):
    context = profile_context(profile.analysis, profile, 0)
    first, second = context["rows"]
    assert (first["name"], first["predicted"], first["measured"], first["ratio"]) == (
        "matmul",
        "176 ns",
        "352 ns",
        "2.00x",
    )
    assert (second["name"], second["ratio"]) == ("relu", "1.00x")
