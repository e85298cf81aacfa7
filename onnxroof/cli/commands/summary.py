"""``onnxroof summary``: totals and a per-node table (or per module, per op), as a table, JSON, CSV
or Markdown; with --symbolic, the costs as formulas of the dims left free."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...core.errors import EXIT_OK, UsageError
from ..analysing import Analysing, analyze_one, free_formulas, on_one_model, order_output, symbolic_formulas
from ..options import EXAMPLES, positive_int, single_model
from ..output import emit, gate

if TYPE_CHECKING:
    from ...findings import Review
    from ...result import Analysis

HELP = "print totals and a per-node table"
EPILOG = EXAMPLES["summary"]

# Above this many nodes JSON is written compact: indenting makes Python's encoder ten times slower.
PRETTY_JSON_NODES = 2_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    single_model(parser)
    parser.add_argument(
        "--format", choices=("table", "json", "csv", "markdown"), default="table", help="output format (default: table)"
    )
    parser.add_argument(
        "--by",
        choices=("node", "module", "op"),
        help="rows per node (default), per module of the module tree the node names carry "
        "(/encoder/layer.0/...), or per op type; with --symbolic, the MACs formula of each",
    )
    parser.add_argument(
        "--symbolic",
        action="store_true",
        help="MACs, FLOPs, parameters, bytes and peak memory as exact formulas of the input dims left "
        "unbound (batch, sequence, ...), instead of numbers",
    )
    parser.add_argument(
        "--depth",
        type=positive_int,
        metavar="N",
        help="with --by module: fold deeper modules into their ancestor N levels down",
    )
    parser.add_argument(
        "--formulas",
        action="store_true",
        help="add the formulas of the dims the model leaves free (--symbolic's) after the table, or "
        'as the JSON document\'s "formulas" block',
    )


def run(args: argparse.Namespace) -> int:
    return on_one_model(args, lambda source, budgets: _summary(source, budgets, args))


def _summary(source: str, budgets: list, args: argparse.Namespace) -> int:
    from ...api import review
    from ...compare.budgets import check_budgets

    if args.symbolic:
        return _symbolic(source, args)
    asked = Analysing.from_flags(args, several_models=False)
    analysis = analyze_one(source, asked)
    found = free_formulas(source, asked) if args.formulas else None
    results = check_budgets(budgets, analysis)
    by = args.by or "node"
    refuse_combination(args.format, by, args.depth, found)
    reviewed = review(analysis) if args.format != "csv" else None  # every output but the CSV shows findings
    # every output produced before any is written: the order file is not replaced by a run that fails
    emit(
        args.output,
        summary_chunks(analysis, args.format, by, args.depth, found, reviewed),
        args,
        also=order_output(args, analysis),
    )
    return gate(results, args.quiet)


def _symbolic(source: str, args: argparse.Namespace) -> int:
    """`summary --symbolic`: the formulas in the dims the flags leave free (never exit 2 for them)."""
    from ...report.text.table import formulas_header
    from ...symbolic.formulas_record import formulas_lines

    if args.depth is not None and args.by != "module":
        raise UsageError("--depth goes with --by module")
    found = symbolic_formulas(source, Analysing.from_flags(args, several_models=False), by=args.by, modules=args.depth)
    if args.format == "json":
        text = json.dumps({"schema": "onnxroof-formulas/1", "model": source, **found.to_dict()}, indent=2) + "\n"
    elif args.format == "table":
        text = "\n".join(formulas_header(declared_inputs(source, args), found) + formulas_lines(found)) + "\n"
    else:
        raise UsageError("--symbolic prints a table or JSON: use --format table or json")
    emit(args.output, text, args)
    return EXIT_OK


def declared_inputs(source: str, args: argparse.Namespace) -> Analysis:
    """The model as the flags bind it, its free dims by name (a partial analysis, no phase): the
    header of the formulas."""
    from dataclasses import replace

    from ...pipeline import analyze
    from ..analysing import model_from

    options = Analysing.from_flags(args, several_models=False).options
    return analyze(
        model_from(source),
        options=replace(
            options, partial=True, search_order=False, targets=(), phase=None, seq=None, context=None, encoder_seq=None
        ),
    )


def refuse_combination(fmt: str, by: str, depth: int | None, formulas) -> None:
    """The flags that do not go together, refused (exit 2) before anything is made."""
    if depth is not None and by != "module":
        raise UsageError("--depth goes with --by module")
    if fmt == "json":
        return
    if formulas is not None and fmt != "table":
        raise UsageError(f"--formulas goes with --format table or json, not {fmt}")
    if by != "node" and fmt in ("csv", "markdown"):
        raise UsageError(f"--by {by} prints a table or JSON: use --format table or json")


def summary_chunks(
    analysis: Analysis,
    fmt: str,
    by: str = "node",
    depth: int | None = None,
    formulas=None,
    review: Review | None = None,
) -> Iterable[str]:
    """What `summary` writes, in chunks to write one after the other (a big model's JSON is
    written as it is encoded); ``formulas`` (``--formulas``) after the table or in the JSON;
    ``review``: the findings stage's, which every output but the CSV shows (none without it)."""
    refuse_combination(fmt, by, depth, formulas)
    extra = {"formulas": formulas.to_dict()} if formulas is not None else {}
    if fmt == "json":
        from ...report.json import document_json

        if by != "node":
            from ...report.json import grouped_document

            return [json.dumps({**grouped_document(analysis, by, depth, review), **extra}, indent=2) + "\n"]
        return document_json(analysis, compact=len(analysis.nodes) > PRETTY_JSON_NODES, extra=extra, review=review)
    if formulas is not None:
        from ...symbolic.formulas_record import formulas_lines

        return [
            *summary_chunks(analysis, fmt, by, depth, review=review),
            "\n" + "\n".join(formulas_lines(formulas)) + "\n",
        ]
    if by != "node":
        from ...report.text.module_table import by_module_lines, by_op_lines
        from ...report.text.table import table_chunks

        lines = by_module_lines(analysis, depth) if by == "module" else by_op_lines(analysis)
        return [table_chunks(analysis, review)[0], "\n".join(lines) + "\n"]
    if fmt == "markdown":
        from ...report.text.markdown import render_markdown

        return [render_markdown(analysis, review=review)]
    from ...report.text.table import render_csv, table_chunks

    return [render_csv(analysis)] if fmt == "csv" else table_chunks(analysis, review)
