"""`onnxroof profile` (arrives with its issue)."""

from __future__ import annotations

import argparse

from .errors import UsageError

HELP = "run the model with onnxruntime and compare measured with predicted times"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""


def run(args: argparse.Namespace) -> int:
    raise UsageError("onnxroof profile is not available yet")
