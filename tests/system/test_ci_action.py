"""The reusable GitHub Action (issue 31, item 5) run as a workflow would run it: its composite
steps, read from action.yml, with their inputs, environment, conditions and outputs wired as the
runner wires them (the setup and install steps left out: onnxroof is installed here), on a git
repository with a base and a head commit. The comment lists every model, the one that cannot be
loaded included, and the job's exit status and error line say what happened."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from ci_script import run_diff_script
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash"
)


def matmul_model(rows: list, k: int, n: int) -> bytes:
    """x[*rows, k] @ w[k, n]: rows x k x n MACs once the rows' dims are bound."""
    weight = numpy_helper.from_array(np.zeros((k, n), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [*rows, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [*rows, n])],
        [weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def git(cwd: Path, *args: str) -> str:
    names = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env={**os.environ, **names}
    ).stdout.strip()


def run_action(inputs: dict[str, str], cwd: Path, github: dict[str, str]) -> tuple[int, str, dict[str, str]]:
    """action.yml's steps as the runner takes them: each `run` step in bash with its `env` and the
    `${{ }}` expressions it uses (inputs with their defaults, github.*, steps.ID.outputs.*), an
    `if:` on a step's output, the step's $GITHUB_OUTPUT read into its outputs, and the first failing
    step ending the action. Returns its exit status, everything it printed, and its outputs."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    outputs: dict[str, dict[str, str]] = {}

    def value(expression: str) -> str:
        scope, _, rest = expression.strip().partition(".")
        if scope == "inputs":
            if rest in inputs:
                return inputs[rest]
            return substitute(str(action["inputs"][rest].get("default", "")))
        if scope == "github":
            return str(ROOT) if rest == "action_path" else github[rest]
        step, kind, name = rest.split(".")
        assert scope == "steps" and kind == "outputs", expression
        return outputs.get(step, {}).get(name, "")

    def substitute(text: str) -> str:
        return re.sub(r"\$\{\{(.*?)\}\}", lambda m: value(m.group(1)), text)

    def condition(text: str) -> bool:
        match = re.fullmatch(r"\s*(steps\.[\w.-]+)\s*(!=|==)\s*'([^']*)'\s*", text)
        assert match, f"a condition this runner does not read: {text}"
        left = value(match.group(1))
        return (left != match.group(3)) if match.group(2) == "!=" else (left == match.group(3))

    printed = []
    for number, step in enumerate(action["runs"]["steps"]):
        if "uses" in step or "pip install" in step["run"]:
            continue  # setup-python, and installing onnxroof: done in this test's environment
        if "if" in step and not condition(step["if"]):
            continue
        output = cwd / f".github_output_{number}"
        output.write_text("")
        environment = {
            **os.environ,
            **{key: substitute(str(v)) for key, v in step.get("env", {}).items()},
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(cwd / ".step_summary"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        assert step["shell"] == "bash"
        done = subprocess.run(
            ["bash", "-e", "-c", substitute(step["run"])], cwd=cwd, env=environment, capture_output=True, text=True
        )
        printed.append(done.stdout + done.stderr)
        outputs[step.get("id", str(number))] = dict(
            line.split("=", 1) for line in output.read_text().splitlines() if "=" in line
        )
        if done.returncode != 0:
            return done.returncode, "".join(printed), outputs.get("diff", {})
    return 0, "".join(printed), outputs.get("diff", {})


def test_the_action_comments_on_every_model_with_its_flags_and_fails_naming_the_one_it_could_not_load(tmp_path):
    # base: an encoder x[1, seq, 64] @ w[64, 32]; head: w[64, 48], plus a decoder x[1, width, 64]
    # @ w[64, 32] (new) and a file that is no model (new). With --dim seq=8 for the encoder only
    # (model-options) and --dim width=4 for every model (options):
    #   encoder MAC-FLOPs 2 x 8 x 64 x 32 = 32,768 -> 2 x 8 x 64 x 48 = 49,152 (+50%: breaks flops>+20%)
    #   decoder MAC-FLOPs 2 x 4 x 64 x 32 = 16,384, diffed against itself (new)
    models = tmp_path / "models"
    models.mkdir()
    (models / "encoder.onnx").write_bytes(matmul_model([1, "seq"], 64, 32))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "base")
    base = git(tmp_path, "rev-parse", "HEAD")
    (models / "encoder.onnx").write_bytes(matmul_model([1, "seq"], 64, 48))
    (models / "decoder.onnx").write_bytes(matmul_model([1, "width"], 64, 32))
    (models / "broken.onnx").write_bytes(b"not an onnx model")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "head")

    code, printed, outputs = run_action(
        {
            "options": "--dim width=4",
            "model-options": "# the encoder's sequence\nmodels/enc*.onnx: --dim 'seq=8'\n",
            "budgets": "flops>+20%",
        },
        tmp_path,
        {"event.pull_request.base.sha": base},
    )

    comment = (tmp_path / "onnxroof-out" / "comment.md").read_text()
    assert comment.startswith("<!-- onnxroof-diff -->\n## onnxroof: 3 model(s)")
    table = dict(re.findall(r"^\| <code>([^<]+)</code> \| (.+) \|$", comment, re.M))
    assert table == {
        "models/broken.onnx": "⚠️ could not be analysed (new)",
        "models/decoder.onnx": "✅ budgets hold (new)",
        "models/encoder.onnx": "❌ a budget is broken",
    }
    # each model's section: the encoder's change, the decoder's totals, the broken file's error
    assert "### onnxroof diff: encoder → encoder" in comment and "| MAC\\-FLOPs | 32.8 k | 49.2 k |" in comment
    assert "### onnxroof diff: decoder → decoder" in comment and "| MAC\\-FLOPs | 16.4 k | 16.4 k |" in comment
    error = re.search(
        r"\*\*<code>models/broken.onnx</code>\*\*: ⚠️ could not be analysed \(new\)\n\n<pre>(.*?)</pre>", comment, re.S
    ).group(1)
    assert error.startswith("onnxroof: error: models/broken.onnx: not a readable ONNX protobuf") and "\n" == error[-1]
    # the job fails with 2 (a model not analysed outranks a broken budget) and its error line names both
    assert code == 2 and outputs["status"] == "2"
    assert (
        "::error title=onnxroof::onnxroof: 3 model(s); not analysed: models/broken.onnx; "
        "a budget broken: models/encoder.onnx"
    ) in printed
    assert (tmp_path / ".step_summary").read_text() == comment
    assert {p.name for p in (tmp_path / "onnxroof-out").glob("*.html")} == {
        "models_encoder.onnx.diff.html",
        "models_decoder.onnx.diff.html",
    }


def test_a_dynamic_dim_without_its_flag_is_in_the_comment_with_the_input_that_gives_it(tmp_path):
    (tmp_path / "encoder.onnx").write_bytes(matmul_model([1, "seq"], 64, 32))
    done = run_diff_script(tmp_path, MODELS="encoder.onnx")
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert done.returncode == 2 and "| <code>encoder.onnx</code> | ⚠️ could not be analysed |" in comment
    assert "input dims without a value: seq (x axis 1); add: --dim seq=N" in comment
    assert "`model-options` input, a line `encoder.onnx: FLAGS`" in comment
    assert done.stderr.splitlines()[-1] == "onnxroof: 1 model(s); not analysed: encoder.onnx"


@pytest.mark.parametrize(
    "name, text, error",
    [
        ("options", "--dim 'seq=8", "the options input: No closing quotation: close the quote"),
        (
            "model-options",
            "encoder.onnx --dim seq=8",
            "the model-options input, line 1 ('encoder.onnx --dim seq=8'): write it as PATH: FLAGS",
        ),
        ("options", "--format json", "the options input: --format is set by the action itself: drop it"),
    ],
)
def test_malformed_options_are_a_one_line_error_in_the_comment(tmp_path, name, text, error):
    (tmp_path / "encoder.onnx").write_bytes(matmul_model([1, "seq"], 64, 32))
    variable = {"options": "OPTIONS", "model-options": "MODEL_OPTIONS"}[name]
    done = run_diff_script(tmp_path, MODELS="encoder.onnx", **{variable: text})
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert done.returncode == 2 and f"<pre>onnxroof: error: {error}" in comment.replace("&#x27;", "'")
