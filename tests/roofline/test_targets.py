"""Hardware targets: every bundled file loads and validates, ridge points by hand, the roof
fallback, and malformed files give one clear UsageError naming the field."""

from __future__ import annotations

import math
import re

import pytest

from onnxroof.core.errors import OptionError, UsageError
from onnxroof.roofline.targets import DTYPES, ROOF_PREFERENCE, TAGS, bundled_targets, load_target, parse_target

EXPECTED = {
    "myriad-x",
    "tpu-v1",
    "fpga-ddr100",  # the reference exercises
    "h100-sxm",
    "h200-sxm",
    "a100-80gb-sxm",
    "l4",
    "jetson-orin-nano",
    "jetson-orin-nano-super",
    "jetson-agx-orin",
    "coral-edge-tpu",
    "raspberry-pi-5",
    "raspberry-pi-5-onnxruntime",
    "jetson-orin-nano-super-tensorrt",
    "jetson-orin-nano-tensorrt",
    "apple-m2-gpu",
    "xeon-8480-socket",
    "hailo-8",
    "hailo-8l",
}


def all_figures(target):
    """(label, Figure) for every figure a target carries."""
    yield "dram.bandwidth_bytes_per_s", target.dram_bytes_per_s
    for roof, figure in target.peak_ops_per_s.items():
        yield f"peak_ops_per_s.{roof}", figure
    for kind, table in (("mul_pj", target.mul_pj), ("add_pj", target.add_pj)):
        for roof, figure in table.items():
            yield f"energy.{kind}.{roof}", figure
    for label in (
        "dram_pj_per_byte",
        "onchip_bytes",
        "onchip_bytes_per_s",
        "onchip_pj_per_byte",
        "process_nm",
        "clock_hz",
        "power_w",
    ):
        figure = getattr(target, label)
        if figure is not None:
            yield label, figure


# --- every bundled target -------------------------------------------------------------------


def test_the_bundled_set_is_complete():
    assert EXPECTED <= set(bundled_targets())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_target_loads_and_validates(name):
    target = load_target(name)
    assert target.name == name  # the file stem is the target name
    assert target.description.strip()
    assert target.peak_ops_per_s and set(target.peak_ops_per_s) <= set(DTYPES)
    for label, figure in all_figures(target):
        assert figure.value > 0 and math.isfinite(figure.value), label
        assert figure.tag in TAGS, label
        assert figure.source.strip(), label
    # energies name the process node's table they come from, and a named table is used
    has_energy = bool(target.mul_pj or target.add_pj or target.dram_pj_per_byte or target.onchip_pj_per_byte)
    assert has_energy == bool(target.energy_table)
    assert set(target.mul_pj) == set(target.add_pj)  # an op's energy needs both halves


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_estimated_roofs_and_bandwidths_show_their_arithmetic(name):
    target = load_target(name)
    for label, figure in [
        ("dram.bandwidth_bytes_per_s", target.dram_bytes_per_s),
        *((f"peak_ops_per_s.{r}", f) for r, f in target.peak_ops_per_s.items()),
    ]:
        if figure.tag == "estimate":
            assert "=" in figure.source and any(c.isdigit() for c in figure.source), label


def test_reference_exercises_use_the_45nm_table_and_small_nodes_the_7nm_one():
    for name in ("myriad-x", "tpu-v1", "fpga-ddr100"):
        assert load_target(name).energy_table == "Horowitz, ISSCC 2014, 45 nm"
    for name in ("h100-sxm", "h200-sxm", "a100-80gb-sxm", "l4", "apple-m2-gpu"):
        target = load_target(name)
        assert target.energy_table == "Jouppi et al., ISCA 2021, 7 nm"
        assert target.process_nm.value <= 7
        assert target.mul_pj["fp32"].value == 1.31
        if target.process_nm.value < 7:  # borrowed from another node: says so
            assert "upper bound" in target.mul_pj["fp32"].source


def test_dense_not_sparse_figures():
    # NVIDIA datasheets print sparse Tensor Core figures (2x dense); the targets carry dense ones
    h100 = load_target("h100-sxm")
    assert h100.peak_ops_per_s["fp16"].value == 1979e12 / 2
    assert h100.peak_ops_per_s["int8"].value == 3958e12 / 2
    assert load_target("a100-80gb-sxm").peak_ops_per_s["fp16"].value == 312e12
    assert load_target("l4").peak_ops_per_s["int8"].value == 485e12 / 2


# --- ridge points by hand -------------------------------------------------------------------


def test_ridge_myriad_x_fp32():
    assert load_target("myriad-x").ridge("fp32") == pytest.approx(44.8e9 / 12.8e9) == pytest.approx(3.5)


