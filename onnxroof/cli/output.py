"""What the commands share to write: an error or a name as one printable line, progress lines on
stderr, output written whole (to a file or standard output), the budget gate, a safe file name."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Sequence

from ..core.errors import EXIT_BUDGET, EXIT_OK, OnnxroofError, OptionError, UnboundDims
from ..core.files import write_outputs
from ..core.text import one_line
from .options import FLAGS


def error_text(exc: OnnxroofError) -> str:
    """An error in the command line's words: an option named as the flag that sets it."""
    if isinstance(exc, OptionError):
        return exc.worded(FLAGS)
    if isinstance(exc, UnboundDims):
        flags = " ".join(
            [f"--dim {symbol}=N" for symbol in exc.symbols()]
            + list(dict.fromkeys(d.fix for d in exc.dims if not d.symbol))
        )
        decoder = " (a KV-cached decoder: or --phase decode --context N)" if exc.decoder else ""
        return (
            f"{exc.head()}; add: {flags}{decoder}, with your values, or --partial to cost only what does not "
            "depend on them"
        )
    return str(exc)


class StageLines:
    """Progress on stderr for slow runs: stage lines appear once a run has taken over
    ``quiet_for`` seconds, so quick runs print nothing; -q silences them."""

    def __init__(self, label: str, quiet_for: float = 1.5):
        self.label, self.quiet_for = label, quiet_for
        self.start = time.monotonic()
        self.pending: list[str] = []

    def __call__(self, stage: str) -> None:
        elapsed = time.monotonic() - self.start
        self.pending.append(one_line(f"onnxroof: {self.label}: {stage} ({elapsed:.1f} s)"))
        if elapsed >= self.quiet_for:
            print(self.pending.pop(), file=sys.stderr, flush=True)
            self.pending.clear()


def model_inputs(args: argparse.Namespace) -> list[str]:
    """The model files the command reads: no output may replace one of them."""
    found = [getattr(args, name, None) for name in ("model", "base", "head")] + list(
        getattr(args, "models", None) or []
    )
    return [source for source in found if source]


def emit(
    output: str | None,
    text: str | Iterable[str],
    args: argparse.Namespace | None = None,
    also: Sequence[tuple[str, str, str | Iterable[str]]] = (),
) -> None:
    """``text`` (or its chunks) to the file ``output``, written whole, or to standard output;
    ``also`` the other outputs of the run (``(flag, path, text)``: --emit-order), written with it,
    all or none."""
    write_outputs([*also, ("-o", output or "-", text)], model_inputs(args) if args is not None else ())


def emit_page(
    args: argparse.Namespace, text: str, default_name: str, also: Sequence[tuple[str, str, str | Iterable[str]]] = ()
) -> None:
    """An HTML page goes to a file (``default_name`` without -o, as `report` does); any other
    format to -o or standard output."""
    output = args.output or (default_name if args.format == "html" else None)
    emit(output, text, args, also)
    if args.format == "html" and not args.quiet and output != "-":
        print(f"onnxroof: wrote {output}", file=sys.stderr)


def gate(results: list, quiet: bool) -> int:
    """Exit 1 when a budget is broken, listing the broken ones on stderr."""
    broken = [r for r in results if r.broken]
    for result in broken:
        print(one_line(f"onnxroof: budget broken: {result.describe()}"), file=sys.stderr)
    return EXIT_BUDGET if broken else EXIT_OK


def safe_stem(name: str) -> str:
    """A model's name as a file name's stem (the default output names)."""
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("._")
    return stem or "model"
