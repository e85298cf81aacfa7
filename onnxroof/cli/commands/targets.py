"""``onnxroof targets``: the bundled hardware targets with their roofs and ridge points (quick: no
model, no pipeline)."""

from __future__ import annotations

import argparse
import sys

from ...core.errors import EXIT_OK, UsageError

# own target files read for the listing: each takes a few ms to read and check, and a folder of
# thousands (a hostile ./hardware) would take minutes; past these, the rest are named, not read
MAX_LISTED_OWN = 300

HELP = "list the hardware targets (./hardware, your targets folder, the bundled ones) with their roofs and ridge points"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--plugin", action="append", default=[], help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from ...core.text import one_line
    from ...report.text.targets_list import render_targets_list
    from ...roofline.target_paths import is_bundled, origin_note, search_folders
    from ...roofline.targets import parse_target, target_files

    targets, broken, own, unread = [], [], [], []
    read_own = 0
    for name, path in target_files().items():
        if not is_bundled(path):
            if read_own >= MAX_LISTED_OWN:
                unread.append(name)
                continue
            read_own += 1
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
    if unread:
        shown = ", ".join(one_line(name) for name in unread[:5]) + (", ..." if len(unread) > 5 else "")
        sys.stdout.write(
            "\n"
            + _within_columns(
                f"{len(unread):,} more target files ({folders}) not read for this list (it reads "
                f"{MAX_LISTED_OWN} of your own): {shown}; --target NAME reads any of them",
                [],
            )
        )
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
