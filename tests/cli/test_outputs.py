"""The command line: outputs, the JSON contract, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import numpy as np
import onnx
import pytest
from conftest import make_model, run
from onnx import TensorProto, helper

from onnxroof.cli.app import main
from onnxroof.core.examples import build_example

F32 = TensorProto.FLOAT


@pytest.fixture
def shallownet_file(tmp_path):
    path = tmp_path / "shallownet.onnx"
    onnx.save(build_example("shallownet"), path)
    return path


@pytest.fixture
def symbolic_file(tmp_path):
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", F32, ["batch", 3, 8, 8])], [("y", F32, ["batch", 3, 8, 8])]
    )
    path = tmp_path / "symbolic.onnx"
    onnx.save(model, path)
    return path


def test_summary_table_names_inputs_and_conventions(capsys):
    code, out, err = run(capsys, "summary", "--example", "shallownet")
    assert code == 0 and err == ""
    assert "input 1x3x32x32 float32" in out
    assert "2 x MACs" in out and "2,424,832" in out and "328,586" in out


def test_summary_json_contract(capsys, shallownet_file):
    code, out, _ = run(capsys, "summary", str(shallownet_file), "--format", "json")
    assert code == 0
    document = json.loads(out)
    assert document["schema"] == "onnxroof/1"
    assert document["conventions"]["flops_per_mac"] == 2
    assert {"name", "opset", "nodes", "inputs"} <= set(document["model"])
    assert document["model"]["inputs"] == [{"name": "input", "shape": [1, 3, 32, 32], "dtype": "float32"}]
    totals = document["totals"]
    assert totals["mac_flops"] == 2_424_832 and totals["params"] == 328_586 and totals["param_bytes"] == 1_314_344
    assert totals["unsupported"] == {}
    node_keys = {
        "name",
        "op_type",
        "domain",
        "counted",
        "macs",
        "flops",
        "params",
        "weight_bytes",
        "input_bytes",
        "output_bytes",
        "intensity",
    }
    assert all(node_keys <= set(node) for node in document["nodes"])
    # totals are the sums of the node records
    assert totals["flops"] == sum(n["flops"] for n in document["nodes"])
    assert totals["macs"] == sum(n["macs"] for n in document["nodes"])


def test_summary_csv_has_one_row_per_node(capsys):
    code, out, _ = run(capsys, "summary", "--example", "minigooglenet", "--format", "csv")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("index,name,op_type") and len(lines) == 1 + 74
    macs_column = lines[0].split(",").index("mac_flops")
    assert sum(int(line.split(",")[macs_column]) for line in lines[1:]) == 469_195_840


def test_example_list(capsys):
    code, out, _ = run(capsys, "summary", "--example", "list")
    assert code == 0 and "minigooglenet" in out and "shallownet" in out


def test_unbound_dim_is_reported_with_a_ready_flag(capsys, symbolic_file):
    # --partial with the model's only node depending on the open dim: nothing counted, never guessed
    code, out, err = run(capsys, "summary", str(symbolic_file), "--format", "json", "--partial")
    assert (code, out) == (2, "") and "nothing could be counted" in err and "--dim batch=1" in err
    code, out, _ = run(capsys, "summary", str(symbolic_file), "--format", "json", "--dim", "batch=2")
    document = json.loads(out)
    assert document["complete"] is True and document["nodes"][0]["flops"] == 2 * 3 * 8 * 8
    assert document["model"]["inputs"][0]["shape"] == [2, 3, 8, 8]
    code, out, _ = run(capsys, "summary", str(symbolic_file), "--format", "json", "--input-shape", "x:4x3x8x8")
    assert json.loads(out)["nodes"][0]["flops"] == 4 * 3 * 8 * 8


def test_strict_makes_incomplete_analysis_exit_2(capsys, symbolic_file, tmp_path):
    target = tmp_path / "out.json"
    code, _, err = run(capsys, "summary", str(symbolic_file), "--partial", "--strict", "-o", str(target))
    assert code == 2 and "--strict" in err and not target.exists()


def _bad_files(tmp_path):
    good = build_example("shallownet").SerializeToString()
    files = {
        "missing": tmp_path / "missing.onnx",
        "directory": tmp_path,
        "empty": tmp_path / "empty.onnx",
        "random": tmp_path / "random.onnx",
        "text": tmp_path / "text.onnx",
        "truncated": tmp_path / "truncated.onnx",
        "checker": tmp_path / "checker.onnx",
    }
    files["empty"].write_bytes(b"")
    files["random"].write_bytes(np.random.default_rng(0).bytes(2000))
    files["text"].write_text("this is not a model\n")
    files["truncated"].write_bytes(good[: len(good) // 2])
    # a node reading a tensor that nothing produces fails the checker
    broken = make_model([helper.make_node("Relu", ["nowhere"], ["y"])], [("x", F32, [1])], [("y", F32, [1])])
    files["checker"].write_bytes(broken.SerializeToString())
    return files


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "random", "text", "truncated", "checker"])
@pytest.mark.parametrize("command", ["summary", "report"])
def test_bad_model_files(capsys, tmp_path, kind, command):
    path = _bad_files(tmp_path)[kind]
    target = tmp_path / "out" / "report.html"
    target.parent.mkdir()
    target.write_text("previous good report")
    code, out, err = run(capsys, command, str(path), "-o", str(target))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("onnxroof: error: ") and str(path) in err
    assert "Traceback" not in err and out == ""
    assert target.read_text() == "previous good report"  # never clobbered by a failed run
    assert os.listdir(target.parent) == ["report.html"]  # and no temporary left behind


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["summary", "--example", "shallownet", "--input-shape", "inptu:1,3,32,32"], "did you mean 'input'"),
        (["summary", "--example", "shallownet", "--input-shape", "input:1,3,a"], "non-negative integer"),
        (["summary", "--example", "shallownet", "--input-shape", "input:1,3,32"], "rank 4"),
        (["summary", "--example", "shallownet", "--dim", "batch=1"], "no dim named 'batch'"),
        (["summary", "--example", "nosuch"], "choose one of"),
        (["summary"], "no model given"),
        (["summary", "--example", "shallownet", "--format", "xml"], "invalid choice"),
        (["summary", "--example", "shallownet", "-o", "/nonexistent/dir/x.json"], "does not exist"),
    ],
)
def test_bad_flags(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2 and fragment in err and err.count("\n") == 1 and out == ""


def test_subprocess_exit_codes_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    process = subprocess.run(
        [sys.executable, "-m", "onnxroof.cli", "summary", str(bad)], capture_output=True, text=True
    )
    assert process.returncode == 2 and "Traceback" not in process.stderr
    assert len(process.stderr.strip().splitlines()) == 1
    version = subprocess.run([sys.executable, "-m", "onnxroof.cli", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("onnxroof ")


def test_debug_shows_traceback(capsys, tmp_path):
    code, _, err = run(capsys, "summary", str(tmp_path / "missing.onnx"), "--debug")
    assert code == 2 and "Traceback" in err


def test_inputs_line_names_the_first_six(tmp_path, capsys):
    nodes = [helper.make_node("Relu", [f"x{i}"], [f"y{i}"]) for i in range(10)]
    model = make_model(
        nodes,
        [(f"x{i}", TensorProto.FLOAT, [2, 3]) for i in range(10)],
        [(f"y{i}", TensorProto.FLOAT, [2, 3]) for i in range(10)],
    )
    onnx.save(model, tmp_path / "ten.onnx")
    assert main(["summary", str(tmp_path / "ten.onnx"), "-q"]) == 0
    line = next(text for text in capsys.readouterr().out.splitlines() if text.startswith("inputs:"))
    assert line == (
        "inputs: x0 2x3 float32, x1 2x3 float32, x2 2x3 float32, x3 2x3 float32, x4 2x3 float32, "
        "x5 2x3 float32 and 4 more (--format json lists them)"
    )


def test_output_through_a_symlink_or_a_pipe_keeps_it_what_it_is(capsys, tmp_path):
    # `-o /dev/null` used to rename a temporary file over the device (as root, that replaced
    # /dev/null with a regular file): a link or a pipe is written through, and stays what it was
    real, link = tmp_path / "real.txt", tmp_path / "link.txt"
    real.write_text("old")
    link.symlink_to(real)
    assert run(capsys, "summary", "--example", "shallownet", "-o", str(link))[0] == 0
    assert link.is_symlink() and real.read_text().startswith("onnxroof ")

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.stdout.write(open({str(fifo)!r}).read())"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert run(capsys, "summary", "--example", "shallownet", "-o", str(fifo))[0] == 0
    assert reader.communicate(timeout=60)[0].startswith("onnxroof ")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_output_to_a_directory_is_a_one_line_error(capsys, tmp_path):
    code, out, err = run(capsys, "summary", "--example", "shallownet", "-o", str(tmp_path))
    assert code == 2 and "is a directory; give the name of a file" in err and len(err.strip().splitlines()) == 1


def test_a_reader_that_stops_early_is_not_an_error(tmp_path):
    """`onnxroof summary m.onnx | head -1`: the reader closes the pipe after one line, which ends
    the program quietly (exit 0), not with an internal error."""
    import subprocess
    import sys

    # 3,000 Relus: a node table of a few hundred KiB, written in chunks, more than a pipe holds
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"relu_{i}") for i in range(3000)]
    graph = helper.make_graph(
        nodes,
        "relus",
        [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("t3000", TensorProto.FLOAT, [1, 8])],
    )
    path = tmp_path / "relus.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    program = [sys.executable, "-c", "from onnxroof.cli.app import main; main()", "summary", str(path), "-q"]
    with subprocess.Popen(program, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout.readline().startswith(b"onnxroof ")
        process.stdout.close()  # the reader goes away with most of the table unread
        stderr = process.stderr.read()
        assert process.wait() == 0 and stderr == b""
