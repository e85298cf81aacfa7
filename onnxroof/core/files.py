"""Writing output files whole or not at all: every command that takes ``-o`` writes through here."""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from .errors import OutputError, UsageError, sigterm_stops

# system reasons that are about room, not about the path
_NO_ROOM = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
# the bytes of the real file's name a temporary beside it keeps (a dot, 8 random, ".partial" added)
_TEMPORARY_STEM = 200


def write_atomically(
    path: str | os.PathLike, text: str | Iterable[str], flag: str = "-o", inputs: Iterable[str | os.PathLike] = ()
) -> None:
    """Write ``text`` (or its chunks) to ``path`` whole or not at all (:func:`write_outputs`)."""
    write_outputs([(flag, path, text)], inputs)


def write_outputs(
    outputs: Sequence[tuple[str, str | os.PathLike, str | Iterable[str]]], inputs: Iterable[str | os.PathLike] = ()
) -> None:
    """Write each ``(flag, path, text)``, the text a string or its chunks, whole or not at all,
    all of them or none: each file's text goes to a temporary file beside the real file (a
    symbolic link is followed, and stays a link), and only once every text is produced and
    written do they take their names; a run that fails part way leaves every old file as it was.
    ``-`` is standard output; a device or a pipe (``/dev/null``, ``/dev/stdout``, a FIFO) is
    written directly, since renaming over it would replace it with a regular file. ``flag`` names
    the option in messages; a path that is one of ``inputs`` (the models read) is refused. A
    system error on writing (a full disk) is an :class:`OutputError` naming the file."""
    plans = [_Plan(flag, path, inputs) for flag, path, _ in outputs]
    seen: dict[str, _Plan] = {}
    for plan in plans:
        if plan.atomic:
            other = seen.setdefault(os.path.realpath(plan.file), plan)
            if other is not plan:
                raise UsageError(f"{other.flag} and {plan.flag} name the same file ({plan.path}); give each its own")
    temporaries: list[tuple[_Plan, str]] = []
    # SIGTERM while the texts are made and written (a JSON of 100,000 nodes takes a second)
    # raises, so that the temporaries are removed as they are on Ctrl-C (exit 143)
    with sigterm_stops():
        try:
            for plan, (_, _, text) in zip(plans, outputs):
                if plan.atomic:
                    temporaries.append((plan, plan.write_temporary(text)))
            for plan, (_, _, text) in zip(plans, outputs):
                if not plan.atomic:
                    plan.write_directly(text)
            while temporaries:
                plan, temporary = temporaries[0]
                try:
                    os.replace(temporary, plan.file)
                except OSError as exc:
                    raise plan.failure(exc) from None
                temporaries.pop(0)
        finally:
            for _, temporary in temporaries:
                Path(temporary).unlink(missing_ok=True)


def _chunks(text: str | Iterable[str]) -> Iterable[str]:
    return [text] if isinstance(text, str) else text


def resolve_output(path: str | os.PathLike, flag: str = "-o") -> tuple[Path, bool]:
    """Where writing ``path`` lands: the real file, its symbolic links followed, and whether it
    is written directly (a device, a pipe, standard output by its ``/dev`` or ``/proc`` name)
    rather than through a temporary file. A directory or a missing folder is a UsageError."""
    current = Path(path)
    try:  # (a name over the file system's length limit: ENAMETOOLONG)
        for _ in range(40):
            absolute = os.path.abspath(current)
            if absolute.startswith(("/proc/", "/dev/fd/")) or absolute in ("/dev/stdout", "/dev/stderr", "/dev/tty"):
                return current, True
            if not current.is_symlink():
                break
            current = current.parent / os.readlink(current)
        else:
            raise UsageError(f"{flag} {path}: too many levels of symbolic links; give the file's real path")
    except OSError as exc:
        raise UsageError(
            f"{flag} {path}: cannot be written ({exc.strerror or exc}); give a path you can write"
        ) from None
    try:
        mode = os.stat(current).st_mode
    except FileNotFoundError:
        mode = None  # a new file
    except OSError as exc:
        raise UsageError(
            f"{flag} {path}: cannot be written ({exc.strerror or exc}); give a path you can write"
        ) from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"{flag} {path}: is a directory; give the name of a file to write")
    if mode is not None and not stat.S_ISREG(mode):
        return current, True  # a device, a pipe, a socket
    directory = current.parent if str(current.parent) else Path(".")
    if not directory.is_dir():
        raise UsageError(f"{flag} {path}: the directory {directory} does not exist; create it first")
    return current, False


