"""Errors that reach the user as one line and an exit code (never a traceback)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_BUDGET = 1  # reserved for budget gates
EXIT_USAGE = 2  # bad usage, unreadable model, or (with --strict) incomplete analysis
EXIT_INTERNAL = 3


class OnnxroofError(Exception):
    """A problem the user can fix; the message names the problem and the fix."""

    exit_code = EXIT_USAGE


class ModelError(OnnxroofError):
    """The model file cannot be read or is not a valid ONNX model."""


class UsageError(OnnxroofError):
    """A flag or argument is malformed or does not match the model."""


class IncompleteAnalysis(OnnxroofError):
    """Raised under --strict when some nodes could not be costed."""


class UnboundDims(UsageError):
    """Input dims left without a value, which only the user can choose (a sequence length, an
    image size): the message names each, in the Python API's words; ``cli_text`` in flags."""

    def __init__(self, model: str, dims: list, assumed: dict[str, int], decoder: bool = False):
        self.dims, self.assumed = dims, assumed
        symbols = list(dict.fromkeys(d.symbol for d in dims if d.symbol))
        places: dict[str, list[str]] = {}  # a symbol (or an unnamed axis) -> where it is
        for d in dims:
            place = f"{d.input_name} axis {d.axis}" if d.axis >= 0 else f"{d.input_name} (no shape)"
            places.setdefault(d.symbol or place, []).append(place)
        where = ", ".join(
            key if key == found[0] else f"{key} ({found[0]}" + (f" and {len(found) - 1} more)" if len(found) > 1 else ")")
            for key, found in places.items())
        shapes = list(dict.fromkeys(d.fix for d in dims if not d.symbol))
        head = f"{model}: input dims without a value: {where}"
        assumed_text = f" ({', '.join(f'{k}={v}' for k, v in assumed.items())} assumed)" if assumed else ""
        api = [f"dims={{{', '.join(f'{s!r}: N' for s in symbols)}}}"] if symbols else []
        api += [f"input_shapes={{{fix.split(' ', 1)[1].split(':')[0]!r}: [...]}}" for fix in shapes]
        decoder_api = " (a KV-cached decoder: or phase='decode', context=N)" if decoder else ""
        decoder_cli = " (a KV-cached decoder: or --phase decode --context N)" if decoder else ""
        super().__init__(f"{head}{assumed_text}; give them: analyze(..., {', '.join(api)}){decoder_api}, "
                         "or partial=True to cost only what does not depend on them")
        flags = " ".join([f"--dim {s}=N" for s in symbols] + shapes)
        self.cli_text = (f"{head}{assumed_text}; add: {flags}{decoder_cli}, with your values, or --partial to cost only "
                         "what does not depend on them")
