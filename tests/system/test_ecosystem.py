"""Ecosystem fit (issue 21, item 10): the reusable GitHub Action's diff script run on a real git
history, the pre-commit hook's command, `onnxroof check`, and the notebook and pandas hooks of
the Python API."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from ci_script import run_diff_script
from conftest import minigooglenet_by_hand, run

import onnxroof
from onnxroof.core.examples import build_example

ROOT = Path(__file__).resolve().parents[2]


def test_check_prints_one_line_per_model_and_gates_on_budgets(capsys):
    # ShallowNet: 328,586 params (cost-model.md; under 1M); MiniGoogLeNet's, walked by hand from
    # its Keras definition, are over
    _, minigooglenet_params, _ = minigooglenet_by_hand()
    code, out, _ = run(capsys, "check", "example:shallownet", "example:minigooglenet", "--fail-if", "params>1M")
    lines = out.splitlines()
    assert code == 1 and len(lines) == 2 and minigooglenet_params > 1_000_000
    assert lines[0].startswith("example:shallownet: params 329 k") and lines[0].endswith("1 budget(s) hold")
    assert f"({minigooglenet_params:,})" in lines[1]
    code, out, _ = run(capsys, "check", "example:shallownet", "/no/such.onnx")
    assert code == 2 and "/no/such.onnx: error:" in out


def test_the_pre_commit_hook_runs_check_on_onnx_files():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = hooks
    assert hook["id"] == "onnxroof-budgets" and hook["entry"] == "onnxroof check" and hook["files"] == r"\.onnx$"


def test_the_action_is_a_composite_that_installs_onnxroof_from_its_own_repository():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert {"models", "targets", "budgets", "base-ref"} <= set(action["inputs"])
    runs = " ".join(step.get("run", "") for step in action["runs"]["steps"])
    assert 'pip install "${{ github.action_path }}"' in runs and "examples/onnxroof-diff.sh" in runs


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash")
def test_the_action_s_diff_script_on_a_pull_request_history(tmp_path):
    # a repository whose model goes from ShallowNet to its separable version: parameters hardly
    # change (the Dense layer holds them) and FLOPs fall by 62%, so "params>+5%" holds and
    # "flops>-70%" (anything but a fall of over 70%) is broken
    def git(*args):
        subprocess.run(
            ["git", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            env={
                **os.environ,
                "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@t",
                "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@t",
            },
        )

    git("init", "-q")
    model = tmp_path / "models" / "net.onnx"
    model.parent.mkdir()
    model.write_bytes(build_example("shallownet").SerializeToString())
    git("add", ".")
    git("commit", "-qm", "base")
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    model.write_bytes(build_example("shallownet-separable").SerializeToString())
    git("commit", "-qam", "head")
    output, summary = tmp_path / "gh_output", tmp_path / "gh_summary"
    done = run_diff_script(
        tmp_path,
        BASE_REF=base,
        TARGETS="myriad-x",
        BUDGETS="params>+5%\nflops>-70%",
        GITHUB_OUTPUT=str(output),
        GITHUB_STEP_SUMMARY=str(summary),
    )
    assert done.returncode == 1, done.stderr  # the script exits with the status, as it writes it
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert comment.startswith("<!-- onnxroof-diff -->") and "### onnxroof diff: net → net" in comment
    assert "| <code>models/net.onnx</code> | ❌ a budget is broken |" in comment
    assert "Budgets broken:**" in comment and "70%" in comment  # named in the comment
    assert "status=1" in output.read_text() and summary.read_text() == comment
    assert (tmp_path / "out" / "models_net.onnx.diff.html").is_file()


def test_to_pandas_has_a_row_per_node_and_each_target_s_time():
    pandas = pytest.importorskip("pandas")
    analysis = onnxroof.analyze(build_example("shallownet"), targets=["myriad-x"])
    frame = analysis.to_pandas()
    assert isinstance(frame, pandas.DataFrame) and len(frame) == len(analysis.nodes) == 5
    conv = frame[frame["name"] == "conv2d_0"].iloc[0]
    assert conv["macs"] == 884_736 and conv["op_type"] == "Conv"
    # the kernels' times split over their nodes add up to the latency
    assert frame["time_s[myriad-x]"].sum() == pytest.approx(analysis.targets[0].latency_s)


def test_print_shows_the_short_summary_and_repr_one_line():
    # ShallowNet: 328,586 parameters (cost-model.md section 2), 329 k to three figures; 5 nodes;
    # myriad-x is a bound, for the reason every output gives (TargetReport.bound_reason)
    analysis = onnxroof.analyze(build_example("shallownet"), targets=["myriad-x"])
    text = str(analysis)
    assert text.startswith("onnxroof: shallownet (5 nodes, 5 counted)")
    assert "parameters 329 k" in text and "myriad-x: latency ≥ " in text
    assert "(a lower bound: the target's figures are peaks)" in text
    assert len(text) < 1_000  # not the records: those run to megabytes on a large model
    assert repr(analysis).startswith("<onnxroof.Analysis of shallownet: 5 nodes, 329 k parameters")
    assert "\n" not in repr(analysis)


def test_a_notebook_shows_the_totals_the_findings_and_the_roofline():
    import html as markup
    import re

    from markupsafe import escape

    analysis = onnxroof.analyze(build_example("shallownet"), targets=["myriad-x"])
    frame = analysis._repr_html_()
    assert frame.startswith('<iframe title="onnxroof: shallownet" srcdoc="')  # its styles stay inside it
    page = markup.unescape(re.search(r'srcdoc="(.*?)" style=', frame, re.S).group(1))
    assert "329 k" in page and "What to change" in page
    findings = analysis.review()
    assert findings and all(str(escape(f.title)) in page for f in findings[:5])  # as jinja escapes them
    assert page.count('data-chart="roofline"') == 1  # myriad-x's roofline
    assert "<script" not in page
