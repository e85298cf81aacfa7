"""The PR Action's script (examples/onnxroof-diff.sh) on a repository's history (issue 47): a
renamed model is diffed against its base version at the old path; a model kept in Git LFS is
diffed against its base object, not its pointer, and a pointer that cannot be resolved (the base's
object missing, the head checked out without LFS) is one error line with the fix. And the
two-workflow pattern for pull requests from forks wires its names and its artifact alike."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import onnx
import pytest
import yaml
from test_ci_action_trust import commit, git, relu_model, rows, script

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash"
)
needs_lfs = pytest.mark.skipif(shutil.which("git-lfs") is None, reason="needs git-lfs (apt-get install git-lfs)")


def _flops_row(comment: str) -> tuple[str, str]:
    """The diff's FLOPs row (base, head): a Relu is one FLOP per element."""
    base, head = re.search(r"^\| FLOPs \| ([^|]+) \| ([^|]+) \|", comment, re.M).groups()
    return base.strip(), head.strip()


def test_a_renamed_model_is_diffed_against_its_base_version_at_the_old_path(tmp_path):
    # base: models/old.onnx, a Relu on [1, 64]; head: moved to models/new.onnx (and widened to 80:
    # 64 -> 80 FLOPs), and models/same.onnx, a Relu on [1, 32], moved unchanged to models/moved.onnx
    (tmp_path / "models").mkdir()
    onnx.save(relu_model(64), tmp_path / "models" / "old.onnx")
    onnx.save(relu_model(32), tmp_path / "models" / "same.onnx")
    base = commit(tmp_path, "base")
    git(tmp_path, "mv", "models/old.onnx", "models/new.onnx")
    git(tmp_path, "mv", "models/same.onnx", "models/moved.onnx")
    onnx.save(relu_model(80), tmp_path / "models" / "new.onnx")
    commit(tmp_path, "head: renamed")
    done, comment = script(tmp_path, BASE_REF=base)
    assert done.returncode == 0, done.stderr
    assert rows(comment) == {
        "models/new.onnx": "✅ analysed (renamed from <code>models/old.onnx</code>)",
        "models/moved.onnx": "✅ analysed (renamed from <code>models/same.onnx</code>)",
    }
    sections = comment.split("**<code>")
    edited = next(s for s in sections if s.startswith("models/new.onnx"))
    moved = next(s for s in sections if s.startswith("models/moved.onnx"))
    assert _flops_row(edited) == ("64", "80") and _flops_row(moved) == ("32", "32")


def _lfs_repository(folder: Path) -> str:
    """A repository whose .onnx files are in Git LFS (its objects in .git/lfs): base has m.onnx, a
    Relu on [1, 64]; head widens it to 80. Returns the base commit."""
    git(folder, "init", "-q")  # before commit(), which would make it: LFS is set up first
    git(folder, "lfs", "install", "--local")
    git(folder, "lfs", "track", "*.onnx")
    onnx.save(relu_model(64), folder / "m.onnx")
    base = commit(folder, "base")
    assert git(folder, "show", f"{base}:m.onnx").startswith("version https://git-lfs.github.com/spec/v1")
    onnx.save(relu_model(80), folder / "m.onnx")
    commit(folder, "head")
    return base


@needs_lfs
def test_a_model_in_git_lfs_is_diffed_against_its_base_object_not_its_pointer(tmp_path):
    base = _lfs_repository(tmp_path)
    done, comment = script(tmp_path, BASE_REF=base)
    assert done.returncode == 0, done.stderr
    assert rows(comment) == {"m.onnx": "✅ analysed"} and _flops_row(comment) == ("64", "80")


@needs_lfs
def test_a_base_lfs_object_that_cannot_be_had_is_one_line_with_the_fix(tmp_path):
    base = _lfs_repository(tmp_path)
    shutil.rmtree(tmp_path / ".git" / "lfs" / "objects")  # not fetched, and no remote to fetch it from
    done, comment = script(tmp_path, BASE_REF=base)
    line = (
        f"onnxroof: error: m.onnx at {base} is a Git LFS pointer whose object is not here and could not be "
        f"fetched: git lfs fetch origin {base} (in a GitHub workflow, actions/checkout with lfs: true, then "
        f"git lfs fetch origin {base})"
    )
    assert done.returncode == 2 and rows(comment) == {"m.onnx": "⚠️ could not be analysed"}
    assert line in done.stderr.splitlines() and f"<pre>{line}\n</pre>" in comment


