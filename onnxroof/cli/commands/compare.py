"""``onnxroof compare``: several candidate models side by side (analysed in parallel processes)."""

from __future__ import annotations

import argparse
import json

from ...core.errors import EXIT_OK
from ..analysing import Analysing, analyze_many
from ..options import EXAMPLES, analysis_options, positive_int
from ..output import emit_page

HELP = "put several candidate models side by side"
EPILOG = EXAMPLES["compare"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    parser.add_argument("models", nargs="+", help="paths (or example:NAME)")
    analysis_options(parser)
    parser.add_argument(
        "--format",
        choices=("table", "markdown", "json", "html"),
        default="table",
        help="table (terminal), markdown, json, or html (a page, written to compare.html without -o)",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the output to FILE (whole or not at all; - is standard output)"
    )
    parser.add_argument("--jobs", type=positive_int, metavar="N", help="parallel analyses (default: one per core)")


def run(args: argparse.Namespace) -> int:
    from ...report.text.diff_tables import compare_document, render_compare_markdown, render_compare_table

    analyses = analyze_many(args.models, Analysing.from_flags(args, several_models=True), args.jobs)
    if args.format == "json":
        text = json.dumps(compare_document(analyses), indent=2) + "\n"
    elif args.format == "markdown":
        text = render_compare_markdown(analyses)
    elif args.format == "html":
        from ...report.html.pages import render_compare_html

        text = render_compare_html(analyses)
    else:
        text = render_compare_table(analyses)
    emit_page(args, text, "compare.html")
    return EXIT_OK
