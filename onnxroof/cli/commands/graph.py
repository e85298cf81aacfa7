"""``onnxroof graph``: the model's graph folded by its module tree, as a standalone SVG, each box
coloured by what bounds its kernel on the (first) target."""

from __future__ import annotations

import argparse
import sys

from ...core.errors import EXIT_OK
from ..analysing import Analysing, analyze_one, on_one_model
from ..options import EXAMPLES, analysis_options, model_arguments, positive_int
from ..output import emit, safe_stem

HELP = "draw the model's graph, folded by module, as an SVG"
EPILOG = EXAMPLES["graph"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    model_arguments(parser)
    analysis_options(parser)
    parser.add_argument(
        "--depth",
        type=positive_int,
        metavar="N",
        help="open the module tree N levels down (default: as many as keep about 100 boxes)",
    )
    parser.add_argument(
        "--module",
        metavar="PATH",
        help="draw this module's view instead of the whole model's: any module of the module tree, by "
        "its path (encoder, encoder/layer.3; a run's label, encoder/layer.0-11, is its first block)",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the SVG to FILE (default: MODEL.graph.svg; - is standard output)"
    )
    parser.set_defaults(sweep=[], emit_order=None)


def run(args: argparse.Namespace) -> int:
    return on_one_model(args, lambda source, budgets: _graph(source, args))


def _graph(source: str, args: argparse.Namespace) -> int:
    from ...report.graph.views import render_graph_svg

    analysis = analyze_one(source, Analysing.from_flags(args, several_models=False))
    output = args.output or f"{safe_stem(analysis.model.name)}.graph.svg"
    emit(output, render_graph_svg(analysis, args.depth, args.module), args)
    if not args.quiet and output != "-":
        print(f"onnxroof: wrote {output}", file=sys.stderr)
    return EXIT_OK
