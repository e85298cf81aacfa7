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
