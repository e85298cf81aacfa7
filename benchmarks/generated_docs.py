"""What the validation scripts share to write their generated part of a document: the line
that says what produced it, and the writing between the BEGIN and END markers."""

from __future__ import annotations

import datetime
import platform
import subprocess
from pathlib import Path

import onnx

import onnxroof


def environment(repo: Path) -> str:
    """'Generated DATE (MACHINE, SYSTEM): Python, onnx, onnxroof and the git checkout.'"""
    try:
        git = ["git", "-C", str(repo)]
        commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        if subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                          text=True).stdout.strip():
            commit += " with uncommitted changes"
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return (f"Generated {datetime.date.today().isoformat()} ({platform.machine()}, {platform.system()}): Python "
            f"{platform.python_version()}, onnx {onnx.__version__}, onnxroof {getattr(onnxroof, '__version__', '?')}, "
            f"git checkout {commit}.")


def write_between(doc: Path, begin: str, end: str, body: str, header: str = "") -> None:
    """Replace what stands between the ``begin`` and ``end`` markers of ``doc`` with ``body``; a
    missing document starts from ``header``, a document without the markers gets them at its end."""
    text = doc.read_text() if doc.exists() else header + begin + "\n" + end + "\n"
    if begin not in text or end not in text:
        text = text.rstrip("\n") + "\n\n" + begin + "\n" + end + "\n"
    before, rest = text.split(begin, 1)
    doc.write_text(before + begin + "\n" + body + "\n" + end + rest.split(end, 1)[1])
