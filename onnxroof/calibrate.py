"""`onnxroof calibrate` (arrives with its issue)."""

from __future__ import annotations

import argparse

from .errors import UsageError

HELP = "measure this machine's roofs and write a target file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""


def run(args: argparse.Namespace) -> int:
    raise UsageError("onnxroof calibrate is not available yet")
