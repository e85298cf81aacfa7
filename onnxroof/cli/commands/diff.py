"""``onnxroof diff``: a base and a head model compared (for pull requests), as a table, Markdown,
JSON or an HTML page, with relative budgets; with --symbolic, the change in their formulas."""

from __future__ import annotations

import argparse
import json
import os

from ...core.errors import EXIT_OK, UsageError
from ..analysing import Analysing, analyze_source, symbolic_formulas
from ..options import EXAMPLES, analysis_options, budget_option
from ..output import emit, emit_page, gate, safe_stem

HELP = "compare a base and a head model (for pull requests)"
EPILOG = EXAMPLES["diff"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    parser.add_argument("base", help="the base model: a path or example:NAME")
    parser.add_argument("head", help="the head model: a path or example:NAME")
    analysis_options(parser)
    parser.add_argument(
        "--format",
        choices=("table", "markdown", "json", "html"),
        default="table",
        help="table (terminal), markdown (a PR comment), json, or html (a page, written to "
        "BASE-vs-HEAD.diff.html without -o)",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the output to FILE (whole or not at all; - is standard output)"
    )
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write the HTML page to FILE, from the same analyses (a PR's comment and page in one run)",
    )
    parser.add_argument(
        "--symbolic",
        action="store_true",
        help="the change in the formulas of the free input dims (summary --symbolic), term by term",
    )
    budget_option(parser, relative=True)
    parser.add_argument(
        "--threshold",
        type=percent_argument,
        default=None,
        metavar="PCT",
        help="mark a metric's change better or worse only from PCT on (default 2%%): below it, neither",
    )


def percent_argument(text: str) -> float:
    """'5%' or '5' -> 0.05; anything else is a one-line usage error naming the flag."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage: give it as 5% or 5") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r}: give a percentage from 0% to 100%")
    return value / 100


def run(args: argparse.Namespace) -> int:
    if args.symbolic:
        from ...symbolic.difference import difference
        from ...symbolic.formulas_record import formulas_lines

        if args.format not in ("table", "json"):  # refused before any analysis: never another format than asked
            raise UsageError(f"diff --symbolic prints a table or JSON, not {args.format}: use --format table or json")
        if args.html:
            raise UsageError("diff --symbolic writes no HTML page: leave out --html")
        asked = Analysing.from_flags(args, several_models=True)
        change = difference(symbolic_formulas(args.base, asked), symbolic_formulas(args.head, asked))
        text = (
            json.dumps(
                {"schema": "onnxroof-formulas-change/1", "base": args.base, "head": args.head, **change.to_dict()},
                indent=2,
            )
            if args.format == "json"
            else "\n".join(formulas_lines(change, change=True))
        )
        emit(args.output, text + "\n", args)
        return EXIT_OK
    from ...api import review
    from ...compare.budgets import check_budgets, parse_budget
    from ...compare.diff import SIGNIFICANT, diff_analyses
    from ...report.text.diff_tables import diff_document, render_diff_markdown, render_diff_table

    budgets = [parse_budget(text) for text in args.fail_if]
    asked = Analysing.from_flags(args, several_models=True)
    base = analyze_source(args.base, asked)
    head = base if same_source(args.base, args.head) else analyze_source(args.head, asked)
    findings = review(base).findings, review(head).findings  # (one review when base is head)
    diff = diff_analyses(
        base, head, threshold=SIGNIFICANT if args.threshold is None else args.threshold, findings=findings
    )
    results = check_budgets(budgets, head, base)
    if args.format == "html" or args.html:
        from ...report.html.pages import render_diff_html

        page = render_diff_html(diff, results)
    if args.format == "json":
        text = json.dumps(diff_document(diff, results), indent=2) + "\n"
    elif args.format == "markdown":
        text = render_diff_markdown(diff, results)
    elif args.format == "html":
        text = page
    else:
        text = render_diff_table(diff, results)
    also = [("--html", args.html, page)] if args.html else []
    emit_page(args, text, f"{safe_stem(base.model.name)}-vs-{safe_stem(head.model.name)}.diff.html", also)
    return gate(results, args.quiet)


def same_source(base: str, head: str) -> bool:
    """Whether the two arguments name one model: the same example, or the same file (two files
    of the same bytes are two models, told apart by their names). It is then analysed once."""
    if base.startswith("example:") or head.startswith("example:"):
        return base == head
    try:
        return os.path.samefile(base, head)
    except OSError:  # a missing or unreadable file: analysing it says what is wrong
        return False
