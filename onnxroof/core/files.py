"""Writing output files whole or not at all: every command that takes ``-o`` writes through here."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Iterable

from .errors import UsageError


def write_atomically(path: str | os.PathLike, text: str | Iterable[str]) -> None:
    """Write ``text`` (or its chunks) to ``path`` via a temporary file in the same directory:
    whole or nothing. ``-`` is standard output. A device, a pipe or a symbolic link
    (``-o /dev/null``, ``-o /dev/stdout``) is written through directly: renaming over it would
    replace it with a regular file."""
    if str(path) == "-":
        sys.stdout.writelines([text] if isinstance(text, str) else text)
        sys.stdout.flush()
        return
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise UsageError(f"-o {target}: the directory {directory} does not exist; create it first")
    if target.is_dir():
        raise UsageError(f"-o {target}: is a directory; give the name of a file to write")
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        mode = stat.S_IFREG  # a new file
    if not stat.S_ISREG(mode):
        with open(target, "w", encoding="utf-8") as stream:
            stream.writelines([text] if isinstance(text, str) else text)
        return
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.writelines([text] if isinstance(text, str) else text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes it private; a report is not
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
