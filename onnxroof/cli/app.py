"""The ``onnxroof`` command. Thin: parse flags, call ``analyze``, hand the result to a renderer.

Exit codes: 0 ok, 1 a budget (--fail-if) broken, 2 bad usage or unreadable model (and, with
--strict, an incomplete analysis), 3 internal error. Errors are one line on stderr; --debug
shows the traceback. Output files are written whole or not at all.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from ..core.version import __version__
from ..core.files import write_atomically
from .options import (
    EXAMPLES, FLAGS, analysis_options, budget_option, formula_options, options_from_flags, positive_int, single_model,
)
from ..core.errors import (
    EXIT_BUDGET, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, IncompleteAnalysis, OnnxroofError, OptionError, UnboundDims, UsageError,
)

# The pipeline (onnx, networkx, every cost rule), the renderers and the examples are imported
# by the commands that use them: `--help` or `targets` should not wait for them.
if TYPE_CHECKING:
    from ..result import Analysis


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
    return f"{message[:match.end(1) + 1]}: did you mean '{close[0]}'? (choose from {match.group(2)})"


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
    """"unrecognized arguments: --taget x" with "did you mean --target?" for each close option.

    >>> _option_suggestion("unrecognized arguments: --taget l4", ["--target", "--dtype"])
    'unrecognized arguments: --taget l4 (--taget: did you mean --target?)'
    """
    import difflib

    hints = []
    for word in message.split(":", 1)[1].split():
        name = word.split("=", 1)[0]
        if name.startswith("--"):
            close = difflib.get_close_matches(name, options, n=1, cutoff=0.7)
            if close:
                hints.append(f"{name}: did you mean {close[0]}?")
    return f"{message} ({'; '.join(hints)})" if hints else message


# Commands that live in their own module: each has HELP, add_arguments(parser) and run(args) -> exit code.
_COMMAND_MODULES = {"calibrate": "onnxroof.cli.commands.calibrate", "profile": "onnxroof.cli.commands.profile"}
# The commands defined here: running one of them needs none of the modules above.
_BUILT_IN_COMMANDS = frozenset({"summary", "report", "explain", "diff", "compare", "check", "targets", "ops"})


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line. With ``command``, the one about to run, a command that lives in its
    own module is added only if it is that one: those modules are slow to import."""
    parser = _Parser(prog="onnxroof", description="ONNX model analyzer: compute, parameters, bytes and roofline placement.")
    parser.add_argument("--version", action="version", version=f"onnxroof {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    summary = commands.add_parser("summary", help="print totals and a per-node table", epilog=EXAMPLES["summary"],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    single_model(summary)
    summary.add_argument("--format", choices=("table", "json", "csv", "markdown"), default="table",
                         help="output format (default: table)")
    summary.add_argument("--by", choices=("node", "module", "op"),
                         help="rows per node (default), per module of the module tree the node names carry "
                              "(/encoder/layer.0/...), or per op type; with --symbolic, the MACs formula of each")
    summary.add_argument("--symbolic", action="store_true",
                         help="MACs, FLOPs, parameters, bytes and peak memory as exact formulas of the input dims left "
                              "unbound (batch, sequence, ...), instead of numbers")
    summary.add_argument("--depth", type=positive_int, metavar="N",
                         help="with --by module: fold deeper modules into their ancestor N levels down")
    summary.add_argument("--formulas", action="store_true",
                         help="add the formulas of the dims the model leaves free (--symbolic's) after the table, or "
                              "as the JSON document's \"formulas\" block")
    report = commands.add_parser("report", help="write a self-contained HTML report", epilog=EXAMPLES["report"],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    single_model(report)
    report.add_argument("--colour-by", choices=("op", "module"), default="op",
                        help="colour the roofline's dots by op type (default) or by the top-level module the node "
                             "names carry (encoder, decoder, lm_head)")
    report.add_argument("--formulas", action="store_true",
                        help="add a section with the costs as formulas of the dims the model leaves free (the "
                             "values --dim gives them are the page's numbers; summary --symbolic prints them)")
    explain = commands.add_parser("explain", help="show how one node's numbers were computed", epilog=EXAMPLES["explain"],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    explain.add_argument("model", nargs="?", help="path to the .onnx file (or example:NAME)")
    explain.add_argument("node", nargs="?", metavar="NODE_NAME", help="the node's name (as `summary` lists it)")
    explain.add_argument("--example", metavar="NAME", help="use a built-in example model (then give the node name only)")
    analysis_options(explain)
    explain.set_defaults(sweep=[], emit_order=None, output=None)
    diff = commands.add_parser("diff", help="compare a base and a head model (for pull requests)", epilog=EXAMPLES["diff"],
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    diff.add_argument("base", help="the base model: a path or example:NAME")
    diff.add_argument("head", help="the head model: a path or example:NAME")
    analysis_options(diff)
    diff.add_argument("--format", choices=("table", "markdown", "json", "html"), default="table",
                      help="table (terminal), markdown (a PR comment), json, or html (a page, written to "
                           "BASE-vs-HEAD.diff.html without -o)")
    diff.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE (whole or not at all; - is standard output)")
    diff.add_argument("--symbolic", action="store_true",
                      help="the change in the formulas of the free input dims (summary --symbolic), term by term")
    budget_option(diff, relative=True)
    compare = commands.add_parser("compare", help="put several candidate models side by side", epilog=EXAMPLES["compare"],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    compare.add_argument("models", nargs="+", help="paths (or example:NAME)")
    analysis_options(compare)
    compare.add_argument("--format", choices=("table", "markdown", "json", "html"), default="table",
                         help="table (terminal), markdown, json, or html (a page, written to compare.html without -o)")
    compare.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE (whole or not at all; - is standard output)")
    compare.add_argument("--jobs", type=positive_int, metavar="N", help="parallel analyses (default: one per core)")
    check = commands.add_parser("check", help="check models against budgets, one line each (pre-commit, CI)",
                                epilog=EXAMPLES["check"], formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("models", nargs="+", help="paths (or example:NAME)")
    analysis_options(check)
    budget_option(check, relative=False)
    known = command in _BUILT_IN_COMMANDS or command in _COMMAND_MODULES
    for name, module_name in _COMMAND_MODULES.items():
        if known and command != name:
            continue  # another command runs: this one's module is not needed
        module = importlib.import_module(module_name)
        extra = commands.add_parser(name, help=module.HELP)
        module.add_arguments(extra)
        extra.add_argument("--debug", action="store_true", help="show tracebacks")
        extra.set_defaults(plugin=[])
    targets = commands.add_parser("targets", help="list the bundled hardware targets with their roofs and ridge points")
    targets.add_argument("--debug", action="store_true", help="show tracebacks")
    targets.add_argument("--plugin", action="append", default=[], help=argparse.SUPPRESS)
    ops = commands.add_parser("ops", help="list every cost rule with its formula (Markdown: docs/ops.md)")
    ops.add_argument("--plugin", action="append", default=[], metavar="FILE.py", help="include a plugin's rules")
    ops.add_argument("--debug", action="store_true", help="show tracebacks")
    return parser


def one_line(text: object) -> str:
    """Text from a model or a user (names, paths, flag values) as one printable line: control
    characters (newlines, ANSI escapes) are shown escaped, never interpreted by the terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def error_text(exc: OnnxroofError) -> str:
    """An error in the command line's words: an option named as the flag that sets it."""
    if isinstance(exc, OptionError):
        return exc.worded(FLAGS)
    if isinstance(exc, UnboundDims):
        flags = " ".join([f"--dim {symbol}=N" for symbol in exc.symbols()]
                         + list(dict.fromkeys(d.fix for d in exc.dims if not d.symbol)))
        decoder = " (a KV-cached decoder: or --phase decode --context N)" if exc.decoder else ""
        return (f"{exc.head()}; add: {flags}{decoder}, with your values, or --partial to cost only what does not "
                "depend on them")
    return str(exc)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; ``argv=None`` means the `onnxroof` program itself (arguments from
    sys.argv), which ends the process once the output is flushed."""
    if argv is not None:
        return _main(list(argv))
    kept: list = []
    code = _main(sys.argv[1:], kept)
    try:
        sys.stdout.flush()
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
    except KeyboardInterrupt:
        print("onnxroof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of the output went away (`onnxroof summary m.onnx | head`): nothing is left to do
        _discard_stdout()
        return EXIT_OK
    except Exception as exc:  # a bug in onnxroof: one line unless --debug
        if debug:
            _print_traceback()
        print(f"onnxroof: internal error: {type(exc).__name__}: {one_line(exc)} (rerun with --debug and report it)",
              file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        if collecting:
            gc.enable()


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
    if args.plugin:
        from ..ops.plugins import load_plugin_file

        for plugin in args.plugin:
            load_plugin_file(plugin)
    if args.command == "targets":
        from ..report.text.table import render_targets_list
        from ..roofline.targets import bundled_targets, parse_target

        sys.stdout.write(render_targets_list(parse_target(path) for path in bundled_targets().values()))
        return EXIT_OK
    if args.command == "ops":
        from ..report.text.ops_doc import render_ops_markdown

        sys.stdout.write(render_ops_markdown())
        return EXIT_OK
    if args.command in _COMMAND_MODULES:
        return importlib.import_module(_COMMAND_MODULES[args.command]).run(args)
    if args.command == "diff":
        return _diff(args)
    if args.command == "compare":
        return _compare(args)
    if args.command == "check":
        return _check(args)
    from ..compare.budgets import check_budgets, parse_budget

    if args.example == "list":
        from ..core.examples import EXAMPLES

        for name, (_, description) in EXAMPLES.items():
            print(f"{name:24} {description}")
        return EXIT_OK
    budgets = [parse_budget(text) for text in getattr(args, "fail_if", [])]
    if args.example and args.model:
        raise UsageError("give a model path or --example NAME, not both")
    if not (args.example or args.model):
        from ..core.examples import EXAMPLES

        raise UsageError(f"no model given; pass a path to an .onnx file or --example NAME ({', '.join(EXAMPLES)})")
    source = f"example:{args.example}" if args.example else args.model
    _check_not_a_flag_value(parser, argv, source)
    if getattr(args, "sweep", None):
        return _sweep(source, args, budgets)
    if getattr(args, "symbolic", False):
        return _symbolic(source, args)
    analysis = _analyze(source, args)
    if kept is not None:
        kept.append(analysis)
    if args.emit_order:
        from ..memory.liveness import order_text

        write_atomically(args.emit_order, order_text(analysis.memory.best.schedule.order))
    if args.command == "explain":
        from ..report.text.table import render_explain

        sys.stdout.write(render_explain(analysis, analysis.find_node(args.node)))
        return EXIT_OK
    if args.command == "summary":
        found = _report_formulas(source, args) if args.formulas else None
        _emit(args.output, _summary_chunks(analysis, args.format, args.by or "node", args.depth, found))
    else:
        from ..report.html.pages import render_html

        output = args.output or f"{_safe_stem(analysis.model.name)}.report.html"
        found = _report_formulas(source, args) if args.formulas else None
        write_atomically(output, render_html(analysis, colour_by=args.colour_by, formulas=found))
        if not args.quiet and output != "-":
            print(f"onnxroof: wrote {output}", file=sys.stderr)
    return _gate(check_budgets(budgets, analysis), args.quiet)


def _symbolic(source: str, args: argparse.Namespace) -> int:
    """`summary --symbolic`: the formulas in the dims the flags leave free (never exit 2 for them)."""
    from ..symbolic.formulas import formulas, formulas_lines

    if args.depth is not None and args.by != "module":
        raise UsageError("--depth goes with --by module")
    found = formulas(_model(source), by=args.by, modules=args.depth, progress=_formula_progress(source, args),
                     options=formula_options(args))
    if args.format == "json":
        text = json.dumps({"schema": "onnxroof-formulas/1", "model": source, **found.to_dict()}, indent=2) + "\n"
    elif args.format == "table":
        text = "\n".join(formulas_lines(found)) + "\n"
    else:
        raise UsageError("--symbolic prints a table or JSON: use --format table or json")
    _emit(args.output, text)
    return EXIT_OK


def _report_formulas(source: str, args: argparse.Namespace):
    """The formulas in the dims the model leaves free, whatever values the flags give them."""
    from ..symbolic.formulas import formulas

    return formulas(_model(source), progress=_formula_progress(source, args), options=formula_options(args, bound=False))


def _formula_progress(source: str, args: argparse.Namespace):
    """Stage lines on stderr once fitting takes over 1.5 s; none under -q."""
    return None if args.quiet else StageLines(Path(source).name)


def _check_not_a_flag_value(parser: argparse.ArgumentParser, argv: list[str], source: str) -> None:
    """A model path that is no file, right after a flag that takes no value, was meant as that
    flag's value (``--no-overhead yes``): say so instead of "no such file"."""
    try:
        exists = Path(source).exists()
    except OSError:  # a name the file system refuses (too long): loading says so
        return
    if source.startswith("example:") or exists or source not in argv:
        return
    position = argv.index(source)
    previous = argv[position - 1] if position > 0 else ""
    switches = {option for action in _command_actions(parser, argv[0]) if action.nargs == 0 for option in action.option_strings}
    if previous in switches:
        raise UsageError(f"{previous} takes no value, so {source!r} was read as the model path: "
                         f"drop {source!r}, or give the model's path")


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
    elsewhere = [w.split("=")[0] for w in unknown if w.split("=")[0] in ("--sweep", "--emit-order", "-o", "--output", "--fail-if")]
    if elsewhere:
        raise UsageError(f"explain takes no {elsewhere[0]}: {elsewhere[0]} is for summary and report")
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    words = [w for w in (args.model, args.node, *extras) if w is not None]
    wanted = 1 if args.example else 2
    if len(words) != wanted:
        raise UsageError("explain takes a model and a node name: onnxroof explain MODEL NODE [flags] "
                         "(or --example NAME NODE); `onnxroof summary MODEL` lists the node names")
    args.model, args.node = (None, words[0]) if args.example else words
    return args


def _model(source: str):
    """A path, or ``example:NAME`` for a built-in example."""
    if source.startswith("example:") and not Path(source).exists():
        from ..core.examples import build_example

        return build_example(source.split(":", 1)[1])
    return source


class StageLines:
    """Progress on stderr for slow runs: stage lines appear once a run has taken over
    ``quiet_for`` seconds, so quick runs print nothing; -q silences them."""

    def __init__(self, label: str, quiet_for: float = 1.5):
        self.label, self.quiet_for = label, quiet_for
        self.start = time.monotonic()
        self.pending: list[str] = []

    def __call__(self, stage: str) -> None:
        elapsed = time.monotonic() - self.start
        self.pending.append(one_line(f"onnxroof: {self.label}: {stage} ({elapsed:.1f} s)"))
        if elapsed >= self.quiet_for:
            print(self.pending.pop(), file=sys.stderr, flush=True)
            self.pending.clear()


def _analyze(source: str, args: argparse.Namespace) -> Analysis:
    from ..pipeline import analyze

    progress = None if args.quiet else StageLines(Path(source).name)
    analysis = analyze(_model(source), progress=progress, options=options_from_flags(args))
    if not args.quiet:
        for warning in analysis.warnings:
            print(one_line(f"onnxroof: warning: {analysis.model.name}: {warning}"), file=sys.stderr)
    if args.strict and not analysis.complete:
        raise IncompleteAnalysis(
            f"{analysis.model.name}: the analysis is incomplete (see the warnings above) and --strict is set; nothing written"
        )
    return analysis


def _sweep(source: str, args: argparse.Namespace, budgets: list) -> int:
    from ..compare.budgets import check_budgets
    from ..frontend.inputs import parse_dim
    from ..compare.sweep import parse_sweep, run_sweep

    if args.command == "explain":
        raise UsageError("--sweep is for summary and report")
    options = replace(options_from_flags(args), dims=dict(parse_dim(text) for text in args.dim))
    points = run_sweep(_model(source), [parse_sweep(text) for text in args.sweep], options)
    if not args.quiet:
        for point in points:
            for warning in point.analysis.warnings:
                print(one_line(f"onnxroof: warning: {point.values}: {warning}"), file=sys.stderr)
    if args.strict and not all(p.analysis.complete for p in points):
        raise IncompleteAnalysis("a sweep point is incomplete (see the warnings above) and --strict is set")
    if args.command == "report":
        from ..report.html.pages import render_sweep_html

        output = args.output or f"{_safe_stem(points[0].analysis.model.name)}.sweep.html"
        write_atomically(output, render_sweep_html(points))
        if not args.quiet and output != "-":
            print(f"onnxroof: wrote {output}", file=sys.stderr)
    elif args.format == "json":
        from ..report.json import sweep_document

        _emit(args.output, json.dumps(sweep_document(points), indent=2) + "\n")
    else:
        from ..report.text.table import render_sweep_table

        _emit(args.output, render_sweep_table(points))
    return _gate([r for p in points for r in check_budgets(budgets, p.analysis)], args.quiet)


def _emit(output: str | None, text: str | Iterable[str]) -> None:
    if output:
        write_atomically(output, text)
    else:
        sys.stdout.writelines([text] if isinstance(text, str) else text)


def _emit_page(args: argparse.Namespace, text: str, default_name: str) -> None:
    """An HTML page goes to a file (``default_name`` without -o, as `report` does); any other
    format to -o or standard output."""
    output = args.output or (default_name if args.format == "html" else None)
    _emit(output, text)
    if args.format == "html" and not args.quiet and output != "-":
        print(f"onnxroof: wrote {output}", file=sys.stderr)


def _gate(results: list, quiet: bool) -> int:
    """Exit 1 when a budget is broken, listing the broken ones on stderr."""
    broken = [r for r in results if r.broken]
    for result in broken:
        print(one_line(f"onnxroof: budget broken: {result.describe()}"), file=sys.stderr)
    return EXIT_BUDGET if broken else EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    if args.symbolic:
        from ..symbolic.formulas import difference, formulas, formulas_lines

        options = formula_options(args)
        change = difference(formulas(_model(args.base), progress=_formula_progress(args.base, args), options=options),
                            formulas(_model(args.head), progress=_formula_progress(args.head, args), options=options))
        _emit(args.output, "\n".join(formulas_lines(change, change=True)) + "\n")
        return EXIT_OK
    from ..compare.budgets import check_budgets, parse_budget
    from ..compare.diff import diff_analyses
    from ..report.text.diff_tables import diff_document, render_diff_markdown, render_diff_table

    budgets = [parse_budget(text) for text in args.fail_if]
    base, head = _analyze(args.base, args), _analyze(args.head, args)
    diff = diff_analyses(base, head)
    results = check_budgets(budgets, head, base)
    if args.format == "json":
        text = json.dumps(diff_document(diff, results), indent=2) + "\n"
    elif args.format == "markdown":
        text = render_diff_markdown(diff, results)
    elif args.format == "html":
        from ..report.html.pages import render_diff_html

        text = render_diff_html(diff, results)
    else:
        text = render_diff_table(diff, results)
    _emit_page(args, text, f"{_safe_stem(base.model.name)}-vs-{_safe_stem(head.model.name)}.diff.html")
    return _gate(results, args.quiet)


def _compare(args: argparse.Namespace) -> int:
    from ..report.text.diff_tables import compare_document, render_compare_markdown, render_compare_table

    analyses = analyze_many(args.models, args)
    if args.format == "json":
        text = json.dumps(compare_document(analyses), indent=2) + "\n"
    elif args.format == "markdown":
        text = render_compare_markdown(analyses)
    elif args.format == "html":
        from ..report.html.pages import render_compare_html

        text = render_compare_html(analyses)
    else:
        text = render_compare_table(analyses)
    _emit_page(args, text, "compare.html")
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    """One line per model: its totals, each target's latency, its budgets; exit 2 if a model
    cannot be analysed, else 1 if a budget is broken."""
    from ..compare.budgets import check_budgets, parse_budget
    from ..core.units import iec, seconds, si

    budgets = [parse_budget(text) for text in args.fail_if]
    worst = EXIT_OK
    for source in args.models:
        try:
            analysis = _analyze(source, args)
        except OnnxroofError as exc:
            print(f"{one_line(source)}: error: {one_line(error_text(exc))}")
            worst = EXIT_USAGE
            continue
        results = check_budgets(budgets, analysis)
        broken = [r for r in results if r.broken]
        latencies = "".join(f", latency[{r.target.name}] {seconds(r.latency_s)}" for r in analysis.targets)
        verdict = (f"; {'; '.join(r.describe() for r in broken)}" if broken
                   else f"; {len(results)} budget(s) hold" if results else "")
        print(one_line(f"{source}: params {si(analysis.totals.params)}, MAC-FLOPs {si(analysis.totals.mac_flops)}, "
                       f"peak {iec(analysis.memory.model_order.peak_bytes)}{latencies}{verdict}"))
        if broken and worst == EXIT_OK:
            worst = EXIT_BUDGET
    return worst


def analyze_many(sources: list[str], args: argparse.Namespace) -> list[Analysis]:
    """Analyse several models in parallel processes (one per core), keeping their order."""
    jobs = min(len(sources), args.jobs or os.cpu_count() or 1)
    if jobs <= 1:
        return [_analyze(source, args) for source in sources]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_analyze, sources, [args] * len(sources)))


def _summary_chunks(analysis: Analysis, fmt: str, by: str = "node", depth: int | None = None,
                    formulas=None) -> Iterable[str]:
    """What `summary` writes, in chunks to write one after the other (a big model's JSON is
    written as it is encoded); ``formulas`` (``--formulas``) after the table or in the JSON."""
    if depth is not None and by != "module":
        raise UsageError("--depth goes with --by module")
    extra = {"formulas": formulas.to_dict()} if formulas is not None else {}
    if fmt == "json":
        from ..report.json import document_json

        if by != "node":
            from ..report.json import grouped_document

            return [json.dumps({**grouped_document(analysis, by, depth), **extra}, indent=2) + "\n"]
        return document_json(analysis, compact=len(analysis.nodes) > PRETTY_JSON_NODES, extra=extra)
    if formulas is not None:
        if fmt != "table":
            raise UsageError(f"--formulas goes with --format table or json, not {fmt}")
        from ..symbolic.formulas import formulas_lines

        return [*_summary_chunks(analysis, fmt, by, depth), "\n" + "\n".join(formulas_lines(formulas)) + "\n"]
    if by != "node" and fmt in ("csv", "markdown"):
        raise UsageError(f"--by {by} prints a table or JSON: use --format table or json")
    if by != "node":
        from ..report.text.module_table import by_module_lines, by_op_lines
        from ..report.text.table import table_chunks

        lines = by_module_lines(analysis, depth) if by == "module" else by_op_lines(analysis)
        return [table_chunks(analysis)[0], "\n".join(lines) + "\n"]
    if fmt == "markdown":
        from ..report.text.markdown import render_markdown

        return [render_markdown(analysis)]
    from ..report.text.table import render_csv, table_chunks

    return [render_csv(analysis)] if fmt == "csv" else table_chunks(analysis)


# Above this many nodes JSON is written compact: indenting makes Python's encoder ten times slower.
PRETTY_JSON_NODES = 2_000


def _safe_stem(name: str) -> str:
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("._")
    return stem or "model"

