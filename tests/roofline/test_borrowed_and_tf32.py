"""Figures that say where they come from: a launch cost borrowed from other targets is marked in
every output and the error band does not cover a latency resting on it; float32 products run on
the roof the target's runtime uses ([fp32_math]); energy says whether it is dynamic only or adds
the target's static power x the latency. Every number below is worked out by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import make_model, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.cli.app import main
from onnxroof.core.errors import UsageError
from onnxroof.ops import COST_RULES
from onnxroof.roofline.targets import load_target, parse_target

FIGURE = 'tag = "estimate"\nsource = "a test figure"'
MEASURED = 'tag = "measured"\nsource = "a test fit"'


def _target(tmp_path, extra: str = "", launch_tag: str = "measured", name: str = "t") -> str:
    """fp32 at 1e12 op/s and tf32 at 8e12, DRAM at 1e9 B/s, nothing on chip, a 1 µs launch (tagged
    ``launch_tag``), a measured gemm efficiency of 1 (so the latency is a forecast), a ±20 % band on every roof."""
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'schema = "onnxroof-target/1"\nname = "{name}"\ndescription = "test target"\n'
        f"[peak_ops_per_s.fp32]\nvalue = 1e12\n{FIGURE}\n"
        f"[peak_ops_per_s.tf32]\nvalue = 8e12\n{FIGURE}\n"
        f"[dram.bandwidth_bytes_per_s]\nvalue = 1e9\n{FIGURE}\n"
        f'[node_overhead_s]\nvalue = 1e-6\ntag = "{launch_tag}"\nsource = "a test launch"\n'
        f"[efficiency.gemm]\nvalue = 1.0\n{MEASURED}\n"
        f"[error_band]\nvalue = 0.2\n{MEASURED}\n" + extra
    )
    return str(path)


TF32 = '[fp32_math]\nroof = "tf32"\nsource = "the runtime runs float32 products on TF32 (a test)"\n'


def _matmul(rows: int, depth: int, cols: int):
    return make_model(
        [helper.make_node("MatMul", ["a", "w"], ["y"], name="mm")],
        [("a", TensorProto.FLOAT, [rows, depth])],
        [("y", TensorProto.FLOAT, [rows, cols])],
        [("w", zeros(depth, cols))],
    )


def _relu():
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [("x", TensorProto.FLOAT, [1, 256])],
        [("y", TensorProto.FLOAT, [1, 256])],
    )


# --- [fp32_math]: TF32 under TensorRT --------------------------------------------------------


def test_a_float32_matmul_runs_on_the_tf32_roof_where_the_runtime_says_so(tmp_path):
    # 512 x 512 by 512 x 512: 134,217,728 MACs = 268,435,456 FLOPs. DRAM: a, w and y are 1 MiB each,
    # 3,145,728 B / 1e9 B/s = 3.146 ms; compute on tf32 268,435,456 / 8e12 = 33.6 µs, on fp32 268.4 µs:
    # both under the DRAM time, so use a target with fast DRAM to see the roof
    fast = "[peak_ops_per_s.fp32]\n"
    tf32 = _target(tmp_path, TF32, name="tf32").replace("", "")
    for path in (tf32,):
        Path(path).write_text(Path(path).read_text().replace("value = 1e9\n", "value = 1e18\n"))
    plain = _target(tmp_path, name="plain")
    Path(plain).write_text(Path(plain).read_text().replace("value = 1e9\n", "value = 1e18\n"))
    assert fast  # the fp32 roof stays in the file: elementwise work runs on it
    reports = onnxroof.analyze(_matmul(512, 512, 512), targets=[tf32, plain], fusion="none").targets
    on_tf32, on_fp32 = (next(k.placement for k in r.nodes if k.op_type == "MatMul") for r in reports)
    assert on_tf32.roof == "tf32" and on_fp32.roof == "fp32"
    assert on_tf32.compute_s == pytest.approx(268_435_456 / 8e12)
    assert on_fp32.compute_s == pytest.approx(268_435_456 / 1e12)


def test_elementwise_float32_work_stays_on_the_fp32_roof(tmp_path):
    report = onnxroof.analyze(_relu(), targets=[_target(tmp_path, TF32)], fusion="none").targets[0]
    (relu,) = [k for k in report.nodes if k.op_type == "Relu"]
    assert relu.placement.roof == "fp32"


def test_fp32_math_is_validated(tmp_path):
    bad_roof = _target(tmp_path, '[fp32_math]\nroof = "fp16"\nsource = "x"\n', name="a")
    with pytest.raises(UsageError, match="'fp32_math.roof' must be one of fp32, tf32"):
        parse_target(Path(bad_roof))
    no_source = _target(tmp_path, '[fp32_math]\nroof = "tf32"\n', name="b")
    with pytest.raises(UsageError, match="'fp32_math.source'"):
        parse_target(Path(no_source))
    no_peak = Path(_target(tmp_path, TF32, name="c"))
    no_peak.write_text(
        no_peak.read_text().replace("[peak_ops_per_s.tf32]\nvalue = 8e12\n", "[process_nm]\nvalue = 4\n")
    )
    with pytest.raises(UsageError, match="no 'peak_ops_per_s.tf32'"):
        parse_target(no_peak)


@pytest.mark.parametrize(
    "name, tf32",
    [
        ("h100-sxm", 494.7e12),
        ("h200-sxm", 494.7e12),
        ("a100-80gb-sxm", 156e12),
        ("a100-40gb-sxm", 156e12),
        ("l4", 60e12),
    ],
)
def test_the_tensorrt_targets_run_float32_products_on_tf32(name, tf32):
    # the datasheets' TF32 Tensor Core figures are "with sparsity" on H100/H200 (989.4) and L4 (120): dense is half
    target = load_target(name)
    assert target.fp32_math_roof == "tf32" and "kTF32" in target.fp32_math_source
    assert target.peak_ops_per_s["tf32"].value == tf32
    assert target.parallel.tile("tf32") == (64, 8)
    # TF32 multiplies like fp16 and adds like fp32: (0.3895 + 0.4) / 2 pJ per op
    assert target.energy_per_op_pj("tf32") == pytest.approx((0.3895 + 0.4) / 2)


# --- borrowed figures -------------------------------------------------------------------------


def test_a_borrowed_launch_cost_is_named_and_the_band_does_not_cover_a_latency_resting_on_it(tmp_path):
    # one Relu over 256 floats: it reads 1,024 B and writes 1,024 B from DRAM, 2,048 B / 1e9 B/s =
    # 2.048 µs, plus the 1 µs launch: 3.048 µs, of which the launch is 1 / 3.048 = 33 %, over a tenth
    report = onnxroof.analyze(_relu(), targets=[_target(tmp_path, launch_tag="borrowed")], fusion="none").targets[0]
    assert report.latency_s == pytest.approx(3.048e-6)
    assert set(report.borrowed) == {"node_overhead_s"}
    assert str(report.latency_kind) == "forecast" and report.band is None
    assert any("borrowed from other targets and takes 33% of this model's time" in note for note in report.notes)


def test_a_borrowed_launch_under_a_tenth_of_the_time_leaves_the_band(tmp_path):
    # a 1024 x 1024 by 1024 x 1024 MatMul: 2,147,483,648 FLOPs / 1e12 = 2.147 ms (fp32: no [fp32_math]);
    # DRAM 3 x 4 MiB = 12,582,912 B / 1e9 = 12.58 ms, the longest; one 1 µs launch is 0.008 % of it
    report = onnxroof.analyze(
        _matmul(1024, 1024, 1024), targets=[_target(tmp_path, launch_tag="borrowed")], fusion="none"
    ).targets[0]
    assert report.latency_s == pytest.approx(12_582_912 / 1e9 + 1e-6)
    assert report.band is not None and report.band.value == 0.2
    assert set(report.borrowed) == {"node_overhead_s"}


def test_a_measured_launch_cost_keeps_the_band(tmp_path):
    report = onnxroof.analyze(_relu(), targets=[_target(tmp_path)], fusion="none").targets[0]
    assert report.borrowed == {} and report.band.value == 0.2


def test_every_output_says_the_launch_cost_is_borrowed(tmp_path, capsys):
    target = _target(tmp_path, launch_tag="borrowed")
    model = tmp_path / "relu.onnx"
    model.write_bytes(_relu().SerializeToString())
    assert main(["summary", str(model), "--target", target, "--fusion", "none"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # the lines as words: the summary wraps them
    assert "latency 3.05 µs (launch cost borrowed)" in text
    assert "±20% on its published rows; the launch cost (1 µs a kernel, 33% of this time) is borrowed" in text
    assert main(["summary", str(model), "--target", target, "--fusion", "none", "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["targets"]
    assert entry["borrowed"] == {"node_overhead_s": {"value": 1e-6, "source": "a test launch"}}
    assert entry["error_band"] is None
    assert main(["summary", str(model), "--target", target, "--fusion", "none", "--format", "markdown"]) == 0
    assert "launch cost borrowed" in capsys.readouterr().out  # Markdown escapes the brackets
    assert main(["explain", str(model), "relu", "--target", target, "--fusion", "none"]) == 0
    assert "launch 1 µs per kernel (borrowed from other targets" in " ".join(capsys.readouterr().out.split())
    assert main(["targets"]) == 0
    listing = capsys.readouterr().out
    h100 = " ".join(
        listing[listing.index("\nh100-sxm") : listing.index("\nh200-sxm")].split()
    )  # wrapped lines as words
    assert "launch 7.37 µs per kernel (borrowed from other targets)" in h100


def test_the_html_card_says_borrowed_and_dynamic(tmp_path):
    from onnxroof.report.html.page import target_card

    report = onnxroof.analyze(_relu(), targets=[_target(tmp_path, launch_tag="borrowed")], fusion="none").targets[0]
    card = target_card(report)
    assert card.latency_kind == "forecast · launch cost borrowed" and card.energy_kind == "dynamic"


@pytest.mark.parametrize("name", ["h100-sxm", "h200-sxm"])
def test_h100_and_h200_borrow_their_launch_cost_and_say_why(name):
    launch = load_target(name).node_overhead_s
    # the median of the TensorRT targets with batch-1 rows: A100 9.239, Orin 7.374, L4 2.992 µs -> 7.374
    assert launch.tag == "borrowed" and launch.value == 7.374e-06
    assert (
        "borrowed, the median of the runtime's targets that have one (a100-80gb-sxm, jetson-agx-orin, l4)"
        in launch.source
    )
    assert "inference_results_v4.1" in launch.source


def test_the_fit_writes_a_borrowed_launch_cost_with_its_tag():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    rules = dict(COST_RULES)
    try:
        import fit_efficiency as fe
    finally:  # the benchmarks register their harness's ops as a plugin would: none may outlive this test
        COST_RULES.clear()
        COST_RULES.update(rules)

    rows = [
        SimpleNamespace(target="h100-sxm", outcome=SimpleNamespace(index="0", spec=SimpleNamespace(dtype="int8"))),
        SimpleNamespace(target="l4", outcome=SimpleNamespace(index="1", spec=SimpleNamespace(dtype="int8"))),
    ]
    fit = fe.Fit({"h100-sxm": 0.6, "l4": 0.45}, 0.52, {"h100-sxm": 3e-6, "l4": 3e-6}, rows, {"h100-sxm"})
    borrowed = fe.toml_block("h100-sxm", fit, 0.3, 1, "TensorRT")
    own = fe.toml_block("l4", fit, 0.2, 1, "TensorRT")
    assert '[node_overhead_s]\nvalue = 3e-06\ntag = "borrowed"' in borrowed and "(l4)" in borrowed
    assert '[node_overhead_s]\nvalue = 3e-06\ntag = "measured"' in own


# --- energy: dynamic, or with the target's static power -----------------------------------------

ENERGY = (
    "[energy.mul_pj.fp32]\nvalue = 4\n" + FIGURE + "\n[energy.add_pj.fp32]\nvalue = 2\n" + FIGURE + "\n"
    "[dram.energy_pj_per_byte]\nvalue = 10\n" + FIGURE + "\n"
)


def test_energy_is_dynamic_unless_the_target_states_static_power(tmp_path):
    # the Relu: 256 FLOPs x (4 + 2) / 2 pJ = 768 pJ; 2,048 DRAM bytes x 10 pJ = 20,480 pJ: 21,248 pJ dynamic
    dynamic = onnxroof.analyze(_relu(), targets=[_target(tmp_path, ENERGY, name="d")], fusion="none").targets[0]
    assert dynamic.energy_kind == "dynamic" and "static" not in dynamic.energy_split_j
    assert dynamic.energy_j == pytest.approx(21_248e-12)
    # 2 W static over the 3.048 µs latency: 6.096 µJ more
    static = onnxroof.analyze(
        _relu(),
        targets=[_target(tmp_path, ENERGY + "[static_power_w]\nvalue = 2\n" + FIGURE + "\n", name="s")],
        fusion="none",
    ).targets[0]
    assert static.energy_kind == "dynamic + static"
    assert static.energy_split_j["static"] == pytest.approx(2 * 3.048e-6)
    assert static.energy_j == pytest.approx(21_248e-12 + 6.096e-6)


def test_the_outputs_say_what_the_energy_counts(tmp_path, capsys):
    model = tmp_path / "relu.onnx"
    model.write_bytes(_relu().SerializeToString())
    plain, static = (
        _target(tmp_path, ENERGY, name="d"),
        _target(tmp_path, ENERGY + "[static_power_w]\nvalue = 2\n" + FIGURE + "\n", name="s"),
    )
    assert main(["summary", str(model), "--target", plain, "--target", static, "--fusion", "none"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "dynamic energy 21.2 nJ (compute 0.768 nJ" in text and "the target states no static power" in text
    assert (
        "dynamic + static energy 6.12 µJ (dynamic: compute 0.768 nJ" in text
        and "static 6.1 µJ = 2 W x the latency" in text
    )
    assert main(["summary", str(model), "--target", static, "--fusion", "none", "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["targets"]
    assert entry["energy_kind"] == "dynamic + static" and entry["static_power_w"] == 2
    assert entry["energy_split"]["static"] == pytest.approx(6.096e-6)


def test_minigooglenet_s_energy_on_l4_and_h100_is_said_to_be_dynamic():
    # neither states a static power: the energy is the work's, the same on both, and says so
    from onnxroof.core.examples import build_example

    l4, h100 = onnxroof.analyze(build_example("minigooglenet"), targets=["l4", "h100-sxm"]).targets
    assert l4.energy_kind == h100.energy_kind == "dynamic"
    assert l4.energy_j == pytest.approx(h100.energy_j)


@pytest.mark.parametrize("name, watts", [("tpu-v1", 28), ("raspberry-pi-5", 4.08)])
def test_targets_with_a_published_idle_power_state_it(name, watts):
    # tpu-v1: Jouppi et al. 2017, 28 W idle per die; raspberry-pi-5: 800 mA x 5.1 V = 4.08 W
    figure = load_target(name).static_power_w
    assert figure.value == watts and figure.source
