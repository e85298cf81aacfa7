"""``onnxroof targets``: the bundled hardware targets with their roofs and ridge points (quick: no
model, no pipeline)."""

from __future__ import annotations

import argparse
import sys

from ...core.errors import EXIT_OK, UsageError

HELP = "list the hardware targets (./hardware, your targets folder, the bundled ones) with their roofs and ridge points"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--plugin", action="append", default=[], help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from ...core.text import one_line
    from ...report.text.targets_list import render_targets_list
    from ...roofline.target_paths import origin_note, search_folders
    from ...roofline.targets import parse_target, target_files

    targets, broken, own = [], [], []
    for name, path in target_files().items():
        try:  # read as --target NAME reads it: one broken file is listed as broken, the rest still listed
            target = parse_target(path)
        except UsageError as error:
            broken.append(one_line(f"{name}: broken, --target {name} fails: {error}"))
            continue
        targets.append(target)
        note = origin_note(target.name, str(path))
        if note:
            own.append(one_line(note))
    sys.stdout.write(render_targets_list(targets))
    folders = " then ".join(str(folder) for folder in search_folders())
    if own:
        sys.stdout.write("\n" + _within_columns(f"your own targets ({folders}):", own))
    if broken:
        sys.stdout.write("\n" + _within_columns(f"broken target files ({folders}), not usable:", broken))
    return EXIT_OK


def _within_columns(heading: str, items: list[str]) -> str:
    """``heading`` and its items (indented), wrapped to the terminal's columns: a name or a path
    may be long."""
    import textwrap

    from ...report.text.table import TERMINAL_COLUMNS

    lines = textwrap.wrap(heading, TERMINAL_COLUMNS, subsequent_indent="  ", break_on_hyphens=False)
    for item in items:
        lines += textwrap.wrap(
            item, TERMINAL_COLUMNS, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False
        )
    return "\n".join(lines) + "\n"
