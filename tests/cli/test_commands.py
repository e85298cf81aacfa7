"""The flags of every command that cli/test_flags.py and the older tests leave out (issue 18), through
the entry point: each case fails when its flag is disconnected. Expected figures are derived in the
comments (ShallowNet's from ../shared/docs/cost-model.md section 2)."""

from __future__ import annotations

import json

import onnx
import pytest
from conftest import make_model, run
from models import decoder_block
from onnx import TensorProto, helper

from onnxroof.cli.app import main
from onnxroof.core.examples import build_example
from onnxroof.roofline.targets import parse_target

F32 = TensorProto.FLOAT
SHALLOWNET_PARAMS, SHALLOWNET_MAC_FLOPS = 328_586, 2_424_832
SEPARABLE_PARAMS = SHALLOWNET_PARAMS - 741  # 155 conv parameters instead of 896 (see cli/test_formats.py)
PAIR = ("example:shallownet", "example:shallownet-separable")


def document(capsys, *argv) -> dict:
    code, out, err = run(capsys, "summary", *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def one_line_error(err: str, *fragments: str) -> bool:
    return err.count("\n") == 1 and err.startswith("onnxroof: error: ") and all(f in err for f in fragments)


@pytest.fixture
def relu_n4(tmp_path):
    """x [n, 4] -> Relu: n x 4 FLOPs (one per element)."""
    path = tmp_path / "relu.onnx"
    onnx.save(
        make_model(
            [helper.make_node("Relu", ["x"], ["y"], name="relu")], [("x", F32, ["n", 4])], [("y", F32, ["n", 4])]
        ),
        path,
    )
    return path


@pytest.fixture
def shallownet(tmp_path):
    path = tmp_path / "shallownet.onnx"
    onnx.save(build_example("shallownet"), path)
    return path


# --- how a model is costed: the flags every analysing command shares ------------------------------


@pytest.mark.parametrize("text", ["x:3,4", "x:3x4", "3,4"])
def test_input_shape_takes_commas_or_x_and_the_name_may_be_left_out_for_one_input(capsys, relu_n4, text):
    result = document(capsys, relu_n4, "--input-shape", text)
    assert result["model"]["inputs"][0]["shape"] == [3, 4] and result["totals"]["flops"] == 3 * 4


def test_dim_zero_is_a_valid_value(capsys, relu_n4):
    result = document(capsys, relu_n4, "--dim", "n=0")
    assert result["complete"] is True and result["model"]["inputs"][0]["shape"] == [0, 4]
    assert result["totals"]["flops"] == 0 and result["totals"]["counted_nodes"] == 1


@pytest.mark.parametrize("dtype, bytes_per_param", [("fp32", 4), ("fp16", 2), ("bf16", 2), ("int4", 0.5)])
def test_dtype_recosts_the_parameter_bytes_in_every_documented_type(capsys, shallownet, dtype, bytes_per_param):
    # 328,586 parameters; int4 packs two a byte and every tensor (864, 32, 327,680, 10) is even
    result = document(capsys, shallownet, "--dtype", dtype)
    assert result["dtype"] == dtype and result["totals"]["param_bytes"] == SHALLOWNET_PARAMS * bytes_per_param


CHIP = """schema = "onnxroof-target/1"
name = "my-chip"
description = "1 TFLOP/s fp32, 1 GB/s DRAM, nothing on chip"
[peak_ops_per_s.fp32]
value = 1e12
tag = "estimate"
source = "test"
[dram.bandwidth_bytes_per_s]
value = 1e9
tag = "estimate"
source = "test"
"""


def test_target_file_and_a_bundled_name_each_place_the_model_in_the_order_given(capsys, shallownet, tmp_path):
    chip = tmp_path / "my_chip.toml"
    chip.write_text(CHIP)
    targets = document(capsys, shallownet, "--target", chip, "--target", "myriad-x")["targets"]
    assert [t["name"] for t in targets] == ["my-chip", "myriad-x"]
    # the whole-model point on my-chip, which has no on-chip memory, so every activation is streamed:
    # 2,457,650 FLOPs over every node's weight + input + output bytes: conv 3,584 + 12,288 + 131,072,
    # Relu 2 x 131,072, Flatten 0 (a view), dense 1,310,760 + 131,072 + 40, softmax 2 x 40 = 1,851,040 B;
    # at 1 GB/s that is 1.85104 ms, far above 2,457,650 / 1e12 s of compute: memory-bound
    point = targets[0]["model_point"]
    assert point["intensity"] == pytest.approx(2_457_650 / 1_851_040)
    assert point["latency_s"] == pytest.approx(1_851_040 / 1e9) and point["bound"] == "dram"


def test_prefill_with_seq_binds_the_prompt_length(capsys, tmp_path):
    path = tmp_path / "block.onnx"
    onnx.save(decoder_block(), path)
    result = document(capsys, path, "--phase", "prefill", "--seq", "8", "-q")
    # 8 tokens, empty cache, 4 heads of 16: q, k, v, o projections 4 x 8 x 64 x 64 = 131,072 MACs;
    # per head q.k^T 8 x 16 x 8 and probs.v 8 x 8 x 16 = 2,048, x 4 heads = 8,192
    assert result["complete"] is True and result["llm"]["new_tokens"] == 8
    assert result["totals"]["macs"] == 131_072 + 8_192


def test_sweep_over_a_named_dim_analyses_every_value(capsys, relu_n4):
    code, out, _ = run(capsys, "summary", relu_n4, "--sweep", "n=1,5", "--format", "json")
    assert code == 0
    points = json.loads(out)["points"]
    assert [(p["values"], p["totals"]["flops"]) for p in points] == [({"n": 1}, 4), ({"n": 5}, 20)]


def test_explain_refuses_a_sweep(capsys):
    code, out, err = run(capsys, "explain", "--example", "shallownet", "conv2d_0", "--sweep", "batch=1,2")
    assert code == 2 and out == "" and one_line_error(err, "--sweep is for summary and report")


def test_summary_o_writes_what_it_would_print(capsys, tmp_path):
    path = tmp_path / "summary.csv"
    code, printed, _ = run(capsys, "summary", "--example", "shallownet", "--format", "csv")
    assert code == 0
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--format", "csv", "-o", path)
    assert code == 0 and out == "" and path.read_text() == printed


def test_peak_memory_budget_gates_summary(capsys):
    # the peak: the conv's output and the Relu's, 32 x 32 x 32 x 4 B = 128 KiB each, live together
    assert run(capsys, "summary", "--example", "shallownet", "--fail-if", "peak_memory>256KiB")[0] == 0
    code, _, err = run(capsys, "summary", "--example", "shallownet", "--fail-if", "peak_memory>255KiB")
    assert code == 1 and "budget broken: peak_memory>255KiB" in err


def test_report_budget_exits_1_and_still_writes_the_page(capsys, tmp_path):
    page = tmp_path / "report.html"
    code, _, err = run(capsys, "report", "--example", "shallownet", "--fail-if", "params>300k", "-o", page)
    assert code == 1 and "budget broken: params>300k" in err
    assert page.read_text().rstrip().endswith("</html>")


def test_a_malformed_budget_is_a_usage_error_before_anything_is_written(capsys, tmp_path):
    page = tmp_path / "report.html"
    code, _, err = run(capsys, "report", "--example", "shallownet", "--fail-if", "params>>5", "-o", page)
    assert code == 2 and one_line_error(err, "params>>5") and not page.exists()


def test_a_path_and_example_together_are_refused(capsys, shallownet):
    code, out, err = run(capsys, "summary", shallownet, "--example", "shallownet")
    assert code == 2 and out == "" and one_line_error(err, "not both")


def test_no_command_prints_the_help_and_exits_2(capsys):
    code, out, _ = run(capsys)
    assert code == 2 and "COMMAND" in out and "summary" in out


def test_version_names_the_installed_version(capsys):
    import onnxroof

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"onnxroof {onnxroof.__version__}\n"


# --- diff --------------------------------------------------------------------------------------


def test_diff_target_adds_the_targets_rows(capsys):
    code, plain, _ = run(capsys, "diff", *PAIR)
    assert code == 0 and "[myriad-x]" not in plain
    code, out, _ = run(capsys, "diff", *PAIR, "--target", "myriad-x")
    assert code == 0
    # myriad-x states no static power: its energy is the work's, and says so
    assert {"latency [myriad-x]", "dynamic energy [myriad-x]"} <= {line[2:32].strip() for line in out.splitlines()}


def test_diff_absolute_budget_is_checked_on_the_head(capsys):
    # the head (the separable model) has 327,845 parameters: over 300k, under 328k
    assert run(capsys, "diff", *PAIR, "--fail-if", "params>328k")[0] == 0
    code, _, err = run(capsys, "diff", *PAIR, "--fail-if", "params>300k")
    assert code == 1 and "params>300k" in err


def test_diff_o_writes_the_file_and_prints_nothing(capsys, tmp_path):
    path = tmp_path / "diff.md"
    code, out, _ = run(capsys, "diff", *PAIR, "--format", "markdown", "-o", path)
    assert code == 0 and out == "" and path.read_text().startswith("### onnxroof diff: shallownet")


def test_diff_with_a_missing_model_is_exit_2_naming_it_and_writes_nothing(capsys, tmp_path):
    path, missing = tmp_path / "diff.json", tmp_path / "head.onnx"
    code, out, err = run(capsys, "diff", "example:shallownet", missing, "--format", "json", "-o", path)
    assert code == 2 and out == "" and one_line_error(err, str(missing)) and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_diff_analysis_flags_apply_to_both_models(capsys):
    code, out, _ = run(capsys, "diff", *PAIR, "--dtype", "int8", "--format", "json")
    assert code == 0
    params = next(d for d in json.loads(out)["totals"] if d["key"] == "param_bytes")
    assert (params["base"], params["head"]) == (SHALLOWNET_PARAMS, SEPARABLE_PARAMS)  # 1 B each in int8


# --- compare -----------------------------------------------------------------------------------


class RecordingPool:
    """Stands in for concurrent.futures.ProcessPoolExecutor: records max_workers, maps in-process."""

    workers: list = []

    def __init__(self, max_workers=None):
        RecordingPool.workers.append(max_workers)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, function, *iterables):
        return map(function, *iterables)


