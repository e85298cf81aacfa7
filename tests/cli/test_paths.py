"""The command line's own paths (cli.py): argument checks, the commands' routing, default output
names, the progress lines, exit codes. Written for the survivors of a mutmut run over cli.py
(docs/testing.md, "Mutation testing"); every case goes through ``onnxroof.cli.app.main``."""

from __future__ import annotations

import json

import onnx
import pytest
from conftest import make_model, run
from models import interleaved_branches_model
from onnx import TensorProto, helper

from onnxroof.cli.output import StageLines
from onnxroof.core.examples import EXAMPLES, build_example
from onnxroof.core.files import write_atomically
from onnxroof.core.text import one_line

F32 = TensorProto.FLOAT


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--batch", "0"),
        ("--batch", "-1"),
        ("--batch", "two"),
        ("--seq", "0"),
        ("--loop-trips", "0"),
        ("--context", "-1"),
        ("--context", "x"),
    ],
)
def test_counts_that_must_be_positive_or_non_negative_are_refused(capsys, flag, value):
    code, out, err = run(capsys, "summary", "--example", "shallownet", f"{flag}={value}")
    expected = "non-negative integer" if flag == "--context" else "positive integer"
    assert code == 2 and out == "" and expected in err and repr(value) in err and err.count("\n") == 1


def test_a_context_of_zero_tokens_is_accepted_as_a_count(capsys):
    # --context takes 0 (an empty KV cache); it is refused later only because shallownet is no decoder
    code, _, err = run(capsys, "summary", "--example", "shallownet", "--context", "0", "-q")
    assert "non-negative integer" not in err


def test_a_usage_error_names_the_command_whose_help_to_read(capsys):
    code, out, err = run(capsys, "summary", "--example", "shallownet", "--format", "xml")
    assert code == 2 and out == "" and "invalid choice" in err
    assert err.startswith("onnxroof: error: ") and "(see onnxroof summary --help)" in err and err.count("\n") == 1


def test_no_command_prints_the_help_and_exits_2(capsys):
    code, out, err = run(capsys)
    assert code == 2 and "usage: onnxroof" in out and "summary" in out


def test_targets_lists_every_bundled_target(capsys):
    from onnxroof.roofline.targets import bundled_targets

    code, out, _ = run(capsys, "targets")
    assert code == 0
    assert all(name in out for name in bundled_targets())


def test_example_list_names_every_example_with_its_description(capsys):
    code, out, _ = run(capsys, "summary", "--example", "list")
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(EXAMPLES)
    for line, (name, (_, description)) in zip(sorted(lines), sorted(EXAMPLES.items())):
        assert line.split()[0] == name and line.endswith(description)


def test_a_path_and_an_example_together_are_refused(capsys, tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(build_example("shallownet"), path)
    code, out, err = run(capsys, "summary", path, "--example", "shallownet")
    assert code == 2 and out == "" and "not both" in err


def test_no_model_lists_the_examples_to_choose_from(capsys):
    code, _, err = run(capsys, "report")
    assert code == 2 and "no model given" in err and all(name in err for name in EXAMPLES)


def test_an_example_given_as_a_path_is_the_example(capsys):
    # "example:NAME" in the path position is the built-in model: ShallowNet's 328,586 parameters
    # (cost-model.md section 2)
    code, out, _ = run(capsys, "summary", "example:shallownet", "--format", "json", "-q")
    assert code == 0 and json.loads(out)["totals"]["params"] == 328_586


def test_report_writes_next_to_the_working_directory_under_the_models_name(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", F32, [1, 4])], [("y", F32, [1, 4])], name="main_graph"
    )
    path = tmp_path / "my model+v2.onnx"
    onnx.save(model, path)
    code, out, err = run(capsys, "report", path)
    # the file's stem (not the exporter's graph name), every character that is not a letter,
    # digit, '-', '_' or '.' made '_'
    assert code == 0 and (tmp_path / "my_model_v2.report.html").read_text().startswith("<!")
    assert "wrote my_model_v2.report.html" in err
    code, _, err = run(capsys, "report", path, "-q")
    assert code == 0 and err == ""


def test_a_nameless_model_is_reported_as_model(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F32, [1, 4])], [("y", F32, [1, 4])], name="..")
    path = tmp_path / "...onnx"  # its stem, "..", names nothing
    onnx.save(model, path)
    assert run(capsys, "report", path, "-q")[0] == 0
    assert (tmp_path / "model.report.html").exists()


