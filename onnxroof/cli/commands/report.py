"""``onnxroof report``: one self-contained HTML page of the analysis (with --sweep, of every point)."""

from __future__ import annotations

import argparse
import sys

from ..analysing import Analysing, analyze_one, free_formulas, on_one_model, order_output
from ..options import EXAMPLES, single_model
from ..output import emit, gate, safe_stem

HELP = "write a self-contained HTML report"
EPILOG = EXAMPLES["report"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    single_model(parser)
    parser.add_argument(
        "--colour-by",
        choices=("op", "module"),
        default="op",
        help="colour the roofline's dots by op type (default) or by the top-level module the node "
        "names carry (encoder, decoder, lm_head)",
    )
    parser.add_argument(
        "--formulas",
        action="store_true",
        help="add a section with the costs as formulas of the dims the model leaves free (the "
        "values --dim gives them are the page's numbers; summary --symbolic prints them)",
    )


def run(args: argparse.Namespace) -> int:
    return on_one_model(args, lambda source, budgets: _report(source, budgets, args))


def _report(source: str, budgets: list, args: argparse.Namespace) -> int:
    from ...api import review
    from ...compare.budgets import check_budgets
    from ...report.html.pages import render_html

    asked = Analysing.from_flags(args, several_models=False)
    analysis = analyze_one(source, asked)
    output = args.output or f"{safe_stem(analysis.model.name)}.report.html"
    found = free_formulas(source, asked) if args.formulas else None
    results = check_budgets(budgets, analysis)
    # every output produced before any is written: the order file is not replaced by a run that fails
    page = render_html(analysis, colour_by=args.colour_by, formulas=found, review=review(analysis))
    emit(output, page, args, also=order_output(args, analysis))
    if not args.quiet and output != "-":
        print(f"onnxroof: wrote {output}", file=sys.stderr)
    return gate(results, args.quiet)
