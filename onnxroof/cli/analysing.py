"""The steps the analysing commands share: a model from its source, one analysis with the flags'
options (its warnings printed, --strict enforced), several in parallel processes, a sweep, and
the formulas' progress. The pipeline itself is imported when an analysis starts.

A command turns its flags into typed values at its edge (:meth:`Analysing.from_flags`: the
analysis options and the command line's own settings for analysing); the steps here take those,
not the flags."""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import EXIT_OK, IncompleteAnalysis, OnnxroofError, UsageError
from ..core.text import one_line
from ..options import AnalysisOptions, formula_options
from .options import options_from_flags
from .output import StageLines, emit, error_text, gate, safe_stem

if TYPE_CHECKING:
    from ..result import Analysis


@dataclass(frozen=True)
class Analysing:
    """What an analysing command was asked, typed: the analysis options and the command line's
    own settings for analysing (made once, at the command's edge; it pickles, for the workers)."""

    options: AnalysisOptions
    quiet: bool = False  # -q: no progress or warnings on stderr
    strict: bool = False  # --strict: an incomplete analysis exits 2
    findings: bool = True  # not --no-findings
    debug: bool = False  # --debug: tracebacks
    kept: list | None = field(default=None, compare=False)  # receives the analysis of a process about to end

    @classmethod
    def from_flags(cls, args: argparse.Namespace, several_models: bool) -> Analysing:
        """The flags of :func:`~onnxroof.cli.options.analysis_options` as typed values;
        ``several_models``: the command analyses several models with one set of flags."""
        return cls(
            options_from_flags(args, several_models),
            quiet=args.quiet,
            strict=args.strict,
            findings=not args.no_findings,
            debug=args.debug,
            kept=args.kept,
        )


def model_from(source: str):
    """A path, or ``example:NAME`` for a built-in example."""
    if source.startswith("example:") and not Path(source).exists():
        from ..core.examples import build_example

        return build_example(source.split(":", 1)[1])
    return source


def analyze_source(source: str, asked: Analysing) -> Analysis:
    """One model analysed with the flags' options (``onnxroof.analyze``'s analysis: the commands
    whose outputs show findings review it once, ``onnxroof.api.review``); its warnings on stderr
    (unless -q)."""
    from ..api import reviewable

    progress = None if asked.quiet else StageLines(Path(source).name)
    # --no-findings: no review will be made, the prepared model is not kept for one
    analysis = reviewable(model_from(source), asked.options, progress, findings=asked.findings)
    vet(analysis, asked)
    return analysis


def vet(analysis: Analysis, asked: Analysing, name: str | None = None) -> None:
    """An analysis's warnings on stderr (unless -q); refused (exit 2) under --strict when
    incomplete, and when it counted nothing (no totals to show). ``name``: the model's, when the
    analysis had its parsed model rather than its file (--symbolic)."""
    name = name or analysis.model.name
    if not asked.quiet:
        for warning in analysis.warnings:
            print(one_line(f"onnxroof: warning: {name}: {warning}"), file=sys.stderr)
    if asked.strict and not analysis.complete:
        raise IncompleteAnalysis(
            f"{name}: the analysis is incomplete (see the warnings above) and --strict is set; nothing written"
        )
    totals = analysis.totals
    if not analysis.complete and totals.flops == 0 and totals.nodes:  # nothing counted: no totals to show
        reason = analysis.warnings[0] if analysis.warnings else "no node could be costed"
        raise IncompleteAnalysis(f"{name}: nothing could be counted: {reason}")


def analyze_many(sources: list[str], asked: Analysing, jobs: int | None) -> list[Analysis]:
    """Analyse several models in parallel processes (``jobs``, default one per core), keeping their order."""
    jobs = min(len(sources), jobs or os.cpu_count() or 1)
    if jobs <= 1:
        return [analyze_source(source, asked) for source in sources]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_analyze_in_worker, sources, [asked] * len(sources)))


def _analyze_in_worker(source: str, asked: Analysing) -> Analysis:
    """:func:`analyze_source` in a worker process, whose error must reach the main process: one
    that would not be rebuilt there (which breaks the whole pool) is sent as its text, an
    OnnxroofError still as one (exit 2), anything else as a RuntimeError (an internal error)."""
    try:
        return analyze_source(source, asked)
    except Exception as exc:
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:
            if isinstance(exc, OnnxroofError):
                raise OnnxroofError(error_text(exc)) from None
            raise RuntimeError(f"{type(exc).__name__}: {exc}") from None
        raise


