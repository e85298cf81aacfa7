"""Bound or forecast, said everywhere (issue 29, item 5): a target of peak figures gives a lower
bound on the latency (every kernel at its roofs, so a run takes at least that long) and every
output says so; a target whose efficiencies were measured on its runtime gives a forecast, with
its measured error band where it states one.

The model is conftest's conv_relu at batch 1: Conv 9,216 MAC-FLOPs, Relu 256 FLOPs. On the
hand-made target below (1 GFLOP/s fp32, 1 TB/s DRAM, no fusion, no launch cost) each node is its
own kernel and compute-bound: the Conv's bytes are x 512 + W 288 + b 16 + c 1,024 = 1,840 B, 1.84 ns
at 1 TB/s against 9.216 µs of compute; the Relu's 2,048 B are 2.048 ns against 0.256 µs. So the
latency is 9.216 + 0.256 = 9.472 µs ("9.47 µs" at three digits) and the throughput 1 / 9.472 µs
= 105,574.3 inferences/s ("106,000", three significant digits); at a measured efficiency of 0.5 for every class, twice that: 18.944 µs
("18.9 µs") and 52,787.2/s.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run, target_text

import onnxroof
from onnxroof.roofline.targets import EFFICIENCY_CLASSES, LatencyKind, load_target

ROOT = Path(__file__).resolve().parents[2]

PEAKS = {"peak_ops_per_s.fp32": 1e9, "dram.bandwidth_bytes_per_s": 1e12}
MEASURED = "".join(
    f'[efficiency.{name}]\nvalue = 0.5\ntag = "measured"\nsource = "hand"\n' for name in EFFICIENCY_CLASSES
)
BAND = '[error_band]\nvalue = 0.18\ntag = "measured"\nsource = "12 published rows"\n'


@pytest.fixture
def peak_target(tmp_path):
    path = tmp_path / "peak.toml"
    path.write_text(target_text(PEAKS, name="peak"))
    return path


@pytest.fixture
def calibrated_target(tmp_path):
    path = tmp_path / "calibrated.toml"
    path.write_text(target_text(PEAKS, extra=MEASURED + BAND, name="calibrated"))
    return path


def test_peak_figures_give_a_bound_and_measured_efficiencies_a_forecast(tmp_path, peak_target, calibrated_target):
    assert load_target(str(peak_target)).latency_kind == LatencyKind.BOUND
    assert load_target(str(calibrated_target)).latency_kind == LatencyKind.FORECAST
    # an efficiency that is an estimate, not a measurement, leaves the roofs peaks: still a bound
    estimated = tmp_path / "estimated.toml"
    estimated.write_text(target_text(PEAKS, extra=MEASURED.replace('"measured"', '"estimate"', 1), name="estimated"))
    assert load_target(str(estimated)).latency_kind == LatencyKind.BOUND


def test_the_summary_says_at_least_and_at_most_on_a_bound(capsys, conv_relu, peak_target):
    code, out, _ = run(capsys, "summary", conv_relu, "--target", peak_target, "-q")
    assert code == 0
    assert "latency ≥ 9.47 µs · ≤ 106,000 inferences/s" in out
    assert "latency: a lower bound (≥): the target's figures are peaks" in out


def test_a_forecast_carries_its_band_and_no_sign(capsys, conv_relu, calibrated_target):
    code, out, _ = run(capsys, "summary", conv_relu, "--target", calibrated_target, "-q")
    assert code == 0
    # 52,787.2 per s ±18% is ±9,500: rounded to the thousands the band allows (issue 47)
    assert "latency 18.9 µs ±18% · 53,000 ±18% inferences/s" in out
    assert "a forecast from efficiencies measured on the target's runtime, within ±18% (12 published rows)" in out


def test_the_html_card_rounds_the_throughput_to_its_band_as_the_text_does(
    capsys, tmp_path, conv_relu, calibrated_target
):
    # the card printed 52,787.2/s ±18%: the same rounding as the summary's line (±9,500: thousands)
    page = tmp_path / "r.html"
    assert run(capsys, "report", conv_relu, "--target", calibrated_target, "-o", page, "-q")[0] == 0
    html = page.read_text()
    assert ">53,000/s ±18%<" in html and "52,787.2/s" not in html


def test_without_overhead_a_calibrated_target_is_a_bound_again(conv_relu, calibrated_target):
    # --no-overhead runs every kernel at its roofs: 9.472 µs, the peak-figure bound
    report = onnxroof.analyze(str(conv_relu), targets=[str(calibrated_target)], overhead=False).targets[0]
    assert report.latency_s == pytest.approx(9.472e-6)
    assert report.latency_kind == LatencyKind.BOUND


def test_a_band_measured_on_other_roofs_is_not_claimed(capsys, tmp_path, conv_relu):
    # the conv_relu model runs all its time on the fp32 roof: a band measured on int8 kernels
    # does not cover it, one measured on fp32 kernels does
    for roofs, covered in (('["int8"]', False), ('["fp32", "int8"]', True)):
        path = tmp_path / "banded.toml"
        path.write_text(target_text(PEAKS, extra=MEASURED + BAND + f"roofs = {roofs}\n", name="banded"))
        report = onnxroof.analyze(str(conv_relu), targets=[str(path)]).targets[0]
        assert report.latency_kind == LatencyKind.FORECAST
        assert (report.band is not None) == covered
        out = " ".join(run(capsys, "summary", conv_relu, "--target", path, "-q")[1].split())  # unwrapped
        assert ("latency 18.9 µs ±18%" in out) == covered
        assert ("100% of this model's time runs on fp32, which no measurement covered" in out) == (not covered)
        assert ("its error not measured for this model's roofs" in out) == (not covered)


def test_the_json_document_names_the_kind_and_the_band(capsys, conv_relu, peak_target, calibrated_target):
    code, out, _ = run(
        capsys, "summary", conv_relu, "--target", peak_target, "--target", calibrated_target, "--format", "json", "-q"
    )
    peak, calibrated = json.loads(out)["targets"]
    assert (peak["latency_kind"], peak["error_band"]) == ("bound", None)
    assert calibrated["latency_kind"] == "forecast"
    assert calibrated["error_band"] == {"value": 0.18, "source": "12 published rows", "roofs": []}
    assert calibrated["latency_s"] == pytest.approx(18.944e-6)


def test_markdown_and_the_html_card_say_it_too(capsys, tmp_path, conv_relu, peak_target):
    code, out, _ = run(capsys, "summary", conv_relu, "--target", peak_target, "--format", "markdown", "-q")
    assert code == 0
    assert "| peak | ≥ 9.47 µs | ≤ 106,000 |" in out
    # Markdown punctuation is escaped in text from outside the template: \( renders as (
    assert "Latency: a lower bound \\(≥\\): the target's figures are peaks, every kernel at its roofs." in out
    page = tmp_path / "r.html"
    assert run(capsys, "report", conv_relu, "--target", peak_target, "-o", page, "-q")[0] == 0
    html = page.read_text()
    assert ">≥ 9.47 µs<" in html and ">≤ 106,000/s<" in html and ">lower bound<" in html


def test_targets_lists_each_targets_kind(capsys):
    code, out, _ = run(capsys, "targets")
    assert code == 0
    # a bundled target without efficiencies is a bound; one whose file carries the efficiencies
    # fitted on published measurements is a forecast with the error band the fit measured
    fitted = [p for p in (ROOT / "hardware").glob("*.toml") if "# BEGIN fitted by" in p.read_text()]
    assert out.count("latency: a lower bound (peak figures)") == out.count("efficiency: none given")
    assert out.count("latency: a forecast, within ±") == len(fitted) >= 1


def test_an_error_band_out_of_range_is_one_line_exit_2(capsys, tmp_path, conv_relu):
    path = tmp_path / "bad.toml"
    path.write_text(target_text(PEAKS, extra=BAND.replace("0.18", "12.0"), name="bad"))
    code, _, err = run(capsys, "summary", conv_relu, "--target", path, "-q")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "'error_band.value' is the fraction |predicted / measured - 1|" in err
