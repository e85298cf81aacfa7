"""The ``onnxroof`` command. Thin: parse flags and run one command; each command is a module of
:mod:`onnxroof.cli.commands` (``HELP``, ``add_arguments(parser)``, ``run(args)``), listed in
:data:`COMMANDS`.

Exit codes: 0 ok, 1 a budget (--fail-if) broken, 2 bad usage or unreadable model (and, with
--strict, an incomplete analysis), 3 internal error. Errors are one line on stderr
(:func:`~onnxroof.cli.output.error_text` words them); --debug shows the traceback. Output files
are written whole or not at all.
"""

from __future__ import annotations

import argparse
import errno
import gc
import importlib
import os
import sys
from collections.abc import Sequence

from ..core.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    OnnxroofError,
    Terminated,
    UsageError,
)
from ..core.text import one_line
from ..core.version import __version__
from .output import error_text

# The commands, in the order --help lists them, and the module of each. The pipeline (onnx,
# networkx, every cost rule) and the renderers are imported by a command's run(): `--help` or
# `targets` should not wait for them.
COMMANDS = {
    name: f"onnxroof.cli.commands.{name}"
    for name in (
        "summary",
        "report",
        "graph",
        "export",
        "explain",
        "diff",
        "compare",
        "check",
        "calibrate",
        "profile",
        "targets",
        "ops",
    )
}
# Commands whose module itself is slow to import (numpy kernels, onnxruntime): added to the
# parser only when they run (or when the command is unknown, for the list of choices).
_SLOW_COMMANDS = frozenset({"calibrate", "profile"})


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as our one-liners (exit 2) instead of printing usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        message = _with_suggestion(message)
        if message.startswith("unrecognized arguments:"):
            message = _option_suggestion(message, _all_option_strings(self))
        raise UsageError(f"{message} (see onnxroof {self.prog.split()[-1]} --help)" if " " in self.prog else message)


def _with_suggestion(message: str) -> str:
    """argparse's "invalid choice: 'sumary' (choose from ...)" with "did you mean 'summary'?" first."""
    import difflib
    import re

    match = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if not match:
        return message
    choices = re.findall(r"'([^']*)'", match.group(2))
    close = difflib.get_close_matches(match.group(1), choices, n=1, cutoff=0.6)
    if not close:
        return message
    return f"{message[: match.end(1) + 1]}: did you mean '{close[0]}'? (choose from {match.group(2)})"


