"""The habits CI holds the code to (issue 44): ruff's lint rules and its formatting, and mypy on
the packages below report/, all configured in pyproject.toml; run by the README's test command."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="needs ruff (pip install -e '.[test]')")
def test_ruff_finds_nothing_to_fix():
    found = run("ruff", "check", "onnxroof", "tests")
    assert found.returncode == 0, found.stdout[-3000:]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="needs ruff (pip install -e '.[test]')")
def test_the_code_is_as_ruff_formats_it():
    found = run("ruff", "format", "--check", "onnxroof", "tests")
    assert found.returncode == 0, found.stdout[-3000:] + "\nrun: ruff format onnxroof tests"


def test_mypy_is_clean_below_report():
    pytest.importorskip("mypy", reason="needs mypy (pip install -e '.[test]')")
    found = run(sys.executable, "-m", "mypy")
    assert found.returncode == 0, found.stdout[-3000:]
