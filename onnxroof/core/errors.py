"""Errors that reach the user as one line and an exit code (never a traceback)."""

from __future__ import annotations

import signal
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from .text import one_line

EXIT_OK = 0
EXIT_BUDGET = 1  # reserved for budget gates
EXIT_USAGE = 2  # bad usage, unreadable model, or (with --strict) incomplete analysis
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT (2), as a shell reports it
EXIT_TERMINATED = 143  # SIGTERM (a scheduler's stop): 128 + 15


class Terminated(KeyboardInterrupt):
    """SIGTERM, where a command stops as Ctrl-C stops it (its work cleaned up, what is done kept):
    an interrupt, so every handler of one applies, but its exit code is SIGTERM's."""


@contextmanager
def sigterm_stops() -> Iterator[None]:
    """Within it, SIGTERM (a scheduler's stop) raises :class:`Terminated`, so the ``finally``
    blocks that clean up after Ctrl-C run for it too; the handler it replaced is put back after."""

    def stop(signum, frame):
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # off the main thread, where no handler can be set
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


class OnnxroofError(Exception):
    """A problem the user can fix; the message names the problem and the fix.

    Every error crosses a process boundary whole (``compare --jobs`` pickles a worker's error
    for the main process): a subclass whose ``__init__`` takes other arguments than the message
    defines its own ``__reduce__``.
    """

    exit_code = EXIT_USAGE

    def __str__(self) -> str:
        # a message quotes paths and names the user or the model gave, which may hold terminal
        # escapes or line breaks: one printable line wherever it is shown (a traceback, a log),
        # escaped as the command line shows it; ``args`` keep the raw text
        return one_line(super().__str__())

    def __reduce__(self):
        return type(self), self.args, self.__dict__


class ModelError(OnnxroofError):
    """The model file cannot be read or is not a valid ONNX model."""


class UsageError(OnnxroofError):
    """A flag or argument is malformed or does not match the model."""


class OutputError(OnnxroofError):
    """An output file cannot be written (a full disk, a read-only folder): the user's system, not
    a bug; the message names the file and the system's reason, and the old file is kept."""


class IncompleteAnalysis(OnnxroofError):
    """Raised under --strict when some nodes could not be costed."""


class OptionError(UsageError):
    """A value given for an analysis option is malformed or does not fit the model.

    The message names options by their keys, the fields of :class:`~onnxroof.options.AnalysisOptions`
    (``{opt.dims}`` in ``template``), and each interface words them: the Python API as the key,
    which is its argument's name, the command line as the flag (``--dim``), so that no stage
    below knows either. ``option`` is the option at fault and ``facts`` what the message says of
    it (the input, the dim, the value given), for a caller that wants them, not the text.

    >>> error = OptionError("dims", "{opt.dims} {text!r}: expected SYMBOL=VALUE", text="batch")
    >>> str(error), error.worded({"dims": "--dim"})
    ("dims 'batch': expected SYMBOL=VALUE", "--dim 'batch': expected SYMBOL=VALUE")
    """

    def __init__(self, option: str, template: str, **facts: object):
        self.option, self.template, self.facts = option, template, facts
        super().__init__(self.worded({}))

    def worded(self, names: Mapping[str, str]) -> str:
        """The message with each option named as ``names`` says (as its key where it says nothing)."""
        return self.template.format(opt=_OptionNames(names), **self.facts)

    def __reduce__(self):  # pickled: `compare --jobs` sends a worker's error to the main process
        return _option_error, (type(self), self.option, self.template, self.facts), self.__dict__


def _option_error(kind: type[OptionError], option: str, template: str, facts: dict) -> OptionError:
    return kind(option, template, **facts)


class _OptionNames:
    """``{opt.KEY}`` in a template: the name an interface gives option KEY."""

    def __init__(self, names: Mapping[str, str]):
        self._names = names

    def __getattr__(self, key: str) -> str:
        return self._names.get(key, key)


class UnboundDims(UsageError):
    """Input dims left without a value, which only the user can choose (a sequence length, an
    image size): the message names each, in the Python API's words; the command line words the
    same fields as flags."""

    def __init__(self, model: str, dims: list, assumed: dict[str, int], decoder: bool = False):
        self.model, self.dims, self.assumed, self.decoder = model, dims, assumed, decoder
        symbols = self.symbols()
        shapes = list(dict.fromkeys(d.fix for d in dims if not d.symbol))
        api = [f"dims={{{', '.join(f'{s!r}: N' for s in symbols)}}}"] if symbols else []
        api += [f"input_shapes={{{fix.split(' ', 1)[1].split(':')[0]!r}: [...]}}" for fix in shapes]
        decoder_api = " (a KV-cached decoder: or phase='decode', context=N)" if decoder else ""
        super().__init__(
            f"{self.head()}; give them: analyze(..., {', '.join(api)}){decoder_api}, "
            "or partial=True to cost only what does not depend on them"
        )

    def symbols(self) -> list[str]:
        """The names of the dims without a value, each once."""
        return list(dict.fromkeys(d.symbol for d in self.dims if d.symbol))

    def head(self) -> str:
        """The model and where each dim without a value is (and the batch dims assumed 1)."""
        places: dict[str, list[str]] = {}  # a symbol (or an unnamed axis) -> where it is
        for d in self.dims:
            place = f"{d.input_name} axis {d.axis}" if d.axis >= 0 else f"{d.input_name} (no shape)"
            places.setdefault(d.symbol or place, []).append(place)
        where = ", ".join(
            key
            if key == found[0]
            else f"{key} ({found[0]}" + (f" and {len(found) - 1} more)" if len(found) > 1 else ")")
            for key, found in places.items()
        )
        assumed_text = f" ({', '.join(f'{k}={v}' for k, v in self.assumed.items())} assumed)" if self.assumed else ""
        return f"{self.model}: input dims without a value: {where}{assumed_text}"

    def __reduce__(self):  # pickled: `compare --jobs` sends a worker's error to the main process
        return type(self), (self.model, self.dims, self.assumed, self.decoder), self.__dict__
