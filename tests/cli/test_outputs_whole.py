"""Output files under hostile conditions: written whole or not at all through a symbolic link
and on a full disk; with several outputs (-o and --emit-order), none written unless all are
produced; a write error is the user's (exit 2, one line naming the file and the reason); an
output never replaces an input model; a bad path's error names its flag and says what it is."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest
from conftest import one_error_line, relu_file, run
from onnx import TensorProto

F32 = TensorProto.FLOAT


# 4. -o through a symbolic link: the temporary file beside the real file


def _full_disk(limit: int = 2000):
    """A child process whose files cannot grow past ``limit`` bytes (EFBIG, as a full disk's ENOSPC)."""

    def limit_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_files


def test_output_through_a_link_on_a_full_disk_keeps_the_real_file(tmp_path):
    model = relu_file(tmp_path / "m.onnx")
    (tmp_path / "real").mkdir()
    real, link = tmp_path / "real" / "r.html", tmp_path / "link.html"
    real.write_text("good content")
    link.symlink_to(real)
    process = subprocess.run(
        [sys.executable, "-m", "onnxroof.cli", "report", str(model), "-o", str(link), "-q"],
        capture_output=True,
        text=True,
        preexec_fn=_full_disk(),
    )
    assert process.returncode == 2 and one_error_line(process.stderr), process.stderr
    assert f"-o {link}: cannot be written (File too large)" in process.stderr
    assert real.read_text() == "good content" and link.is_symlink()
    assert sorted(os.listdir(tmp_path / "real")) == ["r.html"]  # no temporary left


def test_output_through_a_link_replaces_the_real_file_whole(capsys, tmp_path):
    model = relu_file(tmp_path / "m.onnx")
    (tmp_path / "real").mkdir()
    real, link = tmp_path / "real" / "r.txt", tmp_path / "link.txt"
    real.write_text("old")
    link.symlink_to(os.path.join("real", "r.txt"))  # relative, as links usually are
    inode = os.stat(real).st_ino
    assert run(capsys, "summary", model, "-o", link, "-q")[0] == 0
    assert link.is_symlink() and real.read_text().startswith("onnxroof ")
    assert os.stat(real).st_ino != inode  # renamed into place, not written over
    assert sorted(os.listdir(tmp_path / "real")) == ["r.txt"]


def test_output_through_a_dangling_link_creates_its_target(capsys, tmp_path):
    model = relu_file(tmp_path / "m.onnx")
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "new.txt")
    assert run(capsys, "summary", model, "-o", link, "-q")[0] == 0
    assert link.is_symlink() and (tmp_path / "new.txt").read_text().startswith("onnxroof ")


# 5. every output produced before any is written


def test_a_run_that_fails_keeps_the_order_file(capsys, tmp_path):
    model = relu_file(tmp_path / "m.onnx")
    order, output = tmp_path / "order.txt", tmp_path / "out.csv"
    order.write_text("old order\n")
    output.write_text("old output\n")
    # --formulas does not go with CSV: found once the analysis is done, after the order was computed
    code, _, err = run(capsys, "summary", model, "--emit-order", order, "--formulas", "--format", "csv", "-o", output)
    assert code == 2 and one_error_line(err)
    assert order.read_text() == "old order\n" and output.read_text() == "old output\n"


def test_an_internal_error_while_rendering_keeps_the_order_file(capsys, tmp_path, monkeypatch):
    import onnxroof.report.html.pages as pages

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the page")

    monkeypatch.setattr(pages, "render_html", broken)
    model = relu_file(tmp_path / "m.onnx")
    order, page = tmp_path / "order.txt", tmp_path / "r.html"
    order.write_text("old order\n")
    page.write_text("old page")
    code, _, err = run(capsys, "report", model, "--emit-order", order, "-o", page)
    assert code == 3 and "a bug in the page" in err
    assert order.read_text() == "old order\n" and page.read_text() == "old page"


def test_an_output_that_cannot_be_written_keeps_the_other(capsys, tmp_path):
    model = relu_file(tmp_path / "m.onnx")
    order = tmp_path / "order.txt"
    order.write_text("old order\n")
    code, _, err = run(capsys, "summary", model, "--emit-order", order, "-o", "/dev/full")
    assert code == 2 and one_error_line(err) and order.read_text() == "old order\n"
    code, out, err = run(capsys, "summary", model, "--emit-order", order, "-q")
    assert code == 0 and out.startswith("onnxroof ") and order.read_text() == "relu\n"


