"""Will it fit: parameters + peak activations (which hold a decoder's KV cache) against the
device memory, and the largest batch and longest context that fit. Derived by hand."""

from __future__ import annotations

from conftest import make_model, target_text
from models import decoder_block
from onnx import TensorProto, helper

import onnxroof


def small_device(tmp_path) -> str:
    path = tmp_path / "small.toml"
    path.write_text(
        target_text(
            {"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e11, "dram.size_bytes": 1_048_576},
            name="small",
        )
    )
    return str(path)


def test_a_decoder_fits_at_one_context_and_not_at_another(tmp_path):
    # the decoder's parameters: four 64 x 64 float projections, 65,536 B. Decoding at context C,
    # the Concat copies the past into the present, so while the key's transpose runs the past and
    # present keys and values are all live: 2 x 256 x (C - 1) + 2 x 256 x C B, with the new
    # token's q and v (256 B each): 1,024 C B. In 1 MiB: 65,536 + 1,024 C <= 1,048,576 up to C = 960
    short = onnxroof.analyze(decoder_block(), phase="decode", context=100, targets=[small_device(tmp_path)])
    fit = onnxroof.review(short).fit(short.targets[0])
    assert (fit.parameter_bytes, fit.activation_bytes, fit.kv_cache_bytes) == (65_536, 102_400, 51_200)
    assert fit.fits is True
    assert fit.longest_context == 960
    # at batch b everything but the parameters grows b times: 65,536 + 102,400 b <= 1,048,576 to b = 9
    assert fit.largest_batch == 9
    assert not [f for f in short.review() if f.kind == "capacity"]

    long = onnxroof.analyze(decoder_block(), phase="decode", context=1000, targets=[small_device(tmp_path)])
    (first, *_) = long.review()
    fit = onnxroof.review(long).fit(long.targets[0])
    assert fit.need_bytes == 65_536 + 1_024_000 and fit.fits is False
    assert (fit.longest_context, fit.largest_batch) == (960, 0)
    assert first.kind == "capacity" and first.gain_bytes == 65_536 + 1_024_000 - 1_048_576
    assert first.title.startswith(
        "does not fit: parameters 64 KiB + peak activations 1,000 KiB, of which the KV cache "
        "500 KiB, need 1.04 MiB of the 1 MiB device memory"
    )
    assert "the longest context that fits is 960" in first.detail


def test_a_target_without_device_memory_checks_nothing(tmp_path):
    path = tmp_path / "open.toml"
    path.write_text(target_text({"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e11}, name="open"))
    analysis = onnxroof.analyze(decoder_block(), phase="decode", context=100, targets=[str(path)])
    assert onnxroof.review(analysis).fit(analysis.targets[0]).fits is None


def test_a_variant_keeps_its_reports_and_its_peak_not_its_records():
    # the findings hold several variants at once: each keeps only what they read
    from onnxroof.findings.variants import Variants
    from onnxroof.pipeline import analyze as analyze_once

    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [("x", TensorProto.FLOAT, [1, 16])],
        [("y", TensorProto.FLOAT, [1, 16])],
    )
    base = analyze_once(model, targets=["l4"])
    variant = Variants(base, lambda **changes: analyze_once(model, targets=["l4"], **changes)).analysis(batch=2)
    # batch 2: x and y of 2 x 16 floats, both live at the Relu: 2 x 128 B
    assert variant.peak_bytes == 256 and [r.target.name for r in variant.targets] == ["l4"]
    assert variant.targets[0].batch == 2 and not hasattr(variant, "nodes")
