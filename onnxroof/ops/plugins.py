"""User cost rules without editing onnxroof: ``--plugin my_ops.py`` files and the
``onnxroof.ops`` entry-point group of installed packages.

A plugin registers rules with :func:`onnxroof.register` when it is imported::

    # my_ops.py
    from onnxroof import register
    from onnxroof.ops import OpCost, OpTrait

    def my_gelu(node):
        \"\"\"FLOPs = 8 x output elements.\"\"\"
        return OpCost(flops=8 * node.output_elements(0))

    register("MyGelu", my_gelu, family="elementwise", domain="my.domain", traits=OpTrait.ELEMENTWISE)

``traits`` tells the later stages what the op is (:class:`onnxroof.ops.OpTrait`): an ELEMENTWISE op
may join a convolution's or matmul's kernel as its epilogue, a VIEW shares its input's buffer in
the memory stage.

A package does the same from a module named in its metadata::

    [project.entry-points."onnxroof.ops"]
    my_ops = "my_package.onnxroof_rules"

If the entry point names a callable instead of a module, it is called with ``register``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable

from ..core.errors import UsageError
from . import register

ENTRY_POINT_GROUP = "onnxroof.ops"
_loaded_entry_points = False


def load_plugin_file(path: str | Path) -> ModuleType:
    """Import a plugin file; its module-level ``register`` calls add or replace rules."""
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"--plugin {file}: no such file; pass the path of a .py file that calls onnxroof.register")
    spec = importlib.util.spec_from_file_location(f"onnxroof_plugin_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise UsageError(f"--plugin {file}: not a Python file; pass a .py file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a plugin that calls sys.exit must not end the run as if it passed
        raise UsageError(f"--plugin {file}: failed to import ({type(exc).__name__}: {exc}); fix the plugin") from exc
    sys.modules[spec.name] = module
    return module


def load_entry_points() -> list[str]:
    """Load every installed ``onnxroof.ops`` entry point once; return their names."""
    global _loaded_entry_points
    if _loaded_entry_points:
        return []
    _loaded_entry_points = True
    names = []
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry_point.load()
            if callable(loaded) and not isinstance(loaded, ModuleType):
                _call(loaded)
        except Exception as exc:
            raise UsageError(
                f"plugin entry point {entry_point.name!r} ({entry_point.value}) failed: {type(exc).__name__}: {exc}; "
                "fix or uninstall that package"
            ) from exc
        names.append(entry_point.name)
    return names


def _call(setup: Callable) -> None:
    setup(register)