@needs_lfs
def test_without_git_lfs_a_base_pointer_says_install_it(tmp_path, monkeypatch):
    base = _lfs_repository(tmp_path)
    # PATH as it is, but for git-lfs: every other program of its folder, linked from one of our own
    programs = tmp_path / "bin"
    programs.mkdir()
    lfs = Path(shutil.which("git-lfs"))
    for program in lfs.resolve().parent.iterdir():
        if program.name != "git-lfs":
            (programs / program.name).symlink_to(program)
    folder = lfs.resolve().parent
    monkeypatch.setenv(
        "PATH",
        os.pathsep.join(
            str(programs) if Path(entry).resolve() == folder else entry
            for entry in os.environ["PATH"].split(os.pathsep)
        ),
    )
    done, comment = script(tmp_path, BASE_REF=base)
    assert done.returncode == 2 and rows(comment) == {"m.onnx": "⚠️ could not be analysed"}
    assert (
        f"onnxroof: error: m.onnx at {base} is a Git LFS pointer and git-lfs is not installed: install it (in "
        f"a GitHub workflow, actions/checkout with lfs: true, then git lfs fetch origin {base})"
    ) in done.stderr


@needs_lfs
def test_a_head_model_checked_out_as_its_lfs_pointer_says_run_git_lfs_pull(tmp_path):
    base = _lfs_repository(tmp_path)
    (tmp_path / "m.onnx").write_text(git(tmp_path, "show", "HEAD:m.onnx") + "\n")  # as a checkout without LFS
    done, comment = script(tmp_path, BASE_REF=base)
    assert done.returncode == 2 and rows(comment) == {"m.onnx": "⚠️ could not be analysed"}
    assert (
        "onnxroof: error: m.onnx: not an ONNX model: the file is a Git LFS pointer, not the model (checked out "
        "without Git LFS): run git lfs pull"
    ) in done.stderr


def _workflow(name: str) -> dict:
    document = yaml.safe_load((ROOT / "examples" / name).read_text())
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads a bare `on` as true
    return document


def _steps(document: dict) -> list[dict]:
    (job,) = document["jobs"].values()
    return job["steps"]


def test_the_fork_workflows_pass_the_comment_through_one_artifact_and_only_the_second_writes():
    diff, comment = _workflow("onnxroof-pr-diff.yml"), _workflow("onnxroof-pr-comment.yml")
    # the first: pull_request, read-only, runs the action, uploads the comment and the number
    assert list(diff["on"]) == ["pull_request"] and diff["permissions"] == {"contents": "read"}
    steps = _steps(diff)
    action = next(s for s in steps if s.get("uses", "").endswith("/onnxroof@main"))
    output = action["with"].get("output-dir", "onnxroof-out")
    number = next(s for s in steps if "pr-number" in s.get("run", ""))
    assert number["env"]["NUMBER"] == "${{ github.event.pull_request.number }}"
    assert f"> {output}/pr-number" in number["run"]
    uploads = {
        s["with"]["name"]: s["with"]["path"].split()
        for s in steps
        if s.get("uses", "").startswith("actions/upload-artifact@")
    }
    assert uploads["onnxroof-comment"] == [f"{output}/comment.md", f"{output}/pr-number"]
    # the second: runs after the first by its name, may write, downloads that artifact of that run
    assert comment["on"] == {"workflow_run": {"workflows": [diff["name"]], "types": ["completed"]}}
    assert comment["permissions"] == {"actions": "read", "pull-requests": "write"}
    steps = _steps(comment)
    download = next(s for s in steps if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["name"] == "onnxroof-comment"
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    folder = download["with"]["path"]
    script_text = next(s for s in steps if s.get("uses", "").startswith("actions/github-script@"))["with"]["script"]
    assert f'"{folder}/pr-number"' in script_text and f'"{folder}/comment.md"' in script_text
    # it runs none of the pull request's code: no checkout, no shell step
    assert not any(s.get("uses", "").startswith("actions/checkout@") or "run" in s for s in steps)
    # the artifact is checked before it is posted: a number, the PR's head is the run's, the marker
    for check in (
        "/^[0-9]{1,10}$/",
        "pull.head.sha !== context.payload.workflow_run.head_sha",
        "body.startsWith(MARKER)",
        'const MARKER = "<!-- onnxroof-diff -->"',
    ):
        assert check in script_text
    assert (ROOT / "examples" / "onnxroof-diff.sh").read_text().count('echo "<!-- onnxroof-diff -->"') == 2


def test_the_ready_workflow_names_the_fork_pattern():
    ready = (ROOT / "examples" / "onnxroof-pr.yml").read_text()
    assert "onnxroof-pr-diff.yml and onnxroof-pr-comment.yml" in ready
    assert _workflow("onnxroof-pr.yml")["permissions"]["pull-requests"] == "write"
