"""`onnxroof profile --trace` on the command line: a hand-written TensorRT trace of the resnet18
test export (tests/data/traces/) beside the prediction, as a table and as JSON, and its errors in
one line (exit 2). Nothing runs onnxruntime."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from onnxroof.cli.app import main

DATA = Path(__file__).resolve().parents[1] / "data"
TRACES = DATA / "traces"
TRT = [str(TRACES / "resnet18-trt-profile.json"), str(TRACES / "resnet18-trt-layers.json")]


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory):
    path = tmp_path_factory.mktemp("resnet18") / "resnet18.onnx"
    path.write_bytes(gzip.decompress((DATA / "exports" / "timm-resnet18.onnx.gz").read_bytes()))
    return str(path)


def test_json_output_has_the_comparison_and_the_mapped_share(resnet18, capsys):
    code = main(["profile", resnet18, "--trace", TRT[0], "--trace", TRT[1], "--target", "l4", "--format", "json", "-q"])
    out, _ = capsys.readouterr()
    document = json.loads(out)
    assert code == 0 and document["schema"] == "onnxroof-trace/1"
    assert document["trace"]["format"] == "tensorrt" and document["trace"]["runs"] == 1000
    # 0.708 of the 0.720 ms the fixture measures is in layers with ONNX nodes
    assert document["totals"]["mapped_share"] == pytest.approx(0.708 / 0.720)
    assert len(document["kernels"]) == 25
    gaps = [abs(g["gap_s"]) for g in document["largest_gaps"]]
    assert gaps == sorted(gaps, reverse=True)
    assert {g["cause"] for g in document["kernels"]} <= {"added", "fallback", "fusion", "launch", "efficiency"}


def test_the_table_names_the_largest_gaps_and_the_share(resnet18, capsys):
    code = main(["profile", resnet18, "--trace", TRT[0], "--trace", TRT[1], "--target", "l4", "-q"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "largest gaps" in out and "mapped: 98.3% of the measured time" in out


def test_a_vendor_trace_without_a_target_is_a_one_line_error(resnet18, capsys):
    code = main(["profile", resnet18, "--trace", TRT[0]])
    _, err = capsys.readouterr()
    assert code == 2 and "--target" in err and err.count("\n") == 1


def test_a_foreign_trace_is_a_one_line_error_and_writes_nothing(resnet18, tmp_path, capsys):
    foreign = tmp_path / "foreign.csv"
    foreign.write_text("a,b,c\n1,2,3\n")
    output = tmp_path / "out.json"
    code = main(["profile", resnet18, "--trace", str(foreign), "--target", "l4", "-o", str(output)])
    _, err = capsys.readouterr()
    assert code == 2 and "not a profile onnxroof reads" in err and err.count("\n") == 1
    assert not output.exists()


@pytest.mark.parametrize("fmt", [None, "tensorrt", "openvino", "rknn", "onnxruntime"])
@pytest.mark.parametrize("kind", ["fifo", "device", "nested"])
def test_a_hostile_trace_file_is_a_one_line_error(resnet18, tmp_path, capsys, kind, fmt):
    # issue 43's rule for files a user names: a FIFO never waits for a writer, /dev/zero is never
    # read, and JSON nested past the parser's depth is no profile (was: a hang, 10 GB, exit 3)
    trace = tmp_path / "trace.json"
    if kind == "fifo":
        os.mkfifo(trace)
    elif kind == "device":
        trace.symlink_to("/dev/zero")
    else:
        trace.write_text("[" * 100_000 + "]" * 100_000)
    flags = ["--trace-format", fmt] if fmt else []
    code = main(["profile", resnet18, "--trace", str(trace), *flags, "--target", "l4", "-q"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err


def test_a_recorded_onnxruntime_profile_reads_as_a_trace(capsys):
    profile = str(Path(__file__).resolve().parents[1] / "measure" / "data" / "minigooglenet-ort-all.json")
    code = main(
        ["profile", "--example", "minigooglenet", "--trace", profile, "--target", "myriad-x", "--format", "json"]
    )
    out, _ = capsys.readouterr()
    document = json.loads(out)
    assert code == 0 and document["trace"]["format"] == "onnxruntime"
    # the recorded run's one layout reorder (ReorderOutput) is the only kernel with no ONNX node
    assert [k["name"] for k in document["kernels"] if not k["nodes"]] == ["ReorderOutput"]
    assert document["totals"]["mapped_share"] >= 0.95


def test_an_html_output_is_the_report_page_with_the_trace_and_its_gaps(resnet18, tmp_path, capsys):
    page = tmp_path / "trace.html"
    code = main(["profile", resnet18, "--trace", TRT[0], "--trace", TRT[1], "--target", "l4", "-q", "-o", str(page)])
    capsys.readouterr()
    text = page.read_text(encoding="utf-8")
    assert code == 0 and "Predicted vs measured" in text and "TensorRT (trtexec" in text
    assert "gap 1: " in text and "onnxruntime" not in text  # measured by TensorRT, not by this machine


def test_flags_of_onnxruntimes_own_runs_are_refused_with_a_trace(resnet18, capsys):
    code = main(["profile", resnet18, "--trace", TRT[0], "--target", "l4", "--threads", "2"])
    _, err = capsys.readouterr()
    assert code == 2 and "--threads" in err and err.count("\n") == 1


def test_trace_format_is_what_reads_the_file(resnet18, capsys):
    code = main(["profile", resnet18, "--trace", TRT[0], "--trace-format", "openvino", "--target", "l4"])
    _, err = capsys.readouterr()
    assert code == 2 and "not an OpenVINO" in err


def test_dtype_predicts_in_the_runtimes_precision(resnet18, capsys):
    def predicted(*flags: str) -> float:
        main(["profile", resnet18, "--trace", TRT[0], "--target", "l4", "--format", "json", "-q", *flags])
        return json.loads(capsys.readouterr()[0])["totals"]["predicted_by_rules_s"]

    # fp16 halves every activation and weight byte and runs on the fp16 roof: a faster prediction
    assert predicted("--dtype", "fp16") < predicted()
