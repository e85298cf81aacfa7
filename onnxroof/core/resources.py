"""Where the bundled data directories are, installed or in a checkout.

The wheel maps the top-level ``hardware/`` and ``reports/templates/`` into the package as
``onnxroof/_hardware`` and ``onnxroof/_templates``; a source checkout (editable install or
PYTHONPATH) has them beside the package instead.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # onnxroof/, not onnxroof/core/
_CHECKOUT_PATHS = {"templates": ("reports", "templates"), "hardware": ("hardware",)}


def resource_dir(kind: str) -> Path:
    """Return the directory holding bundled ``kind`` files ("templates" or "hardware")."""
    installed = _PACKAGE_DIR / f"_{kind}"
    if installed.is_dir():
        return installed
    checkout = _PACKAGE_DIR.parent.joinpath(*_CHECKOUT_PATHS[kind])
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"onnxroof's bundled {kind} directory is missing; reinstall onnxroof")
