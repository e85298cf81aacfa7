"""``onnxroof targets``: the bundled hardware targets with their roofs and ridge points (quick: no
model, no pipeline)."""

from __future__ import annotations

import argparse
import sys

from ...core.errors import EXIT_OK

HELP = "list the hardware targets (./hardware, your targets folder, the bundled ones) with their roofs and ridge points"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--plugin", action="append", default=[], help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from ...report.text.table import render_targets_list
    from ...roofline.targets import bundled_targets, parse_target, target_files, user_target_dir

    files, bundled = target_files(), bundled_targets()
    sys.stdout.write(render_targets_list(parse_target(path) for path in files.values()))
    own = {name: path for name, path in files.items() if bundled.get(name) != path}
    if own:
        sys.stdout.write("\nyour own targets (./hardware, then " + str(user_target_dir()) + "): "
                         + ", ".join(f"{name} ({path})" for name, path in own.items()) + "\n")
    return EXIT_OK
