"""``onnxroof explain``: how one node's numbers were computed (its formula, shapes, bytes, and its
place on each target's roofline)."""

from __future__ import annotations

import argparse
import sys

from ...core.errors import EXIT_OK
from ..analysing import Analysing, analyze_one, on_one_model
from ..options import EXAMPLES, analysis_options, model_arguments

HELP = "show how one node's numbers were computed"
EPILOG = EXAMPLES["explain"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's arguments (the model and the node may stand anywhere among the flags: the
    command line parses them itself)."""
    model_arguments(parser, "use a built-in example model (then give the node name only)")
    parser.add_argument("node", nargs="?", metavar="NODE_NAME", help="the node's name (as `summary` lists it)")
    analysis_options(parser)
    parser.set_defaults(sweep=[], emit_order=None, output=None)


def run(args: argparse.Namespace) -> int:
    return on_one_model(args, lambda source, budgets: _explain(source, args))


def _explain(source: str, args: argparse.Namespace) -> int:
    from ...report.text.explain import render_explain

    analysis = analyze_one(source, Analysing.from_flags(args, several_models=False))
    sys.stdout.write(render_explain(analysis, analysis.find_node(args.node)))
    return EXIT_OK
