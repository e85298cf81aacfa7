"""The PR Action's script (examples/onnxroof-diff.sh) run as action.yml runs it, for the tests of
the Action in system/: each imports it from here, not from another test file."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "onnxroof-diff.sh"


def run_diff_script(
    cwd: Path, environment: Mapping[str, str] | None = None, timeout: float | None = None, **variables: str
) -> subprocess.CompletedProcess:
    """The script in ``cwd`` with ``environment`` (this process's by default) and ``variables``,
    writing into ``cwd``/out, with this Python's onnxroof first on the PATH."""
    env = {
        **(os.environ if environment is None else environment),
        **variables,
        "OUT": str(cwd / "out"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    return subprocess.run(["bash", str(SCRIPT)], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