def test_ridge_tpu_v1_int8():
    # 92 TOPS / 34 GB/s = 2,706 ops per DRAM byte. Jouppi et al. (ISCA 2017) put the ridge near
    # 1,350 because the paper's operational intensity counts ops per byte of *weight* memory
    # fetched, not per byte of all DRAM traffic as onnxroof does.
    assert load_target("tpu-v1").ridge("int8") == pytest.approx(92e12 / 34e9) == pytest.approx(2705.88, abs=0.01)


def test_ridge_h100_fp16():
    assert load_target("h100-sxm").ridge("fp16") == pytest.approx(989.5e12 / 3.35e12) == pytest.approx(295.37, abs=0.01)


def test_ridge_fpga_ddr100_int8():
    # 2 MACs x 2 ops x 100 MHz over 1 B x 2 x 100 MHz
    assert load_target("fpga-ddr100").ridge("int8") == pytest.approx(2.0)


# --- the roof fallback ----------------------------------------------------------------------


def test_roof_uses_the_matching_roof_when_present():
    h100 = load_target("h100-sxm")
    assert h100.roof("float16") == ("fp16", 989.5e12)
    assert h100.roof("bfloat16") == ("bf16", 989.5e12)
    assert h100.roof("float32") == ("fp32", 67e12)
    assert h100.roof("uint8") == ("int8", 1979e12)


def test_roof_falls_back_per_roof_preference():
    assert ROOF_PREFERENCE["fp16"] == ("fp16", "bf16", "fp32", "int8")
    # int8-only target: fp16 -> (no fp16, no bf16, no fp32) -> int8
    assert load_target("tpu-v1").roof("float16") == ("int8", 92e12)
    # fp32-only GPU: fp16 -> (no fp16, no bf16) -> fp32
    assert load_target("apple-m2-gpu").roof("float16") == ("fp32", 3.579e12)
    # no bf16 on the Cortex-A76: bf16 -> fp16
    assert load_target("raspberry-pi-5").roof("bfloat16") == ("fp16", 307.2e9)
    # no int4 on Hopper: int4 -> int8
    assert load_target("h100-sxm").roof("int4") == ("int8", 1979e12)


def test_roof_fallback_on_a_custom_target(tmp_path):
    path = write(tmp_path, VALID.replace(FP16_BLOCK, ""))  # fp32 and int8 only
    target = parse_target(path)
    assert "fp16" not in target.peak_ops_per_s
    assert target.roof("float16") == ("fp32", 1e12)
    assert target.roof("bfloat16") == ("fp32", 1e12)
    assert target.roof("int4") == ("int8", 4e12)
    assert target.roof("float64") == ("fp32", 1e12)
    assert target.roof("bool") == ("fp32", 1e12)  # unknown element types run on the fp32 roof


# --- malformed files ------------------------------------------------------------------------

FP16_BLOCK = """
[peak_ops_per_s.fp16]
value = 2e12
tag = "estimate"
source = "2 x the fp32 rate = 2e12"
"""

VALID = (
    """schema = "onnxroof-target/1"
name = "tiny"
description = "a test target"

[peak_ops_per_s.fp32]
value = 1e12
tag = "vendor"
source = "datasheet"
"""
    + FP16_BLOCK
    + """
[peak_ops_per_s.int8]
value = 4e12
tag = "vendor"
source = "datasheet"

[dram.bandwidth_bytes_per_s]
value = 100e9
tag = "vendor"
source = "datasheet"

[energy]
table = "Horowitz, ISSCC 2014, 45 nm"

[energy.mul_pj.fp32]
value = 3.7
tag = "paper"
source = "Horowitz, ISSCC 2014"

[energy.add_pj.fp32]
value = 0.9
tag = "paper"
source = "Horowitz, ISSCC 2014"
"""
)