def test_two_outputs_to_the_same_file_are_refused(capsys, tmp_path):
    model = relu_file(tmp_path / "m.onnx")
    code, _, err = run(capsys, "summary", model, "--emit-order", tmp_path / "x.txt", "-o", tmp_path / "x.txt")
    assert code == 2 and one_error_line(err) and "--emit-order and -o name the same file" in err
    assert not (tmp_path / "x.txt").exists()


# 11. a write error is the user's: exit 2, one line naming the file and the reason


@pytest.mark.parametrize(
    "argv",
    [
        ["summary", "{m}", "-o", "/dev/full"],
        ["summary", "{m}", "--emit-order", "/dev/full", "-q"],
        ["report", "{m}", "-o", "/dev/full", "-q"],
        ["compare", "{m}", "{m}", "--jobs", "1", "-o", "/dev/full"],
        ["diff", "{m}", "{m}", "-o", "/dev/full"],
        ["check", "{m}", "-o", "/dev/full"],
    ],
)
def test_writing_to_a_full_device_is_exit_2_in_one_line(capsys, tmp_path, argv):
    model = relu_file(tmp_path / "m.onnx")
    code, _, err = run(capsys, *[word.format(m=model) for word in argv])
    flag = "--emit-order" if "--emit-order" in argv else "-o"
    assert code == 2 and one_error_line(err), err
    assert f"{flag} /dev/full: cannot be written (No space left on device)" in err


def test_standard_output_on_a_full_device_is_exit_2_in_one_line(tmp_path):
    model = relu_file(tmp_path / "m.onnx")
    for argv in (["summary", str(model)], ["check", str(model)]):
        with open("/dev/full", "w") as full:
            process = subprocess.run(
                [sys.executable, "-m", "onnxroof.cli", *argv, "-q"], stdout=full, stderr=subprocess.PIPE, text=True
            )
        assert process.returncode == 2 and one_error_line(process.stderr), process.stderr
        assert "standard output: cannot be written (No space left on device)" in process.stderr
    # commands that print (a short text, flushed as the program ends, or a long one as it goes)
    for argv in (["explain", str(model), "relu"], ["targets"], ["ops"]):
        with open("/dev/full", "w") as full:
            process = subprocess.run(
                [sys.executable, "-m", "onnxroof.cli", *argv], stdout=full, stderr=subprocess.PIPE, text=True
            )
        assert process.returncode == 2 and one_error_line(process.stderr), process.stderr
        assert "a write failed (No space left on device)" in process.stderr


def test_check_on_a_full_disk_keeps_the_old_file(tmp_path):
    models = [relu_file(tmp_path / f"m{i}.onnx") for i in range(30)]
    output = tmp_path / "audit.jsonl"
    output.write_text("old\n")
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxroof.cli",
            "check",
            *map(str, models),
            "--format",
            "jsonl",
            "-o",
            str(output),
            "-q",
        ],
        capture_output=True,
        text=True,
        preexec_fn=_full_disk(1500),
    )
    assert process.returncode == 2 and one_error_line(process.stderr), process.stderr
    assert output.read_text() == "old\n" and not list(tmp_path.glob("audit.jsonl*.partial"))


# -o naming an input model


@pytest.mark.parametrize("command", ["summary", "report", "compare", "check", "emit-order"])
def test_an_output_never_replaces_an_input_model(capsys, tmp_path, command):
    model = relu_file(tmp_path / "m.onnx")
    before = model.read_bytes()
    link = tmp_path / "link.onnx"
    link.symlink_to(model)
    for target in (model, link):
        argv = ["summary", model, "--emit-order", target] if command == "emit-order" else [command, model, "-o", target]
        code, _, err = run(capsys, *argv)
        assert code == 2 and one_error_line(err) and "is the input model" in err, err
        assert model.read_bytes() == before


# wording: the flag at fault, and what a path is


def test_emit_order_to_a_directory_names_its_flag(capsys, tmp_path):
    code, _, err = run(capsys, "summary", relu_file(tmp_path / "m.onnx"), "--emit-order", tmp_path)
    assert code == 2 and one_error_line(err) and f"--emit-order {tmp_path}: is a directory" in err


def test_a_target_that_is_a_directory_or_a_pipe_says_so(capsys, tmp_path):
    model = relu_file(tmp_path / "m.onnx")
    (tmp_path / "dir.toml").mkdir()
    os.mkfifo(tmp_path / "pipe.toml")
    for path, words in (
        (tmp_path / "dir.toml", "is a directory"),
        (tmp_path, "is a directory"),
        (tmp_path / "pipe.toml", "not a regular file (a device or a pipe)"),
        (tmp_path / "none.toml", "no such file"),
    ):
        code, _, err = run(capsys, "summary", model, "--target", path)
        assert code == 2 and one_error_line(err) and f"--target {path}: {words}" in err, err
