"""The PR Action's script (examples/onnxroof-diff.sh) on hostile pull requests (issue 43.5, 43.9):
model file names holding spaces, '*', '?', '[', a tab or a leading '-' are each one model, never
split or glob-expanded; and a pull request cannot change the target figures its budgets are judged
on (a hardware/l4.toml of its own, an edited target file), unless the workflow sets pr-targets."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import onnx
import pytest
from ci_script import run_diff_script
from conftest import target_text
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash"
)
NAMES = ["a b.onnx", "*.onnx", "c  d.onnx", "-e.onnx", "f*g.onnx", "h?.onnx", "[x].onnx", "tab\there.onnx"]


def relu_model(width: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def git(cwd: Path, *args: str) -> str:
    names = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env={**os.environ, **names}
    ).stdout.strip()


def commit(cwd: Path, message: str) -> str:
    if not (cwd / ".git").exists():
        git(cwd, "init", "-q")
    git(cwd, "add", "-A")
    git(cwd, "commit", "-qm", message)
    return git(cwd, "rev-parse", "HEAD")


def script(cwd: Path, **variables: str) -> tuple[subprocess.CompletedProcess, str]:
    """The script as action.yml runs it, on this worktree's onnxroof; (the run, the comment)."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("ONNXROOF_TARGETS", "ONNXROOF_CWD_TARGETS", "MODELS", "TARGETS", "PR_TARGETS")
    }
    done = run_diff_script(cwd, environment, timeout=600, **variables, PYTHONPATH=str(ROOT))
    return done, (cwd / "out" / "comment.md").read_text()


def rows(comment: str) -> dict[str, str]:
    return dict(re.findall(r"^\| <code>(.+?)</code> \| (.+) \|$", comment, re.M))


def test_eight_changed_files_with_hostile_names_are_eight_rows(tmp_path):
    (tmp_path / "models").mkdir()
    onnx.save(relu_model(4), tmp_path / "models" / "old.onnx")
    base = commit(tmp_path, "base")
    for width, name in enumerate(NAMES, 8):
        onnx.save(relu_model(width), tmp_path / "models" / name)
    commit(tmp_path, "head")
    done, comment = script(tmp_path, BASE_REF=base)
    assert done.returncode == 0, done.stderr
    shown = {name.replace("&amp;", "&") for name in rows(comment)}
    assert shown == {f"models/{name}" for name in NAMES}  # 8 files, 8 rows, each once
    assert len(list((tmp_path / "out").glob("*.diff.html"))) == 8


def test_models_whose_names_map_to_one_page_name_get_a_page_each(tmp_path):
    # a/b.onnx and a_b.onnx both become a_b.onnx once '/' is '_': the second page overwrote the first
    (tmp_path / "a").mkdir()
    onnx.save(relu_model(8), tmp_path / "a" / "b.onnx")
    onnx.save(relu_model(9), tmp_path / "a_b.onnx")
    done, comment = script(tmp_path, MODELS="a/b.onnx a_b.onnx")
    assert done.returncode == 0, done.stderr
    assert set(rows(comment)) == {"a/b.onnx", "a_b.onnx"}
    assert sorted(p.name for p in (tmp_path / "out").glob("*.diff.html")) == [
        "a_b.onnx.diff.html",
        "a_b.onnx_.diff.html",
    ]


def test_the_models_input_reads_quoted_names_and_expands_nothing(tmp_path):
    for width, name in ((8, "a b.onnx"), (9, "*.onnx"), (10, "other.onnx"), (11, "-x.onnx")):
        onnx.save(relu_model(width), tmp_path / name)
    done, comment = script(tmp_path, MODELS="'a b.onnx' '*.onnx' -x.onnx")
    assert done.returncode == 0, done.stderr
    # other.onnx is not matched by '*'; -x.onnx is a model, not a flag
    assert set(rows(comment)) == {"a b.onnx", "*.onnx", "-x.onnx"}
    done, comment = script(tmp_path, MODELS="'a b.onnx")
    assert done.returncode == 2 and "the models input: No closing quotation: close the quote" in done.stderr


# A Relu is one kernel: its latency is at least the target's launch cost. The bundled l4 launches a
# kernel in 2.992 µs (hardware/l4.toml, node_overhead_s), so "latency[l4]>1us" is broken on it; a
# pull request's l4.toml with a 1 ps launch would let it hold.
BUDGET = "latency[l4]>1us"


