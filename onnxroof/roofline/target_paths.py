"""Where target files come from: the bundled folder, the user's targets folder and ``./hardware``
(the search path of ``--target NAME``), how big a target file may be, what a target's name may
be, and, in words, where a target was read from when it is not one of onnxroof's own.

A file found on the search path is read exactly as an explicit ``--target FILE`` is (a regular
file, at most :data:`MAX_TARGET_FILE_BYTES`: ``targets.parse_target``), and a target read from
the search path but not the bundled folder says so in every output (:func:`origin_note`): a ``hardware/l4.toml``
in the current folder hides the bundled ``l4``, which a pull request could otherwise do unseen.
``ONNXROOF_CWD_TARGETS=0`` leaves ``./hardware`` out of the search (the PR Action sets it: the
pull request's checkout is not trusted)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..core.errors import UsageError
from ..core.resources import resource_dir

# the bundled files are under 16 KB; a target file 64 times that is no target file
MAX_TARGET_FILE_BYTES = 2**20
USER_TARGETS_VARIABLE = "ONNXROOF_TARGETS"
CWD_TARGETS_VARIABLE = "ONNXROOF_CWD_TARGETS"  # "0": ./hardware is not searched
# A target's name names its file (NAME.toml), a budget (latency[NAME]) and a --target: letters,
# digits and - _ . +, starting with a letter or digit (no folder, no hidden file), at most 64
MAX_TARGET_NAME = 64
_TARGET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def target_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a target, in words; None when it can.

    >>> target_name_problem("this-machine"), target_name_problem("../../x")
    (None, "may hold only letters, digits and '-', '_', '.', '+', and start with a letter or digit")
    >>> target_name_problem("x" * 65)
    'is 65 characters long; a target name has at most 64'
    """
    if len(name) > MAX_TARGET_NAME:
        return f"is {len(name):,} characters long; a target name has at most {MAX_TARGET_NAME}"
    if not _TARGET_NAME.fullmatch(name):
        return "may hold only letters, digits and '-', '_', '.', '+', and start with a letter or digit"
    return None


def check_target_name(name: str, flag: str = "--name") -> str:
    """``name`` when it can name a target, else a one-line UsageError naming ``flag``."""
    problem = target_name_problem(name)
    if problem:
        shown = name if len(name) <= 40 else name[:40] + "..."
        raise UsageError(f"{flag} {shown!r}: {problem} (e.g. this-machine)")
    return name


def bundled_targets() -> dict[str, Path]:
    return {path.stem: path for path in sorted(resource_dir("hardware").glob("*.toml"))}


def user_target_dir() -> Path:
    """Where a user's own target files live (``onnxroof calibrate --save`` writes there):
    ``$ONNXROOF_TARGETS``, else ``$XDG_CONFIG_HOME/onnxroof/targets``, else
    ``~/.config/onnxroof/targets``."""
    if os.environ.get(USER_TARGETS_VARIABLE):
        return Path(os.environ[USER_TARGETS_VARIABLE]).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config).expanduser() / "onnxroof" / "targets"


def search_folders() -> list[Path]:
    """The folders searched before the bundled one: ``./hardware`` (unless
    ``ONNXROOF_CWD_TARGETS=0``), then :func:`user_target_dir`."""
    folders = [] if os.environ.get(CWD_TARGETS_VARIABLE, "").strip() == "0" else [Path.cwd() / "hardware"]
    return folders + [user_target_dir()]


def target_files() -> dict[str, Path]:
    """Every target by name: ``./hardware`` first, then :func:`user_target_dir`, then the bundled
    ones, a name found earlier hiding the same name later (a calibrated ``this-machine`` in the
    current folder wins; a file hiding a bundled one is said in every output: :func:`origin_note`)."""
    found: dict[str, Path] = {}
    bundled_folder = resource_dir("hardware").resolve()
    for folder in search_folders():
        try:
            if not folder.is_dir() or folder.resolve() == bundled_folder:
                continue
            paths = sorted(folder.glob("*.toml"))
        except OSError:  # an unreadable folder, a link loop: nothing found there
            continue
        for path in paths:
            found.setdefault(path.stem, path)
    for name, path in bundled_targets().items():
        found.setdefault(name, path)
    return found


def is_bundled(path: str | os.PathLike) -> bool:
    """Whether ``path`` is one of onnxroof's own target files."""
    try:
        return Path(path).resolve().parent == resource_dir("hardware").resolve()
    except (OSError, RuntimeError):
        return False


def origin_note(name: str, path: str) -> str:
    """Where a target was read from, in words, when it is a file of the search path other than
    onnxroof's bundled ones (``./hardware``, the user's folder: what ``--target NAME`` finds
    there, hiding a bundled target of that name or not); "" for a bundled one, one built in code
    (no path), or a file given by its path elsewhere (the command names it)."""
    if not path or is_bundled(path):
        return ""
    try:
        folder = Path(path).resolve().parent
        searched = any(folder == candidate.resolve() for candidate in search_folders())
    except (OSError, RuntimeError):
        searched = False
    if not searched:
        return ""
    bundled = bundled_targets().get(Path(path).stem)
    if bundled is not None and _same_bytes(Path(path), bundled):
        return ""  # a copy of the bundled file (onnxroof's own checkout, run from its root): it hides nothing
    return f"target {name} is read from {path}, not from onnxroof's bundled targets" + (
        f": it hides the bundled {Path(path).stem}" if bundled is not None else ""
    )


def _same_bytes(path: Path, bundled: Path) -> bool:
    """Whether ``path`` holds the bundled file's bytes (both under :data:`MAX_TARGET_FILE_BYTES`:
    a larger one was refused when it was read)."""
    try:
        return path.stat().st_size == bundled.stat().st_size and path.read_bytes() == bundled.read_bytes()
    except OSError:
        return False