@pytest.mark.parametrize("jobs, pools", [("2", [2]), ("1", [])])
def test_compare_jobs_sets_the_number_of_worker_processes(capsys, monkeypatch, jobs, pools):
    import concurrent.futures

    RecordingPool.workers = []
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", RecordingPool)
    code, out, _ = run(capsys, "compare", *PAIR, "example:shallownet", "--jobs", jobs, "--format", "json")
    assert code == 0 and RecordingPool.workers == pools
    assert [m["name"] for m in json.loads(out)["models"]] == ["shallownet", "shallownet_separable", "shallownet"]


def test_compare_jobs_in_real_processes_keeps_the_order_given(capsys):
    code, out, _ = run(capsys, "compare", PAIR[1], PAIR[0], "--jobs", "2", "--format", "json")
    assert code == 0
    assert [m["totals"]["params"] for m in json.loads(out)["models"]] == [SEPARABLE_PARAMS, SHALLOWNET_PARAMS]


def test_compare_analysis_flags_apply_to_every_model(capsys):
    code, out, _ = run(capsys, "compare", *PAIR, "--batch", "2", "--format", "json", "-q")
    assert code == 0
    # batch 2 doubles the MAC-FLOPs (4,849,664 and 2 x 907,264), not the parameters
    assert [(m["totals"]["mac_flops"], m["totals"]["params"]) for m in json.loads(out)["models"]] == [
        (2 * SHALLOWNET_MAC_FLOPS, SHALLOWNET_PARAMS),
        (2 * 907_264, SEPARABLE_PARAMS),
    ]