def _tiny_launch_l4() -> str:
    text = (ROOT / "hardware" / "l4.toml").read_text()
    assert "[node_overhead_s]\nvalue = 2.992e-06\n" in text
    return text.replace("[node_overhead_s]\nvalue = 2.992e-06\n", "[node_overhead_s]\nvalue = 1e-12\n")


def test_a_pull_request_s_own_l4_cannot_pass_a_budget(tmp_path):
    onnx.save(relu_model(32), tmp_path / "m.onnx")
    base = commit(tmp_path, "base")
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "l4.toml").write_text(_tiny_launch_l4())
    commit(tmp_path, "a target of the pull request's own")
    done, comment = script(tmp_path, BASE_REF=base, MODELS="m.onnx", TARGETS="l4", BUDGETS=BUDGET)
    assert done.returncode == 1 and rows(comment) == {"m.onnx": "❌ a budget is broken"}, done.stderr
    assert "is read from" not in comment  # the bundled l4
    # a target file of the pull request named in the targets input: the base does not have it
    done, comment = script(tmp_path, BASE_REF=base, MODELS="m.onnx", TARGETS="hardware/l4.toml", BUDGETS=BUDGET)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "hardware/l4.toml is a file of the pull request's checkout" in done.stderr
    # nor through the options: --target (or an abbreviation) is the targets input's
    done, comment = script(tmp_path, BASE_REF=base, MODELS="m.onnx", OPTIONS="--targ hardware/l4.toml", BUDGETS=BUDGET)
    assert done.returncode == 2 and "give targets in the targets input" in comment
    # the workflow opts in: the pull request's file is read, and the comment says so
    done, comment = script(tmp_path, BASE_REF=base, MODELS="m.onnx", TARGETS="l4", BUDGETS=BUDGET, PR_TARGETS="true")
    assert done.returncode == 0 and rows(comment) == {"m.onnx": "✅ budgets hold"}, done.stderr
    assert f"target l4 is read from {tmp_path / 'hardware' / 'l4.toml'}" in comment.replace("\\", "")


def test_a_target_file_of_the_base_is_read_as_the_base_has_it(tmp_path):
    # the base's own target, 1 TFLOP/s, 1 TB/s, 5 µs a kernel: the Relu takes over 5 µs, so
    # "latency[mine]>1us" is broken; the pull request edits the launch to 1 ps
    onnx.save(relu_model(32), tmp_path / "m.onnx")
    (tmp_path / "hardware").mkdir()
    figures = {"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e12, "node_overhead_s": 5e-6}
    (tmp_path / "hardware" / "mine.toml").write_text(target_text(figures, name="mine"))
    base = commit(tmp_path, "base")
    (tmp_path / "hardware" / "mine.toml").write_text(target_text({**figures, "node_overhead_s": 1e-12}, name="mine"))
    commit(tmp_path, "the pull request edits the target")
    for targets in ("mine", "hardware/mine.toml", str(tmp_path / "hardware" / "mine.toml")):
        done, comment = script(tmp_path, BASE_REF=base, MODELS="m.onnx", TARGETS=targets, BUDGETS="latency[mine]>1us")
        assert done.returncode == 1 and rows(comment) == {"m.onnx": "❌ a budget is broken"}, (targets, done.stderr)
    # without a base, only the bundled targets: "mine" is no target
    done, comment = script(tmp_path, MODELS="m.onnx", TARGETS="mine", BUDGETS="latency[mine]>1us")
    assert done.returncode == 2 and "mine: no such target" in comment


def test_a_model_named_with_newlines_writes_no_line_of_its_own_into_github_output(tmp_path):
    # the name's newlines would make the summary line three: "status=0" after the real status
    # (the job fails on the status read there), and "z=.onnx"
    (tmp_path / "README").write_text("base\n")
    base = commit(tmp_path, "base")
    name = "b\nstatus=0\nz=.onnx"
    onnx.save(relu_model(4), tmp_path / name)
    commit(tmp_path, "head")
    output = tmp_path / "github-output"
    done, comment = script(tmp_path, BASE_REF=base, BUDGETS="flops>1", GITHUB_OUTPUT=str(output))
    assert done.returncode == 1, done.stderr  # the budget (4 FLOPs > 1) is broken
    lines = output.read_text().splitlines()
    assert [line.split("=", 1)[0] for line in lines] == ["status", "summary", "comment"]
    assert lines[0] == "status=1" and "b?status=0?z=.onnx" in lines[1]
    assert list(rows(comment)) == ["b?status=0?z=.onnx"]  # one row, the name on one line