def refuse_inputs(path: str | os.PathLike, real: Path, flag: str, inputs: Iterable[str | os.PathLike]) -> None:
    """A UsageError when ``real`` (where ``path`` is written) is one of the ``inputs``."""
    for source in inputs:
        try:
            same = os.path.exists(real) and os.path.samefile(real, source)
        except (OSError, ValueError):
            same = False
        if same:
            raise UsageError(
                f"{flag} {path}: is the input model {source}, which the output would replace; give another file name"
            )


def read_small_file(path: str | os.PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes, else a one-line
    UsageError naming it: a device, a pipe or a folder is refused before it is read and opened
    non-blocking, so that a FIFO never waits for a writer and ``/dev/zero`` is never read, and no
    more than ``limit`` bytes are ever read (a file growing as it is read included). ``what``
    names the kind of file in the message about its size ("target file")."""
    reason = not_a_file(path)
    if reason != "a regular file":
        raise UsageError(f"{path}: {reason}; give {with_article(what)}")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UsageError(f"{path}: cannot be opened ({exc.strerror or exc})") from None
    try:
        facts = os.fstat(descriptor)
        if not stat.S_ISREG(facts.st_mode):  # swapped for a pipe or a device since the check above
            raise UsageError(f"{path}: not a regular file (a device or a pipe); give {with_article(what)}")
        data = b"" if facts.st_size > limit else os.read(descriptor, limit + 1)
        while facts.st_size <= limit and len(data) <= limit:  # a short read before the end
            more = os.read(descriptor, limit + 1 - len(data))
            if not more:
                break
            data += more
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(descriptor)
    if facts.st_size > limit or len(data) > limit:
        raise UsageError(f"{path}: over {limit:,} bytes, more than any {what} holds; give {with_article(what)}")
    return data


def with_article(what: str) -> str:
    """``what`` with its article, for messages: "a target file", "an onnxruntime profile"."""
    return f"{'an' if what[:1].lower() in 'aeio' else 'a'} {what}"


def not_a_file(path: str | os.PathLike) -> str:
    """Why ``path``, given as a file to read, is not one, in words: no such file, a directory, a
    device or a pipe, a dangling link."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a symbolic link to a file that does not exist" if os.path.lexists(path) else "no such file"
    except OSError as exc:
        return f"cannot be opened ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file (a device or a pipe)"


class _Plan:
    """One output, its destination checked before anything is written."""

    def __init__(self, flag: str, path: str | os.PathLike, inputs: Iterable[str | os.PathLike]):
        self.flag, self.path = flag, path
        self.stdout = str(path) == "-"
        if self.stdout:
            self.real, self.atomic = None, False
            return
        self.real, direct = resolve_output(path, flag)
        self.atomic = not direct
        refuse_inputs(path, self.real, flag, inputs)

    @property
    def file(self) -> Path:
        """The real file, for a plan that writes one (not standard output)."""
        assert self.real is not None, "standard output has no file"  # callers check stdout or atomic first
        return self.real

    def failure(self, exc: OSError) -> OutputError:
        reason = exc.strerror or str(exc)
        name = "standard output" if self.stdout else f"{self.flag} {self.path}"
        fix = "free some space, or write elsewhere" if exc.errno in _NO_ROOM else "give a path you can write"
        kept = "" if self.stdout or not self.atomic else "; nothing was replaced"
        return OutputError(f"{name}: cannot be written ({reason}){kept}; {fix}")

    def create_temporary(self, prefix: str | None = None, suffix: str = ".tmp") -> tuple[int, str]:
        """A new, empty file beside the real file, created exclusively under a fresh name (never a
        planted link, never another run's file), with the permissions a new file gets: its
        descriptor (open for writing) and its name."""
        # the name shortened, so that the temporary's stays within the 255 bytes a file name may
        # hold when the real file's name is near that limit itself
        short = os.fsdecode(os.fsencode(self.file.name)[:_TEMPORARY_STEM])
        try:
            handle, temporary = tempfile.mkstemp(
                prefix=f".{short}." if prefix is None else prefix.replace(self.file.name, short, 1),
                suffix=suffix,
                dir=self.file.parent,
            )
        except OSError as exc:
            raise self.failure(exc) from None
        umask = os.umask(0)
        os.umask(umask)
        try:
            os.fchmod(handle, 0o666 & ~umask)  # mkstemp makes it private; a report is not
        except OSError as exc:
            os.close(handle)
            Path(temporary).unlink(missing_ok=True)
            raise self.failure(exc) from None
        return handle, temporary

    def write_temporary(self, text: str | Iterable[str]) -> str:
        """``text`` in a temporary file beside the real file; its name."""
        handle, temporary = self.create_temporary()
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.writelines(_chunks(text))
        except BaseException as exc:
            Path(temporary).unlink(missing_ok=True)
            if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
                raise self.failure(exc) from None
            raise
        return temporary

    def write_directly(self, text: str | Iterable[str]) -> None:
        """``text`` to standard output, a device or a pipe."""
        try:
            if self.stdout:
                sys.stdout.writelines(_chunks(text))
                sys.stdout.flush()
            else:
                with os.fdopen(open_direct(self.file, os.O_TRUNC), "w", encoding="utf-8") as stream:
                    stream.writelines(_chunks(text))
        except BrokenPipeError:
            raise  # the reader went away: the command line ends quietly
        except OSError as exc:
            raise self.failure(exc) from None


# how long a FIFO given as -o may go without a reader (one started beside the command: `cat FIFO &`)
PIPE_READER_WAIT_S = 5.0


def open_direct(path: str | os.PathLike, flags: int = 0) -> int:
    """A device or a pipe (or standard output by its ``/dev`` name) opened for writing with
    ``flags`` added: opened non-blocking, so that a FIFO no process reads is an error
    (ENXIO, in words) after :data:`PIPE_READER_WAIT_S` rather than a wait for ever, then made
    blocking for the writes."""
    deadline = time.monotonic() + PIPE_READER_WAIT_S
    while True:
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | flags, 0o666)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            if time.monotonic() >= deadline:
                raise OSError(errno.ENXIO, f"a pipe that no process read for {PIPE_READER_WAIT_S:g} s") from None
            time.sleep(0.05)
    os.set_blocking(descriptor, True)
    return descriptor