def test_emit_order_writes_the_lowest_peak_order_and_the_summary_still_prints(capsys, tmp_path):
    # interleaved branches: finishing branch A first (A1, A2, B1, B2, join) peaks at 4,044 B
    # instead of the model order's 8,040 B (tests/models.py derives both)
    path = tmp_path / "m.onnx"
    onnx.save(interleaved_branches_model(), path)
    order = tmp_path / "order.txt"
    code, out, _ = run(capsys, "summary", path, "--emit-order", order, "--format", "json", "-q")
    assert code == 0 and json.loads(out)["memory"]["best_order_peak_bytes"] == 4_044
    names = order.read_text().splitlines()
    assert names[:2] == ["A1", "A2"] and sorted(names) == ["A1", "A2", "B1", "B2", "join"]


def test_explain_prints_one_nodes_numbers(capsys):
    # shallownet's Dense layer: 10 x 32,768 MACs = 327,680 (cost-model.md section 2)
    from onnxroof import analyze

    dense = next(n for n in analyze(build_example("shallownet")).nodes if n.op_type == "Gemm")
    code, out, _ = run(capsys, "explain", "--example", "shallownet", dense.name, "-q")
    assert code == 0 and dense.name in out and "327,680" in out


def test_explain_refuses_a_sweep(capsys):
    code, out, err = run(capsys, "explain", "--example", "shallownet", "x", "--sweep", "batch=1,2")
    assert code == 2 and out == "" and "--sweep is for summary and report" in err


def test_a_sweep_as_json_has_one_point_per_value(capsys):
    # batch 1 and 2: ShallowNet's MAC-FLOPs 2,424,832 and twice that (cost-model.md section 2)
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--sweep", "batch=1,2", "--format", "json", "-q")
    assert code == 0
    document = json.loads(out)
    flops = sorted(p["totals"]["mac_flops"] for p in document["points"])
    assert flops == [2_424_832, 2 * 2_424_832]


def test_a_sweep_breaking_a_budget_exits_1(capsys):
    # batch 2: 2 x 2,424,832 = 4,849,664 MAC-FLOPs is above a 3M budget, batch 1 is not
    code, _, err = run(
        capsys, "summary", "--example", "shallownet", "--sweep", "batch=1,2", "-q", "--fail-if", "mac_flops>3M"
    )
    assert code == 1 and err.count("budget broken") == 1


def test_a_sweep_with_strict_refuses_an_incomplete_point(capsys, tmp_path):
    # the width "w" is bound by no flag: both points of a dtype sweep are incomplete
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F32, [1, "w"])], [("y", F32, [1, "w"])])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    code, out, err = run(capsys, "summary", path, "--sweep", "dtype=fp32,fp16", "--strict", "--partial")
    assert code == 2 and out == "" and "--strict" in err.splitlines()[-1]
    # without --strict the sweep is written, with the warnings of each point
    code, out, err = run(capsys, "summary", path, "--sweep", "dtype=fp32,fp16", "--partial")
    assert code == 0 and out and err.count("not bound") == 2


def test_compare_lists_every_model_in_order(capsys):
    # two analyses in one process (--jobs 1) or in two: the same document, in the order given
    one = run(capsys, "compare", "example:shallownet", "example:minigooglenet", "--format", "json", "-q", "--jobs", "1")
    two = run(capsys, "compare", "example:shallownet", "example:minigooglenet", "--format", "json", "-q", "--jobs", "2")
    assert one[0] == two[0] == 0
    assert json.loads(one[1]) == json.loads(two[1])
    models = json.loads(one[1])["models"]
    assert [m["totals"]["params"] for m in models][0] == 328_586  # ShallowNet first (cost-model.md)


@pytest.mark.parametrize("fmt", ["markdown", "table"])
def test_compare_and_diff_write_each_text_format(capsys, fmt):
    code, out, _ = run(capsys, "compare", "example:shallownet", "example:minigooglenet", "--format", fmt, "-q")
    assert code == 0 and "shallownet" in out and "minigooglenet" in out
    code, out, _ = run(capsys, "diff", "example:shallownet", "example:minigooglenet", "--format", fmt, "-q")
    assert code == 0 and out


def test_diff_as_json_holds_both_models(capsys):
    code, out, _ = run(capsys, "diff", "example:shallownet", "example:shallownet", "--format", "json", "-q")
    assert code == 0 and isinstance(json.loads(out), dict)


def test_summary_writes_markdown_and_csv(capsys):
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--format", "markdown", "-q")
    assert code == 0 and "|" in out
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--format", "csv", "-q")
    # ShallowNet has five nodes: Conv, Relu, Flatten, Gemm, Softmax; one header line
    assert code == 0 and len(out.strip().splitlines()) == 1 + 5


