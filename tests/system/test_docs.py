"""The documents name tests that exist: docs/testing.md's planted-bug table and notes name each
test that catches a bug as `path::test_name` (under tests/); a renamed or moved test must take its
row along, or the table no longer says what catches what. The README's sample of `onnxroof
summary` is what the command prints."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NAMED = re.compile(r"`([a-z_/]+\.py)::([A-Za-z0-9_]+)`")


def test_every_test_docs_testing_md_names_exists():
    named = set(NAMED.findall((REPO / "docs" / "testing.md").read_text()))
    assert len(named) > 50  # the table was read
    missing = []
    for path, name in sorted(named):
        file = REPO / "tests" / path
        functions = (
            {node.name for node in ast.walk(ast.parse(file.read_text())) if isinstance(node, ast.FunctionDef)}
            if file.is_file()
            else set()
        )
        if name not in functions:
            missing.append(f"{path}::{name}")
    assert missing == []


def test_the_readme_s_summary_sample_is_what_the_command_prints(capsys):
    from onnxroof.cli.app import main

    readme = (REPO / "README.md").read_text()
    command = re.search(r"What two targets' parts of `onnxroof (summary [^`]+)`", readme).group(1)
    sample = re.search(r"\(a test checks[^)]*\):\n\n```text\n(.*?)```", readme, re.S).group(1)
    assert main([*command.split(), "-q"]) == 0
    printed = capsys.readouterr().out.splitlines()
    missing = [line for line in sample.splitlines() if line not in printed]
    assert missing == []


def test_the_readme_s_python_example_runs_as_written():
    # the first Python block, executed as a user would paste it (pandas comes with the test extra)
    readme = (REPO / "README.md").read_text()
    block = re.search(r"### Python API\n\n```python\n(.*?)```", readme, re.S).group(1)
    scope: dict = {}
    exec(compile(block, "README.md", "exec"), scope)  # noqa: S102 (the project's own README)
    # every initializer of the built-in MiniGoogLeNet is a weight: the parameters are their elements
    stored = sum(math.prod(t.dims) for t in scope["model"].graph.initializer)
    assert scope["result"].totals.params == stored and scope["result"].review()
    assert scope["int8"].dtype == "int8" and scope["fp32"].batch == 4
