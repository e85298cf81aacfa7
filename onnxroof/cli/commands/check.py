"""``onnxroof check``: one line per model (its totals, each target's latency, its budgets), for
pre-commit hooks and CI."""

from __future__ import annotations

import argparse

from ...core.errors import EXIT_BUDGET, EXIT_OK, EXIT_USAGE, OnnxroofError
from ..analysing import analyze_source
from ..options import EXAMPLES, analysis_options, budget_option
from ..output import error_text, one_line

HELP = "check models against budgets, one line each (pre-commit, CI)"
EPILOG = EXAMPLES["check"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    parser.add_argument("models", nargs="+", help="paths (or example:NAME)")
    analysis_options(parser)
    budget_option(parser, relative=False)


def run(args: argparse.Namespace) -> int:
    """One line per model; exit 2 if a model cannot be analysed, else 1 if a budget is broken."""
    from ...compare.budgets import check_budgets, parse_budget
    from ...core.units import iec, seconds, si

    budgets = [parse_budget(text) for text in args.fail_if]
    worst = EXIT_OK
    for source in args.models:
        try:
            analysis = analyze_source(source, args)
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
