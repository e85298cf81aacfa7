"""Sweeps: one analysis per value of a dim (``--sweep sequence_length=1,8,64,512,2048``).

A sweep symbol is a dim name of the model, or one of the pseudo-symbols ``batch``, ``dtype``,
``seq`` (prefill length, with ``--phase prefill``) and ``context`` (decode context, with
``--phase decode``). Several sweeps form their cartesian product, at most ``MAX_POINTS`` points.

>>> parse_sweep("batch=1,8,64")
('batch', [1, 8, 64])
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import onnx

from ..core.errors import UsageError
from ..core.tensors import MAX_DIM, MAX_DIM_TEXT
from ..frontend.fixed_batch import fixed_batch
from ..frontend.inputs import dim_values
from ..options import AnalysisOptions

MAX_POINTS = 64
PSEUDO = ("batch", "dtype", "seq", "context", "encoder_seq")


@dataclass
class SweepPoint:
    values: dict[str, Any]  # symbol -> value at this point
    analysis: Any  # onnxroof.result.Analysis

    @property
    def label(self) -> str:
        """The point in words, as the flags give it: "batch=8", "batch=8, dtype=int8"."""
        return ", ".join(f"{symbol}={value}" for symbol, value in self.values.items())

    @property
    def warnings(self) -> list[str]:
        """The point's warnings, each named by its label; an incomplete point's first says what it
        leaves out and that its latencies are therefore bounds."""
        analysis = self.analysis
        first = [analysis.bounds_note] if not analysis.complete else []
        return [f"{self.label}: {warning}" for warning in [*first, *analysis.warnings]]


def parse_sweep(text: str) -> tuple[str, list]:
    symbol, sep, values = text.partition("=")
    symbol = symbol.strip()
    items = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or not symbol or not items:
        raise UsageError(f"--sweep {text!r}: expected SYMBOL=V1,V2,..., e.g. --sweep sequence_length=1,64,512")
    if symbol == "dtype":
        return symbol, items
    if not all(v.isascii() and v.isdigit() for v in items):
        raise UsageError(f"--sweep {text!r}: values must be non-negative integers")
    if (large := next((v for v in items if int(v) > MAX_DIM), None)) is not None:
        raise UsageError(f"--sweep {text!r}: {large} is over the limit, {MAX_DIM_TEXT}")
    return symbol, [int(v) for v in items]


def run_sweep(
    model: str | onnx.ModelProto,
    sweeps: list[tuple[str, list]],
    options: AnalysisOptions | None = None,
    **arguments: Any,
) -> list[SweepPoint]:
    """Analyse ``model`` at every point of the sweeps, with ``options`` (or analyze()'s other
    arguments, one by one); a point's values replace theirs."""
    options = AnalysisOptions.given(options, arguments)
    from ..frontend.load import load_model
    from ..pipeline import analyze

    names = [symbol for symbol, _ in sweeps]
    if len(set(names)) != len(names):
        raise UsageError("--sweep: each symbol may be swept once")
    points = list(itertools.product(*(values for _, values in sweeps)))
    if len(points) > MAX_POINTS:
        raise UsageError(f"--sweep: {len(points)} points; at most {MAX_POINTS} (sweep fewer values)")
    proto = model if isinstance(model, onnx.ModelProto) else load_model(model)
    fixed = fixed_batch(proto) if "batch" in names else None
    for value in dict(sweeps).get("batch", ()) if fixed else ():  # before any point is analysed
        if why := fixed.refusal(value):  # type: ignore[union-attr]  # fixed is set: the loop runs only then
            raise UsageError(f"--sweep batch={value} cannot be analysed: {why}")
    results = []
    for point in points:
        values = dict(zip(names, point))
        dims = dim_values(options.dims)  # a mapping, or SYMBOL=VALUE strings
        pseudo = {}
        for symbol, value in values.items():
            if symbol in PSEUDO:
                pseudo[symbol] = value
            else:
                dims[symbol] = value
        analysis = analyze(proto, options=replace(options, dims=dims, **pseudo))
        if not isinstance(model, onnx.ModelProto):  # loaded once, analysed in memory: name it by its file
            path = Path(model)
            analysis.model = replace(analysis.model, name=path.stem, path=str(path), file_bytes=path.stat().st_size)
        results.append(SweepPoint(values, analysis))
    return results
