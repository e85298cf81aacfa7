"""CLI habits a polygraphy or trtexec user expects (issue 21, item 7): help in groups with
examples and a line for every option, "did you mean" for long options, an HTML page written to
a file without -o, an fp8 dtype where targets give fp8 peaks, terminal lines within 120 columns."""

from __future__ import annotations

import argparse
import json

from conftest import run

from onnxroof.cli.app import build_parser


def _subparsers(parser):
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def test_every_option_of_every_command_has_help():
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, sub in _subparsers(build_parser()).items()
        for action in sub._actions
        if action.help is None
    ]
    assert missing == []


def test_help_shows_groups_and_examples():
    parser = _subparsers(build_parser())["summary"]
    text = parser.format_help()
    for heading in ("shapes and values", "targets and timing", "rules and diagnostics", "examples:"):
        assert heading in text
    assert "onnxroof summary model.onnx --target l4" in text


def test_a_mistyped_long_option_gets_a_did_you_mean(capsys):
    code, _, err = run(capsys, "summary", "example:shallownet", "--taget", "l4")
    assert code == 2 and "--taget: did you mean --target?" in err and "Traceback" not in err


def test_another_commands_option_is_not_suggested_as_itself(capsys):
    # compare names its models as paths or example:NAME; --example is summary's (and others') flag
    code, _, err = run(capsys, "compare", "--example", "shallownet", "example:minigooglenet")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--example is not an option of this command; see its --help" in err
    assert "did you mean --example" not in err


def test_diff_as_html_without_output_writes_a_page(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "diff", "example:shallownet", "example:shallownet-separable", "--format", "html")
    written = list(tmp_path.glob("*.diff.html"))
    assert code == 0 and out == "" and len(written) == 1
    assert f"wrote {written[0].name}" in err and written[0].read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_fp8_runs_on_the_fp8_roof_where_a_target_gives_one(capsys):
    # ShallowNet's 328,586 parameters stored in fp8 take one byte each; H100 lists an fp8 peak
    code, out, _ = run(
        capsys, "summary", "example:shallownet", "--dtype", "fp8", "--target", "h100-sxm", "--format", "json"
    )
    document = json.loads(out)
    assert code == 0 and document["totals"]["param_bytes"] == 328_586
    assert document["targets"][0]["model_point"]["roof"] == "fp8"


def test_terminal_lines_fit_120_columns(capsys):
    for argv in (
        ("targets",),
        ("summary", "example:minigooglenet", "--target", "l4", "--target", "jetson-orin-nano"),
        ("compare", "example:shallownet", "example:minigooglenet", "--target", "l4", "--target", "h100-sxm"),
    ):
        code, out, _ = run(capsys, *argv, "-q") if argv[0] != "targets" else run(capsys, *argv)
        assert code == 0
        assert max(len(line) for line in out.splitlines()) <= 120, argv


def test_explain_takes_its_flags_anywhere_and_shows_the_node_on_a_target(capsys, tmp_path):
    # ShallowNet's conv2d_0: 884,736 MACs; on myriad-x it is fused with its ReLU and the Flatten
    code, out, _ = run(capsys, "explain", "example:shallownet", "--batch", "1", "conv2d_0", "--target", "myriad-x")
    assert code == 0 and "applied 1·32·1024·3·9 = 884,736 MACs" in out
    block = out[out.index("target myriad-x") :]
    assert "compute " in block and "DRAM " in block and "-bound" in block
    code, again, _ = run(
        capsys, "explain", "--example", "shallownet", "conv2d_0", "--batch", "1", "--target", "myriad-x"
    )
    assert code == 0 and again == out
    code, _, err = run(capsys, "explain", "example:shallownet")
    assert code == 2 and "explain takes a model and a node name" in err


def test_explain_help_lists_only_what_it_accepts():
    text = _subparsers(build_parser())["explain"].format_help()
    for absent in ("--sweep", "--emit-order", "--fail-if", "--output"):
        assert absent not in text


def test_a_word_after_a_switch_is_not_silently_the_model(capsys):
    code, _, err = run(capsys, "summary", "--partial", "yes")
    assert code == 2 and "--partial takes no value, so 'yes' was read as the model path" in err
    code, _, err = run(capsys, "summary", "no-such-model.onnx")
    assert code == 2 and "no such file" in err  # a missing file after no switch: the usual message


def test_targets_fits_120_columns_whatever_the_names_and_paths(capsys, tmp_path, monkeypatch):
    # issue 47: a user's own target (a 60-character name, in a deep folder whose path the notes
    # name) and a broken file there: every line within 120 columns, the name whole on its own line
    from conftest import target_text

    name = "a-calibrated-workstation-in-the-lab-with-a-long-descriptive-n"[:60]
    folder = tmp_path.joinpath(*["a-deep-folder-of-targets"] * 4)
    folder.mkdir(parents=True)
    figures = {
        "peak_ops_per_s.fp32": 1.23456e20,
        "dram.bandwidth_bytes_per_s": 3.35e12,
        "dram.size_bytes": 85899345920,
        "onchip.size_bytes": 52428800,
        "onchip.bandwidth_bytes_per_s": 1e13,
        "node_overhead_s": 3e-6,
    }
    (folder / f"{name}.toml").write_text(target_text(figures, name=name, description="x" * 200))
    (folder / f"{'b' * 60}.toml").write_text("not a target")
    monkeypatch.setenv("ONNXROOF_TARGETS", str(folder))
    code, out, _ = run(capsys, "targets")
    assert code == 0 and len(name) == 60
    assert [line for line in out.splitlines() if len(line) > 120] == []
    assert any(line.startswith(f"{name} ") or line == name for line in out.splitlines())
