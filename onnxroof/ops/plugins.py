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

A plugin is the user's own code, run with their rights; onnxroof only keeps it from passing for
a run that succeeded. While its code runs (its import, its rules), ``sys.exit`` and ``os._exit``
do not end the process (a budget gate would pass in silence: exit 0, no output) but make a
one-line plugin error (exit 2), as any exception at import does (KeyboardInterrupt included);
and what it prints goes to stderr, escaped, so that stdout stays the document (``--format json``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import io
import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from ..core.errors import Terminated, UsageError
from ..core.text import one_line
from . import COST_RULES, register
from .base import InvalidNode, UnknownShape, UnknownValue

# what a rule raises to say a node cannot be costed (the cost walk reports it, not counted)
RULE_SIGNALS = (UnknownShape, UnknownValue, InvalidNode)

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
    before = dict(COST_RULES)
    try:
        with plugin_code(f"--plugin {file}"):
            spec.loader.exec_module(module)
    except BaseException as exc:  # an exit or an interrupt of its own must not end the run as if it passed
        raise UsageError(f"--plugin {file}: failed to import ({_what(exc)}); fix the plugin") from exc
    _guard_new_rules(before, f"--plugin {file}", file)
    sys.modules[spec.name] = module
    return module


class _PluginExit(SystemExit):
    """``os._exit`` called by a plugin's code, raised instead of ending the process at once."""


@contextlib.contextmanager
def plugin_code(source: str) -> Iterator[None]:
    """While the code of plugin ``source`` runs: ``os._exit`` raises (``sys.exit`` raises
    already), and its prints go to stderr, escaped, each line marked as the plugin's."""
    real_exit = os._exit

    def refused_exit(code: int = 0) -> None:
        raise _PluginExit(f"os._exit({code})")

    os._exit = refused_exit  # type: ignore[assignment]  # the stub's os._exit never returns; this one raises
    printed = _EscapedToStderr(f"onnxroof: {source}: ")
    try:
        with contextlib.redirect_stdout(printed):
            yield
    finally:
        os._exit = real_exit
        printed.flush()


class _EscapedToStderr(io.TextIOBase):
    """A plugin's stdout: each line on stderr after ``prefix``, its control characters escaped."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.pending = prefix, ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + str(text)).split("\n")
        for line in lines:
            print(self.prefix + one_line(line), file=sys.stderr)
        return len(text)

    def flush(self) -> None:
        if self.pending:
            print(self.prefix + one_line(self.pending), file=sys.stderr)
            self.pending = ""


def _guard_new_rules(before: dict, source: str, file: Path | None = None) -> None:
    """The rules a plugin added or replaced, each run as :func:`plugin_code`: its exit attempts,
    and any exception but the rule's own ways of saying a node cannot be costed, are a one-line
    plugin error naming the plugin (``file``, when it is one: the line that raised) and the op."""
    for key, rule in list(COST_RULES.items()):
        if before.get(key) is not rule:
            op = key[1] + (f" ({key[0]})" if key[0] else "")
            COST_RULES[key] = replace(
                rule,
                handler=_guarded(rule.handler, source, op, "rule", file),
                shapes=_guarded(rule.shapes, source, op, "shape rule", file) if rule.shapes is not None else None,
            )


def _guarded(function: Callable, source: str, op_type: str, kind: str = "rule", file: Path | None = None) -> Callable:
    @functools.wraps(function)  # the docstring is the rule's formula (onnxroof ops, explain)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            with plugin_code(source):
                return function(*args, **kwargs)
        except SystemExit as exc:  # a node not counted would let a budget pass: the run stops
            raise UsageError(
                f"{source}: the {kind} of {op_type} tried to end the process ({_what(exc)}); "
                "a rule returns an OpCost: fix the plugin"
            ) from exc
        except RULE_SIGNALS:
            raise  # the rule saying the node's shape or value is unknown, or the node invalid
        except KeyboardInterrupt as exc:
            # Ctrl-C or SIGTERM (Terminated) while the rule ran stops the run as any run stops; where
            # SIGINT is ignored (check's worker processes) no Ctrl-C raises it: the rule did
            if isinstance(exc, Terminated) or signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
                raise
            raise _rule_error(function, source, op_type, kind, file, exc) from None
        except BaseException as exc:  # the plugin's bug, not onnxroof's (exit 2, not "report it");
            # a GeneratorExit or a bare BaseException too, which would end the process in a traceback
            raise _rule_error(function, source, op_type, kind, file, exc) from None

    return guarded


def _rule_error(
    function: Callable, source: str, op_type: str, kind: str, file: Path | None, exc: BaseException
) -> UsageError:
    """The one-line error of a rule that raised: the plugin, the op, the rule and the line."""
    where = _line_in(exc, file)
    return UsageError(
        f"{source}: the {kind} of {op_type} ({getattr(function, '__name__', 'rule')}{where}) "
        f"raised {_what(exc)}; fix the plugin"
    )


def _line_in(exc: BaseException, file: Path | None) -> str:
    """ ", line N": the last line of ``file`` the exception passed through ("" if none)."""
    if file is None:
        return ""
    real = os.path.realpath(file)
    lines = [
        frame.lineno for frame in traceback.extract_tb(exc.__traceback__) if os.path.realpath(frame.filename) == real
    ]
    return f", line {lines[-1]}" if lines else ""


def _what(exc: BaseException) -> str:
    try:  # the plugin's exception class may fail to say itself (its __str__ raising)
        said = str(exc)
    except Exception:
        said = "(its message cannot be shown: its __str__ failed)"
    if isinstance(exc, _PluginExit):
        return f"it called {said}"
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def load_entry_points() -> list[str]:
    """Load every installed ``onnxroof.ops`` entry point once; return their names."""
    global _loaded_entry_points
    if _loaded_entry_points:
        return []
    _loaded_entry_points = True
    names = []
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        before = dict(COST_RULES)
        try:
            with plugin_code(f"plugin entry point {entry_point.name!r}"):
                loaded = entry_point.load()
                if callable(loaded) and not isinstance(loaded, ModuleType):
                    _call(loaded)
        except BaseException as exc:
            raise UsageError(
                f"plugin entry point {entry_point.name!r} ({entry_point.value}) failed: {_what(exc)}; "
                "fix or uninstall that package"
            ) from exc
        _guard_new_rules(before, f"plugin entry point {entry_point.name!r}")
        names.append(entry_point.name)
    return names


def _call(setup: Callable) -> None:
    setup(register)
