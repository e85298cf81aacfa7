"""The flags the analysing commands share (summary, report, explain, diff, compare, check), in
the groups --help shows, and each command's examples; :mod:`onnxroof.cli.app` builds the parser."""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable
from typing import Any

from ..options import FLAGS as FLAGS  # (the flag of each option: error_text words errors with it)
from ..options import MAX_DEVICES, OPTIONS, SHAPES, TIMING, AnalysisOptions, Choice, Count, Option


def analysis_options(parser: argparse.ArgumentParser) -> None:
    """How a model is costed: the same flags for one model or several, in groups as --help shows
    them: each analysis option's flag as its declaration (:mod:`onnxroof.options`) says, among the
    command line's own flags (``COMMAND_FLAGS``)."""
    groups = {title: parser.add_argument_group(title) for title in (SHAPES, TIMING, _DIAGNOSTICS)}
    placed: list[tuple[str, int, Callable[[argparse._ArgumentGroup], object]]] = [
        (declared.flag.group, declared.flag.place, functools.partial(_add_flag, declared))
        for declared in OPTIONS.values()
        if declared.flag is not None
    ]
    for group, _, add in sorted(placed + COMMAND_FLAGS, key=lambda flag: (list(groups).index(flag[0]), flag[1])):
        add(groups[group])


def _add_flag(declared: Option, group: argparse._ArgumentGroup) -> None:
    """An option's flag, its value checked as the option's check would (a count's range, a choice)."""
    flag = declared.flag
    assert flag is not None
    if flag.switch:
        group.add_argument(flag.name, action="store_true", help=flag.help)
    elif flag.repeatable:
        group.add_argument(flag.name, action="append", default=[], metavar=flag.metavar, help=flag.help)
    else:
        check = declared.check
        choices = flag.choices or (check.choices if isinstance(check, Choice) else None)
        typed: dict[str, Any] = {"type": _count_argument(check)} if isinstance(check, Count) else {}  # else text
        group.add_argument(flag.name, choices=choices, metavar=flag.metavar, help=flag.help, **typed)


def _count_argument(count: Count) -> Callable[[str], int]:
    """A count's flag value: a whole number of the count's minimum or more (its upper end, if it
    has one, is the options' check)."""
    if count.maximum is not None:
        return device_count
    return positive_int if count.minimum >= 1 else non_negative_int


_DIAGNOSTICS = "rules and diagnostics"
# the command line's own flags among the analysis options' (group, place in it, how it is added)
COMMAND_FLAGS: list[tuple[str, int, Callable[[argparse._ArgumentGroup], object]]] = [
    (
        TIMING,
        5,
        lambda group: group.add_argument(
            "--no-findings",
            action="store_true",
            help="leave out what to change on each target and the memory fit, which "
            "analyse the model a few times more (a very large model's summary in one analysis)",
        ),
    ),
    (
        _DIAGNOSTICS,
        1,
        lambda group: group.add_argument(
            "--plugin",
            action="append",
            default=[],
            metavar="FILE.py",
            help="a Python file that registers cost rules "
            "with onnxroof.register (repeatable); it is run as Python with your rights: pass only files you trust",
        ),
    ),
    (
        _DIAGNOSTICS,
        2,
        lambda group: group.add_argument(
            "--strict",
            action="store_true",
            help="exit 2 if the analysis is incomplete (unsupported ops, unknown shapes)",
        ),
    ),
    (
        _DIAGNOSTICS,
        3,
        lambda group: group.add_argument(
            "-q", "--quiet", action="store_true", help="no progress or warnings on stderr"
        ),
    ),
    (_DIAGNOSTICS, 4, lambda group: group.add_argument("--debug", action="store_true", help="show tracebacks")),
]


def options_from_flags(args: argparse.Namespace, several_models: bool) -> AnalysisOptions:
    """The analysis options the flags of :func:`analysis_options` give: each option's flag, read
    as its declaration says (a switch, negated or not; a value, or the option's default when the
    flag is not given). ``several_models``: the command's one set of flags is for several models
    (compare, check, diff), so a dim one of them lacks is not an error for it."""
    given = {name: _flag_value(args, name, declared) for name, declared in OPTIONS.items() if declared.flag}
    # the onnxroof program itself (not main() called in a larger process) may fork a small child
    return AnalysisOptions(**given, checker_in_child=args.program, ignore_missing_dims=several_models)


def _flag_value(args: argparse.Namespace, name: str, declared: Option) -> Any:
    flag = declared.flag
    assert flag is not None
    value = getattr(args, flag.name.lstrip("-").replace("-", "_"))
    if flag.negated:
        return not value
    return getattr(_DEFAULTS, name) if value is None else value


_DEFAULTS = AnalysisOptions()


EXAMPLE_HELP = "use a built-in example model ('--example list' names them)"


def model_arguments(parser: argparse.ArgumentParser, example_help: str = EXAMPLE_HELP) -> None:
    """The one model a command reads: a path (or example:NAME), or ``--example NAME``."""
    parser.add_argument("model", nargs="?", help="path to the .onnx file (or example:NAME)")
    parser.add_argument("--example", metavar="NAME", help=example_help)