def write(tmp_path, text: str, name: str = "tiny.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def usage_error(path) -> str:
    with pytest.raises(UsageError) as info:
        load_target(str(path))
    message = str(info.value)
    assert "\n" not in message  # one line
    assert str(path) in message  # names the file
    return message


def test_valid_file_loads_by_path(tmp_path):
    target = load_target(str(write(tmp_path, VALID)))
    assert target.name == "tiny"
    assert target.ridge("fp32") == pytest.approx(10.0)
    assert target.energy_per_op_pj("fp32") == pytest.approx((3.7 + 0.9) / 2)
    assert target.energy_per_op_pj("int8") is None


_DRAM_FIGURE = '[dram.bandwidth_bytes_per_s]\nvalue = 100e9\ntag = "vendor"\nsource = "datasheet"\n'

# (what is replaced in VALID, by what, how many times (0: all), what the one-line error says)
BROKEN_FILES = {
    "missing dram bandwidth": (_DRAM_FIGURE, "[dram]\n", 0, ["'dram.bandwidth_bytes_per_s' is missing"]),
    "missing dram section": (_DRAM_FIGURE, "", 0, ["'[dram]' is missing"]),
    "negative figure": ("value = 4e12", "value = -4e12", 0, ["'peak_ops_per_s.int8.value' must be positive", "-4"]),
    "zero figure": ("value = 100e9", "value = 0", 0, ["'dram.bandwidth_bytes_per_s.value' must be positive"]),
    "missing source": (
        'value = 4e12\ntag = "vendor"\nsource = "datasheet"\n',
        'value = 4e12\ntag = "vendor"\n',
        0,
        ["'peak_ops_per_s.int8.source' must say where the figure comes from"],
    ),
    "blank source": ('source = "Horowitz, ISSCC 2014"', 'source = "  "', 1, ["'energy.mul_pj.fp32.source'"]),
    "bad tag": (
        'value = 100e9\ntag = "vendor"',
        'value = 100e9\ntag = "guess"',
        0,
        ["'dram.bandwidth_bytes_per_s.tag' must be one of vendor, paper, estimate, measured", "'guess'"],
    ),
    "non-number value": (
        "value = 1e12",
        'value = "1 TFLOPS"',
        0,
        ["'peak_ops_per_s.fp32.value' must be a number", "1 TFLOPS"],
    ),
    "boolean is not a number": ("value = 1e12", "value = true", 0, ["'peak_ops_per_s.fp32.value' must be a number"]),
    "figure that is not a table": (
        _DRAM_FIGURE,
        "[dram]\nbandwidth_bytes_per_s = 100e9\n",
        0,
        ["'dram.bandwidth_bytes_per_s' must be a table {value, tag, source}"],
    ),
    "unknown dtype key": (
        "[peak_ops_per_s.int8]",
        "[peak_ops_per_s.fp64]",
        0,
        ["'peak_ops_per_s.fp64' is not a known dtype", "fp32, tf32, fp16, bf16, fp8, int8, int4"],
    ),
    "unknown energy dtype key": (
        "[energy.add_pj.fp32]",
        "[energy.add_pj.float32]",
        0,
        ["'energy.add_pj.float32' is not a known dtype"],
    ),
    "no peaks": ("[peak_ops_per_s.", "[unused.", 0, ["'peak_ops_per_s' is missing"]),
    "missing name": ('name = "tiny"\n', "", 0, ["'name' must be a non-empty string"]),
    "wrong schema": (
        'schema = "onnxroof-target/1"',
        'schema = "onnxroof-target/9"',
        0,
        ["'schema' is 'onnxroof-target/9'"],
    ),
    "invalid toml": ('tag = "vendor"', 'tag = "vendor', 1, ["not valid TOML"]),
}


@pytest.mark.parametrize("case", list(BROKEN_FILES))
def test_a_broken_file_gets_one_line_naming_the_field(tmp_path, case):
    old, new, count, expected = BROKEN_FILES[case]
    assert old in VALID  # the case still breaks what it means to
    message = usage_error(write(tmp_path, VALID.replace(old, new, count or -1)))
    for fragment in expected:
        assert fragment in message


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e308", "5e-324", "9" * 400])
def test_a_figure_out_of_range_is_refused_naming_the_field(tmp_path, value):
    message = usage_error(write(tmp_path, VALID.replace("value = 100e9", f"value = {value}")))
    assert "'dram.bandwidth_bytes_per_s.value'" in message and len(message) < 300
    assert "out of range" in message or "must be positive" in message


def test_the_figure_range_ends_are_accepted(tmp_path):
    text = VALID.replace("value = 100e9", "value = 1e21").replace("value = 3.7", "value = 1e-12")
    assert load_target(str(write(tmp_path, text))).dram_bytes_per_s.value == 1e21


@pytest.mark.parametrize("nested", ["[" * 5000 + "]" * 5000, "{ a = " * 3000 + "1" + " }" * 3000])
def test_the_readers_own_limits_are_a_usage_error(tmp_path, nested):
    message = usage_error(write(tmp_path, VALID.replace("value = 100e9", f"value = {nested}")))
    assert "nested too deeply" in message or "dram.bandwidth_bytes_per_s" in message


def test_a_huge_point_count_is_refused(tmp_path):
    text = VALID + (
        f'\n[efficiency.gemm]\nvalue = 0.5\ntag = "estimate"\nsource = "x"\nby_rows = [[1, 0.2], [{"9" * 400}, 0.5]]\n'
    )
    message = usage_error(write(tmp_path, text))
    assert "efficiency.gemm.by_rows" in message and len(message) < 300


def test_missing_file():
    with pytest.raises(UsageError, match="no such file"):
        load_target("/nonexistent/dir/target.toml")


# --- unknown names --------------------------------------------------------------------------


def test_unknown_target_name_suggests_close_names():
    with pytest.raises(UsageError) as info:
        load_target("h100")
    message = str(info.value)
    assert "no such target" in message and "did you mean" in message and "h100-sxm" in message


def test_a_comma_separated_list_says_to_repeat_the_option():
    # a new user's first try at two targets: one name per --target, as the flag's help says
    with pytest.raises(OptionError) as info:
        load_target("hailo-8,coral-edge-tpu")
    assert info.value.worded({"targets": "--target"}) == (
        "--target hailo-8,coral-edge-tpu: no such target; give one name or file each time, repeating --target "
        "for the next (a list, in Python)"
    )


def test_unknown_target_name_suggests_several():
    with pytest.raises(UsageError) as info:
        load_target("jetson-orin")
    message = str(info.value)
    assert "jetson-orin-nano" in message and "jetson-agx-orin" in message


def test_unknown_target_name_without_close_match_points_to_the_list():
    with pytest.raises(UsageError, match="onnxroof targets"):
        load_target("zzzzzzzzzzzz")


# --- the `onnxroof targets` listing ---------------------------------------------------------


def test_targets_command_lists_every_bundled_target(capsys):
    from onnxroof.cli.app import main

    assert main(["targets"]) == 0
    out = capsys.readouterr().out
    for name in EXPECTED:
        assert name in out
    # h100-sxm fp16: 295.4 FLOP/B, written as every intensity (3 figures: issue 47's one formatter)
    assert "ridge 295 FLOP/B" in out


# --- [parallel]: the units and the tile each takes ------------------------------------------

_GOOD_PARALLEL = (
    '[parallel]\nkind = "tiles"\n[parallel.units]\nvalue = 132\ntag = "vendor"\nsource = "s"\n'
    '[parallel.tile_rows.fp16]\nvalue = 64\ntag = "estimate"\nsource = "s"\n'
    '[parallel.tile_cols.fp16]\nvalue = 8\ntag = "estimate"\nsource = "s"\n'
)


def _with_parallel(tmp_path, section: str):
    path = tmp_path / "t.toml"
    path.write_text(
        'name = "t"\ndescription = "d"\n'
        '[peak_ops_per_s.fp16]\nvalue = 1e12\ntag = "vendor"\nsource = "s"\n'
        '[dram.bandwidth_bytes_per_s]\nvalue = 1e9\ntag = "vendor"\nsource = "s"\n' + section
    )
    return path


def test_a_parallel_section_reads_units_and_tiles_per_roof(tmp_path):
    parallel = parse_target(_with_parallel(tmp_path, _GOOD_PARALLEL)).parallel
    assert (parallel.kind, parallel.units.value, parallel.tile("fp16"), parallel.tile("int8")) == (
        "tiles",
        132,
        (64, 8),
        None,
    )
    assert parse_target(_with_parallel(tmp_path, "")).parallel is None


@pytest.mark.parametrize(
    "broken, field",
    [
        (_GOOD_PARALLEL.replace('"tiles"', '"waves"'), "parallel.kind"),
        (_GOOD_PARALLEL.replace("value = 132", "value = 13.5"), "parallel.units.value"),
        (_GOOD_PARALLEL.replace("tile_cols.fp16", "tile_cols.int8"), "'parallel.tile_rows' and 'parallel.tile_cols'"),
        (_GOOD_PARALLEL.replace("tile_rows.fp16", "tile_rows.fp12"), "parallel.tile_rows.fp12"),
        (_GOOD_PARALLEL.replace('[parallel.units]\nvalue = 132\ntag = "vendor"\nsource = "s"\n', ""), "parallel.units"),
    ],
)
def test_a_broken_parallel_section_names_the_field(tmp_path, broken, field):
    with pytest.raises(UsageError, match=re.escape(field)):
        parse_target(_with_parallel(tmp_path, broken))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_parallel_figures_have_sources(name):
    parallel = load_target(name).parallel
    if parallel is None:
        return
    figures = [parallel.units, *parallel.tile_rows.values(), *parallel.tile_cols.values()]
    assert all(f.tag in TAGS and f.source.strip() for f in figures)
    assert set(parallel.tile_rows) <= set(load_target(name).peak_ops_per_s)  # a tile for a roof the target has
