"""The package's version, at the bottom of the layers: every output names it."""

__version__ = "0.1.0"