def _all_option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every long option of ``parser`` and its subcommands (argparse reports a subcommand's
    unknown options from the top parser)."""
    found = [o for o in parser._option_string_actions if o.startswith("--")]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _all_option_strings(sub)
    return sorted(set(found))


def _option_suggestion(message: str, options: list[str]) -> str:
    """ "unrecognized arguments: --taget x" with "did you mean --target?" for each close option.

    >>> _option_suggestion("unrecognized arguments: --taget l4", ["--target", "--dtype"])
    'unrecognized arguments: --taget l4 (--taget: did you mean --target?)'
    >>> _option_suggestion("unrecognized arguments: --example", ["--example", "--target"])
    'unrecognized arguments: --example (--example is not an option of this command; see its --help)'
    """
    import difflib

    hints = []
    for word in message.split(":", 1)[1].split():
        name = word.split("=", 1)[0]
        if name.startswith("--"):
            close = difflib.get_close_matches(name, options, n=1, cutoff=0.7)
            if close and close[0] == name:  # another command's option: no spelling to suggest
                hints.append(f"{name} is not an option of this command; see its --help")
            elif close:
                hints.append(f"{name}: did you mean {close[0]}?")
    return f"{message} ({'; '.join(hints)})" if hints else message


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line. With ``command``, the one about to run, a slow command's module is
    imported only if it is that one."""
    parser = _Parser(
        prog="onnxroof", description="ONNX model analyzer: compute, parameters, bytes and roofline placement."
    )
    parser.add_argument("--version", action="version", version=f"onnxroof {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        if name in _SLOW_COMMANDS and command in COMMANDS and command != name:
            continue  # another command runs: this one's module is not needed
        module = importlib.import_module(module_name)
        epilog = getattr(module, "EPILOG", None)
        sub = commands.add_parser(
            name,
            help=module.HELP,
            **({"epilog": epilog, "formatter_class": argparse.RawDescriptionHelpFormatter} if epilog else {}),
        )
        module.add_arguments(sub)
        if "--debug" not in sub._option_string_actions:  # every command shows tracebacks on request
            sub.add_argument("--debug", action="store_true", help="show tracebacks")
        if sub.get_default("plugin") is None:
            sub.set_defaults(plugin=[])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; ``argv=None`` means the `onnxroof` program itself (arguments from
    sys.argv), which ends the process once the output is flushed."""
    if argv is not None:
        return _main(list(argv))
    kept: list = []
    code = _main(sys.argv[1:], kept)
    try:
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno in _NO_ROOM:  # what is left of the output does not fit: say so, not exit 0
            _discard_stdout()
            print(f"onnxroof: error: {_no_room(exc)}", file=sys.stderr)
            code = max(code, EXIT_USAGE)
    except ValueError:  # a closed stream: nothing left to say
        pass
    try:
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken pipe: nothing left to say
        pass
    # Everything is written and closed; tearing down the analysis (hundreds of thousands of
    # objects on a big graph, kept alive in ``kept`` for this) and every imported module would
    # only add a few tenths of a second.
    os._exit(code)


def _main(argv: list[str], kept: list | None = None) -> int:
    """One command; ``kept`` receives the analysis, for a caller about to end the process
    without freeing it."""
    debug = "--debug" in argv
    # One command builds one large analysis (hundreds of thousands of objects, no cycles) and renders
    # it: with the collector on, every collection rescans all of it (analyze() pauses it only while
    # analysing), so it stays off until the command is done.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(build_parser(argv[0] if argv else None), argv, kept)
    except OnnxroofError as exc:
        if debug:
            _print_traceback()
        print(f"onnxroof: error: {one_line(error_text(exc))}", file=sys.stderr)
        return exc.exit_code
    except Terminated:
        print("onnxroof: terminated (SIGTERM)", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("onnxroof: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader of the output went away (`onnxroof summary m.onnx | head`): nothing is left to do
        _discard_stdout()
        return EXIT_OK
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # a path given (a model, a target, a plugin) the system refuses
            print(f"onnxroof: error: {one_line(exc.filename)}: {exc.strerror}; give a shorter path", file=sys.stderr)
            return EXIT_USAGE
        if exc.errno not in _NO_ROOM:
            return _internal_error(exc, debug)
        # a full disk or device (standard output written by print, not an output file): the user's system
        _discard_stdout()
        print(f"onnxroof: error: {_no_room(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug in onnxroof: one line unless --debug
        return _internal_error(exc, debug)
    finally:
        if collecting:
            gc.enable()


# system reasons a write fails that are the user's to fix (a full disk), never a bug of ours
_NO_ROOM = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def _no_room(exc: OSError) -> str:
    """A write that found no room (standard output on a full disk or /dev/full), in one line."""
    return f"a write failed ({exc.strerror or exc}): the disk or device is full; free some space, or write elsewhere"


def _internal_error(exc: Exception, debug: bool) -> int:
    """A bug in onnxroof: one line unless --debug."""
    if debug:
        _print_traceback()
    print(
        f"onnxroof: internal error: {type(exc).__name__}: {one_line(exc)} (rerun with --debug and report it)",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def _discard_stdout() -> None:
    """Point stdout at the null device, so that flushing what is still buffered for a reader that
    is gone fails no more."""
    try:
        sys.stdout.flush()
    except OSError:
        pass
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # a stdout with no descriptor (captured in a test)
        pass


def _print_traceback() -> None:
    import traceback

    traceback.print_exc()


def _run(parser: argparse.ArgumentParser, argv: list[str], kept: list | None = None) -> int:
    args = _explain_args(parser, argv) if argv[:1] == ["explain"] else parser.parse_args(argv)
    # the onnxroof program itself (not main() called in a larger process) may fork a small child
    args.program = kept is not None
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    args.kept = kept  # receives the analysis of a single-model command
    # what a command needs of the command line itself: a model path that is a switch's value
    args.argv = tuple(argv)
    args.switches = frozenset(
        option
        for action in _command_actions(parser, args.command)
        if action.nargs == 0
        for option in action.option_strings
    )
    if args.plugin:
        from ..ops.plugins import load_plugin_file

        for plugin in args.plugin:
            load_plugin_file(plugin)
    return importlib.import_module(COMMANDS[args.command]).run(args)


def _command_actions(parser: argparse.ArgumentParser, command: str) -> list[argparse.Action]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return list(action.choices[command]._actions)
    return []


def _explain_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """explain's arguments, its model and node names anywhere among the flags (argparse takes
    positionals only where they first appear: ``explain m.onnx --batch 1 NODE``)."""
    args, extras = parser.parse_known_args(argv)
    unknown = [word for word in extras if word.startswith("-")]
    elsewhere = [
        w.split("=")[0]
        for w in unknown
        if w.split("=")[0] in ("--sweep", "--emit-order", "-o", "--output", "--fail-if")
    ]
    if elsewhere:
        raise UsageError(f"explain takes no {elsewhere[0]}: {elsewhere[0]} is for summary and report")
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    words = [w for w in (args.model, args.node, *extras) if w is not None]
    wanted = 1 if args.example else 2
    if len(words) != wanted:
        raise UsageError(
            "explain takes a model and a node name: onnxroof explain MODEL NODE [flags] "
            "(or --example NAME NODE); `onnxroof summary MODEL` lists the node names"
        )
    args.model, args.node = (None, words[0]) if args.example else words
    return args