def test_compare_with_a_bad_model_is_exit_2_and_writes_nothing(capsys, tmp_path):
    bad, path = tmp_path / "bad.onnx", tmp_path / "compare.html"
    bad.write_bytes(b"not a model")
    code, _, err = run(capsys, "compare", "example:shallownet", bad, "--format", "html", "-o", path)
    assert code == 2 and one_line_error(err, str(bad)) and not path.exists()


def test_compare_jobs_must_be_positive(capsys):
    code, _, err = run(capsys, "compare", *PAIR, "--jobs", "0")
    assert code == 2 and one_line_error(err, "--jobs")


# --- ops, calibrate ------------------------------------------------------------------------------


def test_ops_plugin_lists_the_plugins_rule_with_its_formula(capsys, tmp_path):
    from onnxroof.ops import COST_RULES

    plugin = tmp_path / "my_ops.py"
    plugin.write_text(
        "from onnxroof.ops import OpCost, register\n\n"
        'def my_attention(node):\n    """MACs = 2 x B x S^2 x D."""\n'
        "    b, s, d = node.input_shape(0)\n    return OpCost(macs=2 * b * s * s * d)\n\n"
        "register('MyAttention', my_attention, family='attention', domain='my.domain')\n"
    )
    code, out, _ = run(capsys, "ops")
    assert code == 0 and "MyAttention" not in out
    try:
        code, out, _ = run(capsys, "ops", "--plugin", plugin)
    finally:
        COST_RULES.pop(("my.domain", "MyAttention"), None)  # the plugin's rule goes with this test
    assert code == 0 and "| my.domain | MyAttention | MACs = 2 x B x S^2 x D. |" in out


def test_calibrate_name_wins_over_the_output_files_stem(capsys, tmp_path, monkeypatch):
    from onnxroof.measure import calibration

    measure = calibration.calibrate

    def quick(seconds, threads=None, progress=None):  # a real measurement, made tiny: one 64 x 64 matmul size
        return measure(seconds=0.2, threads=threads, progress=progress, largest=128 * 1024, matmul_sizes=(64,))

    monkeypatch.setattr(calibration, "calibrate", quick)
    path = tmp_path / "box.toml"
    code, out, err = run(capsys, "calibrate", "--name", "lab-machine", "-o", path)
    assert code == 0 and out == ""
    assert parse_target(path).name == "lab-machine"
    assert "onnxroof calibrate: " in err and err.rstrip().endswith(f"wrote {path}")  # progress without -q


