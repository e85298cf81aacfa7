"""The ``onnxroof`` command. Thin: parse flags, call ``analyze``, hand the result to a renderer.

Exit codes: 0 ok, 1 a budget broken (reserved), 2 bad usage or unreadable model (and, with
--strict, an incomplete analysis), 3 internal error. Errors are one line on stderr; --debug
shows the traceback. Output files are written whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Sequence

from . import __version__
from .analysis import Analysis, analyze
from .errors import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, IncompleteAnalysis, OnnxroofError, UsageError
from .examples import EXAMPLES, build_example
from .plugins import load_plugin_file


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as our one-liners (exit 2) instead of printing usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see onnxroof {self.prog.split()[-1]} --help)" if " " in self.prog else message)


def _common(parser: argparse.ArgumentParser, default_output: str | None) -> None:
    parser.add_argument("model", nargs="?", help="path to the .onnx file")
    parser.add_argument("--example", metavar="NAME", help="use a built-in example model ('--example list' names them)")
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME:D1,D2,...",
                        help="set an input's shape, e.g. input:1,3,224,224 or input:1x3x224x224 (repeatable)")
    parser.add_argument("--dim", action="append", default=[], metavar="SYMBOL=VALUE",
                        help="bind a named (symbolic) dim everywhere, e.g. batch=1 (repeatable)")
    parser.add_argument("--loop-trips", type=_positive_int, metavar="N",
                        help="trip count for Loops whose count is not a constant in the model")
    parser.add_argument("--plugin", action="append", default=[], metavar="FILE.py",
                        help="a Python file that registers cost rules with onnxroof.register (repeatable)")
    parser.add_argument("--target", action="append", default=[], metavar="NAME|FILE.toml",
                        help="place the model on a hardware target's roofline (repeatable; `onnxroof targets` lists them)")
    parser.add_argument("--dtype", choices=("fp32", "fp16", "bf16", "int8", "int4"),
                        help="re-cost the model as if stored and run in this type")
    parser.add_argument("--batch", type=_positive_int, metavar="N", help="set axis 0 of every input to N")
    parser.add_argument("--in-place", action="store_true",
                        help="let single-consumer elementwise ops overwrite their input (memory analysis)")
    parser.add_argument("--emit-order", metavar="FILE",
                        help="write the lowest-peak execution order found, one node name per line")
    parser.add_argument("-o", "--output", default=default_output, metavar="FILE",
                        help="write the output to FILE" + (f" (default: {default_output})" if default_output else " (default: stdout)"))
    parser.add_argument("--strict", action="store_true",
                        help="exit 2 if the analysis is incomplete (unbound dims, unsupported ops, unknown shapes)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or warnings on stderr")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="onnxroof", description="ONNX model analyzer: compute, parameters, bytes and roofline placement.")
    parser.add_argument("--version", action="version", version=f"onnxroof {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    summary = commands.add_parser("summary", help="print totals and a per-node table")
    _common(summary, None)
    summary.add_argument("--format", choices=("table", "json", "csv"), default="table", help="output format (default: table)")
    report = commands.add_parser("report", help="write a self-contained HTML report")
    _common(report, None)
    explain = commands.add_parser("explain", help="show how one node's numbers were computed")
    _common(explain, None)
    explain.add_argument("node", metavar="NODE_NAME", help="the node's name (as `summary` lists it)")
    targets = commands.add_parser("targets", help="list the bundled hardware targets with their roofs and ridge points")
    targets.add_argument("--debug", action="store_true", help="show tracebacks")
    targets.add_argument("--plugin", action="append", default=[], help=argparse.SUPPRESS)
    ops = commands.add_parser("ops", help="list every cost rule with its formula (Markdown: docs/ops.md)")
    ops.add_argument("--plugin", action="append", default=[], metavar="FILE.py", help="include a plugin's rules")
    ops.add_argument("--debug", action="store_true", help="show tracebacks")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        return _run(build_parser(), argv)
    except OnnxroofError as exc:
        if debug:
            traceback.print_exc()
        print(f"onnxroof: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("onnxroof: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug in onnxroof: one line unless --debug
        if debug:
            traceback.print_exc()
        print(f"onnxroof: internal error: {type(exc).__name__}: {exc} (rerun with --debug and report it)", file=sys.stderr)
        return EXIT_INTERNAL


def _run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    for plugin in args.plugin:
        load_plugin_file(plugin)
    if args.command == "targets":
        from .report.table import render_targets_list
        from .targets import bundled_targets, parse_target

        sys.stdout.write(render_targets_list(parse_target(path) for path in bundled_targets().values()))
        return EXIT_OK
    if args.command == "ops":
        from .report.ops_doc import render_ops_markdown

        sys.stdout.write(render_ops_markdown())
        return EXIT_OK
    if args.example == "list":
        for name, (_, description) in EXAMPLES.items():
            print(f"{name:22} {description}")
        return EXIT_OK
    analysis = _analyze(args)
    if not args.quiet:
        for warning in analysis.warnings:
            print(f"onnxroof: warning: {warning}", file=sys.stderr)
    if args.strict and not analysis.complete:
        raise IncompleteAnalysis("the analysis is incomplete (see the warnings above) and --strict is set; nothing written")
    if args.emit_order:
        from .memory import order_text

        write_atomically(args.emit_order, order_text(analysis.memory.best.schedule.order))
    if args.command == "explain":
        from .report.table import render_explain

        sys.stdout.write(render_explain(analysis, analysis.find_node(args.node)))
    elif args.command == "summary":
        text = _render_summary(analysis, args.format)
        if args.output:
            write_atomically(args.output, text)
        else:
            sys.stdout.write(text)
    else:
        from .report.html import render_html

        output = args.output or f"{_safe_stem(analysis.model.name)}.report.html"
        write_atomically(output, render_html(analysis))
        if not args.quiet:
            print(f"onnxroof: wrote {output}", file=sys.stderr)
    return EXIT_OK


def _analyze(args: argparse.Namespace) -> Analysis:
    if args.example and args.model:
        raise UsageError("give a model path or --example NAME, not both")
    if args.example:
        model = build_example(args.example)
    elif args.model:
        model = args.model
    else:
        raise UsageError(f"no model given; pass a path to an .onnx file or --example NAME ({', '.join(EXAMPLES)})")
    return analyze(model, input_shapes=args.input_shape, dims=args.dim, loop_trips=args.loop_trips,
                   elementwise_in_place=args.in_place, targets=args.target, dtype=args.dtype or "model",
                   batch=args.batch)


def _render_summary(analysis: Analysis, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(analysis.to_dict(), indent=2) + "\n"
    from .report.table import render_csv, render_table

    return render_csv(analysis) if fmt == "csv" else render_table(analysis)


def _safe_stem(name: str) -> str:
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("._")
    return stem or "model"


def write_atomically(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same directory: whole or nothing."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise UsageError(f"-o {target}: the directory {directory} does not exist; create it first")
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes it private; a report is not
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


if __name__ == "__main__":
    sys.exit(main())
