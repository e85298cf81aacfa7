"""The JSON document of `onnxroof profile` (schema onnxroof-profile/1), from a recorded profile."""

from __future__ import annotations

import json

import pytest
from measurements import expected_median, recorded_profile, recorded_result

from onnxroof.report.profile_json import SCHEMA, profile_document


def test_the_document_carries_every_node_and_kernel_and_the_measured_total():
    result = recorded_result(note="a note")
    document = json.loads(json.dumps(profile_document(result)))
    assert document["schema"] == SCHEMA == "onnxroof-profile/1"
    assert [n["name"] for n in document["nodes"]] == [r.name for r in result.analysis.nodes]
    assert document["target"]["name"] == "myriad-x" and document["notes"] == ["a note"]
    assert document["onnxruntime"]["runs"] == 3 and document["onnxruntime"]["warmup"] == 1
    # the measured total is every kernel's median, read straight from the recorded events
    events = recorded_profile("all")
    kernels = {e["name"].removesuffix("_kernel_time") for e in events["traceEvents"] if e.get("cat") == "Node"}
    assert document["totals"]["measured_s"] == pytest.approx(sum(expected_median(events, k) for k in kernels))
    assert [k["name"] for k in document["unattributed"]] == ["ReorderOutput"]
    assert document["removed"] == ["dropout_0"] and document["not_seen"] == []
    # a kernel's FLOPs are its nodes' and its rate is those FLOPs over its measured time
    flops = {r.name: r.flops for r in result.analysis.nodes}
    conv = next(k for k in document["kernels"] if k["name"] == "activation_0_nchwc")
    assert conv["nodes"] == ["conv2d_0", "batch_normalization_0", "activation_0"]
    assert conv["flops"] == sum(flops[n] for n in conv["nodes"])
    assert conv["measured_flops_per_s"] == pytest.approx(conv["flops"] / conv["measured_s"])
    totals = document["totals"]
    assert totals["ratio"] == pytest.approx(totals["measured_s"] / totals["predicted_s"])
    assert totals["error"] == pytest.approx((totals["predicted_s"] - totals["measured_s"]) / totals["measured_s"])
