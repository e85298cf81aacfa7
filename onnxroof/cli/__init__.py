"""The command line: ``main`` parses the flags and runs one command (``onnxroof.cli:main``)."""

from .app import main

__all__ = ["main"]