def test_progress_lines_wait_until_a_run_is_slow(capsys):
    quick = StageLines("m.onnx", quiet_for=3600)
    quick("loading")
    assert capsys.readouterr().err == ""
    slow = StageLines("m.onnx", quiet_for=0)
    slow("costing\n")
    err = capsys.readouterr().err
    assert err.startswith("onnxroof: m.onnx: costing\\n (") and err.endswith(" s)\n") and err.count("\n") == 1


def test_one_line_shows_control_characters_escaped():
    assert one_line("a\nb\x1b[31m") == "a\\nb\\x1b[31m"


def test_an_interrupt_exits_130_with_one_line(capsys, monkeypatch):
    import onnxroof.findings

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(onnxroof.findings, "analyze_keeping_front", interrupted)  # the pipeline, as the CLI runs it
    code, out, err = run(capsys, "summary", "--example", "shallownet")
    assert code == 130 and out == "" and err == "onnxroof: interrupted\n"


def test_write_atomically_refuses_a_missing_directory(tmp_path):
    from onnxroof.core.errors import UsageError

    with pytest.raises(UsageError, match="does not exist"):
        write_atomically(tmp_path / "nowhere" / "x.txt", "text")
    write_atomically(tmp_path / "x.txt", ["a", "b"])  # chunks, written whole
    assert (tmp_path / "x.txt").read_text() == "ab"


def test_a_written_report_is_readable_like_any_new_file(tmp_path):
    # the temporary file is private (mkstemp: 0o600); the report it becomes gets the mode a new
    # file gets: 0o666 less the umask
    import os
    import stat

    umask = os.umask(0o022)
    try:
        write_atomically(tmp_path / "r.txt", "text")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "r.txt").st_mode) == 0o644
    assert os.listdir(tmp_path) == ["r.txt"]  # no temporary left beside it


@pytest.mark.parametrize(
    "dtype, bytes_per_parameter", [("fp32", 4), ("fp16", 2), ("bf16", 2), ("int8", 1), ("int4", 0.5)]
)
def test_every_documented_dtype_recosts_the_parameters(capsys, dtype, bytes_per_parameter):
    # ShallowNet's 328,586 parameters (cost-model.md section 2) at the element size of each type
    code, out, err = run(capsys, "summary", "--example", "shallownet", "--dtype", dtype, "--format", "json", "-q")
    assert code == 0, err
    assert json.loads(out)["totals"]["param_bytes"] == 328_586 * bytes_per_parameter


def test_summary_prints_the_table_unless_told_otherwise(capsys):
    default = run(capsys, "summary", "--example", "shallownet", "-q")
    table = run(capsys, "summary", "--example", "shallownet", "-q", "--format", "table")
    assert default[0] == 0 and default[1] == table[1] and not default[1].lstrip().startswith("{")
    diff_default = run(capsys, "diff", "example:shallownet", "example:shallownet", "-q")
    diff_table = run(capsys, "diff", "example:shallownet", "example:shallownet", "-q", "--format", "table")
    assert diff_default[0] == 0 and diff_default[1] == diff_table[1]


def test_explain_takes_no_budget(capsys):
    code, out, err = run(capsys, "explain", "--example", "shallownet", "x", "--fail-if", "params>1")
    assert code == 2 and out == "" and "--fail-if" in err


def test_markdown_is_not_the_table(capsys):
    # diff and compare in Markdown: pipe tables, not the aligned text table
    for command in (
        ["diff", "example:shallownet", "example:minigooglenet"],
        ["compare", "example:shallownet", "example:minigooglenet"],
    ):
        markdown = run(capsys, *command, "--format", "markdown", "-q")[1]
        table = run(capsys, *command, "--format", "table", "-q")[1]
        assert markdown != table and any(line.startswith("|") for line in markdown.splitlines())


def test_an_error_of_the_command_line_itself_points_to_no_subcommand(capsys):
    code, out, err = run(capsys, "nosuchcommand")
    assert code == 2 and "invalid choice" in err and "(see onnxroof" not in err


def test_one_line_keeps_printable_characters_as_they_are():
    assert one_line('it\'s "ok" ✓') == 'it\'s "ok" ✓'


@pytest.mark.parametrize("flag", ["--plugin", "--target", "model"])
def test_a_path_longer_than_the_system_allows_is_one_line_exit_2(capsys, tmp_path, flag):
    # a 300-byte name is over the 255 bytes of a Linux file name: stat raises ENAMETOOLONG
    long = str(tmp_path / ("q" * 300))
    argv = [long + ".onnx"] if flag == "model" else ["--example", "shallownet", flag, long]
    code, out, err = run(capsys, "summary", *argv, "-q")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("onnxroof: error: ") and "too long" in err