# --- profile (onnxruntime on a two-node model, one run: structure, never timings) ------------------


def profile(capsys, model, *flags) -> dict:
    pytest.importorskip("onnxruntime")
    code, out, err = run(capsys, "profile", model, "--target", "myriad-x", "--format", "json", "-q", *flags)
    assert code == 0, err
    return json.loads(out)


def test_profile_runs_and_warmup_are_what_onnxruntime_ran(capsys, conv_relu):
    # runs is counted from the profile's own run events, after the warm-up ones are dropped
    result = profile(capsys, conv_relu, "--dim", "n=1", "--runs", "3", "--warmup", "2")
    assert (result["onnxruntime"]["runs"], result["onnxruntime"]["warmup"]) == (3, 2)


def test_profile_optimization_disable_runs_one_kernel_per_node(capsys, conv_relu):
    # at onnxruntime's default level (all) the Relu is fused into the Conv's kernel; disabled, it is not
    fused = profile(capsys, conv_relu, "--dim", "n=1", "--runs", "1", "--warmup", "0")
    assert fused["onnxruntime"]["optimization"] == "all"
    assert any(set(k["nodes"]) == {"conv", "relu"} for k in fused["kernels"])
    plain = profile(capsys, conv_relu, "--dim", "n=1", "--runs", "1", "--warmup", "0", "--optimization", "disable")
    assert plain["onnxruntime"]["optimization"] == "disable"
    assert sorted(k["nodes"] for k in plain["kernels"]) == [["conv"], ["relu"]]


def test_profile_threads_sets_onnxruntimes_intra_op_threads(capsys, conv_relu):
    result = profile(capsys, conv_relu, "--dim", "n=1", "--runs", "1", "--warmup", "0", "--threads", "1")
    assert result["onnxruntime"]["intra_op_threads"] == 1


def test_profile_keep_profile_saves_onnxruntimes_raw_trace(capsys, conv_relu, tmp_path):
    raw = tmp_path / "raw.json"
    profile(capsys, conv_relu, "--dim", "n=1", "--runs", "1", "--warmup", "0", "--keep-profile", raw)
    events = json.loads(raw.read_text())
    assert any(e.get("cat") == "Node" and e["name"].endswith("_kernel_time") for e in events)


@pytest.mark.parametrize(
    "flags, batch", [(["--dim", "n=2"], 2), (["--input-shape", "x:3,2,8,8"], 3), (["--batch", "4"], 4)]
)
def test_profile_binds_the_inputs_it_runs_and_predicts(capsys, conv_relu, flags, batch):
    result = profile(capsys, conv_relu, "--runs", "1", "--warmup", "0", *flags)
    assert result["model"]["inputs"][0]["shape"] == [batch, 2, 8, 8]
    assert result["totals"]["flops"] == batch * 9_472


def test_profile_without_a_model_or_with_two_is_exit_2(capsys, conv_relu):
    pytest.importorskip("onnxruntime")
    code, _, err = run(capsys, "profile", "--target", "myriad-x")
    assert code == 2 and one_line_error(err, "no model given")
    code, _, err = run(capsys, "profile", conv_relu, "--example", "shallownet", "--target", "myriad-x")
    assert code == 2 and one_line_error(err, "not both")


def test_every_command_is_a_module_of_the_same_shape_in_the_dispatch_table():
    import importlib

    from onnxroof.cli.app import COMMANDS, build_parser

    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        assert isinstance(module.HELP, str) and callable(module.add_arguments) and callable(module.run), name
    action = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices)
    assert list(action.choices) == list(COMMANDS)  # --help lists them in the table's order


def test_quick_commands_import_neither_the_pipeline_nor_the_measuring_modules():
    import subprocess
    import sys

    program = (
        "import sys\nfrom onnxroof.cli.app import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n"
        "    pass\nprint(sorted(m for m in ('numpy', 'onnxruntime', 'onnx', 'onnxroof.pipeline', "
        "'onnxroof.measure.calibrate', 'onnxroof.measure.profiling') if m in sys.modules))"
    )
    for argv in (["targets"], ["summary", "--help"], ["diff", "--help"]):
        run = subprocess.run([sys.executable, "-c", program, *argv], capture_output=True, text=True, check=False)
        assert run.stdout.splitlines()[-1] == "[]", (argv, run.stdout[-300:], run.stderr[-300:])
