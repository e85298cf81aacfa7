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


class LineStream:
    """Lines written as they come, each whole, for a run that may be stopped part way (``check``
    over many models): to standard output (``path`` None or ``-``), flushed line by line, or to
    ``PATH.partial``, renamed to ``path`` by :meth:`finish` once every line is in. A run stopped
    before that (Ctrl-C, a kill) leaves ``path`` as it was and ``PATH.partial`` with the lines
    done: whole lines only, each written in one call, so it reads at any moment as a valid
    JSON Lines file. A device or a pipe (``-o /dev/stdout``) is written through directly."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = None if path is None or str(path) == "-" else Path(path)
        self.partial: Path | None = None
        self.descriptor: int | None = None
        self.lines = 0
        if self.path is None:
            return
        directory = self.path.parent if str(self.path.parent) else Path(".")
        if not directory.is_dir():
            raise UsageError(f"-o {self.path}: the directory {directory} does not exist; create it first")
        if self.path.is_dir():
            raise UsageError(f"-o {self.path}: is a directory; give the name of a file to write")
        try:
            regular = stat.S_ISREG(os.lstat(self.path).st_mode)
        except FileNotFoundError:
            regular = True  # a new file
        written = self.path
        if regular:
            self.partial = written = self.path.with_name(self.path.name + ".partial")
        try:
            self.descriptor = os.open(written, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o666)
        except OSError as exc:
            raise UsageError(f"-o {self.path}: cannot write {written} ({exc.strerror}); give a path you can write") from None

    def write(self, line: str) -> None:
        """One line (its newline added), whole."""
        text = line.rstrip("\n") + "\n"
        if self.descriptor is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            view = memoryview(text.encode("utf-8"))
            while view:  # a regular file takes it in one call; a pipe may take it in parts
                view = view[os.write(self.descriptor, view):]
        self.lines += 1

    def finish(self) -> None:
        """Every line is in: the file takes its name."""
        self.close()
        if self.partial is not None:
            os.replace(self.partial, self.path)
            self.partial = None

    def close(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None