def single_model(parser: argparse.ArgumentParser, budgets: bool = True) -> None:
    model_arguments(parser)
    analysis_options(parser)
    parser.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="SYMBOL=V1,V2,...",
        help="analyse at every value (a dim name, or batch, dtype, seq, context, encoder_seq); "
        "repeatable: "
        "the product of the values",
    )
    parser.add_argument(
        "--emit-order",
        metavar="FILE",
        help="write the lowest-peak execution order found, one node name per line (a backslash "
        "and control characters in a name written as Python escapes: \\\\, \\x0a)",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the output to FILE (whole or not at all; - is standard output)"
    )
    if budgets:
        budget_option(parser, relative=False)


def budget_option(parser: argparse.ArgumentParser, relative: bool) -> None:
    example = "'flops>+5%%', 'latency[myriad-x]>+2%%', " if relative else ""
    parser.add_argument(
        "--fail-if",
        action="append",
        default=[],
        metavar="BUDGET",
        help=f"exit 1 if a budget is broken, e.g. {example}'params>5M', 'peak_memory>2MiB' (repeatable)",
    )


def _whole_number(text: str) -> int | None:
    """``text`` as a whole number in ASCII digits (no sign, no spaces, no other script's digits,
    which ``int`` reads but ``--dim`` refuses), or None; past :data:`_MOST_DIGITS` digits None too
    (``int`` refuses a string past 4,300 digits, in words about Python's limits)."""
    if not (text.isascii() and text.isdigit()) or len(text) > _MOST_DIGITS:
        return None
    return int(text)


_MOST_DIGITS = 30  # more than any count here can be (2^63 has 19 digits)


def _shown(text: str) -> str:
    """``text`` quoted for a message, its first 40 characters when longer."""
    return repr(text) if len(text) <= 40 else f"{text[:40]!r}... ({len(text):,} characters)"


def non_negative_int(text: str) -> int:
    number = _whole_number(text)
    if number is None:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {_shown(text)}")
    return number


def positive_int(text: str) -> int:
    number = _whole_number(text)
    if number is None or number <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {_shown(text)}")
    return number


def device_count(text: str) -> int:
    """``--devices``: a whole number of 1 or more; its upper end (:data:`MAX_DEVICES`) is the
    analysis options' check, in the same words."""
    number = _whole_number(text)
    if number is None or number <= 0:
        raise argparse.ArgumentTypeError(f"give a whole number from 1 to {MAX_DEVICES:,}, got {_shown(text)}")
    return number


def positive_seconds(text: str) -> float:
    try:
        value = float(text.strip().removesuffix("s"))
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


EXAMPLES = {
    "summary": """examples:
  onnxroof summary model.onnx --target l4 --target jetson-orin-nano
  onnxroof summary encoder.onnx --dim sequence=128 --format markdown
  onnxroof summary gpt2.onnx --phase decode --context 2048 --target h100-sxm
  onnxroof summary model.onnx --sweep batch=1,8,64 --target l4 --fail-if 'params>5M'""",
    "report": """examples:
  onnxroof report model.onnx --target h100-sxm -o report.html
  onnxroof report --example minigooglenet --target myriad-x
  onnxroof report model.onnx --sweep batch=1,8,64 --target l4 -o sweep.html""",
    "graph": """examples:
  onnxroof graph model.onnx --target l4 -o model.svg
  onnxroof graph --example minigooglenet --target myriad-x
  onnxroof graph encoder.onnx --target h100-sxm --depth 3
  onnxroof graph encoder.onnx --target h100-sxm --module encoder/layer.0 -o layer.svg""",
    "export": """examples:
  onnxroof export model.onnx --to netron --target l4            (writes model.onnxroof.json beside the model)
  onnxroof export model.onnx --to model-explorer --target l4 --target myriad-x -o overlays/
  then: open the model in Netron and open the .json after it; or load the .json files in Model Explorer's
  "Node data" panel (model-explorer model.onnx --node_data_paths=FILE)""",
    "explain": """examples:
  onnxroof explain model.onnx /layer1/conv1/Conv --target l4
  onnxroof explain --example shallownet conv2d_0""",
    "diff": """examples:
  onnxroof diff base.onnx head.onnx --target l4 --format markdown
  onnxroof diff base.onnx head.onnx --fail-if 'flops>+5%' --fail-if 'latency[l4]>+2%'
  onnxroof diff base.onnx head.onnx --format html       # writes base-vs-head.diff.html""",
    "check": """examples:
  onnxroof check models/*.onnx --fail-if 'params>50M' --fail-if 'peak_memory>256MiB'
  onnxroof check detector.onnx --target jetson-orin-nano --fail-if 'latency[jetson-orin-nano]<5ms'
  onnxroof check model-store/ --jobs 8 --timeout 300 --format jsonl -o audit.jsonl""",
    "compare": """examples:
  onnxroof compare a.onnx b.onnx c.onnx --target jetson-orin-nano
  onnxroof compare a.onnx b.onnx --dim sequence=128 --format html -o compare.html""",
}
