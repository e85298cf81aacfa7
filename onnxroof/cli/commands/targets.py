"""``onnxroof targets``: the bundled hardware targets with their roofs and ridge points (quick: no
model, no pipeline)."""

from __future__ import annotations

import argparse
import sys

from ...core.errors import EXIT_OK

HELP = "list the bundled hardware targets with their roofs and ridge points"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--plugin", action="append", default=[], help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from ...report.text.table import render_targets_list
    from ...roofline.targets import bundled_targets, parse_target

    sys.stdout.write(render_targets_list(parse_target(path) for path in bundled_targets().values()))
    return EXIT_OK