class LineStream:
    """Lines written as they come, each whole, for a run that may be stopped part way (``check``
    over many models): to standard output (``path`` None or ``-``), flushed line by line, or to a
    fresh ``PATH.XXXXXXXX.partial`` beside the real file (a symbolic link followed), created
    exclusively as every output's temporary file is (:class:`_Plan`), so that a planted link or a
    second run on the same ``path`` never shares it; renamed to ``path`` by :meth:`finish` once
    every line is in. A run stopped before that (Ctrl-C, a kill) leaves ``path`` as it was and the
    partial file (:attr:`partial`) with the lines done: whole lines only, each written in one
    call, so it reads at any moment as a valid JSON Lines file. A device or a pipe (``-o
    /dev/stdout``) is written through directly. A system error on writing (a full disk) is an
    :class:`OutputError` naming the file, the old file kept; ``inputs`` (the models read) are
    refused as ``path``."""

    def __init__(self, path: str | os.PathLike | None, inputs: Iterable[str | os.PathLike] = ()):
        self.path = None if path is None or str(path) == "-" else Path(path)
        self.partial: Path | None = None
        self.descriptor: int | None = None
        self.lines = 0
        if self.path is None:
            return
        plan = _Plan("-o", self.path, inputs)
        self.real = plan.file
        if plan.atomic:
            self.descriptor, partial = plan.create_temporary(prefix=f"{self.real.name}.", suffix=".partial")
            self.partial = Path(partial)
            return
        try:  # a device or a pipe: written through
            self.descriptor = open_direct(self.real, os.O_APPEND)
        except OSError as exc:
            raise plan.failure(exc) from None

    def write(self, line: str) -> None:
        """One line (its newline added), whole."""
        text = line.rstrip("\n") + "\n"
        if self.descriptor is None:
            try:
                sys.stdout.write(text)
                sys.stdout.flush()
            except BrokenPipeError:
                raise  # the reader went away: the command line ends quietly
            except OSError as exc:
                raise OutputError(f"standard output: cannot be written ({exc.strerror or exc})") from None
        else:
            view = memoryview(text.encode("utf-8"))
            try:
                while view:  # a regular file takes it in one call; a pipe may take it in parts
                    view = view[os.write(self.descriptor, view) :]
            except BrokenPipeError:
                raise
            except OSError as exc:
                self._failed(exc)
        self.lines += 1

    def _failed(self, exc: OSError) -> None:
        """A write failed: the partial file (which may end in part of a line) goes; the old file stays."""
        self.close()
        kept = "; nothing was replaced" if self.partial is not None else ""
        if self.partial is not None:
            self.partial.unlink(missing_ok=True)
            self.partial = None
        fix = "free some space, or write elsewhere" if exc.errno in _NO_ROOM else "give a path you can write"
        raise OutputError(f"-o {self.path}: cannot be written ({exc.strerror or exc}){kept}; {fix}") from None

    def finish(self) -> None:
        """Every line is in: the file takes its name."""
        self.close()
        if self.partial is not None:
            try:
                os.replace(self.partial, self.real)
            except OSError as exc:
                self._failed(exc)
            self.partial = None

    def close(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None