def on_one_model(args: argparse.Namespace, work: Callable[[str, list], int]) -> int:
    """summary, report or explain: ``work(source, budgets)`` on its model (a path or
    ``example:NAME``) and the budgets (--fail-if) it must hold, or --sweep's analyses, or the
    list of examples (``--example list``)."""
    from ..compare.budgets import parse_budget

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
    _check_not_a_flag_value(args, source)
    if args.sweep:
        return _sweep(source, args, Analysing.from_flags(args, several_models=False), budgets)
    return work(source, budgets)


def _check_not_a_flag_value(args: argparse.Namespace, source: str) -> None:
    """A model path that is no file, right after a flag that takes no value, was meant as that
    flag's value (``--no-overhead yes``): say so instead of "no such file"."""
    try:
        exists = Path(source).exists()
    except OSError:  # a name the file system refuses (too long): loading says so
        return
    if source.startswith("example:") or exists or source not in args.argv:
        return
    position = args.argv.index(source)
    previous = args.argv[position - 1] if position > 0 else ""
    if previous in args.switches:
        raise UsageError(
            f"{previous} takes no value, so {source!r} was read as the model path: "
            f"drop {source!r}, or give the model's path"
        )


def analyze_one(source: str, asked: Analysing) -> Analysis:
    """The analysis of summary, report or explain, kept for a process about to end (``asked.kept``)."""
    analysis = analyze_source(source, asked)
    if asked.kept is not None:
        asked.kept.append(analysis)
    return analysis


def order_output(args: argparse.Namespace, analysis: Analysis) -> list[tuple[str, str, str]]:
    """The execution order as an output to write with the command's own (--emit-order), if asked:
    written only once every output is ready."""
    if not args.emit_order:
        return []
    from ..memory.schedule import order_text

    return [("--emit-order", args.emit_order, order_text(analysis.memory.best.schedule.order))]


def _sweep(source: str, args: argparse.Namespace, asked: Analysing, budgets: list) -> int:
    """summary or report --sweep: one analysis per point, as one table, document or page."""
    from ..compare.budgets import check_budgets
    from ..compare.sweep import parse_sweep, run_sweep
    from ..frontend.inputs import parse_dim

    options = replace(asked.options, dims=dict(parse_dim(text) for text in args.dim))
    points = run_sweep(model_from(source), [parse_sweep(text) for text in args.sweep], options)
    if not asked.quiet:
        for point in points:
            for warning in point.warnings:
                print(one_line(f"onnxroof: warning: {warning}"), file=sys.stderr)
    if asked.strict and not all(p.analysis.complete for p in points):
        raise IncompleteAnalysis("a sweep point is incomplete (see the warnings above) and --strict is set")
    results = [r for p in points for r in check_budgets(budgets, p.analysis)]
    if args.command == "report":
        from ..report.html.pages import render_sweep_html

        output = args.output or f"{safe_stem(points[0].analysis.model.name)}.sweep.html"
        emit(output, render_sweep_html(points), args)
        if not args.quiet and output != "-":
            print(f"onnxroof: wrote {output}", file=sys.stderr)
    elif args.format == "json":
        from ..report.json import sweep_document

        emit(args.output, json.dumps(sweep_document(points), indent=2) + "\n", args)
    else:
        from ..report.text.table import render_sweep_table

        emit(args.output, render_sweep_table(points), args)
    return gate(results, args.quiet)


def formula_progress(source: str, quiet: bool):
    """Stage lines on stderr once fitting takes over 1.5 s; none under -q."""
    return None if quiet else StageLines(Path(source).name)


def symbolic_formulas(source: str, asked: Analysing, **arguments):
    """--symbolic's formulas of one model, whose uncounted nodes are vetted as summary vets
    them: the same warnings, and the same refusal when nothing is counted (an invalid Conv)."""
    from ..symbolic.formulas import formulas

    model = model_from(source)
    found = formulas(
        model, progress=formula_progress(source, asked.quiet), options=formula_options(asked.options), **arguments
    )
    if found.uncounted is not None:  # its file's stem names it, as in summary (the fits read the parsed model)
        vet(found.uncounted, asked, Path(model).stem if isinstance(model, str) else None)
    return found


def free_formulas(source: str, asked: Analysing):
    """The formulas in the dims the model leaves free, whatever values the flags give them
    (--formulas of summary and report)."""
    from ..symbolic.formulas import formulas

    return formulas(
        model_from(source),
        progress=formula_progress(source, asked.quiet),
        options=formula_options(asked.options, bound=False),
    )
