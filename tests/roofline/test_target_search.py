"""The targets search path (``./hardware``, the user's folder, the bundled files) read as an
explicit ``--target FILE`` is (issue 43.5): a regular file of bounded size, never a pipe or a
device; one broken file does not hide the others from ``onnxroof targets``; a target read from
the search path but not onnxroof's own files says so in every output; ``ONNXROOF_CWD_TARGETS=0`` leaves
``./hardware`` out (the PR Action)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import one_error_line, relu_file, run, target_text

from onnxroof.roofline.target_paths import MAX_TARGET_FILE_BYTES, is_bundled
from onnxroof.roofline.targets import load_target

WORKTREE = Path(__file__).resolve().parents[2]
# 1 TFLOP/s, 1 TB/s, 3 µs a kernel: a 1x3x4x4 Relu (48 FLOPs, 2 x 192 bytes) takes 3 µs + 384 ps
LOCAL_L4 = target_text(
    {"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e12, "node_overhead_s": 3e-6},
    name="l4",
    description="a local l4",
)
LOCAL_L4_LATENCY = 3e-6 + 384 / 1e12


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A working folder with a ./hardware, and an empty user targets folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ONNXROOF_TARGETS", str(tmp_path / "mine"))
    monkeypatch.delenv("ONNXROOF_CWD_TARGETS", raising=False)
    (tmp_path / "hardware").mkdir()
    return tmp_path


def _cli(folder, *argv) -> subprocess.CompletedProcess:
    """In a child process with a limit: a target file that blocks must fail the test, not hang it."""
    env = {**os.environ, "PYTHONPATH": str(WORKTREE), "ONNXROOF_TARGETS": str(folder / "mine")}
    env.pop("ONNXROOF_CWD_TARGETS", None)
    return subprocess.run(
        [sys.executable, "-m", "onnxroof.cli", *map(str, argv)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _plant(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "huge":
        with open(path, "wb") as stream:  # sparse: no disk used
            stream.truncate(MAX_TARGET_FILE_BYTES + 1)
    else:
        path.write_text("peak_ops_per_s = [")


@pytest.mark.parametrize(
    "kind, message",
    [
        ("fifo", "not a regular file (a device or a pipe)"),
        ("zero", "not a regular file (a device or a pipe)"),
        ("huge", "over 1,048,576 bytes, more than any target file holds"),
        ("broken", "not valid TOML"),
    ],
)
def test_a_hostile_file_on_the_search_path_is_one_line_exit_2(folder, kind, message):
    _plant(folder / "hardware" / "l4.toml", kind)
    model = relu_file(folder / "m.onnx")
    process = _cli(folder, "summary", model, "--target", "l4", "-q")
    assert process.returncode == 2 and one_error_line(process.stderr), process.stderr
    assert f"hardware/l4.toml: {message}" in process.stderr


def _entries(listing: str) -> list[str]:
    """The lines of ``onnxroof targets``' notes, each entry whole: a long one wraps onto lines
    indented by four spaces to fit 120 columns (issue 47)."""
    entries: list[str] = []
    for line in listing.splitlines():
        if line.startswith("    ") and entries and entries[-1].startswith("  "):
            entries[-1] += " " + line.strip()
        else:
            entries.append(line)
    return entries


def test_targets_lists_each_broken_file_as_one_entry_and_the_rest(folder):
    for kind in ("fifo", "zero", "huge", "broken"):
        _plant(folder / "hardware" / f"{kind}.toml", kind)
    process = _cli(folder, "targets")
    assert process.returncode == 0, process.stderr
    broken = [line for line in _entries(process.stdout) if ": broken, --target " in line]
    assert sorted(line.split(":")[0].strip() for line in broken) == ["broken", "fifo", "huge", "zero"]
    assert all(str(folder / "hardware") in line for line in broken)
    assert "h100-sxm" in process.stdout and "myriad-x" in process.stdout  # the bundled ones still listed


def test_targets_reads_a_bounded_number_of_own_files_and_names_the_rest(capsys, folder, monkeypatch):
    # a ./hardware of thousands of files took 25 s to list; past MAX_LISTED_OWN (3 here) the rest
    # are named, not read: 5 files, 3 listed, 2 named
    from onnxroof.cli.commands import targets as command

    monkeypatch.setattr(command, "MAX_LISTED_OWN", 3)
    text = (Path(load_target("l4").path)).read_text()
    for index in range(5):
        (folder / "hardware" / f"mine{index}.toml").write_text(text.replace('name = "l4"', f'name = "mine{index}"'))
    code, out, _ = run(capsys, "targets")
    assert code == 0 and "mine2" in out and "h100-sxm" in out
    assert "2 more target files" in out and "mine3, mine4; --target NAME reads any of them" in out.replace("\n  ", " ")


def test_a_local_file_hiding_a_bundled_target_says_so_in_every_output(capsys, folder):
    local = folder / "hardware" / "l4.toml"
    local.write_text(LOCAL_L4)
    model = relu_file(folder / "m.onnx")
    note = f"target l4 is read from {local}, not from onnxroof's bundled targets: it hides the bundled l4"
    code, out, err = run(capsys, "summary", model, "--target", "l4", "--format", "json", "-q")
    assert code == 0 and note in json.loads(out)["warnings"]
    assert json.loads(out)["targets"][0]["latency_s"] == pytest.approx(LOCAL_L4_LATENCY)  # the local figures
    for argv in (
        ["summary", model, "--target", "l4"],
        ["summary", model, "--target", "l4", "--format", "markdown"],
        ["diff", model, model, "--target", "l4"],
        ["diff", model, model, "--target", "l4", "--format", "markdown"],
    ):
        code, out, _ = run(capsys, *argv, "-q")
        assert code == 0 and note in out.replace("\\", ""), argv  # Markdown escapes the path's _
    for command in ("diff", "compare"):
        code, out, _ = run(capsys, command, model, model, "--target", "l4", "--format", "json", "-q")
        assert json.loads(out)["target_origins"] == [note], command
        code, out, _ = run(capsys, command, model, model, "--target", "l4", "-q")
        assert code == 0 and note in out, command
    code, out, _ = run(capsys, "compare", model, model, "--target", "l4", "--format", "markdown", "-q")
    assert code == 0 and note in out.replace("\\", ""), out
    for command in ("report", "diff", "compare"):
        page = folder / f"{command}.html"
        pair = [model, "--format", "html"] if command != "report" else []
        argv = [command, model, *pair, "--target", "l4", "-o", page, "-q"]
        assert run(capsys, *argv)[0] == 0
        assert note.replace("'", "&#39;") in page.read_text(), command


def test_a_byte_for_byte_copy_of_a_bundled_target_hides_nothing_and_says_nothing(capsys, folder):
    # onnxroof's own checkout, run from its root (the README's first command): ./hardware holds
    # the bundled files themselves, so the target read is the bundled one in all but its path
    from onnxroof.roofline.target_paths import bundled_targets

    (folder / "hardware" / "l4.toml").write_bytes(bundled_targets()["l4"].read_bytes())
    model = relu_file(folder / "m.onnx")
    code, out, err = run(capsys, "summary", model, "--target", "l4", "--format", "json", "-q")
    assert code == 0 and not any("is read from" in warning for warning in json.loads(out)["warnings"])
    # one byte changed (a comment), and it is a file of its own again
    (folder / "hardware" / "l4.toml").write_bytes(bundled_targets()["l4"].read_bytes() + b"# local\n")
    code, out, err = run(capsys, "summary", model, "--target", "l4", "--format", "json", "-q")
    assert code == 0 and any("it hides the bundled l4" in warning for warning in json.loads(out)["warnings"])


def test_a_bundled_target_says_nothing_and_cwd_targets_0_skips_hardware(capsys, folder, monkeypatch):
    (folder / "hardware" / "l4.toml").write_text(LOCAL_L4)
    model = relu_file(folder / "m.onnx")
    monkeypatch.setenv("ONNXROOF_CWD_TARGETS", "0")
    assert is_bundled(load_target("l4").path)
    code, out, _ = run(capsys, "summary", model, "--target", "l4", "--format", "json", "-q")
    assert code == 0 and not any("is read from" in w for w in json.loads(out)["warnings"])
    code, out, _ = run(capsys, "targets")
    assert code == 0 and "is read from" not in out


def test_a_calibrated_target_of_its_own_name_is_named_with_its_file(capsys, folder):
    own = folder / "mine"
    own.mkdir()
    (own / "lab-box.toml").write_text(LOCAL_L4.replace('name = "l4"', 'name = "lab-box"'))
    code, out, _ = run(capsys, "targets")
    note = f"  target lab-box is read from {own / 'lab-box.toml'}, not from onnxroof's bundled targets"
    assert code == 0 and note in _entries(out)


def test_a_file_given_by_its_path_elsewhere_is_named_by_the_command_not_warned_about(capsys, folder):
    own = folder / "elsewhere.toml"
    own.write_text(LOCAL_L4)
    model = relu_file(folder / "m.onnx")
    code, out, _ = run(capsys, "summary", model, "--target", own, "--format", "json", "-q")
    document = json.loads(out)
    assert code == 0 and document["warnings"] == [] and document["targets"][0]["path"] == str(own)


def test_the_suite_reads_no_target_of_the_user_s():
    # issue 47: tests/conftest.py gives the run an empty targets folder and config of its own and
    # leaves the working folder's ./hardware out, so a user's `calibrate --save` changes no test
    from onnxroof.roofline.target_paths import search_folders, target_files, user_target_dir

    home = Path(os.environ["XDG_CONFIG_HOME"]).parent
    assert user_target_dir() == home / "targets" and not user_target_dir().exists()
    assert Path.home() not in user_target_dir().parents and search_folders() == [user_target_dir()]
    assert all(is_bundled(path) for path in target_files().values())
