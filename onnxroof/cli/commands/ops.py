"""``onnxroof ops``: every cost rule with its formula, as Markdown (docs/ops.md is its output)."""

from __future__ import annotations

import argparse
import sys

from ...core.errors import EXIT_OK

HELP = "list every cost rule with its formula (Markdown: docs/ops.md)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="FILE.py",
        help="include a plugin's rules (a Python file, run with your rights: pass only files you trust)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def run(args: argparse.Namespace) -> int:
    from ...report.text.ops_doc import render_ops_markdown

    sys.stdout.write(render_ops_markdown())
    return EXIT_OK
