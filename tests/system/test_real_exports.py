"""The verdict on real exports (issue 42): weight-free copies of what torch.onnx's dynamo
exporter, optimum, ultralytics and timm wrote (tests/data/exports/README.md says how each was
built). No finding may show a gain computed from a variant that did not analyse completely,
static exports name their fixed batch and the re-export that frees it, and an int8-only target
asks for int8 first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import one_error_line, run

import onnxroof
from onnxroof.core.errors import OptionError

EXPORTS = Path(__file__).resolve().parents[1] / "data" / "exports"
TARGETS = ["h100-sxm", "l4", "coral-edge-tpu"]
DECODE = {"phase": "decode", "context": 128}


def change_options(change: str) -> dict:
    """A finding's change ("--batch 8", "--dtype int8") as analyze()'s keywords."""
    flag, value = change.split()
    return {"batch": int(value)} if flag == "--batch" else {"dtype": value}


def assert_every_gain_is_from_a_complete_variant(path: Path, **binding) -> list:
    base = onnxroof.analyze(path, targets=TARGETS, **binding)
    findings = base.review()
    for finding in findings:
        if finding.gain_s > 0 and finding.change:
            variant = onnxroof.analyze(path, **(binding | change_options(finding.change)))
            assert variant.complete, (finding.title, variant.incomplete_text())
        if not base.complete:
            assert finding.gain_s == 0 and finding.incomplete
    return findings


@pytest.mark.parametrize(
    "name, binding",
    [
        ("gpt2-static-small", {}),
        ("bert-static-small", {}),
        ("yolov8n-ultralytics", {}),
        ("bert-optimum", {"dims": {"sequence_length": 128}}),
        ("timm-resnet18", {}),
        ("tf2onnx-keras-fixed", {}),
        ("tf2onnx-keras-dynamic", {}),
        ("whisper-optimum-decoder-with-past", DECODE | {"encoder_seq": 1500}),
        ("t5-optimum-decoder-with-past", DECODE | {"encoder_seq": 256}),
    ],
)
def test_no_finding_shows_a_gain_from_an_incomplete_variant(export, name, binding):
    findings = assert_every_gain_is_from_a_complete_variant(export(name), **binding)
    assert findings  # every one of these models has something to change on these targets
    assert not [f for f in findings if f.change.startswith("--fusion")]  # fusion is the runtime's, not a flag


@pytest.mark.parametrize(
    "name, fix",
    [
        ("gpt2-static-small", "dynamic_shapes={'input_ids'"),
        ("bert-static-small", "dynamic_shapes={'input_ids'"),
        ("tf2onnx-keras-fixed", "tf2onnx: a None batch dim in the input signature"),
        ("yolov8n-ultralytics", "ultralytics: model.export(format='onnx', dynamic=True)"),
    ],
)
def test_a_static_export_names_its_batch_and_refuses_another(export, capsys, name, fix):
    path = export(name)
    analysis = onnxroof.analyze(path, targets=["h100-sxm"])
    fixed = analysis.fixed_batch
    assert fixed.batch == 1 and fixed.shapes.get("Reshape", 0) >= 1 and fix in fixed.fix
    assert any(w.startswith("this export fixes batch 1 in its inputs and in ") for w in analysis.warnings)
    # the launch finding asks for the re-export; no finding proposes another batch
    assert not [f for f in analysis.review() if "--batch" in f.change]
    launch = [f for f in analysis.review() if f.kind == "launch"]
    assert all(f.title.endswith("re-export with a dynamic batch and batch up") for f in launch)
    with pytest.raises(OptionError, match="this export fixes batch 1"):
        onnxroof.analyze(path, batch=8)
    code, _, err = run(capsys, "summary", path, "--batch", "8", "--target", "l4")
    assert code == 2 and one_error_line(err) and "re-export with a dynamic batch" in err


@pytest.mark.parametrize("name", ["timm-resnet18", "tf2onnx-keras-dynamic"])
def test_a_dynamic_export_still_gets_batch_advice_measured_at_the_larger_batch(export, name):
    path = export(name)
    analysis = onnxroof.analyze(path, targets=["h100-sxm"])
    assert analysis.fixed_batch is None
    (launch,) = [f for f in analysis.review() if f.kind == "launch"]
    assert launch.change == "--batch 8" and launch.gain_s > 0
    at_8 = onnxroof.analyze(path, targets=["h100-sxm"], batch=8)
    assert at_8.complete
    # the gain is the time per inference the batch-8 analysis saves, as it measured it
    assert launch.gain_s == pytest.approx(analysis.targets[0].latency_s - at_8.targets[0].latency_s / 8)


def test_an_int8_only_target_asks_for_int8_first(export):
    analysis = onnxroof.analyze(export("yolov8n-ultralytics"), targets=["coral-edge-tpu"])
    first = analysis.review()[0]
    assert (first.kind, first.blocking, first.change) == ("precision", True, "--dtype int8")
    assert re.match(
        r"coral-edge-tpu runs int8, not fp32: quantize the model; in int8 it takes [\d.]+ [mµ]s", first.title
    )
    at_int8 = onnxroof.analyze(export("yolov8n-ultralytics"), targets=["coral-edge-tpu"], dtype="int8")
    assert first.gain_s == pytest.approx(analysis.targets[0].latency_s - at_int8.targets[0].latency_s)
    # every other gain would be measured in fp32, which the chip does not run (the fp32 parameters,
    # 12.2 MiB, would not fit its 8 MB; in int8 they do): left out, the conversion says so
    assert analysis.review() == [first]
    assert (
        "the other findings are left out, as their gains would be measured in fp32: analyse with --dtype int8 to see "
        "them" in first.detail
    )


@pytest.mark.parametrize("name, encoder", [("whisper-optimum", 1500), ("t5-optimum", 256)])
def test_a_merged_decoder_takes_the_time_of_its_twin_with_past_on_every_bundled_target(export, name, encoder):
    """optimum's merged decoder runs the branch of its If that use_cache_branch selects (True in
    decode): the same nodes as the decoder exported with past, so the same latency (issue 42's
    acceptance: within 2 %) on every bundled target."""
    from onnxroof.roofline.targets import bundled_targets

    targets = sorted(bundled_targets())
    binding = DECODE | {"encoder_seq": encoder}
    merged = onnxroof.analyze(export(f"{name}-decoder-merged"), targets=targets, **binding)
    twin = onnxroof.analyze(export(f"{name}-decoder-with-past"), targets=targets, **binding)
    assert merged.complete and twin.complete
    for ours, theirs in zip(merged.targets, twin.targets):
        assert ours.latency_s == pytest.approx(theirs.latency_s, rel=0.02), ours.target.name


@pytest.mark.parametrize(
    "name, binding",
    [
        ("whisper-optimum-decoder-merged", DECODE | {"encoder_seq": 1500}),
        ("gpt2-static-small", {}),
        ("yolov8n-ultralytics", {}),
    ],
)
def test_the_largest_module_lists_only_its_own_nodes(export, name, binding):
    from onnxroof.compare.modules import OWN_NODES, module_of

    analysis = onnxroof.analyze(export(name), targets=["l4"], **binding)
    (largest,) = [f for f in analysis.review() if f.kind == "largest"]
    (module,) = largest.modules
    prefix = tuple(module.removesuffix(f"/{OWN_NODES}").split("/"))
    paths = {r.name: module_of(r) for r in analysis.run_view.nodes}
    assert largest.nodes and all(paths[n][: len(prefix)] == prefix for n in largest.nodes)
    # down the tree to the first level where the largest module is under half the time
    assert largest.evidence["module_share"] < 0.5
